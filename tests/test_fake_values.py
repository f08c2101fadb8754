"""The one fake-tensor propagator (``fxlint.canon.values``): whole-graph propagation, the incremental
update after a rewrite, and no second propagator elsewhere in the package."""

from __future__ import annotations

import re

import pytest
import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensor

import fxlint
from fxlint.canon._fx import value_of
from fxlint.canon.values import FakeProp, fake_mode_of, size_hint
from tests.test_layers import MODULES, ROOT


def _gm() -> fx.GraphModule:
    def f(x, y):
        a = x.t()
        b = a.reshape(-1)
        return b * y.sum()

    return fx.symbolic_trace(f)


def test_propagate_gives_every_node_a_fake_value_in_one_mode():
    gm = _gm()
    FakeProp(gm).propagate(torch.randn(4, 6), torch.randn(3))
    values = {n.name: value_of(n) for n in gm.graph.nodes if n.op != "output"}
    assert all(isinstance(v, FakeTensor) for v in values.values()), values
    assert values["t"].shape == (6, 4) and values["t"].stride() == (1, 6)
    assert values["reshape"].shape == (24,)
    assert len({id(v.fake_mode) for v in values.values()}) == 1
    assert fake_mode_of(gm) is values["x"].fake_mode


def test_a_graph_without_values_has_no_mode_unless_asked():
    gm = _gm()
    assert fake_mode_of(gm) is None
    assert fake_mode_of(gm, create=True) is not None


def test_update_recomputes_the_changed_node_and_what_is_downstream_only():
    gm = _gm()
    FakeProp(gm).propagate(torch.randn(4, 6), torch.randn(3))
    nodes = {n.name: n for n in gm.graph.nodes}
    y_sum_before = value_of(nodes["sum_1"])
    # the rewrite: `x.t()` becomes `x.clone()`, so the reshape's input is now (4, 6) contiguous
    nodes["t"].target = "clone"
    FakeProp(gm).update([nodes["t"]])
    assert value_of(nodes["t"]).shape == (4, 6)
    assert value_of(nodes["reshape"]).shape == (24,)
    assert value_of(nodes["mul"]).shape == (24,)
    assert value_of(nodes["sum_1"]) is y_sum_before  # not downstream of the change: untouched


def test_update_drops_a_stale_value_when_an_input_has_none():
    gm = _gm()
    FakeProp(gm).propagate(torch.randn(4, 6), torch.randn(3))
    nodes = {n.name: n for n in gm.graph.nodes}
    del nodes["x"].meta["val"]
    FakeProp(gm).update([nodes["t"]])
    assert value_of(nodes["t"]) is None and value_of(nodes["reshape"]) is None and value_of(nodes["mul"]) is None
    assert value_of(nodes["sum_1"]) is not None


def test_update_reports_an_op_that_rejects_the_new_value():
    def f(x):
        return x.view(-1)

    gm = fx.symbolic_trace(f)
    FakeProp(gm).propagate(torch.randn(4, 6))
    x = next(n for n in gm.graph.nodes if n.op == "placeholder")
    view = next(n for n in gm.graph.nodes if n.target == "view")
    with gm.graph.inserting_after(x):
        t = gm.graph.call_method("t", (x,))
    view.replace_input_with(x, t)  # the view now reads a transpose: it cannot be a view
    with pytest.raises(ValueError, match="Cannot view"):
        FakeProp(gm).update([t])
    seen: list[tuple[str, str]] = []
    FakeProp(gm).update([t], on_error=lambda node, exc: seen.append((node.name, type(exc).__name__)))
    assert seen == [("view", "ValueError")]
    assert value_of(t).shape == (6, 4) and value_of(t).stride() == (1, 6)


def test_size_hint_reads_the_example_size_of_a_symbol():
    gm = _gm()
    assert size_hint(gm, 7) == 7
    assert size_hint(gm, object()) is None  # no values, no shape environment: unknown


def test_no_other_fake_tensor_propagator_in_the_package():
    """capture, the device simulation and the rewrites run ops on fake values through FakeProp only:
    no module but fxlint.canon.values builds a FakeTensorMode or runs FakeTensorProp."""
    pattern = re.compile(r"\bFakeTensorProp\b|\bFakeTensorMode\(")
    allowed = {"fxlint.canon.values", "fxlint.benchmarks.lint_speed"}  # the benchmark times torch's own
    offenders = [f"{p.relative_to(ROOT)}:{i}" for name, p in MODULES.items() if name not in allowed
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if pattern.search(line) and not line.lstrip().startswith(("#", '"', "``"))]
    assert not offenders, offenders


class _PoolBranch(nn.Module):
    """A pyramid-pooling branch (smp's UPerNet, MONAI's SwinUNETR bottleneck): a global pool gives a
    (2, 32, 1, 1) tensor that is contiguous and channels_last at once."""

    def __init__(self) -> None:
        super().__init__()
        self.pool_conv, self.bn = nn.Conv2d(64, 32, 1), nn.BatchNorm2d(32)
        self.out = nn.Conv2d(96, 32, 3, padding=1)

    def forward(self, x):
        p = self.bn(self.pool_conv(F.adaptive_avg_pool2d(x, 1)))
        up = F.interpolate(torch.relu(p), size=x.shape[-2:], mode="bilinear", align_corners=False)
        return self.out(torch.cat([up, x[:, :64]], dim=1))


def test_cpu_batch_norm_layout_is_eager_s_not_the_meta_kernel_s():
    """CPU batch_norm allocates NCHW whenever its input is_contiguous(); the meta kernel keeps the input's
    (channels_last) strides of a size-1-spatial tensor, and a conv two ops later was said to convert its
    weight (FXL202, refuted by the audit). The view now carries eager's strides, and the graph's own
    values are back after the view is built."""
    from fxlint.capture.graphs import capture

    x = torch.randn(2, 64, 8, 8).contiguous(memory_format=torch.channels_last)
    model = _PoolBranch().eval()
    seen = {}
    hook = model.out.register_forward_pre_hook(lambda m, inp: seen.update(eager=inp[0].stride()))
    with torch.no_grad():
        model(x)
    hook.remove()
    with torch.no_grad():
        report = fxlint.lint(model, x, confirm=True, config=False)
        cap = capture(model, x)
    assert not [f for f in report.findings if f.status == "refuted"], report.findings
    assert "FXL202" not in {f.code for f in report.findings}
    [conv] = [n for v in cap.views for n in v.nodes if n.op == "conv" and n.module_path == "out"]
    assert tuple(conv.input.tensor.stride) == seen["eager"]
    bn = next(n for v in cap.views for n in v.nodes if n.op == "batch_norm" or "batch_norm" in n.spelling)
    meta = bn.node.meta.get("example_value")
    assert meta is not None and tuple(meta.stride()) != tuple(bn.tensor.stride)  # Dynamo's own value, restored

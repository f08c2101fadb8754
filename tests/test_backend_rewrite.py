"""``torch.compile(model, backend="fxlint", options={"rewrite": True})``: rewrites on the captured graph,
before the inner backend; verified; never breaking the compile."""

from __future__ import annotations

import logging
import warnings

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.canon import build_view
from fxlint.errors import FxlintWarning
from tests import test_backend
from tests.conftest import line_of
from tests.test_backend import Sep  # the seed's model, output[:, [i for i in range(0, n, 2)]]


def _recording(inner_name="eager"):
    """An inner backend that records the graph it is handed, then compiles it with ``inner_name``."""
    from torch._dynamo.backends.registry import lookup_backend

    seen = []

    def inner(gm, example_inputs, **kwargs):
        seen.append(gm)
        return lookup_backend(inner_name)(gm, example_inputs)

    return inner, seen


def _ops(gm):
    return [n.op for n in build_view(gm, origin="dynamo")]


def _out_and_grads(module, x):
    out = module(x)
    w = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
    return out, torch.autograd.grad((out * w).sum(), [p for p in module.parameters()])


@pytest.mark.parametrize("inner_name", ["eager", "aot_eager"])
def test_rewrite_option_hands_the_rewritten_graph_to_the_inner_backend(inner_name):
    torch._dynamo.reset()
    m, x = Sep(), torch.randn(4, 16)
    inner, seen = _recording(inner_name)
    compiled = torch.compile(m, backend="fxlint", options={"rewrite": True, "inner": inner})
    with fxlint.collect() as session:
        out, grads = _out_and_grads(compiled, x)
    want, want_grads = _out_and_grads(m, x)
    assert torch.equal(out, want) and all(torch.equal(a, b) for a, b in zip(grads, want_grads))
    [applied] = session.applied
    assert applied.line == line_of(test_backend.__file__, "# the seed's line") and applied.code == "FXL401"
    assert [f.code for f in session.findings] == ["FXL401"]  # the finding is still reported
    [gm] = seen
    assert "index" not in _ops(gm) and "slice" in _ops(gm)


def test_without_the_option_the_graph_is_untouched():
    torch._dynamo.reset()
    inner, seen = _recording()
    with fxlint.collect() as session:
        torch.compile(Sep(), backend="fxlint", options={"inner": inner})(torch.randn(4, 16))
    assert "index" in _ops(seen[0]) and session.rewrites == []


def test_dynamic_size_is_not_sliced_inside_compile():
    class Rows(nn.Module):
        def forward(self, x):
            return x[[0, 2]] * 2  # dim 0 is dynamic under dynamic=True

    torch._dynamo.reset()
    with fxlint.collect() as session:
        out = torch.compile(Rows(), backend="fxlint", dynamic=True,
                            options={"rewrite": True, "inner": "eager"})(torch.randn(5, 3))
    assert out.shape == (2, 3)
    [skipped] = session.skipped
    assert "dynamic size" in skipped.reason and "guard" in skipped.reason


def test_a_rolled_back_rewrite_is_logged_and_the_original_graph_compiled(caplog):
    from tests.test_rewrite import _wrong_rewrite, broken_fxl401

    reg = broken_fxl401(_wrong_rewrite)
    torch._dynamo.reset()
    m, x = Sep(), torch.randn(4, 16)
    with caplog.at_level(logging.INFO, logger="fxlint"):
        out = torch.compile(m, backend="fxlint", options={"rewrite": True, "inner": "eager", "registry": reg})(x)
    assert torch.equal(out, m(x))
    rolled = [r for r in caplog.records if r.levelno == logging.WARNING and "rolled back" in r.getMessage()]
    assert len(rolled) == 1 and "FXL401 not applied" in rolled[0].getMessage()


def test_any_failure_in_the_rewrite_is_one_warning_and_the_original_graph(monkeypatch):
    import fxlint.rewrite.engine as engine

    def boom(*args, **kwargs):
        raise RuntimeError("rewrite engine exploded")

    monkeypatch.setattr(engine, "rewrite_graph", boom)
    torch._dynamo.reset()
    m, x = Sep(), torch.randn(4, 16)
    inner, seen = _recording()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(m, backend="fxlint", options={"rewrite": True, "inner": inner})(x)
    assert torch.equal(out, m(x))
    msgs = [str(w.message) for w in caught if issubclass(w.category, FxlintWarning)]
    assert len(msgs) == 1 and "rewrite engine exploded" in msgs[0]
    assert "index" in _ops(seen[0])


def test_verify_false_and_select_options():
    torch._dynamo.reset()
    with fxlint.collect() as session:
        torch.compile(Sep(), backend="fxlint",
                      options={"rewrite": True, "verify": False, "inner": "eager"})(torch.randn(4, 16))
    assert len(session.applied) == 1 and session.rewrites[0].verified is False
    torch._dynamo.reset()
    with fxlint.collect() as session:
        torch.compile(Sep(), backend="fxlint",
                      options={"rewrite": True, "ignore": "FXL401", "inner": "eager"})(torch.randn(4, 16))
    assert session.applied == [] and session.findings == []


@pytest.mark.inductor
def test_rewrite_then_inductor_matches_eager_outputs_and_gradients():
    torch._dynamo.reset()
    from models import speech_separation

    m, inputs = speech_separation.make(batch=2, channels=128, time=100)
    with fxlint.collect() as session:
        compiled = torch.compile(m, backend="fxlint", options={"rewrite": True})
        out, grads = _out_and_grads(compiled, *inputs)
    want, want_grads = _out_and_grads(m, *inputs)
    torch.testing.assert_close(out, want)
    for a, b in zip(grads, want_grads):
        torch.testing.assert_close(a, b)
    assert len(session.applied) == 1 and session.skipped == []


def test_arange_to_the_dynamic_end_is_sliced_without_a_guard():
    class Every2nd(nn.Module):
        def forward(self, x):
            return x[:, torch.arange(0, x.size(1), 2)] * 2

    torch._dynamo.reset()
    inner, seen = _recording()
    m = Every2nd()
    compiled = torch.compile(m, backend="fxlint", dynamic=True, options={"rewrite": True, "inner": inner})
    with fxlint.collect() as session:
        for n in (7, 10):  # one graph serves both sizes: the slice added no guard on the size
            x = torch.randn(3, n)
            assert torch.equal(compiled(x), m(x))
    [applied] = session.applied
    assert applied.description.endswith("x[:, ::2]")
    assert len(seen) == 1 and "index" not in _ops(seen[0])


class _SepThenScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        output = self.lin(x)
        return output[:, [0, 2, 4, 6]] * 2  # the slice is read inside the graph, not returned


@pytest.mark.parametrize(
    "model, inner_name, grad, applied",
    [
        (Sep, None, False, False),  # inference under a compiler: the gather fuses, the view would not
        (Sep, "eager", False, True),  # op by op: the view always beats the copy
        (Sep, "aot_eager", False, True),
        (Sep, None, True, True),  # training: the slice's backward wins over the scatter
        (_SepThenScale, None, False, True),  # not returned: the compiler fuses the slice's read alike
    ],
)
def test_returned_index_under_a_fusing_compiler_keeps_its_gather(model, inner_name, grad, applied):
    torch._dynamo.reset()
    m, x = model(), torch.randn(4, 16)
    inner, seen = _recording(inner_name or "eager")
    # a callable inner backend is assumed to fuse, like Inductor; a name says which
    compiled = torch.compile(m, backend="fxlint", options={"rewrite": True, "inner": inner_name or inner})
    with fxlint.collect() as session, torch.set_grad_enabled(grad):
        out = compiled(x)
    want = m(x)
    torch.testing.assert_close(out, want)
    assert [a.code for a in session.applied] == (["FXL401"] if applied else [])
    if not applied:
        [skipped] = session.skipped
        assert "returned" in skipped.reason and "fuses the gather" in skipped.reason and "`output`" in skipped.reason
        assert "index" in _ops(seen[0])


class _HeadsAndGather(nn.Module):
    """CaiT's talking heads (an FXL201 copy Inductor keeps: the permuted input of the first Linear is copied
    by a kernel of its own) beside a returned gather Inductor fuses into the op that makes it (FXL401)."""

    def __init__(self):
        super().__init__()
        from tests.test_rewrite_linear_over_dim import TalkingHeads

        self.heads = TalkingHeads()
        self.lin = nn.Linear(16, 16)

    def forward(self, attn, x):
        output = self.lin(x) * 2
        return self.heads(attn), output[:, [0, 2, 4, 6]]


@pytest.mark.inductor
@pytest.mark.parametrize("select, compiles", [(None, 2), ("FXL401", 1)])
def test_under_inductor_the_rewrites_go_by_its_verdicts(monkeypatch, select, compiles):
    """The backend compiles the original graph with Inductor first and reads its verdicts: the fused gather
    is skipped with that reason, the talking heads are rewritten, and the program Inductor generates from
    the rewritten graph has no copy kernel left. When nothing is rewritten that first compile is the one
    returned (one compile, not two)."""
    import re

    from torch._inductor.utils import run_and_get_code

    import fxlint.backend as backend

    calls = []
    real = backend._call_inner
    monkeypatch.setattr(backend, "_call_inner", lambda *a, **k: calls.append(a[2]) or real(*a, **k))
    torch._dynamo.reset()
    m, attn, x = _HeadsAndGather().eval(), torch.randn(2, 4, 8, 8), torch.randn(4, 16)
    options = {"rewrite": True, **({"select": select} if select else {})}
    with fxlint.collect() as session, torch.no_grad():
        out, codes = run_and_get_code(torch.compile(m, backend="fxlint", options=options), attn, x)
        want = m(attn, x)
    for a, b in zip(out, want):
        torch.testing.assert_close(a, b)
    assert len(calls) == compiles
    [gather] = [s for s in session.skipped if s.code == "FXL401"]
    assert "compiled verdict `fused`" in gather.reason and not gather.rolled_back
    kernels = [re.findall(r"^(cpp_fused_\w+) = ", code, re.M) for code in codes]
    assert any("clone" in k for k in kernels[0])  # the original program copies the permuted scores
    if select is None:
        assert sorted(a.node for a in session.applied) == ["linear_1", "linear_2"]
        assert all(a.code == "FXL201" for a in session.applied)
        assert not any("clone" in k for k in kernels[-1]), kernels[-1]
        assert "extern_kernels.bmm" in codes[-1] and "extern_kernels.mm" not in codes[-1]
    else:
        assert session.applied == []

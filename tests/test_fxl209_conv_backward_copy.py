"""FXL209 conv-backward-copy: the copies a conv's backward makes on its own (oneDNN's input-gradient reorder of a
strided NCHW conv, the weight-gradient conversion of a channels_last conv, an output gradient that comes back in
another layout), each checked against the profiler on the machine the test runs on."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn as nn
from torch.profiler import profile

import fxlint
from tests.copy_helpers import findings, profiled_bytes
from tests.rule_snapshots import FIXTURES, lint_fixture, marked_lines


def _backward_copy_bytes(conv: nn.Module, x: torch.Tensor) -> dict[str, int]:
    """The bytes the conv's backward copies, by copy op (``aten::contiguous``, ``aten::_to_copy``), with the output's
    gradient in the output's own layout (what the rule's fixture and the census's loss hand back)."""
    y = conv(x)
    g = torch.randn_like(y)
    with profile(record_shapes=True) as p:
        y.backward(g)
    return profiled_bytes(p, ("aten::contiguous", "aten::_to_copy"))


class One(nn.Module):
    def __init__(self, conv: nn.Module):
        super().__init__()
        self.conv = conv

    def forward(self, x):
        return self.conv(x)


@pytest.mark.parametrize("nd", [2, 3])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("channels_last", [False, True])
def test_reported_exactly_where_the_profiler_sees_the_backward_copy(nd, stride, channels_last):
    """Whatever this CPU's oneDNN does (AVX2 and AVX-512 builds reorder a strided conv's input gradient, an SSE4.1
    cap does not; no oneDNN, no conversion): FXL209 claims the bytes the profiler sees, and nothing where it sees
    none."""
    torch.manual_seed(0)
    cls = nn.Conv2d if nd == 2 else nn.Conv3d
    fmt = torch.channels_last if nd == 2 else torch.channels_last_3d
    conv = cls(8, 16, 3, stride=stride, padding=1)
    x = torch.randn((2, 8) + (12,) * nd)
    if channels_last:
        conv, x = conv.to(memory_format=fmt), x.to(memory_format=fmt)
    seen = _backward_copy_bytes(conv, x.clone().requires_grad_())
    report = fxlint.lint(One(conv).train(), (x.clone().requires_grad_(),), train=True, select="FXL2", confirm=True,
                         config=False)
    got = findings(report, "FXL209")
    # what the forward converted (a channels_last input of a kernel that takes only NCHW) the backward converts
    # again: FXL202's claim, not this rule's
    again = sum(f.backward_bytes or 0 for f in findings(report, "FXL202"))
    assert sum(f.backward_bytes for f in got) + again == sum(seen.values())
    assert all(f.status == "confirmed" and f.bytes == 0 for f in got)


def test_fixture_positives_confirmed_and_negatives_silent():
    got = findings(lint_fixture("FXL209", train=True, confirm=True), "FXL209")
    text = (FIXTURES / "fxl209.py").read_text(encoding="utf-8").splitlines()
    machine = {i for i, line in enumerate(text, 1) if "# positive(machine):" in line}
    assert {f.line for f in got} <= set(marked_lines("FXL209", "positive")) | machine
    assert not {f.line for f in got} & set(marked_lines("FXL209", "negative"))
    assert set(marked_lines("FXL209", "positive")) <= {f.line for f in got}
    assert all(f.status == "confirmed" for f in got)


def test_output_gradient_names_the_op_that_lays_it_out():
    if not (torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled):
        pytest.skip("the grouped conv runs the native kernel, which slices its gradient per group anyway")
    got = findings(lint_fixture("FXL209", train=True), "FXL209")
    out = [f for f in got if f.violation is not None and f.violation.operand == "output"]
    assert len(out) == 1
    assert re.search(r"backward of `layer_norm` at line \d+", out[0].message)
    assert out[0].violation.grad_strides == (512, 1, 128, 32)


def test_inference_is_silent():
    assert findings(lint_fixture("FXL209", train=False), "FXL209") == []


def test_the_channels_last_trade_is_weighed_by_size():
    """The input-gradient finding says what channels_last would copy instead (the weight gradient) and whether that
    is smaller; a deep conv whose weight outweighs its activations says NCHW is the cheaper layout."""
    for cin, cout, hw, smaller in ((8, 16, 16, True), (256, 256, 4, False)):
        conv = nn.Conv2d(cin, cout, 3, stride=2, padding=1)
        x = torch.randn(2, cin, hw, hw, requires_grad=True)
        got = findings(fxlint.lint(One(conv).train(), (x,), train=True, select="FXL209", config=False), "FXL209")
        if not got:
            pytest.skip("this CPU's oneDNN writes the strided conv's input gradient in place")
        v = got[0].violation
        assert v.operand == "input" and v.other_copied == conv.weight.nbytes
        assert ("smaller here" in got[0].fix) == smaller and ("nothing to change" in got[0].fix) == (not smaller)

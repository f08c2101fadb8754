"""FXL123 global-pool-backward-copy: an adaptive average pool to 1 x 1 of a channels-last input copies its
gradient in the backward (the in-place restride of its result); each finding confirmed by the runtime with the
bytes the profiler counts, the negatives silent, and the fix equal in values and gradients without the copy."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.profiler import profile

import fxlint
from tests.copy_helpers import findings
from tests.rule_snapshots import lint_fixture, marked_lines, reported_lines, rule_output


def _backward_copy_bytes(fn, x):
    """Bytes ``aten::copy_`` writes in the backward of ``fn(x)`` (the as_strided backward's copy)."""
    x = x.detach().requires_grad_()
    y = fn(x)
    g = torch.randn(y.shape)
    with profile(record_shapes=True) as p:
        y.backward(g)
    return sum(torch.Size(e.input_shapes[0]).numel() * 4 for e in p.events()
               if e.name == "aten::copy_" and e.input_shapes and e.input_shapes[0]
               and e.cpu_parent is not None and "AsStrided" in e.cpu_parent.name)


def _nhwc_view(n, c, h, w):
    return torch.randn(n, h, w, c).permute(0, 3, 1, 2)


@pytest.mark.parametrize("n,c,h,w", [(2, 96, 7, 7), (3, 8, 4, 5), (1, 16, 2, 2)])
@pytest.mark.parametrize("layout", ["nhwc-view", "channels_last", "contiguous"])
def test_claimed_bytes_are_the_profilers(n, c, h, w, layout):
    if layout == "nhwc-view":
        x = _nhwc_view(n, c, h, w)
    elif layout == "channels_last":
        x = torch.randn(n, c, h, w).to(memory_format=torch.channels_last)
    else:
        x = torch.randn(n, c, h, w)
    x.requires_grad_()

    def fn(t):
        return F.adaptive_avg_pool2d(t, 1)

    measured = _backward_copy_bytes(fn, x)
    got = findings(fxlint.lint(fn, (x,), train=True, select=["FXL123"], config=False), "FXL123")
    claimed = sum(f.backward_bytes or 0 for f in got)
    assert claimed == measured
    assert (measured > 0) == (layout != "contiguous")
    if layout != "contiguous":
        assert measured == n * c * 4


def test_the_fix_has_the_same_values_and_gradients_and_no_copy():
    x = _nhwc_view(2, 16, 5, 5).requires_grad_()
    a = F.adaptive_avg_pool2d(x, 1)
    b = x.mean((2, 3), keepdim=True)
    assert torch.equal(a, b)
    ga, = torch.autograd.grad(a.sum() * 3, x)
    gb, = torch.autograd.grad(b.sum() * 3, x)
    assert torch.equal(ga, gb)
    assert _backward_copy_bytes(lambda t: t.mean((2, 3), keepdim=True), x) == 0


def test_positives_confirmed_and_negatives_silent():
    got = findings(lint_fixture("FXL123", train=True, confirm=True), "FXL123")
    assert {f.line for f in got} == set(marked_lines("FXL123", "positive"))
    assert all(f.status == "confirmed" and f.bytes == 0 and f.backward_bytes > 0 for f in got)


def test_inference_is_silent():
    assert findings(lint_fixture("FXL123", train=False), "FXL123") == []


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    out = rule_output("FXL123")
    assert reported_lines(out, "FXL123") == set(marked_lines("FXL123", "positive"))
    assert out == snapshot

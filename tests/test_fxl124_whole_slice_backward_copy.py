"""FXL124 whole-slice-backward-copy: a slice written alone that takes its whole dim runs `aten::slice`, whose
backward copies the whole gradient; each finding confirmed by the runtime with the profiler's bytes, the negatives
silent, and the fix (a tuple index) equal in values and gradients without the copy."""

from __future__ import annotations

import pytest
import torch
from torch.profiler import profile

import fxlint
from tests.copy_helpers import findings, profiled_bytes
from tests.rule_snapshots import lint_fixture, marked_lines, reported_lines, rule_output

_SUBSCRIPTS = {
    "x[:n]": (lambda x: x[:x.size(0)], True), "x[0:]": (lambda x: x[0:], True), "x[:]": (lambda x: x[:], True),
    "narrow": (lambda x: x.narrow(0, 0, x.size(0)), True),
    "x[:n, ...]": (lambda x: x[:x.size(0), ...], False), "x[0:, :]": (lambda x: x[0:, :], False),
    "x[:, 0:]": (lambda x: x[:, 0:], False),
}


def _backward_slice_bytes(fn, x):
    x = x.detach().requires_grad_()
    y = fn(x * 1.0)
    with profile(record_shapes=True) as p:
        y.backward(torch.randn(y.shape))
    return profiled_bytes(p, ("aten::slice_backward",), x.element_size()).get("aten::slice_backward", 0)


@pytest.mark.parametrize("name", sorted(_SUBSCRIPTS))
@pytest.mark.parametrize("shape,dtype", [((10, 2, 128), torch.float32), ((3, 5), torch.float64),
                                         ((4, 1, 6), torch.bfloat16)])
def test_claimed_bytes_are_the_profilers(name, shape, dtype):
    fn, copies = _SUBSCRIPTS[name]
    x = torch.randn(shape, dtype=dtype, requires_grad=True)
    measured = _backward_slice_bytes(fn, x)
    got = findings(fxlint.lint(lambda t: fn(t * 1.0), (x,), train=True, select=["FXL124"], config=False), "FXL124")
    assert sum(f.backward_bytes or 0 for f in got) == measured
    assert (measured == x.numel() * x.element_size()) == copies and (measured == 0) == (not copies)


def test_the_fix_has_the_same_values_and_gradients_and_no_copy():
    x = torch.randn(6, 3, 8, requires_grad=True)
    a, b = x[:6], x[:6, ...]
    assert torch.equal(a, b)
    g = torch.randn(6, 3, 8)
    ga, = torch.autograd.grad(a, x, g)
    gb, = torch.autograd.grad(b, x, g)
    assert torch.equal(ga, gb)
    assert _backward_slice_bytes(lambda t: t[:6, ...], x) == 0


def test_positives_confirmed_and_negatives_silent():
    got = findings(lint_fixture("FXL124", train=True, confirm=True), "FXL124")
    assert {f.line for f in got} == set(marked_lines("FXL124", "positive"))
    assert all(f.status == "confirmed" and f.bytes == 0 and f.backward_bytes > 0 for f in got)


def test_inference_is_silent():
    assert findings(lint_fixture("FXL124", train=False), "FXL124") == []


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    out = rule_output("FXL124")
    assert reported_lines(out, "FXL124") == set(marked_lines("FXL124", "positive"))
    assert out == snapshot

"""FXL120 square-backward-copy: squares by pow copy their base in the backward; `x * x` does not."""

from __future__ import annotations

import pytest
import torch
from torch.profiler import profile

from tests.copy_helpers import findings
from tests.rule_snapshots import lint_fixture, marked_lines, reported_lines, rule_output


def _backward_copies(fn, x):
    """The backward copies (``aten::copy_`` under an autograd node) of ``fn(x).sum().backward()``."""
    x = x.detach().requires_grad_()
    with profile(record_shapes=True) as p:
        (fn(x * 1.0) * torch.randn(x.shape)).sum().backward()
    tree = p.profiler.kineto_results.experimental_event_tree()
    found = []

    def visit(e, node):
        if type(e.extra_fields).__name__ != "_ExtraFields_TorchOp":
            return
        name = e.name
        if name.startswith("autograd::engine::evaluate_function: "):
            node = name.split(": ", 1)[1]
        elif name == "aten::copy_" and node is not None:
            shape = tuple(e.extra_fields.inputs[0].sizes)
            if len(shape) > 0:  # not a wrapped Python scalar
                found.append((node, shape))
            return
        for c in e.children:
            visit(c, node)

    for r in tree:
        visit(r, None)
    return found


@pytest.mark.parametrize("spelling,fn,copies", [
    ("pow(2)", lambda x: x.pow(2), True),
    ("** 2", lambda x: x ** 2, True),
    ("square", torch.square, True),
    ("pow(2.0)", lambda x: torch.pow(x, 2.0), True),
    ("pow(3)", lambda x: x.pow(3), False),
    ("x * x", lambda x: x * x, False),
])
def test_which_squares_copy_in_backward(spelling, fn, copies):
    """The rule's premise, against the profiler: pow's gradient runs ``x.pow(1)``, a copy, for an exponent of 2."""
    x = torch.randn(4, 8, 16)
    got = _backward_copies(fn, x)
    assert (("PowBackward0", (4, 8, 16)) in got) == copies


def test_positives_in_training_confirmed_by_the_backward_copy():
    got = findings(lint_fixture("FXL120", train=True, confirm=True), "FXL120")
    assert {f.line for f in got} == set(marked_lines("FXL120", "positive"))
    for f in got:
        assert f.status == "confirmed" and f.bytes == 0 and f.backward_bytes == 4 * 8 * 16 * 4


def test_inference_is_silent():
    assert findings(lint_fixture("FXL120", train=False), "FXL120") == []


def test_the_fix_gives_the_same_values_and_gradients_to_the_bit():
    x = torch.randn(64, 32)
    w = torch.randn(64, 1)
    grads = []
    for fn in (lambda h: h.pow(2), lambda h: h * h):
        h = x.clone().requires_grad_()
        y = fn(h).mean(-1, keepdim=True)
        (y * w).sum().backward()
        grads.append((y.detach(), h.grad))
    assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1])


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    out = rule_output("FXL120")
    assert reported_lines(out, "FXL120") == set(marked_lines("FXL120", "positive"))
    assert out == snapshot


def test_a_square_read_only_by_item_runs_no_backward_and_is_not_reported():
    """``aux.pow(2).mean().item()`` (models/item_loss.py): the graph breaks at ``.item()``, the square's value leaves
    only as a Python number, and no gradient comes back through it."""
    import fxlint
    import torch.nn as nn

    class AuxByItem(nn.Module):
        def __init__(self):
            super().__init__()
            self.main, self.aux = nn.Linear(8, 4), nn.Linear(8, 1)

        def forward(self, x):
            aux = self.aux(x).pow(2).mean()
            return self.main(x).sum() + 0.1 * aux.item()

    got = findings(fxlint.lint(AuxByItem().train(), torch.randn(4, 8), train=True, select="FXL120", config=False),
                   "FXL120")
    assert got == []


class _RMS(torch.nn.Module):
    def __init__(self, spelling):
        super().__init__()
        self.norm, self.spelling = torch.nn.RMSNorm(16, eps=1e-6), spelling

    def forward(self, x):
        if self.spelling == "module":
            return self.norm(x * 2.0)  # the RMSNorm module
        if self.spelling == "functional":
            return torch.nn.functional.rms_norm(x * 2.0, (16,), self.norm.weight, 1e-6)  # F.rms_norm
        h = x * 2.0
        return h * torch.rsqrt((h * h).mean(-1, keepdim=True) + 1e-6) * self.norm.weight  # written out


@pytest.mark.parametrize("spelling", ["module", "functional", "written out"])
def test_rms_norm_copies_its_input_in_the_backward_and_the_written_out_norm_does_not(spelling):
    import fxlint
    from tests.conftest import line_of

    x = torch.randn(2, 8, 16, requires_grad=True)
    got = findings(fxlint.lint(_RMS(spelling), (x,), train=True, select="FXL120", confirm=True, config=False),
                   "FXL120")
    real = [c for c in fxlint.audit(_RMS(spelling), (x,), train=True).copies
            if c.phase == "backward" and c.avoidable and c.file == __file__]
    if spelling == "written out":
        assert got == [] and real == []
        return
    marker = "# the RMSNorm module" if spelling == "module" else "# F.rms_norm"
    [f] = got
    assert f.line == line_of(__file__, marker) and f.status == "confirmed" and f.backward_bytes == x.numel() * 4
    assert [c.bytes for c in real] == [x.numel() * 4] and "x * x" in f.fix
    with torch.no_grad():
        torch.testing.assert_close(_RMS(spelling)(x), _RMS("written out")(x))

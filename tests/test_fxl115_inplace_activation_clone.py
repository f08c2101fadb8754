"""FXL115 inplace-activation-clone: positives, negatives, the clone against the audit, the fix's values."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.profiler import profile

from tests.copy_helpers import findings
from tests.rule_snapshots import lint_fixture, marked_lines, reported_lines, rule_output


def test_positives_in_training_confirmed_by_the_clone():
    got = findings(lint_fixture("FXL115", train=True, confirm=True), "FXL115")
    assert {f.line for f in got} == set(marked_lines("FXL115", "positive"))
    assert {f.details["activation"] for f in got} == {"silu", "hardswish", "relu6"}
    for f in got:
        assert f.status == "confirmed" and f.bytes == 2 * 8 * 8 * 8 * 4


def test_inference_under_no_grad_is_silent():
    assert findings(lint_fixture("FXL115", train=False), "FXL115") == []


@pytest.mark.parametrize("act,clones", [("silu", True), ("hardswish", True), ("mish", True), ("hardsigmoid", True),
                                        ("relu", False), ("elu", False), ("selu", False)])
def test_which_in_place_activations_autograd_clones(act, clones):
    """The rule's table, against the profiler: the in-place call clones its input when a gradient flows."""
    x = torch.randn(32, 32, requires_grad=True) * 1.0
    with profile() as p:
        getattr(F, act)(x, inplace=True)
    assert any(e.name == "aten::clone" for e in p.events()) == clones
    from fxlint.passes.fxl115_inplace_activation_clone import _INPLACE_ARG

    assert (act in _INPLACE_ARG) == clones


def test_the_fix_gives_the_same_values_and_gradients():
    for inplace in (True, False):
        torch.manual_seed(0)
        x = torch.randn(16, 16, requires_grad=True)
        y = F.silu(x * 2, inplace=inplace)
        y.sum().backward()
        if inplace:
            ref = (y.detach(), x.grad)
    torch.testing.assert_close(ref[0], y.detach())
    torch.testing.assert_close(ref[1], x.grad)


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    out = rule_output("FXL115")
    assert reported_lines(out, "FXL115") == set(marked_lines("FXL115", "positive"))
    assert out == snapshot

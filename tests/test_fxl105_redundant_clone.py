"""FXL105 redundant-clone: clones nobody needs, and clone().detach() in the wrong order."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from tests.copy_helpers import Expect, check_negative, check_positive, findings

X = torch.randn(4, 8)
LIN = nn.Linear(8, 8)


def skip_copy(x):
    h = torch.relu(x)
    skip = h.clone()  # nobody writes h or skip
    return h * 2 + skip


def returned_intermediate(x):
    return (x * 2).clone()  # a fresh tensor cloned again


def clone_detach(x):
    return LIN(x).clone().detach() * 2  # clone, then detach


def clone_detach_written(x):
    y = LIN(x).clone().detach()  # the copy is needed, the order is not
    y.mul_(2)
    return y


POSITIVE = [
    ("skip connection copy", skip_copy, (X,), [Expect("# nobody writes", 128)]),
    ("returned clone of an intermediate", returned_intermediate, (X,), [Expect("# a fresh tensor", 128)]),
    ("clone().detach() redundant", clone_detach, (X,), [Expect("# clone, then detach", 128)]),
    ("clone().detach() needed", clone_detach_written, (X,), [Expect("# the copy is needed", None, "info")]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    check_positive(fn, inputs, "FXL105", expected)


def _clone_written(x):
    y = x.clone()
    y[0] = 0
    return y


def _source_written(x):
    y = x.clone()
    x.add_(1)
    return y * 2


def _view_of_clone_written(x):
    y = x.clone()
    y.view(-1)[:3] = 0
    return y


NEGATIVE = [
    ("clone written later", _clone_written, (X,)),
    ("source written later", _source_written, (X.clone(),)),
    ("a view of the clone written", _view_of_clone_written, (X,)),
    ("returned clone of an input", lambda x: x.clone(), (X,)),
    ("clone and source both returned", lambda x: (lambda h: (h, h.clone()))(x * 2), (X,)),
    ("layout conversion", lambda x: x.clone(memory_format=torch.channels_last) + 1, (torch.randn(2, 3, 4, 4),)),
    ("detach().clone() of a written tensor", lambda x: (lambda y: y.mul_(2))(LIN(x).detach().clone()), (X,)),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    check_negative(fn, inputs, "FXL105")


def test_clone_detach_message_and_details():
    [f] = findings(fxlint.lint(clone_detach_written, (X,), select="FXL105"), "FXL105")
    assert f.details["clone_then_detach"] and not f.details["redundant"]
    assert "CloneBackward0" in f.message and "`.detach().clone()`" in f.fix
    # the claim: clone() on a tensor that requires grad records CloneBackward0; detach().clone() does not
    h = LIN(X)
    assert type(h.clone().grad_fn).__name__ == "CloneBackward0" and h.detach().clone().grad_fn is None
    # both make the same copy
    a = fxlint.audit(lambda x: LIN(x).clone().detach(), (X,)).copies
    b = fxlint.audit(lambda x: LIN(x).detach().clone(), (X,)).copies
    assert [c.bytes for c in a if c.op == "aten::clone"] == [c.bytes for c in b if c.op == "aten::clone"] == [128]


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text (info for the needed clone().detach());
    no negative reported."""
    from tests.rule_snapshots import rule_output

    out = rule_output("FXL105")
    assert out.count("FXL105 warning") == 3 and out.count("FXL105 info") == 1 and "negative" not in out
    for block in out.strip().split("\n\n"):  # the positive marked info is the one reported as info
        assert (" info " in block.splitlines()[0]) == ("positive (info)" in block), block
    assert out == snapshot

"""FXL103 dtype-roundtrip: A -> B -> A in every spelling, precision loss named, backward counted."""

from __future__ import annotations

import pytest
import torch

import fxlint
from tests.copy_helpers import Expect, check_negative, check_positive, findings

X = torch.randn(4, 8)


def half_float(x):
    return x.half().float() * 2  # 64 + 128 bytes


def to_to(x):
    return x.to(torch.bfloat16).to(torch.float32) + 1  # bf16 round trip


def through_double(x):
    return x.double().type(torch.float32) + 1  # lossless, still two copies


def through_view(x):
    return x.half().view(32).float() + 1  # a view in between computes nothing


def two_lines(x):
    h = x.half()  # first half
    return h.float() + 1  # back


def used_elsewhere(x):
    h = x.half()
    y = h * 2
    return h.float() + y.float()  # only the copy back is wasted, y.float() is not a round trip


def ints(x):
    return x.int().long() + 1  # int64 -> int32 -> int64


POSITIVE = [
    ("half().float()", half_float, (X,), [Expect("# 64 + 128 bytes", 192)]),
    (".to(bf16).to(f32)", to_to, (X,), [Expect("# bf16 round trip", 192)]),
    ("double().type(float32)", through_double, (X,), [Expect("# lossless", 384)]),
    ("through a view", through_view, (X,), [Expect("# a view in between", 192)]),
    ("two lines", two_lines, (X,), [Expect("# first half", 64), Expect("# back", 128)]),
    ("intermediate used elsewhere", used_elsewhere, (X,), [Expect("# only the copy back", 128)]),
    ("int64 through int32", ints, (torch.arange(32).view(4, 8),), [Expect("# int64 -> int32", 32 * 4 + 32 * 8)]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    check_positive(fn, inputs, "FXL103", expected)


NEGATIVE = [
    ("mixed precision: computes in half", lambda x: torch.relu(x.half()).float(), (X,)),
    ("to another dtype", lambda x: x.half().bfloat16() + 1, (X,)),
    ("a noop is not a round trip", lambda x: x.float() + 1, (X,)),
    ("one conversion", lambda x: x.half() + 1, (X,)),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    check_negative(fn, inputs, "FXL103")


@pytest.mark.parametrize("fn,lossless,words", [
    (half_float, False, "11-bit mantissa"),
    (to_to, False, "8-bit mantissa"),
    (through_double, True, "nothing is lost"),
    (ints, False, "wraps values outside the int32 range"),
], ids=["f16", "bf16", "f64", "i32"])
def test_precision_loss_is_named(fn, lossless, words):
    x = torch.arange(32).view(4, 8) if fn is ints else X
    [f] = findings(fxlint.lint(fn, (x,), select="FXL103"), "FXL103")
    assert f.details["lossless"] is lossless and words in f.message


def test_backward_pays_both_conversions_again():
    x = X.clone().requires_grad_()
    [f] = findings(fxlint.lint(half_float, (x,), select="FXL103"), "FXL103")
    audit = fxlint.audit(half_float, (x,), train=True)
    bwd = [c for c in audit.copies if c.phase == "backward" and c.grad_fn == "ToCopyBackward0"]
    assert f.details["backward_bytes"] == sum(c.bytes for c in bwd) == 192
    assert "backward" in f.message
    [g] = findings(fxlint.lint(half_float, (X,), select="FXL103"), "FXL103")
    assert g.details["backward_bytes"] == 0


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text (the first half of a trip over two lines
    on its own line); no negative reported."""
    from tests.rule_snapshots import rule_output

    out = rule_output("FXL103")
    assert out.count("FXL103 warning") == 9 and out.count("# positive") == 9 and "negative" not in out
    assert out == snapshot

"""FXL108 noop-conversion: conversions that change nothing, at info level, confirmed copy-free."""

from __future__ import annotations

import pytest
import torch

import fxlint
from tests.copy_helpers import Expect, check_negative, check_positive, findings

X = torch.randn(4, 8)


def float_on_float(x):
    return x.float() + 1  # already float32


def to_same_dtype(x):
    return x.to(torch.float32) * 2  # .to(dtype) spelling


def type_as_same(x, y):
    return x.type_as(y) - y  # type_as spelling


def half_on_half(x):
    return x.half() + 1  # already float16


def contiguous_on_contiguous(x):
    return torch.cat([x, x]).contiguous() + 1  # cat is contiguous


def channels_last_again(x):
    return x.to(memory_format=torch.channels_last) + 1  # already channels_last


POSITIVE = [
    (".float() on float32", float_on_float, (X,), [Expect("# already float32", 0, "info")]),
    (".to(float32) on float32", to_same_dtype, (X,), [Expect("# .to(dtype) spelling", 0, "info")]),
    (".type_as() same dtype", type_as_same, (X, X), [Expect("# type_as spelling", 0, "info")]),
    (".half() on float16", half_on_half, (X.half(),), [Expect("# already float16", 0, "info")]),
    (".contiguous() on contiguous", contiguous_on_contiguous, (X,), [Expect("# cat is contiguous", 0, "info")]),
    ("channels_last again", channels_last_again, (torch.randn(2, 3, 4, 4).to(memory_format=torch.channels_last),),
     [Expect("# already channels_last", 0, "info")]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    check_positive(fn, inputs, "FXL108", expected)


NEGATIVE = [
    ("device-only .to(x.device)", lambda x: x.to(x.device) + 1, (X,)),
    (".cpu() on the CPU", lambda x: x.cpu() + 1, (X,)),
    ("a real conversion", lambda x: x.float() + 1, (X.half(),)),
    ("a real layout copy", lambda x: x.t().contiguous() + 1, (X,)),
    ("copy=True always copies", lambda x: x.to(torch.float32, copy=True) + 1, (X,)),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    check_negative(fn, inputs, "FXL108")


def test_a_zero_byte_claim_is_refuted_when_the_line_copies_that_tensor():
    """The confirmation of a no-copy claim: confirmed when nothing of that size is copied on the line."""
    from fxlint.findings import Finding, Severity
    from fxlint.runtime.confirm import match

    def f(x):
        return x.t().contiguous()  # a real copy on this line

    audit = fxlint.audit(f, (X,))
    line = f.__code__.co_firstlineno + 1
    claim = Finding(code="FXL108", name="noop-conversion", severity=Severity.INFO, message="m", file=__file__,
                    line=line, bytes=0, tensor_shape=(8, 4))
    assert match(claim, audit)[0] == "refuted"
    assert match(claim.with_(tensor_shape=(2, 2)), audit)[0] == "confirmed"
    assert match(claim.with_(line=line + 100), audit)[0] == "not-run"


def _float_and_copy(x, z):
    return x.float() + z.t().contiguous()  # two ops


def _two_contiguous(x, z):
    return x.contiguous() + z.t().contiguous()  # two ops


@pytest.mark.parametrize("fn", [_float_and_copy, _two_contiguous])
def test_a_copy_another_op_on_the_line_makes_does_not_refute_the_claim(fn):
    """The no-copy claim is about its own op: the line's other call (`z.t().contiguous()`, a real copy of
    a tensor of the same shape, FXL101's) refuted `.float()` and `x.contiguous()`'s "changes nothing"."""
    x, z = torch.randn(4, 4), torch.randn(4, 4)
    rep = fxlint.lint(fn, (x, z), select=["FXL101", "FXL108"], confirm=True, config=False)
    status = {f.code: f.status for f in rep.findings}
    assert status == {"FXL101": "confirmed", "FXL108": "confirmed"}, status
    # the claim alone (no finding explains the copy): a `.float()` claim is still confirmed (the copy is
    # a `contiguous` call's), a `.contiguous()` claim on that line refuted (the same call copied)
    from fxlint.runtime.confirm import match

    [claim] = findings(rep, "FXL108")
    audit = fxlint.audit(fn, (x, z))
    assert match(claim, audit)[0] == ("confirmed" if fn is _float_and_copy else "refuted")


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text, at info level; no negative reported. Each
    no-copy claim names the tensor it is about (what the runtime cross-check looks for on the line)."""
    from tests.rule_snapshots import load_fixture, rule_output

    out = rule_output("FXL108")
    assert out.count("FXL108 info") == 6 and "FXL108 warning" not in out and "negative" not in out
    assert out == snapshot
    model, inputs = load_fixture("FXL108").make()
    found = fxlint.lint(model, inputs, select="FXL108", config=False).findings
    assert [f.tensor_shape for f in sorted(found, key=lambda f: f.line)] == [(4, 8)] * 4 + [(8, 8), (2, 3, 4, 4)]
    assert all(f.bytes == 0 and "shape" not in f.to_dict()["details"] for f in found)

"""FXL401 index-as-slice: every spelling, every graph origin, and the negatives."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from tests.conftest import line_of


class Fn(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


X = torch.randn(6, 16)

POSITIVE = [
    ("list step 2", lambda x: x[:, [0, 2, 4, 6]], "[:, :7:2]"),
    ("list comprehension", lambda x: x[:, [i for i in range(0, x.size(1), 2)]], "[:, ::2]"),
    ("single element", lambda x: x[[3]], "[3:4]"),
    ("negative indices", lambda x: x[:, [-4, -3, -2, -1]], "[:, 12:]"),
    ("step 3 from 1", lambda x: x[:, [1, 4, 7, 10]], "[:, 1:11:3]"),
    ("arange index", lambda x: x[:, torch.arange(0, 16, 3)], "[:, ::3]"),
    ("tensor index", lambda x: x[torch.tensor([1, 2, 3])], "[1:4]"),
    ("index_select arange", lambda x: x.index_select(1, torch.arange(2, 9)), "[:, 2:9]"),
    ("torch.index_select tensor", lambda x: torch.index_select(x, 1, torch.tensor([2, 3, 4, 5])), "[:, 2:6]"),
    ("tuple index", lambda x: x[(0, 1, 2),], "[:3]"),
    ("range object", lambda x: x[:, range(1, 16, 5)], "[:, 1::5]"),
    ("two dims, one fixed", lambda x: x[[1], [0, 2, 4]], "[1, :5:2]"),
    ("two dims, outer product", lambda x: x[[[0], [1]], [0, 2]], "[:2, :3:2]"),
    ("two dims, fixed after", lambda x: x[[0, 2, 4], [3]], "[::2, 3]"),
]

NEGATIVE = [
    ("uneven list", lambda x: x[:, [0, 2, 3]]),
    ("decreasing", lambda x: x[:, [3, 2, 1]]),
    ("repeated", lambda x: x[:, [1, 1]]),
    ("basic slice", lambda x: x[:, ::2]),
    ("bool mask", lambda x: x[:, torch.tensor([True, False] * 8)]),
    ("2-d index", lambda x: x[:, torch.tensor([[0, 1], [2, 3]])]),
    ("two advanced dims pair up", lambda x: x[[0, 1], [2, 3]]),
    ("data-dependent index", lambda x: x[:, x[0].argsort()[:4]]),
    ("narrow", lambda x: x.narrow(1, 2, 4)),
    ("two dims, swapped outer product", lambda x: x[[0, 2], [[0], [1]]]),  # result dims in the other order
    ("2-d index along one axis", lambda x: x[:, [[0, 2, 4]]]),
]


def _fxl401(report):
    return [f for f in report.findings if f.code == "FXL401"]


@pytest.mark.parametrize("label,fn,slice_", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive_through_dynamo(label, fn, slice_):
    report = fxlint.lint(fn, (X,))
    found = _fxl401(report)
    assert len(found) == 1, report
    f = found[0]
    out = fn(X)
    assert f.bytes == out.numel() * out.element_size()
    assert f.details["slice"] == slice_
    assert slice_ in f.message and slice_ in f.fix
    assert f.file == __file__
    assert f.severity == fxlint.Severity.WARNING
    # the suggested slice really is the same elements
    assert torch.equal(eval(f"X{slice_}"), out)


@pytest.mark.parametrize("label,fn", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative_through_dynamo(label, fn):
    assert _fxl401(fxlint.lint(fn, (X,))) == []


@pytest.mark.parametrize("label,fn,slice_", [p for p in POSITIVE if p[0] != "list comprehension"],
                         ids=[p[0] for p in POSITIVE if p[0] != "list comprehension"])
def test_positive_through_export_and_symbolic_trace(label, fn, slice_):
    m = Fn(fn)
    for target in (torch.export.export(m, (X,)), torch.fx.symbolic_trace(m)):
        found = _fxl401(fxlint.lint(target, (X,)))
        assert len(found) == 1, (type(target).__name__, label)
        assert found[0].details["slice"] == slice_


@pytest.mark.parametrize("label,fn", [n for n in NEGATIVE if n[0] != "data-dependent index"],
                         ids=[n[0] for n in NEGATIVE if n[0] != "data-dependent index"])
def test_negative_through_export(label, fn):
    assert _fxl401(fxlint.lint(torch.export.export(Fn(fn), (X,)))) == []


class SeedModel(nn.Module):
    """The speech-separation seed, with a constant channel count so symbolic_trace can follow it."""

    def __init__(self, n: int = 16):
        super().__init__()
        self.n = n
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        output = self.lin(x)
        return output[:, [i for i in range(0, self.n, 2)]]  # seed line


@pytest.mark.parametrize("form", ["module", "symbolic_trace", "export"])
def test_seed_line_found_in_every_form(form):
    m = SeedModel()
    x = torch.randn(4, 16)
    target = {"module": lambda: m, "symbolic_trace": lambda: torch.fx.symbolic_trace(m),
              "export": lambda: torch.export.export(m, (x,))}[form]()
    found = _fxl401(fxlint.lint(target, (x,)))
    assert len(found) == 1
    f = found[0]
    assert f.details["slice"] == "[:, ::2]"
    assert f.bytes == 4 * 8 * 4
    if form != "symbolic_trace":  # symbolic_trace records no stack traces
        assert (f.file, f.line) == (__file__, line_of(__file__, "# seed line"))
    else:
        assert f.node is not None and f.location.startswith("<graph>")


def test_scenario_model_in_zoo():
    from models import speech_separation

    m, inputs = speech_separation.make()
    report = fxlint.lint(m, inputs)
    assert report.codes() == speech_separation.EXPECTED
    f = report.findings[0]
    assert f.line == line_of(speech_separation.__file__, "speaker_a = output[")
    out = m(*inputs)
    assert f.bytes == out.numel() * out.element_size()


def test_suppression_comment_silences_and_counts():
    def f(x):
        return x[:, [0, 2, 4]]  # fxlint: ignore[FXL401]

    report = fxlint.lint(f, (X,))
    assert _fxl401(report) == []
    assert [s.code for s in report.suppressed] == ["FXL401"]
    assert report.summary()["suppressed"] == 1


def test_select_and_ignore():
    fn = POSITIVE[0][1]
    assert _fxl401(fxlint.lint(fn, (X,), ignore=["FXL4"])) == []
    assert len(_fxl401(fxlint.lint(fn, (X,), select="FXL401"))) == 1
    assert _fxl401(fxlint.lint(fn, (X,), select=["FXL4"], ignore=["FXL401"])) == []
    assert len(_fxl401(fxlint.lint(fn, (X,), select=["FXL401"], ignore=["FXL4"]))) == 1  # specific wins
    with pytest.raises(fxlint.ConfigError, match="FXL999"):
        fxlint.lint(fn, (X,), select=["FXL999"])


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text; no negative reported."""
    from tests.rule_snapshots import rule_output

    out = rule_output("FXL401")
    assert out.count("FXL401 warning") == 4 and "negative" not in out
    assert out == snapshot

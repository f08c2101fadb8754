"""FXL403 mask-index: boolean-mask reads, from Dynamo's graph break and from graphs that hold them."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from tests.conftest import line_of

X = torch.randn(8, 8)


def _fxl403(report):
    return [f for f in report.findings if f.code == "FXL403"]


def read_sum(x):
    m = x > 0
    return x[m].sum() + 1  # mask read, summed


def read_scaled(x):
    return x[x > 0] * 2  # mask read, scaled


def masked_select(x):
    return x.masked_select(x > 0).mean() * 2  # masked_select


@pytest.mark.parametrize("fn,marker,op", [
    (read_sum, "# mask read, summed", "aten.nonzero"),
    (read_scaled, "# mask read, scaled", "aten.nonzero"),
    (masked_select, "# masked_select", "aten.masked_select"),
], ids=["x[m].sum()", "x[m] * 2", "masked_select"])
def test_dynamo_graph_break_on_a_mask_read_is_reported_at_the_line(fn, marker, op):
    report = fxlint.lint(fn, (X,))
    [f] = _fxl403(report)
    assert (f.file, f.line) == (__file__, line_of(__file__, marker))
    assert op in f.message and "breaks the graph" in f.message
    assert "torch.where(mask, x, 0)" in f.fix
    assert f.details["source"] == "graph break"
    assert report.graph_breaks >= 1


class MaskSum(nn.Module):
    def forward(self, x):
        return x[x > 0].sum()  # mask read in the graph


@pytest.mark.parametrize("form", ["export", "symbolic_trace"])
def test_mask_read_inside_a_graph(form):
    m = MaskSum()
    target = torch.export.export(m, (X,)) if form == "export" else torch.fx.symbolic_trace(m)
    [f] = _fxl403(fxlint.lint(target, (X,)))
    assert "data-dependent shape" in f.message
    assert "only summed" in f.message  # the one consumer is a sum: where() gives the same value
    if form == "export":
        assert f.line == line_of(__file__, "# mask read in the graph")


def test_the_suggestion_is_the_same_value_with_a_static_shape():
    m = X > 0
    torch.testing.assert_close(torch.where(m, X, 0).sum(), X[m].sum())


def test_runtime_confirms_the_gather():
    [f] = _fxl403(fxlint.lint(read_sum, (X,), confirm=True))
    assert f.status == "confirmed"


NEGATIVE = [
    ("explicit nonzero", lambda x: x.nonzero().float().sum() + 1),
    ("where keeps the shape", lambda x: torch.where(x > 0, x, 0).sum()),
    ("masked_fill", lambda x: x.masked_fill(x > 0, 0.0) * 2),
    ("masked write", lambda x: _masked_write(x)),
    ("integer index", lambda x: x[torch.tensor([1, 3])] * 2),
]


def _masked_write(x):
    y = x.clone()
    y[y > 0] = 0.0  # index_put_ with a scalar already runs masked_fill_: no gather, static shape
    return y * 2


@pytest.mark.parametrize("label,fn", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negatives(label, fn):
    assert _fxl403(fxlint.lint(fn, (X,))) == []


def test_backend_reports_the_break_and_the_result_is_unchanged():
    torch._dynamo.reset()
    with fxlint.collect() as session:
        out = torch.compile(read_sum, backend="fxlint", options={"inner": "eager"})(X)
    torch.testing.assert_close(out, read_sum(X))
    # the same break is also in FXL501's catalogue of graph breaks
    assert sorted(f.code for f in session.findings) == ["FXL403", "FXL501"]


def test_suppression():
    def f(x):
        return x[x > 0].sum()  # fxlint: ignore[FXL403]

    report = fxlint.lint(f, (X,))
    assert _fxl403(report) == [] and [s.code for s in report.suppressed] == ["FXL403"]


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text, as torch.compile sees it (at Dynamo's
    graph breaks) and as torch.export does (in the graph); no negative reported."""
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    compiled = rule_output("FXL403")
    exported = rule_output("FXL403", make="make_exported")
    positives = set(marked_lines("FXL403", "positive"))
    assert reported_lines(compiled, "FXL403") == positives == reported_lines(exported, "FXL403")
    assert "# negative" not in compiled + exported and "it is only summed" in exported
    assert rule_output("FXL403", make="make_explicit") == "(no findings)\n"
    assert compiled == snapshot
    assert exported == snapshot

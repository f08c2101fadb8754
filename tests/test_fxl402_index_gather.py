"""FXL402 index-gather: a 1-D index tensor on a leading dim, where index_select was measured faster."""

from __future__ import annotations

import pytest
import torch

import fxlint
from tests.conftest import line_of

X = torch.randn(16, 8)
COLS = torch.tensor([7, 1, 3])
ROWS = torch.tensor([5, 0, 9, 9])


def _fxl402(report):
    return [f for f in report.findings if f.code == "FXL402"]


def rows(x, cols, rows):
    return x[rows] * 2  # rows gather


def middle(x, cols, rows):
    return x.view(4, 4, 8)[:, rows % 4] * 2  # middle dim gather


@pytest.mark.parametrize("fn,marker,dim", [(rows, "# rows gather", 0), (middle, "# middle dim gather", 1)],
                         ids=["dim 0", "dim 1 of 3-D"])
def test_leading_dim_gather_suggests_index_select(fn, marker, dim):
    [f] = _fxl402(fxlint.lint(fn, (X, COLS, ROWS)))
    assert f.severity == fxlint.Severity.INFO
    assert f.line == line_of(__file__, marker) and f.details["dim"] == dim
    assert "index_select" in f.fix and "aten::index" in f.message and "measured" in f.message
    assert f.bytes is None  # same bytes either way: this is about time


def test_the_suggested_spelling_selects_the_same_values():
    torch.testing.assert_close(X.index_select(0, ROWS), X[ROWS], rtol=0, atol=0)
    v = X.view(4, 4, 8)
    torch.testing.assert_close(v.index_select(1, ROWS % 4), v[:, ROWS % 4], rtol=0, atol=0)


NEGATIVE = [
    ("last dim (mixed measurements)", lambda x, c, r: x[:, c] * 2),
    ("already index_select", lambda x, c, r: x.index_select(0, r) * 2),
    ("2-d index", lambda x, c, r: x[r.view(2, 2)] * 2),
    ("constant progression is FXL401", lambda x, c, r: x[[0, 1, 2]] * 2),
    ("mask is FXL403", lambda x, c, r: x[x[:, 0] > 0].sum()),
    ("two index tensors", lambda x, c, r: x[r, r % 8] * 2),
    ("int before the index", lambda x, c, r: x.view(4, 4, 8)[0, r % 4] * 2),
    ("1-d tensor", lambda x, c, r: x[0][c] * 2),
]


@pytest.mark.parametrize("label,fn", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negatives(label, fn):
    assert _fxl402(fxlint.lint(fn, (X, COLS, ROWS))) == []


def test_dim_0_with_a_gradient_is_not_claimed_but_dim_1_is():
    w = torch.randn(16, 8, requires_grad=True)
    assert _fxl402(fxlint.lint(lambda x, c, r: w[r] * 2, (X, COLS, ROWS))) == []
    [f] = _fxl402(fxlint.lint(lambda x, c, r: w.view(4, 4, 8)[:, r % 4] * 2, (X, COLS, ROWS)))
    assert "forward+backward" in f.message


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text, no negative reported."""
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL402")
    assert reported_lines(out, "FXL402") == set(marked_lines("FXL402", "positive")) and "# negative" not in out
    assert out.count("FXL402 info") == 3
    assert out == snapshot

"""FXL111 out-of-place-on-temporary: `t.masked_fill(...)` on a temporary nothing else reads clones it."""

from __future__ import annotations

import pytest
import torch

import fxlint
from tests.copy_helpers import Expect, check_negative, check_positive, findings

A = torch.randn(4, 49)


def swin_mask(a):
    m = a.unsqueeze(1) - a.unsqueeze(2)
    m = m.masked_fill(m != 0, -100.0).masked_fill(m == 0, 0.0)  # chain
    return m * 2


def fresh(x):
    return (x * 2).masked_fill(x > 0, 0.0) + 1  # fresh


def deberta_scores(a, b, mask):
    s = (a + b).view(-1, 4, 8, 8)
    return s.masked_fill(~mask, -1e9).softmax(-1)  # view


def _view_read_again(a, b, mask):
    t = a + b
    return t.view(-1, 4, 8, 8).masked_fill(~mask, -1e9).softmax(-1) + t.view(-1, 4, 8, 8)


def cloned_first(a, b, mask):
    sim = a @ b.transpose(-1, -2)
    kept = sim.clone()  # read before the fill: its result is other memory (x-transformers' qk_similarities)
    sim = sim.masked_fill(mask, -1e9)  # cloned first
    return sim.softmax(-1), kept


def float_of_float(a, b, mask):
    w = torch.bmm(a, b.transpose(1, 2))
    wf = w.float()  # float32 already: the same tensor (torchaudio's Emformer)
    wf = wf.masked_fill(mask, -1e8)  # float of float
    return wf.softmax(-1)


def _view_taken_first(a, b, mask):
    sim = a @ b.transpose(-1, -2)
    first = sim[:, 0]  # a view: the in-place fill would change it
    return sim.masked_fill(mask, -1e9).softmax(-1), first * 2


S, MASK = torch.randn(8, 8, 8), torch.rand(2, 1, 1, 8) > 0.3
M8 = torch.rand(8, 8) > 0.5

POSITIVE = [
    ("masked_fill chain (torchvision swin)", swin_mask, (A,), [Expect("# chain", 4 * 49 * 49 * 4)]),
    ("masked_fill of a fresh product", fresh, (A,), [Expect("# fresh", 4 * 49 * 4)]),
    ("a whole view of a fresh sum (deberta)", deberta_scores, (S, S, MASK), [Expect("# view", 8 * 8 * 8 * 4)]),
    ("read by a clone before the fill", cloned_first, (S, S, M8), [Expect("# cloned first", 8 * 8 * 8 * 4)]),
    ("a no-op .float() of a fresh product", float_of_float, (S, S, M8), [Expect("# float of float", 8 * 8 * 8 * 4)]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    check_positive(fn, inputs, "FXL111", expected)


def _read_again(x):
    t = x * 2
    return t.masked_fill(t > 0, 0.0) + t


NEGATIVE = [
    ("an input of the graph", lambda x: x.masked_fill(x > 0, 0.0), (A,)),
    ("the temporary is read again", _read_again, (A,)),
    ("a view of a temporary", lambda x: (x * 2)[:, :3].masked_fill(x[:, :3] > 0, 0.0), (A,)),
    ("the base of the view is read again", _view_read_again, (S, S, MASK)),
    ("a view taken before the fill is read after it", _view_taken_first, (S, S, M8)),
    ("a transposed view (in place would keep its strides)",
     lambda a, b, m: (a + b).transpose(0, 1).masked_fill(m, 0.0).view(-1), (S, S, torch.rand(8, 8, 8) > 0.5)),
    ("an expanded view", lambda a, m: (a * 2).expand(2, 4, 8, 8).masked_fill(~m, 0.0), (torch.randn(1, 4, 8, 8), MASK)),
    ("requires grad", lambda x: (x * 2).masked_fill(x > 0, 0.0), (A.clone().requires_grad_(),)),
    ("broadcast up by the mask", lambda x, m: (x * 2).masked_fill(m, 0.0), (torch.randn(1, 5), torch.rand(4, 5) > 0.5)),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    check_negative(fn, inputs, "FXL111")


def test_the_fix_removes_the_copy_and_keeps_the_values():
    def fixed(a):
        m = a.unsqueeze(1) - a.unsqueeze(2)
        m = m.masked_fill(m != 0, -100.0).masked_fill_(m == 0, 0.0)
        return m * 2

    clones = {fn: [c.bytes for c in fxlint.audit(fn, (A,)).copies if c.op == "aten::clone"] for fn in (swin_mask, fixed)}
    assert clones[swin_mask] == [4 * 49 * 49 * 4] * 2 and clones[fixed] == [4 * 49 * 49 * 4]
    torch.testing.assert_close(swin_mask(A), fixed(A))
    [f] = findings(fxlint.lint(swin_mask, (A,), select="FXL111"), "FXL111")
    assert "masked_fill_" in f.fix and f.details["inplace"] == "masked_fill_"


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL111")
    assert reported_lines(out, "FXL111") == set(marked_lines("FXL111", "positive"))
    assert out == snapshot

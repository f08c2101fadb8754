"""FXL111 out-of-place-on-temporary: `t.masked_fill(...)` on a temporary nothing else reads clones it."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fxlint
from fxlint.passes.fxl111_out_of_place_on_temporary import _RESULT_NOT_SAVED
from tests.copy_helpers import Expect, check_positive, findings

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


def trained_scores(q, k, mask):
    sim = torch.einsum("bid,bjd->bij", q, k) * 0.5
    kept = sim.clone()  # keeps nothing for the backward
    sim = sim.masked_fill(mask, -1e9)  # trained scores
    return sim.softmax(-1), kept


def trained_emformer(q, k, mask):
    w = torch.bmm(q, k.transpose(1, 2))
    wf = w.float()  # float32 already: the same tensor
    wf = wf.masked_fill(mask, -1e8)  # trained emformer
    return torch.softmax(wf, -1).type_as(w)  # reads only w's dtype


S, MASK = torch.randn(8, 8, 8), torch.rand(2, 1, 1, 8) > 0.3
M8 = torch.rand(8, 8) > 0.5

POSITIVE = [  # the chain's first call keeps `m` (read again by `m == 0`): torch.where; the second, in place
    ("masked_fill chain (torchvision swin)", swin_mask, (A,),
     [Expect("# chain", 4 * 49 * 49 * 4), Expect("# chain", 4 * 49 * 49 * 4)]),
    ("masked_fill of a fresh product", fresh, (A,), [Expect("# fresh", 4 * 49 * 4)]),
    ("a whole view of a fresh sum (deberta)", deberta_scores, (S, S, MASK), [Expect("# view", 8 * 8 * 8 * 4)]),
    ("read by a clone before the fill", cloned_first, (S, S, M8), [Expect("# cloned first", 8 * 8 * 8 * 4)]),
    ("a no-op .float() of a fresh product", float_of_float, (S, S, M8), [Expect("# float of float", 8 * 8 * 8 * 4)]),
    ("in training, scores from einsum (it keeps nothing of its result)", trained_scores,
     (S.clone().requires_grad_(), S.clone().requires_grad_(), M8), [Expect("# trained scores", 8 * 8 * 8 * 4)]),
    ("in training, through a no-op .float(), type_as reading only the dtype", trained_emformer,
     (S.clone().requires_grad_(), S.clone().requires_grad_(), M8), [Expect("# trained emformer", 8 * 8 * 8 * 4)]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    check_positive(fn, inputs, "FXL111", expected)


def _kept_by_a_product(x):
    t = x * 2
    y = t * x  # MulBackward keeps t for x's gradient
    return t.masked_fill(t > 0, 0.0) + y


def _read_again(x):
    t = x * 2
    return t.masked_fill(t > 0, 0.0) + t


KEPT = [  # in place is out (the reason the message gives); torch.where is offered instead
    ("an input of the graph", lambda x: x.masked_fill(x > 0, 0.0), (A,), "input of the graph"),
    ("the temporary is read again", _read_again, (A,), "read again"),
    ("a view of a temporary", lambda x: (x * 2)[:, :3].masked_fill(x[:, :3] > 0, 0.0), (A,), "shares memory"),
    ("the base of the view is read again", _view_read_again, (S, S, MASK), "shares memory"),
    ("a view taken before the fill is read after it", _view_taken_first, (S, S, M8), "read again"),
    ("a transposed view (in place would keep its strides)",
     lambda a, b, m: (a + b).transpose(0, 1).masked_fill(m, 0.0).view(-1), (S, S, torch.rand(8, 8, 8) > 0.5),
     "shares memory"),
    ("in training, made by exp, which keeps its result", lambda x: (x * 2).exp().masked_fill(x > 0, 0.0),
     (A.clone().requires_grad_(),), "autograd"),
    ("in training, a view (autograd would rebuild its base)",
     lambda x: (x * 2).view(2, 98).masked_fill(x.view(2, 98) > 0, 0.0), (A.clone().requires_grad_(),), "autograd"),
    ("in training, read earlier by a product that keeps it", _kept_by_a_product, (A.clone().requires_grad_(),),
     "autograd"),
    ("broadcast up by the mask", lambda x, m: (x * 2).masked_fill(m, 0.0), (torch.randn(1, 5), torch.rand(4, 5) > 0.5),
     "broadcasts"),
]


@pytest.mark.parametrize("label,fn,inputs,why", KEPT, ids=[n[0] for n in KEPT])
def test_in_place_is_not_offered_where_the_input_must_stay_and_torch_where_is(label, fn, inputs, why):
    report = fxlint.lint(fn, inputs, select=["FXL111"], confirm=True)
    [f] = findings(report, "FXL111")
    assert f.details["fix"] == "where" and "masked_fill_" not in f.fix and "torch.where" in f.fix
    assert why in f.details["kept_because"] and why in f.message
    assert f.status == "confirmed" and f.bytes == f.details["copied"] > 0


NO_SPELLING = [  # torch.where would change the dtype or the layout of the result: nothing is offered
    ("an expanded view, the mask broadcast", lambda a, m: (a * 2).expand(2, 4, 8, 8).masked_fill(~m, 0.0),
     (torch.randn(1, 4, 8, 8), MASK)),
    ("an integer tensor (where would promote to float)", lambda x: x.masked_fill(x > 2, 0.5),
     (torch.randint(0, 5, (4, 6)),)),
    ("a transposed input and a broadcast mask", lambda x, m: x.transpose(0, 1).masked_fill(m, 0.0),
     (torch.randn(6, 4), torch.rand(1, 6) > 0.5)),
]


@pytest.mark.parametrize("label,fn,inputs", NO_SPELLING, ids=[n[0] for n in NO_SPELLING])
def test_no_finding_where_torch_where_would_change_dtype_or_layout(label, fn, inputs):
    assert findings(fxlint.lint(fn, inputs, select=["FXL111"]), "FXL111") == []
    if "integer" in label:  # the premise: where promotes, masked_fill keeps the dtype
        x = inputs[0]
        assert torch.where(x > 2, 0.5, x).dtype == torch.float32 and fn(*inputs).dtype == x.dtype
    if "transposed" in label:  # the premise: where keeps the operand's layout, masked_fill's clone is contiguous
        x, m = inputs
        assert fn(*inputs).is_contiguous() and not torch.where(m, 0.0, x.transpose(0, 1)).is_contiguous()


def test_torch_where_removes_the_clone_and_keeps_values_and_gradients():
    x, m = torch.randn(2, 4, 16, 16, requires_grad=True), torch.rand(2, 1, 1, 16) > 0.5
    fill, where = (lambda t: t.masked_fill(m, -1e9).softmax(-1)), (lambda t: torch.where(m, -1e9, t).softmax(-1))
    clones = {k: [c for c in fxlint.audit(fn, (x,), train=True).copies if c.phase == "forward" and c.avoidable]
              for k, fn in (("fill", fill), ("where", where))}
    assert [c.bytes for c in clones["fill"]] == [x.numel() * 4] and clones["where"] == []
    g = torch.randn(2, 4, 16, 16)
    a, b = x.detach().clone().requires_grad_(), x.detach().clone().requires_grad_()
    torch.testing.assert_close(fill(a), where(b))
    fill(a).backward(g)
    where(b).backward(g)
    torch.testing.assert_close(a.grad, b.grad)


def test_the_fix_removes_the_copy_and_keeps_the_values():
    def fixed(a):
        m = a.unsqueeze(1) - a.unsqueeze(2)
        m = m.masked_fill(m != 0, -100.0).masked_fill_(m == 0, 0.0)
        return m * 2

    clones = {fn: [c.bytes for c in fxlint.audit(fn, (A,)).copies if c.op == "aten::clone"] for fn in (swin_mask, fixed)}
    assert clones[swin_mask] == [4 * 49 * 49 * 4] * 2 and clones[fixed] == [4 * 49 * 49 * 4]
    torch.testing.assert_close(swin_mask(A), fixed(A))
    [f] = [f for f in findings(fxlint.lint(swin_mask, (A,), select="FXL111"), "FXL111")
           if f.details["fix"] == "inplace"]
    assert "masked_fill_" in f.fix and f.details["inplace"] == "masked_fill_"


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL111")
    assert reported_lines(out, "FXL111") == set(marked_lines("FXL111", "positive"))
    assert out == snapshot


@pytest.mark.parametrize("op", sorted(_RESULT_NOT_SAVED - {"to", "clone"}))
def test_autograd_lets_the_ops_of_the_table_be_written_in_place(op):
    """Each producer the rule accepts in training: its result written in place, then the backward runs."""
    x, y = torch.randn(4, 8, requires_grad=True), torch.randn(8, 8, requires_grad=True)
    m = torch.rand(4, 8) > 0.5
    make = {
        "matmul": lambda: x @ y, "mm": lambda: torch.mm(x, y), "bmm": lambda: torch.bmm(x[None], y[None])[0] * 1,
        "einsum": lambda: torch.einsum("ij,jk->ik", x, y), "addmm": lambda: torch.addmm(x, x, y),
        "baddbmm": lambda: torch.baddbmm(x[None], x[None], y[None])[0] * 1, "linear": lambda: F.linear(x, y),
        "add": lambda: x + y[:4], "sub": lambda: x - y[:4], "rsub": lambda: 1 - x, "mul": lambda: x * y[:4],
        "div": lambda: x / (y[:4].abs() + 1), "neg": lambda: -x, "where": lambda: torch.where(m, x, y[:4]),
        "masked_fill": lambda: x.masked_fill(m, 0.0), "cat": lambda: torch.cat([x, y]),
    }[op]
    t = make()
    t.masked_fill_(t > 0, 0.0)
    t.sum().backward()  # raises if autograd kept the result


@pytest.mark.parametrize("op", ["exp", "softmax", "sigmoid", "tanh", "relu", "sqrt"])
def test_ops_that_keep_their_result_are_not_in_the_table(op):
    x = torch.randn(4, 8, requires_grad=True)
    t = getattr(torch, op)(x.abs(), -1) if op == "softmax" else getattr(torch, op)(x.abs())
    t.masked_fill_(t > 0.5, 0.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        t.sum().backward()
    assert op not in _RESULT_NOT_SAVED

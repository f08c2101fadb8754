"""FXL110 subscript-write-back: `x[i] = x[i] + y` (a real copy of the region) and `x[i] += y` in
training (a view written onto itself: no forward copy, a second CopySlices in the backward), with the
drop-self-assign rewrite."""

from __future__ import annotations

import pytest
import torch

import fxlint
from tests.copy_helpers import Expect, check_negative, check_positive, findings


def write_back(x, y):
    x = x * 2
    x[:, 1:] = x[:, 1:] + y  # write-back
    return x


def write_back_chain(attn, rh, rw):
    B = attn.shape[0]
    attn = attn * 1
    attn[:, :, 1:, 1:] = (attn[:, :, 1:, 1:].view(B, -1, 2, 3, 2, 3) + rh.unsqueeze(-1)  # chain
                          + rw.unsqueeze(-2)).view(B, -1, 6, 6)
    return attn


def self_assign(attn, rel):
    attn = attn * 1
    attn[:, :, 1:, 1:] += rel  # self-assign
    return attn.softmax(-1)


def write_back_respelled(x, y):
    x = x * 2
    x[..., 1:] = x[:, 1::1] + y  # respelled
    return x


def sort_back(e):
    idx = e.new_empty(e.numel() + 1)
    idx[0] = -1
    idx[1:] = e * 3
    idx[1:], perm = idx[1:].sort()  # sorted, then copied back
    return idx, perm


def sort_back_fixed(e):
    idx = e.new_empty(e.numel() + 1)
    idx[0] = -1
    idx[1:] = e * 3
    region, perm = idx[1:], torch.empty(0, dtype=torch.long)
    torch.sort(region, out=(region, perm))
    return idx, perm


KEYS = torch.randint(0, 50, (300,))
X, Y = torch.randn(2, 50), torch.randn(2, 49)
CHAIN = (torch.randn(2, 2, 7, 7), torch.randn(2, 2, 2, 3, 2), torch.randn(2, 2, 2, 3, 3))


def _grad(*shapes):
    return tuple(torch.randn(*s, requires_grad=True) for s in shapes)


POSITIVE = [
    ("x[i] = x[i] + y", write_back, (X, Y), [Expect("# write-back", 2 * 49 * 4)]),
    # the canonical subscript: `x[..., 1:]` and `x[:, 1::1]` name the same region
    ("x[..., 1:] = x[:, 1::1] + y", write_back_respelled, (X, Y), [Expect("# respelled", 2 * 49 * 4)]),
    ("x[i] = (x[i].view(..) + a + b).view(..)", write_back_chain, CHAIN, [Expect("# chain", 2 * 2 * 6 * 6 * 4)]),
    # the base (2x2x5x5) and three times the region (2x2x4x4) in the backward; nothing in the forward
    ("x[i] += y in training", self_assign, _grad((2, 2, 5, 5), (2, 2, 4, 4)), [Expect("# self-assign", 0, "info")]),
    ("x[i], perm = x[i].sort()", sort_back, (KEYS,), [Expect("# sorted, then copied back", 300 * 8)]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    check_positive(fn, inputs, "FXL110", expected)


def _other_region(x):
    x = x * 2
    x[:, :1] = x[:, 1:2] + 1
    return x


def _overlapping_region(x):
    x = x * 2
    x[:, 1:] = x[:, :-1] + 1  # a shifted (overlapping) region
    return x


def _stepped_region(x):
    x = x * 2
    x[:, ::2] = x[:, ::1][:, :25] + 1
    return x


def _temporary_used(x):
    x = x * 2
    t = x[:, 1:] * 2
    x[:, 1:] = t
    return x, t


def _advanced_index(x, i):
    x = x * 2
    x[:, i] = x[:, i] + 1
    return x


def _sorted_elsewhere(e):
    idx = e * 3
    out = torch.empty_like(idx)
    out[1:], perm = idx[1:].sort()  # another tensor's region: a real write
    return out, perm


def _sort_back_with_grad(x):
    x = x * 2
    x[1:], perm = x[1:].sort()  # out= records no autograd
    return x


def _sorted_values_used_again(e):
    idx = e * 3
    vals, perm = idx[1:].sort()
    idx[1:] = vals
    return idx, vals + 1


NEGATIVE = [
    ("sorted into another tensor", _sorted_elsewhere, (KEYS,)),
    ("the sorted values have another user", _sorted_values_used_again, (KEYS,)),
    ("a sort write-back that needs a gradient", _sort_back_with_grad, (torch.randn(20, requires_grad=True),)),
    ("x[i] += y in inference (no copy at all)", self_assign, (torch.randn(2, 2, 5, 5), torch.randn(2, 2, 4, 4))),
    ("another region", _other_region, (X,)),
    ("an overlapping region", _overlapping_region, (X,)),
    ("another step", _stepped_region, (X,)),
    ("the temporary has another user", _temporary_used, (X,)),
    ("a real write", lambda x, y: (lambda a: (a.__setitem__((slice(None), slice(1, None)), y), a)[1])(x * 2), (X, Y)),
    ("an advanced index", _advanced_index, (X, torch.tensor([1, 3]))),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    check_negative(fn, inputs, "FXL110")


def test_the_message_shows_the_subscript_as_written():
    [f] = findings(fxlint.lint(write_back_respelled, (X, Y), select="FXL110"), "FXL110")
    assert f.details["index"] == "[..., 1:]", f.details


def test_the_self_copy_moves_nothing_in_the_forward_and_costs_the_claimed_backward_bytes():
    """The ground truth the rule rests on: the audit sees no forward copy for `x[i] += y` (ATen's copy_
    returns early for a view copied onto itself), and the backward copies base + 3 x region more than
    `x[i].add_(y)`."""
    def add_(attn, rel):
        attn = attn * 1
        attn[:, :, 1:, 1:].add_(rel)
        return attn.softmax(-1)

    inputs = _grad((2, 2, 5, 5), (2, 2, 4, 4))
    fwd = [c for c in fxlint.audit(self_assign, inputs).copies if c.kind == "layout"]
    assert fwd == [], fwd
    back = {fn: sum(c.bytes for c in fxlint.audit(fn, inputs, train=True).copies if c.phase == "backward")
            for fn in (self_assign, add_)}
    assert back[self_assign] - back[add_] == 2 * 2 * 5 * 5 * 4 + 3 * 2 * 2 * 4 * 4 * 4
    [f] = findings(fxlint.lint(self_assign, inputs, select="FXL110"), "FXL110")
    assert f.backward_bytes == back[self_assign] - back[add_]
    assert f.details["form"] == "self-assign" and ".add_(" in f.fix


def test_drop_self_assign_rewrite_keeps_outputs_and_gradients():
    inputs = _grad((2, 2, 5, 5), (2, 2, 4, 4))
    res = fxlint.rewrite(self_assign, inputs)
    assert [a.code for a in res.applied] == ["FXL110"] and res.checked == "outputs and gradients"
    assert not any(n.target is __import__("operator").setitem for n in res.module.graph.nodes)
    a = tuple(t.detach().clone().requires_grad_() for t in inputs)
    b = tuple(t.detach().clone().requires_grad_() for t in inputs)
    out_a, out_b = self_assign(*a), res.module(*b)
    torch.testing.assert_close(out_a, out_b)
    g = torch.randn_like(out_a)
    out_a.backward(g)
    out_b.backward(g)
    for p, q in zip(a, b):
        torch.testing.assert_close(p.grad, q.grad)


def test_write_back_is_not_rewritten_but_listed():
    """The write-back form has no rewrite (the in-place spelling changes when the region is read):
    `fxlint.rewrite` lists it as not applied with the reason."""
    res = fxlint.rewrite(write_back, (X, Y))
    assert res.applied == [] and [s.code for s in res.skipped] == ["FXL110"]
    assert "not the same view" in res.skipped[0].reason


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL110")
    assert reported_lines(out, "FXL110") == set(marked_lines("FXL110", "positive"))
    assert out.count("FXL110 info") == 1 and out.count("FXL110 warning") == 1
    assert out == snapshot


def test_the_sort_fix_gives_the_same_keys_and_permutation_without_the_copy_back():
    [f] = findings(fxlint.lint(sort_back, (KEYS,), select="FXL110"), "FXL110")
    assert f.details["form"] == "sort-back" and "`region = idx[1:]; torch.sort(region, out=(region, perm))`" in f.fix
    assert f.message.startswith("`idx[1:], perm = idx[1:].sort()` sorts the region")
    (a, pa), (b, pb) = sort_back(KEYS), sort_back_fixed(KEYS)
    assert torch.equal(a, b) and torch.equal((KEYS * 3)[pa], a[1:]) and torch.equal((KEYS * 3)[pb], b[1:])

    def copied(fn):
        return sum(c.bytes for c in fxlint.audit(fn, (KEYS,)).copies if c.avoidable)

    assert copied(sort_back_fixed) == copied(sort_back) - 300 * 8
    assert findings(fxlint.lint(sort_back_fixed, (KEYS,), select="FXL110"), "FXL110") == []

"""FXL113 slices-instead-of-split: positives, negatives, the backward bytes against the audit, the fix's gradient."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
from torch.profiler import profile

import fxlint
from tests.conftest import line_of
from tests.copy_helpers import findings
from tests.rule_snapshots import lint_fixture, load_fixture, marked_lines, reported_lines, rule_output


def test_positives_in_training_confirmed_with_their_backward_copies():
    rep = lint_fixture("FXL113", train=True, confirm=True)
    got = findings(rep, "FXL113")
    assert {f.line for f in got} == set(marked_lines("FXL113", "positive"))
    for f in got:
        assert f.status == "confirmed", (f.line, f.status)
        assert f.bytes == 0 and f.backward_bytes  # the forward copies nothing
    [sel] = [f for f in got if f.details["kind"] == "select" and f.details["pieces"] == 3]
    assert sel.fix == "take the pieces at once: `qkv.unbind(0)` (one backward write)"
    assert sel.backward_bytes == 3 * 2 * 2 * 6 * 8 * 4  # three (2, 2, 6, 8) float32 gradients
    splits = sorted(f.details["suggestion"] for f in got if f.details["kind"] == "slice")
    assert splits == ["h.chunk(2, dim=2)", "h.chunk(2, dim=2)", "h.split([1, 5], dim=1)", "h.split([2, 4], dim=1)"]
    # the rotary pieces, one per line: each finding claims its own line's backward copy
    rotary = [f for f in got if f.details["suggestion"] == "h.chunk(2, dim=2)"]
    assert [f.backward_bytes for f in rotary] == [2 * 6 * 24 * 4] * 2
    assert all(list(f.details["lines"]) == sorted(g.line for g in rotary) for f in rotary)
    [whole] = [f for f in got if f.details["pieces"] == 1]
    assert whole.fix == "take it as a view with a free backward: `g.squeeze(1)`"
    assert whole.backward_bytes == 2 * 6 * 48 * 4


def test_inference_under_no_grad_is_silent():
    assert findings(lint_fixture("FXL113", train=False), "FXL113") == []


def test_the_fix_gives_the_same_gradients_with_one_backward_write():
    def pieces(x):
        q, k, v = x[0], x[1], x[2]
        return (q * k + v).sum()

    def unbound(x):
        q, k, v = x.unbind(0)
        return (q * k + v).sum()

    grads, copies = {}, {}
    for fn in (pieces, unbound):
        x = torch.randn(3, 4, 16, requires_grad=True)
        torch.manual_seed(0)
        x.data.copy_(torch.randn(3, 4, 16))
        y = fn(x)
        with profile() as p:
            y.backward()
        grads[fn] = x.grad
        copies[fn] = sorted(e.name for e in p.events() if e.name in ("aten::copy_", "aten::zero_", "aten::add_",
                                                                    "aten::stack", "aten::cat"))
    torch.testing.assert_close(grads[pieces], grads[unbound])
    assert copies[pieces].count("aten::zero_") == 3 and copies[pieces].count("aten::add_") == 2
    assert "aten::zero_" not in copies[unbound] and "aten::add_" not in copies[unbound]


def test_the_audit_sees_the_backward_copies_it_claims():
    model, inputs = load_fixture("FXL113").make()
    audit = fxlint.audit(model.train(), inputs, train=True)
    rep = lint_fixture("FXL113", train=True)
    [sel] = [f for f in findings(rep, "FXL113") if f.details["kind"] == "select" and f.details["pieces"] == 3]
    back = [c for c in audit.copies if c.phase == "backward" and c.line == sel.line]
    assert sum(c.bytes for c in back) >= sel.backward_bytes
    assert any("select_backward" in ">".join(c.chain) for c in back)


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    out = rule_output("FXL113")
    assert reported_lines(out, "FXL113") == set(marked_lines("FXL113", "positive"))
    assert out == snapshot


def test_pieces_cut_off_by_a_detach_get_no_backward_and_are_not_counted():
    """A time loop over x[t] whose hidden state is detached each step (models/rnn_truncated_bptt.py): only the
    last step's piece reaches the output, so no partition's backward runs."""
    import torch.nn as nn

    class Loop(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = nn.GRUCell(8, 8)

        def forward(self, x):
            h = torch.zeros(x.shape[1], 8)
            for t in range(x.shape[0]):
                h = self.cell(x[t], h.detach())
            return h

    class Kept(Loop):
        def forward(self, x):
            h = torch.zeros(x.shape[1], 8)
            for t in range(x.shape[0]):
                h = self.cell(x[t], h)
            return h

    x = torch.randn(4, 2, 8, requires_grad=True)
    assert findings(fxlint.lint(Loop().train(), x, select="FXL113", config=False), "FXL113") == []
    [f] = findings(fxlint.lint(Kept().train(), x, select="FXL113", config=False, confirm=True), "FXL113")
    assert f.details["pieces"] == 4 and f.details["suggestion"] == "x.unbind(0)" and f.status == "confirmed"


def test_chunk_replaces_the_rotary_pieces_backward_copies():
    """rotate_half's two slices on two lines make two ``slice_backward`` copies; ``chunk`` none, same gradient."""
    def rotate_slices(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)

    def rotate_chunk(x):
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat((-x2, x1), dim=-1)

    w = torch.randn(2, 4, 16, 8)
    grads, copies = [], []
    for fn in (rotate_slices, rotate_chunk):
        x = torch.randn(2, 4, 16, 8, generator=torch.Generator().manual_seed(0), requires_grad=True)
        audit = fxlint.audit(lambda x, fn=fn: (fn(x * 1.0) * w).sum(), (x,), train=True)
        copies.append([c.bytes for c in audit.copies if c.phase == "backward" and c.avoidable])
        (fn(x * 1.0) * w).sum().backward()
        grads.append(x.grad)
    assert copies == [[2 * 4 * 16 * 4 * 4] * 2, []]
    assert torch.equal(grads[0], grads[1])


class _PatchMerging3d(nn.Module):
    """Swin-UNETR's 3-D patch merging: the eight strided pieces of x, concatenated."""

    def __init__(self):
        super().__init__()
        self.reduce = nn.Linear(64, 16)

    def forward(self, x):
        x = x * 1.0
        x0 = x[:, 0::2, 0::2, 0::2, :]  # piece 0
        x1 = x[:, 1::2, 0::2, 0::2, :]
        x2 = x[:, 0::2, 1::2, 0::2, :]
        x3 = x[:, 0::2, 0::2, 1::2, :]
        x4 = x[:, 1::2, 1::2, 0::2, :]
        x5 = x[:, 1::2, 0::2, 1::2, :]
        x6 = x[:, 0::2, 1::2, 1::2, :]
        x7 = x[:, 1::2, 1::2, 1::2, :]
        return self.reduce(torch.cat([x0, x1, x2, x3, x4, x5, x6, x7], -1))


class _EvenOdd(nn.Module):
    def __init__(self, both: bool):
        super().__init__()
        self.both = both

    def forward(self, x):
        x = x * 1.0
        a = x[..., ::2]  # even
        b = x[..., 1::2] if self.both else x[..., :4]  # odd, or a plain slice
        return a.sum() + b.sum()


def test_strided_pieces_that_tile_are_reported_per_line_and_confirmed():
    x = torch.randn(2, 4, 4, 4, 8, requires_grad=True)
    report = fxlint.lint(_PatchMerging3d().train(), (x,), train=True, select="FXL113", confirm=True, config=False)
    got = findings(report, "FXL113")
    first = line_of(__file__, "# piece 0")
    assert sorted(f.line for f in got) == list(range(first, first + 8))
    piece = x.numel() // 8 * 4
    # per piece, one slice_backward per strided dim copies that slice's output: 4 + 2 + 1 pieces' bytes
    assert all(f.status == "confirmed" and f.bytes == 0 and f.backward_bytes == 7 * piece for f in got)
    assert got[0].violation.kind == "strided" and got[0].violation.steps == (2, 2, 2)
    assert "`x.unflatten(1, (-1, 2)).unflatten(3, (-1, 2)).unflatten(5, (-1, 2))`" in got[0].fix


@pytest.mark.parametrize("both", [True, False])
def test_even_and_odd_pieces_tile_and_one_alone_does_not(both):
    x = torch.randn(2, 8, 16, requires_grad=True)
    got = findings(fxlint.lint(_EvenOdd(both).train(), (x,), train=True, select="FXL113", confirm=True,
                               config=False), "FXL113")
    assert len(got) == (2 if both else 0)
    assert all(f.status == "confirmed" and f.backward_bytes == x.numel() // 2 * 4 for f in got)
    if both:
        assert "`x.unflatten(2, (-1, 2)).unbind(3)`" in got[0].fix


def test_the_unbind_spelling_gives_the_same_pieces_and_gradients():
    x = torch.randn(2, 4, 4, 4, 8)
    grads = []
    for spelled in ("subscripts", "unbind"):
        h = x.clone().requires_grad_()
        if spelled == "subscripts":
            pieces = [h[:, i::2, j::2, k::2, :] for i in range(2) for j in range(2) for k in range(2)]
        else:
            p = h.unflatten(1, (-1, 2)).unflatten(3, (-1, 2)).unflatten(5, (-1, 2))
            pieces = [pi.unbind(3)[j].unbind(4)[k] for pi in p.unbind(2) for j in range(2) for k in range(2)]
        y = torch.cat(pieces, -1)
        (y * torch.arange(y.numel()).reshape(y.shape)).sum().backward()
        grads.append((y.detach(), h.grad))
    assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1])


def test_strided_pieces_in_inference_are_silent():
    with torch.no_grad():
        report = fxlint.lint(_PatchMerging3d().eval(), (torch.randn(2, 4, 4, 4, 8),), select="FXL113", config=False)
    assert findings(report, "FXL113") == []

"""FXL113 slices-instead-of-split: positives, negatives, the backward bytes against the audit, the fix's gradient."""

from __future__ import annotations

import torch
from torch.profiler import profile

import fxlint
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

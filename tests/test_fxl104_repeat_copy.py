"""FXL104 repeat-copy: repeat/tile/expand().contiguous() that only feed broadcasts."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fxlint
from tests.copy_helpers import Expect, check_negative, check_positive, findings

X = torch.randn(4, 8)
B = torch.randn(1, 8)


def repeat_add(x, b):
    return x + b.repeat(4, 1)  # repeat for an add


def tile_mul(x, b):
    return x * b.tile((4, 1))  # tile spelling


def new_leading_dim(x, b):
    return x - b.squeeze(0).repeat(4, 1)  # (8,) -> (4, 8)


def expand_contiguous(x, b):
    return torch.where(x > 0, x, b.expand(4, 8).contiguous())  # expand then copy


def sets_the_shape(x, b):
    return b.repeat(4, 1) * torch.randn(8)  # others do not cover dim 0: expand, not drop


X3 = torch.randn(2, 16, 8)
POS = torch.randn(1, 8, 4, 4)


def through_reshape_permute(x, pos):
    B, N, _ = x.shape
    p = pos.repeat(B, 1, 1, 1)  # repeat then reshape/permute
    return x + p.reshape(B, -1, N).permute(0, 2, 1)


def concatenated(x, b):
    return torch.cat([x, b.repeat(4, 1)])  # cat reads an expanded view as well


def gathered(x, idx):
    return x.view(-1, 1, 8).repeat(1, 3, 1).index_select(0, idx)  # rows gathered from the copy


def by_one(x, idx):
    h = x.view(-1, 1, 8).repeat(1, 1, 1)  # every factor 1: a plain copy
    return torch.cat([h[idx], h], dim=0)


def across_a_break(e):
    loop = torch.arange(8).view(1, -1).repeat(2, 1)  # handed over a graph break
    e = e[:, e[0] > 2]
    return torch.cat([e, loop], dim=1)


def interleaved_rows(x, b):
    return x + torch.randn(8, 8)[:4].repeat_interleave(2, dim=0).view(8, 8)  # rows [a, a, b, b], added


def heads_mask(q, m):
    mask = m.repeat_interleave(2, dim=0)  # one mask per head, interleaved
    return F.scaled_dot_product_attention(q, q, q, attn_mask=mask.view(2, 2, 6, 6))


def size_one_interleave(x, b):
    return x + b.repeat_interleave(4, dim=0)  # a size-1 dim interleaved


def tiled_then_split(x, b):
    return x.view(2, 4, 8) * b.repeat(2, 1).view(2, 4, 8)  # tile of a (4, 8), split back


def mask_repeated_over_heads(q, m):
    mask = m.unsqueeze(1).repeat(1, 2, 1, 1)  # a size-1 head dim repeated for SDPA
    return F.scaled_dot_product_attention(q, q, q, attn_mask=mask)


Q = torch.randn(2, 2, 6, 4)
M = torch.randn(2, 6, 6)
E = torch.randint(0, 8, (2, 20))
IDX = torch.tensor([0, 2, 2, 3])

POSITIVE = [
    ("concatenated", concatenated, (X, B), [Expect("# cat reads", 128)]),
    ("gathered by index_select", gathered, (X, IDX), [Expect("# rows gathered", 3 * 128)]),
    ("a repeat by one", by_one, (X, IDX), [Expect("# every factor 1", 128)]),
    ("over a graph break", across_a_break, (E,), [Expect("# handed over", 2 * 8 * 8)]),
    ("repeat then add", repeat_add, (X, B), [Expect("# repeat for an add", 128)]),
    ("tile then mul", tile_mul, (X, B), [Expect("# tile spelling", 128)]),
    ("repeat adds a leading dim", new_leading_dim, (X, B), [Expect("# (8,) -> (4, 8)", 128)]),
    ("expand().contiguous() into where", expand_contiguous, (X, B), [Expect("# expand then copy", 128)]),
    ("the repeat sets the shape", sets_the_shape, (X, B), [Expect("# others do not cover", 128)]),
    ("through reshape and permute", through_reshape_permute, (X3, POS),
     [Expect("# repeat then reshape/permute", 2 * 8 * 4 * 4 * 4)]),
    ("an SDPA mask interleaved per head", heads_mask, (Q, M), [Expect("# one mask per head", 4 * 36 * 4)]),
    ("repeat_interleave of a size-1 dim", size_one_interleave, (X, B), [Expect("# a size-1 dim interleaved", 128)]),
    ("a tile split back by a view", tiled_then_split, (X3.view(8, 32)[:, :8].contiguous().view(2, 4, 8),
                                                       torch.randn(4, 8)), [Expect("# tile of a (4, 8)", 256)]),
    ("a mask repeated over heads", mask_repeated_over_heads, (Q, M), [Expect("# a size-1 head dim", 4 * 36 * 4)]),
    ("interleaved rows read by an add", interleaved_rows, (torch.randn(8, 8), B),
     [Expect("# rows [a, a, b, b], added", 256)]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    check_positive(fn, inputs, "FXL104", expected)


def _mutated(x, b):
    r = b.repeat(4, 1)
    r.add_(1)
    return x + r


def _read_at_the_break(e):
    loop = torch.arange(8).view(1, -1).repeat(2, 1)
    e = e[:, e[0] > loop[0, 2]]  # runs eagerly: what it does with `loop` is not in any graph
    return torch.cat([e, loop], dim=1)


def _matmul_after_a_break(e):
    loop = torch.arange(8.0).view(1, -1).repeat(2, 1)
    e = e[:, e[0] > 2]
    return loop @ torch.ones(8, 3) + e.sum()


def _source_written_after(x, b):
    b = b * 1.0
    r = b.repeat(4, 1)
    b.add_(1)  # a view of b would see this write; the copy does not
    return x + r


def _returned_after_a_break(e):
    loop = torch.arange(8).view(1, -1).repeat(2, 1)
    e = e[:, e[0] > 2]
    return torch.cat([e, loop], dim=1), loop  # the caller gets it too: no graph shows that read


def _by_one_then_viewed(x, y):
    h = x.t().repeat(1, 1)  # a view of the expanded strided source would raise
    return h.view(-1) + y


def _channels_last_gathered(x, idx):
    return x.repeat(2, 1, 1, 1)[idx].view(2, -1)  # the gather keeps channels-last strides: .view refuses


def _split_the_other_way(q, m):
    mask = m.repeat_interleave(2, dim=0).view(2, 2, 6, 6).transpose(0, 1)  # (H, B) order: not the copies' dim
    return F.scaled_dot_product_attention(q, q, q, attn_mask=mask.contiguous())


def _mask_as_query(q, m):
    k = m.repeat_interleave(2, dim=0).view(2, 2, 6, 6)
    return F.scaled_dot_product_attention(k, k, k)


def _counts_tensor(x, b):
    return x + b.repeat_interleave(torch.tensor([4]), dim=0)


CL = torch.randn(1, 3, 4, 5).to(memory_format=torch.channels_last)

NEGATIVE = [
    ("interleaved, then split the other way", _split_the_other_way, (Q, M)),
    ("interleaved into a query", _mask_as_query, (Q, M)),
    ("repeat_interleave by a tensor of counts", _counts_tensor, (X, B)),
    ("returned after the break", _returned_after_a_break, (E,)),
    ("a repeat by one, then viewed", _by_one_then_viewed, (X, torch.randn(32))),
    ("a channels-last source gathered", _channels_last_gathered, (CL, torch.tensor([0, 1]))),
    ("a strided source merged by view", lambda x, y: x.t().unsqueeze(0).repeat(2, 1, 1).view(2, -1) + y,
     (torch.randn(8, 6), torch.randn(2, 48))),
    ("the source is written after it", _source_written_after, (X, B)),
    ("tiles real data", lambda x, b: x + x[:2].repeat(2, 1), (X, B)),
    ("returned", lambda x, b: b.repeat(4, 1), (X, B)),
    ("read by matmul", lambda x, b: b.repeat(8, 1) @ x.t(), (X, B)),
    ("the statement that breaks reads it", _read_at_the_break, (E,)),
    ("matmul after the break", _matmul_after_a_break, (E,)),
    ("written in place", _mutated, (X, B)),
    ("expand alone is a view", lambda x, b: x + b.expand(4, 8), (X, B)),
    # the reshape merges the replicated dim with the next: an expanded view would be copied there
    ("a reshape merges the repeated dim", lambda x, p: x + p.repeat(2, 1, 1, 1).reshape(16, 16).t().reshape(2, 16, 8),
     (X3, POS)),
    ("through a permute into a matmul", lambda x, p: p.repeat(2, 1, 1, 1).reshape(2, 8, 16).permute(0, 2, 1) @ x.mT,
     (X3, POS)),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    check_negative(fn, inputs, "FXL104")


def test_details_carry_what_a_rewrite_needs_and_the_rewrite_is_right():
    [f] = findings(fxlint.lint(repeat_add, (X, B), select="FXL104"), "FXL104")
    d = f.details
    assert d["drop"] is True and d["dims"] == (0,) and d["expand_shape"] == (4, 8)
    assert d["source_shape"] == (1, 8) and d["broadcast_consumers"] == ["add"]
    assert "expand(4, 8)" in f.message and f.fix.startswith("drop `.repeat(4, 1)`")
    # the suggested forms compute the same thing
    assert torch.equal(X + B.repeat(4, 1), X + B) and torch.equal(X + B.repeat(4, 1), X + B.expand(4, 8))
    [g] = findings(fxlint.lint(sets_the_shape, (X, B), select="FXL104"), "FXL104")
    assert g.details["drop"] is False and "use `.expand(4, 8)`" in g.fix


def test_through_a_view_chain_the_fix_is_expand_and_copies_nothing():
    [f] = findings(fxlint.lint(through_reshape_permute, (X3, POS), select="FXL104"), "FXL104")
    assert f.details["drop"] is False and f.fix.startswith("use `.expand(2, 8, 4, 4)`")
    assert "through `reshape`, `permute`" in f.message

    def fixed(x, pos):
        B, N, _ = x.shape
        p = pos.expand(B, -1, -1, -1)  # the fix
        return x + p.reshape(B, -1, N).permute(0, 2, 1)

    assert torch.equal(fixed(X3, POS), through_reshape_permute(X3, POS))
    assert findings(fxlint.lint(fixed, (X3, POS), select="FXL104"), "FXL104") == []
    assert [c for c in fxlint.audit(fixed, (X3, POS)).copies if c.avoidable and c.file == __file__] == []


def test_repeat_backward_copies_nothing():
    b = B.clone().requires_grad_()
    [f] = findings(fxlint.lint(repeat_add, (X, b), select="FXL104"), "FXL104")
    audit = fxlint.audit(repeat_add, (X, b), train=True)
    assert f.details["backward_bytes"] == 0
    assert [c for c in audit.copies if c.phase == "backward" and c.file == __file__] == []


def test_two_repeats_on_one_line_are_two_findings():
    def f(x, b):
        return (x + b.repeat(4, 1)) * (x - b.tile((4, 1)))  # two copies, one line

    report = fxlint.lint(f, (X, B), select="FXL104", confirm=True)
    found = findings(report, "FXL104")
    assert [(x.bytes, x.status) for x in found] == [(128, "confirmed"), (128, "confirmed")]
    assert len({x.details.get("dedup", "") for x in found}) == 2


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text (two repeats on one line: two findings); no
    negative reported."""
    from tests.rule_snapshots import rule_output

    out = rule_output("FXL104")
    assert out.count("FXL104 warning") == 8 and "negative" not in out
    assert out == snapshot


def test_a_value_handed_over_a_break_is_followed_to_its_consumer():
    """The link ``capture.program.link_handovers`` makes: the repeat's graph returns it, the resumed graph reads
    it as ``L['loop']``; the message names the consumer there, and the fix computes the same."""
    [f] = findings(fxlint.lint(across_a_break, (E,), select="FXL104"), "FXL104")
    assert "`cat` at line" in f.message and f.fix.startswith("use `.expand(2, 8)`")
    assert f.details["readers"] and not f.details["drop"]

    def fixed(e):
        loop = torch.arange(8).view(1, -1).expand(2, -1)
        e = e[:, e[0] > 2]
        return torch.cat([e, loop], dim=1)

    assert torch.equal(fixed(E), across_a_break(E))
    assert [c for c in fxlint.audit(fixed, (E,)).copies if c.avoidable and c.file == __file__
            and c.kernel == "aten::copy_"] == []


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_the_mask_fix_gives_the_same_attention_and_copies_nothing(train):
    q = Q.clone().requires_grad_(train)
    [f] = findings(fxlint.lint(heads_mask, (q, M), select="FXL104"), "FXL104")
    assert "`.unsqueeze(1)` in place of `.repeat_interleave(2, dim=0)`" in f.fix and "`.view(2, 2, 6, 6)`" in f.fix
    assert "not `.expand(...)`" in f.fix and f.details["masks"] and f.details["unsqueeze"] == 1

    def fixed(q, m):
        return F.scaled_dot_product_attention(q, q, q, attn_mask=m.unsqueeze(1))

    ref, got = heads_mask(q, M), fixed(q, M)
    assert torch.allclose(ref, got, atol=1e-6)
    if train:
        (g1,) = torch.autograd.grad(ref.sum(), q)
        (g2,) = torch.autograd.grad(got.sum(), q)
        assert torch.allclose(g1, g2, atol=1e-6)
    before = fxlint.audit(heads_mask, (q, M), train=train)
    after = fxlint.audit(fixed, (q, M), train=train)
    def avoidable(audit):
        return sum(c.bytes for c in audit.copies if c.avoidable)

    # the interleaved copy is gone and nothing new appears (in training the backward of `.sum()` copies its
    # expanded gradient either way)
    assert avoidable(after) == avoidable(before) - 4 * 36 * 4
    if not train:
        assert avoidable(after) == 0


def rotary(x, f1, f2):
    cos = torch.cat([f1.cos().repeat_interleave(2, dim=1),  # interleaved rotary table
                     f2.cos().repeat_interleave(2, dim=1)], dim=-1)  # the second axis
    return x * cos[None, None]


def rotary_fixed(x, f1, f2):
    cos = torch.cat([f1.cos(), f2.cos()], dim=-1).unsqueeze(-1)
    return (x.unflatten(-1, (-1, 2)) * cos[None, None]).flatten(-2, -1)


ROT = (torch.randn(2, 3, 6, 10), torch.randn(6, 2), torch.randn(6, 3))


def test_an_interleaved_rotary_table_read_elementwise_is_reported_and_the_split_form_copies_nothing():
    found = check_positive(rotary, ROT, "FXL104", [Expect("# interleaved rotary table", 6 * 4 * 4),
                                                   Expect("# the second axis", 6 * 6 * 4)])
    for f in found:
        assert f.details["interleave"] == 2 and f.details["interleave_dim"] == -1 and f.details["via_cat"]
        assert "`.unflatten(-1, (-1, 2))`" in f.fix and "`.flatten(-2, -1)`" in f.fix and "torch.cat" in f.fix
    assert torch.allclose(rotary(*ROT), rotary_fixed(*ROT))
    audit = fxlint.audit(rotary_fixed, ROT)
    assert [c for c in audit.copies if c.avoidable and c.top_op == "aten::repeat_interleave"] == []
    check_negative(rotary_fixed, ROT, "FXL104")


@pytest.mark.parametrize("label,fn", [
    ("read by a matmul", lambda x, f1, f2: x @ f1.repeat_interleave(5, dim=1).t()),
    ("an operand broadcast along the interleaved dim",
     lambda x, f1, f2: f1.repeat_interleave(2, dim=1) * torch.ones(6, 1)),
    ("cat with a piece that is not interleaved",
     lambda x, f1, f2: x * torch.cat([f1.repeat_interleave(2, dim=1), f2.repeat(1, 2)], dim=-1)),
    ("returned", lambda x, f1, f2: f1.repeat_interleave(2, dim=1)),
    # a subscript that drops the interleaved dim of a square tensor keeps the trailing sizes: not a reader of it
    ("a subscript drops the interleaved dim", lambda x, f1, f2: torch.randn(4, 2).repeat_interleave(2, dim=-1)[..., 0]
     * torch.randn(4)),
    ("an empty tensor", lambda x, f1, f2: x[..., :0] + f1[:1, :0].repeat(6, 1)),
])
def test_interleaved_negatives(label, fn):
    check_negative(fn, ROT, "FXL104")


CONV = torch.nn.Conv2d(3, 4, 3)


def stretch(x):
    up = x.repeat_interleave(1, -2).repeat_interleave(4, -1)  # two repeats, two copies
    return CONV(up)


def stretch_fixed(x):
    return CONV(x[:, :, :, None, :, None].expand(-1, -1, -1, 1, -1, 4).reshape(2, 3, 5, 24))


def test_a_repeat_read_only_by_another_repeat_is_one_copy_too_many():
    x = torch.randn(2, 3, 5, 6)
    [f] = check_positive(stretch, (x,), "FXL104", [Expect("# two repeats, two copies", x.numel() * 4)])
    assert f.details["chained_into"].startswith("`.repeat_interleave(4, dim=-1)`")
    assert "`[:, :, :, None, :, None].expand(-1, -1, -1, 1, -1, 4).reshape(2, 3, 5, 24)`" in f.fix
    with torch.no_grad():
        assert torch.allclose(stretch(x), stretch_fixed(x))

        def avoidable(fn):
            return sum(c.bytes for c in fxlint.audit(fn, (x,)).copies if c.avoidable)

        assert avoidable(stretch_fixed) == avoidable(stretch) - x.numel() * 4


@pytest.mark.parametrize("label,fn", [
    ("the first copy has another reader", lambda x: (lambda u: (CONV(u.repeat_interleave(2, -1)), u.sum()))(
        x.repeat_interleave(2, -2))),
    ("tiled by tile", lambda x: CONV(x.tile((1, 1, 2, 1)).repeat_interleave(2, -1))),
])
def test_chained_negatives(label, fn):
    check_negative(fn, (torch.randn(2, 3, 5, 6),), "FXL104")


def test_a_mask_repeated_without_a_split_says_the_mask_itself_broadcasts():
    [f] = findings(fxlint.lint(mask_repeated_over_heads, (Q, M), select="FXL104"), "FXL104")
    assert "the un-replicated mask is what it broadcasts" in f.message and "`the tensor itself`" not in f.message

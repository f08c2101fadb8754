"""FXL112 batch-tile-matmul: a batch dim tiled with repeat/tile/repeat_interleave only to feed a batched matmul."""

from __future__ import annotations

import pytest
import torch

import fxlint
from tests.copy_helpers import Expect, check_negative, check_positive, findings

B, H, L, S, D = 2, 4, 5, 3, 8
Q = torch.randn(B * H, L, D)  # DeBERTa's queries, (B*H, L, D)
POS = torch.randn(H, 2 * S, D)  # its relative-position keys, (H, 2S, D)
QG = torch.randn(B, 3, 7, D)  # GCViT's global query, (B, heads, N, d)
R = 3
K = torch.randn(B * R, 3, 7, D)  # keys of the R windows of each image, (B*R, heads, N, d)
X = torch.randn(B * 2, L, D)
W = torch.randn(B, D, 6)


def deberta(q, pos):
    pos_key = pos.repeat(q.size(0) // pos.shape[0], 1, 1)  # tile
    return torch.bmm(q, pos_key.transpose(-1, -2))


def gcvit(qg, k):
    q = qg.repeat_interleave(k.shape[0] // qg.shape[0], dim=0)  # tile
    return q @ k.transpose(-2, -1)


def tile_matmul(x, w):
    return torch.matmul(x, w.tile((2, 1, 1)))  # tile


def interleave_baddbmm(x, w):
    return torch.baddbmm(torch.zeros(B * 2, L, 6), x, w.repeat_interleave(2, dim=0))  # tile


def batch_of_one(x, w):
    return torch.bmm(x, w[:1].expand(1, D, 6).clone().repeat(x.shape[0], 1, 1))  # tile


def _elem(w):
    return w.element_size() * w.numel()


POSITIVE = [
    ("DeBERTa c2p: repeat then bmm through a transpose", deberta, (Q, POS), [Expect("# tile", _elem(POS) * B)]),
    ("GCViT: repeat_interleave then @", gcvit, (QG, K), [Expect("# tile", _elem(QG) * R)]),
    ("tile then torch.matmul", tile_matmul, (X, W), [Expect("# tile", _elem(W) * 2)]),
    ("repeat_interleave into baddbmm", interleave_baddbmm, (X, W), [Expect("# tile", _elem(W) * 2)]),
    ("a batch of one", batch_of_one, (X, W), [Expect("# tile", _elem(W[:1]) * 2 * B)]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    check_positive(fn, inputs, "FXL112", expected)


def _also_cat(x, w):
    t = w.repeat(2, 1, 1)
    return torch.cat([torch.bmm(x, t), t], dim=1)


def _inplace(x, w):
    t = w.repeat(2, 1, 1)
    t.mul_(2)
    return torch.bmm(x, t)


def _conv(x, w):
    t = w.repeat(2, 1, 1)
    return torch.bmm(x, t), torch.nn.functional.conv1d(t, torch.randn(4, D, 1))


NEGATIVE = [
    ("also concatenated", _also_cat, (X, W)),
    ("written in place", _inplace, (X, W)),
    ("also read by a conv", _conv, (X, W)),
    ("returned", lambda x, w: (torch.bmm(x, t := w.repeat(2, 1, 1)), t), (X, W)),
    ("the contracted dim is tiled", lambda x, w: torch.bmm(x.repeat(1, 1, 2), torch.randn(4, 2 * D, 3)), (X, W)),
    ("the rows are tiled", lambda x, w: torch.bmm(x, w.repeat(2, 1, 1).repeat(1, 1, 2)), (X, W)),
    ("a 2-D matmul", lambda x, w: w[0].repeat(2, 1) @ torch.randn(6, 3), (X, W)),
    ("not a whole tiling: the other operand broadcasts", lambda x, w: torch.matmul(x[:1], w.repeat(2, 1, 1)), (X, W)),
    ("not a whole tiling: two dims tiled", lambda x, w: torch.matmul(x.view(2, 2, L, D), w.repeat(2, 2, 1, 1)[:, :1]),
     (X, W)),
    ("repeat_interleave with a tensor of counts",
     lambda x, w: torch.bmm(x, w.repeat_interleave(torch.tensor([2, 2]), dim=0)), (X, W)),
    ("a size-1 broadcast read elementwise (FXL104's)",
     lambda x, w: torch.randn(4, D, 6) + w[:1].repeat(4, 1, 1), (X, W)),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    check_negative(fn, inputs, "FXL112")


def test_details_and_the_fold():
    [f] = findings(fxlint.lint(deberta, (Q, POS), select="FXL112"), "FXL112")
    d = f.details
    assert (d["dim"], d["times"], d["interleave"], d["tiled_operand"]) == (0, B, False, "b")
    assert d["folded_shape"] == (H, B * L, D) and not d["fold_is_view"] and not d["broadcast_free"]
    assert "(4, 10, 8)" in f.fix and "torch.matmul broadcasting is no fix" in f.fix
    [g] = findings(fxlint.lint(gcvit, (QG, K), select="FXL112"), "FXL112")
    assert g.details["tiled_operand"] == "a" and g.details["interleave"]
    assert g.details["folded_shape"] == (B, 3, D, R * 7) and "columns" in g.fix
    [v] = findings(fxlint.lint(interleave_baddbmm, (X, W), select="FXL112"), "FXL112")
    assert v.details["fold_is_view"] and "a view of that operand" in v.fix
    [one] = findings(fxlint.lint(batch_of_one, (X, W), select="FXL112"), "FXL112")
    assert one.details["broadcast_free"] and "drop" in one.fix


def _copies(fn, inputs):
    return sorted(c.bytes for c in fxlint.audit(fn, inputs).copies)


def test_the_fixes_remove_the_copy_and_matmul_broadcasting_does_not():
    """What the docstring claims, measured: the fold reads the source as is; matmul's broadcast copies the tile."""
    ref = deberta(Q, POS)
    tile = _elem(POS) * B
    assert _copies(deberta, (Q, POS)) == [tile]

    def broadcast(q, pos):  # the tempting fix: matmul broadcasts the un-repeated keys
        return torch.matmul(q.view(B, H, L, D), pos.transpose(-1, -2)).view(B * H, L, 2 * S)

    torch.testing.assert_close(broadcast(Q, POS), ref)
    assert _copies(broadcast, (Q, POS)) == [tile]  # aten::matmul > aten::reshape > aten::clone: the same bytes

    q_hb = Q.view(B, H, L, D).transpose(0, 1).contiguous().view(H, B * L, D)  # heads first, where q is made

    def folded(q_hb, pos):
        out = torch.bmm(q_hb, pos.transpose(-1, -2))  # (H, B*L, 2S)
        return out.view(H, B, L, 2 * S).transpose(0, 1)

    torch.testing.assert_close(folded(q_hb, POS).reshape(B * H, L, 2 * S), ref)
    assert _copies(folded, (q_hb, POS)) == []

    def view_fold(x, w):  # the finding's fold_is_view case: nothing else changes
        return torch.baddbmm(torch.zeros(B, 2 * L, 6), x.view(B, 2 * L, D), w).view(B * 2, L, 6)

    torch.testing.assert_close(view_fold(X, W), interleave_baddbmm(X, W))
    bias = _elem(torch.zeros(B * 2, L, 6))  # baddbmm copies its bias into the output: both spellings pay it
    assert _copies(interleave_baddbmm, (X, W)) == sorted([bias, _elem(W) * 2])
    assert _copies(view_fold, (X, W)) == [bias]

    def dropped(x, w):  # the broadcast_free case
        return torch.matmul(x, w[:1].expand(1, D, 6).clone())

    torch.testing.assert_close(dropped(X, W), batch_of_one(X, W))
    assert _copies(dropped, (X, W)) == [_elem(W[:1])]  # the .clone() in the test itself, nothing in matmul


def test_gcvit_fold_is_a_view_of_a_qkv_projection():
    """GCViT's keys come from a qkv projection: windows are consecutive in memory, the fold is a view."""
    heads, n = 3, 7

    def attn(qg, x, w):
        k = (x @ w).reshape(B * R, n, heads, D).permute(0, 2, 1, 3)
        return qg.repeat_interleave(R, dim=0) @ k.transpose(-2, -1)  # tile

    inputs = (QG, torch.randn(B * R, n, 16), torch.randn(16, heads * D))
    [f] = check_positive(attn, inputs, "FXL112", [Expect("# tile", _elem(QG) * R)])
    assert f.details["fold_is_view"]


class GCViTGlobal(torch.nn.Module):
    """timm's WindowAttentionGlobal as written: the tile is reshaped, permuted and scaled before the matmul."""

    def __init__(self, dim=24, heads=3):
        super().__init__()
        self.heads, self.head_dim, self.scale = heads, dim // heads, (dim // heads) ** -0.5
        self.qkv = torch.nn.Linear(dim, dim * 2)

    def forward(self, x, q_global):
        B, N, C = x.shape
        kv = self.qkv(x).reshape(B, N, 2, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        k, v = kv.unbind(0)
        q = q_global.repeat_interleave(B // q_global.shape[0], dim=0)  # tile
        q = q.reshape(B, N, self.heads, self.head_dim).permute(0, 2, 1, 3)
        q = q * self.scale
        attn = q @ k.transpose(-2, -1).contiguous()
        return attn.softmax(dim=-1) @ v


def test_gcvit_as_timm_writes_it():
    model, inputs = GCViTGlobal(), (torch.randn(B * R, 7, 24), torch.randn(B, 7, 24))
    [f] = check_positive(model, inputs, "FXL112", [Expect("# tile", _elem(inputs[1]) * R)])
    assert "through `reshape`, `permute`, `mul`" in f.message
    assert f.details["operand_shape"] == (B, 3, 7, 8) and f.details["folded_shape"] == (B, 3, 8, R * 7)


def test_an_elementwise_step_that_differs_per_copy_stops_it():
    def per_copy(x, w):
        t = w.repeat_interleave(2, dim=0) * torch.randn(4, 1, 1)  # each copy scaled differently: data
        return torch.bmm(x, t)

    def shared(x, w):
        return torch.bmm(x, w.repeat_interleave(2, dim=0) * torch.randn(1, 1, 6))  # tile

    check_negative(per_copy, (X, W), "FXL112")
    check_positive(shared, (X, W), "FXL112", [Expect("# tile", _elem(W) * 2)])


def test_repeat_to_expand_leaves_it_alone():
    """FXL104 (whose rewrite turns a repeat into an expand) reports none of these: a bmm does not broadcast."""
    for _, fn, inputs, _ in POSITIVE:
        assert findings(fxlint.lint(fn, inputs, select="FXL104"), "FXL104") == []


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL112")
    assert reported_lines(out, "FXL112") == set(marked_lines("FXL112", "positive"))
    assert out == snapshot

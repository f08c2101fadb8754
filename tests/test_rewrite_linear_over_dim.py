"""FXL201's linear-over-dim rewrite: ``Linear(x.permute(...)).permute(...)`` back over one dim (CaiT's
talking-heads attention) becomes a ``bmm`` with the weight expanded over the batch; outputs and gradients
equal, and the patterns it must leave alone."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.canon import build_view


class TalkingHeads(nn.Module):
    """timm ``cait.py``'s TalkingHeadAttn, the part between ``q @ k.T`` and ``@ v``."""

    def __init__(self, heads: int = 4, bias: bool = True) -> None:
        super().__init__()
        self.proj_l = nn.Linear(heads, heads, bias=bias)
        self.proj_w = nn.Linear(heads, heads, bias=bias)

    def forward(self, attn):  # (B, H, N, N)
        attn = self.proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        attn = attn.softmax(dim=-1)
        attn = self.proj_w(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return attn


def _ops(gm):
    return [n.op for n in build_view(gm, origin="fx")]


def _out_and_grads(module, params, x):
    x = x.detach().clone().requires_grad_(True)
    out = module(x)
    w = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
    grads = torch.autograd.grad((out * w).sum(), [x, *params])
    return out, grads


@pytest.mark.parametrize("bias", [True, False])
def test_talking_heads_become_bmm_with_equal_outputs_and_gradients(bias):
    m, x = TalkingHeads(bias=bias).train(), torch.randn(2, 4, 8, 8)
    result = fxlint.rewrite(m, (x,))
    assert [a.code for a in result.applied] == ["FXL201", "FXL201"] and result.skipped == []
    assert result.checked == "outputs and gradients"
    spelled = "torch.bmm + bias" if bias else "torch.bmm over"
    assert all(spelled in a.description and "over dim 1 of" in a.description for a in result.applied)
    assert all(a.bytes_saved == x.numel() * 4 for a in result.applied)
    ops = _ops(result.module)
    assert "linear" not in ops and "permute" not in ops
    assert ops.count("bmm") == 2
    # checked here too, not only by the engine's verification
    params = list(m.parameters())
    out, grads = _out_and_grads(result.module, params, x)
    want, want_grads = _out_and_grads(m, params, x)
    torch.testing.assert_close(out, want)
    for a, b in zip(grads, want_grads):
        torch.testing.assert_close(a, b)
    assert out.is_contiguous() and not want.is_contiguous()  # the layout change that makes it unsafe


@pytest.mark.parametrize("bias", [True, False])
def test_the_rewritten_graph_copies_nothing_in_eager(bias):
    m, x = TalkingHeads(bias=bias).eval(), torch.randn(2, 4, 8, 8)
    with torch.no_grad():
        result = fxlint.rewrite(m, (x,))
        before = fxlint.audit(m, (x,))
        after = fxlint.audit(result.module, (x,))
    # each linear copied its permuted input, and the softmax its permuted-back input (x.numel() * 4 bytes
    # each); the bmm reads its input as laid out, and the softmax gets a contiguous tensor
    assert before.total_bytes == 3 * x.numel() * 4 and after.total_bytes == 0, after.copies


def _not_applied(fn, x, *, select="FXL201"):
    result = fxlint.rewrite(fn, (x,), select=select)
    assert result.applied == []
    return [s.reason for s in result.skipped if s.code == "FXL201"]


class _NotPermutedBack(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, attn):
        return self.proj(attn.permute(0, 2, 3, 1)).softmax(-1)  # read in the (B, N, N, H) order


class _UsedTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, attn):
        y = self.proj(attn.permute(0, 2, 3, 1))
        return y.permute(0, 3, 1, 2) + 1, y.sum()


class _OutOfOrder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, attn):  # the other dims swap too: no bmm reads that order
        return self.proj(attn.permute(0, 3, 2, 1)).permute(0, 3, 2, 1)


class _NotContiguous(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, attn):
        a = attn.transpose(2, 3)  # (B, H, N, N) seen transposed: reshaping it for bmm would copy
        return self.proj(a.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


@pytest.mark.parametrize("model, reason", [
    (_NotPermutedBack, "not only permuted back"),
    (_UsedTwice, "not only permuted back"),
    (_OutOfOrder, "does not move one dim to the end"),
    (_NotContiguous, "not contiguous"),
])
def test_patterns_it_must_not_touch(model, reason):
    reasons = _not_applied(model().eval(), torch.randn(2, 4, 8, 8))
    assert reasons and all(reason in r for r in reasons), reasons


def test_reduced_precision_is_not_rewritten():
    m = TalkingHeads().to(torch.bfloat16).eval()
    reasons = _not_applied(m, torch.randn(2, 4, 8, 8, dtype=torch.bfloat16))
    assert len(reasons) == 2 and all("float32/float64" in r for r in reasons), reasons


def test_a_matmul_copy_is_no_site_of_this_rewrite():
    """FXL201 on ``q @ k.T`` of permuted q/k: a finding of the rule, advice only: not a site (not listed as
    "not applied")."""

    def scores(qkv):  # (B, N, 3, H, D)
        q, k = qkv.permute(2, 0, 3, 1, 4)[:2]
        return q @ k.transpose(-2, -1)

    x = torch.randn(2, 8, 3, 4, 16)
    assert [f.code for f in fxlint.lint(scores, (x,), select="FXL201").findings] == ["FXL201", "FXL201"]
    result = fxlint.rewrite(scores, (x,), select="FXL201")
    assert result.applied == [] and result.skipped == []


def test_a_linear_on_its_last_dim_is_no_site():
    m = nn.Linear(4, 4)
    result = fxlint.rewrite(m, (torch.randn(2, 8, 4),), select="FXL201")
    assert result.applied == [] and result.skipped == []

"""Transformer attention: q/k/v transposed to (B, H, S, D) views, then ``@``.

Seed scenario 8, the matmul half (``models/`` has the ``.view`` half in its
own scenario). The usual multi-head attention projects ``x`` of shape
``(B, S, E)``, splits the heads with ``.view(B, S, H, D)`` and moves them
forward with ``.transpose(1, 2)``. The result is a ``(B, H, S, D)`` *view*
whose head dim is not outermost in memory. ``q @ k.transpose(-2, -1)`` on
such operands is not free: ``matmul`` flattens the batch dims ``(B, H)``
into one for ``bmm`` with ``reshape``, which cannot view these strides and
copies q, k (and v in ``att @ v``) on every call. The folklore "attention
with a last-two-dims transpose is clean" only holds for contiguous
``(B, H, S, D)`` operands; ``F.scaled_dot_product_attention`` reads the
strided q/k/v without any copy.

The module returns the per-head outputs ``(B, H, S, D)``; merging the heads
back is the ``.view`` half of the seed.

Expected: FXL201 on the two matmul lines (q and k; v), each operand-sized; in
training FXL121 (info) on the head splits whose gradient the matmuls hand back
in (B, H, S, D) order, which their views copy back in the backward.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn

EXPECTED = {"FXL121", "FXL201"}


class SelfAttention(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.scale = 1.0 / math.sqrt(dim // heads)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (B, S, E)
        B, S, E = x.shape
        q, k, v = self.qkv(x).split(E, dim=-1)
        q = q.view(B, S, self.heads, E // self.heads).transpose(1, 2)  # (B, H, S, D) views
        k = k.view(B, S, self.heads, E // self.heads).transpose(1, 2)
        v = v.view(B, S, self.heads, E // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * self.scale
        att = att.softmax(dim=-1)
        return att @ v  # (B, H, S, D)


def make(batch: int = 4, seq: int = 32, dim: int = 64) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return SelfAttention(dim), (torch.randn(batch, seq, dim),)

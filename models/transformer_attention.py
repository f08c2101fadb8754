"""Transformer block: heads split with `.view(...).transpose(1, 2)`, merged back, and a bias re-flattened in a loop.

Seed scenario 8. Multi-head attention splits the model dim into heads with
`q.view(B, T, H, D).transpose(1, 2)`: the split is a view and the transpose
only swaps strides, so nothing is copied there. But the folklore that the
following `q @ k.transpose(-2, -1)` is free is wrong for these operands: the
`(B, H, T, D)` views are not dense in their batch dims, so `matmul` cannot fold
`(B, H)` into one `bmm` batch with a view and clones q, k and, in `att @ v`,
v on every call (FXL201; the runtime audit shows `aten::matmul >
aten::reshape > aten::clone`). `F.scaled_dot_product_attention` reads the
same strided views without a copy.

Merging the heads back is where the seed's `q.transpose(1, 2).view(...)`
fails: the transpose made H and D non-adjacent to T, so `.view(B, T, C)`
raises, and the idiom `.transpose(1, 2).contiguous().view(B, T, C)` pays the
one copy the merge needs (FXL101, info: it is needed).

The seed's other half, `x.t().view(-1)` in a hot loop, also raises (a
transposed 2-D tensor cannot be flattened by a view); the "fix" people write,
`x.t().reshape(-1)`, copies on every iteration. Here a refinement loop applies
the block `steps` times, and each step flattens the same transposed bias table
again: `steps` copies of the same data per call, where one before the loop
would do (FXL102, warning).

Expected: FXL201 (q, k and v copied by the matmuls, three times per call), FXL101
(the head merge, info), FXL102 (the bias flattened in the loop), FXL121 (info).
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL101", "FXL102", "FXL121", "FXL201"}


class Attention(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        H, D = self.heads, C // self.heads
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.view(B, T, H, D).transpose(1, 2)  # (B, H, T, D): views, no copy here
        k = k.view(B, T, H, D).transpose(1, 2)
        v = v.view(B, T, H, D).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * D**-0.5 + bias.view(T, T)
        y = att.softmax(dim=-1) @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # merge heads: the one copy it needs
        return self.proj(y)


class Refiner(nn.Module):
    def __init__(self, dim: int = 64, seq: int = 16, steps: int = 3) -> None:
        super().__init__()
        self.steps = steps
        self.block = Attention(dim)
        self.rel_bias = nn.Parameter(torch.zeros(seq, seq))  # stored key-major: (T_k, T_q)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.steps):
            x = x + self.block(x, self.rel_bias.t().reshape(-1))  # the same table flattened every step
        return x


def make(batch: int = 2, seq: int = 16, dim: int = 64) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return Refiner(dim, seq), (torch.randn(batch, seq, dim),)

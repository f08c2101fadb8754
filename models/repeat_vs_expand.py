"""Conditioning by `repeat` where broadcasting (or `expand`) does it for free.

Seed scenario 9 (`x.repeat(...)` where `expand` would do). A class-conditional
image block scales and shifts its feature map by a per-sample embedding
(FiLM). The embedding is `(B, C)`; the code makes it `(B, C, H, W)` with
`.repeat(1, 1, H, W)` before multiplying, and builds a `(B, 1, H, W)` key
padding mask with `.expand(...).contiguous()`. Both materialise, on every
call, what broadcasting does by itself: the seed's claim checks out on the
runtime (`repeat` records `aten::repeat > aten::copy_` of the full output;
`expand` records nothing; `expand(...).contiguous()` copies the full output).

Not every repeat is a broadcast: `torch.cat`-like tiling of real data
(`feats.repeat(1, 2, 1, 1)` duplicating channels of size > 1) is data, and is
not reported.

Expected: FXL104 on the FiLM repeat and on the mask's expand-contiguous.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL104"}


class FiLMBlock(nn.Module):
    def __init__(self, classes: int = 10, channels: int = 16) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.scale = nn.Embedding(classes, channels)
        self.shift = nn.Embedding(classes, channels)
        self.mix = nn.Conv2d(2 * channels, channels, 1)

    def forward(self, x: torch.Tensor, labels: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        B, C, H, W = x.shape
        h = self.conv(x)
        gamma = self.scale(labels)[:, :, None, None].repeat(1, 1, H, W)  # (B, C, H, W) copy for a broadcast
        beta = self.shift(labels)[:, :, None, None]  # broadcast as is: no copy
        h = h * gamma + beta
        mask = keep[:, None, None, :].expand(B, 1, H, W).contiguous()  # (B, 1, H, W): a copy for a broadcast
        h = h * mask
        doubled = h.repeat(1, 2, 1, 1)  # tiles C > 1: real data, not a broadcast
        return self.mix(doubled)


def make(batch: int = 4, channels: int = 16, size: int = 8) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    x = torch.randn(batch, channels, size, size)
    labels = torch.randint(0, 10, (batch,))
    keep = (torch.rand(batch, size) > 0.2).float()
    return FiLMBlock(channels=channels), (x, labels, keep)

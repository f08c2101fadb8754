"""ConvNeXt block: LayerNorm over channels on an NCHW conv output permuted to NHWC.

A ConvNeXt block runs a depthwise 7x7 conv, permutes ``(N, C, H, W)`` to
``(N, H, W, C)`` with ``x.permute(0, 2, 3, 1)`` and applies ``LayerNorm(C)``
and two Linears over the channel dim. With an NCHW conv output the permute
is a strided view, and ``layer_norm`` (which works on contiguous rows) copies
it on every call - and again in backward from its saved input. Running the
conv part in channels_last (model and input) makes the permuted tensor
contiguous, so the norm reads it in place.

Expected: FXL203 on the norm line, bytes = the activation, the same again
in backward; in training FXL209 (info) on the conv line: `layer_norm`'s
backward hands the gradient back NHWC, and the NCHW conv's backward copies
it (where oneDNN runs the depthwise conv; ATen's native kernel copies each
group's slice of the gradient anyway).
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL203", "FXL209"}


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.pwconv2 = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (N, C, H, W)
        y = self.dwconv(x)
        y = y.permute(0, 2, 3, 1)  # (N, H, W, C) view
        y = self.norm(y)
        y = self.pwconv2(torch.nn.functional.gelu(self.pwconv1(y)))
        return x + y.permute(0, 3, 1, 2)


def make(batch: int = 2, dim: int = 32, size: int = 16) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return ConvNeXtBlock(dim), (torch.randn(batch, dim, size, size),)

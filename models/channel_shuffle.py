"""ShuffleNet-v2 unit: channel shuffle by view -> transpose -> contiguous -> view.

Seed scenario 4. Channel shuffle interleaves the channels of `groups` groups.
The idiom is `x.view(n, g, c // g, h, w).transpose(1, 2).contiguous()
.view(n, c, h, w)`: the first view only splits a dim (free), the transpose
only swaps strides (free), and the last view merges two dims that the
transpose made non-adjacent, so one full copy is needed, and `.contiguous()`
is the right place for it. The seed's claims check out on the runtime: the
view and the transpose copy nothing, and the whole shuffle is exactly one copy
of the tensor (`aten::contiguous > aten::clone > aten::copy_`).

What the seed does not say is that the extra `.contiguous()` calls people add
around it ("to be safe": after `torch.cat`, after the final view) copy
nothing, because those tensors already are contiguous: they are noise that
hides the one copy that matters.

The branch reads half of the channels through `chunk`: a slice whose batch
stride is the full tensor's, so the 1x1 convolution copies it internally
(FXL202, the layout family, reports that one).

Expected: FXL101 (info: the one copy the shuffle needs), FXL108 (the two
`.contiguous()` that change nothing) and FXL202 (the branch's conv copying
its chunk of the input).
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL101", "FXL108", "FXL202"}


def channel_shuffle(x: torch.Tensor, groups: int) -> torch.Tensor:
    n, c, h, w = x.shape
    x = x.view(n, groups, c // groups, h, w)  # splits C: a free view
    x = x.transpose(1, 2).contiguous()  # the one copy the shuffle needs
    return x.view(n, c, h, w).contiguous()  # contiguous already: changes nothing


class ShuffleUnit(nn.Module):
    def __init__(self, channels: int = 32) -> None:
        super().__init__()
        half = channels // 2
        self.branch = nn.Sequential(
            nn.Conv2d(half, half, 1, bias=False), nn.BatchNorm2d(half), nn.ReLU(),
            nn.Conv2d(half, half, 3, padding=1, groups=half, bias=False), nn.BatchNorm2d(half),
            nn.Conv2d(half, half, 1, bias=False), nn.BatchNorm2d(half), nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=1)
        out = torch.cat((x1, self.branch(x2)), dim=1)
        out = out.contiguous()  # cat returns a contiguous tensor: changes nothing
        return channel_shuffle(out, 2)


def make(batch: int = 4, channels: int = 32, size: int = 16) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return ShuffleUnit(channels).eval(), (torch.randn(batch, channels, size, size),)

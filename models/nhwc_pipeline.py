"""Image pipeline: an NHWC batch permuted to NCHW, then ``.contiguous()`` before the conv.

Seed scenario 3, the channels_last side. Decoded images arrive NHWC, ``(N,
H, W, C)``. ``images.permute(0, 3, 1, 2)`` is an NCHW-shaped view whose
memory is already channels_last - exactly the layout ``conv2d`` takes
without copying. The pipeline adds ``.contiguous()`` "to be safe", which
rewrites the whole batch into NCHW on every call and makes the convs run in
NCHW: a full copy that buys nothing. Dropping it (and converting the model
once with ``model.to(memory_format=torch.channels_last)``, so the weights
need no per-call conversion) removes the copy.

Expected: FXL204 on the ``.contiguous()`` line, bytes = the image batch.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL204"}


class NHWCNet(nn.Module):
    def __init__(self, num_classes: int = 10, width: int = 16) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, kernel_size=3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(width, num_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:  # images: (N, H, W, C)
        x = images.permute(0, 3, 1, 2).contiguous()  # NHWC -> NCHW copy
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.conv2(x))
        return self.head(self.pool(x).flatten(1))


def make(batch: int = 4, size: int = 32) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return NHWCNet(), (torch.rand(batch, size, size, 3),)

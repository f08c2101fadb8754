"""Video classification: (B, T, C, H, W) clips permuted straight into Conv3d.

Seed scenario 2. Video decoders deliver clips frame by frame, ``(B, T, C, H,
W)``; ``nn.Conv3d`` wants ``(B, C, T, H, W)``. The model permutes the clips
with ``clips.permute(0, 2, 1, 3, 4)`` and feeds the view straight into the
conv. The view is neither contiguous nor channels_last_3d, so the conv makes
a clip-sized copy inside itself (``aten::conv3d > aten::contiguous``) on
every call - and autograd saves the *permuted* view for backward, where the
copy is made again. The seed measured ~2 GB more peak memory on real clip
sizes. Producing ``(B, C, T, H, W)`` in the data pipeline, or one explicit
``.contiguous()`` (whose result the backward then reuses), removes the
hidden copies.

Expected: FXL202 (warning) on the conv line, forward bytes = the clip
tensor, the same again in backward.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL202"}


class VideoClassifier(nn.Module):
    def __init__(self, num_classes: int = 10, width: int = 16) -> None:
        super().__init__()
        self.stem = nn.Conv3d(3, width, kernel_size=3, padding=1)
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.head = nn.Linear(width, num_classes)

    def forward(self, clips: torch.Tensor) -> torch.Tensor:  # clips: (B, T, C, H, W)
        x = clips.permute(0, 2, 1, 3, 4)  # (B, C, T, H, W), a strided view
        x = torch.relu(self.stem(x))
        x = self.pool(x).flatten(1)
        return self.head(x)


def make(batch: int = 2, frames: int = 8, size: int = 32) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return VideoClassifier(), (torch.randn(batch, frames, 3, size, size),)

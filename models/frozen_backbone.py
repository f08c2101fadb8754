"""Fine-tuning with the backbone under `torch.no_grad()`, but its weights still trainable.

Seed scenario 10 (and every fine-tuning tutorial). The plan was to fine-tune a
small CNN backbone with a new classification head; the forward pass wraps the
backbone in `with torch.no_grad():` (copied from a feature-extraction script),
while its parameters still have `requires_grad=True` and sit in the
optimizer. The backbone never changes, the head trains alone, accuracy
stalls, and nothing errors.

fxlint names every backbone parameter that loses every path to the output:
FXL303 error on the first line of the block that uses them. Freezing it on
purpose is `self.backbone.requires_grad_(False)` (then fxlint is quiet), or
`# fxlint: ignore[FXL303]` on the `with` line.

Expected: FXL303 (error) on the backbone call.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL303"}


class FineTuner(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.BatchNorm2d(32), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        self.head = nn.Linear(32, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            feats = self.backbone(images)           # backbone.* still requires grad: never trains
        return self.head(feats)


def make(batch: int = 4) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return FineTuner(), (torch.randn(batch, 3, 32, 32),)

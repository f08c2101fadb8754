"""OCR recogniser: positions built with `torch.arange(seq_len)` on the CPU, moved to the device every forward.

Seed scenario 5. A text-line recogniser turns an image into a sequence of
column features and adds a learned positional embedding. The positions are
`torch.arange(seq_len)`, created without `device=`, so they are built on the
host and copied to the accelerator on every forward (`.to(x.device)`); the
seed measured 2 ms per forward on a GPU. `torch.arange(seq_len,
device=x.device)` builds them where they are used, for free.

This machine has no accelerator, so `make()` puts the model on the `meta`
device when CUDA is absent: `meta` stands for "another device" exactly (fake
tensors know where every value lives, and the profiler records the CPU->meta
copy as a device copy of the same size). `make(device="cpu")` puts everything
on the CPU, where nothing moves and the rule stays quiet.

Expected: FXL107 on the positions line.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL107"}


class TextLineRecognizer(nn.Module):
    def __init__(self, channels: int = 32, max_len: int = 128, classes: int = 40) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, channels, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d((1, None)),
        )
        self.pos = nn.Embedding(max_len, channels)
        self.classify = nn.Conv1d(channels, classes, 1)

    def forward(self, image: torch.Tensor) -> torch.Tensor:  # image: (B, 1, H, W)
        cols = self.features(image).squeeze(2)  # (B, C, W): one feature vector per column
        seq_len = cols.shape[-1]
        positions = torch.arange(seq_len).to(cols.device)  # built on the host, copied every forward
        cols = cols + self.pos(positions).t()
        return self.classify(cols).log_softmax(dim=1)


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "meta"


def make(batch: int = 4, width: int = 64, device: str | None = None) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    device = device or default_device()
    model = TextLineRecognizer().to(device)
    return model, (torch.randn(batch, 1, 16, width, device=device),)

"""OCR recogniser: positions built with `torch.arange(seq_len)` on the CPU, moved to the device every forward.

Seed scenario 5. A text-line recogniser turns an image into a sequence of
column features and adds a learned positional embedding. The positions are
`torch.arange(seq_len)`, created without `device=`, so they are built on the
host and copied to the accelerator on every forward (`.to(x.device)`); the
seed measured 2 ms per forward on a GPU. `torch.arange(seq_len,
device=x.device)` builds them where they are used, for free.

The story is about the GPU, so the file declares `DEVICE = "cuda"`: `make
demo` (`fxlint lint --zoo models`) lints it with `--device cuda`, a
simulation that needs no GPU (docs/device.md): `make()` builds the model on
the CPU when CUDA is absent, and the lint puts its inputs and parameters on a
fake `cuda` device, where the `.to(cols.device)` is the host-to-device copy
the GPU run makes. `make(device="meta")` puts the model on the `meta`
device instead, which the runtime audit can profile on a CPU machine (the
CPU->meta copy is recorded as a device copy of the same size);
`bench/gpu_check.py` checks the prediction on a real GPU. Linted without a
target device on the CPU, nothing moves and the rule stays quiet.

Expected (with --device cuda): FXL107 on the positions line.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL107"}
DEVICE = "cuda"  # the target device `fxlint lint --zoo` lints this story for (simulated without a GPU)


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
    return "cuda" if torch.cuda.is_available() else "cpu"


def make(batch: int = 4, width: int = 64, device: str | None = None) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    device = device or default_device()
    model = TextLineRecognizer().to(device)
    return model, (torch.randn(batch, 1, 16, width, device=device),)

"""Serving-time normalisation with `.item()`: no gradient to lose, but a GPU pipeline stall on every request.

Seed scenario (issue 17). An inference-only scorer (in `eval()`) normalises
its input by the largest magnitude, written `x / x.abs().max().item()`, and
skips a branch when nothing is positive (`if logits.max() > 0:`). On the CPU
these cost nothing worth mentioning, and without a target device fxlint only
reports the graph breaks. On a GPU each one makes the host wait for the device
to finish everything queued before it, per request: with `--device cuda` (the
file declares `DEVICE = "cuda"`; a simulation, docs/device.md) FXL304 reports
both host syncs, in inference.

Expected (with --device cuda): FXL304 on the `.item()` line and on the `if` line; FXL501 on both.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL304", "FXL501"}
DEVICE = "cuda"  # the target device `fxlint lint --zoo` lints this story for (simulated without a GPU)


class Scorer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x / x.abs().max().item()  # a host sync per request
        logits = self.net(x)
        if logits.max() > 0:  # Python control flow on a device value: a host sync
            logits = logits - logits.max()
        return logits


def make(batch: int = 32, device: str | None = None) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return Scorer().eval().to(device), (torch.randn(batch, 64, device=device),)

"""A recommender with its embedding table offloaded to the host and a metric kept on the host: the boundary, once.

A large embedding table does not fit next to the rest of the model on the
GPU, so it stays in host memory: the ids go to the host (`ids.cpu()`), the
lookup runs on the CPU, and the rows come back to the device. A running
score histogram (a buffer) is also kept on the host, updated from the
scores every call. The rest of the model lives on the GPU.

This is deliberate, and a demanding user wants to hear about the price of
the boundary, once, with bytes per call, and nothing about the host-side ops
behind it. With `--device cuda` (the file declares `DEVICE = "cuda"`; a
simulation, docs/device.md) fxlint places the parameters and buffers the
model feeds host data it moved there itself (`table.weight`, `score_hist`)
on the CPU, everything else on the device, and reports the crossings:
the ids and the scores copied to the host (each a host sync), the rows
copied back, with `non_blocking=True` that does nothing from pageable memory.

Expected (with --device cuda): FXL106 on the lookup line and on the metric line.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL106"}
DEVICE = "cuda"  # the target device `fxlint lint --zoo` lints this story for (simulated without a GPU)


class OffloadedRecommender(nn.Module):
    def __init__(self, items: int = 5000, dim: int = 32) -> None:
        super().__init__()
        self.table = nn.Embedding(items, dim)  # kept on the host (too large for the device)
        self.tower = nn.Sequential(nn.Linear(2 * dim, 64), nn.ReLU(), nn.Linear(64, 1))
        self.register_buffer("score_hist", torch.zeros(1))  # a host-side running metric

    def forward(self, ids: torch.Tensor, user: torch.Tensor) -> torch.Tensor:
        rows = self.table(ids.cpu()).to(user.device, non_blocking=True)  # the boundary: out and back
        scores = self.tower(torch.cat([rows, user], dim=-1))
        self.score_hist += scores.detach().cpu().sigmoid().sum(0)  # the metric, on the host
        return scores


def make(batch: int = 64, device: str | None = None) -> tuple[nn.Module, tuple[torch.Tensor, torch.Tensor]]:
    torch.manual_seed(0)
    model = OffloadedRecommender()
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device != "cpu":  # the GPU run: the tower on the device, the table and the metric on the host
        model.tower.to(device)
    return model, (torch.randint(0, 5000, (batch,), device=device), torch.randn(batch, 32, device=device))

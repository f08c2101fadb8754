"""Masked regression loss: the padded positions dropped with a boolean mask.

A sequence model predicts a value per time step and the loss should ignore
padding. The usual spelling, ``(pred - target)[mask].pow(2).mean()``, selects
the valid positions with a boolean mask: the number of selected elements is
only known once the mask is computed, so PyTorch runs ``nonzero`` (a host
sync on GPU) and gathers a copy, and ``torch.compile`` breaks the graph on
that line. With ``d = pred - target``, ``torch.where(mask, d * d, 0).sum() / mask.sum()``
is the same value with every shape static.

Expected: FXL403 on the loss line, FXL501 for the graph break it causes
(the break is also in FXL501's catalogue of every graph break), and FXL120:
the backward of ``.pow(2)`` copies the selected values (``pow``'s gradient
computes their ``.pow(1)``); ``d * d`` squares without it.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL120", "FXL403", "FXL501"}


class MaskedRegression(nn.Module):
    def __init__(self, features: int = 32) -> None:
        super().__init__()
        self.head = nn.Linear(features, 1)

    def forward(self, x: torch.Tensor, target: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        pred = self.head(x).squeeze(-1)  # (batch, time)
        mask = torch.arange(x.size(1)) < lengths[:, None]
        return (pred - target)[mask].pow(2).mean()


def make(batch: int = 4, time: int = 50) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    lengths = torch.randint(time // 2, time + 1, (batch,))
    return MaskedRegression(), (torch.randn(batch, time, 32), torch.randn(batch, time), lengths)

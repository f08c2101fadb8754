"""A plain MLP classifier: the negative control.

Standard code must come back clean: Linear layers on contiguous activations,
ReLU, dropout and a log-softmax head, no copies anyone could avoid.

Expected: no findings.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED: set[str] = set()


class MLP(nn.Module):
    def __init__(self, d_in: int = 256, hidden: int = 512, classes: int = 10) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, hidden), nn.ReLU(), nn.Dropout(0.1),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.net(x), dim=-1)


def make(batch: int = 32) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return MLP(), (torch.randn(batch, 256),)

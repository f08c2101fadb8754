"""Multi-task losses combined with `torch.tensor([...])`: a copy through Python numbers and no gradient.

Seed scenario 7. A two-task model weights its task losses with learned
uncertainties; the losses are gathered with `torch.tensor([loss_a, loss_b])`
before the weighting. `torch.tensor` reads each loss back as a Python number
(`aten::item` per element, a device sync each on a GPU) and builds a new
tensor with no autograd history: neither task head nor the shared trunk
learns from the task losses, only the uncertainty weights do.

fxlint: FXL109 error on that line, naming `trunk.*`, `head_a.*`, `head_b.*`
(they lose every path to the output), with the bytes written per call.
`torch.stack([loss_a, loss_b])` keeps the graph.

Expected: FXL109 (error).
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = {"FXL109"}


class TwoTasks(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(16, 32), nn.ReLU())
        self.head_a = nn.Linear(32, 4)
        self.head_b = nn.Linear(32, 1)
        self.log_vars = nn.Parameter(torch.zeros(2))

    def forward(self, x: torch.Tensor, ya: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        h = self.trunk(x)
        loss_a = F.cross_entropy(self.head_a(h), ya)
        loss_b = F.mse_loss(self.head_b(h).squeeze(-1), yb)
        losses = torch.tensor([loss_a, loss_b])       # the bug: torch.stack keeps the graph
        return (losses * torch.exp(-self.log_vars) + self.log_vars).sum()


def make(batch: int = 8) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(0)
    return TwoTasks(), (torch.randn(batch, 16), torch.randint(0, 4, (batch,)), torch.randn(batch))

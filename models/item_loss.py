"""A loss rebuilt from `.item()` values: the auxiliary head never trains.

Seed scenario 7. A model with a main head and an auxiliary (regularising)
head returns its training loss. The auxiliary term was added with
`aux_loss.item()` ("to log it at the same time"): a Python number, so its
gradient is silently zero. Under `torch.compile` the `.item()` is also a
device sync and a graph break; the number re-enters the next graph as a
constant.

fxlint reads the break from Dynamo, finds the tensor that became a number,
and, since `fxlint.lint` runs the model once, asks autograd which parameters
the returned loss reaches: `aux.weight`/`aux.bias` reach the loss only
through the number (FXL304 error); the trunk keeps its main-loss paths. FXL501
reports the graph break itself.

On a GPU the `.item()` also stalls the pipeline every step: the file declares
`DEVICE = "cuda"`, so `make demo` lints it with `--device cuda` (simulated,
docs/device.md) and the FXL304 finding says both.

Expected: FXL304 (error) and FXL501 (warning) on the `.item()` line.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED = {"FXL304", "FXL501"}
DEVICE = "cuda"  # the target device `fxlint lint --zoo` lints this story for (simulated without a GPU)


class WithAuxLoss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(32, 64), nn.ReLU())
        self.main = nn.Linear(64, 10)
        self.aux = nn.Linear(64, 1)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        h = self.trunk(x)
        main_loss = F.cross_entropy(self.main(h), labels)
        aux_loss = self.aux(h).pow(2).mean()
        return main_loss + 0.1 * aux_loss.item()     # the bug: the aux term has no gradient


def make(batch: int = 16, device: str = "cpu") -> tuple[nn.Module, tuple[torch.Tensor, torch.Tensor]]:
    torch.manual_seed(0)
    return WithAuxLoss().to(device), (torch.randn(batch, 32, device=device),
                                      torch.randint(0, 10, (batch,), device=device))

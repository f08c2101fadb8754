"""Weight normalisation written with `.data`: the weight it normalises never trains.

Seed scenario 7. A hand-written weight-normalised layer computes its
effective weight as `g * v / ||v||`, reading `self.v.data` (an old habit from
PyTorch 0.3, "to avoid tracking the norm"). `.data` leaves autograd: `v`
gets no gradient at all and only the gain `g` and the bias learn, silently.

fxlint follows `proj.v` to the output and finds that every path goes through
`.data`: FXL302 error on that line, naming `proj.v`.

Expected: FXL302 (error) on the `.data` line.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL302"}


class WeightNormLinear(nn.Module):
    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.v = nn.Parameter(torch.randn(d_out, d_in) / d_in ** 0.5)
        self.g = nn.Parameter(torch.ones(d_out, 1))
        self.bias = nn.Parameter(torch.zeros(d_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = self.v.data                              # the bug: v never receives a gradient
        weight = self.g * v / v.norm(dim=1, keepdim=True)
        return x @ weight.t() + self.bias


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = WeightNormLinear(64, 32)
        self.out = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.proj(x)))


def make(batch: int = 16) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return Classifier(), (torch.randn(batch, 64),)

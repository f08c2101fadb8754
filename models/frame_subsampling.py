"""Speech recognition front end: every third frame kept with ``index_select`` and an ``arange``.

An acoustic encoder lowers its frame rate before the attention layers by
keeping every third frame:
``torch.index_select(frames, 1, torch.arange(0, frames.size(1), 3))``. The
index is a constant arithmetic progression, so ``aten::index_select`` gathers
a copy of a third of the activations on every call (and in training scatters
the gradient back with ``index_add_``), where ``frames[:, ::3]`` is the same
elements as a strided view. ``fxlint fix`` shows the edit and ``fxlint.rewrite``
(or ``options={"rewrite": True}``) applies it, verified.

Expected: FXL401 on the subsampling line.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL401"}


class FrameSubsampling(nn.Module):
    def __init__(self, features: int = 80, hidden: int = 256) -> None:
        super().__init__()
        self.proj = nn.Linear(features, hidden)
        self.out = nn.Linear(hidden, hidden)

    def forward(self, feats: torch.Tensor) -> torch.Tensor:  # feats: (batch, time, features)
        frames = torch.relu(self.proj(feats))
        kept = torch.index_select(frames, 1, torch.arange(0, frames.size(1), 3))
        return self.out(kept)


def make(batch: int = 8, time: int = 600) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return FrameSubsampling(), (torch.randn(batch, time, 80),)

"""Speech separation: every other channel taken with a Python list index.

Seed scenario 1. A separation network produces interleaved outputs for two
speakers along dim 1, and the post-processing keeps the even channels with
``output[:, [i for i in range(0, output.size(1), 2)]]``. The list is an
advanced index: an ``aten::index`` gather allocates and fills a new tensor on
every call (the seed measured 30 MB and 17 ms extra per inference), and the
backward scatters through ``index_put``. ``output[:, ::2]`` is the same
elements as a zero-copy view.

Expected: FXL401 on the indexing line.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL401"}


class SpeechSeparation(nn.Module):
    def __init__(self, channels: int = 64, hidden: int = 128) -> None:
        super().__init__()
        self.encoder = nn.Conv1d(1, hidden, kernel_size=16, stride=8)
        self.mask = nn.Conv1d(hidden, channels, kernel_size=1)

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        feats = torch.relu(self.encoder(wave))
        output = torch.sigmoid(self.mask(feats))
        speaker_a = output[:, [i for i in range(0, output.size(1), 2)]]
        return speaker_a


def make(batch: int = 4, samples: int = 16000) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return SpeechSeparation(), (torch.randn(batch, 1, samples),)

"""Speech separation: every other channel taken with a Python list index.

Seed scenario 1. A separation network writes the estimates of two speakers
interleaved along dim 1 (channel 2k is speaker A, 2k+1 speaker B), and the
post-processing keeps speaker A with
``output[:, [i for i in range(0, output.size(1), 2)]]``. The list is an
advanced index: an ``aten::index`` gather allocates and fills a new tensor on
every call (the seed measured 30 MB and 17 ms extra per inference), and in
training the backward scatters the gradient back with ``index_put``.
``output[:, ::2]`` is the same elements as a zero-copy view.

This model is the separator's output stage, where the seed found the cost:
a per-channel affine (the separator's last, learned layer) on the raw
separated signals, then the seed's selection line. The separator network in
front of it is the same with or without the fix, so it is left out; with a
heavy network in front (see ``frame_subsampling`` for a gather inside a
model) the same bytes are saved but they are a smaller share of the time.

Expected: FXL401 on the indexing line.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL401"}


class SpeechSeparation(nn.Module):
    def __init__(self, channels: int = 512) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(channels, 1))
        self.shift = nn.Parameter(torch.zeros(channels, 1))

    def forward(self, separated: torch.Tensor) -> torch.Tensor:  # (batch, 2 * channels per speaker, time)
        output = separated * self.scale + self.shift
        speaker_a = output[:, [i for i in range(0, output.size(1), 2)]]
        return speaker_a


def make(batch: int = 4, channels: int = 512, time: int = 2000) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return SpeechSeparation(channels), (torch.randn(batch, channels, time),)

"""Mixed precision by hand: features stored in half, converted straight back to float.

Seed scenario 9 (dtype round trips in mixed precision). A classifier keeps
its backbone features in float16 "to save memory", then the head converts
them back to float32 before using them, with nothing computed in between:
`feats.half()` then `feats.float()`. The round trip is two full copies per
call (`aten::to > aten::_to_copy > aten::copy_`, 2 bytes then 4 bytes per
element, measured), and it rounds every feature to float16's 11-bit mantissa
on the way; no memory is saved, since both tensors exist at once. In a
training step backward converts the gradient back and forth again
(`ToCopyBackward0`, measured).

The logits are then passed through `.float()` "to be sure": they already are
float32, so PyTorch returns the same tensor (no copy): noise, not cost.

Expected: FXL103 (the round trip, warning) and FXL108 (the `.float()` that
changes nothing, info).
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL103", "FXL108"}


class HalfFeatureClassifier(nn.Module):
    def __init__(self, d_in: int = 128, hidden: int = 256, classes: int = 10) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(d_in, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = self.backbone(x).half()  # "store features in half to save memory"
        logits = self.head(feats.float())  # ... and straight back to float32
        return logits.float()  # float32 already


def make(batch: int = 32, d_in: int = 128) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return HalfFeatureClassifier(d_in), (torch.randn(batch, d_in),)

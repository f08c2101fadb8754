"""Image pipeline: an NHWC batch seen as NCHW with `.permute(0, 3, 1, 2)`, then `.view(...)`.

Seed scenario 3. Images come out of the decoder as a channels-last (B, H, W, 3)
batch. The model looks at them as NCHW with `batch.permute(0, 3, 1, 2)`. The
seed article says that the following `.view(-1, 3, H, W)` "is forced to copy"
and that `.permute(...).contiguous().view(...)` made it 3.2x faster. Checked
against the runtime, the story is different:

* `.view(-1, 3, H, W)` keeps the shape, so it only needs the strides the
  permute already has: a free view, no copy (the profiler records none);
* a `.view()` that merges C with H or W (`.view(B, -1)`) cannot work on this
  layout at all: it raises, it never copies;
* `.reshape(B, -1)` (what people write after that error) flattens by copying
  the whole batch on every call, silently: FXL102 reports it;
* a conv2d reads this layout directly (it is exactly channels_last), so the
  stem needs no `.contiguous()`; adding one would be a full copy that turns
  channels_last data into NCHW (FXL204's business).

The 3.2x speed-up of the seed is a GPU timing of code we do not have; what
this machine can show is where the copies are and what they cost.

Expected: FXL102 on the raw-pixel flatten (info: a silent copy of the batch); in
training FXL209 (info) on the stem: its output's gradient comes back NCHW from
`relu`'s backward (the gradient of `.mean()` is broadcast) and the channels_last
conv's backward copies it, and oneDNN converts the weight gradient back.
"""

from __future__ import annotations

import torch
import torch.nn as nn

EXPECTED = {"FXL102", "FXL209"}


class ImagePipeline(nn.Module):
    def __init__(self, size: int = 32, classes: int = 10) -> None:
        super().__init__()
        self.size = size
        # a channels_last stem, as a channels_last pipeline has: conv2d takes the permuted batch as is
        self.stem = nn.Conv2d(3, 16, 3, padding=1).to(memory_format=torch.channels_last)
        self.pixels = nn.Linear(3 * size * size, 16)  # a linear probe on the raw pixels, in NCHW order
        self.head = nn.Linear(32, classes)

    def forward(self, batch: torch.Tensor) -> torch.Tensor:  # batch: (B, H, W, 3)
        x = batch.permute(0, 3, 1, 2)  # NCHW view of NHWC data: no copy
        x = x.view(-1, 3, self.size, self.size)  # same shape: still a free view
        feats = torch.relu(self.stem(x)).mean(dim=(2, 3))
        raw = x.reshape(x.shape[0], -1)  # merges C with H and W: copies the whole batch
        return self.head(torch.cat([feats, self.pixels(raw)], dim=1))


def make(batch: int = 8, size: int = 32) -> tuple[nn.Module, tuple[torch.Tensor]]:
    torch.manual_seed(0)
    return ImagePipeline(size), (torch.rand(batch, size, size, 3),)

"""GAN training step: the discriminator loss uses `fake.detach()`, on purpose.

Seed scenario 10. One module computes both losses of a GAN step. The
discriminator must not push gradients into the generator, so its loss on the
generated batch reads `fake.detach()`; the generator loss uses `fake` itself.
That cut is intentional, and the model's source says so with
`# fxlint: ignore[FXL301]`: fxlint still finds it (generator.* lose half of
their gradient paths there) and counts it as suppressed, but does not report
it.

Expected: no findings; FXL301 suppressed on the `fake.detach()` line.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED: set[str] = set()
EXPECTED_SUPPRESSED = {"FXL301"}


class GANStep(nn.Module):
    def __init__(self, z_dim: int = 16, x_dim: int = 32) -> None:
        super().__init__()
        self.generator = nn.Sequential(nn.Linear(z_dim, 64), nn.ReLU(), nn.Linear(64, x_dim))
        self.discriminator = nn.Sequential(nn.Linear(x_dim, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))

    def forward(self, z: torch.Tensor, real: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        fake = self.generator(z)
        d_real = self.discriminator(real)
        d_fake = self.discriminator(fake.detach())  # fxlint: ignore[FXL301] the D step must not train G
        d_loss = (F.binary_cross_entropy_with_logits(d_real, torch.ones_like(d_real))
                  + F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake)))
        g_score = self.discriminator(fake)
        g_loss = F.binary_cross_entropy_with_logits(g_score, torch.ones_like(g_score))
        return d_loss, g_loss


def make(batch: int = 16) -> tuple[nn.Module, tuple[torch.Tensor, torch.Tensor]]:
    torch.manual_seed(0)
    return GANStep(), (torch.randn(batch, 16), torch.randn(batch, 32))

"""Real-zoo models with rewritable findings, as targets for ``fxlint fix`` / ``fxlint bench`` and the
rewrite tests (tests/test_rewrite_zoo.py): each factory returns ``(model in eval(), example inputs)``,
random weights, no download.

    .venv/bin/fxlint fix bench/zoo_rewrite.py:pvt_v2_b0
    nice -n 10 .venv/bin/fxlint bench bench/zoo_rewrite.py:pvt_v2_b0 --mode infer
    nice -n 10 .venv/bin/fxlint bench bench/zoo_rewrite.py:mvit_self_assign --mode train --backends eager
    nice -n 10 .venv/bin/fxlint bench bench/zoo_rewrite.py:swin_t --mode infer --backends eager

``pvt_v2_b0``: three FXL204 sites at ``timm/models/pvt_v2.py:302`` (``.permute(0, 3, 1, 2).contiguous()``
of a channels_last-laid-out tensor before the next stage's patch-embedding convolution).
``mvit_self_assign``: torchvision's MViT attention helper ``_add_rel_pos`` pattern
(``attn[:, :, 1:, 1:] += rel_pos``) and ``_add_shortcut`` (``x[:, :, 1:, :] += shortcut[:, :, 1:, :]``),
called as torchvision calls them, in training: two FXL110 self-assignments (drop-self-assign).
``swin_t``: torchvision's Swin-T at 224 px, whose window-attention pads all have zero widths (FXL205
drop-zero-pad).
``cait_xxs24``: timm's CaiT-XXS24 at 224 px, batch 2: the talking-heads attention's
``proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)`` and ``proj_w(...)`` in each of its 24 blocks (FXL201
linear-over-dim; docs/rewriting.md has the measured figures).
"""

from __future__ import annotations

from typing import Any

import torch


def pvt_v2_b0() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    from fxlint.util.compat import install_torchvision_fallback

    install_torchvision_fallback()
    import timm

    torch.manual_seed(0)
    return timm.create_model("pvt_v2_b0", pretrained=False).eval(), (torch.randn(2, 3, 64, 64),)


class MViTSelfAssign(torch.nn.Module):
    """Attention with a relative-position term and a class-token residual, written as torchvision's
    ``models/video/mvit.py`` writes them (``_add_rel_pos``'s last line, ``_add_shortcut``)."""

    def __init__(self, dim: int = 32, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, rel_pos: torch.Tensor) -> torch.Tensor:
        from torchvision.models.video import mvit

        B, N, C = x.shape
        q, k, v = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q * (C // self.heads) ** -0.5) @ k.transpose(-2, -1)
        attn[:, :, 1:, 1:] += rel_pos
        out = (attn.softmax(-1) @ v).transpose(1, 2).reshape(B, N, C)
        out = self.proj(out)
        return mvit._add_shortcut(out.unsqueeze(1), x.unsqueeze(1), False).squeeze(1)


def mvit_self_assign() -> tuple[torch.nn.Module, tuple[Any, ...]]:
    from fxlint.util.compat import install_torchvision_fallback

    install_torchvision_fallback()
    torch.manual_seed(0)
    return MViTSelfAssign().train(), (torch.randn(4, 197, 32), torch.randn(4, 2, 196, 196))


def swin_t() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """torchvision ``swin_t`` at 224 px: every window-attention pad is ``F.pad(x, (0, 0, 0, 0, 0, 0))`` (the
    feature maps divide by the 7x7 window), so FXL205's drop-zero-pad applies to each block (with
    FXL108's no-op ``.contiguous()`` removals)."""
    from fxlint.util.compat import install_torchvision_fallback

    install_torchvision_fallback()
    import torchvision

    torch.manual_seed(0)
    return torchvision.models.swin_t(num_classes=10).eval(), (torch.randn(2, 3, 224, 224),)


def cait_xxs24() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """timm ``cait_xxs24_224`` (random weights) on a batch of two 224 px images: 48 ``Linear`` layers over the
    heads dim of the attention scores, each ``Linear(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)`` (FXL201
    linear-over-dim)."""
    import timm

    torch.manual_seed(0)
    return timm.create_model("cait_xxs24_224", pretrained=False).eval(), (torch.randn(2, 3, 224, 224),)

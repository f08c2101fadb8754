"""Does Inductor fold FXL405's constant copies? Compiles the two Swin patterns of the rule's fixture
(a bias built from parameters, cloned and written; a shifted-window mask built from the input's shape)
with Inductor, freezing off and on, under ``torch.no_grad()``, and prints the kernels the compiled
``call`` runs every call and the frozen constants.

    .venv/bin/python bench/fxl405_freezing.py

Measured (torch 2.13 CPU): with and without freezing, one fused kernel
(``cpp_fused_..._cat_fill_..._new_zeros_...``) still builds the bias and the mask every call;
freezing only turns the two parameters into ``_frozen_param`` constants.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import torch
import torch._dynamo
from torch._inductor.utils import run_and_get_code

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.rule_snapshots import load_fixture  # noqa: E402


class SwinPatterns(torch.nn.Module):
    """The fixture's two positives alone, so the kernels in the compiled code are theirs."""

    def __init__(self, m: torch.nn.Module) -> None:
        super().__init__()
        self.m = m

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        m = self.m
        _, H, W, C = x.shape
        qkv_bias = torch.cat((m.q_bias, torch.zeros_like(m.v_bias), m.v_bias)).clone()
        qkv_bias[C:2 * C].zero_()
        mask = x.new_zeros((H, W))
        count = 0
        for h in ((0, -4), (-4, -2), (-2, None)):
            for w in ((0, -4), (-4, -2), (-2, None)):
                mask[h[0]:h[1], w[0]:w[1]] = count
                count += 1
        return x + qkv_bias[:C], mask


def main() -> None:
    model, (x,) = load_fixture("FXL405").make()
    for freezing in (False, True):
        torch._dynamo.reset()
        torch._inductor.config.freezing = freezing
        with torch.no_grad():
            compiled = torch.compile(SwinPatterns(model).eval(), backend="inductor")
            _, codes = run_and_get_code(compiled, x)
        code = "\n".join(codes)
        call = code[code.index("def call("):]
        kernels = re.findall(r"(cpp_fused_\w+|triton_\w+)\(", call)
        frozen = sorted(set(re.findall(r"_frozen_param\d+", code)))
        print(f"freezing={freezing}: kernels every call: {kernels or 'none'}; frozen constants: {frozen or 'none'}")


if __name__ == "__main__":
    main()

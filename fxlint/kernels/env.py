"""The facts about the running PyTorch build that choose kernel paths (``Env``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch

__all__ = ["Env"]


@dataclass(frozen=True)
class Env:
    """The facts about the running PyTorch build that choose kernel paths."""

    mkldnn: bool = True  # torch.backends.mkldnn.enabled
    mkldnn_bf16: bool = True  # oneDNN bfloat16 kernels usable on this CPU
    mkldnn_fp16: bool = True  # oneDNN float16 kernels usable on this CPU
    mkl: bool = True
    num_threads: int = 2
    mkldnn_fp32_matmul: bool = False  # float32 matmul routed through oneDNN (bf32/tf32 precision)
    onednn_output_table: bool = True  # the oneDNN output-reorder table was measured on this kind of CPU

    @classmethod
    def current(cls) -> "Env":
        return _current_env(torch.get_num_threads(), bool(torch.backends.mkldnn.enabled))


@lru_cache(maxsize=8)
def _current_env(num_threads: int, mkldnn_enabled: bool) -> Env:
    def probe(fn: Any) -> bool:
        try:
            return bool(fn())
        except Exception:  # noqa: BLE001 - a build without the op simply lacks the feature
            return False

    bf16 = probe(lambda: torch.ops.mkldnn._is_mkldnn_bf16_supported())
    fp16 = probe(lambda: torch.ops.mkldnn._is_mkldnn_fp16_supported())
    try:
        prec = str(torch.backends.mkldnn.matmul.fp32_precision)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - older builds have no such setting
        prec = "none"
    try:
        cap = torch.backends.cpu.get_cpu_capability()
    except Exception:  # noqa: BLE001
        cap = ""
    return Env(
        mkldnn=mkldnn_enabled and torch.backends.mkldnn.is_available(),
        mkldnn_bf16=bf16,
        mkldnn_fp16=fp16,
        mkl=torch.backends.mkl.is_available(),
        num_threads=num_threads,
        mkldnn_fp32_matmul=prec not in ("none", "ieee", ""),
        # measured on x86 AVX512 with bf16/fp16 oneDNN support (AMX); elsewhere the output reorder is unknown
        onednn_output_table=cap == "AVX512" and bf16 and fp16,
    )

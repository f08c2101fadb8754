"""The facts about the running PyTorch build and CPU that choose kernel paths (``Env``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch

__all__ = ["ONEDNN_ISA_VARS", "Env"]

#: environment variables that cap oneDNN's instruction set (oneDNN reads the first it finds at start-up)
ONEDNN_ISA_VARS = ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA")


@dataclass(frozen=True)
class Env:
    """The facts about the running PyTorch build and CPU that choose kernel paths.

    The model reads the flags that decide ATen's choices (``mkldnn``, ``mkldnn_bf16``...); what
    a backend library then does on this CPU (oneDNN's own reorders) the model leaves unknown, and
    ``fxlint.kernels.probe`` measures it. ``cpu_capability`` and ``onednn_isa`` say which CPU code
    runs (part of a probe's cache key)."""

    mkldnn: bool = True  # torch.backends.mkldnn.enabled (and the build has oneDNN)
    mkldnn_bf16: bool = True  # oneDNN bfloat16 kernels usable on this CPU
    mkldnn_fp16: bool = True  # oneDNN float16 kernels usable on this CPU
    mkl: bool = True
    num_threads: int = 2
    mkldnn_fp32_matmul: bool = False  # float32 matmul routed through oneDNN (bf32/tf32 precision)
    cpu_capability: str = ""  # ATen's CPU kernels: torch.backends.cpu.get_cpu_capability() (AVX512, AVX2, DEFAULT)
    onednn_isa: str = ""  # the cap on oneDNN's ISA from ONEDNN_MAX_CPU_ISA/DNNL_MAX_CPU_ISA ("" when not set)
    # the CPU's own features (torch.cpu.get_capabilities(), cpuinfo): what the machine has, whatever the
    # caps above let run; the model reads them where a path was seen to differ between CPU families
    avx512_bf16: bool = False
    avx512_fp16: bool = False
    amx: bool = False  # AMX tiles (amx_tile): Intel Sapphire Rapids and later

    @classmethod
    def current(cls) -> Env:
        return _current_env(torch.get_num_threads(), bool(torch.backends.mkldnn.enabled))

    def describe(self) -> dict[str, Any]:
        """A JSON-friendly view (``fxlint env``)."""
        return {"cpu_capability": self.cpu_capability or "unknown", "onednn_max_cpu_isa": self.onednn_isa or None,
                "mkldnn_enabled": self.mkldnn, "mkldnn_bf16": self.mkldnn_bf16, "mkldnn_fp16": self.mkldnn_fp16,
                "mkl": self.mkl, "mkldnn_fp32_matmul": self.mkldnn_fp32_matmul, "num_threads": self.num_threads,
                "cpu_features": self.cpu_features, "cpu_family": self.cpu_family}

    @property
    def cpu_features(self) -> list[str]:
        """The CPU features the model reads that this CPU has (``fxlint env``, the probe's cache key)."""
        return [f for f in ("avx512_bf16", "avx512_fp16", "amx") if getattr(self, f)]

    def onednn_reduced(self, dtype: torch.dtype) -> bool:
        """ATen sends this bfloat16/float16 conv, matmul or LSTM to oneDNN: oneDNN is on and has kernels for
        the type on this CPU (``mkldnn_bf16_device_check``/``mkldnn_fp16_device_check``)."""
        return self.mkldnn and ((dtype == torch.bfloat16 and self.mkldnn_bf16)
                                or (dtype == torch.float16 and self.mkldnn_fp16))

    @property
    def cpu_family(self) -> str:
        """The CPU family the kernel model's checks are recorded under (docs/kernel-model.md)."""
        if self.amx:
            return "AMX (AVX512-FP16/BF16)"
        if self.avx512_bf16:
            return "AVX512-BF16" + (", FP16" if self.avx512_fp16 else ", no FP16")
        cap = self.cpu_capability.upper()
        return "AVX512 (no BF16)" if cap.startswith("AVX512") else (cap or "unknown")


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
        cap = str(torch.backends.cpu.get_cpu_capability())
    except Exception:  # noqa: BLE001
        cap = ""
    isa = next((os.environ[v] for v in ONEDNN_ISA_VARS if os.environ.get(v)), "")
    try:
        feats = dict(torch.cpu.get_capabilities())
    except Exception:  # noqa: BLE001 - an older build or another architecture: no x86 features known
        feats = {}
    return Env(
        mkldnn=mkldnn_enabled and torch.backends.mkldnn.is_available(),
        mkldnn_bf16=bf16,
        mkldnn_fp16=fp16,
        mkl=torch.backends.mkl.is_available(),
        num_threads=num_threads,
        mkldnn_fp32_matmul=prec not in ("none", "ieee", ""),
        cpu_capability=cap,
        onednn_isa=isa.upper(),
        avx512_bf16=bool(feats.get("avx512_bf16")),
        avx512_fp16=bool(feats.get("avx512_fp16")),
        amx=bool(feats.get("amx_tile")),
    )

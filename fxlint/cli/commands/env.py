"""``fxlint env``: what fxlint knows about this machine - the facts that choose kernel paths and the
probe cache - for users and bug reports."""

from __future__ import annotations

import argparse
import json
import platform
from typing import Any

from ._common import EXIT_CLEAN

ORDER = 85


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "env", help="show the CPU and build facts the kernel model reads, and the probe cache",
        description="Print what decides which kernel path an op takes on this machine (ATen's CPU capability, "
                    "oneDNN and its bfloat16/float16 kernels, the thread count, the torch version) and where "
                    "fxlint caches the copies it measured here (fxlint.kernels.probe). Paste it into bug reports "
                    "about kernel copies.")
    p.add_argument("--format", choices=["text", "json"], default="text", help="output format (default text)")
    p.set_defaults(func=run)


def facts() -> dict[str, Any]:
    import torch

    from ...kernels import Env
    from ...kernels.probe import cache_summary

    env = Env.current()
    return {"fxlint": _version(), "torch": torch.__version__, "python": platform.python_version(),
            "machine": platform.machine(), "cpu": _cpu(), **env.describe(),
            "mkldnn_available": bool(torch.backends.mkldnn.is_available()), "probe_cache": cache_summary()}


def _version() -> str:
    from ..._version import __version__

    return __version__


def _cpu() -> str:
    from ...kernels.probe import machine_key

    return str(machine_key()["cpu"])


def run(args: argparse.Namespace) -> int:
    data = facts()
    if args.format == "json":
        print(json.dumps(data, indent=2))
        return EXIT_CLEAN
    cache = data.pop("probe_cache")
    width = max(len(k) for k in data) + 1
    for key, value in data.items():
        if isinstance(value, list):
            value = ", ".join(map(str, value)) or "none of those the model reads"
        print(f"{key + ':':<{width}} {'-' if value is None else value}")
    where = cache["path"] or "(disabled: FXLINT_CACHE_DIR is empty)"
    state = (f"{cache['entries']} measured op{'s' if cache['entries'] != 1 else ''}, {cache['bytes']} bytes"
             if cache["exists"] else "empty")
    print(f"{'probe cache:':<{width}} {where} ({state})")
    return EXIT_CLEAN

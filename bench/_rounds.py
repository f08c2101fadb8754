"""Timing spellings of one computation against each other in one run (kept private to bench/): each round times
every spelling once with torch.utils.benchmark (blocked_autorange medians), so that load from other processes on a
shared machine hits them alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch.utils.benchmark as benchmark


def interleaved_rounds(spellings: dict[str, Callable[..., Any]], stmt: str, values: dict[str, Any], *, rounds: int,
                       min_run_time: float, threads: int, label: str) -> dict[str, list[float]]:
    """Microseconds per call of ``stmt`` (which calls ``fn``) for each spelling, one figure per round."""
    out: dict[str, list[float]] = {name: [] for name in spellings}
    for _ in range(rounds):
        for name, fn in spellings.items():
            t = benchmark.Timer(stmt=stmt, globals={"fn": fn, **values}, num_threads=threads, label=label,
                                sub_label=name)
            out[name].append(t.blocked_autorange(min_run_time=min_run_time).median * 1e6)
    return out

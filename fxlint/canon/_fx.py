"""Small fx helpers shared by the canon modules."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import torch
import torch.fx as fx

T = TypeVar("T")


def get_submodule(gm: fx.GraphModule, target: str) -> torch.nn.Module | None:
    try:
        return gm.get_submodule(target)
    except AttributeError:
        return None


def get_attr(gm: fx.GraphModule, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def dedupe(xs: Iterable[T]) -> list[T]:
    """``xs`` without repeats (by identity), in order."""
    seen: set[int] = set()
    out = []
    for x in xs:
        if id(x) not in seen:
            seen.add(id(x))
            out.append(x)
    return out


def flatten(x: Any) -> Iterator[Any]:
    """The leaves of nested lists, tuples and dicts."""
    if isinstance(x, (list, tuple)):
        for v in x:
            yield from flatten(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from flatten(v)
    else:
        yield x


def wrap_dim(d: int, rank: int) -> int:
    return d + rank if d < 0 else d

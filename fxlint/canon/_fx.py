"""Small fx helpers shared by the canon modules."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import torch
import torch.fx as fx

T = TypeVar("T")

#: where a node's value lives, in the one order fxlint reads them: ``val`` (kept current by fake-tensor
#: propagation: export, AOTAutograd, Inductor, fxlint's own rewrites), then Dynamo's ``example_value``
VALUE_KEYS = ("val", "example_value")


def value_of(node: fx.Node) -> Any:
    """The node's (fake) value, or None: the one accessor every module reads it through."""
    for key in VALUE_KEYS:
        if key in node.meta:
            return node.meta[key]
    return None


def set_value(node: fx.Node, value: Any) -> None:
    """Store ``value`` under every value key the node has (``val`` when it has none), so that no reader
    sees a stale one."""
    for key in [k for k in VALUE_KEYS if k in node.meta] or ["val"]:
        node.meta[key] = value


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

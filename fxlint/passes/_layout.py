"""Helpers shared by the layout rules (FXL2xx): how to name an operand and its layout in messages,
and how to turn a kernel prediction's copies into hit details."""

from __future__ import annotations

import os
from typing import Any, Iterable, Sequence

from ..canon import CanonNode
from ..kernels import KernelCopy
from ..tensorinfo import Dim, TensorInfo, human_bytes, known
from ._util import operand_name

#: view ops a layout travels through unchanged in meaning (what made the strides)
_VIEW_CHAIN = ("permute", "slice", "expand", "view", "reshape", "detach", "squeeze", "unsqueeze", "narrow",
               "select", "unflatten", "as_strided", "contiguous")


def bytes_text(n: Dim | None) -> str:
    if n is None:
        return "an unknown number of bytes"
    k = known(n)
    return human_bytes(k) if k is not None else f"{n} B"


def total(copies: Iterable[KernelCopy]) -> Dim:
    out: Dim = 0
    for c in copies:
        out = out + c.nbytes
    return out


def copy_sizes(copies: Iterable[KernelCopy]) -> list[int] | None:
    """The size of every runtime copy event the copies stand for (None when a size is symbolic)."""
    sizes: list[int] = []
    for c in copies:
        each = known(c.each)
        if each is None:
            return None
        sizes.extend([each] * c.count)
    return sizes


def shape_text(t: TensorInfo | None) -> str:
    if t is None:
        return "?"
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def strides_text(t: TensorInfo | None) -> str:
    if t is None:
        return "?"
    return "(" + ", ".join(str(s) for s in t.stride) + ("," if len(t.stride) == 1 else "") + ")"


def _perm_text(dims: Sequence[int] | None) -> str:
    if dims is None:
        return ".permute(...)"
    moved = [i for i, d in enumerate(dims) if d != i]
    if len(moved) == 2:
        i, j = moved
        n = len(dims)
        if j == n - 1 and i == n - 2 and n > 2:
            return ".transpose(-2, -1)"
        return f".transpose({i}, {j})"
    return ".permute(" + ", ".join(str(d) for d in dims) + ")"


def _step_text(n: CanonNode) -> str:
    op = n.op
    if op == "permute":
        return _perm_text(n.args.get("dims"))
    if op == "slice":
        spec = n.args.get("index")
        return spec.render() if spec is not None else "[...]"
    if op in ("expand", "view", "reshape"):
        shape = n.args.get("shape")
        return f".{op}(" + ", ".join(str(s) for s in shape) + ")" if shape else f".{op}(...)"
    if op == "contiguous":
        return ".contiguous()"
    return f".{op}(...)"


def origin(node: CanonNode | None, max_steps: int = 4) -> str:
    """How the operand was made, e.g. ``x.permute(0, 2, 1, 3)`` or ``linear.view(2, 16, 4, 8).transpose(1, 2)``."""
    if node is None:
        return "the operand"
    steps: list[str] = []
    cur = node
    while cur.op in _VIEW_CHAIN and cur.input is not None and len(steps) < max_steps:
        steps.append(_step_text(cur))
        cur = cur.input
    if cur.kind in ("input", "parameter", "buffer", "constant"):
        base = operand_name(cur)
    else:
        base = cur.op if cur.op and cur.op.isidentifier() else cur.name
    return base + "".join(reversed(steps))


def made_by_permute(node: CanonNode | None) -> CanonNode | None:
    """The permute node (through other views) that gave ``node`` its layout, if any."""
    cur = node
    while cur is not None and cur.op in _VIEW_CHAIN:
        if cur.op == "permute":
            return cur
        cur = cur.input
    return None


def where(node: CanonNode | None) -> str | None:
    """``file:line`` of the user's line that made ``node``."""
    if node is None or node.location is None:
        return None
    path = node.location.file
    try:
        rel = os.path.relpath(path)
        path = path if rel.startswith("..") else rel
    except ValueError:
        pass
    return f"{path}:{node.location.line}"


def details(copies: Sequence[KernelCopy], backward: Sequence[KernelCopy], **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "copy_sizes": copy_sizes(copies),
        "backward_bytes": known(total(backward)) if backward else 0,
        "reasons": sorted({c.reason for c in copies}),
    }
    out.update(extra)
    return out


def backward_clause(backward: Sequence[KernelCopy]) -> str:
    if not backward:
        return ""
    return f", and again in backward ({bytes_text(total(backward))} more per training step)"

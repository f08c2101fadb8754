"""Small helpers shared by rule modules (kept private to the passes package)."""

from __future__ import annotations

from typing import Sequence

from ..canon import CanonNode


def progression(values: Sequence[int], size: int | None) -> tuple[int, int, int] | None:
    """(start, stop, step) of the basic slice that selects exactly ``values``
    along a dim of ``size``, or None. Negative indices are wrapped; the
    progression must be strictly increasing (PyTorch slices have step > 0)."""
    if not values:
        return None
    vals = list(values)
    if any(v < 0 for v in vals):
        if size is None:
            return None
        vals = [v + size if v < 0 else v for v in vals]
    if size is not None and any(v < 0 or v >= size for v in vals):
        return None  # out of range: the program raises; not our business
    if len(vals) == 1:
        return vals[0], vals[0] + 1, 1
    step = vals[1] - vals[0]
    if step <= 0 or any(b - a != step for a, b in zip(vals, vals[1:])):
        return None
    return vals[0], vals[-1] + 1, step


def slice_text(start: int, stop: int, step: int, size: int | None) -> str:
    s = "" if start == 0 else str(start)
    # the stop can be dropped when the next element of the progression is past the end
    e = "" if size is not None and stop - 1 + step >= size else str(stop)
    text = f"{s}:{e}"
    if step != 1:
        text += f":{step}"
    return text


def operand_name(node: CanonNode | None) -> str:
    """A short name for a node in messages: the user's parameter name or the node name."""
    if node is None:
        return "x"
    if node.param_name:
        return node.param_name
    if node.kind == "input":
        return node.name.removeprefix("l_").removesuffix("_") or node.name
    return node.name

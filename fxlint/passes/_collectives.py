"""What the collective rules (FXL601-603) share: how a ``torch.distributed`` call looks once
Dynamo captured it, and what each collective does with a tensor that is not contiguous.

Dynamo captures ``dist.all_reduce(t)`` as ``r = _c10d_functional.all_reduce(t, ...)``,
``w = wait_tensor(r)``, ``t.copy_(w)`` (canonical ops ``collective`` and ``wait``); an
``out=``-style call (``all_gather_into_tensor(out, t)``) as the collective on ``t`` and
``out.copy_(w)``; ``dist.all_gather(list, t)`` as one ``all_gather_into_tensor`` whose result is
sliced and copied into each tensor of the list. Functional collectives called directly
(``torch.distributed._functional_collectives``) are the same ops without the ``copy_``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..tensor.info import TensorInfo
from ..tensor.viewable import is_contiguous_as

#: the ``dist.*`` call a functional collective stands for, by its canonical kind
DIST_CALL = {
    "all_reduce": "all_reduce",
    "all_gather": "all_gather_into_tensor",
    "reduce_scatter": "reduce_scatter_tensor",
    "all_to_all": "all_to_all_single",
    "broadcast": "broadcast",
}


def collectives(view: GraphView) -> list[CanonNode]:
    return view.ops("collective")


def results(node: CanonNode) -> list[CanonNode]:
    """The values a collective's result reaches as it is: its ``wait_tensor`` (or itself when
    nothing waits on it in this graph)."""
    waits = [u for u in node.users if u.op == "wait"]
    return waits or [node]


@dataclass(frozen=True)
class Write:
    """A collective's result written into a tensor the program holds (``target.copy_(result)``)."""

    node: CanonNode  # the copy_ (or the in-place collective itself)
    target: CanonNode  # the tensor written


def writes(node: CanonNode) -> list[Write]:
    """Where the result of ``node`` is written in place: the ``copy_`` Dynamo adds for ``dist.*``
    calls, or the collective itself for ``all_reduce_``/``broadcast_``."""
    if node.args.get("inplace") and node.input is not None:
        return [Write(node, node.input)]
    out = []
    for r in results(node):
        for u in r.users:
            if u.op == "copy_" and u.mutates and r in u.inputs and u.mutates[0] is not r:
                out.append(Write(u, u.mutates[0]))
    return out


def copy_of(node: CanonNode) -> CanonNode | None:
    """The tensor ``node`` is a fresh copy of (``x.clone()``, ``x.contiguous()`` on a tensor that
    is not contiguous, ``x.float()``/``x.to(...)`` that converts), or None when ``node`` is not
    certainly a copy (it may be ``x`` itself)."""
    src = node.input
    t, s = node.tensor, src.tensor if src is not None else None
    if src is None or t is None or s is None:
        return None
    if node.op == "clone":
        return src
    if node.op == "contiguous":
        ok = is_contiguous_as(s, node.args.get("memory_format"))
        return src if ok is False else None
    if node.op == "to":
        if node.args.get("copy"):
            return src
        if t.dtype != s.dtype or t.device.type != s.device.type:
            return src
        fmt = node.args.get("memory_format")
        if fmt is not None and is_contiguous_as(s, fmt) is False:
            return src
    return None


def read_after(target: CanonNode, after: CanonNode, view: GraphView) -> bool:
    """Is ``target`` (or a view of it) read after ``after``, or returned?"""
    from ..canon.alias import view_family

    family = view_family(target)
    if family & set(view.outputs):
        return True
    for n in family:
        for u in n.users:
            if u.position > after.position and not (u.is_view and u.input is n):
                return True
    return False


def not_contiguous(t: TensorInfo) -> bool:
    """Certainly not contiguous (symbolic strides that may be contiguous are left alone)."""
    return t.is_contiguous() is False


def contiguous_in_its_format(t: TensorInfo) -> bool | None:
    """``t.is_contiguous(t.suggest_memory_format())``: what NCCL's process group checks."""
    if t.is_contiguous():
        return True
    if t.ndim in (4, 5):
        return t.is_channels_last()
    return t.is_contiguous()


def tensors_sent(node: CanonNode) -> Iterator[CanonNode]:
    for i in node.args.get("inputs") or ():
        if isinstance(i, CanonNode) and i.tensor is not None:
            yield i


def tensor_text(node: CanonNode, depth: int = 0) -> str:
    """The tensor as the user wrote it: their variable's name when the graph kept it (``grad``,
    ``xt``), else the calls that made it (``x.t()``, ``x[:, ::2]``, ``x.t().contiguous()``)."""
    from ..canon.text import call_text, operand_name, spelled_name

    base = re.sub(r"_\d+$", "", node.name)
    named = node.kind != "op" or base not in (spelled_name(node), node.op, node.spelling.rsplit(".", 1)[-1])
    if named or node.input is None or depth > 3:
        return operand_name(node)
    inner = tensor_text(node.input, depth + 1)
    if node.op in ("permute", "slice", "expand", "view", "reshape"):
        return f"{inner}{call_text(node)}"
    if node.op in ("contiguous", "clone"):
        return f"{inner}.{node.op}()"
    if node.op == "to":
        style = node.args.get("style") or "to"
        return f"{inner}{'.to(...)' if style in ('to', '_to_copy', 'type', 'type_as') else f'.{style}()'}"
    return operand_name(node)


def world_of(node: CanonNode) -> int | None:
    size = node.args.get("group_size")
    return size if isinstance(size, int) else None


__all__ = [
    "DIST_CALL",
    "Write",
    "collectives",
    "contiguous_in_its_format",
    "copy_of",
    "not_contiguous",
    "read_after",
    "results",
    "tensor_text",
    "tensors_sent",
    "world_of",
    "writes",
]

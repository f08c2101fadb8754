"""Move a basic slice before the elementwise ops that produce its input.

``(x * s + b)[:, ::2]`` computes every element of ``x * s + b`` and keeps half.
When the elementwise ops have no other use, ``x[:, ::2] * s[::2] + b[::2]``
computes only the kept half: the same values (an elementwise op computes each
element from the same-position elements of its broadcast operands) and the
same gradients (the dropped positions received none). This is what Inductor's
fusion does on its own; in eager and under ``aot_eager`` it halves the work.

An operand is sliced along a dim only where it has that dim at full size; a
broadcast (size-1 or missing) dim is left alone. The push stops at an op that
is not elementwise (a matmul, a module call, a graph input), at a value with
other users or returned by the graph, at an op that writes in place, at a
change of autograd mode, and at sizes that are not concrete numbers (comparing
a dynamic size would add a guard to the compile).
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx as fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

from ..canon import CanonNode, GraphView
from ..canon._fx import value_of
from .graph import _is_aten, bypass, copy_provenance, retarget_as_basic_index

_FULL = ("slice", (None, None, None))
_MAX_DEPTH = 16


def _is_full(item: tuple[str, Any]) -> bool:
    start, stop, step = item[1]
    return start in (None, 0) and stop is None and step in (None, 1)


def _known(cond: Any) -> bool:
    """True only when ``cond`` holds for every size (never adds a guard on a dynamic size)."""
    return cond is True or (not isinstance(cond, bool) and statically_known_true(cond))


def push_before_pointwise(gm: fx.GraphModule, view: GraphView, index: fx.Node, base: fx.Node,
                          items: list[tuple[str, Any]]) -> tuple[list[fx.Node], list[CanonNode]]:
    """Push the basic slice ``index`` = ``base[items]`` up through elementwise producers.

    Returns (the nodes added or edited, in graph order; the producers moved past, ``base``
    last, which now gives the result); both empty, and the graph unchanged, when nothing can move."""
    if not items or any(kind != "slice" for kind, _ in items):
        return [], []
    if not all(type(v) in (int, type(None)) for _, bounds in items for v in bounds):
        return [], []
    by_node = {n.node: n for n in view.nodes}
    outputs = {n.node for n in view.outputs}
    idx_cn = by_node.get(index)
    grad_mode = idx_cn.grad_enabled if idx_cn is not None else True
    added: list[fx.Node] = []
    producers: list[fx.Node] = []

    def pushable(node: fx.Node) -> bool:
        cn = by_node.get(node)
        val = value_of(node)
        return (cn is not None and cn.is_pointwise and not cn.mutates
                and node.op in ("call_function", "call_method") and node not in outputs
                and len(node.users) == 1 and cn.grad_enabled == grad_mode
                and isinstance(val, torch.Tensor) and val.dim() >= len(items))

    def plan(producer: fx.Node, out_items: list[tuple[str, Any]]) -> list[tuple[fx.Node, list]] | None:
        """(operand, its slice items) for each operand to slice; None when a size is not known."""
        out = value_of(producer)
        full_items = list(out_items) + [_FULL] * (out.dim() - len(out_items))
        todo = []
        for operand in dict.fromkeys(producer.all_input_nodes):
            val = value_of(operand)
            if not isinstance(val, torch.Tensor) or val.dim() == 0:
                continue
            if val.dim() > out.dim():
                return None
            offset = out.dim() - val.dim()
            op_items = []
            for qd in range(val.dim()):
                item = full_items[qd + offset]
                if _is_full(item) or _known(val.shape[qd] == 1):
                    op_items.append(_FULL)  # not sliced, or broadcast along it
                elif _known(val.shape[qd] == out.shape[qd + offset]):
                    op_items.append(item)
                else:
                    return None  # not known to match without a guard (dynamic sizes)
            while op_items and _is_full(op_items[-1]):
                op_items.pop()
            if op_items:  # else broadcast along every sliced dim: read as it is
                todo.append((operand, op_items))
        return todo

    def push(producer: fx.Node, todo: list[tuple[fx.Node, list]], depth: int) -> None:
        """Make ``producer`` read sliced operands, so that it gives the sliced result itself."""
        for operand, op_items in todo:
            with gm.graph.inserting_before(producer):
                dummy = (gm.graph.call_function(torch.ops.aten.alias.default, (operand,)) if aten
                         else gm.graph.call_function(operator.getitem, (operand, ())))
            copy_provenance(dummy, producer)
            nodes = retarget_as_basic_index(gm, dummy, operand, op_items)
            added.extend(nodes)
            producer.replace_input_with(operand, nodes[-1])
            deeper = plan(operand, op_items) if depth < _MAX_DEPTH and pushable(operand) else None
            if deeper is not None:
                push(operand, deeper, depth + 1)
                bypass(gm, nodes[-1], operand)  # the operand now gives its slice itself
        producers.append(producer)

    aten = _is_aten(index)
    todo = plan(base, items) if pushable(base) else None
    if todo is None:
        return [], []
    push(base, todo, 0)
    bypass(gm, index, base)  # with its ATen slice chain, now dead
    touched = {n for n in added + producers if not getattr(n, "_erased", False)}
    return [n for n in gm.graph.nodes if n in touched], [by_node[p] for p in producers]

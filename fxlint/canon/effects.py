"""Effects of a call on its arguments: which it writes in place, and which its result may alias.

ATen ops say both in their schema (``Tensor(a!) self`` is written, ``Tensor(a) self ->
Tensor(a)`` is aliased by the result); torch-level calls go by their canonical op and the
in-place naming convention (``add_``, setitem, ``out=``). What the builder records on each
node as ``CanonNode.mutates`` and ``CanonNode.aliases``; ``fxlint.canon.alias`` analyses them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.fx as fx

from .ops import COMPUTING_MODULE_OPS, MAYBE_VIEW_OPS, PASSTHROUGH_OPS, VIEW_OPS

if TYPE_CHECKING:  # pragma: no cover
    from .nodes import CanonNode

#: per OpOverload: (written args, args the result aliases), each as (position, name, keyword-only)
_SCHEMA_EFFECTS: dict[Any, tuple[tuple[tuple[int, str, bool], ...], tuple[tuple[int, str, bool], ...]]] = {}

_INPLACE_OPERATORS = ("setitem", "add_", "sub_", "mul_", "div_", "floor_divide_")


def _schema_effects(t: torch._ops.OpOverload) -> tuple[tuple[tuple[int, str, bool], ...], ...]:
    eff = _SCHEMA_EFFECTS.get(t)
    if eff is None:
        schema = t._schema
        out_sets: set[str] = set()
        for r in schema.returns:
            if r.alias_info is not None:
                out_sets |= set(r.alias_info.before_set)
        writes, aliased = [], []
        for i, a in enumerate(schema.arguments):
            if a.alias_info is None:
                continue
            if a.alias_info.is_write:
                writes.append((i, a.name, a.kwarg_only))
            if out_sets & set(a.alias_info.before_set):
                aliased.append((i, a.name, a.kwarg_only))
        eff = _SCHEMA_EFFECTS[t] = (tuple(writes), tuple(aliased))
    return eff


def _pick(node: fx.Node, params: tuple[tuple[int, str, bool], ...]) -> list[Any]:
    out = []
    for i, name, kwarg_only in params:
        if kwarg_only or i >= len(node.args):
            if name in node.kwargs:
                out.append(node.kwargs[name])
        else:
            out.append(node.args[i])
    return out


def mutated_args(node: fx.Node, raw: str) -> list[Any]:
    """fx args written in place by ``node`` (in-place ops, setitem, copy_, out=)."""
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        return _pick(node, _schema_effects(t)[0])
    out: list[Any] = []
    if node.op in ("call_method", "call_function") and node.args:
        if raw in _INPLACE_OPERATORS or (raw.endswith("_") and not raw.startswith("_") and raw != "detach_"):
            out.append(node.args[0])
    if "out" in node.kwargs:
        o = node.kwargs["out"]
        out.extend(o if isinstance(o, (list, tuple)) else [o])
    return out


def aliased_args(node: fx.Node, cn: CanonNode) -> list[Any]:
    """fx args whose memory the output of ``node`` may share (views, in-place results, pass-throughs).

    ATen ops say it in their schema (``Tensor(a) self -> Tensor(a)``), except pass-throughs
    like ``aten.dropout`` (train=False returns its input); torch-level ops go by their
    canonical name. Conservative: a module that is not known to compute may return its input.
    """
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        found = _pick(node, _schema_effects(t)[1])
        if cn.op in PASSTHROUGH_OPS and node.args:  # aten.dropout's schema says fresh; eval returns input
            found.append(node.args[0])
        return found
    if cn.mutates:
        return [m.node for m in cn.mutates]  # an in-place op returns what it wrote
    if cn.op in VIEW_OPS or cn.op in MAYBE_VIEW_OPS or cn.op in PASSTHROUGH_OPS:
        return [node.args[0] if node.args else None]
    if node.op == "call_module" and cn.op not in COMPUTING_MODULE_OPS:
        return list(node.all_input_nodes)
    return []


__all__ = ["aliased_args", "mutated_args"]

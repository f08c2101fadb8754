"""Bind the arguments of an fx call to their parameter names, whatever the spelling.

``x.transpose(0, 1)``, ``torch.transpose(x, dim0=0, dim1=1)`` and
``aten.transpose.int(x, 0, 1)`` all bind to ``{"self": x, "dim0": 0, "dim1": 1}``
(the first parameter is named ``self`` or ``input`` as its schema says; the
normalisers read it as ``Call.input``). Where the names come from:

* an ``OpOverload`` (ATen graphs): its own ``_schema``;
* a Tensor method (``call_method``), a ``torch.*`` builtin or an
  ``OpOverloadPacket``: the ATen schemas of the op of that name, which the
  Python bindings are generated from (their positional order and keyword names
  are the schema's). Overloads whose first argument is not a tensor
  (``aten.slice.t`` on lists) are skipped; the first overload the call fits
  (positional count, keyword names) gives the names. As PyTorch's argument
  parser does, a sole list parameter after ``self`` takes varargs
  (``x.permute(0, 2, 1)`` binds ``dims=(0, 2, 1)``);
* a Python function (``F.softmax``, ``F.batch_norm``) or class
  (``torch.set_grad_enabled``): ``inspect.signature``;
* what has no schema (Python operators, Tensor methods written in Python):
  ``EXPLICIT`` below, the one place such names are written by hand.

Only arguments the call passed are bound (no schema defaults are filled in):
a normaliser says what an absent argument means, which is not always the
schema's default (``clone``'s ``memory_format=None`` means preserve).
``torch.fx.operator_schemas.normalize_function`` does the same binding but
fills defaults, needs argument types to choose between overloads, and has no
signatures for Tensor methods; binding plans here are cached per call shape,
so a 20k-node graph binds in microseconds per node.
"""

from __future__ import annotations

import inspect
import operator
from typing import Any

import torch
import torch.fx as fx

#: positional parameter names of calls that have no schema (or a misleading one), by name
EXPLICIT: dict[str, tuple[str, ...]] = {
    # Python operators (``operator.getitem``, ``a @ b``, ``a += b``...)
    "getitem": ("input", "index"),
    "setitem": ("input", "index", "value"),
    "matmul": ("input", "other"),
    "imatmul": ("input", "other"),
    "__matmul__": ("input", "other"),
    # ``x.T``, ``x.data`` (``getattr(x, "T")`` in symbolic_trace graphs)
    "getattr": ("input", "name"),
    # Tensor methods defined in Python or with Python-only overloads
    "cuda": ("self", "device", "non_blocking"),
    "_set_grad_enabled": ("mode",),
}

_PLANS: dict[tuple, Plan] = {}
_ATEN_SCHEMAS: dict[str, list[Any]] = {}


class Plan:
    """Where each named argument of one call shape is: ``position[name]`` (the positional
    arguments this shape passes), ``pack``: the parameter that takes varargs (-1: none)."""

    __slots__ = ("names", "pack", "position")

    def __init__(self, names: tuple[str, ...], pack: int, nargs: int) -> None:
        self.names, self.pack = names, pack
        self.position = {n: i for i, n in enumerate(names[:nargs] if pack < 0 else names[:pack + 1])}


def plan_for(node: fx.Node) -> Plan:
    """The binding plan of ``node``'s call shape (target, positional count, keyword names), cached."""
    args, kwargs = node.args, node.kwargs
    # node.op tells a method's name (a str target) from a function
    key = (node.op, node.target, len(args), tuple(kwargs) if kwargs else ())
    try:
        plan = _PLANS.get(key)
        if plan is None:
            plan = _PLANS[key] = Plan(*_plan(node), len(args))
    except TypeError:  # an unhashable target: plan without the cache
        plan = Plan(*_plan(node), len(args))
    return plan


def lookup(node: fx.Node, plan: Plan, name: str, default: Any = None) -> Any:
    """The argument ``name`` of ``node`` (keyword or positional), ``default`` when not passed."""
    kwargs = node.kwargs
    if name in kwargs:
        return kwargs[name]
    i = plan.position.get(name)
    if i is None:
        return default
    return tuple(node.args[i:]) if i == plan.pack else node.args[i]


def bind(node: fx.Node) -> dict[str, Any]:
    """The call's arguments by parameter name (only those passed; raw fx values)."""
    plan = plan_for(node)
    out = {name: lookup(node, plan, name) for name in plan.position}
    out.update(node.kwargs)
    return out


def _plan(node: fx.Node) -> tuple[tuple[str, ...], int]:
    """(positional names, index of the varargs-packed parameter or -1) for this call shape."""
    nargs, kwnames = len(node.args), set(node.kwargs)
    for params in _candidates(node):
        plan = _fit(params, nargs, kwnames)
        if plan is not None:
            return plan
    # nothing fits (a call we cannot read): the first candidate's positions, as far as they go
    first = next(iter(_candidates(node)), ())
    return tuple(p.name for p in first if not p.kwarg_only), -1


class _Param:
    __slots__ = ("is_list", "kwarg_only", "name")

    def __init__(self, name: str, kwarg_only: bool = False, is_list: bool = False) -> None:
        self.name, self.kwarg_only, self.is_list = name, kwarg_only, is_list


def _fit(params: list[_Param], nargs: int, kwnames: set[str]) -> tuple[tuple[str, ...], int] | None:
    positional = [p for p in params if not p.kwarg_only]
    names = tuple(p.name for p in positional)
    if not kwnames <= {p.name for p in params}:
        return None
    if nargs <= len(positional):
        return names, -1
    # PyTorch's argument parser: a sole list parameter (after self) also takes varargs
    if len(positional) == 2 and positional[1].is_list:
        return names, 1
    return None


def _candidates(node: fx.Node) -> list[list[_Param]]:
    t = node.target
    if node.op == "call_method":
        name = str(t)
        if name in EXPLICIT:
            return [_explicit(name)]
        return _aten_params(name)
    if node.op != "call_function":
        return []
    if isinstance(t, torch._ops.OpOverload):
        return [_schema_params(t._schema)]
    if isinstance(t, torch._ops.OpOverloadPacket):
        if not str(getattr(t, "_qualified_op_name", "aten::")).startswith("aten::"):
            # another namespace's packet (Dynamo records ``_c10d_functional.all_reduce`` so): its own schemas
            return [_schema_params(getattr(t, o)._schema) for o in t.overloads()]
        return _aten_params(t.__name__)
    name = getattr(t, "__name__", None) or ""
    if t is getattr:
        return [_explicit("getattr")]
    if getattr(t, "__module__", None) in ("_operator", "operator") or t in _OPERATORS:
        return [_explicit(name if name in EXPLICIT else "_operator")]
    if name in EXPLICIT:
        return [_explicit(name)]
    sig = _python_signature(t)
    if sig is not None:
        return [sig]
    return _aten_params(name)


_OPERATORS = {operator.getitem, operator.setitem, operator.matmul, operator.imatmul}


def _explicit(name: str) -> list[_Param]:
    return [_Param(n) for n in EXPLICIT.get(name, ("input", "other"))]


def _schema_params(schema: Any) -> list[_Param]:
    return [_Param(a.name, a.kwarg_only, isinstance(a.type, torch.ListType)) for a in schema.arguments]


def _aten_params(name: str) -> list[list[_Param]]:
    """The overloads of ``aten.<name>`` whose first argument is a tensor, as parameter lists."""
    if name not in _ATEN_SCHEMAS:
        found = []
        packet = getattr(torch.ops.aten, name, None) if name.isidentifier() else None
        if isinstance(packet, torch._ops.OpOverloadPacket):
            for overload in packet.overloads():
                schema = getattr(packet, overload)._schema
                first = schema.arguments[0] if schema.arguments else None
                if first is not None and "Tensor" in str(first.type):
                    found.append(_schema_params(schema))
        _ATEN_SCHEMAS[name] = found
    return _ATEN_SCHEMAS[name]


def _python_signature(fn: object) -> list[_Param] | None:
    if isinstance(fn, type) or inspect.isfunction(fn) or inspect.ismethod(fn):
        try:
            sig = inspect.signature(inspect.unwrap(fn))
        except (TypeError, ValueError):
            return None
        out = []
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            out.append(_Param(p.name, kwarg_only=p.kind is p.KEYWORD_ONLY))
        return out
    return None


__all__ = ["EXPLICIT", "Plan", "bind", "lookup", "plan_for"]

"""The registry of canonical ops: one registration per op family, everything else derived.

A normaliser is a function registered with ``@normaliser``; it receives a
``Call`` (the fx node with its arguments bound by name, see ``binding``) and
returns the canonical ``args`` of the node, or None to leave the node under its
own name. The registration says which canonical ops the family produces, which
spellings (raw target names) it reads, which ``nn.Module`` classes are that op
when called as a module, the traits of the ops (a view of its input, maybe a
view, ...) and the ``args`` line of the canon docstring's op table.

``declare`` gives the traits of ops that keep their own name (``squeeze`` is a
view, ``add`` is elementwise, ``dropout`` may return its input) and of ops the
builder makes itself (``grad_region``).

The op tables every pass reads (``VIEW_OPS``, ``POINTWISE_OPS``...) and the op
table of the docs are derived from here (``fxlint.canon.ops``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.fx as fx

from . import traits
from ._fx import get_submodule
from .binding import Plan, bind, lookup, plan_for

if TYPE_CHECKING:  # pragma: no cover
    from ..tensor.info import TensorInfo
    from .nodes import CanonNode

Args = dict[str, Any]
NormaliseFn = Callable[["Call"], "Args | None"]

TRAITS = ("view", "maybe_view", "pointwise", "passthrough")


@dataclass(frozen=True)
class Normaliser:
    """One registered op family."""

    ops: tuple[str, ...]  # the canonical ops it produces (the first is the default)
    spellings: Mapping[str, str]  # raw target name -> canonical op
    fn: NormaliseFn
    kinds: frozenset[str] | None  # fx node kinds it reads (None: every call kind)
    doc: str  # the ``args`` column of the docs' op table
    label: str  # the ``op`` column of the docs' op table
    modules: tuple[type, ...] = ()  # nn.Module classes read as this family

    @property
    def name(self) -> str:
        return self.fn.__name__


@dataclass
class OpInfo:
    """What is known about one op name, canonical or not."""

    name: str
    traits: set[str] = field(default_factory=set)
    normaliser: Normaliser | None = None  # the family that produces it (canonical ops only)
    doc: str | None = None  # declared canonical ops without a normaliser (made by the builder)
    label: str | None = None


#: every op name the registry knows, in registration order
OPS: dict[str, OpInfo] = {}
#: normalisers in registration order
NORMALISERS: list[Normaliser] = []
#: raw target name -> normalisers that read it (tried in order until one accepts)
_BY_SPELLING: dict[str, list[Normaliser]] = {}
#: nn.Module classes called as ``call_module`` -> the raw name they are read as
MODULE_OPS: list[tuple[type, str]] = []

# live trait sets (rebuilt on each registration); CanonNode reads them on every is_view
VIEW: frozenset[str] = frozenset()
MAYBE_VIEW: frozenset[str] = frozenset()
POINTWISE: frozenset[str] = frozenset()
PASSTHROUGH: frozenset[str] = frozenset()


def _info(name: str) -> OpInfo:
    info = OPS.get(name)
    if info is None:
        info = OPS[name] = OpInfo(name)
    return info


def _rebuild() -> None:
    global VIEW, MAYBE_VIEW, POINTWISE, PASSTHROUGH
    VIEW = frozenset(n for n, i in OPS.items() if "view" in i.traits)
    MAYBE_VIEW = frozenset(n for n, i in OPS.items() if "maybe_view" in i.traits)
    POINTWISE = frozenset(n for n, i in OPS.items() if "pointwise" in i.traits)
    PASSTHROUGH = frozenset(n for n, i in OPS.items() if "passthrough" in i.traits)
    traits.VIEW, traits.MAYBE_VIEW, traits.POINTWISE, traits.PASSTHROUGH = VIEW, MAYBE_VIEW, POINTWISE, PASSTHROUGH


def _traits(view: bool, maybe_view: bool, pointwise: bool, passthrough: bool) -> set[str]:
    flags = {"view": view, "maybe_view": maybe_view, "pointwise": pointwise, "passthrough": passthrough}
    return {t for t, on in flags.items() if on}


def _add_module(cls: type, raw: str) -> None:
    if any(c is cls for c, _ in MODULE_OPS):
        raise ValueError(f"module class {cls.__name__} is registered twice")
    MODULE_OPS.append((cls, raw))


def normaliser(
    *ops: str,
    spellings: Iterable[str] | Mapping[str, str],
    doc: str,
    label: str | None = None,
    modules: Mapping[type, str] | None = None,
    kinds: Iterable[str] | None = None,
    view: bool = False,
    maybe_view: bool = False,
    pointwise: bool = False,
    passthrough: bool = False,
) -> Callable[[NormaliseFn], NormaliseFn]:
    """Register the decorated function as the normaliser of the canonical op family ``ops``.

    ``spellings``: the raw target names it reads (``"transpose"`` for ``x.transpose``,
    ``torch.transpose`` and ``aten.transpose.int`` alike); a mapping gives each its op, a
    plain collection maps every spelling to ``ops[0]``. ``modules``: ``nn.Module`` classes that
    are this family when called as a module, with the raw name they are read as (a name that is
    not a spelling is read only from ``call_module`` nodes). ``kinds``: the fx node kinds it
    reads (``call_function``...), default all. ``view``...: traits of every op in ``ops``.
    ``doc``/``label``: the family's row in the docs' op table (label defaults to the ops).

    The function receives a ``Call`` and returns the node's canonical ``args`` (its op is
    ``call.op``, preset from the spelling; it may set another registered op), or None to leave
    the node under its own name.
    """
    if not ops:
        raise ValueError("a normaliser produces at least one canonical op")
    spelled = dict(spellings) if isinstance(spellings, Mapping) else {s: ops[0] for s in spellings}
    bad = {op for op in spelled.values() if op not in ops} | {op for op in (modules or {}).values()
                                                              if op not in ops and op not in spelled}
    if bad:
        raise ValueError(f"spellings map to ops the family does not declare: {sorted(bad)}")

    def register(fn: NormaliseFn) -> NormaliseFn:
        norm = Normaliser(ops=tuple(ops), spellings=spelled, fn=fn,
                          kinds=frozenset(kinds) if kinds is not None else None,
                          doc=doc, label=label or "/".join(ops), modules=tuple(modules or ()))
        twice = [op for op in ops if is_canonical(op)]
        if twice:
            raise ValueError(f"canonical op {twice[0]!r} is registered twice")
        for op in ops:
            info = _info(op)
            info.normaliser = norm
            info.traits |= _traits(view, maybe_view, pointwise, passthrough)
        for raw in spelled:
            _BY_SPELLING.setdefault(raw, []).append(norm)
        for cls, raw in (modules or {}).items():
            _add_module(cls, raw)
            if raw not in spelled:  # read only as a module (``conv`` is not a function's name)
                _BY_SPELLING.setdefault(raw, []).append(
                    Normaliser(ops=norm.ops, spellings={raw: raw if raw in ops else ops[0]}, fn=fn,
                               kinds=frozenset({"call_module"}), doc=doc, label=norm.label))
        NORMALISERS.append(norm)
        _rebuild()
        return fn

    return register


def declare(
    *names: str,
    doc: str | None = None,
    label: str | None = None,
    modules: Mapping[type, str] | None = None,
    view: bool = False,
    maybe_view: bool = False,
    pointwise: bool = False,
    passthrough: bool = False,
) -> None:
    """Traits of ops no normaliser produces: ops that keep their own name (``squeeze``, ``add``),
    and, with ``doc``, canonical ops the builder makes itself (``grad_region``). ``modules``:
    ``nn.Module`` classes read under that name when called as a module (``nn.Embedding``)."""
    twice = [n for n in names if doc is not None and is_canonical(n)]
    if twice:
        raise ValueError(f"canonical op {twice[0]!r} is registered twice")
    for name in names:
        info = _info(name)
        info.traits |= _traits(view, maybe_view, pointwise, passthrough)
        if doc is not None:
            info.doc, info.label = doc, label or name
    for cls, raw in (modules or {}).items():
        _add_module(cls, raw)
    _rebuild()


def normalisers_for(raw: str) -> list[Normaliser]:
    return _BY_SPELLING.get(raw, [])


def module_op(mod: torch.nn.Module) -> str | None:
    """The raw name a module call is read as (``nn.Linear`` -> ``linear``), None if unregistered."""
    for cls, raw in MODULE_OPS:
        if isinstance(mod, cls):
            return raw
    return None


def is_canonical(op: str) -> bool:
    info = OPS.get(op)
    return info is not None and (info.normaliser is not None or info.doc is not None)


_MISSING = object()


class Call:
    """What a normaliser reads: the fx node, its arguments bound by name, its input and value.

    ``call["dim0"]`` / ``call.get("dim0", default)`` read an argument by its parameter name
    whether it was passed by position or keyword, to a method, a ``torch.*`` function or an
    ATen op; ``call.first("mat2", "other")`` the first passed of several names (ops that name one
    argument differently). ``call.input`` is the canonical node of the first argument (the
    tensor a method is called on, or the first parameter when passed by keyword:
    ``F.scaled_dot_product_attention(query=q, ...)``), ``call.rank`` its rank, ``call.out`` the
    node's own value.
    ``call.conv(x)`` turns fx values into canonical ones (nodes into ``CanonNode``).
    """

    __slots__ = ("_b", "_plan", "cn", "conv", "input", "map", "node", "op", "raw")

    def __init__(self, node: fx.Node, raw: str, op: str, cn: CanonNode, builder: Any) -> None:
        self.node = node
        self.raw = raw  # the spelling's name: "transpose", "swapaxes", "mT"
        self.op = op  # the canonical op the node becomes (preset from the spelling)
        self.cn = cn
        self._b = builder
        self.map: dict[fx.Node, CanonNode] = builder.map  # fx node -> its canonical node, so far
        #: fx values -> canonical ones (nodes become ``CanonNode``s, containers are converted inside)
        self.conv: Callable[[Any], Any] = builder.conv
        self._plan: Plan | None = None
        first = node.args[0] if node.args else None
        if not node.args and node.kwargs:  # the first argument passed by keyword: `F.sdpa(query=q, key=k, ...)`
            plan = self._plan = plan_for(node)
            first = node.kwargs.get(plan.names[0]) if plan.names else None
        self.input: CanonNode | None = self.map.get(first) if isinstance(first, fx.Node) else None

    @property
    def bound(self) -> dict[str, Any]:
        """Every argument the call passed, by name."""
        return bind(self.node)

    def get(self, name: str, default: Any = None) -> Any:
        plan = self._plan
        if plan is None:
            plan = self._plan = plan_for(self.node)
        return lookup(self.node, plan, name, default)

    def __getitem__(self, name: str) -> Any:
        value = self.get(name, _MISSING)
        if value is _MISSING:
            raise KeyError(name)
        return value

    def __contains__(self, name: str) -> bool:
        return self.get(name, _MISSING) is not _MISSING

    def first(self, *names: str, default: Any = None) -> Any:
        for n in names:
            value = self.get(n, _MISSING)
            if value is not _MISSING:
                return value
        return default

    @property
    def args(self) -> tuple[Any, ...]:
        """The raw positional arguments (for ops whose arguments are a list: factories, sizes)."""
        return tuple(self.node.args)

    @property
    def kwargs(self) -> Mapping[str, Any]:
        return self.node.kwargs

    @property
    def rank(self) -> int | None:
        t = self.input.tensor if self.input is not None else None
        return t.ndim if t is not None else None

    @property
    def out(self) -> TensorInfo | None:
        return self.cn.tensor

    @property
    def is_module(self) -> bool:
        return self.node.op == "call_module"

    @property
    def module(self) -> torch.nn.Module | None:
        return get_submodule(self._b.gm, str(self.node.target)) if self.is_module else None

    def node_of(self, x: Any) -> CanonNode | None:
        """The canonical node of an fx argument (None for constants)."""
        return self.map.get(x) if isinstance(x, fx.Node) else None


def normalise(cn: CanonNode, raw: str, node: fx.Node, builder: Any) -> None:
    """Give ``cn`` its canonical op and args: the first registered normaliser of ``raw`` that
    accepts the node, else its own name with ``{"input", "args", "kwargs"}``."""
    for norm in _BY_SPELLING.get(raw, ()):
        if norm.kinds is not None and node.op not in norm.kinds:
            continue
        call = Call(node, raw, norm.spellings[raw], cn, builder)
        args = norm.fn(call)
        if args is not None:
            if call.op not in norm.ops and not is_canonical(call.op):
                raise ValueError(f"normaliser {norm.name} made an unregistered op {call.op!r}")
            cn.op, cn.args = call.op, args
            return
    first = node.args[0] if node.args else None
    cn.op = raw
    cn.args = {"input": builder.map.get(first) if isinstance(first, fx.Node) else None,
               "args": builder.conv(list(node.args)), "kwargs": builder.conv(dict(node.kwargs))}


__all__ = [
    "MODULE_OPS",
    "NORMALISERS",
    "OPS",
    "TRAITS",
    "Call",
    "Normaliser",
    "OpInfo",
    "declare",
    "is_canonical",
    "module_op",
    "normalise",
    "normaliser",
]

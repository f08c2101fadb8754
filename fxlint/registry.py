"""The rule registry: one decorator, one place that knows every rule.

A rule is a function ``check(view, ctx) -> Iterable[Hit]`` in its own module
under ``fxlint/passes``; its docstring is its user documentation
(``fxlint explain CODE``). A rule registered with ``scope="program"`` is called
once per capture as ``check(program, ctx)`` instead, with every graph, the
graph breaks between them and the runtime facts (``fxlint.program.Program``). The engine turns hits into ``Finding``s: it adds the
code, name, severity, the user's source location and module path.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from .errors import ConfigError
from .findings import Severity

if TYPE_CHECKING:  # pragma: no cover
    from .canon import CanonNode, GraphView
    from .program import Program
    from .source import Location

CODE_RE = re.compile(r"^FXL\d{3}$")

#: Rule families whose findings claim a copy, and so can be confirmed by the runtime audit.
COPY_FAMILIES = ("FXL1", "FXL2", "FXL4")


@dataclass
class Hit:
    """What a rule yields: a node and what to say about it."""

    node: "CanonNode | None"
    message: str
    fix: str | None = None
    bytes: Any = None  # int, a sympy expression (dynamic shapes) or None
    severity: Severity | None = None  # overrides the rule's default
    details: dict[str, Any] = field(default_factory=dict)
    location: "Location | None" = None  # overrides the node's location (e.g. graph breaks)
    # other source lines whose `# fxlint: ignore[...]` also silences this hit (e.g. the
    # `with torch.no_grad():` line of a region reported at the first line inside it)
    anchors: tuple["Location", ...] = ()


@dataclass(frozen=True)
class RuleContext:
    """What a rule may know besides the graph."""

    # False for inference: the module is in eval() mode, or autograd is off (lint under
    # torch.no_grad(); in the backend, a graph compiled with grad disabled). Gradient
    # rules are quiet then.
    training: bool = True
    options: dict[str, Any] = field(default_factory=dict)


CheckFn = Callable[[Any, RuleContext], Iterable[Hit]]  # (GraphView | Program, ctx)

#: where a rule looks: one graph at a time, or the whole capture at once
SCOPES = ("graph", "program")


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    check: CheckFn
    summary: str
    doc: str
    scope: str = "graph"  # "graph": check(view, ctx) per graph; "program": check(program, ctx) once

    @property
    def claims_copy(self) -> bool:
        return self.code.startswith(COPY_FAMILIES)


_RULES: dict[str, Rule] = {}


def rule(
    code: str, name: str, severity: "Severity | str" = Severity.WARNING, *, scope: str = "graph"
) -> Callable[[CheckFn], CheckFn]:
    """Register ``check`` as rule ``code``. Its module docstring (or the function's)
    is the rule's documentation; the first line is the summary. ``scope`` is
    ``"graph"`` (``check(view, ctx)`` for every captured graph) or ``"program"``
    (``check(program, ctx)`` once per capture)."""

    if not CODE_RE.match(code):
        raise ValueError(f"rule code {code!r} must look like FXL123")
    if scope not in SCOPES:
        raise ValueError(f"rule {code}: scope must be one of {SCOPES}, not {scope!r}")

    def deco(fn: CheckFn) -> CheckFn:
        if code in _RULES and _RULES[code].check is not fn:
            raise ValueError(f"rule {code} is registered twice")
        module = inspect.getmodule(fn)
        doc = inspect.cleandoc((module.__doc__ if module else None) or fn.__doc__ or "")
        summary = doc.splitlines()[0].strip() if doc else name
        _RULES[code] = Rule(code, name, Severity.parse(severity), fn, summary, doc, scope)
        return fn

    return deco


def _load() -> None:
    from . import passes  # noqa: F401  (importing registers every rule)


def all_rules() -> list[Rule]:
    _load()
    return [_RULES[c] for c in sorted(_RULES)]


def get_rule(code: str) -> Rule:
    _load()
    key = code.strip().upper()
    if key in _RULES:
        return _RULES[key]
    for r in _RULES.values():  # accept the rule's name too: "index-as-slice"
        if r.name == code.strip().lower():
            return r
    raise ConfigError(f"unknown rule {code!r}; `fxlint rules` lists them")


def _normalise_codes(codes: "str | Sequence[str] | None", what: str) -> list[str] | None:
    if codes is None:
        return None
    _load()  # every rule registered before codes are judged
    if isinstance(codes, str):
        codes = [codes]
    out: list[str] = []
    for c in codes:
        for part in str(c).split(","):
            part = part.strip().upper()
            if not part:
                continue
            if part != "ALL" and not any(code.startswith(part) for code in _RULES):
                raise ConfigError(
                    f"{what}: {part!r} matches no rule code or prefix (e.g. FXL401 or FXL4); "
                    "`fxlint rules` lists them"
                )
            out.append(part)
    return out


def select_rules(
    select: "str | Sequence[str] | None" = None,
    ignore: "str | Sequence[str] | None" = None,
) -> list[Rule]:
    """Rules enabled by ``select`` (codes or prefixes, default all) minus ``ignore``.

    As in ruff, the more specific entry wins: ``select=["FXL401"], ignore=["FXL4"]``
    keeps FXL401.
    """
    _load()
    sel = _normalise_codes(select, "select")
    ign = _normalise_codes(ignore, "ignore") or []

    def specificity(code: str, prefixes: list[str]) -> int:
        best = -1
        for p in prefixes:
            if p == "ALL":
                best = max(best, 0)
            elif code.startswith(p):
                best = max(best, len(p))
        return best

    chosen = []
    for r in all_rules():
        s = specificity(r.code, sel) if sel is not None else 0
        i = specificity(r.code, ign)
        if s >= 0 and s > i:
            chosen.append(r)
    return chosen

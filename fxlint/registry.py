"""The rule registry: one registration per rule, everything else derived from it.

A rule is a function ``check(view, ctx) -> Iterable[Hit]`` in its own module
under ``fxlint/passes``, registered with ``@rule(code, name, severity,
violation=..., fix=...)``:

* its module docstring is the user documentation (``fxlint explain CODE``,
  the generated rule page);
* ``violation`` is the rule's violation type (a frozen dataclass with
  ``message()`` and ``fix_title()``, see ``fxlint.findings.Violation``): every
  hit carries one, and the JSON schema of its ``details`` is derived from it;
* ``fix`` declares what fixes the findings (``FixSpec``): nothing, or the
  rewrite registered for this code (``fxlint/rewrite/fxlNNN_*.py``), safe or
  unsafe, and why. ``fxlint rules``, the rule pages ("Fix safety") and the
  rewrite engine read it from here.

A rule registered with ``scope="program"`` is called once per capture as
``check(program, ctx)`` with every graph, the graph breaks between them and the
runtime facts (``fxlint.capture.program.Program``). A rule registered with
``scope="compiled"`` is called once per graph Inductor compiled, after the
compile, as ``check(compiled, ctx)`` with what Inductor's lowering made of that
graph (``fxlint.compiled.program.CompiledGraph``): the copies of the compiled
program that no eager finding explains; such a rule's hits carry
``compiled_bytes`` (what the compiled program copies; eager makes no copy there). The engine turns hits into
``Finding``s: it adds the code, name, severity, the user's source location and
module path.

Rules and rewrites live in a ``Registry``. ``default_registry()`` holds the
ones fxlint ships (importing ``fxlint.passes`` and the rewrite modules
registers them); every entry point takes ``registry=`` to run another set (a
test that injects a failing rule, a plugin that adds its own).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, closest
from .findings import Severity, Violation

if TYPE_CHECKING:  # pragma: no cover
    from .canon import CanonNode
    from .tensor.info import Dim
    from .util.source import Location

CODE_RE = re.compile(r"^FXL\d{3}$")


@dataclass(frozen=True)
class Rewrite:
    """A registered rewrite (``fxlint.rewrite.register``): ``apply(site) -> Change`` fixes findings of
    rule ``code`` (``fxlint.rewrite.base`` has the site and change types)."""

    code: str  # the rule whose findings it fixes
    name: str
    apply: Callable[[Any], Any]
    doc: str  # the module docstring: what it does, its preconditions, what changes
    #: which of the rule's findings it addresses (None: all): a finding it does not is advice only, not a
    #: site (never listed as "not applied"); for a rewrite that fixes one shape of a broad rule's findings
    sites: Callable[[Any], bool] | None = None

    @property
    def preconditions(self) -> tuple[str, ...]:
        """The bullets of the docstring's ``## Preconditions`` section (what it proves first)."""
        return tuple(_section_bullets(self.doc, "## Preconditions"))


def _section_bullets(doc: str, heading: str) -> list[str]:
    out: list[str] = []
    inside = False
    for line in doc.splitlines():
        if line.startswith("## "):
            inside = line.startswith(heading)
            continue
        if not inside:
            continue
        if line.startswith("- "):
            out.append(line[2:].strip())
        elif line.startswith("  ") and out:
            out[-1] += " " + line.strip()
    return out

#: Rule families whose findings claim a copy, and so can be confirmed by the runtime audit.
COPY_FAMILIES = ("FXL1", "FXL2", "FXL4")


class Hit:
    """What a rule yields: a node, the rule's typed violation, and the cost of the site.

    ``bytes`` is an int or, under dynamic shapes, a sympy expression; ``copy_sizes`` the
    bytes of each copy event when the site stands for several; ``backward_bytes`` what the
    backward pays again (0 nothing, None not modelled); ``tensor_shape`` the tensor a "no copy"
    claim is about; ``dedup`` tells two findings of one rule on one line apart (two different
    copies written on one line); ``anchors`` are other source lines whose
    ``# fxlint: ignore[...]`` also silences the hit (the ``with torch.no_grad():`` line of a
    region reported at the first line inside it). ``compiled_bytes`` is set by a ``scope="compiled"``
    rule: the bytes the compiled program copies per call at the site (the finding then ``survives``
    under Inductor; eager makes no copy there, and ``bytes`` stays None); ``compiled_phase``
    ``"backward"`` when the copy is the compiled backward's (its bytes are then per training step).
    ``backward_sites``: the source lines, other than the hit's own, whose nodes' backward makes the
    copies ``backward_bytes`` counts (autograd files a gradient's copy at the op that reshapes it back:
    a `.contiguous()` pays again in the backward of a `linear` in another module).
    """

    __slots__ = (
        "anchors",
        "backward_bytes",
        "backward_sites",
        "bytes",
        "compiled_bytes",
        "compiled_phase",
        "copy_sizes",
        "dedup",
        "graph",
        "location",
        "node",
        "severity",
        "tensor_shape",
        "violation",
    )

    def __init__(
        self,
        node: CanonNode | None,
        violation: Violation,
        *,
        bytes: Dim | None = None,  # noqa: A002 - the user's word for it
        copy_sizes: Sequence[int] | None = None,
        backward_bytes: Dim | None = None,
        tensor_shape: tuple[int, ...] | None = None,
        severity: Severity | None = None,
        location: Location | None = None,
        anchors: tuple[Location, ...] = (),
        dedup: str = "",
        graph: str | None = None,
        compiled_bytes: int | None = None,
        compiled_phase: str = "forward",
        backward_sites: tuple[Location, ...] = (),
    ) -> None:
        if not isinstance(violation, Violation):
            raise TypeError(f"a Hit needs the rule's Violation instance, not {type(violation).__name__}")
        self.node = node
        self.violation = violation
        self.bytes = bytes
        self.copy_sizes = copy_sizes
        self.backward_bytes = backward_bytes
        self.tensor_shape = tensor_shape
        self.severity = severity
        self.location = location
        self.anchors = tuple(anchors)
        self.dedup = dedup
        self.graph = graph
        self.compiled_bytes = compiled_bytes
        self.compiled_phase = compiled_phase
        self.backward_sites = tuple(backward_sites)

    def __repr__(self) -> str:
        return f"Hit({self.node!r}, {type(self.violation).__name__})"

    @property
    def message(self) -> str:
        return self.violation.message()

    @property
    def fix(self) -> str | None:
        return self.violation.fix_title()


@dataclass(frozen=True)
class RuleContext:
    """What a rule may know besides the graph."""

    # False for inference: the module is in eval() mode, or autograd is off (lint under
    # torch.no_grad(); in the backend, a graph compiled with grad disabled). Gradient
    # rules are quiet then.
    training: bool = True
    options: Mapping[str, Any] = field(default_factory=dict)
    # the target device of the analysis ("cuda:0"), when the lint simulated one (fxlint.analysis.device):
    # the graphs' values then live where the GPU run would put them; None: the inputs' own device
    device: str | None = None


CheckFn = Callable[[Any, RuleContext], Iterable[Hit]]  # (GraphView | Program, ctx)

#: where a rule looks: one graph at a time, or the whole capture at once
SCOPES = ("graph", "program", "compiled")

FIX_AVAILABILITY = ("none", "sometimes", "always")
FIX_APPLICABILITY = ("safe", "unsafe")


@dataclass(frozen=True)
class FixSpec:
    """What fixes a rule's findings (ruff's fix availability and applicability).

    ``availability``: ``none`` (advice only), ``sometimes`` (a rewrite exists and is applied
    where it can prove its preconditions) or ``always``. ``rewrite`` is the name of the rewrite
    registered for the rule's code. ``applicability``: ``safe`` when the rewritten program is
    indistinguishable from the original, ``unsafe`` when values are equal but something a
    caller could observe changes (a result that becomes a view, a different memory layout).
    ``why`` says which, in the user's terms (the "Fix safety" section of the rule's page).
    """

    availability: str = "none"
    rewrite: str | None = None
    applicability: str | None = None
    why: str = ""

    def __post_init__(self) -> None:
        if self.availability not in FIX_AVAILABILITY:
            raise ValueError(f"fix availability must be one of {FIX_AVAILABILITY}, not {self.availability!r}")
        if (self.rewrite is None) != (self.availability == "none"):
            raise ValueError("a fix names its rewrite exactly when it is available")
        if self.rewrite is not None and self.applicability not in FIX_APPLICABILITY:
            raise ValueError(f"a rewrite's applicability must be one of {FIX_APPLICABILITY}")

    @classmethod
    def rewrite_of(cls, name: str, *, safe: bool, why: str, availability: str = "sometimes") -> FixSpec:
        return cls(availability, name, "safe" if safe else "unsafe", why)

    @property
    def summary(self) -> str:
        """One line for tables: ``rewrite index-to-slice (unsafe)`` or ``-``."""
        if self.rewrite is None:
            return "-"
        return f"{self.rewrite} ({self.applicability})"


NO_FIX = FixSpec()


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: Severity
    check: CheckFn
    summary: str
    doc: str
    scope: str = "graph"  # "graph": check(view, ctx) per graph; "program": check(program, ctx) once;
    # "compiled": check(compiled_graph, ctx) per graph Inductor compiled (fxlint.compiled.program)
    violation: type[Violation] | None = None
    fix: FixSpec = NO_FIX
    # the codes whose hit on the same copy this rule's hit replaces (one owner per copy: the rule with
    # the better fix); decided over every rule, selected or not (``fxlint.analysis.engine.evaluate``)
    supersedes: tuple[str, ...] = ()

    @property
    def claims_copy(self) -> bool:
        return self.code.startswith(COPY_FAMILIES)


class Registry:
    """Rules by code and the rewrites that fix them."""

    def __init__(self, rules: Iterable[Rule] = (), rewrites: Iterable[Rewrite] = ()) -> None:
        self._rules: dict[str, Rule] = {r.code: r for r in rules}
        self._rewrites: dict[str, Rewrite] = {rw.code: rw for rw in rewrites}

    def __repr__(self) -> str:
        return f"Registry({len(self._rules)} rules, {len(self._rewrites)} rewrites)"

    # -- building ------------------------------------------------------------
    def add(self, rule: Rule) -> None:
        if rule.code in self._rules and self._rules[rule.code].check is not rule.check:
            raise ValueError(f"rule {rule.code} is registered twice")
        self._rules[rule.code] = rule

    def add_rewrite(self, rw: Rewrite) -> None:
        if rw.code in self._rewrites and self._rewrites[rw.code].apply is not rw.apply:
            raise ValueError(f"a rewrite for {rw.code} is registered twice")
        self._rewrites[rw.code] = rw

    def replacing(self, *items: Rule | Rewrite) -> Registry:
        """A copy with these rules or rewrites added (or put in place of the same code)."""
        out = Registry(self._rules.values(), self._rewrites.values())
        for it in items:
            if isinstance(it, Rewrite):
                out._rewrites[it.code] = it
            else:
                out._rules[it.code] = it
        return out

    @contextlib.contextmanager
    def added(self, *rules: Rule) -> Iterator[Registry]:
        """Register ``rules`` here for the duration of a ``with`` block (a plugin's rules for one
        run, a test's throwaway rule); the codes must be new."""
        for r in rules:
            if r.code in self._rules:
                raise ValueError(f"rule {r.code} is already registered")
        for r in rules:
            self._rules[r.code] = r
        try:
            yield self
        finally:
            for r in rules:
                self._rules.pop(r.code, None)

    def without(self, *codes: str) -> Registry:
        """A copy without these rules (and their rewrites)."""
        keep = [r for c, r in self._rules.items() if c not in codes]
        return Registry(keep, [rw for c, rw in self._rewrites.items() if c not in codes])

    # -- reading -------------------------------------------------------------
    def rules(self) -> list[Rule]:
        return [self._rules[c] for c in sorted(self._rules)]

    def codes(self) -> list[str]:
        return sorted(self._rules)

    def get(self, code: str) -> Rule:
        key = code.strip().upper()
        if key in self._rules:
            return self._rules[key]
        for r in self._rules.values():  # accept the rule's name too: "index-as-slice"
            if r.name == code.strip().lower():
                return r
        raise ConfigError(f"unknown rule {code!r}; `fxlint rules` lists them")

    def rewrites(self) -> dict[str, Rewrite]:
        """Every rewrite whose rule is registered and declares it, by rule code."""
        return {c: rw for c, rw in sorted(self._rewrites.items())
                if c in self._rules and self._rules[c].fix.rewrite == rw.name}

    def rewrite_for(self, rule: Rule | str) -> Rewrite | None:
        """The rewrite that fixes ``rule``'s findings: the one its ``fix`` names."""
        r = self.get(rule) if isinstance(rule, str) else rule
        rw = self._rewrites.get(r.code)
        return rw if rw is not None and r.fix.rewrite == rw.name else None

    def normalise_codes(self, codes: str | Sequence[str] | None, what: str) -> list[str] | None:
        """Codes or prefixes as given (a string or a list, comma-separated allowed), upper-cased;
        ``ConfigError`` names a code that matches no rule."""
        if codes is None:
            return None
        if isinstance(codes, str):
            codes = [codes]
        out: list[str] = []
        for c in codes:
            for part in str(c).split(","):
                part = part.strip().upper()
                if not part:
                    continue
                if part != "ALL" and not any(code.startswith(part) for code in self._rules):
                    names = {r.name.upper(): code for code, r in self._rules.items()}  # a rule's name for its code
                    close = closest(part, [*self._rules, *names])
                    hint = f"did you mean {names.get(close, close)}? " if close else ""
                    raise ConfigError(
                        f"{what}: {part!r} matches no rule code or prefix (e.g. FXL401 or FXL4); "
                        f"{hint}`fxlint rules` lists them"
                    )
                out.append(part)
        return out

    def owners(self, rules: Iterable[Rule]) -> list[Rule]:
        """The rules not in ``rules`` whose hits can supersede (``Rule.supersedes``) the hit of one that
        is, transitively: the engine runs them too, for ownership only, so that which rule owns a copy
        never depends on the selection."""
        chosen = {r.code for r in rules}
        wanted = set(chosen)
        extra: dict[str, Rule] = {}
        while True:
            more = [r for r in self.rules() if r.code not in chosen and r.code not in extra
                    and wanted & set(r.supersedes)]
            if not more:
                return list(extra.values())
            for r in more:
                extra[r.code] = r
                wanted.add(r.code)

    def select(self, select: str | Sequence[str] | None = None,
               ignore: str | Sequence[str] | None = None) -> list[Rule]:
        """Rules enabled by ``select`` (codes or prefixes, default all) minus ``ignore``.

        As in ruff, the more specific entry wins: ``select=["FXL401"], ignore=["FXL4"]``
        keeps FXL401.
        """
        sel = self.normalise_codes(select, "select")
        ign = self.normalise_codes(ignore, "ignore") or []

        def specificity(code: str, prefixes: list[str]) -> int:
            best = -1
            for p in prefixes:
                if p == "ALL":
                    best = max(best, 0)
                elif code.startswith(p):
                    best = max(best, len(p))
            return best

        chosen = []
        for r in self.rules():
            s = specificity(r.code, sel) if sel is not None else 0
            i = specificity(r.code, ign)
            if s >= 0 and s > i:
                chosen.append(r)
        return chosen


#: the rules and rewrites fxlint ships; filled by the decorators as their modules are imported
_DEFAULT = Registry()
_loaded = False


def default_registry() -> Registry:
    """The registry of every rule and rewrite fxlint ships (their modules are imported once)."""
    global _loaded
    if not _loaded:
        _loaded = True
        # the modules that register fxlint's own rules and rewrites sit above this registry, as a plugin's
        # do: they are found by name (a package of rule modules, and the rewrite modules fxlNNN_*.py)
        importlib.import_module("fxlint.passes")
        rewrites = importlib.import_module("fxlint.rewrite")
        for info in sorted(pkgutil.iter_modules(rewrites.__path__), key=lambda m: m.name):
            if info.name.startswith("fxl"):
                importlib.import_module(f"fxlint.rewrite.{info.name}")
    return _DEFAULT


def rule(
    code: str, name: str, severity: Severity | str = Severity.WARNING, *, scope: str = "graph",
    violation: type[Violation] | None = None, fix: FixSpec = NO_FIX, supersedes: Sequence[str] = (),
) -> Callable[[CheckFn], CheckFn]:
    """Register ``check`` as rule ``code`` in the default registry. Its module docstring (or the
    function's) is the rule's documentation; the first line is the summary. ``scope`` is
    ``"graph"`` (``check(view, ctx)`` for every captured graph) or ``"program"``
    (``check(program, ctx)`` once per capture). ``violation`` is the type every hit carries;
    ``fix`` what fixes the findings (see ``FixSpec``). ``supersedes``: the codes whose hit on the
    same node this rule's hit replaces (a rule never asks another whether it reports a copy: the
    engine decides the one owner, whatever the selection)."""
    _check_rule_args(code, scope, violation, supersedes)
    return lambda fn: register_rule(_DEFAULT, fn, code, name, severity, scope=scope, violation=violation, fix=fix,
                                    supersedes=tuple(supersedes))


def _check_rule_args(code: str, scope: str, violation: Any, supersedes: Sequence[str] = ()) -> None:
    if not CODE_RE.match(code):
        raise ValueError(f"rule code {code!r} must look like FXL123")
    if isinstance(supersedes, str) or any(not CODE_RE.match(c) or c == code for c in supersedes):
        raise ValueError(f"rule {code}: supersedes must be a list of other rule codes, not {supersedes!r}")
    if scope not in SCOPES:
        raise ValueError(f"rule {code}: scope must be one of {SCOPES}, not {scope!r}")
    if violation is not None and not (isinstance(violation, type) and issubclass(violation, Violation)):
        raise ValueError(f"rule {code}: violation must be a Violation subclass")


def make_rule(fn: CheckFn, code: str, name: str, severity: Severity | str = Severity.WARNING, *,
              scope: str = "graph", violation: type[Violation] | None = None, fix: FixSpec = NO_FIX,
              supersedes: Sequence[str] = ()) -> Rule:
    """A ``Rule`` for ``fn`` (not registered anywhere): what ``@rule`` builds."""
    _check_rule_args(code, scope, violation, supersedes)
    module = inspect.getmodule(fn)
    doc = inspect.cleandoc((module.__doc__ if module else None) or fn.__doc__ or "")
    summary = doc.splitlines()[0].strip() if doc else name
    return Rule(code, name, Severity.parse(severity), fn, summary, doc, scope, violation, fix, tuple(supersedes))


def register_rule(registry: Registry, fn: CheckFn, code: str, name: str, severity: Severity | str = Severity.WARNING,
                  **kw: Any) -> CheckFn:
    registry.add(make_rule(fn, code, name, severity, **kw))
    return fn


# -- the default registry, as functions (what most callers want) ----------------


def all_rules(registry: Registry | None = None) -> list[Rule]:
    return (registry or default_registry()).rules()


def get_rule(code: str, registry: Registry | None = None) -> Rule:
    return (registry or default_registry()).get(code)


def normalise_codes(codes: str | Sequence[str] | None, what: str,
                    registry: Registry | None = None) -> list[str] | None:
    return (registry or default_registry()).normalise_codes(codes, what)


def select_rules(
    select: str | Sequence[str] | None = None,
    ignore: str | Sequence[str] | None = None,
    registry: Registry | None = None,
) -> list[Rule]:
    return (registry or default_registry()).select(select, ignore)


def with_check(rule: Rule, check: CheckFn) -> Rule:
    """``rule`` with another check function (what fault-injection tests register)."""
    return replace(rule, check=check)

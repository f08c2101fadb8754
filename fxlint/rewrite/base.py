"""The rewrite registry and the results a rewrite run returns.

A rewrite is a function ``apply(site) -> Change`` in its own module
``fxlint/rewrite/fxlNNN_name.py``, registered with ``@register(code, name,
preconditions=...)`` for the rule whose findings it fixes. It receives the
finding (its node and ``details``) and the graph, *re-checks its own
preconditions on the canonical view* (a finding is a hint, not a proof), edits
``site.gm.graph`` (a private copy) and returns a ``Change``; when it cannot
prove a precondition it raises ``NotApplied(reason)``. The engine
(``fxlint.rewrite.engine``) handles copies, graph lint, recompilation,
verification and rollback.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

import torch.fx as fx

if TYPE_CHECKING:  # pragma: no cover
    from ..canon import CanonNode, GraphView
    from ..findings import Finding


class NotApplied(Exception):
    """A rewrite could not prove it is safe (or its pattern is gone): the reason, in the user's terms."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Site:
    """What a rewrite gets: the graph (its private copy), the canonical view of it, the finding's node."""

    gm: fx.GraphModule
    view: "GraphView"
    node: "CanonNode"
    finding: "Finding"
    #: False inside ``torch.compile``: an edit that needs a fact about a dynamic size would
    #: add a guard to the user's compile, so the rewrite must not depend on one
    symbolic_ok: bool = True
    #: True when the graph goes to a compiler that fuses producers into their consumers (Inductor):
    #: a copy such a compiler would fuse away may cost less than the view that replaces it
    fusing: bool = False

    @property
    def details(self) -> dict[str, Any]:
        return self.finding.details


@dataclass
class Change:
    """What a rewrite did to the graph."""

    new_nodes: list[fx.Node]  # the nodes that now compute the result (for the before/after code)
    description: str  # e.g. "output[:, [0, 2, ..., 62]] -> output[:, ::2]"
    bytes_saved: int | None = None  # bytes per call the rewrite no longer copies
    source_edit: tuple[str, str] | None = None  # (line before, line after) in the user's source
    also_changed: list[str] = field(default_factory=list)  # other existing nodes it edited (shown before/after)


ApplyFn = Callable[[Site], Change]


@dataclass(frozen=True)
class Rewrite:
    code: str  # the rule whose findings it fixes
    name: str
    apply: ApplyFn
    preconditions: tuple[str, ...]
    doc: str


_REWRITES: dict[str, Rewrite] = {}


def register(code: str, name: str, *, preconditions: Sequence[str]) -> Callable[[ApplyFn], ApplyFn]:
    """Register ``apply`` as the rewrite for rule ``code``. ``preconditions`` lists, in the
    user's terms, what it proves before it changes anything; the module docstring documents it."""

    def deco(fn: ApplyFn) -> ApplyFn:
        if code in _REWRITES and _REWRITES[code].apply is not fn:
            raise ValueError(f"a rewrite for {code} is registered twice")
        module = inspect.getmodule(fn)
        doc = inspect.cleandoc((module.__doc__ if module else None) or fn.__doc__ or "")
        _REWRITES[code] = Rewrite(code, name, fn, tuple(preconditions), doc)
        return fn

    return deco


def _load() -> None:
    import importlib
    import pkgutil

    from .. import rewrite as pkg

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if info.name.startswith("fxl"):
            importlib.import_module(f"{pkg.__name__}.{info.name}")


def all_rewrites() -> dict[str, Rewrite]:
    """Every registered rewrite, by rule code."""
    _load()
    return dict(sorted(_REWRITES.items()))


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class AppliedRewrite:
    code: str
    name: str
    location: str  # file:line of the user's source, or <graph>:node
    node: str
    description: str
    before: str  # the graph code of the replaced node
    after: str  # the graph code that replaces it
    bytes_saved: int | None = None
    source_edit: tuple[str, str] | None = None  # (before, after) of the user's source line
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class SkippedRewrite:
    code: str
    name: str
    location: str
    node: str
    reason: str  # "not applied: <reason>" without the prefix
    rolled_back: bool = False  # applied, then failed verification
    file: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.location} {self.code} not applied: {self.reason}"


@dataclass
class RewriteResult:
    """What ``fxlint.rewrite`` returns.

    ``module`` is a callable GraphModule (the original graph when nothing applied);
    ``original`` the captured graph before any rewrite; ``applied`` and ``skipped``
    say what happened at each site; ``verified`` whether outputs (and gradients) were
    compared with the original's.
    """

    module: fx.GraphModule
    original: fx.GraphModule
    applied: list[AppliedRewrite] = field(default_factory=list)
    skipped: list[SkippedRewrite] = field(default_factory=list)
    verified: bool = True
    checked: str = "outputs"  # "outputs" or "outputs and gradients"

    @property
    def bytes_saved(self) -> int:
        return sum(a.bytes_saved or 0 for a in self.applied)

    def __str__(self) -> str:
        from ..tensorinfo import human_bytes

        lines = []
        for a in self.applied:
            saved = f" ({human_bytes(a.bytes_saved)} less copied per call)" if a.bytes_saved else ""
            lines.append(f"{a.location} {a.code} applied: {a.description}{saved}")
        lines.extend(str(s) for s in self.skipped)
        check = f"verified ({self.checked})" if self.verified else "not verified (verify=False)"
        lines.append(f"{len(self.applied)} rewrite(s) applied, {len(self.skipped)} not applied; {check}")
        return "\n".join(lines)

"""The rewrite registry and the results a rewrite run returns.

A rewrite is a function ``apply(site) -> Change`` in its own module
``fxlint/rewrite/fxlNNN_name.py``, registered with ``@register(code, name)``
for the rule whose findings it fixes; the rule declares it (``fix=`` on
``@rule``), which is how the engine finds it. It receives the
finding (its node and ``details``) and the graph, *re-checks its own
preconditions on the canonical view* (a finding is a hint, not a proof), edits
``site.gm.graph`` (a private copy) and returns a ``Change``; when it cannot
prove a precondition it raises ``NotApplied(reason)``. The engine
(``fxlint.rewrite.engine``) handles copies, graph lint, recompilation,
verification and rollback.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch.fx as fx

if TYPE_CHECKING:  # pragma: no cover
    from ..canon import CanonNode, GraphView
    from ..findings import Finding
    from ..registry import Registry


class NotApplied(Exception):
    """A rewrite could not prove it is safe (or its pattern is gone): the reason, in the user's terms."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Site:
    """What a rewrite gets: the graph (its private copy), the canonical view of it, the finding's node."""

    gm: fx.GraphModule
    view: GraphView
    node: CanonNode
    finding: Finding
    #: False inside ``torch.compile``: an edit that needs a fact about a dynamic size would
    #: add a guard to the user's compile, so the rewrite must not depend on one
    symbolic_ok: bool = True
    #: True when the graph goes to a compiler that fuses producers into their consumers (Inductor):
    #: a copy such a compiler would fuse away may cost less than the view that replaces it
    fusing: bool = False

    @property
    def details(self) -> Mapping[str, Any]:
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
    doc: str  # the module docstring: what it does, its preconditions, what changes

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


def register(code: str, name: str) -> Callable[[ApplyFn], ApplyFn]:
    """Register ``apply`` as the rewrite named ``name`` for rule ``code``, in the default registry.
    The rule declares it (``fix=FixSpec.rewrite_of(name, ...)``); the module docstring documents
    it, its ``## Preconditions`` section listing, in the user's terms, what it proves first."""

    def deco(fn: ApplyFn) -> ApplyFn:
        from ..registry import _DEFAULT

        module = inspect.getmodule(fn)
        doc = inspect.cleandoc((module.__doc__ if module else None) or fn.__doc__ or "")
        _DEFAULT.add_rewrite(Rewrite(code, name, fn, doc))
        return fn

    return deco


def load_rewrites() -> None:
    """Import every rewrite module (``fxlNNN_*.py``): each registers itself."""
    import importlib
    import os
    import pkgutil

    # this package's folder (``fxlint.rewrite``, whose name is also the function users call)
    for info in sorted(pkgutil.iter_modules([os.path.dirname(__file__)]), key=lambda m: m.name):
        if info.name.startswith("fxl"):
            importlib.import_module(f"{__package__}.{info.name}")


def all_rewrites(registry: Registry | None = None) -> dict[str, Rewrite]:
    """Every registered rewrite whose rule declares it, by rule code."""
    from ..registry import default_registry

    return (registry or default_registry()).rewrites()


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
        from ..renderers.rewrites import skipped_line

        return skipped_line(self)


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
        from ..renderers.rewrites import render_result_brief

        return render_result_brief(self)

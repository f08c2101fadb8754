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

from .._present import as_html, as_text
from ..registry import Rewrite

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

    @property
    def compiled(self) -> str | None:
        """The verdict of the compiled program on the finding's copy (``"survives"``, ``"fused"``,
        ``"unknown"``), when the graph goes to Inductor and its lowering was read before rewriting
        (``fxlint.rewrite.engine.rewrite_graph``'s ``verdicts``); None otherwise."""
        return self.finding.compiled


def nothing_to_remove(finding: Finding, training: bool) -> str | None:
    """Why a rewrite of ``finding`` would remove no copy of the compiled program (its verdict is
    ``fused``, and in training the compiled backward copies nothing for it either); None when it may.

    A ``fused`` finding whose backward was not read in a training graph (``compiled_backward_bytes``
    None) is not judged: the slice's backward, not the forward copy, can be what a rewrite wins."""
    from ..compiled.verdicts import FUSED

    if finding.compiled != FUSED:
        return None
    back = finding.compiled_backward_bytes
    if back or (training and back is None):
        return None
    where = "forward and backward" if back == 0 else "forward"
    return ("Inductor fuses this copy into the kernel that reads it (compiled verdict `fused`, "
            f"{where}): the compiled program does not make it, so the rewrite has nothing to remove")


@dataclass
class Change:
    """What a rewrite did to the graph."""

    new_nodes: list[fx.Node]  # the nodes that now compute the result (for the before/after code)
    description: str  # e.g. "output[:, [0, 2, ..., 62]] -> output[:, ::2]"
    bytes_saved: int | None = None  # bytes per call the rewrite no longer copies
    source_edit: tuple[str, str] | None = None  # (line before, line after) in the user's source
    also_changed: list[str] = field(default_factory=list)  # other existing nodes it edited (shown before/after)


ApplyFn = Callable[[Site], Change]  # what ``Rewrite.apply`` is (``fxlint.registry.Rewrite``)


def register(code: str, name: str, *, sites: Callable[[Finding], bool] | None = None
             ) -> Callable[[ApplyFn], ApplyFn]:
    """Register ``apply`` as the rewrite named ``name`` for rule ``code``, in the default registry.
    The rule declares it (``fix=FixSpec.rewrite_of(name, ...)``); the module docstring documents
    it, its ``## Preconditions`` section listing, in the user's terms, what it proves first.
    ``sites``: which of the rule's findings it addresses (default: all); the others are not sites."""

    def deco(fn: ApplyFn) -> ApplyFn:
        from ..registry import _DEFAULT

        module = inspect.getmodule(fn)
        doc = inspect.cleandoc((module.__doc__ if module else None) or fn.__doc__ or "")
        _DEFAULT.add_rewrite(Rewrite(code, name, fn, doc, sites))
        return fn

    return deco


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
        return as_text(self)  # fxlint.renderers.rewrites.skipped_line


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
        return as_text(self)  # fxlint.renderers.rewrites.render_result_brief

    def __repr__(self) -> str:  # the dataclass's would print both graphs' code
        checked = f"verified ({self.checked})" if self.verified else "not verified"
        return (f"<fxlint.RewriteResult: {len(self.applied)} applied, {len(self.skipped)} not applied, {checked}; "
                "print() it for the sites>")

    def _repr_html_(self) -> str | None:
        return as_html(self)  # fxlint.renderers.rewrites.render_result_html

"""One graph's findings under Inductor: the eager findings' verdicts, then the findings of the copies the
compiled program makes that no eager finding explains (the ``scope="compiled"`` rules).

``judge`` is what both entry points run once Inductor has lowered a graph: the backend after its inner
compile, and ``fxlint.lint(..., compiled=True)`` after compiling each captured graph itself. A
``CompiledGraph`` is what a compiled rule reads: the captured graph's canonical view, Inductor's lowering
of it, and the copies no eager finding owns (a copy an eager finding owns survives as that finding's;
one owner per copy).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..findings import Finding
from .kinds import OTHER, kind_of
from .lowering import CompiledBuffer, Lowering
from .verdicts import Sites, apply_verdicts, credit, describe

if TYPE_CHECKING:  # pragma: no cover
    from ..canon import CanonNode
    from ..project.config import Settings
    from ..registry import Rule, RuleContext


@dataclass
class CompiledGraph:
    """What Inductor made of one captured graph, as a ``scope="compiled"`` rule reads it."""

    label: str
    view: Any  # the captured graph's GraphView (None when fxlint has none)
    lowering: Lowering
    unowned: list[CompiledBuffer] = field(default_factory=list)  # the copies no eager finding explains

    def copies(self, kind: str) -> list[CompiledBuffer]:
        """The unowned copies of one kind (``fxlint.compiled.kinds``), in the order Inductor runs them."""
        return [b for b in self.unowned if kind_of(b, self.view) == kind]

    def node(self, name: str | None) -> CanonNode | None:
        """The canonical node of a captured graph's node, by name."""
        if self.view is None or name is None:
            return None
        return self.view.by_name.get(name)

    def site(self, buf: CompiledBuffer) -> CanonNode | None:
        """Where the user meets ``buf``: the node whose lowering made it, else the first ATen kernel
        that reads it (a weight Inductor lays out has no provenance of its own: its convolution's line)."""
        for name in (buf.producer, *buf.consumer_nodes):
            node = self.node(name)
            if node is not None and node.kind == "op":
                return node
        return None


def judge(findings: list[Finding], lowering: Lowering, view: Any, label: str, *, demote: bool = False,
          rules: Sequence[Rule] = (), ctx: RuleContext | None = None, settings: Settings | None = None,
          ) -> tuple[list[Finding], list[Finding], dict[str, Any]]:
    """``findings`` (of the one graph ``lowering`` read) with their verdicts, plus the findings of the
    compiled rules among ``rules``: (active findings, silenced compiled findings, what the verdicts say
    for ``Report.extras["compiled"]``, with ``rule_errors``: a compiled rule that raised, reported and
    skipped as any rule is). ``demote``: a fused eager finding becomes info (the backend with
    Inductor: the program that runs does not make the copy)."""
    from ..analysis.engine import apart, evaluate_compiled, merge_repeats
    from ..findings import dedupe
    from ..registry import RuleContext as _Ctx

    sites = Sites(view)
    judged = apply_verdicts(findings, lowering, demote=demote, sites=sites)
    if not lowering.readable:
        return judged, [], describe(judged, lowering, sites)
    _, _, unowned = credit(judged, lowering, sites)
    compiled_rules = [r for r in rules if r.scope == "compiled"]
    active: list[Finding] = []
    silenced: list[Finding] = []
    ev = None
    if compiled_rules:
        subject = CompiledGraph(label, view, lowering, unowned)
        ev = evaluate_compiled([subject], compiled_rules, ctx or _Ctx(), settings)
        active = dedupe(apart(merge_repeats([e.finding for e in ev.hits if e.silenced is None])))
        silenced = dedupe(apart([e.finding.with_(suppressed=True) for e in ev.hits if e.silenced is not None]))
    said = describe([*judged, *active], lowering, sites,
                    explained=lambda b: bool(compiled_rules) and kind_of(b, view) != OTHER)
    if ev is not None and ev.errors:
        said["rule_errors"] = list(ev.errors)  # the callers add them to Report.errors, as a lint's are
    return [*judged, *active], silenced, said


__all__ = ["CompiledGraph", "judge"]

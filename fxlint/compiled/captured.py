"""``fxlint.lint(..., compiled=True)``: compile each graph of a capture with Inductor and give its copy
findings their verdicts, without running the compiled program (no training loop).

Each Dynamo graph is compiled with ``compile_fx`` on the inputs Dynamo handed it during the capture
(Inductor's FX-graph and AOTAutograd caches off, so it lowers the graph and there is something to
read); the compiled program is dropped. A graph that was not captured by Dynamo (a GraphModule, an
ExportedProgram) or that Inductor fails on leaves its copy findings ``unknown``, saying why in
``Report.extras["compiled"]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..findings import Finding
from .lowering import Lowering, compile_and_read
from .program import judge
from .verdicts import unknown_verdicts

if TYPE_CHECKING:  # pragma: no cover
    from ..project.config import Settings
    from ..registry import Rule, RuleContext


def judge_capture(findings: list[Finding], views: list[Any], inputs: dict[str, list[Any]],
                  *, why_not: str | None = None, rules: Sequence[Rule] = (), ctx: RuleContext | None = None,
                  settings: Settings | None = None, runs: dict[str, int] | None = None,
                  ) -> tuple[list[Finding], list[Finding], dict[str, Any]]:
    """``findings`` with verdicts from Inductor's lowering of each graph in ``views`` (compiled on
    ``inputs[label]``) and the findings of the compiled rules among ``rules`` (the copies the compiled
    program makes that no eager finding explains); the compiled findings silenced by a comment or the
    configuration; what the verdicts say per graph. ``why_not``: no compile, every copy finding
    unknown for that reason. An inference lint (``ctx.training`` False) compiles with autograd off, as
    an inference program runs. ``runs``: how many times each graph ran in the captured call; the bytes of
    a graph that runs more than once per call (a graph Dynamo reuses) count every run."""
    by_graph: dict[str | None, list[Finding]] = {}
    for f in findings:
        by_graph.setdefault(f.graph, []).append(f)
    judged: dict[int, Finding] = {}
    added: list[Finding] = []
    silenced: list[Finding] = []
    per_graph: dict[str, Any] = {}
    for view in views:
        mine = by_graph.get(view.label, [])
        if why_not is not None or view.label not in inputs:
            reason = why_not or "not a Dynamo graph: fxlint compiles only the graphs Dynamo captures"
            lowering = Lowering(error=reason)
        else:
            lowering = compile_and_read(view.gm, inputs[view.label], inference=not (ctx is None or ctx.training))
            lowering = lowering.repeated((runs or {}).get(view.label, 1))
        out, quiet, per_graph[view.label] = judge(mine, lowering, view, view.label, rules=rules, ctx=ctx,
                                                  settings=settings)
        for f, g in zip(mine, out):
            judged[id(f)] = g
        added.extend(out[len(mine):])
        silenced.extend(quiet)
    result = [judged.get(id(f)) or unknown_verdicts([f])[0] for f in findings]
    return [*result, *added], silenced, per_graph

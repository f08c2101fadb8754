"""``fxlint.lint(..., compiled=True)``: compile each graph of a capture with Inductor and give its copy
findings their verdicts, without running the compiled program (no training loop).

Each Dynamo graph is compiled with ``compile_fx`` on the inputs Dynamo handed it during the capture
(Inductor's FX-graph and AOTAutograd caches off, so it lowers the graph and there is something to
read); the compiled program is dropped. A graph that was not captured by Dynamo (a GraphModule, an
ExportedProgram) or that Inductor fails on leaves its copy findings ``unknown``, saying why in
``Report.extras["compiled"]``.
"""

from __future__ import annotations

from typing import Any

from ..findings import Finding
from .lowering import Lowering, compile_and_read
from .verdicts import Sites, apply_verdicts, describe, unknown_verdicts


def judge_capture(findings: list[Finding], views: list[Any], inputs: dict[str, list[Any]],
                  *, why_not: str | None = None) -> tuple[list[Finding], dict[str, Any]]:
    """``findings`` with verdicts from Inductor's lowering of each graph in ``views`` (compiled on
    ``inputs[label]``), and what the verdicts say per graph; ``why_not``: no compile, every copy
    finding unknown for that reason."""
    by_graph: dict[str | None, list[Finding]] = {}
    for f in findings:
        by_graph.setdefault(f.graph, []).append(f)
    judged: dict[int, Finding] = {}
    per_graph: dict[str, Any] = {}
    for view in views:
        mine = by_graph.get(view.label, [])
        if why_not is not None or view.label not in inputs:
            reason = why_not or "not a Dynamo graph: fxlint compiles only the graphs Dynamo captures"
            lowering = Lowering(error=reason)
        else:
            lowering = compile_and_read(view.gm, inputs[view.label])
        sites = Sites(view)
        out = apply_verdicts(mine, lowering, sites=sites)
        for f, g in zip(mine, out):
            judged[id(f)] = g
        per_graph[view.label] = describe(out, lowering, sites)
    result = [judged.get(id(f)) or unknown_verdicts([f])[0] for f in findings]
    return result, per_graph

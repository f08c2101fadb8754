"""A verdict on each copy finding of a graph, from Inductor's lowering of that graph.

A copy finding (one with bytes, or a bytes formula) points at a node of the captured graph
(``Finding.node``). Each copy buffer of the lowering is credited to one finding: the one on the
latest of its source nodes (in graph order) that has a copy finding - the op that asked for the copy
(the ``matmul`` that flattens a permuted operand, the ``reshape``), not the view that fed it. Then:

* ``survives``: a copy buffer is credited to it; ``compiled_bytes`` is what those buffers write per
  call in the compiled program;
* ``fused``: its node was lowered (a node of Inductor's graph comes from it), no copy is credited to it,
  and its op does not run as an ATen kernel: no memory traffic of its own (``compiled_bytes`` 0);
* ``unknown``: the lowering could not be read, the finding names no node, its node was not lowered, or
  its op runs as an ATen (extern) kernel, where ATen may still copy inside it.

Other findings (gradient breaks, graph breaks) keep ``compiled=None``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..findings import Finding, Severity
from .lowering import CompiledBuffer, Lowering

SURVIVES, FUSED, UNKNOWN = "survives", "fused", "unknown"

#: what a fused finding's message gains when the backend demotes it
FUSED_NOTE = "Eager makes this copy; the compiled program does not (Inductor fuses it into the kernel that reads it)."


def is_copy_finding(f: Finding) -> bool:
    return bool(f.bytes) or f.bytes_expr is not None


def credit(findings: Iterable[Finding], lowering: Lowering) -> tuple[dict[str, list[CompiledBuffer]],
                                                                        list[CompiledBuffer]]:
    """Each copy buffer credited to the node of one finding, and the copies no finding explains."""
    owners = {f.node for f in findings if is_copy_finding(f) and f.node is not None}
    credited: dict[str, list[CompiledBuffer]] = {}
    unexplained: list[CompiledBuffer] = []
    for buf in lowering.copies():
        mine = [s for s in buf.sources if s in owners]
        if mine:
            credited.setdefault(mine[-1], []).append(buf)
        else:
            unexplained.append(buf)
    return credited, unexplained


def verdict(f: Finding, lowering: Lowering, credited: dict[str, list[CompiledBuffer]]) -> Finding:
    if not is_copy_finding(f):
        return f
    if not lowering.readable or f.node is None:
        return f.with_(compiled=UNKNOWN, compiled_bytes=None)
    bufs = credited.get(f.node)
    if bufs:
        sizes = [b.bytes for b in bufs]
        total = sum(s for s in sizes if s is not None) if all(s is not None for s in sizes) else None
        return f.with_(compiled=SURVIVES, compiled_bytes=total)
    if f.node in lowering.lowered and f.node not in lowering.extern_sources:
        return f.with_(compiled=FUSED, compiled_bytes=0)
    return f.with_(compiled=UNKNOWN, compiled_bytes=None)


def apply_verdicts(findings: list[Finding], lowering: Lowering, *, demote: bool = False) -> list[Finding]:
    """``findings`` (of the one graph ``lowering`` read) with their verdicts; ``demote``: a fused
    finding becomes info, its message saying the compiled program does not make the copy."""
    credited, _ = credit(findings, lowering)
    out = []
    for f in findings:
        g = verdict(f, lowering, credited)
        if demote and g.compiled == FUSED:
            sep = " " if g.message.rstrip().endswith(".") else ". "
            g = g.with_(severity=Severity.INFO, message=f"{g.message.rstrip()}{sep}{FUSED_NOTE}")
        out.append(g)
    return out


def unknown_verdicts(findings: list[Finding]) -> list[Finding]:
    """Every copy finding ``unknown``: the lowering was not read."""
    return [f.with_(compiled=UNKNOWN, compiled_bytes=None) if is_copy_finding(f) else f for f in findings]


def describe(findings: Iterable[Finding], lowering: Lowering | None) -> dict[str, Any]:
    """What the verdicts say, for ``Report.extras["compiled"]``."""
    fs = list(findings)
    out: dict[str, Any] = {v: sum(f.compiled == v for f in fs) for v in (SURVIVES, FUSED, UNKNOWN)}
    out["bytes_per_call"] = sum(f.compiled_bytes or 0 for f in fs if f.compiled == SURVIVES)
    if lowering is not None:
        _, unexplained = credit(fs, lowering)
        out["unexplained"] = [{"buffer": b.name, "bytes": b.bytes, "ops": list(b.ops), "nodes": list(b.sources)}
                              for b in unexplained]
        if not lowering.readable:
            out["why_unknown"] = lowering.why_unreadable
    return out

"""The compile backend's log lines, on the ``fxlint`` logger.

Per captured graph: one summary line (WARNING when the graph has warnings or
errors, INFO otherwise) whose "first:" is the most harmful finding on the user's
own lines, one INFO line per rule and source line (with the module paths, in the
text report's order: errors, warnings, infos, then bytes), one line per rewrite
(applied: INFO; not applied: INFO, or WARNING when it was rolled back) and a
rewrite summary. The backend decides what to log and hands it here; nothing
else prints from inside ``torch.compile``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..findings import Report, Severity
from ..reporting.grouping import group_findings
from ..tensor.info import human_bytes
from .rewrites import summary_line
from .text import compiled_text

if TYPE_CHECKING:  # pragma: no cover
    from ..rewrite.base import RewriteResult

log = logging.getLogger("fxlint")


def log_report(label: str, report: Report, logger: logging.Logger = log) -> None:
    """The graph's summary line and one line per finding."""
    s = report.summary()
    if not report.findings:
        logger.info("fxlint: %s: no findings%s", label,
                    f" ({s['suppressed']} suppressed)" if s["suppressed"] else "")
        return
    worst = max(f.severity.rank for f in report.findings)
    level = logging.WARNING if worst >= Severity.WARNING.rank else logging.INFO
    codes = ", ".join(f"{c}x{n}" if n > 1 else c for c, n in s["by_code"].items())
    parts = [f"{s['findings']} finding{'s' if s['findings'] != 1 else ''} ({codes})"]
    compiled = s.get("compiled")
    if compiled:
        # what the compiled program copies: the surviving findings' bytes, eager's total beside it
        parts.append(f"{human_bytes(compiled['bytes_per_call'])} copied per call by the compiled program "
                     f"({compiled['survives']} survive{'s' if compiled['survives'] == 1 else ''}, "
                     f"{compiled['fused']} fused, {compiled['unknown']} unknown; eager copies "
                     f"{human_bytes(s['bytes_per_call'])})")
    elif s["bytes_per_call"]:
        parts.append(f"{human_bytes(s['bytes_per_call'])} copied per call")
    if s["suppressed"]:
        parts.append(f"{s['suppressed']} suppressed")
    groups = group_findings(report.findings)  # the user's lines first; errors, warnings, infos; then bytes
    first = groups[0]
    logger.log(level, "fxlint: %s: %s; first: %s %s (log level INFO or fxlint.collect() for all)",
               label, ", ".join(parts), first.location, first.code)
    for g in groups:  # one line per (rule, source line), in the same order
        where = g.location + (f" ({g.modules})" if g.modules else "")
        times = f" ×{g.count}" if g.count > 1 else ""
        logger.info("fxlint: %s: %s [%s]%s %s%s%s", where, g.code, g.severity, times, g.message,
                    f" (fix: {g.fix})" if g.fix else "",
                    f" [compiled: {verdict}]" if (verdict := compiled_text(g.findings)) else "")



def log_rewrites(label: str, result: RewriteResult, logger: logging.Logger = log) -> None:
    """One line per rewrite site and, when there were sites, the summary."""
    for a in result.applied:
        logger.info("fxlint: %s: %s rewritten: %s", a.location, a.code, a.description)
    for sk in result.skipped:
        logger.log(logging.WARNING if sk.rolled_back else logging.INFO, "fxlint: %s: %s not applied: %s",
                   sk.location, sk.code, sk.reason)
    if result.applied or result.skipped:
        logger.info("fxlint: %s: %s", label, summary_line(result))

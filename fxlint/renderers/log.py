"""The compile backend's log lines, on the ``fxlint`` logger.

Per captured graph: one summary line (WARNING when the graph has warnings or
errors, INFO otherwise), one INFO line per finding, one line per rewrite
(applied: INFO; not applied: INFO, or WARNING when it was rolled back) and a
rewrite summary. The backend decides what to log and hands it here; nothing
else prints from inside ``torch.compile``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..findings import Report, Severity
from ..tensorinfo import human_bytes
from .rewrites import summary_line

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
    first = min(report.findings, key=lambda f: -f.severity.rank)
    logger.log(level, "fxlint: %s: %s; first: %s %s (log level INFO or fxlint.collect() for all)",
               label, ", ".join(parts), first.location, first.code)
    for f in report.findings:
        logger.info("fxlint: %s: %s [%s] %s%s%s", f.location, f.code, f.severity, f.message,
                    f" (fix: {f.fix})" if f.fix else "",
                    f" [compiled: {f.compiled}" + (f", {human_bytes(f.compiled_bytes)} per call]"
                                                   if f.compiled == "survives" and f.compiled_bytes else "]")
                    if f.compiled else "")


def log_rewrites(label: str, result: RewriteResult, logger: logging.Logger = log) -> None:
    """One line per rewrite site and, when there were sites, the summary."""
    for a in result.applied:
        logger.info("fxlint: %s: %s rewritten: %s", a.location, a.code, a.description)
    for sk in result.skipped:
        logger.log(logging.WARNING if sk.rolled_back else logging.INFO, "fxlint: %s: %s not applied: %s",
                   sk.location, sk.code, sk.reason)
    if result.applied or result.skipped:
        logger.info("fxlint: %s: %s", label, summary_line(result))

"""Render an ``AuditReport``: a table of copies per source line, most bytes first."""

from __future__ import annotations

import json
import shutil

from tabulate import tabulate

from .._present import text_renderer_for
from ..reporting.grouping import location_text
from ..runtime import AuditReport
from ..tensor.info import human_bytes
from .text import ms, timing_note


@text_renderer_for(AuditReport)
def render_audit_text(report: AuditReport, *, width: int | None = None) -> str:
    width = width or shutil.get_terminal_size((140, 24)).columns
    stats = report.by_line()
    lines: list[str] = []
    if stats:
        rows = []
        for s in stats:
            what = ", ".join(s.ops)
            if not s.avoidable:
                what += f"\nunavoidable: {s.reason}"
            rows.append([location_text(s.location), s.module_path or "-", s.phase, s.count, human_bytes(s.bytes),
                         f"{100 * s.share:.1f}%", ms(s.time_ns), what])
        lines.append(tabulate(rows, headers=["Location", "Module", "Phase", "Copies", "Bytes/call", "Share", "Time",
                                             "Ops (top>copy)"],
                              tablefmt="simple",
                              maxcolwidths=[None, 24, None, None, None, None, None, max(30, width - 110)]))
        lines.append("")
    summary = report.summary()
    what = "training step (forward + backward)" if report.train else "forward call"
    if not summary["copies"]:
        lines.append(f"No copies in one {what}.")
    else:
        lines.append(
            f"{summary['copies']} copies, {human_bytes(summary['bytes_per_call'])} per {what} "
            f"({human_bytes(summary['avoidable_bytes_per_call'])} avoidable, "
            f"{human_bytes(summary['unavoidable_bytes_per_call'])} that every program pays)"
            + (f"; forward {human_bytes(summary['forward_bytes'])}, backward {human_bytes(summary['backward_bytes'])}"
               if report.train else "") + "."
        )
        if report.call_ns:
            lines.append(f"The copies take about {ms(report.copy_ns)} of the {ms(report.call_ns)} {what} "
                         f"({100 * report.copy_ns / report.call_ns:.1f}%). {timing_note(report.summary())}")
    return "\n".join(lines)


def render_audit_json(report: AuditReport) -> str:
    return json.dumps(report.to_dict(), indent=2, default=str)

"""Render an ``AuditReport``: a table of copies per source line, most bytes first."""

from __future__ import annotations

import html
import json
import shutil

from tabulate import tabulate

from .._present import html_renderer_for, text_renderer_for
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
    lines.extend(_summary_lines(report))
    return "\n".join(lines)


def _summary_lines(report: AuditReport) -> list[str]:
    lines: list[str] = []
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
    return lines


@html_renderer_for(AuditReport)
def render_audit_html(report: AuditReport) -> str:
    """The audit as an HTML fragment (a notebook cell's output): the summary, then the table per line."""
    e = html.escape
    cell = "padding:2px 8px;text-align:left;border-bottom:1px solid #e6e9ef;vertical-align:top"
    head = ["Location", "Module", "Phase", "Copies", "Bytes/call", "Share", "Time", "Ops (top>copy)"]
    rows = []
    for s in report.by_line():
        what = e(", ".join(s.ops)) + ("" if s.avoidable else f"<br><i>unavoidable: {e(s.reason or '')}</i>")
        values = [f"<code>{e(location_text(s.location))}</code>", e(s.module_path or "-"), e(s.phase), str(s.count),
                  e(human_bytes(s.bytes)), f"{100 * s.share:.1f}%", e(ms(s.time_ns)), what]
        rows.append("<tr>" + "".join(f'<td style="{cell}">{v}</td>' for v in values) + "</tr>")
    table = ("<table style=\"border-collapse:collapse\"><thead><tr>"
             + "".join(f'<th style="{cell}">{e(h)}</th>' for h in head) + "</tr></thead><tbody>"
             + "".join(rows) + "</tbody></table>") if rows else ""
    summary = "".join(f"<p>{e(line)}</p>" for line in _summary_lines(report))
    return f'<div class="fxlint-audit"><b>fxlint audit</b>{summary}{table}</div>'


def render_audit_json(report: AuditReport) -> str:
    return json.dumps(report.to_dict(), indent=2, default=str)

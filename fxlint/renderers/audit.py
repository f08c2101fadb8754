"""Render an ``AuditReport``: a table of copies per source line, most bytes first."""

from __future__ import annotations

import html
import json
import shutil

from tabulate import tabulate

from .._present import html_renderer_for, text_renderer_for
from ..reporting.grouping import location_text
from ..runtime import AuditReport
from ..runtime.compiled_audit import CompiledAudit
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


def render_audit_json(report: AuditReport | CompiledAudit) -> str:
    return json.dumps(report.to_dict(), indent=2, default=str)


@text_renderer_for(CompiledAudit)
def render_compiled_audit_text(report: CompiledAudit, *, width: int | None = None) -> str:
    """The copies of the compiled program per source line, most bytes first, then what was not known."""
    width = width or shutil.get_terminal_size((140, 24)).columns
    what = "training step (forward + backward)" if report.train else "forward call"
    if not report.known:
        return f"The compiled program could not be measured: {report.why_unknown}."
    lines: list[str] = []
    stats = report.by_line()
    if stats:
        rows = [[location_text(f"{s.file}:{s.line}") if s.file else "(no one line)", s.phase, s.writes,
                 human_bytes(s.bytes), ", ".join(s.kernels) + ("" if s.avoidable else f"\nunavoidable: {s.reason}")]
                for s in stats]
        lines.append(tabulate(rows, headers=["Location", "Phase", "Writes", "Bytes/call", "Kernels (or ATen copy)"],
                              tablefmt="simple", maxcolwidths=[None, None, None, None, max(30, width - 80)]))
        lines.append("")
    s = report.summary()
    if not s["copies"]:
        lines.append(f"The compiled program makes no copy in one {what}.")
    else:
        lines.append(f"The compiled program copies {human_bytes(s['bytes_per_call'])} per {what} "
                     f"({human_bytes(s['kernel_bytes_per_call'])} in Inductor's kernels, "
                     f"{human_bytes(s['aten_bytes_per_call'])} inside ATen ops it calls; "
                     f"{human_bytes(s['bytes_per_call'] - s['avoidable_bytes_per_call'])} every program pays)"
                     + (f"; {human_bytes(s['no_line_bytes'])} on no one line" if s["no_line_bytes"] else "") + ".")
    if report.unknown:
        lines.append(f"Not known whether they copy: {human_bytes(report.unknown_bytes)} per call written by "
                     f"{len({u['kernel'] for u in report.unknown})} kernel(s) whose C++ the oracle does not follow.")
    lines.extend(f"note: {n}" for n in report.notes[:10])
    return "\n".join(lines)

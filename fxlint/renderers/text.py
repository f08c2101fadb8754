"""A findings table (tabulate), most expensive first, and a one-line summary."""

from __future__ import annotations

import shutil

from tabulate import tabulate

from ..findings import Report, sort_by_cost
from ..tensorinfo import human_bytes


def _bytes_cell(f) -> str:
    if f.bytes is not None:
        return human_bytes(f.bytes)
    if f.bytes_expr:
        return f"{f.bytes_expr} B"
    return "-"


def render_text(report: Report, *, width: int | None = None) -> str:
    width = width or shutil.get_terminal_size((140, 24)).columns
    lines: list[str] = []
    if report.findings:
        rows = []
        for f in sort_by_cost(report.findings):
            text = f.message + (f"\nfix: {f.fix}" if f.fix else "")
            if f.status:
                text += f"\nruntime: {f.status}"
            rows.append([f.code, str(f.severity), f.location, f.module_path or "-", _bytes_cell(f), text])
        msg_width = max(40, width - 70)
        lines.append(
            tabulate(
                rows,
                headers=["Code", "Severity", "Location", "Module", "Bytes/call", "Message"],
                tablefmt="simple",
                maxcolwidths=[None, None, 40, 24, None, msg_width],
            )
        )
        lines.append("")
    lines.append(summary_line(report))
    if report.unexplained:
        lines.append("")
        lines.append("Runtime copies that no finding explains (the audit saw them; no rule predicted them):")
        lines.append(tabulate(
            [[u["location"], u["module_path"] or "-", u["count"], human_bytes(u["bytes"]), ", ".join(u["ops"])]
             for u in report.unexplained],
            headers=["Location", "Module", "Copies", "Bytes/call", "Ops (top>copy)"], tablefmt="simple",
            maxcolwidths=[40, 24, None, None, 60]))
    for err in report.errors:
        lines.append(f"internal error (rule skipped): {err}")
    return "\n".join(lines)


def summary_line(report: Report) -> str:
    s = report.summary()
    if not s["findings"]:
        head = "No findings"
    else:
        sev = [f"{s[k]} {name}{'s' if s[k] != 1 else ''}" for k, name in
               (("errors", "error"), ("warnings", "warning"), ("infos", "info")) if s[k]]
        head = f"{s['findings']} finding{'s' if s['findings'] != 1 else ''} ({', '.join(sev)})"
    parts = [head]
    if s["bytes_per_call"]:
        parts.append(f"{human_bytes(s['bytes_per_call'])} copied per call")
    if s["suppressed"]:
        parts.append(f"{s['suppressed']} suppressed")
    if s.get("baselined"):
        parts.append(f"{s['baselined']} in the baseline")
    parts.append(f"{s['graphs']} graph{'s' if s['graphs'] != 1 else ''} analysed")
    if "confirmed" in s:
        parts.append(f"runtime: {s['confirmed']} confirmed, {s['refuted']} refuted, {s['not_run']} not run")
    if s["graph_breaks"]:
        parts.append(f"{s['graph_breaks']} graph break{'s' if s['graph_breaks'] != 1 else ''}")
    return ", ".join(parts) + "."

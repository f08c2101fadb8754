"""The text report: a summary block, then one row per (rule, source line),
most harmful first (errors, then warnings, then infos), then most expensive.

A line that many module instances run (a 24-block model) is one row: how
many instances, which modules (``blocks.{0..23}.attn.proj_l``), the bytes per
call summed over them, and the message once (``fxlint.reporting.grouping``). The user's
own files come first; lines in installed packages (timm, transformers...)
follow under their own heading. ``group=False`` gives one row per finding.
"""

from __future__ import annotations

import shutil
import textwrap
from collections import defaultdict
from typing import Any

from tabulate import tabulate

from .._present import text_renderer_for
from ..findings import Finding, Report, Saving, Severity, sort_by_harm
from ..reporting.grouping import Group, group_findings, in_scope, location_text
from ..tensor.info import human_bytes
from ..util.source import clean_path


def _bytes_cell(f: Finding | Group) -> str:
    nbytes = f.cost_bytes if isinstance(f, Finding) else f.bytes  # the compiled program's under Inductor
    if nbytes is not None:
        return human_bytes(nbytes)
    if f.bytes_expr:
        return f"{f.bytes_expr} B"
    return "-"


def ms(ns: int | None) -> str:
    if ns is None:
        return "-"
    v = ns / 1e6
    return f"{v:.2f} ms" if v < 10 else f"{v:.1f} ms"


def approx_time(ns: int) -> str:
    """A measured duration said as what it is, an estimate: ``~0.31 ms``, ``~12 ms``, ``~41 µs``."""
    v = ns / 1e6
    if v < 0.1:
        return f"~{ns / 1e3:.2g} µs"
    return f"~{v:.2g} ms" if v < 10 else f"~{v:.0f} ms"


def saving_text(saving: Saving, *, error: bool = False, train: bool = False) -> str:
    """What fixing a finding (a group) is expected to save, in words: ``saves 49.2 kB per call``,
    ``saves 49.2 kB and ~0.3 ms per call (measured)``, the bytes per training step where the backward
    copies again, and for a gradient cut what it gains instead (no bytes); ``""`` when nothing is known.
    ``train``: the audit timed a training step, so the measured time is per step."""
    parts = []
    if error:
        parts.append("fixes an error" + (f" ({saving.gain})" if saving.gain else ""))
    elif saving.gain and not saving.bytes_per_call:
        parts.append(saving.gain)
    if saving.bytes_per_call:
        size = human_bytes(saving.bytes_per_call)
        step = f" ({human_bytes(saving.bytes_per_step)} per training step)" if saving.bytes_per_step else ""
        if saving.time_ns and not train:
            text = f"saves {size} and {approx_time(saving.time_ns)} per call (measured){step}"
        else:
            text = f"saves {size} per call{step}"
            if saving.time_ns:
                text += f" and {approx_time(saving.time_ns)} per training step (measured)"
        parts.append(text)
    elif saving.time_ns:
        parts.append(f"saves {approx_time(saving.time_ns)} per {'training step' if train else 'call'} (measured)")
    return " and ".join(parts)


def device_hint(reports: list[Report], width: int | None = None) -> str | None:
    """One line, when a lint without a target device on a machine without CUDA found factories without
    ``device=`` that meet the model's tensors (``Report.extras["device_hint"]``): free here, FXL107 on
    a GPU; ``--device cuda`` lints for it."""
    found = [f for r in reports for f in (r.extras.get("device_hint") or {}).get("factories", ())]
    if not found:
        return None
    sites = list(dict.fromkeys(
        f"`torch.{f['kind']}`" + (" at " + location_text(f"{f['file']}:{f['line']}") if f["file"] else "")
        for f in found))
    shown = ", ".join(sites[:3]) + (f" and {len(sites) - 3} more" if len(sites) > 3 else "")
    n = len(sites)
    many = n != 1
    text = (f"hint: {n} tensor factor{'ies' if many else 'y'} without `device=` ({shown}) meet{'' if many else 's'} "
            "the model's tensors: free on this CPU, a host-to-device copy per call on a GPU (FXL107). "
            "`--device cuda` (fxlint.lint(..., device=\"cuda\")) lints for the GPU, without one (docs/device.md).")
    width = width or shutil.get_terminal_size((140, 24)).columns
    return textwrap.fill(text, width=max(60, width - 1), break_on_hyphens=False, break_long_words=False)


@text_renderer_for(Report)
def render_text(report: Report, *, width: int | None = None, group: bool = True, scope: str = "all",
                sort: str = "bytes", top: int = 5, hint: bool = True) -> str:
    """The report as text. ``group``: one row per (code, line) (default) or per finding; ``scope``:
    ``all`` or ``user`` (only the user's own files); ``sort``: ``bytes`` or ``time`` (with the audit);
    ``hint``: end with the ``--device cuda`` hint where it applies (``device_hint``)."""
    width = width or shutil.get_terminal_size((140, 24)).columns
    findings = [f for f in report.findings if in_scope(f, scope)]
    hidden = len(report.findings) - len(findings)
    lines: list[str] = []
    groups = group_findings(findings, sort=sort)
    if group:
        lines += summary_block(report, groups, hidden=hidden, top=top)
        lines.append("")
        user = [g for g in groups if g.library is None]
        libs = [g for g in groups if g.library is not None]
        if user:
            lines.append(_group_blocks(user, width, report.audit_summary is not None))
            lines.append("")
        if libs:
            names = ", ".join(dict.fromkeys(g.library for g in libs if g.library))
            lines.append(f"In installed packages ({names}): their own lines, run by your model"
                         + (" (--scope user hides them)" if user else "") + ":")
            lines.append(_group_blocks(libs, width, report.audit_summary is not None))
            lines.append("")
    else:
        if findings:
            lines.append(_finding_table(findings, width, sort))
            lines.append("")
        lines.append(summary_line(report))
    if report.unexplained:
        lines.append("Runtime copies that no finding explains (the audit saw them; no rule predicted them):")
        rows = [[location_text(u["location"]), u["module_path"] or "-", u["count"], human_bytes(u["bytes"]),
                 ms(u.get("time_ns")), ", ".join(u["ops"])] for u in report.unexplained[:20]]
        lines.append(tabulate(rows, headers=["Location", "Module", "Copies", "Bytes/call", "Time", "Ops (top>copy)"],
                              tablefmt="simple", maxcolwidths=[None, 24, None, None, None, 60]))
        if len(report.unexplained) > 20:
            lines.append(f"... and {len(report.unexplained) - 20} more lines (--format json lists them all)")
        lines.append("")
    if report.first_call is not None:
        lines.extend(first_call_lines(report))
        lines.append("")
    made = [u for graph in (report.extras.get("compiled") or {}).values() if isinstance(graph, dict)
            for u in graph.get("unexplained", ())]
    if made:
        lines.append("Copies the compiled program makes that no finding explains (Inductor's lowering):")
        rows = [[location_text(_place(u)), u.get("module_path") or "-", human_bytes(u["bytes"]) if u["bytes"] else "?",
                 _made_by(u)] for u in made[:20]]
        lines.append(tabulate(rows, headers=["Location", "Module", "Bytes/call", "Made by"], tablefmt="simple",
                              maxcolwidths=[None, 24, None, 70]))
        if len(made) > 20:
            lines.append(f"... and {len(made) - 20} more (Report.extras['compiled'] lists them all)")
        lines.append("")
    lines.extend(compiled_check_lines(report.extras.get("compiled_check")))
    for err in report.errors:
        lines.append(f"internal error (rule skipped): {err}")
    note = device_hint([report], width) if hint else None
    if note is not None:
        lines.append(note)
    return "\n".join(lines).rstrip("\n")


def first_call_lines(report: Report) -> list[str]:
    """The steady-state note: which caches the first call filled, and the lines only that call runs."""
    fc = report.first_call
    if fc is None:
        return []
    more = len(fc.caches) - 4
    caches = ", ".join(f"`{c}`" for c in fc.caches[:4]) + (f" and {more} more" if more > 0 else "")
    out = [f"Steady state: the first call fills {caches}; this report is the second call, the program that runs "
           "on every call."]
    if fc.findings:
        where = sorted({location_text(f"{f.file}:{f.line}") if f.file else (f.node or "?") for f in fc.findings})
        shown = ", ".join(where[:6]) + (f" and {len(where) - 6} more" if len(where) > 6 else "")
        n = len(fc.findings)
        out.append(f"  {n} finding{'s' if n != 1 else ''} of the first call only (not reported: the model already "
                   f"keeps that result for the next calls): {shown}")
    return out


def summary_block(report: Report, groups: list[Group], *, hidden: int = 0, top: int = 5) -> list[str]:
    """What a person needs first: totals, per rule, the most expensive lines, and (with the audit)
    how much of the call's time the copies take."""
    lines_hit = len({(g.file, g.line) if g.file is not None else (None, g.node) for g in groups})
    out = [summary_line(report, groups=lines_hit, hidden=hidden)]
    if not groups:
        return out
    out.extend(fix_first_line(groups, train=bool((report.audit_summary or {}).get("train"))))
    per_rule: dict[str, list[Group]] = defaultdict(list)
    for g in groups:
        per_rule[g.code].append(g)
    parts = []
    for code in sorted(per_rule, key=lambda c: (-max(g.severity.rank for g in per_rule[c]),
                                                -sum(g.bytes or 0 for g in per_rule[c]))):
        gs = per_rule[code]
        n = sum(g.count for g in gs)
        b = sum(g.bytes or 0 for g in gs)
        where = len({(g.file, g.line) if g.file is not None else (None, g.node) for g in gs})
        parts.append(f"{code} {gs[0].name} ×{n} on {where} line{'s' if where != 1 else ''}"
                     + (f", {human_bytes(b)}" if b else ""))
    out.append("By rule: " + "; ".join(parts) + ".")
    # one entry per source line: the groups of a line (q and k of one matmul, two rules) add up
    per_line: dict[str, list[Group]] = defaultdict(list)
    for g in groups:
        if g.bytes or g.time_ns:
            per_line[g.location].append(g)
    if per_line:
        def cost(gs: list[Group]) -> tuple[int, int]:
            return sum(g.time_ns or 0 for g in gs), sum(g.bytes or 0 for g in gs)

        ranked = sorted(per_line.items(), key=lambda kv: tuple(-c for c in cost(kv[1])) if report.audit_summary
                        else -cost(kv[1])[1])[:top]
        entries = []
        for loc, gs in ranked:
            counts: dict[str, int] = defaultdict(int)
            for g in gs:
                counts[g.code] += g.count
            codes = ", ".join(f"{c} ×{n}" if n > 1 else c for c, n in counts.items())
            _t, b = cost(gs)
            unknown = any(g.bytes is None for g in gs)
            size = human_bytes(b) + ("+?" if unknown and b else "") if b or not unknown else "? B"
            times = [g.time_ns for g in gs if g.time_ns is not None]
            entries.append(f"{loc} ({codes}, {size}" + (f", {ms(sum(times))}" if times else "") + ")")
        out.append("Top lines: " + "; ".join(entries) + ".")
    if report.audit_summary is not None:
        out.append(time_sentence(report.audit_summary))
    return out


def fix_first_line(groups: list[Group], *, n: int = 3, train: bool = False) -> list[str]:
    """``Fix first (1 error): a.py:23 FXL301 detach-break, fixes an error (head.weight trains again);
    a.py:22 FXL201 noncontiguous-matmul ×2, saves 49.2 kB per call.``: the ``n`` most valuable actions, as
    the HTML's "fix first" block lists them (errors first, then the costliest warnings; never an info),
    the groups of one rule on one line (q and k of one matmul) as one, each with what fixing it is
    expected to save. No line when there are only infos."""
    actions: dict[tuple[str, str], list[Group]] = {}
    for g in groups:
        if g.severity is not Severity.INFO:
            actions.setdefault((g.location, g.code), []).append(g)
    if not actions:
        return []
    shown = []
    for gs in list(actions.values())[:n]:
        g = gs[0]
        count = sum(x.count for x in gs)

        def total(values: list[int | None]) -> int | None:
            known = [v for v in values if v is not None]
            return sum(known) if known else None

        saving = Saving.of(g.code, total([x.bytes for x in gs]), total([x.backward_bytes for x in gs]),
                           total([x.time_ns for x in gs]), g.saving.gain)
        saved = saving_text(saving, error=any(x.severity is Severity.ERROR for x in gs), train=train)
        shown.append(f"{g.location} {g.code} {g.name}" + (f" ×{count}" if count > 1 else "")
                     + (f", {saved}" if saved else ""))
    errors = sum(g.severity is Severity.ERROR for g in groups)
    rest = len(actions) - len(shown)
    more = f" and {rest} more" if rest > 0 else ""
    head = f"Fix first ({errors} error{'s' if errors != 1 else ''})" if errors else "Fix first"
    return [f"{head}: {'; '.join(shown)}{more}."]


def time_sentence(a: dict[str, Any]) -> str:
    """``Copies on your lines take X ms of Y ms per call (Z%): ...`` from the audit's summary."""
    call = a.get("call_ns") or 0
    what = "training step" if a.get("train") else "call"
    user = a.get("user_copy_ns", 0)
    allc = a.get("copy_ns", 0)

    def pct(x: int) -> str:
        return f"{100 * x / call:.1f}%" if call else "-"

    head = (f"Runtime: copies take {ms(allc)} of {ms(call)} per {what} ({pct(allc)}); on your own lines "
            f"{ms(user)} ({pct(user)}).")
    split = (f" Of all copies: {ms(a.get('explained_ns', 0))} explained by these findings, "
             f"{ms(a.get('unavoidable_ns', 0))} that every program pays (a Linear's bias written into "
             f"the output, embedding lookups), {ms(a.get('unexplained_ns', 0))} that nothing explains.")
    if not call:
        return ("Runtime: the call could not be timed without the profiler, so no time is shown (the profiler's "
                "own durations are many times too long).")
    return head.replace("copies take", "copies take about", 1) + split + " " + timing_note(a)


def timing_note(a: dict) -> str:
    """How the times were measured, in one sentence (an audit summary's ``call_*`` keys)."""
    runs, iqr, call = a.get("call_runs", 0), a.get("call_iqr_ns", 0), a.get("call_ns", 0)
    spread = f", spread (IQR) ±{100 * iqr / call / 2:.0f}%" if call and iqr else ""
    return (f"The call was timed without the profiler (median of {runs} runs{spread}); each copy's time is its "
            "share of the profiled call applied to that time (the profiler itself slows every op down).")


def _group_blocks(groups: list[Group], width: int, timed: bool) -> str:
    """One block per group: a header line (code, severity, location, instances, cost), then the
    message, the fix and the runtime verdict, wrapped to the terminal."""
    out: list[str] = []
    wrap = max(60, width - 6)
    for g in groups:
        inst = ""
        if g.count > 1:
            mods = g.module_paths
            per = g.count // len(mods) if mods and g.count % len(mods) == 0 else 0
            inst = (f"×{len(mods)} in {g.modules}" + (f" ({per} each)" if per > 1 else "")) if mods and per \
                else f"×{g.count}" + (f" in {g.modules}" if g.modules else "")
        elif g.modules:
            inst = f"in {g.modules}"
        cost = _bytes_cell(g)
        cost = f"{cost} per call" if cost not in ("-", "0 B") else ""
        if timed and g.time_ns is not None:
            cost += f", {ms(g.time_ns)}"
        head = "  ".join(x for x in (f"{g.code} {g.severity!s:<7}", g.location, inst, cost) if x)
        out.append(head)
        out.extend(textwrap.wrap(g.message, wrap, initial_indent="    ", subsequent_indent="    "))
        if g.fix:
            out.extend(textwrap.wrap("fix: " + g.fix, wrap, initial_indent="    ", subsequent_indent="      "))
        if g.statuses:
            eager = next((f.eager_site for f in g.findings if f.eager_site), None)
            compiled_only = any(f.compiled_only for f in g.findings)
            why_not_run = (" (eager does not run this line: it runs only under torch.compile)" if compiled_only
                           else " (the audited call did not run this line: it runs only on some calls, or only "
                                "while torch.compile traces)")
            out.append("    runtime: " + ", ".join(f"{n} {s}" for s, n in sorted(g.statuses.items()))
                       + (why_not_run if "not-run" in g.statuses else "")
                       + (f" (eager makes the same copy at {clean_path(eager[0]) or eager[0]}:{eager[1]})"
                          if eager else ""))
        verdict = compiled_text(g.findings)
        if verdict:
            out.append("    under Inductor: " + verdict)
        out.append("")
    return "\n".join(out).rstrip("\n")


def _place(u: dict[str, Any]) -> str:
    """A compiled copy's place: its user line, else its graph node, else Inductor's buffer."""
    if u.get("file") is not None:
        return f"{u['file']}:{u.get('line')}"
    return f"<graph>:{u['producer']}" if u.get("producer") else f"<inductor>:{u['buffer']}"


def _made_by(u: dict[str, Any]) -> str:
    """``the op's lowering (repeat): a load/store kernel``, or why nothing more is known."""
    kernel = "a kernel of copy ops" if u.get("why") == "copy ops" else "a load/store kernel"
    if not u.get("producer"):
        return f"{kernel} with no provenance (Inductor's own, e.g. an input or weight it lays out)"
    return f"`{u.get('op') or u['producer']}` ({u['producer']}): {kernel}"


def compiled_check_lines(check: dict | None) -> list[str]:
    """``lint(..., compiled=True, confirm=True)``: the verdicts held to the measured compiled program."""
    if not check:
        return []
    s = check["summary"]
    if not s["known"]:
        return [f"The compiled program could not be measured: {s['why_unknown']}.", ""]
    sv, fu = s["survives"], s["fused"]
    lines = [f"The compiled program, measured (Inductor's output code and the profiler): survives verdicts "
             f"{sv['confirmed']} confirmed, {sv['refuted']} refuted, {sv['not-run']} not run; fused verdicts "
             f"{fu['confirmed']} confirmed, {fu['refuted']} refuted; "
             + (f"{human_bytes(s['covered_bytes'])} of its {human_bytes(s['bytes_per_call'])} of copies per call "
                f"sit on a line with a finding." if s["bytes_per_call"] else "it makes no avoidable copy.")]
    if check["misses"]:
        rows = [[location_text(f"{m['file']}:{m['line']}"), m["phase"], human_bytes(m["bytes"]),
                 ", ".join(m["kernels"])] for m in check["misses"][:20]]
        lines.append("Copies of the compiled program on lines without a finding:")
        lines.append(tabulate(rows, headers=["Location", "Phase", "Bytes/call", "Kernels"], tablefmt="simple",
                              maxcolwidths=[None, None, None, 70]))
    lines.append("")
    return lines


def compiled_text(findings: list[Finding]) -> str:
    """The verdicts of the compiled program (``Finding.compiled``): ``survives, 49.2 kB per call``,
    ``fused (no copy of its own)``, ``unknown``; counted when the findings differ."""
    verdicts = [f.compiled for f in findings if f.compiled]
    if not verdicts:
        return ""
    kinds = list(dict.fromkeys(verdicts))
    words = {"survives": "survives", "fused": "fused (no copy of its own)", "unknown": "not known"}
    if len(kinds) == 1:
        text = words.get(kinds[0], kinds[0])
        known = [f.compiled_bytes for f in findings if f.compiled == "survives" and f.compiled_bytes is not None]
        if known:
            text += f", {human_bytes(sum(known))} per call"
        after = [f.compiled_backward_bytes for f in findings if f.compiled_backward_bytes]
        if after:  # what the compiled backward copies for it
            text += f"{',' if known else ';'} {human_bytes(sum(after))} per training step in the backward"
        return text
    return ", ".join(f"{verdicts.count(k)} {words.get(k, k)}" for k in kinds)


def _finding_table(findings: list[Finding], width: int, sort: str) -> str:
    rows = []
    ordered = sorted(findings, key=lambda f: (-f.severity.rank, -(f.time_ns or 0))) if sort == "time" \
        else sort_by_harm(findings)
    for f in ordered:
        text = f.message + (f"\nfix: {f.fix}" if f.fix else "")
        if f.status:
            text += f"\nruntime: {f.status}"
        if f.compiled:
            text += f"\nunder Inductor: {compiled_text([f])}"
        rows.append([f.code, str(f.severity), f.location, f.module_path or "-", _bytes_cell(f), text])
    msg_width = max(40, width - 70)
    return tabulate(rows, headers=["Code", "Severity", "Location", "Module", "Bytes/call", "Message"],
                    tablefmt="simple", maxcolwidths=[None, None, 40, 24, None, msg_width])


def summary_line(report: Report, *, groups: int | None = None, hidden: int = 0) -> str:
    s = report.summary()
    if not s["findings"]:
        head = "No findings"
    else:
        sev = [f"{s[k]} {name}{'s' if s[k] != 1 else ''}" for k, name in
               (("errors", "error"), ("warnings", "warning"), ("infos", "info")) if s[k]]
        head = f"{s['findings']} finding{'s' if s['findings'] != 1 else ''}"
        if groups is not None and groups != s["findings"] - hidden:
            head += f" on {groups} line{'s' if groups != 1 else ''}"
        head += f" ({', '.join(sev)})"
    parts = [head]
    if s["bytes_per_call"]:
        parts.append(f"{human_bytes(s['bytes_per_call'])} copied per call")
    if hidden:
        parts.append(f"{hidden} in installed packages not shown (--scope all)")
    if s["suppressed"]:
        parts.append(f"{s['suppressed']} suppressed")
    if s.get("baselined"):
        parts.append(f"{s['baselined']} in the baseline")
    parts.append(f"{s['graphs']} graph{'s' if s['graphs'] != 1 else ''} analysed")
    if "compiled" in s:
        c = s["compiled"]
        parts.append(f"under Inductor: {c['survives']} survive{'s' if c['survives'] == 1 else ''}"
                     + (f" ({human_bytes(c['bytes_per_call'])} per call)" if c["bytes_per_call"] else "")
                     + (f" (the backward: {human_bytes(c['backward_bytes_per_step'])} per training step)"
                        if c.get("backward_bytes_per_step") else "")
                     + f", {c['fused']} fused, {c['unknown']} unknown")
    if "confirmed" in s:
        parts.append(f"runtime: {s['confirmed']} confirmed, {s['refuted']} refuted, {s['not_run']} not run")
    if s["graph_breaks"]:
        parts.append(f"{s['graph_breaks']} graph break{'s' if s['graph_breaks'] != 1 else ''}")
    return ", ".join(parts) + "."

"""A self-contained HTML report: like a coverage report, but for copies.

One file, no network: the styles and the little script are inline, the
charts are inline SVG. It shows

* "fix first": the three most valuable actions (errors first, then the costliest
  warnings, never an info), each with its line, the fix and what it saves;
* the summary: findings, lines, bytes per call, and with the runtime audit
  the time the copies take (the call timed without the profiler, split by the
  profiler's shares); a bar chart per rule and one of the top lines (warnings
  and errors: an info never leads a chart);
* each file's source around the lines that copy, highlighted by cost (a heat
  scale), with the findings inline under their line (message, fix, runtime
  verdict, the module instances);
* the runtime copies no finding explains, the graph breaks, and the rewrites
  ``fxlint fix`` would apply (graph code before/after, the source edit).

Everything is rendered here, in Python, so the page needs no script to show
its content; the script only sorts the tables and expands whole files. Large
reports stay fast: each file shows a window of context around its hit lines,
not every line.
"""

from __future__ import annotations

import datetime
import hashlib
import html
import json
import linecache
import math
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .._present import html_renderer_for
from .._version import __version__
from ..findings import Report, Severity
from ..reporting.grouping import Group, group_findings, library_of, short_path
from ..tensor.info import human_bytes
from .text import compiled_text, ms, saving_text, time_sentence

if TYPE_CHECKING:  # pragma: no cover
    from ..rewrite.base import RewriteResult

#: lines of source shown around each hit line
CONTEXT = 3
#: heat classes: h1 (cheapest) .. h5 (the most expensive line)
HEAT_LEVELS = 5

_CSS = """
:root{--fg:#1d2330;--muted:#5b6475;--bg:#fff;--line:#e6e9ef;--accent:#3461c1;--warn:#b26a00;--err:#b3261e;
--info:#2e7d32;--h1:#fff5e6;--h2:#ffe6c2;--h3:#ffd199;--h4:#ffb366;--h5:#ff8f66}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
margin:0;background:var(--bg)}header{padding:18px 28px;border-bottom:1px solid var(--line);background:#f7f8fb}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 10px}h3{font-size:15px;margin:18px 0 6px}
main{padding:8px 28px 40px;max-width:1400px}.muted{color:var(--muted)}code,pre,.src td{font-family:ui-monospace,
SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}.cards{display:flex;gap:14px;flex-wrap:wrap;margin:14px 0}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 14px;min-width:150px}.card b{display:block;
font-size:20px}.charts{display:flex;gap:28px;flex-wrap:wrap}.chart{flex:1 1 480px}svg text{font:12px system-ui,
sans-serif;fill:var(--fg)}table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:4px 8px;
border-bottom:1px solid var(--line);vertical-align:top}th{cursor:pointer;user-select:none;background:#f7f8fb}
th.sorted-desc::after{content:" \\25BE"}th.sorted-asc::after{content:" \\25B4"}.sev-error{color:var(--err);
font-weight:600}.sev-warning{color:var(--warn);font-weight:600}.sev-info{color:var(--info)}
.file{border:1px solid var(--line);border-radius:8px;margin:14px 0;overflow:hidden}.file>h3{margin:0;padding:8px 12px;
background:#f7f8fb;border-bottom:1px solid var(--line)}.lib{font-size:11px;background:#eef1f8;color:var(--accent);
border-radius:4px;padding:1px 6px;margin-left:6px}table.src td{border:0;padding:0 8px;white-space:pre}
table.src td.ln{color:var(--muted);text-align:right;width:1%;user-select:none}table.src tr.gap td{color:var(--muted);
background:#fafbfc}tr.hit.h1 td{background:var(--h1)}tr.hit.h2 td{background:var(--h2)}tr.hit.h3 td{background:
var(--h3)}tr.hit.h4 td{background:var(--h4)}tr.hit.h5 td{background:var(--h5)}tr.finding td{white-space:normal;
padding:6px 12px 10px 56px;background:#fbfcfe;border-top:1px dashed var(--line);border-bottom:1px dashed var(--line)}
.fd{margin:4px 0}.fd .fix{color:var(--muted)}.pill{display:inline-block;border-radius:10px;padding:0 8px;
font-size:11.5px;background:#eef1f8;margin-left:6px}.ok{background:#e3f4e6}.bad{background:#fde7e5}
pre.diff{background:#f7f8fb;padding:8px;border-radius:6px;overflow:auto}.del{color:#a11}.add{color:#175f1a}
.legend span{display:inline-block;width:18px;height:12px;margin:0 2px;vertical-align:middle}
#fix-first{padding-left:0;list-style:none}li.first{border:1px solid var(--line);border-left:4px solid var(--warn);
border-radius:8px;padding:8px 12px;margin:8px 0}li.first.sev-border-error{border-left-color:var(--err)}
li.first pre{margin:4px 0;background:#f7f8fb;padding:4px 8px;border-radius:4px}
button{font:inherit;border:1px solid var(--line);background:#fff;border-radius:6px;padding:2px 8px;cursor:pointer}
"""

_JS = """
(function(){
  function val(td){var v=td.getAttribute('data-sort');if(v!==null)return parseFloat(v);return td.textContent.trim();}
  document.querySelectorAll('table.sortable').forEach(function(t){
    var ths=t.querySelectorAll('thead th');
    ths.forEach(function(th,i){th.addEventListener('click',function(){
      var asc=th.classList.contains('sorted-desc');
      ths.forEach(function(x){x.classList.remove('sorted-asc','sorted-desc');});
      th.classList.add(asc?'sorted-asc':'sorted-desc');var body=t.tBodies[0];
      var rows=Array.prototype.slice.call(body.rows);
      rows.sort(function(a,b){var x=val(a.cells[i]),y=val(b.cells[i]);if(typeof x==='number'&&typeof y==='number')
        return asc?x-y:y-x;return asc?String(x).localeCompare(String(y)):String(y).localeCompare(String(x));});
      rows.forEach(function(r){body.appendChild(r);});});});});
  document.querySelectorAll('button.whole').forEach(function(b){b.addEventListener('click',function(){
    var f=document.getElementById(b.getAttribute('data-file'));f.querySelectorAll('tr.gap').forEach(function(g){
      g.style.display='none';});f.querySelectorAll('tr.hidden').forEach(function(r){r.classList.remove('hidden');
      r.style.display='';});b.disabled=true;});});
  document.documentElement.setAttribute('data-ready','1');
})();
"""


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _bar_chart(items: list[tuple[str, float, str]], unit: str, title: str) -> str:
    """A horizontal bar chart as inline SVG: ``(label, value, value text)`` per bar."""
    if not items:
        return f'<div class="chart"><h3>{_e(title)}</h3><p class="muted">nothing to show</p></div>'
    top = max(v for _, v, _ in items) or 1.0
    row, label_w, bar_w = 22, 300, 320
    h = row * len(items) + 10
    parts = [f'<svg role="img" aria-label="{_e(title)}" width="{label_w + bar_w + 110}" height="{h}" '
             f'viewBox="0 0 {label_w + bar_w + 110} {h}">']
    for i, (label, value, text) in enumerate(items):
        y = 5 + i * row
        w = max(1.0, bar_w * value / top) if value > 0 else 0
        short = label if len(label) <= 44 else "..." + label[-41:]
        parts.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end"><title>{_e(label)}</title>{_e(short)}'
                     f'</text><rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row - 8}" rx="3" '
                     f'fill="#3461c1" fill-opacity="0.8"/><text x="{label_w + w + 6:.1f}" y="{y + 14}">{_e(text)}'
                     '</text>')
    parts.append("</svg>")
    return f'<div class="chart"><h3>{_e(title)}</h3>{"".join(parts)}</div>'


def _cost(g: Group, timed: bool) -> float:
    return float(g.time_ns or 0) if timed and g.time_ns else float(g.bytes or 0)


def _heat(value: float, top: float) -> int:
    if top <= 0 or value <= 0:
        return 1
    # logarithmic: a line costing 1% of the top one is still visibly warm
    frac = math.log1p(99 * value / top) / math.log(100)
    return max(1, min(HEAT_LEVELS, 1 + int(frac * HEAT_LEVELS - 1e-9)))


@html_renderer_for(Report)
def render_notebook(report: Report) -> str:
    """The report as a notebook cell shows it (``Report._repr_html_``): the page in an iframe (``srcdoc``),
    so its styles (``body``, ``table``, ``h1``...) and its script stay inside it instead of restyling the
    notebook around it."""
    return (f'<iframe class="fxlint-report" title="fxlint report" srcdoc="{_e(render_html(report))}" '
            'style="width:100%;height:640px;border:1px solid #e6e9ef;border-radius:6px"></iframe>')


def render_html(report: Report, *, title: str = "fxlint report", rewrites: RewriteResult | None = None,
                rewrite_error: str | None = None, sort: str | None = None) -> str:
    """The report as one self-contained HTML page (see the module docstring)."""
    timed = report.audit_summary is not None
    sort = sort or ("time" if timed else "bytes")
    groups = group_findings(report.findings, sort=sort)
    s = report.summary()
    lines_hit = len({(g.file, g.line) if g.file is not None else (None, g.node) for g in groups})
    out: list[str] = []
    generated = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    out.append(f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
               f"content=\"width=device-width,initial-scale=1\"><title>{_e(title)}</title><style>{_CSS}</style>"
               f"</head><body><header><h1>{_e(title)}</h1><div class=\"muted\">fxlint {__version__} · {generated}"
               f" · {s['graphs']} graph{'s' if s['graphs'] != 1 else ''} analysed"
               + (f" · {s['graph_breaks']} graph break{'s' if s['graph_breaks'] != 1 else ''}" if s["graph_breaks"]
                  else "") + "</div></header><main>")
    out.append(_fix_first(groups, train=bool((report.audit_summary or {}).get("train"))))
    out.append(_summary(report, groups, lines_hit, timed))
    out.append(_findings_table(groups, timed))
    out.append(_files(groups, timed))
    out.append(_unexplained(report))
    out.append(_breaks(report))
    out.append(_rewrites(rewrites, rewrite_error))
    if report.errors:
        out.append("<h2>Internal errors</h2><ul>" + "".join(f"<li>{_e(e)}</li>" for e in report.errors) + "</ul>")
    data = {"summary": s, "groups": len(groups), "lines": lines_hit}
    out.append(f'<script type="application/json" id="fxlint-data">{_e(json.dumps(data, default=str))}</script>')
    out.append(f"<script>{_JS}</script></main></body></html>")
    return "".join(out)


def _fix_first(groups: list[Group], n: int = 3, *, train: bool = False) -> str:
    """The ``n`` most valuable things to do, above the fold: errors first (a parameter that never trains,
    a program that raises on the device), then the costliest warnings; never an info. Each: the line,
    what is wrong, the fix, and what fixing it is expected to save."""
    picks = [g for g in groups if g.severity is not Severity.INFO][:n]
    if not picks:
        return ""
    cards = []
    for i, g in enumerate(picks, 1):
        anchor = f"L-{_file_id(g.file)}-{g.line}" if g.file else ""
        where = f'<a href="#{anchor}">{_e(g.location)}</a>' if anchor else _e(g.location)
        saves = saving_text(g.saving, error=g.severity is Severity.ERROR, train=train)
        fix = f'<div class="fix">fix: {_e(g.fix)}</div>' if g.fix else ""
        src = f"<pre>{_e(g.source)}</pre>" if g.source else ""
        cards.append(f'<li class="first sev-border-{g.severity.value}"><b>{i}. {where} · {_e(g.code)} {_e(g.name)}</b>'
                     f' <span class="sev-{g.severity.value}">{_e(g.severity.value)}</span>'
                     f'{" · " + f"<span class=saving>{_e(saves)}</span>" if saves else ""}{src}'
                     f'<div class="what">{_e(_first_sentence(g.message))}</div>{fix}</li>')
    return f'<h2>Fix first</h2><ol id="fix-first">{"".join(cards)}</ol>'


def _summary(report: Report, groups: list[Group], lines_hit: int, timed: bool) -> str:
    s = report.summary()
    cards = [("findings", s["findings"], f"{s['findings']}"), ("lines", lines_hit, f"{lines_hit}"),
             ("bytes-per-call", s["bytes_per_call"],
              human_bytes(s["bytes_per_call"]) if s["bytes_per_call"] else "0 B"),
             ("errors", s["errors"], str(s["errors"])), ("warnings", s["warnings"], str(s["warnings"])),
             ("infos", s["infos"], str(s["infos"]))]
    labels = {"findings": "findings", "lines": "source lines", "bytes-per-call": "copied per call",
              "errors": "errors", "warnings": "warnings", "infos": "infos"}
    if timed and report.audit_summary is not None:
        a = report.audit_summary
        cards.append(("copy-ms", a.get("copy_ns", 0), ms(a.get("copy_ns", 0))))
        labels["copy-ms"] = f"of {ms(a.get('call_ns', 0))} per call in copies"
        for k in ("confirmed", "refuted", "not_run"):
            cards.append((k.replace("_", "-"), s.get(k, 0), str(s.get(k, 0))))
            labels[k.replace("_", "-")] = k.replace("_", " ")
    html_cards = "".join(f'<div class="card" id="card-{k}" data-value="{_e(v)}"><b>{_e(text)}</b>'
                         f'<span class="muted">{_e(labels[k])}</span></div>' for k, v, text in cards)
    per_rule: dict[str, float] = defaultdict(float)
    per_rule_n: dict[str, int] = defaultdict(int)
    names: dict[str, str] = {}
    charted = [g for g in groups if g.severity is not Severity.INFO]  # an info never leads a chart
    for g in charted:
        per_rule[g.code] += _cost(g, timed)
        per_rule_n[g.code] += g.count
        names[g.code] = g.name
    rule_items = sorted(((f"{c} {names[c]} ×{per_rule_n[c]}", v, ms(int(v)) if timed else human_bytes(int(v)))
                         for c, v in per_rule.items()), key=lambda t: -t[1])
    top_items = [(f"{g.location} {g.code}", _cost(g, timed), ms(g.time_ns) if timed and g.time_ns
                  else human_bytes(g.bytes or 0)) for g in sorted(charted, key=lambda g: -_cost(g, timed))[:10]]
    what = "measured copy time per call" if timed else "bytes copied per call"
    charts = (f'<div class="charts">{_bar_chart(rule_items, what, f"Per rule ({what})")}'
              f'{_bar_chart(top_items, what, f"Top lines ({what})")}</div>')
    sentence = f'<p id="time-sentence">{_e(time_sentence(report.audit_summary))}</p>' \
        if report.audit_summary is not None else \
        '<p class="muted">Run with the audit (<code>fxlint report</code> does; <code>fxlint lint --confirm</code>) ' \
        "to see the time the copies take.</p>"
    return f'<h2>Summary</h2><div class="cards">{html_cards}</div>{sentence}{charts}'


def _findings_table(groups: list[Group], timed: bool) -> str:
    if not groups:
        return '<h2>Findings</h2><p id="no-findings">No findings.</p>'
    rows = []
    # judged on the compiled program too (lint --compiled): eager's bytes and what Inductor's program does, side by side
    compiled = any(f.compiled is not None for g in groups for f in g.findings)
    for g in groups:
        anchor = f"L-{_file_id(g.file)}-{g.line}" if g.file else ""
        where = f'<a href="#{anchor}">{_e(g.location)}</a>' if anchor else _e(g.location)
        lib = f'<span class="lib">{_e(g.library)}</span>' if g.library else ""
        if compiled:
            eager = [f.bytes for f in g.findings if f.bytes is not None]
            cells = (f'<td data-sort="{sum(eager)}">{_e(human_bytes(sum(eager)) if eager else "-")}</td>'
                     f'<td class="compiled" data-sort="{g.bytes or 0}">{_e(compiled_text(g.findings) or "-")}</td>')
        else:
            cells = f'<td data-sort="{g.bytes or 0}">{_e(human_bytes(g.bytes) if g.bytes is not None else "-")}</td>'
        rows.append(
            f'<tr class="group" data-group="{_e(g.key)}"><td>{_e(g.code)}</td>'
            f'<td class="sev-{g.severity.value}">{_e(g.severity.value)}</td><td>{where}{lib}</td>'
            f'<td data-sort="{g.count}">{g.count}</td><td>{_e(g.modules or "-")}</td>' + cells
            + (f'<td data-sort="{g.time_ns or 0}">{_e(ms(g.time_ns))}</td>' if timed else "")
            + f"<td>{_e(_first_sentence(g.message))}</td></tr>")
    bytes_head = "<th>Eager bytes/call</th><th>Under Inductor</th>" if compiled else "<th>Bytes/call</th>"
    head = ("<tr><th>Code</th><th>Severity</th><th>Location</th><th>Instances</th><th>Modules</th>"
            + bytes_head + ("<th>Time</th>" if timed else "") + "<th>What</th></tr>")
    return (f'<h2>Findings by line</h2><p class="muted">One row per rule and source line; click a column to sort.</p>'
            f'<table class="sortable" id="groups"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>')


def _first_sentence(text: str, limit: int = 160) -> str:
    cut = text.split("; ", 1)[0]
    return cut if len(cut) <= limit else cut[: limit - 3] + "..."


def _file_id(path: str | None) -> str:
    return "f" + hashlib.sha1(path.encode()).hexdigest()[:10] if path else "fnone"


def _files(groups: list[Group], timed: bool) -> str:
    by_file: dict[str, list[Group]] = defaultdict(list)
    for g in groups:
        if g.file is not None and g.line is not None:
            by_file[g.file].append(g)
    if not by_file:
        return ""
    top = max((_line_cost(gs, timed) for gs in _by_line(by_file).values()), default=0.0)
    order = sorted(by_file, key=lambda f: (library_of(f) is not None, -sum(_cost(g, timed) for g in by_file[f])))
    parts = ['<h2>Source</h2><p class="muted legend">Lines that copy, by cost: '
             + "".join(f'<span style="background:var(--h{i})"></span>' for i in range(1, HEAT_LEVELS + 1))
             + " (cheap to expensive). Findings are shown under their line.</p>"]
    for path in order:
        parts.append(_file_block(path, by_file[path], top, timed))
    return "".join(parts)


def _by_line(by_file: dict[str, list[Group]]) -> dict[tuple[str, int], list[Group]]:
    out: dict[tuple[str, int], list[Group]] = defaultdict(list)
    for path, gs in by_file.items():
        for g in gs:
            out[(path, g.line or 0)].append(g)
    return out


def _line_cost(gs: Iterable[Group], timed: bool) -> float:
    return sum(_cost(g, timed) for g in gs)


def _file_block(path: str, groups: list[Group], top: float, timed: bool) -> str:
    fid = _file_id(path)
    lib = library_of(path)
    source = linecache.getlines(path)
    hits: dict[int, list[Group]] = defaultdict(list)
    for g in groups:
        hits[g.line or 0].append(g)
    shown: set[int] = set()
    for ln in hits:
        shown.update(range(max(1, ln - CONTEXT), ln + CONTEXT + 1))
    n = len(source)
    rows: list[str] = []
    prev = 0
    limit = n if n else max(hits)
    for ln in range(1, limit + 1):
        visible = ln in shown
        if visible and prev and ln > prev + 1:
            rows.append('<tr class="gap"><td class="ln">⋮</td><td></td></tr>')
        text = source[ln - 1].rstrip("\n") if ln <= n else ""
        if ln in hits:
            heat = _heat(_line_cost(hits[ln], timed), top)
            rows.append(f'<tr class="hit h{heat}" id="L-{fid}-{ln}" data-line="{ln}" data-heat="{heat}">'
                        f'<td class="ln">{ln}</td><td>{_e(text)}</td></tr>')
            rows.append(f'<tr class="finding"><td colspan="2">{"".join(_finding_html(g, timed) for g in hits[ln])}'
                        "</td></tr>")
        elif visible:
            rows.append(f'<tr><td class="ln">{ln}</td><td>{_e(text)}</td></tr>')
        elif n <= 2000:
            rows.append(f'<tr class="hidden" style="display:none"><td class="ln">{ln}</td><td>{_e(text)}</td></tr>')
        if visible:
            prev = ln
    button = (f' <button class="whole" data-file="{fid}">whole file</button>' if n and n <= 2000 else "")
    label = f'<span class="lib">{_e(lib)}</span>' if lib else ""
    cost = _line_cost(groups, timed)
    cost_text = ms(int(cost)) if timed else human_bytes(int(cost))
    return (f'<section class="file" id="{fid}"><h3>{_e(short_path(path))}{label} <span class="muted">'
            f'{len(hits)} line{"s" if len(hits) != 1 else ""}, {_e(cost_text)}</span>{button}</h3>'
            f'<table class="src">{"".join(rows)}</table></section>')


def _finding_html(g: Group, timed: bool) -> str:
    status = ""
    if g.statuses:
        status = "".join(f'<span class="pill {"ok" if s == "confirmed" else "bad" if s == "refuted" else ""}">'
                         f"{n} {_e(s)}</span>" for s, n in sorted(g.statuses.items()))
    inst = f" ×{g.count} in {g.modules}" if g.count > 1 and g.modules else (f" in {g.modules}" if g.modules else "")
    cost = human_bytes(g.bytes) if g.bytes is not None else (g.bytes_expr or "")
    t = f", {ms(g.time_ns)}" if timed and g.time_ns is not None else ""
    fix = f'<div class="fix">fix: {_e(g.fix)}</div>' if g.fix else ""
    verdict = compiled_text(g.findings)
    under = f'<div class="compiled">under Inductor: {_e(verdict)}</div>' if verdict else ""
    return (f'<div class="fd" data-group="{_e(g.key)}"><b>{_e(g.code)} {_e(g.name)}</b> '
            f'<span class="sev-{g.severity.value}">{_e(g.severity.value)}</span>{_e(inst)} · {_e(cost)}{_e(t)}'
            f"{status}<div>{_e(g.message)}</div>{fix}{under}</div>")


def _unexplained(report: Report) -> str:
    if report.audit_summary is None:
        return ""
    if not report.unexplained:
        return '<h2>Runtime copies no finding explains</h2><p id="no-unexplained">None: every avoidable copy the ' \
               "audit saw on your lines has a finding.</p>"
    rows = "".join(
        f'<tr><td>{_e(u["location"])}</td><td>{_e(u["module_path"] or "-")}</td><td data-sort="{u["count"]}">'
        f'{u["count"]}</td><td data-sort="{u["bytes"]}">{_e(human_bytes(u["bytes"]))}</td>'
        f'<td data-sort="{u.get("time_ns", 0)}">{_e(ms(u.get("time_ns")))}</td><td>{_e(", ".join(u["ops"]))}</td></tr>'
        for u in report.unexplained)
    return ('<h2>Runtime copies no finding explains</h2><p class="muted">The audit saw these avoidable copies; '
            'no rule predicted them.</p><table class="sortable" id="unexplained"><thead><tr><th>Location</th>'
            '<th>Module</th><th>Copies</th><th>Bytes/call</th><th>Time</th><th>Ops (top&gt;copy)</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>")


def _breaks(report: Report) -> str:
    breaks = report.extras.get("breaks") or []
    if not breaks:
        return ""
    items = []
    for b in breaks:
        loc = b.location
        where = f"{short_path(loc.file)}:{loc.line}" if loc is not None else "(inside torch)"
        items.append(f"<li><code>{_e(where)}</code> {_e(b.headline)}"
                     + (f' <span class="muted">hint: {_e(b.hint)}</span>' if b.hint else "") + "</li>")
    return f'<h2>Graph breaks</h2><ul id="breaks">{"".join(items)}</ul>'


def _rewrites(result: RewriteResult | None, error: str | None) -> str:
    if result is None and error is None:
        return ""
    head = "<h2>Rewrites <code>fxlint fix</code> would apply</h2>"
    if result is None:
        return head + f'<p class="muted" id="rewrites-error">Not shown: {_e(error)}</p>'
    if not result.applied and not result.skipped:
        return head + '<p id="no-rewrites">No rewrite applies to this model.</p>'
    parts = [head]
    for a in result.applied:
        saved = f" ({human_bytes(a.bytes_saved)} less copied per call)" if a.bytes_saved else ""
        diff = "\n".join([f'<span class="del">- {_e(x)}</span>' for x in a.before.splitlines()]
                         + [f'<span class="add">+ {_e(x)}</span>' for x in a.after.splitlines()])
        src = ""
        if a.source_edit is not None:
            b, af = a.source_edit
            src = (f'<div>source (suggested edit):</div><pre class="diff"><span class="del">- {_e(b)}</span>\n'
                   f'<span class="add">+ {_e(af)}</span></pre>')
        parts.append(f'<div class="rw"><h3><code>{_e(a.location)}</code> {_e(a.code)} {_e(a.name)}</h3>'
                     f"<p>{_e(a.description)}{_e(saved)}</p><div>graph:</div>"
                     f"<pre class=\"diff\">{diff}</pre>{src}</div>")
    if result.skipped:
        parts.append("<h3>Not applied</h3><ul>" + "".join(
            f"<li><code>{_e(s.location)}</code> {_e(s.code)}: {_e(s.reason)}</li>" for s in result.skipped) + "</ul>")
    return "".join(parts)

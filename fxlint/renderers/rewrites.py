"""Render a ``RewriteResult``: what ``fxlint fix`` prints, ``str(result)``, and its JSON form."""

from __future__ import annotations

import html
import json
from dataclasses import asdict
from typing import Any

from .._present import html_renderer_for, text_renderer_for
from ..rewrite.base import AppliedRewrite, RewriteResult, SkippedRewrite
from ..tensor.info import human_bytes


def saved_text(a: AppliedRewrite) -> str:
    return f" ({human_bytes(a.bytes_saved)} less copied per call)" if a.bytes_saved else ""


def applied_line(a: AppliedRewrite) -> str:
    """``file:line CODE applied: description (N less copied per call)``."""
    return f"{a.location} {a.code} applied: {a.description}{saved_text(a)}"


@text_renderer_for(SkippedRewrite)
def skipped_line(s: SkippedRewrite) -> str:
    return f"{s.location} {s.code} not applied: {s.reason}"


def check_text(result: RewriteResult, flag: str = "verify=False") -> str:
    return f"verified ({result.checked})" if result.verified else f"not verified ({flag})"


def summary_line(result: RewriteResult, flag: str = "verify=False") -> str:
    return (f"{len(result.applied)} rewrite(s) applied, {len(result.skipped)} not applied; "
            f"{check_text(result, flag)}")


@text_renderer_for(RewriteResult)
def render_result_brief(result: RewriteResult) -> str:
    """One line per site and a summary (``str(result)``)."""
    lines = [applied_line(a) for a in result.applied]
    lines.extend(skipped_line(s) for s in result.skipped)
    lines.append(summary_line(result))
    return "\n".join(lines)


@html_renderer_for(RewriteResult)
def render_result_html(result: RewriteResult) -> str:
    """The result as an HTML fragment (a notebook cell's output): each rewrite with its graph code
    before and after, the sites not rewritten with their reason, and the summary."""
    e = html.escape
    parts = ['<div class="fxlint-rewrites"><b>fxlint rewrites</b>']
    for a in result.applied:
        diff = "\n".join([f'<span style="color:#a11">- {e(x)}</span>' for x in a.before.splitlines()]
                         + [f'<span style="color:#175f1a">+ {e(x)}</span>' for x in a.after.splitlines()])
        parts.append(f"<p><code>{e(a.location)}</code> {e(a.code)} {e(a.name)}: {e(a.description)}"
                     f"{e(saved_text(a))}</p><pre>{diff}</pre>")
    if result.skipped:
        parts.append("<p>Not applied:</p><ul>" + "".join(
            f"<li><code>{e(s.location)}</code> {e(s.code)}: {e(s.reason)}</li>" for s in result.skipped) + "</ul>")
    parts.append(f"<p>{e(summary_line(result))}</p></div>")
    return "".join(parts)


def _diff(before: str, after: str, indent: str = "    ") -> list[str]:
    return [f"{indent}- {ln}" for ln in before.splitlines()] + [f"{indent}+ {ln}" for ln in after.splitlines()]


def render_fix_text(result: RewriteResult) -> str:
    """``fxlint fix``: each rewrite as graph code before/after and the source edit, then the sites
    not rewritten with their reason, then the summary."""
    out: list[str] = []
    for a in result.applied:
        saved = f"  ({human_bytes(a.bytes_saved)} less copied per call)" if a.bytes_saved else ""
        out.append(f"{a.location}  {a.code} {a.name}: {a.description}{saved}")
        out.append("  graph:")
        out.extend(_diff(a.before, a.after))
        if a.source_edit is not None:
            out.append("  source (suggested edit):")
            out.extend(_diff(*a.source_edit))
        out.append("")
    for s in result.skipped:
        out.append(f"{s.location}  {s.code} not applied: {s.reason}")
    if result.skipped:
        out.append("")
    n, k = len(result.applied), len(result.skipped)
    out.append(f"{n} rewrite{'s' if n != 1 else ''} applied, {check_text(result, '--no-verify')}; {k} not applied. "
               "No file was changed: `fxlint fix --diff` shows the source edits, `--apply` makes them; "
               "or use the rewritten graph (fxlint.rewrite / torch.compile(..., options={'rewrite': True})).")
    return "\n".join(out)


def result_dict(result: RewriteResult) -> dict[str, Any]:
    return {
        "applied": [asdict(a) for a in result.applied],
        "skipped": [asdict(s) for s in result.skipped],
        "verified": result.verified,
        "checked": result.checked,
        "bytes_saved_per_call": result.bytes_saved,
    }


def render_fix_json(result: RewriteResult) -> str:
    return json.dumps(result_dict(result), indent=2, default=str)

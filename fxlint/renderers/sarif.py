"""SARIF 2.1.0 output, as GitHub code scanning reads it.

Validated against the official OASIS schema in tests/test_sarif_schema.py
(formats included: URIs are percent-encoded). ``partialFingerprints`` use the
same line-shift-proof fingerprint as baselines, computed relative to the
working directory (``%SRCROOT%``), so an alert keeps its identity across
checkouts and edits above it.

Where a rule's source fix (``fxlint.srcfix``) locates the expression on the line, the region has its
``startColumn``/``endLine``/``endColumn`` and the result a ``fixes`` entry (one artifact change, one
replacement: the edit ``fxlint fix --diff`` shows; its description says whether it is safe). Each rule
descriptor's ``helpUri`` is its page, ``docs/rules/FXLNNN.md``, under ``RULE_DOCS``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .._version import __version__
from ..findings import Finding, Report, Severity
from ..registry import all_rules
from ..reporting.grouping import Group, group_findings, in_scope
from ..srcfix import CODES, NoEdit, SourceEdit, propose

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/fxlint/fxlint"
#: where a rule's page is (the repository's docs/rules/FXLNNN.md; mkdocs.yml sets no site_url)
RULE_DOCS = INFORMATION_URI + "/blob/main/docs/rules/{code}.md"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _file_uri(path: str, *, folder: bool = False) -> str:
    p = Path(os.path.abspath(path)).as_posix()
    if folder and not p.endswith("/"):
        p += "/"
    return "file://" + quote(p if p.startswith("/") else "/" + p)


def _uri(path: str) -> tuple[str, bool]:
    """(uri, relative to %SRCROOT%?), percent-encoded (spaces and non-ASCII are not valid in a URI)."""
    rel = os.path.relpath(os.path.abspath(path))
    if not rel.startswith(".."):
        return quote(Path(rel).as_posix()), True
    return _file_uri(path), False


def _message(f: Finding) -> str:
    text = f.message.rstrip()
    if f.fix:
        text += ("" if text.endswith((".", "!", "?")) else ".") + f" Fix: {f.fix}"
    return text


def _edit(f: Finding, sources: dict[str, Any]) -> SourceEdit | None:
    if f.code not in CODES:
        return None
    try:
        return propose(f, sources)
    except NoEdit:
        return None


def _fix(e: SourceEdit, art: dict[str, Any]) -> dict[str, Any]:
    safety = "safe" if e.safe else "unsafe (fxlint fix --apply --unsafe-fixes)"
    return {
        "description": {"text": f"{e.description}: {safety}; {e.why}"},
        "artifactChanges": [{
            "artifactLocation": art,
            "replacements": [{
                "deletedRegion": {"startLine": e.line, "startColumn": e.column,
                                  "endLine": e.end_line, "endColumn": e.end_column},
                "insertedContent": {"text": e.after},
            }],
        }],
    }


def _result(g: Group, fingerprint: str, index: dict[str, int], baseline: bool,
            sources: dict[str, Any]) -> dict[str, Any]:
    """One result per (rule, location): the module instances that hit it are counted in the
    properties (a 24-block model is one alert, not 24)."""
    f = g.first
    statuses = g.statuses
    res: dict[str, Any] = {
        "ruleId": f.code,
        "level": _LEVEL[g.severity],
        "message": {"text": _message(f) if g.count == 1 else _group_message(g)},
        "partialFingerprints": {"fxlint/v1": fingerprint},
        "properties": {k: v for k, v in
                       {"bytesPerCall": g.bytes, "bytesExpr": g.bytes_expr,
                        "modulePath": f.module_path if g.count == 1 else g.modules,
                        "instances": g.count, "modulePaths": g.module_paths if g.count > 1 else None,
                        "library": g.library,
                        "status": f.status if g.count == 1 else (
                            next(iter(statuses)) if len(statuses) == 1 else None),
                        "statuses": statuses if g.count > 1 and statuses else None}.items()
                        if v is not None},
    }
    if baseline:
        res["baselineState"] = "new"  # the baseline filtered the known ones out
    if f.code in index:
        res["ruleIndex"] = index[f.code]
    if f.file:
        uri, rel = _uri(f.file)
        art: dict[str, Any] = {"uri": uri}
        if rel:
            art["uriBaseId"] = "%SRCROOT%"
        phys: dict[str, Any] = {"artifactLocation": art}
        edit = _edit(f, sources) if f.line and f.line >= 1 else None
        if edit is not None:
            phys["region"] = {"startLine": edit.line, "startColumn": edit.column,
                              "endLine": edit.end_line, "endColumn": edit.end_column}
            res["fixes"] = [_fix(edit, dict(art))]
        elif f.line and f.line >= 1:
            phys["region"] = {"startLine": f.line}
        res["locations"] = [{"physicalLocation": phys}]
    elif f.node:
        res["locations"] = [{"logicalLocations": [{"name": f.node, "kind": "function"}]}]
    return res


def _group_message(g: Group) -> str:
    text = g.message.rstrip()
    text += ("" if text.endswith((".", "!", "?")) else ".") + (
        f" {g.count} module instances run this line ({g.modules}); the bytes are their total.")
    if g.fix:
        text += f" Fix: {g.fix}"
    return text


def sarif_dict(reports: Report | Iterable[Report], *, scope: str = "all") -> dict[str, Any]:
    """One SARIF log with one run holding the results of ``reports`` (one report or several):
    one result per rule and location (``scope``: ``all``, or ``user`` for the user's files only)."""
    from ..project.baseline import entries

    reports = [reports] if isinstance(reports, Report) else list(reports)
    rules = all_rules()
    index = {r.code: i for i, r in enumerate(rules)}
    descriptors = [
        {
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": r.summary},
            "fullDescription": {"text": r.summary},
            "help": {"text": r.doc, "markdown": r.doc},
            "helpUri": RULE_DOCS.format(code=r.code),
            "defaultConfiguration": {"level": _LEVEL[r.severity]},
        }
        for r in rules
    ]
    grouped = [(g, r) for r in reports
               for g in group_findings([f for f in r.findings if in_scope(f, scope)], sort="none")]
    prints = entries([g.first for g, _ in grouped], os.getcwd())
    sources: dict[str, Any] = {}
    results = [_result(g, e.fingerprint, index, "baseline" in r.extras, sources)
               for (g, r), e in zip(grouped, prints)]
    notes = [{"level": "error", "message": {"text": f"rule skipped: {err}"}} for r in reports for err in r.errors]
    invocation: dict[str, Any] = {"executionSuccessful": True}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "fxlint",
                        "version": __version__,
                        "informationUri": INFORMATION_URI,
                        "rules": descriptors,
                    }
                },
                "invocations": [invocation],
                "originalUriBaseIds": {"%SRCROOT%": {"uri": _file_uri(os.getcwd(), folder=True)}},
                "results": results,
            }
        ],
    }


def render_sarif(reports: Report | Iterable[Report], *, scope: str = "all") -> str:
    return json.dumps(sarif_dict(reports, scope=scope), indent=2, default=str)

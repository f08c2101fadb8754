"""SARIF 2.1.0 output, as GitHub code scanning reads it.

Validated against the official OASIS schema in tests/test_sarif_schema.py
(formats included: URIs are percent-encoded). ``partialFingerprints`` use the
same line-shift-proof fingerprint as baselines, computed relative to the
working directory (``%SRCROOT%``), so an alert keeps its identity across
checkouts and edits above it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import quote

from .. import __version__
from ..findings import Finding, Report, Severity
from ..registry import all_rules

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
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


def _result(f: Finding, fingerprint: str, index: dict[str, int], baseline: bool) -> dict[str, Any]:
    res: dict[str, Any] = {
        "ruleId": f.code,
        "level": _LEVEL[f.severity],
        "message": {"text": _message(f)},
        "partialFingerprints": {"fxlint/v1": fingerprint},
        "properties": {k: v for k, v in
                       {"bytesPerCall": f.bytes, "bytesExpr": f.bytes_expr, "modulePath": f.module_path,
                        "status": f.status}.items() if v is not None},
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
        if f.line and f.line >= 1:
            phys["region"] = {"startLine": f.line}
        res["locations"] = [{"physicalLocation": phys}]
    elif f.node:
        res["locations"] = [{"logicalLocations": [{"name": f.node, "kind": "function"}]}]
    return res


def sarif_dict(reports: Report | Iterable[Report]) -> dict[str, Any]:
    """One SARIF log with one run holding the results of ``reports`` (one report or several)."""
    from ..baseline import entries

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
            "defaultConfiguration": {"level": _LEVEL[r.severity]},
        }
        for r in rules
    ]
    findings = [(f, r) for r in reports for f in r.findings]
    prints = entries([f for f, _ in findings], os.getcwd())
    results = [_result(f, e.fingerprint, index, "baseline" in r.extras) for (f, r), e in zip(findings, prints)]
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
                        "informationUri": "https://github.com/fxlint/fxlint",
                        "rules": descriptors,
                    }
                },
                "invocations": [invocation],
                "originalUriBaseIds": {"%SRCROOT%": {"uri": _file_uri(os.getcwd(), folder=True)}},
                "results": results,
            }
        ],
    }


def render_sarif(reports: Report | Iterable[Report]) -> str:
    return json.dumps(sarif_dict(reports), indent=2, default=str)

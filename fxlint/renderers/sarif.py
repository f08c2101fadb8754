"""SARIF 2.1.0 output, as GitHub code scanning reads it."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from .. import __version__
from ..findings import Finding, Report, Severity
from ..registry import all_rules

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _uri(path: str) -> tuple[str, bool]:
    """(uri, relative to %SRCROOT%?)"""
    rel = os.path.relpath(path)
    if not rel.startswith(".."):
        return rel.replace(os.sep, "/"), True
    return "file://" + os.path.abspath(path).replace(os.sep, "/"), False


def _fingerprint(f: Finding) -> str:
    text = f"{f.code}|{f.file}|{(f.source or '').strip()}|{f.module_path}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def sarif_dict(report: Report) -> dict[str, Any]:
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
    results = []
    for f in report.findings:
        res: dict[str, Any] = {
            "ruleId": f.code,
            "level": _LEVEL[f.severity],
            "message": {"text": f.message + (f" Fix: {f.fix}" if f.fix else "")},
            "partialFingerprints": {"fxlint/v1": _fingerprint(f)},
            "properties": {k: v for k, v in
                           {"bytesPerCall": f.bytes, "bytesExpr": f.bytes_expr, "modulePath": f.module_path,
                            "status": f.status}.items() if v is not None},
        }
        if f.code in index:
            res["ruleIndex"] = index[f.code]
        if f.file:
            uri, rel = _uri(f.file)
            art: dict[str, Any] = {"uri": uri}
            if rel:
                art["uriBaseId"] = "%SRCROOT%"
            phys: dict[str, Any] = {"artifactLocation": art}
            if f.line:
                phys["region"] = {"startLine": f.line}
            res["locations"] = [{"physicalLocation": phys}]
        elif f.node:
            res["locations"] = [{"logicalLocations": [{"name": f.node, "kind": "function"}]}]
        results.append(res)
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
                "originalUriBaseIds": {"%SRCROOT%": {"uri": "file://" + os.getcwd().replace(os.sep, "/") + "/"}},
                "results": results,
            }
        ],
    }


def render_sarif(report: Report) -> str:
    return json.dumps(sarif_dict(report), indent=2, default=str)

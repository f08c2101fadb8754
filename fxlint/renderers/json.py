"""Machine-readable report: ``{"findings": [...], "summary": {...}}``."""

from __future__ import annotations

import json
from typing import Any

from .. import __version__
from ..findings import Report

FIELDS = ("code", "name", "severity", "message", "file", "line", "module_path", "bytes", "fix")


def report_dict(report: Report) -> dict[str, Any]:
    d = report.to_dict()
    d["version"] = __version__
    return d


def render_json(report: Report) -> str:
    return json.dumps(report_dict(report), indent=2, default=str)

"""Machine-readable report: ``{"findings": [...], "groups": [...], "summary": {...}}``.

Each finding carries ``group``, the id of its (code, source line) group, and ``column``,
``end_line``, ``end_column`` (1-based, end exclusive: the expression its rule's source fix locates on
the line, ``fxlint.srcfix.columns``; null where none is located); ``groups`` lists the
groups as the text report shows them (instances, modules, bytes summed, library), in that order.
``fxlint schema`` prints the JSON schema.
"""

from __future__ import annotations

import json
from typing import Any

from .._version import __version__
from ..findings import Report
from ..reporting.grouping import group_findings, group_key, in_scope
from ..srcfix import columns

FIELDS = ("code", "name", "severity", "message", "file", "line", "module_path", "bytes", "fix")


def report_dict(report: Report, *, scope: str = "all") -> dict[str, Any]:
    d = report.to_dict()
    if scope != "all":
        d["findings"] = [f for f, raw in zip(d["findings"], _sorted(report)) if in_scope(raw, scope)]
    groups = group_findings([f for f in report.findings if in_scope(f, scope)])
    ids = {group_key(f): g.key for g in groups for f in g.findings}
    sources: dict[str, Any] = {}
    for fd, f in zip(d["findings"], [f for f in _sorted(report) if in_scope(f, scope)]):
        fd["group"] = ids.get(group_key(f))
        span = columns(f, sources)
        fd["column"], fd["end_line"], fd["end_column"] = (span[1], span[2], span[3]) if span else (None, None, None)
    d["groups"] = [g.to_dict() for g in groups]
    if report.extras.get("compiled_check"):
        d["compiled_check"] = report.extras["compiled_check"]
    d["version"] = __version__
    return d


def _sorted(report: Report) -> list[Any]:
    from ..findings import sort_by_harm

    return sort_by_harm(report.findings)


def render_json(report: Report, *, scope: str = "all") -> str:
    return json.dumps(report_dict(report, scope=scope), indent=2, default=str)

"""Render a source-fix plan (``fxlint.srcfix``): the unified diff ``fxlint fix --diff`` prints, the one
line per edit and per site left alone, and the JSON form."""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import asdict
from typing import Any

from ..srcfix.model import FixPlan, SkippedEdit, SourceEdit


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def unified_diff(plan: FixPlan) -> str:
    """The edits as one unified diff of the user's files (``--- a/file`` ``+++ b/file`` for a file under
    the current folder, as ``git apply`` reads it; the absolute path otherwise); empty when there is no edit."""
    out: list[str] = []
    for path in plan.files():
        name = _shown(path)
        a, b = (name, name) if os.path.isabs(name) else (f"a/{name}", f"b/{name}")
        out.extend(difflib.unified_diff(plan.texts[path].splitlines(keepends=True),
                                        plan.edited_text(path).splitlines(keepends=True), fromfile=a, tofile=b))
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out)
    return text


def edit_line(e: SourceEdit) -> str:
    """``file:line:col CODE [safe|unsafe] before -> after (why)``."""
    return f"{_shown(e.file)}:{e.line}:{e.column} {e.code} {'safe' if e.safe else 'unsafe'}: {e.description} ({e.why})"


def skipped_line(s: SkippedEdit) -> str:
    where = f"{_shown(s.file)}:{s.line}" if s.file else "<graph>"
    return f"{where} {s.code} no source edit: {s.reason}"


def plan_lines(plan: FixPlan) -> list[str]:
    return [edit_line(e) for e in plan.edits] + [skipped_line(s) for s in plan.skipped]


def plan_summary(plan: FixPlan, verb: str) -> str:
    n, k = len(plan.edits), len(plan.files())
    unsafe = sum(1 for s in plan.skipped if s.reason.startswith("unsafe fix"))
    more = f" ({unsafe} unsafe, not made: --unsafe-fixes)" if unsafe else ""
    return (f"{n} edit{'s' if n != 1 else ''} {verb} in {k} file{'s' if k != 1 else ''}; "
            f"{len(plan.skipped)} finding{'s' if len(plan.skipped) != 1 else ''} without one{more}")


def plan_dict(plan: FixPlan, **extra: Any) -> dict[str, Any]:
    return {"edits": [asdict(e) for e in plan.edits], "skipped": [asdict(s) for s in plan.skipped],
            "diff": unified_diff(plan), **extra}


def render_plan_json(plan: FixPlan, **extra: Any) -> str:
    return json.dumps(plan_dict(plan, **extra), indent=2, default=str)

"""Make the plan: each finding's source fix, located and checked (see the package docstring).

Importing this module registers every rule's source fix (and imports libcst); ``fxlint.srcfix``
imports it on first use.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..findings import Finding
from . import (  # noqa: F401  (each module registers its rule's fix)
    fxl101_drop_contiguous,
    fxl103_drop_roundtrip,
    fxl104_repeat_to_expand,
    fxl107_factory_device,
    fxl108_drop_noop_conversion,
    fxl109_tensor_to_stack,
    fxl110_in_place_write,
    fxl111_in_place_masked_fill,
    fxl205_drop_zero_pad,
    fxl401_index_to_slice,
)
from .base import FIXES, NOT_MADE, Proposal
from .locate import SourceFile, not_editable
from .model import FixPlan, NoEdit, SkippedEdit, SourceEdit

__all__ = ["FIXES", "columns", "plan", "propose"]


def _edit(finding: Finding, source: SourceFile, p: Proposal) -> SourceEdit:
    r = source.positions[p.node]
    start, end = source.span(p.node)
    before = source.text[start:end]
    return SourceEdit(
        code=finding.code, file=source.path, line=r.start.line, column=r.start.column + 1,
        end_line=r.end.line, end_column=r.end.column + 1, start=start, end=end, before=before,
        after=p.after, safe=p.safe, why=p.why, description=f"{_one_line(before)} -> {_one_line(p.after)}",
        grad_changes=p.grad_changes)


def _one_line(code: str) -> str:
    """``F.pad(x,\n   (0, 0))`` -> ``F.pad(x, (0, 0))``, for messages."""
    return " ".join(part.strip() for part in code.splitlines())


def propose(finding: Finding, sources: dict[str, SourceFile]) -> SourceEdit:
    """The edit for one finding (``NoEdit`` with the reason when there is none)."""
    fn = FIXES.get(finding.code)
    if fn is None:
        raise NoEdit(NOT_MADE.get(finding.code, f"{finding.code} has no source fix"))
    if finding.line is None or finding.file is None:
        raise NoEdit("the finding has no source line (the graph has no stack trace)")
    why = not_editable(finding.file)
    if why:
        raise NoEdit(why)
    if finding.file not in sources:
        sources[finding.file] = SourceFile.load(finding.file)
    source = sources[finding.file]
    try:
        return _edit(finding, source, fn(finding, source))
    except NoEdit:
        raise
    except Exception as exc:  # a broken source fix costs its own edit, never the lint's output
        raise NoEdit(f"the {finding.code} source fix failed: {type(exc).__name__}: {exc}") from exc


def plan(findings: Iterable[Finding], *, unsafe: bool = False) -> FixPlan:
    """The edits for ``findings`` (unsafe ones only with ``unsafe``), and the findings left alone."""
    out = FixPlan()
    sources: dict[str, SourceFile] = {}
    seen: set[tuple[str, int, int]] = set()
    for f in findings:
        try:
            e = propose(f, sources)
        except NoEdit as exc:
            out.skipped.append(SkippedEdit(f.code, f.file, f.line, exc.reason))
            continue
        if (e.file, e.start, e.end) in seen and any(x.after == e.after and (x.file, x.start) == (e.file, e.start)
                                                    for x in out.edits):
            continue  # the same edit from a second finding on the line (an unrolled loop)
        if not e.safe and not unsafe:
            out.skipped.append(SkippedEdit(f.code, f.file, f.line,
                                           f"unsafe fix (--unsafe-fixes makes it): {e.description}; {e.why}"))
            continue
        clash = next((x for x in out.edits if x.file == e.file and x.start < e.end and e.start < x.end), None)
        if clash is not None:
            out.skipped.append(SkippedEdit(f.code, f.file, f.line,
                                           f"overlaps the {clash.code} edit at {clash.location}; rerun after it"))
            continue
        seen.add((e.file, e.start, e.end))
        out.edits.append(e)
        out.texts[e.file] = sources[e.file].text
    return out


def columns(finding: Finding, sources: dict[str, SourceFile] | None = None) -> tuple[int, int, int, int] | None:
    """(line, column, end line, end column), 1-based, of the expression a finding is about, where its
    rule's source fix locates it; None otherwise."""
    try:
        e = propose(finding, sources if sources is not None else {})
    except NoEdit:
        return None
    return e.line, e.column, e.end_line, e.end_column

"""Source fixes: the edits of the user's own files that ``fxlint fix --diff`` shows and ``--apply`` makes.

The graph rewrites (``fxlint.rewrite``) change a captured graph; a source fix changes the line a
finding points at, so the program itself no longer copies. For each finding whose rule has a source
fix (one module per rule here, ``fxlNNN_*.py``), the rule's function locates the expression on the
finding's line with libcst (``locate``) and proposes its replacement, written with the user's own
names and text (never Dynamo's); the edit is made on the file's text, so formatting and comments
survive. Each edit is safe or unsafe, with the reason (``SourceEdit.why``); unsafe edits are made only
when asked (``unsafe=True``, ``--unsafe-fixes``). A site that cannot be located unambiguously, a file
that is not the user's (site-packages, torch), or two edits that overlap: no edit, and why.

The rule modules (and libcst) load on first use (``planning``): a JSON or SARIF report whose findings
have no source fix does not import them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..findings import Finding
from .model import FixPlan, NoEdit, SkippedEdit, SourceEdit

__all__ = ["CODES", "FixPlan", "NoEdit", "SkippedEdit", "SourceEdit", "columns", "plan", "propose"]

#: the rules with a source fix, one module each (tests/test_fix_source.py checks it against the registry)
CODES = frozenset({"FXL101", "FXL103", "FXL104", "FXL107", "FXL108", "FXL109", "FXL110", "FXL111", "FXL205",
                   "FXL401"})


def plan(findings: Iterable[Finding], *, unsafe: bool = False) -> FixPlan:
    """The edits for ``findings`` (unsafe ones only with ``unsafe``), and the findings left alone."""
    from .planning import plan as make

    return make(findings, unsafe=unsafe)


def propose(finding: Finding, sources: dict[str, Any]) -> SourceEdit:
    """The edit for one finding (``NoEdit`` with the reason when there is none); ``sources`` caches the
    files read, by path."""
    from .planning import propose as make

    return make(finding, sources)


def columns(finding: Finding, sources: dict[str, Any] | None = None) -> tuple[int, int, int, int] | None:
    """(line, column, end line, end column), 1-based, of the expression a finding is about, where its
    rule's source fix locates it; None otherwise."""
    if finding.code not in CODES or not finding.file:
        return None
    from .planning import columns as locate

    return locate(finding, sources)

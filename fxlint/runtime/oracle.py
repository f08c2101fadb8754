"""The runtime as a test oracle: helpers for tests that compare static findings
with what the profiler records.

>>> from fxlint.runtime.oracle import check
>>> result = check(model, inputs, select=["FXL4"])
>>> result.assert_all_confirmed()
>>> result.copies_at(result.findings[0])    # the runtime copies behind a finding
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..findings import Finding, Report
from ..registry import COPY_FAMILIES
from . import AuditReport, CopyEvent
from .confirm import match


@dataclass
class OracleResult:
    report: Report  # lint report, findings marked with .status
    audit: AuditReport

    @property
    def findings(self) -> list[Finding]:
        return [f for f in self.report.findings if f.code.startswith(COPY_FAMILIES)]

    def copies_at(self, f: Finding) -> list[CopyEvent]:
        return match(f, self.audit)[1]

    def statuses(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for f in self.findings:
            out.setdefault(f.status or "?", []).append(f"{f.code} {f.location}")
        return out

    def assert_all_confirmed(self) -> None:
        bad = [f for f in self.findings if f.status != "confirmed"]
        if bad:
            def at(f: Finding) -> object:
                if not f.file or f.line is None:
                    return "?"
                return [(c.op, c.bytes) for c in self.audit.at(f.file, f.line)]

            lines = "\n".join(f"  {f.code} {f.location}: {f.status}, predicted {f.bytes} B; runtime at that line: "
                              f"{at(f)}" for f in bad)
            raise AssertionError(f"static findings the runtime does not back:\n{lines}")

    def assert_no_unexplained(self, min_bytes: int = 0) -> None:
        rows = [u for u in self.report.unexplained if u["bytes"] >= min_bytes]
        if rows:
            lines = "\n".join(f"  {u['location']}: {u['bytes']} B {u['ops']}" for u in rows)
            raise AssertionError(f"runtime copies no finding explains:\n{lines}")


def check(target: Any, example_inputs: Any, *, select: str | Sequence[str] | None = None,
          ignore: str | Sequence[str] | None = None) -> OracleResult:
    """Lint ``target`` and confirm every copy finding against one profiled eager run."""
    import fxlint

    from .confirm import confirm

    report = fxlint.lint(target, example_inputs, select=select, ignore=ignore)
    audit = fxlint.audit(target, example_inputs)
    return OracleResult(confirm(report, audit), audit)

"""Hold the compiled-program verdicts (``Finding.compiled``) to the compiled-program oracle
(``fxlint.runtime.compiled_audit``), line by line.

* A ``survives`` finding claims its line's kernels write ``compiled_bytes`` per call. It is **confirmed**
  when forward copies the oracle measured on its line, not yet taken by another finding, add up to exactly
  that (largest first, each copy taken once: q's and k's copies of one matmul back two findings); a copy
  the oracle could only narrow down to a few lines (``CompiledCopy.lines``: a kernel fused from several)
  counts on each of them here, and stays off every line for coverage;
  **refuted** when its line ran and they do not; **not-run** when no kernel of the compiled program that
  ran comes from its line; **not-known** when the finding has no line or no bytes, or the oracle could not
  read the program. In a training graph a finding may also claim what the compiled backward copies for it
  (``compiled_backward_bytes``): that claim is held the same way, apart, to the backward copies the oracle
  put on its line (a second check, ``phase="backward"``).
* A ``fused`` finding claims no copy of its own: it is **confirmed** when, after the ``survives`` findings
  took theirs, no forward copy is left on its line, **refuted** otherwise (the copy may be another op's of
  the same line: the oracle works per line). A finding about a copy of the backward alone (FXL113, FXL121:
  no forward claim) is held to the backward copies left on its line.
* **Coverage**: the avoidable copy bytes of the compiled program (forward and backward) on a line where a
  copy finding sits, of all of them; the copies on a line without one are the **misses**, and the copies
  the oracle could not put on one line are counted apart (``no_line``), never as covered.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..findings import Finding
from .compiled_audit import CompiledAudit, CompiledCopy

CONFIRMED, REFUTED, NOT_RUN, NOT_KNOWN = "confirmed", "refuted", "not-run", "not-known"
SURVIVES, FUSED = "survives", "fused"
PHASES = ("forward", "backward")


@dataclass(frozen=True)
class VerdictCheck:
    """One verdict held to the oracle."""

    code: str
    file: str | None
    line: int | None
    verdict: str  # survives | fused
    claimed: int | None  # compiled_bytes
    status: str  # confirmed | refuted | not-run | not-known
    measured: int  # the oracle's copy bytes of the phase on the line (survives: those it took; fused: those left)
    phase: str = "forward"  # forward | backward: which compiled graph the claim is about


@dataclass
class CompiledCheck:
    checks: list[VerdictCheck] = field(default_factory=list)
    misses: list[dict[str, Any]] = field(default_factory=list)  # per line: file, line, bytes, kernels, phase
    total_bytes: int = 0  # avoidable copy bytes per call of the compiled program
    covered_bytes: int = 0  # of which on a line with a copy finding
    no_line_bytes: int = 0  # of which the oracle could not put on one line
    known: bool = True
    why_unknown: str | None = None

    def count(self, verdict: str, status: str) -> int:
        return sum(1 for c in self.checks if c.verdict == verdict and c.status == status)

    @property
    def precision(self) -> float | None:
        """Confirmed ``survives`` verdicts of those the oracle could judge (confirmed + refuted)."""
        ok, bad = self.count(SURVIVES, CONFIRMED), self.count(SURVIVES, REFUTED)
        return ok / (ok + bad) if ok + bad else None

    @property
    def coverage(self) -> float | None:
        return self.covered_bytes / self.total_bytes if self.total_bytes else None

    def summary(self) -> dict[str, Any]:
        return {
            "known": self.known, "why_unknown": self.why_unknown,
            "survives": {s: self.count(SURVIVES, s) for s in (CONFIRMED, REFUTED, NOT_RUN, NOT_KNOWN)},
            "fused": {s: self.count(FUSED, s) for s in (CONFIRMED, REFUTED, NOT_RUN, NOT_KNOWN)},
            "precision": self.precision, "bytes_per_call": self.total_bytes, "covered_bytes": self.covered_bytes,
            "no_line_bytes": self.no_line_bytes, "coverage": self.coverage,
            "missed_bytes": sum(m["bytes"] for m in self.misses),
        }

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {"summary": self.summary(), "checks": [asdict(c) for c in self.checks], "misses": self.misses}


def _copy_finding(f: Finding) -> bool:
    return bool(f.bytes) or f.bytes_expr is not None or f.compiled is not None


def check_verdicts(findings: Iterable[Finding], audit: CompiledAudit,
                   suppressed: Iterable[Finding] = ()) -> CompiledCheck:
    """Each ``survives``/``fused`` verdict of ``findings`` held to ``audit``, and the coverage of the
    compiled program's copies by the copy findings' lines (``suppressed`` findings cover their lines too)."""
    fs = list(findings)
    out = CompiledCheck(known=audit.known, why_unknown=audit.why_unknown)
    if not audit.known:
        out.checks = [VerdictCheck(f.code, f.file, f.line, f.compiled or "", f.compiled_bytes, NOT_KNOWN, 0)
                      for f in fs if f.compiled in (SURVIVES, FUSED)]
        return out
    on_line: dict[str, dict[tuple[str, int], list[CompiledCopy]]] = {p: defaultdict(list) for p in PHASES}
    # the copies the oracle could only narrow down to a few lines (a kernel fused from several): each may back
    # a survives finding on one of them (never a fused one's, never coverage)
    maybe_on: dict[str, dict[tuple[str, int], list[CompiledCopy]]] = {p: defaultdict(list) for p in PHASES}
    for c in audit.copies:
        if c.phase not in on_line:
            continue
        if c.file is not None and c.line is not None:
            on_line[c.phase][(c.file, c.line)].append(c)
        elif c.file is None:
            for where in c.lines:
                file, _, line = where.rpartition(":")
                if file and line.isdigit():
                    maybe_on[c.phase][(file, int(line))].append(c)
    taken: set[int] = set()
    for phase in PHASES:
        claims = [(f, _claim(f, phase)) for f in fs if f.compiled == SURVIVES]
        for f, claim in sorted(claims, key=lambda fc: -(fc[1] or 0)):
            if claim is not None or (phase == "forward" and _claim(f, "backward") is None):
                out.checks.append(_check_survives(f, claim, phase, audit, on_line[phase], taken, maybe_on[phase]))
    for f in fs:
        if f.compiled == FUSED:  # a copy of the backward alone (no forward claim) is held to the backward's copies
            phase = "forward" if f.compiled_bytes is not None else "backward"
            out.checks.append(_check_fused(f, audit, on_line[phase], taken, phase))
    lines = {(f.file, f.line) for f in (*fs, *suppressed) if _copy_finding(f) and f.file is not None}
    missed: dict[tuple, dict[str, Any]] = {}
    for c in audit.copies:
        if not c.avoidable:
            continue
        out.total_bytes += c.bytes
        if c.file is None:
            out.no_line_bytes += c.bytes
            continue
        if (c.file, c.line) in lines:
            out.covered_bytes += c.bytes
            continue
        row = missed.setdefault((c.file, c.line, c.phase), {"file": c.file, "line": c.line, "phase": c.phase,
                                                            "code": c.code, "bytes": 0, "kernels": []})
        row["bytes"] += c.bytes
        if c.kernel not in row["kernels"]:
            row["kernels"].append(c.kernel)
    out.misses = sorted(missed.values(), key=lambda r: -r["bytes"])
    return out


def _claim(f: Finding, phase: str) -> int | None:
    """The bytes per call a ``survives`` finding says the compiled graph of ``phase`` copies on its line (None:
    it says nothing of that graph; a backward claim of 0 says nothing either)."""
    if phase == "forward":
        return f.compiled_bytes
    return f.compiled_backward_bytes or None


def _check_survives(f: Finding, claim: int | None, phase: str, audit: CompiledAudit,
                    on_line: dict[tuple[str, int], list[CompiledCopy]], taken: set[int],
                    maybe_on: dict[tuple[str, int], list[CompiledCopy]]) -> VerdictCheck:
    def result(status: str, measured: int = 0) -> VerdictCheck:
        return VerdictCheck(f.code, f.file, f.line, SURVIVES, claim, status, measured, phase)

    if f.file is None or f.line is None or claim is None:
        return result(NOT_KNOWN)
    if (f.file, f.line) not in audit.lines_run:
        return result(NOT_RUN)
    here = [*on_line.get((f.file, f.line), []), *maybe_on.get((f.file, f.line), [])]
    pool = sorted((c for c in here if id(c) not in taken), key=lambda c: -c.bytes)
    picked, left = [], claim
    for c in pool:
        if c.bytes <= left:
            picked.append(c)
            left -= c.bytes
        if left == 0:
            break
    if left == 0 and picked:
        taken.update(id(c) for c in picked)
        return result(CONFIRMED, claim)
    return result(REFUTED, sum(c.bytes for c in pool))


def _check_fused(f: Finding, audit: CompiledAudit, on_line: dict[tuple[str, int], list[CompiledCopy]],
                 taken: set[int], phase: str = "forward") -> VerdictCheck:
    def result(status: str, measured: int = 0) -> VerdictCheck:
        return VerdictCheck(f.code, f.file, f.line, FUSED, f.compiled_bytes, status, measured, phase)

    if f.file is None or f.line is None:
        return result(NOT_KNOWN)
    if (f.file, f.line) not in audit.lines_run:
        return result(NOT_RUN)
    left = sum(c.bytes for c in on_line.get((f.file, f.line), []) if id(c) not in taken and c.avoidable)
    return result(CONFIRMED if left == 0 else REFUTED, left)

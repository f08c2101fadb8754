"""``fxlint.collect()``: gather the backend's findings across every graph it compiles."""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator

from .findings import Finding, Report, dedupe

if TYPE_CHECKING:  # pragma: no cover
    from .rewrite.base import AppliedRewrite, RewriteResult, SkippedRewrite


@dataclass
class Session:
    """Findings of every graph compiled with ``backend="fxlint"`` while the session was open.

    The same finding from a recompile (new shapes, new guards) is kept once.
    """

    reports: list[Report] = field(default_factory=list)
    rewrites: list["RewriteResult"] = field(default_factory=list)  # with options={"rewrite": True}

    @property
    def applied(self) -> list["AppliedRewrite"]:
        """Rewrites applied to the compiled graphs (``options={"rewrite": True}``)."""
        return [a for r in self.rewrites for a in r.applied]

    @property
    def skipped(self) -> list["SkippedRewrite"]:
        """Rewrites not applied, with the reason (rolled back ones included)."""
        return [s for r in self.rewrites for s in r.skipped]

    @property
    def findings(self) -> list[Finding]:
        return dedupe(f for r in self.reports for f in r.findings)

    @property
    def suppressed(self) -> list[Finding]:
        return dedupe(f for r in self.reports for f in r.suppressed)

    @property
    def graphs(self) -> int:
        return sum(r.graphs for r in self.reports)

    @property
    def errors(self) -> list[str]:
        return [e for r in self.reports for e in r.errors]

    def report(self) -> Report:
        """All of it as one ``Report`` (renderable like a lint's)."""
        merged = Report(findings=self.findings, suppressed=self.suppressed, graphs=self.graphs,
                        graph_breaks=sum(r.graph_breaks for r in self.reports), errors=self.errors)
        return merged


_lock = threading.Lock()
_active: list[Session] = []


@contextlib.contextmanager
def collect() -> Iterator[Session]:
    """``with fxlint.collect() as s: compiled(x)`` -> ``s.findings``."""
    s = Session()
    with _lock:
        _active.append(s)
    try:
        yield s
    finally:
        with _lock:
            _active.remove(s)


def publish_rewrites(result: "RewriteResult") -> None:
    """Hand one graph's rewrite result to every open session."""
    with _lock:
        sessions = list(_active)
    for s in sessions:
        s.rewrites.append(result)


def publish(report: Report) -> None:
    """Hand one graph's report to every open session."""
    with _lock:
        sessions = list(_active)
    for s in sessions:
        s.reports.append(report)

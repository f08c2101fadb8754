"""``fxlint.collect()``: gather the backend's findings across every graph it compiles.

Under ``torch.distributed`` a session holds the findings of its own rank (``Session.rank``);
``Session.gather()`` exchanges them between the ranks (see ``fxlint.capture.distributed``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .findings import Finding, Report, dedupe

if TYPE_CHECKING:  # pragma: no cover
    from .rewrite.base import AppliedRewrite, RewriteResult, SkippedRewrite


@dataclass
class Session:
    """Findings of every graph compiled with ``backend="fxlint"`` while the session was open.

    The same finding from a recompile (new shapes, new guards) is kept once.
    """

    reports: list[Report] = field(default_factory=list)
    rewrites: list[RewriteResult] = field(default_factory=list)  # with options={"rewrite": True}

    @property
    def applied(self) -> list[AppliedRewrite]:
        """Rewrites applied to the compiled graphs (``options={"rewrite": True}``)."""
        return [a for r in self.rewrites for a in r.applied]

    @property
    def skipped(self) -> list[SkippedRewrite]:
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

    @property
    def rank(self) -> int | None:
        """This process's rank in the default process group (None: one process)."""
        from .capture.distributed import current

        ranks = current()
        return ranks.rank if ranks is not None else None

    def gather(self, timeout: float = 60.0) -> Report:
        """Every rank's findings as one ``Report``: each finding once, with ``Finding.ranks`` the
        ranks that found it; one that only some ranks found says which in its message.

        Like a collective, every rank calls it (after its last compile), in the same order as its
        other ``gather`` calls. It is not one: the ranks meet in the process group's key-value
        store, so it never waits on the user's collectives, and a rank that has not answered
        within ``timeout`` seconds is left out (``Report.extras["missing_ranks"]``) rather than
        waited for. In one process it is ``report()``."""
        from .capture.distributed import gather

        local = self.report()
        got = gather(local.findings, timeout)
        local.findings = got.findings
        local.extras["world_size"] = got.world
        if got.missing:
            local.extras["missing_ranks"] = list(got.missing)
            who = ", ".join(map(str, got.missing))
            local.errors.append(f"rank{'s' if len(got.missing) > 1 else ''} {who} sent no findings within "
                                f"{timeout:g} s")
        return local


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


def publish_rewrites(result: RewriteResult) -> None:
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

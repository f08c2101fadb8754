"""``fxlint.collect()``: gather the backend's findings across every graph it compiles.

Under ``torch.distributed`` a session holds the findings of its own rank (``Session.rank``);
``Session.gather()`` exchanges them between the ranks (see ``fxlint.capture.distributed``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .findings import Finding, Report, dedupe

if TYPE_CHECKING:  # pragma: no cover
    from .rewrite.base import AppliedRewrite, RewriteResult, SkippedRewrite


def frame_key(gm: Any) -> tuple[Any, int, tuple] | None:
    """Which Python frame Dynamo compiled ``gm`` from, which compile of it this is, and the shapes of
    the frame's own arguments (``L['x']``; not the module state it reads, which a cache fill changes):
    (frame id, compile number, argument signature); None outside a Dynamo compile."""
    import re

    from torch._guards import CompileContext

    from .canon._fx import value_of
    from .capture.roles import dynamo_roles

    cid = CompileContext.current_compile_id()
    if cid is None or cid.frame_id is None:
        return None
    roles = dynamo_roles(gm)
    sig = []
    for n in gm.graph.nodes:
        kind, name = roles.get(n.name, ("input", None))
        if n.op != "placeholder" or kind != "input" or not re.fullmatch(r"L\['[^']*'\]", name or ""):
            continue
        v = value_of(n)
        tensor = hasattr(v, "shape") and hasattr(v, "dtype")
        sig.append(f"{name}:{tuple(v.shape)}:{v.dtype}" if tensor else f"{name}:{type(v).__name__}")
    return (cid.frame_id, cid.frame_compile_id or 0, tuple(sig))


def steady_reports(reports: list[Report]) -> list[Report]:
    """The reports of the program that runs now: a recompile of a frame on inputs of the same shapes
    (the first call filled a cache, a flag changed: guards on the module's state failed) replaces that
    frame's earlier compile; a recompile for new shapes keeps both (both programs run)."""
    latest: dict[tuple, int] = {}
    for r in reports:
        key = r.extras.get("frame")
        if key is not None:
            frame, n, sig = key
            latest[(frame, sig)] = max(latest.get((frame, sig), n), n)
    return [r for r in reports if r.extras.get("frame") is None
            or r.extras["frame"][1] == latest[(r.extras["frame"][0], r.extras["frame"][2])]]


@dataclass
class Session:
    """Findings of every graph compiled with ``backend="fxlint"`` while the session was open.

    The same finding from a recompile for new shapes is kept once; a recompile of a frame on inputs of
    the same shapes (after the first call filled a cache) replaces the earlier compile's findings.
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
        return dedupe(f for r in steady_reports(self.reports) for f in r.findings)

    @property
    def suppressed(self) -> list[Finding]:
        return dedupe(f for r in steady_reports(self.reports) for f in r.suppressed)

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

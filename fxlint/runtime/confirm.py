"""Cross-check static findings against the runtime audit.

Each copy-type finding (FXL1xx, FXL2xx, FXL4xx) becomes

* ``confirmed``: a copy of the predicted size ran on that line (or, when the
  finding gives no size, some avoidable copy did). Several copies on the line
  that add up to the prediction also confirm it.
* ``refuted``: the line ran, but no such copy did.
* ``not-run``: the line never ran with these inputs (another branch), so the
  runtime can say nothing.

A line that several modules run (a library function every layer calls) is
judged per module: the copies the audit attributes to the finding's module path,
when the audit saw that line run under that path.

A finding with ``bytes == 0`` claims that nothing is copied (FXL108
noop-conversion): it is confirmed when its line ran and made no avoidable copy
of that tensor (``Finding.tensor_shape``), refuted when it did.

Avoidable forward copies on user lines that no finding explains are listed
in ``Report.unexplained``, so missing rules show up.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ..findings import Finding, Report
from ..registry import COPY_FAMILIES
from . import AuditReport, CopyEvent

CONFIRMED, REFUTED, NOT_RUN = "confirmed", "refuted", "not-run"
_HOST_SYNC_CODES = ("FXL304", "FXL109")


def _same_module(f: Finding, audit: AuditReport) -> bool:
    """Can the runtime tell this finding's module from others on the same line? Only when the
    audit saw the line run under exactly the module path the finding names (the two spell
    module paths alike); else every copy on the line is a candidate, as before."""
    return f.module_path is not None and (f.file, f.line, f.module_path) in audit.sites_run


def _candidates(f: Finding, audit: AuditReport, taken: set[int] | frozenset[int] = frozenset()) -> list[CopyEvent]:
    if f.file is not None and f.line is not None:
        cands = [c for c in audit.copies if c.phase == "forward" and c.file == f.file and c.line == f.line]
        if _same_module(f, audit):
            # one line, several modules (every layer calls the same attention function): the
            # copies of this finding's module, not another layer's
            cands = [c for c in cands if c.module_path == f.module_path]
    elif f.node:
        cands = [c for c in audit.copies if c.phase == "forward" and c.file == "<graph>" and c.function == f.node]
    else:
        return []
    # copies no other finding has claimed come first: two findings of equal size (q and k of one
    # matmul) then claim two copies, while findings that describe one copy from two sides (the
    # shared conversion of two overlapping round trips) both still find it
    return [c for c in cands if id(c) not in taken] + [c for c in cands if id(c) in taken]


def _ran(f: Finding, audit: AuditReport) -> bool:
    if f.file is not None:
        return audit.ran(f.file, f.line)
    return bool(f.node) and f.node in audit.nodes_run


def _match_sizes(sizes: list[int], cands: list[CopyEvent]) -> list[CopyEvent] | None:
    """One candidate copy per predicted size (a finding may stand for several copy events,
    e.g. one per batch), or None when some predicted copy did not run."""
    pool = list(cands)
    picked: list[CopyEvent] = []
    for size in sorted(sizes, reverse=True):
        hit = next((c for c in pool if c.bytes == size), None)
        if hit is None:
            return None
        pool.remove(hit)
        picked.append(hit)
    return picked


def match(f: Finding, audit: AuditReport, taken: set[int] | frozenset[int] = frozenset()
          ) -> tuple[str, list[CopyEvent]]:
    """The status of one finding and the runtime copies that back it.

    A finding may list the individual copies it predicts in ``Finding.copy_sizes``
    (bytes of each copy event); it is confirmed when each of them ran on its line.
    Copies in ``taken`` (already backing another finding on the line) are used only when no
    other copy fits, so q and k of one matmul, two findings of equal size, claim two copies.
    """
    cands = _candidates(f, audit, taken)
    claims_avoidable = f.violation is None or type(f.violation).claims_avoidable
    if f.bytes == 0:
        # the finding claims that nothing is copied there (e.g. FXL108 noop-conversion): it holds when
        # the line ran and made no avoidable copy of that tensor (tensor_shape, when given) in the
        # calls the claim is about (``audit_calls()`` of its violation, when it names them): another
        # op on the line that copies (`x.float() + z.t().contiguous()`) says nothing about `.float()`
        # Copies another finding already explains (``taken``) are that op's, not this one's
        shape = f.tensor_shape
        calls = _claimed_calls(f)
        if any(c.avoidable and id(c) not in taken and (shape is None or tuple(c.shape) == tuple(shape))
               and (calls is None or c.func in calls) for c in cands):
            return REFUTED, []
        return (CONFIRMED if _ran(f, audit) else NOT_RUN), []
    sizes = f.copy_sizes
    if sizes and len(sizes) > 1:
        picked = _match_sizes(list(sizes), cands)
        if picked:
            return CONFIRMED, picked
    if f.bytes is None:
        hits = [c for c in cands if c.avoidable or not claims_avoidable]
    else:
        # one copy per finding: two findings of equal size on a line (q and k of one matmul) are two copies
        hits = [c for c in cands if c.bytes == f.bytes][:1]
        if not hits:
            avoidable = [c for c in cands if c.avoidable]
            if avoidable and sum(c.bytes for c in avoidable) == f.bytes:
                hits = avoidable
    if hits:
        return CONFIRMED, hits
    if f.compiled_only is not None and not _ran(f, audit):
        twin = _eager_twin(f, audit, taken)
        if twin:
            return CONFIRMED, twin
    return (REFUTED if _ran(f, audit) else NOT_RUN), []


def _eager_twin(f: Finding, audit: AuditReport, taken: set[int] | frozenset[int]) -> list[CopyEvent]:
    """For a finding on a branch only torch.compile takes (``Finding.compiled_only``), the copy eager makes
    instead on its own branch: an avoidable forward copy of the predicted size, in the same file and
    module call, that no other finding explains, on another line (PyG's ``_index_select`` gathers at one
    line under Dynamo and at another, in ``_index_select_safe``, in eager)."""
    if not f.bytes or f.file is None:
        return []
    sizes = sorted(f.copy_sizes or (f.bytes,), reverse=True)
    pool = [c for c in audit.copies if c.phase == "forward" and c.avoidable and id(c) not in taken
            and _same_call(f.module_path, c.module_path) and c.file == f.file and c.line != f.line]
    return _match_sizes(sizes, pool) or []


def _same_call(finding: str | None, copy: str | None) -> bool:
    """The copy ran in the finding's module: the same path, or the finding has none, or a path relative to the
    module of a frame Dynamo resumed after a graph break (``conv`` of ``GPSConv``, the audit's ``convs.0.conv``)."""
    if finding is None or copy == finding:
        return True
    return copy is not None and copy.endswith("." + finding)


def _claimed_calls(f: Finding) -> frozenset[str] | None:
    """The torch functions a no-copy claim is about, where its violation names them (a method
    ``audit_calls()``: FXL108 names the conversion it found), else None: every call on the line."""
    named = getattr(f.violation, "audit_calls", None)
    return named() if callable(named) else None


#: the backward nodes of views: they reshape the gradient back to the view's input, and a gradient
#: that arrives non-contiguous (a transpose later in the same function: ``x.view(...)`` then
#: ``x.transpose(1, 2).contiguous()``) is copied there, in the view's node, not the transpose's
_BACKWARD_OF_VIEWS = ("ViewBackward", "UnsafeViewBackward", "ReshapeAliasBackward", "ReshapeBackward")


def _backward_hits(f: Finding, audit: AuditReport, taken: set[int],
                   owned: frozenset[tuple[str | None, int | None, str | None]] = frozenset()) -> list[CopyEvent]:
    """Backward copies that pay the finding's ``backward_bytes`` again (largest first, until they
    add up to it); none when the finding predicts no backward copy. A copy of its own line of exactly
    the predicted size is taken alone (q's and k's pieces on one line, of two sizes, are two findings
    whose copies a largest-first pick would cross); else the copies of its own line come first; then
    those a view earlier in the same function (and module) makes of the gradient the finding's layout
    change sends back (autograd runs that copy in the view's node, so the audit files it at the view's
    line); then those at the finding's ``backward_sites`` (a view or a `linear` elsewhere, another module
    or file, that reshapes the gradient back), those of a module with no backward finding of its own at that
    line first: ``owned`` holds the (file, line, module) of the findings that claim their own line's backward
    copy (a UNet's skip `.contiguous()` claims the copies of two attention blocks' `linear`, and a third block's
    `linear` on the same line is its own finding's), then those inside the finding's module."""
    if not f.backward_bytes or f.file is None:
        return []
    same_module = _same_module(f, audit)

    def fits(c: CopyEvent) -> bool:
        return (c.phase == "backward" and c.avoidable and id(c) not in taken and c.file == f.file
                and (not same_module or c.module_path == f.module_path))

    here = [c for c in audit.copies if fits(c) and c.line == f.line]
    # copies autograd makes at another line for this site (a `.contiguous()`'s gradient reshaped back by a
    # `linear` in another module: that line's copies, once its own line has none left)
    sites = set(f.backward_sites)
    elsewhere = [c for c in audit.copies if sites and (c.file, c.line) in sites and c.phase == "backward"
                 and c.avoidable and id(c) not in taken]
    functions = {c.function for c in audit.copies if c.file == f.file and c.line == f.line and c.function}
    upstream = [c for c in audit.copies if fits(c) and c.line is not None and f.line is not None and c.line < f.line
                and c.function in functions and (c.grad_fn or "").startswith(_BACKWARD_OF_VIEWS)]
    exact = next((c for c in here if c.bytes == f.backward_bytes), None)
    if exact is not None:
        return [exact]  # one copy of the predicted size: another finding on the line may need the larger ones
    picked, total = [], 0
    for c in [*sorted(here, key=lambda c: -c.bytes), *sorted(upstream, key=lambda c: (-(c.line or 0), -c.bytes)),
              *sorted(elsewhere, key=lambda c: ((c.file, c.line, c.module_path) in owned,
                                                 not _inside(c.module_path, f.module_path), -c.bytes))]:
        if total >= f.backward_bytes:
            break
        picked.append(c)
        total += c.bytes
    return picked


def _inside(module: str | None, outer: str | None) -> bool:
    """``module`` is ``outer`` or one of its submodules (a block's `linear` for the block's finding)."""
    if not module or not outer:
        return False
    return module == outer or module.startswith(f"{outer}.")


def backward_owners(findings: list[Finding]) -> frozenset[tuple[str | None, int | None, str | None]]:
    """The (file, line, module) of each finding that claims a backward copy of its own: a copy there is that
    finding's before it is another's ``backward_sites`` claim (``_backward_hits``)."""
    return frozenset((f.file, f.line, f.module_path) for f in findings if f.backward_bytes)


def confirm(report: Report, audit: AuditReport) -> Report:
    """Mark every copy-type finding of ``report``, give it the measured time of the copies that
    back it (``Finding.time_ns``), and list unexplained runtime copies."""
    explained: set[int] = set()
    marked: dict[int, Finding] = {}
    # the claims that something is copied first, then those that nothing is (bytes 0): a copy a
    # claim of the first kind explains is its op's, and no evidence against the second
    order = sorted(range(len(report.findings)), key=lambda i: report.findings[i].bytes == 0)
    owned = backward_owners(report.findings)
    for i in order:
        f = report.findings[i]
        if not f.code.startswith(COPY_FAMILIES):
            marked[i] = f
            continue
        status, hits = match(f, audit, explained)
        explained.update(id(c) for c in hits)
        back = _backward_hits(f, audit, explained, owned) if status == CONFIRMED else []
        explained.update(id(c) for c in back)
        t = sum(c.time_ns for c in (*hits, *back))
        eager = None
        at = hits[0] if hits else None
        if f.compiled_only is not None and at is not None and at.file is not None and at.line is not None \
                and (at.file, at.line) != (f.file, f.line):
            eager = (at.file, at.line)  # the copy eager makes on its own branch
        marked[i] = replace(f, status=status, time_ns=t if hits or back else None, eager_site=eager)
    report.findings = [marked[i] for i in range(len(report.findings))]
    # a silenced finding still explains its copy
    for f in report.suppressed:
        if f.code.startswith(COPY_FAMILIES):
            explained.update(id(c) for c in match(f, audit, explained)[1])
    # host reads are what the host-sync rules (FXL304, FXL109) are about
    for f in (*report.findings, *report.suppressed):
        if f.code in _HOST_SYNC_CODES and f.file is not None and f.line is not None:
            explained.update(id(c) for c in audit.at(f.file, f.line) if c.kind == "host-read")
    report.unexplained = _unexplained(c for c in audit.copies if id(c) not in explained)
    report.audit_summary = {**audit.summary(), **time_split(audit, explained)}
    return report


def time_split(audit: AuditReport, explained: set[int]) -> dict[str, int]:
    """Where the copy time goes: copies every program pays, copies a finding explains, copies
    nothing explains; and the same for the user's own files alone (not installed packages)."""
    from ..reporting.grouping import library_of

    def split(copies: list[CopyEvent], prefix: str) -> dict[str, int]:
        return {
            f"{prefix}copy_ns": sum(c.time_ns for c in copies),
            f"{prefix}unavoidable_ns": sum(c.time_ns for c in copies if not c.avoidable),
            f"{prefix}explained_ns": sum(c.time_ns for c in copies if c.avoidable and id(c) in explained),
            f"{prefix}unexplained_ns": sum(c.time_ns for c in copies if c.avoidable and id(c) not in explained),
        }

    user = [c for c in audit.copies if c.file is not None and library_of(c.file) is None]
    return {**split(list(audit.copies), ""), **split(user, "user_")}


def _unexplained(copies: Iterable[CopyEvent]) -> list[dict]:
    rows: dict[tuple, dict] = {}
    for c in copies:
        if not c.avoidable or c.phase != "forward" or c.file is None:
            continue
        key = (c.file, c.line, c.function if c.file == "<graph>" else None)
        row = rows.setdefault(key, {"file": c.file, "line": c.line, "location": c.location, "code": c.code,
                                    "module_path": c.module_path, "bytes": 0, "count": 0, "ops": [], "time_ns": 0,
                                    "via": []})
        row["bytes"] += c.bytes
        row["count"] += 1
        row["time_ns"] += c.time_ns
        label = f"{c.top_op}>{c.op}" if c.top_op != c.op else c.op
        if label not in row["ops"]:
            row["ops"].append(label)
        if c.via and not row["via"]:
            row["via"] = list(c.via)  # where inside the line's call (F.multi_head_attention_forward...)
    return sorted(rows.values(), key=lambda r: -r["bytes"])

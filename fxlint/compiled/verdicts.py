"""A verdict on each copy finding of a graph, from Inductor's lowering of that graph.

A copy finding (one with bytes, or a bytes formula) points at a node of the captured graph
(``Finding.node``; ``Finding.nodes`` for a line a loop runs several times). Each copy buffer of the
lowering is credited to the finding on its producer - the op whose lowering made Inductor realise it
(the ``matmul`` that flattens a permuted operand, the ``reshape``), not the view that fed it; where
several findings share that node (a matmul's two operands), to the one whose operand node is among
the buffer's sources. Then:

* ``survives``: a copy buffer is credited to it; ``compiled_bytes`` is what those buffers write per
  call in the compiled program;
* ``fused``: its node was lowered (a node of Inductor's graph comes from it), no copy is credited to it,
  and its op does not run as an ATen kernel: no memory traffic of its own (``compiled_bytes`` 0);
* ``unknown``: the lowering could not be read, the finding names no node, its node was not lowered,
  its op runs as an ATen (extern) kernel, where ATen may still copy inside it (for a copy of the backward
  alone: its op's backward runs as one, a convolution's ``convolution_backward``), or the copies of its
  node cannot be told apart between its findings.

Other findings (gradient breaks, graph breaks) keep ``compiled=None``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..findings import Finding, Severity
from .lowering import CompiledBuffer, Lowering

SURVIVES, FUSED, UNKNOWN = "survives", "fused", "unknown"

#: what a fused finding's message gains when the backend demotes it
FUSED_NOTE = "Eager makes this copy; the compiled program does not (Inductor fuses it into the kernel that reads it)."


def is_copy_finding(f: Finding) -> bool:
    return bool(f.bytes) or f.bytes_expr is not None or bool(f.backward_bytes)


def _total(bufs: list[CompiledBuffer]) -> int | None:
    sizes = [b.bytes for b in bufs]
    return sum(s for s in sizes if s is not None) if all(s is not None for s in sizes) else None


class Sites:
    """What a graph's canonical view says about the nodes a finding stands for (without a view: its
    ``node``, or ``nodes`` for a loop's instances)."""

    def __init__(self, view: Any = None) -> None:
        self.view = view
        self._order: dict[str, int] | None = None  # node name -> position in the graph, when first asked

    def instances(self, f: Finding) -> tuple[str, ...]:
        """The nodes of every copy ``f`` counts: ``nodes``; else, when its ``copy_sizes`` count several
        copies (a rule that sums the nodes of one line, as FXL101/FXL102 do for an unrolled loop), the
        nodes of the same op on the same line in the same module; else its node."""
        if f.nodes:
            return f.nodes
        if f.node is None:
            return ()
        at = self.view.by_name.get(f.node) if self.view is not None else None
        if at is None or at.location is None or not f.copy_sizes or len(f.copy_sizes) < 2:
            return (f.node,)
        where = (at.location.file, at.location.line)
        same = tuple(n.name for n in self.view.nodes if n.op == at.op and n.module_path == at.module_path
                     and n.location is not None and (n.location.file, n.location.line) == where)
        return same if f.node in same else (f.node,)

    def where(self, node: str | None) -> dict[str, Any]:
        """The user's line and module of ``node`` (``file``, ``line``, ``module_path``; None when unknown)."""
        at = self.view.by_name.get(node) if self.view is not None and node is not None else None
        loc = at.location if at is not None else None
        return {"file": loc.file if loc is not None else None, "line": loc.line if loc is not None else None,
                "module_path": at.module_path if at is not None else None, "op": at.op if at is not None else None}

    def layout(self, node: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The size and strides of ``node``'s output as ints (None: no view, not a tensor, or symbolic)."""
        at = self.view.by_name.get(node) if self.view is not None else None
        t = at.tensor if at is not None else None
        if t is None or not all(isinstance(d, int) for d in (*t.shape, *t.stride)):
            return None
        return tuple(int(d) for d in t.shape), tuple(int(d) for d in t.stride)

    def feeds(self, node: str, targets: Sequence[str]) -> bool:
        """Whether ``node``'s value flows into one of ``targets`` (through the ops that read it; False without a
        view). A buffer that reads a value computed from ``node`` cannot hold ``node``'s own value. Only the nodes
        between ``node`` and the last target in graph order are walked."""
        at = self.view.by_name.get(node) if self.view is not None else None
        if at is None:
            return False
        if self._order is None:
            self._order = {n.name: i for i, n in enumerate(self.view.nodes)}
        order = self._order
        wanted = {t for t in targets if t in order}
        if not wanted:
            return False
        last = max(order[t] for t in wanted)
        stack, seen = list(at.users), {at.name}
        while stack:
            n = stack.pop()
            if n.name in wanted:
                return True
            if n.name not in seen and order.get(n.name, last + 1) < last:
                seen.add(n.name)
                stack.extend(n.users)
        return False

    def operand(self, f: Finding, node: str) -> str | None:
        """The node of the operand ``f``'s violation names (``operand``: ``"a"``, ``"input"``...) at
        ``node`` (None: not about an operand, or no view)."""
        operand = getattr(f.violation, "operand", None)
        at = self.view.by_name.get(node) if self.view is not None and isinstance(operand, str) else None
        x = at.args.get(operand) if at is not None else None
        return getattr(x, "name", None)


def credit(findings: Sequence[Finding], lowering: Lowering, sites: Sites | None = None
           ) -> tuple[dict[int, list[CompiledBuffer]], set[int], list[CompiledBuffer]]:
    """Each copy buffer credited to one finding (by index in ``findings``); the findings whose node has
    copies that cannot be told apart between them; and the copies no finding explains.

    A buffer goes to the finding on its producer (the node whose op made Inductor realise it); one
    laid out for an ATen kernel goes to that kernel's finding about the operand it copies (eager's
    convolution converts the same weight). A copy realised for a kernel's input from ops the user wrote a
    copy in is the user's copy when it has the layout the user's copy gives (a `.contiguous()` q handed to
    scaled_dot_product_attention, which would take q as it was), and the kernel's otherwise
    (`.contiguous()` before a convolution Inductor runs channels_last: the user's copy is fused into it,
    and removing it would leave the same copy). Where
    several copy findings share that node (a matmul's two operands), the one whose operand node
    (``Sites.operand``) is among the buffer's sources takes it; if none or several do, those findings
    are ambiguous (their verdict is unknown). A piece the compiled backward writes into a concatenation (the
    stack of `unbind`'s backward) is credited by that concatenation's node, never by the op that computed the
    piece (``_owner_node``)."""
    sites = sites or Sites()
    owners: dict[str, list[int]] = {}
    for i, f in enumerate(findings):
        if is_copy_finding(f):
            for n in sites.instances(f):
                owners.setdefault(n, []).append(i)
    credited: dict[int, list[CompiledBuffer]] = {}
    ambiguous: set[int] = set()
    unexplained: list[CompiledBuffer] = []
    for buf in lowering.copies():
        owner = _owner_node(buf)
        mine = owners.get(owner or "", [])
        if not mine and owner == buf.producer:
            # laid out for an ATen kernel whose finding is about the very operand it copies (a weight that
            # eager's convolution converts on every call too): that finding's copy survives as this one
            about = [[i for i in owners.get(n, ()) if sites.operand(findings[i], n) in buf.read_nodes]
                     for n in buf.consumer_nodes]
            mine = next((found for found in about if len(found) == 1), [])
        if not mine and owner == buf.producer:
            # a copy the user wrote (`.contiguous()`, a reshape that copies) lowered into a buffer another op
            # realised (the scaled_dot_product_attention that reads it): the user's copy when the buffer has the
            # layout that copy gives its output, as the kernel takes it; in another layout (a convolution's
            # channels_last) the copy is the kernel's, the user's fused into it
            # (in the forward, not a source upstream of what the buffer reads: a kernel fused from several ops
            # gives each of its buffers the provenance of them all, and a convolution's output converted back for
            # the caller, read from the convolution, is no copy of the upsampling before it; a backward buffer
            # reads the gradients of forward values, which are downstream of its sources by design)
            same = {i for n in buf.sources for i in owners.get(n, ())
                    if _same_layout(sites.layout(n), buf)
                    and not (buf.phase == "forward" and sites.feeds(n, buf.read_nodes))}
            mine = sorted(same) if len(same) == 1 else []
        if buf.phase == "backward":
            mine = _backward_owners(findings, buf, owner, mine, owners, sites, lowering.runs)
        if len(mine) > 1:
            srcs = set(buf.sources)
            picked = [i for i in mine if sites.operand(findings[i], owner or "") in srcs]
            if len(picked) == 1:
                mine = picked
        if len(mine) == 1:
            credited.setdefault(mine[0], []).append(buf)
        elif mine:
            ambiguous.update(mine)
        else:
            unexplained.append(buf)
    return credited, ambiguous, unexplained


def _backward_only(f: Finding) -> bool:
    """A finding about a copy the backward alone makes, in its own op's backward (no forward bytes: FXL113, FXL114,
    FXL120-FXL123, FXL209)."""
    return not (f.bytes or f.bytes_expr is not None) and bool(f.backward_bytes)


def _backward_owners(findings: Sequence[Finding], buf: CompiledBuffer, owner: str | None, mine: list[int],
                     owners: dict[str, list[int]], sites: Sites, runs: int = 1) -> list[int]:
    """The findings a copy of the compiled backward is credited to, past its producer's. A finding of the backward
    alone predicts a copy of its own op's backward: of a buffer laid out for an ATen kernel it takes only a gradient
    (never a forward value saved for the backward: q, k and v laid out for the attention's backward kernel), and
    for another op's kernel only at the size of the copy it predicts (the permuted gradient `unbind` puts
    together, made contiguous for the projection's matmul, is FXL114's; the pooled gradient spread back over the
    pool's input and made channels_last for the convolution before the pool is that convolution's, not the
    pool's (B, C) restride); and a buffer no finding on its producer explains, read by no ATen
    kernel, is the copy such a finding on one of its sources predicts, when exactly one does (the pool's restrided
    gradient, whose kernel names the `flatten` after it as its producer)."""
    def predicted(f: Finding) -> bool:  # the copy it predicts: its own op's kernel reads it, or its size (per run)
        return (any(n in buf.consumer_nodes for n in sites.instances(f))
                or (f.backward_bytes is not None and f.backward_bytes * runs == buf.bytes))

    if mine and buf.consumers:
        return [i for i in mine if not _backward_only(findings[i]) or (not buf.saved and predicted(findings[i]))]
    if not mine and not buf.consumers and owner == buf.producer:
        alone = {i for n in buf.sources for i in owners.get(n, ()) if _backward_only(findings[i])}
        return sorted(alone) if len(alone) == 1 else []
    return mine


def _owner_node(buf: CompiledBuffer) -> str | None:
    """The captured graph's node a copy buffer is credited by: its producer, but for a piece the compiled
    backward writes into a concatenation (the `torch.stack` of `unbind`'s backward, the `cat` of `split`'s),
    which is that concatenation's write. There the producer is the forward op whose autograd node made the
    piece (the matmul whose operand's gradient it is), which copies nothing of its own for it."""
    if buf.phase == "backward" and buf.into == "cat" and buf.into_node is not None:
        return buf.into_node
    return buf.producer


def _same_layout(layout: tuple[tuple[int, ...], tuple[int, ...]] | None, buf: CompiledBuffer) -> bool:
    """``layout`` (size, strides) is ``buf``'s but for dims of size 1 (an `unsqueeze` after the copy, which the
    kernel stores through, moves no data)."""
    if layout is None or buf.size is None or buf.stride is None:
        return False

    def squeezed(size: tuple[int, ...], stride: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
        return tuple((n, st) for n, st in zip(size, stride) if n != 1)

    return squeezed(*layout) == squeezed(buf.size, buf.stride)


def verdict(f: Finding, lowering: Lowering, bufs: list[CompiledBuffer] | None, ambiguous: bool,
            nodes: tuple[str, ...]) -> Finding:
    """One finding's verdict (``nodes``: the nodes it stands for)."""
    if not is_copy_finding(f):
        return f
    if not lowering.readable or not nodes or ambiguous:
        return f.with_(compiled=UNKNOWN, compiled_bytes=None, compiled_backward_bytes=None)
    forward = [b for b in bufs or () if b.phase == "forward"]
    backward = [b for b in bufs or () if b.phase == "backward"]
    # the compiled backward's copies for it, per training step (when the backward was read); not known (None)
    # where its backward scatters with accumulation and copies nothing (an indexing's backward): no copy, but
    # traffic of its own that a rewrite (a gather made a slice) can remove
    scatters = any(n in lowering.accumulating_backward for n in nodes)
    after = _total(backward) if backward else 0 if lowering.backward and not scatters else None
    if not (f.bytes or f.bytes_expr is not None):  # a copy of the backward alone (FXL113, FXL114)
        if backward:
            return f.with_(compiled=SURVIVES, compiled_bytes=None, compiled_backward_bytes=after)
        if lowering.backward and all(n in lowering.lowered_backward and n not in lowering.extern_backward
                                     for n in nodes):
            return f.with_(compiled=FUSED, compiled_bytes=None, compiled_backward_bytes=0)
        return f.with_(compiled=UNKNOWN, compiled_bytes=None, compiled_backward_bytes=None)
    if forward:
        return f.with_(compiled=SURVIVES, compiled_bytes=_total(forward), compiled_backward_bytes=after)
    if all(n in lowering.lowered and n not in lowering.extern_sources for n in nodes):
        return f.with_(compiled=FUSED, compiled_bytes=0, compiled_backward_bytes=after)
    return f.with_(compiled=UNKNOWN, compiled_bytes=None, compiled_backward_bytes=after)


def apply_verdicts(findings: list[Finding], lowering: Lowering, *, demote: bool = False,
                   sites: Sites | None = None) -> list[Finding]:
    """``findings`` (of the one graph ``lowering`` read) with their verdicts; ``demote``: a fused
    finding becomes info, its message saying the compiled program does not make the copy;
    ``sites``: the graph's view, which tells a loop's instances and a node's operands apart."""
    sites = sites or Sites()
    credited, ambiguous, _ = credit(findings, lowering, sites)
    out = []
    for i, f in enumerate(findings):
        g = verdict(f, lowering, credited.get(i), i in ambiguous, sites.instances(f))
        if demote and g.compiled == FUSED:
            sep = " " if g.message.rstrip().endswith(".") else ". "
            g = g.with_(severity=Severity.INFO, message=f"{g.message.rstrip()}{sep}{FUSED_NOTE}")
        out.append(g)
    return out


def unknown_verdicts(findings: list[Finding]) -> list[Finding]:
    """Every copy finding ``unknown``: the lowering was not read."""
    return [f.with_(compiled=UNKNOWN, compiled_bytes=None) if is_copy_finding(f) else f for f in findings]


def describe(findings: Iterable[Finding], lowering: Lowering | None, sites: Sites | None = None,
             explained: Callable[[CompiledBuffer], bool] | None = None) -> dict[str, Any]:
    """What the verdicts say, for ``Report.extras["compiled"]``: counts, the surviving bytes, the copies
    no finding explains (less those ``explained`` says a compiled rule reports) and, when the lowering
    could not be read, why."""
    fs = list(findings)
    out: dict[str, Any] = {v: sum(f.compiled == v for f in fs) for v in (SURVIVES, FUSED, UNKNOWN)}
    out["bytes_per_call"] = sum(f.compiled_bytes or 0 for f in fs if f.compiled == SURVIVES)
    if lowering is not None and lowering.backward:  # what the compiled backward copies too, per training step
        out["backward_bytes_per_step"] = sum(f.compiled_backward_bytes or 0 for f in fs)
    if lowering is not None:
        _, _, unexplained = credit(fs, lowering, sites)
        unexplained = [b for b in unexplained if explained is None or not explained(b)]
        out["unexplained"] = [{"buffer": b.name, "bytes": b.bytes, "phase": b.phase, "ops": list(b.ops),
                               "nodes": list(b.sources),
                               "producer": b.producer, "why": b.why, "consumers": list(b.consumers),
                               "inputs": list(b.inputs), "mutates": b.mutates, "into": b.into,
                               **(sites or Sites()).where(b.producer)}
                              for b in unexplained]
        if not lowering.readable:
            out["why_unknown"] = lowering.why_unreadable
    return out

"""The runtime oracle for the compiled program: what the program ``torch.compile`` (Inductor, CPU) builds
really copies, per user source line, per call.

``audit_compiled(model, inputs, train=False)`` compiles ``model`` with Inductor (its own compile: Dynamo
cache isolated, Inductor's FX-graph and AOTAutograd caches off so the lowering runs), runs it twice (the
first call compiles, and with ``train=True`` compiles the backward at the first backward; the second is a
warm-up), then runs one call under ``torch.profiler`` and says which copies ran. It reads three things
Inductor writes, never fxlint's own reader of the lowering (``fxlint.compiled``), so it can disagree with
the verdicts:

* **the output code** of each compiled graph (the structured-trace artifact ``inductor_output_code``), read
  by ``fxlint.runtime.output_code``: the kernels ``call()`` runs in order, the buffers each writes with
  their sizes, and for each generated C++ kernel whether what it stores into each buffer is data loaded
  unchanged (a copy: a permute's clone, a gather with a constant index, a pad, a cat's input, a dtype
  conversion, an extern kernel's input laid out) or computed. Buffers Inductor reuses (``buf3 = buf0;
  del buf0  # reuse``) are followed, so each write is counted once, at the size of what is written;
* **provenance** (``torch._inductor.config.trace.provenance_tracking_level=1``): each kernel call is
  preceded by ``# [Provenance debug handles] kernel:handle``, and the structured-trace artifacts
  ``inductor_provenance_tracking_kernel_stack_traces`` (``torch._inductor.debug._inductor_kernel_stack_trace``)
  and ``_inductor_triton_kernel_to_post_grad_node_info`` give, for that key, the user stack traces and the
  post-grad nodes the kernel was lowered from; ``inductor_post_grad_graph`` gives those nodes' ops and
  sizes. A copy is put on the user's line of its kernel (the innermost frame outside torch and the
  pass-through libraries, as the eager audit does); when a kernel spans several lines, a buffer that holds
  a data-moving op's value in that op's layout on the op's line; one in a layout none of the kernel's ops
  has, read next by an extern kernel, on that kernel's own line; else on the own line of
  the op that reads the buffer next when the kernel comes from it too (its post-grad node's), else on the
  line of the post-grad node whose size is the buffer's (where only views have it, an ``unsqueeze`` the kernel stores
  through: the node that moved the data, of that size but for dims of 1); when that does not decide, on no
  line (``lines`` lists the candidates); a kernel with no user line of its own (it reads only graph inputs:
  a training graph's convolution input and weight laid out channels_last) on the line of the extern kernel
  that reads it next;
* **the profiler** (``torch._inductor.config.cpp.enable_kernel_profile=True``: each generated kernel is a
  profiler event): which graphs ran and how often, that each copy kernel ran as often as ``call()`` says
  (a mismatch is a note), and the copies ATen makes inside the extern kernels and fallbacks the program
  calls (``aten::bmm`` > ``aten::contiguous`` > ``aten::copy_``), read as the eager audit reads them
  (``fxlint.runtime.profiler``), on the line of the call's provenance.

Copies eager code makes between graphs (a graph break) are not counted: they are eager's, measured by
``fxlint.audit``. Anything this reader does not know (no output code, a GPU's Triton kernels, C++ it does
not follow) is said, never guessed: ``CompiledAudit.known`` / ``why_unknown``, and per kernel the bytes
whose kind is ``unknown``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from .._present import as_text
from ..errors import CaptureError, ModelError
from ..util.source import user_frame
from . import output_code as oc
from ._events import is_op, numel

__all__ = ["CompiledAudit", "CompiledCopy", "CompiledLine", "audit_compiled"]


@dataclass(frozen=True)
class CompiledCopy:
    """One copy the compiled program makes in one call (a kernel call site, all its runs summed)."""

    kernel: str  # the generated kernel (cpp_fused_clone_permute_0) or the ATen op that copies (aten::copy_)
    how: str  # "kernel": a generated kernel stores data unchanged | "aten": ATen copies inside an op the program calls
    bytes: int  # per call, every run of the graph summed
    writes: int  # how many times per call
    phase: str  # forward | backward
    graph: str  # which compiled graph ("forward 0", "backward 0")
    file: str | None
    line: int | None
    function: str | None = None
    code: str | None = None
    lines: tuple[str, ...] = ()  # "file:line" candidates when the copy could not be put on one line
    ops: tuple[str, ...] = ()  # the ATen ops the kernel was lowered from (provenance), or the copy's ATen chain
    buffer: str | None = None  # the buffer written (buf9), for a kernel
    #: the call it happens in: its provenance key ("cpp_fused_x_0:5", "extern_kernels.bmm:6")
    call: str | None = None
    avoidable: bool = True
    reason: str | None = None  # why ATen's copy is one every program pays (the eager audit's classification)

    @property
    def location(self) -> str:
        if self.file is None:
            return f"<{self.call or self.kernel}>"
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class CompiledLine:
    """The copies of one user line (and phase) in one call of the compiled program."""

    file: str | None
    line: int | None
    phase: str
    bytes: int
    writes: int
    kernels: tuple[str, ...]
    code: str | None
    avoidable: bool = True
    reason: str | None = None  # why every program pays it (an ATen copy the eager audit classifies so)


@dataclass
class CompiledAudit:
    copies: list[CompiledCopy] = field(default_factory=list)
    train: bool = False
    known: bool = True
    why_unknown: str | None = None
    #: per compiled graph: label, phase, calls per step, kernels, copy bytes, unknown bytes, notes
    graphs: list[dict[str, Any]] = field(default_factory=list)
    #: writes whose kind this reader cannot tell (C++ it does not follow): kernel, buffer, bytes per call
    unknown: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the user lines some kernel of a graph that ran comes from
    lines_run: set[tuple[str, int]] = field(default_factory=set)

    @property
    def total_bytes(self) -> int:
        return sum(c.bytes for c in self.copies)

    @property
    def avoidable_bytes(self) -> int:
        return sum(c.bytes for c in self.copies if c.avoidable)

    @property
    def unknown_bytes(self) -> int:
        return sum(u["bytes"] or 0 for u in self.unknown)

    def at(self, file: str, line: int, phase: str | None = None) -> list[CompiledCopy]:
        return [c for c in self.copies if c.file == file and c.line == line and (phase is None or c.phase == phase)]

    def by_line(self) -> list[CompiledLine]:
        groups: dict[tuple, list[CompiledCopy]] = defaultdict(list)
        for c in self.copies:
            groups[(c.file, c.line, c.phase, c.avoidable)].append(c)
        out = [CompiledLine(file=f, line=ln, phase=ph, bytes=sum(c.bytes for c in cs), writes=sum(c.writes for c in cs),
                            kernels=tuple(dict.fromkeys(c.kernel for c in cs)), code=cs[0].code, avoidable=av,
                            reason=cs[0].reason)
               for (f, ln, ph, av), cs in groups.items()]
        return sorted(out, key=lambda s: (-s.bytes, s.file or "", s.line or 0, s.phase))

    def summary(self) -> dict[str, Any]:
        return {
            "known": self.known, "why_unknown": self.why_unknown, "train": self.train,
            "copies": len(self.copies), "bytes_per_call": self.total_bytes,
            "avoidable_bytes_per_call": self.avoidable_bytes,
            "kernel_bytes_per_call": sum(c.bytes for c in self.copies if c.how == "kernel"),
            "aten_bytes_per_call": sum(c.bytes for c in self.copies if c.how == "aten"),
            "forward_bytes": sum(c.bytes for c in self.copies if c.phase == "forward"),
            "backward_bytes": sum(c.bytes for c in self.copies if c.phase == "backward"),
            "no_line_bytes": sum(c.bytes for c in self.copies if c.file is None),
            "unknown_bytes_per_call": self.unknown_bytes,
            "graphs": len(self.graphs),
            "lines": len({(c.file, c.line) for c in self.copies if c.file is not None}),
        }

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {"summary": self.summary(), "lines": [asdict(s) for s in self.by_line()],
                "copies": [asdict(c) for c in self.copies], "graphs": self.graphs, "unknown": self.unknown,
                "notes": self.notes}

    def __str__(self) -> str:
        return as_text(self)  # fxlint.renderers.audit.render_compiled_audit_text

    def __repr__(self) -> str:
        from ..tensor.info import human_bytes

        if not self.known:
            return f"<fxlint.CompiledAudit: not known ({self.why_unknown})>"
        what = "training step" if self.train else "forward call"
        return (f"<fxlint.CompiledAudit: {len(self.copies)} copies, {human_bytes(self.total_bytes)} per {what} of the "
                f"compiled program; print() it for the table>")


# ------------------------------------------------------------------------------------ the artifacts


@dataclass
class _Compile:
    """What Inductor wrote for one graph it compiled."""

    post_grad: str = ""
    code: str | None = None
    stack_traces: dict[str, list[str]] = field(default_factory=dict)  # "kernel:handle" -> user stack traces
    post_nodes: dict[str, list[str]] = field(default_factory=dict)  # "kernel:handle" -> post-grad node names


class _Artifacts(logging.Handler):
    """Collects the structured-trace artifacts Inductor emits while compiling (``torch._logging``'s
    ``trace_log``: it emits only when a handler is attached)."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.compiles: list[_Compile] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            meta = getattr(record, "metadata", None)
            payload = getattr(record, "payload", None)
            if not isinstance(meta, dict):
                return
            if "artifact" in meta and isinstance(meta["artifact"], dict):
                name = meta["artifact"].get("name")
                if name == "inductor_post_grad_graph":
                    self.compiles.append(_Compile(post_grad=payload or ""))
                elif name == "inductor_provenance_tracking_kernel_stack_traces" and self.compiles and payload:
                    import json

                    traces = json.loads(payload)
                    cur = self.compiles[-1]
                    cur.stack_traces = {k: list(v) for k, v in traces.items()}
                    # read now: in the forward compile these tables are the compile's own (reset after it)
                    table = getattr(torch._inductor.debug, "_inductor_triton_kernel_to_post_grad_node_info", {})
                    cur.post_nodes = {k: list(table.get(k, [])) for k in traces}
            elif "inductor_output_code" in meta and self.compiles:
                self.compiles[-1].code = payload
        except Exception:  # noqa: BLE001 - a record this reader does not know: the oracle says "not known"
            return


@contextlib.contextmanager
def _collecting() -> Iterator[_Artifacts]:
    from torch._logging._internal import trace_log

    handler = _Artifacts()
    old_level = trace_log.level
    trace_log.addHandler(handler)
    trace_log.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        trace_log.removeHandler(handler)
        trace_log.setLevel(old_level)


@contextlib.contextmanager
def _inductor_settings() -> Iterator[None]:
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    with inductor_config.patch({"fx_graph_cache": False, "cpp.enable_kernel_profile": True,
                                "trace.provenance_tracking_level": 1}), \
            functorch_config.patch(enable_autograd_cache=False):
        yield


# ------------------------------------------------------------------------------ the post-grad graph

_NODE = re.compile(r"^\s*(\w+)\s*:\s*\"([^\"]*)\"\s*=\s*(?:torch\.ops\.([\w.]+)\(|(.*))")
#: a node printed without a type (a fallback of several outputs: `sdpa = torch.ops.aten._scaled_dot_...(q, k, v)`)
_BARE_NODE = re.compile(r"^\s*(\w+)\s*=\s*torch\.ops\.([\w.]+)\(")
_TARGET = re.compile(r"torch\.ops\.[\w.]+")
_FILE = re.compile(r"^\s*# File: (.*?):(\d+) in (\S+), code: (.*)$")
_ITEMSIZE = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i16": 2, "i8": 1, "u8": 1, "b8": 1,
             "c64": 8, "c128": 16}
_TYPE = re.compile(r"^(\w+)\[([^\]]*)\]\[([^\]]*)\]")


@dataclass
class _PostNode:
    op: str | None  # aten.permute.default
    size: tuple[int, ...] | None
    itemsize: int | None
    where: tuple[str, int] | None  # the innermost frame Inductor prints
    users: set[str] = field(default_factory=set)  # the nodes that read it ("output": the graph returns it)
    stride: tuple[int, ...] | None = None


def _int_list(text: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:  # a symbol
        return None


def _post_grad_nodes(text: str) -> dict[str, _PostNode]:
    nodes: dict[str, _PostNode] = {}
    rhs: dict[str, str] = {}
    where: tuple[str, int] | None = None
    for line in text.splitlines():
        if line.strip().startswith("return "):
            rhs["output"] = line
        if not line.strip():
            where = None
            continue
        m = _FILE.match(line)
        if m:
            where = (m.group(1), int(m.group(2)))
            continue
        m = _NODE.match(line)
        if m:
            t = _TYPE.match(m.group(2))
            size = _int_list(t.group(2)) if t is not None else None
            item = _ITEMSIZE.get(t.group(1)) if t is not None else None
            nodes[m.group(1)] = _PostNode(op=m.group(3), size=size, itemsize=item, where=where,
                                          stride=_int_list(t.group(3)) if t is not None else None)
            rhs[m.group(1)] = line.split("=", 1)[1]
            continue
        m = _BARE_NODE.match(line)
        if m:
            nodes[m.group(1)] = _PostNode(op=m.group(2), size=None, itemsize=None, where=where)
            rhs[m.group(1)] = line.split("=", 1)[1]
    for user, text_ in rhs.items():
        # the names of the nodes it reads, not the op it calls (`torch.ops.aten.clone.default` reads no `clone`)
        for name in set(re.findall(r"\b\w+\b", _TARGET.sub("", text_))) & nodes.keys():
            if name != user:
                nodes[name].users.add(user)
    return nodes


# --------------------------------------------------------------------------------- one compiled graph

#: ops whose output is their input's data moved (a copy, a gather, a pad, a dtype conversion): a buffer that holds
#: one's value in its layout is its copy
_MOVE_OPS = {"clone", "contiguous", "_to_copy", "convert_element_type", "copy", "copy_", "index", "_unsafe_index",
             "index_select", "gather", "constant_pad_nd", "repeat", "flip", "roll"}

#: ops that only name memory (no data moves for them); a buffer is matched to a node of another kind first
_VIEW_OPS = {"view", "reshape", "_unsafe_view", "permute", "transpose", "t", "expand", "slice", "select", "squeeze",
             "unsqueeze", "as_strided", "alias", "unfold", "split", "split_with_sizes", "unbind", "diagonal"}


@dataclass
class _Graph:
    label: str
    phase: str
    code: oc.OutputCode
    compile: _Compile
    nodes: dict[str, _PostNode]
    events: dict[str, int]  # generated kernel's profiler event -> call sites per run

    @functools.cached_property
    def order(self) -> dict[str, int]:
        """Post-grad node name -> its position (the graph is printed in topological order)."""
        return {name: i for i, name in enumerate(self.nodes)}

    def expected_names(self) -> set[str]:
        names = set(self.events)
        for c in self.code.calls:
            if c.kind != "generated":
                names.add(_op_base(c.name))
        return names


def _op_base(name: str) -> str:
    """``extern_kernels.bmm`` / ``aten.index.Tensor`` / ``aten::bmm`` -> ``bmm`` / ``index`` / ``bmm``."""
    name = name.split("::")[-1]
    parts = name.split(".")
    if parts[0] in ("extern_kernels",):
        return parts[-1]
    if len(parts) >= 3:  # aten.index.Tensor, mkldnn._convolution_pointwise.default
        return parts[-2]
    return parts[-1]


def _locations(traces: list[str]) -> list[Any]:
    out, seen = [], set()
    for t in traces:
        loc = user_frame(t)
        if loc is not None and (loc.file, loc.line) not in seen:
            seen.add((loc.file, loc.line))
            out.append(loc)
    return out


def _innermost(trace: str) -> tuple[str, int] | None:
    from ..util.source import parse_stack_trace

    frames = parse_stack_trace(trace)
    return (frames[-1].file, frames[-1].line) if frames else None


def _line_of(graph: _Graph, call: oc.Call, write: oc.Write | None
             ) -> tuple[Any, tuple[str, ...], tuple[str, ...]]:
    """(user location or None, candidate "file:line"s when not decided, the ops of the kernel) of a write
    (``write`` None: the call as a whole, an extern kernel's)."""
    traces = graph.compile.stack_traces.get(call.handle or "", [])
    post = graph.compile.post_nodes.get(call.handle or "", [])
    ops = tuple(dict.fromkeys(_short_op(graph.nodes[n].op) for n in post if n in graph.nodes and graph.nodes[n].op))
    locs = _locations(traces)
    if len(locs) == 1:
        return locs[0], (), ops
    undecided = tuple(f"{loc.file}:{loc.line}" for loc in locs)
    if write is None:
        # an extern kernel whose stack traces name several lines (a fallback carries those of every op lowered
        # into its inputs): the line of its own op's post-grad node, where the output code names it
        own = _own_locations(graph, call)  # all of them when its op has no post-grad node of its own
        return (own[0], (), ops) if len(own) == 1 else (None, undecided, ops)
    if not locs:
        # a kernel with no user line of its own (it only reads graph inputs: a parameter or the caller's tensor
        # laid out for the extern kernel that reads it next, as a training graph's convolution has it): that
        # kernel's line, where eager makes the same conversion (inside the op)
        loc = _extern_reader_line(graph, call, write.arg)
        return (loc, (), ops) if loc is not None else (None, undecided, ops)
    item = write.bytes // max(1, numel(write.size)) if write.bytes is not None and write.size is not None else None
    nodes = [graph.nodes[n] for n in post if n in graph.nodes]
    sliced = write.base is not None and write.base != write.size
    # several lines: a buffer that holds, in that op's layout (but for dims of 1), the value of an op that moves
    # data (the user's `.contiguous()` before a kernel that takes it as it is) is that op's copy, whatever reads it
    kept = False
    if not sliced and write.size is not None and write.stride is not None:
        layout = _squeezed_layout(write.size, write.stride)
        holders = [n for n in nodes if _short_op(n.op) in _MOVE_OPS and n.size is not None and n.stride is not None
                   and (item is None or n.itemsize in (None, item)) and _squeezed_layout(n.size, n.stride) == layout]
        if holders:
            later = _ops_read(graph, call)
            holders = [n for n in holders if not _feeds(graph, n, later)]
        held = _lines_of_nodes(holders, traces)
        if len(held) == 1:
            return next(iter(held.values())), (), ops
        # the value of one of them the graph returns (a KV cache's concatenation): kept for the caller, not
        # made for the op that reads it next
        kept = bool(held) and any("output" in n.users for n in holders)
        # a layout no op of the kernel has, read next by an extern kernel: laid out for that kernel (a training
        # graph's convolution input, whose conversion Inductor lowers without the convolution's provenance):
        # that kernel's line, as when it has the provenance
        laid = [n for n in nodes if n.size is not None and n.stride is not None]
        if laid and not kept and all(_squeezed_layout(n.size, n.stride) != layout for n in laid):  # type: ignore[arg-type]
            loc = _extern_reader_line(graph, call, write.arg)
            if loc is not None:
                return loc, (), ops
    # several lines: a copy of values the kernel itself computed and stored in another of its buffers, read next
    # by an extern kernel: laid out for that kernel (a training graph's gradient stored as Inductor chose, then
    # copied to the channels_last layout the convolution's backward needs; the post-grad graph's strides do not
    # say which layout Inductor chose, so the rule above cannot tell)
    computed_here = {w.arg for w in call.writes if w.arg != write.arg and w.what != oc.DATA}
    if not kept and not sliced and write.what == oc.DATA and write.sources and set(write.sources) <= computed_here:
        loc = _extern_reader_line(graph, call, write.arg)
        if loc is not None:
            return loc, (), ops
    # several lines: a buffer made for the op that reads it next (a matmul's operand, a convolution's input
    # in the layout it needs) goes on that op's line, when the kernel comes from that line too: where eager
    # makes the same copy (inside the op)
    reader = _next_reader(graph, call, write.arg)
    if reader is not None and not kept:
        theirs = {(loc.file, loc.line) for loc in _own_locations(graph, reader)}
        mine = [loc for loc in locs if (loc.file, loc.line) in theirs]
        if len(mine) == 1:
            return mine[0], (), ops
    # several lines: the post-grad node the buffer holds: its size (or, for a cat input's slice, the size
    # of the buffer it is a slice of) and item size, read outside the kernel, moving data rather than a view
    inside = set(post)
    for size in ((write.base, write.size) if sliced else (write.size,)):
        if size is None:
            continue
        cands = [n for n in nodes if n.size == size and (item is None or n.itemsize in (None, item))]
        if sliced and size is write.base:
            # a write into a slice of a bigger buffer: the concatenation it fills (the user's `torch.cat`
            # line, even when the kernel also computes values of the piece's size that leave it)
            cands = [n for n in cands if _short_op(n.op) == "cat"]
        cands = [n for n in cands if n.users - inside] or cands
        movers = [n for n in cands if _short_op(n.op) not in _VIEW_OPS]
        if not movers and not sliced:
            # only views of the buffer's size (an `unsqueeze` the kernel stores through): the node beneath them
            # that moved the data, of the same size but for dims of 1
            movers = [n for n in nodes if _short_op(n.op) not in _VIEW_OPS and n.size is not None
                      and _squeezed(n.size) == _squeezed(size) and (item is None or n.itemsize in (None, item))]
        cands = movers or cands
        found = _lines_of_nodes(cands, traces)
        if len(found) == 1:
            return next(iter(found.values())), (), ops
        if len(found) > 1:
            # as many nodes of that size as lines (q's and v's operand copies of two matmuls): the line of
            # the call that reads the buffer next, when it is one of them
            reader = _next_reader(graph, call, write.arg)
            if reader is not None:
                mine = [found[k] for k in ((loc.file, loc.line) for loc in _own_locations(graph, reader)) if k in found]
                if len(mine) == 1:
                    return mine[0], (), ops
    return None, undecided, ops


def _lines_of_nodes(nodes: list[_PostNode], traces: list[str]) -> dict[tuple[str, int], Any]:
    """The user lines of post-grad nodes: the kernel's stack traces whose innermost frame is the node's."""
    found = {}
    for n in nodes:
        for t in traces:
            if n.where is not None and _innermost(t) == n.where:
                loc = user_frame(t)
                if loc is not None:
                    found[(loc.file, loc.line)] = loc
    return found


def _squeezed_layout(size: tuple[int, ...], stride: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """A layout without its dims of 1 (whose strides mean nothing)."""
    return tuple((n, st) for n, st in zip(size, stride) if n != 1)


def _own_locations(graph: _Graph, call: oc.Call) -> list[Any]:
    """The user lines of the op a call runs: its post-grad node of that op, where the output code names it (an
    extern kernel without an origin node, a fallback of several outputs such as scaled_dot_product_attention,
    has the stack traces of every op lowered into its inputs too: q's transpose is not the attention's line);
    else all its stack traces."""
    traces = graph.compile.stack_traces.get(call.handle or "", [])
    base = _op_base(call.name)
    wheres = {graph.nodes[n].where for n in graph.compile.post_nodes.get(call.handle or "", [])
              if n in graph.nodes and graph.nodes[n].where is not None and _short_op(graph.nodes[n].op) == base}
    own = [t for t in traces if _innermost(t) in wheres]
    return _locations(own or traces)


def _ops_read(graph: _Graph, call: oc.Call) -> list[_PostNode]:
    """The post-grad nodes of the extern kernels whose outputs ``call`` reads: a node of the kernel upstream
    of one of them is not a value the kernel writes (a kernel fused from several ops carries the provenance of
    them all: a convolution's output converted back for the caller names the upsampling before it)."""
    written = {w.arg for w in call.writes}
    names = {m.group(1) for a in call.args if a not in written
             for m in [_ARG_BUFFER.match(a)] if m is not None}
    found: list[_PostNode] = []
    for earlier in graph.code.calls[:call.index]:
        if earlier.kind != "generated" and earlier.out in names:
            base = _op_base(earlier.name)
            found += [graph.nodes[n] for n in graph.compile.post_nodes.get(earlier.handle or "", [])
                      if n in graph.nodes and _short_op(graph.nodes[n].op) == base]
    return found


def _feeds(graph: _Graph, node: _PostNode, targets: list[_PostNode]) -> bool:
    """Whether ``node``'s value flows into one of ``targets`` (through the nodes that read it); only the nodes
    before the last target in graph order (the post-grad graph is printed in topological order) are walked."""
    order = graph.order if targets else {}
    wanted = {id(t) for t in targets}
    last = max((i for name, i in order.items() if id(graph.nodes[name]) in wanted), default=-1)
    stack, seen = list(node.users), set[str]()
    while stack:
        name = stack.pop()
        nxt = graph.nodes.get(name)
        if nxt is None or name in seen or order.get(name, last + 1) > last:
            continue
        if id(nxt) in wanted:
            return True
        seen.add(name)
        stack.extend(nxt.users)
    return False


def _extern_reader_line(graph: _Graph, call: oc.Call, arg: str) -> Any:
    """The one own line of the extern kernel that reads ``arg`` next (None: a generated kernel reads it next,
    nothing does, or its op names several lines)."""
    reader = _next_reader(graph, call, arg)
    own = _own_locations(graph, reader) if reader is not None and reader.kind != "generated" else []
    return own[0] if len(own) == 1 else None


#: the buffer an output-code argument names (``buf3``, ``reinterpret_tensor(buf3, ...)``)
_ARG_BUFFER = re.compile(r"^(?:reinterpret_tensor\()?(\w+)")


def _next_reader(graph: _Graph, call: oc.Call, arg: str) -> oc.Call | None:
    m = _ARG_BUFFER.match(arg)
    if m is None:
        return None
    name = re.compile(rf"\b{re.escape(m.group(1))}\b")
    for later in graph.code.calls[call.index + 1:]:
        if any(name.search(a) for a in later.args):
            return later
    return None


def _squeezed(size: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(n for n in size if n != 1)


def _short_op(op: str | None) -> str:
    if not op:
        return "?"
    parts = op.split(".")
    return parts[1] if len(parts) >= 3 else parts[-1]


def _graphs(artifacts: _Artifacts) -> tuple[list[_Graph], list[str]]:
    graphs: list[_Graph] = []
    problems: list[str] = []
    counts = {"forward": 0, "backward": 0}
    for comp in artifacts.compiles:
        if comp.code is None:
            problems.append("Inductor wrote no output code for a graph it lowered")
            continue
        try:
            code = oc.parse(comp.code)
        except ValueError as exc:
            problems.append(f"could not read an output code ({exc})")
            continue
        phase = "backward" if re.search(r"def forward\(self[^)]*tangents_", comp.post_grad) else "forward"
        label = f"{phase} {counts[phase]}"
        counts[phase] += 1
        events: dict[str, int] = defaultdict(int)
        for c in code.calls:
            if c.kind == "generated":
                ev = code.kernels[c.name].event
                if ev is not None:
                    events[ev] += 1
        graphs.append(_Graph(label=label, phase=phase, code=code, compile=comp, nodes=_post_grad_nodes(comp.post_grad),
                             events=dict(events)))
    return graphs, problems


# ---------------------------------------------------------------------------------------- profiling

_CALL_EVENT = "## Call CompiledFxGraph"


def _graph_calls(roots: list[Any]) -> list[Any]:
    out: list[Any] = []
    stack = list(reversed(roots))
    while stack:
        e = stack.pop()
        if is_op(e) and e.name.startswith(_CALL_EVENT):
            out.append(e)
            continue
        stack.extend(reversed(e.children))
    return sorted(out, key=lambda e: e.start_time_ns)


def _which_graph(event: Any, graphs: list[_Graph]) -> _Graph | None:
    """The compiled graph one ``## Call CompiledFxGraph`` event ran: the one whose calls match its children
    best (its generated kernels' event names, then its extern calls' ops), what it calls and the event
    lacks, or the event has and it does not call, counting against it."""
    names = [c.name for c in event.children if is_op(c)]
    best, score = None, None
    for g in graphs:
        generated = [n for n in names if n.startswith("graph_") or n in g.events]
        externs = sorted(_op_base(c.name) for c in g.code.calls if c.kind != "generated")
        seen_externs = sorted(_op_base(n) for n in names if n not in generated)
        s = 10 * sum(min(generated.count(e), k) for e, k in g.events.items())
        s -= 10 * abs(len(generated) - sum(g.events.values()))
        common = sum(min(externs.count(x), seen_externs.count(x)) for x in set(externs))
        s += common - (len(externs) - common)
        if score is None or s > score:
            best, score = g, s
    return best


def _audit_run(graphs: list[_Graph], roots: list[Any], report: CompiledAudit) -> None:
    from .profiler import _extract

    runs: dict[str, int] = defaultdict(int)
    seen: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    aten: list[tuple[_Graph, oc.Call | None, Any]] = []  # (graph, call, copy event)
    for ev in _graph_calls(roots):
        g = _which_graph(ev, graphs)
        if g is None:
            report.notes.append(f"a compiled graph ran whose output code was not seen ({len(ev.children)} ops)")
            continue
        runs[g.label] += 1
        j = 0
        calls = g.code.calls
        for child in ev.children:
            if not is_op(child):
                continue
            if child.name in g.events:
                seen[g.label][child.name] += 1
                continue
            base = _op_base(child.name)
            match = None
            for k in range(j, len(calls)):
                if calls[k].kind != "generated" and _op_base(calls[k].name) == base:
                    match, j = calls[k], k + 1
                    break
            for c in _extract([child], {}).copies:
                aten.append((g, match, c))
    by_label = {g.label: g for g in graphs}
    for label, n in runs.items():
        g = by_label[label]
        _kernel_copies(g, n, dict(seen[label]), report)
    for g, call, c in aten:
        loc: Any = None
        cands: tuple[str, ...] = ()
        if call is not None:
            loc, cands, _ = _line_of(g, call, None)
        report.copies.append(CompiledCopy(
            kernel=c.kernel, how="aten", bytes=c.bytes, writes=1, phase=g.phase, graph=g.label,
            file=loc.file if loc else None, line=loc.line if loc else None, function=loc.function if loc else None,
            code=loc.code if loc else None, lines=cands, ops=c.chain, call=call.handle or call.name if call else None,
            avoidable=c.avoidable, reason=c.reason))
    report.copies[:] = _merged(report.copies)
    for g in graphs:
        info = {"label": g.label, "phase": g.phase, "runs_per_call": runs.get(g.label, 0),
                "kernels": len(g.code.kernels), "calls": len(g.code.calls),
                "copy_bytes": sum(c.bytes for c in report.copies if c.graph == g.label)}
        report.graphs.append(info)


def _kernel_copies(g: _Graph, runs: int, seen: dict[str, int], report: CompiledAudit) -> None:
    for ev, per_run in g.events.items():
        got = seen.get(ev, 0)
        if got != per_run * runs:
            report.notes.append(f"{g.label}: the profiler saw {ev} {got} times in {runs} run(s) of the graph, where "
                                f"its output code calls it {per_run} time(s) a run")
    for call in g.code.calls:
        if call.kind != "generated":
            continue
        kernel = g.code.kernels[call.name]
        ran = runs if kernel.event is None else min(runs, seen.get(kernel.event, 0) // max(1, g.events[kernel.event]))
        for write in call.writes:
            arg, nbytes, what = write.arg, write.bytes, write.what
            if what == oc.UNKNOWN:
                report.unknown.append({"graph": g.label, "kernel": call.name, "buffer": arg,
                                       "bytes": nbytes * ran if nbytes is not None else None})
                continue
            if what != oc.DATA or not ran:
                continue
            loc, cands, ops = _line_of(g, call, write)
            if nbytes is None:
                report.notes.append(f"{g.label}: {call.name} writes {arg}, whose size the output code does not say")
                continue
            gathered = _decomposed_gather(g, call, write)
            report.copies.append(CompiledCopy(
                kernel=call.name, how="kernel", bytes=nbytes * ran, writes=ran, phase=g.phase, graph=g.label,
                file=loc.file if loc else None, line=loc.line if loc else None,
                function=loc.function if loc else None, code=loc.code if loc else None, lines=cands, ops=ops,
                buffer=arg, call=call.handle, avoidable=not gathered,
                reason=_GATHER_REASON if gathered else None))
        if ran:
            for loc in _locations(g.compile.stack_traces.get(call.handle or "", [])):
                report.lines_run.add((loc.file, loc.line))
    for call in g.code.calls:
        if call.kind != "generated" and runs:
            for loc in _locations(g.compile.stack_traces.get(call.handle or "", [])):
                report.lines_run.add((loc.file, loc.line))


_GATHER_REASON = ("the output of an op Inductor lowers to a gather (a nearest upsampling, a reflection pad), which "
                  "eager's op writes too")


def _decomposed_gather(graph: _Graph, call: oc.Call, write: oc.Write) -> bool:
    """Whether a kernel's write, bigger than each buffer it loads from, holds the value of an `_unsafe_index` node,
    and of no other op that moves data, of its size: a gather Inductor decomposed an op into (`upsample_nearest2d`,
    a reflection pad, im2col), whose own output this is. Eager runs that op as one kernel writing the same output,
    and the eager audit never counts it as a copy. (The user's own indexing stays `index` in the post-grad graph, or
    becomes `_unsafe_index` by a pattern that never writes more than it loads.)"""
    if write.size is None or not write.source_numels or any(n is None or n >= numel(write.size)
                                                            for n in write.source_numels):
        return False  # each value loaded once (a copy), or loads the reader cannot size: not an expansion
    item = write.bytes // max(1, numel(write.size)) if write.bytes is not None else None
    size = _squeezed(write.size)
    nodes = [graph.nodes[n] for n in graph.compile.post_nodes.get(call.handle or "", []) if n in graph.nodes]
    movers = [n for n in nodes if _short_op(n.op) in (*_MOVE_OPS, "cat") and n.size is not None
              and _squeezed(n.size) == size and (item is None or n.itemsize in (None, item))]
    return bool(movers) and all(_short_op(n.op) == "_unsafe_index" for n in movers)


def _merged(copies: list[CompiledCopy]) -> list[CompiledCopy]:
    """ATen copies of one call site merged (one row per call site and kind of copy); kernel copies kept."""
    out: dict[tuple, CompiledCopy] = {}
    for c in copies:
        key = (c.how, c.graph, c.call, c.kernel, c.buffer, c.file, c.line, c.ops, c.avoidable)
        old = out.get(key)
        if old is None:
            out[key] = c
        elif c.how == "aten":
            from dataclasses import replace

            out[key] = replace(old, bytes=old.bytes + c.bytes, writes=old.writes + c.writes)
        else:
            out[key + (len(out),)] = c
    return list(out.values())


# ------------------------------------------------------------------------------------------ the entry


def audit_compiled(target: Any, example_inputs: Any = None, *, train: bool = False,
                   runs: Callable[[Callable[[], Any]], None] | None = None) -> CompiledAudit:
    """Compile ``target`` with Inductor and measure the copies its compiled program makes in one call (see
    the module docstring). ``train=True``: a training step (forward, then backward of the eager audit's
    loss), the backward graph compiled at the first backward and measured too."""
    from ..capture.graphs import _forget_new_codes, normalise_inputs, require_tensor_output
    from ..util.quiet import quiet_torch_logs
    from ..util.state import preserved_state
    from . import _as_runnable, training_loss

    fn, module = _as_runnable(target)
    args, kwargs = normalise_inputs(example_inputs)
    report = CompiledAudit(train=train)
    devices = {a.device.type for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)}
    if module is not None:
        devices |= {p.device.type for p in module.parameters()}
    if devices - {"cpu"}:
        report.known, report.why_unknown = False, (
            f"the compiled-program oracle reads Inductor's C++ kernels (CPU); this model runs on {sorted(devices)}")
        return report

    def backend(gm: Any, example: list[Any]) -> Any:
        from torch._inductor.compile_fx import compile_fx

        return compile_fx(gm, example)

    import torch._dynamo.convert_frame as convert_frame

    seen_codes = {id(ref()) for ref in convert_frame.input_codes.seen if ref() is not None}
    compiled = torch.compile(  # type: ignore[call-overload]
        fn, backend=backend, isolate_recompiles=True, recompile_limit=64)
    weights: dict[int, torch.Tensor] = {}
    params = list(module.parameters()) if module is not None else []
    leaves = params + [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor) and a.is_leaf
                       and a.requires_grad]
    saved_grads = [(p, p.grad) for p in leaves]

    def step() -> Any:
        out = compiled(*args, **kwargs)
        require_tensor_output(out)
        if train:
            loss = training_loss(out, weights)
            if loss is None:
                raise ModelError("train=True needs a floating-point output that requires grad; none did")
            loss.backward()
            for p in leaves:
                p.grad = None
        return out

    from torch.profiler import ProfilerActivity, profile

    from ..util.quiet import quiet_native_stderr

    settings = contextlib.ExitStack()
    try:  # a torch without these settings or this log: not known, and why
        settings.enter_context(_inductor_settings())
    except Exception as exc:  # noqa: BLE001
        settings.close()
        report.known, report.why_unknown = False, f"this torch lacks what the oracle reads ({_first(exc)})"
        return report
    try:
        # the structured log's handler inside quiet_torch_logs, which takes foreign handlers off that log
        with preserved_state(module, (args, kwargs)), quiet_torch_logs(), settings, _collecting() as artifacts, \
                torch._dynamo.config.patch(automatic_dynamic_shapes=False), \
                torch.set_grad_enabled(train or torch.is_grad_enabled()):
            try:  # Inductor's artifacts are collected from the first call on
                step()  # compiles (the backward too, with train=True)
                step()  # warm-up: a cache the first call fills, a recompile it causes
            except (ModelError, CaptureError):
                raise
            except Exception as exc:  # noqa: BLE001 - Inductor's failure: not known, and why
                report.known, report.why_unknown = False, f"the compile or the compiled call failed ({_first(exc)})"
                return report
            with quiet_native_stderr(), profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                                                profile_memory=True) as prof:
                step()
            roots = prof.profiler.kineto_results.experimental_event_tree()
    finally:
        _forget_new_codes(seen_codes)
        for p, g in saved_grads:
            p.grad = g
    graphs, problems = _graphs(artifacts)
    report.notes.extend(problems)
    if any(g.code.triton for g in graphs):
        report.known, report.why_unknown = False, "Triton kernels (a GPU's): the oracle reads the CPU's C++ kernels"
        return report
    if not graphs:
        report.known = False
        report.why_unknown = problems[0] if problems else (
            "Inductor emitted no output code while the oracle watched (another torch, or nothing was compiled)")
        return report
    try:
        _audit_run(graphs, roots, report)
    except Exception as exc:  # noqa: BLE001 - a profile this reader does not know: not known, never a guess
        report.known, report.why_unknown = False, f"could not read the profile of the compiled program ({_first(exc)})"
        report.copies.clear()
    return report


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__

"""Run a model eagerly under ``torch.profiler`` and record every data copy it makes.

How a copy is found and attributed:

* A ``TorchFunctionMode`` wraps every torch call the user's code makes in a
  ``record_function("fxlint@N")`` annotation and remembers N's source line
  (the innermost frame outside torch and fxlint) and module path (from
  forward hooks). Copies a kernel makes internally (``aten::convolution`` ->
  ``aten::contiguous`` -> ``aten::clone`` -> ``aten::copy_``) nest under that
  annotation in the profiler's event tree.
* Copy kernels are the leaves that move data: ``aten::copy_`` (every clone,
  contiguous, ``_to_copy``, repeat, reshape-copy goes through it), gathers
  (``aten::index``, ``index_select``, ``gather``, ``take``, ``masked_select``)
  and scatters that write values (``index_put_``, ``scatter_``, ``index_copy_``...).
  A scatter that *accumulates* (``index_add_``, ``scatter_add_``, ``scatter_reduce_``,
  ``index_reduce_``, ``index_put_(..., accumulate=True)``, ``scatter_(..., reduce=)``) is a
  reduction, like ``sum``: not a copy (``is_reduction``), except in the backward of a gather
  (``IndexBackward0``, ``IndexSelectBackward0``, ``GatherBackward0``), where it writes the gathered
  gradient back, as ``slice_backward`` copies a slice's. The copy an out-of-place reduction
  makes of its input first (``x.index_add(...)``) is a copy, every such call pays it.
* Bytes: ``copy_`` writes its destination (shape x itemsize); a gather writes
  its output (the largest allocation the op makes, from ``profile_memory``); a
  scatter writes its source values; a host read (``aten::_local_scalar_dense``
  under ``.item()``, ``float(t)``, ``torch.tensor`` of tensors) moves one element.
* Backward: ``autograd::engine::evaluate_function: XBackward0`` events carry
  the sequence number of the forward op that created the node, which maps the
  backward copy to the forward annotation, hence to the user's line.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from ..util.source import (
    Location,
    frame_text,
    is_internal_file,
    is_passthrough_file,
    is_patched_torch_code,
    user_frame,
    via_chain,
)
from ._events import is_allocation, is_op, numel
from .computed_gathers import SELECTION, computed_gathers, event_key

# Kineto prints "USDT: profiler_start/stop" lines on stderr at its default level; it reads the
# level when the profiler first starts, so setting it here (before any profile) silences them.
os.environ.setdefault("KINETO_LOG_LEVEL", "6")

COPY_KERNELS = {"aten::copy_"}
GATHER_KERNELS = {
    "aten::index", "aten::_unsafe_index", "aten::index_select", "aten::gather", "aten::take",
    "aten::masked_select", "aten::take_along_dim",
}
#: a read of one element back to the host (.item(), float(t), torch.tensor of tensors): on a GPU a
#: device-to-host copy and a sync
HOST_READ_KERNELS = {"aten::_local_scalar_dense"}
SCATTER_KERNELS = {  # op name -> position of the values/source argument
    "aten::index_put_": 2, "aten::_index_put_impl_": 2, "aten::index_put": 2, "aten::scatter_": 3,
    "aten::scatter": 3, "aten::index_copy_": 3, "aten::index_copy": 3, "aten::masked_scatter_": 2,
}
#: scatters that accumulate into their destination: reductions (message passing's aggregation, the
#: backward of a gather), not copies. On the CPU ``index_add_`` runs ``scatter_add_`` inside.
REDUCTION_KERNELS = {
    "aten::index_add_", "aten::index_add", "aten::scatter_add_", "aten::scatter_add", "aten::scatter_reduce_",
    "aten::scatter_reduce", "aten::index_reduce_", "aten::index_reduce",
}
#: scatters that reduce only with some arguments: op -> (position, what the profiler records there
#: when they do). ``index_put_``'s ``accumulate`` is recorded as a bool; ``scatter_``'s ``reduce``
#: string is not recorded, but only its reducing overloads have a fifth argument
_ACCUMULATING_WHEN = {"aten::index_put_": (3, True), "aten::_index_put_impl_": (3, True),
                      "aten::index_put": (3, True), "aten::scatter_": (4, None), "aten::scatter": (4, None)}
#: out-of-place reductions: their output starts as a copy of their input (``x.index_add(...)``)
_OUT_OF_PLACE_REDUCTIONS = {"aten::index_add", "aten::scatter_add", "aten::scatter_reduce", "aten::index_reduce",
                            "aten::index_put", "aten::scatter"}
#: ops that name *why* a copy happened; the first of these in a copy's chain is reported as its op
#: (reshape, flatten and to are not among them: they copy only through clone / _to_copy, which are)
COPY_ENTRY_OPS = {
    "aten::contiguous", "aten::clone", "aten::_to_copy", "aten::repeat", "aten::tile",
    "aten::expand_copy", "aten::_reshape_copy", "aten::copy_",
    "aten::index", "aten::_unsafe_index", "aten::index_select", "aten::gather", "aten::take",
    "aten::masked_select", "aten::take_along_dim", "aten::repeat_interleave", "aten::lift_fresh_copy",
} | set(SCATTER_KERNELS) | REDUCTION_KERNELS
#: conversions the user calls whose copy sits under ``aten::_to_copy``: a one-element tensor converted
#: by the user (``x.half().float()`` on a scalar loss) is the user's copy, not a wrapped Python scalar
_USER_CONVERSIONS = {"aten::to", "aten::type_as"}
#: scatters whose values broadcast to the indexed elements: with one value, a masked fill
_FILL_SCATTERS = {"aten::index_put_", "aten::_index_put_impl_", "aten::index_put"}
#: a copy directly under one of these parents is paid by every program (BLAS beta=1 bias copy)
_BIAS_INTO_OUTPUT = {"aten::addmm", "aten::addmv", "aten::baddbmm", "aten::addbmm", "aten::addr",
                     "aten::_addmm_activation"}  # addmm with a fused relu/gelu (TransformerEncoderLayer's fast path)
#: the native (non-oneDNN) CPU conv kernels write the bias into the output before accumulating
_CONV_BIAS_INTO_OUTPUT = {"aten::_slow_conv2d_forward", "aten::slow_conv3d_forward", "aten::slow_conv_dilated2d",
                          "aten::slow_conv_dilated3d"}
#: copies made inside the fused RNN kernels (e.g. gru_cell's in-place gate update clones): no
#: user-level spelling avoids them short of writing the cell by hand
_RNN_KERNELS = {"aten::gru_cell", "aten::lstm_cell", "aten::rnn_tanh_cell", "aten::rnn_relu_cell", "aten::lstm",
                "aten::gru", "aten::rnn_tanh", "aten::rnn_relu"}
_EMBEDDING = {"aten::embedding", "aten::embedding_dense_backward", "aten::embedding_backward",
              "aten::_embedding_bag", "aten::embedding_bag"}

_ANNOTATION = re.compile(r"^fxlint@(\d+)$")
_EVAL_WITH_KEY = "<eval_with_key>"
_ASSIGN = re.compile(r"^\s*(\w+)\s*=")
_SEQ_EVENT = "autograd::engine::evaluate_function: "


@dataclass(frozen=True)
class CallSite:
    """Where one torch call came from."""

    location: Location | None  # None: fxlint's own code (e.g. the training loss)
    module_path: str | None
    func: str
    internal: bool = False


@dataclass(frozen=True)
class CopyEvent:
    """One copy the runtime made."""

    kernel: str  # the op that wrote the bytes: aten::copy_, aten::index, ...
    op: str  # the op that asked for the copy: aten::contiguous, aten::clone, aten::index, ...
    top_op: str  # the outermost ATen op: aten::conv3d, aten::matmul, ...
    chain: tuple[str, ...]  # ATen ops from top_op down to kernel
    bytes: int
    shape: tuple[int, ...]
    dtype: str
    kind: str  # layout | dtype | device | gather | scatter | host-read
    phase: str  # forward | backward
    file: str | None
    line: int | None
    function: str | None
    code: str | None
    module_path: str | None
    grad_fn: str | None = None  # backward node, e.g. ConvolutionBackward0
    avoidable: bool = True
    reason: str | None = None  # why it is unavoidable
    time_ns: int = 0  # how long the op that asked for the copy ran (``op``'s profiler event), per call
    func: str | None = None  # the torch function the user's line called: "contiguous", "float", "to"
    via: tuple[str, ...] = ()  # the frames between the user's line and that call (torch's, einops'...)

    @property
    def location(self) -> str:
        if self.file is None:
            return f"<{self.grad_fn or 'runtime'}>"
        if self.file == "<graph>":
            return f"<graph>:{self.function}"
        rel = os.path.relpath(self.file)
        path = self.file if rel.startswith("..") else rel
        return f"{path}:{self.line}"


@dataclass
class RawAudit:
    copies: list[CopyEvent] = field(default_factory=list)
    sites: dict[int, CallSite] = field(default_factory=dict)
    internal_bytes: int = 0
    #: the profiled call's duration, whole and per phase (forward, backward), as ``fn`` reported
    #: them through ``timer`` (under the profiler, so with its overhead, like the copies' times)
    phase_ns: dict[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- call-site recording


class _SiteMode(TorchFunctionMode):
    """Annotate every torch call with the user's source line."""

    def __init__(self, module_stack: list[str]) -> None:
        super().__init__()
        self.sites: dict[int, CallSite] = {}
        self._cache: dict[tuple, int] = {}
        self._module_stack = module_stack
        self._owner = threading.get_ident()

    def __torch_function__(self, func: Callable, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if threading.get_ident() != self._owner:
            return func(*args, **kwargs)
        site = _call_site(sys._getframe(1))
        mod = self._module_stack[-1] if self._module_stack else None
        name = getattr(func, "__name__", str(func))
        if name == "__setitem__" and _writes_itself(args):
            name = SELF_ASSIGN  # its own site: the copy under it moves nothing (see classify)
        key = (site[0], mod, name)
        idx = self._cache.get(key)
        if idx is None:
            idx = len(self.sites)
            self._cache[key] = idx
            self.sites[idx] = CallSite(location=site[0], module_path=mod or None, func=name, internal=site[1])
        with torch.profiler.record_function(f"fxlint@{idx}"):
            return func(*args, **kwargs)


#: torch modules whose eager fast path is refused when any torch-function mode is active
#: (``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer``/``Encoder`` in inference: "some Tensor
#: argument has_torch_function"); the audit must measure the path the user's program really takes
_FAST_PATH_MODULES = frozenset({"torch.nn.modules.activation", "torch.nn.modules.transformer"})


@contextlib.contextmanager
def _fast_paths_kept(mode: _SiteMode) -> Iterator[None]:
    """Hide the audit's own ``_SiteMode`` from the fast-path checks of ``_FAST_PATH_MODULES``.

    Without this, recording call sites would change the program it records: an inference
    ``nn.MultiheadAttention`` would run its slow Python path (transposes, a ``.contiguous()`` in
    ``F.multi_head_attention_forward``, a transposed output that makes the next ``layer_norm`` copy)
    instead of the fused ``_native_multi_head_attention`` that runs without fxlint."""
    original = torch.overrides.has_torch_function

    def has_torch_function(args: Any) -> bool:
        caller = sys._getframe(1).f_globals.get("__name__")
        if caller in _FAST_PATH_MODULES and torch.overrides._get_current_function_mode() is mode:
            with torch.overrides._pop_mode_temporarily():
                return original(args)
        return original(args)

    torch.overrides.has_torch_function = has_torch_function
    try:
        yield
    finally:
        torch.overrides.has_torch_function = original


#: the call-site name of ``x[i] = v`` where ``v`` already is ``x[i]``'s memory (``x[i] += y``: Python
#: runs ``__iadd__`` on the view, then ``__setitem__`` writes the view back onto itself)
SELF_ASSIGN = "__setitem__(self)"


def _writes_itself(args: tuple) -> bool:
    """``Tensor.__setitem__(x, index, value)`` whose ``value`` is exactly the memory ``x[index]``
    names (same storage, offset, sizes, strides, dtype). ATen's ``copy_`` returns at once for such a
    pair (``copy_impl``: "Exit early if self and src are views of the same data"): measured, a 16 MiB
    region assigned to itself takes 0.02 ms where a real copy of it takes ~5 ms."""
    if len(args) < 3 or not isinstance(args[0], torch.Tensor) or not isinstance(args[2], torch.Tensor):
        return False
    x, index, value = args[0], args[1], args[2]
    try:
        if value.untyped_storage().data_ptr() != x.untyped_storage().data_ptr():
            return False
        with torch._C.DisableTorchFunction():
            target = x[index]
    except Exception:  # noqa: BLE001 - an index we cannot replay is not a self-assignment we can prove
        return False
    return (target.storage_offset() == value.storage_offset() and target.shape == value.shape
            and target.stride() == value.stride() and target.dtype == value.dtype
            and target.is_conj() == value.is_conj() and target.is_neg() == value.is_neg())


def _call_site(frame: Any) -> tuple[Location | None, bool]:
    """(user location, is fxlint-internal) of the innermost frame outside torch, fxlint, the pass-through
    libraries (``fxlint.util.source.is_passthrough_file``: the ``rearrange(...)`` line, not einops' own) and a
    library's replacement of a torch function (PyG's ``torch.index_select``); the innermost pass-through frame
    when no other is found."""
    f = frame
    passed: Any = None  # the innermost pass-through library frame seen
    inside: list[str] = []  # the torch / pass-through frames walked out of, innermost first
    while f is not None:
        path = f.f_code.co_filename
        if path.startswith(_EVAL_WITH_KEY):
            loc = _graph_module_location(f)
            if loc is not None:
                return loc, False
            f = f.f_back
            continue
        if not is_internal_file(path):
            if is_passthrough_file(path) or is_patched_torch_code(path, f.f_code.co_name):
                passed = passed or f
                inside.append(_frame_text(f))
                f = f.f_back
                continue
            code = linecache.getline(path, f.f_lineno).strip() or None
            return Location(path, f.f_lineno, f.f_code.co_name, code, via=_via(inside)), False
        if os.path.abspath(path).startswith(_FXLINT_DIR):
            break  # fxlint's own code (the training loss, the audit itself)
        inside.append(_frame_text(f))
        f = f.f_back
    if passed is not None:
        path = passed.f_code.co_filename
        code = linecache.getline(path, passed.f_lineno).strip() or None
        return Location(path, passed.f_lineno, passed.f_code.co_name, code), False
    return None, True


_FXLINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # fxlint/


def _frame_text(f: Any) -> str:
    return frame_text(Location(f.f_code.co_filename, f.f_lineno, f.f_code.co_name))


def _via(inside: list[str]) -> tuple[str, ...]:
    """The frames inside the user's line, outermost first, less the audit's own wrapper frames."""
    return via_chain(list(reversed(inside)))


def _graph_module_location(frame: Any) -> Location | None:
    """A frame in GraphModule-generated code: map the line to its node, then to the node's source."""
    gm = frame.f_locals.get("self")
    if not isinstance(gm, torch.fx.GraphModule):
        return None
    text = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    m = _ASSIGN.match(text)
    if not m:
        return None
    name = m.group(1)
    for node in gm.graph.nodes:
        if node.name == name:
            loc = user_frame(node.meta.get("stack_trace"))
            return loc if loc is not None else Location("<graph>", 0, name, text.strip())
    return None


class _ModuleTracker:
    """Keeps the dotted path of the module whose forward is running."""

    def __init__(self, root: torch.nn.Module | None) -> None:
        self.names = {id(m): n for n, m in root.named_modules()} if root is not None else {}
        self.stack: list[str] = []
        self._handles: list[Any] = []

    def __enter__(self) -> _ModuleTracker:
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        def pre(mod: torch.nn.Module, args: Any) -> None:
            name = self.names.get(id(mod))
            self.stack.append(name if name is not None else (self.stack[-1] if self.stack else ""))

        def post(mod: torch.nn.Module, args: Any, out: Any) -> None:
            if self.stack:
                self.stack.pop()

        self._handles = [register_module_forward_pre_hook(pre), register_module_forward_hook(post, always_call=True)]
        return self

    def __exit__(self, *exc: Any) -> None:
        for h in self._handles:
            h.remove()


# --------------------------------------------------------------------------- profiling


class PhaseTimer:
    """What ``fn`` uses to say how long its phases took (``with timer("forward"): ...``)."""

    def __init__(self) -> None:
        self.ns: dict[str, int] = {}

    @contextlib.contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        t0 = time.perf_counter_ns()
        try:
            yield
        finally:
            self.ns[phase] = self.ns.get(phase, 0) + time.perf_counter_ns() - t0


def profile_copies(fn: Callable[..., Any], root: torch.nn.Module | None, *, attribute: bool = True,
                   timed: bool = False, trained: Iterable[torch.Tensor] = ()) -> RawAudit:
    """Run ``fn()`` once under the profiler and return every copy with its call site
    (no call sites with ``attribute=False``). With ``timed``, ``fn`` is called as ``fn(timer)``
    and times its phases with it (``RawAudit.phase_ns``). ``trained``: the parameters a training step
    updates (a gather from one of them is a table lookup: ``table-lookup``)."""
    from torch.profiler import ProfilerActivity, profile

    from ..util.quiet import quiet_native_stderr

    tracker = _ModuleTracker(root)
    mode = _SiteMode(tracker.stack)
    timer = PhaseTimer()
    with quiet_native_stderr():  # the profiler's own C++ warnings are not the user's business
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
            with (tracker if attribute else contextlib.nullcontext()), \
                    (mode if attribute else contextlib.nullcontext()), \
                    (_fast_paths_kept(mode) if attribute else contextlib.nullcontext()):
                t0 = time.perf_counter_ns()
                fn(timer) if timed else fn()
                timer.ns["call"] = time.perf_counter_ns() - t0
        tree = prof.profiler.kineto_results.experimental_event_tree()
    raw = _extract(tree, mode.sites, {t.untyped_storage().data_ptr() for t in trained})
    raw.phase_ns = dict(timer.ns)
    return raw


def _alloc(e: Any) -> int:
    return int(e.extra_fields.alloc_size) if is_allocation(e) else 0


#: copies a gather kernel makes of its own input before it gathers (CPU ``index_select`` of a
#: non-contiguous tensor calls ``.contiguous()`` on it): a copy of their own, not the gather's output
_INPUT_COPIES = ("aten::contiguous", "aten::clone")


def _largest_alloc(e: Any, skip: tuple[str, ...] = ()) -> int:
    """The largest allocation under ``e`` (its output, for a gather), not counting the subtrees
    of the ops named in ``skip``."""
    best = 0
    stack = [e]
    while stack:
        x = stack.pop()
        best = max(best, _alloc(x))
        stack.extend(c for c in x.children if not (is_op(c) and c.name in skip))
    return best


def _tensor_meta(e: Any, pos: int) -> Any:
    inputs = e.extra_fields.inputs
    if pos < len(inputs) and hasattr(inputs[pos], "sizes"):
        return inputs[pos]
    return None


def _itemsize(dtype: Any) -> int:
    try:
        return torch.empty((), dtype=dtype).element_size()
    except Exception:  # noqa: BLE001
        return 0


def _extract(roots: list[Any], sites: dict[int, CallSite], tables: set[int] | None = None) -> RawAudit:
    raw = RawAudit(sites=sites)
    seq_to_site: dict[int, int] = {}
    tables = tables or set()
    #: sequence numbers of the forward gathers that read a trained table (their backward is its gradient)
    lookups: set[int] = set()
    #: sequence numbers of the reductions whose backward reads their saved destination (amax, amin, mean, prod
    #: compare or divide by it; a sum's backward does not)
    reads_destination: set[int] = set()
    #: sequence number of each forward subscript that takes a piece -> the tensor it takes it from
    pieces_of: dict[int, tuple] = {}

    # pass 1: forward sequence numbers -> annotation (last forward op with that number created the node)
    ran_backward: set[int] = set()  # sequence numbers of the autograd nodes the backward ran

    def index_forward(e: Any, site: int | None) -> None:
        if is_op(e):
            if e.name.startswith(_SEQ_EVENT):
                ran_backward.add(e.extra_fields.sequence_number)
                if e.name[len(_SEQ_EVENT):].startswith(_REDUCTION_BACKWARDS) and _runs_any(e, _READS_DESTINATION):
                    reads_destination.add(e.extra_fields.sequence_number)
                return  # backward nodes reuse their forward op's number; only forward ops define it
            m = _ANNOTATION.match(e.name)
            if m:
                site = int(m.group(1))
            elif site is not None and e.extra_fields.sequence_number >= 0 and e.name.startswith("aten::"):
                seq_to_site[e.extra_fields.sequence_number] = site
                if e.name in GATHER_KERNELS and _reads_table(e, tables):
                    lookups.add(e.extra_fields.sequence_number)
                if e.name in _PIECE_OPS and (key := _piece_source(e)) is not None:
                    pieces_of[e.extra_fields.sequence_number] = key
        for c in e.children:
            index_forward(c, site)

    for r in roots:
        index_forward(r, None)
    # a piece is lone when no other subscript of the step takes a piece of the same tensor whose gradient the
    # backward computes (a piece nothing differentiates, Emformer's unused memory, runs no backward)
    # the gathers that are the computation: segment statistics read back, selections by the model's values
    computed = computed_gathers(roots, _SEQ_EVENT, is_reduction)
    taken = Counter(key for seq, key in pieces_of.items() if seq in ran_backward)
    #: the lone pieces' sequence numbers -> the size of the tensor each is taken from (a piece as large as it is the
    #: whole tensor, ``h[:, 0]`` of an (N, 1, C) ``h``, which ``squeeze`` takes with a free backward: FXL113's)
    lone = {seq: numel(key[1]) for seq, key in pieces_of.items() if taken[key] == 1}

    # pass 2: copies (``evs``: the profiler events of ``chain``, for the copy's time)
    self_assigned = {x.location for x in sites.values() if x.func == SELF_ASSIGN}

    def visit(e: Any, site: int | None, chain: tuple[str, ...], evs: tuple[Any, ...], grad_fn: str | None,
              phase: str, lookup: bool = False, alone_of: int | None = None, of_computed: str | None = None,
              inplace_view: str | None = None) -> None:
        if not is_op(e):
            return
        name = e.name
        m = _ANNOTATION.match(name)
        if m:
            site = int(m.group(1))
            chain, evs = (), ()
        elif name.startswith(_SEQ_EVENT):
            grad_fn = name[len(_SEQ_EVENT):]
            phase = "backward"
            site = seq_to_site.get(e.extra_fields.sequence_number)
            inplace_view = None
            if site is None and grad_fn.startswith(_REBASE_NODES):
                site, inplace_view = _rebase_site(e.extra_fields.sequence_number, grad_fn, seq_to_site, sites,
                                                  self_assigned)
            lookup = e.extra_fields.sequence_number in lookups
            alone_of = lone.get(e.extra_fields.sequence_number)
            of_computed = computed.by_seq.get(e.extra_fields.sequence_number)
            chain, evs = (), ()
        elif name.startswith("aten::"):
            chain, evs = chain + (name,), evs + (e,)
            # an accumulating scatter is a reduction (message passing's sum), except where it is the gradient
            # of a gather: the backward of `x[idx]`/`index_select`/`gather` writes the gathered gradient back,
            # as `slice_backward` copies a slice's (the two spellings of one gather cost the same)
            if is_reduction(e):
                event = _gradient_scatter(e, chain) if phase == "backward" and (grad_fn or "").startswith(
                    _GATHER_BACKWARDS) else None
            else:
                event = _as_copy(e, chain)
            if event is not None:
                event["events"] = evs
                event["table"] = lookup if phase == "backward" else (name in GATHER_KERNELS and _reads_table(e, tables))
                event["lone_piece"] = (phase == "backward" and alone_of is not None
                                       and numel(event["shape"]) < alone_of)
                event["computed"] = (of_computed if phase == "backward"
                                     else computed.by_key.get(event_key(evs[0])))
                event["saved_destination"] = (phase == "forward" and chain[0] in _IN_PLACE_REDUCTIONS
                                              and evs[0].extra_fields.sequence_number in reads_destination)
                event["inplace_view"] = inplace_view if phase == "backward" else None
                # the copy of a sparse tensor's parts: under a sparse op by name, or made by an op that reads a
                # sparse tensor itself (a dense operand's layout copy under a sparse matmul stays the user's)
                event["sparse"] = any(_is_sparse_op(x.name) for x in evs[:-1]) or _reads_sparse(evs[-1]) or (
                    len(evs) >= 2 and _reads_sparse(evs[-2]) and not _copies_strided_input(evs[-2], evs[-1]))
                _record(raw, event, sites.get(site) if site is not None else None, grad_fn, phase)
                if name in GATHER_KERNELS:  # a copy of the gather's input is a copy of its own
                    for c in e.children:
                        if is_op(c) and c.name in _INPUT_COPIES:
                            visit(c, site, chain, evs, grad_fn, phase, lookup, alone_of, of_computed, inplace_view)
                return  # nothing else inside a copy kernel is a second copy
        for c in e.children:
            visit(c, site, chain, evs, grad_fn, phase, lookup, alone_of, of_computed, inplace_view)

    for r in roots:
        visit(r, None, (), (), None, "forward")
    return raw


#: the backward nodes autograd makes for an in-place op on a view (it rebases the view's history): numbered after the
#: op's own node, while the op runs, so no forward op carries their number
_REBASE_NODES = ("torch::autograd::CopySlices", "AsStridedBackward")


def _rebase_site(seq: int, grad_fn: str, seq_to_site: dict[int, int], sites: dict[int, CallSite],
                 self_assigned: set[Any]) -> tuple[int | None, str | None]:
    """The site of the in-place op on a view whose rebase made the backward node numbered ``seq`` (the forward op
    numbered one or two before it), and whether its copies are the write's own (``inherent``: the base's gradient
    rebuilt around the written piece, which every in-place write into a view pays in training) or those a view
    written back onto itself adds (``redundant``: `x[i] += y` records the write a second time, a CopySlices of the
    self-copy and the view's replay; FXL110's claim), or (None, None) when no forward op is numbered that close
    before it. ``self_assigned``: the locations of the step's self-assignments."""
    # the op's own node takes the number before; the view's replay may come one later: no further
    creator = next((s for s in (seq - 1, seq - 2) if s in seq_to_site), None)
    if creator is None:
        return None, None
    site = seq_to_site[creator]
    here = sites.get(site)
    if grad_fn.startswith("torch::autograd::CopySlices"):
        return site, "redundant" if here is not None and here.func == SELF_ASSIGN else "inherent"
    # the view's replay (AsStridedBackward): run when the view is read again, by the self-assignment's copy
    return site, "redundant" if here is not None and here.location in self_assigned else "inherent"


#: the subscripts that take a piece of a tensor (their backward zero-fills the whole and copies the piece in)
_PIECE_OPS = {"aten::slice", "aten::select", "aten::narrow"}
#: their backward nodes
_PIECE_BACKWARDS = {"aten::slice_backward", "aten::select_backward"}


def _piece_source(e: Any) -> tuple | None:
    """The tensor a subscript event takes a piece of: its storage, sizes and strides (two subscripts of one tensor
    read the same), or None when the profiler did not record it."""
    src = _tensor_meta(e, 0)
    if src is None or getattr(src, "id", None) is None:
        return None
    return (src.id, tuple(src.sizes), tuple(src.strides))


def _reads_table(e: Any, tables: set[int]) -> bool:
    """The gather event ``e`` reads one of the trained parameters (its source's storage is theirs)."""
    src = _tensor_meta(e, 0)
    ptr = getattr(src, "storage_data_ptr", None) if src is not None else None
    return bool(tables) and ptr is not None and ptr in tables


def _duration(e: Any) -> int:
    try:
        return max(0, int(e.end_time_ns) - int(e.start_time_ns))
    except Exception:  # noqa: BLE001 - an event without times costs nothing we can tell
        return 0


#: backward nodes of accumulating scatters (reductions): the gathers in them are the reduction's gradient
_REDUCTION_BACKWARDS = ("ScatterAddBackward", "ScatterReduceBackward", "IndexAddBackward", "IndexReduceBackward")
#: in-place reductions: autograd clones their destination before they write it when their backward needs it
_IN_PLACE_REDUCTIONS = {"aten::scatter_reduce_", "aten::index_reduce_"}
#: the ops a reduction's backward runs when it reads the saved destination: ``amax``/``amin`` compare it with the
#: result, ``mean`` divides by its counts, ``prod`` divides by it (profiled); ``sum`` runs gather and scatter only
_READS_DESTINATION = {"aten::eq", "aten::div"}


def _runs_any(e: Any, names: set[str]) -> bool:
    """Does the subtree of event ``e`` run one of the ops ``names``?"""
    return any(is_op(c) and (c.name in names or _runs_any(c, names)) for c in e.children)


#: backward nodes of gathers: their accumulating scatter writes the gathered gradient back (a copy of it)
_GATHER_BACKWARDS = ("IndexBackward", "IndexSelectBackward", "GatherBackward")


#: accumulating scatters -> the position of the values they write
_ACCUMULATED_VALUES = {"aten::index_add_": 3, "aten::index_add": 3, "aten::scatter_add_": 3, "aten::scatter_add": 3,
                       "aten::index_put_": 2, "aten::_index_put_impl_": 2, "aten::index_put": 2}


def _gradient_scatter(e: Any, chain: tuple[str, ...]) -> dict[str, Any] | None:
    """The copy a gather's backward makes writing the gathered gradient back (an accumulating scatter)."""
    pos = _ACCUMULATED_VALUES.get(e.name)
    return _scatter_write(e, pos, chain) if pos is not None else None


def _scatter_write(e: Any, pos: int, chain: tuple[str, ...]) -> dict[str, Any] | None:
    """A scatter's copy: the values (argument ``pos``) it writes into its destination."""
    vals = _tensor_meta(e, pos)
    if vals is None:
        return None
    sizes = tuple(int(s) for s in vals.sizes)
    n = numel(sizes)
    if n == 0:
        return None
    return {"kernel": e.name, "bytes": n * _itemsize(vals.dtype), "shape": sizes, "dtype": str(vals.dtype),
            "kind": "scatter", "chain": chain}


def is_reduction(e: Any) -> bool:
    """Is this profiler event a scatter that accumulates (a reduction, not a copy)?"""
    name = e.name
    if name in REDUCTION_KERNELS:
        return True
    when = _ACCUMULATING_WHEN.get(name)
    if when is None:
        return False
    pos, value = when
    inputs = e.extra_fields.inputs
    if value is None:
        return len(inputs) > pos
    return pos < len(inputs) and inputs[pos] is value


def _as_copy(e: Any, chain: tuple[str, ...]) -> dict[str, Any] | None:
    name = e.name
    if name in COPY_KERNELS:
        dst, src = _tensor_meta(e, 0), _tensor_meta(e, 1)
        if dst is None:
            return None
        sizes = tuple(int(s) for s in dst.sizes)
        n = numel(sizes)
        if n == 0:
            return None
        kind = "layout"
        if src is not None and src.dtype != dst.dtype:
            kind = "dtype"
        if src is not None and str(src.device) != str(dst.device):
            kind = "device"
        return {"kernel": name, "bytes": n * _itemsize(dst.dtype), "shape": sizes, "dtype": str(dst.dtype),
                "kind": kind, "chain": chain}
    if name in GATHER_KERNELS:
        src = _tensor_meta(e, 0)
        nbytes = _largest_alloc(e, skip=_INPUT_COPIES)
        if nbytes <= 0:
            return None
        return {"kernel": name, "bytes": nbytes, "shape": tuple(int(s) for s in src.sizes) if src else (),
                "dtype": str(src.dtype) if src else "?", "kind": "gather", "chain": chain}
    if name in HOST_READ_KERNELS:
        src = _tensor_meta(e, 0)
        if src is None:
            return None
        return {"kernel": name, "bytes": _itemsize(src.dtype), "shape": (), "dtype": str(src.dtype),
                "kind": "host-read", "chain": chain}
    if name in SCATTER_KERNELS:
        return _scatter_write(e, SCATTER_KERNELS[name], chain)
    return None


#: the sequence RNN kernels (not the cells) copy their *input* when its layout does not suit them: the oneDNN
#: LSTM makes the time-major sequence contiguous, the native path reshapes it to (T * B, C) for the input
#: projection. The caller's layout decides that (FXL207), so these copies are avoidable, unlike the rest
_RNN_SEQUENCE = {"aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu"}


def _rnn_input_copy(chain: tuple[str, ...]) -> bool:
    if chain[0] not in _RNN_SEQUENCE or len(chain) < 2:
        return False
    return chain[1] == "aten::contiguous" or chain[1:4] == ("aten::linear", "aten::matmul", "aten::reshape")


#: the one classification of a copy as unavoidable, shared by the audit, ``confirm`` and the census
#: (bench/census.py reads ``CopyEvent.avoidable`` / ``reason`` and nothing else): class -> the reason
#: a ``CopyEvent`` carries. docs/census.md ("What counts as avoidable") says why each is one.
#: Every other copy is avoidable, host reads included.
UNAVOIDABLE: dict[str, str] = {
    "scalar": "a Python scalar wrapped into a one-element tensor for the op",
    "fill": "one value broadcast into the indexed elements (``t[mask] = v``): a fill, nothing copied",
    "blas-bias": "bias copied into the output buffer before the BLAS call (every addmm pays it)",
    "conv-bias": "bias written into the output before the native conv kernel accumulates (every such conv pays it)",
    "embedding": "the embedding lookup itself",
    "rnn-kernel": "made inside the fused RNN kernel itself",
    "instance-norm-params": "instance_norm repeats its per-channel weight, bias and running stats once per sample "
                            "inside ATen (batch x channels values) to run batch_norm on the (1, batch x channels, "
                            "...) view: parameters, not activations, every such call pays it",
    "reduction-init": "the output of an out-of-place reduction starts as a copy of its input (``x.index_add(...)``: "
                      "every such call pays it)",
    "reduction-saved": "the destination of an in-place amax/amin/mean/prod reduction (``zeros(...).scatter_reduce_``), "
                       "cloned by autograd before the write because its backward reads it: the out-of-place form "
                       "copies the same bytes (every such reduction pays it in training; a sum does not need it: "
                       "``scatter_add_``)",
    "segment-statistic": "a per-segment statistic read back to the values it summarises (segment softmax's "
                         "``src - max[index]`` and ``out / sum[index]``, a degree norm's ``deg[row] * w``) and its "
                         "gradient: a broadcast by an index, which no view spells (every such read pays it)",
    "selection": "a gather or scatter by an index chosen by values (``perm`` from ``sort``/``topk`` of scores, an "
                 "``argmax`` of the token ids, and integers computed from it) and its gradient: which rows move is "
                 "decided by the data every call, so no slice, view or cache names them",
    "edge-network": "rows gathered for a per-edge computation that mixes them before they are reduced by an index "
                    "(a network on every edge: EdgeConv, PointNet, PNA; a filter as wide as the rows: SchNet, "
                    "GATv2's attention) and their gradient: no sparse matmul computes it, the gathered rows are its "
                    "operand",
    "scatter-grad": "the gradient of an accumulating scatter (a reduction into rows by an index): every source "
                    "element reads its row's gradient back, a gather, as a sum's gradient is a broadcast (every such "
                    "scatter pays it in training)",
    "sort-output": "sort writes its input into the sorted output, then sorts it in place: the copy is the op's "
                   "result (every sort pays it; argsort runs the same sort)",
    "table-lookup": "a gather from a parameter the training step updates (a learned table indexed by positions: "
                    "an embedding lookup spelled as indexing) and its gradient: the table changes every step, the "
                    "gathered rows are the computation, as the embedding lookup's are",
    "lone-piece-grad": "the gradient of a piece taken alone (a crop ``x[..., :-k]``, a class token ``x[:, 0]``): the "
                       "whole tensor's gradient, zero outside the piece, written as zeros and the piece's gradient "
                       "(every lone subscript pays it in training; pieces of one tensor taken one subscript at a time "
                       "are FXL113's)",
    "inplace-view-grad": "the gradient of an in-place write into a view of a tensor that needs a gradient "
                         "(`x[:, 1:].add_(y)`, `x[i] = v`): autograd's CopySlices rebuilds the base's gradient around "
                         "the written piece (every such write pays it in training; writing the same view back onto "
                         "itself, `x[i] += y`, pays it twice, and the second time is FXL110's)",
    "sparse-structure": "made inside a sparse op (a sparse matmul filling its result, a conversion between sparse "
                        "formats such as ``to_sparse_coo`` of a CSR tensor rewriting the indices): a sparse tensor "
                        "has no strided views, so no spelling of the op avoids it (every such op pays it; the "
                        "format asked for is the user's choice, as a dtype is)",
    "masked-fill-grad": "masked_fill's gradient: the output's gradient with the masked elements zeroed, a new tensor "
                        "ATen writes as clone + masked_fill_ (in place or not, every masked_fill pays it in training; "
                        "torch.where's backward writes the same bytes in one pass)",
}


def _is_sparse_op(op: str) -> bool:
    """An ATen op of sparse tensors (``aten::to_sparse``, ``aten::resize_as_sparse_``,
    ``aten::_convert_indices_from_csr_to_coo``...)."""
    return "sparse" in op or op.startswith(("aten::_convert_indices_from", "aten::_coalesce"))


_SPARSE_LAYOUTS = frozenset({torch.sparse_coo, torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc})


def _reads_sparse(e: Any) -> bool:
    """Does the profiled op ``e`` take a sparse tensor (COO, CSR, ...: the profiler records each input's layout)?"""
    inputs = getattr(getattr(e, "extra_fields", None), "inputs", None) or ()
    return any(getattr(i, "layout", None) in _SPARSE_LAYOUTS for i in inputs)


def _copies_strided_input(parent: Any, copy: Any) -> bool:
    """Is ``copy`` (under ``parent``) a copy of one of ``parent``'s own strided inputs (a dense operand made
    contiguous), not of a part of its sparse result? Told by the profiler's tensor identity."""
    inputs = getattr(getattr(parent, "extra_fields", None), "inputs", None) or ()
    src = _tensor_meta(copy, 1)
    ids = {getattr(i, "id", None) for i in inputs if getattr(i, "layout", None) == torch.strided}
    return src is not None and getattr(src, "id", None) in ids - {None}


def classify(chain: tuple[str, ...], grad_fn: str | None, shape: tuple[int, ...], *,
             table: bool = False, lone_piece: bool = False,
             saved_destination: bool = False, computed: str | None = None,
             inplace_view: str | None = None, sparse: bool = False) -> tuple[bool, str | None]:
    """(avoidable, reason) of one copy: its op chain (top op down to the kernel that wrote the
    bytes), the backward node it ran in (None in forward), its shape, whether it is a gather from a
    parameter the training step updates, or that gather's gradient (``table``), and whether it is the
    backward of a subscript that took the only piece of its tensor (``lone_piece``), and whether it is an in-place
    reduction whose backward read the destination autograd saved (``saved_destination``), and whether it is a gather
    or scatter that is the computation, or its gradient (``computed``: its class from
    ``computed_gathers.computed_gathers``, a key of ``UNAVOIDABLE``), and whether it is the backward of an in-place
    write into a view (``inplace_view``: ``inherent``, the write's own, or ``redundant``, a view written back onto
    itself), and whether an op above the copy works on sparse tensors (``sparse``). The reasons are the values of
    ``UNAVOIDABLE``."""
    parent = chain[-2] if len(chain) >= 2 else None
    if chain[-1] in HOST_READ_KERNELS:
        return True, None
    if numel(shape) <= 1 and (chain[0] not in COPY_ENTRY_OPS or chain[0] in REDUCTION_KERNELS) \
            and chain[0] not in _USER_CONVERSIONS:  # a reduction's own scalars (mean's count) are the op's
        return False, UNAVOIDABLE["scalar"]
    if chain[-1] in _FILL_SCATTERS and numel(shape) == 1:
        return False, UNAVOIDABLE["fill"]
    if chain[-1] == "aten::copy_" and parent in _BIAS_INTO_OUTPUT:
        return False, UNAVOIDABLE["blas-bias"]
    if chain[-1] == "aten::copy_" and (parent in _CONV_BIAS_INTO_OUTPUT or (
            parent == "aten::fill_" and len(chain) >= 3 and chain[-3] in _CONV_BIAS_INTO_OUTPUT)):
        return False, UNAVOIDABLE["conv-bias"]
    if any(op in _EMBEDDING for op in chain) or (grad_fn or "").startswith("Embedding"):
        return False, UNAVOIDABLE["embedding"]
    if chain[0] in _RNN_KERNELS and not _rnn_input_copy(chain):
        return False, UNAVOIDABLE["rnn-kernel"]
    if chain[0] == "aten::instance_norm" and "aten::repeat" in chain[1:]:  # ATen repeats only parameters there
        return False, UNAVOIDABLE["instance-norm-params"]
    if table:
        return False, UNAVOIDABLE["table-lookup"]
    if sparse or any(_is_sparse_op(op) for op in chain[:-1]):
        return False, UNAVOIDABLE["sparse-structure"]
    if inplace_view == "inherent":
        return False, UNAVOIDABLE["inplace-view-grad"]
    moves = chain[-1] in GATHER_KERNELS or chain[-1] in SCATTER_KERNELS  # the op's own rows, not an input copy
    if computed == SELECTION and (grad_fn is not None or moves):
        return False, UNAVOIDABLE[SELECTION]
    if computed and (chain[-1] in GATHER_KERNELS if grad_fn is None else grad_fn.startswith(_GATHER_BACKWARDS)):
        return False, UNAVOIDABLE[computed]
    if lone_piece and chain[0] in _PIECE_BACKWARDS:
        return False, UNAVOIDABLE["lone-piece-grad"]
    if (grad_fn or "").startswith(_REDUCTION_BACKWARDS):
        return False, UNAVOIDABLE["scatter-grad"]
    if chain[0] == "aten::sort" and chain[-1] == "aten::copy_" and grad_fn is None:
        return False, UNAVOIDABLE["sort-output"]
    if (grad_fn or "").startswith("MaskedFillBackward") and chain[0] == "aten::masked_fill":
        return False, UNAVOIDABLE["masked-fill-grad"]
    if chain[-1] == "aten::copy_" and any(op in _OUT_OF_PLACE_REDUCTIONS for op in chain[:-1]):
        # only a reducing index_put / scatter is descended into (a writing one is a copy itself)
        return False, UNAVOIDABLE["reduction-init"]
    if saved_destination and chain[0] in _IN_PLACE_REDUCTIONS and "aten::clone" in chain and grad_fn is None:
        return False, UNAVOIDABLE["reduction-saved"]
    return True, None


def _record(raw: RawAudit, ev: dict[str, Any], site: CallSite | None, grad_fn: str | None, phase: str) -> None:
    chain = ev["chain"]
    if site is not None and site.internal:
        raw.internal_bytes += ev["bytes"]
        return
    if site is not None and site.func == SELF_ASSIGN and phase == "forward" and chain == ("aten::copy_",):
        return  # a view copied onto itself: ATen returns before moving a byte (see _writes_itself)
    at = next((i for i, c in enumerate(chain) if c in COPY_ENTRY_OPS), len(chain) - 1)
    op = chain[at]
    avoidable, reason = classify(chain, grad_fn, ev["shape"], table=bool(ev.get("table")),
                                 lone_piece=bool(ev.get("lone_piece")),
                                 saved_destination=bool(ev.get("saved_destination")),
                                 computed=ev.get("computed"), inplace_view=ev.get("inplace_view"),
                                 sparse=bool(ev.get("sparse")))
    loc = site.location if site is not None else None
    raw.copies.append(
        CopyEvent(
            kernel=ev["kernel"], op=op, top_op=chain[0], chain=chain, bytes=ev["bytes"], shape=ev["shape"],
            dtype=ev["dtype"].replace("torch.", ""), kind=ev["kind"], phase=phase,
            file=loc.file if loc else None, line=loc.line if loc else None,
            function=loc.function if loc else (grad_fn or None), code=loc.code if loc else None,
            module_path=site.module_path if site is not None else None, grad_fn=grad_fn,
            avoidable=avoidable, reason=reason, time_ns=_duration(ev["events"][at]) if ev.get("events") else 0,
            func=site.func if site is not None and phase == "forward" else None,
            via=loc.via if loc is not None else (),
        )
    )

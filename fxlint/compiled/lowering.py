"""Read Inductor's own lowering of one Dynamo graph: the buffers it materialises, which are copies, and
which of the graph's nodes each comes from.

``observe(graph)`` is a scoped hook on ``torch._inductor.scheduler.Scheduler.codegen``: while it is
open, on this thread, each scheduler Inductor code-generates is read right after its codegen (when
fusion is done and ``V.graph.removed_buffers`` holds the buffers fusion made kernel-local). The hook
only reads; the kernels Inductor generates are the same with and without it. For each scheduler node
(a fused group is read node by node) and each buffer it writes that survives codegen:

* **a copy** when the origins of the node (``ir.IRNode.origins``: the post-grad FX nodes lowered into
  it) are all layout/copy ops (``COPY_OPS``: clone, permute, view, expand, index, constant padding,
  a dtype conversion...), or when it is a generated kernel whose loop body (``LoopBody``) only loads
  and stores (an extern kernel's input made contiguous by ``require_stride_order`` /
  ``realize_input`` has the extern op among its origins, and a body of ``load``/``store``);
* its **bytes**: the elements of the buffer's layout (size hints for symbols) times the item size;
* its **sources**: the Dynamo graph's nodes its origins come from, read from the provenance chain
  ``node.meta["from_node"]`` (``torch.fx.traceback.NodeSource``), keeping the sources that live in the
  observed graph (``graph_id == id(graph)``), in the graph's order; its **producer**: the source of
  ``get_origin_node()`` (the FX node whose lowering realised it), else the latest source.

An extern kernel (an ATen kernel the compiled program calls: ``bmm``, a fallback) records the Dynamo
node of the op it runs (``get_origin_node()``): whether ATen copies inside it depends on the layouts
Inductor hands it, which fxlint does not claim to know.

Anything unreadable (another torch, no provenance, an Inductor error) is ``Lowering.error``: the
verdicts are then ``unknown``, and the compile itself is never touched.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch.fx as fx

#: aten ops that only move data (views, layout changes, gathers with constant indices, padding,
#: dtype conversions): a kernel lowered from these alone is a copy
COPY_OPS = frozenset({
    "clone", "contiguous", "permute", "transpose", "t", "view", "reshape", "_unsafe_view", "expand",
    "expand_as", "slice", "select", "narrow", "squeeze", "unsqueeze", "alias", "as_strided", "unfold",
    "flatten", "unflatten", "index", "index_select", "gather", "lift_fresh_copy", "repeat", "cat",
    "constant_pad_nd", "_to_copy", "to", "copy", "copy_", "detach", "view_as", "movedim", "diagonal",
    "split", "split_with_sizes", "unbind", "chunk", "flip", "roll",
})

#: LoopBody ops of a kernel that only moves data (loads, stores, their indexing, a dtype conversion)
MOVE_OPS = frozenset({"load", "store", "get_index", "indirect_indexing", "check_bounds", "to_dtype"})


@dataclass(frozen=True)
class CompiledBuffer:
    """One buffer Inductor materialises in the compiled program."""

    name: str  # Inductor's name ("buf0")
    kernel: str  # "generated" (Inductor wrote it) or "extern" (an ATen kernel it calls)
    copy: bool
    bytes: int | None  # None when the size does not have a hint
    sources: tuple[str, ...]  # the Dynamo nodes its origins come from, in graph order
    ops: tuple[str, ...]  # the aten ops of its origins, sorted (what Inductor names the kernel after)
    #: the Dynamo node whose op made Inductor realise it: the node of ``get_origin_node()`` (the FX node
    #: being lowered), else the latest of ``sources``
    producer: str | None = None
    #: why it is a copy: ``"copy ops"`` (its origins are layout/copy ops only) or ``"load/store"`` (a
    #: generated kernel that only moves data); None when it is not a copy
    why: str | None = None
    #: the ATen kernels Inductor calls that read it (``"convolution"``, ``"bmm"``, a fallback's op): a copy
    #: read by one is the layout that kernel requires of its input
    consumers: tuple[str, ...] = ()
    #: the captured graph's nodes whose ops those kernels run (where a layout they require comes from)
    consumer_nodes: tuple[str, ...] = ()
    #: the graph inputs it reads, as the captured graph's placeholders (a parameter laid out for a kernel)
    inputs: tuple[str, ...] = ()
    #: it reads graph inputs and nothing the graph computes (an input laid out as it comes in)
    only_inputs: bool = False
    #: the captured graph's nodes whose values it reads from memory (an input's placeholder, the node that
    #: made a buffer; in the backward, the forward op a gradient is computed for): what a copy copies
    read_nodes: tuple[str, ...] = ()
    #: in the backward: the forward values it reads as saved for the backward (activations, not gradients)
    saved: tuple[str, ...] = ()
    #: the captured graph's input it writes into (a mutated input copied back), None when none
    mutates: str | None = None
    #: ``"cat"`` when it is written into a slice of a concatenation's output (a ``cat`` input Inductor
    #: could not compute in place), None otherwise
    into: str | None = None
    #: the captured graph's node of that concatenation (the user's `torch.cat`), None when unknown: a piece
    #: written into it is the cat's write, whatever other ops of the piece the kernel fused (a pad computed
    #: straight into the slice)
    into_node: str | None = None
    #: it is an output of the compiled graph (returned in the layout eager would return it)
    output: bool = False
    #: ``"forward"``, or ``"backward"`` for a buffer of the backward graph (AOTAutograd compiles it apart;
    #: its nodes are traced back to the forward ops that made their autograd nodes)
    phase: str = "forward"
    #: its size and strides (size hints for symbols; None when unknown): the layout Inductor gave it
    size: tuple[int, ...] | None = None
    stride: tuple[int, ...] | None = None


@dataclass
class Lowering:
    """What Inductor did with one graph (``observe`` fills it in)."""

    buffers: list[CompiledBuffer] = field(default_factory=list)
    lowered: set[str] = field(default_factory=set)  # Dynamo nodes a node of Inductor's graph comes from
    lowered_backward: set[str] = field(default_factory=set)  # Dynamo nodes a node of its backward graph is for
    extern_sources: set[str] = field(default_factory=set)  # Dynamo nodes whose op runs as an ATen kernel
    #: Dynamo nodes whose backward runs as an ATen kernel (a convolution's ``convolution_backward``, a linear's
    #: ``mm``), by the forward op the backward node is traced to
    extern_backward: set[str] = field(default_factory=set)
    #: Dynamo nodes whose backward scatters with accumulation (an indexing's backward, `index_put` with
    #: accumulate: a store with ``mode="atomic_add"``): no copy, but memory traffic of the op's own
    accumulating_backward: set[str] = field(default_factory=set)
    schedulers: int = 0  # how many schedulers were read (0: Inductor did not lower it here, e.g. a cache hit)
    backward: bool = False  # the backward graph was lowered and read too
    error: str | None = None
    runs: int = 1  # how many times per call the graph runs (``repeated``): each buffer's bytes count them all

    @property
    def readable(self) -> bool:
        return self.error is None and self.schedulers > 0 and bool(self.lowered)

    @property
    def why_unreadable(self) -> str:
        if self.error is not None:
            return self.error
        if not self.schedulers:
            return "Inductor did not lower the graph while fxlint watched"
        return "no node of Inductor's graph records which node of the captured graph it comes from"

    def copies(self) -> list[CompiledBuffer]:
        return [b for b in self.buffers if b.copy]

    def repeated(self, runs: int) -> Lowering:
        """The lowering of a graph that runs ``runs`` times per call: each buffer written that many times."""
        from dataclasses import replace

        if runs <= 1:
            return self
        return replace(self, runs=self.runs * runs,
                       buffers=[replace(b, bytes=b.bytes * runs if b.bytes is not None else None)
                                for b in self.buffers])


# ----------------------------------------------------------------------------------------- the hook

_lock = threading.Lock()
_watches: dict[int, list[_Watch]] = {}  # thread id -> the observations open on it
_original: Callable[..., Any] | None = None


class _Watch:
    def __init__(self, graph: fx.Graph, lowering: Lowering) -> None:
        self.graph_id = id(graph)
        self.order = {n.name: i for i, n in enumerate(graph.nodes)}
        self.placeholders = [n.name for n in graph.nodes if n.op == "placeholder"]
        self.lowering = lowering
        #: autograd's sequence number of a forward op -> the observed graph's nodes it comes from: how a
        #: backward node (which has no ``from_node``) is traced back to the forward op that made its
        #: autograd node
        self.by_seq: dict[int, set[str]] = {}
        #: the observed graph's nodes -> the innermost frame of their stack trace (a backward node carries its
        #: forward op's): which of several forward ops sharing a sequence number a backward node runs for
        self.frames = {n.name: _innermost(n.meta.get("stack_trace")) for n in graph.nodes}

    def read(self, scheduler: Any) -> None:
        if self.lowering.error is not None:
            return
        try:
            _read_scheduler(scheduler, self)
        except Exception as exc:  # noqa: BLE001 - an Inductor we do not know: say so, never break the compile
            self.lowering.error = f"could not read Inductor's scheduler ({type(exc).__name__}: {exc})"


def _codegen(self: Any) -> Any:
    assert _original is not None
    result = _original(self)
    for watch in list(_watches.get(threading.get_ident(), ())):
        watch.read(self)
    return result


@contextlib.contextmanager
def observe(graph: fx.Graph) -> Iterator[Lowering]:
    """Read every scheduler Inductor code-generates on this thread while open; ``graph`` is the Dynamo
    graph being compiled (the provenance of Inductor's nodes is followed back to its nodes)."""
    global _original
    lowering = Lowering()
    installed = False
    watch = _Watch(graph, lowering)
    try:
        from torch._inductor.scheduler import Scheduler

        with _lock:
            if _original is None:
                _original = Scheduler.codegen
                Scheduler.codegen = _codegen  # type: ignore[method-assign]
            _watches.setdefault(threading.get_ident(), []).append(watch)
        installed = True
    except Exception as exc:  # noqa: BLE001 - another torch: no verdicts, the compile goes on
        lowering.error = f"could not hook Inductor's scheduler ({type(exc).__name__}: {exc})"
    try:
        yield lowering
    finally:
        if installed:
            with _lock:
                mine = _watches.get(threading.get_ident(), [])
                if watch in mine:
                    mine.remove(watch)
                if not mine:
                    _watches.pop(threading.get_ident(), None)
                if not _watches and _original is not None:
                    from torch._inductor.scheduler import Scheduler

                    Scheduler.codegen = _original  # type: ignore[method-assign]
                    _original = None


@contextlib.contextmanager
def uncached() -> Iterator[None]:
    """Inductor's FX graph cache and AOTAutograd's cache off: a cache hit skips the lowering, and there
    would be nothing to read (the kernels are the same either way)."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    with inductor_config.patch(fx_graph_cache=False), functorch_config.patch(enable_autograd_cache=False):
        yield


@contextlib.contextmanager
def with_backward(on: bool = True) -> Iterator[None]:
    """AOTAutograd compiles the backward graph with the forward, not at the first backward call, so the
    compile fxlint watches lowers both (``force_non_lazy_backward_lowering``; the same kernels, compiled
    earlier). Off: as torch does by default."""
    import torch._functorch.config as functorch_config

    with functorch_config.patch(force_non_lazy_backward_lowering=on):
        yield


def compile_and_read(gm: fx.GraphModule, example_inputs: list[Any], *, inference: bool = False) -> Lowering:
    """Compile ``gm`` (a Dynamo graph) with Inductor on ``example_inputs`` and read its lowering; the
    compiled program is dropped. ``inference``: compile it as an inference program runs, autograd off
    (Inductor compiles another graph when parameters require grad: its attention pattern, for one, only
    matches the inference graph); otherwise the backward graph is compiled and read too, at once
    (``with_backward``). Any failure is the lowering's ``error``."""
    import torch
    from torch._inductor.compile_fx import compile_fx

    with observe(gm.graph) as lowering:
        try:
            with uncached(), torch.set_grad_enabled(torch.is_grad_enabled() and not inference), \
                    with_backward(not inference):
                compile_fx(gm, list(example_inputs))
        except Exception as exc:  # noqa: BLE001
            lowering.error = f"Inductor failed to compile the graph ({type(exc).__name__}: {_first_line(exc)})"
    return lowering


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


# ------------------------------------------------------------------------------------- the reading


def _roots(node: fx.Node, watch: _Watch) -> set[str]:
    """The names of the observed graph's nodes ``node`` comes from (``meta["from_node"]`` chains)."""
    found: set[str] = set()
    stack = list(node.meta.get("from_node") or ())
    seen = 0
    while stack and seen < 10_000:
        src = stack.pop()
        seen += 1
        if getattr(src, "graph_id", None) == watch.graph_id and src.name in watch.order:
            found.add(src.name)
        else:
            stack.extend(getattr(src, "from_node", None) or ())
    if not found and watch.by_seq:  # a backward node: the forward op whose autograd node it runs for
        trace = node.meta.get("stack_trace") or ""
        if node.meta.get("is_gradient_acc") or _GRADIENT_SUM in trace:
            # the autograd engine's sum of a tensor's gradients over its uses runs for no forward op: it carries
            # the sequence number of whichever node ran last (shufflenet's: the final linear's), not its tensor's
            return found
        found = set(watch.by_seq.get(node.meta.get("seq_nr"), ()))  # type: ignore[arg-type]
        frame = _innermost(trace)
        same = {name for name in found if frame is not None and watch.frames.get(name) == frame}
        if same:  # several forward ops share the number (a decomposed op): the one at the node's own line
            found = same
    return found


#: how AOTAutograd marks a backward node that sums a tensor's gradients in its stack trace (torch/fx/traceback.py;
#: torch/fx/proxy.py also sets ``meta["is_gradient_acc"]``)
_GRADIENT_SUM = "Gradient addition node"
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _innermost(trace: str | None) -> str | None:
    """The innermost ``file:line`` of an FX stack trace (None without one)."""
    frames = _FRAME.findall(trace or "")
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else None


def _op_name(node: fx.Node) -> str | None:
    if node.op != "call_function":
        return None
    target = node.target
    return getattr(target, "_opname", None) or getattr(target, "__name__", None) or str(target)


def _moves_only(snode: Any) -> bool:
    """A kernel node whose loop body only loads and stores: no arithmetic, and no store that accumulates (an
    ``index_put`` with ``accumulate=True``, the backward of a gather or of a nearest upsampling, stores with
    ``mode="atomic_add"``: it sums, it does not move)."""
    body = getattr(snode, "_body", None)
    if body is None or _accumulates(snode):
        return False
    ops = {n.target for n in body.get_nodes() if n.op == "call_method"}
    return bool(ops) and ops <= MOVE_OPS


def _accumulates(snode: Any) -> bool:
    """A kernel node whose loop body stores with a mode (``atomic_add``: a scatter that accumulates)."""
    body = getattr(snode, "_body", None)
    return body is not None and any(n.op == "call_method" and n.target == "store" and _store_mode(n) is not None
                                    for n in body.get_nodes())


def _store_mode(node: Any) -> Any:
    """The mode of a LoopBody ``store`` (``ops.store(name, index, value, mode)``): None for a plain store."""
    if "mode" in node.kwargs:
        return node.kwargs["mode"]
    return node.args[4] if len(node.args) > 4 else None


def _bytes(buf: Any) -> int | None:
    from torch._inductor.utils import sympy_product
    from torch._inductor.virtualized import V

    try:  # the elements it writes (a cat input's slice spans gaps its storage size would count)
        numel = V.graph.sizevars.optimization_hint(sympy_product(buf.get_layout().size))
        return int(numel) * buf.get_dtype().itemsize
    except Exception:  # noqa: BLE001 - a layout without a size (a mutation, a multi-output)
        return None


def _placeholders(watch: _Watch) -> dict[str, str]:
    """Inductor's graph inputs (``arg0_1``, ``primals_1``) -> the observed graph's placeholders, by position
    (AOTAutograd keeps the order of a Dynamo graph's inputs); empty when the counts differ (frozen
    parameters, effect tokens): the inputs are then not named rather than guessed."""
    from torch._inductor.virtualized import V

    names = list(V.graph.graph_input_names)
    if len(names) != len(watch.placeholders):
        return {}
    return dict(zip(names, watch.placeholders))


def _extern_op(node: Any) -> str | None:
    """The aten op an extern kernel runs (``bmm``, ``convolution``), from the FX node it lowers (else its
    only origin, else the kernel's Python name)."""
    origin = node.get_origin_node() if hasattr(node, "get_origin_node") else None
    if origin is None:
        origins = list(getattr(node, "origins", None) or ())
        origin = origins[0] if len(origins) == 1 else None
    op = _op_name(origin) if origin is not None else None
    if op is None:
        overload = getattr(node, "op_overload", None)
        op = getattr(overload, "_opname", None)
    if op is None:  # "torch.ops.aten.bmm.default", "extern_kernels.bmm": the op, not its overload
        parts = (getattr(node, "python_kernel_name", None) or "").split(".")
        op = parts[-2] if len(parts) > 1 and parts[-1] in ("default", "out", "Tensor", "Scalar") else parts[-1]
    return op or None


def _into(buf: Any, watch: _Watch) -> tuple[str | None, str | None]:
    """(``"cat"``, the observed graph's cat node or None) when ``buf`` is written into a slice of a
    concatenation's output (a ``NonOwningLayout`` over a ``ConcatKernel``'s buffer); (None, None) otherwise."""
    from torch._inductor import ir
    from torch._inductor.virtualized import V

    layout = getattr(buf.node, "layout", None)
    if not isinstance(layout, ir.NonOwningLayout):
        return None, None
    try:
        owner = V.graph.name_to_buffer.get(layout.view.get_name())
    except Exception:  # noqa: BLE001 - a view fxlint cannot follow: say nothing
        return None, None
    if not isinstance(owner, ir.ConcatKernel):
        return None, None
    cats = sorted(_made_by(owner, watch), key=watch.order.__getitem__)
    return "cat", cats[-1] if cats else None


def _read_scheduler(scheduler: Any, watch: _Watch) -> None:
    from torch._inductor import ir
    from torch._inductor.dependencies import MemoryDep
    from torch._inductor.virtualized import V

    out = watch.lowering
    out.schedulers += 1
    removed = set(V.graph.removed_buffers) | set(getattr(V.graph, "inplaced_to_remove", ()))
    post_grad: Any = V.graph.module  # the post-grad GraphModule the lowering interprets
    phase = "backward" if getattr(V.graph, "is_backward", False) else "forward"
    if phase == "backward":
        out.backward = True
    for post in post_grad.graph.nodes:
        roots = _roots(post, watch)
        if phase == "backward":
            out.lowered_backward |= roots
            continue
        out.lowered |= roots
        seq = post.meta.get("seq_nr")
        if roots and isinstance(seq, int):
            watch.by_seq.setdefault(seq, set()).update(roots)
    graph_inputs = _placeholders(watch) if phase == "forward" else {}  # the backward's: saved tensors, gradients
    try:
        returned = set(V.graph.get_output_names())
    except Exception:  # noqa: BLE001 - an Inductor without it: no buffer is known to be returned
        returned = set()
    order = watch.order
    made: dict[str, str] = dict(graph_inputs)  # Inductor's buffer -> the observed graph's node that made it
    saved: dict[str, str] = {}  # the backward's inputs that are forward values saved for it -> their node
    if phase == "backward":
        placeholders = [n for n in post_grad.graph.nodes if n.op == "placeholder"]
        for name, ph in zip(V.graph.graph_input_names, placeholders):
            found = sorted(_roots(ph, watch), key=order.__getitem__) if "from_node" in ph.meta else []
            if found:
                saved[name] = found[-1]
    for group in scheduler.nodes:
        # what the kernel's earlier nodes stored, by buffer, index and size: a later node of the same kernel
        # that loads it at the same place gets the value from the register that stored it (Inductor's CSE of a
        # load after a store), not from memory
        stored: set[tuple[str, str, tuple[Any, ...]]] = set()
        for snode in group.get_nodes():
            node = getattr(snode, "node", None)
            rw = getattr(snode, "read_writes", None)
            written = [dep for dep in getattr(rw, "writes", ()) if isinstance(dep, MemoryDep)]
            if node is None:
                stored |= {_place(dep) for dep in written}
                continue
            origins = list(getattr(node, "origins", None) or ())
            ops = {op for op in map(_op_name, origins) if op is not None}
            sources: set[str] = set()
            for o in origins:
                sources |= _roots(o, watch)
            extern = isinstance(node, ir.ExternKernel)
            origin = node.get_origin_node() if hasattr(node, "get_origin_node") else None
            if origin is not None:
                made_by = sorted(_roots(origin, watch), key=order.__getitem__)
            else:  # an extern kernel lowered without an origin node: what its origins come from
                made_by = sorted(_made_by(node, watch), key=order.__getitem__) if extern else []
            if extern and phase == "forward":
                out.extern_sources |= set(made_by)
            elif extern:
                out.extern_backward |= set(made_by)
            ordered = sorted(sources, key=order.__getitem__)
            producer = made_by[-1] if made_by else (ordered[-1] if ordered else None)
            why = "copy ops" if ops and ops <= COPY_OPS else "load/store" if not extern and _moves_only(snode) else None
            if phase == "backward" and not extern and _accumulates(snode):
                out.accumulating_backward |= sources
            read_deps = [dep for dep in getattr(snode.read_writes, "reads", ()) if isinstance(dep, MemoryDep)]
            reads = {dep.name for dep in read_deps}
            # a node that only moves data is a copy when it reads memory: a value the fused kernel computed
            # in registers (its buffer removed) and stores once here is that computation's own output
            copy = why is not None and any(r not in removed for r in reads)
            # stored from the register an earlier node of the same kernel stored the value from (the value kept in
            # a buffer of its own for other readers, and stored again: into a cat's slice, the cat's own write as
            # eager's cat writes it; in another layout, a layer norm's saved statistics in the layout the traced
            # graph gave them): one more write, no read, so no copy (the compiled-program oracle's reading too).
            # Not a write into an input of the graph: that copy-back is the mutation's (FXL704), whatever it reads
            from_register = all(dep.name in removed or _place(dep) in stored for dep in read_deps)
            stored |= {_place(dep) for dep in written}
            inputs = tuple(sorted((graph_inputs[r] for r in reads if r in graph_inputs), key=order.__getitem__))
            for buf in snode.get_outputs():
                name = buf.get_name()
                if producer is not None:
                    made[name] = producer
                if name in removed or isinstance(buf.node.get_output_spec(), (ir.NoneLayout, ir.MultiOutputLayout)):
                    continue
                readers = [_consumer(u, watch) for u in buf.users]
                consumers = sorted({op for op, _ in readers if op is not None})
                consumer_nodes = sorted({n for _, nodes in readers for n in nodes}, key=order.__getitem__)
                mutated = [graph_inputs[m] for m in buf.node.get_mutation_names() if m in graph_inputs]
                size, stride = _layout(buf.node)
                into, into_node = _into(buf, watch)
                out.buffers.append(CompiledBuffer(
                    name=name, kernel="extern" if extern else "generated",
                    copy=copy and not (from_register and not mutated), bytes=_bytes(buf.node),
                    sources=tuple(ordered), ops=tuple(sorted(ops)), producer=producer, why=why,
                    consumers=tuple(consumers), consumer_nodes=tuple(consumer_nodes), inputs=inputs,
                    only_inputs=bool(reads) and all(r in graph_inputs for r in reads),
                    mutates=mutated[0] if mutated else None, into=into, into_node=into_node, size=size, stride=stride,
                    output=name in returned, phase=phase,
                    read_nodes=tuple(sorted({made[r] for r in reads if r in made}, key=order.__getitem__)),
                    saved=tuple(sorted({saved[r] for r in reads if r in saved}, key=order.__getitem__))))


def _place(dep: Any) -> tuple[str, str, tuple[Any, ...]]:
    """A memory dependency's buffer, index and loop size (a load at the place a store wrote)."""
    return dep.name, str(dep.index), tuple(str(s) for s in dep.size)


def _consumer(user: Any, watch: _Watch) -> tuple[str | None, set[str]]:
    """The op of the extern kernel a scheduler buffer's user runs and the observed graph's nodes it
    comes from; (None, empty) for a generated kernel."""
    from torch._inductor import ir

    node = getattr(user.node, "node", None)
    if not isinstance(node, ir.ExternKernel):
        return None, set()
    return _extern_op(node), _made_by(node, watch)


def _made_by(node: Any, watch: _Watch) -> set[str]:
    """The observed graph's nodes an IR node's op comes from: its origin node's (the FX node it lowers),
    else its origins' (an extern kernel lowered without one, as the convolution is in a training graph)."""
    origin = node.get_origin_node() if hasattr(node, "get_origin_node") else None
    if origin is not None:
        return _roots(origin, watch)
    outputs: set[str] = set()  # a kernel of several outputs (a fallback): the nodes its outputs stand for
    for out in getattr(node, "outputs", None) or ():
        made = out.get_origin_node() if hasattr(out, "get_origin_node") else None
        outputs |= _roots(made, watch) if made is not None else set()
    if outputs:
        return outputs
    origins = list(getattr(node, "origins", None) or ())
    op = _extern_op(node)
    own = [o for o in origins if _op_name(o) == op]  # the node of its own op, where it has provenance
    for group in (own, origins):
        found: set[str] = set()
        for o in group:
            found |= _roots(o, watch)
        if found:
            return found
    return set()


def _layout(node: Any) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """A buffer's size and strides as ints (size hints for symbols), (None, None) when unknown."""
    from torch._inductor.virtualized import V

    try:
        layout = node.get_layout()
        hint = V.graph.sizevars.optimization_hint
        return tuple(int(hint(x)) for x in layout.size), tuple(int(hint(x)) for x in layout.stride)
    except Exception:  # noqa: BLE001 - a layout without strides (a mutation, a multi-output)
        return None, None

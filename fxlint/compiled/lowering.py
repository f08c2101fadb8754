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
* its **bytes**: the buffer's layout ``storage_size()`` (size hints for symbols) times the item size;
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


@dataclass
class Lowering:
    """What Inductor did with one graph (``observe`` fills it in)."""

    buffers: list[CompiledBuffer] = field(default_factory=list)
    lowered: set[str] = field(default_factory=set)  # Dynamo nodes a node of Inductor's graph comes from
    extern_sources: set[str] = field(default_factory=set)  # Dynamo nodes whose op runs as an ATen kernel
    schedulers: int = 0  # how many schedulers were read (0: Inductor did not lower it here, e.g. a cache hit)
    error: str | None = None

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


# ----------------------------------------------------------------------------------------- the hook

_lock = threading.Lock()
_watches: dict[int, list[_Watch]] = {}  # thread id -> the observations open on it
_original: Callable[..., Any] | None = None


class _Watch:
    def __init__(self, graph: fx.Graph, lowering: Lowering) -> None:
        self.graph_id = id(graph)
        self.order = {n.name: i for i, n in enumerate(graph.nodes)}
        self.lowering = lowering

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


def compile_and_read(gm: fx.GraphModule, example_inputs: list[Any]) -> Lowering:
    """Compile ``gm`` (a Dynamo graph) with Inductor on ``example_inputs`` and read its lowering; the
    compiled program is dropped. Any failure is the lowering's ``error``."""
    from torch._inductor.compile_fx import compile_fx

    with observe(gm.graph) as lowering:
        try:
            with uncached():
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
    return found


def _op_name(node: fx.Node) -> str | None:
    if node.op != "call_function":
        return None
    target = node.target
    return getattr(target, "_opname", None) or getattr(target, "__name__", None) or str(target)


def _moves_only(snode: Any) -> bool:
    body = getattr(snode, "_body", None)
    if body is None:
        return False
    ops = {n.target for n in body.get_nodes() if n.op == "call_method"}
    return bool(ops) and ops <= MOVE_OPS


def _bytes(buf: Any) -> int | None:
    from torch._inductor.virtualized import V

    try:
        layout = buf.get_layout()
        numel = V.graph.sizevars.optimization_hint(layout.storage_size())
        return int(numel) * buf.get_dtype().itemsize
    except Exception:  # noqa: BLE001 - a layout without a size (a mutation, a multi-output)
        return None


def _read_scheduler(scheduler: Any, watch: _Watch) -> None:
    from torch._inductor import ir
    from torch._inductor.virtualized import V

    out = watch.lowering
    out.schedulers += 1
    removed = set(V.graph.removed_buffers) | set(getattr(V.graph, "inplaced_to_remove", ()))
    post_grad: Any = V.graph.module  # the post-grad GraphModule the lowering interprets
    for post in post_grad.graph.nodes:
        out.lowered |= _roots(post, watch)
    order = watch.order
    for group in scheduler.nodes:
        for snode in group.get_nodes():
            node = getattr(snode, "node", None)
            if node is None:
                continue
            origins = list(getattr(node, "origins", None) or ())
            ops = {op for op in map(_op_name, origins) if op is not None}
            sources: set[str] = set()
            for o in origins:
                sources |= _roots(o, watch)
            extern = isinstance(node, ir.ExternKernel)
            origin = node.get_origin_node() if hasattr(node, "get_origin_node") else None
            made_by = sorted(_roots(origin, watch), key=order.__getitem__) if origin is not None else []
            if extern:
                out.extern_sources |= set(made_by)
            ordered = sorted(sources, key=order.__getitem__)
            producer = made_by[-1] if made_by else (ordered[-1] if ordered else None)
            why = "copy ops" if ops and ops <= COPY_OPS else "load/store" if not extern and _moves_only(snode) else None
            copy = why is not None
            for buf in snode.get_outputs():
                name = buf.get_name()
                if name in removed or isinstance(buf.node.get_output_spec(), (ir.NoneLayout, ir.MultiOutputLayout)):
                    continue
                out.buffers.append(CompiledBuffer(
                    name=name, kernel="extern" if extern else "generated", copy=copy, bytes=_bytes(buf.node),
                    sources=tuple(ordered), ops=tuple(sorted(ops)), producer=producer, why=why))

"""The nodes of the canonical view: ``CanonNode``, ``GraphView`` and the ``IndexSpec`` of an
indexing op (what ``fxlint.canon`` describes; built by ``fxlint.canon.builder``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import torch
import torch.fx as fx

from ..tensor.info import Dim, TensorInfo
from ..util.source import Location, source_line
from . import traits as _traits


@dataclass(frozen=True)
class IndexItem:
    """One entry of an indexing expression, aligned to the dim it consumes.

    kind: ``slice`` | ``int`` | ``newaxis`` | ``tensor`` (integer index: list,
    tuple or tensor) | ``mask`` (bool index).
    """

    kind: str
    dim: int | None = None  # input dim consumed (None for newaxis)
    start: Any = None
    stop: Any = None
    step: Any = None
    value: Any = None  # for int items
    index: CanonNode | None = None  # index tensor node, when the index is a node
    values: tuple[int, ...] | None = None  # constant integer values when known (flattened)
    index_shape: tuple[Dim, ...] | None = None
    spelled: str | None = None  # how it was written, e.g. "[0, 2, 4, 6]"

    @property
    def is_full_slice(self) -> bool:
        return self.kind == "slice" and self.start in (None, 0) and self.stop is None and self.step in (None, 1)


@dataclass(frozen=True)
class IndexSpec:
    """A normalised subscript: one ``IndexItem`` per input dim consumed (``Ellipsis`` expanded, the
    dims it leaves out padded with full slices) plus the ``newaxis`` entries; the same description
    for a read (``getitem``, ``narrow``, ``aten.index``...) and a write (``setitem``)."""

    items: tuple[IndexItem, ...]
    style: str  # "getitem" | "setitem" | "index_select" | "aten.index" | "aten.slice" | "narrow" | "select"
    written: str | None = None  # the subscript as the user wrote it (``getitem``/``setitem``): "[..., :3]"
    #: one slice written alone (``x[a:b]``, not ``x[a:b, ...]``): eager runs ``aten::slice`` for it even when it
    #: takes the whole dim, where a tuple index returns an alias (measured)
    lone: bool = False

    @property
    def advanced(self) -> list[IndexItem]:
        return [i for i in self.items if i.kind in ("tensor", "mask")]

    @property
    def is_advanced(self) -> bool:
        return bool(self.advanced)

    @property
    def text(self) -> str:
        """The subscript as written where it was (``written``), else rendered (``render()``)."""
        return self.written if self.written is not None else self.render()

    def same_region(self, other: IndexSpec) -> bool:
        """Both subscripts name the same elements of the same-shaped input: equal item by item once
        the spellings of one slice are normalised (``x[0:n:1]`` is ``x[:n]``, ``x[..., 1:]`` is
        ``x[:, :, 1:]``); a dynamic bound or an index tensor must be the same node."""
        return len(self.items) == len(other.items) and all(
            _item_key(a) == _item_key(b) for a, b in zip(self.items, other.items))

    def region_shape(self, shape: tuple[Dim, ...]) -> tuple[int, ...] | None:
        """The shape of ``t[self]`` for a ``t`` of static ``shape``; None for an advanced index, a
        dynamic bound or a symbolic size (the region is not known before the call)."""
        if self.is_advanced or not all(isinstance(d, int) for d in shape):
            return None
        index: list[Any] = []
        for it in self.items:
            if it.kind == "newaxis":
                index.append(None)
            elif it.kind == "int":
                if not isinstance(it.value, int):
                    return None
                index.append(it.value)
            else:
                bounds = (it.start, it.stop, it.step)
                if not all(b is None or isinstance(b, int) for b in bounds):
                    return None
                index.append(slice(*bounds))
        try:
            region = torch.empty(tuple(int(d) for d in shape), device="meta")[tuple(index)]
        except (IndexError, TypeError, RuntimeError, ValueError):
            return None
        return tuple(int(d) for d in region.shape)

    def render(self, replace: dict[int, str] | None = None) -> str:
        """Python subscript text, e.g. ``[:, [0, 2, 4, 6]]``; ``replace`` maps item positions to text."""
        parts = []
        for pos, it in enumerate(self.items):
            if replace and pos in replace:
                parts.append(replace[pos])
            elif it.kind == "slice":
                parts.append(_slice_text(it.start, it.stop, it.step))
            elif it.kind == "int":
                parts.append(_arg_text(it.value))
            elif it.kind == "newaxis":
                parts.append("None")
            else:
                parts.append(it.spelled or "<index>")
        while len(parts) > 1 and parts[-1] == ":":  # trailing full slices are implied
            parts.pop()
        return "[" + ", ".join(parts) + "]"


def _item_key(it: IndexItem) -> tuple:
    """What an index item selects, independent of how the slice was spelled; nodes by identity."""
    def ident(v: Any) -> Any:
        return ("node", id(v)) if isinstance(v, CanonNode) else v
    if it.kind == "slice":
        start = 0 if it.start is None else it.start
        step = 1 if it.step is None else it.step
        return ("slice", it.dim, ident(start), ident(it.stop), ident(step))
    if it.kind == "int":
        return ("int", it.dim, ident(it.value))
    if it.kind == "newaxis":
        return ("newaxis",)
    if it.index is not None:
        return (it.kind, it.dim, ("node", id(it.index)))
    return (it.kind, it.dim, it.values, it.index_shape, it.spelled)


def _arg_text(v: Any) -> str:
    if isinstance(v, CanonNode):
        return v.name
    return str(v)


def _slice_text(start: Any, stop: Any, step: Any) -> str:
    # a symbolic bound (a SymInt node) shows as its node's name
    start, stop, step = (v.name if isinstance(v, CanonNode) else v for v in (start, stop, step))
    return slice_text(start, stop, step)


@dataclass(eq=False)
class CanonNode:
    node: fx.Node
    name: str
    kind: str  # "input" | "parameter" | "buffer" | "constant" | "op" | "output"
    op: str
    spelling: str
    args: dict[str, Any] = field(default_factory=dict)
    value: Any = None  # TensorInfo, tuple of TensorInfo/None, a Dim for size nodes, or None
    inputs: list[CanonNode] = field(default_factory=list)
    users: list[CanonNode] = field(default_factory=list)
    location: Location | None = None
    module_path: str | None = None
    grad_enabled: bool = True
    param_name: str | None = None  # dotted name for parameters / buffers / constants
    module_params: list[str] = field(default_factory=list)  # params owned by a call_module node
    mutates: list[CanonNode] = field(default_factory=list)  # inputs written in place
    aliases: list[CanonNode] = field(default_factory=list)  # inputs whose memory the output may share
    position: int = 0
    #: for a value the graph returns to Python at a graph break: the inputs of the graph Dynamo resumes in that
    #: receive it (``capture.program.link_handovers``), so an analysis can follow its consumers over the break
    handed_to: list[CanonNode] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"<{self.op} {self.name}>"

    def __hash__(self) -> int:
        return id(self)

    @property
    def tensor(self) -> TensorInfo | None:
        return self.value if isinstance(self.value, TensorInfo) else None

    @property
    def input(self) -> CanonNode | None:
        x = self.args.get("input")
        return x if isinstance(x, CanonNode) else None

    @property
    def is_view(self) -> bool:
        return self.op in _traits.VIEW

    @property
    def is_maybe_view(self) -> bool:
        """``reshape``, ``contiguous``, ``to``: a view of its input or a copy, depending on the layout."""
        return self.op in _traits.MAYBE_VIEW

    def view_chain(self, *, maybe_views: bool = False, aliasing: bool = False) -> list[CanonNode]:
        """This node, then each view's input up to the tensor they all view (the last item, itself
        when this node is no view): the one walk up a chain of views every analysis uses.

        ``maybe_views=True`` walks through ``reshape``/``contiguous``/``to`` too: the ops a layout travels
        through unchanged in meaning (how an operand's layout came about, and its text). ``aliasing=True``
        walks through those only where they return their input's memory here (``aliases``: a ``.float()``
        of a float32 tensor), so the chain ends at the memory the node shares."""
        def through(n: CanonNode) -> bool:
            if n.is_view:
                return True
            return n.is_maybe_view and (maybe_views or (aliasing and n.input in n.aliases))

        chain = [self]
        while through(chain[-1]) and chain[-1].input is not None:
            chain.append(chain[-1].input)
        return chain

    @property
    def is_pointwise(self) -> bool:
        """An elementwise op (``POINTWISE_OPS``): broadcasts its operands, reads any strides."""
        return self.op in _traits.POINTWISE

    @property
    def tensor_inputs(self) -> list[CanonNode]:
        """The inputs whose value is a tensor (``inputs`` also holds SymInt size nodes)."""
        return [i for i in self.inputs if i.tensor is not None]

    @property
    def source(self) -> str | None:
        if self.location is None:
            return None
        return self.location.code or source_line(self.location.file, self.location.line)

    @property
    def is_trainable(self) -> bool:
        t = self.tensor
        return self.kind == "parameter" and t is not None and t.requires_grad


class GraphView:
    """The canonical view of one captured graph."""

    def __init__(
        self,
        gm: fx.GraphModule,
        nodes: list[CanonNode],
        outputs: list[CanonNode],
        origin: str,
        label: str,
        constants: dict[str, Any],
    ) -> None:
        self.gm = gm
        self.nodes = nodes
        self.outputs = outputs
        self.origin = origin  # "dynamo" | "fx" | "export"
        self.label = label
        self._constants = constants
        self._by_fx: dict[fx.Node, CanonNode] = {n.node: n for n in nodes}
        self.by_name: dict[str, CanonNode] = {n.name: n for n in nodes}
        self._graph: nx.DiGraph | None = None
        self._writers: list[CanonNode] | None = None
        self.entry_grad_enabled = True  # autograd mode the graph starts in
        # Dynamo's fake values carry autograd's requires_grad; export/fx values do not
        self.requires_grad_known = origin == "dynamo"
        # nodes whose operands the target-device simulation found on two devices (fxlint.analysis.device)
        self.device_mismatches: set[str] = set()
        #: the Dynamo graph break that ended this graph (``capture.GraphBreak``: reason and the
        #: user's line), None when the graph ended normally or did not come from Dynamo
        self.graph_break: Any = None

    def __iter__(self) -> Iterator[CanonNode]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def of(self, node: fx.Node) -> CanonNode:
        return self._by_fx[node]

    def ops(self, *names: str) -> list[CanonNode]:
        wanted = set(names)
        return [n for n in self.nodes if n.op in wanted]

    @property
    def parameters(self) -> list[CanonNode]:
        return [n for n in self.nodes if n.kind == "parameter"]

    @property
    def writers(self) -> list[CanonNode]:
        """The nodes that write in place into another node (``mutates`` not empty), in graph
        order: what mutation checks scan, instead of every node (linear, not quadratic)."""
        if self._writers is None:
            self._writers = [n for n in self.nodes if n.mutates]
        return self._writers

    @property
    def graph(self) -> nx.DiGraph:
        """Data-flow graph over node names (edges producer -> consumer)."""
        if self._graph is None:
            g = nx.DiGraph()
            for n in self.nodes:
                g.add_node(n.name, cn=n)
            for n in self.nodes:
                for i in n.inputs:
                    g.add_edge(i.name, n.name)
            self._graph = g
        return self._graph

    # -- constant evaluation -------------------------------------------------
    def const_ints(self, x: Any) -> tuple[int, ...] | None:
        """Flattened integer values of ``x`` when they are known at compile time.

        Handles Python lists/tuples/ranges of ints, constant tensors (``get_attr``,
        lifted export constants), and ``arange``/``tensor`` factories with
        constant arguments, through ``to``/``clone``/``detach``/``lift_fresh_copy``.
        """
        if isinstance(x, range):
            return tuple(x)
        if isinstance(x, bool):
            return None
        if isinstance(x, int):
            return (x,)
        if isinstance(x, (list, tuple)):
            out: list[int] = []
            for v in x:
                sub = self.const_ints(v)
                if sub is None:
                    return None
                out.extend(sub)
            return tuple(out)
        if isinstance(x, torch.Tensor):
            if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
                return None
            if isinstance(x, torch._subclasses.FakeTensor) or x.device.type == "meta":
                return None
            return tuple(int(v) for v in x.reshape(-1).tolist())
        if isinstance(x, CanonNode):
            return self._const_node(x)
        return None

    def _const_node(self, n: CanonNode) -> tuple[int, ...] | None:
        t = n.tensor
        if t is not None and (t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool):
            return None
        if n.kind == "constant":
            return self.const_ints(self._constants.get(n.name))
        passes_values = ("to", "clone", "detach", "alias", "contiguous", "lift_fresh_copy", "lift_fresh")
        if n.op in passes_values and n.input is not None:
            return self.const_ints(n.input)
        if n.op == "factory":
            kind = n.args.get("kind")
            pos = n.args.get("args", [])
            if kind in ("arange", "range"):
                nums = [self.const_ints(p) for p in pos]
                if any(v is None or len(v) != 1 for v in nums) or not nums:
                    return None
                vals = [v[0] for v in nums]  # type: ignore[index]
                if len(vals) == 1:
                    r = range(vals[0])
                elif len(vals) == 2:
                    r = range(vals[0], vals[1])
                else:
                    if vals[2] == 0:
                        return None
                    r = range(vals[0], vals[1] + (1 if kind == "range" else 0), vals[2])
                return tuple(r)
            if kind in ("tensor", "as_tensor") and pos:
                return self.const_ints(pos[0])
        return None


__all__ = ["CanonNode", "GraphView", "IndexItem", "IndexSpec", "subscript_text"]


def subscript_text(index: Any) -> str:
    """``[:, :, 1:, 1:]``: a subscript as written (the canonical index of a ``getitem``/``setitem``
    call, its nodes converted to ``CanonNode``s), every entry kept, ``Ellipsis`` as ``...``."""
    items = index if isinstance(index, tuple) else (index,)

    def name(v: Any) -> str:
        return v.name if isinstance(v, (CanonNode, fx.Node)) else str(v)

    def one(i: Any) -> str:
        if isinstance(i, slice):
            text = ":".join("" if v is None else name(v) for v in (i.start, i.stop))
            if i.step is not None:
                text += f":{name(i.step)}"
            return text
        if i is None:
            return "None"
        if i is Ellipsis:
            return "..."
        if isinstance(i, list):
            return "[" + ", ".join(one(v) for v in i) + "]"
        return name(i)

    return "[" + ", ".join(one(i) for i in items) + "]"


def slice_text(start: Any, stop: Any, step: Any, size: int | None = None) -> str:
    """``start:stop:step`` as people write it: no 0 start, no step 1, and no stop when the slice
    runs to the end anyway (``stop`` None, or, with the dim's ``size``, the next element is past
    it). Bounds may be ints or names (a symbolic bound shows as its node's name)."""
    s = "" if start in (None, 0) else str(start)
    runs_out = (stop is None or (size is not None and isinstance(stop, int) and isinstance(step, int)
                                 and stop - 1 + step >= size))
    e = "" if runs_out else str(stop)
    text = f"{s}:{e}"
    if step not in (None, 1):
        text += f":{step}"
    return text

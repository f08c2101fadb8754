"""Gathers that are the computation itself, told by the dataflow of the profiled forward.

**Segment statistics.** Segment softmax (``src - scatter(src, index, reduce="max")[index]``, then
``out / scatter(out, index)[index]``), GCN's degree normalisation (``deg_inv_sqrt[row] * edge_weight *
deg_inv_sqrt[col]`` with ``deg`` summed from ``edge_weight``) and a per-graph norm (``x - mean[batch]``) reduce
values into rows by an index, then read each element's row back to combine it with the values that were reduced.
That read is a gather, and no view spells it: a broadcast by an index has no strides (the reason a scatter's
gradient is a gather, ``scatter-grad``). The audit classifies it ``segment-statistic``. A gather of rows
aggregated by message passing and read back as messages for the next round (APPNP's propagation,
``x[row] * edge_weight`` after ``x = scatter(x[row] * w, col)``) is not one: it is not combined with the values
it summarises, and a sparse matmul avoids it (FXL406).

**Per-edge networks.** A graph network whose message runs a network on every edge (EdgeConv's
``mlp(cat[x_i, x_j - x_i])``, PointNet's, PNA's towers) or multiplies the gathered rows by a filter as wide as
they are (SchNet's ``x_j * W(edge_attr)``, GATv2's ``x_i + x_j`` under its attention) before reducing by an index:
no sparse matmul computes that, the gathered rows are the operand of the per-edge computation. The audit
classifies those gathers ``edge-network``. Rows scaled by a per-edge scalar and summed (GCN, GAT's alpha, GIN,
SAGE) are a sparse matmul's work: those gathers stay copies (FXL406).

**Selections.** A gather or a scatter whose index the model chose by values (``perm`` from ``sort`` or ``topk``
of scores, an ``argmax`` of the token ids that finds each text's end, an ``argsort`` of the lengths; and integer
tensors computed from such an index: ``batch[perm]``, a node relabelling written by it) moves rows that no slice,
view or cache can name: which rows is decided every call by the data (top-k graph pooling, token pruning,
routing, pooling at the end-of-text token). The audit classifies it ``selection``. An index the model receives
(``edge_index``: a sparse matmul replaces its gathers) or builds from constants is not one.

The dataflow is read from the profiler's events, one forward op at a time in the order they ran: an op's output
is its in-place argument, its largest fresh allocation, or (a view, nothing allocated) its first tensor argument.
Values are storages, named by the profiler's allocation id (memory the allocator hands out again is another
value): the rows and columns of one ``edge_index`` are one storage, and a view of a statistic is the statistic.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ._events import is_allocation, is_op, numel

#: accumulating scatters -> position of the values they reduce (``torch._segment_reduce``'s data is first)
_SOURCE_OF = {
    "aten::index_add_": 3, "aten::index_add": 3, "aten::scatter_add_": 3, "aten::scatter_add": 3,
    "aten::scatter_reduce_": 3, "aten::scatter_reduce": 3, "aten::index_reduce_": 3, "aten::index_reduce": 3,
    "aten::index_put_": 2, "aten::_index_put_impl_": 2, "aten::index_put": 2, "aten::scatter_": 3,
    "aten::scatter": 3, "aten::segment_reduce": 0, "aten::_segment_reduce": 0,
}
#: reductions whatever their arguments (the scatters reduce only with some)
_ALWAYS_REDUCING = {"aten::segment_reduce", "aten::_segment_reduce"}
#: reads of rows by an index (``repeat_interleave`` broadcasts a sorted segment's statistic)
_ROW_READS = {"aten::index", "aten::_unsafe_index", "aten::index_select", "aten::gather", "aten::take_along_dim",
              "aten::repeat_interleave"}
#: ops that mix elements across rows: a statistic through one of them is no longer a per-row statistic
_MIXING = {
    "aten::linear", "aten::matmul", "aten::mm", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addbmm",
    "aten::mv", "aten::addmv", "aten::dot", "aten::einsum", "aten::conv1d", "aten::conv2d", "aten::conv3d",
    "aten::convolution", "aten::_convolution", "aten::conv_transpose1d", "aten::conv_transpose2d",
    "aten::conv_transpose3d", "aten::_sparse_mm", "aten::sparse_mm",
}
#: ops that choose elements by their values (the model's scores, the input's data: an ``argmax`` of the token ids
#: finds the end of each text; sorting ``batch[perm]``): their outputs, indices among them, are a selection;
#: ``nonzero`` of a selection is one too
_VALUE_OR_INDEX = {"aten::max", "aten::min"}
_SELECTS = {"aten::sort", "aten::topk", "aten::argsort", "aten::argmax", "aten::argmin", "aten::max", "aten::min",
            "aten::kthvalue", "aten::median", "aten::mode", "aten::multinomial"}
_NONZERO = {"aten::nonzero", "aten::argwhere", "aten::nonzero_static"}
#: gathers and scatters -> the position of their index argument (a tensor or a list of them)
_INDEX_AT = {
    "aten::index": 1, "aten::_unsafe_index": 1, "aten::index_select": 2, "aten::gather": 2, "aten::take": 1,
    "aten::take_along_dim": 1, "aten::index_put_": 1, "aten::_index_put_impl_": 1, "aten::index_put": 1,
    "aten::scatter_": 2, "aten::scatter": 2, "aten::index_copy_": 2, "aten::index_copy": 2,
}
#: ops that only place their inputs side by side (no combination of a row with another tensor's)
_PLACES = {"aten::cat", "aten::stack", "aten::hstack", "aten::vstack", "aten::concat", "aten::concatenate"}
#: the classes this module decides (``profiler.UNAVOIDABLE`` keys)
SEGMENT, SELECTION, EDGE_NETWORK = "segment-statistic", "selection", "edge-network"
#: how far back (elementwise ops) a consumer's operand may derive from the reduced values
_DEPTH = 6


def _storages(value: Any) -> Iterator[int]:
    """The storages of the tensors in one recorded argument (a tensor or a list of them), by the profiler's
    allocation id (unique per allocation: memory the allocator hands out again gets a new one)."""
    items = value if isinstance(value, (list, tuple)) else (value,)
    for v in items:
        aid = getattr(v, "allocation_id", None)
        if aid is not None:
            yield int(aid)


def _floating(value: Any) -> bool:
    return "float" in str(getattr(value, "dtype", "")) or "complex" in str(getattr(value, "dtype", ""))


def event_key(e: Any) -> tuple[str, int]:
    """One forward op event's identity across two walks of the tree (inference ops have no sequence number)."""
    return e.name, int(e.start_time_ns)


@dataclass
class _Flow:
    #: storage -> the storages of the values reduced into it (it holds a per-row statistic of them)
    stat: dict[int, frozenset[int]] = field(default_factory=dict)
    #: storage -> the storages an elementwise op computed it from
    parents: dict[int, frozenset[int]] = field(default_factory=dict)
    #: storage -> the one floating storage an elementwise op computed it from (``out * out``, ``exp(out)``)
    unary: dict[int, int] = field(default_factory=dict)
    #: storage of a gathered statistic -> (its gather's key, its sequence number, the values it summarises)
    pending: dict[int, tuple[tuple[str, int], int, frozenset[int]]] = field(default_factory=dict)
    #: storages holding a selection (indices the model chose by its values, or integers computed from them)
    selected: set[int] = field(default_factory=set)
    #: storage -> the gathers its value was computed from: gather key -> (sequence number, the gathered
    #: elements, whether a network or a per-element filter has mixed the gathered rows since)
    lineage: dict[int, dict[tuple[str, int], tuple[int, int, bool]]] = field(default_factory=dict)
    #: (class, gather key) and (class, sequence number) of the gathers that are the computation
    marked: dict[tuple[str, int], str] = field(default_factory=dict)
    marked_seqs: dict[int, str] = field(default_factory=dict)

    def mark(self, kind: str, key: tuple[str, int], seq: int) -> None:
        self.marked.setdefault(key, kind)
        if seq >= 0:
            self.marked_seqs.setdefault(seq, kind)

    def ancestors(self, sid: int) -> set[int]:
        seen, frontier = {sid}, {sid}
        for _ in range(_DEPTH):
            frontier = {p for f in frontier for p in self.parents.get(f, ())} - seen
            if not frontier:
                break
            seen |= frontier
        return seen

    def unary_ancestors(self, sid: int) -> set[int]:
        seen = set()
        for _ in range(_DEPTH):
            nxt = self.unary.get(sid)
            if nxt is None or nxt in seen:
                break
            seen.add(nxt)
            sid = nxt
        return seen


def _allocations(e: Any) -> Iterator[tuple[int, int]]:
    """(allocation id, size) of every fresh allocation under event ``e``."""
    stack = [e]
    while stack:
        x = stack.pop()
        if is_allocation(x):
            if int(x.extra_fields.alloc_size) > 0:
                yield int(x.extra_fields.allocation_id), int(x.extra_fields.alloc_size)
        else:
            stack.extend(x.children)


def _itemsize(meta: Any) -> int:
    return int(getattr(getattr(meta, "dtype", None), "itemsize", 4))


def _consume_statistics(flow: _Flow, tensors: list[int]) -> None:
    """Mark the gathered statistics among an op's operands that it combines with the values they summarise (or
    their elementwise kin)."""
    for sid in set(tensors):
        if sid not in flow.pending:
            continue
        key, seq, sources = flow.pending[sid]
        for other in set(tensors) - {sid}:
            if sources & flow.ancestors(other) or other in {u for s in sources for u in flow.unary_ancestors(s)}:
                flow.mark(SEGMENT, key, seq)
                break


def _follow_selection(flow: _Flow, e: Any, name: str, inputs: list[Any], tensors: list[int], out: int,
                      fresh: list[tuple[int, int]]) -> None:
    """Mark a gather or scatter by a selection, and carry selections to the op's output: chosen by the values, or
    integers computed from such a choice (a relabelling map)."""
    if name in _INDEX_AT:
        pos = _INDEX_AT[name]
        metas = [inputs[pos]] if pos < len(inputs) and inputs[pos] is not None else []
        if pos < len(inputs) and inputs[pos] is None:
            metas = _inner_operands(e)  # a list of indices: the profiler records None, the ops inside read them
        index = {sid for m in metas for sid in _storages(m)} - set(tensors)
        # a boolean mask compacts (FXL403's: a static-shape spelling keeps every element); an index selects
        mask = any("bool" in str(getattr(m, "dtype", "")) for m in metas)
        source = inputs[0] if inputs else None
        if not mask and (index & flow.selected or (not _floating(source) and set(_storages(source)) & flow.selected)):
            flow.mark(SELECTION, event_key(e), int(e.extra_fields.sequence_number))
            if not _floating(source):
                flow.selected.add(out)  # integers moved by a selection (``batch[perm]``, a relabelling map)
    # ``max``/``min`` choose only with a dim (then they return indices); alone they are a value
    chooses = name in _SELECTS and bool(inputs) and (name not in _VALUE_OR_INDEX or len(inputs) > 1)
    if chooses or (name in _NONZERO and set(tensors) & flow.selected):
        flow.selected.update(sid for sid, _ in fresh)
    elif set(tensors) & flow.selected and name not in _MIXING and not any(_floating(v) for v in inputs[:1]):
        flow.selected.add(out)


def _follow_rows(flow: _Flow, e: Any, name: str, inputs: list[Any], tensors: list[int], out: int,
                 in_place: bool, fresh: list[tuple[int, int]]) -> None:
    """Carry the gathers each value was computed from to the op's output (``_Flow.lineage``), marking them mixed
    when the op is a network layer (a matmul, a conv) or combines the gathered rows element by element with
    another tensor of their full size (SchNet's filter ``x_j * W``, GATv2's ``x_i + x_j``; a per-edge scalar,
    GCN's ``x_j * w[:, None]``, is not)."""
    merged: dict[tuple[str, int], tuple[int, int, bool]] = {}
    if name in _ROW_READS:  # gathered rows start their own computation (a gather of node values: its own)
        if inputs and _floating(inputs[0]):
            size = (fresh[0][1] if fresh else 0) // max(_itemsize(inputs[0]), 1)  # the gathered rows' elements
            flow.lineage[out] = {event_key(e): (int(e.extra_fields.sequence_number), size, False)}
        return
    floats = [m for v in inputs for m in (v if isinstance(v, list) else [v]) if _floating(m)]
    full = max((numel(getattr(m, "sizes", ()) or ()) for m in floats), default=0)
    wide = {sid for m in floats if numel(getattr(m, "sizes", ()) or ()) == full for sid in _storages(m)}
    combines = name not in _PLACES and len(wide) >= 2
    for sid in set(tensors):
        for key, (seq, size, mixed) in flow.lineage.get(sid, {}).items():
            # combined element by element at the gathered rows' full size (not after a sum over their features)
            mixed = mixed or name in _MIXING or (combines and sid in wide and full >= size)
            was = merged.get(key)
            merged[key] = (seq, size, mixed or (was is not None and was[2]))
    if merged:
        if in_place:
            old = flow.lineage.get(out, {})
            merged = {k: (v[0], v[1], v[2] or (k in old and old[k][2])) for k, v in {**old, **merged}.items()}
        flow.lineage[out] = merged


def _inner_operands(e: Any) -> list[Any]:
    """The tensors the ops inside ``e`` read (``aten::index`` reshapes its indices, which the profiler does not
    record as its own argument)."""
    found: list[Any] = []
    stack = list(e.children)
    while stack:
        x = stack.pop()
        if is_op(x):
            found.extend(v for v in x.extra_fields.inputs if hasattr(v, "allocation_id"))
            stack.extend(x.children)
    return found


@dataclass
class ComputedGathers:
    """The forward gathers and scatters that are the computation: ``by_key`` (``event_key`` -> class) and their
    backward's, ``by_seq`` (sequence number -> class)."""

    by_key: dict[tuple[str, int], str]
    by_seq: dict[int, str]


def computed_gathers(roots: list[Any], seq_event: str, is_reduction: Any) -> ComputedGathers:
    """The gathers that read a per-segment statistic back to the values it summarises (``SEGMENT``), the
    gathers and scatters by an index the model selected by its values (``SELECTION``), and the gathers whose rows
    a network or a per-element filter mixes before they are reduced by an index (``EDGE_NETWORK``).
    ``seq_event``: the prefix of the backward nodes' events (their subtrees are skipped); ``is_reduction``:
    ``profiler.is_reduction``."""
    flow = _Flow()

    def op(e: Any) -> None:
        name = e.name
        inputs = list(e.extra_fields.inputs)
        tensors = [p for v in inputs for p in _storages(v)]
        fresh = sorted(_allocations(e), key=lambda a: -a[1])
        in_place = name.endswith("_")
        if in_place and tensors:
            out = tensors[0]
        elif fresh:
            out = fresh[0][0]
        elif tensors:
            out = tensors[0]  # a view: the same storage
        else:
            return
        _consume_statistics(flow, tensors)
        _follow_selection(flow, e, name, inputs, tensors, out, fresh)
        reducing = name in _SOURCE_OF and (name in _ALWAYS_REDUCING or is_reduction(e))
        if not reducing:  # a reduction ends the edges' computation: its rows are nodes again
            _follow_rows(flow, e, name, inputs, tensors, out, in_place, fresh)
        if reducing:
            pos = _SOURCE_OF[name]
            src = frozenset(_storages(inputs[pos])) if pos < len(inputs) else frozenset()
            for sid in src:  # messages reduced by an index: their gathers mixed by a network are the computation
                for key, (seq, _, mixed) in flow.lineage.get(sid, {}).items():
                    if mixed:
                        flow.mark(EDGE_NETWORK, key, seq)
            if src:
                flow.stat[out] = flow.stat.get(out, frozenset()) | src if in_place else src
            return
        if name in _ROW_READS:
            source = tensors[0] if tensors else None
            if source in flow.stat and out != source:
                flow.pending[out] = (event_key(e), int(e.extra_fields.sequence_number), flow.stat[source])
            return
        if name in _MIXING:
            return
        derived = frozenset(s for p in tensors if p != out or in_place for s in flow.stat.get(p, ()))
        if derived:
            flow.stat[out] = flow.stat.get(out, frozenset()) | derived
        if not in_place and out not in tensors:  # a fresh value computed from its inputs
            flow.parents[out] = frozenset(tensors)
            floats = {p for v in inputs if _floating(v) for p in _storages(v)}
            if len(floats) == 1:
                flow.unary[out] = next(iter(floats))

    def walk(e: Any) -> None:
        if not is_op(e):
            return
        if e.name.startswith(seq_event):
            return  # backward: its ops read the forward's values, they make none of their own statistics
        if e.name.startswith("aten::"):
            op(e)
            return
        for c in e.children:  # fxlint's call-site annotations, other record functions
            walk(c)

    for r in roots:
        walk(r)
    return ComputedGathers(by_key=flow.marked, by_seq=flow.marked_seqs)

"""Gathers that broadcast a per-segment statistic back to the elements it summarises.

Segment softmax (``src - scatter(src, index, reduce="max")[index]``, then ``out / scatter(out, index)[index]``),
GCN's degree normalisation (``deg_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]`` with ``deg`` summed from
``edge_weight``) and a per-graph norm (``x - mean[batch]``) reduce values into rows by an index, then read each
element's row back to combine it with the values that were reduced. That read is a gather, and no view spells
it: a broadcast by an index has no strides (the reason a scatter's gradient is a gather, ``scatter-grad``). It
is the computation, not a copy to fix; the audit classifies it ``segment-statistic``.

A gather of rows aggregated by message passing and read back as messages for the next round (APPNP's
propagation, ``x[row] * edge_weight`` after ``x = scatter(x[row] * w, col)``) is not one: it is not combined
with the values it summarises, and a sparse matmul avoids it (FXL406).

The dataflow is read from the profiler's events, one forward op at a time in the order they ran: an op's output
is its in-place argument, its largest fresh allocation, or (a view, nothing allocated) its first tensor argument;
a storage the allocator hands out again starts afresh. Storage, not tensor: the rows and columns of one
``edge_index`` are one storage, and a view of a statistic is the statistic.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

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
#: how far back (elementwise ops) a consumer's operand may derive from the reduced values
_DEPTH = 6


def _ptrs(value: Any) -> Iterator[int]:
    """The storages of the tensors in one recorded argument (a tensor or a list of them)."""
    items = value if isinstance(value, (list, tuple)) else (value,)
    for v in items:
        ptr = getattr(v, "storage_data_ptr", None)
        if ptr:
            yield int(ptr)


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
    marked: set[tuple[str, int]] = field(default_factory=set)
    marked_seqs: set[int] = field(default_factory=set)

    def forget(self, ptr: int) -> None:
        for table in (self.stat, self.parents, self.unary, self.pending):
            table.pop(ptr, None)

    def ancestors(self, ptr: int) -> set[int]:
        seen, frontier = {ptr}, {ptr}
        for _ in range(_DEPTH):
            frontier = {p for f in frontier for p in self.parents.get(f, ())} - seen
            if not frontier:
                break
            seen |= frontier
        return seen

    def unary_ancestors(self, ptr: int) -> set[int]:
        seen = set()
        for _ in range(_DEPTH):
            nxt = self.unary.get(ptr)
            if nxt is None or nxt in seen:
                break
            seen.add(nxt)
            ptr = nxt
        return seen


def _allocations(e: Any) -> Iterator[tuple[int, int]]:
    """(ptr, size) of every fresh allocation under event ``e``."""
    stack = [e]
    while stack:
        x = stack.pop()
        ef = x.extra_fields
        if type(ef).__name__ == "_ExtraFields_Allocation":
            if int(ef.alloc_size) > 0:
                yield int(ef.ptr), int(ef.alloc_size)
        else:
            stack.extend(x.children)


def _is_op(e: Any) -> bool:
    return type(e.extra_fields).__name__ == "_ExtraFields_TorchOp"


def segment_gathers(roots: list[Any], seq_event: str, is_reduction: Any) -> tuple[set[tuple[str, int]], set[int]]:
    """The forward gathers (by ``event_key``) that read a per-segment statistic back to the values it summarises,
    and their sequence numbers (their backward's). ``seq_event``: the prefix of the backward nodes' events (their
    subtrees are skipped); ``is_reduction``: ``profiler.is_reduction``."""
    flow = _Flow()

    def op(e: Any) -> None:
        name = e.name
        inputs = list(e.extra_fields.inputs)
        tensors = [p for v in inputs for p in _ptrs(v)]
        fresh = sorted(_allocations(e), key=lambda a: -a[1])
        for ptr, _ in fresh:
            flow.forget(ptr)
        if name.endswith("_") and tensors:
            out = tensors[0]
        elif fresh:
            out = fresh[0][0]
        elif tensors:
            out = tensors[0]  # a view: the same storage
        else:
            return
        # a consumer: a gathered statistic combined with the values it summarises (or their elementwise kin)
        for ptr in set(tensors):
            if ptr not in flow.pending:
                continue
            key, seq, sources = flow.pending[ptr]
            for other in set(tensors) - {ptr}:
                if sources & flow.ancestors(other) or other in {u for s in sources for u in flow.unary_ancestors(s)}:
                    flow.marked.add(key)
                    if seq >= 0:
                        flow.marked_seqs.add(seq)
                    break
        if name in _SOURCE_OF and (name in _ALWAYS_REDUCING or is_reduction(e)):
            pos = _SOURCE_OF[name]
            src = frozenset(_ptrs(inputs[pos])) if pos < len(inputs) else frozenset()
            if src:
                flow.stat[out] = flow.stat.get(out, frozenset()) | src if name.endswith("_") else src
            return
        if name in _ROW_READS:
            source = tensors[0] if tensors else None
            if source in flow.stat and out != source:
                flow.pending[out] = (event_key(e), int(e.extra_fields.sequence_number), flow.stat[source])
            return
        if name in _MIXING:
            return
        in_place = name.endswith("_")
        derived = frozenset(s for p in tensors if p != out or in_place for s in flow.stat.get(p, ()))
        if derived:
            flow.stat[out] = flow.stat.get(out, frozenset()) | derived
        if not in_place and out not in tensors:  # a fresh value computed from its inputs
            flow.parents[out] = frozenset(tensors)
            floats = {p for v in inputs if _floating(v) for p in _ptrs(v)}
            if len(floats) == 1:
                flow.unary[out] = next(iter(floats))

    def walk(e: Any) -> None:
        if not _is_op(e):
            for ptr, _ in _allocations(e):  # memory handed out outside any op starts afresh too
                flow.forget(ptr)
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
    return flow.marked, flow.marked_seqs

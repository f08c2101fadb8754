"""Message passing by gather and scatter: the per-edge messages are written every call; a sparse matmul does not.

## What it does
Finds a gather of node features along one dim by an index tensor
(`x.index_select(0, src)`, `x[src]`) whose result reaches a sum-like
scatter along the same dim (`new_zeros(N, C).scatter_add_(0, dst...,
x_j)`, `index_add_(0, dst, x_j)`, `scatter_reduce(0, ..., "sum" | "mean")`,
`index_put_((dst,), x_j, accumulate=True)`) through nothing but views,
reshapes, expands and elementwise products or quotients with per-edge or
broadcast coefficients (`x_j * edge_weight.view(-1, 1)`,
`alpha.unsqueeze(-1) * x_j`): messages linear in `x_j`. That is the
message passing of graph networks written by hand, and of PyTorch
Geometric's `MessagePassing.propagate` (`GCNConv`, `SAGEConv`, `GINConv`,
`GraphConv`, `GATConv`...) when it is given an `edge_index`. A sum divided
by a count (PyG's `aggr="mean"`) is reported as a mean. Reported at info
level: it costs time and memory, it is not a bug.

Not reported: messages that go through anything else before the scatter (a
`Linear`/MLP, `cat`, a nonlinearity: EdgeConv's `nn(cat[x_i, x_j - x_i])`,
where the per-edge tensor is the computation itself), a product with a
coefficient that varies along both the edges and the features (not an
adjacency), a gather whose result has other users too, and `"amax"`,
`"amin"` or `"prod"` scatters: core torch has no sparse matmul for a max
(PyG's `aggr="max"` has no fused equivalent either).

Bytes are the gathered messages' size, E x C x itemsize per call (a formula
under dynamic shapes).

## Why is this bad?
The gather writes an E x C tensor (one row per edge), the scatter reads it
back and adds it into N x C, every call; with E edges much larger than N
nodes this is most of the layer's memory traffic. The same sum is one sparse
matrix product, `out = A @ x` with `A` the N x N adjacency (`A[dst, src]` =
the edge's coefficient), which reads `x` and the adjacency and writes only
N x C. Under the profiler (torch 2.13, CPU; N=100, E=800 unique edges,
C=32) `SAGEConv(32, 32, aggr="sum")(x, edge_index)` runs
`aten::index_select` (102 kB, the messages) and `aten::scatter_add_`; called
with `adj_t = to_torch_csr_tensor(edge_index.flip(0), size=(N, N))` it runs
`aten::_sparse_mm` and no gather or scatter, with outputs equal to the bit.
The same held for `aggr="mean"`, `GINConv`, `GraphConv` and
`GCNConv(normalize=False)`. `GCNConv` with its default `normalize=True`
matched (1.2e-7) on a graph without self-loops; with 5 self-loops among the
800 edges its CSR path differed by 0.37 (its sparse normalisation adds a
self-loop where the graph has one already): remove self-loops first. `GATConv` takes no `adj_t` shortcut (it gathers
the attention logits per edge); its aggregation is one sparse matmul per
head with the attention coefficients as the values (measured equal to
1.2e-7).

Timed (1 thread, `torch.utils.benchmark` medians, the two spellings
interleaved over 5 rounds; gather + `index_add_` vs `torch.sparse.mm` with
the CSR built once; the ratio > 1 means the sparse matmul is faster):

| graph (N nodes, E edges, C features) | forward | forward + backward |
| --- | --- | --- |
| N=100, E=800, C=32 | 3.4 (83 vs 24 us) | 0.84 (664 vs 788 us) |
| N=2708, E=10556, C=64 (Cora-sized) | 1.7 (837 vs 498 us) | 1.3 (9.4 vs 7.1 ms) |
| N=2708, E=10556, C=256 | 8.0 (7.1 vs 0.88 ms) | 2.3 (30 vs 13 ms) |
| N=20000, E=200000, C=64 | 9.7 (171 vs 18 ms) | 6.5 (431 vs 66 ms) |

PyG's spelling (`scatter_add_` with the expanded index) timed the same
within 10%. The machine was shared and loaded: the per-round ratios spread
widely (forward 1.3-3.7 on the Cora-sized graph, 1.9-10.8 on the small one;
forward + backward 0.42-4.5 on the small one, 5.3-8.1 on the largest), so
read the medians as "faster forward, by more as E and C grow". With a
backward on the smallest graph the sparse matmul was slower (its backward
multiplies by the transposed adjacency): there the gain is memory (no E x C
messages, nor their gradient), not time. Runs with per-edge weights gave
larger ratios (17-47x) that the parts timed alone do not explain, so they
are not claimed. Repeat with `python bench/fxl406_gather_scatter.py`
(`--backward`, `--weighted`). GPU timings were not measured.

## Example
```python
x_j = x.index_select(0, src) * edge_weight.view(-1, 1)
out = x.new_zeros(N, C).index_add_(0, dst, x_j)
```

## Use instead
```python
# once per graph (edges unique: coalesce first, a duplicate edge is one entry in the CSR):
adj = torch.sparse_coo_tensor(torch.stack([dst, src]), edge_weight, (N, N)).coalesce().to_sparse_csr()
out = torch.sparse.mm(adj, x)
```
For a PyG conv that implements `message_and_aggregate` (`GCNConv`,
`SAGEConv`, `GINConv`, `GraphConv`...), pass
`adj_t = torch_geometric.utils.to_torch_csr_tensor(edge_index.flip(0), size=(N, N))`
(or a `torch_sparse.SparseTensor`) instead of `edge_index`. For a mean,
divide the rows of the adjacency by the in-degree (or the sum by it).

## When it is intentional
A graph that changes every call (building the CSR costs a sort of the
edges), a graph with duplicate edges whose multiplicity matters to you, or
messages you need per edge anyway (returned, or used by a loss). Silence a
line with `# fxlint: ignore[FXL406]`.

`x[src]` on dim 0 is FXL402's (use `index_select`) unless it feeds such a
scatter: then this rule owns it (the sparse matmul has no gather at all).
In inference, a gather from a parameter or buffer table by a fixed graph (a
buffer `edge_index`) is FXL404's: computed once, it costs nothing per call.

`details` (the fields of `GatherScatter`): `tensor` (the gathered node
features), `index` (the gather's index, the edges' sources), `scatter_index`
(the scatter's index, the destinations), `scatter` (the scatter call),
`reduction` (`sum` or `mean`), `edges` (E), `features` (the message's size
per edge, C, or H x C per head), `nodes` (N, where known), `coefficients`
(the per-edge tensors the messages are multiplied or divided by), `copied`
(bytes per call).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, operand_name
from ..findings import Severity, Violation
from ..registry import Hit, RuleContext, rule
from ..tensor.info import known
from ._sites import numbered

#: scatters that add messages into nodes, and where their (dim, index, messages) arguments are
_SCATTERS = {
    "scatter_add": ("dim", "index", "src"), "scatter_add_": ("dim", "index", "src"),
    "index_add": ("dim", "index", "source"), "index_add_": ("dim", "index", "source"),
    "scatter_reduce": ("dim", "index", "src", "reduce"), "scatter_reduce_": ("dim", "index", "src", "reduce"),
    "index_put": ("indices", "values", "accumulate"), "index_put_": ("indices", "values", "accumulate"),
}
#: the reductions a sparse matmul computes (a mean: rows divided by the in-degree)
_LINEAR_REDUCE = {"sum": "sum", "add": "sum", "mean": "mean"}
#: ops a message passes through unchanged in meaning (a view of it, a dtype, a layout)
_CARRIES = {"view", "reshape", "expand", "unsqueeze", "squeeze", "flatten", "unflatten", "contiguous", "to",
            "alias", "clone"}
#: ops that read only a tensor's shape (``x_j.new_zeros(...)``, ``torch.zeros_like(x_j)``)
_SHAPE_ONLY = {"zeros_like", "ones_like", "empty_like", "full_like", "new_zeros", "new_ones", "new_empty",
               "new_full"}


@dataclass(frozen=True)
class GatherScatter(Violation):
    """A gather whose per-edge result is summed back into nodes: one sparse matmul does it without the messages."""

    tensor: str
    index: str
    scatter_index: str
    scatter: str
    reduction: str
    edges: int | str | None
    features: str
    nodes: int | str | None
    coefficients: tuple[str, ...]
    copied: int | str | None

    def message(self) -> str:
        scaled = f" scaled by {', '.join(self.coefficients)}" if self.coefficients else ""
        edges = self.edges if self.edges is not None else "E"
        return (f"`{self.tensor}` gathered by `{self.index}` writes {edges} x {self.features} per-edge messages"
                f"{scaled} ({bytes_text(self.copied)} per call), then `{self.scatter}` aggregates them "
                f"({self.reduction}) into nodes by `{self.scatter_index}`: one sparse matmul computes the same "
                f"{self.reduction} without the messages")

    def fix_title(self) -> str:
        n = self.nodes if self.nodes is not None else "N"
        values = ", ".join(self.coefficients) if self.coefficients else "1"
        mean = ", rows divided by the in-degree" if self.reduction == "mean" else ""
        csr = (f"CSR adjacency built once per graph (rows {self.scatter_index}, columns {self.index}, values "
               f"{values}{mean}; unique edges: coalesce first)")
        if " x " in self.features:  # per-head messages: one matmul per head, that head's coefficients as values
            return (f"torch.sparse.mm(adj_h, {self.tensor}[:, h]) for each head h, with adj_h the {n} x {n} {csr} "
                    "holding head h's coefficients")
        return (f"torch.sparse.mm(adj, {self.tensor}) with adj the {n} x {n} {csr}; a PyG conv with "
                "message_and_aggregate takes to_torch_csr_tensor(edge_index.flip(0)) instead of edge_index")


@rule("FXL406", "gather-scatter", "info", violation=GatherScatter, supersedes=("FXL402",))
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    for node in view.ops("index"):
        gather = _gather(node)
        if gather is None:
            continue
        base, index, dim = gather
        found = _scatter_of(node, dim)
        if found is None:
            continue
        scatter, scatter_index, reduction, coefficients = found
        if reduction == "sum" and _divided_by_count(scatter):
            reduction = "mean"
        t = node.tensor
        assert t is not None
        edges = t.shape[dim]
        feat = [d for i, d in enumerate(t.shape) if i != dim]
        features = " x ".join(str(bytes_value(d)) for d in feat) if len(feat) > 1 else str(bytes_value(feat[0]))
        target = scatter.input.tensor if scatter.input is not None else None
        nodes = bytes_value(target.shape[dim]) if target is not None and dim < target.ndim else None
        violation = GatherScatter(
            tensor=operand_name(base), index=operand_name(index), scatter_index=operand_name(scatter_index),
            scatter=f".{scatter.op}", reduction=reduction, edges=bytes_value(edges), features=features,
            nodes=nodes, coefficients=tuple(coefficients), copied=bytes_value(t.nbytes))
        yield Hit(node, violation, bytes=t.nbytes, severity=Severity.INFO)


def _gather(node: CanonNode) -> tuple[CanonNode, CanonNode, int] | None:
    """(features, index, dim) of a one-index gather along a dim that is not the last: ``index_select``,
    or a subscript with one 1-D integer index tensor and full slices elsewhere."""
    spec = node.args.get("index")
    base, t = node.input, node.tensor
    if spec is None or base is None or base.tensor is None or t is None or base.tensor.ndim < 2:
        return None
    adv = spec.advanced
    if len(adv) != 1 or adv[0].kind != "tensor" or adv[0].index is None or adv[0].dim is None:
        return None
    item = adv[0]
    if any(it is not item and not it.is_full_slice for it in spec.items):
        return None  # ints, newaxis, partial slices: not a row gather
    idx = item.index.tensor
    if idx is None or idx.ndim != 1 or idx.dtype.is_floating_point or str(idx.dtype) == "torch.bool":
        return None
    if item.dim == base.tensor.ndim - 1:
        return None  # gathering features, not nodes
    return base, item.index, item.dim


def _downstream(node: CanonNode) -> set[int]:
    seen: set[int] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        for u in n.users:
            if id(u) not in seen:
                seen.add(id(u))
                todo.append(u)
    return seen


def _scatter_of(gather: CanonNode, dim: int) -> tuple[CanonNode, CanonNode, str, list[str]] | None:
    """The sum-like scatter along ``dim`` that every use of the gathered messages leads to, linearly:
    (the scatter, its index, the reduction, the coefficients' names); None when some use is not linear
    or the messages reach no such scatter."""
    t = gather.tensor
    assert t is not None
    edges = t.shape[dim]
    after = _downstream(gather)
    coefficients: list[str] = []
    found: tuple[CanonNode, CanonNode, str] | None = None
    todo, seen = [gather], {id(gather)}
    while todo:
        msg = todo.pop()
        for u in msg.users:
            if id(u) in seen:
                continue
            seen.add(id(u))
            ut = u.tensor
            if (ut is None and u.op in ("size", "sym_size", "numel", "dim")) or u.op in _SHAPE_ONLY or \
                    (u.op == "expand" and u.input is not msg):
                continue  # a size query, a factory of its shape, `dst.expand_as(x_j)`: read no data
            if u.op in _SCATTERS:
                hit = _as_scatter(u, msg, dim)
                if hit is None or found is not None:
                    return None
                found = (u, *hit)
                continue
            if ut is None or dim >= ut.ndim or str(ut.shape[dim]) != str(edges):
                return None  # the edges moved (a transpose, a flatten) or the value is no tensor
            if u.op in _CARRIES and u.input is msg:
                todo.append(u)
                continue
            if u.op in ("mul", "div"):
                coeff = _coefficient(u, msg, after, dim)
                if coeff is None:
                    return None
                if coeff:
                    coefficients.append(coeff)
                todo.append(u)
                continue
            return None  # a nonlinear use (an MLP, cat, relu): the messages are the computation
    if found is None:
        return None
    return found[0], found[1], found[2], coefficients


def _arg(node: CanonNode, names: tuple[str, ...], name: str, default: Any = None) -> Any:
    """The scatter's argument ``name`` by its position after ``self`` or by keyword."""
    args = node.args.get("args", [])
    kwargs = node.args.get("kwargs", {})
    if name in kwargs:
        return kwargs[name]
    pos = names.index(name) + 1
    return args[pos] if pos < len(args) else default


def _as_scatter(u: CanonNode, msg: CanonNode, dim: int) -> tuple[CanonNode, str] | None:
    """(index, reduction) when ``u`` adds ``msg`` into rows along ``dim``; None otherwise."""
    names = _SCATTERS[u.op]
    t = msg.tensor
    assert t is not None
    if u.op.startswith("index_put"):
        if _arg(u, names, "values") is not msg or _arg(u, names, "accumulate", False) is not True:
            return None
        indices = _arg(u, names, "indices")
        if not isinstance(indices, (list, tuple)) or len(indices) != dim + 1 or \
                any(i is not None for i in indices[:dim]) or not isinstance(indices[dim], CanonNode):
            return None
        return indices[dim], "sum"
    src = _arg(u, names, "source" if u.op.startswith("index_add") else "src")
    d, index = _arg(u, names, "dim"), _arg(u, names, "index")
    if src is not msg or not isinstance(d, int) or not isinstance(index, CanonNode):
        return None
    if d % t.ndim != dim:
        return None
    reduction = _arg(u, names, "reduce", "sum") if u.op.startswith("scatter_reduce") else "sum"
    if reduction not in _LINEAR_REDUCE:
        return None  # amax, amin, prod: no sparse matmul
    # the scatter's index, as the user wrote it: a view/expand of the destinations is their name
    return _named(index), _LINEAR_REDUCE[reduction]


#: ops that only reshape a value for the scatter or the product: the user's name is that of what they reshape
_RESHAPING = ("view", "expand", "reshape", "unsqueeze")


def _named(node: CanonNode) -> CanonNode:
    """``node``, or what a chain of ``_RESHAPING`` ops above it reshapes (``dst.view(-1, 1).expand_as(x_j)``:
    ``dst``), walked with ``CanonNode.view_chain``."""
    chain = node.view_chain(maybe_views=True)
    return chain[next((i for i, n in enumerate(chain) if n.op not in _RESHAPING), len(chain) - 1)]


def _coefficient(u: CanonNode, msg: CanonNode, after: set[int], dim: int) -> str | None:
    """The name of the other operand of ``msg * c`` / ``msg / c`` when it keeps the messages linear and
    a sparse matmul can carry it: not computed from the messages, constant along the features (per
    edge, per head) or along the edges (a broadcast scale); "" for a Python number; None otherwise."""
    args = [a for a in u.args.get("args", []) if a is not None]
    if len(args) != 2 or sum(a is msg for a in args) != 1:
        return None
    if u.op == "div" and args[0] is not msg:
        return None  # c / msg is not linear
    other = args[1] if args[0] is msg else args[0]
    if isinstance(other, (int, float)):
        return ""
    if not isinstance(other, CanonNode) or other.tensor is None or id(other) in after:
        return None
    ot, mt = other.tensor, msg.tensor
    assert mt is not None
    shape = (1,) * (mt.ndim - ot.ndim) + tuple(ot.shape)
    if len(shape) != mt.ndim:
        return None
    per_edge = known(shape[-1]) == 1
    broadcast = known(shape[dim]) == 1
    if not (per_edge or broadcast):
        return None  # varies along edges and features: not an adjacency's value
    return operand_name(_named(other))


def _divided_by_count(scatter: CanonNode) -> bool:
    """The sum is divided by a count computed by another scatter or a bincount (PyG's mean)."""
    for u in scatter.users:
        if u.op != "div" or u.args.get("args", [None])[0] is not scatter:
            continue
        denom = u.args["args"][1]
        todo, steps = [denom], 0
        while todo and steps < 12:
            n = todo.pop()
            steps += 1
            if not isinstance(n, CanonNode):
                continue
            if n.op in ("scatter_add", "scatter_add_", "index_add", "index_add_", "bincount", "scatter_reduce"):
                return True
            todo.extend(n.inputs)
    return False


__all__ = ["GatherScatter", "check"]

"""Pieces of a tensor taken one subscript at a time in training: each piece's backward zero-fills a gradient the size of the whole tensor; `unbind`/`split` give the same views with one backward write.

## What it does
Finds two or more pieces of one tensor taken along the same dim in one
function, each by its own subscript, where a gradient flows back through them:
`q, k, v = qkv[0], qkv[1], qkv[2]` (selects), `cls, x = x[:, :1],
x[:, 1:]` or `torch.tensor_split(x, (1,), dim=1)` (slices), and the same
pieces on consecutive lines (`x1 = x[..., : d // 2]`, `x2 = x[..., d // 2 :]`,
the rotary embedding's `rotate_half`), with every other dim taken whole and
no two pieces overlapping. And strided pieces that tile a tensor: every
offset of a step along one or more dims (`x[..., ::2]` and `x[..., 1::2]`
of a pairwise rotary embedding; the eight `x[:, i::2, j::2, k::2]` of a 3-D
patch merging, a Focus layer's four), whose backward zero-fills and copies
once per strided dim. Also a select along a dim of size 1 (`h[:, 0]`
of an (N, 1, C) tensor): the one piece is the whole tensor, and
`h.squeeze(1)` is the same view with a free backward. Only pieces whose
gradient reaches the output count (a piece cut off by a `detach` gets no
backward). Only in training: in inference the pieces are free views and
nothing runs backward.

Bytes are what the backward copies per training step: each piece's
gradient copied into its place in a zero-filled tensor of the whole
size (`aten::select_backward` / `aten::slice_backward` > `aten::copy_`).
Pieces taken on several lines are reported on each line, with that line's
pieces' bytes (the audit files each piece's backward copy at its own line).
The forward copies nothing.

## Why is this bad?
Autograd differentiates each subscript on its own. Measured with the
profiler (torch 2.13, CPU) for `q, k, v = x[0], x[1], x[2]`: the backward
runs three `aten::zeros` of the whole tensor, three `aten::copy_` of one
piece each, and two `aten::add_` of the whole tensor to sum the three
gradients: six writes of the whole tensor's size and two temporary buffers
of it. With `q, k, v = x.unbind(0)` the backward is one `aten::stack` of
the three gradients: one write. The same for slices: `x[:, :, :1]` and
`x[:, :, 1:]` (or `torch.tensor_split`, which is built from slices) run
two zero fills, two copies and an `add_`; `x.split([1, 64], dim=2)` runs
one `aten::cat`.

## Example
```python
q, k, v = qkv[0], qkv[1], qkv[2]
cls_token, tokens = x[:, :1], x[:, 1:]
```

## Use instead
```python
q, k, v = qkv.unbind(0)
cls_token, tokens = x.split([1, x.shape[1] - 1], dim=1)
x1, x2 = x.chunk(2, dim=-1)
```
Measured (torch 2.13, CPU) on the rotary embedding: `x1, x2 = x[..., :h],
x[..., h:]` then `torch.cat((-x2, x1), -1)` makes two `slice_backward`
copies per call of it in the backward; `x.chunk(2, dim=-1)` none.
For strided pieces, views with `unflatten` and `unbind` give the same
pieces:
```python
a, b = x.unflatten(-1, (-1, 2)).unbind(-1)          # x[..., ::2], x[..., 1::2]
p = x.unflatten(1, (-1, 2)).unflatten(3, (-1, 2)).unflatten(5, (-1, 2))
x0 = p.unbind(2)[0].unbind(3)[0].unbind(4)[0]       # x[:, 0::2, 0::2, 0::2]
```
Measured on a (2, 4, 4, 4, 8) patch merging: the eight subscripts then
`torch.cat` run 24 zero fills, 24 copies and 7 sums in the backward; the
nested `unbind`s 7 stacks, and the same values.

## When it is intentional
Pieces that overlap, or a single piece smaller than the tensor (`x[:, 1:]`
alone: its gradient must be zero elsewhere anyway), are not reported.
Silence a line with `# fxlint: ignore[FXL113]`.

`details` (the fields of `SlicesInsteadOfSplit`): `tensor` (the sliced
tensor, in the user's names), `dim`, `pieces` (how many), `kind`
(`select`, `slice` or `strided`), `suggestion` (the spelling with
`unbind`/`split`), `copied` (backward bytes per training step), and for
strided pieces `steps` and `dims`.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

from ..analysis.gradflow import cut_kind
from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, operand_name
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ..tensor.info import TensorInfo


@dataclass(frozen=True)
class SlicesInsteadOfSplit(Violation):
    """Pieces of one tensor taken by separate subscripts, with a gradient flowing back through them."""

    tensor: str
    dim: int
    pieces: int
    kind: str  # "select" (x[0], x[1]) or "slice" (x[:, :1], x[:, 1:], tensor_split)
    suggestion: str
    copied: int | str | None  # backward bytes per training step (of the pieces on this finding's line)
    spelled: str = "subscripts"  # "subscripts" or "tensor_split" (built from slices)
    lines: tuple[int, ...] = ()  # the source lines the pieces are taken on, when known
    steps: tuple[int, ...] = ()  # kind "strided": the step on each strided dim (``dims``)
    dims: tuple[int, ...] = ()

    def message(self) -> str:
        how = "select" if self.kind == "select" else "slice"
        if self.kind == "strided":
            where = f" (on lines {', '.join(map(str, self.lines))})" if len(self.lines) > 1 else ""
            on_line = " on this line" if len(self.lines) > 1 else ""
            plural = "s" if len(self.dims) > 1 else ""
            return (f"{self.pieces} strided pieces of `{self.tensor}` (step{plural} {_listed(self.steps)} along dim"
                    f"{plural} {_listed(self.dims)}) tile it{where}: in the backward each piece's subscript zero-fills a "
                    f"gradient the size of `{self.tensor}` once per strided dim and copies its piece in, and the "
                    f"pieces are summed ({bytes_text(self.copied)} copied per training step{on_line}, plus the zero "
                    "fills and the sums)")
        if self.pieces == 1:
            return (f"`{self.tensor}` selected along dim {self.dim}, of size 1: the piece is the whole tensor, but in the "
                    f"backward the select copies its gradient into a zero-filled tensor the size of `{self.tensor}` "
                    f"({bytes_text(self.copied)} copied per training step, plus the zero fill)")
        taken = "one subscript each" if self.spelled == "subscripts" else "by `torch.tensor_split` (one slice each)"
        where = f" (on lines {', '.join(map(str, self.lines))})" if len(self.lines) > 1 else ""
        on_line = " on this line" if len(self.lines) > 1 else ""
        return (f"{self.pieces} pieces of `{self.tensor}` along dim {self.dim}, {taken}{where}: in the backward each "
                f"{how} copies its gradient into a zero-filled tensor the size of `{self.tensor}`, and the pieces are "
                f"summed ({bytes_text(self.copied)} copied per training step{on_line}, plus the zero fills and the "
                "sums)")

    def fix_title(self) -> str:
        if self.kind == "strided":
            return (f"take the pieces at once as views: {self.suggestion} (backward: one stack per unbind, no zero "
                    "fills)")
        if self.pieces == 1:
            return f"take it as a view with a free backward: `{self.suggestion}`"
        return f"take the pieces at once: `{self.suggestion}` (one backward write)"


def _cut(node: CanonNode) -> tuple[TensorInfo, list[Any]] | None:
    """The subscripted tensor and the index items that cut it (a dim not taken whole); None when ``node`` is no
    subscript of a known tensor."""
    spec = node.args.get("index")
    x = node.input
    if spec is None or x is None or x.tensor is None:
        return None
    items = [it for it in spec.items if it.kind != "ellipsis"]
    return x.tensor, [it for it in items if not (it.kind == "slice" and it.start in (None, 0) and it.stop is None
                                                 and it.step in (None, 1))]


def _piece(node: CanonNode) -> tuple[int, str, int, int] | None:
    """(dim, kind, start, stop) of a subscript that takes one piece along one dim, every other dim whole."""
    got = _cut(node)
    if got is None:
        return None
    t, cut = got
    if len(cut) != 1 or cut[0].dim is None:
        return None
    it = cut[0]
    size = t.shape[it.dim]
    if not isinstance(size, int):
        return None
    if it.kind == "int" and isinstance(it.value, int):
        i = it.value % size if size else it.value
        return it.dim, "select", i, i + 1
    if it.kind == "slice" and it.step in (None, 1):
        start = it.start if isinstance(it.start, int) else 0 if it.start is None else None
        stop = it.stop if isinstance(it.stop, int) else size if it.stop is None else None
        if start is None or stop is None:
            return None
        start, stop = (s + size if s < 0 else s for s in (start, stop))
        start, stop = max(0, min(start, size)), max(0, min(stop, size))
        return (it.dim, "slice", start, stop) if stop > start else None
    return None


def _grads(node: CanonNode) -> bool:
    """A gradient flows back through ``node``: it requires grad and a path of ops that require grad, with no
    cut (``detach``, a no-grad region, a host read), leads from it to what the graph returns."""
    t = node.tensor
    if t is None or not t.requires_grad or not node.grad_enabled:
        return False
    seen, todo = {id(node)}, [node]
    while todo:
        n = todo.pop()
        for u in n.users:
            if u.kind == "output":
                return True
            if id(u) in seen or cut_kind(u) is not None or (u.tensor is not None and not u.tensor.requires_grad):
                continue
            seen.add(id(u))
            todo.append(u)
    return False


def _pieces_of_split(node: CanonNode) -> tuple[int, list[tuple[CanonNode, int, int]]] | None:
    """``torch.tensor_split(x, indices, dim)``: (dim, [(the getitem of each used piece, start, stop)])."""
    x = node.input
    args = node.args.get("args") or []
    kwargs = node.args.get("kwargs") or {}
    if x is None or x.tensor is None:
        return None
    indices = kwargs.get("indices", kwargs.get("indices_or_sections", args[1] if len(args) > 1 else None))
    dim = kwargs.get("dim", args[2] if len(args) > 2 else 0)
    if not isinstance(indices, (tuple, list)) or not all(isinstance(i, int) for i in indices) or \
            not isinstance(dim, int):
        return None
    dim = dim % x.tensor.ndim
    size = x.tensor.shape[dim]
    if not isinstance(size, int):
        return None
    bounds = [0, *indices, size]
    used = []
    for u in node.users:
        k = u.node.args[1] if len(u.node.args) > 1 else None
        if isinstance(k, int) and 0 <= k < len(bounds) - 1 and u.tensor is not None and u.tensor.numel:
            used.append((u, bounds[k], bounds[k + 1]))
    return dim, used


def _listed(v: tuple[int, ...]) -> str:
    return str(v[0]) if len(v) == 1 else str(v)


def _strided(node: CanonNode) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]] | None:
    """(((dim, step), ...), offsets) of a subscript that takes every step-th element from an offset below the step
    along one or more dims (``x[:, 1::2, 0::2]``), every other dim whole."""
    got = _cut(node)
    if got is None:
        return None
    t, cut = got
    if not cut or any(it.kind != "slice" or it.dim is None or not isinstance(it.step, int) or it.step < 2
                      or it.stop is not None for it in cut):
        return None
    dims, offsets = [], []
    for it in sorted(cut, key=lambda i: i.dim):
        size = t.shape[it.dim]
        start = 0 if it.start is None else it.start
        if not isinstance(size, int) or not isinstance(start, int) or not 0 <= start < it.step or size % it.step:
            return None
        dims.append((it.dim, it.step))
        offsets.append(start)
    return tuple(dims), tuple(offsets)


def _strided_hits(view: GraphView) -> Iterator[Hit]:
    """Strided pieces of one tensor, in one function, whose offsets cover every combination: they tile it
    (patch merging's ``x[:, 0::2, 0::2, 0::2]`` ... ``x[:, 1::2, 1::2, 1::2]``, a Focus layer, ``x[..., ::2]`` and
    ``x[..., 1::2]``)."""
    Where = tuple[str | None, str | None] | None
    groups: dict[tuple[int, tuple[tuple[int, int], ...], Where], list[tuple[CanonNode, tuple[int, ...]]]] = \
        defaultdict(list)
    for node in view.ops("slice"):
        got = _strided(node)
        if got is None or node.input is None or not _grads(node):
            continue
        loc = node.location
        groups[(id(node.input), got[0], (loc.file, loc.function) if loc is not None else None)].append(
            (node, got[1]))
    for (_, dims, _), pieces in groups.items():
        steps = tuple(st for _, st in dims)
        if {off for _, off in pieces} != set(itertools.product(*(range(st) for st in steps))):
            continue  # not every piece: no tiling to take at once
        x = pieces[0][0].input
        if x is None or x.tensor is None or not isinstance(x.tensor.numel, int):
            continue
        name = operand_name(x)
        ds = tuple(d for d, _ in dims)
        unflat = "".join(f".unflatten({d + k}, (-1, {st}))" for k, (d, st) in enumerate(dims))
        if len(ds) == 1:
            suggestion = f"`{name}{unflat}.unbind({ds[0] + 1})`"
        else:  # each unbind drops one offset dim: the next one is then at its own dim + 1
            suggestion = (f"`{name}{unflat}`, then " + ", ".join(f"`.unbind({d + 1})`" for d in ds)
                          + " in turn (piece (i, j, ...) is `[i][j]...`)")
        # each piece's backward: one slice_backward per strided dim, copying that slice's output into a zero-filled
        # tensor of its input (sizes numel / step_1, numel / (step_1 step_2), ...)
        per_piece, left = 0, x.tensor.numel * x.tensor.itemsize
        for st in steps:
            left //= st
            per_piece += left
        lines, per_line = _by_line([node for node, _ in pieces])
        for first, nodes in per_line:
            copied = per_piece * len(nodes)
            yield Hit(first, SlicesInsteadOfSplit(tensor=name, dim=ds[0], pieces=len(pieces), kind="strided",
                                                  suggestion=suggestion, copied=bytes_value(copied), lines=lines,
                                                  steps=steps, dims=ds),
                      bytes=0, backward_bytes=copied, dedup=f"{name}:{ds}")


@rule("FXL113", "slices-instead-of-split", "warning", violation=SlicesInsteadOfSplit)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    # the pieces one statement takes (`q, k, v = qkv[0], qkv[1], qkv[2]`), then the lone pieces one function takes
    # on several lines (`x1 = x[..., :h]` and `x2 = x[..., h:]`); subscripts of the same tensor in another function
    # are another decision
    Where = tuple[str | None, str | None, int | None] | None
    groups: dict[tuple[int, int, Where], list[tuple[CanonNode, str, int, int]]] = defaultdict(list)
    for node in view.ops("slice"):
        p = _piece(node)
        if p is None or not _grads(node) or node.input is None:
            continue
        dim, kind, start, stop = p
        loc = node.location
        where = (loc.file, loc.function, loc.line) if loc is not None else None
        groups[(id(node.input), dim, where)].append((node, kind, start, stop))
    lone: dict[tuple[int, int, object], list[tuple[CanonNode, str, int, int]]] = defaultdict(list)
    for (key, dim, at), pieces in groups.items():
        if len({(a, b) for *_, a, b in pieces}) > 1 or at is None:
            yield from _hit(pieces, dim)
        elif not (yield from _whole(pieces, dim)):
            lone[(key, dim, at[:2])].extend(pieces)
    for (_, dim, _), pieces in lone.items():
        yield from _hit(pieces, dim)
    for node in view.ops("tensor_split"):
        got = _pieces_of_split(node)
        if got is None or not _grads(node.input or node):
            continue
        dim, used = got
        if len(used) >= 2:
            yield from _hit([(u, "slice", a, b) for u, a, b in used], dim, anchor=node, spelled="tensor_split")
    yield from _strided_hits(view)


def _line(node: CanonNode) -> int | None:
    return node.location.line if node.location is not None else None


def _by_line(nodes: list[CanonNode]) -> tuple[tuple[int, ...], list[tuple[CanonNode, list[CanonNode]]]]:
    """The pieces' source lines, and per line its first piece and all its pieces (one finding per line: the audit
    files each piece's backward copy at its own line)."""
    by_line: dict[int | None, list[CanonNode]] = defaultdict(list)
    for node in nodes:
        by_line[_line(node)].append(node)
    lines = tuple(sorted(ln for ln in by_line if ln is not None))
    return lines, [(min(ns, key=lambda nd: nd.position), ns) for ns in by_line.values()]


def _whole(pieces: list[tuple[CanonNode, str, int, int]], dim: int) -> Generator[Hit, None, bool]:
    """``h[:, 0]`` of an (N, 1, C) tensor (the pieces of one line, all that one select): the piece is the whole
    tensor, yet its backward zero-fills a gradient of it and copies the piece's in. Yields that hit; returns
    whether it did."""
    x = pieces[0][0].input
    if x is None or x.tensor is None or x.tensor.shape[dim] != 1 or {k for _, k, _, _ in pieces} != {"select"}:
        return False
    name = operand_name(x)
    copied = sum((node.tensor.nbytes for node, *_ in pieces if node.tensor is not None), 0)
    first = min((n for n, *_ in pieces), key=lambda n: n.position)
    yield Hit(first, SlicesInsteadOfSplit(tensor=name, dim=dim, pieces=1, kind="select",
                                          suggestion=f"{name}.squeeze({dim})", copied=bytes_value(copied)),
              bytes=0, backward_bytes=copied, dedup=f"{name}:{dim}")
    return True


def _hit(pieces: list[tuple[CanonNode, str, int, int]], dim: int, anchor: CanonNode | None = None,
         spelled: str = "subscripts") -> Iterator[Hit]:
    spans = sorted({(a, b) for _, _, a, b in pieces})
    x = pieces[0][0].input if anchor is None else anchor.input
    if x is None or x.tensor is None:
        return
    size = x.tensor.shape[dim]
    name = operand_name(x)
    if len(spans) < 2 or any(b1 > a2 for (_, b1), (a2, _) in itertools.pairwise(spans)):
        return  # one piece, or pieces that overlap: no partition to take at once
    kinds = {k for _, k, _, _ in pieces}
    if kinds == {"select"}:
        n = len(spans)
        whole = [a for a, _ in spans] == list(range(size))
        suggestion = f"{name}.unbind({dim})" if whole else f"{name}.unbind({dim})[...]"
        kind = "select"
    else:
        cuts = [0]
        for a, b in spans:
            if a > cuts[-1]:
                cuts.append(a)
            cuts.append(b)
        if cuts[-1] != size:
            cuts.append(size)
        sizes = [b - a for a, b in itertools.pairwise(cuts)]
        suggestion = (f"{name}.chunk({len(sizes)}, dim={dim})" if len(set(sizes)) == 1
                      else f"{name}.split({sizes}, dim={dim})")
        kind = "slice"
        n = len(spans)
    if anchor is not None:  # tensor_split: one call, one line
        copied = sum((node.tensor.nbytes for node, *_ in pieces if node.tensor is not None), 0)
        yield Hit(anchor, SlicesInsteadOfSplit(tensor=name, dim=dim, pieces=n, kind=kind, suggestion=suggestion,
                                               copied=bytes_value(copied), spelled=spelled),
                  bytes=0, backward_bytes=copied, dedup=f"{name}:{dim}")
        return
    # one finding per line the pieces are taken on, each with its own pieces' backward copies
    lines, per_line = _by_line([node for node, *_ in pieces])
    for first, nodes in per_line:
        copied = sum((nd.tensor.nbytes for nd in nodes if nd.tensor is not None), 0)
        yield Hit(first, SlicesInsteadOfSplit(tensor=name, dim=dim, pieces=n, kind=kind, suggestion=suggestion,
                                              copied=bytes_value(copied), spelled=spelled, lines=lines),
                  bytes=0, backward_bytes=copied, dedup=f"{name}:{dim}")

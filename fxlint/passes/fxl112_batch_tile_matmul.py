"""A batch dim tiled with `repeat`/`tile`/`repeat_interleave` only to feed a batched matmul: fold it into the rows instead.

## What it does
Finds a `.repeat(...)`, `.tile(...)` or `.repeat_interleave(r, dim=k)` that
replicates one batch dim (a dim before the last two) of a tensor whose only
readers are batched matmuls (`torch.bmm`, `torch.matmul`, `@`,
`torch.baddbmm`), when the other operand has exactly the repeated batch
shape. The tile may reach the matmul through `reshape`/`view`/`permute` steps
that keep the repeated dim whole and elementwise ops whose other operands are
the same for every copy (GCViT's `q * self.scale`): those steps are then done
`times` times over, and work on the un-repeated tensor in the fix. Every copy of the
tile multiplies a different slice of the other operand: DeBERTa's relative
position keys `(H, 2S, D).repeat(B, 1, 1)` against the `(B*H, L, D)` queries,
GCViT's global query `(B, h, N, d).repeat_interleave(r, dim=0)` against the
keys of the `r` windows of each image.

Bytes are the tiled tensor's size per call. Not reported: a repeat whose
result is also read by anything else (`cat`, an in-place write, a conv, the
graph's output), a repeat along the matmul's row or contracted dims, a count
that does not tile the other operand's batch exactly (it would broadcast), a
repeat of size-1 dims that only feed elementwise ops (that is FXL104). Under
dynamic shapes a count written as a floor division (`q.size(0) // heads`) is
reported only where the shape environment proves the tile equals the other
operand's batch; otherwise it is left alone rather than guessed.

## Why is this bad?
The tile copies the source `r` times (`aten::repeat > aten::copy_`,
`aten::repeat_interleave > aten::clone`) so that a bmm can read one matrix per
batch entry. The same product is one bmm over the *un-repeated* batch when the
`r` slices that share a copy of the source are stacked along the other
operand's rows (or columns): a GEMM with `r` times the rows, reading the
source as it is.

`torch.matmul` broadcasting is not a fix (measured with `torch.profiler`):
`a.view(B, H, L, D) @ src` with `src` of shape `(H, D, 2S)` expands `src` to
`(B, H, D, 2S)` and reshapes it to `(B*H, D, 2S)` for its bmm, which copies
the same bytes (`aten::matmul > aten::reshape > aten::clone`). It is one only
when the source's batch is a single entry (`(1, K, N).repeat(B, 1, 1)`): the
expanded batch then has stride 0 and needs no reshape copy; the finding then
says to drop the repeat.

## Example
```python
# q: (B*H, L, D); pos_key: (H, 2S, D)
pos_key = pos_key.repeat(B, 1, 1)                   # (B*H, 2S, D): a copy
c2p = torch.bmm(q, pos_key.transpose(-1, -2))       # (B*H, L, 2S)

# k: (B*r, h, N, d), the keys of r windows per image; q_global: (B, h, N, d)
q = q_global.repeat_interleave(r, dim=0)            # (B*r, h, N, d): a copy
attn = q @ k.transpose(-2, -1)                      # (B*r, h, N, N)
```

## Use instead
```python
# q laid out heads first where it is made: (H, B*L, D) instead of (B*H, L, D)
c2p = torch.bmm(q_hb, pos_key.transpose(-1, -2))    # (H, B*L, 2S): no tile
c2p = c2p.view(H, B, L, -1).transpose(0, 1)         # (B, H, L, 2S) as a view

# the keys of each image's r windows side by side: (B, h, r*N, d), a view of
# the qkv projection when the windows are consecutive in memory
attn = q_global @ k_b.transpose(-2, -1)             # (B, h, N, r*N): no tile
attn = attn.view(B, h, N, r, N)                     # window j at [..., j, :]
```
When the other operand's memory already has that order (a
`repeat_interleave` on the last batch dim of a contiguous operand: `(B*r, L,
K)` is `(B, r*L, K)`), the fold is a view and nothing else changes; the
finding says so (`fold_is_view`). Otherwise the operand has to be produced in
that order where it is made (the permute before its `.contiguous()`), and its
readers adapted: that is a change of code, not a rewrite fxlint applies.

## When it is intentional
When the tiled tensor is small next to the other operand and the code that
makes the operand cannot change its layout. Silence a line with
`# fxlint: ignore[FXL112]`.

`details` (the fields of `BatchTileMatmul`): `source` (node name of the
un-repeated tensor), `input_shape`, `output_shape`, `dim` (the repeated
batch dim), `times`, `interleave` (True for `repeat_interleave`: copy `j` of
entry `i` is at `i*times + j`; False for `repeat`/`tile`: at `j*size + i`),
`tiled_operand` (`a` or `b` of the matmul), `operand_shape` (the matmul's
operand as it would be un-repeated), `other_shape`, `folded_shape` (the
other operand, folded), `fold_is_view`, `broadcast_free` (the source's batch
is one entry: then dropping the tile and calling `torch.matmul` is the fix),
`matmuls` (node names of the consumers).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import sympy

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, line_of, shape_text, shape_value
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ..tensor.symbolic import Dim, is_one, known, maybe_eq, simplify
from ._sites import numbered
from ._util import real_users

#: batched matmuls: the canonical ops whose ``a``/``b`` operands carry batch dims
_BATCHED = ("bmm", "matmul", "baddbmm")


@dataclass(frozen=True)
class BatchTileMatmul(Violation):
    """A batch dim tiled only so that a bmm reads one copy of the source per batch entry."""

    call: str  # as written: ".repeat(4, 1, 1)", ".repeat_interleave(4, dim=0)"
    copied: int | str | None  # bytes per call (a formula under dynamic shapes)
    input_shape: tuple[int | str, ...]
    output_shape: tuple[int | str, ...]
    dim: int
    times: int | str
    interleave: bool
    tiled_operand: str  # "a" (left) or "b" (right) of the matmul
    operand_shape: tuple[int | str, ...]  # the matmul's operand as it would be un-repeated
    other_shape: tuple[int | str, ...]
    folded_shape: tuple[int | str, ...]  # the other operand with the copies folded into its rows/columns
    fold_is_view: bool
    broadcast_free: bool  # the source's batch is a single entry: torch.matmul broadcasts it with no copy
    consumed_by: tuple[str, ...]  # "`bmm` at line 12"
    matmuls: list[str]
    source: str

    def message(self) -> str:
        return (f"`{self.call}` copies {bytes_text(self.copied)} per call to tile a {shape_text(self.input_shape)} "
                f"tensor {self.times} times along batch dim {self.dim} into {shape_text(self.output_shape)}, only "
                f"for {', '.join(self.consumed_by)}: each copy multiplies another slice of the "
                f"{shape_text(self.other_shape)} operand, which one bmm over the un-repeated batch does without "
                "the tile")

    def fix_title(self) -> str:
        if self.broadcast_free:
            return (f"drop `{self.call}` and pass the un-repeated {shape_text(self.operand_shape)} operand to `torch.matmul`: a batch "
                    "of one broadcasts without a copy (its bmm reads it with batch stride 0)")
        where = "rows" if self.tiled_operand == "b" else "columns"
        how = ("it is a view of that operand as it is" if self.fold_is_view else
               "produce that operand in this order where it is made")
        return (f"fold the {self.times} copies into the {where} of the other operand: read it as "
                f"{shape_text(self.folded_shape)} and multiply once by the un-repeated "
                f"{shape_text(self.operand_shape)} operand ({how}); torch.matmul broadcasting is no fix, it copies "
                "the same bytes in its reshape")


@rule("FXL112", "batch-tile-matmul", "warning", violation=BatchTileMatmul, supersedes=("FXL405",))
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    for node in (*view.ops("repeat"), *view.ops("repeat_interleave")):
        found = _tile(node)
        if found is None:
            continue
        assert node.tensor is not None and node.input is not None and node.input.tensor is not None  # _tile checked
        dim, times, interleave, spelled = found
        out = tuple(node.tensor.shape)
        src = tuple(node.input.tensor.shape)  # same rank as out (_tile checked)
        uses = _matmul_uses(node, dim, ())
        if not uses or len({u.side for u in uses}) != 1:
            continue
        if not all(_same_batch(u.other, u.operand, u.dim) for u in uses):
            continue  # the tile is the matmul's rows/columns, or the other operand broadcasts: not a whole tiling
        first = uses[0]
        assert first.other.tensor is not None and first.operand.tensor is not None
        operand = list(first.operand.tensor.shape)
        operand[first.dim] = src[dim]  # the operand as the matmul would read it un-repeated
        folded, is_view = _fold(first.other, first.dim, times, src[dim], interleave, first.side)
        nbytes = node.tensor.nbytes
        violation = BatchTileMatmul(
            call=spelled, copied=bytes_value(nbytes), input_shape=shape_value(src), output_shape=shape_value(out),
            dim=dim, times=_plain(times), interleave=interleave, tiled_operand=first.side,
            operand_shape=shape_value(operand), other_shape=shape_value(first.other.tensor.shape),
            folded_shape=shape_value(folded), fold_is_view=is_view,
            broadcast_free=all(is_one(s) for s in operand[:-2]),
            consumed_by=tuple(f"`{u.matmul.op}` at {line_of(u.matmul)}"
                              + (f" through {', '.join(f'`{v}`' for v in u.via)}" if u.via else "") for u in uses),
            matmuls=[u.matmul.name for u in uses], source=node.input.name)
        yield Hit(node, violation, bytes=nbytes, backward_bytes=0)


def _plain(x: Dim) -> int | str:
    k = known(x)
    return k if k is not None else str(x)


def _tile(node: CanonNode) -> tuple[int, Dim, bool, str] | None:
    """(the replicated dim, how many times, interleaved?, the call as written) for a repeat of exactly one
    dim; None for anything else (several dims, a tensor of counts, a flattening repeat_interleave)."""
    src, out = node.input, node.tensor
    if src is None or src.tensor is None or out is None:
        return None
    shape, res = tuple(src.tensor.shape), tuple(out.shape)
    if len(shape) != len(res):
        return None
    if node.op == "repeat":
        factors = [_ratio(o, i) for o, i in zip(res, shape)]
        reps = [r for r in factors if r is not None]
        if len(reps) != len(factors):
            return None
        dims = [d for d, r in enumerate(reps) if not is_one(r)]
        if len(dims) != 1:
            return None
        name = "tile" if node.args.get("style") == "tile" else "repeat"
        text = ", ".join(str(r) for r in reps)
        return dims[0], reps[dims[0]], False, f".{name}({'(' + text + ')' if name == 'tile' else text})"
    dim, counts = node.args.get("dim"), node.args.get("repeats")
    if not isinstance(dim, int) or (isinstance(counts, CanonNode) and counts.tensor is not None):
        return None  # flattened, or per-entry counts from a tensor
    dim = dim % len(res)
    times = _ratio(res[dim], shape[dim])
    if times is None or is_one(times) or any(maybe_eq(a, b) is not True for d, (a, b) in enumerate(zip(shape, res))
                                             if d != dim):
        return None
    return dim, times, True, f".repeat_interleave({_plain(times)}, dim={node.args.get('dim')})"


@dataclass(frozen=True)
class _Use:
    matmul: CanonNode
    side: str  # "a" or "b": where the tile enters the matmul
    other: CanonNode  # the matmul's other operand
    operand: CanonNode  # the tile as the matmul reads it (after the steps in ``via``)
    dim: int  # the repeated dim in ``operand``
    via: tuple[str, ...]


#: steps a tile may pass through on its way to the matmul: views that keep the repeated dim whole,
#: and elementwise ops whose other operands are the same for every copy (``q * scale``)
_TILE_STEPS = ("reshape", "view", "permute")
_MAX_STEPS = 6


def _ratio(out: Dim, inp: Dim) -> Dim | None:
    """How many times ``inp`` goes into ``out`` exactly (a formula under dynamic shapes); None if not whole."""
    if is_one(inp):
        return out
    o, i = known(out), known(inp)
    if o is not None and i is not None:
        return o // i if i and o % i == 0 else None
    num, den = sympy.fraction(sympy.cancel(sympy.sympify(out) / sympy.sympify(inp)))
    return simplify(num) if den == 1 else None


def _matmul_uses(node: CanonNode, dim: int, via: tuple[str, ...]) -> list[_Use]:
    """Every batched matmul that reads ``node`` (whose dim ``dim`` is the tiled one), directly or through
    ``_TILE_STEPS`` and elementwise steps; empty when any path ends elsewhere (cat, conv, an in-place write, the
    graph's output)."""
    users = real_users(node)
    if not users or node.tensor is None:
        return []
    out: list[_Use] = []
    for u in users:
        if u.op in _BATCHED and not u.mutates:
            a, b = u.args.get("a"), u.args.get("b")
            if a is node and b is not node and isinstance(b, CanonNode) and b.tensor is not None:
                out.append(_Use(u, "a", b, node, dim, via))
                continue
            if b is node and a is not node and isinstance(a, CanonNode) and a.tensor is not None:
                out.append(_Use(u, "b", a, node, dim, via))
                continue
            return []  # the bias of a baddbmm, or both operands
        step = _step(u, node, dim) if len(via) < _MAX_STEPS else None
        if step is None:
            return []
        sub = _matmul_uses(u, step, (*via, u.op))
        if not sub:
            return []
        out.extend(sub)
    return out


def _step(u: CanonNode, node: CanonNode, dim: int) -> int | None:
    """Where the tiled dim is after ``u``; None when ``u`` merges or splits it, or mixes the copies with
    data that differs between them."""
    if u.tensor is None or node.tensor is None or u.mutates:
        return None
    shape, res = tuple(node.tensor.shape), tuple(u.tensor.shape)
    if u.op == "permute" and u.input is node:
        perm = u.args.get("dims")
        if not isinstance(perm, (list, tuple)) or dim not in perm:
            return None
        return list(perm).index(dim)
    if u.op in ("reshape", "view") and u.input is node:
        if len(res) <= dim or any(maybe_eq(shape[i], res[i]) is not True for i in range(dim + 1)):
            return None
        return dim
    if u.is_pointwise and len(res) == len(shape) and all(maybe_eq(a, b) is True for a, b in zip(shape, res)):
        for o in u.tensor_inputs:
            if o is node or o.tensor is None:
                continue
            if len(o.tensor.shape) > len(res) - dim:
                return None  # reaches the tiled dim: may differ between the copies
            if len(o.tensor.shape) == len(res) - dim and not is_one(o.tensor.shape[0]):
                return None
        return dim
    return None


def _same_batch(other: CanonNode, operand: CanonNode, dim: int) -> bool:
    """The tiled dim is a batch dim of the matmul, and the other operand has the tile's batch shape."""
    if other.tensor is None or operand.tensor is None:
        return False
    shape, out = tuple(other.tensor.shape), tuple(operand.tensor.shape)
    return (len(out) >= 3 and dim < len(out) - 2 and len(shape) == len(out)
            and all(maybe_eq(a, b) is True for a, b in zip(shape[:-2], out[:-2])))


def _fold(other: CanonNode, dim: int, times: Dim, size: Dim, interleave: bool,
          side: str) -> tuple[tuple[Dim, ...], bool]:
    """The other operand with the ``times`` slices that share a copy folded into its rows (``side`` "b":
    the tile is the right operand) or columns, and whether that is a view of its memory as it is."""
    assert other.tensor is not None
    shape, stride = list(other.tensor.shape), list(other.tensor.stride)
    n = len(shape)
    inner = n - 2 if side == "b" else n - 1  # the rows of a, or the columns of b
    batch = shape[:dim] + [size] + shape[dim + 1:n - 2]
    folded = list(batch) + list(shape[n - 2:])
    folded[inner - n + len(folded)] = times * shape[inner]
    # splitting dim into (times, size) for a tile, (size, times) for repeat_interleave: times' stride
    st = stride[dim]
    times_stride = st if interleave else size * st
    merge = (is_one(times) or is_one(shape[inner])
             or maybe_eq(times_stride, shape[inner] * stride[inner]) is True)
    return tuple(folded), merge

"""A reshape, a permute, then the pieces taken (`unbind`, `qkv[0]`...) in training: the backward copies the whole gradient back into the reshape's order; unbinding before the permute lets the stack write it in place.

## What it does
Finds `t.reshape(...)` (or `view`) whose result is permuted and then cut
into pieces along one dim, `unbind(d)` or one subscript per piece
(`qkv[0], qkv[1], qkv[2]`), with a gradient flowing back:

    qkv = self.qkv(x).reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4)
    q, k, v = qkv.unbind(0)

The forward is free (views). In the backward the pieces' gradients are
stacked (or summed) into one tensor in the *permuted* order, the permute's
backward hands that on as a transposed view, and the reshape's backward
has to merge dims that are no longer adjacent in memory: it copies the
whole gradient (`aten::reshape > aten::clone`, attributed to the reshape's
line). Reported when that reshape of the gradient cannot be a view
(ATen's view rule over the stacked gradient's strides).

Bytes are that copy, per training step (`bytes` is 0: the forward copies
nothing).

## Why is this bad?
Every attention layer written this way copies its whole q/k/v gradient
once more per step. Measured with the profiler (torch 2.13, CPU): the
spelling above runs `aten::stack` then `aten::reshape > aten::clone` of
the (B, N, 3, H, D) gradient; `q, k, v = self.qkv(x).reshape(B, N, 3, H,
D).unbind(2)` followed by `q.transpose(1, 2)` (the same views, the same
values) runs the `aten::stack` alone: the stack writes each piece's
gradient where the reshape expects it.

## Example
```python
qkv = self.qkv(x).reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4)
q, k, v = qkv.unbind(0)
```

## Use instead
```python
q, k, v = self.qkv(x).reshape(B, N, 3, H, D).unbind(2)
q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
```

## When it is intentional
In inference nothing is copied (no backward) and nothing is reported.
Silence a line with `# fxlint: ignore[FXL114]`.

`details` (the fields of `PermuteThenUnbind`): `dims` (the permutation),
`unbind_dim` (the dim the pieces are taken along, after the permute),
`source_dim` (the same dim before it), `piece_dims` (the permutation each
piece needs after unbinding `source_dim`), `copied` (backward bytes per
training step).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ..tensor.layout import contiguous_strides
from ..tensor.viewable import check_view
from ._util import real_users
from .fxl113_slices_instead_of_split import _grads, _piece


@dataclass(frozen=True)
class PermuteThenUnbind(Violation):
    """Pieces taken after a permute of a reshape: the backward copies the whole gradient back."""

    dims: tuple[int, ...]
    unbind_dim: int
    source_dim: int
    piece_dims: tuple[int, ...]
    copied: int | str | None

    def _piece_text(self) -> str:
        p = self.piece_dims
        moved = [i for i, d in enumerate(p) if d != i]
        if len(moved) == 2:
            return f".transpose({moved[0]}, {moved[1]})"
        return f".permute{p}" if p != tuple(range(len(p))) else ""

    def message(self) -> str:
        return (f"`.permute{self.dims}` of a reshape, then pieces taken along dim {self.unbind_dim}: in the backward the "
                f"pieces' gradients are put together in the permuted order and the reshape's backward copies them back "
                f"({bytes_text(self.copied)} per training step); taken along dim {self.source_dim} before the permute, "
                f"the stack writes them in place")

    def fix_title(self) -> str:
        each = self._piece_text()
        return (f"unbind before the permute: `.reshape(...).unbind({self.source_dim})`"
                + (f", then `{each}` on each piece" if each else ""))


def _unbind_dim(node: CanonNode) -> int | None:
    args = node.args.get("args") or []
    kwargs = node.args.get("kwargs") or {}
    d = kwargs.get("dim", args[1] if len(args) > 1 else 0)
    return d if isinstance(d, int) else None


def _cut_dim(perm: CanonNode) -> int | None:
    """The dim of ``perm``'s result its readers cut into pieces: one ``unbind``, or selects only."""
    users = real_users(perm)
    if not users or perm.tensor is None:
        return None
    ndim = perm.tensor.ndim
    dims = set()
    for u in users:
        if u.op == "unbind":
            d = _unbind_dim(u)
        elif u.op == "slice" and (p := _piece(u)) is not None and p[1] == "select":
            d = p[0]
        else:
            return None  # read otherwise too: the gradient's layout is not the stack's alone
        if d is None:
            return None
        dims.add(d % ndim)
    return dims.pop() if len(dims) == 1 else None


@rule("FXL114", "permute-then-unbind", "warning", violation=PermuteThenUnbind, supersedes=("FXL121",))
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for perm in view.ops("permute"):
        r = perm.input
        if r is None or r.op not in ("reshape", "view") or real_users(r) != [perm] or not _grads(perm):
            continue
        x = r.input
        if x is None or x.tensor is None or r.tensor is None or perm.tensor is None:
            continue
        u = _cut_dim(perm)
        dims = tuple(perm.args.get("dims") or ())
        if u is None or len(dims) != perm.tensor.ndim or dims == tuple(range(len(dims))):
            continue
        # the stacked gradient is contiguous in the permuted shape; seen through the inverse permute it is
        # the reshape's gradient: can reshaping it back to the input's shape be a view?
        g_perm = contiguous_strides(perm.tensor.shape)
        g_r = [0] * len(dims)
        for j, d in enumerate(dims):
            g_r[d] = g_perm[j]
        if check_view(r.tensor.shape, g_r, x.tensor.shape).viewable is not False:
            continue
        s = dims[u]
        rest = [d for d in dims if d != s]
        piece = tuple(d - (d > s) for d in rest)
        yield Hit(r, PermuteThenUnbind(dims=dims, unbind_dim=u, source_dim=s, piece_dims=piece,
                                       copied=bytes_value(r.tensor.nbytes)),
                  bytes=0, backward_bytes=r.tensor.nbytes)

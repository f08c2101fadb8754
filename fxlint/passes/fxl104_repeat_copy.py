"""`repeat`/`tile`/`expand(...).contiguous()` whose consumers broadcast anyway: a copy where `expand` is a free view.

## What it does
Finds a `.repeat(...)`, `.tile(...)` or `.expand(...).contiguous()` that only
replicates size-1 dims (or adds leading dims), and whose every consumer is an
elementwise op that broadcasts (`+`, `*`, `torch.where`, `masked_fill`...).
Such a copy materialises what broadcasting does for free:

* when the other operands already have the full size, drop the repeat
  (`x + bias` broadcasts a `(1, C)` bias by itself);
* otherwise use `.expand(...)`: a view with stride 0 on the replicated dims,
  no copy.

A repeat that tiles a dim of size > 1 (`[a, b] -> [a, b, a, b]`) is data, not
a broadcast, and is not reported; nor is one whose result is mutated in place,
returned, or read by a non-elementwise op.

Bytes are the repeated tensor's size. Backward pays nothing extra (measured:
`RepeatBackward` sums the gradient, no copy).

## Why is this bad?
`repeat` allocates the full output and copies the input into every slot
(`aten::repeat > aten::copy_`); `expand` returns a view of the same storage
with stride 0, and elementwise kernels read stride-0 operands directly. For a
per-token bias or mask repeated over batch and sequence, the copy can be
larger than the data it is combined with.

## Example
```python
bias = self.bias.repeat(B, T, 1)    # (1, 1, C) -> (B, T, C): a full copy
return x + bias
```

## Use instead
```python
return x + self.bias                # broadcasting does it
# or, where the shape itself is needed:
bias = self.bias.expand(B, T, -1)   # a view, no copy
```

## When it is intentional
When the result must own its memory (it is written in place later, or kept
while the source changes), `repeat` is right; this rule then does not fire
(in-place writes and escaping results are excluded). Silence a line with
`# fxlint: ignore[FXL104]`.

`details` keys (for a rewrite): `source` (node name of the un-replicated
tensor), `source_shape` (its shape left-padded with 1s), `expand_shape` (the
repeated shape; `source.expand(*expand_shape)` is the zero-copy equivalent),
`dims` (replicated dims), `broadcast_consumers` (node names of the
elementwise consumers), `drop` (True when every consumer gives the same result
on the source as is), `backward_bytes` (0).
"""

from __future__ import annotations

from typing import Iterator

from ..canon import GraphView
from ..registry import FixSpec, Hit, RuleContext, rule
from ..text import args_text, bytes_text, line_of, shape_text
from ._sites import numbered
from ._repeat import repeat_like


@rule("FXL104", "repeat-copy", "warning", fix=FixSpec.rewrite_of(
    "repeat-to-expand", safe=False,
    why="the result becomes an expanded view (stride 0 on the repeated dims): not contiguous, and an "
        "in-place write into it raises (the rewrite is not applied where the graph writes into it)"))
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    for node in view.nodes:
        if node.op not in ("repeat", "contiguous"):
            continue
        rep = repeat_like(node)
        if rep is None or node.tensor is None:
            continue
        nbytes = node.tensor.nbytes
        users = ", ".join(f"`{u.op}` at {line_of(u)}" for u in rep.consumers)
        expand = f".expand({args_text(rep.out_shape)})"
        src_shape = rep.source.tensor.shape if rep.source.tensor is not None else rep.source_shape
        who = "its consumers broadcast" if len(rep.consumers) > 1 else "the consumer broadcasts"
        if node.op == "contiguous":
            fix = (f"drop `.contiguous()` (the `.expand(...)` is a free view)" if not rep.drop else
                   f"drop `{rep.spelled}`: {who} the {shape_text(src_shape)} tensor by itself")
        elif rep.drop:
            fix = (f"drop `{rep.spelled}`: {who} the {shape_text(src_shape)} tensor by itself "
                   f"(or use `{expand}`, a zero-copy view, where the shape is needed)")
        else:
            fix = f"use `{expand}` instead of `{rep.spelled}`: a view with stride 0 on the replicated dims, no copy"
        dims = ", ".join(map(str, rep.dims))
        message = (f"`{rep.spelled}` copies {bytes_text(nbytes)} per call to replicate a {shape_text(src_shape)} "
                   f"tensor into {shape_text(rep.out_shape)} (dim{'s' if len(rep.dims) > 1 else ''} {dims}); "
                   f"its only consumers ({users}) broadcast size-1 dims anyway, and `{expand}` is a zero-copy view")
        yield Hit(
            node=node,
            message=message,
            fix=fix,
            bytes=nbytes,
            details={
                "source": rep.source.name,
                "source_shape": rep.source_shape,
                "expand_shape": rep.out_shape,
                "dims": rep.dims,
                "broadcast_consumers": [u.name for u in rep.consumers],
                "drop": rep.drop,
                "backward_bytes": 0,
            },
        )

"""Advanced indexing with a constant arithmetic progression: a gather copy where a slice is a free view.

## What it does
Finds advanced indexing whose indices are a compile-time constant, strictly
increasing arithmetic progression: `x[:, [0, 2, 4, 6]]`, `x[[3]]`,
`x[:, [i for i in range(0, n, 2)]]`, `x[torch.arange(2, 9)]`,
`x.index_select(1, torch.tensor([2, 3, 4, 5]))`. Negative indices are
wrapped first.

## Why is this bad?
A list or tensor index is *advanced* indexing: PyTorch runs a gather
(`aten::index` / `aten::index_select`) that allocates and fills a new tensor
on every call, and the backward scatters the gradient back with
`index_put`. A basic slice `x[:, 0:7:2]` selects the same elements as a
zero-copy view with different strides. In the speech-separation seed,
`output[:, [i for i in range(0, output.size(1), 2)]]` cost 30 MB and 17 ms
per inference.

## Example
```python
y = output[:, [i for i in range(0, output.size(1), 2)]]
```

## Use instead
```python
y = output[:, ::2]
```

## When it is intentional
The gather returns a new contiguous tensor, while the slice is a strided view
of the original storage. If the result is mutated in place, or must not keep
the larger tensor alive, or a later kernel needs contiguous memory, the copy
may be wanted; make it explicit (`output[:, ::2].clone()` or
`.contiguous()`) or silence the line with `# fxlint: ignore[FXL401]`.
"""

from __future__ import annotations

from typing import Iterator

from ..canon import GraphView
from ..registry import Hit, RuleContext, rule
from ..tensorinfo import human_bytes, known
from ._util import progression, slice_text


@rule("FXL401", "index-as-slice", "warning")
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops("index"):
        spec = node.args["index"]
        base = node.input
        out = node.tensor
        if base is None or base.tensor is None or out is None:
            continue
        adv = spec.advanced
        if len(adv) != 1 or adv[0].kind != "tensor":
            continue  # several advanced dims pair up element-wise; masks are FXL403
        item = adv[0]
        if item.index_shape is not None and len(item.index_shape) != 1:
            continue  # a 2-D index reshapes the result: not a slice
        values = item.values if item.values is not None else (
            view.const_ints(item.index) if item.index is not None else None
        )
        if values is None:
            continue
        size = known(base.tensor.shape[item.dim]) if item.dim is not None else None
        prog = progression(values, size)
        if prog is None:
            continue
        start, stop, step = prog
        pos = spec.items.index(item)
        sl = slice_text(start, stop, step, size)
        suggestion = spec.render({pos: sl})  # index_select(x, d, idx) becomes a subscript too
        nbytes = out.nbytes
        shown = _shown_index(item.spelled, values)
        message = (
            f"advanced index {shown} on dim {item.dim} gathers a copy "
            f"({human_bytes(known(nbytes)) if known(nbytes) is not None else str(nbytes) + ' B'} per call); "
            f"the indices step evenly, so the basic slice {suggestion} selects the same elements "
            "as a zero-copy view"
        )
        yield Hit(
            node=node,
            message=message,
            fix=f"index with {suggestion} instead of {shown}",
            bytes=nbytes,
            details={"slice": suggestion, "start": start, "stop": stop, "step": step, "dim": item.dim,
                     "dedup": suggestion},
        )


def _shown_index(spelled: str | None, values: tuple[int, ...]) -> str:
    if spelled and len(spelled) <= 40 and not spelled.startswith(("arange", "tensor", "_tensor", "lift")):
        if spelled.startswith("["):
            return spelled
    vals = list(values)
    if len(vals) > 6:
        return "[" + ", ".join(map(str, vals[:4])) + f", ..., {vals[-1]}]"
    return str(vals)

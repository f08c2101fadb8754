"""Advanced indexing with a constant arithmetic progression: a gather copy where a slice is a free view.

## What it does
Finds advanced indexing whose indices are a compile-time constant, strictly
increasing arithmetic progression: lists and tuples (`x[:, [0, 2, 4, 6]]`,
`x[[3]]`, `x[:, [i for i in range(0, n, 2)]]`), `range` objects, constant
index tensors (`x[torch.arange(2, 9)]`, `x[torch.tensor([1, 2, 3])]`), and
`index_select` with one (`torch.index_select(x, 1, torch.tensor([2, 3, 4, 5]))`).
Negative indices are wrapped first; steps above 1 are fine. Several indexed
dims are reported only when the result is still a basic slice
(`x[[1], [0, 2, 4]]` is `x[1, :5:2]`; `x[[0, 1], [2, 3]]` picks element
pairs and is a real gather). Under dynamic shapes,
`x[:, torch.arange(0, x.size(1), 3)]` is recognised as `x[:, ::3]`.
`fxlint fix` and `fxlint.rewrite` apply the slice (rewrite `index-to-slice`,
verified, only where no in-place write or returned alias can tell; when the
indexed tensor comes from elementwise ops used nowhere else, the slice is
taken before them so that they compute only the kept elements; inside
`torch.compile` with Inductor, an inference result that is returned keeps its
gather, which Inductor fuses into the op producing the indexed tensor).

## Why is this bad?
A list or tensor index is *advanced* indexing: PyTorch runs a gather
(`aten::index` / `aten::index_select`) that allocates and fills a new tensor
on every call, and the backward scatters the gradient back with
`index_put`. A basic slice `x[:, 0:7:2]` selects the same elements as a
zero-copy view with different strides. In the speech-separation seed,
`output[:, [i for i in range(0, output.size(1), 2)]]` cost 30 MB and 17 ms
per inference; on the scenario model here (`models/speech_separation.py`,
CPU) the runtime audit sees 8.2 MB copied per inference and 16.4 MB per
training step; with the slice, 0 B and 8.2 MB.

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
from ..indexing import basic_equivalent
from ..registry import Hit, RuleContext, rule
from ..text import bytes_text


@rule("FXL401", "index-as-slice", "warning")
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops("index"):
        out = node.tensor
        if out is None:
            continue
        basic = basic_equivalent(view, node)
        if basic is None:
            continue
        spec = basic.spec
        suggestion = basic.text  # index_select(x, d, idx) becomes a subscript too
        positions = sorted(basic.replace)
        shown = ", ".join(basic.shown(p) for p in positions)
        dims = [basic.replace[p].dim for p in positions]
        where = f"dim {dims[0]}" if len(dims) == 1 else "dims " + ", ".join(map(str, dims))
        what = "advanced index" if len(dims) == 1 else "advanced indices"
        nbytes = out.nbytes
        size = bytes_text(nbytes)
        message = (
            f"{what} {shown} on {where} gathers a copy ({size} per call); "
            f"the indices step evenly, so the basic slice {suggestion} selects the same elements "
            "as a zero-copy view"
        )
        details = {"slice": suggestion, "dims": dims, "dedup": suggestion}
        if len(positions) == 1:
            r = basic.replace[positions[0]]
            details.update(start=r.start, stop=r.stop, step=r.step, dim=r.dim)
        yield Hit(
            node=node,
            message=message,
            fix=f"index with {suggestion} instead of {shown}",
            bytes=nbytes,
            details=details,
        )

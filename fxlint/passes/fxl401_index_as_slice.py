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

from collections.abc import Iterator
from dataclasses import dataclass

from ..analysis.indexing import basic_equivalent
from ..canon import GraphView
from ..canon.text import bytes_text, bytes_value
from ..findings import Violation
from ..registry import FixSpec, Hit, RuleContext, rule


@dataclass(frozen=True)
class IndexAsSlice(Violation):
    """An evenly stepping advanced index that a basic slice selects exactly."""

    indices: str  # the index as written (shortened): "[0, 2, 4, 6, ..., 510]"
    dims: tuple[int, ...]  # the dims it indexes
    slice: str  # the basic slice that selects the same elements: "[:, ::2]"
    copied: int | str | None  # bytes the gather copies per call (a formula under dynamic shapes)
    start: int | None = None  # the progression, when one dim is indexed
    stop: int | None = None
    step: int | None = None
    dim: int | None = None

    def message(self) -> str:
        what = "advanced index" if len(self.dims) == 1 else "advanced indices"
        where = f"dim {self.dims[0]}" if len(self.dims) == 1 else "dims " + ", ".join(map(str, self.dims))
        return (f"{what} {self.indices} on {where} gathers a copy ({bytes_text(self.copied)} per call); "
                f"the indices step evenly, so the basic slice {self.slice} selects the same elements "
                "as a zero-copy view")

    def fix_title(self) -> str:
        return f"index with {self.slice} instead of {self.indices}"


@rule("FXL401", "index-as-slice", "warning", violation=IndexAsSlice, fix=FixSpec.rewrite_of(
    "index-to-slice", safe=False,
    why="the result becomes a strided view of the indexed tensor: it is not contiguous and keeps the "
        "whole tensor alive as long as it lives (unless the slice moves before elementwise producers, "
        "which then compute a fresh tensor of the kept elements)"))
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops("index"):
        out = node.tensor
        if out is None:
            continue
        basic = basic_equivalent(view, node)
        if basic is None:
            continue
        positions = sorted(basic.replace)
        progression: dict[str, int | None] = {}
        if len(positions) == 1:
            r = basic.replace[positions[0]]
            progression = {"start": r.start, "stop": r.stop, "step": r.step, "dim": r.dim}
        nbytes = out.nbytes
        violation = IndexAsSlice(
            indices=", ".join(basic.shown(p) for p in positions),
            dims=tuple(basic.replace[p].dim for p in positions),
            slice=basic.text,  # index_select(x, d, idx) becomes a subscript too
            copied=bytes_value(nbytes),
            **progression,
        )
        yield Hit(node, violation, bytes=nbytes, dedup=basic.text)

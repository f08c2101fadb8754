"""A gather from a parameter or buffer table with indices built from constants, recomputed every call in inference.

## What it does
Finds advanced indexing (`table[index]`, `aten::index`) and
`torch.gather(table, dim, index)` where `table` is a parameter or buffer (or
computed from them alone, e.g. interpolated to a size) and every index tensor
is computed only from constants, buffers, deterministic factories (`arange`;
never `randperm`) and the input's shape (nothing from the input's data, nor a
value written in place from it): the
relative-position lookups of window and pooling attention,
`table[self.relative_position_index.view(-1)]` (Swin) and
`rel_pos_h[dist_h.long()]` with `dist_h` built from `torch.arange` (MViT).
In inference (`eval()` or `torch.no_grad()`) the table does not change
between calls, so the gathered tensor is the same every call: it could be
computed once. Reported at info level only in inference (in training the
table is a parameter that changes every step, and the gather is needed).

Bytes are the gathered tensor's size (the `aten::index` output, every call).

## Why is this bad?
The gather reads the table through an index tensor and writes a new tensor
of the index's shape times the table's row, every call, to produce a value
that depends only on the weights (and on the input's spatial size, when the
index is built from it).

## Example
```python
bias = self.relative_position_bias_table[self.relative_position_index.view(-1)]
```

## Use instead
```python
# once, after loading weights (in eval), keyed on the size when the index depends on it:
self.register_buffer("relative_position_bias", table[index.view(-1)].detach(), persistent=False)
```
or `torch.compile` the model: Inductor fuses the gather into its consumer
(no separate copy, though it still recomputes the value every call, as
FXL405 measured for the values it reports).

## When it is intentional
Training, or a model whose weights change between calls (online
fine-tuning): keep the gather. Silence a line with
`# fxlint: ignore[FXL404]`.

Other copies of such fixed values (a `clone`, a mask built by subscript
writes) are FXL405's. A gather from a parameter table by a fixed graph whose
rows are summed into nodes (FXL406's message passing) is this rule's in
inference: computed once, the gather costs nothing per call, less than
FXL406's sparse matmul.

`details` (the fields of `ConstantGather`): `table` (the parameter or buffer
indexed), `indices` (the index tensors' nodes), `copied` (bytes per call).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import GraphView
from ..canon.text import bytes_text, bytes_value, operand_name
from ..findings import Severity, Violation
from ..registry import Hit, RuleContext, rule
from ._constant import Fixed
from ._sites import numbered


@dataclass(frozen=True)
class ConstantGather(Violation):
    """A gather whose result depends only on the weights and constants (inference)."""

    table: str
    indices: tuple[str, ...]
    copied: int | str | None

    def message(self) -> str:
        return (f"`{self.table}[...]` gathers {bytes_text(self.copied)} per call with indices that do not read "
                "the input's data (constants, buffers, factories, sizes): in inference the result is the same "
                "every call")

    def fix_title(self) -> str:
        return ("compute it once in eval (a non-persistent buffer set after loading weights, keyed on the size "
                "when the index depends on it), or let torch.compile fuse the gather into its consumer")


@rule("FXL404", "constant-gather", "info", violation=ConstantGather, supersedes=("FXL406",))
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    if ctx.training:
        return iter(())
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    table_fixed = Fixed(view, weights=True)  # a parameter table: checked in inference only (see check)
    index_fixed = Fixed(view, weights=False)
    for node in view.ops("index", "gather"):
        table = node.input
        if table is None or node.tensor is None or not table_fixed(table):
            continue  # the table comes from the input: nothing to cache
        if node.op == "gather":  # torch.gather(table, dim, index): the one other tensor operand
            indices = [i for i in node.inputs if i is not table and i.tensor is not None]
        else:
            spec = node.args.get("index")
            items = [it for it in getattr(spec, "advanced", ()) if it.kind == "tensor"]
            if any(it.index is None for it in items):
                continue
            indices = [it.index for it in items]
        if not indices or not all(index_fixed(i) for i in indices):
            continue
        violation = ConstantGather(table=operand_name(table), indices=tuple(operand_name(i) for i in indices),
                                   copied=bytes_value(node.tensor.nbytes))
        yield Hit(node, violation, bytes=node.tensor.nbytes, backward_bytes=0, severity=Severity.INFO)

"""A gather from a parameter or buffer table with indices built from constants, recomputed every call in inference.

## What it does
Finds advanced indexing (`table[index]`, `aten::index`) where `table` is a
parameter or buffer (or computed from them alone, e.g. interpolated to a
size) and every index tensor is computed only from constants,
buffers and `arange`-style factories (nothing from the model's inputs): the
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
or `torch.compile` the model: Inductor fuses the gather into its consumer.

## When it is intentional
Training, or a model whose weights change between calls (online
fine-tuning): keep the gather. Silence a line with
`# fxlint: ignore[FXL404]`.

`details` (the fields of `ConstantGather`): `table` (the parameter or buffer
indexed), `indices` (the index tensors' nodes), `copied` (bytes per call).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..findings import Severity, Violation
from ..registry import Hit, RuleContext, rule
from ..text import bytes_text, bytes_value, operand_name
from ._sites import numbered

_CONSTANT_KINDS = ("buffer", "constant")
_MAX_DEPTH = 32


@dataclass(frozen=True)
class ConstantGather(Violation):
    """A gather whose result depends only on the weights and constants (inference)."""

    table: str
    indices: tuple[str, ...]
    copied: int | str | None

    def message(self) -> str:
        return (f"`{self.table}[...]` gathers {bytes_text(self.copied)} per call with indices built only from "
                "constants and buffers: in inference the result is the same every call")

    def fix_title(self) -> str:
        return ("compute it once in eval (a non-persistent buffer set after loading weights, keyed on the size "
                "when the index depends on it), or let torch.compile fuse the gather")


@rule("FXL404", "constant-gather", "info", violation=ConstantGather)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    if ctx.training:
        return iter(())
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    for node in view.ops("index"):
        table = node.input
        if table is None or node.tensor is None or not _fixed(table, 0, weights=True):
            continue  # the table comes from the input: nothing to cache
        spec = node.args.get("index")
        items = [it for it in getattr(spec, "advanced", ()) if it.kind == "tensor"]
        if not items or any(it.index is None for it in items):
            continue
        if not all(_fixed(it.index, 0, weights=False) for it in items):
            continue
        violation = ConstantGather(table=operand_name(table), indices=tuple(operand_name(it.index) for it in items),
                                   copied=bytes_value(node.tensor.nbytes))
        yield Hit(node, violation, bytes=node.tensor.nbytes, backward_bytes=0, severity=Severity.INFO)


def _fixed(n: CanonNode, depth: int, *, weights: bool) -> bool:
    """True when ``n`` is computed only from buffers, constants and factories (``arange``), and, with
    ``weights``, parameters: nothing from the model's inputs (a table interpolated from a parameter,
    MViT's ``_interpolate(rel_pos_h, d)``, is as fixed as the parameter in inference)."""
    if depth > _MAX_DEPTH:
        return False
    if n.kind in _CONSTANT_KINDS or (weights and n.kind == "parameter"):
        return True
    if n.kind != "op":
        return False
    tensors = [i for i in n.inputs if i.tensor is not None]
    if not tensors:
        return n.op == "factory"  # arange, zeros, ...: values fixed by their arguments
    return all(_fixed(i, depth + 1, weights=weights) for i in tensors)

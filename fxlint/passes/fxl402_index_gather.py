"""A one-dimensional index tensor on a leading dim: ``index_select`` does the same gather faster on CPU.

## What it does
Finds advanced indexing with a single 1-D integer index tensor whose values
are not a constant progression (those are FXL401, a free slice), on a dim
that is not the last dim of the indexed tensor: ``x[idx]`` and
``x[:, idx]`` on a tensor of rank 2 or more. When a gradient flows back
through the gather, only dims after the first are reported (see the
measurements). Severity info: the speed-up is measured on CPU only, and
depends on shapes.

## Why is this bad?
``x[:, idx]`` goes through ``aten::index``, the general advanced-indexing
kernel (TensorIterator over every output element, any number of index
tensors, broadcasting). ``x.index_select(1, idx)`` is the dedicated
one-index gather and copies whole rows. Measured on this project's CPUs
(torch 2.13, 1 thread, ``torch.utils.benchmark`` medians, the spellings
interleaved over 5 rounds in one run; the index/index_select time ratio, > 1
means index_select is faster):

| case (shape, dim, index length) | forward | forward + backward |
| --- | --- | --- |
| rows of (50000, 256), dim 0, 4096 | 2.48 | 1.19 |
| rows of (1000, 64), dim 0, 512 | 4.64 | 1.51 |
| rows of (65536, 8), dim 0, 16384 | 4.18 | 1.26 |
| columns of (256, 8192), dim 1, 4096 | 3.13 | 2.92 |
| time steps of (32, 1024, 128), dim 1, 512 | 2.17 | 2.17 |
| time steps of (64, 4096, 4), dim 1, 2048 | 2.95 | 1.53 |
| channels of (32, 1024, 128), dim 2 (last), 64 | 0.13 | 0.42 |
| last dim of (4096, 512), dim 1 (last), 256 | 3.07 | 2.81 |

Forward, index_select was faster on every leading dim (2.2-4.6x). With the
backward (``index_put_`` with accumulate vs ``index_add_``) it stayed faster
on dims after the first (1.5-2.9x); on dim 0 the gain was small here
(1.2-1.5x) and two earlier, sequentially timed runs measured 0.57 and 0.90 on
the small table, so dim 0 is reported only when no gradient flows. On the
last dim the result depends on the shape (8x slower on the 3-D case), so the
rule stays silent there. Repeat with ``python bench/fxl402_index_gather.py``
and ``python bench/fxl402_index_gather.py --backward``. Both spellings copy
the same bytes: this is about time, not memory. GPU timings were not
measured. So `--confirm` confirms it by the gather running on its line, also
where the gather is one every program pays (rows picked by the model's own
scores, top-k pooling: the audit's `selection` class).

## Example
```python
frames = x[:, keep]          # keep: a LongTensor of frame indices
```

## Use instead
```python
frames = x.index_select(1, keep)
```

## When it is intentional
``x[idx]`` accepts negative indices (it wraps them); ``index_select`` raises
on them. If ``idx`` may hold negative values, keep the subscript, or wrap
them first. Silence with ``# fxlint: ignore[FXL402]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..analysis.indexing import basic_equivalent
from ..canon import GraphView
from ..canon.text import operand_name, written_subscript
from ..findings import Violation
from ..registry import Hit, RuleContext, rule


@dataclass(frozen=True)
class IndexGather(Violation):
    """A one-index gather on a leading dim written as a subscript: ``index_select`` does it faster."""

    tensor: str  # the indexed tensor, in the user's names
    subscript: str  # the subscript as written, with the index by name: "[:, keep]"
    index: str  # the index tensor, in the user's names
    dim: int  # the dim it gathers along
    backward: bool  # a gradient flows back through the gather (the forward+backward measurements apply)

    claims_avoidable = False  # the same bytes, faster: any gather on the line confirms it

    @property
    def suggestion(self) -> str:
        return f"{self.tensor}.index_select({self.dim}, {self.index})"

    def message(self) -> str:
        return (f"{self.tensor}{self.subscript} gathers along dim {self.dim} with the general advanced-indexing "
                f"kernel (aten::index); {self.suggestion} is the dedicated one-index gather, measured "
                + ("1.5-2.9x faster forward+backward" if self.backward else "2.2-4.6x faster forward")
                + " on CPU for this kind of dim (same bytes copied)")

    def fix_title(self) -> str:
        return f"use {self.suggestion} (the indices must be non-negative)"


@rule("FXL402", "index-gather", "info", violation=IndexGather)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops("index"):
        spec = node.args["index"]
        base = node.input
        if spec.style == "index_select" or base is None or base.tensor is None or base.tensor.ndim < 2:
            continue
        adv = spec.advanced
        if len(adv) != 1 or adv[0].kind != "tensor" or adv[0].dim is None:
            continue
        item = adv[0]
        if item.index_shape is None or len(item.index_shape) != 1 or item.dim == base.tensor.ndim - 1:
            continue
        if item.index is not None and item.index.tensor is not None and item.index.tensor.dtype.is_floating_point:
            continue
        grads = base.tensor.requires_grad and node.grad_enabled
        if grads and item.dim == 0:
            continue  # with the backward, dim 0 measured mixed (0.57-1.51x): no claim
        if any(it.kind in ("int", "newaxis") for it in spec.items):
            continue  # not a plain one-dim gather: index_select alone would not give the same shape
        if basic_equivalent(view, node) is not None:
            continue  # a constant progression: FXL401 (a free slice) says it better
        tensor = operand_name(base)
        idx = operand_name(item.index) if item.index is not None else (item.spelled or "idx")
        found = written_subscript(node, tensor)  # the user's spelling of the index (`perm // k`)
        pos = spec.items.index(item)  # the canonical spec pads the dims the subscript leaves out
        if found is not None and pos < len(found[1]) <= len(spec.items) and "..." not in found[1]:
            tensor, idx = found[0], found[1][pos]  # `self.table`, as the line spells the parameter
        violation = IndexGather(
            tensor=tensor,
            subscript=spec.render({spec.items.index(item): idx}),
            index=idx,
            dim=item.dim,
            backward=bool(grads),
        )
        yield Hit(node, violation, dedup=violation.suggestion)

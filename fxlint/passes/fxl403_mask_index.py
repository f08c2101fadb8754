"""Boolean-mask indexing: a result whose size depends on the data, a host sync, and a graph break.

## What it does
Finds reads through a boolean mask, ``x[mask]`` and ``x.masked_select(mask)``:
in the graph (``torch.export``, ``symbolic_trace``, or Dynamo with
``capture_dynamic_output_shape_ops``), and where Dynamo breaks the graph on
them, which is what ``torch.compile`` does by default (the finding then
comes from the graph-break reason, ``aten.nonzero`` or
``aten.masked_select``, at your line). Explicit ``nonzero()``,
``argwhere`` or one-argument ``torch.where`` calls are not reported here.

## Why is this bad?
The number of elements selected is only known once the mask has been
computed, so the result's shape depends on the data. PyTorch runs
``nonzero`` to count them (on a GPU the host waits for the device: a sync),
then gathers the selected elements into a new tensor (``aten::index``), and
the backward scatters the gradient back. ``torch.compile`` cannot put a
data-dependent shape in a static graph: by default Dynamo breaks the graph
there, so the code before and after compiles separately and nothing fuses
across the line.

## Example
```python
total = x[mask].sum()
y = x[mask] * 2
```

## Use instead
Keep the shape static and let the mask pick values:
```python
total = torch.where(mask, x, 0).sum()
y = x.masked_fill(~mask, 0) * 2   # or torch.where(mask, x * 2, 0)
```
For a mean, divide by ``mask.sum()``.

## When it is intentional
When the compacted values themselves are needed (their count varies, and
later code depends on it), the sync is the price: do it once, outside the
hot loop, and silence the line with ``# fxlint: ignore[FXL403]``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from ..canon import GraphView
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ..util.source import parse_line

_BREAK_OP = re.compile(r"aten\.(nonzero|masked_select|index)\b")
#: calls whose data-dependent shape is explicit (not mask indexing)
_EXPLICIT = {"nonzero", "argwhere", "unique", "unique_consecutive", "where", "nonzero_static"}


@dataclass(frozen=True)
class MaskIndex(Violation):
    """A read through a boolean mask: a data-dependent shape, in the graph or where Dynamo broke it."""

    source: Literal["graph", "graph break"]  # where fxlint saw it: a graph node, or Dynamo's break reason
    op: str  # in the graph: masked_select or index; at a break: the op Dynamo named, e.g. aten.nonzero
    only_summed: bool = False  # in the graph: the result is only summed (torch.where(...).sum() is the same)

    def message(self) -> str:
        if self.source == "graph break":
            return (f"boolean-mask indexing breaks the graph here: {self.op} has a data-dependent "
                    "output shape, so Dynamo compiles the code before and after this line as separate "
                    "graphs; on GPU it is also a host sync")
        spelled = "masked_select" if self.op == "masked_select" else "a boolean-mask index"
        then = ("; it is only summed, so torch.where(mask, x, 0).sum() gives the same value with a static shape"
                if self.only_summed else "")
        return (f"{spelled} has a data-dependent shape: nonzero counts the selected elements "
                "(a host sync on GPU), a gather copies them, and torch.compile breaks the graph "
                f"here unless dynamic output shapes are enabled{then}")

    def fix_title(self) -> str:
        return ("keep the shape static: torch.where(mask, x, 0) (then reduce) or x.masked_fill(~mask, 0) "
                "instead of x[mask]")


@rule("FXL403", "mask-index", "warning", violation=MaskIndex)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.nodes:
        masked = node.op == "masked_select" or (
            node.op == "index" and any(it.kind == "mask" for it in node.args["index"].items)
        )
        if not masked:
            continue
        users = [u for u in node.users if u.tensor is not None]  # export adds size asserts; not users of data
        yield Hit(node, MaskIndex("graph", node.op, only_summed=len(users) == 1 and users[0].op == "sum"))
    brk = view.graph_break
    if brk is not None and brk.location is not None:
        m = _BREAK_OP.search(brk.reason)
        if m and _is_mask_read(brk.location.code, m.group(1)):
            yield Hit(None, MaskIndex("graph break", m.group(0)), location=brk.location)


def _is_mask_read(code: str | None, op: str) -> bool:
    """Does the user's line read through a mask (a subscript, masked_select), rather than call
    nonzero/argwhere/unique itself? Unknown source counts as a mask read only for masked_select."""
    if op == "masked_select":
        return True
    line = parse_line(code)
    if line is None:
        return False
    tree = line.tree
    calls = {
        (n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", ""))
        for n in ast.walk(tree) if isinstance(n, ast.Call)
    }
    if calls & _EXPLICIT:
        return False
    return any(isinstance(n, ast.Subscript) for n in ast.walk(tree))

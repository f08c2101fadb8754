"""`torch.tensor([t1, t2, ...])` on tensors: a round trip through Python numbers that copies the values and cuts the gradient; `torch.stack` keeps the graph.

## What it does
Finds `torch.tensor(...)` (and `torch.as_tensor(...)`) whose list holds
tensors. PyTorch reads each element back as a Python number (one
`aten::item` per element, which waits for the device on a GPU), then builds a
new tensor from those numbers: the bytes of the new tensor are written per
call, and the result has no autograd history.

Severity from the effect when the model trains: **error** when trainable
parameters reach the output only through this value (they never train),
**warning** with the fraction of their gradient paths cut when they still
learn elsewhere. When no trainable parameter's gradient is at stake (an
`eval()` model, values computed from inputs only), it is an **info**: the
copy and the host syncs remain.

## Why is this bad?
A loss or a feature assembled with `torch.tensor([a, b])` silently stops the
gradient: the parameters behind `a` and `b` do not learn from it, and PyTorch
only warns once ("To copy construct from a tensor..."), if at all under
`torch.compile`. On a GPU every element also costs a device-to-host sync.

## Example
```python
losses = torch.tensor([loss_a, loss_b])      # no gradient reaches the heads
return losses.sum()
```

## Use instead
```python
losses = torch.stack([loss_a, loss_b])       # same values, graph kept, no host round trip
return losses.sum()
```

## When it is intentional
Building a constant from values you mean to freeze: write
`torch.stack([...]).detach()` (it says so, and stays on the device), or
silence the line with `# fxlint: ignore[FXL109]`.

The fraction of paths cut is counted as in FXL301 (`fxlint explain FXL301`).
`details` (the fields of `TensorFromTensors`): those of FXL301's (`cut_parameters`,
`lost_parameters`, `fraction_cut`, ...; empty lists when no trainable
parameter is at stake), `elements` (host reads per call) and `copied` (bytes
written per call).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from ..analysis.gradflow import analyse, cut_kind, tensor_operands
from ..canon import CanonNode
from ..canon.text import bytes_text, bytes_value
from ..capture.program import Program
from ..findings import Severity
from ..registry import Hit, RuleContext, rule
from ..tensor.info import Dim
from ._gradient import CutText, GradientCut, cut_hit, quote


@dataclass(frozen=True)
class TensorFromTensors(GradientCut):
    """`torch.tensor([...])` of tensors: a copy through Python numbers, and a gradient cut when trainable
    parameters are behind the values (``cut_parameters`` empty: none is, and the finding is about the copy)."""

    TEXT: ClassVar[CutText] = CutText(
        code="FXL109",
        name="`torch.tensor([...])`",
        what="`torch.tensor` of tensors reads every element back as a Python number and builds a new tensor "
             "without autograd history",
        intent="`torch.stack` keeps the graph.",
        fix="use `torch.stack([...])` (or `torch.cat`) instead of `torch.tensor([...])`",
    )

    elements: int = 0  # the tensors read back, one host read (`aten::item`) each
    copied: int | str | None = None  # bytes of the new tensor written per call (a formula under dynamic shapes)

    def cost(self) -> str:
        n = self.elements
        size = bytes_text(self.copied) if isinstance(self.copied, int) else "a new tensor"
        return (f"Per call: {n} host read{'s' if n != 1 else ''} (`aten::item`, a device sync each on a GPU) "
                f"and {size} written.")

    def message(self) -> str:
        if self.cut_parameters:
            return super().message()
        return (f"{self.statement}: {self.headline()}. {self.cost()} No trainable parameter's gradient is at "
                "stake here, but `torch.stack` does the same without leaving the device.")


@rule("FXL109", "tensor-from-tensors", "warning", scope="program", violation=TensorFromTensors)
def check(program: Program, ctx: RuleContext) -> Iterator[Hit]:
    flow = analyse(program) if ctx.training else None
    reported: set[str] = set()
    if flow is not None:
        for site in flow.sites("tensor_from_tensors"):
            node = site.first.node
            hit = cut_hit(flow, site, TensorFromTensors, elements=_elements(node), copied=bytes_value(_nbytes(node)))
            if hit is not None:
                hit.bytes = _nbytes(node)
                reported.update(c.node.name for c in site.cuts)
                yield hit
    for view in program.views:
        for node in view.ops("factory"):
            if node.name in reported or cut_kind(node) != "tensor_from_tensors":
                continue
            violation = TensorFromTensors(
                kind="tensor_from_tensors",
                statement=quote(node.source, TensorFromTensors.TEXT.name),
                line=node.location.line if node.location is not None else None,
                cut_parameters=[],
                lost_parameters=[],
                fraction_cut={},
                cut_by={},
                cut_nodes=[],
                elements=_elements(node),
                copied=bytes_value(_nbytes(node)),
            )
            yield Hit(node, violation, bytes=_nbytes(node), severity=Severity.INFO)


def _elements(node: CanonNode) -> int:
    return len(tensor_operands(node))


def _nbytes(node: CanonNode) -> Dim | None:
    t = node.tensor
    return t.nbytes if t is not None else None

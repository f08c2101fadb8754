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
"""

from __future__ import annotations

from typing import Iterator

from ..findings import Severity
from ..gradflow import analyse, cut_kind, tensor_operands
from ..program import Program
from ..registry import Hit, RuleContext, rule
from ..tensorinfo import known
from ..text import bytes_text
from ._gradient import CutText, quote, site_hit

TEXT = CutText(
    code="FXL109",
    name="`torch.tensor([...])`",
    what="`torch.tensor` of tensors reads every element back as a Python number and builds a new tensor "
         "without autograd history",
    intent="`torch.stack` keeps the graph.",
    fix="use `torch.stack([...])` (or `torch.cat`) instead of `torch.tensor([...])`",
)


@rule("FXL109", "tensor-from-tensors", "warning", scope="program")
def check(program: Program, ctx: RuleContext) -> Iterator[Hit]:
    flow = analyse(program) if ctx.training else None
    reported: set[str] = set()
    if flow is not None:
        for site in flow.sites("tensor_from_tensors"):
            hit = site_hit(flow, site, TEXT, extra=_cost(site.first.node) + " ")
            if hit is not None:
                hit.bytes = _nbytes(site.first.node)
                reported.update(c.node.name for c in site.cuts)
                yield hit
    for view in program.views:
        for node in view.ops("factory"):
            if node.name in reported or cut_kind(node) != "tensor_from_tensors":
                continue
            nbytes = _nbytes(node)
            yield Hit(
                node=node,
                message=(f"{quote(node.source, TEXT.name)}: {TEXT.what}. {_cost(node)} "
                         "No trainable parameter's gradient is at stake here, but `torch.stack` "
                         "does the same without leaving the device."),
                fix=TEXT.fix,
                bytes=nbytes,
                severity=Severity.INFO,
                details={"kind": "tensor_from_tensors", "elements": _elements(node)},
            )


def _elements(node) -> int:
    return len(tensor_operands(node))


def _nbytes(node):
    t = node.tensor
    return t.nbytes if t is not None else None


def _cost(node) -> str:
    n = _elements(node)
    nbytes = _nbytes(node)
    size = bytes_text(nbytes) if nbytes is not None and known(nbytes) is not None else "a new tensor"
    return (f"Per call: {n} host read{'s' if n != 1 else ''} (`aten::item`, a device sync each on a GPU) "
            f"and {size} written.")

"""`x.pow(2)` (or `x ** 2`, `torch.square(x)`) in training: its backward copies `x` (`x.pow(1)`); `x * x` has the same values and gradient without the copy.

## What it does
Finds `x.pow(2)`, `x ** 2`, `torch.pow(x, 2)` and `torch.square(x)` (an
exponent of 2, integer or float) where a gradient flows back through `x`.
RMSNorm's `variance = hidden_states.pow(2).mean(-1, keepdim=True)` is the
usual spelling; `F.rms_norm` and `nn.RMSNorm` (float32 or float64 input)
compute the same `pow(2)` inside ATen and copy the same way (measured: one
copy of the input in the backward, none for the norm written out with
`x * x`, at the same time per step).

Bytes are what the backward copies per training step: the size of `x`.
The forward copies nothing.

## Why is this bad?
ATen differentiates `pow(x, e)` as `grad * e * x.pow(e - 1)`, and its
`pow` returns a copy of the base when the exponent is 1 (`copy_`, before
any arithmetic): with `e = 2` every training step copies `x` once more in
the backward (`PowBackward0 > aten::pow > aten::copy_`, measured with the
profiler, torch 2.13, CPU). `torch.square` is `pow(x, 2)` and does the
same. `x * x` computes the same values (ATen's `pow` with exponent 2 is
that product) and its backward, `grad * x + grad * x`, the same gradient
to the bit, without the copy.

## Example
```python
variance = hidden_states.pow(2).mean(-1, keepdim=True)
```

## Use instead
```python
variance = (hidden_states * hidden_states).mean(-1, keepdim=True)
```

## When it is intentional
In inference (no gradient through `x`) nothing is copied and nothing is
reported. Silence a line with `# fxlint: ignore[FXL120]`.

A square whose gradient never reaches the output (a loss term read with
`.item()`) runs no backward and is not reported.

`details` (the fields of `SquareBackwardCopy`): `call` (the spelling, e.g.
`.pow(2)`), `operand` (the squared tensor, in the user's names; empty when
the line gives it none), `copied` (backward bytes per training step).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..analysis.gradflow import cut_kind
from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, from_before_break, operand_name, user_name
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._backward import grad_flows
from .fxl304_host_sync import _synced_output


@dataclass(frozen=True)
class SquareBackwardCopy(Violation):
    """A square by ``pow`` whose backward copies its base."""

    call: str
    operand: str
    copied: int | str | None

    def message(self) -> str:
        if self.call == "rms_norm":
            return (f"the backward of `rms_norm` copies its input ({bytes_text(self.copied)} per training step): ATen "
                    "computes it with `x.pow(2)`, whose gradient computes `x.pow(1)`, which is a copy")
        if self.operand:
            return (f"the backward of `{self.call}` on `{self.operand}` copies `{self.operand}` "
                    f"({bytes_text(self.copied)} per training step): pow's gradient computes `{self.operand}.pow(1)`, "
                    "which is a copy")
        return (f"the backward of `{self.call}` copies the squared tensor ({bytes_text(self.copied)} per training "
                "step): pow's gradient computes its `.pow(1)`, which is a copy")

    def fix_title(self) -> str:
        if self.call == "rms_norm":
            return ("write the norm out with a product, `x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * "
                    "weight`: the same values, no copy in backward (the same time in eager, measured on a CPU)")
        x = self.operand or "x"
        return f"write `{x} * {x}` (the same values and gradient, no copy in backward)"

    def audit_calls(self) -> frozenset[str]:
        """The calls the forward "no copy" claim is about (another copy on the line is not this one's)."""
        return _SPELLINGS


#: the torch functions a square by pow is called as (``CopyEvent.func``)
_SPELLINGS = frozenset({"pow", "__pow__", "square", "rms_norm"})


def _exponent(node: CanonNode) -> object:
    args = node.args.get("args") or []
    kwargs = node.args.get("kwargs") or {}
    return kwargs.get("exponent", args[1] if len(args) > 1 else None)


def _call(node: CanonNode) -> str | None:
    """How the square was spelled, or None when ``node`` is not one."""
    if node.op == "rms_norm":  # F.rms_norm / nn.RMSNorm: ATen's composite squares by pow; not its fused kernel
        t = node.input.tensor if node.input is not None else None
        fused = "_fused" in node.spelling
        return "rms_norm" if not fused and t is not None and t.dtype in (torch.float32, torch.float64) else None
    if node.op == "square":
        return "torch.square"
    e = _exponent(node)
    if node.op != "pow" or isinstance(e, bool) or not isinstance(e, (int, float)) or e != 2:
        return None
    if node.spelling == "operator.pow":
        return f"** {e}"
    return f"torch.pow(..., {e})" if node.spelling.startswith("torch.") else f".pow({e})"


@rule("FXL120", "square-backward-copy", "warning", violation=SquareBackwardCopy)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    synced = _synced(view)
    for node in view.ops("pow", "square", "rms_norm"):
        call = _call(node)
        x = node.input
        if call is None or x is None or x.tensor is None or not x.tensor.dtype.is_floating_point:
            continue
        if not grad_flows(node, x) or not _reaches_output(node, synced):
            continue  # no gradient, or none reaches the output (`aux_loss.item()` at the graph's end)
        copied = x.tensor.nbytes
        yield Hit(node, SquareBackwardCopy(call=call, operand=_name(x), copied=bytes_value(copied)),
                  bytes=0, backward_bytes=copied)


def _synced(view: GraphView) -> CanonNode | None:
    """The output the graph break after this graph reads on the host (``aux_loss.item()``): no gradient comes
    back through it."""
    b = view.graph_break
    if b is None or not re.search(r"Tensor\.(item|tolist|numpy)\(\)", getattr(b, "reason", "") or ""):
        return None
    return _synced_output(view, b)


def _reaches_output(node: CanonNode, synced: CanonNode | None) -> bool:
    """A gradient path leads from ``node`` to what the graph returns, other than through ``synced``."""
    seen, todo = {id(node)}, [node]
    while todo:
        n = todo.pop()
        if n is synced:
            continue
        for u in n.users:
            if u.kind == "output":
                return True
            if id(u) in seen or cut_kind(u) is not None or (u.tensor is not None and not u.tensor.requires_grad):
                continue
            seen.add(id(u))
            todo.append(u)
    return False


def _name(x: CanonNode) -> str:
    """The user's name for the squared tensor, or "" when the line has none for it (`self.aux(h).pow(2)`)."""
    if x.kind == "op" and x.param_name is None:
        return user_name(x) or ""
    if from_before_break(x):
        return ""  # a value computed before a graph break (`(pred - target)[mask].pow(2)`): no name here
    return operand_name(x)

"""An in-place activation in training whose backward needs its input (`nn.SiLU(inplace=True)`, `Hardswish`, `ReLU6`, `Mish`...): autograd clones the input first, so the in-place op copies the whole tensor and saves nothing.

## What it does
Finds `F.silu(x, inplace=True)`, `F.hardswish`, `F.hardtanh` (and
`relu6`, which Dynamo records as one), `F.mish`, `F.hardsigmoid` and
`F.threshold` with `inplace=True` (the modules `nn.SiLU(inplace=True)`,
`nn.Hardswish(inplace=True)`, `nn.ReLU6(inplace=True)`... are these
calls), and their `x.op_()` spellings, when a gradient flows through `x`.

Bytes are the input's size, per call: the clone autograd makes of it.

## Why is this bad?
The derivative of these activations is computed from their *input*. An
in-place call overwrites the input, so autograd first saves a copy of it
(`aten::silu_ > aten::clone`). Measured with the profiler (torch 2.13,
CPU, input requiring grad): `silu_`, `hardswish_`, `hardtanh_` (`relu6`),
`mish_`, `hardsigmoid_` and `threshold_` clone their input; `relu_`,
`leaky_relu_`, `elu_`, `selu_`, `celu_`, `sigmoid_`, `tanh_` and in-place
dropout do not (their backward reads the output, or a mask), and are not
reported. The in-place spelling then costs a full copy and keeps as much
memory alive as the out-of-place one (the clone instead of the output),
so in training it is strictly slower. Under `no_grad` (inference) nothing
is cloned and the in-place call does save memory: not reported there.

## Example
```python
self.act = nn.SiLU(inplace=True)
```

## Use instead
```python
self.act = nn.SiLU()       # in training; keep inplace=True for an inference-only model
```

## When it is intentional
A model used for inference under `torch.no_grad()` is not reported. A
model that trains only a few layers while the activations run without
gradient is not either. Silence a line with `# fxlint: ignore[FXL115]`.

`details` (the fields of `InplaceActivationClone`): `activation` (e.g.
`silu`), `copied` (bytes per call).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value
from ..findings import Violation
from ..registry import Hit, RuleContext, rule

#: activation -> the position of ``inplace`` in its functional signature (profiled: these clone their input
#: in training when called in place; relu_, leaky_relu_, elu_, selu_, celu_, sigmoid_, tanh_ do not)
_INPLACE_ARG = {"silu": 1, "hardswish": 1, "hardtanh": 3, "relu6": 1, "mish": 1, "hardsigmoid": 1, "threshold": 3}


@dataclass(frozen=True)
class InplaceActivationClone(Violation):
    """An in-place activation autograd has to clone the input of."""

    activation: str
    copied: int | str | None

    def message(self) -> str:
        return (f"in-place `{self.activation}` in training: its backward needs the input, so autograd clones it "
                f"before the call ({bytes_text(self.copied)} per call), and the in-place spelling saves nothing")

    def fix_title(self) -> str:
        return f"use the out-of-place `{self.activation}` (`inplace=False`) in training"


def _in_place(node: CanonNode) -> str | None:
    """The activation ``node`` runs in place, or None."""
    if node.op.endswith("_") and node.op[:-1] in _INPLACE_ARG:
        return node.op[:-1]
    at = _INPLACE_ARG.get(node.op)
    if at is None:
        return None
    args = node.args.get("args") or []
    kwargs = node.args.get("kwargs") or {}
    flag = kwargs.get("inplace", args[at] if len(args) > at else False)
    return node.op if flag is True else None


@rule("FXL115", "inplace-activation-clone", "warning", violation=InplaceActivationClone)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.nodes:
        if node.kind != "op":
            continue
        act = _in_place(node)
        x = node.input
        if act is None or x is None or x.tensor is None or not node.grad_enabled or not x.tensor.requires_grad:
            continue
        yield Hit(node, InplaceActivationClone(activation="relu6" if act == "hardtanh" and _is_relu6(node) else act,
                                               copied=bytes_value(x.tensor.nbytes)),
                  bytes=x.tensor.nbytes, backward_bytes=0)


def _is_relu6(node: CanonNode) -> bool:
    args = node.args.get("args") or []
    return len(args) >= 3 and args[1] == 0.0 and args[2] == 6.0

"""A convolution input that is neither contiguous nor channels_last-compatible: the conv copies it on every call.

## What it does
Predicts, from the input's and the weight's strides, what the convolution
kernel converts before computing (see `fxlint.kernels`, checked against the
runtime), and reports:

* **the input** (warning) when it is neither contiguous nor in the
  channels_last layout the backend takes (`clips.permute(0, 2, 1, 3, 4)`
  straight into `Conv3d`, `x.transpose(2, 3)`, a step slice). The copy is
  paid again in backward, because autograd saves the original input. 1-d
  convs copy *any* non-contiguous input (ATen makes it contiguous before
  viewing it as 2-d).
* **the weight** (info) when a channels_last input makes the conv convert a
  contiguous weight to channels_last on every call (and again in backward).
* **the input** (info) when a channels_last *weight* (a model converted with
  `model.to(memory_format=torch.channels_last)`) makes the conv convert a
  contiguous input: expected once at the model's entry.
* **the output** (info) when oneDNN computes in its own layout and copies
  the result back. That is oneDNN's choice for this CPU, not ATen's: fxlint
  measures it by running the conv once on random tensors of the same
  geometry (`fxlint lint` does by default; `--no-probe` turns it off, and
  the part is then reported as unknown in `details["unknown"]`), and says
  "measured on this machine".

## Why is this bad?
The copy is a full read and write of the activation, hidden inside the
conv, and autograd keeps the non-contiguous input alive for backward, where
it is copied again. In the video-classification seed, clips permuted from
`(B, T, C, H, W)` to `(B, C, T, H, W)` cost one clip-sized copy forward and
another backward on every step.

## Example
```python
clips = clips.permute(0, 2, 1, 3, 4)   # (B, T, C, H, W) -> (B, C, T, H, W), a strided view
out = self.conv3d(clips)               # copies clips, and again in backward
```

## Use instead
```python
# produce (B, C, T, H, W) where the clips are made (the data loader), or make
# the copy explicit once - the backward then reuses the contiguous tensor:
out = self.conv3d(clips.permute(0, 2, 1, 3, 4).contiguous())
```
For 2-d convs a permuted NHWC batch (`x.permute(0, 3, 1, 2)`) *is*
channels_last and is not copied; run the model in channels_last too
(`model.to(memory_format=torch.channels_last)`) so the weight is not
converted per call.

## When it is intentional
A one-off conv on a strided view where rearranging the producer is not
worth it. Silence the line with `# fxlint: ignore[FXL202]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, dims_value, shape_text
from ..findings import Severity
from ..kernels import KernelCopy, KernelPrediction, ops, predict
from ..kernels.conv import AGAIN_IN_BACKWARD, conv_format
from ..registry import Hit, RuleContext, rule
from ..tensor.layout import CONTIGUOUS
from ._layout_hits import OperandCopy, backward_bytes, backward_clause, copy_sizes, operand_copy, total


@dataclass(frozen=True)
class NoncontiguousConv(OperandCopy):
    """What a convolution converts before computing: its input, its weight, or its output back."""

    kernel: str  # conv2d, conv_transpose3d, ...
    operand: Literal["input", "weight", "output"]  # what is copied (origin and made_at are the input's)
    layout: str  # the memory format the conv runs in: contiguous, channels_last, channels_last_3d
    to_weight_layout: bool  # a contiguous input converted to the layout of a channels_last weight
    input_ndim: int  # the input's rank (0: unknown)
    linear_equivalent: bool  # a kernel_size-1 Conv1d: an nn.Linear over the channels
    unknown: list[str]  # the parts of this conv's copies the kernel model does not know ("name: why")
    measured: bool  # a copy here was measured on this machine (the probe), not predicted

    def message(self) -> str:
        fmt, again = self.layout, backward_clause(self.backward_copied)
        if self.operand == "input" and self.to_weight_layout:
            return (f"{self.kernel} converts its contiguous input {self.operand_text} {shape_text(self.shape)} to "
                    f"{fmt}: {bytes_text(self.copied)} per call{again}; the weight is {fmt}, so the conv runs in {fmt}")
        if self.operand == "input":
            return self.copy_text(f"{self.kernel} copies its input {self.operand_text}")
        if self.operand == "weight":
            return (f"{self.kernel} converts its weight {shape_text(self.shape)} to {fmt} on every call: "
                    f"{bytes_text(self.copied)}{again}; {self.why}")
        return f"{self.kernel} copies its output back: {bytes_text(self.copied)} per call; {self.why}"

    def fix_title(self) -> str:
        fmt = self.layout
        if self.operand == "input" and self.to_weight_layout:
            return (f"expected once where a {fmt} model meets an NCHW input; deeper in the network it means an op "
                    f"before this conv returned NCHW: keep the activations {fmt} (x.to(memory_format=torch.{fmt}))")
        if self.operand == "weight":
            return f"convert the model once with model.to(memory_format=torch.{fmt}) so the weight is stored {fmt}"
        if self.operand == "output":
            return ("running this conv in channels_last (input and weight) avoids the copy: "
                    "model.to(memory_format=torch.channels_last) and a channels_last input")
        at = f" ({self.made_at})" if self.made_at else ""
        if self.kernel.endswith("1d"):
            hint = (" A kernel_size-1 Conv1d on (N, L, C) features is an nn.Linear over C: apply the Linear to the "
                    "(N, L, C) tensor directly." if self.linear_equivalent else "")
            return (f"conv1d takes only contiguous (N, C, L) input: produce it in that layout where it is "
                    f"created{at}, or make the copy explicit once with .contiguous() there (the backward then "
                    f"reuses it).{hint}")
        if self.input_ndim == 5:
            return (f"feed the Conv3d (B, C, T, H, W)-contiguous or channels_last_3d input: produce it in that layout "
                    f"where it is created{at}, or make the copy explicit once with .contiguous() there (the backward "
                    "then reuses it instead of copying again)")
        return (f"give the conv a contiguous (N, C, H, W) or channels_last input: produce it in that layout where it "
                f"is created{at}, or make the copy explicit once with .contiguous() there (the backward then reuses "
                "it)")


#: the backward copies a hit's "again in backward" clause counts (see ``_hit``); the backward's own copies are
#: FXL209's
_BACKWARD_REASONS = AGAIN_IN_BACKWARD


@rule("FXL202", "noncontiguous-conv", "warning", violation=NoncontiguousConv)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops(*ops(family="conv")):
        pred = predict(node)
        if pred is None:
            continue
        fwd = pred.forward()
        for operand in ("input", "weight", "output"):
            copies = [c for c in fwd if c.operand == operand]
            if copies:
                # the backward clause counts ATen's own conversions: known even where oneDNN's reorders are not
                known = pred.knows("backward", operand, reasons=_BACKWARD_REASONS)
                yield _hit(node, pred, operand, copies, pred.backward(operand) if known else None)


def _kernel_name(node: CanonNode, pred: KernelPrediction) -> str:
    return pred.kernel


def _hit(node: CanonNode, pred: KernelPrediction, operand: str, copies: list[KernelCopy],
         backward: list[KernelCopy] | None) -> Hit:
    kernel = _kernel_name(node, pred)
    x = node.args.get("input") if isinstance(node.args.get("input"), CanonNode) else None
    xt = x.tensor if x is not None else None
    w = node.args.get("weight_info")
    nbytes = total(copies)
    fmt = conv_format(pred)
    if backward is not None:
        backward = [c for c in backward if c.reason in _BACKWARD_REASONS]
    facts = operand_copy(x, xt, node, copies, backward, pred.path)
    if operand != "input":  # the shape and strides are the copied operand's; origin and made_at the input's
        t = w if operand == "weight" else node.tensor
        facts.update(shape=dims_value(t.shape) if t is not None else None,
                     strides=dims_value(t.stride) if t is not None else None)
    to_weight_layout = operand == "input" and xt is not None and xt.is_contiguous() is True and fmt != CONTIGUOUS
    violation = NoncontiguousConv(
        **facts,
        kernel=kernel,
        operand=operand,  # type: ignore[arg-type]  # input, weight or output: check() asks for no other
        layout=fmt,
        to_weight_layout=to_weight_layout,
        input_ndim=xt.ndim if xt is not None else 0,
        linear_equivalent=_linear_equivalent(node, pred),
        unknown=[f"{u.name}: {u.why}" for u in pred.unknown],
        measured=any(c.measured for c in copies),
    )
    # an input copy of a strided view is the warning; the conversions the layouts imply are infos
    severity = None if operand == "input" and not to_weight_layout else Severity.INFO
    return Hit(node, violation, bytes=nbytes, copy_sizes=copy_sizes(copies), backward_bytes=backward_bytes(backward),
               severity=severity, dedup=f"{node.name}:{operand}")


def _linear_equivalent(node: CanonNode, pred: KernelPrediction) -> bool:
    """A kernel_size-1, stride-1, ungrouped Conv1d: an nn.Linear over the channels."""
    if not pred.kernel.endswith("1d"):
        return False
    w = node.args.get("weight_info")
    return (w is not None and w.ndim == 3 and w.shape[-1] == 1 and node.args.get("groups", 1) == 1
            and all(v == 1 for v in (node.args.get("stride") or (1,))) and not node.args.get("transposed"))

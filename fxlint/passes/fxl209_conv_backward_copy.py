"""A convolution whose backward copies a gradient although its forward copies nothing: oneDNN's own layouts for the input gradient of a strided NCHW conv, or for the weight gradient of a channels_last conv.

## What it does
Predicts, in training, the copies a convolution's **backward** makes that
repeat nothing of its forward (`fxlint.kernels`, the same model as FXL202;
what oneDNN does is measured on this machine by running the conv once on
random tensors of the same geometry), and reports them at the conv's line:

* **the input gradient**: oneDNN computes the input gradient of a strided,
  ungrouped conv in the contiguous (NCHW) format in a layout of its own and
  copies it back (`ConvolutionBackward0 > aten::contiguous`), one copy of
  the input's size per step (a ResNet's downsampling convs). It depends on
  the CPU: measured on AVX2 and AVX-512 builds of oneDNN, not with oneDNN
  capped at SSE4.1.
* **the weight gradient**: a conv that runs channels_last through oneDNN
  hands back the weight gradient in channels_last and converts it to the
  weight's layout (`ConvolutionBackward0 > aten::to > aten::_to_copy`), one
  copy of the weight per step, even for a channels_last weight. A network
  runs channels_last without asking when an op hands it a channels_last
  tensor: a `LayerNorm2d` written as `x.permute(0, 2, 3, 1)`, `layer_norm`,
  `.permute(0, 3, 1, 2)` (ConvNeXt) makes every conv after it do so.

The copies the backward makes *again* because the forward converted the
input or the weight are FXL202's (its "again in backward" clause); a
gradient that comes back laid out as the conv cannot take is a copy of the
producer's backward, not reported here.

Bytes are per training step, in the backward; the forward copies nothing.
Nothing is reported in inference or for a conv nothing needs a gradient
from; the output gradient's layout is followed with concrete sizes only
(under a dynamic batch it is not predicted).

## Why is this bad?
Each is a full read and write of the gradient every step, and neither
shows in the forward's profile. Measured (torch 2.13, oneDNN, AVX2 CPU):
`nn.Conv2d(8, 16, 3, stride=2)` on a (2, 8, 12, 12) input that needs a
gradient copies the 4.6 kB input gradient in backward, the stride-1 conv
nothing; the same conv in channels_last copies its 4.6 kB weight gradient
instead, with stride 1 too.

## Example
```python
x = self.conv1(x)             # stride 2, NCHW: the backward copies x's gradient
y = self.fc1(x_channels_last) # a 1x1 conv in channels_last: the backward converts the weight gradient
```

## Use instead
The two are sides of one choice, weighed per conv by the bytes in the
message:
```python
# activations larger than the weights (early layers): channels_last trades the
# input-gradient copy for a weight-gradient one
model = model.to(memory_format=torch.channels_last)
x = x.to(memory_format=torch.channels_last)
# weights larger than the activations (deep 1x1 convs): keep NCHW where the
# network turns channels_last by accident (.contiguous() after the permute back)
```

## When it is intentional
Reported at info level: the copy is the kernel library's, the cost of the
layout the conv runs in, and the other layout has its own copy. Silence a
line with `# fxlint: ignore[FXL209]`.

`details` (the fields of `ConvBackwardCopy`): `kernel`, `operand` (`input`
or `weight`: whose gradient is copied), `layout` (the memory format the conv
runs in), `shape`, `copied` (backward bytes per step), `other_layout` (the
other format), `other_copied` (what the backward copies in the other format,
None when not known), `made_at` (where the input was made), `measured`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, dims_value, line_of, shape_text
from ..findings import Violation
from ..kernels import ops, predict
from ..kernels.conv import AGAIN_IN_BACKWARD, conv_format, predict_conv
from ..kernels.probe import resolve
from ..registry import Hit, RuleContext, rule
from ..tensor.info import TensorInfo
from ..tensor.layout import CONTIGUOUS, contiguous_strides
from ._grad_layout import cause_name, strided_output_grad
from ._layout_hits import total, where


@dataclass(frozen=True)
class ConvBackwardCopy(Violation):
    """A copy of a gradient the conv's backward makes on its own."""

    kernel: str
    operand: str  # "input" | "weight" | "output": whose gradient is copied
    layout: str  # the memory format the conv runs in
    shape: tuple[int | str, ...] | None
    copied: int | str | None
    other_layout: str
    other_copied: int | str | None
    made_at: str | None
    measured: bool
    grad_strides: tuple[int | str, ...] | None = None  # the output gradient's strides (operand "output")
    cause: str | None = None  # the op whose backward lays the output gradient out so (operand "output")
    cause_at: str | None = None

    def message(self) -> str:
        size = f"{bytes_text(self.copied)} per training step"
        if self.operand == "output":
            return (f"in training, {self.kernel}'s backward copies the gradient of its output {shape_text(self.shape)} "
                    f"to {self.layout}: {size}; it comes back with strides {shape_text(self.grad_strides)}, as the "
                    f"backward of `{self.cause}` at {self.cause_at} writes it")
        if self.operand == "input":
            how = " (measured on this machine)" if self.measured else ""
            return (f"in training, oneDNN computes {self.kernel}'s input gradient {shape_text(self.shape)} in a layout "
                    f"of its own and copies it back{how}: {size}; the forward copies nothing")
        return (f"in training, {self.kernel} runs {self.layout} through oneDNN, whose backward hands the weight "
                f"gradient {shape_text(self.shape)} back in another layout and converts it: {size}; the forward "
                "copies nothing")

    def fix_title(self) -> str:
        if self.operand == "output":
            return (f"keep what follows the conv in its {self.layout} layout, so that the gradients come back in it "
                    f"(here `{self.cause}`'s backward writes a new tensor in another order), or run the conv in the "
                    "layout its gradient comes back in")
        other = bytes_text(self.other_copied) if self.other_copied is not None else None
        if self.operand == "input":
            if other is None:
                return ("channels_last (model.to(memory_format=torch.channels_last) and a channels_last input) avoids "
                        "this copy, but converts the weight gradient instead: compare the two sizes")
            if _smaller(self.other_copied, self.copied):
                return (f"in channels_last (model.to(memory_format=torch.channels_last) and a channels_last input) "
                        f"the backward converts the weight gradient instead, {other} per step: smaller here")
            return (f"channels_last would convert the weight gradient instead, {other} per step: larger here, so the "
                    "NCHW copy is the cheaper one; nothing to change")
        at = f" (its input is made at {self.made_at})" if self.made_at else ""
        if self.other_copied == 0:
            return (f"in NCHW this conv's backward copies nothing of its own: where the network runs {self.layout} "
                    f"without meaning to{at}, keep it NCHW")
        if other is not None and _smaller(self.other_copied, self.copied):
            return (f"in NCHW this conv's backward copies its input gradient instead, {other} per step: smaller "
                    f"here; where the network runs {self.layout} without meaning to{at}, keep it NCHW")
        if other is not None:
            return (f"the cost of running {self.layout} through oneDNN{at}: in NCHW this conv's backward copies its "
                    f"input gradient instead, {other} per step, larger here; nothing to change")
        return (f"the cost of running {self.layout} through oneDNN{at}; where the weights are larger than the "
                "activations, NCHW may copy less (its backward copies the input gradient of a strided conv instead)")


def _output_gradient(view: GraphView, node: CanonNode, kernel: str, fmt: str) -> Hit | None:
    """The conv's backward makes its output's gradient contiguous in the format it runs in: a copy when the gradient
    comes back in another layout (``fxlint.passes._grad_layout``: a LayerNorm over a permuted view, a ``cat``'s
    slice)."""
    t = node.tensor
    g = strided_output_grad(view, node, fmt)
    if t is None or g is None or g.made_by is None:
        return None
    cause = g.made_by
    violation = ConvBackwardCopy(
        kernel=kernel, operand="output", layout=fmt, shape=dims_value(t.shape), copied=bytes_value(t.nbytes),
        other_layout=fmt, other_copied=None, made_at=None, measured=False,
        grad_strides=tuple(bytes_value(s) for s in g.strides), cause=cause_name(cause), cause_at=line_of(cause))  # type: ignore[misc]
    return Hit(node, violation, bytes=0, backward_bytes=t.nbytes, dedup=f"{node.name}:output-grad")


def _smaller(a: int | str | None, b: int | str | None) -> bool:
    return isinstance(a, int) and isinstance(b, int) and a < b


def _input_gradient_in_nchw(node: CanonNode, x: TensorInfo, w: TensorInfo) -> int | None:
    """The input-gradient copy the same conv would make with its input and weight contiguous (NCHW), as the kernel
    model and the probe answer it (None: not known)."""
    args = node.args
    nchw = predict_conv(
        replace(x, stride=contiguous_strides(x.shape), storage_offset=0),
        replace(w, stride=contiguous_strides(w.shape), storage_offset=0), has_bias=bool(args.get("has_bias", True)),
        transposed=bool(args.get("transposed")), groups=args.get("groups", 1), stride=args.get("stride"),
        padding=args.get("padding"), dilation=args.get("dilation"), output_padding=args.get("output_padding"),
        grad=True, weight_grad=w.requires_grad)
    if nchw is None:
        return None
    nchw = resolve(nchw)  # measured where probing is on and oneDNN decides (resolve asks both)
    if not nchw.knows("backward", "input"):
        return None
    got = total(c for c in nchw.backward("input") if c.reason not in AGAIN_IN_BACKWARD)
    return got if isinstance(got, int) else None


@rule("FXL209", "conv-backward-copy", "info", violation=ConvBackwardCopy)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops(*ops(family="conv")):
        pred = predict(node)
        if pred is None:
            continue
        fmt = conv_format(pred)
        grouped_native = node.args.get("groups", 1) != 1 and "oneDNN" not in pred.path
        out = None if grouped_native else _output_gradient(view, node, pred.kernel, fmt)
        if out is not None:  # (the native kernels slice a grouped conv's gradient per group, copying each anyway)
            yield out
        for operand in ("input", "weight"):
            own = [c for c in pred.backward(operand) if c.reason not in AGAIN_IN_BACKWARD]
            if not own:
                continue
            w = node.args.get("weight_info")
            x = node.args.get("input") if isinstance(node.args.get("input"), CanonNode) else None
            t = x.tensor if operand == "input" and x is not None else w
            copied = total(own)
            if operand == "input":  # what channels_last would cost instead: the weight gradient's conversion
                other_layout = "channels_last"
                other = w.nbytes if w is not None else None
            else:
                other_layout = CONTIGUOUS
                other = 0
                if x is not None and x.tensor is not None and x.tensor.requires_grad and w is not None:
                    other = _input_gradient_in_nchw(node, x.tensor, w)
            violation = ConvBackwardCopy(
                kernel=pred.kernel, operand=operand, layout=fmt,
                shape=dims_value(t.shape) if t is not None else None, copied=bytes_value(copied),
                other_layout=other_layout, other_copied=bytes_value(other) if other is not None else None,
                made_at=where(x, node) if x is not None else None, measured=any(c.measured for c in own))
            yield Hit(node, violation, bytes=0, backward_bytes=copied, dedup=f"{node.name}:{operand}-grad")

"""An op whose backward copies its output's gradient when it comes back strided (layer_norm, group_norm, interpolate, 2-D pools, reflect and replicate pads): a copy every training step.

## What it does
Follows the gradient's layout from the graph's outputs back, op by op (the
same model as FXL121, `fxlint/passes/_grad_layout.py`), and finds in
training the ops whose backward kernel copies the gradient of their output
into the one layout it works in, where that gradient comes back in another
(each measured with the profiler, torch 2.13, CPU, for contiguous,
channels-last and permuted gradients):

* `layer_norm` (`nn.LayerNorm`, `F.layer_norm`): contiguous;
* `group_norm` on an NCHW input: contiguous;
* `F.interpolate` / `nn.Upsample` (4-D): nearest and bilinear take a
  contiguous or a channels-last gradient and copy any other; bicubic copies
  any but a contiguous one;
* `max_pool2d`, `avg_pool2d` on an NCHW input: contiguous, for a gradient
  that is neither contiguous nor channels-last (a channels-last one makes
  the kernel convert its input and indices instead: not predicted);
* `F.pad` with `reflect` or `replicate` on a contiguous input (1-D, 2-D and
  3-D, a 3-D U-Net's skip padding): contiguous, for a gradient that is not
  channels-last either (as for the pools).

Other ops copy a strided output gradient in some layouts and not in others
(`softmax`): they are not predicted.

Each finding names the op whose backward wrote the gradient that way: a
gradient that comes back through a `permute` after the op (the norm ran on
(B, N, C) and the result was transposed, the NHWC `LayerNorm2d` of
ConvNeXt-style blocks), a matmul that read the op's output transposed, a
pool or `mean` of the norm's output permuted to NCHW (Swin's and ConvNeXt's
classifier heads: the pool's backward writes an NCHW gradient).

A gradient that comes straight from the graph's output, permuted on the way
(a model returning `out.transpose(0, 1)` after its last norm), names that
permute. A gradient that comes back through a `.contiguous()` is that copy's
finding's (FXL101's or FXL204's backward bytes: dropping the copy removes
this one too); a convolution's output gradient is FXL209's.

Bytes are what the backward copies per training step: the output once. The
finding says nothing about the forward (`F.interpolate` copies its input and
output in the forward on this CPU build: measured, and not this rule's).

## Why is this bad?
The forward's permute is free, but the gradient it sends back is strided,
and the backward kernels of these ops read it contiguous: a full copy of the
gradient every step, in no forward profile. Measured (torch 2.13, CPU):
`F.layer_norm(x, (16,))` on a (2, 8, 16) input whose gradient comes back
transposed copies 1 kB in `NativeLayerNormBackward0 > aten::contiguous`;
with the gradient contiguous, nothing. The same holds for `group_norm`.

## Example
```python
h = self.norm(x)                    # (B, N, C)
y = self.proj(h.transpose(1, 2))    # a matmul reads h transposed: h's gradient comes back strided
```

## Use instead
```python
h = self.norm(x)
y = self.proj_t(h)                  # read h in its own order (the weight transposed once), or
# transpose before the norm, so the norm's output is the tensor the next op reads as it is
```

## When it is intentional
Reported at info level: the copy is the price of the layout change the
forward makes for free, and the fix changes the order of the work. Silence
a line with `# fxlint: ignore[FXL122]`.

`details` (the fields of `StridedGradientCopy`): `op`, `shape` (the output's), `layout` (the one the
backward copies the gradient to),
`grad_strides` (the gradient's predicted strides), `cause` (the op whose
backward wrote it), `cause_at` (its line), `copied` (backward bytes per step).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import GraphView
from ..canon.text import bytes_text, bytes_value, dims_value, line_of, shape_text
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._grad_layout import OUTPUT_GRAD_OPS, SHOWN_AS, cause_name, first_permute_after, output_grad_copy


@dataclass(frozen=True)
class StridedGradientCopy(Violation):
    """A backward copy of an output gradient that comes back strided."""

    op: str
    shape: tuple[int | str, ...] | None
    grad_strides: tuple[int | str, ...]
    cause: str
    cause_at: str
    copied: int | str | None
    layout: str = "contiguous"  # the layout the op's backward copies the gradient to

    def message(self) -> str:
        return (f"in training, `{self.op}`'s backward makes the gradient of its output {shape_text(self.shape)} "
                f"{self.layout}: {bytes_text(self.copied)} per training step; it comes back with strides "
                f"{shape_text(self.grad_strides)}, as the backward of `{self.cause}` at {self.cause_at} writes it")

    def audit_calls(self) -> frozenset[str]:
        """No forward call: the finding is about the backward's copy (the op's own forward copies, e.g.
        `F.interpolate`'s on some CPUs, are another matter and do not refute it)."""
        return frozenset()

    def fix_title(self) -> str:
        if self.cause == "mean" or "pool" in self.cause.lower():  # a reduction after a permute back to NCHW
            return (f"reduce `{self.op}`'s output in its own order (`x.mean((1, 2))` of an NHWC tensor rather than "
                    f"permuting it to NCHW for `{self.cause}`): its gradient then comes back contiguous")
        return (f"let the ops after `{self.op}` read its output in its own order (a permute before `{self.op}` "
                f"rather than after it, or `{self.cause}` reading it untransposed): its gradient then comes back "
                "contiguous")


@rule("FXL122", "strided-gradient-copy", "info", violation=StridedGradientCopy)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops(*OUTPUT_GRAD_OPS):
        got = output_grad_copy(view, node)
        t = node.tensor
        if got is None or t is None or got.grad.through_copy is not None:
            continue  # through a `.contiguous()`: that copy's finding claims it
        g = got.grad
        cause = g.made_by if g.made_by is not None else first_permute_after(node)
        if cause is None:
            continue
        copied = t.nbytes
        violation = StridedGradientCopy(
            op=SHOWN_AS.get(node.op, node.op), shape=dims_value(t.shape),
            grad_strides=tuple(bytes_value(s) for s in g.strides),  # type: ignore[misc]
            cause=cause_name(cause), cause_at=line_of(cause),
            copied=bytes_value(copied), layout=got.layout)
        yield Hit(node, violation, bytes=0, backward_bytes=copied)

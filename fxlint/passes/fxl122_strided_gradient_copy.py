"""A layer_norm or group_norm whose output's gradient comes back strided: its backward makes the gradient contiguous, a copy every training step.

## What it does
Follows the gradient's layout from the graph's outputs back, op by op (the
same model as FXL121, `fxlint/passes/_grad_layout.py`), and finds in
training the ops whose backward kernel makes the gradient of their output
contiguous before computing, where that gradient comes back in another
layout:

* `layer_norm` (`nn.LayerNorm`, `F.layer_norm`);
* `group_norm` on an NCHW input.

Other ops copy a strided output gradient in some layouts and not in others
(`softmax` copies a gradient permuted in its leading dims and not one
transposed in its last; the replicate and reflect pads likewise): they are
not predicted.

Each finding names the op whose backward wrote the gradient that way: a
gradient that comes back through a `permute` after the op (the norm ran on
(B, N, C) and the result was transposed, the NHWC `LayerNorm2d` of
ConvNeXt-style blocks), a matmul that read the op's output transposed, a
pool or `mean` of the norm's output permuted to NCHW (Swin's and ConvNeXt's
classifier heads: the pool's backward writes an NCHW gradient).

A gradient that comes back through a `.contiguous()` is FXL101's (its
backward bytes); a convolution's output gradient is FXL209's.

Bytes are what the backward copies per training step: the output once. The
forward copies nothing.

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

`details` (the fields of `StridedGradientCopy`): `op`, `shape` (the output's),
`grad_strides` (the gradient's predicted strides), `cause` (the op whose
backward wrote it), `cause_at` (its line), `copied` (backward bytes per step).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, dims_value, line_of, shape_text
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ..tensor.layout import CONTIGUOUS, is_contiguous_as
from ._grad_layout import cause_name, strided_output_grad

#: ops whose backward makes their output's gradient contiguous (each measured with the profiler, torch 2.13, CPU)
_OPS = ("layer_norm", "group_norm")


@dataclass(frozen=True)
class StridedGradientCopy(Violation):
    """A backward copy of an output gradient that comes back strided."""

    op: str
    shape: tuple[int | str, ...] | None
    grad_strides: tuple[int | str, ...]
    cause: str
    cause_at: str
    copied: int | str | None

    def message(self) -> str:
        return (f"in training, `{self.op}`'s backward makes the gradient of its output {shape_text(self.shape)} "
                f"contiguous: {bytes_text(self.copied)} per training step; it comes back with strides "
                f"{shape_text(self.grad_strides)}, as the backward of `{self.cause}` at {self.cause_at} writes it")

    def fix_title(self) -> str:
        if self.cause == "mean" or "pool" in self.cause.lower():  # a reduction after a permute back to NCHW
            return (f"reduce `{self.op}`'s output in its own order (`x.mean((1, 2))` of an NHWC tensor rather than "
                    f"permuting it to NCHW for `{self.cause}`): its gradient then comes back contiguous")
        return (f"let the ops after `{self.op}` read its output in its own order (a permute before `{self.op}` "
                f"rather than after it, or `{self.cause}` reading it untransposed): its gradient then comes back "
                "contiguous")


def _applies(node: CanonNode) -> bool:
    t = node.tensor
    if t is None or not t.dtype.is_floating_point:
        return False
    x = node.input
    if node.op == "group_norm":
        return x is not None and x.tensor is not None and x.tensor.is_contiguous() is True
    return is_contiguous_as(t.shape, t.stride, CONTIGUOUS) if all(isinstance(d, int) for d in t.stride) else False


@rule("FXL122", "strided-gradient-copy", "info", violation=StridedGradientCopy)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops(*_OPS):
        if not _applies(node):
            continue
        g = strided_output_grad(view, node, CONTIGUOUS)
        if g is None or g.made_by is None or node.tensor is None:
            continue
        cause = g.made_by
        copied = node.tensor.nbytes
        violation = StridedGradientCopy(
            op=node.op, shape=dims_value(node.tensor.shape),
            grad_strides=tuple(bytes_value(s) for s in g.strides),  # type: ignore[misc]
            cause=cause_name(cause), cause_at=line_of(cause),
            copied=bytes_value(copied))
        yield Hit(node, violation, bytes=0, backward_bytes=copied)

"""An adaptive average pool to 1 x 1 of a channels-last input: ATen restrides its result in place, and the backward copies the gradient back through that restride.

## What it does
Finds in training `F.adaptive_avg_pool2d(x, 1)` / `nn.AdaptiveAvgPool2d(1)`
(and the 1-D `adaptive_avg_pool1d(x, 1)`, which runs it on `x.unsqueeze(-2)`)
whose input is laid out channels-last: a channels_last tensor, or the NCHW
view of an NHWC tensor (`x.permute(0, 3, 1, 2)`; for 1-D, `x.transpose(1, 2)`
of a (B, L, C) tensor), the classifier head of Swin, ConvNeXt, MaxViT and
every network that keeps its features NHWC.

ATen computes this pool as `x.mean((-2, -1), keepdim=True)` and then, for a
channels-last input, calls `as_strided_` on the result to give it channels-last
strides. Autograd records that in-place restride, and its backward
(`AsStridedBackward`) copies the (B, C) gradient into a new buffer every
training step. `x.mean((-2, -1), keepdim=True)` computes the same values
(bit for bit: it is the op ATen runs) without the restride.

Bytes are what the backward copies per training step: the pooled output once.
The forward copies nothing.

## Why is this bad?
A small copy (batch x channels), but one on every training step of every
model with this head, and a backward-only op in every profile of it.
Measured (torch 2.13, CPU): `F.adaptive_avg_pool2d(x, 1)` of a (2, 96, 7, 7)
NCHW view of NHWC data copies 768 B in `AsStridedBackward1 > aten::copy_`;
`x.mean((2, 3), keepdim=True)` of the same tensor, nothing. A contiguous
(NCHW) input is not restrided and copies nothing.

## Example
```python
x = self.norm(x)                    # (B, H, W, C)
x = self.avgpool(x.permute(0, 3, 1, 2)).flatten(1)
```

## Use instead
```python
x = self.norm(x)
x = x.mean((1, 2))                  # pool the NHWC tensor itself, or
# x.permute(0, 3, 1, 2).mean((2, 3), keepdim=True): the same values, no restride
```

## When it is intentional
Reported at info level: the copy is small, and a module swap changes a
model's structure. Silence a line with `# fxlint: ignore[FXL123]`.

`details` (the fields of `GlobalPoolBackwardCopy`): `op`, `shape` (the
input's), `fix` (the `mean` call that replaces it, on the input's name where
the source names it), `copied` (backward bytes per step).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, dims_value, operand_name, shape_text, user_name
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ..tensor.layout import CHANNELS_LAST, CONTIGUOUS, is_contiguous_as
from ._grad_layout import global_pool


@dataclass(frozen=True)
class GlobalPoolBackwardCopy(Violation):
    """A global average pool whose result ATen restrides in place, copied again in the backward."""

    op: str
    shape: tuple[int | str, ...] | None
    fix: str
    copied: int | str | None

    def message(self) -> str:
        return (f"in training, `{self.op}` to size 1 of a channels-last input {shape_text(self.shape)} restrides "
                f"its result in place (`as_strided_`), and the backward copies the gradient back through it: "
                f"{bytes_text(self.copied)} per training step")

    def fix_title(self) -> str:
        fix = self.fix if self.fix.startswith("`") else f"`{self.fix}`"
        return f"{fix}: the same values (ATen runs this mean), without the restride and its backward copy"


def _channels_last(node: CanonNode) -> bool:
    """The pool's input is laid out as ATen's ``suggest_memory_format`` calls channels-last (and not contiguous:
    an ambiguous layout is not restrided)."""
    x = node.input
    t = x.tensor if x is not None else None
    if t is None or not all(isinstance(d, int) for d in (*t.shape, *t.stride)):
        return False
    shape, stride = tuple(t.shape), tuple(t.stride)
    if node.op == "adaptive_avg_pool1d":
        if len(shape) != 3:
            return False
        shape, stride = (shape[0], shape[1], 1, shape[2]), (stride[0], stride[1], stride[2] * shape[2], stride[2])
    elif len(shape) != 4:
        return False
    return is_contiguous_as(shape, stride, CHANNELS_LAST) and not is_contiguous_as(shape, stride, CONTIGUOUS)


@rule("FXL123", "global-pool-backward-copy", "info", violation=GlobalPoolBackwardCopy)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops("adaptive_avg_pool2d", "adaptive_avg_pool1d"):
        t = node.tensor
        if t is None or not node.grad_enabled or not t.requires_grad or not t.dtype.is_floating_point or \
                not global_pool(node) or not _channels_last(node):
            continue
        x = node.input
        assert x is not None and x.tensor is not None
        dims = "-1" if node.op == "adaptive_avg_pool1d" else "(2, 3)"
        named = x.kind == "input" or x.param_name is not None or user_name(x) is not None
        fix = f"{operand_name(x)}.mean({dims}, keepdim=True)" if named else \
            f"`.mean({dims}, keepdim=True)` of the pool's input"
        copied = t.nbytes
        violation = GlobalPoolBackwardCopy(op=node.op, shape=dims_value(x.tensor.shape), fix=fix,
                                           copied=bytes_value(copied))
        yield Hit(node, violation, bytes=0, backward_bytes=copied)

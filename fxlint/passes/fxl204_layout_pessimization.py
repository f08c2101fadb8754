"""A `.contiguous()` that turns channels_last data into NCHW right before a conv that takes channels_last.

## What it does
Finds `.contiguous()` (also `.to(memory_format=torch.contiguous_format)`
and `clone(memory_format=torch.contiguous_format)`) whose input is exactly
a dense channels_last (or channels_last_3d) tensor - typically an NHWC
batch permuted with `x.permute(0, 3, 1, 2)` - and whose result only feeds
convolutions that would take the channels_last layout without copying (see
`fxlint.kernels`: the conv runs in channels_last when its input suggests
it). The `.contiguous()` is a full copy that buys nothing.

## Why is this bad?
A permuted NHWC batch *is* a channels_last NCHW tensor: the conv accepts it
as it is. `.contiguous()` rewrites the whole activation into NCHW on every
call, and the conv then works in NCHW. The message also says what dropping
it costs: with a contiguous (NCHW) weight, a channels_last input makes the
conv convert the weight per call - usually far smaller than the activation,
and gone once the model is converted with
`model.to(memory_format=torch.channels_last)`.

In training the copy can cost a second one: the conv hands back its input's
gradient in NCHW, the copy passes it on, and the permute above it turns it
into NHWC order with strided channels, which a view or a `linear` above the
permute (a transformer block's output projection, folded to 2-D) must copy
to reshape it. Dropping `.contiguous()` removes those too: the conv then
hands the gradient back channels_last, the order they expect (measured:
`linear -> reshape -> permute -> .contiguous() -> conv` copies the linear's
output gradient in the backward, without `.contiguous()` nothing). The
message says where, and `details["backward_copied"]` how much.

## Example
```python
x = images.permute(0, 3, 1, 2).contiguous()   # NHWC -> NCHW copy
y = self.conv(x)
```

## Use instead
```python
self.conv = self.conv.to(memory_format=torch.channels_last)   # once, at setup
y = self.conv(images.permute(0, 3, 1, 2))                      # no copy
```

## When it is intentional
When the contiguous tensor is also needed in NCHW elsewhere (e.g. viewed),
or the conv's backend does not take channels_last for these sizes (then this
rule does not fire). Silence the line with `# fxlint: ignore[FXL204]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, line_from
from ..findings import Violation
from ..kernels import is_channels_last_dense, predict_conv_node
from ..registry import FixSpec, Hit, RuleContext, rule
from ._backward import backward_copy_text, copies_through
from ._layout_hits import origin, total


@dataclass(frozen=True)
class LayoutPessimization(Violation):
    """A ``.contiguous()`` of channels_last data whose only users are convs that take channels_last."""

    layout: str  # the input's layout: channels_last or channels_last_3d
    origin: str  # the input of .contiguous(), in the user's names: "images.permute(0, 3, 1, 2)"
    kernels: tuple[str, ...]  # the conv kernels that take the layout as it is: ("conv2d",)
    convs: list[str]  # the conv nodes it feeds
    copied: int | str | None  # bytes the .contiguous() copies per call (a formula under dynamic shapes)
    weight_conversion_bytes: int | str | None  # what dropping it costs: the convs then convert their weights
    backward_copied: int | str | None = 0  # bytes the backward copies again above the copy (0: none)
    backward_copy: str | None = None  # the first view or `linear` that copies the gradient, as written
    backward_copy_at: str | None = None  # and where: "line 12"

    def message(self) -> str:
        fmt = self.layout
        cost = ""
        if self.weight_conversion_bytes:
            cost = (f"; without it the conv converts its NCHW weight to {fmt} per call "
                    f"({bytes_text(self.weight_conversion_bytes)}) until the model is converted with "
                    f"model.to(memory_format=torch.{fmt})")
        again = ""
        if self.backward_copy is not None:
            again = (f"; in training the backward copies again: the gradient comes back through it in NCHW and "
                     f"`{self.backward_copy}` at {self.backward_copy_at} must copy it "
                     f"({bytes_text(self.backward_copied)} per step)")
        return (f"drop .contiguous(): {' and '.join(self.kernels)} accepts this {fmt} layout "
                f"({self.origin} is {fmt}); the copy costs {bytes_text(self.copied)} per call{cost}{again}")

    def fix_title(self) -> str:
        fix = f"drop .contiguous() and pass {self.origin} to the conv as it is"
        if self.weight_conversion_bytes:
            fix += f", and convert the model once with model.to(memory_format=torch.{self.layout})"
        return fix


@rule("FXL204", "layout-pessimization", "warning", violation=LayoutPessimization, supersedes=("FXL101",),
      fix=FixSpec.rewrite_of(
    "drop-layout-copy", safe=False,
    why="the convolution then runs on channels_last data and returns channels_last output, which later "
        "code sees in that layout; values may differ in the order of floating-point reductions, within "
        "the dtype's tolerance"))
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.nodes:
        if not _to_contiguous(node):
            continue
        x = node.input
        if x is None or x.tensor is None or node.tensor is None:
            continue
        fmt = is_channels_last_dense(x.tensor)
        if fmt is None:
            continue
        users = node.users
        if not users or any(u.op != "conv" or u.input is not node for u in users):
            continue
        after = [p for u in users if (p := predict_conv_node(u, x=x.tensor)) is not None]
        now = [p for u in users if (p := predict_conv_node(u)) is not None]
        if len(after) < len(users) or len(now) < len(users):  # a conv the model cannot predict
            continue
        if any(p.forward("input") for p in after):  # the conv would copy the channels_last input anyway
            continue
        nbytes = x.tensor.nbytes
        weight = total(c for p in after for c in p.forward("weight"))
        weight_now = total(c for p in now for c in p.forward("weight"))
        bwd = copies_through([node], view)
        bwd_bytes = sum(b for _, b in bwd) if bwd else 0
        violation = LayoutPessimization(
            layout=fmt,
            origin=origin(x, node),
            kernels=tuple(sorted({p.kernel for p in after})),
            convs=[u.name for u in users],
            copied=bytes_value(nbytes),
            weight_conversion_bytes=bytes_value(weight - weight_now),
            backward_copied=bytes_value(bwd_bytes),
            backward_copy=backward_copy_text(bwd[0][0]) if bwd else None,
            backward_copy_at=line_from(bwd[0][0], node) if bwd else None,
        )
        yield Hit(node, violation, bytes=nbytes, backward_bytes=bwd_bytes,
                  backward_sites=tuple(n.location for n, _ in bwd if n.location is not None))


def _to_contiguous(node: CanonNode) -> bool:
    mf = node.args.get("memory_format")
    if node.op == "contiguous":
        return mf in (None, torch.contiguous_format)
    if node.op == "clone":
        return mf == torch.contiguous_format
    if node.op == "to":
        x = node.input.tensor if node.input is not None else None
        if x is None or mf != torch.contiguous_format:
            return False
        dtype, device = node.args.get("dtype"), node.args.get("device")
        same_device = device is None or (isinstance(device, (str, torch.device)) and torch.device(device) == x.device)
        return (dtype is None or dtype == x.dtype) and same_device
    return False

"""A pooling, upsampling or `F.unfold` input whose layout makes the kernel copy it on every call.

## What it does
Reports the input of `avg_pool2d`, `max_pool2d`, `adaptive_avg_pool2d`,
`F.interpolate`/`nn.Upsample` (nearest, bilinear, bicubic) and
`F.unfold`/`nn.Unfold` when the CPU kernel copies it (see
`fxlint.kernels.spatial`, checked against the runtime):

* pooling and upsampling take a contiguous or a channels_last input as it
  is and make any other layout contiguous: a channel slice `x[:, :c]` of an
  NCHW batch, `x.transpose(2, 3)`, a step slice;
* upsampling then also computes into a contiguous result and copies it back
  into an output laid out like the input (two more output-sized copies);
* `F.unfold` (`im2col`) copies any non-contiguous input, channels_last too.

Nearest and bilinear upsampling of an NCHW input - even a contiguous one -
may convert it to channels_last and the result back: that is the CPU
kernel's vectorised path, which differs between machines. fxlint measures it
by running the call once on random tensors of the same geometry (`fxlint
lint` does by default; `--no-probe` turns it off and leaves the part unknown)
and says "measured on this machine"; the fix is a channels_last input, which
the kernel takes as it is.

## Why is this bad?
A full read and write of the activation per call, hidden in the kernel.
For upsampling, the output is copied twice more.

## Example
```python
x1, x2 = x[:, :c], x[:, c:]        # channel slices of an NCHW batch: not contiguous
y = F.avg_pool2d(x1, 2)            # copies x1 first
```

## Use instead
```python
y = F.avg_pool2d(x, 2)[:, :c]      # pool the whole tensor, then slice the (smaller) result
```
Or produce the input contiguous (or channels_last) where it is made - e.g.
split channels with separate convolutions, or run the model in
channels_last, where a slice of the channels keeps the layout the kernel
takes.

## When it is intentional
A one-off kernel call on a strided view. Silence the line with
`# fxlint: ignore[FXL206]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, shape_text
from ..kernels import ops, predict
from ..registry import Hit, RuleContext, rule
from ._layout_hits import OperandCopy, backward_bytes, copy_sizes, operand_copy, total

#: the kernel family this rule checks (its ops come from the kernel registry)
FAMILY = "spatial"

_NAMES = {"upsample": "F.interpolate", "im2col": "F.unfold"}


@dataclass(frozen=True)
class NoncontiguousSpatial(OperandCopy):
    """A pooling/upsampling/unfold input the kernel copies because of its layout."""

    kernel: str  # avg_pool2d, max_pool2d, adaptive_avg_pool2d, upsample, im2col
    output_copied: int | str | None  # upsampling: bytes of the two output copies (None: none)
    channel_slice: bool  # the input is a slice of the channels (dim 1) of a contiguous tensor
    measured: bool = False  # the copies were measured on this machine (the probe), not predicted
    input_copied: bool = True  # False: only the result is copied back (a measured upsample)
    one_by_one: bool = False  # nearest/bilinear upsampling of a 1x1 map: a broadcast of each value

    def message(self) -> str:
        name = _NAMES.get(self.kernel, f"F.{self.kernel}")
        extra = ""
        if self.output_copied:
            extra = f", and its output twice more ({bytes_text(self.output_copied)})"
        if not self.input_copied:
            return (f"{name} computes its result in another layout and copies it back: "
                    f"{bytes_text(self.output_copied)} per call (input {self.operand_text} "
                    f"{shape_text(self.shape)}); {self.why}")
        return self.copy_text(f"{name} copies its input {self.operand_text}", extra)

    def fix_title(self) -> str:
        at = f" ({self.made_at})" if self.made_at else ""
        if self.channel_slice and self.kernel != "im2col":
            return ("apply the kernel to the whole tensor and slice the result's channels afterwards (it works per "
                    f"channel), or produce the channel group as its own contiguous tensor{at}")
        if self.one_by_one:
            return ("upsampling a 1x1 map (nearest or bilinear) repeats each value: use "
                    "x.expand(-1, -1, H, W), a view with no copy (add .contiguous() only where a real tensor is "
                    "needed: one copy instead of the kernel's)")
        if self.measured and self.kernel == "upsample":
            return ("give F.interpolate a channels_last input (run the model in channels_last, or "
                    f"x.contiguous(memory_format=torch.channels_last) where it is created{at}): the kernel takes it "
                    "as it is and returns channels_last, with no copy")
        if self.kernel == "im2col":
            return f"give F.unfold a contiguous (N, C, H, W) input where it is created{at}"
        return (f"give the kernel a contiguous or channels_last input where it is created{at}, or make the copy "
                "explicit once with .contiguous() there")


@rule("FXL206", "noncontiguous-spatial", "warning", violation=NoncontiguousSpatial)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops(*ops(family=FAMILY)):
        pred = predict(node)
        if pred is None:
            continue
        copies = pred.forward()
        inputs = [c for c in copies if c.operand == "input"]
        outputs = [c for c in copies if c.operand == "output"]
        # a measured upsample may copy only its result back (an input that is NCHW and channels_last alike)
        if not inputs and not (outputs and any(c.measured for c in outputs)):
            continue
        x = node.args.get("input") if isinstance(node.args.get("input"), CanonNode) else None
        t = x.tensor if x is not None else None
        facts = operand_copy(x, t, node, inputs or outputs, pred.backward("input") if pred.backward_known else None,
                             pred.path)
        violation = NoncontiguousSpatial(
            **facts,
            kernel=node.op,
            output_copied=bytes_value(total(outputs)) if outputs else None,
            channel_slice=_channel_slice(x),
            measured=any(c.measured for c in copies),
            input_copied=bool(inputs),
            one_by_one=_one_by_one(node, t),
        )
        yield Hit(node, violation, bytes=total(copies), copy_sizes=copy_sizes(copies),
                  backward_bytes=backward_bytes(pred.backward() if pred.backward_known else None), dedup=node.name)


def _one_by_one(node: CanonNode, t: object) -> bool:
    """Nearest or bilinear upsampling of a (N, C, 1, 1) input: every output pixel is its one value."""
    shape = getattr(t, "shape", None)
    return (node.op == "upsample" and node.args.get("mode") in ("nearest", "nearest-exact", "bilinear")
            and shape is not None and len(shape) == 4 and tuple(shape[2:]) == (1, 1))


def _channel_slice(x: CanonNode | None) -> bool:
    """``x`` is ``base[:, a:b]`` of a contiguous ``base`` (a slice of dim 1 only)."""
    if x is None or x.op != "slice" or x.input is None or x.input.tensor is None:
        return False
    spec = x.args.get("index")
    items = getattr(spec, "items", ())
    sliced = [it.dim for it in items if it.kind == "slice" and (it.start is not None or it.stop is not None
                                                               or it.step not in (None, 1))]
    return sliced == [1] and x.input.tensor.is_contiguous() is True

"""Inductor lays out an input of the compiled graph (a weight, a buffer, the caller's tensor) for an ATen kernel on every call.

## What it does
Reads Inductor's lowering of the graph (under `torch.compile(..., backend="fxlint")` with Inductor, or
`fxlint lint --compiled`) and finds the copies the compiled program makes of an input of the graph, as
it comes in, for an ATen kernel Inductor calls: on a CPU with oneDNN, Inductor runs every convolution
channels_last (its layout optimisation), so each convolution's weight and an image that arrives NCHW are
converted to channels_last before every call. The bytes are what that copy writes per call in the
compiled program (read from the buffer Inductor allocates for it). Eager makes no such copy of its own.

Only copies that no eager finding explains are reported (a copy an eager rule predicted is that rule's
finding, with "under Inductor: survives").

## Why is this bad?
A parameter does not change between calls, yet its conversion runs on every call: for a ResNet-18 at
64 px with batch 2 the weights Inductor converts are larger than all of its activations. Inductor only
converts what does not already have the layout it chose.

## Example
```python
model = torchvision.models.resnet18().eval()
compiled = torch.compile(model, backend="fxlint")
compiled(images)                           # FXL702 on every convolution's weight, and on `images`
```

## Use instead
```python
model = torchvision.models.resnet18().eval().to(memory_format=torch.channels_last)
compiled = torch.compile(model)            # the weights are read as they are stored
compiled(images.contiguous(memory_format=torch.channels_last))  # best where the images are made
```
In inference, `torch._inductor.config.freezing = True` also folds the weights' conversion into the
compiled constants, once. For the caller's tensor, write it channels_last where it is produced (the data
pipeline's last transform can write that layout at no extra cost): converting it right before the call
only moves the copy.

## When it is intentional
A model whose convolutions are a small part of the work may not be worth converting. Silence one line
with `# fxlint: ignore[FXL702]`.

`details` (the fields of `CompiledInputLayout`): `value` (the parameter's dotted name, or the input's
name), `role` (`parameter`, `buffer` or `input`), `kernels` (the ATen kernels that read the copy),
`layout` (the layout Inductor gives it: `channels_last`, `contiguous`, strides), `copied` (bytes per call
in the compiled program).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon.text import bytes_text, operand_name
from ..compiled.kinds import INPUT_LAYOUT
from ..compiled.program import CompiledGraph
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._compiled import CONV_KERNELS, in_phase, kernel_text, layout_name, role_of


@dataclass(frozen=True)
class CompiledInputLayout(Violation):
    """An input of the compiled graph laid out for an ATen kernel on every call."""

    value: str
    role: str  # parameter | buffer | input
    kernels: tuple[str, ...]
    layout: str
    copied: int | None
    phase: str  # forward | backward (a copy of the compiled backward graph)

    def message(self) -> str:
        what = {"parameter": "the weight", "buffer": "the buffer"}.get(self.role, "the input")
        return in_phase(self.phase, (
            f"the compiled program converts {what} `{self.value}` to {self._layout()} on every call "
            f"({bytes_text(self.copied)} per call): Inductor runs {kernel_text(self.kernels)} in that "
            "layout, and an input of the compiled graph in another is converted each time it comes in"))

    def _layout(self) -> str:
        return self.layout if not self.layout.startswith("strides") else f"a layout with {self.layout}"

    def fix_title(self) -> str:
        channels_last = self.layout.startswith("channels_last")
        fmt = "torch.channels_last_3d" if self.layout == "channels_last_3d" else "torch.channels_last"
        if self.role in ("parameter", "buffer"):
            if channels_last and set(self.kernels) <= CONV_KERNELS:
                return (f"store the model's weights in that layout once, before compiling: "
                        f"`model.to(memory_format={fmt})` (Inductor then reads them as they are); in inference, "
                        "`torch._inductor.config.freezing = True` also folds the conversion into the compiled "
                        "constants")
            return (f"store `{self.value}` in the layout the kernel reads ({self.layout}) once, before compiling; "
                    "in inference, `torch._inductor.config.freezing = True` folds the conversion into the "
                    "compiled constants")
        if channels_last:
            return (f"produce `{self.value}` in {fmt} where it is made (the data pipeline's last transform can "
                    f"write that layout at no extra cost: `.contiguous(memory_format={fmt})`); converting it right "
                    "before the call only moves this copy")
        return f"produce `{self.value}` in the layout the kernel reads ({self.layout}) where it is made"


@rule("FXL702", "compiled-input-layout", "warning", scope="compiled", violation=CompiledInputLayout)
def check(compiled: CompiledGraph, ctx: RuleContext) -> Iterator[Hit]:
    for buf in compiled.copies(INPUT_LAYOUT):
        value = compiled.node(buf.inputs[0]) if buf.inputs else None
        violation = CompiledInputLayout(
            value=operand_name(value) if value is not None else "an input", role=role_of(value), kernels=buf.consumers,
            layout=layout_name(buf.size, buf.stride), copied=buf.bytes, phase=buf.phase)
        yield Hit(compiled.site(buf), violation, compiled_bytes=buf.bytes, compiled_phase=buf.phase,
                  dedup=f"{violation.value}:{buf.phase}")

"""The compiled program converts a value the graph returns back to the layout eager would return it in.

## What it does
Reads Inductor's lowering of the graph (under `torch.compile(..., backend="fxlint")` with Inductor, or
`fxlint lint --compiled`) and finds the copies that lay out an output of the compiled graph: Inductor
computes values in the layout it chooses (on a CPU with oneDNN, a convolution's output is channels_last),
but what the compiled graph returns must have the strides eager would give it, so an output computed in
another layout is converted before it is returned. The bytes are what that copy writes per call. The
finding sits at the line of the value returned: a view the user took (`q.view(b, -1, h, d).transpose(1, 2)`,
which a training graph saves for its backward) is returned as that view, at that view's line.

## Why is this bad?
The conversion reads and writes the whole output once more per call, and the caller often converts it
again (a segmentation map fed to the next convolution outside the graph).

## Example
```python
model = UNet().eval()                       # convolutions up to the last layer, NCHW weights
out = torch.compile(model, backend="fxlint")(images)   # FXL705: the logits converted to NCHW
```

## Use instead
```python
model = UNet().eval().to(memory_format=torch.channels_last)
out = torch.compile(model)(images.contiguous(memory_format=torch.channels_last))  # eager returns
                                            # channels_last too: nothing is converted, in or out
```

## When it is intentional
A caller that needs the output NCHW (a loss written for contiguous tensors, an export) pays this copy
somewhere. Silence one line with `# fxlint: ignore[FXL705]`.

`details` (the fields of `CompiledOutputLayout`): `value` (the user's name for the output, or the op that
made it), `shape`, `layout` (the layout it is returned in), `copied` (bytes per call in the compiled program),
`conv` (it is a convolution's output).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon.text import bytes_text, shape_text
from ..compiled.kinds import OUTPUT_LAYOUT
from ..compiled.program import CompiledGraph
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._compiled import CONV_KERNELS, in_phase, layout_name, value_text


@dataclass(frozen=True)
class CompiledOutputLayout(Violation):
    """An output of the compiled graph converted to the layout eager returns it in."""

    value: str
    shape: tuple[int, ...] | None
    layout: str
    copied: int | None
    phase: str  # forward | backward (a copy of the compiled backward graph)
    conv: bool  # the value is a convolution's output (channels_last in the compiled program)

    def message(self) -> str:
        shape = f" {shape_text(self.shape)}" if self.shape else ""
        layout = self.layout if not self.layout.startswith("strides") else f"a layout with {self.layout}"
        return in_phase(self.phase, (
            f"the compiled program converts {self.value}{shape} to {layout} before returning it "
            f"({bytes_text(self.copied)} per call): Inductor computes it in another layout, and an output "
            "of the compiled graph keeps the layout eager gives it"))

    def fix_title(self) -> str:
        if self.conv:
            return ("run the model channels_last end to end (`model.to(memory_format=torch.channels_last)` and a "
                    "channels_last input): eager then returns that layout too and nothing is converted")
        return ("return the value in the layout it is computed in where the caller allows it; otherwise the copy "
                "is its price")


@rule("FXL705", "compiled-output-layout", "info", scope="compiled", violation=CompiledOutputLayout)
def check(compiled: CompiledGraph, ctx: RuleContext) -> Iterator[Hit]:
    for buf in compiled.copies(OUTPUT_LAYOUT):
        # the value returned: the op the buffer is lowered from (a view the user took of what it reads, as
        # `q.view(b, -1, h, d).transpose(1, 2)` saved for a training graph's backward, is returned as that
        # view, at that line), else the value it reads
        made = compiled.node(buf.producer) if buf.producer is not None else None
        read = next((n for n in map(compiled.node, reversed(buf.read_nodes)) if n is not None), None)
        value = made if made is not None and made.kind == "op" else read
        violation = CompiledOutputLayout(value=value_text(value), shape=buf.size,
                                         layout=layout_name(buf.size, buf.stride), copied=buf.bytes, phase=buf.phase,
                                         conv=any(op in CONV_KERNELS for op in buf.ops))
        yield Hit(value if value is not None and value.kind == "op" else compiled.site(buf), violation,
                  compiled_bytes=buf.bytes, compiled_phase=buf.phase, dedup=f"{violation.value}:{buf.phase}")

"""The compiled program copies a value the graph computes into the layout an ATen kernel Inductor calls requires of it.

## What it does
Reads Inductor's lowering of the graph (under `torch.compile(..., backend="fxlint")` with Inductor, or
`fxlint lint --compiled`) and finds the copies Inductor makes so that an ATen kernel it calls (an
"extern kernel": mm, bmm, a convolution, scaled_dot_product_attention, or a fallback for an op Inductor
cannot generate) gets its input in the layout it requires (`require_stride_order`, `realize_input`):
a value the graph computes, laid out otherwise, is written out once more before the call. The bytes are
what that copy writes per call in the compiled program.

Only copies that no eager finding explains are reported: where eager copies the same operand (FXL201 on
a matmul, FXL202 on a convolution, a `.contiguous()` the user wrote) that finding owns the copy and says
"under Inductor: survives". What is left is the layout Inductor chooses itself: on a CPU with oneDNN it
runs convolutions channels_last, so a value made NCHW (by a permute, a `view` across channels, a pixel
shuffle) is converted before every convolution that reads it; its attention pattern replaces a
`softmax(q @ k^T) @ v` written out by scaled_dot_product_attention, and the replacement makes q, k and v
contiguous first (a `F.scaled_dot_product_attention` call of the user's gets them as they are, their last
dim contiguous).

The finding is at the kernel's line; for a replaced attention, which has no line of its own, at the line
that makes the value copied (`q`, `kv`, `qkv`), where the copy kernel comes from.

## Why is this bad?
Each such copy reads and writes the whole tensor once more per call; in a stack of convolutions a value
converted in one place is often converted back a few ops later.

## Example
```python
q, k, v = qkv.unbind(0)  # FXL701 (B, H, N, D), last dim contiguous: Inductor replaces the pattern below
attn = (q @ k.transpose(-2, -1) * self.scale).softmax(dim=-1)  # by scaled_dot_product_attention and makes
out = attn @ v                                                  # q, k and v contiguous first
```

## Use instead
```python
out = F.scaled_dot_product_attention(q, k, v, scale=self.scale)   # handed over as they are
```
For a convolution, keep the activations channels_last through the ops between the kernels
(`model.to(memory_format=torch.channels_last)` and a channels_last input); for a matmul, lay the operand
out with its batch dims outermost where it is created; for an op Inductor runs as a fallback, make the
operand contiguous where it is created.

## When it is intentional
A layout change the computation needs (a transpose the next kernel must read contiguously) costs this
copy in eager too. Silence one line with `# fxlint: ignore[FXL701]`.

`details` (the fields of `CompiledKernelLayout`): `value` (the user's name or the op that made the value),
`shape`, `kernels` (the ATen kernels that read the copy), `layout` (the layout the copy has), `copied` (bytes
per call in the compiled program), `replaced` (the kernel is Inductor's replacement of ops written otherwise:
its attention pattern).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon.text import bytes_text, shape_text
from ..compiled.kinds import KERNEL_LAYOUT
from ..compiled.program import CompiledGraph
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._compiled import (
    ATTENTION_PREFIX,
    CONV_KERNELS,
    MATMUL_KERNELS,
    backward_value,
    in_phase,
    kernel_text,
    layout_name,
    operand_of,
    value_text,
)


@dataclass(frozen=True)
class CompiledKernelLayout(Violation):
    """A computed value copied into the layout an ATen kernel Inductor calls requires."""

    value: str
    shape: tuple[int, ...] | None
    kernels: tuple[str, ...]
    layout: str
    copied: int | None
    phase: str  # forward | backward (a copy of the compiled backward graph)
    #: the kernel stands for ops the user wrote otherwise: Inductor's attention pattern replaced a
    #: `softmax(q @ k^T) @ v` by scaled_dot_product_attention (its replacement makes q, k, v contiguous)
    replaced: bool = False

    def message(self) -> str:
        layout = (f"the {self.layout} layout" if not self.layout.startswith("strides")
                  else f"a layout with {self.layout}")
        shape = f" {shape_text(self.shape)}" if self.shape else ""
        return in_phase(self.phase, (
            f"the compiled program copies {self.value}{shape} to {layout} before calling "
            f"{kernel_text(self.kernels)} ({bytes_text(self.copied)} per call): Inductor runs "
            f"{'it' if len(self.kernels) == 1 else 'them'} as ATen code and hands "
            f"{'it' if len(self.kernels) == 1 else 'them'} this layout, and the value arrives in another"))

    def fix_title(self) -> str:
        ops = set(self.kernels)
        if ops & CONV_KERNELS:
            return ("keep the activations in the convolution's layout (channels_last on a CPU with oneDNN) through "
                    f"the ops between the kernels: an op that only works on NCHW (a `view` across channels, a permute) "
                    f"makes {self.value} NCHW and Inductor converts it back; `model.to(memory_format="
                    "torch.channels_last)` and a channels_last input make that layout the one everything has")
        if ops & MATMUL_KERNELS:
            return (f"lay {self.value} out where it is created with its batch dims outermost and its last two dims "
                    "contiguous (or transposed): the matmul then reads it as it is")
        if any(op.startswith(ATTENTION_PREFIX) for op in ops):
            if self.replaced:
                return ("call `F.scaled_dot_product_attention(q, k, v, scale=...)` yourself instead of "
                        "`softmax(q @ k.transpose(-2, -1) * scale) @ v`: Inductor then hands it q, k and v as they are "
                        "(with the last dim contiguous), where its replacement of the written-out pattern makes them "
                        "contiguous first")
            return (f"give scaled_dot_product_attention {self.value} with its last dim contiguous where it is made "
                    "(Inductor keeps the order of the other dims)")
        return f"make {self.value} in the layout the kernel reads ({self.layout}) where it is created"


@rule("FXL701", "compiled-kernel-layout", "warning", scope="compiled", violation=CompiledKernelLayout)
def check(compiled: CompiledGraph, ctx: RuleContext) -> Iterator[Hit]:
    for buf in compiled.copies(KERNEL_LAYOUT):
        readers = [n for n in map(compiled.node, buf.consumer_nodes) if n is not None and n.kind == "op"]
        attention = any(op.startswith(ATTENTION_PREFIX) for op in buf.consumers)
        replaced = attention and bool(readers) and not any(n.op == "scaled_dot_product_attention" for n in readers)
        read = next((n for n in map(compiled.node, reversed(buf.read_nodes)) if n is not None), None)
        # what it lays out: the kernel's operand; for a kernel that replaced the user's ops, the value it reads;
        # in the backward, the gradient that comes back to the value it reads
        if buf.phase == "backward":
            value = backward_value(compiled, buf)
        else:
            operand = read if replaced else operand_of(readers, buf.sources, buf.size) or read
            value = value_text(operand) if operand is not None else "its input"
        violation = CompiledKernelLayout(
            value=value, shape=buf.size,
            kernels=buf.consumers, layout=layout_name(buf.size, buf.stride), copied=buf.bytes, phase=buf.phase,
            replaced=replaced)
        # at the kernel's line: the copy is made for it; for a pattern Inductor replaced (a written-out
        # attention), at the line that makes the value it copies: the pattern has no one line of its own, and
        # the copy kernel is lowered from that value's ops (its provenance). Two copies of one value (the keys
        # and the values of one projection) are two findings
        site = (read if replaced and read is not None and read.location is not None
                else readers[-1] if readers else compiled.site(buf))
        yield Hit(site, violation, compiled_bytes=buf.bytes,
                  compiled_phase=buf.phase,
                  dedup=f"{violation.value}:{buf.phase}:{buf.name}")

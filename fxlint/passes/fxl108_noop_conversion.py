"""`.to(dtype)`, `.float()`, `.contiguous()` that change nothing: noise in the code, no copy (info).

## What it does
Finds conversions that return their input unchanged because it already is
what they ask for: `.float()` / `.to(torch.float32)` / `.type(torch.float32)` /
`.type_as(y)` on a float32 tensor, `.half()` on a float16 one,
`.contiguous()` on a contiguous tensor, `.to(memory_format=torch.channels_last)`
on a channels_last one. PyTorch returns the same tensor (no copy, measured:
the profiler records none), so the cost is zero; the finding is about code that
says it converts when it does not, which hides the conversions that do.

Device-only moves that change nothing (`.to(x.device)`, `.cpu()` on a CPU
tensor) are not reported: they are how device-portable code is written.
`copy=True` conversions always copy and are not no-ops.

## Why is this bad?
It is not a performance problem: it is noise. A `.float()` sprinkled "to be
safe" makes readers believe a dtype changes there, and a `.contiguous()` on a
tensor that always is contiguous suggests a layout problem that does not
exist. Under mixed precision or a different input layout they may start
copying silently.

## Example
```python
x = torch.cat([a, b], dim=1).contiguous()   # cat already returns a contiguous tensor
y = self.linear(x).float()                   # float32 already
```

## Use instead
```python
x = torch.cat([a, b], dim=1)
y = self.linear(x)
```

## When it is intentional
Defensive conversions in code that runs with several dtypes or layouts
(autocast, channels_last inputs) are fine: they cost nothing when they change
nothing. That is why this rule is info level; silence it per line with
`# fxlint: ignore[FXL108]`.

`Finding.bytes` is 0 (no copy); `fxlint.lint(..., confirm=True)` confirms the
finding when no copy of that tensor runs on the line. `details` (the fields of
`NoopConversion`): `what` (`dtype`, `memory_format`, `contiguous`), `call`,
`dtype` or `memory_format` (what the tensor is already), `source` (node name;
the conversion can be replaced by it); the finding's `tensor_shape` is the
tensor's shape.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import torch

from ..canon import CanonNode, GraphView
from ..canon.text import torch_name
from ..findings import Violation
from ..registry import FixSpec, Hit, RuleContext, rule
from ..tensor.viewable import is_contiguous_as
from ._sites import numbered
from ._util import same_device


@dataclass(frozen=True)
class NoopConversion(Violation):
    """A dtype or layout conversion that returns its input itself: nothing to convert, nothing copied."""

    what: Literal["dtype", "memory_format", "contiguous"]  # what it was asked to change
    call: str  # as written: ".float()", ".to(torch.float32)", ".type_as(...)", ".contiguous()"
    dtype: str | None  # the dtype the tensor has already ("dtype")
    memory_format: str | None  # the memory format asked ("memory_format"; "contiguous": None for the default)
    input_from: str | None  # "contiguous": what made its input ("cat output", "an input")
    source: str  # the node converted (the conversion can be replaced by it)

    def message(self) -> str:
        if self.what == "contiguous":
            fmt = f" ({self.memory_format})" if self.memory_format is not None else ""
            return (f"`.contiguous()`{fmt} changes nothing: its input ({self.input_from}) is contiguous already, "
                    "so no copy is made")
        already = self.dtype if self.what == "dtype" else self.memory_format
        return f"`{self.call}` changes nothing: the tensor is {already} already, so no copy is made"

    def fix_title(self) -> str:
        return f"drop `{self.call}`"

    def audit_calls(self) -> frozenset[str]:
        """The torch functions this claim is about (``".to(torch.float32)"`` is a call of ``to``): the
        runtime audit checks that *they* copied nothing on the line, whatever other calls there copy."""
        m = re.match(r"\.(\w+)", self.call)
        return frozenset({m.group(1)} if m else ())


@rule("FXL108", "noop-conversion", "info", violation=NoopConversion, fix=FixSpec.rewrite_of(
    "remove-noop-conversion", safe=True,
    why="the conversion returned its input itself, so the program reads the same tensor either way"))
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    for node in view.nodes:
        if node.op == "to":
            hit = _noop_to(node)
        elif node.op == "contiguous":
            hit = _noop_contiguous(node)
        else:
            continue
        if hit is not None:
            yield hit


def _noop_to(node: CanonNode) -> Hit | None:
    src, out = node.input, node.tensor
    if src is None or src.tensor is None or out is None or node.args.get("copy"):
        return None
    a = node.args
    asked_dtype = a.get("dtype") is not None and not _device_spelled(node)
    asked_format = a.get("memory_format") not in (None, torch.preserve_format)
    if not asked_dtype and not asked_format:
        return None  # a device-only `.to(...)`: portable code, quiet when nothing moves
    if out.dtype != src.tensor.dtype or same_device(out.device, src.tensor.device) is not True:
        return None
    if asked_format and is_contiguous_as(src.tensor, a["memory_format"]) is not True:
        return None
    what: Literal["dtype", "memory_format"] = "memory_format" if asked_format and not asked_dtype else "dtype"
    violation = NoopConversion(
        what=what,
        call=_spelled(node),
        dtype=torch_name(out.dtype) if what == "dtype" else None,
        memory_format=torch_name(a["memory_format"]) if what == "memory_format" else None,
        input_from=None,
        source=src.name,
    )
    return Hit(node, violation, bytes=0, tensor_shape=tuple(out.shape))


def _noop_contiguous(node: CanonNode) -> Hit | None:
    src = node.input
    if src is None or src.tensor is None:
        return None
    fmt = node.args.get("memory_format")
    if is_contiguous_as(src.tensor, fmt) is not True:
        return None
    violation = NoopConversion(
        what="contiguous",
        call=".contiguous()",
        dtype=None,
        memory_format=None if fmt in (None, torch.contiguous_format) else torch_name(fmt),
        input_from=f"{src.op} output" if src.kind == "op" else ("an input" if src.kind == "input" else src.kind),
        source=src.name,
    )
    return Hit(node, violation, bytes=0, tensor_shape=tuple(src.tensor.shape))


def _device_spelled(node: CanonNode) -> bool:
    """``x.to("cpu")`` reaches an exported graph as ``aten.to.dtype_layout`` with the dtype filled in:
    the user asked for a device, not a dtype."""
    return node.spelling.endswith("dtype_layout") and node.args.get("device") is not None


def _spelled(node: CanonNode) -> str:
    style = node.args.get("style", "to")
    dtype = node.args.get("dtype")
    if style in ("float", "double", "half", "bfloat16", "int", "long", "short", "bool", "byte", "char"):
        return f".{style}()"
    if style in ("type", "type_as"):
        return f".{style}(...)"
    if dtype is not None:
        return f".to({dtype})"
    fmt = node.args.get("memory_format")
    if fmt is not None:
        return f".to(memory_format={fmt})"
    return ".to(...)"

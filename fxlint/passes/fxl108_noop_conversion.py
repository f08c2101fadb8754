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
finding when no copy of that tensor runs on the line. `details` keys: `what`
(`dtype`, `memory_format`, `contiguous`), `source` (node name; the conversion
can be replaced by it), `shape` (the tensor's shape).
"""

from __future__ import annotations

from typing import Iterator

import torch

from ..canon import CanonNode, GraphView
from ..registry import FixSpec, Hit, RuleContext, rule
from ..viewable import is_contiguous_as
from ._sites import numbered
from ._util import same_device


@rule("FXL108", "noop-conversion", "info", fix=FixSpec.rewrite_of(
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
    dtype = str(out.dtype).replace("torch.", "")
    spelled = _spelled(node)
    what = "memory_format" if asked_format and not asked_dtype else "dtype"
    if what == "dtype":
        message = f"`{spelled}` changes nothing: the tensor is {dtype} already, so no copy is made"
    else:
        fmt = str(a["memory_format"]).replace("torch.", "")
        message = f"`{spelled}` changes nothing: the tensor is {fmt} already, so no copy is made"
    return Hit(node=node, message=message, fix=f"drop `{spelled}`", bytes=0,
               details={"what": what, "source": src.name, "shape": tuple(out.shape)})


def _noop_contiguous(node: CanonNode) -> Hit | None:
    src = node.input
    if src is None or src.tensor is None:
        return None
    fmt = node.args.get("memory_format")
    if is_contiguous_as(src.tensor, fmt) is not True:
        return None
    where = f"{src.op} output" if src.kind == "op" else ("an input" if src.kind == "input" else src.kind)
    fmt_text = "" if fmt in (None, torch.contiguous_format) else f" ({str(fmt).replace('torch.', '')})"
    return Hit(node=node,
               message=f"`.contiguous()`{fmt_text} changes nothing: its input ({where}) is contiguous already, "
                       "so no copy is made",
               fix="drop `.contiguous()`", bytes=0,
               details={"what": "contiguous", "source": src.name, "shape": tuple(src.tensor.shape)})


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

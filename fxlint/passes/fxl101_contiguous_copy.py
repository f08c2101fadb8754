"""`.contiguous()` that really copies: a warning when nothing after it needs the copy, info when it is the one copy the layout needs.

## What it does
Finds `.contiguous()` (and `.contiguous(memory_format=...)`) whose input is
not already laid out that way, so it copies the whole tensor on every call,
and sorts them by what the copy buys:

* **warning: the copy buys nothing.** Every consumer reads any strides
  (elementwise ops, reductions, another `.contiguous()`, a `.view()` the
  original layout allows): dropping `.contiguous()` gives the same results
  with no copy anywhere.
* **warning: the same copy is made several times per call**, e.g. inside a
  loop over the same tensor (Dynamo unrolls it): make it once, before the loop.
* **info: the copy is needed.** A `.view()` after it cannot be expressed with
  the original strides (channel shuffle: `view -> transpose -> contiguous ->
  view`), or a kernel after it (matmul, linear, conv, norm...) whose own
  stride handling is not decided here: that kernel would copy the same bytes
  itself, and an explicit copy is then the better place for it (the kernel's
  saved input is contiguous, so backward does not copy again).

In a decomposed (core ATen) graph, `.contiguous()` and a `reshape` that
cannot view both become `clone(memory_format=torch.contiguous_format)`; such a
clone of a non-contiguous tensor is reported here too.

`.contiguous()` on a tensor that already is contiguous copies nothing: that
is FXL108 (noop-conversion, info). A `.contiguous()` that turns channels_last
data into NCHW right before a convolution is FXL204 (layout-pessimization), and
`expand(...).contiguous()` whose consumers broadcast is FXL104 (repeat-copy);
this rule leaves those to them.

Bytes are the tensor's size (every element is written once). The gradient of
`.contiguous()` itself passes through, but when a permute above it undoes the
layout and a `.view()` above that merges the permuted dims (channel shuffle:
the split `view` before the transpose), backward copies the gradient too
(measured: `ViewBackward0 > reshape > clone`, the same size): that is
`details["backward_bytes"]`, and the message says where.

## Why is this bad?
`contiguous()` allocates a new tensor and copies every element through
`aten::contiguous > aten::clone > aten::copy_`. When no consumer needs
contiguous memory, that is memory traffic and a peak-memory bump for nothing;
"add `.contiguous()` after every permute" is a habit, not a rule. When a
consumer does need it, the copy is real work you want to see, once.

## Example
```python
def forward(self, x):                 # x: (B, C, T)
    h = x.transpose(1, 2).contiguous()  # copies B*C*T elements
    return (h * self.scale).sum(-1)    # elementwise + reduction: any strides will do
```

## Use instead
```python
def forward(self, x):
    return (x.transpose(1, 2) * self.scale).sum(-1)
```

## When it is intentional
When a later kernel or a caller needs contiguous memory and you want the copy
in one visible place (info findings say so), or when you want the result to
stop sharing storage with a much larger tensor. Silence one line with
`# fxlint: ignore[FXL101]`.

`details` keys: `verdict` (`agnostic`, `needs`, `unknown`), `needed_by` (node
names that need the copy), `memory_format`, `copies` (nodes on the line),
`repeats` (largest number of copies of the same data), `source` (the tensor
copied), `backward_bytes`, `backward_copies` (the view nodes whose gradient
copies).
"""

from __future__ import annotations

from typing import Iterator

import torch

from ..canon import GraphView
from ..findings import Severity
from ..registry import Hit, RuleContext, rule
from ..text import bytes_text, call_text, layout_text, line_of
from ..viewable import contiguous_copy_bytes
from ._backward import backward_layout_copies
from ._consumers import AGNOSTIC, NEEDS, consumers_need
from ._layout import layout_origin, origin_text
from ._sites import count_text, sites, source_key
from ._repeat import repeat_like


@rule("FXL101", "contiguous-copy", "warning")
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    found = []
    for node in view.ops("contiguous", "clone"):
        if node.op == "clone" and node.args.get("memory_format") != torch.contiguous_format:
            continue  # a plain clone is FXL105's; clone(contiguous_format) is what `.contiguous()` decomposes to
        src = node.input
        if src is None or src.tensor is None or node.tensor is None:
            continue
        fmt = node.args.get("memory_format")
        nbytes = contiguous_copy_bytes(src.tensor, fmt)
        if nbytes is None or nbytes == 0:
            continue  # undecided under dynamic shapes, or a no-op (FXL108)
        if _layout_pessimization(node, fmt):
            continue  # FXL204 reports it
        if repeat_like(node) is not None:
            continue  # FXL104 reports it
        found.append((node, nbytes, source_key(src)))
    for site in sites(found, view):
        node = site.node
        src = node.input
        assert src is not None and src.tensor is not None
        fmt = node.args.get("memory_format")
        fmt_text = "" if fmt in (None, torch.contiguous_format) else f" ({str(fmt).replace('torch.', '')})"
        need = consumers_need(node, src.tensor, view)
        spelled = ("`.contiguous()`" if node.op == "contiguous" else
                   "`.clone(memory_format=torch.contiguous_format)` (a `.contiguous()` or a copying `reshape`, "
                   "in a decomposed graph)")
        head = (f"{spelled}{fmt_text} copies {bytes_text(site.nbytes)} per call{count_text(site)}: "
                f"its input, {layout_text(src.tensor)}{origin_text(src)}, is not laid out that way")
        if site.repeats > 1:
            severity = Severity.WARNING
            why = (f"; the same tensor is copied {site.repeats} times per call (a loop over the same data); "
                   "the copies after the first buy nothing")
            fix = "make the copy once, before the loop, and reuse it"
        elif need.verdict == AGNOSTIC:
            severity = Severity.WARNING
            why = "; nothing after it needs contiguous memory (elementwise ops and reductions read any strides)"
            fix = f"drop `.contiguous()`: it costs {bytes_text(site.nbytes)} per call and changes no result"
        elif need.verdict == NEEDS:
            severity = Severity.INFO
            why = f"; this is the copy the layout needs: {'; '.join(need.why)}"
            fix = ("keep it: it is the one copy this layout needs; to avoid it, reshape before the permute or "
                   "keep the data in the order the view expects")
        else:
            severity = Severity.INFO
            why = (f"; it may be needed by {', '.join(need.why)} (a kernel that needs contiguous input would "
                   "otherwise copy it itself)")
            fix = "keep it if the next kernel needs contiguous memory; drop it if that kernel reads any strides"
        bwd = [b for n in site.nodes for b in backward_layout_copies(n)]
        bwd_bytes = sum(b for _, b in bwd) if bwd else 0
        if bwd:
            origin = layout_origin(src)
            through = f"`{call_text(origin)}`" if origin is not None else "the permute"
            why += (f"; backward pays it again: the gradient comes back through {through} and "
                    f"`{call_text(bwd[0][0])}` at {line_of(bwd[0][0])} must copy it ({bytes_text(bwd_bytes)})")
        yield Hit(
            node=node,
            message=head + why,
            fix=fix,
            bytes=site.nbytes,
            severity=severity,
            details={
                "verdict": need.verdict if site.repeats == 1 else "repeated",
                "needed_by": [n.name for n in need.consumers] if need.verdict == NEEDS else [],
                "memory_format": str(fmt).replace("torch.", "") if fmt is not None else "contiguous_format",
                "copies": [n.name for n in site.nodes],
                "repeats": site.repeats,
                "source": src.name,
                "backward_bytes": bwd_bytes,
                "backward_copies": [n.name for n, _ in bwd],
            },
        )


def _layout_pessimization(node, fmt) -> bool:
    """channels_last data made NCHW right before a convolution: FXL204's finding, not ours."""
    src = node.input
    if fmt not in (None, torch.contiguous_format) or src is None or src.tensor is None:
        return False
    if src.tensor.ndim not in (4, 5) or src.tensor.is_channels_last() is not True:
        return False
    return any(u.op == "conv" for u in node.users)

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
data into NCHW only for convolutions that take channels_last is FXL204's
(layout-pessimization), and `expand(...).contiguous()` whose consumers
broadcast is FXL104's (repeat-copy): those rules own the copy (one finding per
copy, the one with the better fix), whatever is selected or ignored; where
they do not apply (the tensor has another user), it is this rule's.

Bytes are the tensor's size (every element is written once). The gradient of
`.contiguous()` itself passes through, but when a permute above it undoes the
layout and a `.view()` above that merges the permuted dims (channel shuffle:
the split `view` before the transpose), backward copies the gradient too
(measured: `ViewBackward0 > reshape > clone`, the same size): that is
`details["backward_bytes"]`, and the message says where. So are the copies
further on that the gradient handed back through the copy causes: a
`linear` above the permute folding it to 2-D, a `layer_norm` (or another op
whose backward works in one layout, FXL122's) copying it back.

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

`details` (the fields of `ContiguousCopy`): `verdict` (`agnostic`, `needs`,
`unknown`, `repeated`), `reasons` (the consumers that decided it), `needed_by`
(node names that need the copy), `memory_format`, `input_layout` (dtype, shape,
strides and the view op that made them), `copies` (nodes on the line),
`same_data_copies` (largest number of copies of the same data), `source` (the
tensor copied), `backward_bytes`, `backward_copies` (the view nodes whose
gradient copies).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import torch

from ..canon import GraphView
from ..canon.text import bytes_text, bytes_value, line_from, torch_name
from ..findings import Severity, Violation
from ..registry import Hit, RuleContext, rule
from ..tensor.viewable import contiguous_copy_bytes
from ._backward import backward_copy_text, copies_through
from ._consumers import AGNOSTIC, NEEDS, consumers_need
from ._layout_hits import InputLayout
from ._sites import count_text, sites, source_key

#: what the copy buys: nothing (``agnostic``), the layout a consumer needs (``needs``), undecided
#: (``unknown``); ``repeated``: the same data is copied again on the line (a loop)
Verdict = Literal["agnostic", "needs", "unknown", "repeated"]


@dataclass(frozen=True)
class ContiguousCopy(Violation):
    """`.contiguous()` (or the clone a decomposed graph makes of it) that copies its input."""

    call: Literal["contiguous", "clone"]  # `.contiguous()`, or `clone(memory_format=contiguous_format)`
    memory_format: str  # what it asks for: "contiguous_format", "channels_last", ...
    copied: int | str | None  # bytes per call on this line (a formula under dynamic shapes)
    input_layout: InputLayout  # the input's layout and the view op that made it
    verdict: Verdict
    reasons: tuple[str, ...]  # the consumers that decided the verdict, in words
    needed_by: list[str]  # node names of the consumers that need the copy (verdict "needs")
    copies: list[str]  # the copy nodes on this line
    same_data_copies: int  # the most copies of the same data in the same layout on this line
    source: str  # the node copied
    backward_copied: int | str | None  # bytes backward copies again (0: none)
    backward_copies: list[str]  # the view nodes whose backward copies the gradient
    backward_copy: str | None = None  # the first of them, as written: ".view(2, 2, 4, 4, 4)"
    backward_copy_at: str | None = None  # and where: "line 12"

    def message(self) -> str:
        spelled = ("`.contiguous()`" if self.call == "contiguous" else
                   "`.clone(memory_format=torch.contiguous_format)` (a `.contiguous()` or a copying `reshape`, "
                   "in a decomposed graph)")
        fmt = "" if self.memory_format == "contiguous_format" else f" ({self.memory_format})"
        head = (f"{spelled}{fmt} copies {bytes_text(self.copied)} per call{count_text(len(self.copies))}: "
                f"its input, {self.input_layout.text()}, is not laid out that way")
        if self.verdict == "repeated":
            why = (f"; the same tensor is copied {self.same_data_copies} times per call (a loop over the same "
                   "data); the copies after the first buy nothing")
        elif self.verdict == AGNOSTIC:
            why = "; nothing after it needs contiguous memory (elementwise ops and reductions read any strides)"
        elif self.verdict == NEEDS:
            why = f"; this is the copy the layout needs: {'; '.join(self.reasons)}"
        else:
            why = (f"; it may be needed by {', '.join(self.reasons)} (a kernel that needs contiguous input would "
                   "otherwise copy it itself)")
        if self.backward_copy is not None:
            made = self.input_layout.made_by
            through = f"`{made}`" if made is not None else "the permute"
            why += (f"; backward pays it again: the gradient comes back through {through} and "
                    f"`{self.backward_copy}` at {self.backward_copy_at} must copy it "
                    f"({bytes_text(self.backward_copied)})")
        return head + why

    def fix_title(self) -> str:
        if self.verdict == "repeated":
            return "make the copy once, before the loop, and reuse it"
        if self.verdict == AGNOSTIC:
            return f"drop `.contiguous()`: it costs {bytes_text(self.copied)} per call and changes no result"
        if self.verdict == NEEDS:
            return ("keep it: it is the one copy this layout needs; to avoid it, reshape before the permute or "
                    "keep the data in the order the view expects")
        return "keep it if the next kernel needs contiguous memory; drop it if that kernel reads any strides"


@rule("FXL101", "contiguous-copy", "warning", violation=ContiguousCopy)
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
        found.append((node, nbytes, source_key(src)))
    for site in sites(found, view):
        node = site.node
        src = node.input
        assert src is not None and src.tensor is not None
        fmt = node.args.get("memory_format")
        need = consumers_need(node, src.tensor, view)
        verdict = need.verdict if site.repeats == 1 else "repeated"
        severity = Severity.WARNING if verdict in ("repeated", AGNOSTIC) else Severity.INFO
        bwd = copies_through(site.nodes, view)
        bwd_bytes = sum(b for _, b in bwd) if bwd else 0
        violation = ContiguousCopy(
            call="contiguous" if node.op == "contiguous" else "clone",
            memory_format=torch_name(fmt) if fmt is not None else "contiguous_format",
            copied=bytes_value(site.nbytes),
            input_layout=InputLayout.of(src),
            verdict=verdict,
            reasons=tuple(need.why),
            needed_by=[n.name for n in need.consumers] if need.verdict == NEEDS else [],
            copies=[n.name for n in site.nodes],
            same_data_copies=site.repeats,
            source=src.name,
            backward_copied=bytes_value(bwd_bytes),
            backward_copies=[n.name for n, _ in bwd],
            backward_copy=backward_copy_text(bwd[0][0]) if bwd else None,
            backward_copy_at=line_from(bwd[0][0], node) if bwd else None,
        )
        yield Hit(node, violation, bytes=site.nbytes, copy_sizes=site.copy_sizes, backward_bytes=bwd_bytes,
                  severity=severity, backward_sites=tuple(n.location for n, _ in bwd if n.location is not None))


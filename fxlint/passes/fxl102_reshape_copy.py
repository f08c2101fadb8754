"""`reshape`/`flatten`/`ravel` on a layout that cannot be viewed: a silent full copy (where `.view()` would raise).

## What it does
Finds `reshape`, `flatten`, `reshape_as`, `ravel` and `nn.Flatten` whose input
layout cannot express the new shape with strides, so PyTorch silently copies
the whole tensor first (`aten::reshape > aten::clone > aten::copy_`). The test
is ATen's own (`computeStride`, see `fxlint/tensor/viewable.py`): *splitting* a dim
is always a view, *merging* dims is a view only when they are adjacent in
memory. So `x.t().reshape(-1)`, or an NHWC batch `.permute(0, 3, 1, 2)` then
`.reshape(B, -1)`, copy; while `.flatten()` of a contiguous tensor, a reshape
that only splits a permuted dim, or `.view(B, 3, H, W)` after that permute
(same shape) are free views.

`.view()` never copies: on a layout like these it raises `RuntimeError: view
size is not compatible with input tensor's size and stride` (the capture then
fails with that error and a hint). `.ravel()` is `contiguous().view(-1)`: it
copies whenever the input is not contiguous, even where `.reshape(-1)` is a
view (`x[::2].ravel()`).

Severity:

* **warning** when the copy is avoidable: `.ravel()` where `.reshape(-1)` is a
  view; the same tensor flattened several times per call (a loop over the same
  data: `x.t().reshape(-1)` in a hot loop); a result only reduced as a whole
  (`x.t().reshape(-1).sum()`), which the original layout gives for free.
* **info** otherwise: the copy is what this element order costs (the standard
  head merge `attn.transpose(1, 2).reshape(B, T, C)` is one); the finding
  makes a silent copy visible.

Bytes are the tensor's size. In training the copy's own backward is a view
(measured: the gradient passes through), but where the gradient, passed
back through the permute, reaches a view above it that merged the permuted
dims, that view's backward copies it again: the unpatchify of a diffusion
transformer (`x.reshape(B, h, w, p, p, c)`, `torch.einsum("nhwpqc->nchpwq",
x)`, then `.reshape(B, c, h*p, w*p)`, which copies) pays the same bytes again
at the first reshape. The message says where, and `details["backward_bytes"]`
how much. Where the gradient was laid out by an op inside the graph, that
copy is FXL121's.

## Why is this bad?
`reshape` returns a view when it can and a copy when it cannot, and nothing in
the code says which. A copy of a whole activation on every call, hidden in a
line that looks free, is memory traffic and a peak-memory bump nobody
budgeted for; in a loop it is paid once per iteration.

## Example
```python
flat = batch.permute(0, 3, 1, 2).reshape(B, -1)   # NHWC -> NCHW, then flatten: copies the batch
for step in range(T):
    feats.append(h.t().reshape(-1))               # h does not change: T copies of the same data
```

## Use instead
```python
flat = batch.reshape(B, -1)      # if any pixel order works for what follows: free view
h_flat = h.t().reshape(-1)       # once, before the loop
for step in range(T):
    feats.append(h_flat)
```

## When it is intentional
When you need the elements in the permuted order, the copy is the price; make
it explicit once where the layout is created (`.contiguous()`), or silence the
line with `# fxlint: ignore[FXL102]`.

`details` (the fields of `ReshapeCopy`): `merge` (input dims `(d-1, d)` the
new shape merges although they are not adjacent in memory), `shape` (new
shape), `case` (`ravel`, `repeated`, `reduced`, `needed`), `verdict`
(`avoidable` or `needed`), `input_layout`, `same_data_copies`, `copies`,
`source`, `backward_bytes`, `backward_copy` and `backward_copy_at` (the view
whose backward copies the gradient again, and its line).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from ..canon import CanonNode, GraphView
from ..canon.text import args_text, bytes_text, bytes_value, call_text, line_from, shape_value
from ..findings import Severity, Violation
from ..registry import Hit, RuleContext, rule
from ..tensor.symbolic import Dim
from ..tensor.viewable import check_view, ravel_copy_bytes
from ._backward import backward_layout_copies
from ._consumers import REDUCTION_OPS
from ._grad_layout import grad_layouts
from ._layout_hits import InputLayout
from ._sites import count_text, sites, source_key
from ._util import real_users

#: why the copy is reported: ``ravel`` (`.ravel()` where `.reshape(-1)` is a view), ``repeated`` (the
#: same data flattened again on the line), ``reduced`` (the result is only reduced as a whole), ``needed``
#: (the copy is what this element order costs)
Case = Literal["ravel", "repeated", "reduced", "needed"]


@dataclass(frozen=True)
class ReshapeCopy(Violation):
    """A `reshape`/`flatten`/`ravel` whose input layout cannot be viewed in the new shape, so it copies."""

    call: str  # as written: ".reshape(2, 48)", ".flatten()", ".ravel()", "nn.Flatten()"
    copied: int | str | None  # bytes per call on this line (a formula under dynamic shapes)
    input_layout: InputLayout  # the input's layout and the view op that made it
    shape: tuple[int | str, ...]  # the new shape
    merge: tuple[int, int] | None  # input dims (d-1, d) it merges although they are not adjacent in memory
    case: Case
    verdict: Literal["avoidable", "needed"]
    copies: list[str]  # the copy nodes on this line
    same_data_copies: int  # the most copies of the same data in the same layout on this line
    source: str  # the node reshaped
    backward_bytes: int | str | None = 0  # bytes the backward copies again at a view above the permute
    backward_copy: str | None = None  # that view, as written: ".reshape(-1, 8, 8, 2, 2, 4)"
    backward_copy_at: str | None = None  # and where: "line 215"

    def message(self) -> str:
        if self.case == "ravel":
            reason = ("`.ravel()` is `.contiguous().view(-1)`: it copies any non-contiguous input, "
                      "although `.reshape(-1)` is a free view of this one")
        else:
            merge = (f"it merges dims {self.merge[0]} and {self.merge[1]} of the input, which are not adjacent "
                     "in memory" if self.merge is not None else "the new shape cannot be expressed with strides")
            reason = f"{merge}, so it copies first (`.view()` would raise here)"
            if self.case == "repeated":
                reason += (f"; the same tensor is flattened {self.same_data_copies} times per call (a loop over "
                           "the same data): the copies after the first buy nothing")
            elif self.case == "reduced":
                reason += "; the result is only reduced as a whole, which the original layout gives for free"
        if self.backward_copy is not None:
            reason += (f"; in training the backward pays it again: the gradient comes back through the permute "
                       f"and `{self.backward_copy}` at {self.backward_copy_at} must copy it "
                       f"({bytes_text(self.backward_bytes)})")
        return (f"`{self.call}` copies {bytes_text(self.copied)} per call{count_text(len(self.copies))}: "
                f"its input is {self.input_layout.text()}; {reason}")

    def fix_title(self) -> str:
        if self.case == "ravel":
            return "use `.reshape(-1)` (or `.flatten()`): a view of this layout, no copy"
        if self.case == "repeated":
            return "flatten once, before the loop, and reuse the result"
        if self.case == "reduced":
            return f"reduce the tensor before `{self.call}` (e.g. `x.sum()` instead of `x.t().reshape(-1).sum()`)"
        return ("if the element order after the permute matters, this copy is its price: make it explicit "
                "once where the layout is made (`.contiguous()`); if any order works for what follows, "
                "reshape before the permute/transpose, where it is a free view")


@rule("FXL102", "reshape-copy", "warning", violation=ReshapeCopy)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    found = []
    info: dict[str, tuple] = {}
    for node in view.ops("reshape"):
        src, out = node.input, node.tensor
        if src is None or src.tensor is None or out is None or out.dtype != src.tensor.dtype:
            continue
        chk = check_view(src.tensor.shape, src.tensor.stride, out.shape)
        if _is_ravel(node):
            nbytes = ravel_copy_bytes(src.tensor)
        else:
            nbytes = None if chk.viewable is None else (0 if chk.viewable else src.tensor.nbytes)
        if not nbytes:
            continue  # a view, or undecided under dynamic shapes
        info[node.name] = (chk, nbytes)
        found.append((node, nbytes, source_key(src)))
    for site in sites(found, view):
        node = site.node
        src = node.input
        assert src is not None and src.tensor is not None and node.tensor is not None
        chk, _ = info[node.name]
        case: Case
        if _is_ravel(node) and chk.viewable:
            case = "ravel"
        elif site.repeats > 1:
            case = "repeated"
        elif _only_reduced(node):
            case = "reduced"
        else:
            case = "needed"
        bwd = _backward_again(site.nodes, view)
        bwd_bytes = sum(b for _, b in bwd) if bwd else 0
        violation = ReshapeCopy(
            call=_spelled(node),
            copied=bytes_value(site.nbytes),
            input_layout=InputLayout.of(src),
            shape=shape_value(node.tensor.shape),
            merge=chk.merge,
            case=case,
            verdict="needed" if case == "needed" else "avoidable",
            copies=[n.name for n in site.nodes],
            same_data_copies=site.repeats,
            source=src.name,
            backward_bytes=bytes_value(bwd_bytes),
            backward_copy=call_text(bwd[0][0]) if bwd else None,
            backward_copy_at=line_from(bwd[0][0], node) if bwd else None,
        )
        severity = Severity.INFO if case == "needed" else Severity.WARNING
        yield Hit(node, violation, bytes=site.nbytes, copy_sizes=site.copy_sizes, backward_bytes=bwd_bytes,
                  severity=severity, backward_sites=tuple(n.location for n, _ in bwd if n.location is not None))


def _backward_again(nodes: list[CanonNode], view: GraphView) -> list[tuple[CanonNode, Dim]]:
    """The views above the copied permute whose backward copies the gradient again, where that gradient comes from
    the graph's output through this copy (one laid out by an op in the graph is FXL121's finding)."""
    layouts = grad_layouts(view)
    out = []
    for n, b in (c for node in nodes for c in backward_layout_copies(node, view)):
        known = layouts.copy_at(n)
        if known is None or known.grad.made_by is None:
            out.append((n, b))
    return out


def _is_ravel(node: CanonNode) -> bool:
    return node.spelling.endswith("ravel") or ".ravel." in node.spelling


def _spelled(node: CanonNode) -> str:
    name = node.spelling.rsplit(".", 1)[-1]
    if node.spelling.startswith("aten."):
        name = node.spelling.split(".")[1]
    if name in ("flatten", "Flatten", "ravel"):
        return f".{name.lower()}()" if name != "Flatten" else "nn.Flatten()"
    if name == "reshape_as":
        return ".reshape_as(...)"  # its argument is a tensor, not the shape
    return f".{name}({args_text(node.tensor.shape)})" if node.tensor is not None else call_text(node)


def _only_reduced(node: CanonNode) -> bool:
    every = real_users(node)
    users = [u for u in every if u.kind != "output"]
    if not users or len(users) != len(every):
        return False
    return all(u.op in REDUCTION_OPS and u.tensor is not None and u.tensor.ndim == 0 for u in users)

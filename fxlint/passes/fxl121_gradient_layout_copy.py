"""A view (or a `linear` on a 3-D input) whose gradient comes back in another layout: the backward copies it to reshape it back; the op that lays the gradient out that way is named, with the spelling that avoids it.

## What it does
Follows the gradient's layout from the graph's outputs back, op by op (the
rules are in `fxlint/passes/_grad_layout.py`; a missing rule means no
prediction), and finds in training:

* a `view`/`reshape` (or an einops `rearrange`, which is one) whose
  gradient comes back laid out so that its backward, which reshapes the
  gradient to the view's input, must merge dims that are not adjacent in
  memory: `q = self.q_proj(x).view(B, N, H, D).transpose(1, 2)` whose
  gradient comes back contiguous in (B, H, N, D) order is copied by the
  view's backward (`ViewBackward0 > aten::reshape > aten::clone`);
* a `linear` on an input of three or more dims, whose backward folds its
  output's gradient to 2-D and copies it when the leading dims do not merge
  (`k = self.to_k(x)` whose gradient comes back from an `einsum` that read
  `k` transposed).

Each finding names the op whose backward wrote the gradient that way: a
matmul or `einsum` writes its operands' gradients contiguous in the order
it read them; `cat`, `chunk` and slices (the rotary embedding's
`rotate_half`), `softmax`, `layer_norm`, `where`, `masked_fill`, `relu` and
a `linear` on the permuted tensor (WavLM's gate) write a new contiguous
gradient; `F.scaled_dot_product_attention` on the
CPU writes q, k and v's gradients in the layout of
`x.view(B, N, H, D).transpose(1, 2)` (no copy there), except on its math
path (dropout inside it, or a mask that needs a gradient: the learned
position bias of T5 and WavLM), whose gradients are contiguous; a conv,
`batch_norm` or `group_norm` writes its input's gradient in that input's
layout (diffusers' attention block: `to_out` on (B, H*W, C), transposed back
to (B, C, H, W) for the next GroupNorm and conv). Where a `cat` joins the
tensor after such a permute (a UNet's skip connection), its piece of the
gradient is in the permuted order and the finding names the permute; a piece
still in the tensor's own order, cut along a middle dim (a class token
joined along the tokens), has no order that avoids the fold and is not
reported.

Repeated key and value heads (grouped-query attention's
`k[:, :, None].expand(...).reshape(...)` after the transpose) get their
gradient summed back over the repeats into a new tensor in the permuted
order: the views above copy it, and the fix is SDPA's `enable_gqa=True`
(measured: no backward copy) or the repeat before the transpose.

A view whose gradient comes back through a `.contiguous()` copy is FXL101's
(its backward bytes); pieces taken after a permute are FXL114's.

Bytes are what the backward copies per training step: the view's input (or
the `linear`'s output) once. The forward copies nothing.

## Why is this bad?
The forward's views are free, but the gradient must be put back in the
order of the tensor they view, and when the op that made the gradient wrote
it in the permuted order, that is a full copy of it every step. Measured
with the profiler (torch 2.13, CPU; B=2, N=16, H=4, D=8): q, k, v split
into heads with `.view(B, N, H, D).transpose(1, 2)` and attended with
`q @ k.transpose(-1, -2)`, softmax and `@ v`, the backward copies the q and
v gradients at their views; with `F.scaled_dot_product_attention(q, k, v)`
it copies nothing, forward or backward. With SDPA and the rotary embedding
applied after the transpose (Llama's `apply_rotary_pos_emb`), the backward
copies q's and k's gradients at their views; applied before the transpose,
on (B, N, H, D), nothing.

## Example
```python
q = self.q_proj(x).view(B, N, H, D).transpose(1, 2)
k = self.k_proj(x).view(B, N, H, D).transpose(1, 2)
v = self.v_proj(x).view(B, N, H, D).transpose(1, 2)
out = (q @ k.transpose(-1, -2) * scale).softmax(-1) @ v
```

## Use instead
```python
out = F.scaled_dot_product_attention(q, k, v)   # reads the strided views, returns their gradients in that layout
# and for the rotary embedding, rotate before the transpose:
q = apply_rotary_pos_emb(self.q_proj(x).view(B, N, H, D), cos, sin, unsqueeze_dim=2).transpose(1, 2)
```

## When it is intentional
Reported at info level: the copy is the price of the layout change the
forward makes for free, and the fix changes the kernel (SDPA) or the order
of the work. In inference nothing is copied (no backward) and nothing is
reported. A
model that has to run its own attention kernel (`output_attentions`, a
custom score function) pays the copy. Silence a line with
`# fxlint: ignore[FXL121]`.

`details` (the fields of `GradientLayoutCopy`): `call` (the view or
`linear` as written), `kind` (`view` or `linear`), `grad_strides` (the
gradient's predicted strides), `cause` (the op whose backward wrote it),
`cause_at` (its line), `fix` (`attention`, `attention-math`,
`before-permute`, `layout-op`, `permuted-back` or `expand`), `copied` (backward bytes per training step).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, call_text, line_from, shape_text
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._grad_layout import _IN_INPUT_LAYOUT, cause_name, first_permute_after, grad_layouts

#: products whose backward writes their operands' gradients contiguous in the order they read them
_PRODUCTS = frozenset({"matmul", "mm", "bmm", "einsum", "baddbmm", "addmm"})
#: ops that cut or join pieces, or compute elementwise into a new contiguous gradient
_BEFORE_PERMUTE = frozenset({"slice", "cat", "chunk", "split", "unbind", "split_with_sizes", "tensor_split",
                             "softmax", "log_softmax", "layer_norm", "where", "masked_fill", "relu", "linear"})


#: the torch functions the views and the linear are called as (``CopyEvent.func``)
_CALLS = frozenset({"view", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "permute", "transpose",
                    "linear", "__getitem__"})


@dataclass(frozen=True)
class GradientLayoutCopy(Violation):
    """A backward reshape of a gradient that comes back in another layout."""

    call: str
    kind: str  # "view" | "linear"
    grad_strides: tuple[int | str, ...]
    cause: str
    cause_at: str
    fix: str  # "attention" | "attention-math" | "before-permute" | "layout-op" | "permuted-back" | "expand"
    copied: int | str | None

    def message(self) -> str:
        what = (f"`{self.call}`'s backward reshapes its gradient back and copies it" if self.kind == "view" else
                "`linear`'s backward folds its output's gradient to 2-D and copies it")
        return (f"in training, {what} ({bytes_text(self.copied)} per training step): the gradient comes back with "
                f"strides {shape_text(self.grad_strides)}, as the backward of `{self.cause}` at {self.cause_at} "
                "writes it")

    def audit_calls(self) -> frozenset[str]:
        """The calls the forward "no copy" claim is about (another copy on the line is not this one's)."""
        return _CALLS

    def fix_title(self) -> str:
        if self.fix == "layout-op":
            return (f"`{self.cause}` hands back its input's gradient laid out as that input, which is in the permuted "
                    "order: do this step in the order the conv or norm works in (a 1x1 conv on (B, C, H, W) for a "
                    "linear over the channels), so that no permute sits between them")
        if self.fix == "expand":
            return (f"`{self.cause}`'s backward sums the gradient over the repeated dims into a new tensor in the "
                    "permuted order: for grouped-query attention pass the key and value heads to "
                    "F.scaled_dot_product_attention(..., enable_gqa=True) instead of repeating them, or repeat "
                    "before the permute, on the tensor in its own order")
        if self.fix == "permuted-back":
            return (f"`{self.cause}` lays this tensor back out in another order for what follows, and the gradient "
                    "comes back in that order: do this step in that order (a 1x1 conv on (B, C, H, W) for a "
                    "linear over the channels), or keep the tensor in this order until nothing needs the other")
        if self.fix == "attention-math":
            return ("F.scaled_dot_product_attention runs its math path here (dropout inside it, or a mask that needs a "
                    "gradient: a learned position bias), whose backward writes q, k and v's gradients contiguous; its "
                    "CPU flash kernel, which hands them back in the views' layout, runs without dropout and with a "
                    "mask that needs no gradient. With a learned bias the copy is its price")
        if self.fix == "attention":
            return ("for attention, call F.scaled_dot_product_attention(q, k, v): it reads the strided views and hands "
                    "their gradients back in their own layout (no copy, forward or backward); otherwise lay the "
                    f"tensor out in the order `{self.cause}` reads it where it is made")
        return (f"do `{self.cause}` before the permute, on the tensor in its own order (e.g. the rotary embedding "
                "before `.transpose(1, 2)`): its gradient then comes back in the view's order")


def _cause_text(node: CanonNode) -> str:
    if node.op == "slice" and node.args.get("index") is not None:
        return node.args["index"].text
    if node.op in ("permute", "view", "reshape", "expand"):
        return call_text(node)
    return cause_name(node)


def _row_major(strides: tuple[object, ...], node: CanonNode) -> bool:
    """The gradient keeps the tensor's own dim order (only gaps between the rows: a piece cut out of a larger
    gradient), as opposed to a permuted order."""
    t = node.tensor
    if t is None or not all(isinstance(s, int) for s in strides):
        return True
    big = [s for d, s in zip(t.shape, strides) if d != 1]
    return all(a >= b for a, b in pairwise(big))  # type: ignore[operator]


@rule("FXL121", "gradient-layout-copy", "info", violation=GradientLayoutCopy)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    layouts = grad_layouts(view)
    for c in layouts.copies:
        cause = c.grad.made_by
        if cause is None or c.grad.through_copy is not None:
            continue  # from the graph's output (nothing to move), or through a `.contiguous()` (FXL101's)
        permute = None
        if cause.op == "cat" and c.node.op == "linear":
            permute = first_permute_after(c.node, until=cause.position) if not _row_major(c.grad.strides, c.node) else None
            if permute is None:
                continue  # a joined tensor's piece folded to 2-D: no order of the linear's input avoids it
        if permute is not None:
            fix = "permuted-back"  # the piece is in the order of a permute after the linear: the permute decides
            cause = permute
        elif cause.op in _PRODUCTS:
            fix = "attention"
        elif cause.op == "scaled_dot_product_attention":
            fix = "attention-math"  # the math path (dropout, a mask that needs a gradient): contiguous gradients
        elif cause.op == "expand":
            fix = "expand"  # repeated heads (GQA's repeat_kv): summed back into the permuted order
        elif cause.op in _BEFORE_PERMUTE:
            fix = "before-permute"
        elif cause.op in _IN_INPUT_LAYOUT:
            fix = "layout-op"  # a conv or norm after the permute: its input's gradient in the permuted order
        else:
            continue  # no spelling to offer
        node = c.node
        call = "linear" if node.op == "linear" else call_text(node)
        violation = GradientLayoutCopy(
            call=call, kind="linear" if node.op == "linear" else "view",
            grad_strides=tuple(bytes_value(s) for s in c.grad.strides),  # type: ignore[misc]
            cause=_cause_text(cause), cause_at=line_from(cause, node), fix=fix, copied=bytes_value(c.bytes))
        yield Hit(node, violation, bytes=0, backward_bytes=c.bytes)

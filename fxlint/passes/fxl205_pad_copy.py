"""A pad that copies its input: a constant pad always (even when every width is zero), a reflect or replicate pad when its input is strided.

## What it does
Reports `F.pad(x, pad)` (mode `"constant"`, `nn.ZeroPad2d`,
`nn.ConstantPad*d`, `aten.constant_pad_nd`) with the copy it makes (see
`fxlint.kernels.pad`, checked against the runtime):

* **every width zero** (warning): `constant_pad_nd` returns a *clone* of the
  input when no width is positive, so a pad that pads nothing still reads and
  writes the whole tensor. Window attention pads by
  `(0, 0, 0, pad_w, 0, pad_h)`, which is all zeros whenever the feature map
  is already a multiple of the window: a full copy per block for nothing.
* **only negative widths** (warning): a crop, made with a copy; a slice is a
  view.
* **widths the graph does not know** (info, dynamic shapes): the pad copies
  whatever they turn out to be, and when they are all zero the copy buys
  nothing.
* **a real pad** (info): a new, larger tensor is filled and the input copied
  into it - the price of padding. Where the pad only feeds a convolution
  with symmetric zero widths, the conv pads for free (`padding=`).
* **a reflect or replicate pad of a strided input** (warning, CPU): these
  modes run their own kernels, which take a contiguous (or channels_last)
  input as it is and copy any other layout first - a transposed `(N, L, C)`
  view padded along `L`, a channel slice, a step slice. The padding itself
  is the kernel's output and copies nothing more.

The backward copies again (the gradient is narrowed back and cloned).

## Why is this bad?
The zero-width pad is a hidden full copy of an activation on every call
(11 MB per call in a window-attention model at 224 px). A real pad is not
wrong, but it is a copy the kernel around it could often do itself.

## Example
```python
pad_r = (self.window_size - W % self.window_size) % self.window_size
pad_b = (self.window_size - H % self.window_size) % self.window_size
x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))   # copies x even when pad_r == pad_b == 0
```

## Use instead
```python
if pad_r or pad_b:                          # pad only when there is something to pad
    x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
```
For a reflect or replicate pad, give it its input contiguous where that
input is made (the transpose of an attention block's output: transpose back
before the residual add, or keep the block's output in `(N, C, L)`).
For a real symmetric zero pad in front of a conv, give the conv
`padding=(ph, pw)` and drop the pad.

## Fix safety
`fxlint fix` (and `options={"rewrite": True}`) drops a pad whose widths are
statically all zero: the program then reads the input itself instead of a
copy of it, so the rewrite is applied only where nothing writes either tensor
in place afterwards and the result is not returned (it would alias the input).

## When it is intentional
A pad kept for a layout or a fresh buffer (`F.pad` as a copy). Silence the
line with `# fxlint: ignore[FXL205]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, call_text, dims_value, line_of, shape_text
from ..findings import Severity, Violation
from ..kernels import ops, predict
from ..kernels.pad import CROP, DYNAMIC, NOOP, STRIDED, pad_widths
from ..registry import FixSpec, Hit, RuleContext, rule
from ._layout_hits import backward_bytes, backward_copied, copy_sizes, layout_origin, made_by_text, origin, total, where

_KINDS = {NOOP: "noop", CROP: "crop", DYNAMIC: "dynamic", STRIDED: "strided"}


@dataclass(frozen=True)
class ConstantPadCopy(Violation):
    """A constant pad and the copy of its input it makes."""

    kind: Literal["noop", "crop", "dynamic", "pad", "strided"]  # every width zero, only negative ones, not known, a
    # real pad, a reflect/replicate pad copying a strided input
    origin: str  # the padded tensor, in the user's names
    shape: tuple[int | str, ...] | None  # its shape (a formula for a dynamic size)
    widths: tuple[int | str, ...]  # the widths as written (last dim first), "?" for one the graph does not know
    copied: int | str | None  # bytes copied per call
    backward_copied: int | str | None  # bytes copied again in backward (None: none)
    conv_padding: tuple[int, ...] | None  # the padding= of the conv the pad alone feeds, when it can take it over
    conv: str | None  # that conv's node
    mode: str = "constant"  # the pad's mode
    strides: tuple[int | str, ...] | None = None  # the input's strides (kind "strided")
    made_by: str | None = None  # the view op that made the input strided, as written (kind "strided")
    made_at: str | None = None  # where that op is ("line 14"), or file:line of the op that produced the input
    swap_operands: bool = False  # the input is a commutative elementwise result laid out like its strided first
    # operand (`swap`: that operand and the contiguous one, as written)
    swap: tuple[str, str] | None = None

    def message(self) -> str:
        w = "(" + ", ".join(str(x) for x in self.widths) + ")"
        cost = f"{bytes_text(self.copied)} per call"
        if self.backward_copied:
            cost += f", and again in backward ({bytes_text(self.backward_copied)} more per training step)"
        x = f"{self.origin} {shape_text(self.shape)}"
        if self.kind == "noop":
            return f"F.pad with widths {w} pads nothing but still copies {x}: {cost}"
        if self.kind == "crop":
            return f"F.pad with widths {w} only crops {x}, and copies the part it keeps: {cost}"
        if self.kind == "strided":
            strides = f" with strides {shape_text(self.strides)}" if self.strides else ""
            return (f"F.pad (mode {self.mode!r}) copies its input {x}{strides}"
                    f"{made_by_text(self.made_by, self.made_at)} before padding: {cost}; its kernel takes only a "
                    "contiguous or channels_last input as it is")
        if self.kind == "dynamic":
            return (f"F.pad with widths {w} copies {x} whatever the widths turn out to be: {cost}; when they are "
                    "all zero the copy buys nothing")
        return f"F.pad with widths {w} copies {x} into a new, larger tensor: {cost}"

    def fix_title(self) -> str:
        if self.kind == "noop":
            return ("skip the pad when there is nothing to pad (`if any(widths): x = F.pad(x, widths)`): F.pad "
                    "copies even when every width is zero")
        if self.kind == "crop":
            return "crop with a slice instead (`x[..., a:n - b]`): a slice is a view and copies nothing"
        if self.kind == "strided":
            if self.swap_operands and self.swap:
                first, second = self.swap
                return (f"{self.origin} is an elementwise result ({self.made_at}) laid out like its first operand, "
                        f"`{first}`, which is strided: put the contiguous `{second}` first (the op commutes) and "
                        f"the result, then the {self.mode} pad's input, is contiguous")
            at = (f" (`{self.made_by}` at {self.made_at})" if self.made_by and self.made_at
                  else f" ({self.made_at})" if self.made_at else "")
            return (f"produce {self.origin} contiguous where its layout is made{at}, in the layout the pad reads; "
                    f"the {self.mode} pad then reads it as it is")
        if self.kind == "dynamic":
            return ("guard the pad with its widths (`if pad_r or pad_b: x = F.pad(x, ...)`) so that the common "
                    "no-padding case copies nothing")
        if self.conv_padding is not None:
            return (f"drop the pad and give the conv padding={self.conv_padding}: it pads inside the kernel, "
                    "without a copy")
        return ("a real pad costs this copy; it can be avoided only by a consumer that pads itself (a conv's "
                "padding=, F.unfold's padding=) or by writing the producer's result into a padded buffer")


#: elementwise ops whose two operands can trade places without changing the result
_COMMUTATIVE = frozenset({"add", "mul", "maximum", "minimum"})


def _first_operand_strided(x: CanonNode | None) -> tuple[str, str] | None:
    """(the strided first operand, a contiguous other one), as written, when ``x`` is a commutative elementwise
    result whose first operand is strided while the other is contiguous with the result's shape: TensorIterator
    lays the result out like the first operand, so swapping them gives a contiguous result."""
    if x is None or x.op not in _COMMUTATIVE or x.tensor is None:
        return None
    ins = [i for i in x.tensor_inputs if i.tensor is not None]
    if len(ins) != 2 or ins[0].tensor is None or ins[1].tensor is None or ins[0].tensor.is_contiguous() is not False:
        return None
    other = ins[1].tensor
    if other.is_contiguous() is not True or tuple(other.shape) != tuple(x.tensor.shape):
        return None
    return origin(ins[0], x), origin(ins[1], x)


def _conv_padding(node: CanonNode, widths: tuple[int | None, ...]) -> tuple[CanonNode | None, tuple[int, ...] | None]:
    """The conv the pad alone feeds, and the ``padding=`` that would replace the pad (None when it cannot:
    a non-zero value, asymmetric widths, widths outside the spatial dims, a conv that pads already)."""
    users = node.users
    if len(users) != 1 or users[0].op != "conv" or users[0].args.get("input") is not node:
        return None, None
    conv = users[0]
    value = node.args.get("value")
    padding = conv.args.get("padding")
    if not isinstance(padding, tuple):
        return conv, None
    spatial = len(padding)
    if value not in (0, 0.0) or any(p != 0 for p in padding) or conv.args.get("transposed"):
        return conv, None
    if len(widths) > 2 * spatial or any(w is None for w in widths):
        return conv, None
    per_dim = [0] * spatial
    for i in range(len(widths) // 2):
        left, right = widths[2 * i], widths[2 * i + 1]
        if left != right or left is None or left < 0:
            return conv, None
        per_dim[spatial - 1 - i] = left
    return conv, tuple(per_dim)


@rule("FXL205", "pad-copy", "warning", violation=ConstantPadCopy, fix=FixSpec.rewrite_of(
    "drop-zero-pad", safe=False,
    why="the program then reads the input itself instead of a fresh copy of it: values are equal, but the result "
        "shares the input's memory (the rewrite is applied only where nothing writes either in place afterwards "
        "and the result is not returned)"))
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops(*ops(family="pad")):
        pred = predict(node)
        if pred is None:
            continue
        copies = pred.forward("input")
        if not copies:
            continue
        x = node.input
        t = x.tensor if x is not None else None
        widths = pad_widths(node.args.get("pad")) or ()
        kind = _KINDS.get(copies[0].reason, "pad")
        conv, padding = _conv_padding(node, widths) if kind == "pad" else (None, None)
        made = layout_origin(x) if kind == "strided" else None
        swap = _first_operand_strided(x) if kind == "strided" and made is None else None
        backward = pred.backward("input")
        violation = ConstantPadCopy(
            kind=kind,  # type: ignore[arg-type]
            origin=origin(x, node) if x is not None else "the input",
            shape=dims_value(t.shape) if t is not None else None,
            widths=tuple("?" if w is None else w for w in widths),
            copied=bytes_value(total(copies)),
            backward_copied=backward_copied(backward),
            conv_padding=padding,
            conv=conv.name if conv is not None and padding is not None else None,
            mode=str(node.args.get("mode") or "constant"),
            strides=dims_value(t.stride) if t is not None and kind == "strided" else None,
            made_by=call_text(made) if made is not None else None,
            made_at=line_of(made) if made is not None else where(x, node) if kind == "strided" else None,
            swap_operands=swap is not None,
            swap=swap,
        )
        severity = None if kind in ("noop", "crop", "strided") else Severity.INFO
        yield Hit(node, violation, bytes=total(copies), copy_sizes=copy_sizes(copies),
                  backward_bytes=backward_bytes(backward), severity=severity, dedup=node.name)

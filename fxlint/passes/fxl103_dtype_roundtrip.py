"""A -> B -> A dtype round trip (`x.half().float()`): two copies, and precision lost when B is narrower.

## What it does
Finds a dtype conversion whose result, with nothing computed in between (views
and reshapes aside), is converted straight back to the dtype it started from:
`x.half().float()`, `x.to(torch.bfloat16).to(torch.float32)`,
`x.double().type(torch.float32)`, `x.float().half()` on a half tensor. Every
spelling of a conversion counts (`.to(dtype)`, `.type(...)`, `.type_as(...)`,
`.half()`/`.float()`/..., `aten._to_copy`).

The message says whether the round trip loses information: float32 -> float16
rounds to an 11-bit mantissa and overflows past 65504, float32 -> bfloat16
keeps the range but only 8 bits of mantissa, float -> int truncates, int64 ->
int32 wraps. A round trip through a wider type (float32 -> float64 -> float32)
loses nothing and only costs the two copies.

Bytes are both copies when both conversions are on the same line (the
usual `x.half().float()`); when they are on two lines, each line gets a
finding with the copy it makes. When the intermediate tensor is also used
elsewhere, only the copy back is wasted and counted. Backward pays them again when
gradients flow: each conversion's backward converts the gradient back
(measured: `ToCopyBackward0`, same element count), counted in
`backward_bytes`.

## Why is this bad?
Each conversion allocates a new tensor and writes every element
(`aten::to > aten::_to_copy > aten::copy_`). Converting back and forth
computes nothing; in mixed-precision code it usually means a cast was added
"to be safe" where the original tensor was still at hand, and when the middle
type is narrower it silently rounds the values too.

## Example
```python
h = self.encoder(x)
h = h.half().float()        # "make sure it is float"
return self.head(h)
```

## Use instead
```python
h = self.encoder(x)
return self.head(h)         # h is float32 already
```
If the half-precision tensor is also used elsewhere, keep `h16 = h.half()` for
that use and read `h` (not `h16.float()`) where float32 is wanted.

## When it is intentional
Rounding through a narrower type on purpose (simulating low precision,
fake quantisation, matching a reference that stored half values): silence the
line with `# fxlint: ignore[FXL103]` and say why.

`details` (the fields of `DtypeRoundtrip`): `part` (`round_trip`, or
`first_half` for the first conversion's own line), `source` (the original
tensor's node), `first` and `back` (the two conversions' nodes), `dtype_from`,
`dtype_via`, `lossless` (True when B holds every value of A, so replacing the
pair by the source changes no result), `lost` (what the trip does to the
values), `intermediate_used_elsewhere`, the bytes of each copy,
`backward_bytes`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Literal

import torch

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, line_of, torch_name
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ..tensor.info import Dim
from ._backward import conversion_backward_bytes
from ._sites import numbered
from ._util import real_users, same_device


@dataclass(frozen=True)
class DtypeRoundtrip(Violation):
    """A -> B -> A: a dtype conversion converted straight back, computing nothing in between."""

    part: Literal["round_trip", "first_half"]  # the whole trip (at the conversion back), or the first
    # conversion when it is on another line than the conversion back (each line gets the copy it makes)
    dtype_from: str  # A: "float32"
    dtype_via: str  # B: "float16"
    lossless: bool  # B holds every value of A, so dropping both conversions changes no result
    lost: str | None  # what the trip through B does to the values, in words (None when lossless)
    intermediate_used_elsewhere: bool  # the B tensor has other users: only the copy back is wasted
    same_line: bool  # both conversions on one line
    copied: int | str | None  # the bytes this finding counts per call (a formula under dynamic shapes)
    first_copied: int | str | None  # the copy A -> B
    back_copied: int | str | None  # the copy B -> A
    first_at: str  # where the first conversion is: "line 12"
    back_at: str  # where the conversion back is
    backward_copied: int | str | None  # what backward converts again for this finding (0: nothing)
    source: str  # the node of the A tensor
    first: str  # the node of the first conversion
    back: str  # the node of the conversion back

    def message(self) -> str:
        a, b = self.dtype_from, self.dtype_via
        loss = "nothing is lost on the way" if self.lossless else f"on the way it {self.lost}"
        if self.part == "first_half":
            return (f"{a} -> {b} here, converted straight back to {a} at {self.back_at}: this half of the round "
                    f"trip copies {bytes_text(self.first_copied)} per call; {loss}"
                    + (f"; backward converts the gradient back ({bytes_text(self.backward_copied)})"
                       if self.backward_copied else ""))
        if self.intermediate_used_elsewhere:
            cost = (f"the conversion back copies {bytes_text(self.back_copied)} per call; {loss}; the {b} tensor "
                    f"is also used elsewhere, so only the copy back is wasted")
        elif self.same_line:
            cost = f"two copies, {bytes_text(self.copied)} per call, that compute nothing; {loss}"
        else:
            cost = (f"the conversion back copies {bytes_text(self.back_copied)} per call, and the first one, at "
                    f"{self.first_at}, {bytes_text(self.first_copied)}: two copies that compute nothing; {loss}")
        return (f"{a} -> {b} -> {a} round trip: {cost}"
                + (f"; backward converts the gradient back again ({bytes_text(self.backward_copied)})"
                   if self.backward_copied else ""))

    def fix_title(self) -> str:
        a, b = self.dtype_from, self.dtype_via
        if self.intermediate_used_elsewhere:
            return f"use the original {a} tensor where {a} is wanted instead of converting the {b} copy back"
        return (f"drop both conversions and keep the {a} tensor"
                + ("" if self.lossless else f" (if passing the values through {b} is the point, say so "
                   "with `# fxlint: ignore[FXL103]`)"))


@rule("FXL103", "dtype-roundtrip", "warning", violation=DtypeRoundtrip)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    for back in view.ops("to"):
        first, between = _previous_conversion(back)
        if first is None or first.input is None:
            continue
        src = first.input
        a, b, c = src.tensor, first.tensor, back.tensor
        if a is None or b is None or c is None:
            continue
        if a.dtype == b.dtype or c.dtype != a.dtype:
            continue  # not a conversion, or not back to where it started
        if same_device(a.device, b.device) is not True or same_device(b.device, c.device) is not True:
            continue  # device moves are FXL106's
        lossless = _lossless(a.dtype, b.dtype)
        other_uses = [u for u in real_users(first) if u not in between and u is not back]
        same_line = (first.location is not None and back.location is not None
                     and (first.location.file, first.location.line) == (back.location.file, back.location.line))
        first_bytes, back_bytes = b.nbytes, c.nbytes
        nbytes: Dim = back_bytes + first_bytes if same_line and not other_uses else back_bytes
        split = not same_line and not other_uses  # each line gets the copy it makes
        bwd_back, bwd_first = conversion_backward_bytes(back), conversion_backward_bytes(first)
        bwd = bwd_back + (bwd_first if not other_uses and not split else 0)
        trip = DtypeRoundtrip(
            part="round_trip",
            dtype_from=_name(a.dtype),
            dtype_via=_name(b.dtype),
            lossless=lossless,
            lost=None if lossless else _what_is_lost(a.dtype, b.dtype),
            intermediate_used_elsewhere=bool(other_uses),
            same_line=same_line,
            copied=bytes_value(nbytes),
            first_copied=bytes_value(first_bytes),
            back_copied=bytes_value(back_bytes),
            first_at=line_of(first),
            back_at=line_of(back),
            backward_copied=bytes_value(bwd),
            source=src.name,
            first=first.name,
            back=back.name,
        )
        yield Hit(back, trip, bytes=nbytes, backward_bytes=bwd)
        if split:
            half = replace(trip, part="first_half", copied=bytes_value(first_bytes),
                           backward_copied=bytes_value(bwd_first))
            yield Hit(first, half, bytes=first_bytes, backward_bytes=bwd_first)


def _previous_conversion(node: CanonNode) -> tuple[CanonNode | None, list[CanonNode]]:
    """The dtype conversion feeding ``node`` through view-like ops only (nothing computed between)."""
    between: list[CanonNode] = []
    cur = node.input
    while cur is not None:
        if cur.op == "to":
            return cur, between
        if not (cur.is_view or cur.op == "reshape") or len(real_users(cur)) != 1:
            return None, between
        between.append(cur)
        cur = cur.input
    return None, between


def _name(dtype: torch.dtype) -> str:
    return torch_name(dtype)


def _bits(dtype: torch.dtype) -> tuple[str, int, float]:
    """(kind, exact integer/mantissa bits, largest finite value)."""
    if dtype == torch.bool:
        return "bool", 1, 1.0
    if dtype.is_complex:
        return "complex", _nmant(_real(dtype)) + 1, torch.finfo(_real(dtype)).max
    if dtype.is_floating_point:
        return "float", _nmant(dtype) + 1, torch.finfo(dtype).max
    i = torch.iinfo(dtype)
    return "int", i.bits - (1 if i.min < 0 else 0), float(i.max)


def _lossless(a: torch.dtype, b: torch.dtype) -> bool:
    """Can ``b`` hold every value of ``a`` exactly?"""
    if a == b or a == torch.bool:
        return True
    ka, na, ma = _bits(a)
    kb, nb, mb = _bits(b)
    if kb == "bool":
        return False
    if ka == "complex" and kb != "complex":
        return False
    if ka in ("float", "complex") and kb == "int":
        return False
    if ka == "int" and kb == "int":
        signed_a, signed_b = torch.iinfo(a).min < 0, torch.iinfo(b).min < 0
        if signed_a and not signed_b:
            return False
        return mb >= ma and torch.iinfo(b).min <= torch.iinfo(a).min
    if ka == "int":  # int -> float/complex: exact while the integer fits the mantissa
        return nb >= na and mb >= ma
    fa, fb = torch.finfo(a if ka == "float" else _real(a)), torch.finfo(b if kb == "float" else _real(b))
    ra, rb = (a if ka == "float" else _real(a)), (b if kb == "float" else _real(b))
    return _nmant(rb) >= _nmant(ra) and fb.max >= fa.max and fb.tiny <= fa.tiny


def _nmant(dtype: torch.dtype) -> int:
    """Explicit mantissa bits (torch.finfo has no ``nmant``: eps is 2**-nmant)."""
    return round(-math.log2(torch.finfo(dtype).eps))


def _real(dtype: torch.dtype) -> torch.dtype:
    return {torch.complex64: torch.float32, torch.complex128: torch.float64}.get(dtype, torch.float32)


def _what_is_lost(a: torch.dtype, b: torch.dtype) -> str:
    ka, _, _ = _bits(a)
    kb, nb, _mb = _bits(b)
    if ka in ("float", "complex") and kb == "int":
        return f"truncates the values to {_name(b)} integers"
    if ka == "complex" and kb != "complex":
        return "drops the imaginary part"
    if kb == "int":
        return f"wraps values outside the {_name(b)} range"
    if kb == "bool":
        return "collapses every value to True/False"
    if ka == "int":
        return f"rounds integers above 2**{nb} ({_name(b)} holds {nb} bits exactly)"
    ra, rb = (a if ka == "float" else _real(a)), (b if kb == "float" else _real(b))
    fa, fb = torch.finfo(ra), torch.finfo(rb)
    parts = []
    if _nmant(rb) < _nmant(ra):
        parts.append(f"rounds the values to {_name(b)}'s {_nmant(rb) + 1}-bit mantissa")
    if fb.max * 2 < fa.max:  # a smaller exponent range, not just a shorter mantissa
        parts.append(f"turns values beyond {fb.max:g} into inf")
    return " and ".join(parts) or f"changes values that {_name(b)} cannot hold"

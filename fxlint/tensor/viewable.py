"""Can ``view``/``reshape``/``flatten`` express a new shape with strides, and what does a copy cost?

``view`` never copies: it either finds strides for the new shape over the same
memory or raises ``RuntimeError: view size is not compatible with input
tensor's size and stride``. ``reshape`` (and ``flatten``, ``reshape_as``,
``nn.Flatten``) asks the same question and, when the answer is no, copies the
whole tensor into a fresh contiguous one first
(``aten::reshape > aten::clone > aten::copy_`` in the profiler). ``ravel`` is
``contiguous().view(-1)``: it copies whenever the input is not contiguous,
even where ``reshape(-1)`` would be a view (``x[::2].ravel()``).

The answer is ATen's ``computeStride`` (``aten/src/ATen/TensorUtils.cpp``;
``torch/_subclasses/fake_impls.py::_compute_stride`` is its Python twin):
walk the input dims from the last, grouping dims that are adjacent in memory
(``stride[d-1] == size[d] * stride[d]``, size-1 dims join any group) into
chunks; every dim of the new shape must lie inside one chunk. So *splitting*
a dim is always a view, and *merging* dims is a view exactly when they are
adjacent in memory. Stride-0 (expanded) dims, step slices and size-1 dims
follow from the same rule; contiguity itself is not required
(``x.permute(1, 0, 2).view(a, b, c, d)`` that only splits is a view).

Everything here is symbolic-safe: sizes and strides may be sympy expressions
(dynamic shapes); an answer that depends on the symbols comes back as
``None``, never as a guess, and no guard is ever added. The stride arithmetic
itself is ``fxlint.tensor.layout``'s (``compute_stride``, ``view_strides``); this
module turns it into the answers the rules and messages need.

Checked against the runtime in ``tests/test_viewable.py``: predicted strides
equal ``Tensor.view``'s, ``view`` raises exactly where the prediction says no,
and the audit records a ``reshape`` copy of exactly the predicted bytes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .info import TensorInfo
from .layout import compute_stride, view_strides
from .symbolic import Dim, Undecided

__all__ = [
    "VIEW_ERROR",
    "ViewCheck",
    "can_view",
    "check_view",
    "contiguous_copy_bytes",
    "is_contiguous_as",
    "ravel_copy_bytes",
    "reshape_copy_bytes",
    "view_error_hint",
    "view_strides",
]

#: what ``Tensor.view`` raises when the layout cannot be viewed
VIEW_ERROR = "view size is not compatible with input tensor's size and stride"


@dataclass(frozen=True)
class ViewCheck:
    """The answer to "can a view express ``new_shape`` over this layout?".

    ``viewable`` is None when dynamic-shape symbols decide it. ``strides`` are
    the view's strides when it is viewable. ``merge`` is the pair of adjacent
    input dims ``(d - 1, d)`` the new shape needs merged although they are not
    adjacent in memory (the first such pair found, scanning from the last dim).
    """

    viewable: bool | None
    strides: tuple[Dim, ...] | None = None
    merge: tuple[int, int] | None = None


def check_view(shape: Sequence[Dim], stride: Sequence[Dim], new_shape: Sequence[Dim]) -> ViewCheck:
    """ATen's ``computeStride`` (``fxlint.tensor.layout.compute_stride``): can a tensor of
    ``shape``/``stride`` be viewed as ``new_shape``?

    ``new_shape`` must have the same number of elements (no ``-1``).
    """
    try:
        strides, merge = compute_stride(shape, stride, new_shape)
    except Undecided:
        return ViewCheck(None)
    return ViewCheck(True, strides) if strides is not None else ViewCheck(False, merge=merge)


def can_view(info: TensorInfo, new_shape: Sequence[Dim]) -> bool | None:
    """True when ``view``/``reshape`` to ``new_shape`` is a view of ``info``; None when symbols decide it."""
    return check_view(info.shape, info.stride, new_shape).viewable


def reshape_copy_bytes(info: TensorInfo, new_shape: Sequence[Dim]) -> Dim | None:
    """Bytes ``reshape(new_shape)`` copies: 0 when it is a view, every element otherwise; None when unknown."""
    ok = can_view(info, new_shape)
    if ok is None:
        return None
    return 0 if ok else info.nbytes


def is_contiguous_as(info: TensorInfo, memory_format: torch.memory_format | None = None) -> bool | None:
    """``Tensor.is_contiguous(memory_format)`` from shape and strides; None when symbols decide it."""
    if memory_format in (None, torch.contiguous_format, torch.preserve_format):
        return info.is_contiguous()
    if memory_format == torch.channels_last:
        return info.is_channels_last() if info.ndim == 4 else False
    if memory_format == torch.channels_last_3d:
        return info.is_channels_last() if info.ndim == 5 else False
    return None


def contiguous_copy_bytes(info: TensorInfo, memory_format: torch.memory_format | None = None) -> Dim | None:
    """Bytes ``.contiguous(memory_format)`` copies: 0 when the tensor already is; None when unknown."""
    ok = is_contiguous_as(info, memory_format)
    if ok is None:
        return None
    return 0 if ok else info.nbytes


def ravel_copy_bytes(info: TensorInfo) -> Dim | None:
    """Bytes ``ravel()`` copies: it is ``contiguous().view(-1)``."""
    return contiguous_copy_bytes(info)


_FAKE_VIEW_ERROR = re.compile(
    r"Cannot view a tensor with shape (?:torch\.Size\()?\[?\(?(?P<shape>[\d, ]*)\)?\]?\)? and strides "
    r"\((?P<stride>[\d, ]*)\) as a tensor with shape \((?P<new>[\d, ]*)\)")


def view_error_hint(text: str) -> str | None:
    """One line explaining a failed ``.view()`` (eager's or Dynamo's wording), or None when ``text``
    is about something else."""
    m = _FAKE_VIEW_ERROR.search(text)
    if m is None and VIEW_ERROR not in text:
        return None
    detail = ""
    if m is not None:
        def ints(s: str) -> tuple[int, ...]:
            return tuple(int(v) for v in s.replace(" ", "").split(",") if v)

        shape, stride, new = ints(m["shape"]), ints(m["stride"]), ints(m["new"])
        chk = check_view(shape, stride, new)
        where = f"dims {chk.merge[0]} and {chk.merge[1]} of" if chk.merge is not None else "dims of"
        detail = (f" (it would merge {where} a {tuple(shape)} tensor with strides {tuple(stride)}, which are not "
                  "adjacent in memory)")
    return ("a `.view()` cannot express its new shape on this layout" + detail + ": `.view()` never copies; "
            "use `.reshape()` (it copies when it must; fxlint FXL102 reports that copy) or call `.contiguous()` "
            "before `.view()`")

"""``Geometry``: a kernel operand's shape, strides, dtype and ``requires_grad`` - what the
kernels look at - with ATen's view ops and layout predicates over it (the arithmetic is
``fxlint.tensor.layout``'s)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from ..tensor import layout
from ..tensor.info import Sized, TensorInfo
from ..tensor.symbolic import Dim, Undecided

__all__ = ["Geometry", "dtype_name", "is_channels_last_dense", "on_cpu", "shape_text", "suggest_memory_format"]


@dataclass(frozen=True)
class Geometry(Sized):
    """A tensor's geometry: what the kernels look at (``ndim``, ``numel``, ``itemsize`` and
    ``nbytes`` come from ``Sized``)."""

    shape: tuple[Dim, ...]
    stride: tuple[Dim, ...]
    requires_grad: bool = False
    dtype: torch.dtype = torch.float32

    @classmethod
    def of(cls, t: TensorInfo) -> Geometry:
        if len(t.stride) != len(t.shape):
            raise Undecided("no strides")
        return cls(tuple(t.shape), tuple(t.stride), bool(t.requires_grad), t.dtype)

    def with_(self, shape: Sequence[Dim], stride: Sequence[Dim]) -> Geometry:
        return replace(self, shape=tuple(shape), stride=tuple(stride))

    def contiguous_copy(self, shape: Sequence[Dim] | None = None) -> Geometry:
        shape = tuple(self.shape if shape is None else shape)
        return self.with_(shape, layout.contiguous_strides(shape))

    # -- ATen's view ops ------------------------------------------------
    def transpose(self, d0: int, d1: int) -> Geometry:
        s, st = list(self.shape), list(self.stride)
        s[d0], s[d1] = s[d1], s[d0]
        st[d0], st[d1] = st[d1], st[d0]
        return self.with_(s, st)

    def mT(self) -> Geometry:
        return self.transpose(self.ndim - 2, self.ndim - 1)

    def unsqueeze(self, dim: int) -> Geometry:
        # inferUnsqueezeGeometry: the new dim's stride is sizes[dim] * strides[dim] (1 at the end)
        s, st = list(self.shape), list(self.stride)
        new_stride = 1 if dim >= self.ndim else s[dim] * st[dim]
        s.insert(dim, 1)
        st.insert(dim, new_stride)
        return self.with_(s, st)

    def squeeze0(self) -> Geometry:
        return self.with_(self.shape[1:], self.stride[1:])

    def select0(self) -> Geometry:
        return self.with_(self.shape[1:], self.stride[1:])

    def expand(self, shape: Sequence[Dim]) -> Geometry:
        """ATen's inferExpandGeometry."""
        return self.with_(shape, layout.expand_strides(self.shape, self.stride, shape))

    def reshape(self, new_shape: Sequence[Dim]) -> tuple[Geometry, bool]:
        """(result, copied) of ``reshape(new_shape)``: a view when ``computeStride`` allows it,
        else a contiguous copy."""
        st = layout.view_strides(self.shape, self.stride, new_shape)
        if st is None:
            return self.contiguous_copy(new_shape), True
        return self.with_(new_shape, st), False

    # -- predicates -----------------------------------------------------
    def is_contiguous(self) -> bool:
        return layout.is_contiguous(self.shape, self.stride)

    def is_contiguous_as(self, fmt: str) -> bool:
        return layout.is_contiguous_as(self.shape, self.stride, fmt)

    def is_non_overlapping_and_dense(self) -> bool:
        return layout.is_non_overlapping_and_dense(self.shape, self.stride)

    def suggest_memory_format(self) -> str:
        return layout.suggest_memory_format(self.shape, self.stride)


def on_cpu(*ts: TensorInfo | None) -> bool:
    """Every operand given is on the CPU (the models port the CPU kernels)."""
    return all(t is None or t.device.type == "cpu" for t in ts)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def shape_text(xs: Sequence[Dim]) -> str:
    return "(" + ", ".join(str(x) for x in xs) + (",)" if len(xs) == 1 else ")")


def suggest_memory_format(t: TensorInfo) -> str | None:
    """``Tensor.suggest_memory_format()`` of ``t``: contiguous, channels_last or
    channels_last_3d; None when symbols decide it."""
    try:
        return Geometry.of(t).suggest_memory_format()
    except Undecided:
        return None


def is_channels_last_dense(t: TensorInfo) -> str | None:
    """``channels_last``/``channels_last_3d`` when ``t`` is exactly that dense layout (and not also
    contiguous), else None (also when symbols decide it)."""
    try:
        lt = Geometry.of(t)
        fmt = lt.suggest_memory_format()
        if fmt != layout.CONTIGUOUS and lt.is_contiguous_as(fmt) and not lt.is_contiguous():
            return fmt
    except Undecided:
        return None
    return None

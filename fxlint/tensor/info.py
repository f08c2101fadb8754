"""Shape, stride, dtype and device of a node's value, safe for dynamic shapes.

Sizes and strides are ``int`` when known and ``sympy`` expressions when they
depend on dynamic-shape symbols. We never call ``int()`` or ``bool()`` on a
``SymInt`` here: that would add a guard to the user's compile. The arithmetic
is ``fxlint.tensor.symbolic``'s and the layout predicates are ``fxlint.tensor.layout``'s;
here they answer ``None`` when the symbols decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sympy
import torch

from . import layout
from .symbolic import Dim, Undecided, is_one, known, prod
from .symbolic import maybe_eq as dim_eq
from .symbolic import nbytes as _nbytes


def to_dim(x: Any) -> Dim:
    """An ``int`` or a sympy expression for a size, stride or offset."""
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, int):
        return x
    if isinstance(x, torch.SymInt):
        node = x.node
        const = node.maybe_as_int() if hasattr(node, "maybe_as_int") else None
        if const is not None:
            return int(const)
        expr = getattr(node, "expr", None)
        if expr is not None:
            if isinstance(expr, sympy.Integer):
                return int(expr)
            return expr
        return sympy.Symbol(str(x))
    if isinstance(x, sympy.Expr):
        return int(x) if isinstance(x, sympy.Integer) else x
    return int(x)


def fmt_dim(x: Dim) -> str:
    return str(x)


class Sized:
    """Sizes derived from ``shape`` and ``dtype`` (for ``TensorInfo`` and the kernel models'
    ``Geometry``)."""

    shape: tuple[Dim, ...]
    dtype: torch.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> Dim:
        return prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> Dim:
        return _nbytes(self.numel, self.itemsize)


@dataclass(frozen=True)
class TensorInfo(Sized):
    shape: tuple[Dim, ...]
    stride: tuple[Dim, ...]
    storage_offset: Dim
    dtype: torch.dtype
    device: torch.device
    requires_grad: bool = False
    is_parameter: bool = False

    @classmethod
    def from_tensor(cls, t: torch.Tensor) -> TensorInfo:
        try:
            stride = tuple(to_dim(s) for s in t.stride())
            offset = to_dim(t.storage_offset())
        except (RuntimeError, NotImplementedError):  # sparse / nested tensors have no strides
            stride, offset = (), 0
        return cls(
            shape=tuple(to_dim(s) for s in t.shape),
            stride=stride,
            storage_offset=offset,
            dtype=t.dtype,
            device=t.device,
            requires_grad=bool(t.requires_grad),
            # type() rather than isinstance(): Parameter's metaclass makes isinstance slow
            is_parameter=type(t) is torch.nn.Parameter or bool(getattr(t, "_is_param", False)),
        )

    # -- sizes (ndim, numel, itemsize, nbytes: Sized) ----------------------
    @property
    def is_symbolic(self) -> bool:
        return any(not isinstance(d, int) for d in (*self.shape, *self.stride))

    @property
    def is_floating(self) -> bool:
        return self.dtype.is_floating_point or self.dtype.is_complex

    def size(self, dim: int) -> Dim:
        return self.shape[dim]

    # -- layout (fxlint.tensor.layout's ATen ports; None when the symbols decide) ----
    def is_contiguous_in_order(self, order: Sequence[int]) -> bool | None:
        """Dense with ``order[0]`` the fastest-moving dim, ``order[-1]`` the slowest (ATen's
        ``compute_contiguous``: size-1 dims may have any stride; an empty tensor is contiguous)."""
        return layout.maybe_contiguous_in_order(self.shape, self.stride, order)

    def is_contiguous(self) -> bool | None:
        return self.is_contiguous_in_order(list(reversed(range(self.ndim))))

    def is_channels_last(self) -> bool | None:
        """channels_last (4-D, NHWC) or channels_last_3d (5-D, NDHWC) dense layout, as
        ``Tensor.is_contiguous(memory_format=...)`` says (an empty tensor only when its strides do)."""
        order = layout.CHANNELS_LAST_ORDER.get(self.ndim)
        if order is None:
            return False
        return layout.maybe_contiguous_in_order(self.shape, self.stride, order, empty_ok=False)

    def is_non_overlapping_and_dense(self) -> bool | None:
        """Dense in some dim order (a permutation of a contiguous tensor; any empty tensor)."""
        if len(self.stride) != len(self.shape):
            return None
        try:
            return layout.is_non_overlapping_and_dense(self.shape, self.stride)
        except Undecided:
            return None

    def has_zero_stride(self) -> bool:
        return any(isinstance(s, int) and s == 0 and not is_one(self.shape[i]) for i, s in enumerate(self.stride))

    def describe(self) -> str:
        shape = ",".join(fmt_dim(s) for s in self.shape)
        return f"{str(self.dtype).replace('torch.', '')}[{shape}]"


def human_bytes(n: Dim | None) -> str:
    """``6291456`` -> ``6.3 MB`` (decimal units, as users read them)."""
    if n is None:
        return "-"
    if not isinstance(n, int):
        return f"{n} B"
    if n < 1000:
        return f"{n} B"
    size = float(n)
    for unit in ("kB", "MB", "GB", "TB"):
        size /= 1000.0
        if size < 1000:
            return f"{size:.1f} {unit}"
    return f"{size:.1f} PB"


def info_of(value: Any) -> TensorInfo | tuple | None:
    """TensorInfo for a tensor value, a tuple of them for tuple values, else None."""
    if isinstance(value, torch.Tensor):
        return TensorInfo.from_tensor(value)
    if isinstance(value, (list, tuple)):
        return tuple(info_of(v) for v in value)
    return None


__all__ = ["Dim", "TensorInfo", "dim_eq", "human_bytes", "info_of", "known", "prod", "to_dim"]

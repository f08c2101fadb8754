"""Strides and memory formats: ATen's layout arithmetic, ported once, for shapes and strides
that may be dynamic-shape symbols.

Every function takes plain ``shape``/``stride`` sequences of ``Dim``
(``fxlint.tensor.symbolic``) and follows its convention: the strict functions answer
for every admissible value of the symbols or raise ``Undecided``; the
``maybe_*`` ones answer ``None`` instead. ``TensorInfo``'s layout predicates,
``fxlint.tensor.viewable`` and the kernel models (``fxlint.kernels``) all read their
layouts from here. What each function ports, and the tests that pin it
against torch itself (``tests/test_layout.py``):

* ``contiguous_strides``: ``make_contiguous_strides_for`` - a size 0 or 1
  counts as 1 (``torch.empty(3, 0, 4).stride() == (4, 4, 1)``).
* ``channels_last_strides``: ``get_channels_last_strides_2d/3d`` (no clamp).
* ``dense_strides``: the strides of a tensor dense in a dim order.
* ``is_contiguous_in_order`` / ``is_contiguous`` /
  ``is_channels_last_contiguous`` / ``is_contiguous_as``: ``compute_contiguous``
  and ``compute_channels_last_contiguous_2d/3d`` (size-1 dims take any stride;
  an empty tensor is contiguous, but not channels_last unless its strides
  say so).
* ``suggest_memory_format``: ``Tensor.suggest_memory_format()``
  (``is_channels_last_strides_2d_s4`` / ``_3d_s5``).
* ``is_non_overlapping_and_dense``: ``TensorImpl::is_non_overlapping_and_dense``
  (contiguous, channels_last, or ``compute_non_overlapping_and_dense``).
* ``iter_output_strides``: the strides ``TensorIterator`` gives an elementwise
  result (``reorder_dimensions``).
* ``expand_strides``, ``broadcast_shapes``: ``inferExpandGeometry``,
  ``infer_size``.
* ``compute_stride`` / ``view_strides``: ``computeStride``, what ``view`` and
  ``reshape`` ask (``aten/src/ATen/TensorUtils.cpp``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .symbolic import Dim, Undecided, eq, ge, gt, lt, max1, maybe_eq, ne, prod, require_int, simplify

__all__ = [
    "CHANNELS_LAST",
    "CHANNELS_LAST_3D",
    "CHANNELS_LAST_ORDER",
    "CONTIGUOUS",
    "broadcast_shapes",
    "channels_last_format",
    "channels_last_strides",
    "compute_stride",
    "contiguous_strides",
    "dense_strides",
    "expand_strides",
    "is_channels_last_contiguous",
    "is_contiguous",
    "is_contiguous_as",
    "is_contiguous_in_order",
    "is_non_overlapping_and_dense",
    "iter_output_strides",
    "maybe_contiguous_in_order",
    "suggest_memory_format",
    "view_strides",
]

CONTIGUOUS = "contiguous"
CHANNELS_LAST = "channels_last"
CHANNELS_LAST_3D = "channels_last_3d"

#: the channels_last dim orders, fastest first (NHWC: C, W, H, N; NDHWC: C, W, H, D, N)
CHANNELS_LAST_ORDER: dict[int, tuple[int, ...]] = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}


def channels_last_format(ndim: int) -> str | None:
    """``channels_last`` for 4-D, ``channels_last_3d`` for 5-D, else None."""
    return {4: CHANNELS_LAST, 5: CHANNELS_LAST_3D}.get(ndim)


def _contiguous_order(ndim: int) -> tuple[int, ...]:
    return tuple(range(ndim - 1, -1, -1))


# --------------------------------------------------------------------------- strides of fresh tensors


def dense_strides(shape: Sequence[Dim], order: Sequence[int]) -> tuple[Dim, ...]:
    """The strides of a tensor of ``shape`` stored dense with the dims in ``order`` (fastest
    first); sizes 0 and 1 count as 1, as in ``make_contiguous_strides_for`` (the contiguous
    order) and TensorIterator's outputs (any order)."""
    st: list[Dim] = [0] * len(shape)
    cur: Dim = 1
    for d in order:
        st[d] = cur
        cur = cur * max1(shape[d])
    return tuple(st)


def contiguous_strides(shape: Sequence[Dim]) -> tuple[Dim, ...]:
    """ATen's ``make_contiguous_strides_for``: the strides of ``torch.empty(shape)``."""
    return dense_strides(shape, _contiguous_order(len(shape)))


def channels_last_strides(shape: Sequence[Dim]) -> tuple[Dim, ...]:
    """ATen's ``get_channels_last_strides_2d/3d``: the strides of ``torch.empty(shape,
    memory_format=torch.channels_last)`` (4-D) or ``channels_last_3d`` (5-D). Unlike contiguous
    strides these do not count a size 0 as 1: ``(2, 0, 4, 4)`` gets ``(0, 1, 0, 0)``."""
    order = CHANNELS_LAST_ORDER.get(len(shape))
    if order is None:
        raise ValueError(f"channels_last strides need a 4-D or 5-D shape, not {tuple(shape)}")
    st: list[Dim] = [0] * len(shape)
    cur: Dim = 1
    for d in order:
        st[d] = cur
        cur = cur * shape[d]
    return tuple(st)


# --------------------------------------------------------------------------- contiguity


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def maybe_contiguous_in_order(shape: Sequence[Dim], stride: Sequence[Dim], order: Sequence[int], *,
                              empty_ok: bool = True) -> bool | None:
    """Dense with ``order[0]`` the fastest-moving dim: ATen's ``compute_contiguous`` (``empty_ok``)
    and ``compute_channels_last_contiguous_*`` (not ``empty_ok``). A size-1 dim takes any stride.
    None when the symbols decide it (or no strides are known).

    Each dim is checked on its own - its stride must equal the product of the sizes before it in
    ``order`` unless its size is 1 - so one undecided dim does not hide a definite mismatch."""
    if len(stride) != len(shape):
        return None
    if all(type(x) is int for x in (*shape, *stride)):  # the common case, without the symbolic machinery
        if empty_ok and 0 in shape:
            return True
        want = 1
        for d in order:
            if shape[d] != 1:
                if stride[d] != want:
                    return False
                want *= shape[d]
        return True
    result: bool | None = True
    expected: Dim = 1
    for d in order:
        ok = _or(maybe_eq(shape[d], 1), maybe_eq(stride[d], expected))
        if ok is False:
            result = False
            break
        if ok is None:
            result = None
        expected = expected * shape[d]  # a size that may be 1 multiplies by 1 then: same either way
    if empty_ok and result is not True:
        empty: bool | None = False
        for s in shape:
            empty = _or(empty, maybe_eq(s, 0))
        result = _or(empty, result)
    return result


def is_contiguous_in_order(shape: Sequence[Dim], stride: Sequence[Dim], order: Sequence[int], *,
                           empty_ok: bool = True) -> bool:
    """``maybe_contiguous_in_order``, raising ``Undecided`` instead of answering None."""
    out = maybe_contiguous_in_order(shape, stride, order, empty_ok=empty_ok)
    if out is None:
        raise Undecided("contiguity")
    return out


def is_contiguous(shape: Sequence[Dim], stride: Sequence[Dim]) -> bool:
    """``Tensor.is_contiguous()``."""
    return is_contiguous_in_order(shape, stride, _contiguous_order(len(shape)))


def is_channels_last_contiguous(shape: Sequence[Dim], stride: Sequence[Dim]) -> bool:
    """``Tensor.is_contiguous(memory_format=torch.channels_last)`` for 4-D tensors,
    ``channels_last_3d`` for 5-D; False for other ranks."""
    order = CHANNELS_LAST_ORDER.get(len(shape))
    return order is not None and is_contiguous_in_order(shape, stride, order, empty_ok=False)


def is_contiguous_as(shape: Sequence[Dim], stride: Sequence[Dim], fmt: str) -> bool:
    """Dense in memory format ``fmt`` (``contiguous``, ``channels_last``, ``channels_last_3d``);
    a channels_last format on a tensor of another rank means contiguous (what the kernels do)."""
    if fmt != CONTIGUOUS and channels_last_format(len(shape)) == fmt:
        return is_channels_last_contiguous(shape, stride)
    return is_contiguous(shape, stride)


def _strides_like_channels_last(shape: Sequence[Dim], stride: Sequence[Dim], order: Sequence[int]) -> bool:
    """ATen's ``is_channels_last_strides_2d_s4`` / ``_3d_s5``."""
    if eq(stride[1], 0):
        return False
    minimum: Dim = 0
    for d in order:
        if eq(shape[d], 0):
            return False
        if not ge(stride[d], minimum):
            return False
        if d == 0 and eq(minimum, stride[1]):
            return False  # N111 and N11W-sliced tensors: ambiguous, NCHW by default
        minimum = stride[d]
        if gt(shape[d], 1):
            minimum = minimum * shape[d]
    return True


def suggest_memory_format(shape: Sequence[Dim], stride: Sequence[Dim]) -> str:
    """``Tensor.suggest_memory_format()``: ``contiguous``, ``channels_last`` or ``channels_last_3d``."""
    fmt = channels_last_format(len(shape))
    if fmt is not None and _strides_like_channels_last(shape, stride, CHANNELS_LAST_ORDER[len(shape)]):
        return fmt
    return CONTIGUOUS


def is_non_overlapping_and_dense(shape: Sequence[Dim], stride: Sequence[Dim]) -> bool:
    """``TensorImpl::is_non_overlapping_and_dense``: contiguous (so any empty tensor),
    channels_last, or dense in some dim order (``compute_non_overlapping_and_dense``)."""
    n = len(shape)
    contiguous = maybe_contiguous_in_order(shape, stride, _contiguous_order(n))
    order = CHANNELS_LAST_ORDER.get(n)
    channels_last = False if order is None else maybe_contiguous_in_order(shape, stride, order, empty_ok=False)
    if contiguous is True or channels_last is True or _dense_in_some_order(shape, stride):
        return True
    if contiguous is None or channels_last is None:
        raise Undecided("contiguity")
    return False


def _dense_in_some_order(shape: Sequence[Dim], stride: Sequence[Dim]) -> bool:
    """ATen's ``compute_non_overlapping_and_dense``: sizes 0 and 1 aside, the dims sorted by
    stride are contiguous."""
    n = len(shape)
    if n == 1:
        return not ge(shape[0], 2) or eq(stride[0], 1)
    dims = [d for d in range(n) if ge(shape[d], 2)]
    dims.sort(key=lambda d: require_int(stride[d], "a stride to order by"))
    expected: Dim = 1
    for d in dims:
        if not eq(stride[d], expected):
            return False
        expected = expected * shape[d]
    return True


# --------------------------------------------------------------------------- elementwise results


def iter_output_strides(shape: Sequence[Dim], operands: Sequence[tuple[Sequence[Dim], Sequence[Dim]]]
                        ) -> tuple[Dim, ...]:
    """The strides ``TensorIterator`` gives the output of an elementwise op over ``operands``
    (``(shape, stride)`` pairs, broadcast to ``shape``): its ``reorder_dimensions``, ported."""
    n = len(shape)
    if all(is_contiguous(s, st) and len(s) == n and all(eq(a, b) for a, b in zip(s, shape))
           for s, st in operands):
        return contiguous_strides(shape)
    strides = []
    for s, st in operands:
        lead = n - len(s)
        row = []
        for d in range(n):
            od = d - lead
            if od < 0 or (eq(s[od], 1) and not eq(shape[d], 1)):
                row.append(0)
            else:
                row.append(st[od])
        strides.append(row)

    def should_swap(d0: int, d1: int) -> int:
        for row in strides:
            s0, s1 = row[d0], row[d1]
            if eq(s0, 0) or eq(s1, 0):
                continue
            if gt(s1, s0):
                return -1
            if gt(s0, s1):
                return 1
            if gt(shape[d0], shape[d1]):
                return 1
        return 0

    perm = list(range(n - 1, -1, -1))  # fastest first
    for i in range(1, n):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            c = should_swap(perm[dim0], perm[dim1])
            if c > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif c < 0:
                break
    return dense_strides(shape, perm)


# --------------------------------------------------------------------------- views


def expand_strides(shape: Sequence[Dim], stride: Sequence[Dim], new_shape: Sequence[Dim]) -> tuple[Dim, ...]:
    """ATen's ``inferExpandGeometry``: the strides of ``expand(new_shape)`` (0 on broadcast dims)."""
    new_shape = tuple(new_shape)
    nd, td = len(new_shape), len(shape)
    st: list[Dim] = [0] * nd
    for i in range(nd - 1, -1, -1):
        dim = td - (nd - i)
        size = shape[dim] if dim >= 0 else 1
        s = stride[dim] if dim >= 0 else new_shape[i + 1] * st[i + 1] if i + 1 < nd else 1
        if not eq(size, new_shape[i]):
            s = 0  # a size-1 dim broadcast to new_shape[i]
        st[i] = s
    return tuple(st)


def broadcast_shapes(a: Sequence[Dim], b: Sequence[Dim]) -> tuple[Dim, ...]:
    """The broadcast of two shapes (ATen's ``infer_size``; the shapes are assumed compatible)."""
    out: list[Dim] = []
    a, b = list(a), list(b)
    for i in range(max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        out.append(y if eq(x, 1) else x)
    return tuple(reversed(out))


def compute_stride(shape: Sequence[Dim], stride: Sequence[Dim], new_shape: Sequence[Dim]
                   ) -> tuple[tuple[Dim, ...] | None, tuple[int, int] | None]:
    """ATen's ``computeStride`` (``torch/_subclasses/fake_impls.py::_compute_stride`` is its
    Python twin): ``(strides, None)`` when ``view(new_shape)`` can express the new shape over
    this layout, ``(None, merge)`` when it cannot - ``merge`` is the pair of adjacent input dims
    ``(d - 1, d)`` the new shape needs merged although they are not adjacent in memory (the first
    found from the last dim; None when no single pair is to blame). ``new_shape`` has the same
    number of elements (no ``-1``). Raises ``Undecided``.

    Walks the input dims from the last, grouping dims adjacent in memory
    (``stride[d-1] == size[d] * stride[d]``; size-1 dims join any group) into chunks; every
    dim of the new shape must lie inside one chunk."""
    shape, stride, new_shape = tuple(shape), tuple(stride), tuple(new_shape)
    if len(shape) == 0:
        return tuple(1 for _ in new_shape), None
    if len(stride) != len(shape):
        raise Undecided("no strides")  # sparse, nested: nothing to say
    zero = eq(prod(shape), 0)
    if zero and shape == new_shape:
        return stride, None
    new_stride: list[Dim] = [0] * len(new_shape)
    if zero:
        return contiguous_strides(new_shape), None
    view_d = len(new_shape) - 1
    chunk_base_stride: Dim = stride[-1]
    tensor_numel: Dim = 1
    view_numel: Dim = 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel = tensor_numel * shape[tensor_d]
        if tensor_d == 0 or (
            ne(shape[tensor_d - 1], 1) and not eq(stride[tensor_d - 1], tensor_numel * chunk_base_stride)
        ):
            while view_d >= 0 and (lt(view_numel, tensor_numel) or eq(new_shape[view_d], 1)):
                new_stride[view_d] = simplify(view_numel * chunk_base_stride)
                view_numel = view_numel * new_shape[view_d]
                view_d -= 1
            if not eq(view_numel, tensor_numel):
                return None, ((tensor_d - 1, tensor_d) if tensor_d > 0 else None)
            if tensor_d > 0:
                chunk_base_stride = stride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None, None
    return tuple(new_stride), None


def view_strides(shape: Sequence[Dim], stride: Sequence[Dim], new_shape: Sequence[Dim]) -> tuple[Dim, ...] | None:
    """The strides ``Tensor.view(new_shape)`` would have; None when it cannot view (``view``
    raises, ``reshape`` copies). Raises ``Undecided`` when the symbols decide it."""
    return compute_stride(shape, stride, new_shape)[0]

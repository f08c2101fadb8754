"""The one home of layout arithmetic (fxlint/tensor/layout.py) against torch itself: contiguous and
channels_last strides, contiguity predicates, suggest_memory_format, non-overlapping-and-dense,
TensorIterator's output strides, expand and view strides - size-0 and size-1 dims included,
where the duplicates this module replaced disagreed."""

from __future__ import annotations

import itertools
import math

import pytest
import sympy
import torch
from torch._prims_common import make_contiguous_strides_for, suggest_memory_format

from fxlint.tensor import layout as L
from fxlint.tensor.symbolic import Undecided
from fxlint.tensor.info import TensorInfo
from fxlint.tensor.viewable import check_view
from tests._sweep import strides_for

TI = TensorInfo.from_tensor

#: shapes with size-0 and size-1 dims where they change the answer
SHAPES = [(), (0,), (1,), (3,), (3, 0, 4), (0, 3), (3, 0), (2, 1, 4), (1, 1), (2, 0, 0, 3), (1, 0, 1), (2, 3, 4)]
SHAPES_4D = [(2, 3, 4, 5), (1, 3, 1, 5), (2, 1, 4, 4), (1, 1, 1, 1), (2, 3, 1, 1), (0, 3, 4, 5), (2, 0, 4, 4)]
SHAPES_5D = [(2, 3, 4, 5, 2), (1, 3, 1, 1, 2), (0, 3, 2, 2, 2)]


def layouts(shape):
    """Every permutation of a dense layout, a step slice on the last dim, an expanded first dim,
    padded rows."""
    n = len(shape)
    for order in itertools.permutations(range(n)):
        yield strides_for(shape, order=order)
    if n:
        yield strides_for(shape, step={n - 1: 2})
        yield strides_for(shape, zero=(0,))
        yield strides_for(shape, pad={n - 1: 2})


def tensors(shapes):
    for shape in shapes:
        for st in dict.fromkeys(layouts(shape)):
            yield torch.empty_strided(shape, st)


# --------------------------------------------------------------------------- fresh strides


@pytest.mark.parametrize("shape", SHAPES + SHAPES_4D, ids=str)
def test_contiguous_strides_are_torch_empty_strides(shape):
    """ATen clamps sizes 0 and 1 to 1 (``make_contiguous_strides_for``): ``torch.empty(3, 0, 4)``
    has strides (4, 4, 1). The copy in passes/_copies.py did not clamp and said (0, 4, 1)."""
    assert L.contiguous_strides(shape) == torch.empty(shape).stride() == tuple(make_contiguous_strides_for(shape))


@pytest.mark.parametrize("shape", SHAPES_4D + SHAPES_5D, ids=str)
def test_channels_last_strides_are_torch_channels_last_strides(shape):
    """``get_channels_last_strides_2d`` does not clamp a size 0: (2, 0, 4, 4) -> (0, 1, 0, 0)."""
    fmt = torch.channels_last if len(shape) == 4 else torch.channels_last_3d
    expect = torch.empty(shape, memory_format=fmt).stride()
    assert L.channels_last_strides(shape) == expect
    if 0 not in shape:  # dense in the channels_last order: the same strides
        assert L.dense_strides(shape, L.CHANNELS_LAST_ORDER[len(shape)]) == expect


# --------------------------------------------------------------------------- predicates


def test_contiguity_predicates_agree_with_torch():
    for t in tensors(SHAPES + SHAPES_4D + SHAPES_5D):
        shape, st = tuple(t.shape), t.stride()
        assert L.is_contiguous(shape, st) == t.is_contiguous(), (shape, st)
        assert TI(t).is_contiguous() == t.is_contiguous(), (shape, st)
        if t.ndim in (4, 5):
            fmt = torch.channels_last if t.ndim == 4 else torch.channels_last_3d
            expect = t.is_contiguous(memory_format=fmt)
            assert L.is_channels_last_contiguous(shape, st) == expect, (shape, st)
            assert L.is_contiguous_as(shape, st, str(fmt).replace("torch.", "")) == expect, (shape, st)
            assert TI(t).is_channels_last() == expect, (shape, st)
        else:
            assert L.is_channels_last_contiguous(shape, st) is False


def test_an_empty_tensor_is_contiguous_but_channels_last_only_when_its_strides_say_so():
    """The TensorInfo predicate used to call every empty tensor channels_last (its contiguity
    shortcut); ATen's compute_channels_last_contiguous_2d has no such shortcut."""
    nchw = torch.empty(0, 3, 4, 5)
    nhwc = torch.empty(0, 3, 4, 5, memory_format=torch.channels_last)
    assert nchw.is_contiguous() and not nchw.is_contiguous(memory_format=torch.channels_last)
    assert TI(nchw).is_contiguous() is True and TI(nchw).is_channels_last() is False
    assert TI(nhwc).is_channels_last() is True


def test_suggest_memory_format_agrees_with_torch():
    """torch's Python port of c10's is_channels_last_strides_* decides; where a tensor is not
    non-overlapping-and-dense, ``empty_like`` shows the C++ answer too (it allocates in the
    suggested format)."""
    for t in tensors(SHAPES + SHAPES_4D + SHAPES_5D):
        shape, st = tuple(t.shape), t.stride()
        expect = str(suggest_memory_format(t)).replace("torch.", "").replace("_format", "")
        assert L.suggest_memory_format(shape, st) == expect, (shape, st)
        if t.ndim in (4, 5) and not L.is_non_overlapping_and_dense(shape, st) \
                and L.channels_last_strides(shape) != L.contiguous_strides(shape):
            cpp = "contiguous" if torch.empty_like(t).stride() == L.contiguous_strides(shape) else "channels_last"
            assert expect.startswith(cpp), (shape, st)


def test_non_overlapping_and_dense_agrees_with_torch():
    """Torch's answer, read where it decides something: ``empty_like`` keeps the strides exactly
    when the tensor is non-overlapping and dense. Every empty tensor is (it is contiguous), which
    the port of compute_non_overlapping_and_dense alone got wrong: ``(0, 3)`` with strides (1, 5)."""
    for t in tensors(SHAPES + SHAPES_4D + SHAPES_5D):
        expect = torch.empty_like(t).stride() == t.stride()
        assert L.is_non_overlapping_and_dense(tuple(t.shape), t.stride()) == expect, (tuple(t.shape), t.stride())
        assert TI(t).is_non_overlapping_and_dense() == expect, (tuple(t.shape), t.stride())
    t = torch.empty_strided((0, 3), (1, 5))
    assert torch.empty_like(t).stride() == (1, 5) and L.is_non_overlapping_and_dense((0, 3), (1, 5))


# --------------------------------------------------------------------------- elementwise results


def test_iter_output_strides_are_torch_elementwise_result_strides_on_every_dim_that_moves():
    """TensorIterator's output strides (size-1 dims aside: their stride is never read)."""
    for shape in [(2, 3, 4), (4, 1, 6), (2, 3, 4, 5), (1, 3, 1, 5), (2, 1, 4, 4)]:
        others = list(dict.fromkeys(layouts(shape)))[:6]
        for sa in dict.fromkeys(layouts(shape)):
            a = torch.empty_strided(shape, sa)
            for b in [torch.empty_strided(shape, sb) for sb in others] + [torch.empty(shape[:-1] + (1,))]:
                got = L.iter_output_strides(shape, [(a.shape, a.stride()), (b.shape, b.stride())])
                expect = (a * b).stride()
                assert [g for g, s in zip(got, shape) if s > 1] == [e for e, s in zip(expect, shape) if s > 1], \
                    (shape, a.stride(), b.stride())


# --------------------------------------------------------------------------- views


def test_expand_strides_and_broadcast_shapes_agree_with_torch():
    cases = [((3, 1), (3, 4)), ((1, 4), (2, 3, 4)), ((4,), (2, 4)), ((2, 1, 3), (2, 5, 3)), ((1,), (0,))]
    for shape, new in cases:
        t = torch.empty(shape)
        assert L.expand_strides(shape, t.stride(), new) == t.expand(new).stride(), (shape, new)
        assert L.broadcast_shapes(shape, new) == tuple(torch.broadcast_shapes(shape, new))


def _targets(shape):
    n = math.prod(shape)
    if n == 0:
        yield from [(0,), tuple(reversed(shape)), (0, 5), (5, 0, 1), (1, 0)]
        return
    yield from [(n,), (1, n), (n, 1), tuple(reversed(shape)), (shape[0], n // shape[0]),
                (n // shape[-1], shape[-1]), (1,) + tuple(shape), tuple(shape) + (1,)]


@pytest.mark.parametrize("shape", [(2, 3, 4), (4, 1, 6), (2, 3, 1, 4), (3, 0, 4), (0,), (1, 1), (2, 1), (1,), ()],
                         ids=str)
def test_view_strides_are_torch_view_strides(shape):
    """``view_strides`` is ATen's computeStride: the strides ``Tensor.view`` gives, None exactly
    where ``view`` raises (``reshape`` copies there). Size-0 tensors view as anything with no
    elements, with contiguous strides; size-1 dims join any chunk."""
    for st in dict.fromkeys(layouts(shape)) if shape else [()]:
        t = torch.empty_strided(shape, st)
        for target in dict.fromkeys(_targets(shape)) if shape else [(1,), (1, 1), ()]:
            try:
                expect = t.view(target).stride()
            except RuntimeError:
                expect = None
            got = L.view_strides(shape, st, target)
            assert got == expect, (shape, st, target)
            chk = check_view(shape, st, target)
            assert chk.viewable is (expect is not None) and chk.strides == expect


def test_view_strides_names_the_dims_that_do_not_merge():
    # (2, 3, 4) permuted to strides (4, 8, 1): merging dims 0 and 1 is what memory does not allow
    assert L.compute_stride((2, 3, 4), (4, 8, 1), (6, 4)) == (None, (0, 1))
    assert L.compute_stride((2, 3, 4), (12, 4, 1), (6, 4)) == ((4, 1), None)


# --------------------------------------------------------------------------- symbols


def test_symbols_decide_what_holds_for_every_size_of_two_or_more_and_nothing_else():
    s0 = sympy.Symbol("s0", integer=True, positive=True)
    assert L.is_contiguous((s0, 4), (4, 1)) is True
    assert L.is_contiguous((4, s0), (1, 4)) is False
    with pytest.raises(Undecided):
        L.is_contiguous((3, 4), (s0, 1))  # contiguous only if s0 == 4
    assert L.maybe_contiguous_in_order((3, 4), (s0, 1), (1, 0)) is None
    # one undecided dim does not hide a definite mismatch in another
    assert L.maybe_contiguous_in_order((3, 4, 5), (s0, 1, 7), (2, 1, 0)) is False
    # a size that may be 1 (s0 - 1 at s0 == 2) passes when its stride is right either way
    assert L.is_contiguous((s0 - 1, 4), (4, 1)) is True
    assert L.maybe_contiguous_in_order((s0 - 1, 4), (7, 1), (1, 0)) is None
    assert L.contiguous_strides((s0, 3, 0)) == (3, 1, 1)
    assert L.view_strides((s0, 4), (4, 1), (4 * s0,)) == (1,)
    assert L.view_strides((4, s0), (1, 4), (4 * s0,)) is None
    with pytest.raises(Undecided):
        L.view_strides((3, 4), (s0, 1), (12,))
    assert check_view((3, 4), (s0, 1), (12,)).viewable is None
    ti = TensorInfo(shape=(3, 4), stride=(s0, 1), storage_offset=0, dtype=torch.float32, device=torch.device("cpu"))
    assert ti.is_contiguous() is None and ti.is_non_overlapping_and_dense() is None

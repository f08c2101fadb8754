"""The view/reshape stride model (fxlint/tensor/viewable.py) against the runtime.

The property sweep builds tensors in many layouts (permutations, transposes,
step slices, offsets, expanded stride-0 dims, size-1 and size-0 dims, dtypes,
channels_last / channels_last_3d) and many target shapes (splits, merges,
full flattens, random factorisations, inserted 1s), and checks, for each:

* ``Tensor.view`` succeeds exactly when ``check_view`` says it can, with the
  predicted strides;
* the runtime audit of ``reshape`` records a copy of exactly
  ``reshape_copy_bytes`` (0 when it is a view);
* ``flatten``, ``ravel`` and ``contiguous(memory_format)`` copy exactly what
  the model predicts.

Hypothesis is derandomized with a fixed budget, so the sweep is the same on
every run (see SWEEP_EXAMPLES).
"""

from __future__ import annotations

import math

import pytest
import sympy
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fxlint
from fxlint.tensor.info import TensorInfo
from fxlint.tensor.viewable import (
    can_view,
    check_view,
    contiguous_copy_bytes,
    ravel_copy_bytes,
    reshape_copy_bytes,
    view_strides,
)

SWEEP_EXAMPLES = 300
SWEEP = settings(max_examples=SWEEP_EXAMPLES, derandomize=True, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow])
DTYPES = [torch.float32, torch.float16, torch.int64, torch.bool, torch.float64]


def info(t: torch.Tensor) -> TensorInfo:
    return TensorInfo.from_tensor(t)


# --------------------------------------------------------------------------- hand-picked cases


def test_the_seed_examples():
    t = torch.randn(4, 6)
    assert can_view(info(t.T), (24,)) is False  # seed: tt.view(24) raises
    assert reshape_copy_bytes(info(t.T), (24,)) == 24 * 4  # reshape copies all of it
    assert can_view(info(t), (24,)) is True and reshape_copy_bytes(info(t), (24,)) == 0
    x = torch.randn(16, 32, 64).transpose(0, 2)  # seed: x.flatten() "always copies"
    assert reshape_copy_bytes(info(torch.randn(16, 32, 64)), (16 * 32 * 64,)) == 0  # not on a contiguous x
    assert reshape_copy_bytes(info(x), (16 * 32 * 64,)) == x.numel() * 4


def test_nhwc_permute_then_view_same_shape_is_a_view_but_flattening_is_not():
    b = torch.randn(8, 32, 32, 3).permute(0, 3, 1, 2)  # NHWC batch seen as NCHW
    assert check_view(b.shape, b.stride(), (8, 3, 32, 32)).strides == b.stride()  # view(-1, 3, H, W) is free
    chk = check_view(b.shape, b.stride(), (8, 3 * 32 * 32))
    assert chk.viewable is False and chk.merge == (1, 2)  # merging C with H is what memory does not allow
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        b.view(8, -1)


def test_splitting_a_non_contiguous_dim_is_a_view():
    x = torch.randn(4, 6, 8).permute(1, 0, 2)
    assert not x.is_contiguous()
    assert view_strides(x.shape, x.stride(), (2, 3, 4, 8)) == x.view(2, 3, 4, 8).stride()


def test_expanded_and_size_one_dims():
    y = torch.randn(1, 5).expand(4, 5)
    assert can_view(info(y), (4, 5, 1)) is True
    assert can_view(info(y), (20,)) is False and reshape_copy_bytes(info(y), (20,)) == 80
    z = torch.randn(3, 1, 4).transpose(0, 1)  # a size-1 dim moved: still contiguous memory order
    assert can_view(info(z), (12,)) is True


def test_zero_dim_and_empty_tensors():
    s = torch.tensor(3.0)
    assert view_strides((), (), (1, 1)) == (1, 1)
    assert can_view(info(s), (1,)) is True
    e = torch.randn(0, 4).t()
    assert can_view(info(e), (0,)) is True and reshape_copy_bytes(info(e), (0,)) == 0


def test_ravel_copies_where_reshape_does_not():
    x = torch.randn(12)[::2]
    assert reshape_copy_bytes(info(x), (6,)) == 0
    assert ravel_copy_bytes(info(x)) == 24
    [c] = fxlint.audit(lambda x: x.ravel(), (x,)).copies
    assert c.bytes == 24 and c.top_op == "aten::ravel" and c.op == "aten::contiguous"
    assert fxlint.audit(lambda x: x.reshape(-1), (x,)).copies == []


def test_contiguous_copy_bytes_by_memory_format():
    x = torch.randn(2, 3, 4, 5)
    cl = x.contiguous(memory_format=torch.channels_last)
    assert contiguous_copy_bytes(info(x)) == 0
    assert contiguous_copy_bytes(info(cl)) == x.numel() * 4
    assert contiguous_copy_bytes(info(cl), torch.channels_last) == 0
    assert contiguous_copy_bytes(info(x), torch.channels_last) == x.numel() * 4
    assert contiguous_copy_bytes(info(torch.randn(2, 3, 4)), torch.channels_last) == 24 * 4  # not 4-D


def test_symbolic_shapes_answer_only_what_the_symbols_do_not_decide():
    s = sympy.Symbol("s0", positive=True, integer=True)
    # (s0, 4) contiguous: flattening is a view for every s0
    assert check_view((s, 4), (4, 1), (4 * s,)).viewable is True
    # transposed: merging needs stride 1 == 4*s0, never true for a positive integer s0
    assert check_view((4, s), (1, 4), (4 * s,)).viewable is False
    # whether strides (s0, 1) merge with a dim of size 4 depends on s0 == 4: undecided, not a guess
    assert check_view((3, 4), (s, 1), (12,)).viewable is None
    t = TensorInfo(shape=(4, s), stride=(1, 4), storage_offset=0, dtype=torch.float32, device=torch.device("cpu"))
    assert reshape_copy_bytes(t, (4 * s,)) == 16 * s


# --------------------------------------------------------------------------- property sweep


@st.composite
def layouts(draw):
    """A recipe (pure data, printed by hypothesis on failure) and the tensor it builds."""
    rank = draw(st.integers(1, 5))
    sizes = st.sampled_from([1, 2, 3, 4]) if rank >= 4 else st.sampled_from([0, 1, 2, 3, 4, 5, 6])
    shape = draw(st.lists(sizes, min_size=rank, max_size=rank))
    if rank < 4 and 0 in shape and draw(st.integers(0, 3)) > 0:  # keep empty tensors rare
        shape = [s or 2 for s in shape]
    dtype = draw(st.sampled_from(DTYPES))
    recipe: list[tuple] = [("base", tuple(shape), str(dtype))]
    t = torch.zeros(shape, dtype=dtype)
    if rank == 4 and draw(st.booleans()):
        t = t.contiguous(memory_format=torch.channels_last)
        recipe.append(("channels_last",))
    if rank == 5 and draw(st.booleans()):
        t = t.contiguous(memory_format=torch.channels_last_3d)
        recipe.append(("channels_last_3d",))
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["permute", "transpose", "step", "narrow", "expand", "unsqueeze_expand"]))
        r = t.dim()
        if kind == "permute":
            perm = draw(st.permutations(range(r)))
            t = t.permute(*perm)
            recipe.append(("permute", tuple(perm)))
        elif kind == "transpose" and r >= 2:
            a, b = draw(st.integers(0, r - 1)), draw(st.integers(0, r - 1))
            t = t.transpose(a, b)
            recipe.append(("transpose", a, b))
        elif kind == "step":
            d, step = draw(st.integers(0, r - 1)), draw(st.sampled_from([2, 3]))
            t = t[(slice(None),) * d + (slice(None, None, step),)]
            recipe.append(("step", d, step))
        elif kind == "narrow":
            d = draw(st.integers(0, r - 1))
            if t.shape[d] >= 2:
                t = t.narrow(d, 1, t.shape[d] - 1)
                recipe.append(("narrow", d))
        elif kind == "expand":
            ones = [d for d in range(r) if t.shape[d] == 1]
            if ones:
                d = draw(st.sampled_from(ones))
                shape = list(t.shape)
                shape[d] = draw(st.sampled_from([2, 3]))
                t = t.expand(*shape)
                recipe.append(("expand", d, shape[d]))
        elif kind == "unsqueeze_expand" and r < 5:
            d = draw(st.integers(0, r))
            t = t.unsqueeze(d)
            shape = list(t.shape)
            shape[d] = draw(st.sampled_from([1, 2, 3]))
            t = t.expand(*shape)
            recipe.append(("unsqueeze_expand", d, shape[d]))
    return recipe, t


def _factor(n: int, parts: int, draw) -> list[int]:
    if n == 0:
        return [0] + [draw(st.sampled_from([1, 2, 3])) for _ in range(parts - 1)]
    out = []
    for _ in range(parts - 1):
        divisors = [d for d in range(1, n + 1) if n % d == 0]
        d = draw(st.sampled_from(divisors))
        out.append(d)
        n //= d
    return out + [n]


@st.composite
def target_shapes(draw, shape: tuple[int, ...]):
    n = math.prod(shape)
    mode = draw(st.sampled_from(["flatten", "merge", "split", "factor", "ones", "same"]))
    if mode == "flatten" or not shape:
        return (n,)
    if mode == "merge" and len(shape) >= 2:
        d = draw(st.integers(0, len(shape) - 2))
        return shape[:d] + (shape[d] * shape[d + 1],) + shape[d + 2:]
    if mode == "split":
        d = draw(st.integers(0, len(shape) - 1))
        return shape[:d] + tuple(_factor(shape[d], 2, draw)) + shape[d + 1:]
    if mode == "ones":
        d = draw(st.integers(0, len(shape)))
        return shape[:d] + (1,) + shape[d:]
    if mode == "same":
        return shape
    return tuple(_factor(n, draw(st.integers(1, 4)), draw))


@SWEEP
@given(data=st.data())
def test_sweep_view_and_reshape_match_the_runtime(data):
    recipe, t = data.draw(layouts(), label="layout")
    new_shape = data.draw(target_shapes(tuple(t.shape)), label="new shape")
    pred = check_view(tuple(t.shape), t.stride(), new_shape)
    assert pred.viewable is not None, "integer shapes are always decided"
    try:
        real = t.view(new_shape)
    except RuntimeError as exc:
        assert "view size is not compatible" in str(exc)
        assert pred.viewable is False, (recipe, new_shape)
        assert pred.merge is None or 0 <= pred.merge[0] < pred.merge[1] < t.dim()
    else:
        assert pred.viewable is True, (recipe, new_shape)
        assert pred.strides == real.stride(), (recipe, new_shape)
    copies = fxlint.audit(lambda x: x.reshape(new_shape), (t,)).copies
    assert sum(c.bytes for c in copies) == reshape_copy_bytes(info(t), new_shape), (recipe, new_shape, copies)
    assert all(c.op == "aten::clone" and c.top_op == "aten::reshape" for c in copies)


@SWEEP
@given(data=st.data())
def test_sweep_flatten_ravel_and_contiguous_match_the_runtime(data):
    recipe, t = data.draw(layouts(), label="layout")
    r = t.dim()
    start = data.draw(st.integers(0, r - 1), label="start")
    end = data.draw(st.integers(start, r - 1), label="end")
    fmt = data.draw(st.sampled_from([torch.contiguous_format, torch.channels_last, torch.channels_last_3d]))
    if (fmt == torch.channels_last and r != 4) or (fmt == torch.channels_last_3d and r != 5):
        fmt = torch.contiguous_format
    flat_shape = tuple(t.shape[:start]) + (math.prod(t.shape[start:end + 1]),) + tuple(t.shape[end + 1:])

    def copied(fn) -> int:
        return sum(c.bytes for c in fxlint.audit(fn, (t,)).copies)

    assert copied(lambda x: x.flatten(start, end)) == reshape_copy_bytes(info(t), flat_shape), recipe
    assert copied(lambda x: x.ravel()) == ravel_copy_bytes(info(t)), recipe
    assert copied(lambda x: x.contiguous(memory_format=fmt)) == contiguous_copy_bytes(info(t), fmt), (recipe, fmt)

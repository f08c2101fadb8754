"""The FXL401 rewrite moves its slice before the elementwise ops that produce the indexed tensor
(``fxlint.rewrite.pushdown``): they then compute only the kept elements. Values and gradients
must be identical, and the push must stop wherever it could change either."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.canon import build_view


class Affine(nn.Module):
    """Per-channel affine, an activation, then every other channel (the seed's selection)."""

    def __init__(self, channels=8, extra=None):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels, 1))
        self.shift = nn.Parameter(torch.randn(channels))
        self.extra = extra
        self.w = nn.Parameter(torch.randn(8, 8))

    def forward(self, x):
        output = torch.tanh(x * self.scale + 0.5) - self.shift[:, None]
        picked = output[:, [0, 2, 4, 6]]
        if self.extra == "reuse":
            return picked, output.sum()  # the full tensor is needed anyway
        if self.extra == "matmul":
            return (x @ self.w)[:, [0, 2, 4, 6]]  # not elementwise
        return picked


def _grads(module, x):
    out = module(x)
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum((o * torch.randn(o.shape, generator=torch.Generator().manual_seed(i))).sum()
               for i, o in enumerate(outs))
    return outs, torch.autograd.grad(loss, [p for p in module.parameters()], allow_unused=True)


def _full_size_ops(gm, shape):
    """Elementwise ops that still compute a tensor of the full (unsliced) shape."""
    return [n.op for n in build_view(gm, origin="fx") if n.is_pointwise and n.tensor is not None
            and tuple(n.tensor.shape) == tuple(shape)]


def _assert_same(model, module, x):
    out0, g0 = _grads(model, x)
    out1, g1 = _grads(module, x)
    assert all(torch.equal(a, b) for a, b in zip(out0, out1))
    assert all((a is None and b is None) or torch.equal(a, b) for a, b in zip(g0, g1))


@pytest.mark.parametrize("capture", ["dynamo", "export"])
def test_the_slice_moves_before_the_whole_elementwise_chain(capture):
    torch.manual_seed(0)
    model, x = Affine(), torch.randn(3, 8, 5)
    target = torch.export.export(model, (x,)) if capture == "export" else model  # ATen or torch-level ops
    result = fxlint.rewrite(target, (x,))
    [applied] = result.applied
    assert "taken before" in applied.description and "compute only the selected elements" in applied.description
    assert _full_size_ops(result.module, x.shape) == []  # nothing elementwise runs on all 8 channels
    _assert_same(model, result.module, x)
    for train in (False, True):
        assert fxlint.audit(result.module, (x,), train=train).total_bytes < \
            fxlint.audit(model, (x,), train=train).total_bytes


@pytest.mark.parametrize("extra", ["reuse", "matmul"])
def test_the_slice_stays_where_the_producer_is_needed_whole_or_not_elementwise(extra):
    torch.manual_seed(0)
    model, x = Affine(extra=extra), torch.randn(3, 8, 8)
    result = fxlint.rewrite(model, (x,))
    [applied] = result.applied  # the index still becomes a slice ...
    assert "taken before" not in applied.description  # ... but nothing moves
    _assert_same(model, result.module, x)


def test_an_in_place_producer_is_not_moved_past():
    class InPlace(nn.Module):
        def forward(self, x):
            y = x * 2
            y.add_(1)  # writes in place: the slice must not be taken before it
            return y[:, [0, 2, 4]]

    x = torch.randn(2, 6, 3)
    result = fxlint.rewrite(InPlace(), (x,))
    assert all("taken before" not in a.description for a in result.applied)
    assert torch.equal(result.module(x), InPlace()(x))


def test_a_broadcast_operand_is_read_whole_and_a_full_size_one_is_sliced():
    class Mixed(nn.Module):
        def forward(self, x, gate, bias):
            return (x * gate + bias)[:, [1, 3, 5]]  # gate (B, 1, T) broadcasts over channels

    x, gate, bias = torch.randn(2, 6, 4), torch.randn(2, 1, 4), torch.randn(6, 4)
    result = fxlint.rewrite(Mixed(), (x, gate, bias))
    [applied] = result.applied
    assert "taken before" in applied.description
    code = result.module.code
    assert torch.equal(result.module(x, gate, bias), Mixed()(x, gate, bias))
    sliced = [line for line in code.splitlines() if "slice(1, 6, 2)" in line or "slice(1, None, 2)" in line]
    assert len(sliced) == 2, code  # x and bias are sliced; gate is read as it is

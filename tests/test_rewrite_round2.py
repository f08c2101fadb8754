"""The second-round rewrites (FXL104, FXL108, FXL204) on hand-built sites.

Their rules are being written in parallel; until they land, these tests hand the engine a
finding (rule code and node) the way the rule will, and check that each rewrite re-checks its
own preconditions, verifies, and that the runtime audit agrees it pays.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.capture.graphs import capture_graph_module
from fxlint.findings import Finding, Severity
from fxlint.rewrite.engine import apply_sites, view_of


def _rewrite_at(model, inputs, op, code, k=0):
    """Capture ``model``, point rule ``code`` at its ``k``-th ``op`` node, apply the rewrite."""
    gm, origin = capture_graph_module(model, inputs)
    node = view_of(gm, origin).ops(op)[k]
    finding = Finding(code, "hand-built", Severity.WARNING, "hand-built site", node=node.name)
    return apply_sites(gm, [(finding, False)], inputs, origin=origin)


def _same(model, module, inputs, grads=True):
    out0, out1 = model(*inputs), module(*inputs)
    torch.testing.assert_close(out1, out0)
    if grads:
        w = torch.randn(out0.shape)
        params = list(model.parameters())
        g0 = torch.autograd.grad((model(*inputs) * w).sum(), params)
        g1 = torch.autograd.grad((module(*inputs) * w).sum(), params)
        for a, b in zip(g0, g1):
            torch.testing.assert_close(a, b)


def _bytes(module, inputs, train):
    return fxlint.audit(module, inputs, train=train).total_bytes


class AddRepeated(nn.Module):
    """The held-out shape: ``b.repeat(n, 1)`` added to ``a``."""

    def __init__(self, shape=(8,)):
        super().__init__()
        self.b = nn.Parameter(torch.randn(shape))

    def forward(self, a):
        return a + self.b.repeat(a.size(0), 1)


@pytest.mark.parametrize("shape", [(8,), (1, 8)], ids=["(D,)", "(1, D)"])
def test_fxl104_repeat_of_size_one_dims_becomes_expand(shape):
    model, inputs = AddRepeated(shape), (torch.randn(6, 8),)
    result = _rewrite_at(model, inputs, "repeat", "FXL104")
    [applied] = result.applied
    assert "expand(" in applied.description and "expand" in applied.after
    _same(model, result.module, inputs)
    for train in (False, True):
        assert _bytes(result.module, inputs, train) < _bytes(model, inputs, train)


def test_fxl104_tiling_a_longer_dim_is_not_a_view():
    class Tile(nn.Module):
        def __init__(self):
            super().__init__()
            self.b = nn.Parameter(torch.randn(2, 8))

        def forward(self, a):
            return a + self.b.repeat(3, 1)  # (6, 8): the two rows tiled, not broadcast

    [skipped] = _rewrite_at(Tile(), (torch.randn(6, 8),), "repeat", "FXL104").skipped
    assert "tiles it" in skipped.reason


def test_fxl104_trap_repeated_result_written_in_place():
    class Trap(nn.Module):
        def forward(self, a):
            r = a[:1].repeat(4, 1)
            r[0] += 1  # with expand, this one write would land in all four rows
            return r * 1

    model, inputs = Trap(), (torch.randn(4, 8),)
    result = _rewrite_at(model, inputs, "repeat", "FXL104")
    assert result.applied == [] and "written in place" in result.skipped[0].reason
    torch.testing.assert_close(result.module(*inputs), model(*inputs))


class Conversions(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x).float().contiguous().half().float() * 2


def test_fxl108_noops_are_removed_and_the_round_trip_is_not():
    model, inputs = Conversions(), (torch.randn(4, 8),)
    ops = [n.op for n in view_of(*capture_graph_module(model, inputs))]
    assert ops.count("to") == 3 and ops.count("contiguous") == 1
    # .float() on float32 and .contiguous() on a contiguous tensor: removed
    for op, k in (("to", 0), ("contiguous", 0)):
        result = _rewrite_at(model, inputs, op, "FXL108", k)
        assert len(result.applied) == 1, result
        _same(model, result.module, inputs)
    # .half() on float32 is half of the x.half().float() round trip: values change, never removed
    [skipped] = _rewrite_at(model, inputs, "to", "FXL108", 1).skipped
    assert "float32 to float16" in skipped.reason


def test_fxl108_half_on_a_half_tensor_is_a_noop():
    class HalfIn(nn.Module):
        def forward(self, x):
            return x.half().float() * 2  # x is float16 already: .half() returns x

    model, inputs = HalfIn(), (torch.randn(4, 8).half(),)
    result = _rewrite_at(model, inputs, "to", "FXL108")
    assert len(result.applied) == 1
    _same(model, result.module, inputs, grads=False)


class NHWCConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3)

    def forward(self, x):  # x: (N, H, W, C)
        return self.conv(x.permute(0, 3, 1, 2).contiguous())


def test_fxl204_contiguous_before_conv_is_dropped_for_inference():
    model, inputs = NHWCConv(), (torch.randn(2, 12, 12, 8),)
    with torch.no_grad():
        result = _rewrite_at(model, inputs, "contiguous", "FXL204")
        [applied] = result.applied
        assert "conv2d reads the channels_last tensor directly" in applied.description
        _same(model, result.module, inputs, grads=False)
        assert _bytes(result.module, inputs, False) < _bytes(model, inputs, False)


def test_fxl204_not_applied_in_training():
    model, inputs = NHWCConv(), (torch.randn(2, 12, 12, 8),)
    [skipped] = _rewrite_at(model, inputs, "contiguous", "FXL204").skipped
    assert "gradients flow through the convolution" in skipped.reason and "--no-grad" in skipped.reason


def test_rewrites_without_their_rule_are_registered_but_find_no_sites():
    from fxlint.registry import all_rules
    from fxlint.rewrite import all_rewrites

    rewrites = all_rewrites()
    assert {"FXL104", "FXL108", "FXL204", "FXL401"} <= set(rewrites)
    rules = {r.code for r in all_rules()}
    model, inputs = AddRepeated(), (torch.randn(6, 8),)
    result = fxlint.rewrite(model, inputs)
    assert [a.code for a in result.applied] == (["FXL104"] if "FXL104" in rules else [])


def test_fxl104_expand_then_contiguous_loses_the_contiguous():
    class ExpandCopy(nn.Module):
        def __init__(self):
            super().__init__()
            self.b = nn.Parameter(torch.randn(1, 8))

        def forward(self, a):
            return a + self.b.expand(a.size(0), -1).contiguous()

    model, inputs = ExpandCopy(), (torch.randn(6, 8),)
    result = _rewrite_at(model, inputs, "contiguous", "FXL104")
    [applied] = result.applied
    assert "contiguous() of an expand removed" in applied.description
    _same(model, result.module, inputs)
    assert _bytes(result.module, inputs, False) < _bytes(model, inputs, False)

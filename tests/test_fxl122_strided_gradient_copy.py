"""FXL122 strided-gradient-copy: layer_norm and group_norm copy an output gradient that comes back strided in their
backward; each finding confirmed by the runtime, the negatives silent."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.profiler import profile

from tests.copy_helpers import findings, profiled_bytes
from tests.rule_snapshots import lint_fixture, marked_lines, reported_lines, rule_output


def _backward_contiguous_bytes(fn, x, grad_perm):
    """Bytes ``aten::contiguous`` copies in the backward of ``fn(x)`` given a gradient laid out by ``grad_perm``."""
    x = x.detach().requires_grad_()
    y = fn(x)
    inv = [grad_perm.index(i) for i in range(y.ndim)]
    g = torch.randn([y.shape[i] for i in grad_perm]).permute(*inv)
    with profile(record_shapes=True) as p:
        y.backward(g)
    return profiled_bytes(p, ("aten::contiguous",)).get("aten::contiguous", 0)


@pytest.mark.parametrize("name,fn,shape,perm,copies", [
    ("layer_norm, gradient transposed", lambda x: F.layer_norm(x, (16,)), (2, 8, 16), [0, 2, 1], True),
    ("layer_norm, gradient contiguous", lambda x: F.layer_norm(x, (16,)), (2, 8, 16), [0, 1, 2], False),
    ("group_norm, gradient NHWC", lambda x: F.group_norm(x, 2), (2, 4, 6, 6), [0, 2, 3, 1], True),
    ("group_norm, gradient contiguous", lambda x: F.group_norm(x, 2), (2, 4, 6, 6), [0, 1, 2, 3], False),
])
def test_the_premise_against_the_profiler(name, fn, shape, perm, copies):
    x = torch.randn(shape)
    assert (_backward_contiguous_bytes(fn, x, perm) == x.numel() * 4) == copies
    if not copies:
        assert _backward_contiguous_bytes(fn, x, perm) == 0


def test_positives_confirmed_and_negatives_silent():
    got = findings(lint_fixture("FXL122", train=True, confirm=True), "FXL122")
    assert {f.line for f in got} == set(marked_lines("FXL122", "positive"))
    assert all(f.status == "confirmed" and f.bytes == 0 and f.backward_bytes > 0 for f in got)


def test_inference_is_silent():
    assert findings(lint_fixture("FXL122", train=False), "FXL122") == []


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    out = rule_output("FXL122")
    assert reported_lines(out, "FXL122") == set(marked_lines("FXL122", "positive"))
    assert out == snapshot

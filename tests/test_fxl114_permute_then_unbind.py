"""FXL114 permute-then-unbind: positives, negatives, the backward copy against the audit, the fix's gradients."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import profile

import fxlint
from tests.copy_helpers import findings
from tests.rule_snapshots import lint_fixture, marked_lines, reported_lines, rule_output


def test_positives_in_training_confirmed_by_the_backward_copy():
    got = findings(lint_fixture("FXL114", train=True, confirm=True), "FXL114")
    assert {f.line for f in got} == set(marked_lines("FXL114", "positive"))
    [f] = got
    assert f.status == "confirmed" and f.bytes == 0 and f.backward_bytes == 2 * 6 * 96 * 4
    assert f.details["source_dim"] == 2 and f.details["piece_dims"] == (0, 2, 1, 3)
    assert f.fix == "unbind before the permute: `.reshape(...).unbind(2)`, then `.transpose(1, 2)` on each piece"


def test_inference_under_no_grad_is_silent():
    assert findings(lint_fixture("FXL114", train=False), "FXL114") == []


class _Attn(nn.Module):
    def __init__(self, fixed: bool):
        super().__init__()
        self.qkv, self.fixed = nn.Linear(64, 192), fixed

    def forward(self, x):
        b, n, _ = x.shape
        if self.fixed:
            q, k, v = self.qkv(x).reshape(b, n, 3, 4, 16).unbind(2)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        else:
            q, k, v = self.qkv(x).reshape(b, n, 3, 4, 16).permute(2, 0, 3, 1, 4).unbind(0)
        return F.scaled_dot_product_attention(q, k, v)


def test_the_fix_gives_the_same_values_and_gradients_without_the_backward_clone():
    torch.manual_seed(0)
    slow, fast = _Attn(False), _Attn(True)
    fast.load_state_dict(slow.state_dict())
    x = torch.randn(2, 32, 64)
    clones = {}
    for m in (slow, fast):
        y = m(x)
        with profile() as p:
            y.backward(torch.ones_like(y))
        clones[m.fixed] = [e.name for e in p.events() if e.name == "aten::clone"]
    torch.testing.assert_close(slow(x), fast(x))
    torch.testing.assert_close(slow.qkv.weight.grad, fast.qkv.weight.grad)
    assert clones[False] and not clones[True]
    assert findings(fxlint.lint(fast.train(), x, select="FXL114", config=False), "FXL114") == []


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    out = rule_output("FXL114")
    assert reported_lines(out, "FXL114") == set(marked_lines("FXL114", "positive"))
    assert out == snapshot

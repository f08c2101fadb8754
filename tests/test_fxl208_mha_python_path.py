"""FXL208 mha-python-path: positives, negatives, the copies against the audit, the fast path left alone."""

from __future__ import annotations

import torch
import torch.nn as nn

import fxlint
from tests.copy_helpers import findings
from tests.rule_snapshots import lint_fixture, marked_lines, reported_lines, rule_output

T, B, E, S = 16, 2, 32, 12


def test_positives_confirmed_with_each_copy():
    for train in (True, False):
        got = sorted(findings(lint_fixture("FXL208", train=train, confirm=True), "FXL208"), key=lambda f: f.line)
        assert [f.line for f in got] == sorted(marked_lines("FXL208", "positive"))
        self_attn, cross = got
        assert self_attn.copy_sizes == (3 * T * B * E * 4, T * B * E * 4) and self_attn.details["inputs"] == ("query",)
        assert cross.copy_sizes == (2 * S * B * E * 4,) and cross.details["projection"] == "kv"
        assert all(f.status == "confirmed" for f in got), [(f.line, f.status) for f in got]


class _BatchFirst(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(E, 4, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


def test_batch_first_pays_the_input_copy_in_training_and_the_fast_path_is_left_alone():
    x = torch.randn(B, T, E)
    [f] = findings(fxlint.lint(_BatchFirst().train(), x, train=True, confirm=True, config=False, select="FXL208"),
                   "FXL208")
    assert f.copy_sizes == (3 * T * B * E * 4, T * B * E * 4) and f.status == "confirmed"
    with torch.no_grad():  # eval + no_grad + batch_first self-attention: eager runs the fused kernel
        rep = fxlint.lint(_BatchFirst().eval(), x, confirm=True, config=False, select="FXL208")
    assert findings(rep, "FXL208") == []


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    out = rule_output("FXL208")
    assert reported_lines(out, "FXL208") == set(marked_lines("FXL208", "positive"))
    assert out == snapshot

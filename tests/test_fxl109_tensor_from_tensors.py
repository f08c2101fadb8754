"""FXL109 tensor-from-tensors: the copy (bytes, host reads) and the gradient cut of
`torch.tensor([t1, t2])`; `torch.stack` is clean; inference keeps only the copy (info)."""

from __future__ import annotations

import torch
import torch.nn as nn

import fxlint
from tests._grad import check_verdicts
from tests.conftest import line_of


class Losses(nn.Module):
    """Held-out style: task losses gathered with torch.tensor."""

    def __init__(self, stack: bool = False):
        super().__init__()
        self.stack = stack
        self.a = nn.Linear(4, 1)
        self.b = nn.Linear(4, 1)
        self.w = nn.Parameter(torch.ones(3))

    def forward(self, x):
        la, lb = self.a(x).pow(2).mean(), self.b(x).abs().mean()
        lc = x.mean()
        if self.stack:
            parts = torch.stack([la, lb, lc])
        else:
            parts = torch.tensor([la, lb, lc])  # TENSOR-OF-TENSORS
        return (parts * self.w).sum() + 0.1 * lb


X = torch.randn(5, 4)


def test_tensor_of_tensors_copies_and_cuts():
    m = Losses()
    report = fxlint.lint(m, X)
    [f] = report.by_code("FXL109")
    assert f.line == line_of(__file__, "# TENSOR-OF-TENSORS")
    assert f.severity == "error" and f.details["lost_parameters"] == ["a.weight", "a.bias"]
    assert f.details["fraction_cut"]["b.weight"] == 0.5  # lb also reaches the output directly
    assert f.bytes == 3 * 4  # three float32 values written per call
    assert "3 host reads" in f.message and "torch.stack" in f.fix
    grads = check_verdicts(report, m, X)
    assert grads["a.weight"] == "none" and grads["w"] == "nonzero"


def test_stack_is_clean():
    # nothing but the square's backward copy (`.pow(2)` on the first loss, FXL120), which is not the stack's
    report = fxlint.lint(Losses(stack=True), X)
    assert report.codes() == {"FXL120"}
    [f] = report.by_code("FXL120")
    assert f.line == line_of(__file__, "la, lb = self.a(x).pow(2)")


def test_inference_keeps_only_the_copy_as_info():
    report = fxlint.lint(Losses().eval(), X)
    [f] = report.by_code("FXL109")
    assert f.severity == "info" and f.bytes == 12
    assert f.details["lost_parameters"] == f.details["cut_parameters"] == []  # no gradient at stake
    assert f.details["elements"] == 3 and "No trainable parameter's gradient is at stake" in f.message


def test_values_from_inputs_only_are_info():
    def f(x):
        return torch.tensor([x.sum(), x.mean()])

    [finding] = fxlint.lint(f, X).by_code("FXL109")
    assert finding.severity == "info" and finding.bytes == 8


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text and the severity its comment names (error:
    a parameter never learns; warning: some paths cut; info: no parameter behind the values); no negative."""
    from tests.rule_snapshots import rule_output

    out = rule_output("FXL109")
    blocks = out.strip().split("\n\n")
    assert len(blocks) == 3 and "negative" not in out
    for block in blocks:
        severity = block.split()[1]
        assert f"# positive ({severity})" in block, block
    assert out == snapshot

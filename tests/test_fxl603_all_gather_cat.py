"""FXL603 all-gather-then-cat: cat and stack of the gathered list, against joins that are not the
gathered tensor (one-rank group; the extra aten::cat is measured on two ranks in
tests/test_distributed.py)."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.nn as nn

import fxlint
from tests._collective_rules import fixture_lines, group, lint_fixture  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("group")


@pytest.fixture(scope="module")
def report(group):  # noqa: F811
    return lint_fixture("FXL603")


def test_positives_and_negatives_of_the_fixture(report):
    assert {f.line for f in report.findings} == fixture_lines("FXL603", "positive")
    assert {f.bytes for f in report.findings} == {4 * 8 * 4}  # world (1) x the (4, 8) float32 tensor


def test_a_list_in_another_order_is_not_the_gathered_tensor():
    class Step(nn.Module):
        def forward(self, x):
            parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
            dist.all_gather(parts, x)
            return torch.cat([parts[0], parts[0]])  # the same piece twice: not the gathered tensor

    assert not fxlint.lint(Step(), torch.randn(4, 8), select="FXL603", config=False).findings


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    from tests.rule_snapshots import rule_output

    out = rule_output("FXL603")
    assert out.count("FXL603 warning") == len(fixture_lines("FXL603", "positive")) and "negative" not in out
    assert out == snapshot

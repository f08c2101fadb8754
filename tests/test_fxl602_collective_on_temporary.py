"""FXL602 collective-on-temporary: a copy that really is one and is dropped, against a conversion that
returns the tensor itself and a copy that is kept (one-rank group; the wrong result itself is shown on
two ranks in tests/test_distributed.py)."""

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
    return lint_fixture("FXL602")


def test_positives_and_negatives_of_the_fixture(report):
    assert {f.line for f in report.findings} == fixture_lines("FXL602", "positive")
    assert {f.severity.value for f in report.findings} == {"error"}


@pytest.mark.parametrize("make, expected", [
    (lambda x: x.t().to(torch.float64), True),
    (lambda x: x.double(), True),
    (lambda x: x.to(torch.float32), False),  # already float32: x itself
    (lambda x: x.t().contiguous(memory_format=torch.contiguous_format), True),
    (lambda x: x.detach(), False),  # a view: the reduction lands in x
], ids=["to float64", "double", "to same dtype", "contiguous with a format", "detach view"])
def test_which_temporaries_are_copies(make, expected):
    class Step(nn.Module):
        def forward(self, x):
            dist.all_reduce(make(x))
            return x + 1

    report = fxlint.lint(Step(), torch.randn(4, 6), select="FXL602", config=False)
    assert bool(report.findings) is expected


def test_a_copy_read_after_the_collective_is_not_reported():
    class Step(nn.Module):
        def forward(self, x):
            tmp = x.t().contiguous()
            dist.all_reduce(tmp)
            return tmp.sum()  # read after: the result is used

    assert not fxlint.lint(Step(), torch.randn(4, 6), select="FXL602", config=False).findings


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    from tests.rule_snapshots import rule_output

    out = rule_output("FXL602")
    assert out.count("FXL602 error") == len(fixture_lines("FXL602", "positive")) and "negative" not in out
    assert out == snapshot

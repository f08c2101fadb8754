"""FXL601 noncontiguous-collective: every collective, both call styles, the layouts that copy and
the ones that do not, in a one-rank process group (two ranks: tests/test_distributed.py, where the
bytes are checked against the profiler)."""

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
    return lint_fixture("FXL601")


def test_positives_and_negatives_of_the_fixture(report):
    assert {f.line for f in report.findings} == fixture_lines("FXL601", "positive")
    assert not {f.line for f in report.findings} & fixture_lines("FXL601", "negative")


def test_copying_collectives_claim_the_tensor_and_reduces_do_not(report):
    by_line = {f.line: f for f in report.findings}
    copies = [f for f in report.findings if f.bytes is not None]
    assert {f.bytes for f in copies} == {4 * 8 * 4}  # the transposed (8, 4) float32 tensor
    assert {("all_gather_into_tensor" in f.message or "reduce_scatter_tensor" in f.message
             or "all_to_all_single" in f.message) for f in copies} == {True}
    reduces = [f for f in by_line.values() if f.message.startswith("`all_reduce`")]
    assert [f.bytes for f in reduces] == [None, None]
    severities = sorted(f.severity.value for f in reduces)
    assert severities == ["error", "warning"]  # the strided slice is the error, the dense transpose is not
    [error] = [f for f in reduces if f.severity.value == "error"]
    assert "`x[:, ::2]`" in error.message and "wrong without an error" in error.message


def test_through_the_backend_as_well():
    def step(x):
        g = torch.empty(dist.get_world_size() * x.shape[1], x.shape[0])
        dist.all_gather_into_tensor(g, x.t())
        return g

    torch._dynamo.reset()
    with fxlint.collect() as session:
        torch.compile(step, backend="fxlint", options={"inner": "eager"})(torch.randn(4, 6))
    [f] = [f for f in session.findings if f.code == "FXL601"]
    assert f.bytes == 4 * 6 * 4


def test_dynamic_shapes_give_a_formula_not_a_crash():
    class Step(nn.Module):
        def forward(self, x):
            g = torch.empty(dist.get_world_size() * x.shape[1], x.shape[0])
            dist.all_gather_into_tensor(g, x.t())
            return g

    torch._dynamo.reset()
    x = torch.randn(4, 6)
    torch._dynamo.mark_dynamic(x, 0)
    with fxlint.collect() as session:
        torch.compile(Step(), backend="fxlint", options={"inner": "eager"}, dynamic=True)(x)
    [f] = [f for f in session.findings if f.code == "FXL601"]
    assert f.bytes is None and f.bytes_expr is not None


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    from tests.rule_snapshots import rule_output

    out = rule_output("FXL601")
    assert out.count("FXL601 ") == len(fixture_lines("FXL601", "positive")) and "negative" not in out
    assert out == snapshot

"""The einsum kernel model off the bmm path, against the profiler: every layout of every equation of
``tests/_sweep.EINSUM_SHAPED`` (no summed index: ``a.mul(b)``; a contracted dim of size 1 in both
operands; a broadcast batch dim; every index summed: ``flatten().dot()``), not a sample."""

from __future__ import annotations

import pytest
import torch

import fxlint
from fxlint import kernels as K
from fxlint.tensor.info import TensorInfo
from tests import _sweep
from tests.copy_helpers import findings

CASES = list(_sweep.einsum_shaped_cases(train=(False,)))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_prediction_is_what_the_profiler_records(case):
    out = _sweep.run_case(case)
    assert out.status == "ok", (out.why, out.runtime, out.predicted, out.path)


def test_the_sweep_exercises_copies_and_no_copies():
    outcomes = [_sweep.run_case(c) for c in CASES if "'bij,bji->'" in c.name]
    assert any(o.runtime for o in outcomes) and any(not o.runtime for o in outcomes)


def test_no_summed_index_is_a_broadcast_mul_without_copies():
    """`einsum("blq,bhlk->bhlqk")` sums nothing: ATen's einsum runs `a.mul(b)` (no bmm, no reshape);
    the model said sumproduct_pair copies b for bmm (1.3 kB here), which the audit refuted."""
    a, b = torch.randn(2, 7, 4), torch.randn(2, 3, 7, 8)
    pred = K.predict_einsum("blq,bhlk->bhlqk", TensorInfo.from_tensor(a), TensorInfo.from_tensor(b))
    assert pred is not None and pred.copies == () and "mul" in pred.path
    with torch.profiler.profile() as prof:
        torch.einsum("blq,bhlk->bhlqk", a, b)
    names = {e.name for e in prof.events()}
    assert "aten::mul" in names and "aten::bmm" not in names and "aten::copy_" not in names

    def f(a, b):
        return torch.einsum("blq,bhlk->bhlqk", a.transpose(0, 1).transpose(0, 1), b)

    rep = fxlint.lint(f, (a, b), confirm=True)
    assert [x for x in findings(rep, "FXL201")] == []
    assert rep.unexplained == []

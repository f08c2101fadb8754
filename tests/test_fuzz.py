"""Property-based fuzzing: random programs (tests/fuzz_programs.py) through lint, audit and rewrite.

For every generated program:

* ``fxlint.lint(..., confirm=True)`` never raises, reports no internal rule error, and no copy
  finding (FXL1xx/2xx/4xx) is refuted by the runtime audit;
* every rewrite (``fxlint.rewrite`` on the one-graph capture, and the backend's ``rewrite``
  option on every graph) keeps outputs, gradients and which outputs require grad equal to eager,
  and never increases the audited bytes copied, forward or in a training step;
* inside ``torch.compile`` fxlint raises no warning of its own.

The runs are derandomized (the examples depend only on hypothesis' version and this file) with a
fixed budget; ``FXLINT_FUZZ_SCALE=10 pytest tests/test_fuzz.py`` runs ten times as many examples
(a longer hunt, different examples). Programs that once failed are kept below as regression tests.
"""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings

from tests.fuzz_programs import Program, check_lint, check_rewrite, programs

SCALE = float(os.environ.get("FXLINT_FUZZ_SCALE", "1"))
LINT_EXAMPLES = max(1, int(200 * SCALE))
REWRITE_EXAMPLES = max(1, int(100 * SCALE))


def _settings(n: int) -> settings:
    return settings(max_examples=n, derandomize=SCALE == 1, database=None, deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much, HealthCheck.large_base_example])


@_settings(LINT_EXAMPLES)
@given(programs())
def test_lint_never_raises_and_the_runtime_never_refutes_a_copy(program: Program) -> None:
    check_lint(program)


@_settings(REWRITE_EXAMPLES)
@given(programs(masks=False))
def test_rewrites_keep_results_and_never_copy_more(program: Program) -> None:
    check_rewrite(program)


@_settings(max(1, REWRITE_EXAMPLES // 4))
@given(programs(masks=True, min_lines=4))
def test_backend_rewrites_every_graph_of_programs_with_graph_breaks(program: Program) -> None:
    check_rewrite(program)


# --------------------------------------------------------------------------- regressions
# Programs the fuzzer found, kept as they were shrunk. Each failed before its fix.

HEADER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Prog(nn.Module):
    def __init__(self):
        super().__init__()
        {init}

    def forward(self, x0):
{body}


def make():
    torch.manual_seed(0)
    return Prog(), ({inputs},)
"""


def _program(body: str, inputs: str, init: str = "pass") -> Program:
    lines = "\n".join(f"        {ln}" for ln in body.strip().splitlines())
    return Program(HEADER.format(init=init, body=lines, inputs=inputs))


def test_regression_round_trip_of_a_one_element_tensor_is_confirmed():
    """FXL103 on a one-element tensor predicted 2 + 4 bytes; the audit filed both copies as
    "a Python scalar wrapped into a tensor" (unavoidable) and the finding read as refuted.
    Fixed in the audit: a one-element copy under the user's own ``.to()`` is the user's copy."""
    program = _program("""
v1 = x0.float()
v2 = v1[torch.arange(0, 1, 1)]
v3 = v2.to(torch.float16).to(torch.float32)
return v3 @ self.w
""", "torch.randn(1, 1)", init="self.w = nn.Parameter(torch.randn(1, 1))")
    report = check_lint(program)
    [f] = report.by_code("FXL103")
    assert f.bytes == 6 and f.status == "confirmed"


def test_regression_a_copy_under_no_grad_stays_a_copy():
    """``with torch.no_grad(): v = x.expand(2).contiguous()``: the copy does not require grad, but
    the expand view under no_grad still does (through its base), so dropping ``.contiguous()``
    (FXL104's rewrite) made the output require grad. Fixed twice: the rewrites' safety analysis
    refuses to turn a no_grad copy of a tensor that requires grad into a view, and verification
    compares which outputs require grad."""
    import fxlint

    program = _program("""
v1 = x0.clone()
with torch.no_grad():
    v3 = v1.expand(2).contiguous()
v4 = F.gelu(v3)
return torch.sigmoid(v4)
""", "torch.randn(1, requires_grad=True)")
    result = check_rewrite(program)
    assert result is not None and not result.applied
    [skipped] = result.skipped
    assert skipped.code == "FXL104" and "autograd off" in skipped.reason
    # the same program with the index spelling (FXL401's rewrite) is refused for the same reason
    program = _program("""
with torch.no_grad():
    v = x0[[0, 2]]
return v * 2
""", "torch.randn(4, requires_grad=True)")
    result = fxlint.rewrite(*program.load())
    assert not result.applied and "autograd off" in result.skipped[0].reason


def test_regression_a_gather_of_a_non_contiguous_tensor_is_its_own_copy():
    """``x.mT.index_select(1, torch.arange(0, 1))``: CPU ``index_select`` first copies its
    non-contiguous input (``.contiguous()`` inside the kernel, 16 B), then gathers (8 B). The audit
    counted one copy, the largest allocation under the gather (16 B), and FXL401's 8 B read as
    refuted. Fixed in the audit: the input copy is recorded apart, the gather is its output."""
    import fxlint

    program = _program("""
v2 = x0.mT
return v2.index_select(1, torch.arange(0, 1, 1))
""", "torch.randn(1, 2, 2)")
    report = check_lint(program)
    [f] = report.by_code("FXL401")
    assert f.bytes == 8 and f.status == "confirmed"
    audit = fxlint.audit(*program.load())
    assert sorted((c.bytes, c.chain[-1]) for c in audit.copies) == [(8, "aten::index_select"), (16, "aten::copy_")]


def test_regression_a_capture_limit_is_a_capture_error_not_the_models():
    """A mask index gives Dynamo an unbacked size; ``expand(2, 2)`` on it stops ``torch._dynamo.export``
    with a data-dependent error, though the model runs fine eagerly. ``fxlint.rewrite`` said "the
    model raised while it ran" (a ModelError); it is a CaptureError now (the model is run eagerly
    to tell the two apart), and the backend still rewrites each graph."""
    import fxlint
    from fxlint.errors import CaptureError

    program = _program("""
v1 = x0[:, torch.arange(1) % 2 == 0]
return v1.mT.expand(2, 2)
""", "torch.randn(2, 1)")
    with pytest.raises(CaptureError, match="cannot capture the model as one graph"):
        fxlint.rewrite(*program.load())
    check_rewrite(program)


def test_verification_compares_which_outputs_require_grad():
    from fxlint.rewrite.verify import Run, compare

    t = torch.zeros(2)
    same = Run([t], None, [False])
    assert compare(same, Run([t], None, [False])) is None
    assert "now requires grad" in compare(same, Run([t], None, [True]))
    assert "no longer requires grad" in compare(Run([t], None, [True]), Run([t], None, [False]))


@pytest.mark.parametrize("seed_program", [
    # the generator's own smallest program, and one with every family on one line each
    "v1 = x0 * 2\nreturn v1",
    """
v1 = x0.permute(1, 0)
v2 = v1[:, [0, 2]]
v3 = v2.contiguous()
v4 = v3.to(torch.float64).to(torch.float32)
v5 = v4 @ self.w
v6 = v5.detach()
with torch.no_grad():
    v7 = v6 * 2
return v7, v5
""",
])
def test_hand_written_programs_hold_both_properties(seed_program):
    program = _program(seed_program, "torch.randn(3, 4, requires_grad=True)",
                       init="self.w = nn.Parameter(torch.randn(2, 5))")
    check_lint(program)
    check_rewrite(program)

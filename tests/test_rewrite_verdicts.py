"""Rewrites go by the compiled program's verdicts (``rewrite_graph(..., verdicts=...)``, what the backend passes
when Inductor compiles the graph): a site whose copy Inductor fuses is skipped with that reason, one whose copy
survives is rewritten, and an unknown verdict keeps each rewrite's own rules. The verdicts are stamped here by
hand (no Inductor); tests/test_backend_rewrite.py reads real ones."""

from __future__ import annotations

import pytest
import torch

from fxlint.capture.graphs import capture_graph_module
from fxlint.compiled.verdicts import FUSED, SURVIVES, UNKNOWN
from fxlint.rewrite.engine import rewrite_graph
from tests.test_backend import Sep  # output[:, [0, 2, ...]] of a Linear, returned


def _stamp(verdict, backward=None, seen=None):
    def verdicts(findings, view):
        if seen is not None:
            seen.append([f.code for f in findings])
        return [f.with_(compiled=verdict, compiled_backward_bytes=backward) for f in findings]

    return verdicts


def _rewrite(training, verdicts, fusing=False):
    m, x = Sep().train(training), torch.randn(4, 16)
    with torch.set_grad_enabled(training):
        gm, origin = capture_graph_module(m, (x,))
        return rewrite_graph(gm, [x], origin=origin, training=training, fusing=fusing, verdicts=verdicts)


@pytest.mark.parametrize("training, backward", [(False, None), (True, 0)])
def test_a_fused_copy_is_not_rewritten_and_says_why(training, backward):
    seen: list = []
    result = _rewrite(training, _stamp(FUSED, backward, seen))
    assert seen == [["FXL401"]]  # asked once, with the sites' findings
    assert result.applied == [] and result.module is result.original
    [skipped] = result.skipped
    assert not skipped.rolled_back
    assert "compiled verdict `fused`" in skipped.reason and "nothing to remove" in skipped.reason
    assert ("forward and backward" in skipped.reason) == training


@pytest.mark.parametrize("backward", [102_400, None])
def test_fused_in_the_forward_is_rewritten_in_training_when_the_backward_copies_or_was_not_read(backward):
    """speech_separation in training: Inductor fuses the gather, its backward still scatters (102.4 kB per
    step, read by fxlint.lint(..., compiled=True)); the slice's backward is what the rewrite wins."""
    result = _rewrite(True, _stamp(FUSED, backward))
    assert [a.code for a in result.applied] == ["FXL401"] and result.skipped == []


def test_a_surviving_copy_is_rewritten_where_the_rule_of_thumb_would_skip_it():
    """Inference under a fusing compiler, the result returned: FXL401's rule of thumb keeps the gather
    (test_backend_rewrite.py); with the verdict `survives` the copy is known to be made, and it goes."""
    assert [a.code for a in _rewrite(False, _stamp(SURVIVES), fusing=True).applied] == ["FXL401"]


@pytest.mark.parametrize("verdict", [UNKNOWN, None])
def test_an_unknown_verdict_keeps_the_rule_of_thumb(verdict):
    result = _rewrite(False, _stamp(verdict), fusing=True)
    [skipped] = result.skipped
    assert "returned" in skipped.reason and "fuses the gather" in skipped.reason


def test_no_site_no_verdicts_asked():
    seen: list = []
    m, x = torch.nn.Linear(4, 4), torch.randn(2, 4)
    gm, origin = capture_graph_module(m, (x,))
    result = rewrite_graph(gm, [x], origin=origin, verdicts=_stamp(FUSED, seen=seen))
    assert seen == [] and result.applied == [] and result.skipped == []

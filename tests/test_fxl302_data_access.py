"""FXL302 data-access: a `.data` read on the way to the output, named, on its line,
checked against autograd; `.data` with nothing trainable behind it is quiet."""

from __future__ import annotations

import torch
import torch.nn as nn

import fxlint
from tests._grad import check_verdicts
from tests.conftest import line_of


class DataRead(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 4)
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x):
        w = self.proj.weight.data  # DATA-READ
        return (x @ w.t() + self.proj.bias) * self.scale


X = torch.randn(3, 6)


def test_data_read_of_a_weight_is_an_error_naming_it():
    m = DataRead()
    report = fxlint.lint(m, X)
    [f] = report.by_code("FXL302")
    assert f.severity == "error" and f.line == line_of(__file__, "# DATA-READ")
    assert f.details["lost_parameters"] == ["proj.weight"] and "proj.weight" in f.message
    assert report.codes() == {"FXL302"}  # not also FXL301: `.data` is its own rule
    grads = check_verdicts(report, m, X)
    assert grads["proj.weight"] == "none" and grads["proj.bias"] == "nonzero"


class PartialData(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(6, 4)

    def forward(self, x):
        h = self.enc(x)
        return h + h.data.pow(2)  # PARTIAL-DATA


def test_data_on_one_of_two_paths_is_a_warning_with_the_fraction():
    m = PartialData()
    report = fxlint.lint(m, X)
    [f] = report.by_code("FXL302")
    assert f.severity == "warning" and f.line == line_of(__file__, "# PARTIAL-DATA")
    assert f.details["fraction_cut"]["enc.weight"] == 0.5 and "50%" in f.message
    check_verdicts(report, m, X)


def test_data_of_an_input_and_eval_mode_are_quiet():
    class InputData(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 4)

        def forward(self, x):
            return self.lin(x.data)

    assert fxlint.lint(InputData(), X).codes() == set()
    assert fxlint.lint(DataRead().eval(), X).codes() == set()


def test_symbolic_trace_data_read():
    [f] = fxlint.lint(torch.fx.symbolic_trace(DataRead()), X).by_code("FXL302")
    assert f.details["lost_parameters"] == ["proj.weight"]


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text, no negative reported; the error is the parameter that never trains."""
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL302")
    assert reported_lines(out, "FXL302") == set(marked_lines("FXL302", "positive")) and "# negative" not in out
    assert out.count("FXL302 error") == 1 and out.count("FXL302 warning") == 1
    assert out == snapshot


def test_fixture_verdicts_agree_with_autograd():
    """Who never trains and who still learns, on the fixture, as autograd sees it."""
    from tests.rule_snapshots import load_fixture

    model, inputs = load_fixture("FXL302").make()
    report = fxlint.lint(model, inputs, select="FXL302", config=False)
    grads = check_verdicts(report, model, inputs)
    assert grads["proj.weight"] == "none" and grads["enc.weight"] == "nonzero"

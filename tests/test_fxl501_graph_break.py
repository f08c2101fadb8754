"""FXL501 graph-break: every Dynamo graph break with its reason and the user's line,
in the API (Dynamo's list of reasons) and the backend (the reason that ended each
graph); frames Dynamo gave up on; silencing; clean models have none."""

from __future__ import annotations

import torch
import torch.nn as nn

import fxlint
from tests.conftest import line_of


class Printing(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x)
        print("h is", tuple(h.shape))  # PRINT-BREAK
        return self.b(h)


X = torch.randn(2, 4)


def test_print_break_with_reason_and_line():
    report = fxlint.lint(Printing(), X)
    [f] = report.by_code("FXL501")
    assert f.line == line_of(__file__, "# PRINT-BREAK") and f.severity == "warning"
    assert "print" in f.message and f.details["reason"]
    assert report.graph_breaks == 1 and report.graphs == 2
    assert report.codes() == {"FXL501"}  # nothing about gradients: nothing is cut


def test_data_dependent_branch():
    def f(x):
        y = x * 2
        if y.sum() > 0:  # BRANCH
            return y + 1
        return y - 1

    [finding] = fxlint.lint(f, X).by_code("FXL501")
    assert finding.line == line_of(__file__, "# BRANCH") and "control flow" in finding.message


def test_frame_dynamo_gave_up_on_is_reported_at_its_def():
    class LoopBreak(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleList([nn.Linear(4, 1) for _ in range(2)])

        def forward(self, x):  # LOOP-FRAME
            total = 0.0
            for head in self.heads:
                total = total + head(x).mean().item()
            return x * total

    report = fxlint.lint(LoopBreak(), X)
    [f] = report.by_code("FXL501")
    assert f.line == line_of(__file__, "# LOOP-FRAME")
    assert "gave up on `forward`" in f.message and "could not analyse" in f.message


def test_backend_reports_the_break_that_ended_a_graph():
    torch._dynamo.reset()
    compiled = torch.compile(Printing(), backend="fxlint", options={"inner": "eager"})
    with fxlint.collect() as session:
        compiled(X)
    [f] = [f for f in session.findings if f.code == "FXL501"]
    assert f.line == line_of(__file__, "# PRINT-BREAK")
    assert session.report().graph_breaks == 1


def test_silenced_break(write_module):
    import importlib.util

    path = write_module('''
import torch

def f(x):
    y = x * 2
    print("debug")  # fxlint: ignore[FXL501] kept on purpose
    return y + 1
''', name="printing.py")
    spec = importlib.util.spec_from_file_location("printing", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    report = fxlint.lint(mod.f, X)
    assert report.by_code("FXL501") == [] and [s.code for s in report.suppressed] == ["FXL501"]


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text (the breaks, and the function Dynamo
    gives up on, at its def line); no negative reported."""
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL501")
    looped = rule_output("FXL501", make="make_looped")
    assert reported_lines(out, "FXL501") | reported_lines(looped, "FXL501") == set(marked_lines("FXL501", "positive"))
    assert "# negative" not in out + looped and "gave up on `forward`" in looped
    assert out == snapshot
    assert looped == snapshot


def test_the_scalar_capture_flag_is_never_advised_as_the_fix_of_an_item():
    """Dynamo's hint for an `.item()` break is `capture_scalar_outputs = True`: it removes the break, not the
    cut gradient FXL304 reports on the same line, so the fix says so and names the real fix."""
    import fxlint

    class ItemScale(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            s = self.lin(x).sum().item()
            return self.lin(x) * s

    rep = fxlint.lint(ItemScale(), (torch.randn(2, 4),), config=False)
    [brk] = rep.by_code("FXL501")
    assert "capture_scalar_outputs" in brk.fix and "still a Python number" in brk.fix
    assert "no gradient flows through it" in brk.fix and "keeping it a tensor" in brk.fix
    [cut] = rep.by_code("FXL304")
    assert cut.line == brk.line  # the two findings on one line now agree

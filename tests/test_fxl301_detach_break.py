"""FXL301 detach-break: a GRUCell loop with `.detach()` on the hidden state, the
right line, the cut parameters named, severity from the effect, autograd agreeing,
and silencing an intended cut in the API, the CLI and the backend."""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn as nn

import fxlint
from tests._grad import check_verdicts
from tests.conftest import line_of, run_cli

CELL = ["cell.weight_ih", "cell.weight_hh", "cell.bias_ih", "cell.bias_hh"]


class GRULoop(nn.Module):
    """Held-out style: the hidden state detached every step, after the cell."""

    def __init__(self, where: str = "after"):
        super().__init__()
        self.where = where
        self.cell = nn.GRUCell(4, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.zeros(x.shape[1], 8)
        for t in range(x.shape[0]):
            if self.where == "before":
                h = h.detach()  # DETACH-BEFORE
            h = self.cell(x[t], h)
            if self.where == "after":
                h = h.detach()  # DETACH-AFTER
        return self.head(h)


X = torch.randn(6, 2, 4)


def test_detach_after_the_cell_every_step_loses_every_path():
    m = GRULoop("after")
    report = fxlint.lint(m, X)
    [f] = report.by_code("FXL301")
    assert f.severity == "error"
    assert f.line == line_of(__file__, "# DETACH-AFTER")
    assert f.details["lost_parameters"] == CELL
    for name in CELL:
        assert name in f.message
    assert "never receive a gradient" in f.message and "ignore[FXL301]" in f.message
    grads = check_verdicts(report, m, X)
    assert all(grads[n] == "none" for n in CELL) and grads["head.weight"] == "nonzero"


def test_detach_before_the_cell_is_partial_with_the_fraction():
    m = GRULoop("before")
    report = fxlint.lint(m, X)
    [f] = report.by_code("FXL301")
    assert f.severity == "warning"
    assert f.line == line_of(__file__, "# DETACH-BEFORE")
    assert f.details["lost_parameters"] == []
    assert f.details["cut_parameters"] == CELL
    # 6 steps, one path each; only the last step's path survives: 5/6 cut
    assert f.details["fraction_cut"]["cell.weight_hh"] == pytest.approx(5 / 6)
    assert "83%" in f.message
    grads = check_verdicts(report, m, X)
    assert all(grads[n] == "nonzero" for n in CELL)


class Negatives(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, target):
        y = self.lin(x.detach())  # detach of an input: no parameter behind it
        stats = y.detach().mean()  # detached value that never reaches the output
        del stats
        return ((y - target.detach()) ** 2).mean()


def test_detach_of_inputs_targets_and_dead_values_is_quiet():
    report = fxlint.lint(Negatives(), (torch.randn(3, 4), torch.randn(3, 4)))
    assert report.by_code("FXL301") == []


def test_frozen_parameters_and_eval_mode_are_quiet():
    m = GRULoop("after")
    m.cell.requires_grad_(False)
    assert fxlint.lint(m, X).by_code("FXL301") == []
    assert fxlint.lint(GRULoop("after").eval(), X).codes() == set()
    with torch.no_grad():
        assert fxlint.lint(GRULoop("after"), X).codes() == set()


@pytest.mark.parametrize("origin", ["fx", "export"])
def test_symbolic_trace_and_export_graphs(origin):
    class Stop(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            return self.b(self.a(x).detach())

    x = torch.randn(2, 4)
    target = torch.fx.symbolic_trace(Stop()) if origin == "fx" else torch.export.export(Stop(), (x,))
    [f] = fxlint.lint(target, (x,)).by_code("FXL301")
    assert f.severity == "error" and f.details["lost_parameters"] == ["a.weight", "a.bias"]


# --------------------------------------------------------------------------- silencing an intended cut


TBPTT = '''
import torch, torch.nn as nn

class TBPTT(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(4, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        h = torch.zeros(x.shape[1], 8)
        for t in range(x.shape[0]):
            h = self.cell(x[t], h)
            if t % 3 == 2:
                h = h.detach()  # fxlint: ignore[FXL301] truncated BPTT, k=3
        return self.head(h)

def make():
    torch.manual_seed(0)
    return TBPTT(), (torch.randn(7, 2, 4),)
'''


def test_intended_cut_silenced_in_api_cli_and_backend(write_module, tmp_path):
    path = write_module(TBPTT, name="tbptt_model.py")
    import importlib.util

    spec = importlib.util.spec_from_file_location("tbptt_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    model, inputs = mod.make()

    report = fxlint.lint(model, inputs)  # API
    assert report.by_code("FXL301") == []
    [s] = [f for f in report.suppressed if f.code == "FXL301"]
    assert s.suppressed and s.line == line_of(path, "truncated BPTT")
    assert report.summary()["suppressed"] == 1

    proc = run_cli("lint", f"{path}:make", "--format", "json", cwd=tmp_path)  # CLI
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["summary"]["suppressed"] == 1 and out["findings"] == []

    torch._dynamo.reset()  # backend
    compiled = torch.compile(model, backend="fxlint", options={"inner": "eager"})
    with fxlint.collect() as session:
        compiled(*inputs)
    assert not [f for f in session.findings if f.code == "FXL301"]
    assert [f.code for f in session.suppressed] == ["FXL301"]


def test_backend_reports_the_cut_with_the_parameters():
    torch._dynamo.reset()
    compiled = torch.compile(GRULoop("after"), backend="fxlint", options={"inner": "eager"})
    with fxlint.collect() as session:
        compiled(X)
    [f] = [f for f in session.findings if f.code == "FXL301"]
    assert f.severity == "error" and f.details["lost_parameters"] == CELL
    assert f.line == line_of(__file__, "# DETACH-AFTER")


def test_backend_in_eval_mode_is_quiet():
    torch._dynamo.reset()
    compiled = torch.compile(GRULoop("after").eval(), backend="fxlint", options={"inner": "eager"})
    with fxlint.collect() as session:
        compiled(X)
    assert session.findings == []


class TwoSites(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x):
        h = self.a(x)
        u = h.detach() * 2  # SITE-1
        v = torch.sigmoid(h).detach()  # SITE-2
        return h + u + v


def test_two_cut_sites_each_say_the_fraction_is_combined():
    report = fxlint.lint(TwoSites(), torch.randn(2, 4))
    lines = sorted(f.line for f in report.by_code("FXL301"))
    assert lines == [line_of(__file__, "# SITE-1"), line_of(__file__, "# SITE-2")]
    for f in report.by_code("FXL301"):
        assert f.details["fraction_cut"]["a.weight"] == pytest.approx(2 / 3)
        assert "by this and 1 other cut" in f.message


@pytest.mark.parametrize("code", ["FXL109", "FXL301", "FXL302", "FXL303", "FXL304", "FXL501"])
def test_rule_documentation_has_every_section(code):
    from fxlint.registry import get_rule

    doc = get_rule(code).doc
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead",
                    "## When it is intentional"):
        assert section in doc, (code, section)


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text, no negative reported; the error is the parameters that never train."""
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL301")
    assert reported_lines(out, "FXL301") == set(marked_lines("FXL301", "positive")) and "# negative" not in out
    assert out.count("FXL301 error") == 1 and out.count("FXL301 warning") == 2
    assert out == snapshot


def test_fixture_verdicts_agree_with_autograd():
    """Who never trains and who still learns, on the fixture, as autograd sees it."""
    from tests.rule_snapshots import load_fixture

    model, inputs = load_fixture("FXL301").make()
    report = fxlint.lint(model, inputs, select="FXL301", config=False)
    grads = check_verdicts(report, model, inputs)
    assert grads["frozen.weight"] == "none" and grads["enc.weight"] == "nonzero"

"""FXL303 no-grad-region: a frozen backbone under no_grad, every way autograd is
switched off, partial cuts, explicit freezing, silencing on the `with` line, and
inference staying quiet."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from tests._grad import check_verdicts
from tests.conftest import line_of

BACKBONE = ["backbone.0.weight", "backbone.0.bias", "backbone.2.weight", "backbone.2.bias"]


class Frozen(nn.Module):
    """Held-out style: a backbone under no_grad whose parameters still require grad."""

    def __init__(self, how: str = "no_grad"):
        super().__init__()
        self.how = how
        self.backbone = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16))
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        if self.how == "no_grad":
            with torch.no_grad():
                feats = self.backbone(x)  # BACKBONE-NO-GRAD
        elif self.how == "set_grad_enabled":
            with torch.set_grad_enabled(False):
                feats = self.backbone(x)  # BACKBONE-SET-GRAD
        else:
            with torch.inference_mode():
                feats = self.backbone(x)  # BACKBONE-INFERENCE
            feats = feats.clone()
        return self.head(feats)


X = torch.randn(4, 8)
MARKERS = {"no_grad": "# BACKBONE-NO-GRAD", "set_grad_enabled": "# BACKBONE-SET-GRAD",
           "inference_mode": "# BACKBONE-INFERENCE"}


@pytest.mark.parametrize("how", list(MARKERS))
def test_backbone_with_autograd_off_never_trains(how):
    m = Frozen(how)
    report = fxlint.lint(m, X)
    [f] = report.by_code("FXL303")
    assert f.severity == "error" and f.line == line_of(__file__, MARKERS[how])
    assert f.details["lost_parameters"] == BACKBONE
    assert "backbone.0.weight" in f.message and "requires_grad_(False)" in f.message
    if how != "inference_mode":  # an inference tensor cannot be saved for backward: eager raises
        grads = check_verdicts(report, m, X)
        assert all(grads[n] == "none" for n in BACKBONE)


def test_explicitly_frozen_backbone_is_quiet():
    m = Frozen()
    m.backbone.requires_grad_(False)
    assert fxlint.lint(m, X).codes() == set()


def test_inference_is_quiet_eval_or_no_grad():
    assert fxlint.lint(Frozen().eval(), X).codes() == set()
    with torch.no_grad():
        assert fxlint.lint(Frozen(), X).codes() == set()


class Ensemble(nn.Module):
    """One member also used outside the no_grad block: partly cut."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 2)
        self.b = nn.Linear(8, 2)

    def forward(self, x):
        with torch.no_grad():
            teacher = self.a(x)  # TEACHER
        return self.a(x) + self.b(x) + teacher


def test_member_used_inside_and_outside_is_a_warning():
    m = Ensemble()
    report = fxlint.lint(m, X)
    [f] = report.by_code("FXL303")
    assert f.severity == "warning" and f.line == line_of(__file__, "# TEACHER")
    assert f.details["cut_parameters"] == ["a.weight", "a.bias"]
    assert f.details["fraction_cut"]["a.weight"] == 0.5
    check_verdicts(report, m, X)


class Decorated(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(8, 8)
        self.head = nn.Linear(8, 2)

    @torch.no_grad()
    def encode(self, x):
        return self.enc(x)  # DECORATED

    def forward(self, x):
        return self.head(self.encode(x))


def test_no_grad_decorator():
    [f] = fxlint.lint(Decorated(), X).by_code("FXL303")
    assert f.line == line_of(__file__, "# DECORATED") and f.details["lost_parameters"] == ["enc.weight", "enc.bias"]


SILENCED = '''
import torch, torch.nn as nn

class Teacher(nn.Module):
    def __init__(self):
        super().__init__()
        self.teacher = nn.Linear(8, 8)
        self.student = nn.Linear(8, 8)

    def forward(self, x):
        with torch.no_grad():  # fxlint: ignore[FXL303] EMA teacher, updated outside autograd
            target = self.teacher(x)
            target = torch.softmax(target, -1)
        return ((torch.softmax(self.student(x), -1) - target) ** 2).sum()
'''


def test_silenced_on_the_with_line(write_module):
    import importlib.util

    path = write_module(SILENCED, name="teacher_model.py")
    spec = importlib.util.spec_from_file_location("teacher_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    report = fxlint.lint(mod.Teacher(), X)
    assert report.by_code("FXL303") == []
    [s] = report.suppressed
    assert s.code == "FXL303" and s.line == line_of(path, "target = self.teacher(x)")
    assert s.details["lost_parameters"] == ["teacher.weight", "teacher.bias"]


def test_exported_program_region():
    ep = torch.export.export(Frozen(), (X,))
    [f] = fxlint.lint(ep).by_code("FXL303")
    assert f.details["lost_parameters"] == BACKBONE and f.line == line_of(__file__, "# BACKBONE-NO-GRAD")


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text, no negative reported, each at the first line inside its block."""
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL303")
    assert reported_lines(out, "FXL303") == set(marked_lines("FXL303", "positive")) and "# negative" not in out
    assert out.count("FXL303 error") == 1 and out.count("FXL303 warning") == 1
    assert out == snapshot


def test_fixture_verdicts_agree_with_autograd():
    """Who never trains and who still learns, on the fixture, as autograd sees it."""
    from tests.rule_snapshots import load_fixture

    model, inputs = load_fixture("FXL303").make()
    report = fxlint.lint(model, inputs, select="FXL303", config=False)
    grads = check_verdicts(report, model, inputs)
    assert grads["backbone.0.weight"] == "none" and grads["shared.weight"] == "nonzero"

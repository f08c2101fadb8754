"""``fxlint fix --diff`` / ``--apply``: source edits of the user's file (fxlint.srcfix), located with
libcst, written atomically, re-linted, re-run against the original and reverted on a difference."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from fxlint import srcfix
from fxlint.cli import main
from fxlint.findings import Finding, Severity, Violation
from fxlint.srcfix import FIXES
from fxlint.srcfix.base import Proposal
from fxlint.srcfix.locate import SourceFile, not_editable

MODEL = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Noop(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = (self.lin(x) + 1).float()  # already float32
        return y * 2


class Pad(nn.Module):
    def forward(self, x):
        z = F.pad(x * 3,
                  (0, 0))  # nothing to pad
        return z + 1


class Index(nn.Module):
    def forward(self, x):
        return x[:, [0, 2, 4, 6]] * 2  # every other column


class Stack(nn.Module):
    def forward(self, x):
        return torch.tensor([x.sum(), x.amax()]) * 2


class Trip(nn.Module):
    def forward(self, x):
        return x.double().float() + 1  # lossless


class Lossy(nn.Module):
    def forward(self, x):
        return x.half().float() * 3


class Contig(nn.Module):
    def forward(self, x):
        h = x.t().contiguous()  # a habit
        return (h * 2).sum(-1)


class Twice(nn.Module):
    def forward(self, x):
        y = x * 2
        return x.float() + y.float()
'''


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(f"_fix_test_{path.stem}_{abs(hash(path.read_text()))}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    return getattr(mod, name)()


def _outputs(path: Path, name: str, x: torch.Tensor):
    return _load(path, name)(x.clone())


@pytest.fixture
def model(write_module):
    return write_module(MODEL)


def _fix(path: Path, cls: str, *flags: str, shape: str = "randn(4,8)") -> int:
    return main(["fix", f"{path}:{cls}", "-i", shape, *flags])


# --------------------------------------------------------------------------- each edit kind


@pytest.mark.parametrize("cls, before, after, unsafe", [
    ("Noop", "y = (self.lin(x) + 1).float()  # already float32", "y = (self.lin(x) + 1)  # already float32", False),
    ("Index", "return x[:, [0, 2, 4, 6]] * 2  # every other column", "return x[:, ::2] * 2  # every other column",
     True),
    ("Stack", "return torch.tensor([x.sum(), x.amax()]) * 2", "return torch.stack([x.sum(), x.amax()]) * 2", True),
    ("Trip", "return x.double().float() + 1  # lossless", "return x + 1  # lossless", True),
    ("Contig", "h = x.t().contiguous()  # a habit", "h = x.t()  # a habit", True),
])
def test_diff_then_apply_edits_the_line_and_keeps_the_outputs(model, capsys, cls, before, after, unsafe):
    x = torch.randn(4, 8)
    expected = _outputs(model, cls, x)
    original = model.read_text()
    flags = ("--unsafe-fixes",) if unsafe else ()
    assert _fix(model, cls, "--diff", *flags) == 1  # an edit to make
    captured = capsys.readouterr()
    assert f"-        {before}\n+        {after}\n" in captured.out
    assert captured.out.startswith(f"--- {model}\n+++ {model}\n")
    assert "1 edit to make in 1 file" in captured.err
    assert model.read_text() == original  # --diff writes nothing

    assert _fix(model, cls, "--apply", *flags) == 0
    out = capsys.readouterr().out
    assert "1 edit made in 1 file" in out and "\nverified (outputs" in out
    assert "re-lint:" in out
    text = model.read_text()
    assert text == original.replace(before, after)  # that line and nothing else: comments and layout survive
    assert not Path(str(model) + ".fxlint-orig").exists()
    torch.testing.assert_close(_outputs(model, cls, x), expected)


def test_a_multi_line_pad_collapses_to_its_input_and_the_comment_stays(model, capsys):
    assert _fix(model, "Pad", "--apply", "--unsafe-fixes") == 0
    capsys.readouterr()
    assert "        z = (x * 3)  # nothing to pad\n        return z + 1\n" in model.read_text()


def test_relint_shows_the_finding_gone(model, capsys):
    assert _fix(model, "Noop", "--apply") == 0
    assert "re-lint: 0 finding(s), was 1" in capsys.readouterr().out


# --------------------------------------------------------------------------- refusals


def test_unsafe_edits_wait_for_unsafe_fixes(model, capsys):
    original = model.read_text()
    assert _fix(model, "Index", "--diff") == 0  # nothing safe to make
    captured = capsys.readouterr()
    assert captured.out == ""
    assert ("FXL401 no source edit: unsafe fix (--unsafe-fixes makes it): x[:, [0, 2, 4, 6]] -> x[:, ::2]"
            in captured.err)
    assert "(1 unsafe, not made: --unsafe-fixes)" in captured.err
    assert _fix(model, "Index", "--apply") == 0
    assert model.read_text() == original


def test_an_ambiguous_line_gets_no_edit(model, capsys):
    assert _fix(model, "Twice", "--diff") == 0
    err = capsys.readouterr().err
    assert "no source edit: 2 `.float(...)` calls on line" in err and "ambiguous" in err


def test_a_contiguous_the_layout_may_need_is_left(model, capsys, write_module):
    path = write_module(MODEL.replace("return (h * 2).sum(-1)", "return h"), name="returned.py")
    assert _fix(path, "Contig", "--diff", "--unsafe-fixes") == 0
    assert "FXL101 no source edit: the copy's consumers are not all layout-agnostic" in capsys.readouterr().err


@dataclass(frozen=True)
class _Facts(Violation):
    call: str = ""

    def message(self) -> str:
        return "m"


def _finding(path: str, line: int | None, code: str = "FXL108", call: str = "") -> Finding:
    return Finding(code, "x", Severity.INFO, "m", file=path, line=line, violation=_Facts(call))


def test_files_outside_the_users_code_are_refused(tmp_path):
    lib = tmp_path / "lib" / "python3.11" / "site-packages" / "pkg"
    lib.mkdir(parents=True)
    (lib / "mod.py").write_text("y = x.float()\n")
    assert "installed library" in (not_editable(str(lib / "mod.py")) or "")
    assert "part of torch" in (not_editable(torch.nn.functional.__file__) or "")
    plan = srcfix.plan([_finding(str(lib / "mod.py"), 1, call=".float()"),
                        _finding(torch.nn.functional.__file__, 10, call=".float()"),
                        _finding("<stdin>", 1, call=".float()")])
    assert plan.edits == []
    reasons = [s.reason for s in plan.skipped]
    assert "installed library" in reasons[0] and "part of torch or fxlint" in reasons[1] and "not a file" in reasons[2]


def test_a_rule_without_a_source_fix_and_a_missing_line_say_so(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("y = x.float()\n")
    plan = srcfix.plan([_finding(str(p), 1, code="FXL304"), _finding(str(p), None, call=".float()"),
                        _finding(str(p), 1, call=".half()")])
    assert [s.reason for s in plan.skipped] == [
        "FXL304 has no source fix", "the finding has no source line (the graph has no stack trace)",
        "no `.half(...)` call found on line 1 (`y = x.float()`)"]


def test_overlapping_edits_keep_the_first(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("y = x.float().contiguous()\n")
    plan = srcfix.plan([_finding(str(p), 1, call=".float()"), _finding(str(p), 1, call=".contiguous()")])
    assert [e.description for e in plan.edits] == ["x.float() -> x"]
    assert "overlaps the FXL108 edit at" in plan.skipped[0].reason
    located = SourceFile.load(str(p))
    assert located.line_text(1) == "y = x.float().contiguous()"


# --------------------------------------------------------------------------- the revert path and bad input


def test_a_wrong_edit_is_reverted_and_the_file_restored(model, capsys, monkeypatch):
    real = FIXES["FXL108"]

    def wrong(finding, source):
        p = real(finding, source)
        return Proposal(p.node, p.after + " * 0.5", safe=True, why="deliberately wrong")

    monkeypatch.setitem(FIXES, "FXL108", wrong)
    original = model.read_text()
    assert _fix(model, "Noop", "--apply") == 1
    out = capsys.readouterr().out
    assert "the edits were reverted, every file is as it was: the edited model's output 0 differs" in out
    assert model.read_text() == original
    assert not Path(str(model) + ".fxlint-orig").exists()


def test_a_lossy_round_trip_changes_the_outputs_and_is_reverted(model, capsys):
    original = model.read_text()
    assert _fix(model, "Lossy", "--apply", "--unsafe-fixes") == 1
    assert "the edits were reverted" in capsys.readouterr().out
    assert model.read_text() == original


def test_an_edit_that_breaks_the_import_is_reverted(model, capsys, monkeypatch):
    real = FIXES["FXL108"]
    monkeypatch.setitem(FIXES, "FXL108", lambda f, s: Proposal(real(f, s).node, "(", safe=True, why="broken"))
    original = model.read_text()
    assert _fix(model, "Noop", "--apply") == 1
    assert "the edits were reverted, every file is as it was: the edited model failed: TargetError" in (
        capsys.readouterr().out)
    assert model.read_text() == original


def test_json_output_of_diff_and_apply(model, capsys):
    assert _fix(model, "Noop", "--diff", "--format", "json") == 1
    data = json.loads(capsys.readouterr().out)
    [e] = data["edits"]
    assert (e["code"], e["column"], e["before"], e["after"], e["safe"]) == (
        "FXL108", 13, "(self.lin(x) + 1).float()", "(self.lin(x) + 1)", True)
    assert data["diff"].startswith("---")
    assert _fix(model, "Noop", "--apply", "--format", "json") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["applied"] is True and data["findings_before"] == {"FXL108": 1} and data["findings_after"] == {}


@pytest.mark.parametrize("flags, message", [
    (["--diff", "--apply"], "not allowed with argument"),
    (["--unsafe-fixes"], "--unsafe-fixes needs --diff or --apply"),
])
def test_bad_input_is_one_line_and_exit_2(model, capsys, flags, message):
    try:
        rc = _fix(model, "Noop", *flags)
    except SystemExit as exc:  # argparse's own usage errors
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and err.startswith("fxlint: error:")


def test_lint_json_gives_the_located_columns(model, capsys):
    assert main(["lint", f"{model}:Noop", "-i", "randn(4,8)", "--format", "json", "--select", "FXL108"]) == 0
    [f] = json.loads(capsys.readouterr().out)["findings"]
    assert (f["line"], f["column"], f["end_line"], f["end_column"]) == (13, 13, 13, 38)
    assert main(["lint", f"{model}:Twice", "-i", "randn(4,8)", "--format", "json", "--select", "FXL108"]) == 0
    [f] = json.loads(capsys.readouterr().out)["findings"]
    assert f["column"] is None and f["end_column"] is None  # ambiguous on its line: not located

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
from fxlint.cli.app import main
from fxlint.findings import Finding, Severity, Violation
from fxlint.srcfix.base import Proposal
from fxlint.srcfix.locate import SourceFile, not_editable
from fxlint.srcfix.planning import FIXES

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
        y = x.float()
        return y.half().float() * 3


class Contig(nn.Module):
    def forward(self, x):
        h = x.t().contiguous()  # a habit
        return (h * 2).sum(-1)


class Rep(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(1, 1, 8))

    def forward(self, x):
        B, T, C = x.shape
        bias = self.bias.repeat(B, T, 1)  # (1, 1, C) -> (B, T, C)
        return x + bias


class ExpandCopy(nn.Module):
    def forward(self, x, b):
        return x * b.expand(4, 8).contiguous()


class WriteBack(nn.Module):
    def forward(self, x, y):
        x = x * 1
        x[:, 1:] = x[:, 1:] + y  # write back
        return x


class SelfAssign(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 8))

    def forward(self, y):
        x = self.w * 2
        x[:, 1:] += y
        return x


class Fill(nn.Module):
    def forward(self, x, m):
        s = (x @ x.t()).masked_fill(m, 0.0)
        return s.sum(-1)


class FillInput(nn.Module):
    def forward(self, x, m):
        s = x.masked_fill(m, 0.0)
        return s.sum(-1) + x.sum()


class Ranges(nn.Module):
    def forward(self, output):
        n = output.size(1)
        a = output[:, [i for i in range(0, n, 2)]]
        c = output[:, list(range(1, output.size(1), 3))]
        d = output[:, torch.arange(0, output.shape[1], 4)]
        return a * 1, c * 1, d * 1


class Select(nn.Module):
    def forward(self, feats):
        frames = torch.relu(feats)
        kept = torch.index_select(frames, 1, torch.arange(0, frames.size(1), 3))  # every third
        other = (frames * 2).index_select(2, torch.tensor([1, 2, 3]))
        return kept * 1, other * 1


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


def _outputs(path: Path, name: str, xs: list[torch.Tensor]):
    return _load(path, name)(*[x.clone() for x in xs])


@pytest.fixture
def model(write_module):
    return write_module(MODEL)


def _fix(path: Path, cls: str, *flags: str, inputs: tuple[str, ...] = ("randn(4,8)",)) -> int:
    return main(["fix", f"{path}:{cls}", *[a for spec in inputs for a in ("-i", spec)], *flags])


def _tensors(inputs: tuple[str, ...]) -> list[torch.Tensor]:
    from fxlint.capture.spec import parse_spec

    torch.manual_seed(1)
    return [parse_spec(spec) for spec in inputs]


# --------------------------------------------------------------------------- each edit kind


X = ("randn(4,8)",)
CASES = [  # (class, inputs, the line before, after, unsafe)
    ("Noop", X, "y = (self.lin(x) + 1).float()  # already float32", "y = (self.lin(x) + 1)  # already float32", False),
    ("Index", X, "return x[:, [0, 2, 4, 6]] * 2  # every other column", "return x[:, ::2] * 2  # every other column",
     True),
    ("Stack", X, "return torch.tensor([x.sum(), x.amax()]) * 2", "return torch.stack([x.sum(), x.amax()]) * 2", True),
    ("Trip", X, "return x.double().float() + 1  # lossless", "return x + 1  # lossless", True),
    ("Contig", X, "h = x.t().contiguous()  # a habit", "h = x.t()  # a habit", True),
    ("Rep", ("randn(2,3,8)",), "bias = self.bias.repeat(B, T, 1)  # (1, 1, C) -> (B, T, C)",
     "bias = self.bias.expand(B, T, -1)  # (1, 1, C) -> (B, T, C)", True),
    ("ExpandCopy", ("randn(4,8)", "randn(1,8)"), "return x * b.expand(4, 8).contiguous()",
     "return x * b.expand(4, 8)", True),
    ("WriteBack", ("randn(4,8)", "randn(4,7)"), "x[:, 1:] = x[:, 1:] + y  # write back",
     "x[:, 1:].add_(y)  # write back", True),
    ("SelfAssign", ("randn(4,7)",), "x[:, 1:] += y", "x[:, 1:].add_(y)", False),
    ("Fill", ("randn(4,4)", "randint(0,2,(4,4)).bool()"), "s = (x @ x.t()).masked_fill(m, 0.0)",
     "s = (x @ x.t()).masked_fill_(m, 0.0)", True),
    ("FillInput", ("randn(4,4)", "randint(0,2,(4,4)).bool()"), "s = x.masked_fill(m, 0.0)",
     "s = torch.where(m, 0.0, x)", True),
]


@pytest.mark.parametrize("cls, inputs, before, after, unsafe", CASES, ids=[c[0] for c in CASES])
def test_diff_then_apply_edits_the_line_and_keeps_the_outputs(model, capsys, cls, inputs, before, after, unsafe):
    xs = _tensors(inputs)
    expected = _outputs(model, cls, xs)
    original = model.read_text()
    flags = ("--unsafe-fixes",) if unsafe else ()
    assert _fix(model, cls, "--diff", *flags, inputs=inputs) == 1  # an edit to make
    captured = capsys.readouterr()
    assert f"-        {before}\n+        {after}\n" in captured.out
    assert captured.out.startswith(f"--- {model}\n+++ {model}\n")
    assert "1 edit to make in 1 file" in captured.err
    assert model.read_text() == original  # --diff writes nothing

    assert _fix(model, cls, "--apply", *flags, inputs=inputs) == 0
    out = capsys.readouterr().out
    assert "1 edit made in 1 file" in out and "\nverified (outputs" in out
    assert "re-lint:" in out
    text = model.read_text()
    assert text == original.replace(before, after)  # that line and nothing else: comments and layout survive
    assert not Path(str(model) + ".fxlint-orig").exists()
    torch.testing.assert_close(_outputs(model, cls, xs), expected)


@pytest.mark.parametrize("cls, shape, n, lines", [
    ("Ranges", "randn(4,16)", 3, "a = output[:, 0:n:2]\n        c = output[:, 1::3]\n        d = output[:, ::4]\n"),
    ("Select", "randn(2,12,6)", 2, "kept = frames[:, ::3]  # every third\n        other = (frames * 2)[:, :, 1:4]\n"),
], ids=["Ranges", "Select"])
def test_index_ranges_and_index_select_keep_the_users_bounds(model, capsys, cls, shape, n, lines, in_fresh_interpreter):
    if not in_fresh_interpreter:
        return  # its body ran in a fresh interpreter and passed
    xs = _tensors((shape,))
    expected = _outputs(model, cls, xs)
    assert _fix(model, cls, "--apply", "--unsafe-fixes", inputs=(shape,)) == 0
    assert f"{n} edits made in 1 file" in capsys.readouterr().out
    assert lines in model.read_text()
    torch.testing.assert_close(_outputs(model, cls, xs), expected)


FACTORIES = '''
import torch


def arange_to(x):
    return x + torch.arange(8, dtype=x.dtype).to(x.device)  # arange moved


def index_mix(x):
    return x[torch.arange(4)]


def to_a_name(x):
    return x * torch.ones(4, 8).to(x)


def two_lines(x):
    pos = torch.linspace(0, 1, 8)  # built here
    return x * pos.to(x.device)  # moved here
'''


@pytest.mark.parametrize("fn, edit", [
    ("arange_to", "+    return x + torch.arange(8, dtype=x.dtype, device=x.device)  # arange moved\n"),
    ("index_mix", "+    return x[torch.arange(4, device=x.device)]\n"),
])
def test_factories_get_the_device_they_are_moved_to(write_module, capsys, fn, edit):
    """The model on `meta` stands for another device (no accelerator here): --diff only, as the
    outputs of a meta run have no values to compare."""
    path = write_module(FACTORIES, name="factories.py")
    assert _fix(path, fn, "--diff", "--select", "FXL107", inputs=("randn(4,8,device=meta)",)) == 1
    assert edit in capsys.readouterr().out


def test_apply_without_verification_on_another_device(write_module, capsys):
    path = write_module(FACTORIES, name="factories.py")
    assert _fix(path, "arange_to", "--apply", "--no-verify", "--select", "FXL107",
                inputs=("randn(4,8,device=meta)",)) == 0
    out = capsys.readouterr().out
    assert "not verified (--no-verify)" in out and "re-lint: 0 finding(s), was 1" in out
    assert "return x + torch.arange(8, dtype=x.dtype, device=x.device)  # arange moved\n" in path.read_text()


@pytest.mark.parametrize("fn, reason", [
    ("to_a_name", "`.to(x)`: whether x is a device or a tensor is not known from the source"),
    ("two_lines", "built at line 18 and moved at line 19: add device= where it is built"),
])
def test_factories_whose_device_the_source_does_not_name_are_left(write_module, capsys, fn, reason):
    path = write_module(FACTORIES, name="factories.py")
    assert _fix(path, fn, "--diff", "--select", "FXL107", inputs=("randn(4,8,device=meta)",)) == 0
    assert f"FXL107 no source edit: {reason}" in capsys.readouterr().err


def test_a_multi_line_pad_collapses_to_its_input_and_the_comment_stays(model, capsys):
    xs = _tensors(X)
    expected = _outputs(model, "Pad", xs)
    assert _fix(model, "Pad", "--apply", "--unsafe-fixes") == 0
    capsys.readouterr()
    assert "        z = (x * 3)  # nothing to pad\n        return z + 1\n" in model.read_text()
    torch.testing.assert_close(_outputs(model, "Pad", xs), expected)


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


def test_a_lossy_round_trip_changes_the_outputs_and_is_reverted_and_named(model, capsys):
    original = model.read_text()
    assert _fix(model, "Lossy", "--apply", "--unsafe-fixes") == 1
    out = capsys.readouterr().out
    assert "the edits were reverted, every file is as it was: the edited model's output 0 differs" in out
    # two edits made; the one that changes the outputs is named (the no-op .float() is not)
    assert "(the edit that does it: FXL103 at " in out and ": y.half().float() -> y)" in out
    assert model.read_text() == original
    assert not list(model.parent.glob("*.fxlint-orig")) and not list(model.parent.glob(".fxlint-*"))


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


def test_the_sample_in_the_rewriting_page_is_what_fix_diff_prints(capsys, monkeypatch):
    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(root)
    page = (root / "docs" / "rewriting.md").read_text()
    command = "$ fxlint fix models/speech_separation.py:make --diff --unsafe-fixes\n"
    shown = page.split(command, 1)[1].split("```", 1)[0]
    assert main(command[2:].split()[1:]) == 1
    captured = capsys.readouterr()
    assert shown == captured.out + captured.err
    assert "speaker_a = output[:, [i for i in range(0, output.size(1), 2)]]" in (
        root / "models" / "speech_separation.py").read_text()  # --diff wrote nothing


def test_a_file_changed_since_the_plan_is_not_written(tmp_path):
    from fxlint.errors import FxlintError
    from fxlint.srcfix.apply import write

    p = tmp_path / "m.py"
    p.write_text("y = x.float()\n")
    plan = srcfix.plan([_finding(str(p), 1, call=".float()")])
    assert plan.edited_text(str(p)) == "y = x\n"
    p.write_text("y = x.float()  # edited meanwhile\n")
    with pytest.raises(FxlintError, match="changed while fxlint was running"):
        write(plan)
    assert p.read_text() == "y = x.float()  # edited meanwhile\n"
    assert not list(tmp_path.glob("*.fxlint-orig"))


def test_a_package_module_target_is_imported_again_after_the_edit(model, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(model.parent))
    monkeypatch.chdir(model.parent)
    assert main(["fix", "user_model:Noop", "-i", "randn(4,8)", "--apply"]) == 0
    out = capsys.readouterr().out
    assert "verified (outputs and gradients)" in out and "re-lint: 0 finding(s), was 1" in out
    assert "y = (self.lin(x) + 1)  # already float32" in model.read_text()


def test_a_silenced_finding_is_not_edited(write_module, capsys):
    path = write_module(MODEL.replace("# already float32", "# fxlint: ignore[FXL108]"), name="silenced.py")
    assert _fix(path, "Noop", "--diff") == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "0 edits to make in 0 files; 0 findings without one" in captured.err


def test_a_broken_source_fix_costs_its_edit_and_nothing_else(tmp_path, monkeypatch):
    p = tmp_path / "m.py"
    p.write_text("y = x.float()\n")

    def broken(finding, source):
        raise KeyError("start")

    monkeypatch.setitem(FIXES, "FXL108", broken)
    f = _finding(str(p), 1, call=".float()")
    plan = srcfix.plan([f])
    assert plan.edits == [] and plan.skipped[0].reason == "the FXL108 source fix failed: KeyError: 'start'"
    assert srcfix.columns(f) is None


def test_the_codes_with_a_source_fix_are_the_registered_ones_and_load_lazily():
    import subprocess
    import sys

    assert set(FIXES) == srcfix.CODES
    probe = ("import sys, fxlint, fxlint.renderers.json, fxlint.renderers.sarif, fxlint.srcfix; "
             "print('libcst' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert proc.stdout.strip() == "False", proc.stderr


def test_crlf_line_ends_and_form_feeds_keep_their_place(tmp_path):
    p = tmp_path / "m.py"
    p.write_bytes(b"# a form feed \x0c in a comment\r\ny = x.float()  # keep\r\nz = 1\r\n")
    plan = srcfix.plan([_finding(str(p), 2, call=".float()")])
    [e] = plan.edits
    assert (e.line, e.column, e.end_column) == (2, 5, 14)
    assert plan.edited_text(str(p)) == "# a form feed \x0c in a comment\r\ny = x  # keep\r\nz = 1\r\n"


def test_an_edit_in_a_module_the_target_imports_is_verified_on_the_edited_module(write_module, capsys):
    write_module("""
        import torch.nn as nn


        class Block(nn.Module):
            def forward(self, x):
                return (x * 2).float() + 1  # in the imported module
    """, name="blocks_fix_sibling.py")
    target = write_module("""
        import torch
        from blocks_fix_sibling import Block


        def make():
            return Block(), (torch.randn(3, 4),)
    """, name="net_fix_sibling.py")
    assert main(["fix", f"{target}:make", "--apply"]) == 0
    out = capsys.readouterr().out
    assert "re-lint: 0 finding(s), was 1" in out  # the re-lint saw the edited module, not the cached one
    assert "return (x * 2) + 1  # in the imported module" in (target.parent / "blocks_fix_sibling.py").read_text()


@pytest.mark.parametrize("imports, edits", [("import torch\n", True), ("import torch as th\n", False),
                                            ("import torch.nn as nn\n", False)])
def test_the_where_fix_needs_torch_bound_by_that_name(tmp_path, imports, edits):
    """`t.masked_fill(m, v)` -> `torch.where(m, v, t)` only where the module binds `torch` (an alias or a submodule
    import leaves the name unbound: the edit would raise NameError)."""
    from fxlint.passes.fxl111_out_of_place_on_temporary import OutOfPlaceOnTemporary
    from fxlint.srcfix.fxl111_in_place_masked_fill import fix
    from fxlint.srcfix.locate import NoEdit, SourceFile

    path = tmp_path / "m.py"
    path.write_text(imports + "\n\ndef f(x, m):\n    return x.masked_fill(m, 0.0)\n")
    finding = Finding(code="FXL111", name="out-of-place-on-temporary", severity=Severity.WARNING, message="m",
                      file=str(path), line=5, bytes=64,
                      violation=OutOfPlaceOnTemporary(op="masked_fill", inplace="masked_fill_", source="x", copied=64,
                                                      fix="where", kept_because="it is an input of the graph"))
    source = SourceFile.load(str(path))
    if edits:
        assert fix(finding, source).after == "torch.where(m, 0.0, x)"
    else:
        with pytest.raises(NoEdit, match="import torch"):
            fix(finding, source)

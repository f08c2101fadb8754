"""The CLI: targets, specs, formats, exit codes, and one-line errors for bad input."""

from __future__ import annotations

import json

import pytest
import torch

from fxlint.cli.app import main
from fxlint.errors import SpecError
from fxlint.capture.spec import parse_spec, parse_specs
from tests.conftest import ROOT, line_of, run_cli

MODEL = """
import torch
import torch.nn as nn


class Gather(nn.Module):
    def forward(self, x):
        return x[:, [0, 2, 4, 6]] * 2  # the finding


class Clean(nn.Module):
    def forward(self, x):
        return x[:, ::2] * 2


class NeedsArgs(nn.Module):
    def __init__(self, width):
        super().__init__()


def make():
    return Gather(), (torch.randn(3, 8),)


def make_module():
    return Clean()


def make_inputs():
    return (torch.randn(2, 8),)


def fn(x):
    return x[[1]]


def broken():
    raise RuntimeError("factory exploded")


class Raises(nn.Module):
    def forward(self, x):
        raise ValueError("model exploded")


class ReturnsText(nn.Module):
    def forward(self, x):
        return "not a tensor"


class ReturnsNothing(nn.Module):
    def forward(self, x):
        x = x * 2


class ReturnsSize(nn.Module):
    def forward(self, x):
        return x.shape[0]
"""


@pytest.fixture
def model_file(write_module):
    return write_module(MODEL, name="cli_model.py")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_text_output_and_exit_code_1(capsys, model_file):
    code, out, err = run(capsys, "lint", f"{model_file}:Gather", "--input", "randn(3,8)")
    assert code == 1
    assert "FXL401" in out and f"cli_model.py:{line_of(model_file, '# the finding')}" in out
    assert "1 finding (1 warning)" in out


def test_clean_model_exits_0(capsys, model_file):
    code, out, _ = run(capsys, "lint", f"{model_file}:Clean", "-i", "randn(3,8)")
    assert code == 0 and "No findings" in out


def test_fail_on_levels(capsys, model_file):
    assert run(capsys, "lint", f"{model_file}:Gather", "-i", "randn(3,8)", "--fail-on", "error")[0] == 0
    assert run(capsys, "lint", f"{model_file}:Gather", "-i", "randn(3,8)", "--fail-on", "info")[0] == 1
    assert run(capsys, "lint", f"{model_file}:Gather", "-i", "randn(3,8)", "--fail-on", "never")[0] == 0


def test_json_format(capsys, model_file):
    code, out, _ = run(capsys, "lint", f"{model_file}:make", "--format", "json")
    data = json.loads(out)
    [f] = data["findings"]
    assert {"code", "name", "severity", "message", "file", "line", "module_path", "bytes", "fix"} <= set(f)
    assert f["code"] == "FXL401" and f["bytes"] == 3 * 4 * 4 and f["severity"] == "warning"
    assert data["summary"]["findings"] == 1


def test_sarif_format_to_file(capsys, model_file, tmp_path):
    out_file = tmp_path / "r.sarif"
    code, out, _ = run(capsys, "lint", f"{model_file}:make", "--format", "sarif", "-o", str(out_file))
    assert code == 1 and out == ""
    sarif = json.loads(out_file.read_text())
    assert sarif["version"] == "2.1.0"
    run_ = sarif["runs"][0]
    [res] = run_["results"]
    assert res["ruleId"] == "FXL401" and res["level"] == "warning"
    loc = res["locations"][0]["physicalLocation"]
    assert loc["region"]["startLine"] == line_of(model_file, "# the finding")
    assert any(r["id"] == "FXL401" for r in run_["tool"]["driver"]["rules"])
    assert run_["tool"]["driver"]["rules"][res["ruleIndex"]]["id"] == "FXL401"


def test_target_forms(capsys, model_file, monkeypatch):
    # a factory returning (module, inputs), a module factory with @inputs, a plain function
    assert run(capsys, "lint", f"{model_file}:make")[0] == 1
    assert run(capsys, "lint", f"{model_file}:make_module", "-i", f"@{model_file}:make_inputs")[0] == 0
    code, out, _ = run(capsys, "lint", f"{model_file}:fn", "-i", "randn(4,4)")
    assert code == 1 and "[1:2]" in out
    # package.module:Name form, importable from the working directory
    monkeypatch.chdir(model_file.parent)
    assert run(capsys, "lint", "cli_model:Gather", "-i", "randn(3,8)")[0] == 1


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["lint", "missing_file.py:Model", "-i", "randn(2)"], "no such file"),
        (["lint", "no_colon_here"], "must be 'path/to/file.py:Name'"),
        (["lint", "{f}:Nope", "-i", "randn(2)"], "has no attribute 'Nope'"),
        (["lint", "{f}:NeedsArgs", "-i", "randn(2)"], "needs constructor arguments (width)"),
        (["lint", "{f}:broken"], "factory exploded"),
        (["lint", "{f}:Gather"], "needs example inputs"),
        (["lint", "{f}:Gather", "-i", "randn(3,"], "cannot parse input SPEC"),
        (["lint", "{f}:Gather", "-i", "__import__('os').system('true')"], "bad input SPEC"),
        (["lint", "{f}:Gather", "-i", "randn(3, dtype=float17)"], "unknown dtype"),
        (["lint", "{f}:Gather", "-i", "randn(3,8)", "--select", "FXL999"], "matches no rule"),
        (["lint", "{f}:Raises", "-i", "randn(3,8)"], "model exploded"),
        (["lint", "no_such_pkg_xyz.mod:Model", "-i", "randn(2)"], "no module named 'no_such_pkg_xyz'"),
        (["explain", "FXL000"], "unknown rule"),
        (["lint"], "needs a TARGET"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, model_file, argv, needle):
    argv = [a.replace("{f}", str(model_file)) for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("fxlint: error:") and needle in lines[0], err
    assert "Traceback" not in err


def test_import_error_inside_target_file(capsys, write_module):
    bad = write_module("import torch\nimport definitely_not_a_module_abc\n", name="bad_import.py")
    code, _, err = run(capsys, "lint", f"{bad}:M", "-i", "randn(2)")
    assert code == 2 and "definitely_not_a_module_abc" in err and len(err.strip().splitlines()) == 1


def test_debug_shows_traceback(capsys, model_file):
    code, _, err = run(capsys, "lint", f"{model_file}:Raises", "-i", "randn(3,8)", "--debug")
    assert code == 2 and "Traceback" in err


def test_usage_error_exit_2(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["lint", "--format", "xml"])
    assert exc.value.code == 2


def test_rules_and_explain(capsys):
    code, out, _ = run(capsys, "rules")
    assert code == 0 and "FXL401" in out and "index-as-slice" in out
    code, out, _ = run(capsys, "rules", "--format", "json")
    assert any(r["code"] == "FXL401" for r in json.loads(out))
    code, out, _ = run(capsys, "explain", "FXL401")
    assert code == 0 and out.startswith("# FXL401 index-as-slice") and "## Use instead" in out
    assert run(capsys, "explain", "index-as-slice")[1] == out


def test_zoo_lints_every_scenario_model(capsys):
    code, out, err = run(capsys, "lint", "--zoo", str(ROOT / "models"), "--fail-on", "never")
    assert code == 0
    assert "== speech_separation ==" in out and "== clean_mlp ==" in out
    assert "[1/" in err  # progress


def test_subprocess_entry_point_and_exit_codes(model_file):
    proc = run_cli("lint", f"{model_file}:Gather", "-i", "randn(3,8)", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["findings"][0]["code"] == "FXL401"
    proc = run_cli("lint", f"{model_file}:Gather", "-i", "randn(3,")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


# --------------------------------------------------------------------------- SPEC parsing


@pytest.mark.parametrize(
    "text,shape,dtype",
    [
        ("randn(2,3,224,224)", (2, 3, 224, 224), torch.float32),
        ("randint(0,1000,(2,64))", (2, 64), torch.int64),
        ("zeros(4,8,dtype=float16)", (4, 8), torch.float16),
        ("ones(2, 3, dtype=torch.bfloat16)", (2, 3), torch.bfloat16),
        ("full((2,2), 7)", (2, 2), torch.int64),
        ("full((2,2), 0.5)", (2, 2), torch.float32),
        ("arange(10)", (10,), torch.int64),
        ("randn(2,224,224,3).permute(0,3,1,2)", (2, 3, 224, 224), torch.float32),
        ("randn(3,4).T", (4, 3), torch.float32),
        ("rand(2,3).half()", (2, 3), torch.float16),
    ],
)
def test_specs(text, shape, dtype):
    t = parse_spec(text)
    assert tuple(t.shape) == shape and t.dtype == dtype


def test_spec_layouts_and_flags():
    t = parse_spec("randn(8,3,32,32).to(memory_format=channels_last)")
    assert t.is_contiguous(memory_format=torch.channels_last) and not t.is_contiguous()
    assert parse_spec("randn(2,2,requires_grad=True)").requires_grad
    assert not parse_spec("randn(2,3,4).transpose(1,2)").is_contiguous()
    assert parse_spec("3") == 3 and parse_spec("-1.5") == -1.5
    assert len(parse_specs(["randn(2)", "randn(3)"])) == 2


@pytest.mark.parametrize(
    "text",
    ["", "randn(", "os.system('x')", "randn(2).numpy()", "randn(x)", "eval('1')", "randn(2, device=7)",
     "randn(2)[0]", "lambda: 1", "randn(-1)", "zeros(2, memory_format=fast)"],
)
def test_bad_specs_raise_spec_error(text):
    with pytest.raises(SpecError):
        parse_spec(text)


# --------------------------------------------------------------------------- every subcommand

BENCH = ["--backends", "eager", "--mode", "infer", "--min-run-time", "0.01"]
BAD_TARGETS = [
    (["missing_file.py:Model", "-i", "randn(2)"], "no such file"),
    (["{f}:NeedsArgs", "-i", "randn(2)"], "needs constructor arguments (width)"),
    (["{f}:broken"], "factory exploded"),
    (["{f}:Gather"], "needs example inputs"),
    (["{f}:Gather", "-i", "randn(3,"], "cannot parse input SPEC"),
    (["{f}:Gather", "-i", "randn(3, dtype=float17)"], "unknown dtype"),
    (["{f}:Raises", "-i", "randn(3,8)"], "`raise ValueError(\"model exploded\")`): ValueError: model exploded"),
    (["{f}:ReturnsText", "-i", "randn(3,8)"], "the model returned a str ('not a tensor'), with no tensor in it"),
    (["{f}:ReturnsNothing", "-i", "randn(3,8)"], "the model returned None, with no tensor in it"),
    (["{f}:ReturnsSize", "-i", "randn(3,8)"], "the model returned an int"),
    (["no_such_pkg_xyz.mod:Model", "-i", "randn(2)"], "no module named 'no_such_pkg_xyz'"),
    ([], "needs a TARGET"),
]


@pytest.mark.parametrize("command", ["lint", "audit", "fix", "bench"])
@pytest.mark.parametrize("argv,needle", BAD_TARGETS, ids=[n for _, n in BAD_TARGETS])
def test_bad_input_to_every_subcommand_is_one_error_line_and_exit_2(capsys, model_file, command, argv, needle):
    argv = [a.replace("{f}", str(model_file)) for a in argv] + (BENCH if command == "bench" else [])
    code, out, err = run(capsys, command, *argv)
    assert code == 2, (out, err)
    errors = [ln for ln in err.strip().splitlines() if ln.startswith("fxlint:")]
    assert len(errors) == 1 and errors[0].startswith("fxlint: error:") and needle in errors[0], err
    # nothing else but bench's progress lines ("[1/1] ..."), and never a traceback
    assert all(ln.startswith("[") for ln in err.strip().splitlines() if not ln.startswith("fxlint:")), err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["lint", "audit", "fix", "bench"])
def test_import_error_inside_the_target_for_every_subcommand(capsys, write_module, command):
    bad = write_module("import torch\nimport definitely_not_a_module_abc\n", name="bad_import.py")
    code, _, err = run(capsys, command, f"{bad}:M", "-i", "randn(2)", *(BENCH if command == "bench" else []))
    assert code == 2 and "definitely_not_a_module_abc" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("command", ["lint", "audit", "fix", "bench"])
def test_debug_shows_the_traceback_for_every_subcommand(capsys, model_file, command):
    code, _, err = run(capsys, command, f"{model_file}:Raises", "-i", "randn(3,8)", "--debug",
                       *(BENCH if command == "bench" else []))
    assert code == 2 and "Traceback" in err and "model exploded" in err


# --------------------------------------------------------------------------- the API: typed errors


def test_api_bad_input_raises_typed_errors(model_file):
    import fxlint
    from fxlint.errors import CaptureError, ConfigError, ModelError, TargetError
    from fxlint.capture.target import load_target

    x = torch.randn(3, 8)
    raises = load_target(f"{model_file}:Raises").obj
    text = load_target(f"{model_file}:ReturnsText").obj
    for call in (fxlint.lint, fxlint.audit, fxlint.rewrite):
        with pytest.raises(ModelError, match="the model raised at .*: ValueError: model exploded"):
            call(raises, (x,))
        with pytest.raises(ModelError, match="with no tensor in it"):
            call(text, (x,))
    with pytest.raises(CaptureError, match="cannot lint int"):
        fxlint.lint(42, (x,))
    with pytest.raises(CaptureError, match="cannot audit int"):
        fxlint.audit(42, (x,))
    with pytest.raises(ConfigError, match="matches no rule"):
        fxlint.lint(text, (x,), select="FXL999")
    with pytest.raises(ConfigError, match="unknown severity"):
        fxlint.lint(text, (x,), severity={"FXL401": "fatal"})
    with pytest.raises(TargetError, match="needs constructor arguments"):
        load_target(f"{model_file}:NeedsArgs")
    with pytest.raises(SpecError, match="cannot parse"):
        parse_spec("randn(3,")
    # every one is an FxlintError: one except clause catches them all
    assert all(issubclass(e, fxlint.FxlintError) for e in (ModelError, CaptureError, ConfigError, TargetError, SpecError))


# --------------------------------------------------------------------------- first contact


OUTPUTS = [
    (["lint", "{m}", "--format", "sarif", "-o", "{bad}/x.sarif"]),
    (["lint", "{m}", "-o", "{bad}/x.txt"]),
    (["lint", "{m}", "--baseline", "{bad}/b.json", "--write-baseline"]),
    (["audit", "{m}", "-o", "{bad}/a.json", "--format", "json"]),
    (["fix", "{m}", "-o", "{bad}/f.txt"]),
    (["report", "{m}", "-o", "{bad}/r.html"]),
    (["bench", "{m}", "--json", "{bad}/b.json", *BENCH]),
    (["bench", "{m}", "--plot", "{bad}/b.png", *BENCH]),
    (["schema", "-o", "{bad}/s.json"]),
]


@pytest.mark.parametrize("argv", OUTPUTS, ids=[a[0] + " " + a[-1 if a[0] != "bench" else 3] for a in OUTPUTS])
def test_an_unwritable_output_is_the_users_path_in_one_line_before_any_work(capsys, model_file, argv, monkeypatch):
    import fxlint

    def never(*a, **k):  # the check comes first: nothing may run the model
        raise AssertionError("the model ran before the output path was checked")

    monkeypatch.setattr(fxlint, "lint", never)
    monkeypatch.setattr(fxlint, "audit", never)
    monkeypatch.setattr(fxlint, "rewrite", never)
    bad = "/nonexistent/dir"
    argv = [a.replace("{m}", f"{model_file}:Gather").replace("{bad}", bad) for a in argv]
    argv = [a for a in argv] + (["-i", "randn(3,8)"] if argv[0] != "schema" else [])
    code, out, err = run(capsys, *argv)
    path = next(a for a in argv if a.startswith(bad))
    assert code == 2 and err.strip().splitlines()[-1] == f"fxlint: error: cannot write {path}: no such directory"


def test_bench_plot_without_matplotlib_says_how_to_install_it_before_any_work(capsys, model_file, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    code, out, err = run(capsys, "bench", f"{model_file}:Gather", "-i", "randn(3,8)", "--plot", "x.png", *BENCH)
    assert code == 2 and "pip install 'fxlint[bench]'" in err and "[1/" not in err, err


def test_bench_lint_speed_with_plot_is_refused_before_any_work(capsys):
    code, out, err = run(capsys, "bench", "--lint-speed", "--plot", "x.png")
    assert code == 2 and "--lint-speed has no chart" in err and "[1/" not in err, err


def test_a_model_error_is_one_line_with_the_users_line_and_no_torch_logs(tmp_path):
    """A shape mismatch: one line naming the line and the eager error; torch's fake-tensor log and
    Dynamo's explanation only with --debug."""
    model = tmp_path / "mlp.py"
    model.write_text("import torch.nn as nn\n\n\nclass MLP(nn.Module):\n    def __init__(self):\n"
                     "        super().__init__()\n        self.fc = nn.Linear(16, 32)\n\n"
                     "    def forward(self, x):\n        return self.fc(x) * 2  # the user's line\n")
    r = run_cli("lint", f"{model}:MLP", "--input", "randn(4,7)")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert lines[0].startswith("fxlint: error: the model raised at ")
    assert "mlp.py:10 (`return self.fc(x) * 2  # the user's line`)" in lines[0]
    assert lines[0].endswith("RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x7 and 16x32)")
    d = run_cli("lint", f"{model}:MLP", "--input", "randn(4,7)", "--debug")
    assert d.returncode == 2 and "Traceback" in d.stderr and "Under Dynamo" in d.stderr


def test_audit_and_lint_confirm_print_no_native_profiler_warnings():
    """The profiler's own C++ warnings (CPUAllocator ... Memory block of unknown size) are not the
    user's output: a subprocess sees only fxlint's lines."""
    for argv in (["audit", "models/speech_separation.py:make"],
                 ["lint", "models/speech_separation.py:make", "--confirm", "--fail-on", "never"]):
        r = run_cli(*argv)
        assert r.returncode == 0, r.stderr
        assert not [ln for ln in r.stderr.splitlines() if ln.startswith(("[W", "USDT", "STAGE"))], r.stderr


def test_lint_train_confirms_against_a_training_step():
    """`fxlint lint --train` (as `audit --train` and `report --train`): the audit runs forward and backward,
    so the backward copy of the gather is measured too; it implies --confirm."""
    import json

    r = run_cli("lint", "models/speech_separation.py:make", "--train", "--format", "json", "--fail-on", "never")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    audit = data["runtime"]["audit"]
    assert audit["train"] is True and audit["backward_bytes"] > 0 and audit["forward_bytes"] > 0
    assert data["findings"] and all(f["status"] == "confirmed" for f in data["findings"])
    assert "--train" in run_cli("lint", "--help").stdout


def test_progress_bar_on_a_terminal_and_lines_elsewhere():
    import io

    from fxlint.util.progress import Progress

    t = [0.0]
    buf = io.StringIO()
    p = Progress(4, stream=buf, tty=False, clock=lambda: t[0])
    p.step("a")
    t[0] = 10.0
    p.step("b")
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("[1/4] a (0s elapsed") and "about 30s left" in lines[1], lines
    tty = io.StringIO()
    p = Progress(4, stream=tty, tty=True, clock=lambda: t[0])
    p.step("x")
    p.close("all")
    assert tty.getvalue().startswith("\r[") and "....] 0/4" in tty.getvalue() and "4/4  all in" in tty.getvalue()


@pytest.mark.parametrize("argv,needle", [
    (["lint", "models/speech_separation.py:make", "--fail-on", "warnings"], "did you mean 'warning'?"),
    (["lnt", "models/speech_separation.py:make"], "did you mean 'lint'?"),
    (["lint", "models/speech_separation.py:mak"], "did you mean models/speech_separation.py:make?"),
    (["lint", "models/speech_separation.py:make", "--select", "FXL4011"], "did you mean FXL401?"),
    (["lint", "models/speech_separation.py:make", "--ignore", "index-as-slic"], "did you mean FXL401?"),
])
def test_usage_errors_are_one_line_with_a_did_you_mean(capsys, argv, needle):
    with pytest.raises(SystemExit) as ex:
        code = main(argv)
        raise SystemExit(code)
    assert ex.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fxlint: error:") and needle in err[0], err
    assert "usage:" not in err[0]


def test_an_unrelated_typo_gets_no_guess(capsys):
    assert main(["lint", "models/speech_separation.py:zzzzzz"]) == 2
    err = capsys.readouterr().err
    assert "has no attribute 'zzzzzz'" in err and "did you mean" not in err


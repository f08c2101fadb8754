"""Project configuration: [tool.fxlint] found by walking up, validated, and honoured
identically by fxlint.lint, the CLI and the compile backend."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import fxlint
from fxlint.cli.app import main
from fxlint.registry import all_rules
from fxlint.project.config import Settings, find_config_file, load_file, resolve, source_file_of
from fxlint.errors import ConfigError
from fxlint.findings import Severity
from tests.conftest import line_of, load_model


def codes(report) -> dict[str, str]:
    return {f.code: str(f.severity) for f in report.findings}


# --------------------------------------------------------------------------- finding the file


def test_found_by_walking_up_from_the_model_file(make_project):
    model = make_project('ignore = ["FXL401"]\n')
    assert find_config_file(model) == model.parents[2] / "pyproject.toml"
    assert find_config_file(model.parent) == model.parents[2] / "pyproject.toml"


def test_pyproject_without_fxlint_table_is_skipped(make_project, tmp_path):
    model = make_project('ignore = ["FXL401"]\n', root=tmp_path / "outer" / "inner")
    (tmp_path / "outer" / "inner" / "pyproject.toml").write_text('[project]\nname = "x"\n')
    (tmp_path / "outer" / "pyproject.toml").write_text('[tool.fxlint]\nfail-on = "error"\n')
    assert find_config_file(model) == tmp_path / "outer" / "pyproject.toml"


def test_no_config_anywhere_gives_defaults(make_project):
    model = make_project(None)
    assert find_config_file(model) is None
    s = resolve(model)
    assert s.config_file is None and s.fail_on == "warning" and s.inner is None and s.rewrite is False
    assert "FXL401" in s.codes


def test_source_file_of_targets(make_project):
    model = make_project(None)
    m, _ = load_model(model)
    assert Path(source_file_of(m)) == model
    assert Path(source_file_of(m.forward)) == model
    assert Path(source_file_of(torch.compile(m, backend="eager"))) == model
    assert source_file_of(torch.nn.Linear(2, 2)) is None  # defined inside torch: search from the cwd
    assert source_file_of(torch.fx.symbolic_trace(torch.nn.ReLU())) is None


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "body,needles",
    [
        ('selct = ["FXL4"]\n', ["unknown key 'selct'", "did you mean 'select'"]),
        ('extend_select = ["FXL4"]\n', ["unknown key 'extend_select'", "'extend-select'"]),
        ('ignore = ["FXL999"]\n', ["'ignore'", "'FXL999' matches no rule"]),
        ('select = "FXL4"\nignore = [4]\n', ["'ignore'", "must be a list of rule codes"]),
        ('severity = { FXL401 = "fatal" }\n', ["'severity.FXL401'", "unknown severity 'fatal'"]),
        ('severity = { FXL777 = "error" }\n', ["severity.FXL777", "'FXL777' matches no rule"]),
        ('per-file-ignores = { "x/*.py" = ["FXL888"] }\n', ["per-file-ignores", "'FXL888' matches no rule"]),
        ('fail-on = "sometimes"\n', ["'fail-on'", "must be one of error, warning, info, never"]),
        ('rewrite = "yes"\n', ["'rewrite'", "must be true or false"]),
        ('inner = "fxlint"\n', ["'inner'", "cannot be 'fxlint' itself"]),
        ("select = [\n", ["is not valid TOML"]),
    ],
)
def test_bad_config_names_key_and_file(make_project, body, needles):
    model = make_project(body)
    with pytest.raises(ConfigError) as exc:
        resolve(model)
    msg = str(exc.value)
    assert str(model.parents[2] / "pyproject.toml") in msg, msg
    for needle in needles:
        assert needle in msg, msg


def test_bad_config_fails_lint_before_the_model_runs(make_project):
    model = make_project('unknown = 1\n')
    m, x = load_model(model)
    with pytest.raises(ConfigError, match="unknown key 'unknown'"):
        fxlint.lint(m, x)


def test_config_file_path_must_exist():
    with pytest.raises(ConfigError, match="no such config file"):
        resolve(config="/no/such/fxlint.toml")


# --------------------------------------------------------------------------- semantics


def test_select_ignore_extend_select_and_explicit_override(make_project, mul_rule):
    model = make_project('select = ["FXL4", "FXL990"]\nignore = ["FXL990"]\n')
    fxl4 = [r.code for r in all_rules() if r.code.startswith("FXL4")]
    assert "FXL401" in fxl4 and resolve(model).codes == fxl4
    # an explicit ignore replaces the file's ignore (not added to it)
    assert resolve(model, ignore=["FXL4"]).codes == ["FXL990"]
    # extend-select adds, and beats a less specific ignore
    model = make_project('ignore = ["FXL9"]\nextend-select = ["FXL990"]\n')
    assert set(resolve(model).codes) >= {"FXL401", "FXL990"}
    assert "FXL990" not in resolve(model, extend_select=[]).codes
    assert resolve(model, select=["FXL401"], extend_select=[]).codes == ["FXL401"]


def test_severity_most_specific_wins(make_project, mul_rule):
    model = make_project('severity = { FXL = "error", FXL990 = "warning", ALL = "info" }\n')
    s = resolve(model)
    assert s.severity_for("FXL401", Severity.WARNING) is Severity.ERROR
    assert s.severity_for("FXL990", Severity.INFO) is Severity.WARNING
    # an explicit severity replaces the file's for that code only
    s = resolve(model, severity={"FXL401": "info"})
    assert s.severity_for("FXL401", Severity.WARNING) is Severity.INFO
    assert s.severity_for("FXL990", Severity.INFO) is Severity.WARNING


def test_lint_honours_ignore_and_severity(make_project, mul_rule):
    model = make_project('ignore = ["FXL990"]\nseverity = { FXL401 = "error" }\n')
    m, x = load_model(model)
    report = fxlint.lint(m, x)
    assert codes(report) == {"FXL401": "error"}
    assert report.extras["config_file"] == model.parents[2] / "pyproject.toml"
    # without the file both rules report at their defaults
    assert codes(fxlint.lint(m, x, config=False)) == {"FXL401": "warning", "FXL990": "info"}
    # explicit arguments replace the file's keys
    assert codes(fxlint.lint(m, x, ignore=[], severity={"FXL990": "error"})) == {"FXL401": "error",
                                                                                 "FXL990": "error"}


def test_per_file_ignores_are_counted_as_suppressed(make_project, mul_rule):
    model = make_project('per-file-ignores = { "src/pkg/*.py" = ["FXL4"], "other.py" = ["ALL"] }\n')
    m, x = load_model(model)
    report = fxlint.lint(m, x)
    assert codes(report) == {"FXL990": "info"}
    assert [f.code for f in report.suppressed] == ["FXL401"]
    # a pattern without a slash matches the file name anywhere
    model = make_project('per-file-ignores = { "model.py" = ["FXL990"] }\n')
    m, x = load_model(model)
    assert codes(fxlint.lint(m, x)) == {"FXL401": "warning"}


def test_explicit_config_file_and_dedicated_toml(make_project, tmp_path, mul_rule):
    model = make_project('ignore = ["FXL401"]\n')
    other = tmp_path / "ci-fxlint.toml"
    other.write_text('ignore = ["FXL990"]\n')  # a dedicated file: the keys at top level
    m, x = load_model(model)
    assert codes(fxlint.lint(m, x, config=other)) == {"FXL401": "warning"}
    assert load_file(other).ignore == ("FXL990",)


def test_resolve_returns_settings_unchanged():
    s = resolve(config=False, select=["FXL401"])
    assert isinstance(s, Settings) and resolve(config=s) is s and s.config_file is None


# --------------------------------------------------------------------------- the CLI


def test_cli_honours_config_and_flags(capsys, make_project, mul_rule):
    model = make_project('ignore = ["FXL990"]\nseverity = { FXL401 = "error" }\nfail-on = "error"\n')
    assert main(["lint", f"{model}:make"]) == 1
    out = capsys.readouterr().out
    assert "FXL401" in out and "error" in out and "FXL990" not in out
    # --fail-on replaces fail-on; --no-config drops the file (FXL401 back to warning)
    assert main(["lint", f"{model}:make", "--fail-on", "never"]) == 0
    assert main(["lint", f"{model}:make", "--no-config", "--fail-on", "error"]) == 0
    out = capsys.readouterr().out
    assert "FXL990" in out
    # --select replaces select; --extend-select adds
    assert main(["lint", f"{model}:make", "--select", "FXL990", "--ignore", "", "--fail-on", "info"]) == 1
    assert "FXL401" not in capsys.readouterr().out


def test_cli_bad_config_is_one_line_exit_2(capsys, make_project):
    model = make_project('fail_on = "error"\n')
    assert main(["lint", f"{model}:make"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown key 'fail_on'" in err[0] and "pyproject.toml" in err[0]
    assert main(["lint", f"{model}:make", "--config", "/no/such.toml"]) == 2
    assert "no such config file" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["lint", f"{model}:make", "--config", "x.toml", "--no-config"])


def test_cli_config_command_shows_the_effective_settings(capsys, make_project):
    model = make_project('severity = { FXL401 = "error" }\ninner = "eager"\n')
    assert main(["config", str(model)]) == 0
    out = capsys.readouterr().out
    assert str(model.parents[2] / "pyproject.toml") in out and '"FXL401": "error"' in out and '"eager"' in out


# --------------------------------------------------------------------------- the compile backend


def test_backend_honours_config(make_project, mul_rule):
    from torch._dynamo.backends.registry import register_backend

    seen = []

    def recording_inner(gm, example_inputs, **kwargs):
        seen.append(gm)
        return gm.forward

    register_backend(recording_inner, name="fxlint_test_recording_inner")
    model = make_project('ignore = ["FXL990"]\nseverity = { FXL401 = "error" }\n'
                         'inner = "fxlint_test_recording_inner"\n')
    m, x = load_model(model)
    torch._dynamo.reset()
    with fxlint.collect() as session:
        out = torch.compile(m, backend="fxlint")(*x)
    assert torch.equal(out, m(*x))
    assert seen, "the inner backend from [tool.fxlint] compiled the graph"
    assert {f.code: str(f.severity) for f in session.findings} == {"FXL401": "error"}
    assert session.findings[0].line == line_of(model, "# the gather")
    # explicit options replace the file's keys
    torch._dynamo.reset()
    with fxlint.collect() as session:
        torch.compile(m, backend="fxlint", options={"inner": "eager", "ignore": []})(*x)
    assert {f.code for f in session.findings} == {"FXL401", "FXL990"}
    torch._dynamo.reset()
    with fxlint.collect() as session:
        torch.compile(m, backend="fxlint", options={"inner": "eager", "config": False})(*x)
    assert {f.code: str(f.severity) for f in session.findings} == {"FXL401": "warning", "FXL990": "info"}


def test_backend_bad_config_raises(make_project):
    model = make_project('severity = { FXL401 = "loud" }\n')
    m, x = load_model(model)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown severity 'loud'"):
        torch.compile(m, backend="fxlint", options={"inner": "eager"})(*x)

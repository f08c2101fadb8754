"""Adoption workflow, end to end, as the issue checks it: a throwaway project whose
pyproject.toml ignores one code and raises another's severity; a baseline written, the code
changed, only the new finding reported; the pytest helper failing with a readable table;
the SARIF file validated; every code listed by `fxlint rules` has a doc page. Plus the
pre-commit manifest and the CI snippets of docs/configuration.md."""

from __future__ import annotations

import json
import shlex
import textwrap

import pytest
import yaml
from jsonschema import Draft7Validator

from fxlint.cli.app import build_parser, main
from fxlint.testing import assert_no_findings
from tests.conftest import ROOT, line_of, load_model, run_cli

pytest_plugins = ["pytester"]

PROJECT_TOML = """\
ignore = ["FXL990"]                 # the team does not care about this one
severity = { FXL401 = "error" }     # and cares a lot about this one
"""

MODEL = """\
import torch
import torch.nn as nn


class Separator(nn.Module):
    def forward(self, x):
        y = x[:, [0, 2, 4, 6]]  # known gather
        return y * 2  # an FXL990 site (ignored by the project)


def make():
    return Separator(), (torch.randn(3, 8),)
"""

CHANGED = """\
import torch
import torch.nn as nn

SCALE = 2  # lines added above the known finding shift it down


class Separator(nn.Module):
    def forward(self, x):
        y = x[:, [0, 2, 4, 6]]  # known gather
        z = x[:, [1, 3, 5, 7]]  # new gather
        return y * SCALE + z


def make():
    return Separator(), (torch.randn(3, 8),)
"""


def _json(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert out, err
    return code, json.loads(out)


def test_throwaway_project(capsys, make_project, mul_rule, monkeypatch, lint_pytester):
    pytester = lint_pytester
    model = make_project(PROJECT_TOML, MODEL)
    project = model.parents[2]
    monkeypatch.chdir(project)
    target = "src/pkg/model.py:make"

    # 1. the configuration: FXL990 ignored, FXL401 raised to error
    code, data = _json(capsys, "lint", target, "--format", "json")
    assert code == 1
    assert [(f["code"], f["severity"]) for f in data["findings"]] == [("FXL401", "error")]
    assert main(["lint", target, "--no-config", "--fail-on", "never"]) == 0  # both rules, at their defaults
    assert {"FXL401", "FXL990"} <= set(capsys.readouterr().out.split())

    # 2. a baseline written
    assert main(["lint", target, "--baseline", "fxlint-baseline.json", "--write-baseline"]) == 0
    assert "recorded 1 finding" in capsys.readouterr().err
    assert main(["lint", target, "--baseline", "fxlint-baseline.json"]) == 0
    assert "No findings, 1 in the baseline" in capsys.readouterr().out

    # 3. the code changed (lines shifted, one new gather): only the new finding is reported
    model.write_text(CHANGED)
    code, data = _json(capsys, "lint", target, "--baseline", "fxlint-baseline.json", "--format", "json")
    assert code == 1
    assert [(f["code"], f["severity"], f["line"]) for f in data["findings"]] == [
        ("FXL401", "error", line_of(model, "# new gather"))]
    assert data["summary"]["baselined"] == 1
    assert data["baselined"][0]["line"] == line_of(model, "# known gather")

    # 4. the pytest helper fails with a readable table (directly, and through the plugin)
    m, x = load_model(model)
    with pytest.raises(AssertionError) as exc:
        assert_no_findings(m, x)
    msg = str(exc.value)
    assert msg.startswith("fxlint: 2 findings at or above warning in Separator:")
    rows = [line.split()[:2] for line in msg.splitlines() if line.startswith("FXL")]
    assert rows == [["FXL401", "error"], ["FXL401", "error"]]
    pytester.makepyfile(test_separator=textwrap.dedent(f"""
        from fxlint.capture.target import load_target

        def test_separator(fxlint_check):
            loaded = load_target({str(model) + ':make'!r})
            fxlint_check(loaded.obj, loaded.inputs)
    """))
    monkeypatch.chdir(pytester.path)
    result = pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore", "test_separator.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*fxlint: 2 findings at or above warning in Separator:*",
                                 "*2 findings (2 errors)*",
                                 "*FXL401*error*"])

    # 5. the SARIF file, from the real command line in a fresh interpreter, validates
    #    (FXL990 exists only in this process: the fresh one gets the file without that line)
    monkeypatch.chdir(project)
    toml = project / "pyproject.toml"
    toml.write_text(toml.read_text().replace('ignore = ["FXL990"]', ""))
    proc = run_cli("lint", target, "--extend-select", "FXL4", "--format", "sarif", "-o", "fxlint.sarif",
                   cwd=project)
    assert proc.returncode == 1, proc.stderr
    log = json.loads((project / "fxlint.sarif").read_text())
    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    assert list(Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER).iter_errors(log)) == []
    results = log["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("FXL401", "error")] * 2
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/pkg/model.py"


def test_every_code_listed_by_rules_has_a_doc_page(capsys):
    assert main(["rules", "--format", "json"]) == 0
    codes = [r["code"] for r in json.loads(capsys.readouterr().out)]
    missing = [c for c in codes if not (ROOT / "docs" / "rules" / f"{c}.md").is_file()]
    assert codes and not missing, f"no docs/rules page for {missing}; run `fxlint docs`"


# --------------------------------------------------------------------------- pre-commit and CI


def test_pre_commit_manifest_is_valid():
    from pre_commit.clientlib import load_manifest

    [hook] = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    assert hook["id"] == "fxlint" and hook["pass_filenames"] is False and hook["language"] == "python"
    argv = shlex.split(hook["entry"])
    assert argv[0] == "fxlint"
    args = build_parser().parse_args([*argv[1:], "mypkg.nets:make"])  # the user's args follow the entry
    assert args.command == "lint" and args.target == "mypkg.nets:make"


def _docs_yaml_blocks() -> list[dict]:
    text = (ROOT / "docs" / "configuration.md").read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    return [yaml.safe_load(b) for b in blocks]


def test_docs_github_actions_snippet_uploads_the_sarif_fxlint_writes():
    [workflow] = [b for b in _docs_yaml_blocks() if "jobs" in b]
    assert workflow["permissions"]["security-events"] == "write"
    steps = workflow["jobs"]["fxlint"]["steps"]
    [lint] = [s for s in steps if "fxlint lint" in s.get("run", "")]
    [upload] = [s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    argv = shlex.split(lint["run"])
    args = build_parser().parse_args(argv[1:])
    assert args.format == "sarif" and args.output == upload["with"]["sarif_file"]
    assert upload.get("if") == "always()"


def test_docs_pre_commit_snippet_parses():
    [config] = [b for b in _docs_yaml_blocks() if "repos" in b]
    [hook] = config["repos"][0]["hooks"]
    assert hook["id"] == "fxlint" and hook["pass_filenames"] is False
    args = build_parser().parse_args(shlex.split(hook["entry"])[1:])
    assert args.command == "lint" and args.baseline == "fxlint-baseline.json"

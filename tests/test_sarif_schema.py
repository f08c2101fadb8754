"""fxlint's SARIF validates against the official SARIF 2.1.0 JSON schema (tests/data), formats included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from jsonschema import Draft7Validator

import fxlint
from fxlint.cli.app import main
from fxlint.findings import Finding, Report, Severity
from fxlint.renderers.sarif import sarif_dict
from tests.conftest import ROOT

SCHEMA_FILE = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


@pytest.fixture(scope="module")
def validator() -> Draft7Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    Draft7Validator.check_schema(schema)
    # FORMAT_CHECKER checks "uri"/"uri-reference" only when rfc3986-validator is installed (requirements-dev)
    pytest.importorskip("rfc3986_validator")
    return Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)


def errors(validator: Draft7Validator, log: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(log)]


def test_the_validator_rejects_broken_logs(validator):
    """The check can fail: wrong levels, missing messages and unencoded URIs are caught."""
    f = Finding("FXL401", "index-as-slice", Severity.WARNING, "m", file="model.py", line=3)
    good = sarif_dict(Report(findings=[f]))
    assert errors(validator, good) == []
    bad = json.loads(json.dumps(good))
    res = bad["runs"][0]["results"][0]
    res["level"] = "warn"
    del res["message"]
    res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] = "my models/a b.py"
    res["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    found = "\n".join(errors(validator, bad))
    assert "'warn' is not one of" in found and "'message' is a required property" in found
    assert "is not a 'uri-reference'" in found and "less than the minimum of 1" in found


def test_real_lint_output_validates(validator, monkeypatch):
    from models.speech_separation import make

    monkeypatch.chdir(ROOT)
    m, x = make()
    log = sarif_dict(fxlint.lint(m, x))
    assert log["runs"][0]["results"], "the scenario has a finding"
    assert errors(validator, log) == []


def test_edge_cases_validate(validator, tmp_path, monkeypatch):
    """Paths with spaces and non-ASCII (inside and outside the working directory), graph nodes
    without a file, dynamic sizes, no line, internal rule errors, an empty report."""
    inside = tmp_path / "my repo ü"
    (inside / "sub dir").mkdir(parents=True)
    monkeypatch.chdir(inside)
    findings = [
        Finding("FXL401", "index-as-slice", Severity.ERROR, "a", file=str(inside / "sub dir" / "m ü.py"), line=7,
                fix="use a slice", bytes=128, module_path="enc.0"),
        Finding("FXL401", "index-as-slice", Severity.INFO, "b", file=str(tmp_path / "else where.py"), line=None,
                bytes_expr="4*s0"),
        Finding("FXL401", "index-as-slice", Severity.WARNING, "c", node="getitem_3", status="confirmed"),
    ]
    log = sarif_dict(Report(findings=findings, errors=["FXL999 x failed on graph 0: KeyError: 'a'"]))
    assert errors(validator, log) == []
    results = log["runs"][0]["results"]
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "sub%20dir/m%20%C3%BC.py", "uriBaseId": "%SRCROOT%"}
    assert results[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].startswith("file:///")
    assert results[0]["message"]["text"] == "a. Fix: use a slice"
    assert log["runs"][0]["invocations"][0]["toolExecutionNotifications"][0]["level"] == "error"
    assert errors(validator, sarif_dict(Report())) == []


def test_fingerprints_do_not_depend_on_the_checkout(tmp_path, monkeypatch):
    """partialFingerprints use paths relative to %SRCROOT%: two clones give the same fingerprint."""
    prints = []
    for clone in ("a", "b"):
        root = tmp_path / clone
        root.mkdir()
        monkeypatch.chdir(root)
        f = Finding("FXL401", "index-as-slice", Severity.WARNING, "m", file=str(root / "net.py"), line=3,
                    source="y = x[[1]]")
        prints.append(sarif_dict(Report(findings=[f]))["runs"][0]["results"][0]["partialFingerprints"])
    assert prints[0] == prints[1]


def test_cli_sarif_single_and_zoo_validate(validator, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "fxlint.sarif"
    assert main(["lint", "models/speech_separation.py:make", "--format", "sarif", "-o", str(out)]) == 1
    assert errors(validator, json.loads(out.read_text())) == []
    # the zoo writes one SARIF log (one run, every model's results), not a dict of logs
    assert main(["lint", "--zoo", "models", "--format", "sarif", "-o", str(out), "--fail-on", "never"]) == 0
    log = json.loads(out.read_text())
    assert errors(validator, log) == []
    assert len(log["runs"]) == 1 and log["runs"][0]["results"]


def test_graph_module_findings_validate(validator):
    class Net(torch.nn.Module):
        def forward(self, x):
            return x[:, [0, 2, 4]]

    gm = torch.fx.symbolic_trace(Net())
    log = sarif_dict(fxlint.lint(gm, (torch.randn(2, 6),), config=False))
    assert log["runs"][0]["results"][0]["locations"][0]["logicalLocations"]
    assert errors(validator, log) == []


def test_source_fixes_columns_and_help_uris_validate(validator, write_module, monkeypatch):
    """A finding whose rule's source fix locates it gets its columns and a `fixes` entry (the edit of
    `fxlint fix --diff`); every rule descriptor links its page."""
    path = write_module("""
        import torch


        def f(x):
            y = x * 2
            return y.float() + 1  # a no-op conversion
    """)
    monkeypatch.chdir(path.parent)
    from fxlint.capture.target import load_target

    log = sarif_dict(fxlint.lint(load_target(f"{path}:f").obj, (torch.randn(3),), select="FXL108"))
    assert errors(validator, log) == []
    [res] = log["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 7, "startColumn": 12, "endLine": 7, "endColumn": 21}
    [fix] = res["fixes"]
    [change] = fix["artifactChanges"]
    assert change["artifactLocation"] == {"uri": "user_model.py", "uriBaseId": "%SRCROOT%"}
    assert change["replacements"] == [{"deletedRegion": {"startLine": 7, "startColumn": 12, "endLine": 7,
                                                         "endColumn": 21}, "insertedContent": {"text": "y"}}]
    assert fix["description"]["text"].startswith("y.float() -> y: safe;")
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert all(r["helpUri"].endswith(f"/docs/rules/{r['id']}.md") for r in rules)
    assert all((ROOT / "docs" / "rules" / f"{r['id']}.md").exists() for r in rules)

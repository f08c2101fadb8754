"""The JSON report validates against the schema generated from the findings model and the rules'
violation types; the checked-in copy (docs/report.schema.json) is current."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import torch

import fxlint
from fxlint.cli.app import main
from fxlint.renderers.json import report_dict
from fxlint.reporting.schema import report_schema, zoo_schema

ROOT = Path(__file__).resolve().parent.parent
CHECKED_IN = ROOT / "docs" / "report.schema.json"


def _validate(data, schema) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(json.loads(json.dumps(data, default=str)))


def test_the_scenario_models_validate_with_the_audit(capsys):
    assert main(["lint", "--zoo", str(ROOT / "models"), "--format", "json", "--fail-on", "never"]) == 0
    data = json.loads(capsys.readouterr().out)
    _validate(data, zoo_schema())
    codes = {f["code"] for r in data["models"].values() for f in r["findings"]}
    assert len(codes) >= 15, codes  # most rules' details were checked
    from fxlint.capture.target import load_target

    loaded = load_target(f"{ROOT / 'models' / 'video_classification.py'}:make")
    report = fxlint.lint(loaded.obj, loaded.inputs, confirm=True)
    _validate(report_dict(report), report_schema())


def test_a_wrong_type_is_caught():
    class M(torch.nn.Module):
        def forward(self, x):
            return x[:, [0, 2, 4]] * 2

    d = json.loads(json.dumps(report_dict(fxlint.lint(M(), torch.randn(3, 8), config=False)), default=str))
    d["findings"][0]["bytes"] = "a lot"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(report_schema()).validate(d)
    d["findings"][0]["bytes"] = 12
    d["findings"][0]["unexpected"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(report_schema()).validate(d)


def test_checked_in_schema_is_current(capsys):
    assert main(["schema"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == report_schema()
    assert json.loads(CHECKED_IN.read_text()) == printed, "run `fxlint docs` (or `fxlint schema -o docs/report.schema.json`)"

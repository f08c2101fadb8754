"""Baselines: record today's findings, report only new ones later; known ones counted, not lost."""

from __future__ import annotations

import json

import pytest

import fxlint
from fxlint.project.baseline import Baseline, entries, normalise_source, write
from fxlint.cli.app import main
from fxlint.errors import ConfigError
from tests.conftest import MODEL_SOURCE, line_of, load_model

TWO_GATHERS = """
import torch
import torch.nn as nn


class Twice(nn.Module):
    def forward(self, x):
        a = x[:, [0, 2, 4, 6]]  # first
        b = x[:, [0, 2, 4, 6]]  # second, the same text
        return a + b


def make():
    return Twice(), (torch.randn(3, 8),)
"""


@pytest.mark.parametrize(
    "text,expected",
    [
        ("y = x[:, [0, 2]]", "y = x[:, [0, 2]]"),
        ("y  =   x[:,  [0, 2]]   # why not", "y = x[:, [0, 2]]"),
        ("s = '# not a comment'  # a comment", "s = '# not a comment'"),
        ("foo(a,   # an open call", "foo(a,"),
        ("", ""),
        (None, ""),
    ],
)
def test_normalise_source(text, expected):
    assert normalise_source(text) == expected


def _lint(path):
    m, x = load_model(path)
    return fxlint.lint(m, x, config=False)


def test_line_shift_keeps_identity_new_finding_is_new(make_project, tmp_path):
    model = make_project(None)
    base = tmp_path / "proj" / "fxlint-baseline.json"
    assert write(base, [_lint(model)]) == 1

    # lines added above the finding and a comment changed on it: still known
    src = MODEL_SOURCE.replace("import torch\n", "import torch\nimport math\n\n\n# a note\n", 1)
    src = src.replace("# the gather", "# the gather, known")
    model.write_text(src)
    report = _lint(model)
    stale = Baseline.load(base).apply([report])
    assert report.findings == [] and len(report.baselined) == 1 and stale == []
    assert report.summary()["baselined"] == 1

    # a new gather elsewhere is new; the old one stays known
    src = src.replace("return y * 2  # the mul", "z = x[[1]]  # new\n        return y * 2 + z.sum()")
    model.write_text(src)
    report = _lint(model)
    Baseline.load(base).apply([report])
    assert [f.line for f in report.findings] == [line_of(model, "# new")]
    assert len(report.baselined) == 1

    # changing the offending line itself makes it new, and the old entry is reported stale
    model.write_text(MODEL_SOURCE.replace("x[:, [0, 2, 4, 6]]", "x[:, [1, 3, 5, 7]]"))
    report = _lint(model)
    stale = Baseline.load(base).apply([report])
    assert len(report.findings) == 1 and report.baselined == [] and len(stale) == 1


def test_identical_lines_are_told_apart_by_occurrence(make_project, tmp_path):
    model = make_project(None, TWO_GATHERS)
    report = _lint(model)
    assert len(report.findings) == 2
    prints = entries(report.findings, tmp_path)
    assert len({e.fingerprint for e in prints}) == 2
    # a baseline holding only one of the two reports exactly one as new
    base = tmp_path / "b.json"
    write(base, [_lint(make_project(None))])  # the one-gather version of the same file
    model.write_text(TWO_GATHERS)
    report = _lint(model)
    Baseline.load(base).apply([report])
    assert len(report.findings) + len(report.baselined) == 2


def test_baseline_file_is_versioned_sorted_and_relative(make_project, tmp_path):
    model = make_project(None, TWO_GATHERS)
    base = tmp_path / "proj" / "fxlint-baseline.json"
    write(base, [_lint(model)])
    data = json.loads(base.read_text())
    assert data["fxlint-baseline"] == 1 and data["generated-by"].startswith("fxlint ")
    assert [r["file"] for r in data["findings"]] == ["src/pkg/model.py"] * 2
    assert [r["line"] for r in data["findings"]] == sorted(r["line"] for r in data["findings"])
    assert {"code", "fingerprint", "line", "source", "message"} <= set(data["findings"][0])


@pytest.mark.parametrize(
    "content,needle",
    [
        (None, "no baseline file"),
        ("not json", "cannot read baseline"),
        ('{"findings": []}', "is not an fxlint baseline"),
        ('{"fxlint-baseline": 99, "findings": []}', "baseline format 99"),
        ('{"fxlint-baseline": 1, "findings": {}}', "'findings' must be a list"),
        ('{"fxlint-baseline": 1, "findings": [{"code": "FXL401"}]}', "needs 'code' and 'fingerprint'"),
    ],
)
def test_bad_baseline_files(tmp_path, content, needle):
    path = tmp_path / "b.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError, match=needle):
        Baseline.load(path)


def test_cli_write_then_only_new(capsys, make_project, tmp_path, monkeypatch):
    model = make_project(None)
    monkeypatch.chdir(tmp_path / "proj")
    assert main(["lint", f"{model}:make", "--write-baseline"]) == 0
    err = capsys.readouterr().err
    assert "recorded 1 finding in fxlint-baseline.json" in err
    assert (tmp_path / "proj" / "fxlint-baseline.json").is_file()

    code = main(["lint", f"{model}:make", "--baseline", "fxlint-baseline.json"])
    out = capsys.readouterr().out
    assert code == 0 and "No findings, 1 in the baseline" in out

    model.write_text(MODEL_SOURCE.replace("return y * 2  # the mul", "return y * 2 + x[[0]].sum()  # new"))
    code = main(["lint", f"{model}:make", "--baseline", "fxlint-baseline.json", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [f["line"] for f in data["findings"]] == [line_of(model, "# new")]
    assert data["summary"]["baselined"] == 1 and len(data["baselined"]) == 1

    # SARIF marks what it reports as new
    main(["lint", f"{model}:make", "--baseline", "fxlint-baseline.json", "--format", "sarif"])
    [res] = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert res["baselineState"] == "new"

    # a fixed finding leaves a stale entry: said on stderr, exit 0
    model.write_text(MODEL_SOURCE.replace("x[:, [0, 2, 4, 6]]", "x[:, ::2]"))
    assert main(["lint", f"{model}:make", "--baseline", "fxlint-baseline.json"]) == 0
    assert "1 baseline entry in fxlint-baseline.json no longer match" in capsys.readouterr().err


def test_cli_missing_baseline_is_exit_2_before_linting(capsys, make_project, tmp_path):
    model = make_project(None)
    assert main(["lint", f"{model}:Gather", "--baseline", str(tmp_path / "nope.json")]) == 2
    err = capsys.readouterr().err
    assert "no baseline file" in err and "--write-baseline" in err and "needs example inputs" not in err


def test_cli_zoo_baseline_round_trip(capsys, tmp_path):
    from tests.conftest import ROOT

    base = tmp_path / "zoo-baseline.json"
    assert main(["lint", "--zoo", str(ROOT / "models"), "--baseline", str(base), "--write-baseline"]) == 0
    capsys.readouterr()
    assert main(["lint", "--zoo", str(ROOT / "models"), "--baseline", str(base)]) == 0
    out = capsys.readouterr().out
    assert "0 findings" in out.splitlines()[-1]

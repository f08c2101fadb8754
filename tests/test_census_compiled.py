"""The compiled-program census (bench/census_compiled.py): the aggregation and the tables on hand-made
records, the command line's refusals, and one real model of the fast subset through the command-line path
(two Inductor compiles: marked ``inductor``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import census_compiled  # noqa: E402
import census_models  # noqa: E402


def _rec(name, library, *, status="ok", nbytes=0, covered=0, confirmed=0, refuted=0, mode="infer"):
    arch = census_models.Arch(name, library, lambda: (None, None))
    rec = census_compiled._empty(arch, mode)
    rec.update(status=status, bytes=nbytes, covered_bytes=covered)
    rec["survives"].update(confirmed=confirmed, refuted=refuted)
    rec["times"].update(lint_s=1.0, audit_s=2.0)
    if status != "ok":
        rec["reason"] = "boom"
    return rec


def test_summary_counts_bytes_coverage_and_precision_of_ok_models_only():
    models = [_rec("timm/a", "timm", nbytes=1000, covered=900, confirmed=9, refuted=1),
              _rec("timm/b", "timm", nbytes=1000, covered=1000, confirmed=10),
              _rec("timm/c", "timm", status="crash", nbytes=99999)]
    s = census_compiled.summarise(models)
    assert (s["models"], s["ok"], s["crash"]) == (3, 2, 1)
    assert s["bytes"] == 2000 and s["coverage"] == 0.95
    assert s["precision"] == 19 / 20
    assert census_compiled.summarise([_rec("x/y", "timm")])["precision"] is None  # nothing judged: no figure


def test_markdown_has_the_section_a_row_per_library_and_the_failures():
    models = [_rec("timm/a", "timm", nbytes=2048, covered=1024, confirmed=1),
              _rec("torchvision/b", "torchvision", status="not-known")]
    data = {"command": "python bench/census_compiled.py --quick", "started": "2026-12-02 16:00", "duration_s": 60.0,
            "machine": {"cpu": "cpu", "threads": 2, "python": "3.11", "torch": "2.13.0"}, "models": models}
    md = census_compiled.render_markdown(data)
    assert md.startswith("## The compiled program")
    assert "| infer | timm | 1 (1 / 0 / 0 / 0) | 2.0 KiB | 1.0 KiB = 50.0% |" in md
    assert "| infer | torchvision | 1 (0 / 0 / 0 / 1) |" in md
    assert "| torchvision/b | infer | not-known: boom |" in md


def test_a_bad_selection_fails_with_one_error_and_exit_2(capsys):
    assert census_compiled.main(["--models", "no/such_model"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("census_compiled: error: no census model matches")


@pytest.mark.inductor
def test_one_model_of_the_fast_subset_through_the_command_line(tmp_path):
    pytest.importorskip("torchvision")
    name = "torchvision/shufflenet_v2_x0_5"
    assert name in census_models.QUICK
    assert census_compiled.main(["--models", name, "--in-process", "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "census_compiled.json").read_text())
    (m,) = data["models"]
    assert m["status"] == "ok", (m["status"], m["reason"], m.get("traceback"))
    assert m["bytes"] > 0 and m["survives"]["confirmed"] > 0  # it copies and fxlint says so: the bar can fail
    assert m["survives"]["refuted"] == 0, m["refuted"]
    assert 0 < m["covered_bytes"] <= m["bytes"]
    assert (tmp_path / "census_compiled.md").read_text() == census_compiled.render_markdown(data)
    assert [json.loads(line)["name"] for line in (tmp_path / "census_compiled.jsonl").read_text().splitlines()] == [name]

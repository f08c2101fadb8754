"""One row per rule and source line: a 24-block model reads as a handful of rows, library lines
after the user's, with the instances counted and the module paths compressed."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import fxlint
from fxlint.findings import Finding, Report, Severity
from fxlint.reporting.grouping import compress_paths, group_findings, library_of, short_path
from fxlint.renderers import render
from fxlint.renderers.sarif import sarif_dict


def test_compress_paths():
    assert compress_paths([f"blocks.{i}.attn.proj_l" for i in range(24)]) == "blocks.{0..23}.attn.proj_l"
    assert compress_paths(["blocks.0.q", "blocks.1.q", "blocks.3.q"]) == "blocks.{0..1,3}.q"
    assert compress_paths(["enc.q", "enc.k"]) == "enc.{q,k}"
    assert compress_paths(["a"]) == "a"
    assert compress_paths(["a.b", "c", "d.e.f", "g", "h", "i"]) == "a.b, c, d.e.f, g and 2 more"
    # two varying positions collapse; more than two would be unreadable: listed instead
    assert compress_paths(["s.0.b.1.x", "s.1.b.0.x"]) == "s.{0..1}.b.{0..1}.x"


def test_library_of_and_short_path(tmp_path):
    site = tmp_path / "lib" / "python3.11" / "site-packages" / "timm" / "models" / "cait.py"
    assert library_of(str(site)) == "timm" and short_path(str(site)) == "timm/models/cait.py"
    assert library_of(str(tmp_path / "mine.py")) is None
    assert library_of("<graph>") is None and library_of(None) is None
    import json as stdlib_json

    assert library_of(stdlib_json.__file__) == "python"


def _finding(line: int, module: str, nbytes: int, message: str = "copies x (2, 3)", file: str = "/u/m.py",
             code: str = "FXL201") -> Finding:
    return Finding(code, "noncontiguous-matmul", Severity.WARNING, message, file=file, line=line,
                   module_path=module, bytes=nbytes, fix="do not")


def test_groups_sum_bytes_count_instances_and_keep_distinct_messages_apart():
    fs = [_finding(10, f"blocks.{i}.attn", 100) for i in range(24)]
    fs += [_finding(10, f"blocks.{i}.attn", 50, "copies y (2, 3)") for i in range(24)]  # the other operand
    fs += [_finding(12, f"blocks.{i}.mlp", 10 * (i + 1), f"copies z ({i + 1}, 3)") for i in range(3)]  # sizes differ
    groups = group_findings(fs)
    assert [(g.line, g.count, g.bytes) for g in groups] == [(10, 24, 2400), (10, 24, 1200), (12, 3, 60)]
    assert groups[0].modules == "blocks.{0..23}.attn" and groups[0].key == "FXL201@/u/m.py:10"
    assert groups[1].key == "FXL201@/u/m.py:10#2"
    assert groups[2].message.startswith("copies z (3, 3)") and "sizes differ between the 3 instances" in groups[2].message


class _Attn(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj_l = torch.nn.Linear(4, 4)

    def forward(self, attn: torch.Tensor) -> torch.Tensor:
        return self.proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


LIB = '''
import torch
import torch.nn as nn


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj_l = nn.Linear(4, 4)

    def forward(self, attn):
        return self.proj_l(attn.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attn()
        self.norm = nn.LayerNorm(6)

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.norm(x.transpose(-1, -2)).transpose(-1, -2)
'''

USER = '''
import torch
import torch.nn as nn
from fakelib.blocks import Block


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(24))

    def forward(self, x):
        x = x.contiguous()  # a no-op (FXL108) in the user file
        for b in self.blocks:
            x = b(x)
        return x[:, [0, 1, 2, 3]]
'''


@pytest.fixture
def library_model(tmp_path, monkeypatch):
    """A 24-block model whose blocks live in an installed package (a fake site-packages)."""
    site = tmp_path / "env" / "lib" / "python3.11" / "site-packages"
    (site / "fakelib").mkdir(parents=True)
    (site / "fakelib" / "__init__.py").write_text("")
    (site / "fakelib" / "blocks.py").write_text(textwrap.dedent(LIB))
    user = tmp_path / "proj" / "net.py"
    user.parent.mkdir()
    user.write_text(textwrap.dedent(USER))
    monkeypatch.syspath_prepend(str(site))
    for name in [m for m in sys.modules if m.startswith("fakelib")]:
        monkeypatch.delitem(sys.modules, name)
    spec = importlib.util.spec_from_file_location("user_net", user)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.Net(), (torch.randn(2, 4, 6, 6),), user


def test_a_24_block_model_reads_as_a_few_rows(library_model):
    model, inputs, user = library_model
    report = fxlint.lint(model, inputs, config=False)
    assert len(report.findings) >= 48
    text = render(report, "text", width=140)
    lines = text.splitlines()
    assert len(lines) < 40, text
    # block 0 permutes the user's x, the others the sum before them: two messages, two rows
    assert "×23 in blocks.{1..23}.attn.proj_l" in text and "×24 in blocks.{0..23}.norm" in text
    # the user's own lines first, then the package's under its own heading
    head = next(i for i, ln in enumerate(lines) if ln.startswith("In installed packages (fakelib)"))
    rows = [ln for ln in lines if ln.startswith("FXL")]
    assert any("net.py" in ln for ln in lines[:head] if ln.startswith("FXL"))
    assert all("fakelib/blocks.py" in ln for ln in lines[head:] if ln.startswith("FXL")) and len(rows) <= 6
    assert "fakelib/blocks.py:" in text and "site-packages" not in text.split("Top lines")[0]
    # every instance with --no-group
    flat = render(report, "text", width=140, group=False)
    assert flat.count("blocks.") >= 48
    # only the user's files
    mine = render(report, "text", width=140, scope="user")
    assert "fakelib" not in mine.split("\n", 1)[1] and "in installed packages not shown" in mine.splitlines()[0]


def test_json_groups_and_sarif_one_result_per_location(library_model):
    model, inputs, user = library_model
    report = fxlint.lint(model, inputs, config=False)
    data = json.loads(render(report, "json"))
    ids = {g["id"] for g in data["groups"]}
    assert all(f["group"] in ids for f in data["findings"])
    proj = next(g for g in data["groups"] if "norm" in (g["modules"] or ""))
    assert proj["instances"] == 24 and proj["library"] == "fakelib" and proj["bytes"] == sum(
        f["bytes"] for f in data["findings"] if f["group"] == proj["id"])
    sarif = sarif_dict(report)
    results = sarif["runs"][0]["results"]
    assert len(results) == len(data["groups"]) < len(report.findings)
    r = next(r for r in results if r["properties"].get("instances") == 24 and "norm" in r["properties"]["modulePath"])
    assert "24 module instances run this line" in r["message"]["text"]
    assert len(sarif_dict(report, scope="user")["runs"][0]["results"]) < len(results)


def test_cli_options(capsys, library_model, monkeypatch):
    from fxlint.cli.app import main

    assert main(["lint", "models/speech_separation.py:make", "--sort", "time"]) == 2
    assert "--sort time needs --confirm" in capsys.readouterr().err
    assert main(["lint", "models/speech_separation.py:make", "--confirm", "--sort", "time", "--fail-on", "never"]) == 0
    out = capsys.readouterr().out
    assert "Runtime: copies take" in out and "explained by these findings" in out


def test_location_text_keeps_the_file_name_and_line():
    from fxlint.reporting.grouping import location_text

    long = "/tmp/" + "x" * 60 + "/video.py:11"
    cell = location_text(long)
    assert cell.endswith("/video.py:11") and cell.startswith("...") and len(cell) == 40
    assert location_text("a.py:3") == "a.py:3"
    assert location_text("<unknown>") == "<unknown>"

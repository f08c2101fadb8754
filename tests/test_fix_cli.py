"""``fxlint fix``: what would be rewritten, as graph code before/after and a source edit."""

from __future__ import annotations

import json

from fxlint.cli.app import main
from tests.conftest import run_cli

MODEL = """
import torch
import torch.nn as nn


class Sep(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        output = self.lin(x)
        n = output.size(1)
        a = output[:, [i for i in range(0, n, 2)]]
        b = output[:, [1, 3, 5]]
        return a * 1, b * 1


class Trap(nn.Module):
    def forward(self, x):
        h = x * 2
        z = h[:, [0, 2, 4]]
        z.add_(1)
        return h + 0, z + 0


def plain(x):
    return x[:, ::2]


class NHWCConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3)

    def forward(self, x):
        return self.conv(x.permute(0, 3, 1, 2).contiguous())
"""


def test_fix_prints_graph_before_after_and_source_edit(write_module, capsys):
    path = write_module(MODEL)
    rc = main(["fix", f"{path}:Sep", "--input", "randn(4,16)"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "FXL401 index-to-slice" in out
    assert "    - a = output[:, [0, 2, 4, 6, ..., 14]]" in out
    assert "    + a = output[:, ::2]" in out
    # the user's own bounds are kept (`n`), as in the example
    assert "    - a = output[:, [i for i in range(0, n, 2)]]\n    + a = output[:, 0:n:2]" in out
    assert "    - b = output[:, [1, 3, 5]]\n    + b = output[:, 1:6:2]" in out
    assert "2 rewrites applied, verified (outputs and gradients); 0 not applied" in out


def test_fix_reports_what_it_cannot_prove(write_module, capsys):
    path = write_module(MODEL)
    assert main(["fix", f"{path}:Trap", "--input", "randn(4,16)"]) == 0
    out = capsys.readouterr().out
    assert "FXL401 not applied: the result is written in place afterwards" in out
    assert "0 rewrites applied" in out


def test_fix_json_and_no_verify(write_module, capsys):
    path = write_module(MODEL)
    assert main(["fix", f"{path}:Sep", "-i", "randn(4,16)", "--format", "json", "--no-verify"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [a["code"] for a in data["applied"]] == ["FXL401", "FXL401"]
    assert data["verified"] is False and data["bytes_saved_per_call"] == 4 * 8 * 4 + 4 * 3 * 4


def test_fix_nothing_to_do_and_errors(write_module, capsys):
    path = write_module(MODEL)
    assert main(["fix", f"{path}:plain", "-i", "randn(4,16)"]) == 0
    assert "0 rewrites applied" in capsys.readouterr().out
    assert main(["fix", f"{path}:Sep", "--select", "FXL999", "-i", "randn(4,16)"]) == 2
    assert "FXL999" in capsys.readouterr().err
    assert main(["fix", f"{path}:Sep"]) == 2
    assert "needs example inputs" in capsys.readouterr().err


def test_fix_in_a_fresh_interpreter_on_the_scenario_model():
    proc = run_cli("fix", "models/speech_separation.py:make")
    assert proc.returncode == 0, proc.stderr
    assert "+ speaker_a = output[:, ::2]" in proc.stdout


def test_parse_line_reads_statements_expressions_in_literals_and_block_headers():
    import ast

    from fxlint.util.source import parse_line

    for code in ("y = x[m]", '("label", lambda x: x[[1]]),', "if x[m].any():", "return out[:, [0, 2]]"):
        line = parse_line(code)
        assert line is not None, code
        sub = line.unique(lambda n: isinstance(n, ast.Subscript))
        assert sub is not None and line.text(sub).startswith(("x[", "out["))
    assert parse_line("foo(") is None and parse_line(None) is None


def test_fix_no_grad_applies_what_gradients_would_make_slower(write_module, capsys):
    """A model run for inference: with autograd on (eval() does not turn it off) the FXL204 site is
    listed with its reason and the way out; under --no-grad it is applied."""
    path = write_module(MODEL)
    assert main(["fix", f"{path}:NHWCConv", "-i", "randn(2,12,12,8)"]) == 0
    out = capsys.readouterr().out
    assert "FXL204 not applied: gradients flow through the convolution" in out and "--no-grad" in out
    assert main(["fix", f"{path}:NHWCConv", "-i", "randn(2,12,12,8)", "--no-grad"]) == 0
    out = capsys.readouterr().out
    assert "1 rewrite applied" in out or "1 rewrites applied" in out, out

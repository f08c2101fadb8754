"""Notebooks: the data models show as HTML in a cell's output and as one short line in a repr, and the
notebook docs/notebooks/quickstart.ipynb runs top to bottom in a real Jupyter kernel (nbclient + ipykernel)
with the report, the audit and the rewrite result as its HTML outputs."""

from __future__ import annotations

import os
from html import unescape

import torch
import torch.nn as nn

import fxlint
from tests.conftest import ROOT

NOTEBOOK = ROOT / "docs" / "notebooks" / "quickstart.ipynb"


class Conditioned(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x, cond):
        c = cond[:, None, :].repeat(1, x.shape[1], 1)  # FXL104: a copy for a broadcast
        return self.proj(x * c)


def _inputs():
    return torch.randn(2, 8, 16), torch.randn(2, 16)


def test_audit_report_repr_and_html():
    audit = fxlint.audit(Conditioned(), _inputs())
    short = repr(audit)
    assert short.startswith("<fxlint.AuditReport: ") and "per forward call" in short and "\n" not in short
    page = audit._repr_html_()
    assert page.startswith('<div class="fxlint-audit">') and "<table" in page and "test_notebook.py" in page
    assert "Bytes/call" in page


def test_rewrite_result_repr_and_html():
    result = fxlint.rewrite(Conditioned(), _inputs())
    assert repr(result) == ("<fxlint.RewriteResult: 1 applied, 0 not applied, verified (outputs and gradients); "
                            "print() it for the sites>")
    page = result._repr_html_()
    assert page.startswith('<div class="fxlint-rewrites">') and "FXL104" in page and "expand" in page
    assert "<pre><span" in page and "-&gt;" in page  # the graph code as a diff, escaped


def test_rewrite_result_with_nothing_to_do():
    result = fxlint.rewrite(nn.Linear(4, 4), torch.randn(2, 4))
    assert repr(result).startswith("<fxlint.RewriteResult: 0 applied, 0 not applied")
    assert "0 rewrite(s) applied" in result._repr_html_()


def test_quickstart_notebook_runs_in_a_kernel_and_shows_the_report(monkeypatch):
    import nbclient
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit the notebook without outputs"
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    monkeypatch.setenv("PYTHONPATH", path)  # the kernel is a child process: it imports this checkout's fxlint
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]

    def shown(cell, mime: str) -> str:
        return "".join(o.get("data", {}).get(mime, "") for o in cell.outputs if o.output_type == "execute_result")

    def html(cell) -> str:
        return shown(cell, "text/html")

    def plain(cell) -> str:
        return shown(cell, "text/plain")

    report_cell = next(c for c in code if c.source.startswith("report = fxlint.lint"))
    cell = html(report_cell)
    assert cell.startswith('<iframe class="fxlint-report"')  # the HTML report, in an iframe of its own
    page = unescape(cell.split('srcdoc="', 1)[1].split('"', 1)[0])
    assert page.startswith("<!DOCTYPE html>") and "<title>fxlint report</title>" in page and "FXL104" in page
    assert plain(report_cell).startswith("<fxlint.Report: 1 finding (FXL104)")
    printed = next(c for c in code if c.source == "print(report)")
    text = "".join(o.get("text", "") for o in printed.outputs if o.output_type == "stream")
    assert "FXL104 warning" in text and "1 finding (1 warning)" in text
    assert html(next(c for c in code if c.source.startswith("fxlint.audit"))).startswith('<div class="fxlint-audit">')
    rewrites = html(next(c for c in code if c.source.startswith("result = fxlint.rewrite")))
    assert rewrites.startswith('<div class="fxlint-rewrites">') and "FXL104" in rewrites

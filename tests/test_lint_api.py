"""fxlint.lint on modules, callables, GraphModules and ExportedPrograms; it
leaves the model as it found it."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint


class WithBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.bn(x))[:, [0, 1, 2]]


def test_lint_does_not_mutate_the_model_or_the_rng():
    m = WithBN().train()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    x = torch.randn(16, 8)
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    report = fxlint.lint(m, x)
    assert torch.equal(torch.rand(3), expected_next), "linting consumed the user's random stream"
    after = m.state_dict()
    for k, v in before.items():
        assert torch.equal(after[k], v), f"{k} changed"
    assert m.training
    assert report.codes() == {"FXL401"}


def test_lint_runs_the_model_once():
    calls = []

    class Counting(nn.Module):
        def forward(self, x):
            calls.append(1)
            return x[:, [1, 2]]

    fxlint.lint(Counting(), torch.randn(2, 4))
    assert len(calls) == 1


def test_repeated_lints_keep_capturing():
    """Dynamo's recompile limits must not silently stop capture after a few lints."""
    m = WithBN().eval()
    for i in range(12):
        report = fxlint.lint(m, torch.randn(4 + i, 8))
        assert report.codes() == {"FXL401"}, i


def test_plain_callable_with_kwargs_and_graph_breaks():
    def f(x, *, scale):
        y = x[:, [0, 2]] * scale
        print("graph break")  # Dynamo breaks the graph here
        return y[[1]]

    report = fxlint.lint(f, {"x": torch.randn(4, 4), "scale": 2.0})
    assert len(report.by_code("FXL401")) == 2
    assert report.graphs == 2 and report.graph_breaks == 1


def test_graphmodule_and_exported_program():
    class M(nn.Module):
        def forward(self, x):
            return x[:, [0, 1, 2]] + 1

    x = torch.randn(3, 8)
    gm = torch.fx.symbolic_trace(M())
    nodes_before = [dict(n.meta) for n in gm.graph.nodes]
    assert fxlint.lint(gm, (x,)).codes() == {"FXL401"}
    assert [dict(n.meta) for n in gm.graph.nodes] == nodes_before, "the user's GraphModule was annotated"
    ep = torch.export.export(M(), (x,))
    assert fxlint.lint(ep).codes() == {"FXL401"}


def test_graphmodule_needs_its_inputs():
    gm = torch.fx.symbolic_trace(nn.Linear(2, 2))
    with pytest.raises(fxlint.CaptureError, match="needs inputs"):
        fxlint.lint(gm)


def test_bad_targets_and_raising_models():
    with pytest.raises(fxlint.CaptureError, match="cannot lint int"):
        fxlint.lint(3, ())

    class Raises(nn.Module):
        def forward(self, x):
            raise ValueError("bad shape in user code")

    with pytest.raises(fxlint.ModelError, match="bad shape in user code"):
        fxlint.lint(Raises(), torch.randn(2))


def test_report_api():
    report = fxlint.lint(lambda x: (x[:, [0, 1]], x[[2]]), (torch.randn(4, 4),))
    s = report.summary()
    assert s["findings"] == 2 and s["warnings"] == 2 and s["bytes_per_call"] == 4 * 2 * 4 + 4 * 4
    assert len(report.at_or_above("warning")) == 2 and report.at_or_above("error") == []
    d = report.to_dict()
    assert set(d["findings"][0]) >= {"code", "name", "severity", "message", "file", "line", "module_path",
                                     "bytes", "fix"}
    assert "2 findings on 1 line (2 warnings)" in str(report)


def test_edited_file_is_reread_in_the_same_process(make_project):
    """Dynamo and the suppression reader both go through linecache: an edit made after the
    file was first cached must show (quoted source text, `# fxlint: ignore` added later)."""
    from tests.conftest import MODEL_SOURCE, load_model

    model = make_project(None)
    m, x = load_model(model)
    assert fxlint.lint(m, x, config=False).findings[0].source.endswith("# the gather")
    model.write_text("# a new first line\n" + MODEL_SOURCE.replace("# the gather", "# fxlint: ignore[FXL401]"))
    m, x = load_model(model)
    report = fxlint.lint(m, x, config=False)
    assert report.findings == [] and report.suppressed[0].source.endswith("# fxlint: ignore[FXL401]")


def test_report_repr_is_short_and_a_notebook_gets_the_html_page():
    import torch

    class Gather(torch.nn.Module):
        def forward(self, x):
            return x[:, [0, 1, 2, 3]] * 2

    rep = fxlint.lint(Gather(), (torch.randn(4, 8),), config=False)
    text = repr(rep)
    assert text.startswith("<fxlint.Report: 1 finding (FXL401), 1 graph") and len(text) < 200
    cell = rep._repr_html_()  # the page in an iframe: its styles do not restyle the notebook
    assert cell.startswith('<iframe class="fxlint-report"') and 'srcdoc="&lt;!DOCTYPE html&gt;' in cell
    assert "FXL401" in cell and "<style>" not in cell
    assert repr(fxlint.Report()) == "<fxlint.Report: 0 findings, 0 graphs; print() it for the table>"


def test_dir_lists_the_public_api_only():
    names = dir(fxlint)
    assert names == sorted(fxlint.__all__)
    assert not {"Any", "Mapping", "Sequence", "os", "TYPE_CHECKING"} & set(names)
    import importlib

    # the documented import paths still work
    assert callable(importlib.import_module("fxlint.registry").rule)
    assert importlib.import_module("fxlint.testing") is not None

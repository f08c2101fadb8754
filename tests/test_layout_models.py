"""The layout scenario models in models/: their expected codes, on the right lines, with the bytes the
runtime confirms, and nothing the layout rules leave unexplained."""

from __future__ import annotations

import importlib

import pytest
import torch

import fxlint
from fxlint.runtime.oracle import check
from tests.conftest import line_of
from tests.rule_snapshots import kernel_env

SCENARIOS = {
    # module: (line marker, bytes of what is copied per call, backward bytes)
    "video_classification": ("x = torch.relu(self.stem(x))", lambda inputs: inputs[0].numel() * 4, True),
    "attention_matmul": ("att = (q @ k.transpose(-2, -1))", None, False),
    "nhwc_pipeline": ("x = images.permute(0, 3, 1, 2).contiguous()", lambda inputs: inputs[0].numel() * 4, False),
    "convnext_block": ("y = self.norm(y)", lambda inputs: inputs[0].numel() * 4, True),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_codes_lines_bytes_and_runtime(name):
    mod = importlib.import_module(f"models.{name}")
    model, inputs = mod.make()
    marker, nbytes, backward = SCENARIOS[name]
    result = check(model, inputs, select="FXL2")
    report = result.report
    expected = {c for c in mod.EXPECTED if c.startswith("FXL2")}  # the layout family's codes
    if kernel_env() != "onednn":  # FXL209's output-gradient copy: where oneDNN runs the grouped conv (the doc)
        expected -= {"FXL209"}
    assert report.codes() == expected
    line = line_of(mod.__file__, marker)
    assert line in {f.line for f in report.findings}
    if nbytes is not None:
        [f] = [f for f in report.findings if f.line == line]
        assert f.bytes == nbytes(inputs)
        assert (f.details.get("backward_bytes") or 0) == (f.bytes if backward else 0)
    result.assert_all_confirmed()
    _assert_unexplained_only_where_every_program_pays(result, model, inputs)
    assert mod.__doc__ and "Expected:" in mod.__doc__


def _assert_unexplained_only_where_every_program_pays(result, model, inputs):
    """Nothing the layout rules leave unexplained - except, on a machine where a grouped conv runs
    ATen's native kernel (oneDNN off or without the dtype), the per-group slices that kernel makes,
    which no layout avoids: exactly the bytes the kernel model predicts for them on this machine."""
    from fxlint import kernels as K
    from fxlint.capture.graphs import capture

    paid: dict[tuple[str, int], int] = {}
    for view in capture(model, inputs).program():
        for node in view.ops(*K.ops(family="conv")):
            pred = K.predict(node)
            slices = [c for c in pred.forward(avoidable=False) if c.reason == "conv-group-slice"] if pred else []
            if slices:
                key = (node.location.file, node.location.line)
                paid[key] = paid.get(key, 0) + sum(int(c.nbytes) for c in slices)
    rows = {(u["file"], u["line"]): u["bytes"] for u in result.report.unexplained}
    assert rows == paid, (rows, paid)


def test_attention_scenario_reports_each_copied_operand():
    from models import attention_matmul as t

    model, (x,) = t.make()
    report = fxlint.lint(model, (x,), select="FXL201")
    by_line: dict[int, list[int]] = {}
    for f in report.findings:
        by_line.setdefault(f.line, []).append(f.bytes)
    qk, av = line_of(t.__file__, "att = (q @ k"), line_of(t.__file__, "return att @ v")
    head = x.numel() * 4  # each of q, k, v is (B, S, E) float32
    assert by_line == {qk: [head, head], av: [head]}


def test_scenarios_train_step_pays_the_predicted_backward_copies():
    from models import video_classification as v

    model, inputs = v.make()
    [f] = fxlint.lint(model, inputs, select="FXL202").findings
    audit = fxlint.audit(model, inputs, train=True)
    bwd = [c for c in audit.at(f.file, f.line, phase="backward") if c.grad_fn == "ConvolutionBackward0"]
    assert sum(c.bytes for c in bwd) == f.details["backward_bytes"]


def test_zoo_demo_lists_the_layout_scenarios():
    from tests.conftest import run_cli

    res = run_cli("lint", "--zoo", "models", "--fail-on", "never", "--select", "FXL2")
    assert res.returncode == 0, res.stderr
    for code in ("FXL201", "FXL202", "FXL203", "FXL204"):
        assert code in res.stdout

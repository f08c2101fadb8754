"""The implicit-copy scenario models (models/): each reports its EXPECTED codes on the lines the
story names, and every copy-type finding is confirmed by the runtime audit.

Copies the FXL1xx rules leave to other families are named per model (a 1x1 conv reading a channel
slice is FXL202's, a 4-D matmul on head-split operands is FXL201's, tiling real data is not a
finding), so a copy nobody explains still fails the test.
"""

from __future__ import annotations

import importlib

import pytest

import fxlint
from fxlint.runtime.oracle import check
from tests.conftest import line_of

#: model -> {code: [(marker on the line, bytes, severity)]}
LINES = {
    "nhwc_image_pipeline": {"FXL102": [("raw = x.reshape(", 8 * 3 * 32 * 32 * 4, "info")]},
    "channel_shuffle": {
        "FXL101": [("transpose(1, 2).contiguous()  # the one copy", 4 * 32 * 16 * 16 * 4, "info")],
        "FXL108": [("contiguous already: changes nothing", 0, "info"), ("cat returns a contiguous", 0, "info")],
    },
    "transformer_attention": {
        "FXL101": [("merge heads: the one copy", 3 * 2 * 16 * 64 * 4, "info")],  # 3 refinement steps
        "FXL102": [("the same table flattened every step", 3 * 16 * 16 * 4, "warning")],
    },
    "repeat_vs_expand": {
        "FXL104": [("copy for a broadcast", 4 * 16 * 8 * 8 * 4, "warning"),
                   ("a copy for a broadcast", 4 * 1 * 8 * 8 * 4, "warning")],
    },
    "mixed_precision_roundtrip": {
        "FXL103": [("store features in half", 32 * 256 * 2, "warning"),
                   ("straight back to float32", 32 * 256 * 4, "warning")],
        "FXL108": [("float32 already", 0, "info")],
    },
    "ocr_positional_encoding": {"FXL107": [("built on the host", 64 * 8, "warning")]},
}

#: runtime copies of each model that belong to other rule families (marker on the line, top op)
OTHERS = {
    "channel_shuffle": [("self.branch(x2)", "aten::conv2d")],  # FXL202: conv on a chunk slice
    "transformer_attention": [("att = (q @ k.transpose", "aten::matmul"), ("y = att.softmax", "aten::matmul")],
    "repeat_vs_expand": [("tiles C > 1", "aten::repeat")],  # real data, not a broadcast
}


#: make() arguments per model: the OCR story is linted for CUDA by `make demo` (simulated, tests/test_device.py);
#: here it runs on the `meta` device, which the runtime audit can profile on a CPU machine
MAKE = {"ocr_positional_encoding": {"device": "meta"}}


def _load(name: str):
    return importlib.import_module(f"models.{name}")


@pytest.mark.parametrize("name", sorted(LINES))
def test_scenario_model_findings_lines_bytes_and_runtime(name):
    mod = _load(name)
    model, inputs = mod.make(**MAKE.get(name, {}))
    result = check(model, inputs, select="FXL1")
    report = result.report
    assert {f.code for f in report.findings} == {c for c in mod.EXPECTED if c.startswith("FXL1")}
    for code, rows in LINES[name].items():
        got = sorted((f.line, f.bytes, f.severity.value) for f in report.by_code(code))
        want = sorted((line_of(mod.__file__, marker), nbytes, sev) for marker, nbytes, sev in rows)
        assert got == want, (code, [f.message for f in report.by_code(code)])
    result.assert_all_confirmed()
    allowed = {(line_of(mod.__file__, marker), op) for marker, op in OTHERS.get(name, [])}
    for u in report.unexplained:
        assert any(u["line"] == line and u["ops"][0].startswith(op) for line, op in allowed), u


def test_ocr_model_is_quiet_when_everything_is_on_the_cpu():
    mod = _load("ocr_positional_encoding")
    model, inputs = mod.make(device="cpu")
    report = fxlint.lint(model, inputs, select="FXL1", confirm=True)
    assert report.findings == [] and report.unexplained == []


def test_seed_claims_about_the_scenarios():
    """The runtime's answer to the seeds' claims that the models rely on."""
    import torch

    nhwc = torch.rand(8, 32, 32, 3)
    x = nhwc.permute(0, 3, 1, 2)
    # seed 3: "view after permute is forced to copy": a same-shape view is free, a merging view raises
    assert fxlint.audit(lambda b: b.permute(0, 3, 1, 2).view(-1, 3, 32, 32), (nhwc,)).copies == []
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.view(8, -1)
    # seed 4: the shuffle is exactly one copy of the tensor
    shuffle = _load("channel_shuffle").channel_shuffle
    t = torch.randn(4, 32, 16, 16)
    [c] = fxlint.audit(lambda t: shuffle(t, 2), (t,)).copies
    assert c.bytes == t.numel() * 4 and c.op == "aten::contiguous"
    # seed 8: x.t().view(-1) raises rather than copying
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        torch.randn(100, 100).t().view(-1)
    # seed 9: repeat copies the output, expand copies nothing
    y = torch.randn(1, 5)
    [r] = fxlint.audit(lambda y: y.repeat(2, 1), (y,)).copies
    assert r.bytes == 2 * 5 * 4 and r.op == "aten::repeat"
    assert fxlint.audit(lambda y: y.expand(2, -1), (y,)).copies == []


@pytest.mark.parametrize("name", sorted(LINES) + ["video_classification", "nhwc_pipeline", "attention_matmul",
                                                  "convnext_block"])
def test_scenario_models_with_a_dynamic_batch_size(name):
    """Symbolic sizes never crash a rule: the same codes come back, bytes as a formula in the batch."""
    import torch

    mod = _load(name)
    model, inputs = mod.make()
    for t in inputs:
        torch._dynamo.maybe_mark_dynamic(t, 0)
    torch._dynamo.reset()
    # every rule: the layout rules must hold under a dynamic batch too (a GPU story: for its device)
    report = fxlint.lint(model, inputs, device=getattr(mod, "DEVICE", None))
    codes = {f.code for f in report.findings}
    # FXL209's gradient layouts need concrete strides: under a dynamic batch it says nothing (its docstring)
    assert report.errors == [] and codes <= mod.EXPECTED and mod.EXPECTED - codes <= {"FXL209"}
    for f in report.findings:
        assert f.bytes is not None or (f.bytes_expr and "s" in f.bytes_expr), f

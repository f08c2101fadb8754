"""FXL204 layout-pessimization: a .contiguous() that turns channels_last data into NCHW before a conv
that takes channels_last; not when the copy is needed or the conv would copy anyway."""

from __future__ import annotations

import torch
import torch.nn as nn

import fxlint
from fxlint.runtime.oracle import check
from tests.conftest import line_of

HERE = __file__


def _fxl204(report):
    return [f for f in report.findings if f.code == "FXL204"]


class Pipeline(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, images):  # (N, H, W, C)
        x = images.permute(0, 3, 1, 2).to(memory_format=torch.contiguous_format)  # to(contiguous_format)
        return self.conv(x)


def test_positive_with_to_memory_format_and_bytes():
    m, x = Pipeline(), torch.randn(2, 16, 16, 3)
    result = check(m, (x,), select="FXL204")
    [f] = _fxl204(result.report)
    assert (f.file, f.line, f.bytes) == (HERE, line_of(HERE, "# to(contiguous_format)"), x.numel() * 4)
    assert f.message.startswith("drop .contiguous(): conv2d accepts this channels_last layout")
    assert f.details["weight_conversion_bytes"] == m.conv.weight.numel() * 4
    assert "model.to(memory_format=torch.channels_last)" in f.fix
    result.assert_all_confirmed()
    # the fix: no copy at all once the model is channels_last and the .contiguous() is gone
    m_cl = Pipeline().to(memory_format=torch.channels_last)
    fixed = lambda images: m_cl.conv(images.permute(0, 3, 1, 2))  # noqa: E731
    assert [c for c in fxlint.audit(fixed, (x,)).copies if c.avoidable] == []


def test_channels_last_model_message_has_no_weight_cost():
    m = Pipeline().to(memory_format=torch.channels_last)
    [f] = _fxl204(fxlint.lint(m, (torch.randn(2, 16, 16, 3),)))
    assert f.details["weight_conversion_bytes"] == 0 and "weight" not in f.message


def test_negative_when_the_contiguous_result_is_needed_elsewhere():
    conv = nn.Conv2d(3, 8, 3, padding=1)

    def f(images):
        x = images.permute(0, 3, 1, 2).contiguous()
        return conv(x), x.view(2, -1)  # the NCHW view needs the copy

    assert _fxl204(fxlint.lint(f, (torch.randn(2, 16, 16, 3),))) == []


def test_negative_when_the_data_is_not_channels_last():
    conv = nn.Conv2d(3, 8, 3, padding=1)

    def f(x):
        return conv(x.transpose(2, 3).contiguous())

    assert _fxl204(fxlint.lint(f, (torch.randn(2, 3, 16, 16),))) == []


def test_negative_when_the_conv_would_copy_channels_last_3d_anyway():
    """A small batch-1 float32 conv3d takes ATen's slow path, which only takes contiguous input:
    there the .contiguous() costs nothing extra."""
    conv = nn.Conv3d(3, 4, 3)

    def f(clips):  # (1, T, H, W, C)
        return conv(clips.permute(0, 4, 1, 2, 3).contiguous())

    x = torch.randn(1, 4, 6, 6, 3)
    assert _fxl204(fxlint.lint(f, (x,))) == []
    audit = fxlint.audit(lambda c: conv(c.permute(0, 4, 1, 2, 3)), (x,))
    assert [c.op for c in audit.copies if c.avoidable] == ["aten::contiguous"]


def test_export():
    m, x = Pipeline(), torch.randn(2, 16, 16, 3)
    [f] = _fxl204(fxlint.lint(torch.export.export(m, (x,)), (x,)))
    assert f.bytes == x.numel() * 4


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text, no negative reported."""
    from tests.rule_snapshots import kernel_env, marked_lines, reported_lines, rule_output

    out = rule_output("FXL204")
    positives = marked_lines("FXL204", "positive")
    assert reported_lines(out, "FXL204") == set(positives) and "# negative" not in out
    assert out.count("FXL204 ") == len(positives)
    # the conversions a layout implies depend on the conv paths this machine runs (oneDNN or not)
    assert out == snapshot(name=kernel_env())


def test_fixture_copies_are_confirmed_by_the_runtime():
    """Every copy the snapshot claims is one the profiler sees (the conversions the convs then make
    are FXL202's, the copy a view needs is not avoidable: both stay unexplained here)."""
    from tests.rule_snapshots import load_fixture

    model, inputs = load_fixture("FXL204").make()
    report = fxlint.lint(model, inputs, select="FXL204", config=False, confirm=True)
    assert report.findings and all(f.status == "confirmed" for f in report.findings), report


class _ProjToConv(nn.Module):
    """A transformer block's output projection on (B, H*W, C), laid back out as NCHW for a conv (diffusers'
    Transformer2DModel: `proj_out` after `.permute(0, 3, 1, 2).contiguous()`)."""

    def __init__(self, contiguous=True):
        super().__init__()
        self.proj, self.conv, self.contiguous = nn.Linear(16, 16), nn.Conv2d(16, 8, 1), contiguous

    def forward(self, x):  # (B, H*W, C)
        h = self.proj(x)  # the linear whose backward copies
        h = h.reshape(2, 8, 8, 16).permute(0, 3, 1, 2)
        if self.contiguous:
            h = h.contiguous()  # the layout copy
        return self.conv(h)


def _backward_clones(model, x):
    audit = fxlint.audit(model, (x,), train=True)
    return [c for c in audit.copies if c.phase == "backward" and c.avoidable and c.file == HERE]


def test_training_claims_the_backward_copy_the_gradient_comes_back_through_and_dropping_it_removes_it():
    from fxlint.runtime.confirm import _backward_hits

    torch.manual_seed(0)
    x = torch.randn(2, 64, 16)
    rep = fxlint.lint(_ProjToConv(), (x,), train=True, select=["FXL204"], config=False)
    [f] = rep.findings
    lin_line = line_of(HERE, "# the linear whose backward copies")
    assert f.line == line_of(HERE, "# the layout copy")
    assert f.backward_bytes == 2 * 64 * 16 * 4 and [line for _, line in f.backward_sites] == [lin_line]
    assert f"`linear` at line {lin_line} must copy it" in f.message
    hits = _backward_hits(f, fxlint.audit(_ProjToConv(), (x,), train=True), set())
    assert [c.line for c in hits] == [lin_line] and sum(c.bytes for c in hits) == f.backward_bytes
    # the fix removes the backward copy at the linear too (the conv's own backward copies are FXL209's)
    assert lin_line in [c.line for c in _backward_clones(_ProjToConv(), x)]
    assert lin_line not in [c.line for c in _backward_clones(_ProjToConv(contiguous=False), x)]


def test_no_backward_claim_without_training():
    with torch.no_grad():
        [f] = _fxl204(fxlint.lint(_ProjToConv(), (torch.randn(2, 64, 16),), config=False))
    assert f.backward_bytes == 0 and "training" not in f.message

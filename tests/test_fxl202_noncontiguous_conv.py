"""FXL202 noncontiguous-conv: held-out spellings (F.conv1d/2d/3d, nn modules, export), the input copy
forward and again in backward, the channels_last weight conversion at info level, and clean CNNs."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxlint
from fxlint.runtime.oracle import check
from tests.conftest import line_of

HERE = __file__


def _line(marker: str) -> int:
    return line_of(HERE, marker)


def _fxl202(report, severity=None):
    return [f for f in report.findings if f.code == "FXL202" and (severity is None or f.severity.value == severity)]


class Clips3d(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(8, 3, 3, 3, 3) * 0.1)

    def forward(self, clips):  # (B, T, C, H, W)
        return F.conv3d(clips.transpose(1, 2), self.weight, padding=1)  # functional conv3d on transposed clips


class Tokens1d(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(12, 16, kernel_size=3, padding=1)

    def forward(self, tokens):  # (B, L, C)
        return self.conv(tokens.transpose(1, 2))  # conv1d on (B, L, C).transpose


class Transposed2d(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3)

    def forward(self, x):
        return self.conv(x.transpose(2, 3))  # conv2d on spatially transposed input


POSITIVE = [
    (Clips3d, (torch.randn(2, 4, 3, 8, 8),), "# functional conv3d on transposed clips"),
    (Tokens1d, (torch.randn(2, 32, 12),), "# conv1d on (B, L, C).transpose"),
    (Transposed2d, (torch.randn(2, 4, 9, 9),), "# conv2d on spatially transposed input"),
]


@pytest.mark.parametrize("cls,inputs,marker", POSITIVE, ids=[p[0].__name__ for p in POSITIVE])
def test_input_copy_right_line_bytes_and_backward(cls, inputs, marker):
    m = cls()
    result = check(m, inputs, select="FXL202")
    [f] = _fxl202(result.report, "warning")
    x = inputs[0]
    assert (f.file, f.line, f.bytes) == (HERE, _line(marker), x.numel() * 4)
    assert f.details["backward_bytes"] == x.numel() * 4  # the saved view is copied again
    assert "again in backward" in f.message
    result.assert_all_confirmed()
    result.assert_no_unexplained()
    audit = fxlint.audit(m, inputs, train=True)
    bwd = [c for c in audit.at(HERE, _line(marker), phase="backward")
           if c.grad_fn == "ConvolutionBackward0" and c.bytes == x.numel() * 4]
    assert len(bwd) == 1


def test_video_fix_explicit_contiguous_pays_once_per_step():
    """The fix the message gives: one explicit .contiguous() is reused by the backward."""
    clips = torch.randn(2, 4, 3, 8, 8)
    m = Clips3d()
    [f] = _fxl202(fxlint.lint(m, (clips,)), "warning")
    assert "feed the Conv3d (B, C, T, H, W)" in f.fix and ".contiguous()" in f.fix

    def fixed(x):
        return F.conv3d(x.transpose(1, 2).contiguous(), m.weight, padding=1)

    before = fxlint.audit(m, (clips,), train=True)
    after = fxlint.audit(fixed, (clips,), train=True)
    layout = lambda a: [c for c in a.copies if c.avoidable and c.grad_fn != "torch::autograd::AccumulateGrad"]  # noqa: E731
    assert len(layout(before)) == 2 and len(layout(after)) == 1
    assert _fxl202(fxlint.lint(fixed, (clips,))) == []


def test_kernel_size_one_conv1d_fix_is_a_linear():
    class PointwiseConv(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(12, 16, kernel_size=1)

        def forward(self, x):
            return self.conv(x.transpose(1, 2))

    [f] = _fxl202(fxlint.lint(PointwiseConv(), (torch.randn(2, 32, 12),)), "warning")
    assert "nn.Linear" in f.fix


class CLInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, images):  # (N, H, W, C)
        return self.conv(images.permute(0, 3, 1, 2))  # channels_last view into conv2d


def test_channels_last_input_is_clean_at_warning_level_and_the_weight_conversion_is_info():
    m, x = CLInput(), torch.randn(2, 16, 16, 3)
    result = check(m, (x,), select="FXL202")
    assert _fxl202(result.report, "warning") == []
    [info] = _fxl202(result.report, "info")
    assert info.bytes == m.conv.weight.numel() * 4 and info.details["operand"] == "weight"
    assert "model.to(memory_format=torch.channels_last)" in info.fix
    result.assert_all_confirmed()
    result.assert_no_unexplained()
    # the fix: a channels_last model takes the channels_last input with no copy at all
    m_cl = CLInput().to(memory_format=torch.channels_last)
    assert _fxl202(fxlint.lint(m_cl, (x,))) == []
    assert [c for c in fxlint.audit(m_cl, (x,)).copies if c.avoidable] == []


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


@pytest.mark.parametrize("fmt", [torch.contiguous_format, torch.channels_last])
def test_contiguous_and_channels_last_cnns_are_clean(fmt):
    m = CNN().to(memory_format=fmt)
    x = torch.randn(4, 3, 16, 16).contiguous(memory_format=fmt)
    report = fxlint.lint(m, (x,))
    # FXL209 speaks of the backward (a channels_last conv converts its weight gradient): not a forward copy
    assert [f for f in report.findings if f.code.startswith("FXL2") and f.code != "FXL209"] == []
    assert [c for c in fxlint.audit(m, (x,)).copies if c.avoidable] == []


def test_export_and_symbolic_trace():
    m, x = Transposed2d(), torch.randn(2, 4, 9, 9)
    ep = torch.export.export(m, (x,))
    [f] = _fxl202(fxlint.lint(ep, (x,)), "warning")
    assert (f.line, f.bytes) == (_line("# conv2d on spatially transposed input"), x.numel() * 4)
    [g] = _fxl202(fxlint.lint(torch.fx.symbolic_trace(m), (x,)), "warning")
    assert g.bytes == x.numel() * 4 and g.location.startswith("<graph>")


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text, no negative reported."""
    from tests.rule_snapshots import kernel_env, marked_lines, reported_lines, rule_output

    out = rule_output("FXL202")
    assert reported_lines(out, "FXL202") == set(marked_lines("FXL202", "positive")) and "# negative" not in out
    assert out.count("FXL202 ") == 6
    # the kernel path named in the messages is this machine's: oneDNN or ATen's slow conv
    assert out == snapshot(name=kernel_env())


def test_fixture_copies_are_confirmed_by_the_runtime():
    """What the snapshot claims is what the profiler sees: every finding confirmed, no copy unexplained."""
    from tests.rule_snapshots import load_fixture

    model, inputs = load_fixture("FXL202").make()
    report = fxlint.lint(model, inputs, select="FXL202", config=False, confirm=True)
    assert report.findings and all(f.status == "confirmed" for f in report.findings), report
    assert report.unexplained == []

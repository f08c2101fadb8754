"""The lint captures the sizes it is given: Dynamo's automatic dynamic shapes stay off in the lint's
capture, so neither a second lint of the same code at another size nor a frame that runs at several
sizes in one call (a stage module whose forward has a graph break) turns sizes into symbols.

Before, a segmentation encoder (permute to channels-last for a LayerNorm, back, `.contiguous()`, at
four stages) linted at 32x32 then at 64x64 got no FXL101 at all the second time: the stages' sizes
became `(s0//4)`, `(s0//8)`..., which could be 1, so no layout question was decided; and with the
stage's forward its own frame, stage 1 got FXL101 and stages 2-4 nothing in a single lint."""

from __future__ import annotations

import torch
import torch.nn as nn

import fxlint
from fxlint.capture.graphs import capture
from tests.copy_helpers import line_with


class Encoder(nn.Module):
    def __init__(self, dims=(16, 32, 64, 128)):
        super().__init__()
        self.stem = nn.Conv2d(3, dims[0], 4, 4)
        self.norm0 = nn.LayerNorm(dims[0])
        self.down1 = nn.Conv2d(dims[0], dims[1], 2, 2)
        self.norm1 = nn.LayerNorm(dims[1])
        self.down2 = nn.Conv2d(dims[1], dims[2], 2, 2)
        self.norm2 = nn.LayerNorm(dims[2])

    def forward(self, x):
        feats = []
        x = self.stem(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm0(x)
        x = x.permute(0, 3, 1, 2)
        x = x.contiguous()  # stage 0
        feats.append(x)
        x = self.down1(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm1(x)
        x = x.permute(0, 3, 1, 2)
        x = x.contiguous()  # stage 1
        feats.append(x)
        x = self.down2(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm2(x)
        x = x.permute(0, 3, 1, 2)
        x = x.contiguous()  # stage 2
        feats.append(x)
        return feats


class Stage(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, stride, stride)
        self.norm = nn.LayerNorm(cout)

    def forward(self, x):
        x = self.conv(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        x = x.permute(0, 3, 1, 2)
        x = x.contiguous()  # every stage
        torch._dynamo.graph_break()  # a logging call, a data-dependent branch: this forward is its own frame
        return x


class StagedEncoder(nn.Module):
    def __init__(self, dims=(16, 32, 64, 128)):
        super().__init__()
        self.stages = nn.ModuleList(
            [Stage(3, dims[0], 4)] + [Stage(dims[i], dims[i + 1], 2) for i in range(len(dims) - 1)])

    def forward(self, x):
        feats = []
        for s in self.stages:
            x = s(x)
            feats.append(x)
        return feats


def _fxl101_lines(model, size):
    with torch.no_grad():
        rep = fxlint.lint(model.eval(), (torch.randn(2, 3, size, size),), select="FXL101", confirm=True,
                          config=False)
    assert all(f.status == "confirmed" for f in rep.findings), [(f.line, f.status) for f in rep.findings]
    return sorted(f.line for f in rep.findings)


def test_a_second_lint_at_another_size_is_as_static_as_the_first():
    want = sorted(line_with(Encoder.forward, f"# stage {i}") for i in range(3))
    assert _fxl101_lines(Encoder(), 32) == want
    assert _fxl101_lines(Encoder(), 64) == want  # was []: every stage size symbolic
    assert _fxl101_lines(Encoder(), 96) == want


def test_a_frame_run_at_several_sizes_in_one_call_is_captured_once_per_size():
    with torch.no_grad():
        cap = capture(StagedEncoder().eval(), (torch.randn(2, 3, 64, 64),))
    shapes = [n.input.tensor.shape for v in cap.views for n in v.ops("contiguous")]
    assert shapes == [(2, 16, 16, 16), (2, 32, 8, 8), (2, 64, 4, 4), (2, 128, 2, 2)], shapes


def test_inputs_marked_dynamic_stay_dynamic():
    x = torch.randn(2, 3, 64, 64)
    torch._dynamo.mark_dynamic(x, 0)
    with torch.no_grad():
        cap = capture(Encoder().eval(), (x,))
    [first, *_] = [n.input.tensor.shape for v in cap.views for n in v.ops("contiguous")]
    assert not isinstance(first[0], int) and first[1:] == (16, 16, 16), first


def test_each_stage_of_a_frame_run_at_several_sizes_is_reported_and_confirmed():
    """The four graphs of `Stage.forward` report the same line with four sizes: four copies made in the
    one call the lint runs, four findings (one survived before, the other copies were unexplained)."""
    with torch.no_grad():
        rep = fxlint.lint(StagedEncoder().eval(), (torch.randn(2, 3, 64, 64),), select="FXL101", confirm=True,
                          config=False)
    line = line_with(Stage.forward, "# every stage")
    got = [(f.line, f.bytes, f.status) for f in rep.findings]
    assert sorted(got) == sorted((line, 2 * c * s * s * 4, "confirmed") for c, s in ((16, 16), (32, 8), (64, 4),
                                                                                   (128, 2))), got
    assert [u for u in rep.unexplained if u["line"] == line] == []  # (the LayerNorm's copies are FXL203's)

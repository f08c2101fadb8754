"""FXL203 noncontiguous-norm: layer_norm/group_norm/rms_norm/softmax on layouts that make the kernel copy,
in spellings other than the zoo's, with the fixes the messages give checked against the runtime."""

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


def _fxl203(report):
    return [f for f in report.findings if f.code == "FXL203"]


def ln_on_permute(x, w, b):
    return F.layer_norm(x.permute(0, 2, 3, 1), (x.shape[1],), w, b)  # functional layer_norm on NHWC view


def softmax_on_transpose(x):
    return torch.softmax(x.transpose(1, 2), dim=-1)  # softmax over a transposed view


def group_norm_on_transpose(x, w, b):
    return F.group_norm(x.transpose(2, 3), 2, w, b)  # group_norm on a spatial transpose


def rms_on_transpose(x, w):
    return F.rms_norm(x.transpose(0, 1), (x.shape[-1],), w)  # rms_norm on a batch-first transpose


POSITIVE = [
    (ln_on_permute, lambda: (torch.randn(2, 8, 5, 5), torch.randn(8, requires_grad=True), torch.randn(8)),
     "# functional layer_norm on NHWC view", True),
    (softmax_on_transpose, lambda: (torch.randn(2, 6, 10),), "# softmax over a transposed view", False),
    (group_norm_on_transpose, lambda: (torch.randn(2, 4, 6, 7), torch.randn(4), torch.randn(4)),
     "# group_norm on a spatial transpose", False),
    (rms_on_transpose, lambda: (torch.randn(6, 2, 8), torch.randn(8)), "# rms_norm on a batch-first transpose", False),
]


@pytest.mark.parametrize("fn,make,marker,again", POSITIVE, ids=[p[0].__name__ for p in POSITIVE])
def test_positive_right_line_bytes_confirmed(fn, make, marker, again):
    inputs = make()
    result = check(fn, inputs, select="FXL203")
    [f] = _fxl203(result.report)
    assert (f.file, f.line, f.bytes) == (HERE, _line(marker), inputs[0].numel() * 4)
    assert (f.details["backward_bytes"] == inputs[0].numel() * 4) == again
    result.assert_all_confirmed()
    result.assert_no_unexplained()


def test_softmax_fix_applies_softmax_before_the_permute():
    x = torch.randn(2, 6, 10)
    [f] = _fxl203(fxlint.lint(softmax_on_transpose, (x,)))
    assert "x.softmax(dim=1).transpose(1, 2)" in f.fix
    fixed = lambda x: x.softmax(dim=1).transpose(1, 2)  # noqa: E731
    assert torch.allclose(fixed(x), softmax_on_transpose(x))
    assert fxlint.audit(fixed, (x,)).copies == []


def test_layer_norm_before_a_permute_that_keeps_the_last_dim():
    x, w, b = torch.randn(6, 2, 8), torch.randn(8), torch.randn(8)

    def f(x):
        return F.layer_norm(x.transpose(0, 1), (8,), w, b)

    [finding] = _fxl203(fxlint.lint(f, (x,)))
    assert "layer_norm(x).transpose(0, 1)" in finding.fix
    fixed = lambda x: F.layer_norm(x, (8,), w, b).transpose(0, 1)  # noqa: E731
    assert torch.allclose(fixed(x), f(x))
    assert fxlint.audit(fixed, (x,)).copies == []


class ConvThenNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(self.conv(x).permute(0, 2, 3, 1))


def test_convnext_fix_channels_last_makes_the_permute_contiguous():
    m, x = ConvThenNorm(), torch.randn(2, 8, 6, 6)
    [f] = _fxl203(fxlint.lint(m, (x,)))
    assert "channels_last" in f.fix
    m_cl, x_cl = ConvThenNorm().to(memory_format=torch.channels_last), x.contiguous(memory_format=torch.channels_last)
    assert _fxl203(fxlint.lint(m_cl, (x_cl,))) == []
    # no copy left at the norm, forward or backward (the conv's own channels_last weight-gradient
    # conversion is FXL202's business)
    audit = fxlint.audit(m_cl, (x_cl,), train=True)
    assert [c for c in audit.copies if c.avoidable and "layer_norm" in " ".join(c.chain)] == []
    assert [c for c in audit.copies if c.avoidable and c.module_path == "norm"] == []


NEGATIVE = [
    ("layer_norm on contiguous", lambda x: F.layer_norm(x, (10,)), (torch.randn(2, 6, 10),)),
    ("softmax(-1) on contiguous", lambda x: x.softmax(-1), (torch.randn(2, 6, 10),)),
    ("softmax over a middle dim", lambda x: x.softmax(1), (torch.randn(2, 6, 10),)),
    ("group_norm on channels_last", lambda x: F.group_norm(x, 2),
     (torch.randn(2, 4, 6, 6).contiguous(memory_format=torch.channels_last),)),
    ("batch_norm float32 on a transpose", lambda x: F.batch_norm(x.transpose(2, 3), None, None, training=True),
     (torch.randn(2, 4, 6, 7),)),
    ("rms_norm on a step slice", lambda x: F.rms_norm(x[..., ::2], (5,)), (torch.randn(2, 6, 10),)),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    assert _fxl203(fxlint.lint(fn, inputs)) == []
    assert [c for c in fxlint.audit(fn, inputs).copies if c.avoidable and c.top_op != "aten::slice"] == []


def test_module_spelling_and_export():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(8)

        def forward(self, x):
            return self.norm(x.permute(0, 2, 1))  # LayerNorm module on a permute

    x = torch.randn(2, 8, 5)
    for target in (Block(), torch.export.export(Block(), (x,))):
        [f] = _fxl203(fxlint.lint(target, (x,)))
        assert (f.line, f.bytes) == (_line("# LayerNorm module on a permute"), x.numel() * 4)


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text, no negative reported."""
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL203")
    assert reported_lines(out, "FXL203") == set(marked_lines("FXL203", "positive")) and "# negative" not in out
    assert out.count("FXL203 ") == 6
    assert out == snapshot


def test_fixture_copies_are_confirmed_by_the_runtime():
    """What the snapshot claims is what the profiler sees: every finding confirmed, no copy unexplained."""
    from tests.rule_snapshots import load_fixture

    model, inputs = load_fixture("FXL203").make()
    report = fxlint.lint(model, inputs, select="FXL203", config=False, confirm=True)
    assert report.findings and all(f.status == "confirmed" for f in report.findings), report
    assert report.unexplained == []

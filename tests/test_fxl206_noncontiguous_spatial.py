"""FXL206 noncontiguous-spatial: pooling and F.unfold inputs the CPU kernel copies, checked against the runtime,
with the channel-slice fix verified."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fxlint
from fxlint.runtime.oracle import check
from tests.conftest import line_of

HERE = __file__


def _fxl206(report):
    return [f for f in report.findings if f.code == "FXL206"]


def pool_channel_slice(x):
    return F.avg_pool2d(x[:, :4], 2)  # pool a channel slice


def unfold_transposed(x):
    return F.unfold(x.transpose(2, 3), 3)  # unfold a transpose


@pytest.mark.parametrize("fn,marker", [(pool_channel_slice, "# pool a channel slice"),
                                       (unfold_transposed, "# unfold a transpose")])
def test_positive_right_line_bytes_confirmed(fn, marker):
    x = torch.randn(2, 8, 6, 6)
    result = check(fn, (x,), select="FXL206")
    [f] = _fxl206(result.report)
    nbytes = (x[:, :4] if fn is pool_channel_slice else x).numel() * 4
    assert (f.file, f.line, f.bytes) == (HERE, line_of(HERE, marker), nbytes)
    result.assert_all_confirmed()
    result.assert_no_unexplained()


def test_channel_slice_fix_pools_first_and_copies_nothing():
    x = torch.randn(2, 8, 6, 6)
    [f] = _fxl206(fxlint.lint(pool_channel_slice, (x,)))
    assert "slice the result's channels afterwards" in f.fix
    fixed = lambda x: F.avg_pool2d(x, 2)[:, :4]  # noqa: E731
    assert torch.allclose(fixed(x), pool_channel_slice(x))
    assert _fxl206(fxlint.lint(fixed, (x,))) == []
    assert [c for c in fxlint.audit(fixed, (x,)).copies if c.avoidable] == []


def test_tensor_unfold_is_still_a_view():
    x = torch.randn(2, 8, 6, 6)
    report = fxlint.lint(lambda x: x.unfold(2, 2, 2).sum(), (x,))
    assert _fxl206(report) == []


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL206")
    assert reported_lines(out, "FXL206") == set(marked_lines("FXL206", "positive")) and "# negative" not in out
    assert out == snapshot


def test_fixture_copies_are_confirmed_by_the_runtime():
    from tests.rule_snapshots import load_fixture

    model, inputs = load_fixture("FXL206").make()
    report = fxlint.lint(model, inputs, select="FXL206", config=False, confirm=True)
    assert report.findings and all(f.status == "confirmed" for f in report.findings), report


# --------------------------------------------------------------------------- upsampling: measured on this machine


def upsample_nchw(x):
    return F.interpolate(x, size=(16, 16), mode="bilinear", align_corners=False)  # upsample NCHW


def upsample_nearest(x):
    return F.interpolate(x, scale_factor=2, mode="nearest")  # nearest NCHW


def _avoidable_at(audit, line):
    return sum(c.bytes for c in audit.at(HERE, line) if c.avoidable and c.phase == "forward")


@pytest.mark.parametrize("fn,marker", [(upsample_nchw, "# upsample NCHW"), (upsample_nearest, "# nearest NCHW")])
def test_upsample_of_nchw_is_measured_and_agrees_with_the_runtime(fn, marker):
    """Whether nearest/bilinear upsampling copies an NCHW input (and its result) is the CPU kernel's
    vectorised path: the lint measures it (probe) and must agree with the profiled run on this machine,
    whichever way it goes; a channels_last input is the fix and copies nothing."""
    line = line_of(HERE, marker)
    x = torch.randn(2, 4, 8, 8)
    report = fxlint.lint(fn, (x,), select="FXL206", config=False, confirm=True)
    runtime = _avoidable_at(fxlint.audit(fn, (x,)), line)
    found = _fxl206(report)
    if runtime == 0:  # this CPU's kernel reads NCHW in place: nothing to report
        assert found == []
        return
    [f] = found
    assert (f.file, f.line) == (HERE, line)
    assert f.bytes == runtime and f.status == "confirmed"
    assert f.details["measured"] and "measured on this machine" in f.message
    assert "channels_last" in f.fix
    # the fix: a channels_last input is taken as it is (same values), and nothing is copied
    cl = x.contiguous(memory_format=torch.channels_last)
    assert torch.allclose(fn(cl), fn(x), atol=1e-6)
    assert _fxl206(fxlint.lint(fn, (cl,), select="FXL206", config=False)) == []
    assert _avoidable_at(fxlint.audit(fn, (cl,)), line) == 0


def test_upsample_without_probe_stays_unknown():
    x = torch.randn(2, 4, 8, 8)
    report = fxlint.lint(upsample_nchw, (x,), select="FXL206", config=False, probe=False)
    assert _fxl206(report) == []


def upsample_1x1(x):
    return F.interpolate(x, size=(4, 4), mode="bilinear", align_corners=False)  # upsample a 1x1 map


def test_upsample_of_a_1x1_map_is_a_broadcast():
    """A (N, C, 1, 1) input is NCHW and channels_last alike: where this CPU's kernel still copies the
    result back, the lint says so (measured) and the fix is an expand, which gives the same values."""
    x = torch.randn(2, 8, 1, 1)
    line = line_of(HERE, "# upsample a 1x1 map")
    report = fxlint.lint(upsample_1x1, (x,), select="FXL206", config=False, confirm=True)
    runtime = _avoidable_at(fxlint.audit(upsample_1x1, (x,)), line)
    found = _fxl206(report)
    if runtime == 0:
        assert found == []
    else:
        [f] = found
        assert (f.line, f.bytes, f.status) == (line, runtime, "confirmed")
        assert "expand(-1, -1, H, W)" in f.fix and f.details["measured"]
    assert torch.allclose(upsample_1x1(x), x.expand(-1, -1, 4, 4))


class _Modules(torch.nn.Module):
    """The module spellings, as ``symbolic_trace`` keeps them (``call_module`` nodes)."""

    def __init__(self):
        super().__init__()
        self.unfold = torch.nn.Unfold(3, padding=1, stride=2)
        self.pool = torch.nn.AvgPool2d(2)
        self.adaptive = torch.nn.AdaptiveAvgPool2d(3)

    def forward(self, x, ok):
        v = x.permute(0, 3, 1, 2)
        return self.unfold(v), self.pool(v[:, :4]), self.adaptive(v[..., ::2]), self.unfold(ok), self.pool(ok)


def test_module_spellings_under_symbolic_trace():
    """nn.Unfold, nn.AvgPool2d and nn.AdaptiveAvgPool2d as call_module nodes are the same kernels as their
    functions: the strided inputs are reported (confirmed by the runtime), the contiguous ones are not."""
    gm = torch.fx.symbolic_trace(_Modules().eval())
    x, ok = torch.randn(2, 6, 6, 8), torch.randn(2, 8, 6, 6)
    report = fxlint.lint(gm, (x, ok), select="FXL206", config=False, confirm=True)
    found = _fxl206(report)
    assert sorted(f.details["kernel"] for f in found) == ["adaptive_avg_pool2d", "avg_pool2d", "im2col"], found
    assert all(f.status == "confirmed" for f in found)
    assert {f.bytes for f in found if f.details["kernel"] == "im2col"} == {x.numel() * 4}

"""FXL205 pad-copy: constant pads copy their input (a zero-width pad too), checked against the runtime;
the drop-zero-pad rewrite keeps outputs and gradients."""

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


def _fxl205(report):
    return [f for f in report.findings if f.code == "FXL205"]


def window_pad(x):
    H, W = x.shape[1], x.shape[2]
    pad_b, pad_r = (4 - H % 4) % 4, (4 - W % 4) % 4
    return F.pad(x, (0, 0, 0, pad_r, 0, pad_b)) * 2  # window pad of zero widths


def real_pad(x):
    return F.pad(x, (1, 2)) + 1  # a real pad of the last dim


def crop(x):
    return F.pad(x, (-1, -1)) + 1  # a crop through F.pad


def pad_permuted(x):
    return F.pad(x.permute(0, 3, 1, 2), (1, 1, 1, 1)) + 1  # a pad of a permuted view


def reflect_transposed(x):
    return F.pad(x.transpose(1, 2), (2, 2), mode="reflect") + 1  # reflect pad of a transposed view


def replicate_channel_slice(x):
    return F.pad(x[:, :3], (1, 1, 1, 1), mode="replicate") + 1  # replicate pad of a channel slice


POSITIVE = [
    (window_pad, (2, 8, 8, 4), "# window pad of zero widths", "warning", "pads nothing"),
    (real_pad, (2, 3, 5), "# a real pad of the last dim", "info", "new, larger tensor"),
    (crop, (2, 3, 5), "# a crop through F.pad", "warning", "only crops"),
    (pad_permuted, (2, 6, 6, 4), "# a pad of a permuted view", "info", "new, larger tensor"),
    (reflect_transposed, (2, 16, 8), "# reflect pad of a transposed view", "warning", "before padding"),
    (replicate_channel_slice, (2, 6, 5, 5), "# replicate pad of a channel slice", "warning", "before padding"),
]


@pytest.mark.parametrize("fn,shape,marker,severity,words", POSITIVE, ids=[p[0].__name__ for p in POSITIVE])
def test_positive_right_line_bytes_severity_confirmed(fn, shape, marker, severity, words):
    x = torch.randn(*shape)
    result = check(fn, (x,), select="FXL205")
    [f] = _fxl205(result.report)
    kept = {crop: x.numel() * 4 * (shape[-1] - 2) // shape[-1],
            replicate_channel_slice: x[:, :3].numel() * 4}.get(fn, x.numel() * 4)
    assert (f.file, f.line, f.bytes, f.severity.value) == (HERE, _line(marker), kept, severity)
    assert words in f.message
    result.assert_all_confirmed()
    result.assert_no_unexplained()


def test_backward_copy_counted_when_the_input_requires_grad():
    x = torch.randn(2, 3, 5, requires_grad=True)
    [f] = _fxl205(fxlint.lint(real_pad, (x,)))
    assert f.details["backward_copied"] == x.numel() * 4 and f.backward_bytes == x.numel() * 4
    audit = fxlint.audit(real_pad, (x,), train=True)
    assert sum(c.bytes for c in audit.copies if c.phase == "backward" and c.top_op != "aten::sum") >= x.numel() * 4


def test_symmetric_pad_before_a_conv_suggests_the_conv_padding_and_it_is_right():
    conv = nn.Conv2d(4, 5, 3)
    x = torch.randn(2, 4, 7, 7)

    def f(x):
        return conv(F.pad(x, (1, 1, 2, 2)))

    [finding] = _fxl205(fxlint.lint(f, (x,)))
    assert "padding=(2, 1)" in finding.fix
    fixed = nn.Conv2d(4, 5, 3, padding=(2, 1))
    fixed.load_state_dict(conv.state_dict())
    assert torch.allclose(fixed(x), f(x), atol=1e-6)
    assert [c for c in fxlint.audit(fixed, (x,)).copies if c.avoidable] == []


def test_zero_pad_fix_guarding_the_pad_copies_nothing():
    x = torch.randn(2, 8, 8, 4)

    def guarded(x):
        H, W = x.shape[1], x.shape[2]
        pad_b, pad_r = (4 - H % 4) % 4, (4 - W % 4) % 4
        if pad_r or pad_b:
            x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
        return x * 2

    assert torch.equal(guarded(x), window_pad(x))
    assert _fxl205(fxlint.lint(guarded, (x,))) == []
    assert [c for c in fxlint.audit(guarded, (x,)).copies if c.avoidable] == []


def test_strided_reflect_pad_names_the_view_and_the_operand_order_fix_removes_the_copy():
    lin = nn.Linear(8, 8)
    x, residual = torch.randn(2, 16, 8), torch.randn(2, 8, 16)

    def block(x, residual):
        out = lin(x).transpose(1, 2) + residual  # laid out like its first operand
        return F.pad(out, (1, 1), mode="reflect")

    def fixed(x, residual):
        out = residual + lin(x).transpose(1, 2)
        return F.pad(out, (1, 1), mode="reflect")

    [f] = _fxl205(fxlint.lint(block, (x, residual)))
    assert f.details["kind"] == "strided" and f.details["swap_operands"] is True
    assert f.details["strides"] == [128, 1, 8] or tuple(f.details["strides"]) == (128, 1, 8)
    assert "put the contiguous `residual` first (the op commutes)" in f.fix
    with torch.no_grad():
        assert torch.equal(block(x, residual), fixed(x, residual))
        assert _fxl205(fxlint.lint(fixed, (x, residual))) == []
        assert [c for c in fxlint.audit(block, (x, residual)).copies if c.avoidable]
        assert [c for c in fxlint.audit(fixed, (x, residual)).copies if c.avoidable] == []


def test_reflect_pad_of_a_transpose_says_which_view_made_it():
    [f] = _fxl205(fxlint.lint(reflect_transposed, (torch.randn(2, 16, 8),)))
    assert "(made by `.transpose(1, 2)` at line" in f.message and ".transpose(1, 2)" in f.fix
    assert f.details["swap_operands"] is False


NEGATIVE = [
    ("reflect pad", lambda x: F.pad(x, (1, 1, 1, 1), mode="reflect") + 1, (torch.randn(2, 3, 5, 5),)),
    ("replicate pad", lambda x: F.pad(x, (1, 1), mode="replicate") + 1, (torch.randn(2, 3, 5),)),
    ("reflect pad, channels_last", lambda x: F.pad(x.permute(0, 3, 1, 2), (1, 1, 1, 1), mode="reflect") + 1,
     (torch.randn(2, 5, 5, 3),)),
    ("replicate pad, channels_last 3-d", lambda x: F.pad(x.permute(0, 4, 1, 2, 3), (1, 1, 1, 1, 1, 1),
                                                         mode="replicate") + 1, (torch.randn(1, 3, 4, 4, 2),)),
    ("circular pad of a transpose (the copies are the pad)",
     lambda x: F.pad(x.transpose(1, 2), (1, 1), mode="circular") + 1, (torch.randn(2, 6, 3),)),
    ("conv padding", lambda x: F.conv2d(x, torch.randn(4, 3, 3, 3), padding=1), (torch.randn(2, 3, 5, 5),)),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    assert _fxl205(fxlint.lint(fn, inputs)) == []


class WindowPad(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        H, W = x.shape[1], x.shape[2]
        pad_b, pad_r = (4 - H % 4) % 4, (4 - W % 4) % 4
        x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
        return self.proj(x)


def test_compile_rewrite_drops_the_zero_pad_with_equal_outputs_and_gradients():
    torch._dynamo.reset()
    m, x = WindowPad(), torch.randn(2, 8, 8, 4, requires_grad=True)
    with fxlint.collect() as s:
        out = torch.compile(m, backend="fxlint", options={"rewrite": True, "inner": "eager"})(x)
    [applied] = [a for a in s.applied if a.code == "FXL205"]
    assert applied.name == "drop-zero-pad" and applied.bytes_saved == x.numel() * 4
    ref_x = x.detach().clone().requires_grad_()
    ref = m(ref_x)
    assert torch.allclose(out, ref)
    out.sum().backward()
    ref.sum().backward()
    assert torch.allclose(x.grad, ref_x.grad)


def test_rewrite_lists_pads_it_cannot_drop_with_the_reason():
    torch._dynamo.reset()
    res = fxlint.rewrite(lambda x: F.pad(x, (1, 1)) + 1, (torch.randn(2, 3),))
    [skipped] = [s for s in res.skipped if s.code == "FXL205"]
    assert "not all zero" in skipped.reason and res.applied == []


def test_rewrite_keeps_a_zero_pad_whose_result_is_returned():
    torch._dynamo.reset()
    with fxlint.collect() as s:
        torch.compile(lambda x: F.pad(x, (0, 0)), backend="fxlint",
                      options={"rewrite": True, "inner": "eager"})(torch.randn(2, 3))
    [skipped] = [k for k in s.skipped if k.code == "FXL205"]
    assert "returned" in skipped.reason


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text, no negative reported."""
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL205")
    assert reported_lines(out, "FXL205") == set(marked_lines("FXL205", "positive")) and "# negative" not in out
    assert out == snapshot


def test_fixture_copies_are_confirmed_by_the_runtime():
    from tests.rule_snapshots import load_fixture

    model, inputs = load_fixture("FXL205").make()
    report = fxlint.lint(model, inputs, select="FXL205", config=False, confirm=True)
    assert report.findings and all(f.status == "confirmed" for f in report.findings), report


def test_no_operand_swap_is_offered_where_the_op_does_not_commute():
    x, res = torch.randn(2, 8, 16), torch.randn(2, 16, 8)

    def where_first(x, res):  # the condition has to stay first
        return F.pad(torch.where(x.transpose(1, 2) > 0, res, 0.0), (1, 1), mode="replicate")

    def minus(x, res):
        return F.pad(x.transpose(1, 2) - res, (1, 1), mode="reflect")

    for fn in (where_first, minus):
        [f] = _fxl205(fxlint.lint(fn, (x, res)))
        assert f.details["kind"] == "strided" and f.details["swap_operands"] is False, fn.__name__
        assert "first" not in f.fix, f.fix

"""FXL101 contiguous-copy: real copies only, severity by what the copy buys, bytes confirmed by the audit."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fxlint
from tests.copy_helpers import Expect, check_negative, check_positive, findings

X = torch.randn(4, 8)
W = torch.randn(5, 4)


def reduced(x):
    return x.t().contiguous().sum()  # buys nothing


def elementwise_then_reduced(x):
    h = x.transpose(0, 1).contiguous()  # buys nothing either
    return (h * 2 + 1).mean()


def flattened(x):
    return x.t().contiguous().view(-1)  # needed by the view


def before_a_kernel(x, w):
    return F.linear(x.t().contiguous(), w)  # maybe needed by linear


def returned(x):
    return x.t().contiguous()  # the caller may need it


def loop(x):
    acc = x.new_zeros(32)
    for i in range(3):
        acc = acc + x.t().contiguous().view(-1) * i  # same data, three copies
    return acc


def to_channels_last(x):
    return x.contiguous(memory_format=torch.channels_last) + 1  # NCHW -> NHWC


def expanded_then_viewed(x):
    return x[:1].expand(4, 8).contiguous().view(-1)  # a materialised broadcast the view needs


def shuffle(x):
    n, c, h, w = x.shape
    y = x.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous()  # the shuffle's copy
    return y.view(n, c, h, w)


POSITIVE = [
    ("reduction only", reduced, (X,), [Expect("# buys nothing", 128, "warning")]),
    ("elementwise then reduction", elementwise_then_reduced, (X,), [Expect("# buys nothing either", 128, "warning")]),
    ("needed by a view", flattened, (X,), [Expect("# needed by the view", 128, "info")]),
    ("before a kernel", before_a_kernel, (X, W), [Expect("# maybe needed by linear", 128, "info")]),
    ("returned", returned, (X,), [Expect("# the caller may need it", 128, "info")]),
    ("same data in a loop", loop, (X,), [Expect("# same data, three copies", 3 * 128, "warning")]),
    ("channels_last format", to_channels_last, (torch.randn(2, 3, 4, 4),), [Expect("# NCHW -> NHWC", 384, "info")]),
    ("expanded input", expanded_then_viewed, (X,), [Expect("# a materialised broadcast", 128, "info")]),
    ("channel shuffle", shuffle, (torch.randn(2, 8, 4, 4),), [Expect("# the shuffle's copy", 1024, "info")]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    check_positive(fn, inputs, "FXL101", expected)


NEGATIVE = [
    ("already contiguous (FXL108)", lambda x: x.contiguous() + 1, (X,)),
    ("contiguous after a split view", lambda x: x.view(2, 2, 8).contiguous() + 1, (X,)),
    ("NHWC permuted into conv2d (FXL204)",
     lambda b, w: F.conv2d(b.permute(0, 3, 1, 2).contiguous(), w), (torch.randn(2, 6, 6, 3), torch.randn(4, 3, 3, 3))),
    ("expand then contiguous into a broadcast (FXL104)", lambda x: x + x[:1].expand(4, 8).contiguous(), (X,)),
    ("size-1 dims make any stride contiguous", lambda x: x.view(4, 1, 8).transpose(0, 1).contiguous() + 1, (X,)),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    check_negative(fn, inputs, "FXL101")


def test_messages_say_what_how_much_why_and_the_fix():
    [f] = findings(fxlint.lint(reduced, (X,), select="FXL101"), "FXL101")
    assert "copies 128 B per call" in f.message and "`.t()`" in f.message
    assert "nothing after it needs contiguous memory" in f.message
    assert f.fix.startswith("drop `.contiguous()`") and f.details["verdict"] == "agnostic"
    [g] = findings(fxlint.lint(flattened, (X,), select="FXL101"), "FXL101")
    assert "cannot view the original layout" in g.message and g.details["needed_by"]


def test_channel_shuffle_pays_its_copy_again_in_backward():
    """Measured: the gradient comes back transposed, and the split view's backward must copy it."""
    x = torch.randn(2, 8, 4, 4, requires_grad=True)
    [f] = findings(fxlint.lint(shuffle, (x,), select="FXL101"), "FXL101")
    assert f.details["backward_bytes"] == x.numel() * 4 and "backward pays it again" in f.message
    audit = fxlint.audit(shuffle, (x,), train=True)
    bwd = [c for c in audit.copies if c.phase == "backward" and c.grad_fn == "ViewBackward0"]
    assert [c.bytes for c in bwd] == [f.details["backward_bytes"]]
    assert bwd[0].line == f.line  # the split view is on the same line here
    # no gradient, no backward cost
    [g] = findings(fxlint.lint(shuffle, (x.detach(),), select="FXL101"), "FXL101")
    assert g.details["backward_bytes"] == 0 and "backward" not in g.message


def test_dynamic_shapes_give_a_formula_not_a_guess():
    x = torch.randn(6, 8)
    torch._dynamo.mark_dynamic(x, 0)
    [f] = findings(fxlint.lint(reduced, (x,), select="FXL101"), "FXL101")
    assert f.bytes is None and f.bytes_expr is not None and "32" in f.bytes_expr


class Reduced(torch.nn.Module):
    def forward(self, x):
        return x.t().contiguous().sum()  # decomposed: a clone


def test_decomposed_export_graph_reports_the_clone_contiguous_copy():
    """run_decompositions() turns .contiguous() (and a copying reshape) into clone(contiguous_format)."""
    from tests.copy_helpers import line_with

    ep = torch.export.export(Reduced(), (X,)).run_decompositions()
    report = fxlint.lint(ep, (X,), select="FXL1", confirm=True)
    [f] = report.findings
    assert f.code == "FXL101" and f.bytes == 128 and f.line == line_with(Reduced(), "# decomposed: a clone")
    assert f.status == "confirmed" and "decomposed graph" in f.message


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text (info where the copy may be needed); no
    negative reported."""
    from tests.rule_snapshots import rule_output

    out = rule_output("FXL101")
    assert out.count("FXL101 warning") == 3 and out.count("FXL101 info") == 6 and "negative" not in out
    for block in out.strip().split("\n\n"):  # the positives marked info are the ones reported as info
        assert (" info " in block.splitlines()[0]) == ("positive (info)" in block), block
    assert out == snapshot


def test_a_backward_copy_in_another_module_is_claimed_there_and_confirmed():
    """The `.contiguous()`'s gradient comes back transposed to a `linear` in another module, whose backward copies
    it: FXL101 says so with that line (`backward_sites`), and the runtime's backward copy there backs the claim."""
    import inspect

    from fxlint.runtime.confirm import _backward_hits
    from tests.fixtures.backward_site import Block, Proj

    x = torch.randn(2, 8, 16)
    rep = fxlint.lint(Block(), (x,), train=True, select=["FXL101"], config=False)
    [f] = rep.findings
    src, start = inspect.getsourcelines(Proj.forward)
    lin_line = start + next(i for i, t in enumerate(src) if "the linear whose backward copies" in t)
    assert f.backward_bytes == x.numel() * 4
    assert [line for _, line in f.backward_sites] == [lin_line]
    assert f"`linear` at line {lin_line} must copy it" in f.message
    audit = fxlint.audit(Block(), (x,), train=True)
    hits = _backward_hits(f, audit, set())
    assert [c.line for c in hits] == [lin_line] and sum(c.bytes for c in hits) == f.backward_bytes

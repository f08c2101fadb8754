"""FXL102 reshape-copy: reshape/flatten/ravel/nn.Flatten that copy, and the views that do not."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from tests.conftest import line_of
from tests.copy_helpers import Expect, check_negative, check_positive, findings

X = torch.randn(4, 8)
NHWC = torch.randn(2, 4, 4, 3)


def t_reshape(x):
    return x.t().reshape(-1)  # the seed's x.t().view(-1), made to work


def flatten_transposed(x):
    return torch.flatten(x.transpose(0, 1))  # flatten copies here


def mT_reshape_as(x, y):
    return x.mT.reshape_as(y)  # reshape_as spelling


def nhwc_flatten(b):
    return b.permute(0, 3, 1, 2).reshape(b.shape[0], -1)  # merges C with H


def ravel_strided(x):
    return x[::2].ravel()  # ravel copies, reshape would not


def only_summed(x):
    return x.t().reshape(-1).sum()  # flatten then reduce


def loop(x):
    out = []
    for _ in range(3):
        out.append(x.t().reshape(-1))  # same data each time
    return torch.stack(out)


def expanded(x):
    return x[:1].expand(4, 8).reshape(32) + 1  # materialises the broadcast


class Flat(nn.Module):
    def __init__(self):
        super().__init__()
        self.flat = nn.Flatten()

    def forward(self, x):
        return self.flat(x.permute(0, 2, 1))  # nn.Flatten on a permuted input


POSITIVE = [
    ("x.t().reshape(-1)", t_reshape, (X,), [Expect("# the seed's", 128, "info")]),
    ("torch.flatten", flatten_transposed, (X,), [Expect("# flatten copies here", 128, "info")]),
    ("mT.reshape_as", mT_reshape_as, (X, torch.empty(32)), [Expect("# reshape_as spelling", 128, "info")]),
    ("NHWC permute then reshape", nhwc_flatten, (NHWC,), [Expect("# merges C with H", 384, "info")]),
    ("ravel on a step slice", ravel_strided, (torch.randn(12),), [Expect("# ravel copies", 24, "warning")]),
    ("only reduced", only_summed, (X,), [Expect("# flatten then reduce", 128, "warning")]),
    ("hot loop", loop, (X,), [Expect("# same data each time", 384, "warning")]),
    ("expanded input", expanded, (X,), [Expect("# materialises the broadcast", 128, "info")]),
    ("nn.Flatten", Flat(), (torch.randn(2, 3, 4),), [Expect("# nn.Flatten on", 96, "info")]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    check_positive(fn, inputs, "FXL102", expected)


NEGATIVE = [
    ("flatten of a contiguous tensor (the seed says it always copies)", lambda x: x.flatten() + 1, (X,)),
    ("flatten(1) of a contiguous 3-D tensor", lambda x: x.view(2, 2, 8).flatten(1) + 1, (X,)),
    ("split of a permuted dim", lambda x: x.view(2, 2, 8).permute(2, 0, 1).reshape(2, 4, 2, 2) + 1, (X,)),
    ("same shape after permute", lambda b: b.permute(0, 3, 1, 2).reshape(-1, 3, 4, 4) + 1, (NHWC,)),
    ("reshape of a step slice to its own length", lambda x: x[::2].reshape(-1) + 1, (torch.randn(12),)),
    ("ravel of a contiguous tensor", lambda x: x.ravel() + 1, (X,)),
    ("view after permute, same shape (seed 3)", lambda b: b.permute(0, 3, 1, 2).view(-1, 3, 4, 4) + 1, (NHWC,)),
    ("merging dims that stay adjacent", lambda x: x.view(2, 2, 8)[:, :, :4].reshape(4, 4) + 1, (X,)),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    check_negative(fn, inputs, "FXL102")
    assert [c for c in fxlint.audit(fn, inputs).copies if c.avoidable] == []  # the runtime agrees: no copy


def test_message_names_the_dims_the_layout_and_the_view_failure():
    [f] = findings(fxlint.lint(nhwc_flatten, (NHWC,), select="FXL102"), "FXL102")
    assert "merges dims 1 and 2" in f.message and "strides (48, 1, 12, 3)" in f.message
    assert "`.permute(0, 3, 1, 2)`" in f.message and "`.view()` would raise" in f.message
    assert f.details["merge"] == (1, 2) and f.details["shape"] == (2, 48)


def test_a_view_that_cannot_work_is_explained_when_the_capture_fails():
    with pytest.raises(fxlint.ModelError) as info:
        fxlint.lint(lambda b: b.permute(0, 3, 1, 2).view(2, -1), (NHWC,))
    first = str(info.value).splitlines()[0]
    assert "a `.view()` cannot express its new shape" in first and "merge dims 1 and 2" in first
    assert "`.reshape()`" in first


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    """Every positive of the fixture reported with its exact text (info where the element order costs the
    copy); no negative reported."""
    from tests.rule_snapshots import rule_output

    out = rule_output("FXL102")
    assert out.count("FXL102 warning") == 3 and out.count("FXL102 info") == 6 and "negative" not in out
    for block in out.strip().split("\n\n"):  # the positives marked info are the ones reported as info
        assert (" info " in block.splitlines()[0]) == ("positive (info)" in block), block
    assert out == snapshot


def _pre_pool(x):
    return x.reshape(-1, 4, 4, x.shape[-1]).permute(0, 3, 1, 2).contiguous()  # two copies on one line


class _PoolAttention(nn.Module):
    """timm MViT-v2's ``reshape_pre_pool``, called for q, k and v: one line, three reshape copies and
    three ``.contiguous()`` copies per call."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 48)

    def forward(self, x):
        q, k, v = self.qkv(x).reshape(2, 16, 3, 2, 8).permute(2, 0, 3, 1, 4).unbind(0)
        return _pre_pool(q) + _pre_pool(k) + _pre_pool(v)


def test_several_copies_on_one_line_are_confirmed_one_by_one():
    """The finding stands for three reshape copies; the audit sees those and three others (the
    contiguous) on the same line: each predicted copy is matched, not the line's total."""
    with torch.no_grad():
        report = fxlint.lint(_PoolAttention().eval(), (torch.randn(2, 16, 16),), select="FXL102", config=False,
                             confirm=True)
    [f] = findings(report, "FXL102")
    assert f.copy_sizes == (2 * 2 * 16 * 8 * 4,) * 3 and f.bytes == 3 * 2 * 2 * 16 * 8 * 4
    assert f.status == "confirmed", f


class _Unpatchify(nn.Module):
    """A diffusion transformer's output: tokens (B, h*w, p*p*c) back to an image (B, c, h*p, w*p) through a
    one-operand einsum that permutes (DiT, PixArt, SD3)."""

    def __init__(self, project_first: bool = False):
        super().__init__()
        self.proj, self.project_first = nn.Linear(16, 16), project_first

    def forward(self, tokens):  # (2, 16, 16): h = w = 4, p = 2, c = 4
        x = self.proj(tokens)
        x = x.reshape(2, 4, 4, 2, 2, 4)  # the view whose backward copies
        x = torch.einsum("nhwpqc->nchpwq", x)
        if self.project_first:
            return x * 2.0
        return x.reshape(2, 4, 8, 8)  # the unpatchify copy


def test_unpatchify_pays_the_copy_again_in_the_backward_at_the_first_reshape():
    from fxlint.runtime.confirm import _backward_hits

    here = __file__
    x = torch.randn(2, 16, 16)
    rep = fxlint.lint(_Unpatchify(), (x,), train=True, select=["FXL102"], config=False)
    [f] = rep.findings
    first = line_of(here, "# the view whose backward copies")
    assert f.line == line_of(here, "# the unpatchify copy") and f.bytes == x.numel() * 4
    assert 'torch.einsum("nhwpqc->nchpwq", ...)' in f.message
    assert f.backward_bytes == x.numel() * 4 and [line for _, line in f.backward_sites] == [first]
    assert f"`.reshape(2, 4, 4, 2, 2, 4)` at line {first} must copy it" in f.message
    hits = _backward_hits(f, fxlint.audit(_Unpatchify(), (x,), train=True), set())
    assert [c.line for c in hits] == [first] and sum(c.bytes for c in hits) == f.backward_bytes
    with torch.no_grad():  # inference: no backward, no claim
        [g] = findings(fxlint.lint(_Unpatchify().eval(), (x,), config=False), "FXL102")
    assert g.backward_bytes == 0 and "backward" not in g.message


def test_a_head_merge_after_a_matmul_pays_nothing_again():
    """`attn.transpose(1, 2).reshape(B, T, C)`: the gradient of the copy reaches the matmul, which takes any
    layout: no view above the permute, no second copy."""

    class Merge(nn.Module):
        def forward(self, q, k):
            attn = (q @ k.transpose(-1, -2)).softmax(-1) @ k
            return attn.transpose(1, 2).reshape(2, 8, 16)

    q = torch.randn(2, 2, 8, 8, requires_grad=True)
    [f] = findings(fxlint.lint(Merge(), (q, q.detach().clone().requires_grad_()), train=True, config=False),
                   "FXL102")
    assert f.backward_bytes == 0 and f.backward_sites == ()

"""FXL121 gradient-layout-copy: the gradient-layout rules of ``fxlint.passes._grad_layout`` against autograd, the
rule's positives and negatives against the audit, and the fixes' values and gradients."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import fxlint
from fxlint.capture.graphs import capture
from fxlint.passes._grad_layout import grad_layouts
from tests.conftest import line_of
from tests.copy_helpers import findings
from tests.rule_snapshots import lint_fixture, marked_lines, reported_lines, rule_output

B, N, H, D = 2, 16, 4, 8


def _transposed_back(y, transposed):
    """``y``, or ``y`` in (B, N, H, D) order made contiguous: the graph's output then gets a contiguous gradient and
    ``y`` gets it transposed."""
    return y.transpose(1, 2).contiguous() if transposed else y


def _real_grad_strides(fn, transposed):
    x = torch.randn(B, H, N, D, requires_grad=True)
    seen = {}
    h = x * 1.0
    h.register_hook(lambda g: seen.update(s=tuple(g.stride())) or None)
    out = _transposed_back(fn(h), transposed)
    (out * torch.randn(out.shape)).sum().backward()
    return seen["s"]


def _written_into(h):
    """``h`` written into a larger buffer by a subscript of plain slices (MViTv2's ``attn[:, :, 1:, 1:] = ...``)."""
    base = torch.zeros(B, H, N + 1, D + 2) * 1.0
    base[:, :, 1:, 1:-1] = h
    return base


_OPS = {
    "mul": lambda h: h * 2, "add": lambda h: h + torch.ones(B, H, N, D), "neg": lambda h: -h, "exp": torch.exp,
    "gelu": F.gelu, "silu": F.silu, "to": lambda h: h.double(), "clone": lambda h: h.clone(),
    "softmax": lambda h: h.softmax(-1), "layer_norm": lambda h: F.layer_norm(h, (D,)), "relu": torch.relu,
    "where": lambda h: torch.where(h > 0, h, 0.0), "masked_fill": lambda h: h.masked_fill(h > 0, 0.0),
    "matmul": lambda h: h @ torch.ones(D, D), "cat": lambda h: torch.cat([h, h * 2], -1),
    "chunk": lambda h: torch.cat(h.chunk(2, -1)[::-1], -1), "slice": lambda h: h[..., 1:],
    "einsum": lambda h: torch.einsum("bhid,bhjd->bhij", h, h * 2),
    "sdpa": lambda h: F.scaled_dot_product_attention(h, h * 2, h * 3),
    "dropout, p=0": lambda h: F.dropout(h, 0.0, True), "dropout, eval": lambda h: F.dropout(h, 0.5, False),
    "cat, first dim": lambda h: torch.cat([h, h * 2], 0), "mean": lambda h: h.mean(-1, keepdim=True), "mean, dim 3": lambda h: h.mean(3),
    "mean, dims 1 and 3": lambda h: h.mean((1, 3), keepdim=True),
    "avg_pool2d": lambda h: F.avg_pool2d(h, 2), "max_pool2d": lambda h: F.max_pool2d(h, 2),
    "adaptive_avg_pool2d, 1": lambda h: F.adaptive_avg_pool2d(h, 1),
    "adaptive_avg_pool2d, 2": lambda h: F.adaptive_avg_pool2d(h, 2),
    "pad, constant": lambda h: F.pad(h, (1, 2)), "pad, width 0": lambda h: F.pad(h, (0, 0)),
    "pad, 2-D": lambda h: F.pad(h, (1, 1, 2, 0), value=1.0),
    "pad, reflect": lambda h: F.pad(h, (1, 2, 2, 1), mode="reflect"),
    "pad, replicate": lambda h: F.pad(h, (1, 1, 1, 1), mode="replicate"),
    "expand, a new dim": lambda h: h[:, :, None].expand(B, H, 3, N, D).reshape(B, H * 3, N, D),
    "expand, the batch": lambda h: h[:1].expand(B, H, N, D),
    "pow": lambda h: h.pow(2), "sigmoid": torch.sigmoid, "tanh": torch.tanh, "rsqrt": lambda h: (h * h + 1).rsqrt(),
    "sqrt": lambda h: (h * h + 1).sqrt(), "glu": lambda h: F.glu(h, -1),
    "interpolate, nearest": lambda h: F.interpolate(h, scale_factor=2.0),
    "interpolate, bilinear": lambda h: F.interpolate(h, scale_factor=2.0, mode="bilinear"),
    "interpolate, bicubic": lambda h: F.interpolate(h, size=(20, 12), mode="bicubic"),
    "normalize": lambda h: F.normalize(h, dim=-1), "normalize, dim 1": lambda h: F.normalize(h, dim=1),
    "conv of a permuted view": lambda h: F.conv2d(h.permute(0, 2, 1, 3), torch.ones(3, N, 1, 1)),
    "setitem": lambda h: _written_into(h), "setitem, read after": lambda h: _written_into(h).softmax(-1),
    "interpolate, channels-last gradient": lambda h: F.interpolate(h, scale_factor=2.0, mode="bilinear").permute(
        0, 2, 3, 1).contiguous().permute(0, 3, 1, 2),
    "sdpa, a learned mask": lambda h: F.scaled_dot_product_attention(h, h * 2, h * 3, attn_mask=h[:1, :, :, :1] * h[
        :1, :, :, :1].transpose(-1, -2)),
}


class _Probe(nn.Module):
    def __init__(self, fn, transposed):
        super().__init__()
        self.fn, self.transposed = fn, transposed

    def forward(self, x):
        return _transposed_back(self.fn(x * 1.0), self.transposed)


@pytest.mark.parametrize("op", sorted(_OPS))
def test_each_rule_gives_the_layout_autograd_hands_back(op):
    """Each op's rule, for a gradient coming back to the op transposed ((B, N, H, D)-major) and contiguous: the
    strides the model predicts for the op's input are the strides autograd hands it."""
    for transposed in (True, False):
        real = _real_grad_strides(_OPS[op], transposed)
        view = capture(_Probe(_OPS[op], transposed), (torch.randn(B, H, N, D, requires_grad=True),)).views[0]
        [h] = [n for n in view.nodes if n.op == "mul" and n.inputs and n.inputs[0].kind == "input"]
        got = grad_layouts(view).at(h)
        assert got is not None and tuple(got.strides) == real, (op, transposed, got, real)


def test_positives_in_training_confirmed_by_the_backward_copy():
    got = findings(lint_fixture("FXL121", train=True, confirm=True), "FXL121")
    assert {f.line for f in got} == set(marked_lines("FXL121", "positive"))
    for f in got:
        assert f.status == "confirmed" and f.bytes == 0 and f.backward_bytes == 2 * 8 * 8 * 4, f.message
    fixes = {f.details["cause"]: f.details["fix"] for f in got}
    assert fixes == {"einsum": "attention", "matmul": "attention", "chunk": "before-permute"}


def test_inference_is_silent():
    assert findings(lint_fixture("FXL121", train=False), "FXL121") == []


class _Attention(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.q, self.k, self.v, self.o = (nn.Linear(H * D, H * D) for _ in range(4))

    @staticmethod
    def rotate(t):
        t1, t2 = t.chunk(2, dim=-1)
        return torch.cat((-t2, t1), dim=-1)

    def forward(self, x, cos):
        split = [p(x).view(B, N, H, D) for p in (self.q, self.k, self.v)]
        if self.kind == "rotary before":
            c = cos.transpose(1, 2)
            split[0], split[1] = (t * c + self.rotate(t) * c for t in split[:2])
        q, k, v = (t.transpose(1, 2) for t in split)
        if self.kind == "rotary after":
            q, k = (t * cos + self.rotate(t) * cos for t in (q, k))
        if self.kind == "matmul":
            o = (q @ k.transpose(-1, -2) / D ** 0.5).softmax(-1) @ v
        else:
            o = F.scaled_dot_product_attention(q, k, v)
        return self.o(o.transpose(1, 2).reshape(B, N, H * D))


def _view_copies(model, inputs):
    audit = fxlint.audit(model, inputs, train=True)
    return sorted(c.line for c in audit.copies if c.phase == "backward" and c.avoidable and c.file == __file__
                  and c.op == "aten::clone")


def test_the_fixes_remove_the_backward_copies_and_keep_values_and_gradients():
    torch.manual_seed(0)
    x, cos = torch.randn(B, N, H * D), torch.randn(1, 1, N, D)
    models = {k: _Attention(k) for k in ("matmul", "sdpa", "rotary after", "rotary before")}
    for m in models.values():
        m.load_state_dict(models["matmul"].state_dict())
    assert _view_copies(models["matmul"], (x, cos)) and not _view_copies(models["sdpa"], (x, cos))
    assert _view_copies(models["rotary after"], (x, cos)) and not _view_copies(models["rotary before"], (x, cos))
    for slow, fast in (("matmul", "sdpa"), ("rotary after", "rotary before")):
        outs = []
        for k in (slow, fast):
            models[k].zero_grad()
            y = models[k](x, cos)
            (y * torch.linspace(-1, 1, y.numel()).view_as(y)).sum().backward()
            outs.append((y.detach(), models[k].q.weight.grad.clone()))
        torch.testing.assert_close(outs[0][0], outs[1][0], rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(outs[0][1], outs[1][1], rtol=1e-4, atol=1e-5)
    got = findings(fxlint.lint(models["matmul"].train(), (x, cos), train=True, confirm=True, select="FXL121",
                               config=False), "FXL121")
    assert got and all(f.status == "confirmed" for f in got)
    for k in ("sdpa", "rotary before"):
        assert findings(fxlint.lint(models[k].train(), (x, cos), train=True, select="FXL121", config=False),
                        "FXL121") == []


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    out = rule_output("FXL121")
    assert reported_lines(out, "FXL121") == set(marked_lines("FXL121", "positive"))
    assert out == snapshot


class _BiasAttention(torch.nn.Module):
    """Heads split with view + transpose, attended by SDPA with a learned position bias (T5, WavLM): the mask needs
    a gradient, so SDPA runs its math path, whose q, k and v gradients come back contiguous."""

    def __init__(self, learned: bool):
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(32, 32) for _ in range(3))
        self.bias = torch.nn.Parameter(torch.randn(1, 4, 16, 16), requires_grad=learned)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q(x).view(b, n, 4, 8).transpose(1, 2)  # the head split: q
        k = self.k(x).view(b, n, 4, 8).transpose(1, 2)  # the head split: k
        v = self.v(x).view(b, n, 4, 8).transpose(1, 2)  # the head split: v
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.bias)
        return (out * torch.randn(out.shape, generator=torch.Generator().manual_seed(0))).sum()


_BIAS_Q = line_of(__file__, "# the head split: q")
_BIAS_K = line_of(__file__, "# the head split: k")
_BIAS_V = line_of(__file__, "# the head split: v")


@pytest.mark.parametrize("learned", [True, False])
def test_sdpa_math_path_with_a_learned_bias_is_reported_and_confirmed(learned):
    import fxlint

    model = _BiasAttention(learned).train()
    report = fxlint.lint(model, (torch.randn(2, 16, 32),), train=True, select="FXL121", confirm=True, config=False)
    got = [f for f in report.findings if f.code == "FXL121"]
    if not learned:  # the flash kernel: gradients in the views' layout, no copy
        assert got == []
        return
    # the math path's matmuls write q's and v's gradients contiguous (copied at their views), k's in the order
    # k.transpose(-2, -1) is read: the view takes it as it is, the linear's backward folds it to 2-D by a copy
    assert {f.line for f in got} == {_BIAS_Q, _BIAS_K, _BIAS_V}
    assert {f.violation.kind for f in got if f.line == _BIAS_K} == {"linear"}
    assert all(f.status == "confirmed" and f.backward_bytes == 2 * 16 * 32 * 4 for f in got)
    assert all("math path" in f.fix for f in got)


class _ConvAttentionBlock(torch.nn.Module):
    """diffusers' attention block: NCHW features flattened to (B, H*W, C) tokens, a linear over the channels, and
    the tokens transposed back to (B, C, H, W) and added to the NCHW residual for the next norm or conv, whose
    backward hands the gradient back in (B, C, H, W) order: strided for the linear, whose backward folds it to 2-D
    by a copy."""

    def __init__(self, norm: str):
        super().__init__()
        self.to_out = torch.nn.Linear(8, 8)
        self.after = {"conv": torch.nn.Conv2d(8, 8, 3, padding=1), "group_norm": torch.nn.GroupNorm(2, 8),
                      "batch_norm": torch.nn.BatchNorm2d(8)}[norm]
        self.register_buffer("weight", torch.randn(2, 8, 4, 4, generator=torch.Generator().manual_seed(0)))

    def forward(self, x):
        b, c, h, w = x.shape
        t = x.flatten(2).transpose(1, 2)
        t = self.to_out(t)  # the linear over the channels
        y = x + t.transpose(1, 2).reshape(b, c, h, w)  # the residual: NCHW
        return (self.after(y) * self.weight).sum()


@pytest.mark.parametrize("after", ["conv", "group_norm", "batch_norm"])
def test_a_conv_or_norm_after_the_transpose_back_lays_out_the_linear_s_gradient(after):
    import fxlint

    x = torch.randn(2, 8, 4, 4, requires_grad=True)
    # FXL201 owns the forward copy of the linear's strided input: selected, so that FXL121's "nothing copied in
    # the forward" is not judged against it
    report = fxlint.lint(_ConvAttentionBlock(after).train(), (x,), train=True, select=["FXL121", "FXL201"],
                         confirm=True, config=False)
    got = [f for f in report.findings if f.code == "FXL121"]
    assert [f.line for f in got] == [line_of(__file__, "# the linear over the channels")]
    [f] = got
    assert f.status == "confirmed" and f.backward_bytes == x.numel() * 4
    assert f.violation.fix == "layout-op" and "1x1 conv" in f.fix



class _SkipJoin(torch.nn.Module):
    """A UNet up block's attention: the linear over the channels, transposed back to NCHW, then joined with the skip
    connection by `cat` along the channels (``back=True``); or a transformer's class token joined along the tokens
    after the linear (``back=False``), whose piece of the gradient keeps the tokens' order."""

    def __init__(self, back: bool):
        super().__init__()
        self.to_out, self.back = torch.nn.Linear(8, 8), back
        self.conv = torch.nn.Conv2d(16, 8, 1)
        self.register_buffer("weight", torch.randn(2, 17, 8, generator=torch.Generator().manual_seed(0)))

    def forward(self, x, skip):
        b, c, h, w = x.shape
        t = self.to_out(x.flatten(2).transpose(1, 2))  # the joined linear
        if self.back:
            y = torch.cat([t.transpose(1, 2).reshape(b, c, h, w), skip], 1)  # the transpose back, then the join
            return self.conv(y).sum()
        y = torch.cat([skip.flatten(2).transpose(1, 2)[:, :1, :8], t], 1)
        return y * self.weight


@pytest.mark.parametrize("back", [True, False])
def test_a_cat_after_the_transpose_back_names_the_transpose_and_a_piece_in_order_is_not_reported(back):
    import fxlint

    x, skip = torch.randn(2, 8, 4, 4, requires_grad=True), torch.randn(2, 8, 4, 4)
    report = fxlint.lint(_SkipJoin(back).train(), (x, skip), train=True, select=["FXL121", "FXL201"],
                         confirm=True, config=False)
    got = [f for f in report.findings if f.code == "FXL121"]
    if not back:  # the model sees the fold's copy, and no order of the linear's input avoids it
        from fxlint.capture.graphs import capture

        view = capture(_SkipJoin(back).train(), (x, skip)).views[0]
        assert [c.grad.made_by.op for c in grad_layouts(view).copies] == ["cat"]
        assert got == []
        return
    [f] = got
    assert f.line == line_of(__file__, "# the joined linear")
    assert f.status == "confirmed" and f.backward_bytes == x.numel() * 4
    assert f.violation.fix == "permuted-back" and f.violation.cause == ".transpose(1, 2)", f.message
    assert f"line {line_of(__file__, '# the transpose back, then the join')}" in f.message


def _in_layout(h, layout):
    """``h`` made in one layout and viewed as (B, C, H, W) or (B, C, L) in another (diffusers' attention output,
    transposed back to NCHW and added to the residual, reaches the next ResNet block's GroupNorm channels-last)."""
    if layout == "channels_last view":
        return h.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    if layout == "transposed 3-D":
        return h.flatten(2).transpose(1, 2).contiguous().transpose(1, 2)
    return h * 1.0


class _NormOfLayout(nn.Module):
    def __init__(self, layout):
        super().__init__()
        self.layout = layout

    def forward(self, x):
        return F.group_norm(_in_layout(x * 1.0, self.layout) * 2.0, 2)


@pytest.mark.parametrize("layout", ["channels_last view", "transposed 3-D", "contiguous"])
def test_group_norm_hands_back_its_input_s_gradient_as_autograd_does(layout):
    x = torch.randn(2, 8, 4, 4, requires_grad=True)
    view = capture(_NormOfLayout(layout), (x,)).views[0]
    [gn] = [n for n in view.nodes if n.op == "group_norm"]
    seen = {}
    inp = _in_layout(x.detach() * 1.0, layout).requires_grad_() * 2.0
    inp.register_hook(lambda g: seen.update(s=tuple(g.stride())) or None)
    out = F.group_norm(inp, 2)
    out.backward(torch.randn(out.shape))
    got = grad_layouts(view).at(gn.input)
    assert got is not None and tuple(got.strides) == seen["s"], (layout, got, seen)


class _GroupedQuery(torch.nn.Module):
    """Grouped-query attention: 4 query heads, 2 key/value heads repeated (``repeat``: transformers' `repeat_kv`
    after the transpose), repeated before the transpose (``before``), or read by SDPA as they are (``gqa``)."""

    def __init__(self, mode: str):
        super().__init__()
        self.q, self.k, self.v = torch.nn.Linear(32, 32), torch.nn.Linear(32, 16), torch.nn.Linear(32, 16)
        self.mode = mode

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q(x).view(b, n, 4, 8).transpose(1, 2)
        if self.mode == "before":
            k = self.k(x).view(b, n, 2, 1, 8).expand(b, n, 2, 2, 8).reshape(b, n, 4, 8).transpose(1, 2)
            v = self.v(x).view(b, n, 2, 1, 8).expand(b, n, 2, 2, 8).reshape(b, n, 4, 8).transpose(1, 2)
            return F.scaled_dot_product_attention(q, k, v)
        k = self.k(x).view(b, n, 2, 8).transpose(1, 2)  # the repeated key heads
        v = self.v(x).view(b, n, 2, 8).transpose(1, 2)  # the repeated value heads
        if self.mode == "gqa":
            return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        k = k[:, :, None].expand(b, 2, 2, n, 8).reshape(b, 4, n, 8)
        v = v[:, :, None].expand(b, 2, 2, n, 8).reshape(b, 4, n, 8)
        return F.scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize("mode", ["repeat", "before", "gqa"])
def test_repeated_key_value_heads_copy_their_gradient_at_the_views_and_the_fixes_do_not(mode):
    import fxlint

    x = torch.randn(2, 16, 32)
    report = fxlint.lint(_GroupedQuery(mode).train(), (x,), train=True, select="FXL121", confirm=True, config=False)
    got = [f for f in report.findings if f.code == "FXL121"]
    copies = _view_copies(_GroupedQuery(mode).train(), (x,))
    if mode != "repeat":
        assert got == [] and copies == []
        return
    lines = [line_of(__file__, "# the repeated key heads"), line_of(__file__, "# the repeated value heads")]
    assert sorted(f.line for f in got) == lines == copies
    assert all(f.status == "confirmed" and f.backward_bytes == 2 * 16 * 16 * 4 for f in got)
    assert all(f.violation.fix == "expand" and "enable_gqa=True" in f.fix for f in got)

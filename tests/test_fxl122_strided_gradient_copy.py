"""FXL122 strided-gradient-copy: layer_norm and group_norm copy an output gradient that comes back strided in their
backward; each finding confirmed by the runtime, the negatives silent."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.profiler import profile

from tests.copy_helpers import findings, profiled_bytes
from tests.rule_snapshots import lint_fixture, marked_lines, reported_lines, rule_output


def _backward_contiguous_bytes(fn, x, grad_perm):
    """Bytes ``aten::contiguous`` copies in the backward of ``fn(x)`` given a gradient laid out by ``grad_perm``."""
    x = x.detach().requires_grad_()
    y = fn(x)
    inv = [grad_perm.index(i) for i in range(y.ndim)]
    g = torch.randn([y.shape[i] for i in grad_perm]).permute(*inv)
    with profile(record_shapes=True) as p:
        y.backward(g)
    return profiled_bytes(p, ("aten::contiguous",)).get("aten::contiguous", 0)


@pytest.mark.parametrize("name,fn,shape,perm,copies", [
    ("layer_norm, gradient transposed", lambda x: F.layer_norm(x, (16,)), (2, 8, 16), [0, 2, 1], True),
    ("layer_norm, gradient contiguous", lambda x: F.layer_norm(x, (16,)), (2, 8, 16), [0, 1, 2], False),
    ("group_norm, gradient NHWC", lambda x: F.group_norm(x, 2), (2, 4, 6, 6), [0, 2, 3, 1], True),
    ("group_norm, gradient contiguous", lambda x: F.group_norm(x, 2), (2, 4, 6, 6), [0, 1, 2, 3], False),
])
def test_the_premise_against_the_profiler(name, fn, shape, perm, copies):
    x = torch.randn(shape)
    assert (_backward_contiguous_bytes(fn, x, perm) == x.numel() * 4) == copies
    if not copies:
        assert _backward_contiguous_bytes(fn, x, perm) == 0


def test_positives_confirmed_and_negatives_silent():
    got = findings(lint_fixture("FXL122", train=True, confirm=True), "FXL122")
    assert {f.line for f in got} == set(marked_lines("FXL122", "positive"))
    assert all(f.status == "confirmed" and f.bytes == 0 and f.backward_bytes > 0 for f in got)


def test_inference_is_silent():
    assert findings(lint_fixture("FXL122", train=False), "FXL122") == []


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    out = rule_output("FXL122")
    assert reported_lines(out, "FXL122") == set(marked_lines("FXL122", "positive"))
    assert out == snapshot


_SWEEP_OPS = {
    "interpolate nearest": lambda h: F.interpolate(h, scale_factor=2.0),
    "interpolate bilinear": lambda h: F.interpolate(h, scale_factor=2.0, mode="bilinear"),
    "interpolate bicubic": lambda h: F.interpolate(h, size=(10, 10), mode="bicubic"),
    "max_pool2d": lambda h: F.max_pool2d(h, 2),
    "avg_pool2d": lambda h: F.avg_pool2d(h, 2),
    "pad reflect": lambda h: F.pad(h, (1, 1, 1, 1), mode="reflect"),
    "pad replicate": lambda h: F.pad(h, (1, 2, 1, 0), mode="replicate"),
}


class _OpThenConsumer(torch.nn.Module):
    """``op`` on (2, 4, 6, 6) in an input layout, then a consumer that decides its output gradient's layout: a
    linear over the channels of the NHWC permute (a channels-last gradient), over H of a permute (a permuted one),
    or an elementwise scale (contiguous)."""

    def __init__(self, op, consumer, channels_last):
        super().__init__()
        self.op, self.consumer, self.channels_last = _SWEEP_OPS[op], consumer, channels_last
        self.lin_c, self.lin_w = torch.nn.Linear(4, 4), torch.nn.Linear(1, 1)

    def forward(self, x):
        h = x * 1.0
        if self.channels_last:
            h = h.contiguous(memory_format=torch.channels_last)
        y = self.op(h)
        if self.consumer == "channels-last":
            return self.lin_c(y.permute(0, 2, 3, 1))
        if self.consumer == "permuted":
            return F.linear(y.permute(0, 2, 1, 3), torch.ones(y.shape[3], y.shape[3]))
        return y * 2.0


@pytest.mark.parametrize("op", sorted(_SWEEP_OPS))
@pytest.mark.parametrize("consumer", ["channels-last", "permuted", "contiguous"])
@pytest.mark.parametrize("channels_last", [False, True])
def test_prediction_matches_the_profiled_backward_copy(op, consumer, channels_last):
    """Each op, input layout and output-gradient layout: FXL122 reports at the op's line exactly where the profiled
    backward copies the op's output gradient there, with those bytes."""
    import fxlint

    model, x = _OpThenConsumer(op, consumer, channels_last), torch.randn(2, 4, 6, 6, requires_grad=True)
    line = _SWEEP_OPS[op].__code__.co_firstlineno  # the user's innermost line: the lambda's
    out_bytes = _SWEEP_OPS[op](x.detach()).numel() * 4
    audit = fxlint.audit(model, (x,), train=True)
    real = sum(c.bytes for c in audit.copies if c.phase == "backward" and c.line == line and c.file == __file__
               and c.op == "aten::contiguous" and c.bytes == out_bytes)  # the output gradient's copy
    got = [f for f in findings(fxlint.lint(model, (x,), train=True, select="FXL122", confirm=True, config=False),
                               "FXL122") if f.line == line]
    if not got:
        # not predicted: a copy there is one the rule does not claim (a layout it does not model), never one it
        # models and missed
        modelled = not (channels_last and op.startswith(("max_pool", "avg_pool", "pad")))
        assert real == 0 or not modelled, (op, consumer, channels_last, real)
        return
    [f] = got
    assert f.status == "confirmed" and f.backward_bytes == real > 0, (f.message, real)


class _NormThenOut(torch.nn.Module):
    """A sequence model's last norm on (T, B, C), the output returned batch first (torchaudio's Conformer)."""

    def __init__(self, transposed):
        super().__init__()
        self.norm, self.transposed = torch.nn.LayerNorm(16), transposed

    def forward(self, x):  # (T, B, C)
        y = self.norm(x * 2.0)  # the last norm
        return y.transpose(0, 1) if self.transposed else y  # the output, batch first


@pytest.mark.parametrize("transposed", [True, False])
def test_a_gradient_from_the_output_returned_transposed_names_the_transpose(transposed):
    import fxlint
    from tests.conftest import line_of

    x = torch.randn(12, 2, 16, requires_grad=True)
    got = findings(fxlint.lint(_NormThenOut(transposed), (x,), train=True, select="FXL122", confirm=True,
                               config=False), "FXL122")
    if not transposed:
        assert got == []
        return
    [f] = got
    assert f.line == line_of(__file__, "# the last norm") and f.status == "confirmed"
    assert f.backward_bytes == x.numel() * 4
    assert f"`transpose` at line {line_of(__file__, '# the output, batch first')}" in f.message


class _NormToConv(torch.nn.Module):
    """pvt_v2's stage end: a LayerNorm on (B, H*W, C), laid out NCHW by `.permute(...).contiguous()` for a conv, whose
    NCHW gradient comes back through the copy permuted: the norm's backward copies it (the copy's finding claims
    it)."""

    def __init__(self):
        super().__init__()
        self.norm, self.conv = torch.nn.LayerNorm(16), torch.nn.Conv2d(16, 8, 1)

    def forward(self, x):  # (B, H*W, C)
        h = self.norm(x * 2.0)  # the stage norm
        h = h.reshape(2, 8, 8, 16).permute(0, 3, 1, 2).contiguous()  # the layout copy
        return self.conv(h)


def test_a_norm_s_gradient_copy_through_a_layout_copy_is_that_copy_s_claim():
    import fxlint
    from tests.conftest import line_of

    from fxlint.runtime.confirm import _backward_hits

    x = torch.randn(2, 64, 16, requires_grad=True)
    rep = fxlint.lint(_NormToConv(), (x,), train=True, config=False, select=["FXL101", "FXL122", "FXL204"])
    norm = line_of(__file__, "# the stage norm")
    assert [f.code for f in rep.findings] == ["FXL204"]  # FXL122 leaves it to the copy's finding
    [f] = rep.findings
    assert f.line == line_of(__file__, "# the layout copy") and [line for _, line in f.backward_sites] == [norm]
    assert f.backward_bytes == x.numel() * 4 and f"`layer_norm` at line {norm} must copy it" in f.message
    hits = _backward_hits(f, fxlint.audit(_NormToConv(), (x,), train=True), set())
    assert [c.line for c in hits] == [norm] and sum(c.bytes for c in hits) == f.backward_bytes

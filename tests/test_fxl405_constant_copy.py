"""FXL405 constant-copy: a copy whose value depends only on weights, buffers, constants and the input's
shape (a clone of a bias built from parameters, a mask built by subscript writes), every call."""

from __future__ import annotations

import torch

import fxlint
from tests.copy_helpers import findings, line_with
from tests.rule_snapshots import lint_fixture, load_fixture

FIXTURE = load_fixture("FXL405")
FWD = FIXTURE.Fixture.forward


def _lint(train: bool, confirm: bool = False):
    return lint_fixture("FXL405", train=train, confirm=confirm)


def test_positives_in_inference_confirmed_once_per_line_with_their_bytes():
    got = sorted(findings(_lint(False, confirm=True), "FXL405"), key=lambda f: f.line)
    assert [f.line for f in got] == [line_with(FWD, "# positive: built from parameters"),
                                     line_with(FWD, "# positive: the mask"),
                                     line_with(FWD, "# positive: a repeat")]
    # the cloned bias (48 floats); the nine writes of the 8x8 mask, one finding (its 64 floats); (8, 16) floats
    assert [f.bytes for f in got] == [48 * 4, 8 * 8 * 4, 8 * 16 * 4]
    assert all(f.status == "confirmed" and f.severity.value == "info" for f in got), [f.status for f in got]
    clone, mask, repeat = got
    assert clone.details["depends"] == ("weights",) and "if the code that builds it reads one" in clone.fix
    assert mask.details["depends"] == ("shape",) and mask.details["writes"] == 9 and "keyed on the input's shape" in mask.fix
    assert repeat.details["depends"] == ("buffers",)


def test_in_training_only_the_values_without_parameters():
    got = findings(_lint(True, confirm=True), "FXL405")
    assert sorted(f.line for f in got) == [line_with(FWD, "# positive: the mask"), line_with(FWD, "# positive: a repeat")]
    assert all(f.status == "confirmed" for f in got)


def test_a_value_from_the_input_is_not_constant():
    """The same clone and copy_ are reported with a parameter as their source, not with the input's data
    mixed in (a parameter scaled by the input; the input copied into a fresh tensor)."""

    class M(torch.nn.Module):
        def __init__(self, data: bool):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(4, 4))
            self.data = data

        def forward(self, x):
            src = self.w * x.sum() if self.data else self.w * 2
            a = src.clone()
            b = torch.zeros(4, 4)
            b[:2].copy_(x[:2] if self.data else self.w[:2])
            return a.sum() + b.sum() + x.sum()

    def lines(data: bool) -> list[str]:
        with torch.no_grad():
            rep = fxlint.lint(M(data).eval(), (torch.randn(4, 4),), select="FXL405", confirm=True, config=False)
        got = findings(rep, "FXL405")
        assert all(f.status == "confirmed" for f in got), [f.status for f in got]
        return sorted(f.source.strip() for f in got)

    assert lines(False) == ["a = src.clone()", "b[:2].copy_(x[:2] if self.data else self.w[:2])"]
    assert lines(True) == []


class _Mask(torch.nn.Module):
    """Swin's shifted-window mask: built every call (``cached=False``) or, the fix, once per size."""

    def __init__(self, cached: bool):
        super().__init__()
        self.cached = cached
        self.masks: dict[tuple[int, int], torch.Tensor] = {}

    @staticmethod
    def build(x: torch.Tensor) -> torch.Tensor:
        mask = x.new_zeros(x.shape[-2:])
        for k, h in enumerate(((0, -4), (-4, -2), (-2, None))):
            mask[h[0]:h[1], :] = k  # write
        return mask

    def keep(self, x: torch.Tensor) -> None:
        """Build the mask for this input size once, outside the forward (after ``eval()``)."""
        self.masks[tuple(x.shape[-2:])] = self.build(x)

    def forward(self, x):
        mask = self.masks[tuple(x.shape[-2:])] if self.cached else self.build(x)
        return x + mask


def test_the_fix_keeps_the_values_and_removes_the_finding_and_the_copies():
    x = torch.randn(2, 8, 8)
    slow, fast = _Mask(cached=False).eval(), _Mask(cached=True).eval()
    fast.keep(x)
    with torch.no_grad():
        before = fxlint.lint(slow, (x,), select="FXL405", confirm=True, config=False)
        after = fxlint.lint(fast, (x,), select="FXL405", confirm=True, config=False)
        audit = fxlint.audit(fast, (x,))
    [f] = findings(before, "FXL405")
    assert f.status == "confirmed" and f.details["writes"] == 3 and "# write" in f.source
    assert findings(after, "FXL405") == [] and not [c for c in audit.copies if c.avoidable]
    torch.testing.assert_close(slow(x), fast(x))


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    from tests.rule_snapshots import marked_lines, reported_lines, rule_output

    out = rule_output("FXL405", train=False)
    assert reported_lines(out, "FXL405") == set(marked_lines("FXL405", "positive"))
    assert out == snapshot


def test_dropout_is_the_identity_in_eval_and_random_in_training():
    """``nn.Dropout`` of a buffer (DeBERTa's relative embeddings): fixed in eval, not in training."""

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("rel", torch.randn(4, 8))
            self.drop = torch.nn.Dropout(0.1)

        def forward(self, x):
            return x @ self.drop(self.rel).repeat(2, 1).T

    def reported(train: bool) -> list[str]:
        model = M().train(train)
        with torch.no_grad():
            rep = fxlint.lint(model, (torch.randn(2, 8),), select="FXL405", confirm=True, config=False)
        return [f.status for f in findings(rep, "FXL405")]

    assert reported(False) == ["confirmed"]
    assert reported(True) == []


class _State(torch.nn.Module):
    """Copies of values that are NOT the same every call, each written as a model would."""

    def __init__(self, case: str):
        super().__init__()
        self.case = case
        self.register_buffer("step", torch.zeros(4))
        self.register_buffer("base", torch.zeros(4, 4))

    def forward(self, x):
        if self.case == "counter":  # a buffer the model updates every call (num_batches_tracked)
            self.step.add_(1)
            return x * self.step.clone()
        if self.case == "noise":  # a fresh tensor filled with random numbers in place
            n = x.new_zeros(4, 4)
            n.normal_()
            return x + n.clone()
        if self.case == "overwritten":  # a defensive clone of a buffer, then written from the input
            m = self.base.clone()
            m[:2] = x[:2]
            return m * 2
        return x * 2, self.base.clone()  # "returned": the caller gets a copy it may write


def test_state_noise_and_defensive_clones_are_not_constant():
    for case in ("counter", "noise", "overwritten", "returned"):
        with torch.no_grad():
            rep = fxlint.lint(_State(case).eval(), (torch.randn(4, 4),), select="FXL405", config=False)
        assert findings(rep, "FXL405") == [], (case, [f.message for f in findings(rep, "FXL405")])


class _TiledTable(torch.nn.Module):
    """DeBERTa's relative-position keys: a weight-only value tiled over the batch for a bmm."""

    def __init__(self):
        super().__init__()
        self.pos = torch.nn.Parameter(torch.randn(2, 6, 8))  # (heads, 2 * span, head dim)

    def forward(self, q):  # q: (batch * heads, L, head dim)
        k = self.pos.repeat(q.size(0) // 2, 1, 1)  # tile
        return torch.bmm(q, k.transpose(-1, -2))


def test_a_tile_another_rule_removes_is_left_to_it():
    """One finding per copy: FXL112 (fold the tile into the matmul) reports the repeat; FXL405 (cache it)
    does not report it too."""
    with torch.no_grad():
        rep = fxlint.lint(_TiledTable().eval(), (torch.randn(6, 5, 8),), select="FXL112,FXL405", config=False)
    assert [f.code for f in rep.findings] == ["FXL112"], [(f.code, f.message) for f in rep.findings]


def _longformer_mask(x):
    """transformers' Longformer: `extended_attention_mask[attention_mask == 2] = finfo.max`, the
    attention mask built from the shape when the caller passes none."""
    attention_mask = torch.ones(x.shape[0], x.shape[1], dtype=torch.long)
    mask = torch.zeros(x.shape[0], 1, 1, x.shape[1])[:, 0, 0, :]
    mask[attention_mask == 2] = torch.finfo(x.dtype).max  # a masked fill
    return x + mask[..., None]


def _mask_scatter(x):
    attention_mask = torch.ones(x.shape[0], x.shape[1], dtype=torch.long)
    mask = torch.zeros(x.shape[0], x.shape[1])
    mask[attention_mask == 1] = torch.arange(x.shape[0] * x.shape[1], dtype=x.dtype)  # a scatter
    return x + mask[..., None]


def test_a_scalar_written_through_a_mask_is_a_fill_not_a_copy():
    """`t[mask] = scalar` runs `index_put_` with one value broadcast into the selected elements: the
    audit records no avoidable copy on the line, and the rule is silent (it was "a subscript write ...
    copy an unknown number of bytes", confirmed by the 4-byte value tensor)."""
    x = torch.randn(2, 16, 8)
    line = line_with(_longformer_mask, "# a masked fill")
    audit = fxlint.audit(_longformer_mask, (x,))
    assert [c for c in audit.copies if c.line == line and c.avoidable] == [], audit.copies
    assert audit.ran(_longformer_mask.__code__.co_filename, line)
    assert findings(fxlint.lint(_longformer_mask, (x,), select="FXL405"), "FXL405") == []


def test_a_tensor_scattered_through_a_mask_copies_its_values():
    x = torch.randn(2, 16, 8)
    [f] = findings(fxlint.lint(_mask_scatter, (x,), select="FXL405", confirm=True), "FXL405")
    assert f.line == line_with(_mask_scatter, "# a scatter")
    assert f.bytes == 2 * 16 * 4 and f.status == "confirmed", (f.bytes, f.status)
    assert f.message.startswith("a subscript write into `mask` copies 128 B per call"), f.message


def test_the_message_agrees_with_the_number_of_writes():
    from fxlint.passes.fxl405_constant_copy import ConstantCopy

    one = ConstantCopy(op="subscript write", target="mask", depends=(), writes=1, copied=None)
    nine = ConstantCopy(op="subscript write", target="mask", depends=("shape",), writes=9, copied=256)
    assert one.message().startswith("a subscript write into `mask` copies an unknown number of bytes per call")
    assert nine.message().startswith("9 subscript writes into `mask` copy 256 B per call")


class _DiagonalKernel(torch.nn.Module):
    """A conv weight rebuilt every call from a buffer, cast with `.to(other)` (diffusers' 1-D resamplers)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("kernel", torch.tensor([0.125, 0.375, 0.375, 0.125]))

    def forward(self, h):
        weight = h.new_zeros([h.shape[1], h.shape[1], self.kernel.shape[0]])
        indices = torch.arange(h.shape[1], device=h.device)
        kernel = self.kernel.to(weight)[None, :].expand(h.shape[1], -1)
        weight[indices, indices] = kernel  # the diagonal, from the buffer
        return torch.nn.functional.conv1d(h, weight, stride=2)


def test_a_value_cast_like_another_tensor_depends_only_on_what_it_casts():
    """`self.kernel.to(weight)` reads weight's dtype and device, not its values: the weight built from the
    buffer is the same every call (it was left out: the cast looked like it read the weight being built)."""
    m, h = _DiagonalKernel(), torch.randn(2, 8, 20)
    for train in (False, True):
        m.train(train)
        with torch.set_grad_enabled(train):
            x = h.clone().requires_grad_(train)
            [f] = findings(fxlint.lint(m, (x,), select="FXL405", train=train, confirm=True), "FXL405")
        assert f.line == line_with(_DiagonalKernel.forward, "# the diagonal, from the buffer")
        assert f.bytes == 8 * 4 * 4 and f.status == "confirmed" and f.details["depends"] == ("buffers", "shape")

    def with_input_cast(h):  # a value cast like the input is still built from the buffer alone
        w = h.new_zeros(4)
        w[:] = m.kernel.to(h)
        return h.sum(-1, keepdim=True) * w

    assert findings(fxlint.lint(with_input_cast, (h,), select="FXL405"), "FXL405")

    def from_the_input(h):  # but a value taken from the input is not
        w = h.new_zeros(4)
        w[:] = h[0, 0, :4].to(m.kernel)
        return w

    assert findings(fxlint.lint(from_the_input, (h,), select="FXL405"), "FXL405") == []

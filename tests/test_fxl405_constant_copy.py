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

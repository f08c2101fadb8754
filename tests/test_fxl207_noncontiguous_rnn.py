"""FXL207 noncontiguous-rnn: nn.LSTM/GRU/RNN input sequences the CPU kernel copies, checked against the runtime,
with the time-major fix verified; the lint's capture with allow_rnn and the backend left alone."""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence

import fxlint
from fxlint.runtime.oracle import check
from tests.conftest import line_of

HERE = __file__


def _fxl207(report):
    return [f for f in report.findings if f.code == "FXL207"]


class BatchFirst(nn.Module):
    def __init__(self, cls=nn.LSTM, batch_first=True) -> None:
        super().__init__()
        self.rnn = cls(8, 16, batch_first=batch_first)

    def forward(self, x):
        y, _ = self.rnn(x)  # the rnn call
        return y


class TimeMajorView(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.GRU(8, 16)

    def forward(self, x):
        y, _ = self.rnn(x.permute(1, 0, 2))  # a permuted sequence
        return y


def test_batch_first_lstm_on_a_contiguous_input_right_line_bytes_confirmed():
    x = torch.randn(3, 7, 8)
    result = check(BatchFirst(), (x,), select="FXL207")
    [f] = _fxl207(result.report)
    assert (f.file, f.line, f.bytes) == (HERE, line_of(HERE, "# the rnn call"), x.numel() * 4)
    assert "batch_first=False" in f.fix and "(T, B, C)" in f.fix
    result.assert_all_confirmed()
    result.assert_no_unexplained()


def test_permuted_time_major_input_right_line_bytes_confirmed():
    x = torch.randn(3, 7, 8)
    result = check(TimeMajorView(), (x,), select="FXL207")
    [f] = _fxl207(result.report)
    assert (f.file, f.line, f.bytes) == (HERE, line_of(HERE, "# a permuted sequence"), x.numel() * 4)
    assert "x.permute(1, 0, 2)" in f.message and "contiguous (T, B, C)" in f.fix
    result.assert_all_confirmed()


def test_the_fix_time_major_end_to_end_copies_nothing():
    """The fix: batch_first=False on a contiguous (T, B, C) sequence - same result, no finding, no copy."""
    torch.manual_seed(0)
    bf = BatchFirst(nn.LSTM, batch_first=True)
    tm = BatchFirst(nn.LSTM, batch_first=False)
    tm.load_state_dict(bf.state_dict())
    x = torch.randn(3, 7, 8)
    t = x.transpose(0, 1).contiguous()
    assert torch.allclose(tm(t).transpose(0, 1), bf(x), atol=1e-6)
    report = fxlint.lint(tm, (t,), select="FXL207", config=False, confirm=True)
    assert _fxl207(report) == []
    assert [c for c in fxlint.audit(tm, (t,)).copies if c.avoidable] == []


def test_gru_on_a_contiguous_time_major_input_is_not_reported():
    assert _fxl207(fxlint.lint(BatchFirst(nn.GRU, batch_first=False), (torch.randn(7, 3, 8),))) == []


def test_a_packed_sequence_is_linted_without_a_finding_or_a_crash():
    class Packed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = nn.LSTM(8, 16, batch_first=True)

        def forward(self, x):
            _, (h, _) = self.rnn(pack_padded_sequence(x, torch.tensor([7, 5, 2]), batch_first=True))
            return h

    report = fxlint.lint(Packed(), (torch.randn(3, 7, 8),), select="FXL207", config=False)
    assert _fxl207(report) == []


def test_the_lint_turns_allow_rnn_on_for_its_own_capture_only():
    """The lint traces into the RNN; the user's Dynamo setting is restored, and the backend does not change it
    (under torch.compile the RNN stays a graph break unless the user sets allow_rnn)."""
    import torch._dynamo

    assert torch._dynamo.config.allow_rnn is False
    fxlint.lint(BatchFirst(), (torch.randn(3, 7, 8),), select="FXL207", config=False)
    assert torch._dynamo.config.allow_rnn is False
    torch._dynamo.reset()
    m = BatchFirst()
    x = torch.randn(3, 7, 8)
    out = torch.compile(m, backend="fxlint", options={"inner": "eager"})(x)
    assert torch.allclose(out, m(x)) and torch._dynamo.config.allow_rnn is False


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    from tests.rule_snapshots import kernel_env, marked_lines, reported_lines, rule_output

    out = rule_output("FXL207")
    assert reported_lines(out, "FXL207") == set(marked_lines("FXL207", "positive")) and "# negative" not in out
    # the kernel path named in the messages is this machine's: oneDNN's LSTM or ATen's native one
    assert out == snapshot(name=kernel_env())


def test_fixture_copies_are_confirmed_by_the_runtime():
    from tests.rule_snapshots import load_fixture

    model, inputs = load_fixture("FXL207").make()
    report = fxlint.lint(model, inputs, select="FXL207", config=False, confirm=True)
    assert report.findings and all(f.status == "confirmed" for f in report.findings), report


def test_the_audit_counts_the_kernels_input_copy_as_avoidable_and_the_rest_as_the_kernels():
    """The input copy is the caller's layout (avoidable); the bias copies of the steps stay the kernel's own."""
    x = torch.randn(3, 7, 8)
    line = line_of(HERE, "# a permuted sequence")
    copies = fxlint.audit(TimeMajorView(), (x,)).at(HERE, line)
    assert sum(c.bytes for c in copies if c.avoidable and c.phase == "forward") == x.numel() * 4
    assert any(not c.avoidable for c in copies)  # the per-step addmm bias copies

"""FXL210 istft-input-copy: torch.istft clones a spectrogram whose batch and frame dims do not fold; the layout
torch.stft returns is read as it is. Checked against the runtime; the fix gives the same signal without the
clone."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import fxlint
from tests.copy_helpers import Expect, check_negative, check_positive, findings
from tests.rule_snapshots import rule_output

WIN = torch.hann_window(32)
X = torch.randn(3, 400)


def padded(x):
    z = torch.stft(x, 32, 8, window=WIN, return_complex=True)
    z = F.pad(z, (2, 2))
    return torch.istft(z, 32, 8, window=WIN)  # pad made it (N, F, T)


def padded_fixed(x):
    z = torch.stft(x, 32, 8, window=WIN, return_complex=True)
    zt = F.pad(z.transpose(1, 2), (0, 0, 2, 2))
    return torch.istft(zt.transpose(1, 2), 32, 8, window=WIN)


def masked(z, m):
    return torch.istft(m * z, 32, 8, window=WIN)  # a contiguous mask first decides the layout


def frames_sliced(z):
    return torch.istft(z[..., :-2], 32, 8, window=WIN)  # a slice of the frames


Z = torch.randn(3, 17, 40, dtype=torch.complex64)
STFT = torch.stft(X, 32, 8, window=WIN, return_complex=True)

POSITIVE = [
    ("a padded spectrogram", padded, (X,), [Expect("# pad made it (N, F, T)", 3 * 17 * 55 * 8)]),
    ("masked by a contiguous mask", masked, (STFT, torch.rand(3, 17, 51)),
     [Expect("# a contiguous mask", 3 * 17 * 51 * 8)]),
    ("frames sliced", frames_sliced, (Z,), [Expect("# a slice of the frames", 3 * 17 * 38 * 8)]),
]


@pytest.mark.parametrize("label,fn,inputs,expected", POSITIVE, ids=[p[0] for p in POSITIVE])
def test_positive(label, fn, inputs, expected):
    [f] = check_positive(fn, inputs, "FXL210", expected)
    assert "torch.istft copies its input spectrogram" in f.message and ".transpose(1, 2)" in f.fix


NEGATIVE = [
    ("torch.stft's layout", lambda x: torch.istft(torch.stft(x, 32, 8, window=WIN, return_complex=True), 32, 8,
                                                  window=WIN), (X,)),
    ("padded in (N, T, F)", padded_fixed, (X,)),
    ("one spectrogram (2-D)", lambda z: torch.istft(z[0], 32, 8, window=WIN), (Z,)),
    ("a batch of one", lambda z: torch.istft(z[:1], 32, 8, window=WIN), (Z,)),
    ("masked, the spectrogram first (its layout wins)", lambda z, m: torch.istft(z * m, 32, 8, window=WIN),
     (STFT, torch.rand(3, 17, 51))),
]


@pytest.mark.parametrize("label,fn,inputs", NEGATIVE, ids=[n[0] for n in NEGATIVE])
def test_negative(label, fn, inputs):
    check_negative(fn, inputs, "FXL210")


def test_the_fix_gives_the_same_signal_without_the_clone():
    assert torch.allclose(padded(X), padded_fixed(X), atol=1e-5)

    def clones(fn):
        return [c for c in fxlint.audit(fn, (X,)).copies if c.avoidable and c.op == "aten::clone"]

    assert sum(c.bytes for c in clones(padded)) == 3 * 17 * 55 * 8
    assert clones(padded_fixed) == []


def test_details_name_the_layout():
    [f] = findings(fxlint.lint(padded, (X,), select="FXL210"), "FXL210")
    assert f.details["contiguous"] is True and tuple(f.details["shape"]) == (3, 17, 55)
    assert tuple(f.details["strides"]) == (17 * 55, 55, 1) and f.details["reasons"] == ["fft-batch-fold"]


def test_snapshot_of_the_whole_output_on_the_fixture(snapshot):
    assert rule_output("FXL210") == snapshot


def test_a_stepped_batch_of_stfts_layout_is_copied_and_the_fix_says_why():
    [f] = findings(fxlint.lint(lambda z: torch.istft(z[::2], 32, 8, window=WIN), (STFT,), select="FXL210",
                               confirm=True), "FXL210")
    assert f.status == "confirmed" and f.details["freq_innermost"] is True and f.details["contiguous"] is False
    assert "frequency is innermost already" in f.fix and "torch.stft's layout" not in f.fix

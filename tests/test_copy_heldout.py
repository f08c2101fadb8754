"""Held-out-style checks for the implicit-copy rules: small models written in other spellings than
the zoo (torch.reshape, torch.flatten, .type(), .to(dtype=...), torch.tile, expand_as, masked_fill,
torch.clone, torch.linspace, .to(device=...)), linted as modules (Dynamo), as torch.export programs
and as symbolic_trace graphs. The expected code must be on the right line with the right bytes,
absent from the negative models, and every copy finding must be confirmed by the runtime audit.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint.runtime.oracle import check
from tests.conftest import line_of

HERE = __file__


class SpectrogramProbe(nn.Module):
    """(B, T, F) frames, looked at as (B, F, T), flattened for a linear probe."""

    def __init__(self):
        super().__init__()
        self.probe = nn.Linear(16 * 10, 4)

    def forward(self, frames):
        spec = frames.transpose(1, 2)
        flat = torch.reshape(spec, (spec.shape[0], -1))  # heldout: torch.reshape copies
        ok = torch.flatten(frames, 1)  # heldout: contiguous flatten is a view
        return self.probe(flat) + ok.sum(1, keepdim=True)


class CastingMLP(nn.Module):
    """A down-cast for "memory", undone at once; a real mixed-precision matmul next to it."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Linear(12, 12)
        self.w = nn.Parameter(torch.randn(12, 12))

    def forward(self, x):
        h = self.inp(x)
        h = h.to(dtype=torch.bfloat16).type(torch.float32)  # heldout: bf16 round trip
        low = (x.to(torch.bfloat16) @ self.w.to(torch.bfloat16)).to(torch.float32)  # computes in bf16: fine
        return h + low


class MaskedScores(nn.Module):
    """A padding mask materialised at the scores' shape, and a bias tiled for an add."""

    def forward(self, scores, keep, bias):
        B, H, T, _ = scores.shape
        mask = keep[:, None, None, :].expand_as(scores).contiguous()  # heldout: expand_as().contiguous()
        scores = torch.where(mask == 0, -1e4, scores)
        tiled = torch.tile(bias, (B, H, 1, 1))  # heldout: torch.tile for an add
        return scores + tiled


class CloneAndRescale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        h = self.lin(x)
        saved = torch.clone(h)  # heldout: torch.clone nobody writes
        kept = h.clone()  # heldout: needed, written in place below
        kept.mul_(0.5)
        return saved + kept + h.float()  # heldout: .float() on float32


class Ramp(nn.Module):
    """A ramp built on the host, moved with .to(device=...): the arange spelling of the OCR seed."""

    def forward(self, x):
        ramp = torch.linspace(0.0, 1.0, x.shape[-1]).to(device=x.device)  # heldout: linspace moved
        return x * ramp


S = torch.randn(2, 4, 4, 4)
#: copies that are right and no finding should explain (marker of the line)
NEEDED = {"clone": ["needed, written in place below"], "casting": ["computes in bf16: fine"]}

CASES = [
    # (model factory, inputs, {code: [(marker, bytes, severity)]})
    ("spectrogram", SpectrogramProbe, (torch.randn(3, 10, 16),),
     {"FXL102": [("torch.reshape copies", 3 * 10 * 16 * 4, "info")]}),
    ("casting", CastingMLP, (torch.randn(5, 12),),
     {"FXL103": [("bf16 round trip", 5 * 12 * (2 + 4), "warning")]}),
    ("masked scores", MaskedScores, (S, (torch.rand(2, 4) > 0.3).float(), torch.randn(1, 1, 4, 4)),
     {"FXL104": [("expand_as().contiguous()", S.numel() * 4, "warning"),
                 ("torch.tile for an add", S.numel() * 4, "warning")]}),
    ("clone", CloneAndRescale, (torch.randn(6, 8),),
     {"FXL105": [("torch.clone nobody writes", 6 * 8 * 4, "warning")],
      "FXL108": [(".float() on float32", 0, "info")]}),
    ("ramp on meta", lambda: Ramp().to("meta"), (torch.randn(3, 7, device="meta"),),
     {"FXL107": [("linspace moved", 7 * 4, "warning")]}),
]


def _expected(table):
    return sorted((code, line_of(HERE, marker), nbytes, sev) for code, rows in table.items()
                  for marker, nbytes, sev in rows)


@pytest.mark.parametrize("label,factory,inputs,table", CASES, ids=[c[0] for c in CASES])
def test_module_through_dynamo(label, factory, inputs, table):
    result = check(factory(), inputs, select="FXL1")
    got = sorted((f.code, f.line, f.bytes, f.severity.value) for f in result.report.findings)
    assert got == _expected(table), [f.message for f in result.report.findings]
    result.assert_all_confirmed()
    needed = {line_of(HERE, m) for m in NEEDED.get(label, [])}
    assert [u for u in result.report.unexplained if u["line"] not in needed] == []


@pytest.mark.parametrize("label,factory,inputs,table", CASES, ids=[c[0] for c in CASES])
def test_exported_program(label, factory, inputs, table):
    ep = torch.export.export(factory(), inputs)
    report = fxlint.lint(ep, inputs, select="FXL1", confirm=True)
    got = sorted((f.code, f.line, f.bytes, f.severity.value) for f in report.findings)
    assert got == _expected(table), [f.message for f in report.findings]
    assert all(f.status == "confirmed" for f in report.findings), [(f.code, f.status) for f in report.findings]


@pytest.mark.parametrize("label,factory,inputs,table", CASES[:4], ids=[c[0] for c in CASES[:4]])
def test_symbolic_trace(label, factory, inputs, table):
    """symbolic_trace records no source lines: findings point at graph nodes (one per node, where a
    source line may hold two), with the same codes and bytes per code, and the audit of the
    GraphModule confirms them node by node."""
    gm = torch.fx.symbolic_trace(factory())
    report = fxlint.lint(gm, inputs, select="FXL1", confirm=True)
    got: dict[str, int] = {}
    for f in report.findings:
        got[f.code] = got.get(f.code, 0) + (f.bytes or 0)
    want: dict[str, int] = {}
    for c, _, b, _ in _expected(table):
        want[c] = want.get(c, 0) + b
    assert got == want, [f.message for f in report.findings]
    assert all(f.node and f.file is None for f in report.findings)
    assert all(f.status == "confirmed" for f in report.findings), [(f.code, f.node, f.status) for f in report.findings]


class Clean(nn.Module):
    """Negative controls in the same spellings: none of these copies."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.bias = nn.Parameter(torch.zeros(1, 8))

    def forward(self, x, idx):
        h = self.lin(x)
        a = torch.reshape(h, (2, -1, 8))  # splits: a view
        b = a.transpose(0, 1).reshape(-1, 2, 8)  # merges nothing across the transpose
        c = h.to(dtype=torch.float32)  # noop is FXL108 info only when spelled as a dtype; this is one
        d = h + self.bias.expand_as(h)  # expand: a view
        e = torch.index_select(h, 0, idx)  # a gather: FXL4's business, not an implicit copy
        f = h.to(device=h.device)  # device-only, no move
        return a.sum() + b.sum() + c.sum() + d.sum() + e.sum() + f.sum()


def test_negative_controls_stay_clean_at_warning_level():
    x, idx = torch.randn(4, 8), torch.tensor([0, 2])
    for target in (Clean(), torch.export.export(Clean(), (x, idx))):
        report = fxlint.lint(target, (x, idx), select="FXL1")
        assert report.at_or_above("warning") == [], [f.message for f in report.findings]
        assert {f.code for f in report.findings} <= {"FXL108"}

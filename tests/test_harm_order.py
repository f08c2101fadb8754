"""Ranked by harm, then cost: an error (a parameter that never trains) comes before any copy in every
output; times shown are the call timed without the profiler, split by the profiler's shares."""

from __future__ import annotations

import json
import logging

import torch
import torch.nn as nn

import fxlint
from fxlint import runtime
from fxlint.renderers.html import render_html
from fxlint.renderers.json import render_json


class Planted(nn.Module):
    """A detach that cuts `head` off the loss (an error in training) and a permuted matmul operand that
    is copied (a warning, 49.2 kB per call)."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(16, 16))
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x.permute(0, 2, 1, 3), self.w)
        side = self.head(y.mean((1, 2))).detach()
        return y.sum((1, 2, 3)) + side.sum(-1)


X = torch.randn(4, 32, 6, 16)


def _report(**kw):
    return fxlint.lint(Planted().train(), X, config=False, **kw)


def test_the_error_comes_first_in_text_json_and_html():
    r = _report()
    sev = {f.code: f.severity.value for f in r.findings}
    assert "error" in sev.values() and "warning" in sev.values(), sev
    err = next(f for f in r.findings if f.severity.value == "error")
    copy = max((f for f in r.findings if f.bytes), key=lambda f: f.bytes)
    assert copy.bytes > 0 and err.bytes in (None, 0)
    text = str(r)
    assert text.index(f"Fix first (1 error): ") < text.index("By rule:")
    blocks = text.split("\n\n", 1)[1]
    assert blocks.index(err.code) < blocks.index(copy.code)
    d = json.loads(render_json(r))
    assert d["findings"][0]["severity"] == "error"
    page = render_html(r)
    first = page[page.index('id="fix-first"'):]
    first = first[:first.index("</ol>")]
    assert first.index(err.code) < first.index(copy.code)
    assert "fixes an error (head.weight, head.bias train again)" in first and "saves 49.2 kB per call" in first
    assert page.index('id="fix-first"') < page.index("<h2>Summary</h2>")


def test_an_info_is_never_in_fix_first_nor_in_a_chart():
    class OnlyInfo(nn.Module):
        def forward(self, x):
            return x.contiguous() * 2  # already contiguous: FXL108-style no-op at most, never a warning

    r = fxlint.lint(OnlyInfo(), torch.randn(4, 4), config=False)
    assert all(f.severity.value == "info" for f in r.findings)
    page = render_html(r)
    assert 'id="fix-first"' not in page
    assert "<svg" not in page.split("<h2>Findings")[0] or all(
        f.code not in page.split("<h2>Findings")[0].split("<svg", 1)[1] for f in r.findings)


def test_the_backend_names_the_error_first(caplog):
    torch._dynamo.reset()
    m = Planted().train()
    compiled = torch.compile(m, backend="fxlint", options={"inner": "eager", "config": False})
    with caplog.at_level(logging.INFO, logger="fxlint"):
        compiled(X).sum().backward()
    summary = next(r.getMessage() for r in caplog.records if "first:" in r.getMessage())
    errs = [r.getMessage() for r in caplog.records if "[error]" in r.getMessage()]
    assert errs, [r.getMessage() for r in caplog.records]
    code = errs[0].split("[error]")[0].split()[-1]
    assert summary.split("first:")[1].split()[1] == code
    lines = [r.getMessage() for r in caplog.records if "] " in r.getMessage() and "fxlint: " in r.getMessage()]
    sev = [("error" if "[error]" in m else "warning" if "[warning]" in m else "info") for m in lines]
    assert sev == sorted(sev, key=["error", "warning", "info"].index)
    torch._dynamo.reset()


def test_audit_times_are_the_unprofiled_call_split_by_profiled_shares():
    a = fxlint.audit(Planted().eval(), X)
    s = a.summary()
    assert s["call_runs"] >= 1 and s["call_ns"] > 0
    assert s["profiled_call_ns"] > 0
    # every duration is the unprofiled call split by the profiled shares: the copies are a share of the call
    assert s["copy_ns"] <= s["call_ns"]
    assert sum(c.time_ns for c in a.copies) == s["copy_ns"]
    text = str(fxlint.lint(Planted().eval(), X, config=False, confirm=True))
    assert "timed without the profiler (median of" in text
    assert "measured under the profiler" not in text


def test_no_time_at_all_when_the_call_cannot_be_timed_without_the_profiler(monkeypatch):
    monkeypatch.setattr(runtime, "unprofiled_time", lambda step, **k: None)
    a = fxlint.audit(Planted().eval(), X)
    assert a.call_ns == 0 and all(c.time_ns == 0 for c in a.copies) and a.profiled_call_ns > 0
    text = str(fxlint.lint(Planted().eval(), X, config=False, confirm=True))
    assert "could not be timed without the profiler" in text


# --------------------------------------------------------------------------- what fixing a finding saves


def test_a_copy_finding_saves_its_bytes_and_a_gradient_cut_saves_none():
    r = _report()
    cut = next(f for f in r.findings if f.code == "FXL301")
    copy = next(f for f in r.findings if f.code == "FXL201")
    assert copy.saving.bytes_per_call == copy.bytes == 49152
    assert copy.saving.time_ns is None  # not measured without the audit
    assert cut.saving.bytes_per_call is None and cut.saving.bytes_per_step is None and cut.saving.time_ns is None
    assert cut.saving.gain == "head.weight, head.bias train again"  # what it gains instead: no invented bytes
    d = json.loads(render_json(r))
    saving = {f["code"]: f["saving"] for f in d["findings"]}
    assert saving["FXL201"] == {"bytes_per_call": 49152, "bytes_per_step": None, "time_ns": None, "gain": None}
    assert saving["FXL301"]["bytes_per_call"] is None
    assert {g["code"]: g["saving"]["bytes_per_call"] for g in d["groups"]} == {"FXL301": None, "FXL201": 49152}
    line = next(x for x in str(r).splitlines() if x.startswith("Fix first"))
    assert line.endswith("FXL301 detach-break, fixes an error (head.weight, head.bias train again); "
                         "tests/test_harm_order.py:28 FXL201 noncontiguous-matmul, saves 49.2 kB per call."), line


def test_the_backward_copies_count_per_training_step():
    from fxlint.findings import Saving

    s = Saving.of("FXL202", 1000, 1000, None)
    assert (s.bytes_per_call, s.bytes_per_step) == (1000, 2000)
    assert Saving.of("FXL202", 1000, 0, None).bytes_per_step is None  # the backward adds nothing
    from fxlint.renderers.text import saving_text

    assert saving_text(s) == "saves 1.0 kB per call (2.0 kB per training step)"
    assert saving_text(Saving.of("FXL202", 1000, None, 300_000)) == "saves 1.0 kB and ~0.3 ms per call (measured)"
    assert saving_text(Saving.of("FXL202", 1000, None, 300_000), train=True) == \
        "saves 1.0 kB per call and ~0.3 ms per training step (measured)"
    assert saving_text(Saving.of("FXL301", None, None, None)) == ""


def test_with_the_audit_the_saving_is_the_measured_time_from_the_unprofiled_call(monkeypatch):
    """The measured saving is the unprofiled call's time split by the profiled shares: with the unprofiled
    call said to take 7 ms, the copy's saving is its profiled share of 7 ms, not the profiler's duration."""
    raw = {}
    real_profile = runtime.profile_copies

    def profile(*a, **kw):
        raw["audit"] = real_profile(*a, **kw)
        return raw["audit"]

    monkeypatch.setattr(runtime, "profile_copies", profile)
    monkeypatch.setattr(runtime, "unprofiled_time", lambda step, **k: (7_000_000, 100_000, 9))
    r = fxlint.lint(Planted().eval(), X, config=False, confirm=True)
    copy = next(f for f in r.findings if f.code == "FXL201")
    assert copy.status == "confirmed"
    assert r.audit_summary["call_ns"] == 7_000_000
    profiled = raw["audit"].phase_ns["call"]
    backing = [c for c in raw["audit"].copies if c.file == copy.file and c.line == copy.line]
    assert backing
    expected = sum(round(c.time_ns * 7_000_000 / profiled) for c in backing)
    assert copy.saving.time_ns == copy.time_ns and abs(copy.time_ns - expected) <= len(backing)
    assert 0 < copy.time_ns < 7_000_000
    assert copy.saving.bytes_per_call == copy.bytes
    line = next(x for x in str(r).splitlines() if x.startswith("Fix first"))
    assert "saves 49.2 kB and ~" in line and " per call (measured)" in line, line
    page = render_html(r)
    first = page[page.index('id="fix-first"'):page.index("</ol>")]
    assert "per call (measured)" in first
    d = json.loads(render_json(r))
    assert next(f for f in d["findings"] if f["code"] == "FXL201")["saving"]["time_ns"] == copy.time_ns


def test_no_measured_saving_when_the_call_cannot_be_timed(monkeypatch):
    monkeypatch.setattr(runtime, "unprofiled_time", lambda step, **k: None)
    r = fxlint.lint(Planted().eval(), X, config=False, confirm=True)
    copy = next(f for f in r.findings if f.code == "FXL201")
    assert copy.saving.time_ns is None and copy.saving.bytes_per_call == copy.bytes
    page = render_html(r)
    assert "(measured)" not in str(r) and "(measured)" not in page[page.index('id="fix-first"'):page.index("</ol>")]

"""The status line of a long `fxlint lint` of one model (fxlint.util.progress.activity): shown on a terminal only,
with the phase, what Dynamo is tracing, the time elapsed and the time left in the trace; erased before the
report."""

from __future__ import annotations

import functools
import io
import threading

import torch
import torch.nn as nn

from fxlint.util import progress
from fxlint.capture.graphs import capture, tracing_progress
from tests.conftest import ROOT


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_line_shows_the_phase_what_it_is_at_and_the_time_left():
    clock = Clock()
    act = progress.Activity("fxlint lint m.py:make", first="loading the model", clock=clock)
    assert act.line() == "fxlint lint m.py:make: loading the model  0s elapsed"
    clock.t += 3
    share = [0.25]
    with act.phase("capturing with Dynamo", lambda: (share[0], "tracing blocks.3 (25/100 modules)")):
        assert act.line().endswith("capturing with Dynamo: tracing blocks.3 (25/100 modules)  3s elapsed")  # < 1 s in
        clock.t += 2  # 2 s for a quarter: about 6 s more
        assert act.line().endswith("(25/100 modules)  5s elapsed, about 6s left in this step")
        share[0] = None  # the phase cannot tell any more: no time left shown
        assert act.line().endswith("5s elapsed")
        with act.phase("running 32 rules"):
            assert act.line() == "fxlint lint m.py:make: running 32 rules  5s elapsed"
    with act.phase("broken", lambda: 1 / 0):  # an estimate that fails shows the phase alone
        assert act.line() == "fxlint lint m.py:make: broken  5s elapsed"


def test_a_narrow_terminal_cuts_what_it_is_at_and_keeps_the_time():
    clock = Clock()
    act = progress.Activity("fxlint lint models/repeat_vs_expand.py:make", clock=clock)
    with act.phase("capturing with Dynamo", lambda: (0.5, "tracing encoder.layers.11.attention")):
        clock.t += 4
        line = act.line(79)  # no room for the label: what it is at, cut short
        assert line == "capturing with Dynamo: tracing encod...  4s elapsed, about 4s left in this step"
        line = act.line(130)  # the label cut short, the phase and what it is at whole
        assert line == ("fxlint lint models/repeat_v...: capturing with Dynamo: tracing encoder.layers.11.attention  "
                        "4s elapsed, about 4s left in this step")
        assert act.line(30) == "4s elapsed, about 4s left in t"  # no room for anything but the time
        assert act.line(200) == act.line()  # room for all of it


def test_activity_only_on_a_terminal_and_erased_at_the_end():
    with progress.activity("x", stream=io.StringIO()) as act:
        assert act is None
        with progress.phase("anything"):  # no activity: nothing happens
            pass
    out = TTY()
    with progress.activity("fxlint lint t", stream=out, delay=0, interval=0.01) as act:
        assert act is not None
        with progress.phase("capturing with Dynamo"):
            threading.Event().wait(0.1)
    text = out.getvalue()
    assert "\rfxlint lint t: capturing with Dynamo  0s elapsed" in text
    *_, erased, after = text.split("\r")
    assert after == "" and erased.strip() == "" and erased  # the line is blanked out
    assert progress._current is None


def test_tracing_progress_follows_dynamo_through_the_modules():
    """Sampled from another thread while Dynamo traces a 40-layer model in this one."""
    model = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.ReLU()) for _ in range(40)])
    fraction = tracing_progress(model)
    assert fraction is not None and fraction() is None  # nothing traced yet
    seen: list = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            seen.append(fraction())
            stop.wait(0.002)

    torch._dynamo.reset()
    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        capture(model, torch.randn(2, 8))
    finally:
        stop.set()
        sampler.join()
    shares = [s for s, what in filter(None, seen) if s is not None]
    assert shares and all(0 < s <= 1 for s in shares) and shares == sorted(shares)  # it only moves forward
    assert any(what and what.startswith("tracing ") and "/121 modules)" in what for _, what in filter(None, seen))
    assert fraction() == (None, "building and running the captured graph")  # traced: no share any more


def test_cli_lint_of_one_model_on_a_terminal(monkeypatch, capsys):
    from fxlint.cli.app import main
    from fxlint.cli.commands import lint

    err = TTY()
    monkeypatch.setattr(lint, "activity", functools.partial(progress.activity, stream=err, delay=0, interval=0.01))
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "80")  # CI's width: the status line is cut to it, keeping the time
    main(["lint", "models/repeat_vs_expand.py:make", "--fail-on", "never"])
    status = err.getvalue()
    assert "fxlint lint m" in status and " elapsed" in status  # the label (cut short when the line is too long)
    assert ": capturing with Dynamo" in status
    assert status.endswith("\r") and status.split("\r")[-2].strip() == ""  # erased: the report starts clean
    assert "FXL104" in capsys.readouterr().out

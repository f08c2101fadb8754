"""Progress for long work: a bar with the time left on a terminal, plain lines elsewhere.

``fxlint bench --zoo`` runs for many minutes. On a terminal one line is
redrawn: ``[#######.......] 12/40  3m12s elapsed, about 5m left  speech: timing``;
when stderr is not a terminal (CI logs, a file), each step is its own line
with the same counts, so a log still tells how far it got.

``fxlint lint`` of one model that takes a while (a large model's Dynamo capture)
shows one status line on a terminal, from the first second on (``activity``):
the phase, what it is at, the time elapsed and, while Dynamo traces the model's
modules, about how long the trace has left; the code that does the work marks
its phases (``phase``). Off a terminal it shows nothing.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO


def _clock(seconds: float) -> str:
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


class Progress:
    """Count ``total`` steps; ``step(text)`` marks one started and says where we are."""

    def __init__(self, total: int, *, stream: TextIO | None = None, tty: bool | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        self.total = max(1, total)
        self.done = 0
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self._clock = clock or time.monotonic
        self.start = self._clock()
        self._drawn = False

    def eta(self) -> float | None:
        """Seconds left, from the mean time of the steps done so far (None before the first)."""
        if self.done == 0:
            return None
        elapsed = self._clock() - self.start
        return elapsed / self.done * (self.total - self.done)

    def status(self, text: str) -> str:
        elapsed = self._clock() - self.start
        left = self.eta()
        when = f"{_clock(elapsed)} elapsed" + (f", about {_clock(left)} left" if left is not None else "")
        return f"{self.done}/{self.total}  {when}  {text}"

    def step(self, text: str) -> None:
        """A step starts (the previous one is done)."""
        line = self.status(text)
        if self.tty:
            width = shutil.get_terminal_size((100, 20)).columns
            bar_w = 20
            filled = int(bar_w * self.done / self.total)
            out = f"[{'#' * filled}{'.' * (bar_w - filled)}] {line}"
            self.stream.write("\r" + out[: width - 1].ljust(width - 1))
            self._drawn = True
        else:
            elapsed = self._clock() - self.start
            left = self.eta()
            when = f"{_clock(elapsed)} elapsed" + (f", about {_clock(left)} left" if left is not None else "")
            self.stream.write(f"[{self.done + 1}/{self.total}] {text} ({when})\n")
        self.stream.flush()
        self.done = min(self.total, self.done + 1)

    def advance(self, n: int) -> None:
        """``n`` steps done without work to show (a skipped model)."""
        self.done = min(self.total, self.done + n)

    def close(self, text: str = "done") -> None:
        if self.tty and self._drawn:
            elapsed = _clock(self._clock() - self.start)
            self.stream.write("\r" + f"{self.total}/{self.total}  {text} in {elapsed}".ljust(
                shutil.get_terminal_size((100, 20)).columns - 1) + "\n")
            self.stream.flush()


#: ``fraction()`` of a phase: (share done or None, what it is at or None), or None
Fraction = Callable[[], tuple[float | None, str | None] | None]


class Activity:
    """One status line on a terminal for one long task in phases (``fxlint lint`` of one model).

    A thread redraws the line every ``interval`` seconds, from ``delay`` seconds on (a lint that
    ends sooner shows nothing): the phase, what it is at, the time elapsed and, where the phase
    can tell how far it got (``phase(text, fraction)``), about how long it has left. ``close()``
    erases the line, so the report printed after it starts on a clean line.
    """

    def __init__(self, label: str, *, first: str = "", stream: TextIO | None = None, delay: float = 1.0,
                 interval: float = 0.25, clock: Callable[[], float] | None = None) -> None:
        self.label = label
        self.first = first  # the phase shown before the first phase() (loading the model)
        self.stream = stream or sys.stderr
        self.delay, self.interval = delay, interval
        self._clock = clock or time.monotonic
        self.start = self._clock()
        self._phases: list[tuple[str, Fraction | None, float]] = []
        self._drawn = False
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextlib.contextmanager
    def phase(self, text: str, fraction: Fraction | None = None) -> Iterator[None]:
        """The block is the phase ``text``; ``fraction()`` (called from the drawing thread) returns
        ``(done, detail)``: the share of the phase done (0..1, or None when it cannot tell) and a
        few words on what it is at, or None."""
        with self._lock:
            self._phases.append((text, fraction, self._clock()))
        try:
            yield
        finally:
            with self._lock:
                self._phases.pop()

    def line(self, width: int | None = None) -> str:
        """The status line as it is now; with ``width``, no longer than that: the label is cut short first
        (the user typed it), then what it is at (ending in ``...``); the time elapsed and left are kept."""
        now = self._clock()
        with self._lock:
            text, fraction, since = self._phases[-1] if self._phases else (self.first, None, self.start)
        detail, left = None, None
        if fraction is not None:
            try:
                got = fraction()
            except Exception:  # noqa: BLE001 - a progress estimate never fails the lint
                got = None
            if got is not None:
                done, detail = got
                spent = now - since
                if done is not None and 0.02 <= done < 1 and spent >= 1:
                    left = spent / done * (1 - done)
        tail = ": ".join(p for p in (text, detail) if p)
        when = f"{_clock(now - self.start)} elapsed" + (f", about {_clock(left)} left in this step"
                                                         if left is not None else "")
        what = ": ".join(p for p in (self.label, tail) if p)
        if width is not None and len(what) + 2 + len(when) > width:
            room = width - 2 - len(when)  # for what it is at; the label (the command the user typed) goes first
            if self.label and tail and len(tail) + 2 + 8 <= room:
                what = self.label[: room - len(tail) - 2 - 3] + "...: " + tail
            else:
                what = tail[: room - 3] + "..." if room > 3 else ""
            return f"{what}  {when}" if what else when[:width]
        return f"{what}  {when}"

    def draw(self) -> None:
        width = shutil.get_terminal_size((100, 20)).columns
        self.stream.write("\r" + self.line(width - 1).ljust(width - 1))
        self.stream.flush()
        self._drawn = True

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self._clock() - self.start >= self.delay:
                self.draw()

    def begin(self) -> None:
        self._thread = threading.Thread(target=self._run, name="fxlint-progress", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._drawn:
            width = shutil.get_terminal_size((100, 20)).columns
            self.stream.write("\r" + " " * (width - 1) + "\r")
            self.stream.flush()


_current: Activity | None = None


@contextlib.contextmanager
def activity(label: str, *, stream: TextIO | None = None, **options: Any) -> Iterator[Activity | None]:
    """A status line for the block on a terminal (``stream``, default stderr); elsewhere (a pipe,
    CI's log, a file) nothing: yields None. The ``phase()`` calls inside the block fill it in."""
    global _current
    out = stream or sys.stderr
    try:
        tty = out.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty or _current is not None:
        yield None
        return
    act = Activity(label, stream=out, **options)
    _current = act
    act.begin()
    try:
        yield act
    finally:
        _current = None
        act.close()


@contextlib.contextmanager
def phase(text: str, fraction: Fraction | None = None) -> Iterator[None]:
    """Mark the block as the phase ``text`` of the activity shown (nothing when none is)."""
    act = _current
    if act is None:
        yield
        return
    with act.phase(text, fraction):
        yield

"""Progress for long work: a bar with the time left on a terminal, plain lines elsewhere.

``fxlint bench --zoo`` runs for many minutes. On a terminal one line is
redrawn: ``[#######.......] 12/40  3m12s elapsed, about 5m left  speech: timing``;
when stderr is not a terminal (CI logs, a file), each step is its own line
with the same counts, so a log still tells how far it got.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from typing import TextIO


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

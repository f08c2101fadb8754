"""Keep torch's own chatter off the user's terminal: fxlint says what matters, in its words.

Two sources, two switches:

* Python logging: while fxlint captures a model, Dynamo, fake tensors and
  Inductor log graph breaks and failed meta kernels at WARNING/ERROR level
  (``E1130 ... fake_tensor.py:3090] failed while attempting to run meta for
  aten.mm.default`` and a traceback). fxlint reports graph breaks itself
  (FXL501) and a model that raises as one line, so ``quiet_torch_logs`` lifts
  those loggers to CRITICAL for the capture. ``--debug`` (``set_debug(True)``,
  or ``FXLINT_DEBUG=1``) keeps them.
  torch's structured-trace logger (``torch.__trace``) is always at DEBUG and
  never propagates: its records carry their payload outside the message and
  are meant for ``TORCH_TRACE``'s handler alone. pytest (9.x) attaches its log
  capture to every non-propagating logger, so without help each Dynamo compile
  inside a test adds hundreds of empty ``DEBUG torch.__trace:...`` lines under
  a failing test's "Captured log call" (and makes torch build the trace
  payloads). ``quiet_torch_logs`` detaches every handler that is not torch's
  own from that logger for the capture, and puts them back after.
* Native (C++) lines about the profiler itself, below.

``torch.profiler`` makes libtorch print warnings such as ``[W1130 ...]
CPUAllocator.cpp:245] Memory block of unknown size was allocated before the
profiling started, profiler results will not include the deallocation event``
and Kineto's ``USDT: ... profiler_start`` lines straight to file descriptor 2,
between fxlint's own lines. They are about fxlint's measurement, not about
the user's program. While the audit profiles, fd 2 goes to a temporary file;
afterwards every line that is not such a profiler message is written back to
stderr, so anything the model itself prints there is kept.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator

#: the loggers whose warnings are about torch's internals while fxlint captures or profiles a model
TORCH_LOGGERS = ("torch._dynamo", "torch._subclasses", "torch._inductor", "torch._functorch", "torch.fx",
                 "torch.export", "torch._export", "torch.utils._sympy")

#: torch's structured-trace logger (TORCH_TRACE): only torch's own handler reads its records
TRACE_LOGGER = "torch.__trace"

_debug = os.environ.get("FXLINT_DEBUG") == "1"


def set_debug(on: bool) -> None:
    """Show torch's own logs and native warnings again (the CLI's ``--debug``)."""
    global _debug
    _debug = on


def debug() -> bool:
    return _debug


@contextlib.contextmanager
def quiet_torch_logs() -> Iterator[None]:
    """Raise torch's internal loggers to CRITICAL for the block (not with ``--debug``)."""
    if _debug:
        yield
        return
    loggers = [logging.getLogger(name) for name in TORCH_LOGGERS]
    saved = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    trace = logging.getLogger(TRACE_LOGGER)
    foreign = [h for h in trace.handlers if not type(h).__module__.startswith("torch.")]
    for h in foreign:
        trace.removeHandler(h)
    try:
        yield
    finally:
        for lg, level in zip(loggers, saved):
            lg.setLevel(level)
        for h in foreign:
            trace.addHandler(h)  # no-op for one already there

#: native lines that are the profiler talking about itself
_NOISE = re.compile(
    r"(^\[[WIE]\d{4} [^\]]*(CPUAllocator|profiler|kineto|Kineto|observer|collection)[^\]]*\])"
    r"|(^USDT:)|(^STAGE:)|(^\s*$)"
)


def is_profiler_noise(line: str) -> bool:
    return bool(_NOISE.search(line))


@contextlib.contextmanager
def quiet_native_stderr() -> Iterator[None]:
    """Hold fd 2 for the block; write back what is not the profiler's own chatter."""
    if _debug:
        yield
        return
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):  # no real stderr (captured, or a notebook): nothing to do
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            kept = [ln for ln in tmp.read().decode("utf-8", "replace").splitlines(keepends=True)
                    if not is_profiler_noise(ln)]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()

"""Keep torch's native (C++) log lines about the profiler itself off the user's terminal.

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
import os
import re
import sys
import tempfile
from typing import Iterator

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

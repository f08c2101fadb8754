"""Shared helpers for the implicit-copy rule tests (FXL101-FXL108): lint a function through Dynamo,
check its findings of one code against the markers in the source, and confirm them against the
runtime audit."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn as nn

import fxlint
from fxlint.findings import Finding, Report


class Fn(nn.Module):
    """A module around a function, for torch.export and symbolic_trace."""

    def __init__(self, fn: Callable[..., Any]):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


@dataclass
class Expect:
    """A finding expected on the source line holding ``marker``."""

    marker: str
    bytes: int | None
    severity: str = "warning"


def line_with(fn: Callable[..., Any], marker: str) -> int:
    if isinstance(fn, nn.Module):
        fn = type(fn).forward
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if marker in text:
            return start + i
    raise AssertionError(f"{marker!r} not in the source of {fn}")


def findings(report: Report, code: str) -> list[Finding]:
    return [f for f in report.findings if f.code == code]


def check_positive(fn: Callable[..., Any], inputs: tuple, code: str, expected: list[Expect], *,
                   confirm: bool = True) -> list[Finding]:
    """Lint ``fn`` (Dynamo) with only ``code`` selected; the findings must be exactly ``expected``
    (line, bytes, severity), and each must be confirmed by the runtime audit."""
    report = fxlint.lint(fn, inputs, select=[code], confirm=confirm)
    got = sorted(findings(report, code), key=lambda f: f.line or 0)
    want = sorted(expected, key=lambda e: line_with(fn, e.marker))
    assert len(got) == len(want), "\n".join(f"{f.location} {f.bytes} {f.message}" for f in got)
    for f, e in zip(got, want):
        assert f.line == line_with(fn, e.marker), (f.location, e.marker)
        assert f.bytes == e.bytes, (f.message, e.bytes)
        assert f.severity.value == e.severity, (f.severity, f.message)
        assert f.fix and f.message
        if confirm:
            assert f.status == "confirmed", (f.status, f.message)
    return got


def check_negative(fn: Callable[..., Any], inputs: tuple, code: str) -> None:
    report = fxlint.lint(fn, inputs, select=[code])
    assert findings(report, code) == [], [f.message for f in findings(report, code)]


def nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def profiled_bytes(prof: Any, ops: tuple[str, ...], itemsize: int = 4) -> dict[str, int]:
    """Bytes per op name in ``ops`` of a ``torch.profiler.profile(record_shapes=True)`` run: each event's first
    input's elements times ``itemsize`` (the copies' source, as ``aten::contiguous``/``aten::_to_copy`` record it)."""
    out: dict[str, int] = {}
    for e in prof.events():
        if e.name in ops and e.input_shapes and e.input_shapes[0]:
            n = itemsize
            for d in e.input_shapes[0]:
                n *= d
            out[e.name] = out.get(e.name, 0) + n
    return out

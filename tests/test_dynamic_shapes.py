"""Dynamic shapes: ``torch.compile(dynamic=True)``, ``torch._dynamo.mark_dynamic``, exported programs
with ``Dim`` dims.

What must hold: findings whose verdict does not depend on the symbols are still reported; their byte
cost is a formula (``Finding.bytes_expr``, ``bytes`` None) that gives the static lint's bytes at
every concrete size; nothing is reported that a static lint at those sizes would not report (no
false verdicts); nothing crashes; and fxlint adds no guard and causes no recompile (the guards of
the shape environment and the number of compiles are counted with and without fxlint).
"""

from __future__ import annotations

import warnings

import pytest
import sympy
import torch
import torch.nn as nn
from torch._dynamo.backends.registry import lookup_backend

import fxlint
from fxlint.backend import fxlint_backend
from fxlint.errors import FxlintWarning


class Copies(nn.Module):
    """Copy findings whose verdict holds for every batch size (B >= 2, as Dynamo assumes)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = x[:, [0, 2, 4, 6]]  # FXL401: 16 * B bytes
        b = x.transpose(0, 1).contiguous()  # FXL101: 32 * B bytes
        c = x.half().float()  # FXL103: 48 * B bytes
        d = self.lin(x).reshape(-1)  # a view: nothing to report
        e = x[:, ::2]  # a view: nothing to report
        return a * 2, b, c, d, e


class Breaks(nn.Module):
    """A graph break in the middle (``.item()``) and a data-dependent branch."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.transpose(0, 1).contiguous()
        if x.sum().item() > 0:  # graph break, data-dependent control flow
            y = y * 2
        return y[[1, 2, 3]]


def _key(f: fxlint.Finding) -> tuple:
    return f.code, f.line


def _static(model: nn.Module, x: torch.Tensor) -> dict[tuple, fxlint.Finding]:
    torch._dynamo.reset()
    report = fxlint.lint(model, (x,))
    return {_key(f): f for f in report.findings}


def _value(expr: str, size: int) -> int:
    e = sympy.sympify(expr)
    [sym] = e.free_symbols  # one dynamic size in these models
    return int(e.subs(sym, size))


def _counting(inner):
    """A backend wrapper that counts compiles and the guards each one added to the shape env."""
    calls: list[int] = []

    def backend(gm, example_inputs):
        mode = torch._guards.detect_fake_mode(example_inputs)
        env = mode.shape_env if mode is not None else None
        before = len(env.guards) if env is not None else 0
        fn = inner(gm, example_inputs)
        calls.append((len(env.guards) if env is not None else 0) - before)
        return fn

    backend.calls = calls  # type: ignore[attr-defined]
    return backend


def _run(model: nn.Module, backend, sizes: list[int], width: int = 8, mark: bool = False, dynamic: bool | None = True):
    torch._dynamo.reset()
    torch.manual_seed(0)  # the same inputs (and branches taken) for every backend compared
    outs = []
    with fxlint.collect() as session, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = torch.compile(model, backend=backend, dynamic=dynamic)
        for b in sizes:
            x = torch.randn(b, width)
            if mark:
                torch._dynamo.mark_dynamic(x, 0)
            outs.append((x, compiled(x)))
    torch._dynamo.reset()
    assert not [w for w in caught if issubclass(w.category, FxlintWarning)], [str(w.message) for w in caught]
    return session, outs


def _fxlint(gm, example_inputs):
    return fxlint_backend(gm, example_inputs, options={"inner": "eager"})


@pytest.mark.parametrize("how", ["dynamic=True", "mark_dynamic"])
def test_copy_findings_under_dynamic_shapes_are_formulas_that_match_static_lints(how):
    sizes = [3, 5, 9]
    kwargs = {"dynamic": True} if how == "dynamic=True" else {"dynamic": None, "mark": True}
    session, outs = _run(Copies(), _fxlint, sizes, **kwargs)
    for x, out in outs:
        for o, e in zip(out, Copies.__call__(_same_weights(), x)):
            assert o.shape == e.shape
    found = {_key(f): f for f in session.findings}
    assert {code for code, _ in found} == {"FXL401", "FXL101", "FXL103"}
    for f in found.values():
        assert f.bytes is None and f.bytes_expr, f  # a formula, not a guess at one size
    for b in sizes:
        static = _static(Copies(), torch.randn(b, 8))
        assert set(found) <= set(static), "a dynamic verdict the static lint does not make"
        for key, f in found.items():
            assert _value(f.bytes_expr, b) == static[key].bytes, (key, f.bytes_expr, b)


def _same_weights() -> Copies:
    torch.manual_seed(0)
    return Copies()


@pytest.mark.parametrize("model_cls", [Copies, Breaks])
def test_fxlint_adds_no_guard_and_no_recompile(model_cls):
    sizes = [3, 5, 9, 17]
    eager = _counting(lookup_backend("eager"))
    _run(model_cls(), eager, sizes)
    linted = _counting(_fxlint)
    session, _ = _run(model_cls(), linted, sizes)
    assert len(linted.calls) == len(eager.calls), "fxlint made Dynamo compile more often"
    assert sum(linted.calls) == sum(eager.calls) == 0, (linted.calls, eager.calls)
    assert session.findings and not session.errors


def test_rewrites_under_dynamic_shapes_add_no_guard_and_keep_results():
    sizes = [3, 5, 9]

    def rewriting(gm, example_inputs):
        return fxlint_backend(gm, example_inputs, options={"inner": "eager", "rewrite": True})

    counted = _counting(rewriting)
    model = _same_weights()
    session, outs = _run(model, counted, sizes)
    assert len(counted.calls) == 1 and counted.calls == [0]
    for x, out in outs:
        for o, e in zip(out, model(x)):
            torch.testing.assert_close(o, e)
    assert not [s for s in session.skipped if s.rolled_back]


def test_graph_breaks_and_data_dependent_branches_under_dynamic_shapes():
    session, outs = _run(Breaks(), _fxlint, [3, 5, 9])
    codes = {f.code for f in session.findings}
    assert {"FXL401", "FXL501"} <= codes and not session.errors
    # the same line reported once, whichever graph or recompile it came from
    assert len(session.findings) == len({_key(f) + (f.details.get("dedup", ""),) for f in session.findings})
    for x, out in outs:
        torch.testing.assert_close(out, Breaks()(x))


def test_exported_program_with_a_dynamic_dim():
    batch = torch.export.Dim("batch", min=2, max=64)
    model = _same_weights()
    ep = torch.export.export(model, (torch.randn(4, 8),), dynamic_shapes={"x": {0: batch}})
    report = fxlint.lint(ep)
    found = {f.code: f for f in report.findings}
    assert {"FXL401", "FXL101", "FXL103"} <= set(found) and not report.errors
    assert all(f.bytes is None and f.bytes_expr for f in found.values() if f.code in ("FXL401", "FXL101", "FXL103"))
    static = fxlint.lint(torch.export.export(model, (torch.randn(5, 8),)))
    for f in static.findings:
        if f.code in ("FXL401", "FXL101", "FXL103"):
            assert _value(found[f.code].bytes_expr, 5) == f.bytes


def test_lint_of_inputs_marked_dynamic():
    x = torch.randn(6, 8)
    torch._dynamo.mark_dynamic(x, 0)
    torch._dynamo.reset()
    report = fxlint.lint(Copies(), (x,))
    found = {f.code: f for f in report.findings}
    assert {"FXL401", "FXL101", "FXL103"} <= set(found) and not report.errors
    assert _value(found["FXL101"].bytes_expr, 6) == 6 * 8 * 4


def test_a_verdict_that_depends_on_a_symbol_is_not_claimed():
    """``x.reshape(-1)`` of ``x.transpose(0, 1)`` copies unless a size is 1. With the width dynamic
    too (``dynamic=True``: every size symbolic, Dynamo assumes >= 2), it copies; what must not
    happen is a claim at a size where no copy is made. Each concrete size is checked statically."""

    class Flat(nn.Module):
        def forward(self, x):
            return x.transpose(0, 1).reshape(-1) * 2

    session, _ = _run(Flat(), _fxlint, [3, 5], width=7)
    dynamic = {_key(f) for f in session.findings}
    for b, w in ((3, 7), (5, 7)):
        static = _static(Flat(), torch.randn(b, w))
        assert dynamic <= set(static)
    # at width 1 the transpose is viewable: no copy claimed by the static lint either
    assert not [f for f in fxlint.lint(Flat(), (torch.randn(5, 1),)).findings if f.code == "FXL102"]

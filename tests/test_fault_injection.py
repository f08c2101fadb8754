"""Fault injection: fxlint never breaks a compile.

Every registered rule (graph and program scope), the canonical view builder, capture, the
configuration, the rewrite engine and its verifier, each registered rewrite, and the reporters
are made to raise inside ``torch.compile(..., backend="fxlint")``. The compile must still succeed,
give the inner backend's result (equal to eager), and say so with exactly one ``FxlintWarning``.
For ``fxlint.lint`` a failing rule lands in ``Report.errors``; it is not raised.

The rules and rewrites are read from the registries when the tests are collected, so a rule
merged later is covered without editing this file (a new rewrite needs a trigger line in
``Trigger`` below: the test says so).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import pytest
import torch
import torch.nn as nn

import fxlint
from fxlint import registry
from fxlint.errors import FxlintWarning
from fxlint.rewrite.base import all_rewrites


class Trigger(nn.Module):
    """One graph with a site for every rewrite (and findings for most rules)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.lin = nn.Linear(8, 8)
        self.mix = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor, img: torch.Tensor) -> tuple[torch.Tensor, ...]:
        a = x[:, [0, 2, 4, 6]]  # FXL401: index-to-slice
        b = x[:, :1].repeat(1, 8) * x  # FXL104: repeat-to-expand
        c = x.float()  # FXL108: a no-op conversion
        d = self.conv(img.permute(0, 3, 1, 2).contiguous())  # FXL204 (a layout copy before a conv)
        e = torch.nn.functional.pad(x, (0, 0)) * 3  # FXL205: a pad of zero widths (drop-zero-pad)
        h = self.lin(x)
        h[:, 2:] += 1  # FXL110 in training: the self-assign autograd records (drop-self-assign)
        g = self.mix(x.view(4, 2, 4).permute(0, 2, 1)).permute(0, 2, 1)  # FXL201: linear-over-dim
        return a * 2, b, c + 1, d, e, h, g


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(4, 8), torch.randn(2, 8, 8, 3)


#: rewrites whose rule reports only in training (the others run under no_grad, where FXL204's may apply)
_TRAIN_ONLY = {"FXL110"}


def _compile_and_run(options: dict[str, Any] | None = None, model: nn.Module | None = None,
                     inputs: tuple[Any, ...] | None = None, train: bool = False):
    """Compile with the fxlint backend (inner: a recording ``eager``); return the outputs, eager's
    outputs, fxlint's warnings, the session, and the graphs the inner backend received."""
    from torch._dynamo.backends.registry import lookup_backend

    torch._dynamo.reset()
    model = model or Trigger()
    inputs = inputs or _inputs()
    received: list[torch.fx.GraphModule] = []
    eager_backend = lookup_backend("eager")

    def inner(gm, example_inputs, **kwargs):
        received.append(gm)
        return eager_backend(gm, example_inputs, **kwargs)

    opts = {"inner": inner, **(options or {})}
    with torch.no_grad():
        expected = model(*inputs)
    with warnings.catch_warnings(record=True) as caught, fxlint.collect() as session:
        warnings.simplefilter("always")
        with torch.set_grad_enabled(train):  # inference: every rewrite but FXL110's (FXL204's too) may apply
            out = torch.compile(model, backend="fxlint", options=opts)(*inputs)
    torch._dynamo.reset()
    ours = [str(w.message) for w in caught if issubclass(w.category, FxlintWarning)]
    return out, expected, ours, session, received


def _assert_same(out: Any, expected: Any) -> None:
    for o, e in zip(out, expected):
        torch.testing.assert_close(o.detach(), e)


class Injected(RuntimeError):
    pass


def _boom(*args: Any, **kwargs: Any) -> Any:
    raise Injected("injected failure")


def test_the_trigger_model_is_linted_and_rewritten_cleanly():
    out, expected, ours, session, received = _compile_and_run({"rewrite": True})
    _assert_same(out, expected)
    assert ours == [] and not session.errors
    codes = {f.code for f in session.findings}
    assert {"FXL401", "FXL104", "FXL108"} <= codes
    assert {"FXL401", "FXL104", "FXL108"} <= {a.code for a in session.applied}
    assert len(received) == 1


# --------------------------------------------------------------------------- every rule

#: the rules of an eager compile: the compiled rules (FXL7xx) run only where Inductor lowers the graph
RULES = [r for r in registry.all_rules() if r.scope != "compiled"]


def _failing(code: str) -> registry.Registry:
    """The default registry with rule ``code``'s check replaced by one that raises."""
    reg = registry.default_registry()
    return reg.replacing(registry.with_check(reg.get(code), _boom))


@pytest.mark.parametrize("rewrite", [False, True], ids=["lint", "lint+rewrite"])
@pytest.mark.parametrize("code", [r.code for r in RULES])
def test_a_failing_rule_costs_one_warning_not_the_compile(code, rewrite):
    out, expected, ours, session, received = _compile_and_run({"rewrite": rewrite, "registry": _failing(code)})
    _assert_same(out, expected)
    assert len(ours) == 1 and code in ours[0] and "injected failure" in ours[0], ours
    assert len(session.errors) == 1 and code in session.errors[0]
    # the other rules still ran: their findings are there
    assert {f.code for f in session.findings} - {code}


@pytest.mark.parametrize("code", [r.code for r in RULES])
def test_a_failing_rule_is_reported_by_lint_not_raised(code):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FxlintWarning)
        report = fxlint.lint(Trigger(), _inputs(), registry=_failing(code))
    assert len(report.errors) == 1 and report.errors[0].startswith(f"{code} ")
    assert "Injected: injected failure" in report.errors[0]
    assert all(f.code != code for f in report.findings)
    assert report.findings  # the others reported


# --------------------------------------------------------------------------- every component

COMPONENTS = [
    # (what, module, attribute)
    ("canonical view builder", "fxlint.canon.builder._Builder", "build"),
    ("canonical view entry point", "fxlint.capture.graphs", "build_view"),
    ("capture of a Dynamo graph", "fxlint.capture.graphs", "view_from_dynamo"),
    ("graph-break reading", "fxlint.capture.graphs", "ended_by"),
    ("configuration", "fxlint.project.config", "resolve"),
    ("rule engine", "fxlint.analysis.engine", "run_rules"),
    ("graph label", "fxlint.backend", "_graph_label"),
    ("log reporter", "fxlint.backend", "_log_report"),
    ("rewrite log reporter", "fxlint.backend", "_log_rewrites"),
    ("session reporter", "fxlint.session", "publish"),
    ("rewrite session reporter", "fxlint.session", "publish_rewrites"),
    ("rewrite engine", "fxlint.rewrite.engine", "rewrite_graph"),
    ("rewrite site finder", "fxlint.rewrite.engine", "find_sites"),
    ("rewrite applier", "fxlint.rewrite.engine", "apply_sites"),
    ("rewrite graph copy", "fxlint.rewrite.engine", "copy_graph_module"),
    ("rewrite verifier", "fxlint.rewrite.verify.Verifier", "check"),
]


def _target(path: str) -> Any:
    import importlib

    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(path)


@pytest.mark.parametrize("what,where,attr", COMPONENTS, ids=[c[0] for c in COMPONENTS])
def test_a_failing_component_costs_one_warning_not_the_compile(monkeypatch, what, where, attr):
    monkeypatch.setattr(_target(where), attr, _boom)
    out, expected, ours, session, received = _compile_and_run({"rewrite": True})
    _assert_same(out, expected)
    assert len(ours) == 1 and "injected failure" in ours[0], (what, ours)
    assert len(received) == 1


@pytest.mark.parametrize("code", sorted(all_rewrites()))
def test_a_failing_rewrite_costs_one_warning_and_leaves_its_site(code):
    reg = registry.default_registry()
    reg = reg.replacing(dataclasses.replace(reg.rewrite_for(code), apply=_boom))
    out, expected, ours, session, received = _compile_and_run({"rewrite": True, "registry": reg},
                                                               train=code in _TRAIN_ONLY)
    _assert_same(out, expected)
    assert [s.code for s in session.skipped if s.rolled_back] == [code], (
        f"no {code} site in Trigger: add a line that its rule reports to Trigger.forward")
    assert len(ours) == 1 and code in ours[0] and "injected failure" in ours[0], ours
    # the other rewrites still applied
    assert {a.code for a in session.applied} - {code}


@pytest.mark.parametrize("renderer", ["fxlint.renderers.text:render_text", "fxlint.renderers.json:render_json",
                                      "fxlint.renderers.sarif:render_sarif",
                                      "fxlint.renderers.audit:render_audit_text",
                                      "fxlint.renderers.rewrites:render_fix_text",
                                      "fxlint.renderers.log:human_bytes",
                                      "fxlint.renderers.log:summary_line"])
def test_renderers_are_not_on_the_compile_path(monkeypatch, renderer):
    """The backend logs and publishes findings; the only rendering on its path is its log lines
    (``fxlint.renderers.log``). A renderer that raises costs at most the log line: one warning."""
    module, name = renderer.split(":")
    monkeypatch.setattr(_target(module), name, _boom)
    out, expected, ours, session, received = _compile_and_run({"rewrite": True})
    _assert_same(out, expected)
    assert len(ours) <= 1 and all("injected failure" in w for w in ours)
    assert len(received) == 1


def test_an_inner_backend_failing_on_the_rewritten_graph_gets_the_original(monkeypatch):
    """A rewritten graph that the inner backend refuses falls back to the captured graph."""
    from torch._dynamo.backends.registry import lookup_backend

    eager_backend = lookup_backend("eager")
    calls: list[torch.fx.GraphModule] = []

    def picky(gm, example_inputs, **kwargs):
        calls.append(gm)
        if len(calls) == 1:
            raise Injected("inner refuses the first graph it gets")
        return eager_backend(gm, example_inputs, **kwargs)

    model = Trigger()
    inputs = _inputs()
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        out = torch.compile(model, backend="fxlint", options={"inner": picky, "rewrite": True})(*inputs)
        expected = model(*inputs)
    torch._dynamo.reset()
    _assert_same(out, expected)
    ours = [str(w.message) for w in caught if issubclass(w.category, FxlintWarning)]
    assert len(ours) == 1 and "compiling the original graph" in ours[0]
    assert len(calls) == 2
    # first the rewritten graph (no repeat left), then the captured one (with its repeat)
    assert ".repeat(" not in calls[0].code and ".repeat(" in calls[1].code


def test_user_errors_still_raise():
    """Bad options are the user's to fix: they raise (they are not swallowed as fxlint failures)."""
    torch._dynamo.reset()
    with pytest.raises(Exception, match="rewrite"):
        torch.compile(Trigger(), backend="fxlint", options={"inner": "eager", "rewrite": "yes"})(*_inputs())
    torch._dynamo.reset()


@pytest.mark.inductor
def test_a_failing_compiled_rule_is_reported_by_lint_and_the_others_still_run():
    """A compiled rule (FXL7xx, after Inductor's lowering) that raises is one error of the report, one
    warning, and the other rules' findings are there, compiled ones included."""
    class Conv(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.conv(x).sum() + x[0, 0].t().contiguous().sum()

    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        report = fxlint.lint(Conv().eval(), (torch.randn(1, 3, 8, 8),), registry=_failing("FXL702"), compiled=True,
                             config=False)
    ours = [str(w.message) for w in caught if issubclass(w.category, FxlintWarning)]
    assert len(ours) == 1 and "FXL702" in ours[0] and "injected failure" in ours[0], ours
    assert len(report.errors) == 1 and report.errors[0].startswith("FXL702 ")
    assert all(f.code != "FXL702" for f in report.findings)

"""The registry: one registration per rule, its violation type and its fix; registries passed in."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest
import torch

import fxlint
from fxlint.cli.app import main
from fxlint.findings import Violation
from fxlint.registry import (
    NO_FIX,
    FixSpec,
    Hit,
    Registry,
    default_registry,
    make_rule,
    rule,
    with_check,
)
from fxlint.rewrite.base import all_rewrites


def test_every_rewrite_is_declared_by_its_rule_and_every_declared_rewrite_exists():
    reg = default_registry()
    for r in reg.rules():
        rw = reg.rewrite_for(r)
        if r.fix.rewrite is None:
            assert rw is None and r.fix == NO_FIX, r.code
        else:
            assert rw is not None and rw.name == r.fix.rewrite, f"{r.code} declares {r.fix.rewrite}: not registered"
            assert r.fix.applicability in ("safe", "unsafe") and len(r.fix.why) > 40, r.code
            assert rw.preconditions, f"{rw.name}: its docstring needs a '## Preconditions' section"
    # nothing registered that no rule declares
    assert set(all_rewrites()) == {r.code for r in reg.rules() if r.fix.rewrite}


def test_fix_spec_is_checked():
    with pytest.raises(ValueError, match="availability"):
        FixSpec("often")
    with pytest.raises(ValueError, match="names its rewrite"):
        FixSpec("sometimes")
    with pytest.raises(ValueError, match="applicability"):
        FixSpec("sometimes", "x", "maybe")
    assert FixSpec.rewrite_of("x", safe=True, why="w").summary == "x (safe)" and NO_FIX.summary == "-"


def test_rule_arguments_are_checked_when_declared():
    with pytest.raises(ValueError, match="FXL123"):
        rule("X1", "bad")
    with pytest.raises(ValueError, match="Violation subclass"):
        rule("FXL997", "bad", violation=dict)


@dataclasses.dataclass(frozen=True)
class _Mul(Violation):
    op: str

    def message(self) -> str:
        return f"a {self.op}"

    def fix_title(self) -> str | None:
        return "do not"


def _mul_rule(code: str = "FXL991"):
    def check(view, ctx):
        """Every multiplication (a test rule)."""
        for n in view.ops("mul"):
            yield Hit(n, _Mul("multiplication"), dedup=n.name)

    return make_rule(check, code, "test-mul", "info", violation=_Mul)


class _M(torch.nn.Module):
    def forward(self, x):
        return x * 2


def test_a_registry_passed_in_is_the_one_that_runs():
    reg = Registry([_mul_rule()])
    report = fxlint.lint(_M(), torch.randn(3), registry=reg, config=False)
    [f] = report.findings
    assert (f.code, f.message, f.fix) == ("FXL991", "a multiplication", "do not")
    assert isinstance(f.violation, _Mul) and f.details["op"] == "multiplication"
    # the default registry never saw it
    assert "FXL991" not in default_registry().codes()
    with pytest.raises(fxlint.ConfigError, match="FXL401"):
        fxlint.lint(_M(), torch.randn(3), registry=reg, select="FXL401", config=False)


def test_replacing_and_without_leave_the_original_alone():
    reg = default_registry()
    boom = with_check(reg.get("FXL401"), lambda v, c: iter(()))
    other = reg.replacing(boom)
    assert other.get("FXL401").check is boom.check and reg.get("FXL401").check is not boom.check
    assert "FXL401" not in reg.without("FXL401").codes() and "FXL401" in reg.codes()
    assert reg.without("FXL401").rewrite_for("FXL104") is not None


def test_added_registers_for_a_block_only():
    reg = default_registry()
    with reg.added(_mul_rule("FXL992")):
        assert "FXL992" in reg.codes()
        with pytest.raises(ValueError, match="already"):
            with reg.added(_mul_rule("FXL992")):
                pass
    assert "FXL992" not in reg.codes()


def test_rules_lists_each_fix(capsys):
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    assert "index-to-slice (unsafe)" in out and "remove-noop-conversion (safe)" in out
    page = fxlint.registry.get_rule("FXL108")
    from fxlint.renderers.ruledoc import render_rule

    text = render_rule(page)
    assert "## Fix safety" in text and "**safe**" in text and "returned its input" in text
    assert "## Fix safety" in render_rule(default_registry().get("FXL301"))  # "no automatic fix"


MODEL = """
import torch
import torch.nn as nn


class Gather(nn.Module):
    def forward(self, x):
        return x[:, [0, 2, 4, 6]] * 2
"""


def test_a_per_file_ignored_finding_is_not_rewritten(make_project):
    """Silencing means the same in a lint and a rewrite: per-file-ignores too."""
    from tests.conftest import load_model

    model = make_project('per-file-ignores = { "src/pkg/*.py" = ["FXL401"] }\n', MODEL)
    m, _ = load_model(model, "Gather")
    x = torch.randn(3, 8)
    report = fxlint.lint(m, (x,))
    assert report.findings == [] and [f.code for f in report.suppressed] == ["FXL401"]
    result = fxlint.rewrite(m, (x,))
    assert result.applied == []
    [skipped] = result.skipped
    assert skipped.code == "FXL401" and "per-file-ignores" in skipped.reason and "pyproject.toml" in skipped.reason
    # without the configuration it is rewritten
    assert [a.code for a in fxlint.rewrite(m, (x,), config=False).applied] == ["FXL401"]


def test_safe_only_applies_only_safe_rewrites(write_module):
    path = write_module(textwrap.dedent("""
        import torch
        def f(x):
            a = x.float()  # a no-op conversion (safe rewrite)
            return a[:, [0, 2, 4]] * 2  # an index-as-slice (unsafe rewrite)
    """), name="safe_only_model.py")
    import importlib.util

    spec = importlib.util.spec_from_file_location("safe_only_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    x = torch.randn(3, 8)
    assert {a.code for a in fxlint.rewrite(mod.f, (x,), config=False).applied} == {"FXL108", "FXL401"}
    assert {a.code for a in fxlint.rewrite(mod.f, (x,), config=False, safe_only=True).applied} == {"FXL108"}

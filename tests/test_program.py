"""Program-scope rules: one call per capture with every graph and the breaks; a
failing program rule is isolated; hits can be silenced on an anchor line."""

from __future__ import annotations

import pytest
import torch

import fxlint
from fxlint.capture.graphs import capture
from fxlint.analysis.engine import run_rules
from dataclasses import dataclass

from fxlint.findings import Severity, Violation
from fxlint.capture.program import Program
from fxlint.registry import Hit, Rule, RuleContext, rule
from fxlint.util.source import Location


@dataclass(frozen=True)
class _Text(Violation):
    text: str

    def message(self) -> str:
        return self.text


def _rule(fn, scope="program"):
    return Rule("FXL999", "test-rule", Severity.WARNING, fn, "test", "test", scope)


def f(x):
    y = x * 2
    print("break")
    return y + 1


def test_program_rule_sees_every_graph_and_break_once():
    calls = []

    def check(program, ctx):
        calls.append((len(program.views), [b.graph for b in program.breaks]))
        return []

    cap = capture(f, (torch.randn(3),))
    report = run_rules(cap.program(), [_rule(check)], RuleContext())
    assert calls == [(2, ["graph 0"])] and report.graphs == 2


def test_a_failing_program_rule_is_isolated():
    def boom(program, ctx):
        raise RuntimeError("bad rule")

    with pytest.warns(fxlint.FxlintWarning, match="bad rule"):
        report = run_rules(Program([]), [_rule(boom)], RuleContext())
    assert report.errors and "FXL999" in report.errors[0]


def test_anchor_line_silences_a_hit(write_module):
    path = write_module("x = 1  # fxlint: ignore[FXL999]\ny = 2\n", name="anchored.py")

    def check(program, ctx):
        yield Hit(None, _Text("at y"), location=Location(str(path), 2, "<module>"),
                  anchors=(Location(str(path), 1, "<module>"),))

    report = run_rules(Program([]), [_rule(check)], RuleContext())
    assert report.findings == [] and [s.line for s in report.suppressed] == [2]


def test_bad_scope_is_refused():
    with pytest.raises(ValueError, match="scope"):
        rule("FXL998", "x", scope="module")


def _handovers(fn, *args):
    views = capture(fn, args).views
    return {(n.name, n.op, h.param_name) for v in views for n in v.nodes for h in n.handed_to}, len(views)


def test_a_local_returned_at_a_break_is_linked_to_the_resumed_graphs_input():
    def f(e):
        loop = torch.arange(8).view(1, -1).repeat(2, 1)
        e = e[:, e[0] > 2]  # a break: the mask's nonzero
        e = e * 2
        e = e[:, e[0] > 4]  # a second break: the graph between does not read `loop`
        return torch.cat([e, loop], dim=1)

    links, graphs = _handovers(f, torch.randint(0, 8, (2, 20)))
    assert graphs >= 3 and links == {("loop", "repeat", "L['loop']")}


def test_a_local_assigned_anew_links_its_new_value_and_one_read_at_the_break_none():
    def reassigned(e):
        loop = torch.arange(8).view(1, -1).repeat(2, 1)
        e = e[:, e[0] > 2]
        loop = torch.zeros(2, 8, dtype=torch.long) + e.sum()  # a new value under the same name
        e = e[:, e[0] > 4]
        return torch.cat([e, loop], dim=1)

    def read_at_the_break(e):
        loop = torch.arange(8).view(1, -1).repeat(2, 1)
        e = e[:, e[0] > loop[0, 2]]
        return torch.cat([e, loop], dim=1)

    e = torch.randint(0, 8, (2, 20))
    assert _handovers(reassigned, e)[0] == {("loop", "add", "L['loop']")}  # the new value, not the repeat
    assert _handovers(read_at_the_break, e)[0] == set()

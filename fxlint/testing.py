"""Helpers for a project's own test suite: a model's test fails when fxlint finds something.

    from fxlint.testing import assert_no_findings

    def test_encoder_has_no_hidden_copies():
        assert_no_findings(Encoder(), torch.randn(8, 80, 200))

The pytest plugin (``fxlint.pytest_plugin``, registered through the ``pytest11``
entry point) offers the same as the ``fxlint_check`` fixture.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .findings import Finding, Report, Severity

#: The findings table in an assertion message is rendered at this width, whatever the terminal.
TABLE_WIDTH = 120


def assert_no_findings(
    model: Any,
    example_inputs: Any = None,
    *,
    select: str | Sequence[str] | None = None,
    ignore: str | Sequence[str] | None = None,
    severity: str | None = None,
    config: Any = None,
) -> Report:
    """Lint ``model`` (any target ``fxlint.lint`` takes) and raise ``AssertionError`` when it has
    findings at or above ``severity``; the message is the findings table.

    ``severity`` is ``"error"``, ``"warning"`` or ``"info"``; by default the project's
    ``fail-on`` from ``[tool.fxlint]``, else ``"warning"`` (``"never"`` passes everything).
    ``select``, ``ignore`` and ``config`` are as for ``fxlint.lint``; the project
    configuration applies. Returns the report when the model passes.
    """
    __tracebackhide__ = True  # pytest: show the assertion, not this frame
    import fxlint

    if severity is not None and severity != "never":
        Severity.parse(severity)  # a typo is the caller's error, not a pass
    report = fxlint.lint(model, example_inputs, select=select, ignore=ignore, config=config)
    threshold = severity or report.extras.get("fail_on") or "warning"
    if threshold == "never":
        return report
    failing = report.at_or_above(threshold)
    if failing:
        raise AssertionError(findings_message(report, failing, threshold, model))
    return report


def findings_message(report: Report, failing: list[Finding], threshold: str, model: Any = None) -> str:
    """The assertion message: what failed, the table of those findings, and where to go next."""
    from .renderers.text import render_text

    shown = Report(findings=list(failing), suppressed=report.suppressed, baselined=report.baselined,
                   graphs=report.graphs, graph_breaks=report.graph_breaks, errors=report.errors)
    n = len(failing)
    what = _describe(model)
    head = f"fxlint: {n} finding{'s' if n != 1 else ''} at or above {threshold}{f' in {what}' if what else ''}:"
    tail = ("Silence a deliberate one with `# fxlint: ignore[CODE]` on its line; "
            "`fxlint explain CODE` says what it costs and how to fix it.")
    return f"{head}\n\n{render_text(shown, width=TABLE_WIDTH)}\n{tail}"


def _describe(model: Any) -> str:
    if model is None:
        return ""
    name = getattr(model, "__qualname__", None) or type(model).__qualname__
    return str(name)


__all__ = ["assert_no_findings", "findings_message"]

"""fxlint: find the copies, layout mistakes and gradient breaks PyTorch hides, on the graphs
``torch.compile`` captures; prove them at runtime; rewrite what is safe.

Public API: ``lint``, ``audit``, ``rewrite``, ``collect``, the
``Finding``/``Report`` model, and the compile backend
(``torch.compile(model, backend="fxlint")``, ``options={"rewrite": True}``).
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any, Sequence

from .errors import (
    CaptureError,
    ConfigError,
    FxlintError,
    FxlintWarning,
    ModelError,
    SpecError,
    TargetError,
)
from .findings import Finding, Report, Severity
from .rewrite import RewriteResult
from .session import Session, collect
from . import rewrite  # noqa: E402  (the package is callable: fxlint.rewrite(model, inputs))

if TYPE_CHECKING:  # pragma: no cover
    from .runtime import AuditReport


def lint(
    target: Any,
    example_inputs: Any = None,
    *,
    select: str | Sequence[str] | None = None,
    ignore: str | Sequence[str] | None = None,
    confirm: bool = False,
) -> Report:
    """Lint ``target`` and return a ``Report``.

    ``target`` is an ``nn.Module`` or callable (captured through Dynamo, graph
    breaks allowed, every graph analysed; it runs once and its buffers and the
    RNG state are restored), a ``torch.fx.GraphModule`` (values propagated
    from ``example_inputs`` with fake tensors) or a
    ``torch.export.ExportedProgram``. ``example_inputs`` is a tensor, a
    tuple/list of positional inputs, or a dict of keyword inputs.
    ``select``/``ignore`` take rule codes or prefixes (``"FXL4"``).

    ``confirm=True`` also runs the runtime audit (``fxlint.audit``) and marks
    each copy-type finding ``confirmed``, ``refuted`` or ``not-run``
    (``Finding.status``); runtime copies no finding explains are listed in
    ``Report.unexplained``.
    """
    from .capture import capture
    from .engine import run_rules
    from .registry import RuleContext, select_rules

    rules = select_rules(select, ignore)  # bad codes fail before anything runs
    captured = capture(target, example_inputs)
    report = run_rules(captured.views, rules, RuleContext(training=captured.training))
    report.graph_breaks = len(captured.breaks)
    report.extras["breaks"] = captured.breaks
    if confirm:
        from .runtime.confirm import confirm as _confirm

        report = _confirm(report, audit(target, example_inputs))
    return report


def audit(target: Any, example_inputs: Any = None, *, train: bool = False) -> "AuditReport":
    """Run ``target`` eagerly under ``torch.profiler`` and return every copy it makes,
    attributed to source lines (see the ``fxlint.runtime`` module documentation)."""
    from .runtime import audit as _audit

    return _audit(target, example_inputs, train=train)


__all__ = [
    "__version__",
    "lint",
    "audit",
    "rewrite",
    "RewriteResult",
    "collect",
    "Session",
    "Finding",
    "Report",
    "Severity",
    "FxlintError",
    "TargetError",
    "SpecError",
    "ConfigError",
    "CaptureError",
    "ModelError",
    "FxlintWarning",
]

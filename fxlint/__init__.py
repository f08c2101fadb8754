"""fxlint: find the copies, layout mistakes and gradient breaks PyTorch hides, on the graphs
``torch.compile`` captures; prove them at runtime; rewrite what is safe.

Public API: ``lint``, ``collect``, the ``Finding``/``Report`` model, and the
compile backend (``torch.compile(model, backend="fxlint")``).
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import Any, Sequence

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
from .session import Session, collect


def lint(
    target: Any,
    example_inputs: Any = None,
    *,
    select: str | Sequence[str] | None = None,
    ignore: str | Sequence[str] | None = None,
) -> Report:
    """Lint ``target`` and return a ``Report``.

    ``target`` is an ``nn.Module`` or callable (captured through Dynamo, graph
    breaks allowed, every graph analysed; it runs once and its buffers and the
    RNG state are restored), a ``torch.fx.GraphModule`` (values propagated
    from ``example_inputs`` with fake tensors) or a
    ``torch.export.ExportedProgram``. ``example_inputs`` is a tensor, a
    tuple/list of positional inputs, or a dict of keyword inputs.
    ``select``/``ignore`` take rule codes or prefixes (``"FXL4"``).

    The gradient rules (FXL301-304, FXL109's cut) speak about training: a
    module in ``eval()`` mode, or a lint under ``torch.no_grad()``, gets none
    of their warnings.
    """
    from .capture import capture
    from .engine import run_rules
    from .registry import RuleContext, select_rules

    import torch

    rules = select_rules(select, ignore)  # bad codes fail before anything runs
    captured = capture(target, example_inputs)
    # training: the module's own flag, and autograd on (linting under no_grad is inference)
    training = captured.training and torch.is_grad_enabled()
    report = run_rules(captured.program(), rules, RuleContext(training=training))
    report.graph_breaks = len(captured.breaks)
    report.extras["breaks"] = captured.breaks
    return report


__all__ = [
    "__version__",
    "lint",
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

"""Rewrites: fix what can be fixed, prove every rewrite.

``fxlint.rewrite(model, example_inputs, *, select=None, verify=True)`` captures
the model as one graph, applies every safe rewrite and verifies it against the
original; it returns a ``RewriteResult`` (``.module`` a callable GraphModule,
``.applied``, ``.skipped``). The same engine runs inside the compile backend
with ``options={"rewrite": True}``.

Layout: one module per rewrite, ``fxlNNN_name.py``, registered with
``@register(code, name, preconditions=...)`` for the rule it fixes (see
``base.py``); ``engine.py`` applies, verifies and rolls back; ``safety.py`` is
the alias and mutation analysis; ``verify.py`` compares outputs and gradients;
``graph.py`` edits graphs in their own dialect.

This package is callable: ``fxlint.rewrite(...)`` is ``fxlint.rewrite.engine.rewrite(...)``.
"""

from __future__ import annotations

import sys
import types
from typing import Any, Sequence

from .base import (
    AppliedRewrite,
    Change,
    NotApplied,
    Rewrite,
    RewriteResult,
    Site,
    SkippedRewrite,
    all_rewrites,
    register,
)


def rewrite(
    model: Any,
    example_inputs: Any = None,
    *,
    select: "str | Sequence[str] | None" = None,
    verify: bool = True,
    config: Any = None,
) -> RewriteResult:
    """Rewrite ``model`` (an ``nn.Module`` or callable captured whole by Dynamo, a
    ``torch.fx.GraphModule`` or a ``torch.export.ExportedProgram``) with every safe rewrite.

    ``select`` limits the rules (codes or prefixes, as in ``fxlint.lint``). With
    ``verify=True`` (the default) every rewrite is checked on ``example_inputs`` against
    the original (outputs, and gradients when anything requires grad); one that differs is
    rolled back and listed in ``.skipped``. Returns a ``RewriteResult``: ``.module`` is a
    callable ``GraphModule`` taking the model's inputs, sharing its parameters.

    The project configuration (``[tool.fxlint]``) applies as in ``fxlint.lint``;
    ``config`` is a file path, False (no file) or None (search from the model's file).
    """
    from .engine import rewrite as _rewrite

    return _rewrite(model, example_inputs, select=select, verify=verify, config=config)


class _CallableModule(types.ModuleType):
    """Lets ``fxlint.rewrite`` be both this package and the function users call."""

    def __call__(self, model: Any, example_inputs: Any = None, *, select: "str | Sequence[str] | None" = None,
                 verify: bool = True, config: Any = None) -> RewriteResult:
        return rewrite(model, example_inputs, select=select, verify=verify, config=config)


sys.modules[__name__].__class__ = _CallableModule


def __getattr__(name: str) -> Any:
    if name == "rewrite_graph":  # imported lazily: the engine pulls in the canonical view and the rules
        from .engine import rewrite_graph

        return rewrite_graph
    raise AttributeError(name)

__all__ = [
    "rewrite",
    "rewrite_graph",
    "register",
    "all_rewrites",
    "RewriteResult",
    "AppliedRewrite",
    "SkippedRewrite",
    "Rewrite",
    "Site",
    "Change",
    "NotApplied",
]

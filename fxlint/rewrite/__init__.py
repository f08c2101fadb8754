"""Rewrites: fix what can be fixed, prove every rewrite.

``fxlint.rewrite(model, example_inputs, *, select=None, verify=True)`` captures
the model as one graph, applies every safe rewrite and verifies it against the
original; it returns a ``RewriteResult`` (``.module`` a callable GraphModule,
``.applied``, ``.skipped``). The same engine runs inside the compile backend
with ``options={"rewrite": True}``.

Layout: one module per rewrite, ``fxlNNN_name.py``, registered with
``@register(code, name)`` for the rule it fixes, which declares it with
``fix=FixSpec.rewrite_of(name, safe=..., why=...)`` (see ``base.py`` and
``fxlint.registry``); ``engine.py`` applies, verifies and rolls back; ``safety.py`` is
the alias and mutation analysis; ``verify.py`` compares outputs and gradients;
``graph.py`` edits graphs in their own dialect.

This package is callable: ``fxlint.rewrite(...)`` is ``fxlint.rewrite.engine.rewrite(...)``.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:  # pragma: no cover
    from ..registry import Registry


def rewrite(
    model: Any,
    example_inputs: Any = None,
    *,
    select: str | Sequence[str] | None = None,
    verify: bool = True,
    config: Any = None,
    registry: Registry | None = None,
    safe_only: bool = False,
) -> RewriteResult:
    """Rewrite ``model`` (an ``nn.Module`` or callable captured whole by Dynamo, a
    ``torch.fx.GraphModule`` or a ``torch.export.ExportedProgram``) with every safe rewrite.

    ``select`` limits the rules (codes or prefixes, as in ``fxlint.lint``). With
    ``verify=True`` (the default) every rewrite is checked on ``example_inputs`` against
    the original (outputs, and gradients when anything requires grad); one that differs is
    rolled back and listed in ``.skipped``. Returns a ``RewriteResult``: ``.module`` is a
    callable ``GraphModule`` taking the model's inputs, sharing its parameters. A module or
    callable is captured with the example inputs' shapes (static, as ``fxlint.lint`` and the
    backend's first compile see them, so the three report the same sites): call ``.module`` with
    inputs of those shapes; for other shapes use the backend, which rewrites each compile.

    The project configuration (``[tool.fxlint]``) applies as in ``fxlint.lint``;
    ``config`` is a file path, False (no file) or None (search from the model's file).
    A finding silenced in a lint (``# fxlint: ignore``, an anchor, ``per-file-ignores``) is not
    rewritten. ``safe_only=True`` applies only the rewrites their rule declares ``safe`` (see
    ``fxlint rules``); ``registry`` is the set of rules and rewrites (default: fxlint's own).
    """
    from .engine import rewrite as _rewrite

    return _rewrite(model, example_inputs, select=select, verify=verify, config=config, registry=registry,
                    safe_only=safe_only)


class _CallableModule(types.ModuleType):
    """Lets ``fxlint.rewrite`` be both this package and the function users call."""

    def __call__(self, model: Any, example_inputs: Any = None, *, select: str | Sequence[str] | None = None,
                 verify: bool = True, config: Any = None, registry: Registry | None = None,
                 safe_only: bool = False) -> RewriteResult:
        return rewrite(model, example_inputs, select=select, verify=verify, config=config, registry=registry,
                       safe_only=safe_only)


sys.modules[__name__].__class__ = _CallableModule


def __getattr__(name: str) -> Any:
    if name == "rewrite_graph":  # imported lazily: the engine pulls in the canonical view and the rules
        from .engine import rewrite_graph

        return rewrite_graph
    raise AttributeError(name)

__all__ = [
    "AppliedRewrite",
    "Change",
    "NotApplied",
    "Rewrite",
    "RewriteResult",
    "Site",
    "SkippedRewrite",
    "all_rewrites",
    "register",
    "rewrite",
    "rewrite_graph",
]

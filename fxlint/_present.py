"""The one hook through which a data model prints itself as text.

Data models (``fxlint.Report``, ``fxlint.runtime.AuditReport``, ``fxlint.rewrite.RewriteResult``,
``SkippedRewrite``) keep their data and import no renderer. Each renderer module registers how a
type prints when it is imported (``@text_renderer_for(Report)``); ``str(obj)`` then asks ``as_text``.
The renderers are loaded (by name, as the registry loads rule modules: they sit above the data
models) the first time something prints, so ``import fxlint`` stays cheap (no torch) and
``print(report)`` works wherever a report exists.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., str])
_TEXT: dict[type, Callable[[Any], str]] = {}
_HTML: dict[type, Callable[[Any], str]] = {}


def _registrar(table: dict[type, Callable[[Any], str]], cls: type) -> Callable[[F], F]:
    def deco(fn: F) -> F:
        table[cls] = fn
        return fn

    return deco


def text_renderer_for(cls: type) -> Callable[[F], F]:
    """Register the decorated function (called with the object alone) as how ``str()`` renders
    instances of ``cls``."""
    return _registrar(_TEXT, cls)


def html_renderer_for(cls: type) -> Callable[[F], F]:
    """Register the decorated function as how a notebook renders instances of ``cls`` (``_repr_html_``)."""
    return _registrar(_HTML, cls)


def _render(table: dict[type, Callable[[Any], str]], obj: Any) -> str | None:
    """``obj`` by the renderer registered for its type or a base of it (the renderers loaded first, by
    name), or None."""
    importlib.import_module("fxlint.renderers")  # its modules register themselves
    fn = next((table[k] for k in type(obj).__mro__ if k in table), None)
    return fn(obj) if fn is not None else None


def as_html(obj: Any) -> str | None:
    """``obj`` as HTML by the renderer registered for its type, or None (the notebook shows its repr)."""
    return _render(_HTML, obj)


def as_text(obj: Any) -> str:
    """``obj`` rendered by the renderer registered for its type (or a base of it); its repr when none is."""
    text = _render(_TEXT, obj)
    return text if text is not None else object.__repr__(obj)

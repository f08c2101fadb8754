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


def text_renderer_for(cls: type) -> Callable[[F], F]:
    """Register the decorated function (called with the object alone) as how ``str()`` renders
    instances of ``cls``."""

    def deco(fn: F) -> F:
        _TEXT[cls] = fn
        return fn

    return deco


def html_renderer_for(cls: type) -> Callable[[F], F]:
    """Register the decorated function as how a notebook renders instances of ``cls`` (``_repr_html_``)."""

    def deco(fn: F) -> F:
        _HTML[cls] = fn
        return fn

    return deco


def _load_renderers() -> None:
    importlib.import_module("fxlint.renderers")  # its modules register themselves


def as_html(obj: Any) -> str | None:
    """``obj`` as HTML by the renderer registered for its type, or None (the notebook shows its repr)."""
    _load_renderers()
    for klass in type(obj).__mro__:
        fn = _HTML.get(klass)
        if fn is not None:
            return fn(obj)
    return None


def as_text(obj: Any) -> str:
    """``obj`` rendered by the renderer registered for its type (or a base of it); its repr when none is."""
    _load_renderers()
    for klass in type(obj).__mro__:
        fn = _TEXT.get(klass)
        if fn is not None:
            return fn(obj)
    return object.__repr__(obj)

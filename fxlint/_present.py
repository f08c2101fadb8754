"""The one hook through which a data model prints itself as text.

Data models (``fxlint.Report``, ``fxlint.runtime.AuditReport``, ``fxlint.rewrite.RewriteResult``,
``SkippedRewrite``) keep their data and import no renderer. Each renderer module registers how a
type prints when it is imported (``@text_renderer_for(Report)``); ``str(obj)`` then asks ``as_text``.
``import fxlint`` imports the renderers, so ``print(report)`` works wherever a report exists.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., str])
_TEXT: dict[type, Callable[[Any], str]] = {}


def text_renderer_for(cls: type) -> Callable[[F], F]:
    """Register the decorated function (called with the object alone) as how ``str()`` renders
    instances of ``cls``."""

    def deco(fn: F) -> F:
        _TEXT[cls] = fn
        return fn

    return deco


def as_text(obj: Any) -> str:
    """``obj`` rendered by the renderer registered for its type (or a base of it); its repr when none is."""
    for klass in type(obj).__mro__:
        fn = _TEXT.get(klass)
        if fn is not None:
            return fn(obj)
    return object.__repr__(obj)

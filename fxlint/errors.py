"""Typed errors. Every error fxlint raises on purpose is an ``FxlintError``;
the CLI prints its message on one line and exits with code 2."""

from __future__ import annotations

from collections.abc import Iterable


class FxlintError(Exception):
    """Base class for errors that are the user's to fix (bad input, bad config).

    The message is one line a person can act on; ``detail`` holds what a bug report would want
    (torch's own text), which the CLI prints only with ``--debug``."""

    def __init__(self, message: str = "", *, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail


class TargetError(FxlintError):
    """A TARGET (``file.py:Name`` or ``pkg.mod:Name``) could not be loaded or built."""


class SpecError(FxlintError):
    """An input SPEC such as ``randn(2,3)`` could not be parsed or built."""


class ConfigError(FxlintError):
    """Bad options: unknown rule codes, unknown option keys, bad values."""


class CaptureError(FxlintError):
    """The target could not be captured into an FX graph (it raised, or is not traceable)."""


class GraphBreakError(CaptureError):
    """Dynamo cannot capture the target as one graph (a graph break), which a whole-model rewrite
    (``fxlint.rewrite``) needs; ``torch.compile(model, backend="fxlint")`` rewrites each graph."""


class ModelError(FxlintError):
    """The user's model raised while it ran (during capture or the audit)."""


class FxlintWarning(UserWarning):
    """Emitted when fxlint itself fails inside ``torch.compile``; the compile goes on untouched."""


def closest(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The choice closest to a mistyped ``word`` (``difflib``), or None when none is close: what every
    "did you mean" of fxlint's (CLI choices, targets, rule codes, config and backend keys) names."""
    import difflib

    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return found[0] if found else None


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (PyTorch's run to pages), for one-line reports."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


class OutputError(FxlintError):
    """An output file cannot be written where the user asked (no such directory, not allowed)."""


class MissingDependency(FxlintError):
    """An optional dependency a command needs is not installed (the message says how to install it)."""

"""One line for a model that fails: the user's line and the eager error, not Dynamo's page.

When a capture fails, Dynamo's exception describes its own machinery (fake
tensors, an "Explanation", a "Hint", a link, "from user code:"). The question a
user has is simpler: does my model raise, and where? ``explain_failure`` runs
the model eagerly once (buffers, RNG and inputs restored) and answers with its
exception and the innermost line of the user's code, e.g.::

    the model raised at models/clean_mlp.py:27 (`return torch.log_softmax(self.net(x), dim=-1)`):
    RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x7 and 256x512)

(on one line). When the eager model runs fine, the failure is Dynamo's: a
``CaptureError`` with the first line of its message. Either way the full text
is kept in ``detail`` for ``--debug``.
"""

from __future__ import annotations

import traceback
from types import TracebackType
from typing import Any

import torch

from ..errors import CaptureError, FxlintError, ModelError, first_line
from ..util.source import Location, is_internal_file
from ..util.state import preserved_state


def user_location(tb: TracebackType | None) -> Location | None:
    """The innermost frame of a traceback in the user's code (not torch, not fxlint)."""
    found = None
    for fs in traceback.extract_tb(tb):
        if not is_internal_file(fs.filename):
            found = Location(fs.filename, fs.lineno or 0, fs.name, (fs.line or "").strip() or None)
    return found


def describe(exc: BaseException, *also: BaseException) -> str:
    """``Type: first line`` of an exception; a failed ``.view()`` gets fxlint's explanation (from
    whichever text names the shapes: Dynamo's fake-tensor error does, eager's does not)."""
    from ..tensor.viewable import view_error_hint

    hints = [h for e in (exc, *also) if (h := view_error_hint(str(e))) is not None]
    if hints:
        return max(hints, key=len)
    return f"{type(exc).__name__}: {first_line(exc)}"


def model_error(exc: BaseException, *, detail: str | None = None, also: tuple[BaseException, ...] = ()) -> ModelError:
    """The user's model raised ``exc`` (eagerly): one line with where and what."""
    from ..reporting.grouping import short_path

    loc = user_location(exc.__traceback__)
    where = f" at {short_path(loc.file)}:{loc.line}" + (f" (`{loc.code}`)" if loc.code else "") if loc else ""
    return ModelError(f"the model raised{where}: {describe(exc, *also)}", detail=detail or _full(exc))


def _full(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


def eager_exception(target: Any, args: tuple, kwargs: dict, module: torch.nn.Module | None) -> BaseException | None:
    """Run the model eagerly once (nothing it changes is kept); the exception it raises, or None."""
    try:
        with preserved_state(module, (args, kwargs)), torch.no_grad():
            target(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the user's model raised: that is what we report
        return exc
    return None


def explain_failure(exc: BaseException, target: Any, args: tuple, kwargs: dict,
                    module: torch.nn.Module | None, *, what: str = "capture the model") -> FxlintError:
    """Why running ``target`` under Dynamo failed, in one line: the model's own error (run eagerly),
    or Dynamo's when the eager model runs fine."""
    eager = eager_exception(target, args, kwargs, module)
    if eager is not None:
        return model_error(eager, detail=f"{_full(eager)}\nUnder Dynamo:\n{_full(exc)}", also=(exc,))
    return CaptureError(f"Dynamo could not {what}: {type(exc).__name__}: {first_line(exc)}", detail=_full(exc))

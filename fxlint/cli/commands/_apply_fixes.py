"""``fxlint fix --apply``: write the source edits, then re-lint and re-run the model; put the files
back when the outputs differ or anything fails.

The original model runs first, on the example inputs (``fxlint.rewrite.verify``: clones of the
inputs, the RNG seeded, buffers restored); after the files are written the target is imported
again from them (the weights copied over from the original when both are modules) and run the same
way. Outputs are compared, and gradients when the model has any; an edit that makes a gradient flow
where none did (FXL109's ``torch.stack``) is compared on values only. A difference, or an error on
the way, restores every written file from the original text (kept in memory and beside the file as
``<file>.fxlint-orig`` until the check passes).
"""

from __future__ import annotations

import linecache
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch

from ...findings import Finding
from ...srcfix.apply import write
from ...srcfix.model import FixPlan, SourceEdit

SEED = 0


class _Call(torch.nn.Module):
    """A callable as a module, so ``verify.run`` finds its parameters and buffers (if it is one)."""

    def __init__(self, fn: Any) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


@dataclass
class Outcome:
    kept: bool  # the edits stay in the files
    verified: bool
    checked: str = ""  # "outputs" / "outputs and gradients" / "outputs (values)"
    reverted: str | None = None  # why the files were put back
    before: Counter[str] = field(default_factory=Counter)  # findings per code before
    after: Counter[str] | None = None  # and after (None: not re-linted)


def load_fresh(target: str, files: list[str]) -> Any:
    """Import ``target`` again from the files as they are now: the modules of the edited ``files``
    (and a ``package.module`` target's) leave Python's module cache first."""
    import os

    from ...capture.target import _split, load_target

    where, _ = _split(target)
    edited = {os.path.abspath(f) for f in files}
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if (path and os.path.abspath(path) in edited) or (not where.endswith(".py") and name == where):
            del sys.modules[name]
    linecache.clearcache()
    torch.manual_seed(SEED)
    return load_target(target)


def _run(obj: Any, inputs: Any, grads: bool | None, values_only: bool) -> tuple[Any, bool]:
    from ...capture.graphs import normalise_inputs
    from ...rewrite.verify import run, wants_grads

    args, kwargs = normalise_inputs(inputs)
    module = _Call(obj)
    g = wants_grads(module, args, kwargs) if grads is None else grads  # type: ignore[arg-type]
    result = run(module, args, kwargs, grads=g and not values_only)  # type: ignore[arg-type]
    if values_only:
        result.requires_grad = None
    return result, g


def _copy_weights(obj: Any, new_obj: Any) -> None:
    if isinstance(obj, torch.nn.Module) and isinstance(new_obj, torch.nn.Module):
        try:
            new_obj.load_state_dict(obj.state_dict())
        except RuntimeError:
            pass  # the edit changed the parameters' names or shapes: the seeded weights stand


def _culprits(target: str, obj: Any, inputs: Any, plan: FixPlan, expected: Any, grads: bool,
              values_only: bool) -> list[SourceEdit]:
    """The edits that, made alone, change the outputs or fail (each tried once, then put back)."""
    from ...rewrite.verify import compare

    found = []
    for edit in plan.edits:
        alone = FixPlan(edits=[edit], texts={edit.file: plan.texts[edit.file]})
        written = write(alone)
        try:
            new_obj = load_fresh(target, alone.files()).obj
            _copy_weights(obj, new_obj)
            bad = compare(expected, _run(new_obj, inputs, grads, values_only)[0]) is not None
        except Exception:  # noqa: BLE001 - an edit whose model fails is a culprit like one that differs
            bad = True
        finally:
            written.restore()
        if bad:
            found.append(edit)
    return found


def _named(edits: list[SourceEdit]) -> str:
    if not edits:
        return ""
    which = "; ".join(f"{e.code} at {e.location}: {e.description}" for e in edits)
    return f" (the edit{'s' if len(edits) > 1 else ''} that do{'es' if len(edits) == 1 else ''} it: {which})"


def apply_verified(target: str, obj: Any, inputs: Any, plan: FixPlan, findings: list[Finding], *,
                   select: list[str] | None, verify: bool) -> Outcome:
    """Write ``plan`` and check the program still computes the same (see the module doc)."""
    import fxlint

    from ...rewrite.verify import compare

    values_only = any(e.grad_changes for e in plan.edits)
    before = Counter(f.code for f in findings)
    expected, grads = None, False
    if verify:
        expected, grads = _run(obj, inputs, None, values_only)
    written = write(plan)
    try:
        fresh = load_fresh(target, plan.files())
        new_obj = fresh.obj
        _copy_weights(obj, new_obj)
        report = fxlint.lint(new_obj, inputs, select=select)
        after = Counter(f.code for f in report.findings)
        if expected is not None:
            actual, _ = _run(new_obj, inputs, grads, values_only)
            why = compare(expected, actual)
            if why:
                written.restore()
                blame = _named(_culprits(target, obj, inputs, plan, expected, grads, values_only)
                               if len(plan.edits) > 1 else [])
                return Outcome(False, True, reverted=f"the edited model's {why}{blame}", before=before, after=after)
    except Exception as exc:  # noqa: BLE001 - any failure of the edited model (its import, lint or run) reverts
        written.restore()
        msg = (str(exc).strip().splitlines() or [""])[0]
        blame = _named(_culprits(target, obj, inputs, plan, expected, grads, values_only)
                       if len(plan.edits) > 1 and expected is not None else [])
        return Outcome(False, verify, reverted=f"the edited model failed: {type(exc).__name__}: {msg}{blame}",
                       before=before)
    except BaseException:
        written.restore()
        raise
    written.commit()
    checked = ("outputs (values: an edit lets gradients flow)" if values_only
               else "outputs and gradients" if verify and grads else "outputs")
    return Outcome(True, verify, checked=checked if verify else "", before=before, after=after)

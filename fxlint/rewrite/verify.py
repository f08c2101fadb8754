"""Verification: does the rewritten graph compute what the original computes?

Both graphs run on the example inputs (fresh clones each time, the same RNG
seed, buffers restored afterwards). Outputs are compared, and, when grad mode
is on and any input or parameter requires grad, the gradients of
``sum(output_i * w_i)`` (fixed random weights, so every element of every
output gets its own gradient) with respect to every input and parameter.

Tolerances are ``torch.testing.assert_close``'s per-dtype defaults
(float32: rtol 1.3e-6, atol 1e-5; float16: 1e-3/1e-5; bfloat16:
1.6e-2/1e-5; float64: 1e-7/1e-7; integers and bools exact). A rewrite that
only changes how memory is shared gives bit-identical results; the
tolerances absorb a reordered reduction, never a changed computation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx as fx
import torch.utils._pytree as pytree

from ..errors import first_line

_SEED = 20240607


@dataclass
class Run:
    outputs: list[Any]
    grads: list[torch.Tensor | None] | None  # None: gradients not checked
    requires_grad: list[bool] | None = None  # per output: does autograd track it?


def _clone(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        c = x.detach().clone()
        return c.requires_grad_(x.requires_grad) if (c.is_floating_point() or c.is_complex()) else c
    if isinstance(x, torch.SymInt):
        hint = getattr(x.node, "hint", None)  # the example's own size; int(x) would add a guard
        if hint is None:
            raise _Unverifiable("an input size is symbolic with no example value")
        return int(hint)
    return x


class _Unverifiable(Exception):
    pass


@contextlib.contextmanager
def _restored_buffers(gm: torch.nn.Module) -> Iterator[None]:
    saved = [(b, b.detach().clone()) for b in gm.buffers()]
    try:
        yield
    finally:
        with torch.no_grad():
            for live, old in saved:
                live.copy_(old)


def wants_grads(gm: fx.GraphModule, args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    if not torch.is_grad_enabled():
        return False
    leaves = [a for a in pytree.tree_leaves((list(args), kwargs)) if isinstance(a, torch.Tensor)]
    return any(t.requires_grad for t in leaves) or any(p.requires_grad for p in gm.parameters())


def run(gm: fx.GraphModule, args: Sequence[Any], kwargs: dict[str, Any], grads: bool) -> Run:
    """Run ``gm`` once on clones of the inputs; outputs (detached) and gradients."""
    cargs = [_clone(a) for a in args]
    ckwargs = {k: _clone(v) for k, v in kwargs.items()}
    with torch.random.fork_rng(devices=[]), _restored_buffers(gm):
        torch.manual_seed(_SEED)
        out = gm(*cargs, **ckwargs)
        flat = pytree.tree_leaves(out)
        grad_list: list[torch.Tensor | None] | None = None
        if grads:
            wrt = [a for a in pytree.tree_leaves((cargs, ckwargs)) if isinstance(a, torch.Tensor) and a.requires_grad]
            wrt += [p for p in gm.parameters() if p.requires_grad]
            diff = [o for o in flat if isinstance(o, torch.Tensor) and o.requires_grad]
            if wrt and diff:
                gen = torch.Generator().manual_seed(_SEED)
                terms = [(o * torch.randn(o.shape, generator=gen, dtype=o.dtype).to(o.device)).sum() for o in diff]
                loss = sum(terms[1:], terms[0])
                grad_list = list(torch.autograd.grad(loss, wrt, allow_unused=True))
    outputs = [o.detach() if isinstance(o, torch.Tensor) else o for o in flat]
    tracked = [isinstance(o, torch.Tensor) and o.requires_grad for o in flat]
    return Run(outputs, grad_list, tracked)


def compare(expected: Run, actual: Run) -> str | None:
    """None when ``actual`` matches ``expected``; else what differs, in one line."""
    if len(expected.outputs) != len(actual.outputs):
        return f"the graph returns {len(actual.outputs)} values instead of {len(expected.outputs)}"
    for i, (e, a) in enumerate(zip(expected.outputs, actual.outputs)):
        why = _close(e, a)
        if why:
            return f"output {i} differs: {why}"
    if expected.requires_grad is not None and actual.requires_grad is not None:
        for i, (e, a) in enumerate(zip(expected.requires_grad, actual.requires_grad)):
            if e != a:  # a gradient would now flow where it did not (or stop where it flowed)
                return f"output {i} {'now requires' if a else 'no longer requires'} grad"
    if expected.grads is not None:
        if actual.grads is None or len(actual.grads) != len(expected.grads):
            return "the gradients could not be computed the same way"
        for i, (e, a) in enumerate(zip(expected.grads, actual.grads)):
            if e is None:
                if a is None:
                    continue
                e = torch.zeros_like(a)  # an unused input's gradient is zero
            a = torch.zeros_like(e) if a is None else a
            why = _close(e, a)
            if why:
                return f"gradient {i} differs: {why}"
    return None


def _close(e: Any, a: Any) -> str | None:
    if isinstance(e, torch.Tensor) != isinstance(a, torch.Tensor):
        return f"{type(a).__name__} instead of {type(e).__name__}"
    if not isinstance(e, torch.Tensor):
        return None if e == a else f"{a!r} instead of {e!r}"
    try:
        torch.testing.assert_close(a, e, equal_nan=True)
    except AssertionError as exc:
        lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
        return "; ".join(lines[:3])
    return None


class Verifier:
    """Reference run of the original graph, computed once; ``check`` compares a candidate."""

    def __init__(self, original: fx.GraphModule, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> None:
        self.args = list(args)
        self.kwargs = dict(kwargs or {})
        self.grads = wants_grads(original, self.args, self.kwargs)
        self._original = original
        self._reference: Run | None = None

    @property
    def checked(self) -> str:
        return "outputs and gradients" if self.grads else "outputs"

    def check(self, candidate: fx.GraphModule) -> str | None:
        """None when ``candidate`` matches the original; else the reason it does not."""
        try:
            if self._reference is None:
                self._reference = run(self._original, self.args, self.kwargs, self.grads)
        except _Unverifiable as exc:
            return f"cannot verify: {exc}"
        except Exception as exc:  # noqa: BLE001 - without a reference nothing can be shown safe
            first = first_line(exc)
            return f"cannot verify: the original graph raised {type(exc).__name__}: {first}"
        try:
            got = run(candidate, self.args, self.kwargs, self.grads)
        except _Unverifiable as exc:
            return f"cannot verify: {exc}"
        except Exception as exc:  # noqa: BLE001 - the rewritten graph raised: that is the verdict
            first = first_line(exc)
            return f"the rewritten graph raised {type(exc).__name__}: {first}"
        return compare(self._reference, got)

"""What a kernel model answers: the copies a kernel makes (``KernelCopy``) and the prediction
for one call (``KernelPrediction``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ParamSpec, TypeVar

from ..symbolic import Dim, Undecided, divide_exact, sum_of

if TYPE_CHECKING:  # pragma: no cover
    from .geometry import Geometry

__all__ = ["KernelCopy", "KernelPrediction", "copy_of", "none_when_undecided"]

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True)
class KernelCopy:
    """One copy a kernel makes (``count`` equal copies when it works batch by batch)."""

    operand: str  # a, b, input, weight, bias, output
    nbytes: Dim  # bytes of all ``count`` copies together
    phase: str  # forward | backward
    op: str  # the ATen op that copies: aten::clone, aten::contiguous, aten::_to_copy, aten::copy_
    reason: str  # a code: batch-fold, fold-grad, broadcast, blas-layout, onednn-layout, gemv-layout, ...
    why: str  # one sentence, for messages
    count: int = 1
    avoidable: bool = True  # False: every program pays it (bias copied into the output)

    @property
    def each(self) -> Dim:
        """Bytes of one of the ``count`` copies."""
        return self.nbytes if self.count == 1 else divide_exact(self.nbytes, self.count)


@dataclass(frozen=True)
class KernelPrediction:
    kernel: str  # mm, bmm, matmul, linear, conv2d, layer_norm, ...
    path: str  # the implementation path the model followed, e.g. "bmm: MKL batched gemm"
    copies: tuple[KernelCopy, ...] = ()
    backward_known: bool = True  # False: the backward copies are not modelled for this path
    output_known: bool = True  # False: whether the backend copies its output is unknown here

    def forward(self, operand: str | None = None, avoidable: bool | None = True) -> list[KernelCopy]:
        return self._select("forward", operand, avoidable)

    def backward(self, operand: str | None = None, avoidable: bool | None = True) -> list[KernelCopy]:
        return self._select("backward", operand, avoidable)

    def _select(self, phase: str, operand: str | None, avoidable: bool | None) -> list[KernelCopy]:
        return [c for c in self.copies if c.phase == phase and (operand is None or c.operand == operand)
                and (avoidable is None or c.avoidable == avoidable)]

    @property
    def forward_bytes(self) -> Dim:
        return sum_of(c.nbytes for c in self.forward())

    @property
    def backward_bytes(self) -> Dim:
        return sum_of(c.nbytes for c in self.backward())


def copy_of(operand: str, t: "Geometry", op: str, reason: str, why: str, phase: str = "forward", count: int = 1,
            avoidable: bool = True, nbytes: Dim | None = None) -> KernelCopy:
    """A copy of ``t`` (all its bytes unless ``nbytes`` says otherwise)."""
    return KernelCopy(operand=operand, nbytes=t.nbytes if nbytes is None else nbytes, phase=phase, op=op,
                      reason=reason, why=why, count=count, avoidable=avoidable)


def none_when_undecided(fn: Callable[P, R]) -> Callable[P, R | None]:
    """A ``predict_*`` entry point answers None ("unknown") when dynamic-shape symbols decide a
    comparison on its path (``fxlint.symbolic.Undecided``)."""

    @functools.wraps(fn)
    def entry(*args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return fn(*args, **kwargs)
        except Undecided:
            return None

    return entry

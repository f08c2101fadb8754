"""What a kernel model answers: the copies a kernel makes (``KernelCopy``), the parts it cannot
tell (``Unknown``), and the prediction for one call (``KernelPrediction``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from ..tensor.symbolic import Dim, Undecided, divide_exact, sum_of

if TYPE_CHECKING:  # pragma: no cover
    from .geometry import Geometry

__all__ = ["MEASURED", "MODEL", "KernelCopy", "KernelPrediction", "Unknown", "copy_of", "none_when_undecided"]

P = ParamSpec("P")
R = TypeVar("R")

#: ``KernelCopy.source``: derived by the stride model (ATen's rules, with the CPU facts they read)
MODEL = "model"
#: ``KernelCopy.source``: measured on this machine by running the op (``fxlint.kernels.probe``)
MEASURED = "measured"


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
    source: str = MODEL  # MODEL (derived) or MEASURED (this machine's answer, fxlint.kernels.probe)

    @property
    def each(self) -> Dim:
        """Bytes of one of the ``count`` copies."""
        return self.nbytes if self.count == 1 else divide_exact(self.nbytes, self.count)

    @property
    def measured(self) -> bool:
        return self.source == MEASURED


@dataclass(frozen=True)
class Unknown:
    """A part of a prediction the model does not know: the copies of ``operand`` (``"*"``: any
    operand) in ``phase`` that ``reason`` names (``"*"``: any copy there).

    ``machine`` parts depend on this CPU and build - what a backend library (oneDNN) does with
    these strides on this ISA - and are what ``fxlint.kernels.probe`` can measure by running the
    op; the others are paths the model does not cover at all. The copies the prediction lists
    are known even where an ``Unknown`` part sits beside them: ATen's own conversion of the input
    is known when only oneDNN's reorder of the output is not."""

    phase: str  # forward | backward
    operand: str  # an operand name, or "*"
    reason: str  # the code of the copies it stands for (e.g. "onednn-reorder"), or "*"
    why: str  # one clause for messages: why it is unknown
    machine: bool = True

    def covers(self, phase: str, operand: str | None = None, reasons: Iterable[str] | None = None) -> bool:
        """Whether copies of ``operand`` (None: any) with one of ``reasons`` (None: any) in
        ``phase`` may be hidden in this part."""
        if phase != self.phase:
            return False
        if operand is not None and self.operand not in ("*", operand):
            return False
        if reasons is not None and self.reason != "*" and self.reason not in set(reasons):
            return False
        return True

    @property
    def name(self) -> str:
        """``backward weight (onednn-reorder)``: how reports and tests name the part."""
        return f"{self.phase} {self.operand} ({self.reason})"


#: the part every ``backward_known=False`` of the older API stands for
BACKWARD_NOT_MODELLED = Unknown("backward", "*", "*", "the backward of this path is not modelled", machine=False)
OUTPUT_NOT_MODELLED = Unknown("forward", "output", "*", "whether the kernel copies its output is not modelled",
                              machine=False)


@dataclass(frozen=True, init=False)
class KernelPrediction:
    """The copies one kernel call makes, with the parts the model cannot tell (``unknown``).

    ``KernelPrediction(kernel, path, copies, unknown)``; the older keywords
    ``backward_known=False`` / ``output_known=False`` are accepted and become the
    ``Unknown`` parts ``BACKWARD_NOT_MODELLED`` / ``OUTPUT_NOT_MODELLED``.
    ``probe`` (not compared) is how ``fxlint.kernels.probe`` can run this call to measure
    the machine-dependent parts; ``None`` when it cannot."""

    kernel: str  # mm, bmm, matmul, linear, conv2d, layer_norm, ...
    path: str  # the implementation path the model followed, e.g. "bmm: MKL batched gemm"
    copies: tuple[KernelCopy, ...] = ()
    unknown: tuple[Unknown, ...] = ()
    probe: Any = field(default=None, compare=False, repr=False)  # fxlint.kernels.probe.OpCall | None

    def __init__(self, kernel: str, path: str, copies: Iterable[KernelCopy] = (), unknown: Iterable[Unknown] = (),
                 *, backward_known: bool = True, output_known: bool = True, probe: Any = None) -> None:
        parts = list(dict.fromkeys(unknown))
        if not backward_known and not any(u.phase == "backward" for u in parts):
            parts.append(BACKWARD_NOT_MODELLED)
        if not output_known and not any(u.covers("forward", "output") for u in parts):
            parts.append(OUTPUT_NOT_MODELLED)
        object.__setattr__(self, "kernel", kernel)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "copies", tuple(copies))
        object.__setattr__(self, "unknown", tuple(parts))
        object.__setattr__(self, "probe", probe)

    # -- what is known -------------------------------------------------
    def knows(self, phase: str, operand: str | None = None, reasons: Iterable[str] | None = None) -> bool:
        """True when every copy of ``operand`` (None: any) with one of ``reasons`` (None: any)
        in ``phase`` is in ``copies``: no ``Unknown`` part covers them."""
        reasons = None if reasons is None else tuple(reasons)
        return not any(u.covers(phase, operand, reasons) for u in self.unknown)

    def unknown_in(self, phase: str, operand: str | None = None) -> list[Unknown]:
        """The unknown parts of ``phase`` that may hide copies of ``operand`` (None: any)."""
        return [u for u in self.unknown if u.covers(phase, operand)]

    @property
    def backward_known(self) -> bool:
        """Every backward copy is known (no ``Unknown`` part in the backward)."""
        return self.knows("backward")

    @property
    def output_known(self) -> bool:
        """Whether the kernel copies its output is known."""
        return self.knows("forward", "output")

    @property
    def machine_dependent(self) -> tuple[Unknown, ...]:
        """The unknown parts this machine could answer (``fxlint.kernels.probe``)."""
        return tuple(u for u in self.unknown if u.machine)

    @property
    def measured(self) -> bool:
        """Some copies were measured on this machine (``fxlint.kernels.probe``)."""
        return any(c.measured for c in self.copies)

    # -- copies --------------------------------------------------------
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

    def with_(self, **changes: Any) -> KernelPrediction:
        """A copy with ``changes`` (``path``, ``copies``, ``unknown``, ``probe``)."""
        kw = {"kernel": self.kernel, "path": self.path, "copies": self.copies, "unknown": self.unknown,
              "probe": self.probe}
        kw.update(changes)
        return KernelPrediction(**kw)


def copy_of(operand: str, t: Geometry, op: str, reason: str, why: str, phase: str = "forward", count: int = 1,
            avoidable: bool = True, nbytes: Dim | None = None) -> KernelCopy:
    """A copy of ``t`` (all its bytes unless ``nbytes`` says otherwise)."""
    return KernelCopy(operand=operand, nbytes=t.nbytes if nbytes is None else nbytes, phase=phase, op=op,
                      reason=reason, why=why, count=count, avoidable=avoidable)


def none_when_undecided(fn: Callable[P, R]) -> Callable[P, R | None]:
    """A ``predict_*`` entry point answers None ("unknown") when dynamic-shape symbols decide a
    comparison on its path (``fxlint.tensor.symbolic.Undecided``)."""

    @functools.wraps(fn)
    def entry(*args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return fn(*args, **kwargs)
        except Undecided:
            return None

    return entry

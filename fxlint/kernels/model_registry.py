"""The kernel-model registry: one registration per canonical op, everything else derived.

A kernel model is a function ``(node, env) -> KernelPrediction | None`` over a
canonical node (``fxlint.canon.CanonNode``) whose ``op`` it names, registered
with ``@kernel_model(op, family=..., operands=...)``. ``predict`` dispatches
through the registry; the rules ask it which ops a family has (``ops``) and
how to name an operand to the user (``operand_role``), so no list of ops is
kept by hand anywhere else.

The package's models register into ``REGISTRY``; the module-level functions
(``ops``, ``operand_role``, ``predict``...) read it. A ``KernelRegistry`` of
one's own (``kernel_model(..., registry=reg)``, ``predict(node, registry=reg)``)
serves tests and tools without touching the package's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from ..tensor.info import TensorInfo
from ..tensor.symbolic import Undecided
from .env import Env
from .results import KernelPrediction

__all__ = [
    "REGISTRY",
    "KernelModel",
    "KernelRegistry",
    "families",
    "kernel_model",
    "model_for",
    "models",
    "needs_grad",
    "operand_role",
    "ops",
    "predict",
    "tensor_arg",
]

Model = Callable[[Any, Env], "KernelPrediction | None"]
F = TypeVar("F", bound=Model)


@dataclass(frozen=True)
class KernelModel:
    """One registered kernel model.

    ``op``: the canonical op it predicts; ``family``: the kernel family (``matmul``, ``conv``,
    ``norm``, ``softmax``), what a rule selects by; ``operands``: the operand names its copies
    carry (``KernelCopy.operand``), each with the role users read in messages
    (``{"a": "left operand", "b": "right operand"}``); ``predict``: the model itself.
    """

    op: str
    family: str
    operands: Mapping[str, str]
    predict: Model

    @property
    def module(self) -> str:
        return self.predict.__module__


class KernelRegistry:
    """Kernel models by canonical op. ``REGISTRY`` is the one the models in this package register
    into; a test (or a tool) may build its own and pass it to ``predict``."""

    def __init__(self) -> None:
        self._models: dict[str, KernelModel] = {}

    def register(self, model: KernelModel) -> None:
        old = self._models.get(model.op)
        if old is not None and old.predict is not model.predict:
            raise ValueError(f"a kernel model for {model.op!r} is already registered "
                             f"({old.module}.{old.predict.__name__})")
        self._models[model.op] = model

    def models(self, family: str | Iterable[str] | None = None) -> tuple[KernelModel, ...]:
        if family is None:
            return tuple(self._models.values())
        wanted = {family} if isinstance(family, str) else set(family)
        return tuple(m for m in self._models.values() if m.family in wanted)

    def model_for(self, op: str) -> KernelModel | None:
        return self._models.get(op)

    def ops(self, family: str | Iterable[str] | None = None) -> tuple[str, ...]:
        return tuple(m.op for m in self.models(family))

    def families(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.family for m in self._models.values()))

    def operand_role(self, op: str, operand: str) -> str:
        m = self._models.get(op)
        return m.operands.get(operand, operand) if m is not None else operand

    def predict(self, node: Any, env: Env | None = None) -> KernelPrediction | None:
        m = self._models.get(node.op)
        if m is None:
            return None
        env = env or Env.current()
        try:
            pred = m.predict(node, env)
        except Undecided:
            return None
        if pred is not None and pred.probe is not None and pred.machine_dependent:
            from .probe import resolve  # measures on this machine only where probing is on

            pred = resolve(pred, env)
        return pred


#: the registry the kernel-family modules of this package register into
REGISTRY = KernelRegistry()


def kernel_model(op: str, *, family: str, operands: Mapping[str, str],
                 registry: KernelRegistry | None = None) -> Callable[[F], F]:
    """Register the decorated ``(node, env) -> KernelPrediction | None`` as the model of ``op``
    (in ``REGISTRY`` unless ``registry`` is given).

    The model may raise ``fxlint.tensor.symbolic.Undecided`` (the prediction is then None) and
    answers None for anything it does not model. One model per op: a second registration of
    the same op is an error, not a silent override."""

    def register(fn: F) -> F:
        (registry or REGISTRY).register(KernelModel(op, family, MappingProxyType(dict(operands)), fn))
        return fn

    return register


def models(family: str | Iterable[str] | None = None) -> tuple[KernelModel, ...]:
    """The registered models (of ``family``, one name or several), in registration order."""
    return REGISTRY.models(family)


def model_for(op: str) -> KernelModel | None:
    return REGISTRY.model_for(op)


def ops(family: str | Iterable[str] | None = None) -> tuple[str, ...]:
    """The canonical ops with a kernel model (of ``family``, one name or several):
    ``ops(family="matmul")``, ``ops(family=("norm", "softmax"))``, ``ops()`` for all."""
    return REGISTRY.ops(family)


def families() -> tuple[str, ...]:
    return REGISTRY.families()


def operand_role(op: str, operand: str) -> str:
    """How messages name ``operand`` of ``op`` (``mv``'s ``a`` is "matrix"); the operand's own
    name when the model gives it no role."""
    return REGISTRY.operand_role(op, operand)


def predict(node: Any, env: Env | None = None, registry: KernelRegistry | None = None) -> KernelPrediction | None:
    """The prediction for a canonical node (``fxlint.canon.CanonNode``), or None: no model for
    its op, an operand without shape or strides, a path not modelled, or symbols decide it.

    Parts that depend on this CPU (``KernelPrediction.machine_dependent``) are measured by
    running the op (``fxlint.kernels.probe``) where probing is on (``probe.probing()``,
    ``fxlint.lint`` by default); elsewhere they stay ``unknown``."""
    return (registry or REGISTRY).predict(node, env)


# --------------------------------------------------------------------------- for the models


def tensor_model(op: str, call: Callable[..., KernelPrediction | None], *, family: str,
                 operands: Mapping[str, str], required: tuple[str, ...] = ("a", "b"),
                 registry: KernelRegistry | None = None) -> None:
    """Register the model of ``op`` whose prediction is a function of its tensor operands alone: the
    ``TensorInfo`` of every operand named in ``operands`` (None where absent; no prediction when one
    of ``required`` is) goes to ``call(**tensors, grad=..., env=...)``, ``grad`` being whether grad
    mode is on and an operand requires grad. The wrapper every such kernel would otherwise repeat."""

    def model(node: Any, env: Env) -> KernelPrediction | None:
        tensors = {name: tensor_arg(node, name) for name in operands}
        if any(tensors[name] is None for name in required):
            return None
        return call(**tensors, grad=needs_grad(node, *tensors.values()), env=env)

    model.__module__, model.__qualname__ = call.__module__, f"_{op}"  # where the kernel's model is written
    kernel_model(op, family=family, operands=operands, registry=registry)(model)


def tensor_arg(node: Any, name: str) -> TensorInfo | None:
    """The ``TensorInfo`` of the node argument ``name`` (a canonical node), or None."""
    t = getattr(node.args.get(name), "tensor", None)
    return t if isinstance(t, TensorInfo) else None


def needs_grad(node: Any, *operands: TensorInfo | None) -> bool:
    """Grad mode is on at ``node`` and one of ``operands`` requires grad."""
    return bool(getattr(node, "grad_enabled", True)) and any(t is not None and t.requires_grad for t in operands)

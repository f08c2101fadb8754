"""``softmax`` and ``log_softmax`` on CPU: a non-contiguous input is made contiguous (the
backward reads the saved output, so it does not copy again)."""

from __future__ import annotations

from typing import Any

from ..tensor.info import TensorInfo
from .env import Env
from .geometry import Geometry, on_cpu
from .model_registry import kernel_model, tensor_arg
from .results import KernelPrediction, copy_of, none_when_undecided

__all__ = ["predict_softmax"]


@none_when_undecided
def predict_softmax(x: TensorInfo, *, kind: str = "softmax", env: Env | None = None) -> KernelPrediction | None:
    """``softmax``/``log_softmax`` on CPU: a non-contiguous input is made contiguous (the backward
    reads the saved output, so it does not copy again)."""
    if not on_cpu(x):
        return None
    lx = Geometry.of(x)
    copies = []
    if not lx.is_contiguous():
        copies.append(copy_of("input", lx, "aten::contiguous", "softmax-input",
                              f"the CPU {kind} kernel makes its input contiguous"))
    return KernelPrediction(kind, f"{kind}: contiguous kernel", tuple(copies))


# --------------------------------------------------------------------------- models


@kernel_model("softmax", family="softmax", operands={"input": "input"})
@kernel_model("log_softmax", family="softmax", operands={"input": "input"})
def _softmax(node: Any, env: Env) -> KernelPrediction | None:
    x = tensor_arg(node, "input")
    return None if x is None else predict_softmax(x, kind=node.op, env=env)

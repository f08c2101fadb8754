"""Normalisations on CPU: ``layer_norm``, ``rms_norm``, ``group_norm``, ``instance_norm``,
``batch_norm``.

``layer_norm``, ``rms_norm`` and ``instance_norm`` copy a non-contiguous input
(``layer_norm`` again in backward, from its saved input). ``group_norm`` on CPU
keeps a channels_last input and copies any other non-contiguous one.
``batch_norm`` takes any strides in float32; in bfloat16/float16 a layout that
is neither contiguous nor channels_last is converted to float32.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from ..tensor.info import TensorInfo
from ..tensor.layout import CONTIGUOUS, channels_last_strides, iter_output_strides
from ..tensor.symbolic import prod
from .env import Env
from .geometry import Geometry, dtype_name, on_cpu
from .model_registry import kernel_model, needs_grad, tensor_arg
from .results import KernelCopy, KernelPrediction, copy_of, none_when_undecided

__all__ = ["predict_norm"]


@none_when_undecided
def predict_norm(kind: str, x: TensorInfo, *, grad: bool = False, training: bool | None = None,
                 has_weight: bool = True, env: Env | None = None) -> KernelPrediction | None:
    """``layer_norm``, ``rms_norm``, ``group_norm``, ``instance_norm``, ``batch_norm`` on CPU."""
    if not on_cpu(x):
        return None
    lx = Geometry.of(x)
    copies: list[KernelCopy] = []
    if kind == "rms_norm":
        return _rms_norm(lx, has_weight)
    if kind in ("layer_norm", "instance_norm"):
        if not lx.is_contiguous():
            copies.append(copy_of("input", lx, "aten::contiguous", "norm-input",
                                  f"{kind} works on contiguous rows and makes a non-contiguous input contiguous"))
            if grad and kind == "layer_norm":
                copies.append(copy_of("input", lx, "aten::contiguous", "norm-input",
                                      "the backward makes the saved input contiguous again", phase="backward"))
        return KernelPrediction(kind, f"{kind}: contiguous kernel", tuple(copies),
                                backward_known=kind == "layer_norm" or not grad)
    if kind == "group_norm":
        fmt = lx.suggest_memory_format()
        if not lx.is_contiguous_as(fmt):
            copies.append(copy_of("input", lx, "aten::contiguous", "norm-input",
                                  "group_norm on CPU takes contiguous or channels_last input, which this layout "
                                  "is not"))
        return KernelPrediction(kind, f"group_norm: {fmt}", tuple(copies))
    if kind == "batch_norm":
        if lx.dtype == torch.float32 or lx.dtype == torch.float64:
            return KernelPrediction(kind, "batch_norm: any strides", ())
        if lx.dtype in (torch.bfloat16, torch.float16) and lx.ndim >= 2:
            plain = lx.is_contiguous() or (lx.ndim in (4, 5) and lx.is_contiguous_as(lx.suggest_memory_format()))
            if plain:
                return KernelPrediction(kind, "batch_norm: reduced precision, dense", ())
            if training is None:
                return None
            f32 = prod(lx.shape) * 4
            channels = lx.shape[1]
            why = (f"{dtype_name(lx.dtype)} batch_norm on a layout that is neither contiguous nor channels_last "
                   "takes a slow path that converts the input to float32 for the statistics")
            if training:
                copies.append(copy_of("input", lx, "aten::_to_copy", "norm-input", why, nbytes=f32))
                copies.append(copy_of("stats", lx, "aten::_to_copy", "norm-stats", "the batch mean, in float32",
                                      nbytes=channels * 4))
                copies.append(copy_of("stats", lx, "aten::copy_", "norm-stats", "the batch mean, converted back",
                                      nbytes=channels * lx.itemsize))
            if grad:
                copies.append(copy_of("input", lx, "aten::_to_copy", "norm-input",
                                      "the backward converts the saved input to float32 again", phase="backward",
                                      nbytes=f32))
                if training:
                    copies.append(copy_of("stats", lx, "aten::copy_", "norm-stats",
                                          "a per-channel sum, converted back", phase="backward",
                                          nbytes=channels * lx.itemsize))
            return KernelPrediction(kind, "batch_norm: reduced precision, strided", tuple(copies),
                                    backward_known=not grad)
    return None


def _rms_norm(lx: Geometry, has_weight: bool = True) -> KernelPrediction:
    """rms_norm's CPU composite: upcast (reduced precision), x * rsqrt(mean(x**2)), then the
    result is made contiguous - a copy when the elementwise result came out in another layout."""
    copies: list[KernelCopy] = []
    reduced = lx.dtype in (torch.bfloat16, torch.float16)
    up = lx
    if reduced:
        copies.append(copy_of("input", lx, "aten::_to_copy", "dtype-upcast",
                              "rms_norm computes in float32", nbytes=lx.numel * 4, avoidable=False))
        up = replace(lx, dtype=torch.float32)
        if not lx.is_non_overlapping_and_dense():  # _to_copy lays a non-dense input out afresh
            up = up.contiguous_copy() if lx.suggest_memory_format() == CONTIGUOUS else up.with_(
                lx.shape, channels_last_strides(lx.shape))
    rs = up.contiguous_copy(tuple(up.shape[:-1]) + (1,))
    res = up.with_(up.shape, iter_output_strides(up.shape, [(up.shape, up.stride), (rs.shape, rs.stride)]))
    if not res.is_contiguous_as(res.suggest_memory_format()):
        copies.append(copy_of("input", up, "aten::contiguous", "norm-input",
                              "rms_norm's elementwise result follows the input's layout and is then made contiguous"))
    if reduced and has_weight:
        copies.append(copy_of("weight", lx, "aten::_to_copy", "dtype-upcast", "rms_norm upcasts the weight",
                              nbytes=lx.shape[-1] * 4, avoidable=False))
    if reduced:
        copies.append(copy_of("input", lx, "aten::_to_copy", "dtype-upcast", "rms_norm converts the result back",
                              avoidable=False))
    return KernelPrediction("rms_norm", "rms_norm: composite", tuple(copies), backward_known=False)


# --------------------------------------------------------------------------- models


_OPERANDS = {"input": "input", "stats": "statistics"}


@kernel_model("layer_norm", family="norm", operands=_OPERANDS)
@kernel_model("group_norm", family="norm", operands=_OPERANDS)
@kernel_model("instance_norm", family="norm", operands=_OPERANDS)
@kernel_model("rms_norm", family="norm", operands=_OPERANDS)
@kernel_model("batch_norm", family="norm", operands=_OPERANDS)
def _norm(node: Any, env: Env) -> KernelPrediction | None:
    x = tensor_arg(node, "input")
    if x is None:
        return None
    params = [p.tensor for p in node.args.get("rest", []) if isinstance(getattr(p, "tensor", None), TensorInfo)]
    grad = needs_grad(node, x, *params) or (bool(node.grad_enabled) and bool(node.module_params))
    return predict_norm(node.op, x, grad=grad, training=node.args.get("training"), env=env)


"""Spatial kernels on CPU that make their input contiguous first: pooling, upsampling, ``im2col``.

* ``avg_pool2d``/``max_pool2d`` and ``adaptive_avg_pool2d`` (``AdaptiveAveragePooling.cpp``,
  ``Pool.cpp``: ``input.contiguous(input.suggest_memory_format())``) take a
  contiguous or a channels_last input as it is and copy any other layout: a
  channel slice ``x[:, :c]`` of an NCHW batch, ``x.transpose(2, 3)``, a step
  slice. ``adaptive_avg_pool2d`` to ``1x1`` is a ``mean`` and copies nothing.
* ``F.interpolate``/``nn.Upsample``: bicubic takes any strides; nearest and
  bilinear take a channels_last input as it is. What they do with any other
  layout depends on the CPU (``UPSAMPLE_NCHW``, ``machine=True``): on the
  machine this was checked on (torch 2.13, AVX2) they converted even a
  contiguous NCHW input to channels_last and copied the result back (one
  input-sized and two output-sized copies), which is the vectorised kernel's
  choice, not the input layout's. ``fxlint.kernels.probe`` answers it by
  running the call once (runner ``upsample``); the copies it sees are
  reported as measured on this machine.
* ``F.unfold``/``nn.Unfold`` (``im2col``) copy any non-contiguous input,
  channels_last included.

Checked against the profiler in ``tests/_sweep.py`` (family ``spatial``):
float32 and bfloat16, contiguous, channels_last, channel slices, transposes,
step slices. Not modelled: 1-d and 3-d variants, ``adaptive_max_pool2d``,
antialiased or ``area`` interpolation, backward.
"""

from __future__ import annotations

from typing import Any

import torch

from ..tensor.info import TensorInfo
from .env import Env
from .geometry import Geometry, on_cpu
from .model_registry import kernel_model, needs_grad, tensor_arg
from .probe import OpCall, Operand, runner
from .results import KernelPrediction, Unknown, copy_of, none_when_undecided

__all__ = ["POOLS", "UPSAMPLE_MODES", "predict_spatial"]

POOLS = ("avg_pool2d", "max_pool2d", "adaptive_avg_pool2d")
#: ``F.interpolate`` modes that run the 2-d upsample kernels modelled here
UPSAMPLE_MODES = ("nearest", "nearest-exact", "bilinear", "bicubic")


#: what an NCHW (or other non-channels_last) input to nearest/bilinear upsampling costs depends on the CPU: on
#: the machine these models were checked on (torch 2.13, AVX2) the kernel converted even a contiguous NCHW
#: input to channels_last and the result back (an input-sized and two output-sized copies), a choice of the
#: kernel's vectorised path rather than of the input's layout; the probe measures it
UPSAMPLE_NCHW = Unknown("forward", "*", "upsample-vectorised",
                        "whether the nearest/bilinear upsample kernel converts a non-channels_last "
                        "input (and its result) depends on its vectorised path on this CPU", machine=True)


def _global(output_size: Any) -> bool:
    sizes = output_size if isinstance(output_size, (list, tuple)) else (output_size,)
    return all(s == 1 for s in sizes)


@none_when_undecided
def predict_spatial(kind: str, x: TensorInfo, *, output: TensorInfo | None = None, output_size: Any = None,
                    mode: str | None = None, align_corners: bool | None = None, grad: bool = False,
                    env: Env | None = None) -> KernelPrediction | None:
    """``kind`` (a pool of ``POOLS``, ``upsample`` or ``im2col``) of a 4-D input on CPU."""
    if not on_cpu(x) or x.ndim != 4:
        return None
    lx = Geometry.of(x)
    copies = []
    if kind == "im2col":
        if not lx.is_contiguous():
            copies.append(copy_of("input", lx, "aten::contiguous", "kernel-input",
                                  "im2col (F.unfold) makes any non-contiguous input contiguous, channels_last too"))
        return KernelPrediction("im2col", "im2col: contiguous kernel", tuple(copies), backward_known=not grad)
    fmt = lx.suggest_memory_format()
    dense = lx.is_contiguous_as(fmt)
    if kind in POOLS:
        if kind == "adaptive_avg_pool2d" and _global(output_size):
            if x.dtype not in (torch.float32, torch.float64):
                return None  # a mean in float32: the input is converted (a dtype cast, not modelled here)
            return KernelPrediction(kind, "adaptive_avg_pool2d: global mean, any strides", ())
        if not dense:
            copies.append(copy_of("input", lx, "aten::contiguous", "kernel-input",
                                  f"the CPU {kind} kernel takes a contiguous or channels_last input and makes any "
                                  "other layout contiguous"))
        return KernelPrediction(kind, f"{kind}: {fmt}", tuple(copies), backward_known=not grad)
    if kind == "upsample":
        if mode not in UPSAMPLE_MODES or output is None:
            return None
        if mode == "bicubic":
            return KernelPrediction("upsample", "upsample_bicubic2d: any strides", (), backward_known=not grad)
        if fmt != "contiguous" and dense:
            return KernelPrediction("upsample", f"upsample_{mode}: {fmt}", (), backward_known=not grad)
        return KernelPrediction("upsample", f"upsample_{mode}: {fmt}", (), (UPSAMPLE_NCHW,), backward_known=not grad,
                                probe=_upsample_call(x, output, mode, align_corners))
    return None


def _upsample_call(x: TensorInfo, output: TensorInfo, mode: str, align_corners: bool | None) -> OpCall | None:
    """How ``fxlint.kernels.probe`` can run this upsample (None when a size or stride is symbolic).
    Forward only: the backward is not modelled here."""
    try:
        operands = (Operand.of("input", x),)
        out = tuple(output.shape)
    except (TypeError, ValueError):
        return None
    if len(out) != 4 or not all(type(v) is int for v in out):
        return None
    corners = align_corners if mode in ("bilinear", "bicubic") else None
    return OpCall("upsample", operands, (("size", out[2:]), ("mode", mode), ("align_corners", corners)),
                  outputs=(out,))


@runner("upsample")
def _run_upsample(t: dict[str, torch.Tensor], size: tuple, mode: str, align_corners: bool | None) -> torch.Tensor:
    import torch.nn.functional as F

    return F.interpolate(t["input"], size=tuple(size), mode=mode, align_corners=align_corners)


# --------------------------------------------------------------------------- models

_OPERANDS = {"input": "input", "output": "output"}


@kernel_model("avg_pool2d", family="spatial", operands=_OPERANDS)
@kernel_model("max_pool2d", family="spatial", operands=_OPERANDS)
@kernel_model("adaptive_avg_pool2d", family="spatial", operands=_OPERANDS)
@kernel_model("upsample", family="spatial", operands=_OPERANDS)
@kernel_model("im2col", family="spatial", operands=_OPERANDS)
def _spatial(node: Any, env: Env) -> KernelPrediction | None:
    x = tensor_arg(node, "input")
    if x is None:
        return None
    return predict_spatial(node.op, x, output=node.tensor, output_size=node.args.get("output_size"),
                           mode=node.args.get("mode"), align_corners=node.args.get("align_corners"),
                           grad=needs_grad(node, x), env=env)

"""Constant padding on any device: ``F.pad(x, pad)`` / ``aten::constant_pad_nd`` (``PadNd.cpp``).

``constant_pad_nd`` first narrows the input by every negative width. When no
width is positive it returns ``c_input.clone()``: a pad whose widths are all
zero (``F.pad(x, (0, 0, 0, pad_w, 0, pad_h))`` with ``pad_w == pad_h == 0``,
the usual case of window attention) still copies the whole input, and a pad
with only negative widths (a crop) copies the cropped part. Otherwise it
allocates the padded output in the input's suggested memory format, fills it
with the value and copies the (narrowed) input into it (``aten::copy_``): a
real pad reads and writes the input once, whatever its strides.

The backward (``constant_pad_nd_backward``) is ``constant_pad_nd`` of the
gradient with the widths negated: the gradient is narrowed back to the input's
shape and cloned (one input-sized copy).

Widths the graph does not know (dynamic shapes: ``(ws - W % ws) % ws``) are
taken as non-negative - every pad copies the input then, whether they turn out
zero or not - and the prediction says so (``reason == "pad-dynamic"``).
The reflect and replicate modes on CPU (``ReflectionPad.cpp``, ``ReplicationPadding.cpp``) run their own
kernels, which take an input dense in its suggested memory format (contiguous, or channels_last for a 4-D and
channels_last_3d for a 5-D one) as it is and make any other layout contiguous first (``aten::contiguous``, an
input-sized copy: a transposed ``(N, L, C)`` view, a channel slice, a step slice); the padding itself is the
kernel's output, no copy event. Measured on torch 2.13 (``tests/_sweep.py``, family ``pad``); their backward
is not modelled. The circular mode builds its output from slices of the input (the copies are the pad itself)
and is not modelled either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..tensor.info import TensorInfo
from ..tensor.symbolic import Dim
from .env import Env
from .geometry import Geometry, on_cpu
from .model_registry import kernel_model, needs_grad, tensor_arg
from .results import KernelCopy, KernelPrediction, copy_of, none_when_undecided

__all__ = ["CROP", "DYNAMIC", "NOOP", "PAD", "STRIDED", "pad_widths", "predict_pad"]

#: ``KernelCopy.reason`` codes: every width zero / no width positive (a crop) / a real pad / widths not known
NOOP, CROP, PAD, DYNAMIC = "pad-noop", "pad-crop", "pad-copy", "pad-dynamic"
#: ``KernelCopy.reason`` of a reflect/replicate pad making a strided input contiguous first
STRIDED = "pad-strided-input"
#: the modes whose kernel copies only a strided input
_STRIDED_MODES = ("reflect", "replicate")


def pad_widths(pad: Any) -> tuple[int | None, ...] | None:
    """The widths as ints (None for one the graph does not know), or None when ``pad`` is not a sequence."""
    if not isinstance(pad, (list, tuple)):
        return None
    return tuple(w if isinstance(w, int) and not isinstance(w, bool) else None for w in pad)


def _narrowed(lx: Geometry, widths: Sequence[int | None]) -> Geometry | None:
    """The input after ``constant_pad_nd`` narrows it by the negative widths (None: more widths than dims)."""
    if len(widths) % 2 or len(widths) // 2 > lx.ndim:
        return None
    shape: list[Dim] = list(lx.shape)
    for i in range(len(widths) // 2):
        d = lx.ndim - 1 - i
        for w in widths[2 * i: 2 * i + 2]:
            if w is not None and w < 0:
                shape[d] = shape[d] + w
    return lx.with_(shape, lx.stride)


@none_when_undecided
def predict_pad(x: TensorInfo, pad: Any, *, mode: str | None = "constant", grad: bool = False,
                env: Env | None = None) -> KernelPrediction | None:
    """``F.pad(x, pad, mode=...)``: the copy of the input it makes (``constant_pad_nd``; for ``reflect`` and
    ``replicate`` on CPU, the contiguous copy of a strided input)."""
    if mode in _STRIDED_MODES:
        return _strided_pad(x, mode, grad)
    if mode != "constant":
        return None
    widths = pad_widths(pad)
    if widths is None:
        return None
    lx = Geometry.of(x)
    inner = _narrowed(lx, widths)
    if inner is None:
        return None
    copies: list[KernelCopy] = []
    known = [w for w in widths if w is not None]
    if len(known) < len(widths):
        copies.append(copy_of("input", inner, "aten::copy_", DYNAMIC,
                              "constant_pad_nd copies the input whatever the widths: into the padded output, or "
                              "as a clone when they are all zero"))
    elif all(w == 0 for w in known):
        copies.append(copy_of("input", inner, "aten::clone", NOOP,
                              "constant_pad_nd returns a clone of the input when no width is positive"))
    elif all(w <= 0 for w in known):
        copies.append(copy_of("input", inner, "aten::clone", CROP,
                              "constant_pad_nd with no positive width narrows the input and returns a clone of it"))
    else:
        copies.append(copy_of("input", inner, "aten::copy_", PAD,
                              "constant_pad_nd fills a new, larger tensor and copies the input into it"))
    if grad:
        copies.append(copy_of("input", inner, "aten::clone", "pad-backward",
                              "the backward narrows the gradient back to the input's shape and clones it",
                              phase="backward"))
    return KernelPrediction("pad", "constant_pad_nd", tuple(copies))


def _strided_pad(x: TensorInfo, mode: str, grad: bool) -> KernelPrediction | None:
    """A reflect/replicate pad on CPU: a copy of an input that is not dense in its suggested memory format."""
    if not on_cpu(x):
        return None
    lx = Geometry.of(x)
    copies: tuple[KernelCopy, ...] = ()
    if not lx.is_contiguous_as(lx.suggest_memory_format()):
        copies = (copy_of("input", lx, "aten::contiguous", STRIDED,
                          f"the {mode} pad kernel makes an input that is neither contiguous nor channels_last "
                          "contiguous first"),)
    return KernelPrediction("pad", f"{mode}_pad: dense input", copies, backward_known=not grad)


# --------------------------------------------------------------------------- models


@kernel_model("pad", family="pad", operands={"input": "input"})
def _pad(node: Any, env: Env) -> KernelPrediction | None:
    x = tensor_arg(node, "input")
    if x is None:
        return None
    return predict_pad(x, node.args.get("pad"), mode=node.args.get("mode"), grad=needs_grad(node, x), env=env)

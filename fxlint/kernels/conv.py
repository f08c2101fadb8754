"""Convolutions on CPU (``_convolution``): 1-d/2-d/3-d, transposed or not.

1-d convs copy any non-contiguous input (ATen makes it contiguous before
viewing it as 2-d). The CPU backend is oneDNN (``mkldnn``) or the native slow
kernels, chosen by ATen's heuristic (dtype, batch size, kernel size, groups,
threads); the backend works in channels_last when the input *or* the weight
suggests channels_last (2-d kernels; 3-d only with oneDNN), else contiguous;
input and weight are each made contiguous in that format - so a channels_last
input converts a contiguous weight on every call. oneDNN in contiguous format
may compute in a blocked layout and copy the output back (measured:
bfloat16/float16 except 2-d depthwise, float32 3-d depthwise with multiplier
1). The slow kernels copy the bias into the output. In backward the saved
input and the weight are converted again, and oneDNN converts the
channels_last weight gradient back.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from ..layout import CHANNELS_LAST, CHANNELS_LAST_3D, CONTIGUOUS
from ..symbolic import Undecided, eq, ge, gt, require_int
from ..tensorinfo import TensorInfo
from .env import Env
from .geometry import Geometry, dtype_name, on_cpu
from .registry import kernel_model, needs_grad, tensor_arg
from .results import KernelCopy, KernelPrediction, copy_of, none_when_undecided

__all__ = ["predict_conv", "predict_conv_node"]


def _conv_use_mkldnn(inp: Geometry, w: Geometry, strided: bool, dilated: bool, transposed: bool, groups: int,
                     out_pad_big: bool, env: Env) -> bool:
    """ConvParams::use_mkldnn (CPU)."""
    if not env.mkldnn:
        return False
    if transposed and out_pad_big:
        return False
    if inp.dtype == torch.bfloat16 and env.mkldnn_bf16 or inp.dtype == torch.float16 and env.mkldnn_fp16:
        return True
    if inp.dtype != torch.float32:
        return False
    n, c, h = inp.shape[0], inp.shape[1], inp.shape[2]
    d3 = inp.shape[3]
    first = (strided or dilated or ge(n, 16) or not eq(w.shape[-1], 1) or not eq(w.shape[-2], 1)
             or env.num_threads > 1)
    second = (groups > 1 or (gt(w.shape[-1], 3) and gt(w.shape[-2], 3)) or gt(n, 1)
              or gt(n * c * h * d3, 20480))
    return first and second


@none_when_undecided
def predict_conv(x: TensorInfo, weight: TensorInfo, *, output: TensorInfo | None = None, has_bias: bool = True,
                 transposed: bool = False, groups: int = 1, stride: Sequence[Any] | None = None,
                 dilation: Sequence[Any] | None = None, output_padding: Sequence[Any] | None = None,
                 grad: bool = False, weight_grad: bool | None = None,
                 env: Env | None = None, use_mkldnn: bool | None = None) -> KernelPrediction | None:
    """A convolution (1-d/2-d/3-d, transposed or not) on CPU.

    ``use_mkldnn`` forces the backend choice (None: decide it as ATen does)."""
    env = env or Env.current()
    if not on_cpu(x, weight) or weight.ndim not in (3, 4, 5) or x.ndim != weight.ndim or not isinstance(groups, int):
        return None
    spatial = weight.ndim - 2
    ints = [v for v in (*(stride or ()), *(dilation or ()), *(output_padding or ())) if not isinstance(v, int)]
    if ints:
        return None
    stride = tuple(stride or (1,) * spatial)
    dilation = tuple(dilation or (1,) * spatial)
    output_padding = tuple(output_padding or (0,) * spatial)
    if weight_grad is None:
        weight_grad = weight.requires_grad
    lx, lw = Geometry.of(x), Geometry.of(weight)
    copies: list[KernelCopy] = []
    kernel = f"conv{'_transpose' if transposed else ''}{spatial}d"
    orig_x = lx
    if spatial == 1:
        # ATen makes a 1-d input contiguous, then views it (and the weight) as 2-d
        if not lx.is_contiguous():
            copies.append(copy_of("input", lx, "aten::contiguous", "conv1d-input",
                                  f"{kernel} makes a non-contiguous input contiguous before viewing it as 2-d"))
            if grad:
                copies.append(copy_of("input", lx, "aten::contiguous", "conv1d-input",
                                      "the backward makes the saved input contiguous again", phase="backward"))
            lx = lx.contiguous_copy()
        lx, lw = lx.unsqueeze(2), lw.unsqueeze(2)
        stride, dilation, output_padding = (1,) + stride, (1,) + dilation, (0,) + output_padding
    strided = any(s != 1 for s in stride)
    dilated = any(d != 1 for d in dilation)
    out_pad_big = any(op >= s for op, s in zip(output_padding, stride))
    nd = lx.ndim
    if use_mkldnn is None:
        try:
            mkldnn = _conv_use_mkldnn(lx, lw, strided, dilated, transposed, groups, out_pad_big, env)
        except Undecided:
            # a dynamic batch size decides oneDNN vs the native kernel (n >= 16, n > 1): keep
            # what both backends would do alike, and call the rest unknown
            return _agreeing_conv(x, weight, output=output, has_bias=has_bias, transposed=transposed,
                                  groups=groups, stride=stride, dilation=dilation,
                                  output_padding=output_padding, grad=grad, weight_grad=weight_grad, env=env,
                                  conv1d=spatial == 1)
    else:
        mkldnn = use_mkldnn
    sug_x, sug_w = lx.suggest_memory_format(), lw.suggest_memory_format()
    cl = CHANNELS_LAST if nd == 4 else CHANNELS_LAST_3D
    if mkldnn:
        backend = "oneDNN"
        fmt = cl if (sug_x == cl or sug_w == cl) and lx.dtype != torch.float64 else CONTIGUOUS
    else:
        # _select_conv_backend without oneDNN, on CPU
        if not transposed and nd == 5 and not dilated:
            backend = "slow 3-d"
        elif transposed:
            backend = f"slow transposed {nd - 2}-d"
        elif dilated:
            backend = f"slow dilated {nd - 2}-d"
        else:
            backend = "slow 2-d"
        if groups != 1 and backend != "slow 3-d":
            return None  # grouped convs split per group without oneDNN: not modelled
        fmt = cl if nd == 4 and (sug_x == cl or sug_w == cl) else CONTIGUOUS
    fmt_name = {CONTIGUOUS: "contiguous (NCHW)" if nd == 4 else "contiguous (NCDHW)",
                CHANNELS_LAST: "channels_last", CHANNELS_LAST_3D: "channels_last_3d"}[fmt]
    if not lx.is_contiguous_as(fmt):
        accepts = f"contiguous or {cl}" if (mkldnn or nd == 4) and lx.dtype != torch.float64 \
            else "only contiguous input"
        why = (f"{kernel} runs {backend} in {fmt_name} layout here and takes {accepts}, which this layout is not")
        copies.append(copy_of("input", orig_x, "aten::contiguous", "conv-input", why))
        if grad:
            copies.append(copy_of("input", orig_x, "aten::contiguous", "conv-input",
                                  "the backward converts the saved input again", phase="backward"))
    if not lw.is_contiguous_as(fmt):
        why = (f"a {fmt_name} input makes {kernel} ({backend}) convert the weight to {fmt_name} on every call")
        copies.append(copy_of("weight", lw, "aten::contiguous", "conv-weight", why))
        if grad:
            copies.append(copy_of("weight", lw, "aten::contiguous", "conv-weight",
                                  "the backward converts the weight again", phase="backward"))
    if grad and weight_grad and mkldnn and fmt != CONTIGUOUS:
        copies.append(copy_of("weight", lw, "aten::_to_copy", "conv-weight-grad",
                              "oneDNN returns the channels_last weight gradient, converted back to the "
                              "weight's layout", phase="backward"))
    output_known = True
    backward_known = True
    depthwise = groups > 1 and eq(lx.shape[1], groups)
    if mkldnn and fmt == CONTIGUOUS:
        reorder = _onednn_reorders(lx, lw, depthwise, transposed, strided, dilated, env)
        if reorder is None:
            output_known = backward_known = False
        else:
            out_reorder, grad_input_reorder = reorder
            if out_reorder and output is not None:
                copies.append(copy_of("output", Geometry.of(output), "aten::contiguous", "conv-output",
                                      f"oneDNN computes this {dtype_name(lx.dtype)} {kernel} in its own blocked "
                                      "layout and copies the output back to the contiguous layout"))
            elif out_reorder:
                output_known = False
            if grad_input_reorder and grad and orig_x.requires_grad:
                copies.append(copy_of("input", orig_x, "aten::contiguous", "conv-grad-input",
                                      "oneDNN returns the input gradient in its own layout, copied back",
                                      phase="backward", avoidable=False))
    if mkldnn and fmt == CHANNELS_LAST_3D and dilated and grad:
        backward_known = False  # oneDNN sometimes converts the weight again here: not modelled
    if not mkldnn and has_bias and not transposed and output is not None and not eq(Geometry.of(output).numel, 0):
        lo = Geometry.of(output)
        if "dilated" in backend:  # the bias is written channel by channel
            per = require_int(lo.shape[0] * lo.shape[1], "the channel count")
            copies.append(copy_of("bias", lo, "aten::copy_", "bias-init",
                                  f"the {backend} kernel copies the bias into each output channel first",
                                  count=per, avoidable=False))
        else:
            copies.append(copy_of("bias", lo, "aten::copy_", "bias-init",
                                  f"the {backend} kernel copies the bias into the output first", avoidable=False))
    return KernelPrediction(kernel, f"{kernel}: {backend}, {fmt}", tuple(copies), output_known=output_known,
                            backward_known=backward_known or not grad)


def _agreeing_conv(x: TensorInfo, weight: TensorInfo, *, conv1d: bool, stride: Sequence[Any],
                   dilation: Sequence[Any], output_padding: Sequence[Any], **kw: Any) -> KernelPrediction | None:
    """The copies oneDNN and the native kernel would both make, when symbols pick between them."""
    if conv1d:  # predict_conv prepended the 2-d view's unit dim to these; hand back the 1-d ones
        stride, dilation, output_padding = stride[1:], dilation[1:], output_padding[1:]
    both = [predict_conv(x, weight, stride=stride, dilation=dilation, output_padding=output_padding,
                         use_mkldnn=flag, **kw) for flag in (True, False)]
    if any(p is None for p in both):
        return None
    a, b = both

    def key(c: KernelCopy) -> tuple:
        return (c.operand, c.phase, c.op, str(c.nbytes), c.avoidable)

    common = [c for c in a.copies if key(c) in {key(d) for d in b.copies}]
    same = len(common) == len(a.copies) == len(b.copies)
    return KernelPrediction(a.kernel, f"{a.kernel}: oneDNN or native (decided by a dynamic size)", tuple(common),
                            backward_known=same and a.backward_known and b.backward_known,
                            output_known=same and a.output_known and b.output_known)


def _onednn_reorders(x: Geometry, w: Geometry, depthwise: bool, transposed: bool, strided: bool, dilated: bool,
                     env: Env) -> tuple[bool, bool] | None:
    """(output copied back, input gradient copied back) when oneDNN runs a float32 conv in the
    contiguous layout. Not ATen's decision but oneDNN's choice of its internal layout: a table
    measured on x86 AVX512/AMX with torch 2.13 (tests/test_kernel_sweep.py). None where it is not
    known: other CPUs, and bfloat16/float16, whose reorders vary with shapes in ways not modelled."""
    if not env.onednn_output_table or x.dtype != torch.float32:
        return None
    mult1 = depthwise and eq(w.shape[0], x.shape[1])
    out = (x.ndim == 5 and mult1 and not dilated and not transposed) or (transposed and strided)
    grad_input = strided and not transposed and not depthwise
    return out, grad_input


def predict_conv_node(node: Any, x: TensorInfo | None = None, env: Env | None = None) -> KernelPrediction | None:
    """The prediction for a canonical ``conv`` node, optionally as if its input were ``x``."""
    args = node.args
    x = x if x is not None else tensor_arg(node, "input")
    w = args.get("weight_info")
    if x is None or not isinstance(w, TensorInfo):
        return None
    return predict_conv(
        x, w, output=node.tensor, has_bias=bool(args.get("has_bias", True)),
        transposed=bool(args.get("transposed")), groups=args.get("groups", 1),
        stride=args.get("stride"), dilation=args.get("dilation"), output_padding=args.get("output_padding"),
        grad=needs_grad(node, x, w), weight_grad=w.requires_grad and bool(node.grad_enabled), env=env)


# --------------------------------------------------------------------------- models


@kernel_model("conv", family="conv", operands={"input": "input", "weight": "weight", "bias": "bias",
                                               "output": "output"})
def _conv(node: Any, env: Env) -> KernelPrediction | None:
    return predict_conv_node(node, env=env)

"""Convolutions on CPU (``_convolution``): 1-d/2-d/3-d, transposed or not.

1-d convs copy any non-contiguous input (ATen makes it contiguous before
viewing it as 2-d). The CPU backend is oneDNN (``mkldnn``) or the native slow
kernels, chosen by ATen's heuristic (dtype, batch size, kernel size, groups,
threads, and whether oneDNN has bfloat16/float16 kernels on this CPU); the
backend works in channels_last when the input *or* the weight suggests
channels_last (2-d kernels; 3-d only with oneDNN), else contiguous; input and
weight are each made contiguous in that format - so a channels_last input
converts a contiguous weight on every call. The native kernels run a grouped
conv group by group and make each group's slice of the input (and of the
gradient, in backward) contiguous; they copy the bias into the output; in
bfloat16/float16 their backward sums the bias gradient through a float32 copy
of the gradient (``sum``'s accumulation buffer) when the batch and the spatial
dims are two separate reductions. In backward the saved input and the weight
are converted again, and oneDNN converts the channels_last weight gradient
back.

What oneDNN itself does next depends on the CPU (its kernels per ISA), not on
ATen: in the contiguous format it may compute in a blocked layout of its own
and copy the output (and the input gradient) back; in channels_last its
backward may convert the weight again. These are ``Unknown`` parts of the
prediction (``machine=True``): ``fxlint.kernels.probe`` measures them on the
running machine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ..tensor.info import TensorInfo
from ..tensor.layout import CHANNELS_LAST, CHANNELS_LAST_3D, CONTIGUOUS, channels_last_strides, contiguous_strides
from ..tensor.symbolic import Undecided, eq, ge, gt, prod, require_int
from .env import Env
from .geometry import Geometry, dtype_name, on_cpu
from .model_registry import kernel_model, needs_grad, tensor_arg
from .probe import OpCall, Operand, runner
from .results import KernelCopy, KernelPrediction, Unknown, copy_of, none_when_undecided

__all__ = ["AGAIN_IN_BACKWARD", "ONEDNN_AMX_CONV1D", "ONEDNN_REORDER", "conv_format", "predict_conv",
           "predict_conv_node"]


def _conv_use_mkldnn(inp: Geometry, w: Geometry, strided: bool, dilated: bool, transposed: bool, groups: int,
                     out_pad_big: bool, env: Env) -> bool:
    """ConvParams::use_mkldnn (CPU)."""
    if not env.mkldnn:
        return False
    if transposed and out_pad_big:
        return False
    if env.onednn_reduced(inp.dtype):
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


_REDUCED = (torch.bfloat16, torch.float16)
#: the code of the copies oneDNN's own reorders make (``Unknown.reason`` of the parts it leaves open)
ONEDNN_REORDER = "onednn-reorder"
#: the reasons of the backward copies that repeat a forward conversion (the saved input, the weight): the
#: backward's own copies (the weight gradient's conversion, oneDNN's reorders) have other reasons
AGAIN_IN_BACKWARD = ("conv-input", "conv1d-input", "conv-weight")
#: the code of the input copies a reduced-precision oneDNN conv1d makes on a CPU with AMX beyond ATen's
#: own ``contiguous`` (measured on Sapphire Rapids: the strided input is made contiguous twice; on AVX2
#: and on Zen 4's AVX512-BF16 once): not ported, so unknown there, and the probe measures it
ONEDNN_AMX_CONV1D = "onednn-amx-conv1d-input"


def _in_format(t: Geometry, fmt: str) -> Geometry:
    """``t.contiguous(memory_format=fmt)``: ``t`` itself when it already is, else fresh strides."""
    if t.is_contiguous_as(fmt):
        return t
    return t.with_(t.shape, channels_last_strides(t.shape) if fmt != CONTIGUOUS else contiguous_strides(t.shape))


def _group_slice(t: Geometry, dim: int, groups: int) -> tuple[Geometry, bool]:
    """ATen's ``subtensor(t, dim, groups, g)``: one group's slice ``t.narrow(dim, ...)``, made
    contiguous in ``t.suggest_memory_format()``; (the slice, whether that copies it)."""
    fmt = t.suggest_memory_format()
    shape = list(t.shape)
    shape[dim] = shape[dim] // groups if isinstance(shape[dim], int) else shape[dim] / groups
    part = t.with_(shape, t.stride)
    return part, not part.is_contiguous_as(fmt)


def _sum_uses_float_buffer(grad_out: Geometry) -> bool:
    """``grad_output.sum((0, 2, ...))`` in bfloat16/float16 (the bias gradient of the native
    kernels), ``grad_out`` dense in its format: ATen's ``sum_out`` accumulates in a float32 copy of
    its input (``should_use_acc_buffer``) when, after TensorIterator moves the reduced dims
    innermost and coalesces them, the two innermost dims are both reduced - in the contiguous
    format, a batch > 1 and more than one position on either side of channels > 1. In
    channels_last the batch and the positions are one block of memory: no buffer."""
    n, c, sp = grad_out.shape[0], grad_out.shape[1], prod(grad_out.shape[2:])
    return grad_out.is_contiguous() and gt(n, 1) and gt(c, 1) and gt(sp, 1)


@none_when_undecided
def predict_conv(x: TensorInfo, weight: TensorInfo, *, output: TensorInfo | None = None, has_bias: bool = True,
                 transposed: bool = False, groups: int = 1, stride: Sequence[Any] | None = None,
                 padding: Sequence[Any] | str | None = None, dilation: Sequence[Any] | None = None,
                 output_padding: Sequence[Any] | None = None, grad: bool = False, weight_grad: bool | None = None,
                 bias_grad: bool | None = None, env: Env | None = None,
                 use_mkldnn: bool | None = None) -> KernelPrediction | None:
    """A convolution (1-d/2-d/3-d, transposed or not) on CPU.

    ``grad``: the call runs under autograd with an operand that requires grad (then the
    backward copies are predicted too); ``weight_grad``/``bias_grad``: whether the weight and
    the bias get a gradient (default: the weight's ``requires_grad``; the bias when the weight
    does). ``padding`` only serves the probe (``fxlint.kernels.probe``), which runs the call
    itself. ``use_mkldnn`` forces the backend choice (None: decide it as ATen does)."""
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
    call = _probe_call(x, weight, output, has_bias, transposed, groups, stride, padding, dilation, output_padding,
                       grad, weight_grad, bias_grad)
    if weight_grad is None:
        weight_grad = weight.requires_grad
    if bias_grad is None:
        bias_grad = has_bias and grad and weight_grad
    lx, lw = Geometry.of(x), Geometry.of(weight)
    lo = Geometry.of(output) if output is not None else None
    copies: list[KernelCopy] = []
    unknown: list[Unknown] = []
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
        lo = lo.unsqueeze(2) if lo is not None else None
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
                                  output_padding=output_padding, grad=grad, weight_grad=weight_grad,
                                  bias_grad=bias_grad, env=env, conv1d=spatial == 1)
    else:
        mkldnn = use_mkldnn
    backend, fmt = _backend(lx, lw, mkldnn, transposed, dilated)
    cl = CHANNELS_LAST if nd == 4 else CHANNELS_LAST_3D
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
    reduced, dt = lx.dtype in _REDUCED, dtype_name(lx.dtype)
    if mkldnn:
        unknown += _onednn_unknowns(kernel, dt, fmt, reduced, grad, orig_x.requires_grad, weight_grad)
        if spatial == 1 and reduced and env.amx and not orig_x.is_contiguous():
            unknown += _amx_conv1d_unknowns(kernel, dt, grad)
    else:
        more, open_parts = _native_copies(kernel, backend, fmt, lx, lw, lo, groups, has_bias, transposed, grad,
                                          bias_grad)
        copies += more
        unknown += open_parts
    return KernelPrediction(kernel, f"{kernel}: {backend}, {fmt}", tuple(copies), tuple(unknown), probe=call)


def conv_format(pred: KernelPrediction) -> str:
    """The memory format a conv prediction runs in (the last part of its ``path``: ``contiguous``,
    ``channels_last``, ``channels_last_3d``)."""
    return pred.path.rsplit(", ", 1)[-1]


def _backend(lx: Geometry, lw: Geometry, mkldnn: bool, transposed: bool, dilated: bool) -> tuple[str, str]:
    """(backend, memory format) of a 2-d/3-d conv (``_select_conv_backend`` on CPU, then
    ``determine_backend_memory_format``): oneDNN or a native kernel; channels_last when the input or
    the weight suggests it (native: 2-d only; never float64 through oneDNN)."""
    nd = lx.ndim
    cl = CHANNELS_LAST if nd == 4 else CHANNELS_LAST_3D
    suggests_cl = cl in (lx.suggest_memory_format(), lw.suggest_memory_format())
    if mkldnn:
        return "oneDNN", cl if suggests_cl and lx.dtype != torch.float64 else CONTIGUOUS
    if not transposed and nd == 5 and not dilated:
        backend = "slow 3-d"
    elif transposed:
        backend = f"slow transposed {nd - 2}-d"
    elif dilated:
        backend = f"slow dilated {nd - 2}-d"
    else:
        backend = "slow 2-d"
    return backend, cl if nd == 4 and suggests_cl else CONTIGUOUS


def _amx_conv1d_unknowns(kernel: str, dt: str, grad: bool) -> list[Unknown]:
    """A reduced-precision oneDNN conv1d of a strided input on a CPU with AMX (``ONEDNN_AMX_CONV1D``)."""
    why = (f"a {dt} {kernel} through oneDNN on a CPU with AMX makes a strided input contiguous more "
           "than once (measured on Sapphire Rapids; not ported)")
    out = [Unknown("forward", "input", ONEDNN_AMX_CONV1D, why)]
    if grad:
        out.append(Unknown("backward", "input", ONEDNN_AMX_CONV1D, why))
    return out


def _native_copies(kernel: str, backend: str, fmt: str, lx: Geometry, lw: Geometry, lo: Geometry | None,
                   groups: int, has_bias: bool, transposed: bool, grad: bool,
                   bias_grad: bool) -> tuple[list[KernelCopy], list[Unknown]]:
    """What the native kernels copy besides the format conversion: each group's slices (grouped
    convs), the bias into the output, and in bfloat16/float16 the float32 sum of the bias gradient."""
    copies: list[KernelCopy] = []
    unknown: list[Unknown] = []
    dt = dtype_name(lx.dtype)
    xf, wf = _in_format(lx, fmt), _in_format(lw, fmt)
    of = _in_format(lo, fmt) if lo is not None else None
    per_group = groups > 1 and backend != "slow 3-d"
    if per_group:
        copies += _grouped_copies(kernel, backend, xf, wf, of, groups, grad)
        if grad and of is None:
            unknown.append(Unknown("backward", "output", "conv-group-slice",
                                   "the output's layout, which decides the gradient's slices, is not known",
                                   machine=False))
    if has_bias and not transposed and of is not None and not eq(of.numel, 0):
        if "dilated" in backend:  # the bias is written channel by channel
            per = require_int(of.shape[0] * of.shape[1], "the channel count")
            copies.append(copy_of("bias", of, "aten::copy_", "bias-init",
                                  f"the {backend} kernel copies the bias into each output channel first",
                                  count=per, avoidable=False))
        else:
            copies.append(copy_of("bias", of, "aten::copy_", "bias-init",
                                  f"the {backend} kernel copies the bias into the output first",
                                  count=groups if per_group else 1, avoidable=False))
    if grad and bias_grad and lx.dtype in _REDUCED and "dilated" not in backend:
        # the native backward sums the bias gradient outside the kernel (per group when grouped)
        if of is None:
            unknown.append(Unknown("backward", "bias", "bias-grad-sum", "the output's shape is not known",
                                   machine=False))
        else:
            g_out = _in_format(_group_slice(of, 1, groups)[0], of.suggest_memory_format()) if per_group else of
            if _sum_uses_float_buffer(g_out):
                count = groups if per_group else 1
                channels = require_int(g_out.shape[1], "the channel count")
                copies.append(copy_of("bias", g_out, "aten::_to_copy", "bias-grad-sum",
                                      f"the {dt} bias gradient is summed over the batch and the positions in "
                                      "float32: sum() accumulates in a float32 copy of the output gradient",
                                      phase="backward", count=count, avoidable=False,
                                      nbytes=g_out.numel * 4 * count))
                copies.append(copy_of("bias", g_out, "aten::copy_", "bias-grad-sum",
                                      f"the float32 bias gradient, converted back to {dt}", phase="backward",
                                      count=count, avoidable=False, nbytes=channels * lx.itemsize * count))
    return copies, unknown


def _onednn_unknowns(kernel: str, dt: str, fmt: str, reduced: bool, grad: bool, input_grad: bool,
                     weight_grad: bool) -> list[Unknown]:
    """The parts of a oneDNN conv that oneDNN, not ATen, decides on this CPU (measured: the same
    shapes reorder on AVX512/AMX and AVX2 but not with oneDNN capped at SSE4.1, and channels_last
    backwards convert the weight again on AVX2/SSE4.1 but rarely on AVX512)."""
    out: list[Unknown] = []
    if fmt == CONTIGUOUS:
        out.append(Unknown("forward", "output", ONEDNN_REORDER,
                           f"whether oneDNN computes this {dt} {kernel} in a blocked layout of its own and copies "
                           "the output back depends on the kernel it picks for this CPU"))
        if grad and reduced:
            out.append(Unknown("backward", "*", ONEDNN_REORDER,
                               f"oneDNN's own reorders in the backward of a {dt} {kernel} depend on this CPU"))
        elif grad and input_grad:
            out.append(Unknown("backward", "input", ONEDNN_REORDER,
                               "whether oneDNN returns the input gradient in a layout of its own (then copied back) "
                               "depends on the kernel it picks for this CPU"))
    elif grad and (weight_grad or input_grad):
        out.append(Unknown("backward", "weight", ONEDNN_REORDER,
                           f"whether oneDNN's {fmt} backward converts the weight again depends on the kernel it "
                           "picks for this CPU"))
    return out


def _grouped_copies(kernel: str, backend: str, xf: Geometry, wf: Geometry, of: Geometry | None, groups: int,
                    grad: bool) -> list[KernelCopy]:
    """The native kernels run a grouped conv group by group (``_convolution``'s loop over
    ``subtensor``): each group's slice of the input, the weight and (in backward) the output
    gradient is made contiguous in its tensor's suggested format - a copy whenever the slice is
    not (a batch > 1 in the contiguous format; any batch in channels_last)."""
    out: list[KernelCopy] = []
    slices = [("input", xf, 1, "input"), ("weight", wf, 0, "weight")]
    for name, t, dim, what in slices:
        part, copied = _group_slice(t, dim, groups)
        if copied:
            why = (f"{kernel} ({backend}) runs group by group and makes each group's slice of the {what} "
                   f"contiguous: {groups} copies")
            # no layout of the operand avoids them (only oneDNN or a batch of one does): every program pays
            out.append(copy_of(name, part, "aten::contiguous", "conv-group-slice", why, count=groups,
                               nbytes=part.nbytes * groups, avoidable=False))
            if grad:
                out.append(copy_of(name, part, "aten::contiguous", "conv-group-slice",
                                   "the backward slices the saved " + what + " per group again", phase="backward",
                                   count=groups, nbytes=part.nbytes * groups, avoidable=False))
    if grad and of is not None:
        part, copied = _group_slice(of, 1, groups)
        if copied:
            out.append(copy_of("output", part, "aten::contiguous", "conv-group-slice",
                               "the backward makes each group's slice of the output gradient contiguous",
                               phase="backward", count=groups, nbytes=part.nbytes * groups, avoidable=False))
    return out


def _probe_call(x: TensorInfo, weight: TensorInfo, output: TensorInfo | None, has_bias: bool, transposed: bool,
                groups: int, stride: tuple, padding: Any, dilation: tuple, output_padding: tuple, grad: bool,
                weight_grad: bool | None, bias_grad: bool | None) -> OpCall | None:
    """How ``fxlint.kernels.probe`` can run this conv (None when a size or stride is symbolic)."""
    if padding is None:
        padding = (0,) * (weight.ndim - 2)
    if not isinstance(padding, str):
        padding = tuple(padding)
        if not all(isinstance(p, int) for p in padding):
            return None
    wg = weight.requires_grad if weight_grad is None else weight_grad
    bg = (has_bias and grad and wg) if bias_grad is None else bias_grad
    try:
        operands = [Operand.of("input", x), Operand.of("weight", weight, requires_grad=wg)]
        if has_bias:
            channels = weight.shape[1] * groups if transposed else weight.shape[0]
            operands.append(Operand.dense("bias", (channels,), x.dtype, requires_grad=bg))
        outputs = (tuple(output.shape),) if output is not None else ()
    except (TypeError, ValueError):  # symbolic sizes
        return None
    return OpCall("conv", tuple(operands), (("transposed", transposed), ("groups", groups), ("stride", stride),
                                             ("padding", padding), ("dilation", dilation),
                                             ("output_padding", output_padding)),
                  train=grad, outputs=outputs)


@runner("conv")
def _run_conv(t: dict[str, torch.Tensor], stride: tuple, padding: Any, dilation: tuple, output_padding: tuple,
              transposed: bool, groups: int) -> torch.Tensor:
    import torch.nn.functional as F

    nd = t["weight"].ndim - 2
    fn: Callable[..., torch.Tensor]
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return fn(t["input"], t["weight"], t.get("bias"), stride=stride, padding=padding,
                  output_padding=output_padding, groups=groups, dilation=dilation)
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return fn(t["input"], t["weight"], t.get("bias"), stride=stride, padding=padding, dilation=dilation,
              groups=groups)


def _agreeing_conv(x: TensorInfo, weight: TensorInfo, *, conv1d: bool, stride: Sequence[Any],
                   dilation: Sequence[Any], output_padding: Sequence[Any], **kw: Any) -> KernelPrediction | None:
    """The copies oneDNN and the native kernel would both make, when symbols pick between them;
    where they differ, that part is unknown."""
    if conv1d:  # predict_conv prepended the 2-d view's unit dim to these; hand back the 1-d ones
        stride, dilation, output_padding = stride[1:], dilation[1:], output_padding[1:]
    a, b = (predict_conv(x, weight, stride=stride, dilation=dilation, output_padding=output_padding,
                         use_mkldnn=flag, **kw) for flag in (True, False))
    if a is None or b is None:
        return None

    def key(c: KernelCopy) -> tuple:
        return (c.operand, c.phase, c.op, str(c.nbytes), c.count, c.avoidable)

    keys_a, keys_b = {key(c) for c in a.copies}, {key(c) for c in b.copies}
    common = [c for c in a.copies if key(c) in keys_b]
    unknown = list(dict.fromkeys((*a.unknown, *b.unknown)))
    for c in [c for c in a.copies if key(c) not in keys_b] + [c for c in b.copies if key(c) not in keys_a]:
        unknown.append(Unknown(c.phase, c.operand, c.reason, "a dynamic size decides between oneDNN and the "
                               "native kernel, which differ here", machine=False))
    return KernelPrediction(a.kernel, f"{a.kernel}: oneDNN or native (decided by a dynamic size)", tuple(common),
                            tuple(dict.fromkeys(unknown)))


def predict_conv_node(node: Any, x: TensorInfo | None = None, env: Env | None = None) -> KernelPrediction | None:
    """The prediction for a canonical ``conv`` node, optionally as if its input were ``x``."""
    args = node.args
    x = x if x is not None else tensor_arg(node, "input")
    w = args.get("weight_info")
    if x is None or not isinstance(w, TensorInfo):
        return None
    bias = tensor_arg(node, "bias")
    grad = needs_grad(node, x, w, bias)
    weight_grad = w.requires_grad and bool(node.grad_enabled)
    bias_grad = (bias.requires_grad if bias is not None else weight_grad) and bool(node.grad_enabled)
    return predict_conv(
        x, w, output=node.tensor, has_bias=bool(args.get("has_bias", True)),
        transposed=bool(args.get("transposed")), groups=args.get("groups", 1),
        stride=args.get("stride"), padding=args.get("padding"), dilation=args.get("dilation"),
        output_padding=args.get("output_padding"), grad=grad, weight_grad=weight_grad, bias_grad=bias_grad, env=env)


# --------------------------------------------------------------------------- models


@kernel_model("conv", family="conv", operands={"input": "input", "weight": "weight", "bias": "bias",
                                               "output": "output"})
def _conv(node: Any, env: Env) -> KernelPrediction | None:
    return predict_conv_node(node, env=env)

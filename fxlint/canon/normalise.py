"""The normalisers: one registered function per canonical op family.

Each reads the call through ``Call`` (arguments bound by name, whatever the
spelling) and returns the canonical ``args``; see ``registry.normaliser`` for
the registration and ``fxlint.canon`` for the table of ops they produce.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx as fx
import torch.nn as nn

from ..tensor.info import TensorInfo
from ._fx import flatten, wrap_dim
from .nodes import CanonNode, IndexItem, IndexSpec, subscript_text
from .op_registry import Args, Call, declare, normaliser

# --------------------------------------------------------------------------- layout views


@normaliser(
    "permute",
    spellings={"permute", "transpose", "transpose_", "swapaxes", "swapdims", "t", "t_", "T", "mT", "H", "mH",
               "numpy_T", "adjoint", "movedim", "moveaxis"},
    view=True,
    doc="input, dims (the full permutation), written (the two dims as a transpose wrote them, a one-operand "
        "einsum's equation, else None)",
)
def permute(c: Call) -> Args:
    dims, written = _perm_dims(c)
    return {"input": c.input, "dims": dims, "written": written}


def _perm_dims(c: Call) -> tuple[tuple[int, ...] | None, tuple[int, int] | None]:
    raw, rank = c.raw, c.rank
    if rank is None:
        return None, None
    ident = list(range(rank))
    if raw in ("transpose", "transpose_", "swapaxes", "swapdims"):
        d0, d1 = c.first("dim0", "axis0"), c.first("dim1", "axis1")
        if not isinstance(d0, int) or not isinstance(d1, int) or rank == 0:
            return None, None
        a, b = wrap_dim(d0, rank), wrap_dim(d1, rank)
        ident[a], ident[b] = ident[b], ident[a]
        return tuple(ident), (d0, d1)
    if raw in ("t", "t_", "H"):
        return (tuple(reversed(ident)) if rank == 2 else tuple(ident)), None
    if raw in ("T", "numpy_T"):
        return tuple(reversed(ident)), None
    if raw in ("mT", "mH", "adjoint"):
        if rank < 2:
            return None, None
        ident[-1], ident[-2] = ident[-2], ident[-1]
        return tuple(ident), None
    if raw == "permute":
        dims = c.get("dims")
        dims = list(dims) if isinstance(dims, (list, tuple)) else [dims]
        if not all(isinstance(d, int) for d in dims) or len(dims) != rank:
            return None, None
        return tuple(wrap_dim(d, rank) for d in dims), None
    # movedim / moveaxis
    src, dst = c.get("source"), c.get("destination")
    src = [src] if isinstance(src, int) else list(src or [])
    dst = [dst] if isinstance(dst, int) else list(dst or [])
    if not all(isinstance(d, int) for d in src + dst) or len(src) != len(dst):
        return None, None
    src = [wrap_dim(d, rank) for d in src]
    dst = [wrap_dim(d, rank) for d in dst]
    perm: list[int | None] = [None] * rank
    for s, d in zip(src, dst):
        perm[d] = s
    rest = iter(d for d in ident if d not in src)
    return tuple(p if p is not None else next(rest) for p in perm), None


def _out_shape(c: Call) -> Args:
    out = c.out
    return {"input": c.input, "shape": out.shape if out is not None else None}


@normaliser("view", spellings={"view", "view_as", "_unsafe_view", "_reshape_alias"}, view=True,
            doc="input, shape (the result's)")
def view(c: Call) -> Args:
    return _out_shape(c)


@normaliser("reshape", spellings={"reshape", "reshape_as", "flatten", "unflatten", "ravel"}, maybe_view=True,
            modules={nn.Flatten: "reshape"}, doc="input, shape (the result's)")
def reshape(c: Call) -> Args:
    return _out_shape(c)


@normaliser("expand", spellings={"expand", "expand_as", "broadcast_to", "expand_copy"}, view=True,
            doc="input, shape (the result's)")
def expand(c: Call) -> Args:
    return _out_shape(c)


@normaliser("repeat", spellings={"repeat", "tile"}, doc="input, repeats, style (the spelling)")
def repeat(c: Call) -> Args:
    reps = c.first("repeats", "dims")
    reps = list(reps) if isinstance(reps, (list, tuple)) else [reps]
    return {"input": c.input, "repeats": tuple(c.conv(reps)), "style": c.raw}


@normaliser("repeat_interleave", spellings={"repeat_interleave"},
            doc="input, repeats (an int or SymInt node; a tensor of counts stays a node), dim (None: flattened)")
def repeat_interleave(c: Call) -> Args:
    # kept apart from ``repeat``: [a, b] -> [a, a, b, b], not the tiling [a, b, a, b]
    return {"input": c.input, "repeats": c.conv(c.get("repeats")), "dim": c.get("dim")}


# --------------------------------------------------------------------------- indexing


@normaliser("slice", spellings={"slice", "narrow", "select"}, view=True,
            doc="input, index: IndexSpec (basic indexing: slices, ints, None; ``getitem`` makes it too)")
def slice_(c: Call) -> Args | None:
    rank = c.rank
    if rank is None:
        return None
    items = _full_slices(rank)
    d = wrap_dim(c.get("dim", 0), rank)
    if c.raw == "slice":
        start, end, step = c.get("start"), c.get("end"), c.get("step", 1)
        if isinstance(end, int) and end >= 2**62:
            end = None
        items[d] = IndexItem("slice", dim=d, start=c.conv(start), stop=c.conv(end), step=c.conv(step))
        style = "aten.slice"
    elif c.raw == "narrow":
        start, length = c.get("start"), c.get("length")
        stop = start + length if isinstance(start, int) and isinstance(length, int) else None
        items[d] = IndexItem("slice", dim=d, start=c.conv(start), stop=stop, step=1)
        style = "narrow"
    else:
        items[d] = IndexItem("int", dim=d, value=c.conv(c.get("index")))
        style = "select"
    return {"input": c.input, "index": IndexSpec(tuple(items), style)}


declare("tuple_getitem", passthrough=True,
        doc="input, index (an element of a tuple value: ``getitem`` on a non-tensor)")


@normaliser("index", spellings={"getitem", "index_select", "index", "_unsafe_index"},
            doc="input, index: IndexSpec (advanced: lists, index tensors, masks); index_select also dim")
def index(c: Call) -> Args | None:
    inp, raw = c.input, c.raw
    if raw == "getitem":
        if inp is None or inp.tensor is None:
            c.op = "tuple_getitem"
            return {"input": inp, "index": c.get("index")}
        spec = _getitem_spec(c, inp)
        c.op = "index" if spec.is_advanced else "slice"
        return {"input": inp, "index": spec}
    rank = c.rank
    if raw == "index_select":
        dim = c.get("dim", 0)
        items = _full_slices(rank or 0)
        d = wrap_dim(dim, rank or 0) if isinstance(dim, int) else 0
        if items:
            items[d] = _index_item(c, c.get("index"), d)
        return {"input": inp, "index": IndexSpec(tuple(items), "index_select"), "dim": d}
    # aten.index / aten._unsafe_index (a Tensor method of that name is something else)
    if c.node.op != "call_function" or not isinstance(c.node.target, (torch._ops.OpOverload,
                                                                      torch._ops.OpOverloadPacket)):
        return None
    items = _full_slices(rank or 0)
    for d, ix in enumerate(c.get("indices", [])):
        if ix is not None and d < len(items):
            items[d] = _index_item(c, ix, d)
    return {"input": inp, "index": IndexSpec(tuple(items), "aten.index")}


@normaliser("setitem", spellings={"setitem"}, kinds=("call_function",),
            doc="input (the tensor written), index: IndexSpec (as ``getitem``'s: what ``input[index]`` reads "
                "is the region written), value (a node, or the Python scalar written)")
def setitem(c: Call) -> Args | None:
    inp = c.input
    if inp is None or inp.tensor is None:
        return None  # a write into a list or a dict: no tensor region
    spec = _getitem_spec(c, inp)
    return {"input": inp, "index": IndexSpec(spec.items, "setitem", spec.written), "value": c.conv(c.get("value"))}


def _full_slices(rank: int) -> list[IndexItem]:
    return [IndexItem("slice", dim=d) for d in range(rank)]


def _is_mask(dtype: torch.dtype) -> bool:
    return dtype in (torch.bool, torch.uint8)


def _index_item(c: Call, ix: Any, dim: int) -> IndexItem:
    """An advanced index (list, tuple, tensor node, constant tensor) at ``dim``."""
    if isinstance(ix, fx.Node):
        cn = c.map.get(ix)
        t = cn.tensor if cn is not None else None
        name = cn.name if cn is not None else None
        if t is not None and _is_mask(t.dtype):
            return IndexItem("mask", dim=dim, index=cn, index_shape=t.shape, spelled=name)
        return IndexItem("tensor", dim=dim, index=cn, index_shape=t.shape if t is not None else None, spelled=name)
    if isinstance(ix, torch.Tensor):
        if _is_mask(ix.dtype):
            return IndexItem("mask", dim=dim, index_shape=tuple(ix.shape), spelled="<mask>")
        ints = tuple(int(v) for v in ix.reshape(-1).tolist())
        return IndexItem("tensor", dim=dim, values=ints, index_shape=tuple(ix.shape), spelled=str(list(ints)))
    if isinstance(ix, (list, tuple, range)):
        flat = list(flatten(list(ix)))
        if flat and all(isinstance(v, bool) for v in flat):
            return IndexItem("mask", dim=dim, index_shape=(len(flat),), spelled=str(list(ix)))
        nodes = [v for v in flat if isinstance(v, fx.Node)]
        vals = tuple(v for v in flat if isinstance(v, int)) if not nodes else None
        text = "[" + ", ".join(v.name if isinstance(v, fx.Node) else str(v) for v in ix) + "]"
        return IndexItem("tensor", dim=dim, values=vals, index_shape=_nested_shape(list(ix)), spelled=text)
    return IndexItem("tensor", dim=dim, spelled=str(ix))


def _nested_shape(x: Any) -> tuple[int, ...]:
    if isinstance(x, (list, tuple)):
        return (len(x), *(_nested_shape(x[0]) if x else ()))
    return ()


def _getitem_spec(c: Call, inp: Any) -> IndexSpec:
    idx = c.get("index")
    items_in = list(idx) if isinstance(idx, tuple) else [idx]
    rank = inp.tensor.ndim

    def consumed(it: Any) -> int:
        if it is None or it is Ellipsis:
            return 0
        if isinstance(it, fx.Node):
            cn = c.map.get(it)
            t = cn.tensor if cn is not None else None
            if t is not None and _is_mask(t.dtype):
                return max(t.ndim, 1)
        if isinstance(it, torch.Tensor) and _is_mask(it.dtype):
            return max(it.ndim, 1)
        return 1

    used = sum(consumed(i) for i in items_in)
    items: list[IndexItem] = []
    dim = 0
    for it in items_in:
        if it is Ellipsis:
            for _ in range(max(rank - used, 0)):
                items.append(IndexItem("slice", dim=dim))
                dim += 1
        elif it is None:
            items.append(IndexItem("newaxis"))
        elif isinstance(it, slice):
            items.append(IndexItem("slice", dim=dim, start=c.conv(it.start), stop=c.conv(it.stop),
                                   step=c.conv(it.step)))
            dim += 1
        elif isinstance(it, int) and not isinstance(it, bool):
            items.append(IndexItem("int", dim=dim, value=it))
            dim += 1
        elif isinstance(it, fx.Node) and not isinstance(getattr(c.map.get(it), "value", None), TensorInfo):
            items.append(IndexItem("int", dim=dim, value=c.map.get(it)))  # a SymInt index
            dim += 1
        else:
            items.append(_index_item(c, it, dim))
            dim += consumed(it)
    while dim < rank:
        items.append(IndexItem("slice", dim=dim))
        dim += 1
    return IndexSpec(tuple(items), "getitem", subscript_text(c.conv(idx)), lone=isinstance(idx, slice))


# --------------------------------------------------------------------------- copies and conversions


@normaliser("contiguous", spellings={"contiguous"}, maybe_view=True, doc="input, memory_format")
def contiguous(c: Call) -> Args:
    return {"input": c.input, "memory_format": c.get("memory_format", torch.contiguous_format)}


@normaliser("clone", spellings={"clone"}, doc="input, memory_format")
def clone(c: Call) -> Args:
    return {"input": c.input, "memory_format": c.get("memory_format", torch.preserve_format)}


_METHOD_DTYPES = {
    "float": torch.float32, "double": torch.float64, "half": torch.float16,
    "bfloat16": torch.bfloat16, "int": torch.int32, "long": torch.int64, "short": torch.int16,
    "bool": torch.bool, "byte": torch.uint8, "char": torch.int8,
    "cfloat": torch.complex64, "cdouble": torch.complex128,
}


@normaliser(
    "to",
    spellings={"to", "_to_copy", "type", "type_as", "cuda", "cpu", "_to_dtype", *_METHOD_DTYPES},
    maybe_view=True,
    doc="input, dtype, device, memory_format, copy, non_blocking, style (the spelling)",
)
def to(c: Call) -> Args:
    raw, node = c.raw, c.node
    # what the graph passes: a dtype/device/format, or an fx.Node that computes one
    dtype: Any = None
    device: Any = None
    memory_format: Any = None
    copy = False
    # positional flags follow the target: to(..., non_blocking, copy), cuda(device, non_blocking)
    flags = [a for a in node.args[1:] if isinstance(a, bool)]
    non_blocking = bool(node.kwargs.get("non_blocking", False)) or (raw in ("to", "cuda") and flags[:1] == [True])
    if raw in _METHOD_DTYPES:
        dtype = _METHOD_DTYPES[raw]
        memory_format = node.kwargs.get("memory_format")
    elif raw in ("cuda", "cpu"):
        device = raw if raw == "cpu" else (c.get("device") or "cuda")
    else:
        # ``to`` has overloads by type (dtype, device, other tensor) at the same positions: read
        # each positional by what it is, as PyTorch's argument parser does
        for a in list(node.args[1:]):
            if isinstance(a, torch.dtype):
                dtype = a
            elif isinstance(a, (str, torch.device)):
                device = a
            elif isinstance(a, fx.Node):
                other = c.node_of(a)
                if other is not None and other.tensor is not None:
                    dtype, device = other.tensor.dtype, other.tensor.device
        copy = len(flags) > 1 and flags[1]  # the first flag is never `copy`
        dtype = node.kwargs.get("dtype", dtype)
        device = node.kwargs.get("device", device)
        memory_format = node.kwargs.get("memory_format", memory_format)
        copy = bool(node.kwargs.get("copy", copy))
        if raw == "_to_copy":
            copy = True
    return {"input": c.input, "dtype": dtype, "device": device, "memory_format": memory_format, "copy": copy,
            "non_blocking": non_blocking, "style": raw}


# --------------------------------------------------------------------------- gradient cuts


# aten.alias keeps the autograd graph: it is a view, not a cut
@normaliser("detach", spellings={"detach", "detach_"}, view=True,
            doc="input, inplace (``aten.alias`` keeps the autograd graph: a view, not a detach)")
def detach(c: Call) -> Args:
    return {"input": c.input, "inplace": c.raw == "detach_"}


@normaliser("data", spellings={"data", "_get_data_attr"}, view=True, doc="input (``x.data``)")
def data(c: Call) -> Args:
    return {"input": c.input}


# --------------------------------------------------------------------------- kernels


@normaliser("mm", "bmm", "matmul", "mv", "dot",
            spellings={"mm": "mm", "bmm": "bmm", "matmul": "matmul", "__matmul__": "matmul", "mv": "mv",
                       "dot": "dot"},
            doc="a, b")
def matmul(c: Call) -> Args:
    return {"a": c.input, "b": c.conv(c.first("other", "mat2", "vec", "tensor"))}


@normaliser("addmm", "baddbmm", "addbmm", "addmv",
            spellings={"addmm": "addmm", "baddbmm": "baddbmm", "addbmm": "addbmm", "addmv": "addmv"},
            doc="bias, a, b")
def addmm(c: Call) -> Args:
    return {"bias": c.input, "a": c.conv(c.first("mat1", "batch1", "mat")),
            "b": c.conv(c.first("mat2", "batch2", "vec"))}


@normaliser("linear", spellings={"linear"}, modules={nn.Linear: "linear"},
            doc="input, weight, bias; as a module: weight and bias None, weight_info, has_bias")
def linear(c: Call) -> Args:
    if not c.is_module:
        return {"input": c.input, "weight": c.conv(c.get("weight")), "bias": c.conv(c.get("bias"))}
    mod = c.module
    return {"input": c.input, "weight": None, "bias": None,
            "weight_info": TensorInfo.from_tensor(mod.weight) if isinstance(mod, nn.Linear) else None,
            "has_bias": getattr(mod, "bias", None) is not None}


@normaliser(
    "conv",
    spellings={"conv1d", "conv2d", "conv3d", "convolution", "_convolution", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d"},
    modules={nn.modules.conv._ConvNd: "conv"},
    doc="input, weight, bias, transposed, groups, weight_info, has_bias, stride, padding, dilation, "
        "output_padding (one entry per spatial dim)",
)
def conv(c: Call) -> Args:
    if c.is_module:
        mod = c.module
        w = getattr(mod, "weight", None)
        args = {
            "input": c.input, "weight": None, "bias": None,
            "weight_info": TensorInfo.from_tensor(w) if isinstance(w, torch.Tensor) else None,
            "transposed": bool(getattr(mod, "transposed", False)), "groups": getattr(mod, "groups", 1),
            "has_bias": getattr(mod, "bias", None) is not None,
        }
        spatial = w.dim() - 2 if isinstance(w, torch.Tensor) else None
        args.update(_conv_geometry(spatial, getattr(mod, "stride", 1), getattr(mod, "padding", 0),
                                   getattr(mod, "dilation", 1), getattr(mod, "output_padding", 0)))
        return args
    weight = c.conv(c.get("weight"))
    bias = c.conv(c.get("bias"))
    if c.raw in ("convolution", "_convolution"):
        transposed = bool(c.get("transposed", False))
    else:
        transposed = c.raw.startswith("conv_transpose")
    winfo = weight.tensor if isinstance(weight, CanonNode) else None
    args = {"input": c.input, "weight": weight, "bias": bias, "weight_info": winfo,
            "transposed": transposed, "groups": c.get("groups", 1), "has_bias": bias is not None}
    # convNd has no output_padding (0); conv_transposeNd and convolution name it
    args.update(_conv_geometry(winfo.ndim - 2 if winfo is not None else None, c.get("stride", 1),
                               c.get("padding", 0), c.get("dilation", 1), c.get("output_padding", 0)))
    return args


def _conv_geometry(spatial: int | None, stride: Any, padding: Any, dilation: Any,
                   output_padding: Any) -> dict[str, Any]:
    """stride/padding/dilation/output_padding as one entry per spatial dim (ints or SymInt nodes);
    padding may stay a string ("same"/"valid"); None where it cannot be normalised."""

    def per_dim(v: Any) -> Any:
        if isinstance(v, str):
            return v
        if isinstance(v, (list, tuple)):
            vals = tuple(v)
            if spatial is not None and len(vals) == 1 and spatial > 1:
                vals = vals * spatial
            return vals
        if isinstance(v, int) and spatial is not None:
            return (v,) * spatial
        return None

    return {"stride": per_dim(stride), "padding": per_dim(padding), "dilation": per_dim(dilation),
            "output_padding": per_dim(output_padding)}


@normaliser(
    "layer_norm", "group_norm", "batch_norm", "instance_norm", "rms_norm",
    spellings={
        "layer_norm": "layer_norm", "native_layer_norm": "layer_norm",
        "group_norm": "group_norm", "native_group_norm": "group_norm",
        "batch_norm": "batch_norm", "native_batch_norm": "batch_norm",
        "_native_batch_norm_legit": "batch_norm", "_native_batch_norm_legit_no_training": "batch_norm",
        "_native_batch_norm_legit_functional": "batch_norm", "instance_norm": "instance_norm",
        "rms_norm": "rms_norm", "_fused_rms_norm": "rms_norm",
    },
    modules={nn.LayerNorm: "layer_norm", nn.GroupNorm: "group_norm",
             nn.modules.batchnorm._BatchNorm: "batch_norm", nn.modules.instancenorm._InstanceNorm: "instance_norm"},
    label="layer_norm/...",
    doc="input, rest, kwargs (the rest of the call as written); batch_norm also has training (bool, None if "
        "unknown)",
)
def norm(c: Call) -> Args:
    node = c.node
    args = {"input": c.input, "rest": c.conv(list(node.args[1:])), "kwargs": c.conv(dict(node.kwargs))}
    if c.op == "batch_norm":
        args["training"] = _batch_norm_training(c)
    return args


def _batch_norm_training(c: Call) -> bool | None:
    """Whether a batch norm normalises with batch statistics (training mode); None when unknown."""
    if c.is_module:
        mod = c.module
        if mod is None:
            return None
        return bool(mod.training or not getattr(mod, "track_running_stats", True))
    if c.raw == "_native_batch_norm_legit_no_training":
        return False
    val = c.get("training")
    return val if isinstance(val, bool) else None


@normaliser("softmax", "log_softmax",
            spellings={"softmax": "softmax", "_softmax": "softmax", "log_softmax": "log_softmax",
                       "_log_softmax": "log_softmax"},
            modules={nn.Softmax: "softmax", nn.LogSoftmax: "log_softmax"}, doc="input, dim")
def softmax(c: Call) -> Args:
    if c.is_module:
        return {"input": c.input, "dim": getattr(c.module, "dim", None)}
    return {"input": c.input, "dim": c.get("dim")}


@normaliser("pad", spellings={"pad", "constant_pad_nd"}, modules={nn.modules.padding._ConstantPadNd: "pad"},
            doc="input, pad (the widths as written: last dim first, (left, right) pairs; ints or SymInt nodes), "
                "mode (constant, reflect, replicate, circular), value")
def pad(c: Call) -> Args:
    if c.is_module:
        mod = c.module
        widths = getattr(mod, "padding", None)
        return {"input": c.input, "pad": tuple(widths) if isinstance(widths, (list, tuple)) else None,
                "mode": "constant", "value": getattr(mod, "value", 0.0)}
    widths = c.first("pad", default=c.node.args[1] if len(c.node.args) > 1 else None)
    mode = "constant" if c.raw == "constant_pad_nd" else c.get("mode", "constant")
    value = c.get("value", 0.0)
    return {"input": c.input, "pad": tuple(c.conv(list(widths))) if isinstance(widths, (list, tuple)) else None,
            "mode": mode if isinstance(mode, str) else None, "value": 0.0 if value is None else c.conv(value)}


@normaliser("istft", spellings={"istft"}, kinds=("call_function", "call_method"),
            doc="input (the complex (N, F, T) or (F, T) spectrogram), n_fft, hop_length, win_length, window, "
                "center, normalized, onesided, length, return_complex")
def istft(c: Call) -> Args:
    return {"input": c.input, "n_fft": c.conv(c.get("n_fft")), "hop_length": c.conv(c.get("hop_length")),
            "win_length": c.conv(c.get("win_length")), "window": c.conv(c.get("window")),
            "center": c.conv(c.get("center", True)), "normalized": c.conv(c.get("normalized", False)),
            "onesided": c.conv(c.get("onesided")), "length": c.conv(c.get("length")),
            "return_complex": c.conv(c.get("return_complex", False))}


@normaliser("scaled_dot_product_attention", spellings={"scaled_dot_product_attention"},
            doc="query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa")
def sdpa(c: Call) -> Args:
    return {"query": c.input, "key": c.conv(c.get("key")), "value": c.conv(c.get("value")),
            "attn_mask": c.conv(c.get("attn_mask")), "dropout_p": c.conv(c.get("dropout_p", 0.0)),
            "is_causal": c.conv(c.get("is_causal", False)), "scale": c.conv(c.get("scale")),
            "enable_gqa": c.conv(c.get("enable_gqa", False))}


@normaliser("einsum", spellings={"einsum"}, kinds=("call_function",),
            doc="equation, operands, a and b (the first two operands)")
def einsum(c: Call) -> Args | None:
    args = list(c.node.args)
    if not args or not isinstance(args[0], str):
        return None
    rest = args[1:]
    if len(rest) == 1 and isinstance(rest[0], (list, tuple)):
        rest = list(rest[0])
    ops = [c.conv(x) for x in rest]
    dims = _einsum_permutation(args[0], ops)
    if dims is not None:  # one operand, every index kept once: a permute, a view of the operand
        c.op = "permute"
        return {"input": ops[0], "dims": dims, "written": args[0]}
    return {"equation": args[0], "operands": ops, "a": ops[0] if ops else None,
            "b": ops[1] if len(ops) > 1 else None}


def _einsum_permutation(equation: str, ops: list[Any]) -> tuple[int, ...] | None:
    """The permutation a one-operand einsum is (``"nhwpqc->nchpwq"``: (0, 5, 1, 3, 2, 4)); None for anything
    else (a sum, a diagonal, an ellipsis, several operands)."""
    if len(ops) != 1 or not isinstance(ops[0], CanonNode) or ops[0].tensor is None:
        return None
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    if not arrow or "." in lhs or not lhs.isalpha() or len(set(lhs)) != len(lhs) or sorted(lhs) != sorted(rhs) \
            or len(lhs) != ops[0].tensor.ndim:
        return None
    return tuple(lhs.index(ch) for ch in rhs)


@normaliser("avg_pool2d", "max_pool2d", "adaptive_avg_pool2d",
            spellings={"avg_pool2d": "avg_pool2d", "max_pool2d": "max_pool2d",
                       "max_pool2d_with_indices": "max_pool2d", "adaptive_avg_pool2d": "adaptive_avg_pool2d",
                       "_adaptive_avg_pool2d": "adaptive_avg_pool2d"},
            modules={nn.AvgPool2d: "avg_pool2d", nn.MaxPool2d: "max_pool2d",
                     nn.AdaptiveAvgPool2d: "adaptive_avg_pool2d"},
            kinds=("call_function", "call_module"), doc="input, output_size (adaptive pooling; else None)")
def pool2d(c: Call) -> Args:
    if c.is_module:  # nn.AvgPool2d/MaxPool2d/AdaptiveAvgPool2d: the arguments are the module's
        return {"input": c.input, "output_size": getattr(c.module, "output_size", None) if "adaptive" in c.op
                else None}
    return {"input": c.input, "output_size": c.conv(c.get("output_size")) if "adaptive" in c.op else None}


_UPSAMPLE = {"upsample_nearest2d": "nearest", "_upsample_nearest_exact2d": "nearest-exact",
             "upsample_bilinear2d": "bilinear", "upsample_bicubic2d": "bicubic"}


@normaliser("upsample", spellings={"interpolate", "upsample", *_UPSAMPLE}, modules={nn.Upsample: "upsample"},
            kinds=("call_function", "call_module"),
            doc="input, mode (F.interpolate's; None for an antialiased one), align_corners")
def upsample(c: Call) -> Args:
    if c.is_module:  # nn.Upsample (and UpsamplingNearest2d/Bilinear2d): the arguments are the module's
        mod = c.module
        mode = getattr(mod, "mode", None)
        return {"input": c.input, "mode": mode if isinstance(mode, str) else None,
                "align_corners": getattr(mod, "align_corners", None)}
    if c.raw in _UPSAMPLE:
        return {"input": c.input, "mode": _UPSAMPLE[c.raw], "align_corners": c.get("align_corners")}
    mode = c.get("mode", "nearest")
    antialias = c.get("antialias", False)
    return {"input": c.input, "mode": mode if isinstance(mode, str) and antialias is False else None,
            "align_corners": c.get("align_corners")}


@normaliser("im2col", spellings={"im2col", "unfold"}, modules={nn.Unfold: "im2col"},
            kinds=("call_function", "call_module"),
            doc="input (``F.unfold``/``aten.im2col``/``nn.Unfold``; ``Tensor.unfold`` stays the view ``unfold``)")
def im2col(c: Call) -> Args | None:
    if c.is_module:
        return {"input": c.input} if isinstance(c.module, nn.Unfold) else None
    target = c.node.target
    if c.raw == "unfold" and target is not torch.nn.functional.unfold:
        return None  # Tensor.unfold(dim, size, step): a view
    return {"input": c.input}


_RNN_MODES = {"lstm": "LSTM", "gru": "GRU", "rnn_tanh": "RNN_TANH", "rnn_relu": "RNN_RELU"}


@normaliser("rnn", spellings={*_RNN_MODES, "rnn"}, modules={nn.RNNBase: "rnn"},
            kinds=("call_function", "call_module"),
            doc="input, mode (LSTM, GRU, RNN_TANH, RNN_RELU), batch_first, bidirectional, proj (an LSTM with "
                "proj_size); "
                "a PackedSequence input is not this op (``nn.LSTM``/``GRU``/``RNN`` as "
                "``torch._VF.lstm``... under ``allow_rnn``, or as a module)")
def rnn(c: Call) -> Args | None:
    if c.is_module:
        mod = c.module
        if not isinstance(mod, nn.RNNBase) or not isinstance(c.input, CanonNode) or c.input.tensor is None:
            return None  # a PackedSequence (or no tensor value): no layout to read
        return {"input": c.input, "mode": mod.mode, "batch_first": bool(mod.batch_first),
                "proj": bool(getattr(mod, "proj_size", 0)), "bidirectional": bool(mod.bidirectional)}
    if c.raw not in _RNN_MODES:
        return None
    args = c.args
    # lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first); the packed
    # overload is lstm(data, batch_sizes, hx, params, has_biases, ...): its 4th argument is the params list
    if len(args) < 9 or not isinstance(args[3], bool) or not isinstance(args[7], bool) \
            or not isinstance(args[8], bool):
        return None
    hx = args[1]
    proj = False
    if c.raw == "lstm" and isinstance(hx, (list, tuple)) and len(hx) == 2:
        h, cell = (c.node_of(v) for v in hx)
        th, tc = (n.tensor if n is not None else None for n in (h, cell))
        proj = th is not None and tc is not None and th.shape[-1:] != tc.shape[-1:]
    return {"input": c.input, "mode": _RNN_MODES[c.raw], "batch_first": args[8], "proj": proj,
            "bidirectional": args[7]}


# --------------------------------------------------------------------------- factories, grad mode, host syncs

FACTORIES = frozenset({
    "arange", "range", "zeros", "ones", "full", "empty", "eye", "linspace", "logspace", "rand",
    "randn", "randint", "randperm", "tensor", "as_tensor", "scalar_tensor", "empty_strided",
    "tril_indices", "triu_indices",
})


@normaliser("factory", spellings=FACTORIES, kinds=("call_function",),
            doc="kind (the spelling), args, device (explicit or None), dtype")
def factory(c: Call) -> Args:
    # device and dtype are keyword-only in every factory
    return {"kind": c.raw, "args": c.conv(list(c.node.args)), "device": c.kwargs.get("device"),
            "dtype": c.kwargs.get("dtype")}


@normaliser(
    "set_grad_enabled",
    spellings={"_set_grad_enabled", "set_grad_enabled", "_enter_inference_mode", "_exit_inference_mode"},
    doc='enabled, style: ``"set_grad_enabled"`` (``no_grad``, ``enable_grad``, ``set_grad_enabled`` as '
        'Dynamo records them) or ``"inference_mode"`` (enter/exit; ``enabled`` is resolved to the grad mode '
        "in force after the node)",
)
def set_grad_enabled(c: Call) -> Args | None:
    if c.raw in ("_set_grad_enabled", "set_grad_enabled"):
        return {"enabled": c.first("mode", "enabled"), "style": "set_grad_enabled"}
    if c.node.op != "call_function":
        return None
    # `with torch.inference_mode():` as Dynamo records it; the builder resolves `enabled`
    enter = c.raw == "_enter_inference_mode"
    return {"enabled": None, "style": "inference_mode", "enter": enter,
            "mode": c.get("mode", True) if enter else None}


declare("grad_region",
        doc="enabled, returns (export's ``wrap_with_set_grad_enabled``: its inputs are the inlined region's "
            "results)")


@normaliser("item", "tolist", "numpy",
            spellings={"item": "item", "_local_scalar_dense": "item", "tolist": "tolist", "numpy": "numpy"},
            doc="input")
def host_sync(c: Call) -> Args:
    return {"input": c.input}


@normaliser("size", spellings={"size", "shape", "dim", "stride", "sym_size", "sym_stride", "numel", "sym_numel"},
            doc="input, args")
def size(c: Call) -> Args:
    return {"input": c.input, "args": list(c.node.args[1:])}


# --------------------------------------------------------------------------- collectives

#: what each functional collective is (``dist.all_reduce(x)`` and friends are captured as these:
#: ``torch.ops._c10d_functional.*`` then ``wait_tensor``); the ``_coalesced`` forms take a list
_COLLECTIVES = {
    "all_reduce": "all_reduce", "all_reduce_": "all_reduce", "all_reduce_coalesced": "all_reduce",
    "all_reduce_coalesced_": "all_reduce", "all_gather_into_tensor": "all_gather",
    "all_gather_into_tensor_out": "all_gather", "all_gather_into_tensor_coalesced": "all_gather",
    "reduce_scatter_tensor": "reduce_scatter", "reduce_scatter_tensor_out": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter", "all_to_all_single": "all_to_all",
    "broadcast": "broadcast", "broadcast_": "broadcast",
}
_COLLECTIVE_NAMESPACES = frozenset({"_c10d_functional", "c10d_functional", "_c10d_functional_autograd"})


def _c10d_op(c: Call) -> bool:
    t = c.node.target
    if c.node.op != "call_function" or not isinstance(t, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return False
    qualified = getattr(t, "_qualified_op_name", None) or getattr(t, "name", lambda: "")()
    return str(qualified).split("::", 1)[0] in _COLLECTIVE_NAMESPACES


@normaliser(
    "collective", spellings=set(_COLLECTIVES),
    doc="kind (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast), input (the tensor sent; a "
        "coalesced form's first), inputs, group_size, group, reduce_op, src, out (``_out`` forms), inplace, style "
        "(the ``torch.ops._c10d_functional`` op that ``dist.*`` calls are captured as)",
)
def collective(c: Call) -> Args | None:
    if not _c10d_op(c):
        return None
    raw = c.raw
    if raw.endswith("_coalesced") or raw.endswith("_coalesced_"):
        inputs = [i for i in c.conv(list(c.get("inputs") or [])) if isinstance(i, CanonNode)]
    else:
        inputs = [c.input] if c.input is not None else []
    return {"kind": _COLLECTIVES[raw], "input": inputs[0] if inputs else None, "inputs": inputs,
            "group_size": c.get("group_size"), "group": c.get("group_name"),
            "reduce_op": c.get("reduce_op"), "src": c.get("src"), "out": c.conv(c.get("out")),
            "inplace": raw.endswith("_"), "style": raw}


@normaliser("wait", spellings={"wait_tensor"}, passthrough=True,
            doc="input (the collective's result it waits for; the same tensor comes back)")
def wait(c: Call) -> Args | None:
    if not _c10d_op(c):
        return None
    return {"input": c.input}

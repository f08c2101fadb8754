"""The canonical graph view: every pass reads the graph through this module only.

Dynamo, ``symbolic_trace`` and ``torch.export`` spell the same operation many
ways (``x.T``, ``x.mT``, ``x.t()``, ``torch.transpose``, ``call_method
permute``, ``aten.permute.default``; ``operator.getitem`` with lists,
``index_select``, ``aten.index.Tensor``). ``build_view`` turns any of those
graphs into ``CanonNode``s with one canonical ``op`` name and normalised
``args``, the tensor value (shape, strides, dtype, device, requires_grad) of
every node, the role of every graph input (user input, parameter, buffer,
constant), grad-mode regions, in-place mutations and view aliasing, and a
``networkx.DiGraph`` of the data flow.

Canonical ops a pass can rely on (``CanonNode.op``) and their ``args``:

============  ===============================================================
op            args
============  ===============================================================
permute       input, dims (full permutation; transpose/t/T/mT/swapaxes/movedim)
view          input, shape (view, view_as, _unsafe_view)
reshape       input, shape (reshape, reshape_as, flatten, unflatten, ravel)
expand        input, shape (expand, expand_as, broadcast_to)
repeat        input, repeats (repeat, tile)
slice         input, index: IndexSpec (basic indexing: slices, ints, None)
index         input, index: IndexSpec (advanced: lists, index tensors, masks;
              getitem, index_select, aten.index)
contiguous    input, memory_format
clone         input, memory_format
to            input, dtype, device, memory_format, copy (to, _to_copy, type,
              float/half/..., cuda, cpu)
detach        input, inplace (``detach``/``detach_``; ``aten.alias`` is a view)
data          input (``x.data``)
mm/bmm/...    a, b (mm, bmm, matmul, mv, dot); addmm/baddbmm: bias, a, b
linear        input, weight, bias (nn.Linear: weight_info, has_bias)
conv          input, weight, bias, transposed, groups, weight_info, has_bias,
              stride, padding, dilation, output_padding (one entry per spatial dim)
layer_norm    input, rest, kwargs (also group_norm, batch_norm, instance_norm,
              rms_norm); batch_norm also has training (bool, None if unknown)
softmax       input, dim (also log_softmax)
factory       kind, device (explicit or None), dtype (arange, zeros, ...)
grad_region   enabled, returns (export's ``wrap_with_set_grad_enabled``: its
              inputs are the inlined region's results)
set_grad_enabled  enabled, style: ``"set_grad_enabled"`` (``no_grad``,
              ``enable_grad``, ``set_grad_enabled`` as Dynamo records them) or
              ``"inference_mode"`` (enter/exit; ``enabled`` is resolved to the
              grad mode in force after the node)
item          input (``item``/``_local_scalar_dense``); tolist, numpy likewise
============  ===============================================================

Grad mode: ``CanonNode.grad_enabled`` is the autograd mode a node runs in.
Dynamo records ``no_grad``/``set_grad_enabled`` as ``_set_grad_enabled`` nodes
and ``inference_mode`` as ``_enter/_exit_inference_mode`` nodes;
``torch.export`` wraps a grad-disabled region in
``higher_order.wrap_with_set_grad_enabled`` with a submodule, which the view
inlines (its nodes appear in place, named ``<hop>/<node>``, with the region's
mode). ``symbolic_trace`` does not record grad mode at all.
``GraphView.entry_grad_enabled`` is the mode the graph starts in, and
``GraphView.requires_grad_known`` says whether ``tensor.requires_grad`` on op
nodes is autograd's own verdict (Dynamo's fake values) or unknown (export and
``symbolic_trace`` values do not track it).

Every other op keeps its own name (``add``, ``relu``...) with ``args`` holding
``{"args": [...], "kwargs": {...}}``.
"""

from __future__ import annotations

import dataclasses
import operator
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

import networkx as nx
import torch
import torch.fx as fx

from .source import Location, clean_path, module_path, source_line, user_frame
from .tensorinfo import Dim, TensorInfo, info_of, known, to_dim

# --------------------------------------------------------------------------- op tables

_PERMUTE_NAMES = {
    "permute", "transpose", "transpose_", "swapaxes", "swapdims", "t", "t_", "T", "mT", "H", "mH",
    "numpy_T", "adjoint", "movedim", "moveaxis",
}
_VIEW_NAMES = {"view", "view_as", "_unsafe_view", "_reshape_alias"}
_RESHAPE_NAMES = {"reshape", "reshape_as", "flatten", "unflatten", "ravel"}
_EXPAND_NAMES = {"expand", "expand_as", "broadcast_to", "expand_copy"}
_REPEAT_NAMES = {"repeat", "tile"}
_TO_NAMES = {
    "to", "_to_copy", "type", "type_as", "float", "double", "half", "bfloat16", "int", "long",
    "short", "bool", "byte", "char", "cfloat", "cdouble", "cuda", "cpu", "_to_dtype",
}
_METHOD_DTYPES = {
    "float": torch.float32, "double": torch.float64, "half": torch.float16,
    "bfloat16": torch.bfloat16, "int": torch.int32, "long": torch.int64, "short": torch.int16,
    "bool": torch.bool, "byte": torch.uint8, "char": torch.int8,
    "cfloat": torch.complex64, "cdouble": torch.complex128,
}
_MATMUL_NAMES = {"mm": "mm", "bmm": "bmm", "matmul": "matmul", "__matmul__": "matmul", "mv": "mv", "dot": "dot"}
_ADD_MATMUL_NAMES = {"addmm": "addmm", "baddbmm": "baddbmm", "addbmm": "addbmm", "addmv": "addmv"}
_CONV_NAMES = {
    "conv1d", "conv2d", "conv3d", "convolution", "_convolution", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d",
}
_NORM_NAMES = {
    "layer_norm": "layer_norm", "native_layer_norm": "layer_norm",
    "group_norm": "group_norm", "native_group_norm": "group_norm",
    "batch_norm": "batch_norm", "native_batch_norm": "batch_norm",
    "_native_batch_norm_legit": "batch_norm", "_native_batch_norm_legit_no_training": "batch_norm",
    "_native_batch_norm_legit_functional": "batch_norm", "instance_norm": "instance_norm",
    "rms_norm": "rms_norm", "_fused_rms_norm": "rms_norm",
}
_SOFTMAX_NAMES = {"softmax": "softmax", "_softmax": "softmax", "log_softmax": "log_softmax", "_log_softmax": "log_softmax"}
FACTORY_NAMES = {
    "arange", "range", "zeros", "ones", "full", "empty", "eye", "linspace", "logspace", "rand",
    "randn", "randint", "randperm", "tensor", "as_tensor", "scalar_tensor", "empty_strided",
    "tril_indices", "triu_indices",
}
_GRAD_MODE_NAMES = {"_set_grad_enabled", "set_grad_enabled"}
_HOST_SYNC_NAMES = {"item", "tolist", "numpy", "_local_scalar_dense"}
_DETACH_NAMES = {"detach", "detach_"}  # aten.alias keeps the autograd graph: it is a view, not a cut
_INFERENCE_MODE_NAMES = {"_enter_inference_mode", "_exit_inference_mode"}
#: export wraps grad-mode regions in a higher-order op with a submodule; canon inlines it
_GRAD_REGION_HOPS = {"wrap_with_set_grad_enabled"}
_DATA_NAMES = {"data", "_get_data_attr"}
_OPERATOR_NAMES = {
    "truediv": "div", "floordiv": "floor_divide", "iadd": "add_", "isub": "sub_", "imul": "mul_",
    "itruediv": "div_", "ifloordiv": "floor_divide_", "imatmul": "matmul", "setitem": "setitem",
}
_MODULE_OPS: list[tuple[type, str]] = [
    (torch.nn.Linear, "linear"),
    (torch.nn.modules.conv._ConvNd, "conv"),
    (torch.nn.LayerNorm, "layer_norm"),
    (torch.nn.GroupNorm, "group_norm"),
    (torch.nn.modules.batchnorm._BatchNorm, "batch_norm"),
    (torch.nn.modules.instancenorm._InstanceNorm, "instance_norm"),
    (torch.nn.Softmax, "softmax"),
    (torch.nn.LogSoftmax, "log_softmax"),
    (torch.nn.Embedding, "embedding"),
    (torch.nn.Flatten, "reshape"),
]

#: ops whose output may share storage with their first input
VIEW_OPS = {"permute", "view", "expand", "slice", "detach", "data", "squeeze", "unsqueeze",
            "unbind", "split", "chunk", "narrow", "select", "diagonal", "as_strided", "real",
            "imag", "view_as_real", "view_as_complex", "unfold", "split_with_sizes", "alias"}
#: ops that return their input unchanged when nothing needs converting
MAYBE_VIEW_OPS = {"reshape", "contiguous", "to"}
#: elementwise ops (every spelling: ``a + b``, ``torch.add``, ``Tensor.add``, ``aten.add.Tensor``,
#: ``nn.ReLU``): they broadcast their tensor operands and read any strides without copying
POINTWISE_OPS = frozenset({
    # binary / ternary
    "add", "sub", "rsub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum",
    "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "and_", "or_", "xor", "where", "masked_fill", "lerp",
    "addcmul", "addcdiv", "atan2", "hypot", "copysign", "xlogy", "true_divide", "multiply", "subtract",
    "divide",
    # unary
    "abs", "neg", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos",
    "tan", "tanh", "sigmoid", "relu", "relu6", "gelu", "silu", "elu", "selu", "celu", "leaky_relu",
    "hardtanh", "hardswish", "hardsigmoid", "softplus", "mish", "erf", "erfc", "reciprocal", "sign",
    "floor", "ceil", "round", "trunc", "frac", "clamp", "clamp_min", "clamp_max", "clip", "logical_not",
    "bitwise_not", "square", "nan_to_num", "sinh", "cosh", "asin", "acos", "atan", "logit", "invert",
    "pos", "not_",
})
#: ops that may hand back their input itself (eval-mode dropout returns its input)
_PASSTHROUGH_NAMES = {"dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d",
                      "dropout3d", "identity", "lift_fresh", "tuple_getitem"}
#: call_module ops known to compute a fresh tensor; any other module may return its input (nn.Identity)
_COMPUTING_MODULE_OPS = {"linear", "conv", "layer_norm", "group_norm", "batch_norm", "instance_norm",
                         "softmax", "log_softmax", "embedding"}


# --------------------------------------------------------------------------- index spec


@dataclass(frozen=True)
class IndexItem:
    """One entry of an indexing expression, aligned to the dim it consumes.

    kind: ``slice`` | ``int`` | ``newaxis`` | ``tensor`` (integer index: list,
    tuple or tensor) | ``mask`` (bool index).
    """

    kind: str
    dim: int | None = None  # input dim consumed (None for newaxis)
    start: Any = None
    stop: Any = None
    step: Any = None
    value: Any = None  # for int items
    index: "CanonNode | None" = None  # index tensor node, when the index is a node
    values: tuple[int, ...] | None = None  # constant integer values when known (flattened)
    index_shape: tuple[Dim, ...] | None = None
    spelled: str | None = None  # how it was written, e.g. "[0, 2, 4, 6]"

    @property
    def is_full_slice(self) -> bool:
        return self.kind == "slice" and self.start in (None, 0) and self.stop is None and self.step in (None, 1)


@dataclass(frozen=True)
class IndexSpec:
    items: tuple[IndexItem, ...]
    style: str  # "getitem" | "index_select" | "aten.index" | "aten.slice" | "narrow" | "select"

    @property
    def advanced(self) -> list[IndexItem]:
        return [i for i in self.items if i.kind in ("tensor", "mask")]

    @property
    def is_advanced(self) -> bool:
        return bool(self.advanced)

    def render(self, replace: dict[int, str] | None = None) -> str:
        """Python subscript text, e.g. ``[:, [0, 2, 4, 6]]``; ``replace`` maps item positions to text."""
        parts = []
        for pos, it in enumerate(self.items):
            if replace and pos in replace:
                parts.append(replace[pos])
            elif it.kind == "slice":
                parts.append(_slice_text(it.start, it.stop, it.step))
            elif it.kind == "int":
                parts.append(_arg_text(it.value))
            elif it.kind == "newaxis":
                parts.append("None")
            else:
                parts.append(it.spelled or "<index>")
        while len(parts) > 1 and parts[-1] == ":":  # trailing full slices are implied
            parts.pop()
        return "[" + ", ".join(parts) + "]"


def _arg_text(v: Any) -> str:
    if isinstance(v, CanonNode):
        return v.name
    return str(v)


def _slice_text(start: Any, stop: Any, step: Any) -> str:
    s = "" if start in (None, 0) else _arg_text(start)
    e = "" if stop is None else _arg_text(stop)
    text = f"{s}:{e}"
    if step not in (None, 1):
        text += f":{_arg_text(step)}"
    return text


# --------------------------------------------------------------------------- nodes


@dataclass(eq=False)
class CanonNode:
    node: fx.Node
    name: str
    kind: str  # "input" | "parameter" | "buffer" | "constant" | "op" | "output"
    op: str
    spelling: str
    args: dict[str, Any] = field(default_factory=dict)
    value: Any = None  # TensorInfo, tuple of TensorInfo/None, a Dim for size nodes, or None
    inputs: list["CanonNode"] = field(default_factory=list)
    users: list["CanonNode"] = field(default_factory=list)
    location: Location | None = None
    module_path: str | None = None
    grad_enabled: bool = True
    param_name: str | None = None  # dotted name for parameters / buffers / constants
    module_params: list[str] = field(default_factory=list)  # params owned by a call_module node
    mutates: list["CanonNode"] = field(default_factory=list)  # inputs written in place
    aliases: list["CanonNode"] = field(default_factory=list)  # inputs whose memory the output may share
    position: int = 0

    def __repr__(self) -> str:
        return f"<{self.op} {self.name}>"

    def __hash__(self) -> int:
        return id(self)

    @property
    def tensor(self) -> TensorInfo | None:
        return self.value if isinstance(self.value, TensorInfo) else None

    @property
    def input(self) -> "CanonNode | None":
        x = self.args.get("input")
        return x if isinstance(x, CanonNode) else None

    @property
    def is_view(self) -> bool:
        return self.op in VIEW_OPS

    @property
    def is_pointwise(self) -> bool:
        """An elementwise op (``POINTWISE_OPS``): broadcasts its operands, reads any strides."""
        return self.op in POINTWISE_OPS

    @property
    def tensor_inputs(self) -> list["CanonNode"]:
        """The inputs whose value is a tensor (``inputs`` also holds SymInt size nodes)."""
        return [i for i in self.inputs if i.tensor is not None]

    @property
    def source(self) -> str | None:
        if self.location is None:
            return None
        return self.location.code or source_line(self.location.file, self.location.line)

    @property
    def is_trainable(self) -> bool:
        t = self.tensor
        return self.kind == "parameter" and t is not None and t.requires_grad


class GraphView:
    """The canonical view of one captured graph."""

    def __init__(
        self,
        gm: fx.GraphModule,
        nodes: list[CanonNode],
        outputs: list[CanonNode],
        origin: str,
        label: str,
        constants: dict[str, Any],
    ) -> None:
        self.gm = gm
        self.nodes = nodes
        self.outputs = outputs
        self.origin = origin  # "dynamo" | "fx" | "export"
        self.label = label
        self._constants = constants
        self._by_fx: dict[fx.Node, CanonNode] = {n.node: n for n in nodes}
        self.by_name: dict[str, CanonNode] = {n.name: n for n in nodes}
        self._graph: nx.DiGraph | None = None
        self._writers: list[CanonNode] | None = None
        self.entry_grad_enabled = True  # autograd mode the graph starts in
        # Dynamo's fake values carry autograd's requires_grad; export/fx values do not
        self.requires_grad_known = origin == "dynamo"
        #: the Dynamo graph break that ended this graph (``capture.GraphBreak``: reason and the
        #: user's line), None when the graph ended normally or did not come from Dynamo
        self.graph_break: Any = None

    def __iter__(self) -> Iterator[CanonNode]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def of(self, node: fx.Node) -> CanonNode:
        return self._by_fx[node]

    def ops(self, *names: str) -> list[CanonNode]:
        wanted = set(names)
        return [n for n in self.nodes if n.op in wanted]

    @property
    def parameters(self) -> list[CanonNode]:
        return [n for n in self.nodes if n.kind == "parameter"]

    @property
    def writers(self) -> list[CanonNode]:
        """The nodes that write in place into another node (``mutates`` not empty), in graph
        order: what mutation checks scan, instead of every node (linear, not quadratic)."""
        if self._writers is None:
            self._writers = [n for n in self.nodes if n.mutates]
        return self._writers

    @property
    def graph(self) -> nx.DiGraph:
        """Data-flow graph over node names (edges producer -> consumer)."""
        if self._graph is None:
            g = nx.DiGraph()
            for n in self.nodes:
                g.add_node(n.name, cn=n)
            for n in self.nodes:
                for i in n.inputs:
                    g.add_edge(i.name, n.name)
            self._graph = g
        return self._graph

    # -- constant evaluation -------------------------------------------------
    def const_ints(self, x: Any) -> tuple[int, ...] | None:
        """Flattened integer values of ``x`` when they are known at compile time.

        Handles Python lists/tuples/ranges of ints, constant tensors (``get_attr``,
        lifted export constants), and ``arange``/``tensor`` factories with
        constant arguments, through ``to``/``clone``/``detach``/``lift_fresh_copy``.
        """
        if isinstance(x, range):
            return tuple(x)
        if isinstance(x, bool):
            return None
        if isinstance(x, int):
            return (x,)
        if isinstance(x, (list, tuple)):
            out: list[int] = []
            for v in x:
                sub = self.const_ints(v)
                if sub is None:
                    return None
                out.extend(sub)
            return tuple(out)
        if isinstance(x, torch.Tensor):
            if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
                return None
            if isinstance(x, torch._subclasses.FakeTensor) or x.device.type == "meta":
                return None
            return tuple(int(v) for v in x.reshape(-1).tolist())
        if isinstance(x, CanonNode):
            return self._const_node(x)
        return None

    def _const_node(self, n: CanonNode) -> tuple[int, ...] | None:
        t = n.tensor
        if t is not None and (t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool):
            return None
        if n.kind == "constant":
            return self.const_ints(self._constants.get(n.name))
        if n.op in ("to", "clone", "detach", "alias", "contiguous", "lift_fresh_copy", "lift_fresh") and n.input is not None:
            return self.const_ints(n.input)
        if n.op == "factory":
            kind = n.args.get("kind")
            pos = n.args.get("args", [])
            if kind in ("arange", "range"):
                nums = [self.const_ints(p) for p in pos]
                if any(v is None or len(v) != 1 for v in nums) or not nums:
                    return None
                vals = [v[0] for v in nums]  # type: ignore[index]
                if len(vals) == 1:
                    r = range(vals[0])
                elif len(vals) == 2:
                    r = range(vals[0], vals[1])
                else:
                    if vals[2] == 0:
                        return None
                    r = range(vals[0], vals[1] + (1 if kind == "range" else 0), vals[2])
                return tuple(r)
            if kind in ("tensor", "as_tensor") and pos:
                return self.const_ints(pos[0])
        return None


# --------------------------------------------------------------------------- building


def _target_name(node: fx.Node, gm: fx.GraphModule) -> tuple[str, str]:
    """(raw op name, spelling shown to users) of an fx node."""
    t = node.target
    if node.op == "call_method":
        return str(t), f"Tensor.{t}"
    if node.op == "call_module":
        mod = _get_submodule(gm, str(t))
        cls = type(mod).__name__ if mod is not None else str(t)
        for base, name in _MODULE_OPS:
            if mod is not None and isinstance(mod, base):
                return name, f"nn.{cls}"
        return cls.lower(), f"nn.{cls}"
    if node.op != "call_function":
        return node.op, node.op
    if isinstance(t, torch._ops.OpOverload):
        return t.overloadpacket.__name__, f"aten.{t.overloadpacket.__name__}.{t._overloadname}"
    if isinstance(t, torch._ops.OpOverloadPacket):
        return t.__name__, f"aten.{t.__name__}"
    if isinstance(t, torch._ops.HigherOrderOperator):
        return t.name(), f"higher_order.{t.name()}"
    if t is getattr:
        attr = node.args[1] if len(node.args) > 1 else "?"
        return str(attr), f"Tensor.{attr}"
    name = getattr(t, "__name__", None) or str(t)
    mod = getattr(t, "__module__", None) or ""
    if mod == "_operator" or mod == "operator":
        return _OPERATOR_NAMES.get(name, name), f"operator.{name}"
    if mod.startswith("torch.nn.functional") or mod == "torch._C._nn":
        return name, f"F.{name}"
    if mod.startswith("torch._C") and name == "_get_data_attr":
        return "data", "Tensor.data"
    if name == "_set_grad_enabled":
        return name, "torch._C._set_grad_enabled"
    return name, f"torch.{name}"


def _get_submodule(gm: fx.GraphModule, target: str) -> torch.nn.Module | None:
    try:
        return gm.get_submodule(target)
    except AttributeError:
        return None


def _get_attr(gm: fx.GraphModule, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _node_value(node: fx.Node) -> Any:
    for key in ("val", "example_value"):
        if key in node.meta:
            return node.meta[key]
    tm = node.meta.get("tensor_meta")
    return tm


def _value_info(v: Any) -> Any:
    if isinstance(v, torch.Tensor):
        return TensorInfo.from_tensor(v)
    if isinstance(v, (list, tuple)):
        return tuple(_value_info(x) for x in v)
    if isinstance(v, (torch.SymInt, int)) and not isinstance(v, bool):
        return to_dim(v)
    if hasattr(v, "shape") and hasattr(v, "stride") and hasattr(v, "dtype"):  # TensorMetadata
        try:
            return TensorInfo(
                shape=tuple(to_dim(s) for s in v.shape),
                stride=tuple(to_dim(s) for s in v.stride),
                storage_offset=0,
                dtype=v.dtype,
                device=torch.device("cpu"),
                requires_grad=bool(getattr(v, "requires_grad", False)),
            )
        except Exception:  # noqa: BLE001 - metadata we cannot read is simply unknown
            return None
    return None


def _mutated_positions(node: fx.Node, raw: str) -> list[Any]:
    """fx args written in place by ``node`` (in-place ops, setitem, copy_, out=)."""
    out: list[Any] = []
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        for i, a in enumerate(t._schema.arguments):
            if a.alias_info is not None and a.alias_info.is_write:
                if a.kwarg_only or i >= len(node.args):
                    if a.name in node.kwargs:
                        out.append(node.kwargs[a.name])
                else:
                    out.append(node.args[i])
        return out
    if node.op in ("call_method", "call_function") and node.args:
        if raw in ("setitem", "add_", "sub_", "mul_", "div_", "floor_divide_") or (
            raw.endswith("_") and not raw.startswith("_") and raw not in ("detach_",)
        ):
            out.append(node.args[0])
    if "out" in node.kwargs:
        o = node.kwargs["out"]
        out.extend(o if isinstance(o, (list, tuple)) else [o])
    return out


_SCALARS = (int, float, bool, str, torch.dtype, torch.device, torch.memory_format, torch.layout)
def _aliased_inputs(node: fx.Node, cn: "CanonNode") -> list[Any]:
    """fx args whose memory the output of ``node`` may share (views, in-place results, pass-throughs).

    ATen ops say it in their schema (``Tensor(a) self -> Tensor(a)``), except pass-throughs
    like ``aten.dropout`` (train=False returns its input); torch-level ops go by their
    canonical name. Conservative: a module that is not known to compute may return its input.
    """
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        out_sets: set[str] = set()
        for r in t._schema.returns:
            if r.alias_info is not None:
                out_sets |= set(r.alias_info.before_set)
        found = []
        for i, a in enumerate(t._schema.arguments):
            if a.alias_info is not None and out_sets & set(a.alias_info.before_set):
                if a.kwarg_only or i >= len(node.args):
                    if a.name in node.kwargs:
                        found.append(node.kwargs[a.name])
                else:
                    found.append(node.args[i])
        if cn.op in _PASSTHROUGH_NAMES and node.args:  # aten.dropout's schema says fresh; eval returns input
            found.append(node.args[0])
        return found
    if cn.mutates:
        return [m.node for m in cn.mutates]  # an in-place op returns what it wrote
    first = node.args[0] if node.args else None
    if cn.op in VIEW_OPS or cn.op in MAYBE_VIEW_OPS or cn.op in _PASSTHROUGH_NAMES:
        return [first]
    if node.op == "call_module" and cn.op not in _COMPUTING_MODULE_OPS:
        return list(node.all_input_nodes)
    return []


class _Builder:
    def __init__(self, gm: fx.GraphModule, origin: str, grad_enabled: bool, roles: dict[str, tuple[str, str | None]],
                 constants: dict[str, Any]) -> None:
        self.gm = gm
        self.origin = origin
        self.grad_enabled = grad_enabled
        self.roles = roles  # placeholder name -> (kind, dotted name)
        self.constants = constants
        self.map: dict[fx.Node, CanonNode] = {}

    # -- conversion of args ------------------------------------------------
    def conv(self, a: Any) -> Any:
        if a is None or type(a) in _SCALARS:
            return a
        if isinstance(a, fx.Node):
            return self.map.get(a)
        if isinstance(a, (list, tuple)):
            vals = [self.conv(x) for x in a]
            return type(a)(vals) if isinstance(a, tuple) else vals
        if isinstance(a, dict):
            return {k: self.conv(v) for k, v in a.items()}
        if isinstance(a, slice):
            return slice(self.conv(a.start), self.conv(a.stop), self.conv(a.step))
        return a

    def build(self) -> GraphView:
        self.nodes: list[CanonNode] = []
        self.outputs: list[CanonNode] = []
        self.grad = self.grad_enabled
        self.inference_stack: list[bool] = []  # grad mode to restore at each inference_mode exit
        self._walk(self.gm)
        # users, after every node exists
        for cn in self.nodes:
            for i in cn.inputs:
                i.users.append(cn)
        view = GraphView(self.gm, self.nodes, self.outputs, self.origin, "", self.constants)
        view.entry_grad_enabled = self.grad_enabled
        return view

    def _walk(self, gm: fx.GraphModule, prefix: str = "") -> list[CanonNode]:
        """Add the nodes of ``gm`` (the root graph, or an inlined export region);
        returns what its output node returns."""
        root, self.gm = self.gm, gm  # submodule/attribute lookups read the graph being walked
        try:
            returned: list[CanonNode] = []
            for node in gm.graph.nodes:
                if prefix and node.op == "placeholder":
                    continue  # mapped to the region's operands by _inline_region
                if prefix and node.op == "output":
                    returned = [x for x in _flatten(self.conv(node.args[0])) if isinstance(x, CanonNode)]
                    continue
                if self._is_grad_region(node):
                    self._inline_region(node, prefix)
                    continue
                cn = self.make(node)
                if prefix:
                    cn.name = f"{prefix}{node.name}"
                self._add(cn, node)
                if node.op == "output":
                    self.outputs = [x for x in _flatten(cn.args.get("args", [])) if isinstance(x, CanonNode)]
            return returned
        finally:
            self.gm = root

    def _add(self, cn: CanonNode, node: fx.Node) -> None:
        if cn.op == "set_grad_enabled":
            self._grad_mode(cn)
        cn.grad_enabled = self.grad
        cn.position = len(self.nodes)
        self.map[node] = cn
        self.nodes.append(cn)

    def _grad_mode(self, cn: CanonNode) -> None:
        """Apply a grad-mode node; resolve inference_mode enter/exit to plain modes."""
        if cn.args.get("style") == "inference_mode":
            if cn.args.get("enter"):
                self.inference_stack.append(self.grad)
                if cn.args.get("mode", True) is not False:
                    self.grad = False
            else:
                self.grad = self.inference_stack.pop() if self.inference_stack else self.grad_enabled
            cn.args["enabled"] = self.grad
            return
        en = cn.args.get("enabled")
        if isinstance(en, bool):
            self.grad = en

    def _is_grad_region(self, node: fx.Node) -> bool:
        t = node.target
        return (node.op == "call_function" and isinstance(t, torch._ops.HigherOrderOperator)
                and t.name() in _GRAD_REGION_HOPS and len(node.args) >= 2
                and isinstance(node.args[1], fx.Node) and node.args[1].op == "get_attr")

    def _inline_region(self, node: fx.Node, prefix: str) -> None:
        """``wrap_with_set_grad_enabled(enabled, submod, *operands)`` (export): the
        submodule's nodes become nodes of this view, run in the region's grad mode;
        the higher-order node itself stays as the tuple of what the region returns."""
        sub = _get_attr(self.gm, str(node.args[1].target))
        enabled = node.args[0]
        if not isinstance(sub, fx.GraphModule):
            cn = self.make(node)
            self._add(cn, node)
            return
        cn = self.make(node)  # the tuple the region returns; the get_attr of submod stays a constant
        if prefix:
            cn.name = f"{prefix}{node.name}"
        sub_placeholders = [n for n in sub.graph.nodes if n.op == "placeholder"]
        for ph, operand in zip(sub_placeholders, node.args[2:]):
            if isinstance(operand, fx.Node) and operand in self.map:
                self.map[ph] = self.map[operand]
        saved = self.grad
        if isinstance(enabled, bool):
            self.grad = enabled
        returned = self._walk(sub, prefix=f"{cn.name}/")
        self.grad = saved
        # data flows operands -> region nodes -> this node; never around the region
        cn.inputs = _dedupe(returned)
        cn.op = "grad_region"
        cn.args = {"enabled": enabled, "returns": returned}
        self._add(cn, node)

    def make(self, node: fx.Node) -> CanonNode:
        meta = node.meta
        loc = user_frame(meta.get("stack_trace"))
        value = _value_info(_node_value(node))
        raw, spelling = _target_name(node, self.gm)
        cn = CanonNode(node=node, name=node.name, kind="op", op=raw, spelling=spelling, value=value,
                       location=loc, module_path=module_path(meta))
        if cn.location is not None and cn.location.code is None:
            cn.location = Location(loc.file, loc.line, loc.function, source_line(loc.file, loc.line))  # type: ignore[union-attr]
        cn.inputs = _dedupe([self.map[a] for a in node.all_input_nodes if a in self.map])
        if node.op == "placeholder":
            kind, pname = self.roles.get(node.name, ("input", None))
            cn.kind, cn.op, cn.param_name = kind, "placeholder", pname
            cn.spelling = pname or str(node.target)
            return cn
        if node.op == "get_attr":
            obj = _get_attr(self.gm, str(node.target))
            cn.op = "placeholder"
            pname = self.roles.get(node.name, (None, None))[1] or str(node.target)
            cn.param_name = pname
            if isinstance(obj, torch.nn.Parameter):
                cn.kind = "parameter"
            elif isinstance(obj, torch.Tensor):
                # symbolic_trace registers literal tensors as `_tensor_constantN` buffers
                is_literal = str(node.target).rsplit(".", 1)[-1].startswith("_tensor_constant")
                is_buffer = not is_literal and pname in dict(self.gm.named_buffers())
                cn.kind = "buffer" if is_buffer else "constant"
                if cn.kind == "constant":
                    self.constants.setdefault(node.name, obj)
            else:
                cn.kind = "constant"
            if cn.value is None and isinstance(obj, torch.Tensor):
                cn.value = TensorInfo.from_tensor(obj)
            elif isinstance(obj, torch.Tensor) and cn.tensor is not None and cn.tensor.requires_grad != obj.requires_grad:
                # fake-tensor propagation drops requires_grad; the module's own tensor knows it
                cn.value = dataclasses.replace(cn.tensor, requires_grad=obj.requires_grad,
                                               is_parameter=isinstance(obj, torch.nn.Parameter))
            if node.name in self.roles:
                cn.kind = self.roles[node.name][0]
            return cn
        if node.op == "output":
            cn.kind, cn.op = "output", "output"
            cn.args = {"args": self.conv(list(node.args[0]) if isinstance(node.args[0], (list, tuple)) else [node.args[0]])}
            return cn
        if node.op == "call_module":
            mod = _get_submodule(self.gm, str(node.target))
            if mod is not None:
                cn.module_params = [f"{node.target}.{n}" for n, p in mod.named_parameters() if p.requires_grad]
                if cn.module_path is None:
                    cn.module_path = str(node.target)
        cn.mutates = _dedupe([self.map[a] for a in _mutated_positions(node, raw) if isinstance(a, fx.Node) and a in self.map])
        _normalise(cn, raw, node, self)
        cn.aliases = _dedupe([self.map[a] for a in _aliased_inputs(node, cn) if isinstance(a, fx.Node) and a in self.map])
        return cn


def _dedupe(xs: Iterable[CanonNode]) -> list[CanonNode]:
    seen: set[int] = set()
    out = []
    for x in xs:
        if id(x) not in seen:
            seen.add(id(x))
            out.append(x)
    return out


def _flatten(x: Any) -> Iterator[Any]:
    if isinstance(x, (list, tuple)):
        for v in x:
            yield from _flatten(v)
    elif isinstance(x, dict):
        for v in x.values():
            yield from _flatten(v)
    else:
        yield x


# --------------------------------------------------------------------------- normalisers


def _arg(node: fx.Node, pos: int, *names: str, default: Any = None) -> Any:
    for n in names:
        if n in node.kwargs:
            return node.kwargs[n]
    if pos < len(node.args):
        return node.args[pos]
    return default


def _wrap(d: int, rank: int) -> int:
    return d + rank if d < 0 else d


def _input_rank(b: _Builder, x: Any) -> int | None:
    cn = b.map.get(x) if isinstance(x, fx.Node) else None
    t = cn.tensor if cn is not None else None
    return t.ndim if t is not None else None


def _normalise(cn: CanonNode, raw: str, node: fx.Node, b: _Builder) -> None:
    first = node.args[0] if node.args else None
    if node.op == "call_function" and node.target is getattr:
        first = node.args[0]
    inp = b.map.get(first) if isinstance(first, fx.Node) else None
    rank = inp.tensor.ndim if inp is not None and inp.tensor is not None else None

    if raw in _PERMUTE_NAMES:
        cn.op = "permute"
        cn.args = {"input": inp, "dims": _perm_dims(raw, node, rank, cn)}
    elif raw in _VIEW_NAMES or raw in _RESHAPE_NAMES:
        cn.op = "view" if raw in _VIEW_NAMES else "reshape"
        out = cn.tensor
        cn.args = {"input": inp, "shape": out.shape if out is not None else None}
    elif raw in _EXPAND_NAMES:
        cn.op = "expand"
        out = cn.tensor
        cn.args = {"input": inp, "shape": out.shape if out is not None else None}
    elif raw in _REPEAT_NAMES:
        cn.op = "repeat"
        reps = list(node.args[1:]) or [node.kwargs.get("repeats") or node.kwargs.get("dims")]
        if len(reps) == 1 and isinstance(reps[0], (list, tuple)):
            reps = list(reps[0])
        cn.args = {"input": inp, "repeats": tuple(b.conv(reps)), "style": raw}
    elif raw == "getitem" and inp is not None and inp.tensor is not None:
        _index_getitem(cn, node, inp, b)
    elif raw == "getitem":
        cn.op = "tuple_getitem"
        cn.args = {"input": inp, "index": node.args[1] if len(node.args) > 1 else None}
    elif raw == "index_select":
        dim = _arg(node, 1, "dim", default=0)
        idx = _arg(node, 2, "index")
        items = _full_slices(rank or 0)
        d = _wrap(dim, rank or 0) if isinstance(dim, int) else 0
        if items:
            items[d] = _index_item(idx, d, b)
        cn.op = "index"
        cn.args = {"input": inp, "index": IndexSpec(tuple(items), "index_select"), "dim": d}
    elif raw in ("index", "_unsafe_index") and node.op == "call_function" and isinstance(node.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        idxs = _arg(node, 1, "indices", default=[])
        items = _full_slices(rank or 0)
        for d, ix in enumerate(idxs):
            if ix is not None and d < len(items):
                items[d] = _index_item(ix, d, b)
        cn.op = "index"
        cn.args = {"input": inp, "index": IndexSpec(tuple(items), "aten.index")}
    elif raw in ("slice", "narrow", "select") and rank is not None:
        _index_basic(cn, raw, node, inp, rank, b)
    elif raw == "contiguous":
        cn.op = "contiguous"
        cn.args = {"input": inp, "memory_format": _arg(node, 1, "memory_format", default=torch.contiguous_format)}
    elif raw == "clone":
        cn.op = "clone"
        cn.args = {"input": inp, "memory_format": _arg(node, 1, "memory_format", default=torch.preserve_format)}
    elif raw in _TO_NAMES:
        _normalise_to(cn, raw, node, inp, b)
    elif raw in _DETACH_NAMES:
        cn.op = "detach"
        cn.args = {"input": inp, "inplace": raw == "detach_"}
    elif raw in _DATA_NAMES:
        cn.op = "data"
        cn.args = {"input": inp}
    elif raw in _MATMUL_NAMES:
        cn.op = _MATMUL_NAMES[raw]
        cn.args = {"a": inp, "b": b.conv(_arg(node, 1, "other", "mat2", "vec", "tensor"))}
    elif raw in _ADD_MATMUL_NAMES:
        cn.op = _ADD_MATMUL_NAMES[raw]
        cn.args = {"bias": inp, "a": b.conv(_arg(node, 1, "mat1", "batch1", "mat")),
                   "b": b.conv(_arg(node, 2, "mat2", "batch2", "vec"))}
    elif raw == "linear" and node.op != "call_module":
        cn.op = "linear"
        cn.args = {"input": inp, "weight": b.conv(_arg(node, 1, "weight")), "bias": b.conv(_arg(node, 2, "bias"))}
    elif raw == "linear":
        mod = _get_submodule(b.gm, str(node.target))
        cn.args = {"input": inp, "weight": None, "bias": None,
                   "weight_info": TensorInfo.from_tensor(mod.weight) if mod is not None else None,
                   "has_bias": getattr(mod, "bias", None) is not None}
    elif raw in _CONV_NAMES or (raw == "conv" and node.op == "call_module"):
        _normalise_conv(cn, raw, node, inp, b)
    elif raw in _NORM_NAMES or (node.op == "call_module" and raw in _NORM_NAMES.values()):
        cn.op = _NORM_NAMES.get(raw, raw)
        cn.args = {"input": inp, "rest": b.conv(list(node.args[1:])), "kwargs": b.conv(dict(node.kwargs))}
        if cn.op == "batch_norm":
            cn.args["training"] = _batch_norm_training(raw, node, b)
    elif raw in _SOFTMAX_NAMES or (node.op == "call_module" and raw in ("softmax", "log_softmax")):
        cn.op = _SOFTMAX_NAMES.get(raw, raw)
        dim = _arg(node, 1, "dim")
        if node.op == "call_module":
            mod = _get_submodule(b.gm, str(node.target))
            dim = getattr(mod, "dim", None)
        cn.args = {"input": inp, "dim": dim}
    elif raw in FACTORY_NAMES and node.op == "call_function":
        cn.op = "factory"
        cn.args = {"kind": raw, "args": b.conv(list(node.args)), "device": node.kwargs.get("device"),
                   "dtype": node.kwargs.get("dtype")}
    elif raw in _GRAD_MODE_NAMES:
        cn.op = "set_grad_enabled"
        cn.args = {"enabled": _arg(node, 0, "mode", "enabled"), "style": "set_grad_enabled"}
    elif raw in _INFERENCE_MODE_NAMES and node.op == "call_function":
        # `with torch.inference_mode():` as Dynamo records it; build() resolves `enabled`
        cn.op = "set_grad_enabled"
        enter = raw == "_enter_inference_mode"
        cn.args = {"enabled": None, "style": "inference_mode", "enter": enter,
                   "mode": _arg(node, 0, "mode", default=True) if enter else None}
    elif raw in _HOST_SYNC_NAMES:
        cn.op = "item" if raw in ("item", "_local_scalar_dense") else raw
        cn.args = {"input": inp}
    elif raw in ("size", "shape", "dim", "stride", "sym_size", "sym_stride", "numel", "sym_numel"):
        cn.op = "size"
        cn.args = {"input": inp, "args": list(node.args[1:])}
    else:
        cn.op = raw
        cn.args = {"input": inp, "args": b.conv(list(node.args)), "kwargs": b.conv(dict(node.kwargs))}


def _batch_norm_training(raw: str, node: fx.Node, b: _Builder) -> bool | None:
    """Whether a batch norm normalises with batch statistics (training mode); None when unknown."""
    if node.op == "call_module":
        mod = _get_submodule(b.gm, str(node.target))
        if mod is None:
            return None
        return bool(mod.training or not getattr(mod, "track_running_stats", True))
    if raw == "_native_batch_norm_legit_no_training":
        return False
    overload = getattr(node.target, "_overloadname", "")
    # F.batch_norm, torch.batch_norm, native_batch_norm and _native_batch_norm_legit all take
    # `training` 6th; the no_stats overload of _native_batch_norm_legit takes it 4th
    pos = 3 if overload == "no_stats" else 5
    val = _arg(node, pos, "training")
    return val if isinstance(val, bool) else None


def _perm_dims(raw: str, node: fx.Node, rank: int | None, cn: CanonNode) -> tuple[int, ...] | None:
    if rank is None:
        return None
    ident = list(range(rank))
    if raw in ("transpose", "transpose_", "swapaxes", "swapdims"):
        d0 = _arg(node, 1, "dim0", "axis0")
        d1 = _arg(node, 2, "dim1", "axis1")
        if not isinstance(d0, int) or not isinstance(d1, int) or rank == 0:
            return None
        d0, d1 = _wrap(d0, rank), _wrap(d1, rank)
        ident[d0], ident[d1] = ident[d1], ident[d0]
        return tuple(ident)
    if raw in ("t", "t_", "H"):
        return tuple(reversed(ident)) if rank == 2 else tuple(ident)
    if raw in ("T", "numpy_T"):
        return tuple(reversed(ident))
    if raw in ("mT", "mH", "adjoint"):
        if rank < 2:
            return None
        ident[-1], ident[-2] = ident[-2], ident[-1]
        return tuple(ident)
    if raw == "permute":
        dims = list(node.args[1:]) or [node.kwargs.get("dims")]
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
            dims = list(dims[0])
        if not all(isinstance(d, int) for d in dims) or len(dims) != rank:
            return None
        return tuple(_wrap(d, rank) for d in dims)
    if raw in ("movedim", "moveaxis"):
        src = _arg(node, 1, "source")
        dst = _arg(node, 2, "destination")
        src = [src] if isinstance(src, int) else list(src or [])
        dst = [dst] if isinstance(dst, int) else list(dst or [])
        if not all(isinstance(d, int) for d in src + dst) or len(src) != len(dst):
            return None
        src = [_wrap(d, rank) for d in src]
        dst = [_wrap(d, rank) for d in dst]
        perm: list[int | None] = [None] * rank
        for s, d in zip(src, dst):
            perm[d] = s
        rest = iter(d for d in ident if d not in src)
        return tuple(p if p is not None else next(rest) for p in perm)
    return None


def _full_slices(rank: int) -> list[IndexItem]:
    return [IndexItem("slice", dim=d) for d in range(rank)]


def _index_item(ix: Any, dim: int, b: _Builder, spelled: str | None = None) -> IndexItem:
    """An advanced index (list, tuple, tensor node, constant tensor) at ``dim``."""
    if isinstance(ix, fx.Node):
        cn = b.map.get(ix)
        t = cn.tensor if cn is not None else None
        if t is not None and t.dtype in (torch.bool, torch.uint8):
            return IndexItem("mask", dim=dim, index=cn, index_shape=t.shape, spelled=spelled or (cn.name if cn else None))
        return IndexItem("tensor", dim=dim, index=cn, index_shape=t.shape if t is not None else None,
                         spelled=spelled or (cn.name if cn else None))
    if isinstance(ix, torch.Tensor):
        if ix.dtype in (torch.bool, torch.uint8):
            return IndexItem("mask", dim=dim, index_shape=tuple(ix.shape), spelled=spelled or "<mask>")
        vals = tuple(int(v) for v in ix.reshape(-1).tolist())
        return IndexItem("tensor", dim=dim, values=vals, index_shape=tuple(ix.shape), spelled=spelled or str(list(vals)))
    if isinstance(ix, (list, tuple, range)):
        flat = list(_flatten(list(ix)))
        if flat and all(isinstance(v, bool) for v in flat):
            return IndexItem("mask", dim=dim, index_shape=(len(flat),), spelled=str(list(ix)))
        nodes = [v for v in flat if isinstance(v, fx.Node)]
        vals = tuple(v for v in flat if isinstance(v, int)) if not nodes else None
        shape = _nested_shape(list(ix))
        text = spelled or ("[" + ", ".join(v.name if isinstance(v, fx.Node) else str(v) for v in ix) + "]")
        return IndexItem("tensor", dim=dim, values=vals, index_shape=shape, spelled=text,
                         index=None)
    return IndexItem("tensor", dim=dim, spelled=str(ix))


def _nested_shape(x: Any) -> tuple[int, ...]:
    if isinstance(x, (list, tuple)):
        return (len(x), *(_nested_shape(x[0]) if x else ()))
    return ()


def _index_getitem(cn: CanonNode, node: fx.Node, inp: CanonNode, b: _Builder) -> None:
    idx = node.args[1]
    items_in = list(idx) if isinstance(idx, tuple) else [idx]
    rank = inp.tensor.ndim if inp.tensor is not None else 0

    def consumed(it: Any) -> int:
        if it is None or it is Ellipsis:
            return 0
        if isinstance(it, fx.Node):
            c = b.map.get(it)
            t = c.tensor if c is not None else None
            if t is not None and t.dtype in (torch.bool, torch.uint8):
                return max(t.ndim, 1)
        if isinstance(it, torch.Tensor) and it.dtype in (torch.bool, torch.uint8):
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
            items.append(IndexItem("slice", dim=dim, start=b.conv(it.start), stop=b.conv(it.stop), step=b.conv(it.step)))
            dim += 1
        elif isinstance(it, int) and not isinstance(it, bool):
            items.append(IndexItem("int", dim=dim, value=it))
            dim += 1
        elif isinstance(it, fx.Node) and not isinstance(b.map.get(it) and b.map[it].value, TensorInfo):
            items.append(IndexItem("int", dim=dim, value=b.map.get(it)))  # a SymInt index
            dim += 1
        else:
            item = _index_item(it, dim, b)
            items.append(item)
            dim += consumed(it)
    while dim < rank:
        items.append(IndexItem("slice", dim=dim))
        dim += 1
    spec = IndexSpec(tuple(items), "getitem")
    cn.op = "index" if spec.is_advanced else "slice"
    cn.args = {"input": inp, "index": spec}


def _index_basic(cn: CanonNode, raw: str, node: fx.Node, inp: CanonNode | None, rank: int, b: _Builder) -> None:
    items = _full_slices(rank)
    if raw == "slice":
        d = _wrap(_arg(node, 1, "dim", default=0), rank)
        start, end, step = _arg(node, 2, "start"), _arg(node, 3, "end"), _arg(node, 4, "step", default=1)
        if isinstance(end, int) and end >= 2**62:
            end = None
        items[d] = IndexItem("slice", dim=d, start=b.conv(start), stop=b.conv(end), step=b.conv(step))
        style = "aten.slice"
    elif raw == "narrow":
        d = _wrap(_arg(node, 1, "dim", default=0), rank)
        start, length = _arg(node, 2, "start"), _arg(node, 3, "length")
        stop = start + length if isinstance(start, int) and isinstance(length, int) else None
        items[d] = IndexItem("slice", dim=d, start=b.conv(start), stop=stop, step=1)
        style = "narrow"
    else:
        d = _wrap(_arg(node, 1, "dim", default=0), rank)
        items[d] = IndexItem("int", dim=d, value=b.conv(_arg(node, 2, "index")))
        style = "select"
    cn.op = "slice"
    cn.args = {"input": inp, "index": IndexSpec(tuple(items), style)}


def _normalise_to(cn: CanonNode, raw: str, node: fx.Node, inp: CanonNode | None, b: _Builder) -> None:
    dtype = device = memory_format = None
    copy = False
    if raw in _METHOD_DTYPES:
        dtype = _METHOD_DTYPES[raw]
        memory_format = node.kwargs.get("memory_format")
    elif raw in ("cuda", "cpu"):
        device = raw if raw == "cpu" else (_arg(node, 1, "device") or "cuda")
    else:
        for a in list(node.args[1:]):
            if isinstance(a, torch.dtype):
                dtype = a
            elif isinstance(a, (str, torch.device)):
                device = a
            elif isinstance(a, fx.Node):
                other = b.map.get(a)
                if other is not None and other.tensor is not None:
                    dtype, device = other.tensor.dtype, other.tensor.device
            elif isinstance(a, bool):
                copy = copy or a
        dtype = node.kwargs.get("dtype", dtype)
        device = node.kwargs.get("device", device)
        memory_format = node.kwargs.get("memory_format", memory_format)
        copy = bool(node.kwargs.get("copy", copy))
        if raw == "_to_copy":
            copy = True
    cn.op = "to"
    cn.args = {"input": inp, "dtype": dtype, "device": device, "memory_format": memory_format, "copy": copy,
               "style": raw}


def _normalise_conv(cn: CanonNode, raw: str, node: fx.Node, inp: CanonNode | None, b: _Builder) -> None:
    cn.op = "conv"
    if node.op == "call_module":
        mod = _get_submodule(b.gm, str(node.target))
        w = getattr(mod, "weight", None)
        cn.args = {
            "input": inp, "weight": None, "bias": None,
            "weight_info": TensorInfo.from_tensor(w) if isinstance(w, torch.Tensor) else None,
            "transposed": bool(getattr(mod, "transposed", False)), "groups": getattr(mod, "groups", 1),
            "has_bias": getattr(mod, "bias", None) is not None,
        }
        spatial = w.dim() - 2 if isinstance(w, torch.Tensor) else None
        cn.args.update(_conv_geometry(spatial, getattr(mod, "stride", 1), getattr(mod, "padding", 0),
                                      getattr(mod, "dilation", 1), getattr(mod, "output_padding", 0)))
        return
    weight = b.conv(_arg(node, 1, "weight"))
    bias = b.conv(_arg(node, 2, "bias"))
    if raw in ("convolution", "_convolution"):
        transposed = bool(_arg(node, 6, "transposed", default=False))
        groups = _arg(node, 8, "groups", default=1)
        stride, padding, dilation = _arg(node, 3, "stride", default=1), _arg(node, 4, "padding", default=0), \
            _arg(node, 5, "dilation", default=1)
        output_padding = _arg(node, 7, "output_padding", default=0)
    else:
        transposed = raw.startswith("conv_transpose")
        groups = _arg(node, 6, "groups", default=1)
        stride, padding = _arg(node, 3, "stride", default=1), _arg(node, 4, "padding", default=0)
        if transposed:  # conv_transposeNd(input, weight, bias, stride, padding, output_padding, groups, dilation)
            output_padding, dilation = _arg(node, 5, "output_padding", default=0), _arg(node, 7, "dilation", default=1)
        else:  # convNd(input, weight, bias, stride, padding, dilation, groups)
            output_padding, dilation = 0, _arg(node, 5, "dilation", default=1)
    winfo = weight.tensor if isinstance(weight, CanonNode) else None
    cn.args = {
        "input": inp, "weight": weight, "bias": bias,
        "weight_info": winfo,
        "transposed": transposed, "groups": groups,
        "has_bias": bias is not None,
    }
    cn.args.update(_conv_geometry(winfo.ndim - 2 if winfo is not None else None, stride, padding, dilation,
                                  output_padding))


def _conv_geometry(spatial: int | None, stride: Any, padding: Any, dilation: Any, output_padding: Any) -> dict[str, Any]:
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


# --------------------------------------------------------------------------- entry point


def build_view(
    gm: fx.GraphModule,
    *,
    origin: str,
    label: str = "graph",
    grad_enabled: bool = True,
    roles: dict[str, tuple[str, str | None]] | None = None,
    constants: dict[str, Any] | None = None,
) -> GraphView:
    """Build the canonical view of ``gm``.

    ``roles`` maps placeholder names to (kind, dotted name) with kind in
    input/parameter/buffer/constant; ``constants`` maps placeholder or get_attr
    names to constant tensor values. ``capture`` computes both per graph origin.
    """
    from ._perf import gc_paused

    b = _Builder(gm, origin, grad_enabled, dict(roles or {}), dict(constants or {}))
    with gc_paused():
        view = b.build()
    view.label = label
    return view


def dynamo_roles(gm: fx.GraphModule) -> dict[str, tuple[str, str | None]]:
    """Roles of the placeholders of a Dynamo graph, from each input's source."""
    roles: dict[str, tuple[str, str | None]] = {}
    param_sources = getattr(gm, "_param_name_to_source", None) or {}
    raw: dict[str, tuple[str, str | None]] = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            ga = node.meta.get("grapharg")
            src = getattr(ga, "source", None)
            name = _source_name(src)
            example = getattr(ga, "fake_tensor", None) if ga is not None else None
            kind = "input"
            if name and "._parameters." in _raw_source_text(src):
                kind = "parameter"
            elif name and "._buffers." in _raw_source_text(src):
                kind = "buffer"
            elif isinstance(example, torch.nn.Parameter):
                kind = "parameter"
            raw[node.name] = (kind, name)
        elif node.op == "get_attr":
            src = param_sources.get(str(node.target))
            if src is not None:
                raw[node.name] = ("parameter", _source_name(src))
    # One model in the frame (`self`, or the module a wrapper got): names are relative
    # to it. Several (`def step(G, D, z)`, two closure modules): keep each local's name,
    # or G's and D's parameters would share names.
    roots = {m.group(1) for kind, name in raw.values() if kind != "input" and name
             for m in [re.match(r"^L\['([^']*)'\]", name)] if m}
    for node_name, (kind, name) in raw.items():
        roles[node_name] = (kind, clean_path(name, keep_root=len(roots) > 1) if kind != "input" else name)
    return roles


def _source_name(src: Any) -> str | None:
    if src is None:
        return None
    n = getattr(src, "name", None)
    if callable(n):
        try:
            n = n()
        except Exception:  # noqa: BLE001
            return None
    return str(n) if n is not None else None


def _raw_source_text(src: Any) -> str:
    text = _source_name(src) or ""
    return text.replace("['", ".").replace("']", "")


__all__ = [
    "CanonNode",
    "GraphView",
    "IndexItem",
    "IndexSpec",
    "build_view",
    "dynamo_roles",
    "known",
    "info_of",
    "FACTORY_NAMES",
    "VIEW_OPS",
    "MAYBE_VIEW_OPS",
    "POINTWISE_OPS",
]

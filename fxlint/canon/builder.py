"""Build the canonical view of an fx graph: one ``CanonNode`` per fx node, with its value, role,
source location, grad mode, canonical op (``normalise``) and effects (``effects``).

Grad-mode regions: Dynamo's ``_set_grad_enabled`` / inference-mode nodes switch the mode of the
nodes after them; ``torch.export``'s ``wrap_with_set_grad_enabled`` regions are inlined (their
nodes appear in place, named ``<hop>/<node>``, in the region's mode).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.fx as fx

from ..tensor.info import TensorInfo, to_dim
from ..util.source import module_path, patched_torch_name, source_line, user_frame
from ._fx import dedupe, flatten, get_attr, get_submodule, value_of
from .effects import aliased_args, mutated_args
from .nodes import CanonNode, GraphView
from .op_registry import module_op, normalise

#: Python operators whose name is not the op's: ``a / b`` is ``div``, ``a += b`` is ``add_``
_OPERATOR_NAMES = {
    "truediv": "div", "floordiv": "floor_divide", "iadd": "add_", "isub": "sub_", "imul": "mul_",
    "itruediv": "div_", "ifloordiv": "floor_divide_", "imatmul": "matmul", "setitem": "setitem",
}
#: export wraps grad-mode regions in a higher-order op with a submodule; the view inlines it
_GRAD_REGION_HOPS = {"wrap_with_set_grad_enabled"}
_SCALARS = (int, float, bool, str, torch.dtype, torch.device, torch.memory_format, torch.layout)


def _target_name(node: fx.Node, gm: fx.GraphModule) -> tuple[str, str]:
    """(raw op name, spelling shown to users) of an fx node."""
    t = node.target
    if node.op == "call_method":
        return str(t), f"Tensor.{t}"
    if node.op == "call_module":
        mod = get_submodule(gm, str(t))
        cls = type(mod).__name__ if mod is not None else str(t)
        name = module_op(mod) if mod is not None else None
        return name or cls.lower(), f"nn.{cls}"
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
    where = getattr(t, "__module__", None) or ""
    patched = patched_torch_name(t)
    if patched is not None:  # a library's replacement of a torch function (PyG's torch.index_select): that function
        ns, name = patched
        if ns == "torch.Tensor":
            return name, f"Tensor.{name}"
        return name, ("F." if ns == "torch.nn.functional" else f"{ns}.") + name
    if where == "_operator" or where == "operator":
        return _OPERATOR_NAMES.get(name, name), f"operator.{name}"
    if where.startswith("torch.nn.functional") or where == "torch._C._nn":
        return name, f"F.{name}"
    if where.startswith("torch._C") and name == "_get_data_attr":
        return "data", "Tensor.data"
    if name == "_set_grad_enabled":
        return name, "torch._C._set_grad_enabled"
    return name, f"torch.{name}"


def _node_value(node: fx.Node) -> Any:
    v = value_of(node)
    return v if v is not None else node.meta.get("tensor_meta")


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
                    returned = [x for x in flatten(self.conv(node.args[0])) if isinstance(x, CanonNode)]
                    continue
                if self._is_grad_region(node):
                    self._inline_region(node, prefix)
                    continue
                cn = self.make(node)
                if prefix:
                    cn.name = f"{prefix}{node.name}"
                self._add(cn, node)
                if node.op == "output":
                    self.outputs = [x for x in flatten(cn.args.get("args", [])) if isinstance(x, CanonNode)]
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
        region = node.args[1]
        assert isinstance(region, fx.Node)  # _is_grad_region checked it
        sub = get_attr(self.gm, str(region.target))
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
        cn.inputs = dedupe(returned)
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
        if loc is not None and loc.code is None:
            cn.location = dataclasses.replace(loc, code=source_line(loc.file, loc.line))
        cn.inputs = dedupe([self.map[a] for a in node.all_input_nodes if a in self.map])
        if node.op == "placeholder":
            kind, pname = self.roles.get(node.name, ("input", None))
            cn.kind, cn.op, cn.param_name = kind, "placeholder", pname
            cn.spelling = pname or str(node.target)
            return cn
        if node.op == "get_attr":
            obj = get_attr(self.gm, str(node.target))
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
            elif (isinstance(obj, torch.Tensor) and cn.tensor is not None
                  and cn.tensor.requires_grad != obj.requires_grad):
                # fake-tensor propagation drops requires_grad; the module's own tensor knows it
                cn.value = dataclasses.replace(cn.tensor, requires_grad=obj.requires_grad,
                                               is_parameter=isinstance(obj, torch.nn.Parameter))
            if node.name in self.roles:
                cn.kind = self.roles[node.name][0]
            return cn
        if node.op == "output":
            cn.kind, cn.op = "output", "output"
            out = node.args[0]
            cn.args = {"args": self.conv(list(out) if isinstance(out, (list, tuple)) else [out])}
            return cn
        if node.op == "call_module":
            mod = get_submodule(self.gm, str(node.target))
            if mod is not None:
                cn.module_params = [f"{node.target}.{n}" for n, p in mod.named_parameters() if p.requires_grad]
                if cn.module_path is None:
                    cn.module_path = str(node.target)
        cn.mutates = dedupe([self.map[a] for a in mutated_args(node, raw) if isinstance(a, fx.Node) and a in self.map])
        normalise(cn, raw, node, self)
        cn.aliases = dedupe([self.map[a] for a in aliased_args(node, cn) if isinstance(a, fx.Node) and a in self.map])
        return cn


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
    from ..util.perf import gc_paused

    b = _Builder(gm, origin, grad_enabled, dict(roles or {}), dict(constants or {}))
    with gc_paused():
        view = b.build()
    view.label = label
    return view


__all__ = ["build_view"]

"""Helpers shared by the implicit-copy rules (FXL101-FXL108): how a layout came about, what the
consumers of a copy need, grouping copies per source line, and the bytes backward pays again.

Kept private to the passes package; every function reads the graph through the canonical view.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import torch

from .. import symbolic
from ..canon import VIEW_OPS, CanonNode, GraphView
from ..layout import contiguous_strides
from ..tensorinfo import Dim, TensorInfo, human_bytes, known
from ..viewable import check_view

#: ops that reduce to a fresh tensor: they read any strides, and their output layout is their own
REDUCTION_OPS = frozenset({
    "sum", "mean", "amax", "amin", "max", "min", "prod", "norm", "var", "std", "logsumexp", "all", "any",
    "argmax", "argmin", "count_nonzero", "nansum", "nanmean", "linalg_vector_norm",
})


# --------------------------------------------------------------------------- text


def nbytes_text(n: Dim | None) -> str:
    """``6.3 MB`` for known sizes, the formula for dynamic ones."""
    if n is None:
        return "an unknown number of bytes"
    k = known(n)
    return human_bytes(k) if k is not None else f"{n} bytes"


def shape_text(shape: Sequence[Dim]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def args_text(shape: Sequence[Dim]) -> str:
    return ", ".join(str(s) for s in shape)


def layout_text(t: TensorInfo) -> str:
    return f"{str(t.dtype).replace('torch.', '')} {shape_text(t.shape)} with strides {shape_text(t.stride)}"


def line_of(node: CanonNode | None) -> str:
    if node is None or node.location is None:
        return f"node {node.name}" if node is not None else "?"
    return f"line {node.location.line}"


def call_text(node: CanonNode) -> str:
    """How the user spelled a layout-making call, e.g. ``.permute(0, 3, 1, 2)``, ``[:, ::2]``."""
    op = node.op
    if op == "permute":
        dims = node.args.get("dims")
        short = node.spelling.rsplit(".", 1)[-1] if "." in node.spelling else node.spelling
        if short in ("t", "T", "mT") and dims is not None:
            return f".{short}" + ("()" if short == "t" else "")
        if short in ("transpose", "swapaxes", "swapdims") and dims is not None:
            moved = [i for i, d in enumerate(dims) if d != i]
            if len(moved) == 2:
                return f".transpose({moved[0]}, {moved[1]})"
        return f".permute({', '.join(map(str, dims))})" if dims is not None else ".permute(...)"
    if op == "slice":
        return node.args["index"].render()
    if op == "expand":
        shape = node.args.get("shape")
        return f".expand({args_text(shape)})" if shape is not None else ".expand(...)"
    if op in ("view", "reshape"):
        shape = node.args.get("shape")
        name = node.spelling.rsplit(".", 1)[-1] if "." in node.spelling else node.spelling
        name = {"default": "reshape", "using_ints": "flatten", "Tensor": "view"}.get(name, name)
        return f".{name}({args_text(shape)})" if shape is not None else f".{name}(...)"
    short = node.spelling.rsplit(".", 1)[-1]
    return f".{short}(...)"


def factory_text(node: CanonNode) -> str:
    kind = node.args.get("kind", "tensor")
    return f"torch.{kind}(...)"


# --------------------------------------------------------------------------- graph helpers


def real_users(node: CanonNode) -> list[CanonNode]:
    """``node.users`` without the metadata checks torch.export inserts (``_assert_tensor_metadata``,
    ``_assert_scalar``...): they read nothing."""
    return [u for u in node.users if not u.op.startswith("_assert")]


# --------------------------------------------------------------------------- layout origins


def layout_origin(node: CanonNode | None) -> CanonNode | None:
    """The closest view op above ``node`` (itself included) that made its layout non-contiguous:
    a permute, a step slice, an expand, ... ; None when the layout came from elsewhere."""
    cur = node
    while cur is not None and cur.is_view:
        t, src = cur.tensor, cur.input
        if t is not None and src is not None and src.tensor is not None:
            if t.is_contiguous() is False and src.tensor.is_contiguous() is True:
                return cur
        cur = src
    return None


def origin_text(node: CanonNode | None) -> str:
    """``" (made by `.permute(0, 3, 1, 2)` at line 14)"`` or ``""``."""
    origin = layout_origin(node)
    if origin is None:
        return ""
    return f" (made by `{call_text(origin)}` at {line_of(origin)})"


def view_base(node: CanonNode) -> CanonNode:
    """The tensor ``node`` is a view of (through view ops); ``node`` itself when it is not a view."""
    cur = node
    while cur.is_view and cur.input is not None:
        cur = cur.input
    return cur


def source_key(node: CanonNode | None) -> tuple:
    """A structural key for "the same data in the same layout": the base tensor and the view ops
    applied to it. Two copies with the same key (an unrolled loop) copy the same bytes twice."""
    parts: list[tuple] = []
    cur = node
    while cur is not None and cur.is_view and cur.input is not None:
        parts.append((cur.op, _args_key(cur)))
        cur = cur.input
    parts.append(("base", cur.name if cur is not None else None))
    return tuple(reversed(parts))


def _args_key(node: CanonNode) -> str:
    if node.op == "permute":
        return str(node.args.get("dims"))
    if node.op == "slice":
        return node.args["index"].render()
    if node.op in ("view", "reshape", "expand"):
        return str(node.args.get("shape"))
    return repr(sorted((k, str(v)) for k, v in node.args.items() if k != "input"))


def aliases(node: CanonNode) -> set[CanonNode]:
    """``node``'s base and every view of that base reachable downstream (they share storage)."""
    base = view_base(node)
    seen = {base}
    stack = [base]
    while stack:
        cur = stack.pop()
        for u in cur.users:
            if u.is_view and u.input is cur and u not in seen:
                seen.add(u)
                stack.append(u)
    return seen


def mutated_after(nodes: set[CanonNode], after: CanonNode, view: GraphView) -> list[CanonNode]:
    """Nodes after ``after`` (in graph order) that write in place into any of ``nodes``."""
    return [n for n in view.writers if n.position > after.position and any(m in nodes for m in n.mutates)]


def is_mutated(nodes: set[CanonNode], view: GraphView) -> bool:
    return any(any(m in nodes for m in n.mutates) for n in view.writers)


def escapes(node: CanonNode, view: GraphView) -> bool:
    """True when ``node`` or a view of it is a graph output (the caller, or code after a graph break,
    gets it)."""
    outs = set(view.outputs)
    return bool(aliases(node) & outs) if node.is_view else (node in outs or any(
        a in outs for a in aliases(node)))


# --------------------------------------------------------------------------- what consumers need

NEEDS, UNKNOWN, AGNOSTIC = "needs", "unknown", "agnostic"


@dataclass
class Need:
    """How the consumers of a copy depend on it.

    ``verdict``: ``needs`` (a consumer cannot work on the pre-copy layout without a copy of its
    own), ``unknown`` (a consumer whose stride handling is not modelled here, or the value
    escapes the graph), ``agnostic`` (every consumer reads any strides: the copy buys nothing).
    ``why``: a short text per consumer that decided it.
    """

    verdict: str
    why: list[str] = field(default_factory=list)
    consumers: list[CanonNode] = field(default_factory=list)


_RANK = {AGNOSTIC: 0, UNKNOWN: 1, NEEDS: 2}


def consumers_need(node: CanonNode, pre: TensorInfo, view: GraphView, depth: int = 0) -> Need:
    """Would the users of ``node`` (a contiguous copy of data laid out as ``pre``) work as well on
    ``pre`` directly? Follows elementwise ops, permutes and views a few levels down."""
    need = Need(AGNOSTIC)
    outs = set(view.outputs)

    def worst(verdict: str, why: str, who: CanonNode) -> None:
        need.consumers.append(who)
        if _RANK[verdict] > _RANK[need.verdict]:
            need.verdict = verdict
            need.why = [why]
        elif verdict == need.verdict and verdict != AGNOSTIC:
            need.why.append(why)

    if node in outs:
        worst(UNKNOWN, "the caller (it is returned)", node)
    for u in real_users(node):
        if u.kind == "output":
            continue
        if u.op in ("view", "reshape") and u.input is node and u.tensor is not None:
            chk = check_view(pre.shape, pre.stride, u.tensor.shape)
            if chk.viewable is False:
                verb = "cannot view" if u.op == "view" else "would copy"
                worst(NEEDS, f"`{call_text(u)}` at {line_of(u)} {verb} the original layout", u)
            elif chk.viewable is None or depth >= 3:
                worst(UNKNOWN, f"`{call_text(u)}` at {line_of(u)}", u)
            else:
                after = _relayout(pre, u.tensor.shape, chk.strides)
                sub = consumers_need(u, after, view, depth + 1)
                worst(sub.verdict if sub.verdict != NEEDS else NEEDS, "; ".join(sub.why), u)
        elif u.op == "permute" and u.input is node and u.args.get("dims") is not None and depth < 3:
            dims = u.args["dims"]
            after = _relayout(pre, tuple(pre.shape[d] for d in dims), tuple(pre.stride[d] for d in dims))
            sub = consumers_need(u, after, view, depth + 1)
            worst(sub.verdict, "; ".join(sub.why), u)
        elif u.op in REDUCTION_OPS or u.op == "contiguous":
            worst(AGNOSTIC, "", u)
        elif (u.is_pointwise or u.op in ("clone", "to")) and u.tensor is not None and depth < 3:
            if tuple(u.tensor.shape) != tuple(pre.shape):
                worst(UNKNOWN, f"`{u.op}` at {line_of(u)} (broadcasts)", u)
                continue
            # an elementwise result takes its inputs' layout: what its users need, this copy may
            sub = consumers_need(u, pre, view, depth + 1)
            verdict = UNKNOWN if sub.verdict == NEEDS else sub.verdict
            worst(verdict, "; ".join(sub.why) or f"`{u.op}` at {line_of(u)}", u)
        else:
            worst(UNKNOWN, f"`{u.op}` at {line_of(u)}", u)
    return need


def _relayout(t: TensorInfo, shape: Sequence[Dim], stride: Sequence[Dim] | None) -> TensorInfo:
    return TensorInfo(shape=tuple(shape), stride=tuple(stride or ()), storage_offset=t.storage_offset,
                      dtype=t.dtype, device=t.device, requires_grad=t.requires_grad)


# --------------------------------------------------------------------------- grouping per line


@dataclass
class Site:
    """The copies one rule finds on one source line (one module instance): an unrolled loop makes
    several nodes on the same line, and the cost per call is their sum."""

    nodes: list[CanonNode]
    nbytes: Dim | None
    repeats: int  # the largest number of copies of the same data in the same layout

    @property
    def node(self) -> CanonNode:
        return self.nodes[0]

    @property
    def count(self) -> int:
        return len(self.nodes)


def sites(items: Iterable[tuple[CanonNode, Dim | None, tuple]], view: GraphView) -> list[Site]:
    """Group ``(node, bytes, source key)`` per (file, line, module path); nodes without a source
    line (symbolic_trace) stay on their own."""
    groups: dict[tuple, list[tuple[CanonNode, Dim | None, tuple]]] = {}
    for node, nbytes, key in items:
        loc = node.location
        where = (loc.file, loc.line, node.module_path) if loc is not None else (None, node.name, None)
        groups.setdefault(where, []).append((node, nbytes, key))
    out = []
    for members in groups.values():
        total: Dim | None = 0
        for _, b, _ in members:
            total = None if total is None or b is None else symbolic.sum_of((total, b))
        counts: dict[tuple, int] = {}
        for node, _, key in members:
            base = _base_of_key(key, view)
            if base is not None and not is_mutated(aliases(base), view):
                counts[key] = counts.get(key, 0) + 1
        out.append(Site([m[0] for m in members], total, max(counts.values(), default=1)))
    return out


def _base_of_key(key: tuple, view: GraphView) -> CanonNode | None:
    name = key[0][1] if key and key[0][0] == "base" else None
    return view.by_name.get(name) if name else None


def count_text(site: Site) -> str:
    if site.count == 1:
        return ""
    return f" ({site.count} copies per call on this line)"


# --------------------------------------------------------------------------- backward


def grad_flows(node: CanonNode, src: CanonNode | None = None) -> bool:
    """True when backward will run through ``node`` (grad enabled and its input requires grad)."""
    src = src if src is not None else node.input
    return bool(node.grad_enabled and src is not None and src.tensor is not None and src.tensor.requires_grad)


def conversion_backward_bytes(node: CanonNode) -> Dim:
    """``to`` (dtype or device) is paid again in backward: ``ToCopyBackward0`` converts the
    gradient back to the input's dtype and device (measured: same element count, the input's
    itemsize). Zero when no gradient flows."""
    src = node.input
    if not grad_flows(node) or src is None or src.tensor is None:
        return 0
    return src.tensor.nbytes


def device_of(t: TensorInfo | None) -> torch.device | None:
    return t.device if t is not None else None


def same_device(a: torch.device | None, b: torch.device | None) -> bool | None:
    if a is None or b is None:
        return None
    if a.type != b.type:
        return False
    return a.index == b.index or a.index is None or b.index is None


def backward_layout_copies(node: CanonNode) -> list[tuple[CanonNode, Dim]]:
    """Copies backward makes above a layout copy: the gradient arrives contiguous at ``node``,
    each permute above it turns it back into the permuted layout, and a view or reshape above that
    must then reshape the permuted gradient, which copies when the dims it merges are not adjacent
    (measured: channel shuffle's split ``view`` pays a full ``ViewBackward0 > reshape > clone``).

    Returns ``(view node, bytes)`` per predicted backward copy; empty when no gradient flows."""
    src = node.input
    if src is None or src.tensor is None or node.tensor is None or not grad_flows(node):
        return []
    out: list[tuple[CanonNode, Dim]] = []
    shape = tuple(src.tensor.shape)
    stride = contiguous_strides(shape)  # the gradient of a copy is contiguous in the copy's shape
    cur = src
    while cur is not None and cur.input is not None and cur.input.tensor is not None and cur.is_view:
        parent = cur.input.tensor
        if cur.op == "permute" and cur.args.get("dims") is not None:
            dims = cur.args["dims"]
            inv = [0] * len(dims)
            for i, d in enumerate(dims):
                inv[d] = i
            shape, stride = tuple(shape[i] for i in inv), tuple(stride[i] for i in inv)
        elif cur.op == "view":
            chk = check_view(shape, stride, parent.shape)
            if chk.viewable is None:
                return out
            if chk.viewable:
                shape, stride = tuple(parent.shape), tuple(chk.strides or ())
            else:
                itemsize = (cur.tensor.dtype if cur.tensor else parent.dtype).itemsize
                out.append((cur, symbolic.nbytes(symbolic.prod(parent.shape), itemsize)))
                shape, stride = tuple(parent.shape), contiguous_strides(parent.shape)
        else:
            return out  # slices, expands...: not modelled
        if not cur.input.tensor.requires_grad:
            return out
        cur = cur.input
    return out


def numbered(hits: Iterable) -> list:
    """Give every hit after the first on the same line (and module) its own ``details["dedup"]``,
    so the engine's de-duplication (one finding per code, line, module and dedup key, across graphs
    and recompiles) keeps two copies written on one line, e.g. ``a.repeat(2, 1) + b.repeat(2, 1)``."""
    out = []
    seen: dict[tuple, int] = {}
    for h in hits:
        n = h.node
        loc = h.location or (n.location if n is not None else None)
        key = (loc.file, loc.line, n.module_path if n is not None else None) if loc is not None else (id(h),)
        k = seen.get(key, 0)
        seen[key] = k + 1
        if k:
            h.details.setdefault("dedup", str(k))
        out.append(h)
    return out

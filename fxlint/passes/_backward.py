"""The bytes backward pays again for a copy (kept private to the passes package): a dtype or
device conversion converts the gradient back, and a layout copy's contiguous gradient must be
reshaped through the views above it."""

from __future__ import annotations

import weakref

from ..canon import CanonNode, GraphView
from ..canon.text import call_text
from ..tensor import symbolic
from ..tensor.layout import contiguous_strides
from ..tensor.symbolic import Dim
from ..tensor.viewable import check_view
from ._grad_layout import OUTPUT_GRAD_OPS, SHOWN_AS, grad_layouts, output_grad_copy


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


def backward_layout_copies(node: CanonNode, view: GraphView | None = None) -> list[tuple[CanonNode, Dim]]:
    """Copies backward makes above a layout copy: the gradient arrives at ``node`` (contiguous, or in the
    layout ``fxlint.passes._grad_layout`` predicts for ``view``'s graph: F.scaled_dot_product_attention hands
    it back transposed), the copy passes it on, each permute above it turns it back into the permuted layout,
    and a view or reshape above that must then reshape the permuted gradient, which copies when the dims it
    merges are not adjacent (measured: channel shuffle's split ``view`` pays a full ``ViewBackward0 > reshape
    > clone``).

    Returns ``(view node, bytes)`` per predicted backward copy; empty when no gradient flows."""
    src = node.input
    if src is None or src.tensor is None or node.tensor is None or not grad_flows(node):
        return []
    out: list[tuple[CanonNode, Dim]] = []
    shape = tuple(src.tensor.shape)
    stride = contiguous_strides(shape)  # the gradient of a copy, where nothing says otherwise
    arrives = grad_layouts(view).at(node) if view is not None else None
    if arrives is not None and len(arrives.strides) == len(shape):
        stride = arrives.strides
    for cur in src.view_chain(aliasing=True)[:-1]:  # each view (a reshape that is one too), up to the tensor
        if cur.input is None or cur.input.tensor is None:
            break
        parent = cur.input.tensor
        if cur.op == "permute" and cur.args.get("dims") is not None:
            dims = cur.args["dims"]
            inv = [0] * len(dims)
            for i, d in enumerate(dims):
                inv[d] = i
            shape, stride = tuple(shape[i] for i in inv), tuple(stride[i] for i in inv)
        elif cur.op in ("view", "reshape"):  # a reshape in a view chain was a view in the forward
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
    return out


def copies_through(nodes: list[CanonNode], view: GraphView) -> list[tuple[CanonNode, Dim]]:
    """Every backward copy a layout copy (one of ``nodes``: a `.contiguous()` and its repeats) is the cause of:
    the views above it (``backward_layout_copies``), and the copies further on that the gradient model traces
    back through it (a `linear` in another module folding the gradient the copy's backward hands back permuted).
    Dropping the copy lets the gradient come back in the layout the views expect, so these go with it."""
    out = [b for n in nodes for b in backward_layout_copies(n, view)]
    seen = {id(n) for n, _ in out}
    out += [(c.node, c.bytes) for c in grad_layouts(view).copies
            if any(c.grad.through_copy is n for n in nodes) and id(c.node) not in seen]
    # and the ops further on whose backward copies their output's gradient back into their own layout (a
    # `layer_norm` whose output was permuted to NCHW and made contiguous for a conv: pvt_v2's stage norms)
    by_copy = _output_copies_by_copy(view)
    for n in nodes:
        out += [(u, b) for u, b in by_copy.get(id(n), ()) if id(u) not in seen]
    return out


_BY_COPY: weakref.WeakKeyDictionary[GraphView, dict[int, list[tuple[CanonNode, Dim]]]] = weakref.WeakKeyDictionary()


def _output_copies_by_copy(view: GraphView) -> dict[int, list[tuple[CanonNode, Dim]]]:
    """The output-gradient copies of ``view`` (``output_grad_copy``) by the layout copy their gradient came back
    through, computed once per view (a graph with thousands of `.contiguous()` asks for each)."""
    got = _BY_COPY.get(view)
    if got is None:
        got = {}
        for u in view.ops(*OUTPUT_GRAD_OPS):
            c = output_grad_copy(view, u)
            if c is not None and c.grad.through_copy is not None:
                got.setdefault(id(c.grad.through_copy), []).append((u, c.bytes))
        _BY_COPY[view] = got
    return got


def backward_copy_text(node: CanonNode) -> str:
    """How a message names the op whose backward copies: a view as written (``.view(2, 16, 4, 8)``), else the
    op (``linear``, ``layer_norm``)."""
    if node.is_view or node.op == "reshape":
        return call_text(node)
    return SHOWN_AS.get(node.op, node.op)


__all__ = ["backward_copy_text", "backward_layout_copies", "conversion_backward_bytes", "copies_through", "grad_flows"]

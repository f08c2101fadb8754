"""``torch.einsum`` of two operands on CPU (``Linear.cpp``: ``einsum``, ``sumproduct_pair``).

``einsum`` permutes each operand into one label order - the output's labels
in output order, then the contracted labels in label order (``A``-``Z`` before
``a``-``z``), a size-1 dim for a label the operand lacks - and hands the pair
to ``sumproduct_pair``. That sorts the dims into those in both operands and
the output (``lro``: the batch), those of the left or right operand only
(``lo``, ``ro``) and the summed ones, and runs

    left.permute(lro, lo, sum).reshape(lro_size, lo_size, sum_size)
    right.permute(lro, sum, ro).reshape(lro_size, sum_size, ro_size)
    bmm(left, right)

so an operand whose permuted dims do not merge is copied by the ``reshape``
(``aten::clone`` under ``aten::einsum``), and ``bmm`` then applies its own
rules (``fxlint.kernels.bmm``). ``q`` and ``k`` of
``einsum("B G H I D, B G H J D -> B G H I J", q, k)`` are copied whenever
their batch dims ``B G H`` do not merge - a permuted ``(B, G, H, I, D)``.

Before the pair goes to ``sumproduct_pair``, ``einsum`` squeezes out a
contracted dim of size 1 in both operands and sums one of size 1 in one
operand out of the other. With no summed dim left (``"blq,bhlk->bhlqk"``:
every label is in the output) the product is ``a.mul(b)``, broadcasting, with
no ``bmm``, no reshape and no copy; with every dim summed (``"ij,ij->"``) it is
``a.flatten().dot(b.flatten())``, and a flatten that is no view copies.

Modelled: two operands, explicit ``->``, letters only (spaces allowed), no
label repeated within an operand, every contracted label in both operands.
Anything else (ellipsis, diagonals, three or more operands, labels summed
out of one operand alone, a contracted dim of size 1 in one operand only) is
not predicted (None).
"""

from __future__ import annotations

from typing import Any

from ..tensor.info import TensorInfo
from ..tensor.symbolic import eq, prod
from .bmm import bmm_copies
from .env import Env
from .geometry import Geometry, on_cpu, shape_text
from .model_registry import kernel_model, needs_grad, tensor_arg
from .results import KernelCopy, KernelPrediction, copy_of, none_when_undecided

__all__ = ["einsum_operand_grad_strides", "parse_equation", "predict_einsum"]


def parse_equation(equation: str) -> tuple[list[str], str] | None:
    """(operand label strings, output labels) of an explicit equation of letters, None otherwise."""
    if not isinstance(equation, str) or "->" not in equation or "." in equation:
        return None
    lhs, out = equation.replace(" ", "").split("->")
    ins = lhs.split(",")
    if not all(s.isalpha() or s == "" for s in ins + [out]):
        return None
    if any(len(set(s)) != len(s) for s in ins + [out]):
        return None
    return ins, out


def _label_index(c: str) -> int:
    return ord(c) - ord("A") if c.isupper() else 26 + ord(c) - ord("a")


def _aligned(t: Geometry, labels: str, order: list[str]) -> Geometry:
    """``t`` permuted into ``order``, a size-1 dim for each label it lacks (``unsqueeze(-1)`` then permute)."""
    shape, stride = list(t.shape), list(t.stride)
    where = {c: i for i, c in enumerate(labels)}
    out_shape, out_stride = [], []
    for c in order:
        if c in where:
            out_shape.append(shape[where[c]])
            out_stride.append(stride[where[c]])
        else:
            out_shape.append(1)
            out_stride.append(1)
    return t.with_(out_shape, out_stride)


@none_when_undecided
def predict_einsum(equation: str, a: TensorInfo, b: TensorInfo, *, grad: bool = False,
                   env: Env | None = None) -> KernelPrediction | None:
    """``torch.einsum(equation, a, b)`` on CPU: the copies of ``sumproduct_pair``'s reshapes and its ``bmm``."""
    env = env or Env.current()
    parsed = parse_equation(equation)
    if parsed is None or len(parsed[0]) != 2 or not on_cpu(a, b):
        return None
    (la_labels, lb_labels), out = parsed
    la, lb = Geometry.of(a), Geometry.of(b)
    if la.ndim != len(la_labels) or lb.ndim != len(lb_labels):
        return None
    contracted = sorted({c for c in la_labels + lb_labels if c not in out}, key=_label_index)
    if any(c not in la_labels or c not in lb_labels for c in contracted):
        return None  # a label summed out of one operand alone: a reduction first, not modelled
    order = list(out) + contracted
    ta, tb = _aligned(la, la_labels, order), _aligned(lb, lb_labels, order)
    # ``einsum``'s pair step: a contracted dim of size 1 in both operands is squeezed out of both
    # (views); one of size 1 in one operand only is summed out of the other first (a reduction,
    # whose output layout is not modelled); the rest are ``sum_dims``
    keep = list(range(len(out)))
    for i in range(len(out), len(order)):
        sl, sr = not eq(ta.shape[i], 1), not eq(tb.shape[i], 1)
        if sl and sr:
            keep.append(i)
        elif sl or sr:
            return None  # summed out of one operand before the product: not modelled
    if len(keep) == len(out):
        # no summed dim left: ``a.mul(b)``, a broadcasting elementwise product (no bmm, no reshape)
        return KernelPrediction("einsum", "einsum: no summed index, a broadcast mul", (),
                                backward_known=not grad)
    ta = ta.with_([ta.shape[d] for d in keep], [ta.stride[d] for d in keep])
    tb = tb.with_([tb.shape[d] for d in keep], [tb.stride[d] for d in keep])
    order = [order[d] for d in keep]
    if not out:
        # every dim summed: ``a.flatten().dot(b.flatten())``; a flatten that is no view copies
        flat: list[KernelCopy] = []
        for name, op, geo in (("a", la, ta), ("b", lb, tb)):
            if geo.reshape((prod(list(geo.shape)),))[1]:
                flat.append(copy_of(name, op, "aten::clone", "einsum-fold",
                                      "einsum sums every dim and flattens the operand for dot, which this layout "
                                      "does not allow without a copy"))
        return KernelPrediction("einsum", "einsum: every index summed, flatten and dot", tuple(flat),
                                backward_known=not grad)
    contracted = order[len(out):]
    lro, lo, ro, sums = [], [], [], []
    for i, c in enumerate(order):
        sl, sr = not eq(ta.shape[i], 1), not eq(tb.shape[i], 1)
        if c in contracted:
            sums.append(i)
        elif sl and sr:
            lro.append(i)
        elif sl:
            lo.append(i)
        else:
            ro.append(i)

    def size(t: Geometry, dims: list[int]) -> Any:
        return prod([t.shape[d] for d in dims]) if dims else 1

    lro_size, lo_size, ro_size, sum_size = size(ta, lro), size(ta, lo), size(tb, ro), size(ta, sums)
    lperm, rperm = lro + lo + sums + ro, lro + sums + ro + lo
    pa = ta.with_([ta.shape[d] for d in lperm], [ta.stride[d] for d in lperm])
    pb = tb.with_([tb.shape[d] for d in rperm], [tb.stride[d] for d in rperm])
    copies: list[KernelCopy] = []
    left, ca = pa.reshape((lro_size, lo_size, sum_size))
    right, cb = pb.reshape((lro_size, sum_size, ro_size))
    batch = shape_text([order[d] for d in lro]).replace("'", "")
    for name, copied, t, shape in (("a", ca, la, (lro_size, lo_size, sum_size)),
                                   ("b", cb, lb, (lro_size, sum_size, ro_size))):
        if copied:
            copies.append(copy_of(name, t, "aten::clone", "einsum-fold",
                                  f"einsum permutes the operand to (batch {batch}, free, summed) dims and reshapes it "
                                  f"to {shape_text(shape)} for bmm, which this layout does not allow without a copy"))
    res = bmm_copies(left, right, ("a", "b"), env, "bmm")
    if res is None:
        return None
    path, inner = res
    copies.extend(inner)
    return KernelPrediction("einsum", f"einsum: sumproduct_pair, {path}", tuple(copies), backward_known=not grad)


def einsum_operand_grad_strides(equation: str, a: TensorInfo, b: TensorInfo) -> tuple[tuple, tuple] | None:
    """The strides of the gradients ``torch.einsum(equation, a, b)`` hands back to ``a`` and ``b`` in the
    backward (CPU), or None where the decomposition is not modelled (see ``predict_einsum``).

    Autograd records ``einsum``'s own steps: each operand permuted to ``sumproduct_pair``'s order and reshaped
    for ``bmm``. ``bmm``'s backward writes the left operand's gradient contiguous in (batch, left-only, summed)
    order and the right one's in (batch, summed, right-only) order; the reshape and permute backwards then hand
    each back as a permuted view: the operand's gradient is contiguous in the order ``bmm`` read it, not in the
    operand's own (``k`` of ``"bhid,bhjd->bhij"`` gets a gradient laid out (b, h, d, j))."""
    parsed = parse_equation(equation)
    if parsed is None or len(parsed[0]) != 2 or not on_cpu(a, b):
        return None
    (la_labels, lb_labels), out = parsed
    if a.ndim != len(la_labels) or b.ndim != len(lb_labels):
        return None
    contracted = sorted({c for c in la_labels + lb_labels if c not in out}, key=_label_index)
    if not out or any(c not in la_labels or c not in lb_labels for c in contracted):
        return None
    order = list(out) + contracted
    ta, tb = _aligned(Geometry.of(a), la_labels, order), _aligned(Geometry.of(b), lb_labels, order)
    keep = list(range(len(out)))
    for i in range(len(out), len(order)):
        sl, sr = not eq(ta.shape[i], 1), not eq(tb.shape[i], 1)
        if sl and sr:
            keep.append(i)
        elif sl or sr:
            return None
    if len(keep) == len(out):
        return None  # a broadcast mul: its gradients are products with the other operand, not modelled here
    kept = [order[d] for d in keep]
    lro, lo, ro, sums = [], [], [], []
    for i, d in enumerate(keep):
        sl, sr = not eq(ta.shape[d], 1), not eq(tb.shape[d], 1)
        if order[d] in contracted:
            sums.append(i)
        elif sl and sr:
            lro.append(i)
        elif sl:
            lo.append(i)
        else:
            ro.append(i)
    from ..tensor.layout import contiguous_strides

    def grad_strides(t: Geometry, labels: str, perm: list[int]) -> tuple:
        shape = [t.shape[keep[d]] for d in perm]  # the operand permuted as bmm reads it
        dense = contiguous_strides(shape)
        by_label = {kept[d]: dense[j] for j, d in enumerate(perm)}
        return tuple(by_label.get(c, 1) for c in labels)  # a label squeezed out has size 1

    return grad_strides(ta, la_labels, lro + lo + sums + ro), grad_strides(tb, lb_labels, lro + sums + ro + lo)


# --------------------------------------------------------------------------- models


@kernel_model("einsum", family="matmul", operands={"a": "first operand", "b": "second operand"})
def _einsum(node: Any, env: Env) -> KernelPrediction | None:
    a, b = tensor_arg(node, "a"), tensor_arg(node, "b")
    eqn = node.args.get("equation")
    if a is None or b is None or len(node.args.get("operands") or ()) != 2 or not isinstance(eqn, str):
        return None
    return predict_einsum(eqn, a, b, grad=needs_grad(node, a, b), env=env)

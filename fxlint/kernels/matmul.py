"""``matmul`` (``_matmul_impl``) and ``linear`` (``at::linear``): the composites over ``mm``,
``mv`` and ``bmm``.

* ``matmul``: 2-D/1-D cases are ``mm``/``mv``/``dot``. N-D @ 2-D/1-D is
  *folded* into one ``mm``/``mv`` when the N-D operand's leading dims merge
  (``should_fold``), or always when the small operand requires grad (a
  trainable weight) - then the fold's ``reshape`` copies an operand whose
  leading dims do not merge. Every other case broadcasts the batch dims,
  ``expand``s both operands and ``reshape``s them to ``(batch, m, k)``: an
  operand whose batch dims cannot be merged into one (``q.transpose(1, 2)``
  from ``(B, S, H, D)``, a broadcast batch dim) is copied there, then ``bmm``
  applies its own rules. 2-D @ N-D with a left operand that requires grad also
  copies the result back to its layout.
* ``linear``: 2-D input with bias is ``addmm``; a contiguous input with bias is
  flattened to 2-D and goes to ``addmm``; everything else is ``matmul`` with
  ``weight.t()`` (which requires grad for a trainable weight, so a
  non-foldable 3-D input is copied).

The composite part (the reshape copies) is the same on every device; off the
CPU only that part is predicted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..tensor.info import TensorInfo
from ..tensor.layout import broadcast_shapes
from ..tensor.symbolic import Dim, eq, prod
from .blas import BLAS_WHY, addmm_clones, mm_backward, mm_copies, mv_copies
from .bmm import bmm_copies
from .env import Env
from .geometry import Geometry, on_cpu, shape_text
from .model_registry import kernel_model, needs_grad, tensor_arg, tensor_model
from .results import KernelCopy, KernelPrediction, copy_of, none_when_undecided

__all__ = ["predict_linear", "predict_matmul"]


def _should_fold(t1: Geometry, t2: Geometry) -> bool:
    """ATen's should_fold (has_out=False)."""
    larger = t1.ndim >= t2.ndim
    big = t1 if larger else t2.mT()
    dim_small = t2.ndim if larger else t1.ndim
    if not (big.ndim >= 3 and dim_small <= 2):
        return False
    small_rg = t2.requires_grad if larger else t1.requires_grad
    if small_rg:
        return True
    if t1.ndim == 2:
        return False
    if eq(big.numel, 0):
        return True
    for i in range(big.ndim - 2):
        if not eq(big.stride[i], big.stride[i + 1] * big.shape[i + 1]):
            return False
    return True


#: the path ``_matmul_cpu`` gives off the CPU: only the composite reshape copies are known
_COMPOSITE = "composite"


def _matmul_path(t1: Geometry, t2: Geometry) -> str:
    """Which branch of ATen's ``_matmul_impl`` runs, from the ranks (and, for N-D operands, ``should_fold``):
    ``dot`` (1-D @ 1-D), ``mv`` (2-D @ 1-D), ``vm`` (1-D @ 2-D: an mm of the unsqueezed vector), ``mm``
    (2-D @ 2-D), ``fold`` (an N-D side folded into the rows of one mm/mv), ``batched`` (broadcast, fold
    the batch dims, bmm). Each branch's copies are counted by its own function below."""
    d1, d2 = t1.ndim, t2.ndim
    if d1 == 1 and d2 == 1:
        return "dot"
    if d1 == 2 and d2 == 1:
        return "mv"
    if d1 == 1 and d2 == 2:
        return "vm"
    if d1 == 2 and d2 == 2:
        return "mm"
    return "fold" if _should_fold(t1, t2) else "batched"


def _matmul_cpu(t1: Geometry, t2: Geometry, names: tuple[str, str], env: Env,
                cpu: bool) -> tuple[str, list[KernelCopy]] | None:
    """The copies of ``_matmul_impl`` (has_out=False): composite-level copies on any device,
    the inner mm/bmm/mv copies on CPU only. Off the CPU the path is ``_COMPOSITE`` and the
    copies are the composite ones (None where there are none to tell: 1-D/2-D operands)."""
    path = _matmul_path(t1, t2)
    if path == "dot":
        return "matmul: dot (any strides)", []
    if path == "fold":
        return _folded(t1, t2, names, env, cpu)
    if path == "batched":
        return _batched(t1, t2, names, env, cpu)
    if not cpu:
        return None
    if path == "mv":
        mv = mv_copies(t1, t2, names, env)
        return None if mv is None else ("matmul: mv", mv)
    return "matmul: mm", mm_copies(t1.unsqueeze(0) if path == "vm" else t1, t2, names)


def _folded(t1: Geometry, t2: Geometry, names: tuple[str, str], env: Env,
            cpu: bool) -> tuple[str, list[KernelCopy]] | None:
    """``fold``: the N-D operand's leading dims folded into the rows of one mm (or mv), reshape's copy
    when they do not merge, then the BLAS call's own copies."""
    d1, d2 = t1.ndim, t2.ndim
    transpose = d2 > d1
    if transpose:
        big, big_name = t2.mT(), names[1]
        small, small_name = (t1.transpose(0, 1) if d1 == 2 else t1), names[0]
    else:
        big, big_name, small, small_name = t1, names[0], t2, names[1]
    lead = big.shape[:-1]
    folded = prod(lead)
    t1f, copied = big.reshape((folded, big.shape[-1]))
    copies: list[KernelCopy] = []
    if copied:
        forced = (t2.requires_grad if d1 >= d2 else t1.requires_grad)
        copies.append(copy_of(big_name, big, "aten::clone", "fold-grad" if forced else "batch-fold",
                              f"matmul folds the leading dims {shape_text(lead)} into the rows of one "
                              + ("mm" if small.ndim == 2 else "mv")
                              + (" (it always does when the other operand requires grad, to keep the "
                                 "weight gradient small)" if forced else "")
                              + ", and this layout's leading dims do not merge without a copy"))
    if not cpu:
        return _COMPOSITE, copies
    if small.ndim == 2:
        for name, t in addmm_clones(t1f, small, (big_name, small_name)):
            copies.append(copy_of(name, t, "aten::clone", "blas-layout", BLAS_WHY))
        if transpose:
            out_shape = tuple(lead) + (small.shape[1],)
            out = t1f.contiguous_copy(out_shape).mT()
            if not out.is_contiguous():
                copies.append(copy_of("output", out, "aten::contiguous", "result-transpose",
                                      "2-D @ N-D computes the transposed product with one mm and copies the "
                                      "result back to its layout"))
        return "matmul: folded into mm", copies
    inner_mv = mv_copies(t1f, small, (big_name, small_name), env)
    if inner_mv is None:
        return None
    return "matmul: folded into mv", copies + inner_mv


def _batched(t1: Geometry, t2: Geometry, names: tuple[str, str], env: Env,
             cpu: bool) -> tuple[str, list[KernelCopy]] | None:
    """``batched``: both operands broadcast to the batch, the batch dims folded with reshape (a copy each
    where they do not merge), then bmm's own copies."""
    d1, d2 = t1.ndim, t2.ndim
    if d1 == 3 and d2 == 3 and not eq(t1.shape[0], t2.shape[0]) and (t1.requires_grad or t2.requires_grad):
        if not cpu:
            return None  # the size-1 squeeze under autograd is not modelled off the CPU
        if eq(t1.shape[0], 1) and t1.requires_grad:
            return _matmul_cpu(t1.squeeze0(), t2, names, env, cpu)
        if eq(t2.shape[0], 1) and t2.requires_grad:
            return _matmul_cpu(t1, t2.squeeze0(), names, env, cpu)
    n = t1.shape[-2] if d1 > 1 else 1
    m1 = t1.shape[-1]
    batch1 = t1.shape[: max(d1 - 2, 0)]
    m2 = t2.shape[-2] if d2 > 1 else t2.shape[0]
    p = t2.shape[-1] if d2 > 1 else 1
    batch2 = t2.shape[: max(d2 - 2, 0)]
    batch = broadcast_shapes(batch1, batch2)
    bprod = prod(batch)
    copies = []
    e1, c1 = t1.expand(tuple(batch) + (n, m1)).reshape((bprod, n, m1))
    if c1:
        copies.append(_batch_copy(names[0], t1, batch1, batch, e1))
    vector_rhs = d2 == 1
    if vector_rhs:
        e2, c2 = t2.expand(tuple(batch) + (m2,)).reshape((bprod, m2))
        e2 = e2.unsqueeze(2)
    else:
        e2, c2 = t2.expand(tuple(batch) + (m2, p)).reshape((bprod, m2, p))
    if c2:
        copies.append(_batch_copy(names[1], t2, batch2, batch, e2))
    if not cpu:
        return _COMPOSITE, copies
    res = bmm_copies(e1, e2, names, env)
    if res is None:
        return None
    path, inner = res
    # an operand already copied by reshape is contiguous: bmm's own copies concern the others
    return "matmul: batched " + path, copies + inner


def _batch_copy(name: str, orig: Geometry, own: Sequence[Dim], batch: Sequence[Dim],
                expanded: Geometry) -> KernelCopy:
    broadcast = len(own) != len(batch) or any(not eq(a, b) for a, b in zip(own, batch))
    if broadcast:
        why = (f"matmul broadcasts the batch dims {shape_text(tuple(own))} to {shape_text(tuple(batch))} and must "
               "flatten them into one for bmm, which materialises the broadcast")
        return copy_of(name, expanded, "aten::clone", "broadcast", why)
    why = (f"matmul flattens the batch dims {shape_text(tuple(batch))} into one for bmm, which this layout does not "
           "allow without a copy")
    return copy_of(name, expanded, "aten::clone", "batch-fold", why)


@none_when_undecided
def predict_matmul(a: TensorInfo, b: TensorInfo, *, grad: bool = False,
                   env: Env | None = None) -> KernelPrediction | None:
    """``torch.matmul(a, b)`` / ``a @ b``. ``requires_grad`` of the operands matters (``should_fold``)."""
    env = env or Env.current()
    if a.ndim == 0 or b.ndim == 0:
        return None
    cpu = on_cpu(a, b)
    la, lb = Geometry.of(a), Geometry.of(b)
    res = _matmul_cpu(la, lb, ("a", "b"), env, cpu)
    if res is None:
        return None
    path, copies = res
    if path == _COMPOSITE:
        return _composite_only("matmul", "matmul", copies)
    if la.ndim == 2 and lb.ndim == 2:
        copies = copies + mm_backward(la, lb, ("a", "b"), grad)
    return KernelPrediction("matmul", path, tuple(copies), backward_known=_matmul_backward_known(la, lb, copies, grad))


def _matmul_backward_known(la: Geometry, lb: Geometry, copies: Sequence[KernelCopy], grad: bool) -> bool:
    """N-D matmul saves the operands it reshaped: when its only copies are those reshapes (or none),
    the backward multiplies contiguous or BLAS-ready tensors and copies nothing at this line."""
    if not grad or (la.ndim == 2 and lb.ndim == 2):
        return True
    return all(c.reason in ("batch-fold", "fold-grad", "broadcast") for c in copies)


def _composite_only(kind: str, path: str, copies: Sequence[KernelCopy]) -> KernelPrediction:
    """Off the CPU: only matmul's composite reshape copies are known (they run on every device)."""
    return KernelPrediction(kind, f"{path} (composite part only; the device kernel is not modelled)",
                            tuple(copies), backward_known=False, output_known=False)


@none_when_undecided
def predict_linear(x: TensorInfo, weight: TensorInfo, bias: TensorInfo | None, *, has_bias: bool | None = None,
                   grad: bool = False, env: Env | None = None) -> KernelPrediction | None:
    """``F.linear(x, weight, bias)`` / ``nn.Linear`` (``at::linear``)."""
    env = env or Env.current()
    has_bias = bias is not None if has_bias is None else has_bias
    if x.ndim == 0 or weight.ndim != 2:
        return None
    cpu = on_cpu(x, weight)
    lx, lw = Geometry.of(x), Geometry.of(weight)
    wt = lw.transpose(0, 1)
    names = ("input", "weight")
    if has_bias and (lx.ndim == 2 or lx.is_contiguous()):
        # addmm(bias, x.reshape(-1, K), weight.t()); a contiguous input folds without a copy
        flat = lx if lx.ndim == 2 else lx.reshape((prod(lx.shape[:-1]), lx.shape[-1]))[0]
        if not cpu:
            return KernelPrediction("linear", "linear: addmm (device kernel not modelled)", (),
                                    backward_known=False, output_known=False)
        out = flat.contiguous_copy((flat.shape[0], lw.shape[0]))
        copies = [copy_of("bias", out, "aten::copy_", "bias-init",
                          "addmm copies the bias into the output before the BLAS call", avoidable=False)]
        for name, _t in addmm_clones(flat, wt, names):
            copies.append(copy_of(name, lx if name == "input" else lw, "aten::clone", "blas-layout", BLAS_WHY))
        path = "linear: addmm" if lx.ndim == 2 else "linear: flattened to addmm"
        return KernelPrediction("linear", path, tuple(copies), backward_known=not grad)
    res = _matmul_cpu(lx, wt, names, env, cpu)
    if res is None:
        return None
    path, copies = res
    if path == _COMPOSITE:
        return _composite_only("linear", "linear: matmul", copies)
    return KernelPrediction("linear", "linear: " + path, tuple(copies), backward_known=not grad)


# --------------------------------------------------------------------------- models


tensor_model("matmul", lambda a, b, grad, env: predict_matmul(a, b, grad=grad, env=env), family="matmul",
             operands={"a": "left operand", "b": "right operand"})


@kernel_model("linear", family="matmul", operands={"input": "input", "weight": "weight", "bias": "bias"})
def _linear(node: Any, env: Env) -> KernelPrediction | None:
    x = tensor_arg(node, "input")
    w = tensor_arg(node, "weight") or node.args.get("weight_info")
    if x is None or not isinstance(w, TensorInfo):
        return None
    bias = tensor_arg(node, "bias")
    has_bias = bias is not None if node.args.get("weight") is not None else bool(node.args.get("has_bias", True))
    return predict_linear(x, w, bias, has_bias=has_bias, grad=needs_grad(node, x, w, bias), env=env)

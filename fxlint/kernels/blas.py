"""BLAS matrix products on CPU: ``mm``, ``addmm``, ``mv``, ``dot``.

* ``mm``/``addmm`` (``addmm_impl_cpu_``): each matrix is passed to BLAS as is
  when one of its strides is 1 and the other is at least the leading
  dimension BLAS needs (row- or column-major, padded rows allowed);
  otherwise it is cloned. ``addmm`` also copies its bias into the output
  first (every program pays that). In backward, a saved operand BLAS cannot
  take is cloned again when the other operand needs a gradient.
* ``mv`` (``addmv``): gemv takes the matrix row- or column-major; bfloat16 and
  float16 on CPUs with oneDNN go through oneDNN, which takes the matrix only
  contiguous or transposed and the vector only dense.
* ``dot`` takes any strides.

The helpers here (``addmm_clones``, ``mv_copies``, ``onednn_plain``,
``onednn_matmul_usable``) are the BLAS rules ``bmm`` and ``matmul`` reuse.
"""

from __future__ import annotations

from typing import Any

import torch

from ..tensor.info import TensorInfo
from ..tensor.symbolic import Dim, eq, ge, gt, max1, prod
from .env import Env
from .geometry import Geometry, dtype_name, on_cpu
from .model_registry import kernel_model, tensor_arg, tensor_model
from .results import KernelCopy, KernelPrediction, copy_of, none_when_undecided

__all__ = ["predict_addmm", "predict_mm", "predict_mv"]

BLAS_WHY = ("BLAS takes a matrix only row- or column-major (one stride 1, the other at least the row length), "
            "which this layout is not")


def addmm_clones(m1: Geometry, m2: Geometry, names: tuple[str, str],
                 result: Geometry | None = None) -> list[tuple[str, Geometry]]:
    """The operands ``addmm_impl_cpu_`` clones (name, layout) for m1 (M, K) @ m2 (K, N)."""
    M, K = m1.shape
    N = m2.shape[1]
    if result is None:
        result = m1.contiguous_copy((M, N))
    if eq(prod(result.shape), 0) or eq(K, 0):
        return []
    rs, rsz = result.stride, result.shape
    a, b = (m1, names[0]), (m2, names[1])
    if eq(rs[0], 1) and (eq(rsz[1], 1) or ge(rs[1], max1(rsz[0]))):
        transpose_c = False
    elif eq(rs[1], 1) and (eq(rsz[0], 1) or ge(rs[0], max1(rsz[1]))):
        transpose_c = True
        a, b = b, a
    else:
        transpose_c = False  # c is made Fortran-contiguous: a copy of the output (fresh outputs never get here)
    m = rsz[1] if transpose_c else rsz[0]
    n = rsz[0] if transpose_c else rsz[1]
    k = a[0].shape[0] if transpose_c else a[0].shape[1]
    i0, i1 = (1, 0) if transpose_c else (0, 1)
    out: list[tuple[str, Geometry]] = []
    for (mat, name), lead, other in ((a, m, k), (b, k, n)):
        st = mat.stride
        if eq(st[i0], 1) and ge(st[i1], max1(lead)):
            continue
        if eq(st[i1], 1) and ge(st[i0], max1(other)):
            continue
        out.append((name, mat))
    return out


def onednn_plain(t: Geometry) -> bool:
    """mkldnn_matmul's is_mkldnn_optimized_format: contiguous, or the last two dims transposed."""
    if t.is_contiguous():
        return True
    s, st = t.shape, t.stride
    if t.ndim == 2:
        return eq(st[0], 1) and eq(st[1], s[0])
    return eq(st[0], s[1] * s[2]) and eq(st[1], 1) and eq(st[2], s[1])


def onednn_matmul_usable(dtype: torch.dtype, work: Dim, env: Env) -> bool | None:
    """use_mkldnn_matmul for reduced precision (checksize: the product of the sizes > 16**3)."""
    if not env.mkldnn:
        return False
    if env.onednn_reduced(dtype):
        return gt(work, 16 * 16 * 16)
    if dtype == torch.float32 and env.mkldnn_fp32_matmul:
        return None  # bf32/tf32 float32 matmul through oneDNN: not modelled
    return False


def mm_copies(a: Geometry, b: Geometry, names: tuple[str, str]) -> list[KernelCopy]:
    out = []
    for name, t in addmm_clones(a, b, names):
        out.append(copy_of(name, t, "aten::clone", "blas-layout", BLAS_WHY))
    return out


def mm_backward(a: Geometry, b: Geometry, names: tuple[str, str], grad: bool) -> list[KernelCopy]:
    """mm's backward multiplies the gradient by each saved operand (transposed): a saved operand
    BLAS cannot take is cloned again when the *other* operand needs a gradient."""
    if not grad:
        return []
    out = []
    M, _K = a.shape
    N = b.shape[1]
    g = a.contiguous_copy((M, N))
    if b.requires_grad:  # grad_b = a^T @ g
        for name, t in addmm_clones(a.mT(), g, (names[0], "grad")):
            if name == names[0]:
                out.append(copy_of(name, t, "aten::clone", "blas-layout",
                                   "the backward multiplies the gradient by the saved operand again",
                                   phase="backward"))
    if a.requires_grad:  # grad_a = g @ b^T
        for name, t in addmm_clones(g, b.mT(), ("grad", names[1])):
            if name == names[1]:
                out.append(copy_of(name, t, "aten::clone", "blas-layout",
                                   "the backward multiplies the gradient by the saved operand again",
                                   phase="backward"))
    return out


def mv_copies(mat: Geometry, vec: Geometry, names: tuple[str, str], env: Env) -> list[KernelCopy] | None:
    M, K = mat.shape
    if eq(mat.numel, 0) or eq(M, 0):
        return []
    usable = onednn_matmul_usable(mat.dtype, M * K, env)
    if usable is None:
        return None
    if usable:
        out = []
        if not onednn_plain(mat):
            out.append(copy_of(names[0], mat, "aten::contiguous", "onednn-layout",
                               f"{dtype_name(mat.dtype)} mv on this CPU runs in oneDNN, which takes the matrix only "
                               "contiguous or transposed"))
        col = vec.unsqueeze(1)
        if not onednn_plain(col):
            out.append(copy_of(names[1], vec, "aten::contiguous", "onednn-layout",
                               "oneDNN takes the vector only dense"))
        return out
    st = mat.stride

    def lda_ok(mm: Dim, nn: Dim, lda: Dim) -> bool:
        return eq(nn, 1) or ge(lda, max1(mm))

    if eq(st[0], 1) and lda_ok(M, K, st[1]):
        return []
    if eq(st[1], 1) and lda_ok(K, M, st[0]):
        return []
    return [copy_of(names[0], mat, "aten::contiguous", "gemv-layout",
                    "gemv takes a matrix only row- or column-major, which this layout is not")]


# --------------------------------------------------------------------------- entry points


@none_when_undecided
def predict_mm(a: TensorInfo, b: TensorInfo, *, grad: bool = False, env: Env | None = None) -> KernelPrediction | None:
    """``torch.mm(a, b)`` (also ``a @ b`` for 2-D operands)."""
    if not on_cpu(a, b) or a.ndim != 2 or b.ndim != 2:
        return None
    la, lb = Geometry.of(a), Geometry.of(b)
    copies = mm_copies(la, lb, ("a", "b")) + mm_backward(la, lb, ("a", "b"), grad)
    return KernelPrediction("mm", "mm: BLAS gemm", tuple(copies))


@none_when_undecided
def predict_addmm(bias: TensorInfo | None, a: TensorInfo, b: TensorInfo, *, grad: bool = False,
                  env: Env | None = None) -> KernelPrediction | None:
    """``torch.addmm(bias, a, b)``: the bias is first copied into the output (unavoidable)."""
    if not on_cpu(a, b) or a.ndim != 2 or b.ndim != 2:
        return None
    la, lb = Geometry.of(a), Geometry.of(b)
    out = la.contiguous_copy((la.shape[0], lb.shape[1]))
    copies = []
    if bias is not None and not eq(out.numel, 0):
        copies.append(copy_of("bias", out, "aten::copy_", "bias-init",
                              "addmm copies the bias into the output before the BLAS call", avoidable=False))
    copies += mm_copies(la, lb, ("a", "b")) + mm_backward(la, lb, ("a", "b"), grad)
    return KernelPrediction("addmm", "addmm: BLAS gemm", tuple(copies))


@none_when_undecided
def predict_mv(mat: TensorInfo, vec: TensorInfo, *, env: Env | None = None) -> KernelPrediction | None:
    env = env or Env.current()
    if not on_cpu(mat, vec) or mat.ndim != 2 or vec.ndim != 1:
        return None
    copies = mv_copies(Geometry.of(mat), Geometry.of(vec), ("a", "b"), env)
    if copies is None:
        return None
    return KernelPrediction("mv", "mv: gemv", tuple(copies))


# --------------------------------------------------------------------------- models


_OPERANDS = {"a": "left operand", "b": "right operand"}


tensor_model("mm", lambda a, b, grad, env: predict_mm(a, b, grad=grad, env=env), family="matmul",
             operands=_OPERANDS)
tensor_model("addmm", lambda a, b, bias, grad, env: predict_addmm(bias, a, b, grad=grad, env=env),
             family="matmul", operands={"a": "mat1", "b": "mat2", "bias": "bias"})
tensor_model("mv", lambda a, b, grad, env: predict_mv(a, b, env=env), family="matmul",
             operands={"a": "matrix", "b": "vector"})


@kernel_model("dot", family="matmul", operands={"a": "left vector", "b": "right vector"})
def _dot(node: Any, env: Env) -> KernelPrediction | None:
    a, b = tensor_arg(node, "a"), tensor_arg(node, "b")
    if a is None or b is None:
        return None
    return KernelPrediction("dot", "dot: any strides", ()) if on_cpu(a, b) else None

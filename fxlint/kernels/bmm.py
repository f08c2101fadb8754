"""Batched matrix products on CPU: ``bmm``, ``baddbmm`` (``bmm_out_or_baddbmm_``).

Tiny products (``m*k*n < 400``) run a naive loop that takes any strides;
float32 takes any batch stride (MKL batched gemm) when every matrix is row- or
column-major; otherwise it runs ``addmm`` batch by batch, cloning each matrix
that BLAS cannot take. bfloat16/float16 on CPUs with oneDNN support
(``b*m*k*n > 4096``) go through oneDNN, which takes an operand only when it is
contiguous or a transpose of the last two dims: anything else, expanded batch
dims included, is copied with ``.contiguous()``. ``baddbmm`` also copies its
bias into the output first.
"""

from __future__ import annotations

import torch

from ..tensor.info import TensorInfo
from ..tensor.symbolic import eq, ge, gt, require_int
from .blas import addmm_clones, onednn_matmul_usable, onednn_plain
from .env import Env
from .geometry import Geometry, dtype_name, on_cpu, shape_text
from .model_registry import tensor_model
from .results import KernelCopy, KernelPrediction, copy_of, none_when_undecided

__all__ = ["predict_bmm"]


def _exactly_dense(t: Geometry) -> bool:
    """(B, M, K) with the canonical strides of a contiguous tensor or of a last-two-dims transpose
    of one, size-1 dims included."""
    s, st = t.shape, t.stride
    batch = s[1] * s[2]
    return eq(st[0], batch) and ((eq(st[2], 1) and eq(st[1], s[2])) or (eq(st[1], 1) and eq(st[2], s[1])))


def bmm_copies(b1: Geometry, b2: Geometry, names: tuple[str, str], env: Env,
               kernel: str = "bmm") -> tuple[str, list[KernelCopy]] | None:
    """(path, copies) of ``bmm`` on (B, M, K) @ (B, K, N); None where the path is not modelled."""
    bs, m, k = b1.shape
    n = b2.shape[2]
    if eq(bs * m * n, 0) or eq(k, 0):
        return "bmm: empty", []
    dtype = b1.dtype
    if _exactly_dense(b1) and _exactly_dense(b2):
        # row-major or a transpose of it, with canonical strides: every bmm path takes them as they are
        # (decided without choosing the path, so symbolic sizes need not decide it)
        return f"{kernel}: dense operands (no copy on any path)", []
    heur = env.mkldnn and gt(m, 0) and gt(k, 0) and gt(n, 0)
    if heur:
        usable = onednn_matmul_usable(dtype, bs * m * k * n, env)
        if usable is None:
            return None
        if usable:
            copies = []
            for name, t in ((names[0], b1), (names[1], b2)):
                if not onednn_plain(t):
                    copies.append(copy_of(name, t, "aten::contiguous", "onednn-layout",
                                          f"{dtype_name(dtype)} {kernel} on this CPU runs in oneDNN, which takes "
                                          "each batch only contiguous or transposed in the last two dims"))
            return f"{kernel}: oneDNN matmul", copies
    if not ge(k * m * n, 400):
        return f"{kernel}: naive loop (m*k*n < 400), any strides", []

    def items_ok(t: Geometry) -> bool:
        s, st = t.shape, t.stride
        return (eq(st[2], 1) and (eq(s[1], 1) or ge(st[1], s[2]))) or \
            (eq(st[1], 1) and (eq(s[2], 1) or ge(st[2], s[1])))

    if env.mkl and dtype in (torch.float32, torch.float64, torch.complex64, torch.complex128) \
            and items_ok(b1) and items_ok(b2):
        return f"{kernel}: MKL batched gemm (any batch stride)", []
    copies = []
    for name, t in addmm_clones(b1.select0(), b2.select0(), names):
        count = require_int(bs, "the batch count")
        whole = b1 if name == names[0] else b2
        copies.append(copy_of(name, whole, "aten::clone", "blas-layout",
                              f"{kernel} falls back to one gemm per batch, and BLAS takes a matrix only row- or "
                              f"column-major, which each batch (strides {shape_text(t.stride)}) is not",
                              count=count))
    return f"{kernel}: gemm per batch", copies


@none_when_undecided
def predict_bmm(a: TensorInfo, b: TensorInfo, *, bias: TensorInfo | None = None, baddbmm: bool = False,
                grad: bool = False, env: Env | None = None) -> KernelPrediction | None:
    """``torch.bmm(a, b)`` / ``torch.baddbmm(bias, a, b)`` on CPU."""
    env = env or Env.current()
    if not on_cpu(a, b) or a.ndim != 3 or b.ndim != 3:
        return None
    la, lb = Geometry.of(a), Geometry.of(b)
    res = bmm_copies(la, lb, ("a", "b"), env, "baddbmm" if baddbmm else "bmm")
    if res is None:
        return None
    path, copies = res
    if baddbmm and bias is not None:
        out = la.contiguous_copy((la.shape[0], la.shape[1], lb.shape[2]))
        copies.insert(0, copy_of("bias", out, "aten::copy_", "bias-init",
                                 "baddbmm copies the bias into the output first", avoidable=False))
    return KernelPrediction("baddbmm" if baddbmm else "bmm", path, tuple(copies), backward_known=not grad)


# --------------------------------------------------------------------------- models


tensor_model("bmm", lambda a, b, grad, env: predict_bmm(a, b, grad=grad, env=env), family="matmul",
             operands={"a": "left operand", "b": "right operand"})
tensor_model("baddbmm",
             lambda a, b, bias, grad, env: predict_bmm(a, b, bias=bias, baddbmm=True, grad=grad, env=env),
             family="matmul", operands={"a": "batch1", "b": "batch2", "bias": "bias"})

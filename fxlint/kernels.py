"""A stride model of the ATen kernels that copy their inputs.

Given a canonical node (``mm``, ``bmm``, ``matmul``, ``addmm``, ``baddbmm``,
``mv``, ``linear``, ``conv``, ``layer_norm``, ``group_norm``,
``instance_norm``, ``rms_norm``, ``batch_norm``, ``softmax``,
``log_softmax``) and the shapes, strides and dtypes of its operands,
``predict`` says which operand the kernel copies, how many bytes, with which
ATen op, and whether the copy is paid again in backward. It answers ``None``
("unknown") rather than guess: when dynamic-shape symbols decide a stride
comparison, for devices other than the CPU (except the composite layers of
``matmul``/``linear``, which are the same everywhere), and for backend paths
it does not model.

The rules are ports of ATen's own decisions, checked against the runtime
(``tests/test_kernel_sweep.py`` compares every prediction with what
``torch.profiler`` records, over shapes, permutations, slices with steps,
expanded dims, dtypes and memory formats):

* ``mm``/``addmm`` (``addmm_impl_cpu_``): each matrix is passed to BLAS as is
  when one of its strides is 1 and the other is at least the leading
  dimension BLAS needs (row- or column-major, padded rows allowed);
  otherwise it is cloned. ``addmm`` also copies its bias into the output
  first (every program pays that).
* ``bmm``/``baddbmm`` (``bmm_out_or_baddbmm_``): tiny products
  (``m*k*n < 400``) run a naive loop that takes any strides; float32 takes
  any batch stride (MKL batched gemm) when every matrix is row- or
  column-major; otherwise it runs ``addmm`` batch by batch, cloning each
  matrix that BLAS cannot take. bfloat16/float16 on CPUs with oneDNN support
  (``b*m*k*n > 4096``) go through oneDNN, which takes an operand only when it
  is contiguous or a transpose of the last two dims: anything else, expanded
  batch dims included, is copied with ``.contiguous()``.
* ``matmul`` (``_matmul_impl``): 2-D/1-D cases are ``mm``/``mv``/``dot``.
  N-D @ 2-D/1-D is *folded* into one ``mm``/``mv`` when the N-D operand's
  leading dims merge (``should_fold``), or always when the small operand
  requires grad (a trainable weight) - then the fold's ``reshape`` copies
  an operand whose leading dims do not merge. Every other case broadcasts
  the batch dims, ``expand``s both operands and ``reshape``s them to
  ``(batch, m, k)``: an operand whose batch dims cannot be merged into one
  (``q.transpose(1, 2)`` from ``(B, S, H, D)``, a broadcast batch dim) is
  copied there, then ``bmm`` applies its own rules. 2-D @ N-D with a left
  operand that requires grad also copies the result back to its layout.
* ``linear``: 2-D input with bias is ``addmm``; a contiguous input with bias
  is flattened to 2-D and goes to ``addmm``; everything else is ``matmul``
  with ``weight.t()`` (which requires grad for a trainable weight, so a
  non-foldable 3-D input is copied).
* ``conv`` (``_convolution``): 1-d convs copy any non-contiguous input
  (ATen makes it contiguous before viewing it as 2-d). The CPU backend is
  oneDNN (``mkldnn``) or the native slow kernels, chosen by ATen's heuristic
  (dtype, batch size, kernel size, groups, threads); the backend works in
  channels_last when the input *or* the weight suggests channels_last (2-d
  kernels; 3-d only with oneDNN), else contiguous; input and weight are each
  made contiguous in that format - so a channels_last input converts a
  contiguous weight on every call. oneDNN in contiguous format may compute in
  a blocked layout and copy the output back (measured: bfloat16/float16
  except 2-d depthwise, float32 3-d depthwise with multiplier 1). The slow
  kernels copy the bias into the output. In backward the saved input and the
  weight are converted again, and oneDNN converts the channels_last weight
  gradient back.
* ``layer_norm``, ``rms_norm``, ``instance_norm``, ``softmax``,
  ``log_softmax``: a non-contiguous input is copied (``layer_norm`` again in
  backward, from its saved input). ``group_norm`` on CPU keeps a
  channels_last input and copies any other non-contiguous one.
  ``batch_norm`` takes any strides in float32; in bfloat16/float16 a layout
  that is neither contiguous nor channels_last is converted to float32.

Backward predictions assume the gradient reaches the kernel in its output's
own layout (what layout-preserving downstream ops give); a gradient in
another layout can add a conversion the model does not count.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Iterable, Sequence

import sympy
import torch

from .tensorinfo import Dim, TensorInfo, known

__all__ = [
    "Env",
    "KernelCopy",
    "KernelPrediction",
    "predict",
    "predict_mm",
    "predict_addmm",
    "predict_bmm",
    "predict_mv",
    "predict_matmul",
    "predict_linear",
    "predict_conv",
    "predict_norm",
    "predict_softmax",
    "suggest_memory_format",
    "view_strides",
    "predict_conv_node",
    "is_channels_last_dense",
    "KERNEL_OPS",
]

#: canonical ops ``predict`` knows
KERNEL_OPS = ("mm", "addmm", "bmm", "baddbmm", "mv", "dot", "matmul", "linear", "conv", "layer_norm",
              "group_norm", "instance_norm", "rms_norm", "batch_norm", "softmax", "log_softmax")

CONTIGUOUS = "contiguous"
CHANNELS_LAST = "channels_last"
CHANNELS_LAST_3D = "channels_last_3d"


class _Undecided(Exception):
    """A stride comparison depends on dynamic-shape symbols."""


# --------------------------------------------------------------------------- environment


@dataclass(frozen=True)
class Env:
    """The facts about the running PyTorch build that choose kernel paths."""

    mkldnn: bool = True  # torch.backends.mkldnn.enabled
    mkldnn_bf16: bool = True  # oneDNN bfloat16 kernels usable on this CPU
    mkldnn_fp16: bool = True  # oneDNN float16 kernels usable on this CPU
    mkl: bool = True
    num_threads: int = 2
    mkldnn_fp32_matmul: bool = False  # float32 matmul routed through oneDNN (bf32/tf32 precision)
    onednn_output_table: bool = True  # the oneDNN output-reorder table was measured on this kind of CPU

    @classmethod
    def current(cls) -> "Env":
        return _current_env(torch.get_num_threads(), bool(torch.backends.mkldnn.enabled))


@lru_cache(maxsize=8)
def _current_env(num_threads: int, mkldnn_enabled: bool) -> Env:
    def probe(fn: Any) -> bool:
        try:
            return bool(fn())
        except Exception:  # noqa: BLE001 - a build without the op simply lacks the feature
            return False

    bf16 = probe(lambda: torch.ops.mkldnn._is_mkldnn_bf16_supported())
    fp16 = probe(lambda: torch.ops.mkldnn._is_mkldnn_fp16_supported())
    try:
        prec = str(torch.backends.mkldnn.matmul.fp32_precision)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - older builds have no such setting
        prec = "none"
    try:
        cap = torch.backends.cpu.get_cpu_capability()
    except Exception:  # noqa: BLE001
        cap = ""
    return Env(
        mkldnn=mkldnn_enabled and torch.backends.mkldnn.is_available(),
        mkldnn_bf16=bf16,
        mkldnn_fp16=fp16,
        mkl=torch.backends.mkl.is_available(),
        num_threads=num_threads,
        mkldnn_fp32_matmul=prec not in ("none", "ieee", ""),
        # measured on x86 AVX512 with bf16/fp16 oneDNN support (AMX); elsewhere the output reorder is unknown
        onednn_output_table=cap == "AVX512" and bf16 and fp16,
    )


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class KernelCopy:
    """One copy a kernel makes (``count`` equal copies when it works batch by batch)."""

    operand: str  # a, b, input, weight, bias, output
    nbytes: Dim  # bytes of all ``count`` copies together
    phase: str  # forward | backward
    op: str  # the ATen op that copies: aten::clone, aten::contiguous, aten::_to_copy, aten::copy_
    reason: str  # a code: batch-fold, fold-grad, broadcast, blas-layout, onednn-layout, gemv-layout, ...
    why: str  # one sentence, for messages
    count: int = 1
    avoidable: bool = True  # False: every program pays it (bias copied into the output)

    @property
    def each(self) -> Dim:
        """Bytes of one of the ``count`` copies."""
        if self.count == 1:
            return self.nbytes
        n = self.nbytes
        return n // self.count if isinstance(n, int) else sympy.simplify(n / self.count)


@dataclass(frozen=True)
class KernelPrediction:
    kernel: str  # mm, bmm, matmul, linear, conv2d, layer_norm, ...
    path: str  # the implementation path the model followed, e.g. "bmm: MKL batched gemm"
    copies: tuple[KernelCopy, ...] = ()
    backward_known: bool = True  # False: the backward copies are not modelled for this path
    output_known: bool = True  # False: whether the backend copies its output is unknown here

    def forward(self, operand: str | None = None, avoidable: bool | None = True) -> list[KernelCopy]:
        return self._select("forward", operand, avoidable)

    def backward(self, operand: str | None = None, avoidable: bool | None = True) -> list[KernelCopy]:
        return self._select("backward", operand, avoidable)

    def _select(self, phase: str, operand: str | None, avoidable: bool | None) -> list[KernelCopy]:
        return [c for c in self.copies if c.phase == phase and (operand is None or c.operand == operand)
                and (avoidable is None or c.avoidable == avoidable)]

    @property
    def forward_bytes(self) -> Dim:
        return _sum(c.nbytes for c in self.forward())

    @property
    def backward_bytes(self) -> Dim:
        return _sum(c.nbytes for c in self.backward())


def _sum(xs: Iterable[Dim]) -> Dim:
    total: Dim = 0
    for x in xs:
        total = total + x
    return total if isinstance(total, int) else sympy.expand(total)


# --------------------------------------------------------------------------- symbolic-safe arithmetic


def _sign(x: Dim) -> int:
    """Sign of ``x``; dynamic-shape symbols are sizes >= 2 (Dynamo specialises 0 and 1)."""
    if isinstance(x, int):
        return (x > 0) - (x < 0)
    x = sympy.expand(x)
    if x.is_number:
        v = int(x)
        return (v > 0) - (v < 0)
    sub = {s: sympy.Symbol(f"{s}_t", integer=True, nonnegative=True) + 2 for s in x.free_symbols}
    y = sympy.expand(x.subs(sub))
    if y.is_zero:
        return 0
    if y.is_positive:
        return 1
    if y.is_negative:
        return -1
    raise _Undecided(str(x))


def _eq(a: Dim, b: Dim) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return _sign(a - b) == 0


def _ge(a: Dim, b: Dim) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a >= b
    return _sign(a - b) >= 0


def _gt(a: Dim, b: Dim) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a > b
    return _sign(a - b) > 0


def _max1(a: Dim) -> Dim:
    """max(1, a) for a size (sizes are >= 0)."""
    if isinstance(a, int):
        return max(1, a)
    return a if _ge(a, 1) else 1


def _prod(xs: Iterable[Dim]) -> Dim:
    out: Dim = 1
    for x in xs:
        out = out * x
    return out if isinstance(out, int) else sympy.expand(out)


# --------------------------------------------------------------------------- layouts


@dataclass(frozen=True)
class _L:
    """A tensor's geometry: what the kernels look at."""

    shape: tuple[Dim, ...]
    stride: tuple[Dim, ...]
    itemsize: int
    requires_grad: bool = False
    dtype: torch.dtype = torch.float32

    @classmethod
    def of(cls, t: TensorInfo) -> "_L":
        if len(t.stride) != len(t.shape):
            raise _Undecided("no strides")
        return cls(tuple(t.shape), tuple(t.stride), t.itemsize, bool(t.requires_grad), t.dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> Dim:
        return _prod(self.shape)

    @property
    def nbytes(self) -> Dim:
        n = self.numel
        return n * self.itemsize if isinstance(n, int) else sympy.expand(n * self.itemsize)

    def with_(self, shape: Sequence[Dim], stride: Sequence[Dim]) -> "_L":
        return replace(self, shape=tuple(shape), stride=tuple(stride))

    def contiguous_copy(self, shape: Sequence[Dim] | None = None) -> "_L":
        shape = tuple(self.shape if shape is None else shape)
        return self.with_(shape, _contiguous_strides(shape))

    # -- ATen's view ops ------------------------------------------------
    def transpose(self, d0: int, d1: int) -> "_L":
        s, st = list(self.shape), list(self.stride)
        s[d0], s[d1] = s[d1], s[d0]
        st[d0], st[d1] = st[d1], st[d0]
        return self.with_(s, st)

    def mT(self) -> "_L":
        return self.transpose(self.ndim - 2, self.ndim - 1)

    def unsqueeze(self, dim: int) -> "_L":
        # inferUnsqueezeGeometry: the new dim's stride is sizes[dim] * strides[dim] (1 at the end)
        s, st = list(self.shape), list(self.stride)
        new_stride = 1 if dim >= self.ndim else s[dim] * st[dim]
        s.insert(dim, 1)
        st.insert(dim, new_stride)
        return self.with_(s, st)

    def squeeze0(self) -> "_L":
        return self.with_(self.shape[1:], self.stride[1:])

    def select0(self) -> "_L":
        return self.with_(self.shape[1:], self.stride[1:])

    def expand(self, shape: Sequence[Dim]) -> "_L":
        """ATen's inferExpandGeometry."""
        shape = tuple(shape)
        nd, td = len(shape), self.ndim
        st: list[Dim] = [0] * nd
        for i in range(nd - 1, -1, -1):
            dim = td - (nd - i)
            size = self.shape[dim] if dim >= 0 else 1
            stride = self.stride[dim] if dim >= 0 else shape[i + 1] * st[i + 1] if i + 1 < nd else 1
            if not _eq(size, shape[i]):
                stride = 0  # a size-1 dim broadcast to shape[i]
            st[i] = stride
        return self.with_(shape, st)

    # -- predicates -----------------------------------------------------
    def is_contiguous(self) -> bool:
        return _is_contiguous_order(self.shape, self.stride, list(reversed(range(self.ndim))), empty_ok=True)

    def is_contiguous_as(self, fmt: str) -> bool:
        if fmt == CHANNELS_LAST and self.ndim == 4:
            return _is_contiguous_order(self.shape, self.stride, [1, 3, 2, 0], empty_ok=False)
        if fmt == CHANNELS_LAST_3D and self.ndim == 5:
            return _is_contiguous_order(self.shape, self.stride, [1, 4, 3, 2, 0], empty_ok=False)
        return self.is_contiguous()


def _contiguous_strides(shape: Sequence[Dim]) -> tuple[Dim, ...]:
    st: list[Dim] = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        st[i] = st[i + 1] * _max1(shape[i + 1])
    return tuple(st)


def _is_contiguous_order(shape: Sequence[Dim], stride: Sequence[Dim], order: Sequence[int], empty_ok: bool) -> bool:
    """ATen's compute_contiguous / compute_channels_last_contiguous_*: dense in ``order``
    (fastest first), size-1 dims skipped."""
    if empty_ok and any(_eq(s, 0) for s in shape):
        return True
    expected: Dim = 1
    for d in order:
        if _eq(shape[d], 1):
            continue
        if not _eq(stride[d], expected):
            return False
        expected = expected * shape[d]
    return True


def _strides_like_channels_last(shape: Sequence[Dim], stride: Sequence[Dim], order: Sequence[int]) -> bool:
    """ATen's is_channels_last_strides_2d_s4 / 3d_s5 (what suggest_memory_format reads)."""
    if _eq(stride[1], 0):
        return False
    minimum: Dim = 0
    for d in order:
        if _eq(shape[d], 0):
            return False
        if not _ge(stride[d], minimum):
            return False
        if d == 0 and _eq(minimum, stride[1]):
            return False
        minimum = stride[d]
        if _gt(shape[d], 1):
            minimum = minimum * shape[d]
    return True


def _suggest(t: _L) -> str:
    if t.ndim == 4 and _strides_like_channels_last(t.shape, t.stride, [1, 3, 2, 0]):
        return CHANNELS_LAST
    if t.ndim == 5 and _strides_like_channels_last(t.shape, t.stride, [1, 4, 3, 2, 0]):
        return CHANNELS_LAST_3D
    return CONTIGUOUS


def suggest_memory_format(t: TensorInfo) -> str | None:
    """``Tensor.suggest_memory_format()`` from shape and strides: contiguous, channels_last or
    channels_last_3d; None when symbols decide it."""
    try:
        return _suggest(_L.of(t))
    except _Undecided:
        return None


def _compute_stride(shape: Sequence[Dim], stride: Sequence[Dim], new_shape: Sequence[Dim]) -> tuple[Dim, ...] | None:
    """ATen's computeStride (one port, in ``fxlint.viewable``): strides that view (shape, stride)
    as new_shape, or None (reshape copies); raises ``_Undecided`` when symbols decide it."""
    from .viewable import check_view

    chk = check_view(shape, stride, new_shape)
    if chk.viewable is None:
        raise _Undecided("view")
    return chk.strides if chk.viewable else None


def view_strides(t: TensorInfo, new_shape: Sequence[Dim]) -> tuple[Dim, ...] | None | bool:
    """Strides of ``t.view(new_shape)``, or False when it needs a copy (``reshape`` copies,
    ``view`` raises); None when symbols decide it."""
    try:
        out = _compute_stride(t.shape, t.stride, new_shape)
    except _Undecided:
        return None
    return False if out is None else out


def _reshape(t: _L, new_shape: Sequence[Dim]) -> tuple[_L, bool]:
    """(result, copied) of ``t.reshape(new_shape)``."""
    st = _compute_stride(t.shape, t.stride, new_shape)
    if st is None:
        return t.contiguous_copy(new_shape), True
    return t.with_(new_shape, st), False


# --------------------------------------------------------------------------- BLAS matrix rules


def _addmm_cpu(m1: _L, m2: _L, names: tuple[str, str], result: _L | None = None) -> list[tuple[str, _L]]:
    """The operands ``addmm_impl_cpu_`` clones (name, layout) for m1 (M, K) @ m2 (K, N)."""
    M, K = m1.shape
    N = m2.shape[1]
    if result is None:
        result = m1.contiguous_copy((M, N))
    if _eq(_prod(result.shape), 0) or _eq(K, 0):
        return []
    rs, rsz = result.stride, result.shape
    a, b = (m1, names[0]), (m2, names[1])
    if _eq(rs[0], 1) and (_eq(rsz[1], 1) or _ge(rs[1], _max1(rsz[0]))):
        transpose_c = False
    elif _eq(rs[1], 1) and (_eq(rsz[0], 1) or _ge(rs[0], _max1(rsz[1]))):
        transpose_c = True
        a, b = b, a
    else:
        transpose_c = False  # c is made Fortran-contiguous: a copy of the output (fresh outputs never get here)
    m = rsz[1] if transpose_c else rsz[0]
    n = rsz[0] if transpose_c else rsz[1]
    k = a[0].shape[0] if transpose_c else a[0].shape[1]
    i0, i1 = (1, 0) if transpose_c else (0, 1)
    out: list[tuple[str, _L]] = []
    for (mat, name), lead, other in ((a, m, k), (b, k, n)):
        st = mat.stride
        if _eq(st[i0], 1) and _ge(st[i1], _max1(lead)):
            continue
        if _eq(st[i1], 1) and _ge(st[i0], _max1(other)):
            continue
        out.append((name, mat))
    return out


def _onednn_plain(t: _L) -> bool:
    """mkldnn_matmul's is_mkldnn_optimized_format: contiguous, or the last two dims transposed."""
    if t.is_contiguous():
        return True
    s, st = t.shape, t.stride
    if t.ndim == 2:
        return _eq(st[0], 1) and _eq(st[1], s[0])
    return _eq(st[0], s[1] * s[2]) and _eq(st[1], 1) and _eq(st[2], s[1])


def _exactly_dense(t: _L) -> bool:
    """(B, M, K) with the canonical strides of a contiguous tensor or of a last-two-dims transpose
    of one, size-1 dims included."""
    s, st = t.shape, t.stride
    batch = s[1] * s[2]
    return _eq(st[0], batch) and ((_eq(st[2], 1) and _eq(st[1], s[2])) or (_eq(st[1], 1) and _eq(st[2], s[1])))


def _onednn_matmul_usable(dtype: torch.dtype, work: Dim, env: Env) -> bool | None:
    """use_mkldnn_matmul for reduced precision (checksize: the product of the sizes > 16**3)."""
    if not env.mkldnn:
        return False
    if dtype == torch.bfloat16 and env.mkldnn_bf16 or dtype == torch.float16 and env.mkldnn_fp16:
        return _gt(work, 16 * 16 * 16)
    if dtype == torch.float32 and env.mkldnn_fp32_matmul:
        return None  # bf32/tf32 float32 matmul through oneDNN: not modelled
    return False


def _copy(operand: str, t: _L, op: str, reason: str, why: str, phase: str = "forward", count: int = 1,
          avoidable: bool = True, nbytes: Dim | None = None) -> KernelCopy:
    return KernelCopy(operand=operand, nbytes=t.nbytes if nbytes is None else nbytes, phase=phase, op=op,
                      reason=reason, why=why, count=count, avoidable=avoidable)


_BLAS_WHY = ("BLAS takes a matrix only row- or column-major (one stride 1, the other at least the row length), "
             "which this layout is not")


def _mm_copies(a: _L, b: _L, names: tuple[str, str]) -> list[KernelCopy]:
    out = []
    for name, t in _addmm_cpu(a, b, names):
        out.append(_copy(name, t, "aten::clone", "blas-layout", _BLAS_WHY))
    return out


def _mm_backward(a: _L, b: _L, names: tuple[str, str], grad: bool) -> list[KernelCopy]:
    """mm's backward multiplies the gradient by each saved operand (transposed): a saved operand
    BLAS cannot take is cloned again when the *other* operand needs a gradient."""
    if not grad:
        return []
    out = []
    M, K = a.shape
    N = b.shape[1]
    g = a.contiguous_copy((M, N))
    if b.requires_grad:  # grad_b = a^T @ g
        for name, t in _addmm_cpu(a.mT(), g, (names[0], "grad")):
            if name == names[0]:
                out.append(_copy(name, t, "aten::clone", "blas-layout",
                                 "the backward multiplies the gradient by the saved operand again",
                                 phase="backward"))
    if a.requires_grad:  # grad_a = g @ b^T
        for name, t in _addmm_cpu(g, b.mT(), ("grad", names[1])):
            if name == names[1]:
                out.append(_copy(name, t, "aten::clone", "blas-layout",
                                 "the backward multiplies the gradient by the saved operand again",
                                 phase="backward"))
    return out


def _fmt(xs: Sequence[Dim]) -> str:
    return "(" + ", ".join(str(x) for x in xs) + (",)" if len(xs) == 1 else ")")


# --------------------------------------------------------------------------- matrix kernels


def _cpu(*ts: TensorInfo | None) -> bool:
    return all(t is None or t.device.type == "cpu" for t in ts)


def predict_mm(a: TensorInfo, b: TensorInfo, *, grad: bool = False, env: Env | None = None) -> KernelPrediction | None:
    """``torch.mm(a, b)`` (also ``a @ b`` for 2-D operands)."""
    if not _cpu(a, b) or a.ndim != 2 or b.ndim != 2:
        return None
    try:
        la, lb = _L.of(a), _L.of(b)
        copies = _mm_copies(la, lb, ("a", "b")) + _mm_backward(la, lb, ("a", "b"), grad)
    except _Undecided:
        return None
    return KernelPrediction("mm", "mm: BLAS gemm", tuple(copies))


def predict_addmm(bias: TensorInfo | None, a: TensorInfo, b: TensorInfo, *, grad: bool = False,
                  env: Env | None = None) -> KernelPrediction | None:
    """``torch.addmm(bias, a, b)``: the bias is first copied into the output (unavoidable)."""
    if not _cpu(a, b) or a.ndim != 2 or b.ndim != 2:
        return None
    try:
        la, lb = _L.of(a), _L.of(b)
        out = la.contiguous_copy((la.shape[0], lb.shape[1]))
        copies = []
        if bias is not None and not _eq(out.numel, 0):
            copies.append(_copy("bias", out, "aten::copy_", "bias-init",
                                "addmm copies the bias into the output before the BLAS call", avoidable=False))
        copies += _mm_copies(la, lb, ("a", "b")) + _mm_backward(la, lb, ("a", "b"), grad)
    except _Undecided:
        return None
    return KernelPrediction("addmm", "addmm: BLAS gemm", tuple(copies))


def _bmm_cpu(b1: _L, b2: _L, names: tuple[str, str], env: Env, kernel: str = "bmm") -> tuple[str, list[KernelCopy]] | None:
    bs, m, k = b1.shape
    n = b2.shape[2]
    if _eq(bs * m * n, 0) or _eq(k, 0):
        return "bmm: empty", []
    dtype = b1.dtype
    if _exactly_dense(b1) and _exactly_dense(b2):
        # row-major or a transpose of it, with canonical strides: every bmm path takes them as they are
        # (decided without choosing the path, so symbolic sizes need not decide it)
        return f"{kernel}: dense operands (no copy on any path)", []
    heur = env.mkldnn and _gt(m, 0) and _gt(k, 0) and _gt(n, 0)
    if heur:
        usable = _onednn_matmul_usable(dtype, bs * m * k * n, env)
        if usable is None:
            return None
        if usable:
            copies = []
            for name, t in ((names[0], b1), (names[1], b2)):
                if not _onednn_plain(t):
                    copies.append(_copy(name, t, "aten::contiguous", "onednn-layout",
                                        f"{_dtname(dtype)} {kernel} on this CPU runs in oneDNN, which takes each "
                                        "batch only contiguous or transposed in the last two dims"))
            return f"{kernel}: oneDNN matmul", copies
    if not _ge(k * m * n, 400):
        return f"{kernel}: naive loop (m*k*n < 400), any strides", []

    def items_ok(t: _L) -> bool:
        s, st = t.shape, t.stride
        return (_eq(st[2], 1) and (_eq(s[1], 1) or _ge(st[1], s[2]))) or \
            (_eq(st[1], 1) and (_eq(s[2], 1) or _ge(st[2], s[1])))

    if env.mkl and dtype in (torch.float32, torch.float64, torch.complex64, torch.complex128) \
            and items_ok(b1) and items_ok(b2):
        return f"{kernel}: MKL batched gemm (any batch stride)", []
    copies = []
    for name, t in _addmm_cpu(b1.select0(), b2.select0(), names):
        if not isinstance(bs, int):
            raise _Undecided("batch count")
        whole = b1 if name == names[0] else b2
        copies.append(_copy(name, whole, "aten::clone", "blas-layout",
                            f"{kernel} falls back to one gemm per batch, and BLAS takes a matrix only row- or "
                            f"column-major, which each batch (strides {_fmt(t.stride)}) is not", count=bs))
    return f"{kernel}: gemm per batch", copies


def _dtname(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def predict_bmm(a: TensorInfo, b: TensorInfo, *, bias: TensorInfo | None = None, baddbmm: bool = False,
                grad: bool = False, env: Env | None = None) -> KernelPrediction | None:
    """``torch.bmm(a, b)`` / ``torch.baddbmm(bias, a, b)`` on CPU."""
    env = env or Env.current()
    if not _cpu(a, b) or a.ndim != 3 or b.ndim != 3:
        return None
    try:
        la, lb = _L.of(a), _L.of(b)
        res = _bmm_cpu(la, lb, ("a", "b"), env, "baddbmm" if baddbmm else "bmm")
        if res is None:
            return None
        path, copies = res
        if baddbmm and bias is not None:
            out = la.contiguous_copy((la.shape[0], la.shape[1], lb.shape[2]))
            copies.insert(0, _copy("bias", out, "aten::copy_", "bias-init",
                                   "baddbmm copies the bias into the output first", avoidable=False))
    except _Undecided:
        return None
    return KernelPrediction("baddbmm" if baddbmm else "bmm", path, tuple(copies), backward_known=not grad)


def _mv_cpu(mat: _L, vec: _L, names: tuple[str, str], env: Env) -> list[KernelCopy] | None:
    M, K = mat.shape
    if _eq(mat.numel, 0) or _eq(M, 0):
        return []
    usable = _onednn_matmul_usable(mat.dtype, M * K, env)
    if usable is None:
        return None
    if usable:
        out = []
        if not _onednn_plain(mat):
            out.append(_copy(names[0], mat, "aten::contiguous", "onednn-layout",
                             f"{_dtname(mat.dtype)} mv on this CPU runs in oneDNN, which takes the matrix only "
                             "contiguous or transposed"))
        col = vec.unsqueeze(1)
        if not _onednn_plain(col):
            out.append(_copy(names[1], vec, "aten::contiguous", "onednn-layout",
                             "oneDNN takes the vector only dense"))
        return out
    st = mat.stride

    def lda_ok(mm: Dim, nn: Dim, lda: Dim) -> bool:
        return _eq(nn, 1) or _ge(lda, _max1(mm))

    if _eq(st[0], 1) and lda_ok(M, K, st[1]):
        return []
    if _eq(st[1], 1) and lda_ok(K, M, st[0]):
        return []
    return [_copy(names[0], mat, "aten::contiguous", "gemv-layout",
                  "gemv takes a matrix only row- or column-major, which this layout is not")]


def predict_mv(mat: TensorInfo, vec: TensorInfo, *, env: Env | None = None) -> KernelPrediction | None:
    env = env or Env.current()
    if not _cpu(mat, vec) or mat.ndim != 2 or vec.ndim != 1:
        return None
    try:
        copies = _mv_cpu(_L.of(mat), _L.of(vec), ("a", "b"), env)
    except _Undecided:
        return None
    if copies is None:
        return None
    return KernelPrediction("mv", "mv: gemv", tuple(copies))


def _should_fold(t1: _L, t2: _L) -> bool:
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
    if _eq(big.numel, 0):
        return True
    for i in range(big.ndim - 2):
        if not _eq(big.stride[i], big.stride[i + 1] * big.shape[i + 1]):
            return False
    return True


#: the path ``_matmul_cpu`` gives off the CPU: only the composite reshape copies are known
_COMPOSITE = "composite"


def _matmul_cpu(t1: _L, t2: _L, names: tuple[str, str], env: Env, cpu: bool) -> tuple[str, list[KernelCopy]] | None:
    """The copies of ``_matmul_impl`` (has_out=False): composite-level copies on any device,
    the inner mm/bmm/mv copies on CPU only. Off the CPU the path is ``_COMPOSITE`` and the
    copies are the composite ones (None where there are none to tell: 1-D/2-D operands)."""
    d1, d2 = t1.ndim, t2.ndim
    if d1 == 1 and d2 == 1:
        return "matmul: dot (any strides)", []
    if d1 == 2 and d2 == 1:
        if not cpu:
            return None
        mv = _mv_cpu(t1, t2, names, env)
        return None if mv is None else ("matmul: mv", mv)
    if d1 == 1 and d2 == 2:
        if not cpu:
            return None
        return "matmul: mm", _mm_copies(t1.unsqueeze(0), t2, names)
    if d1 == 2 and d2 == 2:
        if not cpu:
            return None
        return "matmul: mm", _mm_copies(t1, t2, names)
    if _should_fold(t1, t2):
        transpose = d2 > d1
        if transpose:
            big, big_name = t2.mT(), names[1]
            small, small_name = (t1.transpose(0, 1) if d1 == 2 else t1), names[0]
        else:
            big, big_name, small, small_name = t1, names[0], t2, names[1]
        lead = big.shape[:-1]
        folded = _prod(lead)
        t1f, copied = _reshape(big, (folded, big.shape[-1]))
        copies: list[KernelCopy] = []
        if copied:
            forced = (t2.requires_grad if d1 >= d2 else t1.requires_grad)
            copies.append(_copy(big_name, big, "aten::clone", "fold-grad" if forced else "batch-fold",
                                f"matmul folds the leading dims {_fmt(lead)} into the rows of one "
                                + ("mm" if small.ndim == 2 else "mv")
                                + (" (it always does when the other operand requires grad, to keep the "
                                   "weight gradient small)" if forced else "")
                                + ", and this layout's leading dims do not merge without a copy"))
        if not cpu:
            return _COMPOSITE, copies
        if small.ndim == 2:
            for name, t in _addmm_cpu(t1f, small, (big_name, small_name)):
                copies.append(_copy(name, t, "aten::clone", "blas-layout", _BLAS_WHY))
            if transpose:
                out_shape = tuple(lead) + (small.shape[1],)
                out = t1f.contiguous_copy(out_shape).mT()
                if not out.is_contiguous():
                    copies.append(_copy("output", out, "aten::contiguous", "result-transpose",
                                        "2-D @ N-D computes the transposed product with one mm and copies the "
                                        "result back to its layout"))
            return "matmul: folded into mm", copies
        inner_mv = _mv_cpu(t1f, small, (big_name, small_name), env)
        if inner_mv is None:
            return None
        return "matmul: folded into mv", copies + inner_mv
    # batched path: broadcast, expand, fold the batch dims with reshape, bmm
    if d1 == 3 and d2 == 3 and not _eq(t1.shape[0], t2.shape[0]) and (t1.requires_grad or t2.requires_grad):
        if not cpu:
            return None  # the size-1 squeeze under autograd is not modelled off the CPU
        if _eq(t1.shape[0], 1) and t1.requires_grad:
            return _matmul_cpu(t1.squeeze0(), t2, names, env, cpu)
        if _eq(t2.shape[0], 1) and t2.requires_grad:
            return _matmul_cpu(t1, t2.squeeze0(), names, env, cpu)
    n = t1.shape[-2] if d1 > 1 else 1
    m1 = t1.shape[-1]
    batch1 = t1.shape[: max(d1 - 2, 0)]
    m2 = t2.shape[-2] if d2 > 1 else t2.shape[0]
    p = t2.shape[-1] if d2 > 1 else 1
    batch2 = t2.shape[: max(d2 - 2, 0)]
    batch = _broadcast(batch1, batch2)
    bprod = _prod(batch)
    copies = []
    e1, c1 = _reshape(t1.expand(tuple(batch) + (n, m1)), (bprod, n, m1))
    if c1:
        copies.append(_batch_copy(names[0], t1, batch1, batch, e1))
    vector_rhs = d2 == 1
    if vector_rhs:
        e2, c2 = _reshape(t2.expand(tuple(batch) + (m2,)), (bprod, m2))
        e2 = e2.unsqueeze(2)
    else:
        e2, c2 = _reshape(t2.expand(tuple(batch) + (m2, p)), (bprod, m2, p))
    if c2:
        copies.append(_batch_copy(names[1], t2, batch2, batch, e2))
    if not cpu:
        return _COMPOSITE, copies
    res = _bmm_cpu(e1, e2, names, env)
    if res is None:
        return None
    path, inner = res
    # an operand already copied by reshape is contiguous: bmm's own copies concern the others
    return "matmul: batched " + path, copies + inner


def _batch_copy(name: str, orig: _L, own: Sequence[Dim], batch: Sequence[Dim], expanded: _L) -> KernelCopy:
    broadcast = len(own) != len(batch) or any(not _eq(a, b) for a, b in zip(own, batch))
    if broadcast:
        why = (f"matmul broadcasts the batch dims {_fmt(tuple(own))} to {_fmt(tuple(batch))} and must flatten "
               "them into one for bmm, which materialises the broadcast")
        return _copy(name, expanded, "aten::clone", "broadcast", why)
    why = (f"matmul flattens the batch dims {_fmt(tuple(batch))} into one for bmm, which this layout does not "
           "allow without a copy")
    return _copy(name, expanded, "aten::clone", "batch-fold", why)


def _broadcast(a: Sequence[Dim], b: Sequence[Dim]) -> tuple[Dim, ...]:
    out: list[Dim] = []
    a, b = list(a), list(b)
    for i in range(max(len(a), len(b))):
        x = a[len(a) - 1 - i] if i < len(a) else 1
        y = b[len(b) - 1 - i] if i < len(b) else 1
        out.append(y if _eq(x, 1) else x)
    return tuple(reversed(out))


def predict_matmul(a: TensorInfo, b: TensorInfo, *, grad: bool = False,
                   env: Env | None = None) -> KernelPrediction | None:
    """``torch.matmul(a, b)`` / ``a @ b``. ``requires_grad`` of the operands matters (``should_fold``)."""
    env = env or Env.current()
    if a.ndim == 0 or b.ndim == 0:
        return None
    cpu = _cpu(a, b)
    try:
        la, lb = _L.of(a), _L.of(b)
        res = _matmul_cpu(la, lb, ("a", "b"), env, cpu)
        if res is None:
            return None
        path, copies = res
        if path == _COMPOSITE:
            return _composite_only("matmul", "matmul", copies)
        if la.ndim == 2 and lb.ndim == 2:
            copies = copies + _mm_backward(la, lb, ("a", "b"), grad)
    except _Undecided:
        return None
    return KernelPrediction("matmul", path, tuple(copies), backward_known=_matmul_backward_known(la, lb, copies, grad))


def _matmul_backward_known(la: _L, lb: _L, copies: Sequence[KernelCopy], grad: bool) -> bool:
    """N-D matmul saves the operands it reshaped: when its only copies are those reshapes (or none),
    the backward multiplies contiguous or BLAS-ready tensors and copies nothing at this line."""
    if not grad or (la.ndim == 2 and lb.ndim == 2):
        return True
    return all(c.reason in ("batch-fold", "fold-grad", "broadcast") for c in copies)


def _composite_only(kind: str, path: str, copies: Sequence[KernelCopy]) -> KernelPrediction:
    """Off the CPU: only matmul's composite reshape copies are known (they run on every device)."""
    return KernelPrediction(kind, f"{path} (composite part only; the device kernel is not modelled)",
                            tuple(copies), backward_known=False, output_known=False)


def predict_linear(x: TensorInfo, weight: TensorInfo, bias: TensorInfo | None, *, has_bias: bool | None = None,
                   grad: bool = False, env: Env | None = None) -> KernelPrediction | None:
    """``F.linear(x, weight, bias)`` / ``nn.Linear`` (``at::linear``)."""
    env = env or Env.current()
    has_bias = bias is not None if has_bias is None else has_bias
    if x.ndim == 0 or weight.ndim != 2:
        return None
    cpu = _cpu(x, weight)
    try:
        lx, lw = _L.of(x), _L.of(weight)
        wt = lw.transpose(0, 1)
        names = ("input", "weight")
        if has_bias and (lx.ndim == 2 or lx.is_contiguous()):
            # addmm(bias, x.reshape(-1, K), weight.t()); a contiguous input folds without a copy
            flat = lx if lx.ndim == 2 else _reshape(lx, (_prod(lx.shape[:-1]), lx.shape[-1]))[0]
            if not cpu:
                return KernelPrediction("linear", "linear: addmm (device kernel not modelled)", (),
                                        backward_known=False, output_known=False)
            out = flat.contiguous_copy((flat.shape[0], lw.shape[0]))
            copies = [_copy("bias", out, "aten::copy_", "bias-init",
                            "addmm copies the bias into the output before the BLAS call", avoidable=False)]
            for name, t in _addmm_cpu(flat, wt, names):
                copies.append(_copy(name, lx if name == "input" else lw, "aten::clone", "blas-layout", _BLAS_WHY))
            path = "linear: addmm" if lx.ndim == 2 else "linear: flattened to addmm"
            return KernelPrediction("linear", path, tuple(copies), backward_known=not grad)
        res = _matmul_cpu(lx, wt, names, env, cpu)
        if res is None:
            return None
        path, copies = res
        if path == _COMPOSITE:
            return _composite_only("linear", "linear: matmul", copies)
    except _Undecided:
        return None
    return KernelPrediction("linear", "linear: " + path, tuple(copies), backward_known=not grad)


# --------------------------------------------------------------------------- convolution


def _conv_use_mkldnn(inp: _L, w: _L, strided: bool, dilated: bool, transposed: bool, groups: int,
                     out_pad_big: bool, env: Env) -> bool:
    """ConvParams::use_mkldnn (CPU)."""
    if not env.mkldnn:
        return False
    if transposed and out_pad_big:
        return False
    if inp.dtype == torch.bfloat16 and env.mkldnn_bf16 or inp.dtype == torch.float16 and env.mkldnn_fp16:
        return True
    if inp.dtype != torch.float32:
        return False
    n, c, h = inp.shape[0], inp.shape[1], inp.shape[2]
    d3 = inp.shape[3]
    first = (strided or dilated or _ge(n, 16) or not _eq(w.shape[-1], 1) or not _eq(w.shape[-2], 1)
             or env.num_threads > 1)
    second = (groups > 1 or (_gt(w.shape[-1], 3) and _gt(w.shape[-2], 3)) or _gt(n, 1)
              or _gt(n * c * h * d3, 20480))
    return first and second


def predict_conv(x: TensorInfo, weight: TensorInfo, *, output: TensorInfo | None = None, has_bias: bool = True,
                 transposed: bool = False, groups: int = 1, stride: Sequence[Any] | None = None,
                 dilation: Sequence[Any] | None = None, output_padding: Sequence[Any] | None = None,
                 grad: bool = False, weight_grad: bool | None = None,
                 env: Env | None = None, use_mkldnn: bool | None = None) -> KernelPrediction | None:
    """A convolution (1-d/2-d/3-d, transposed or not) on CPU.

    ``use_mkldnn`` forces the backend choice (None: decide it as ATen does)."""
    env = env or Env.current()
    if not _cpu(x, weight) or weight.ndim not in (3, 4, 5) or x.ndim != weight.ndim or not isinstance(groups, int):
        return None
    spatial = weight.ndim - 2
    ints = [v for v in (*(stride or ()), *(dilation or ()), *(output_padding or ())) if not isinstance(v, int)]
    if ints:
        return None
    stride = tuple(stride or (1,) * spatial)
    dilation = tuple(dilation or (1,) * spatial)
    output_padding = tuple(output_padding or (0,) * spatial)
    if weight_grad is None:
        weight_grad = weight.requires_grad
    try:
        lx, lw = _L.of(x), _L.of(weight)
        copies: list[KernelCopy] = []
        kernel = f"conv{'_transpose' if transposed else ''}{spatial}d"
        orig_x = lx
        if spatial == 1:
            # ATen makes a 1-d input contiguous, then views it (and the weight) as 2-d
            if not lx.is_contiguous():
                copies.append(_copy("input", lx, "aten::contiguous", "conv1d-input",
                                    f"{kernel} makes a non-contiguous input contiguous before viewing it as 2-d"))
                if grad:
                    copies.append(_copy("input", lx, "aten::contiguous", "conv1d-input",
                                        "the backward makes the saved input contiguous again", phase="backward"))
                lx = lx.contiguous_copy()
            lx, lw = lx.unsqueeze(2), lw.unsqueeze(2)
            stride, dilation, output_padding = (1,) + stride, (1,) + dilation, (0,) + output_padding
        strided = any(s != 1 for s in stride)
        dilated = any(d != 1 for d in dilation)
        out_pad_big = any(op >= s for op, s in zip(output_padding, stride))
        nd = lx.ndim
        if use_mkldnn is None:
            try:
                mkldnn = _conv_use_mkldnn(lx, lw, strided, dilated, transposed, groups, out_pad_big, env)
            except _Undecided:
                # a dynamic batch size decides oneDNN vs the native kernel (n >= 16, n > 1): keep
                # what both backends would do alike, and call the rest unknown
                return _agreeing_conv(x, weight, output=output, has_bias=has_bias, transposed=transposed,
                                      groups=groups, stride=stride, dilation=dilation,
                                      output_padding=output_padding, grad=grad, weight_grad=weight_grad, env=env,
                                      conv1d=spatial == 1)
        else:
            mkldnn = use_mkldnn
        sug_x, sug_w = _suggest(lx), _suggest(lw)
        cl = CHANNELS_LAST if nd == 4 else CHANNELS_LAST_3D
        if mkldnn:
            backend = "oneDNN"
            fmt = cl if (sug_x == cl or sug_w == cl) and lx.dtype != torch.float64 else CONTIGUOUS
        else:
            # _select_conv_backend without oneDNN, on CPU
            if not transposed and nd == 5 and not dilated:
                backend = "slow 3-d"
            elif transposed:
                backend = f"slow transposed {nd - 2}-d"
            elif dilated:
                backend = f"slow dilated {nd - 2}-d"
            else:
                backend = "slow 2-d"
            if groups != 1 and backend != "slow 3-d":
                return None  # grouped convs split per group without oneDNN: not modelled
            fmt = cl if nd == 4 and (sug_x == cl or sug_w == cl) else CONTIGUOUS
        fmt_name = {CONTIGUOUS: "contiguous (NCHW)" if nd == 4 else "contiguous (NCDHW)",
                    CHANNELS_LAST: "channels_last", CHANNELS_LAST_3D: "channels_last_3d"}[fmt]
        if not lx.is_contiguous_as(fmt):
            accepts = f"contiguous or {cl}" if (mkldnn or nd == 4) and lx.dtype != torch.float64 \
                else "only contiguous input"
            why = (f"{kernel} runs {backend} in {fmt_name} layout here and takes {accepts}, which this layout is not")
            copies.append(_copy("input", orig_x, "aten::contiguous", "conv-input", why))
            if grad:
                copies.append(_copy("input", orig_x, "aten::contiguous", "conv-input",
                                    "the backward converts the saved input again", phase="backward"))
        if not lw.is_contiguous_as(fmt):
            why = (f"a {fmt_name} input makes {kernel} ({backend}) convert the weight to {fmt_name} on every call")
            copies.append(_copy("weight", lw, "aten::contiguous", "conv-weight", why))
            if grad:
                copies.append(_copy("weight", lw, "aten::contiguous", "conv-weight",
                                    "the backward converts the weight again", phase="backward"))
        if grad and weight_grad and mkldnn and fmt != CONTIGUOUS:
            copies.append(_copy("weight", lw, "aten::_to_copy", "conv-weight-grad",
                                "oneDNN returns the channels_last weight gradient, converted back to the "
                                "weight's layout", phase="backward"))
        output_known = True
        backward_known = True
        depthwise = groups > 1 and _eq(lx.shape[1], groups)
        if mkldnn and fmt == CONTIGUOUS:
            reorder = _onednn_reorders(lx, lw, depthwise, transposed, strided, dilated, env)
            if reorder is None:
                output_known = backward_known = False
            else:
                out_reorder, grad_input_reorder = reorder
                if out_reorder and output is not None:
                    copies.append(_copy("output", _L.of(output), "aten::contiguous", "conv-output",
                                        f"oneDNN computes this {_dtname(lx.dtype)} {kernel} in its own blocked "
                                        "layout and copies the output back to the contiguous layout"))
                elif out_reorder:
                    output_known = False
                if grad_input_reorder and grad and orig_x.requires_grad:
                    copies.append(_copy("input", orig_x, "aten::contiguous", "conv-grad-input",
                                        "oneDNN returns the input gradient in its own layout, copied back",
                                        phase="backward", avoidable=False))
        if mkldnn and fmt == CHANNELS_LAST_3D and dilated and grad:
            backward_known = False  # oneDNN sometimes converts the weight again here: not modelled
        if not mkldnn and has_bias and not transposed and output is not None and not _eq(_L.of(output).numel, 0):
            lo = _L.of(output)
            if "dilated" in backend:  # the bias is written channel by channel
                per = lo.shape[0] * lo.shape[1]
                if not isinstance(per, int):
                    raise _Undecided("channel count")
                copies.append(_copy("bias", lo, "aten::copy_", "bias-init",
                                    f"the {backend} kernel copies the bias into each output channel first",
                                    count=per, avoidable=False))
            else:
                copies.append(_copy("bias", lo, "aten::copy_", "bias-init",
                                    f"the {backend} kernel copies the bias into the output first", avoidable=False))
    except _Undecided:
        return None
    return KernelPrediction(kernel, f"{kernel}: {backend}, {fmt}", tuple(copies), output_known=output_known,
                            backward_known=backward_known or not grad)


def _agreeing_conv(x: TensorInfo, weight: TensorInfo, *, conv1d: bool, stride: Sequence[Any],
                   dilation: Sequence[Any], output_padding: Sequence[Any], **kw: Any) -> KernelPrediction | None:
    """The copies oneDNN and the native kernel would both make, when symbols pick between them."""
    if conv1d:  # predict_conv prepended the 2-d view's unit dim to these; hand back the 1-d ones
        stride, dilation, output_padding = stride[1:], dilation[1:], output_padding[1:]
    both = [predict_conv(x, weight, stride=stride, dilation=dilation, output_padding=output_padding,
                         use_mkldnn=flag, **kw) for flag in (True, False)]
    if any(p is None for p in both):
        return None
    a, b = both

    def key(c: KernelCopy) -> tuple:
        return (c.operand, c.phase, c.op, str(c.nbytes), c.avoidable)

    common = [c for c in a.copies if key(c) in {key(d) for d in b.copies}]
    same = len(common) == len(a.copies) == len(b.copies)
    return KernelPrediction(a.kernel, f"{a.kernel}: oneDNN or native (decided by a dynamic size)", tuple(common),
                            backward_known=same and a.backward_known and b.backward_known,
                            output_known=same and a.output_known and b.output_known)


def _onednn_reorders(x: _L, w: _L, depthwise: bool, transposed: bool, strided: bool, dilated: bool,
                     env: Env) -> tuple[bool, bool] | None:
    """(output copied back, input gradient copied back) when oneDNN runs a float32 conv in the
    contiguous layout. Not ATen's decision but oneDNN's choice of its internal layout: a table
    measured on x86 AVX512/AMX with torch 2.13 (tests/test_kernel_sweep.py). None where it is not
    known: other CPUs, and bfloat16/float16, whose reorders vary with shapes in ways not modelled."""
    if not env.onednn_output_table or x.dtype != torch.float32:
        return None
    mult1 = depthwise and _eq(w.shape[0], x.shape[1])
    out = (x.ndim == 5 and mult1 and not dilated and not transposed) or (transposed and strided)
    grad_input = strided and not transposed and not depthwise
    return out, grad_input


# --------------------------------------------------------------------------- normalisation, softmax


def predict_norm(kind: str, x: TensorInfo, *, grad: bool = False, training: bool | None = None,
                 has_weight: bool = True, env: Env | None = None) -> KernelPrediction | None:
    """``layer_norm``, ``rms_norm``, ``group_norm``, ``instance_norm``, ``batch_norm`` on CPU."""
    if not _cpu(x):
        return None
    try:
        lx = _L.of(x)
        copies: list[KernelCopy] = []
        if kind == "rms_norm":
            return _rms_norm(lx, has_weight)
        if kind in ("layer_norm", "instance_norm"):
            if not lx.is_contiguous():
                copies.append(_copy("input", lx, "aten::contiguous", "norm-input",
                                    f"{kind} works on contiguous rows and makes a non-contiguous input contiguous"))
                if grad and kind == "layer_norm":
                    copies.append(_copy("input", lx, "aten::contiguous", "norm-input",
                                        "the backward makes the saved input contiguous again", phase="backward"))
            return KernelPrediction(kind, f"{kind}: contiguous kernel", tuple(copies),
                                    backward_known=kind == "layer_norm" or not grad)
        if kind == "group_norm":
            fmt = _suggest(lx)
            if not lx.is_contiguous_as(fmt):
                copies.append(_copy("input", lx, "aten::contiguous", "norm-input",
                                    "group_norm on CPU takes contiguous or channels_last input, which this layout "
                                    "is not"))
            return KernelPrediction(kind, f"group_norm: {fmt}", tuple(copies))
        if kind == "batch_norm":
            if lx.dtype == torch.float32 or lx.dtype == torch.float64:
                return KernelPrediction(kind, "batch_norm: any strides", ())
            if lx.dtype in (torch.bfloat16, torch.float16) and lx.ndim >= 2:
                plain = lx.is_contiguous() or (lx.ndim in (4, 5) and lx.is_contiguous_as(_suggest(lx)))
                if plain:
                    return KernelPrediction(kind, "batch_norm: reduced precision, dense", ())
                if training is None:
                    return None
                f32 = _prod(lx.shape) * 4
                channels = lx.shape[1]
                why = (f"{_dtname(lx.dtype)} batch_norm on a layout that is neither contiguous nor channels_last "
                       "takes a slow path that converts the input to float32 for the statistics")
                if training:
                    copies.append(_copy("input", lx, "aten::_to_copy", "norm-input", why, nbytes=f32))
                    copies.append(_copy("stats", lx, "aten::_to_copy", "norm-stats", "the batch mean, in float32",
                                        nbytes=channels * 4))
                    copies.append(_copy("stats", lx, "aten::copy_", "norm-stats", "the batch mean, converted back",
                                        nbytes=channels * lx.itemsize))
                if grad:
                    copies.append(_copy("input", lx, "aten::_to_copy", "norm-input",
                                        "the backward converts the saved input to float32 again", phase="backward",
                                        nbytes=f32))
                    if training:
                        copies.append(_copy("stats", lx, "aten::copy_", "norm-stats",
                                            "a per-channel sum, converted back", phase="backward",
                                            nbytes=channels * lx.itemsize))
                return KernelPrediction(kind, "batch_norm: reduced precision, strided", tuple(copies),
                                        backward_known=not grad)
        return None
    except _Undecided:
        return None


def _rms_norm(lx: _L, has_weight: bool = True) -> KernelPrediction:
    """rms_norm's CPU composite: upcast (reduced precision), x * rsqrt(mean(x**2)), then the
    result is made contiguous - a copy when the elementwise result came out in another layout."""
    copies: list[KernelCopy] = []
    reduced = lx.dtype in (torch.bfloat16, torch.float16)
    up = lx
    if reduced:
        copies.append(_copy("input", lx, "aten::_to_copy", "dtype-upcast",
                            "rms_norm computes in float32", nbytes=lx.numel * 4, avoidable=False))
        up = replace(lx, itemsize=4, dtype=torch.float32)
        if not _is_non_overlapping_and_dense(lx.shape, lx.stride):  # _to_copy lays a non-dense input out afresh
            up = up.contiguous_copy() if _suggest(lx) == CONTIGUOUS else up.with_(
                lx.shape, _dense_strides(lx.shape, _CL_ORDER[lx.ndim]))
    rs = up.contiguous_copy(tuple(up.shape[:-1]) + (1,))
    res = up.with_(up.shape, _iter_output_strides(up.shape, [up, rs]))
    if not res.is_contiguous_as(_suggest(res)):
        copies.append(_copy("input", up, "aten::contiguous", "norm-input",
                            "rms_norm's elementwise result follows the input's layout and is then made contiguous"))
    if reduced and has_weight:
        copies.append(_copy("weight", lx, "aten::_to_copy", "dtype-upcast", "rms_norm upcasts the weight",
                            nbytes=lx.shape[-1] * 4, avoidable=False))
    if reduced:
        copies.append(_copy("input", lx, "aten::_to_copy", "dtype-upcast", "rms_norm converts the result back",
                            avoidable=False))
    return KernelPrediction("rms_norm", "rms_norm: composite", tuple(copies), backward_known=False)


_CL_ORDER = {4: [1, 3, 2, 0], 5: [1, 4, 3, 2, 0]}


def _dense_strides(shape: Sequence[Dim], order: Sequence[int]) -> tuple[Dim, ...]:
    st: list[Dim] = [0] * len(shape)
    cur: Dim = 1
    for d in order:
        st[d] = cur
        cur = cur * _max1(shape[d])
    return tuple(st)


def _is_non_overlapping_and_dense(shape: Sequence[Dim], stride: Sequence[Dim]) -> bool:
    """ATen's compute_non_overlapping_and_dense."""
    n = len(shape)
    if n == 1:
        return not _ge(shape[0], 2) or _eq(stride[0], 1)
    dims = [d for d in range(n) if _ge(shape[d], 2)]
    dims.sort(key=lambda d: _sort_key(stride[d]))
    expected: Dim = 1
    for d in dims:
        if not _eq(stride[d], expected):
            return False
        expected = expected * shape[d]
    return True


def _sort_key(x: Dim) -> int:
    if isinstance(x, int):
        return x
    raise _Undecided("symbolic stride order")


def _iter_output_strides(shape: Sequence[Dim], operands: Sequence[_L]) -> tuple[Dim, ...]:
    """The strides TensorIterator gives the output of an elementwise op over ``operands``
    (broadcast to ``shape``): its reorder_dimensions, ported."""
    n = len(shape)
    if all(op.is_contiguous() and len(op.shape) == n and all(_eq(a, b) for a, b in zip(op.shape, shape))
           for op in operands):
        return _contiguous_strides(shape)
    strides = []
    for op in operands:
        lead = n - op.ndim
        st = []
        for d in range(n):
            od = d - lead
            if od < 0 or (_eq(op.shape[od], 1) and not _eq(shape[d], 1)):
                st.append(0)
            else:
                st.append(op.stride[od])
        strides.append(st)

    def should_swap(d0: int, d1: int) -> int:
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if _eq(s0, 0) or _eq(s1, 0):
                continue
            if _gt(s1, s0):
                return -1
            if _gt(s0, s1):
                return 1
            if _gt(shape[d0], shape[d1]):
                return 1
        return 0

    perm = list(range(n - 1, -1, -1))  # fastest first
    for i in range(1, n):
        dim1 = i
        for dim0 in range(i - 1, -1, -1):
            c = should_swap(perm[dim0], perm[dim1])
            if c > 0:
                perm[dim0], perm[dim1] = perm[dim1], perm[dim0]
                dim1 = dim0
            elif c < 0:
                break
    return _dense_strides(shape, perm)


def predict_softmax(x: TensorInfo, *, kind: str = "softmax", env: Env | None = None) -> KernelPrediction | None:
    """``softmax``/``log_softmax`` on CPU: a non-contiguous input is made contiguous (the backward
    reads the saved output, so it does not copy again)."""
    if not _cpu(x):
        return None
    try:
        lx = _L.of(x)
        copies = []
        if not lx.is_contiguous():
            copies.append(_copy("input", lx, "aten::contiguous", "softmax-input",
                                f"the CPU {kind} kernel makes its input contiguous"))
    except _Undecided:
        return None
    return KernelPrediction(kind, f"{kind}: contiguous kernel", tuple(copies))


# --------------------------------------------------------------------------- canonical nodes


def _ti(x: Any) -> TensorInfo | None:
    t = getattr(x, "tensor", None)
    return t if isinstance(t, TensorInfo) else None


def _needs_grad(node: Any, *operands: TensorInfo | None) -> bool:
    return bool(getattr(node, "grad_enabled", True)) and any(t is not None and t.requires_grad for t in operands)


def predict(node: Any, env: Env | None = None) -> KernelPrediction | None:
    """The prediction for a canonical node (``fxlint.canon.CanonNode``), or None."""
    env = env or Env.current()
    op = node.op
    args = node.args
    try:
        if op in ("mm", "matmul", "bmm", "mv", "dot"):
            a, b = _ti(args.get("a")), _ti(args.get("b"))
            if a is None or b is None:
                return None
            grad = _needs_grad(node, a, b)
            if op == "mm":
                return predict_mm(a, b, grad=grad, env=env)
            if op == "bmm":
                return predict_bmm(a, b, grad=grad, env=env)
            if op == "mv":
                return predict_mv(a, b, env=env)
            if op == "dot":
                return KernelPrediction("dot", "dot: any strides", ()) if _cpu(a, b) else None
            return predict_matmul(a, b, grad=grad, env=env)
        if op in ("addmm", "baddbmm"):
            a, b, bias = _ti(args.get("a")), _ti(args.get("b")), _ti(args.get("bias"))
            if a is None or b is None:
                return None
            grad = _needs_grad(node, a, b, bias)
            if op == "addmm":
                return predict_addmm(bias, a, b, grad=grad, env=env)
            return predict_bmm(a, b, bias=bias, baddbmm=True, grad=grad, env=env)
        if op == "linear":
            x = _ti(args.get("input"))
            w = _ti(args.get("weight")) or args.get("weight_info")
            if x is None or not isinstance(w, TensorInfo):
                return None
            bias = _ti(args.get("bias"))
            has_bias = bias is not None if args.get("weight") is not None else bool(args.get("has_bias", True))
            return predict_linear(x, w, bias, has_bias=has_bias, grad=_needs_grad(node, x, w, bias), env=env)
        if op == "conv":
            return predict_conv_node(node, env=env)
        if op in ("layer_norm", "group_norm", "instance_norm", "rms_norm", "batch_norm"):
            x = _ti(args.get("input"))
            if x is None:
                return None
            params = [_ti(r) for r in args.get("rest", []) if _ti(r) is not None]
            grad = _needs_grad(node, x, *params) or (bool(node.grad_enabled) and bool(node.module_params))
            return predict_norm(op, x, grad=grad, training=args.get("training"), env=env)
        if op in ("softmax", "log_softmax"):
            x = _ti(args.get("input"))
            return None if x is None else predict_softmax(x, kind=op, env=env)
    except _Undecided:
        return None
    return None



def predict_conv_node(node: Any, x: TensorInfo | None = None, env: Env | None = None) -> KernelPrediction | None:
    """The prediction for a canonical ``conv`` node, optionally as if its input were ``x``."""
    args = node.args
    x = x if x is not None else _ti(args.get("input"))
    w = args.get("weight_info")
    if x is None or not isinstance(w, TensorInfo):
        return None
    return predict_conv(
        x, w, output=node.tensor, has_bias=bool(args.get("has_bias", True)),
        transposed=bool(args.get("transposed")), groups=args.get("groups", 1),
        stride=args.get("stride"), dilation=args.get("dilation"), output_padding=args.get("output_padding"),
        grad=_needs_grad(node, x, w), weight_grad=w.requires_grad and bool(node.grad_enabled), env=env)


def is_channels_last_dense(t: TensorInfo) -> str | None:
    """``channels_last``/``channels_last_3d`` when ``t`` is exactly that dense layout (and not also
    contiguous), else None (also when symbols decide it)."""
    try:
        lt = _L.of(t)
        fmt = _suggest(lt)
        if fmt != CONTIGUOUS and lt.is_contiguous_as(fmt) and not lt.is_contiguous():
            return fmt
    except _Undecided:
        return None
    return None

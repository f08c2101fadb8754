"""``F.scaled_dot_product_attention`` on CPU (``attention.cpp``, ``sdp_utils_cpp.cpp``).

The CPU dispatcher (``_fused_sdp_choice_cpp``) runs the fused flash kernel
(``_scaled_dot_product_flash_attention_for_cpu``), which reads strided q/k/v
without copying, when every check of ``use_flash_attention_cpp`` passes:

* q, k, v are 4-D (``check_tensor_shapes``), with the same batch size and
  number of heads (no broadcasting, ``check_batch_size_and_num_heads_dense``),
  the same head dim (``check_head_dim_size_cpp``), non-empty sequences, and a
  unit stride in the last dim (``check_last_dim_stride_equals_1_dense``);
* no dropout (``check_for_dropout``);
* ``attn_mask`` is absent, or does not require grad and is 2-D, or 4-D with
  batch 1 or B and heads 1 or H, its last two dims L (or 1) and S (or 1)
  (``check_attn_mask_shape``): a 3-D ``(H, L, S)`` relative-position bias is
  not, and sends the call to the math path.

Otherwise ``_scaled_dot_product_attention_math`` runs:
``q * sqrt(scale)`` and ``k.transpose(-2, -1) * sqrt(scale)`` (elementwise:
a result laid out like its non-dense input, e.g. one third of a
``qkv.reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4)``, is dense in the
input's dim order, ``(B, N, H, D)``), then ``matmul`` of the two, the mask
added in place, softmax, and ``matmul`` with v. Each ``matmul`` folds the
batch dims with a ``reshape`` (``fxlint.kernels.matmul``), which copies an
operand whose batch dims do not merge: with the usual ``qkv`` layout, all
three. Those are the copies predicted here.

What is not modelled (the prediction is None or says unknown): reduced
precision on the math path (it converts to float32 first), grouped-query
attention (``enable_gqa``), the backward, and the flash kernel's handling of
a mask whose last dim is strided (it made one contiguous in our runs).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch

from ..tensor.info import TensorInfo
from ..tensor.layout import broadcast_shapes, iter_output_strides
from ..tensor.symbolic import Undecided, eq
from .env import Env
from .geometry import Geometry, on_cpu
from .matmul import _matmul_cpu
from .model_registry import kernel_model, needs_grad, tensor_arg
from .results import KernelCopy, KernelPrediction, Unknown, none_when_undecided

__all__ = ["MATH", "flash_blocker", "predict_sdpa", "sdpa_blocker"]

#: ``KernelCopy.reason`` of the copies the math path's matmuls make
MATH = "sdpa-math"


def flash_blocker(q: Geometry, k: Geometry, v: Geometry, mask: Geometry | None, *, mask_grad: bool = False,
                  dropout: float = 0.0) -> str | None:
    """Why the CPU flash kernel cannot take this call (one clause), None when it can."""
    if any(t.ndim != 4 for t in (q, k, v)):
        return f"q/k/v are {q.ndim}-D, and the fused kernel takes only 4-D (B, H, L, E)"
    if not (eq(q.shape[0], k.shape[0]) and eq(q.shape[0], v.shape[0])
            and eq(q.shape[1], k.shape[1]) and eq(q.shape[1], v.shape[1])):
        return "q/k/v differ in batch size or number of heads (broadcast), which the fused kernel does not take"
    if not (eq(q.shape[3], k.shape[3]) and eq(q.shape[3], v.shape[3])):
        return "v's head dim differs from q's, which the fused kernel does not take"
    if eq(q.shape[2], 0) or eq(k.shape[2], 0):
        return "a sequence is empty"
    if not all(eq(t.stride[3], 1) for t in (q, k, v)):
        return "q, k or v has a non-unit stride in its last dim"
    if dropout:
        return "dropout_p > 0, which the fused CPU kernel does not do"
    if mask is not None:
        if mask_grad:
            return "attn_mask requires grad"
        if mask.ndim not in (2, 4):
            return (f"attn_mask is {mask.ndim}-D, and the fused kernel takes a 2-D (L, S) or 4-D "
                    "(B or 1, H or 1, L, S) mask")
        if not (eq(mask.shape[-2], q.shape[2]) or eq(mask.shape[-2], 1)) or \
                not (eq(mask.shape[-1], k.shape[2]) or eq(mask.shape[-1], 1)):
            return "attn_mask broadcasts in its last two dims in a way the fused kernel does not take"
        if mask.ndim == 4 and not ((eq(mask.shape[0], 1) or eq(mask.shape[0], q.shape[0]))
                                   and (eq(mask.shape[1], 1) or eq(mask.shape[1], q.shape[1]))):
            return "attn_mask's batch or head dim is neither 1 nor q's"
    return None


def _elementwise(t: Geometry) -> Geometry:
    """The layout of ``t * scalar`` (TensorIterator's output for one operand)."""
    return t.with_(t.shape, iter_output_strides(t.shape, [(t.shape, t.stride)]))


@none_when_undecided
def predict_sdpa(q: TensorInfo, k: TensorInfo, v: TensorInfo, attn_mask: TensorInfo | None = None, *,
                 dropout: float = 0.0, enable_gqa: bool = False, grad: bool = False, grad_enabled: bool = True,
                 env: Env | None = None) -> KernelPrediction | None:
    """``F.scaled_dot_product_attention(q, k, v, attn_mask)`` on CPU: the copies of the math path's
    matmuls (none on the fused path)."""
    env = env or Env.current()
    if not on_cpu(q, k, v, attn_mask) or enable_gqa:
        return None
    lq, lk, lv = Geometry.of(q), Geometry.of(k), Geometry.of(v)
    lm = Geometry.of(attn_mask) if attn_mask is not None else None
    if any(t.ndim < 2 for t in (lq, lk, lv)):
        return None
    unknown: list[Unknown] = []
    if grad:
        unknown.append(Unknown("backward", "*", "*", "the backward of scaled_dot_product_attention is not modelled",
                               machine=False))
    blocker = flash_blocker(lq, lk, lv, lm, dropout=dropout,
                            mask_grad=grad_enabled and attn_mask is not None and bool(attn_mask.requires_grad))
    if blocker is None:
        if lm is not None and not eq(lm.stride[-1], 1) and not eq(lm.stride[-1], 0):
            unknown.append(Unknown("forward", "attn_mask", "*", "the fused kernel's handling of a mask whose last "
                                   "dim is strided is not modelled", machine=False))
        return KernelPrediction("scaled_dot_product_attention", "sdpa: fused flash kernel (CPU)", (), unknown)
    if q.dtype not in (torch.float32, torch.float64):
        return None  # the math path converts reduced precision to float32 first: not modelled
    qs = _elementwise(lq)
    kts = _elementwise(lk.mT())
    first = _matmul_cpu(qs, kts, ("query", "key"), env, True)
    if first is None:
        return None
    batch_q, batch_k = lq.shape[:-2], lk.shape[:-2]
    attn = lq.contiguous_copy(tuple(broadcast_shapes(batch_q, batch_k)) + (lq.shape[-2], lk.shape[-2]))
    second = _matmul_cpu(attn, lv, ("attn", "value"), env, True)
    if second is None or any(c.operand == "attn" for c in second[1]):
        return None  # the attention weights are contiguous: a copy of them is not a path this model follows
    why = (f"SDPA takes its math path here ({blocker}), which multiplies q*scale and k.transpose(-2, -1)*scale, "
           "then the softmax with v, through matmul: ")
    copies: list[KernelCopy] = [replace(c, reason=MATH, why=why + c.why) for c in first[1] + second[1]
                                if c.operand != "attn"]
    return KernelPrediction("scaled_dot_product_attention", f"sdpa: math ({first[0]}; {second[0]})",
                            tuple(copies), unknown)


# --------------------------------------------------------------------------- models


@kernel_model("scaled_dot_product_attention", family="attention",
              operands={"query": "query", "key": "key", "value": "value", "attn_mask": "attn_mask"})
def _sdpa(node: Any, env: Env) -> KernelPrediction | None:
    q, k, v = (tensor_arg(node, n) for n in ("query", "key", "value"))
    if q is None or k is None or v is None:
        return None
    mask = tensor_arg(node, "attn_mask")
    if node.args.get("attn_mask") is not None and mask is None:
        return None
    dropout = node.args.get("dropout_p", 0.0)
    gqa = node.args.get("enable_gqa", False)
    if not isinstance(dropout, (int, float)) or not isinstance(gqa, bool):
        return None
    return predict_sdpa(q, k, v, mask, dropout=float(dropout), enable_gqa=gqa,
                        grad=needs_grad(node, q, k, v, mask), grad_enabled=bool(node.grad_enabled), env=env)


def sdpa_blocker(node: Any) -> str | None:
    """Why the SDPA call of a canonical node does not take the fused kernel (``flash_blocker``), None when it
    does or when that is not known."""
    q, k, v, m = (tensor_arg(node, n) for n in ("query", "key", "value", "attn_mask"))
    dropout = node.args.get("dropout_p") or 0.0
    if q is None or k is None or v is None or not isinstance(dropout, (int, float)):
        return None
    try:
        return flash_blocker(Geometry.of(q), Geometry.of(k), Geometry.of(v), Geometry.of(m) if m is not None else None,
                             mask_grad=bool(node.grad_enabled) and m is not None and bool(m.requires_grad),
                             dropout=float(dropout))
    except Undecided:
        return None

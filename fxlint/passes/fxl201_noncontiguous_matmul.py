"""An operand whose strides make mm/bmm/matmul/linear/addmm/baddbmm/SDPA copy it on every call.

## What it does
Predicts, from each operand's shape and strides, whether the matrix kernel
copies it before multiplying, and reports the operand, the bytes copied per
call and why. The prediction follows ATen's own decisions (see
`fxlint.kernels`), checked against the runtime:

* BLAS takes a matrix as is when it is row- or column-major in its last two
  dims, padded rows included: `k.transpose(-2, -1)` and `x[::2]` are free.
  A step slice on the last dim (`x[:, ::2]`) or an expanded (stride-0) matrix
  is cloned.
* `matmul` on N-D operands flattens the batch dims into one for `bmm`. When
  they cannot be merged - `q.transpose(1, 2)` taken from a `(B, S, H, D)`
  tensor, `q.permute(0, 2, 1, 3)` - the operand is copied. A broadcast batch
  dim (`(B, H, S, D) @ (1, H, D, S)`) is materialised to the full batch.
* N-D @ 2-D with a weight that requires grad is folded into one `mm`; an
  N-D operand whose leading dims do not merge (`x.permute(1, 0, 2)`) is then
  copied. `linear` and `nn.Linear` on such inputs take this path.
* bfloat16/float16 `bmm` on CPUs with oneDNN takes each operand only
  contiguous or transposed in its last two dims.
* `torch.einsum` of two operands permutes each to (batch, free, summed)
  dims and reshapes it to 3-D for `bmm`: an operand whose batch dims do not
  merge in that order is copied (a permuted `(B, G, H, I, D)` in
  `"B G H I D, B G H J D -> B G H I J"`).
* `F.scaled_dot_product_attention` on CPU reads strided q/k/v without
  copying only on its fused (flash) path: 4-D q/k/v of equal batch, heads
  and head dim, no dropout, and no mask or a 2-D/4-D one. Otherwise (a 3-D
  `(H, L, S)` relative-position bias, 5-D windowed q/k/v, ...) its math path
  multiplies through `matmul`, which copies q, k and v in the usual
  `qkv.reshape(B, N, 3, H, D).permute(2, 0, 3, 1, 4).unbind(0)` layout.

Copies the kernel repeats in backward (a saved operand BLAS cannot take)
are counted in the message and in `details["backward_bytes"]`.

## Why is this bad?
The copy is a full read and write of the operand on every call, hidden
inside the kernel: no `.contiguous()` in your code shows it. In attention
written as `q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)` on
`(B, S, H, D)` tensors, both operands are copied per call.

## Example
```python
q = q.view(B, S, H, D).transpose(1, 2)          # (B, H, S, D), heads not outermost in memory
k = k.view(B, S, H, D).transpose(1, 2)
scores = q @ k.transpose(-2, -1)                # copies q and k
y = self.proj(x.permute(1, 0, 2))               # Linear on a (S, B, D) -> (B, S, D) view: copies x
```

## Use instead
```python
y = F.scaled_dot_product_attention(q, k, v)     # fused path: reads strided q/k/v without copying
y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.unsqueeze(0))  # a 4-D (1, H, L, S) bias, not 3-D
y = self.proj(x).permute(1, 0, 2)               # Linear acts on the last dim: permute afterwards
```
Or produce the operand in a layout the kernel takes (batch dims outermost
and in order, last dim unit-stride) where it is created.

## When it is intentional
When the operand is used once and the copy is cheaper than rearranging the
code, or the layout comes from an API you do not control. Silence the line
with `# fxlint: ignore[FXL201]`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.text import permute_text
from ..kernels import KernelCopy, operand_role, ops, predict
from ..kernels.attention import sdpa_blocker
from ..registry import FixSpec, Hit, RuleContext, rule
from ._layout_hits import OperandCopy, backward_bytes, copy_sizes, made_by_permute, operand_copy, total

#: the kernel families this rule checks: their ops and operand roles come from the kernel registry
FAMILY = ("matmul", "attention")


@dataclass(frozen=True)
class NoncontiguousMatmul(OperandCopy):
    """An operand the matrix kernel copies before multiplying, because of its strides."""

    kernel: str  # the call as the user knows it: "@", "F.linear", "torch.bmm"
    operand: str  # the kernel's argument: a, b, input, weight, ...
    role: str  # what it is to the kernel: "left operand", "input", ...
    copies_result: bool  # the kernel also copies the result back to its layout (2-D @ N-D)
    reason: str  # the code of the main copy: fold-grad, batch-fold, broadcast, onednn-layout, blas-layout, ...
    permute: tuple[int, ...] | None  # the dims of the permute (through other views) that made the operand, if any
    attention: bool  # both operands are 4-D: (B, H, S, D) attention
    sdpa_math: str | None  # SDPA: why it takes its math path (the fused kernel's condition that fails), else None

    def message(self) -> str:
        who = f"its {self.role} {self.origin}" if self.origin is not None else f"its {self.role}"
        extra = " (and copies the result back to its layout)" if self.copies_result else ""
        return self.copy_text(f"{self.kernel} copies {who}", extra)

    def fix_title(self) -> str:
        at = f" (it is made at {self.made_at})" if self.made_at else ""
        if self.sdpa_math is not None:
            return _sdpa_fix(self.sdpa_math, at)
        if self.copies_result:  # 2-D @ N-D: matmul computes (x.mT @ W.mT).mT, whatever x's layout
            return ("keep the activations as (..., N, K) and write `x @ W.t()` (or `F.linear(x, W)`) instead of "
                    "`W @ x` on (..., K, N): the batch dims then fold into the rows of one mm, and neither the "
                    "operand nor the result is copied")
        if self.reason == "fold-grad":
            dims = self.permute
            if dims and dims[-1] == len(dims) - 1:
                return ("apply the matmul before the permute: it acts on the last dim, so "
                        f"`{'linear' if self.kernel == 'F.linear' else 'matmul'}(x){permute_text(dims)}` gives the "
                        "same result without the copy")
            return f"give this operand a layout whose leading dims merge (contiguous in all but the last dim){at}"
        if self.reason == "batch-fold":
            hint = (" For attention, F.scaled_dot_product_attention's fused path reads strided 4-D q/k/v "
                    "without a copy." if self.attention else "")
            return (f"lay the operand out with its batch dims outermost and in order where it is created{at}, "
                    f"e.g. project straight into (B, H, S, D); matmul then folds the batch for free.{hint}")
        if self.reason == "einsum-fold":
            return (f"give the operand a layout in which einsum's batch dims (the labels of both operands and the "
                    f"output) come first and in order, and its summed dims last, where it is created{at}: einsum "
                    "then reshapes it for bmm without a copy")
        if self.reason == "broadcast":
            return ("the broadcast operand is materialised for the whole batch; if it is shared across the batch, "
                    "fold the batch into the rows of the other operand (e.g. (B*S, D) @ (D, N)) so one mm needs no "
                    "copy, or give it the full batch only if it really differs per batch")
        if self.reason == "onednn-layout":
            return (f"pass each batch contiguous or as a transpose of the last two dims of a contiguous tensor{at}; "
                    "oneDNN copies any other layout")
        return (f"keep a unit stride in one of the last two dims: slice or expand after the multiplication, "
                f"or store the operand row- or column-major{at}")


@rule("FXL201", "noncontiguous-matmul", "warning", violation=NoncontiguousMatmul,
      fix=FixSpec.rewrite_of(
    "linear-over-dim", safe=False,
    why="only `Linear(x.permute(...)).permute(...)` back over one dim is rewritten, to a `bmm` with the weight "
        "expanded over the batch: the result is a contiguous tensor where it was a permuted view, and its sums "
        "run in another order (equal within the dtype's tolerance)"))
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops(*ops(family=FAMILY)):
        pred = predict(node)
        if pred is None:
            continue
        fwd = pred.forward()
        if not fwd:
            continue
        groups: dict[str, list[KernelCopy]] = defaultdict(list)
        for c in fwd:
            # the result copy of 2-D @ N-D belongs to the operand whose fold caused it
            key = c.operand if c.operand != "output" else next(
                (x.operand for x in fwd if x.reason in ("fold-grad", "batch-fold")), "b")
            groups[key].append(c)
        for operand, copies in groups.items():
            yield _hit(node, operand, copies, pred.backward(operand) if pred.backward_known else None, pred.path)


def _sdpa_fix(blocker: str, at: str) -> str:
    """The fix for an SDPA that takes its math path because of ``blocker`` (``flash_blocker``'s clause)."""
    fused = "SDPA then runs its fused kernel, which reads these strided q/k/v without copying"
    if "attn_mask is 3-D" in blocker:
        return (f"pass the mask 4-D, e.g. attn_mask=bias.unsqueeze(0) for an (H, L, S) bias: {fused} (in inference; "
                "a mask that requires grad, as a learned bias does in training, takes the math path anyway)")
    if "-D, and the fused kernel takes only 4-D" in blocker:
        return (f"give SDPA 4-D (B, H, L, E) q/k/v (fold the extra batch dims into B where they are produced): "
                f"{fused}; or produce q/k/v with their batch dims outermost and in order{at}")
    return (f"the fused kernel, which reads strided q/k/v without copying, is not taken because {blocker}: lift "
            f"that, or produce q/k/v with their batch dims outermost and in order{at} so that the math path's "
            "matmuls fold them for free")


def _operand(node: CanonNode, operand: str) -> CanonNode | None:
    x = node.args.get(operand)
    return x if isinstance(x, CanonNode) else None


def _hit(node: CanonNode, operand: str, copies: list[KernelCopy], backward: list[KernelCopy] | None,
         path: str) -> Hit:
    kernel = {"linear": "F.linear", "matmul": "@", "scaled_dot_product_attention": "F.scaled_dot_product_attention"
              }.get(node.op, f"torch.{node.op}")
    op_node = _operand(node, operand)
    t = op_node.tensor if op_node is not None else (node.args.get("weight_info") if operand == "weight" else None)
    main = next((c for c in copies if c.operand != "output"), copies[0])
    perm = made_by_permute(op_node)
    a, b = _operand(node, "a"), _operand(node, "b")
    violation = NoncontiguousMatmul(
        **operand_copy(op_node, t, node, copies, backward, path),
        kernel=kernel,
        operand=operand,
        role=operand_role(node.op, operand),
        copies_result=any(c.operand == "output" for c in copies),
        reason=main.reason,
        permute=tuple(perm.args["dims"]) if perm is not None and perm.args.get("dims") else None,
        attention=all(x is not None and x.tensor is not None and x.tensor.ndim == 4 for x in (a, b)),
        sdpa_math=sdpa_blocker(node) if node.op == "scaled_dot_product_attention" else None,
    )
    return Hit(node, violation, bytes=total(copies), copy_sizes=copy_sizes(copies),
               backward_bytes=backward_bytes(backward), dedup=f"{node.name}:{operand}")

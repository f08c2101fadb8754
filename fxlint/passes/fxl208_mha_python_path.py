"""`nn.MultiheadAttention` on its Python path: the packed q/k/v projection is copied every call, and a query that is not contiguous (`batch_first=True` transposes it) is copied before its projection.

## What it does
Finds calls of `F.multi_head_attention_forward`: `nn.MultiheadAttention`
when it does not take its fused inference kernel (training, autograd on,
`batch_first=False`, and the other conditions of its fast path), and
direct calls. It predicts the copies that function makes inside, from the
arguments:

* self-attention (`query is key is value`) with the packed `in_proj_weight`:
  the (T, B, 3E) projection is split into q, k and v by
  `unflatten(...).transpose(...).contiguous()`, a copy of all three
  (3 x T x B x E elements); cross-attention with `key is value`: the same for
  k and v (2 x S x B x E);
* a query (or separate key/value) that is not contiguous: the in-projection
  `linear` on a non-contiguous 3-D input copies it first. `batch_first=True`
  on this path always transposes the batch-first input to (T, B, E) inside,
  so it always pays this copy.

Bytes are those copies, per call (`details["copy_sizes"]` lists each).
Measured with the profiler (torch 2.13, CPU, T=16, B=2, E=32): self-attention
on a contiguous (T, B, E) input copies 12.3 kB (the (3, T, B, E) split), on
a transposed input 4.1 kB more (the input), cross-attention with one memory
tensor 6.1 kB (S=12), three distinct tensors nothing; `batch_first=True`
in training 16.4 kB.

## Why is this bad?
Every attention layer pays these copies on every call, forward, and their
gradients in the backward; a transformer spends them once per layer.

## Example
```python
self.attn = nn.MultiheadAttention(d, heads)          # called as self.attn(x, x, x) in training
```

## Use instead
```python
# one fused projection, split by views, and the fused kernel: no copy
self.qkv = nn.Linear(d, 3 * d)
q, k, v = self.qkv(x).unflatten(-1, (3, heads, d // heads)).unbind(-3)
out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
```
In inference, `nn.MultiheadAttention(..., batch_first=True)` under
`torch.no_grad()` in `eval()` takes the fused `_native_multi_head_attention`
kernel instead (no Python path, none of these copies); Dynamo traces the
Python path there, so that case is not reported.

## When it is intentional
The copies are the function's own; keep `nn.MultiheadAttention` where its
features (masks, `add_bias_kv`, `need_weights=True`) matter more than the
copies. Silence a line with `# fxlint: ignore[FXL208]`.

`details` (the fields of `MhaPythonPath`): `projection` (the split projection's
copy: `"qkv"`, `"kv"` or None), `inputs` (the inputs copied because they are
not contiguous: `"query"`, `"key"`, `"value"`), `copy_sizes` (bytes of each
copy), `copied` (bytes per call).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value
from ..findings import Violation
from ..registry import Hit, RuleContext, rule

_ARGS = ("query", "key", "value")


@dataclass(frozen=True)
class MhaPythonPath(Violation):
    """The copies `F.multi_head_attention_forward` makes inside."""

    projection: str | None  # "qkv" | "kv" | None
    inputs: tuple[str, ...]  # non-contiguous inputs the in-projection copies
    copy_sizes: tuple[int, ...]
    copied: int | str | None

    def message(self) -> str:
        parts = []
        if self.projection:
            parts.append(f"splits its packed {self.projection} projection with a `.contiguous()` copy")
        if self.inputs:
            parts.append(f"copies its non-contiguous {' and '.join(self.inputs)} before the in-projection")
        return (f"`nn.MultiheadAttention` runs its Python path here (`F.multi_head_attention_forward`), which "
                f"{'; and '.join(parts)}: {bytes_text(self.copied)} per call")

    def fix_title(self) -> str:
        if self.inputs and not self.projection:
            return "pass query/key/value contiguous in (T, B, E) order"
        return ("use one fused `nn.Linear(d, 3 * d)` split by views and `F.scaled_dot_product_attention`; in "
                "inference, `batch_first=True` under `no_grad` in `eval()` takes the fused kernel")


def _module_transposed(q: CanonNode, mha: CanonNode) -> bool:
    """``q`` is the (T, B, E) transpose ``nn.MultiheadAttention(batch_first=True)`` makes of its input itself: a
    transpose recorded inside the same module call (a user's own transpose sits in the caller's module)."""
    if q.op != "permute" or tuple(q.args.get("dims") or ()) != (1, 0, 2):
        return False
    return mha.module_path is not None and q.module_path == mha.module_path


def _arg(node: CanonNode, i: int, name: str) -> object:
    args = node.args.get("args") or []
    kwargs = node.args.get("kwargs") or {}
    if name in kwargs:
        return kwargs[name]
    return args[i] if len(args) > i else None


@rule("FXL208", "mha-python-path", "info", violation=MhaPythonPath)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops("multi_head_attention_forward"):
        q, k, v = (_arg(node, i, n) for i, n in enumerate(_ARGS))
        if not all(isinstance(t, CanonNode) and t.tensor is not None for t in (q, k, v)):
            continue
        assert isinstance(q, CanonNode) and isinstance(k, CanonNode) and isinstance(v, CanonNode)
        if not node.grad_enabled and q is k is v and _module_transposed(q, node):
            # batch_first self-attention in inference: eager takes the fused kernel (its fast path), Dynamo
            # traces this path; what runs in eager is not this function
            continue
        separate = _arg(node, 17, "use_separate_proj_weight") is True
        sizes: list[int] = []
        projection = None
        qt, kt = q.tensor, k.tensor
        assert qt is not None and kt is not None
        if not separate and q is k is v:
            projection = "qkv"
            sizes.append(3 * qt.nbytes)
        elif not separate and k is v:
            projection = "kv"
            sizes.append(2 * kt.nbytes)
        copied_inputs = []
        for name, t in zip(_ARGS, (q, k, v)):
            if name != "query" and (t is q or (name == "value" and t is k)):
                continue  # one projection reads it once
            info = t.tensor
            if info is not None and info.is_contiguous() is False:
                copied_inputs.append(name)
                sizes.append(info.nbytes)
        if not sizes or not all(isinstance(s, int) for s in sizes):
            continue
        total = sum(sizes)
        yield Hit(node, MhaPythonPath(projection=projection, inputs=tuple(copied_inputs),
                                      copy_sizes=tuple(sorted(sizes, reverse=True)), copied=bytes_value(total)),
                  bytes=total, copy_sizes=tuple(sorted(sizes, reverse=True)))

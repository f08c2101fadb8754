"""A normalisation or softmax input whose layout makes the kernel copy it on every call.

## What it does
Reports the input of `layer_norm`, `rms_norm`, `group_norm`,
`instance_norm`, `batch_norm`, `softmax` and `log_softmax` when the kernel
copies it (see `fxlint.kernels`, checked against the runtime on CPU):

* `layer_norm`, `instance_norm`, `softmax`, `log_softmax` make any
  non-contiguous input contiguous - channels_last included. `layer_norm`
  copies the saved input again in backward.
* `rms_norm` computes `x * rsqrt(mean(x**2))` in the input's layout, then
  makes the result contiguous: a permuted input costs a copy.
* `group_norm` keeps a channels_last input and copies any other
  non-contiguous one.
* `batch_norm` takes any strides in float32; in bfloat16/float16 a layout
  that is neither contiguous nor channels_last goes through a slow path that
  converts the input to float32 (forward and backward).

## Why is this bad?
A full read and write of the activation per call, hidden in the kernel. The
ConvNeXt pattern - an NCHW conv output, `x.permute(0, 2, 3, 1)`, then
`LayerNorm(C)` - copies the activation forward and again backward.

## Example
```python
x = self.dwconv(x)            # (N, C, H, W), contiguous
x = x.permute(0, 2, 3, 1)     # (N, H, W, C) view, not contiguous
x = self.norm(x)              # LayerNorm(C): copies x, and again in backward
```

## Use instead
```python
model = model.to(memory_format=torch.channels_last)   # and a channels_last input:
x = self.dwconv(x)            # returns channels_last
x = x.permute(0, 2, 3, 1)     # now a contiguous (N, H, W, C) tensor: no copy
```
Or normalise before a permute that keeps the normalised dim last
(`norm(x).transpose(0, 1)`), or apply softmax before the permute with the
dim mapped (`x.softmax(dim=p[d]).permute(p)`).

## When it is intentional
A one-off normalisation of a strided view. Silence the line with
`# fxlint: ignore[FXL203]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.text import permute_text
from ..kernels import ops, predict
from ..registry import Hit, RuleContext, rule
from ._layout_hits import OperandCopy, backward_bytes, copy_sizes, made_by_permute, operand_copy, origin, total

#: the kernel families this rule checks (their ops come from the kernel registry)
FAMILIES = ("norm", "softmax")


@dataclass(frozen=True)
class NoncontiguousNorm(OperandCopy):
    """A normalisation or softmax input the kernel copies because of its layout."""

    op: str  # layer_norm, rms_norm, group_norm, instance_norm, batch_norm, softmax, log_softmax
    permute: tuple[int, ...] | None  # the dims of the permute (through other views) that made the input
    permuted: str | None  # the tensor that permute was applied to, in the user's names
    permuted_contiguous: bool  # ... and it is contiguous: the op can run on it before the permute
    permute_is_input: bool  # the permute's result is the input itself (no other view in between)
    dim: int | None  # softmax/log_softmax: the dim, non-negative

    def message(self) -> str:
        return self.copy_text(f"{self.op} copies its input {self.operand_text}")

    def fix_title(self) -> str:
        op, dims, base = self.op, self.permute, self.permuted
        at = f" ({self.made_at})" if self.made_at else ""
        if op in ("softmax", "log_softmax") and dims and self.permute_is_input and self.permuted_contiguous \
                and self.dim is not None:
            return (f"apply {op} before the permute, with the dim mapped: "
                    f"{base}.{op}(dim={dims[self.dim]}){permute_text(dims)} gives the same result on the "
                    "contiguous tensor and the permute stays a view")
        if op in ("layer_norm", "rms_norm") and dims:
            if dims[-1] == len(dims) - 1 and self.permuted_contiguous:
                return (f"normalise before the permute: the normalised dim stays last, so "
                        f"{op}({base}){permute_text(dims)} gives the same result without the copy")
            if len(dims) == 4 and tuple(dims) == (0, 2, 3, 1):
                return ("run the conv part of the model in channels_last (model.to(memory_format=torch.channels_last) "
                        f"and a channels_last input): {base}{permute_text(dims)} is then contiguous and the norm "
                        "reads it in place")
        if op == "group_norm":
            return f"give group_norm a contiguous or channels_last input where it is created{at}"
        if op == "batch_norm":
            return (f"give the reduced-precision batch_norm a contiguous or channels_last input where it is "
                    f"created{at}")
        return (f"give {op} a contiguous input where it is created{at}, or make the copy explicit once with "
                ".contiguous() there")


@rule("FXL203", "noncontiguous-norm", "warning", violation=NoncontiguousNorm)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops(*ops(family=FAMILIES)):
        pred = predict(node)
        if pred is None:
            continue
        copies = [c for c in pred.forward() if c.operand in ("input", "stats")]
        if not copies:
            continue
        backward = [c for c in pred.backward() if c.operand in ("input", "stats")] if pred.backward_known else None
        x = node.args.get("input") if isinstance(node.args.get("input"), CanonNode) else None
        perm = made_by_permute(x)
        dims = perm.args.get("dims") if perm is not None else None
        base = perm.input if perm is not None else None
        d = node.args.get("dim")
        violation = NoncontiguousNorm(
            **operand_copy(x, x.tensor if x is not None else None, node, copies, backward, pred.path),
            op=node.op,
            permute=tuple(dims) if dims else None,
            permuted=origin(base, node) if perm is not None else None,
            permuted_contiguous=base is not None and base.tensor is not None and base.tensor.is_contiguous() is True,
            permute_is_input=perm is not None and perm is x,
            dim=d % len(dims) if isinstance(d, int) and dims else None,
        )
        yield Hit(node, violation, bytes=total(copies), copy_sizes=copy_sizes(copies),
                  backward_bytes=backward_bytes(backward), dedup=node.name)

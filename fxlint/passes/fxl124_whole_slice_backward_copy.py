"""A slice that takes a whole dim (`x[:n]` with `n` the size, `x[0:]`, `x[:]`): the forward is a view, but in training its backward zero-fills a tensor and copies the whole gradient into it.

## What it does
Finds in training a subscript of one slice written alone (`x[a:b]`, not
`x[a:b, ...]`), and `narrow`, whose bounds take the whole dim in the traced
program: `x[:T - s]` where `s` is 0 (Emformer's right context and summary
length, set to 0 by a configuration), `x[right.size(0):]` with an empty
`right`, `x[0:]`, `x[:]`, `x[:len(x)]`.

Eager runs `aten::slice` for a slice written alone even when it takes
everything (a tuple index returns an alias when each of its slices takes its
whole dim), and autograd records a `SliceBackward0`, whose backward allocates
a zero tensor of the input's size and copies the whole gradient into it.

Bytes are what the backward copies per training step: the output once (it is
the input's size). The forward copies nothing.

## Why is this bad?
A slice that selects everything is meant as a no-op: in training it copies
the tensor's gradient every step, and zero-fills a buffer of that size
first. Measured (torch 2.13, CPU): `x[:10]`, `x[0:]` and `x[:]` of a
(10, 2, 128) float32 tensor each copy 10.2 kB in `SliceBackward0 >
aten::slice_backward > aten::copy_`; `x[:10, ...]` and `x[0:, :]` copy
nothing (no slice runs).

## Example
```python
utterance = x[: x.size(0) - self.right_context_length]   # right_context_length is 0
```

## Use instead
```python
n = x.size(0) - self.right_context_length
utterance = x[:n, ...]              # a tuple index: an alias when it takes everything, or
utterance = x if self.right_context_length == 0 else x[:n]
```

## When it is intentional
Reported at info level: the same line cuts a piece in other configurations,
where the slice is the work. Silence a line with `# fxlint: ignore[FXL124]`.

`details` (the fields of `WholeSliceBackwardCopy`): `subscript` (as traced),
`dim` (None when not known), `shape` (the input's, which the slice keeps), `copied` (backward
bytes per step).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, call_text, dims_value, operand_name, shape_text
from ..findings import Violation
from ..registry import Hit, RuleContext, rule


@dataclass(frozen=True)
class WholeSliceBackwardCopy(Violation):
    """A lone slice that keeps its whole dim, copied again in the backward."""

    subscript: str
    dim: int | None
    shape: tuple[int | str, ...] | None
    copied: int | str | None

    def message(self) -> str:
        where = f"dim {self.dim}" if self.dim is not None else "the dim it cuts"
        return (f"in training, `{self.subscript}` (as traced) takes the whole of {where} of {shape_text(self.shape)} here, "
                f"but a slice written alone still runs `aten::slice`: its backward zero-fills a tensor of that size "
                f"and copies the gradient into it, {bytes_text(self.copied)} per training step")

    def fix_title(self) -> str:
        return ("write it as a tuple index (`x[a:b, ...]`: no slice runs when it takes the whole dim), or skip the "
                "subscript when it takes everything (`x if k == 0 else x[:-k]`)")


def _whole_dim(node: CanonNode) -> tuple[bool, int | None]:
    """Whether ``node`` is a slice that runs ``aten::slice`` (a ``getitem`` of one slice written alone, ``narrow``,
    an ``aten.slice``) and keeps the input's static shape; with the dim it cuts, where known."""
    spec = node.args.get("index")
    x = node.input
    if spec is None or x is None or x.tensor is None or node.tensor is None:
        return False, None
    if not (spec.lone or spec.style in ("narrow", "aten.slice")):
        return False, None
    shape_in = tuple(x.tensor.shape)
    if shape_in != tuple(node.tensor.shape) or not all(isinstance(d, int) for d in shape_in):
        return False, None
    if spec.lone:
        return True, 0  # x[a:b] cuts the first dim
    cut = [it.dim for it in spec.items if it.kind == "slice" and not it.is_full_slice]
    return True, (cut[0] if len(cut) == 1 else None)


@rule("FXL124", "whole-slice-backward-copy", "info", violation=WholeSliceBackwardCopy)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops("slice"):
        t = node.tensor
        if t is None or not node.grad_enabled or not t.requires_grad or not t.dtype.is_floating_point:
            continue
        whole, dim = _whole_dim(node)
        if not whole or not t.nbytes:
            continue
        spec = node.args["index"]
        assert node.input is not None
        text = spec.text if spec.lone else call_text(node)
        subscript = f"{operand_name(node.input)}{text}" if text.startswith("[") else text
        violation = WholeSliceBackwardCopy(subscript=subscript, dim=dim,
                                           shape=dims_value(t.shape), copied=bytes_value(t.nbytes))
        yield Hit(node, violation, bytes=0, backward_bytes=t.nbytes)

"""A collective on a tensor that is not contiguous: a hidden copy per call, or worse when run eagerly.

## What it does
Finds `torch.distributed` collectives (`all_gather_into_tensor`, `all_gather`,
`reduce_scatter_tensor`, `all_to_all_single`, `all_reduce`, `broadcast`, and
the functional collectives of `torch.distributed._functional_collectives`)
whose tensor is not contiguous: a transpose (`grad.t()`), a permute, a strided
slice (`x[:, ::2]`). Under `torch.compile` (and in `fxlint.lint`, which
captures the model the same way) every `dist.*` call is a functional
collective, `torch.ops._c10d_functional.*`, and that is what the rule reads.

What happens to such a tensor, measured with two gloo ranks on CPU
(torch 2.13; `bench/dist_collectives.py` prints the whole table):

* `all_gather_into_tensor`, `all_gather`, `reduce_scatter_tensor`,
  `all_to_all_single`: the functional collective copies the tensor to a
  contiguous one before it is sent, on every call (the finding's bytes, the
  tensor's size; the profiler sees that `aten::copy_`). Called eagerly,
  `dist.all_gather*` copies it too; gloo's `reduce_scatter_tensor` copies
  every input anyway; `dist.all_to_all_single` raises `ValueError: Tensors
  must be contiguous`.
* `all_reduce`, `broadcast`: the functional collective clones every input,
  contiguous or not, so the layout adds no copy under `torch.compile`. Called
  eagerly on gloo, `all_reduce` of a dense but permuted tensor is correct,
  but of a view that is not dense (`x[:, ::2]`) it is **wrong without an
  error**: gloo reduces the `numel` elements of memory that follow the view's
  first element, so part of the view keeps this rank's values and elements
  of the base tensor outside the view are overwritten with sums (an error
  finding). `broadcast` is correct on gloo in both cases.
* NCCL (read from `ProcessGroupNCCL`'s source, not run here: these machines
  have no GPU) checks every tensor of an eager call and raises
  `ValueError: Tensors must be contiguous` unless the tensor is contiguous in
  its suggested memory format (channels_last tensors pass).

## Why is this bad?
Collectives move whole tensors; a layout the communication library cannot
send as one block is copied first, every step, or rejected. The copy is not
in the user's code, so it is easy to miss in a profile; the gloo `all_reduce`
case silently trains on wrong gradients when the code runs uncompiled
(evaluation, a `torch.compiler.disable` region, a compile fallback).

## Example
```python
shard = weight.t()                                # (in, out) view of (out, in)
dist.all_gather_into_tensor(gathered, shard)      # copied before every gather
dist.all_reduce(grad[:, ::2])                     # eager gloo: wrong, NCCL: error
```

## Use instead
```python
dist.all_gather_into_tensor(gathered, weight)     # gather what is stored ...
gathered_t = gathered.view(world, out, inp).transpose(1, 2)   # ... and view the result
part = grad[:, ::2].contiguous()                  # one explicit copy, kept
dist.all_reduce(part)
grad[:, ::2] = part
```

## When it is intentional
A tensor that is small, or a copy that is needed anyway (the result must be
contiguous), costs little: silence the line with `# fxlint: ignore[FXL601]`.
The error finding (eager gloo `all_reduce` of a view that is not dense) is
never intentional.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import GraphView
from ..canon.text import bytes_text, bytes_value, layout_text
from ..findings import Severity, Violation
from ..registry import Hit, RuleContext, rule
from ._collectives import DIST_CALL, collectives, contiguous_in_its_format, not_contiguous, tensor_text, tensors_sent

#: kinds whose functional collective copies a non-contiguous tensor to a contiguous one first
COPYING = frozenset({"all_gather", "reduce_scatter", "all_to_all"})

#: what the ``dist.*`` call does with it when the same code runs eagerly (measured on gloo; NCCL from source)
_EAGER = {
    "all_gather": "run eagerly, `dist.{call}` copies it as well on gloo, and NCCL rejects it",
    "reduce_scatter": "run eagerly, gloo copies every input anyway, and NCCL rejects it",
    "all_to_all": "run eagerly, `dist.{call}` raises `ValueError: Tensors must be contiguous` (gloo and NCCL)",
    "all_reduce": "run eagerly, gloo reduces it correctly (it is dense) but NCCL rejects it",
    "broadcast": "run eagerly, gloo sends it correctly but NCCL rejects it",
}
_NOT_DENSE_REDUCE = (
    "run eagerly on gloo, `dist.{call}` is wrong without an error: gloo reduces the memory that follows "
    "the view's first element, so part of the view is never reduced and elements of the tensor it is a "
    "view of are overwritten; NCCL rejects it"
)


@dataclass(frozen=True)
class NoncontiguousCollective(Violation):
    """A collective given a tensor that is not contiguous."""

    collective: str  # the dist call: "all_gather_into_tensor"
    tensor: str  # the tensor as written: "w.t()"
    layout: str  # "float32 (6, 4) with strides (1, 6)"
    dense: bool | None  # a permutation of a contiguous tensor (no gaps, no overlap)
    copied: int | str | None  # bytes copied per call before it is sent (None: no copy under torch.compile)
    eager: str  # what the eager dist call does with it

    def message(self) -> str:
        if self.copied is not None:
            cost = (f"torch.compile's functional `{self.collective}` copies it to a contiguous tensor before it "
                    f"is sent, {bytes_text(self.copied)} per call")
        else:
            cost = f"torch.compile's functional `{self.collective}` clones it as it clones every input"
        return f"`{self.collective}` of `{self.tensor}`, not contiguous ({self.layout}): {cost}; {self.eager}"

    def fix_title(self) -> str:
        if self.copied is not None:
            return (f"communicate the tensor as it is stored and apply the view to the result, or make "
                    f"`{self.tensor}` contiguous once where it is produced")
        return (f"send a contiguous tensor: `part = {self.tensor}.contiguous()`, `dist.{self.collective}(part)`, "
                "then write `part` back")


@rule("FXL601", "noncontiguous-collective", "warning", violation=NoncontiguousCollective)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in collectives(view):
        kind: str = node.args.get("kind") or ""
        call = DIST_CALL.get(kind, node.args.get("style", "collective"))
        for sent in tensors_sent(node):
            t = sent.tensor
            assert t is not None
            if not not_contiguous(t):
                continue
            dense = t.is_non_overlapping_and_dense()
            copies = kind in COPYING
            if not copies and contiguous_in_its_format(t):
                continue  # a channels_last tensor: cloned as any other, and NCCL accepts it
            severity = None
            if kind == "all_reduce" and dense is False:
                eager = _NOT_DENSE_REDUCE.format(call=call)
                severity = Severity.ERROR
            else:
                eager = _EAGER.get(kind, "run eagerly, NCCL rejects it").format(call=call)
            nbytes = t.nbytes if copies else None
            violation = NoncontiguousCollective(
                collective=call, tensor=tensor_text(sent), layout=layout_text(t), dense=dense,
                copied=bytes_value(nbytes), eager=eager)
            yield Hit(node, violation, bytes=nbytes, severity=severity, dedup=f"{call}:{sent.name}")

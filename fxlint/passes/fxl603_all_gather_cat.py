"""`dist.all_gather` into a list, then `torch.cat`: one more full copy than `all_gather_into_tensor`.

## What it does
Finds `torch.cat(tensors)` (dim 0) and `torch.stack(tensors)` whose tensors are
exactly the list `dist.all_gather(tensors, x)` filled, in rank order. Dynamo
captures that `all_gather` as one `all_gather_into_tensor` whose result is
cut into the list; the `cat` then copies the pieces back into one tensor:
the gathered result, once more. The finding's bytes are that copy, the size
of the gathered tensor (world size x the tensor sent), per call.

## Why is this bad?
`dist.all_gather_into_tensor(out, x)` writes every rank's tensor straight into
one preallocated `out`, and `out.chunk(world)` (or `out.view(world, ...)` in
place of `stack`) gives the pieces as views. The list form writes the
gathered bytes into separate tensors and then `cat` copies all of them again:
measured with two gloo ranks on CPU, the list form makes one `aten::cat` of the
whole result that the tensor form does not (the gather itself copies the
same in both). On large activations or parameters (FSDP-style gathers) that
is a full extra pass over memory every step.

## Example
```python
parts = [torch.empty_like(x) for _ in range(world)]
dist.all_gather(parts, x)
full = torch.cat(parts)
```

## Use instead
```python
full = torch.empty(world * x.shape[0], *x.shape[1:], dtype=x.dtype, device=x.device)
dist.all_gather_into_tensor(full, x)
parts = full.chunk(world)          # views, if the pieces are needed too
```

## When it is intentional
When the pieces must be separate tensors that outlive the concatenation (each
one is modified later), the list is needed; the `cat` is still a copy that a
view of `all_gather_into_tensor`'s result avoids. Silence the line with
`# fxlint: ignore[FXL603]`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._collectives import results, world_of


@dataclass(frozen=True)
class AllGatherThenCat(Violation):
    """The list an all_gather filled, concatenated again."""

    joined_with: str  # "cat" or "stack"
    world: int  # how many tensors were gathered
    copied: int | str | None  # bytes the cat copies per call

    def message(self) -> str:
        plural = "s" if self.world != 1 else ""
        return (f"`dist.all_gather` into a list of {self.world} tensor{plural}, then `torch.{self.joined_with}`: the "
                f"{self.joined_with} copies the whole gathered result again, {bytes_text(self.copied)} per call; "
                "`dist.all_gather_into_tensor` writes it into one tensor directly")

    def fix_title(self) -> str:
        view = "out.chunk(world)" if self.joined_with == "cat" else "out.view(world, *x.shape)"
        return (f"gather with `dist.all_gather_into_tensor(out, x)` into one preallocated `out` and use `out` "
                f"(`{view}` for the pieces)")


def _tensor_list(node: CanonNode) -> list[CanonNode] | None:
    args = node.args.get("args") or []
    first = args[0] if args else node.args.get("kwargs", {}).get("tensors")
    if not isinstance(first, (list, tuple)) or not all(isinstance(t, CanonNode) for t in first):
        return None
    return list(first)


def _dim(node: CanonNode) -> object:
    args = node.args.get("args") or []
    return args[1] if len(args) > 1 else node.args.get("kwargs", {}).get("dim", 0)


def _piece_of(target: CanonNode) -> tuple[CanonNode, int] | None:
    """(gather, rank) when ``target`` holds exactly rank's piece of an all_gather's result: it was
    written by ``target.copy_(result[k*n:(k+1)*n])`` and by nothing else."""
    writers = [u for u in target.users if u.op == "copy_" and u.mutates and u.mutates[0] is target]
    if len(writers) != 1:
        return None
    src = next((i for i in writers[0].inputs if i is not target), None)
    if src is None or src.op != "slice" or src.input is None:
        return None
    result = src.input
    gather = result.input if result.op == "wait" else result
    if gather is None or gather.op != "collective" or gather.args.get("kind") != "all_gather":
        return None
    if result not in results(gather):
        return None
    items = src.args["index"].items
    sent = gather.input.tensor if gather.input is not None else None
    if sent is None or not items or not sent.shape:
        return None
    rows = sent.shape[0]
    first = items[0]
    if first.kind != "slice" or first.step not in (None, 1) or not all(i.is_full_slice for i in items[1:]):
        return None
    if not isinstance(first.start, int) or not isinstance(rows, int) or rows == 0 or first.start % rows:
        return None
    if first.stop != first.start + rows:
        return None
    return gather, first.start // rows


@rule("FXL603", "all-gather-then-cat", "warning", violation=AllGatherThenCat)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops("cat", "concat", "concatenate", "stack"):
        tensors = _tensor_list(node)
        if not tensors or _dim(node) not in (0, None):
            continue
        pieces = [_piece_of(t) for t in tensors]
        if any(p is None for p in pieces):
            continue
        gathers = {id(p[0]) for p in pieces if p is not None}
        world = world_of(pieces[0][0]) if pieces[0] is not None else None
        if len(gathers) != 1 or world is None or [p[1] for p in pieces if p is not None] != list(range(world)):
            continue
        out = node.tensor
        nbytes = out.nbytes if out is not None else None
        gather = pieces[0][0] if pieces[0] is not None else None
        anchors = (gather.location,) if gather is not None and gather.location is not None else ()
        violation = AllGatherThenCat(joined_with="stack" if node.op == "stack" else "cat", world=world,
                                     copied=bytes_value(nbytes))
        yield Hit(node, violation, bytes=nbytes, anchors=anchors)

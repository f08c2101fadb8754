"""`repeat`/`repeat_interleave`/`tile`/`expand(...).contiguous()` whose consumers broadcast anyway: a copy where `expand` is a free view.

## What it does
Finds a `.repeat(...)`, `.repeat_interleave(r, dim=d)`, `.tile(...)` or
`.expand(...).contiguous()` that only replicates size-1 dims (or adds
leading dims), and whose every consumer is an elementwise op that broadcasts
(`+`, `*`, `torch.where`, `masked_fill`...), an attention's mask
(`F.scaled_dot_product_attention(..., attn_mask=...)` broadcasts it over the
scores) or an op that writes a new tensor from it through its strides
(`torch.cat`, `torch.stack`, `index_select`, advanced indexing, `gather`:
measured, none of them copies an expanded operand first), directly or through
`reshape`/`view`/`permute` steps that keep each replicated dim a dim of its
own (`pos.repeat(B, 1, 1, 1).reshape(B, -1, N).permute(0, 2, 1)` added to `x`:
`.expand(B, -1, -1, -1)` keeps the chain a view). A value returned to Python at
a graph break is followed into the graph Dynamo resumes after it, by the
local's name (`loop_index = arange(N).view(1, -1).repeat(2, 1)`, a break, then
`torch.cat([edge_index, loop_index], dim=1)`), only when every read of that
local in the function is a read by that graph (a `return loop_index` or an
append reads it where no graph shows) and its source cannot be written
outside the graph; under `torch.compile(...,
backend="fxlint")` each graph is linted as it is compiled, before the next one
exists, so only `fxlint lint` follows a value over a break.
Such a copy materialises what broadcasting does for free:

* when the other operands already have the full size, drop the repeat
  (`x + bias` broadcasts a `(1, C)` bias by itself);
* otherwise use `.expand(...)`: a view with stride 0 on the replicated dims,
  no copy.

A repeat or `repeat_interleave` of a dim of size > 1 is reported too when
every user is a `view`/`reshape` that splits that dim back into (copies,
size) or (size, copies): `mask.repeat_interleave(H, dim=0).view(B, H, L, L)`
is `mask.unsqueeze(1).expand(B, H, L, L)`, and an attention takes
`mask.unsqueeze(1)` as it is. An attention mask is only reported where the
un-replicated mask broadcasts to the scores, and the fix is then that mask,
never `.expand(...)`: on CPU an expanded (stride-0) mask makes SDPA's
backward copy the gradients of q, k and v (measured; the `(B, 1, L, L)`
mask costs nothing in either pass).

A `repeat_interleave(r, dim=d)` of a longer dim whose every reader is
elementwise (directly, through casts, views and subscripts that keep the
dims from `d` on, and through a `torch.cat` along `d` of such interleaved
pieces) is reported as well: the interleaved rotary table
`freqs.cos().repeat_interleave(2, dim=-1)` multiplied into `x` gives the same
values as `x.unflatten(-1, (-1, 2)) * freqs.cos().unsqueeze(-1)` flattened
back, a broadcast with no copy (and a `cat` of the pieces commutes with the
interleave).

A `repeat`/`repeat_interleave` whose copy only another one reads
(`x.repeat_interleave(f, -2).repeat_interleave(t, -1)`, a nearest upsampling
in two steps) is reported too: the first copy is made only to be copied
again, and a size-1 dim inserted next to each repeated dim, expanded, and
one `reshape` make the final tensor in one copy (the spelling is in the
fix).

A repeat whose factors are all 1 for the sizes linted
(`x.view(-1, 1, F).repeat(1, towers, 1)` with one tower) replicates nothing
and still copies: it is reported under the same conditions, with `.expand`
as the spelling that is a view for every factor.
Nor is one whose source is written in place after it (the copy keeps the
values from before the write; an expanded view would see it), nor one of a
strided source read through a `view`/`reshape` or a gather (the expanded
view keeps the source's strides: a `.view` may refuse it).
A repeat that tiles a dim of size > 1 (`[a, b] -> [a, b, a, b]`) is data, not
a broadcast, and is not reported; nor is one whose result is mutated in place,
returned, or read by a non-elementwise op.

Bytes are the repeated tensor's size. Backward pays nothing extra (measured:
`RepeatBackward` sums the gradient, no copy).

## Why is this bad?
`repeat` allocates the full output and copies the input into every slot
(`aten::repeat > aten::copy_`); `expand` returns a view of the same storage
with stride 0, and elementwise kernels read stride-0 operands directly. For a
per-token bias or mask repeated over batch and sequence, the copy can be
larger than the data it is combined with.

## Example
```python
bias = self.bias.repeat(B, T, 1)    # (1, 1, C) -> (B, T, C): a full copy
return x + bias
```

## Use instead
```python
return x + self.bias                # broadcasting does it
# or, where the shape itself is needed:
bias = self.bias.expand(B, T, -1)   # a view, no copy
```

## When it is intentional
When the result must own its memory (it is written in place later, or kept
while the source changes), `repeat` is right; this rule then does not fire
(in-place writes and escaping results are excluded). Silence a line with
`# fxlint: ignore[FXL104]`.

`details` (the fields of `RepeatCopy`): `source` (node name of the
un-replicated tensor), `input_shape` (its shape), `source_shape` (the same,
left-padded with 1s), `expand_shape` (the repeated shape;
`source.expand(*expand_shape)` is the zero-copy equivalent), `dims`
(replicated dims), `broadcast_consumers` (node names of the elementwise
consumers), `drop` (True when every consumer gives the same result on the
source as is), `readers` (node names of the consumers that write a new
tensor from it: `cat`, `stack`, a gather), `masks` (the attentions that read
it as their mask), `unsqueeze` and `split_by` (a replicated dim of size > 1:
the dim `.unsqueeze(k)` adds to the source, and the views that split the
copies out), `interleave`, `interleave_dim` and `via_cat` (an interleave
read elementwise: its repeats, its dim counted from the end, and whether a
`cat` lies on the way), `chained_into` and `one_copy` (a repeat read only
by another: that repeat, and the one-copy spelling), `backward_bytes` (0).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.alias import mutated_after, view_family
from ..canon.text import args_text, bytes_text, bytes_value, call_text, line_of, shape_text, shape_value
from ..findings import Violation
from ..registry import FixSpec, Hit, RuleContext, rule
from ._repeat import ChainedRepeat, chained_repeat, interleave_text, repeat_like
from ._sites import numbered


@dataclass(frozen=True)
class RepeatCopy(Violation):
    """A materialised repeat of size-1 dims whose consumers broadcast anyway."""

    call: str  # as written: ".repeat(4, 1)", ".tile((2, 1))", ".expand(4, 6).contiguous()"
    copied: int | str | None  # bytes per call (a formula under dynamic shapes)
    input_shape: tuple[int | str, ...]  # the tensor replicated, as it is
    source_shape: tuple[int | str, ...]  # the same, left-padded with 1s to the result's rank
    expand_shape: tuple[int | str, ...]  # the result's shape: what `.expand(...)` would give as a view
    dims: tuple[int, ...]  # the result's dims that were replicated
    consumed_by: tuple[str, ...]  # each consumer in words: "`add` at line 12"
    broadcast_consumers: list[str]  # their node names
    drop: bool  # every consumer gets the same result from the source as it is (no expand needed)
    via_contiguous: bool  # spelled `.expand(...).contiguous()`: the copy is the `.contiguous()`
    source: str  # the node of the replicated tensor
    readers: tuple[str, ...] = ()  # the consumers that write a new tensor from it (cat, stack, a gather)
    unsqueeze: int | None = None  # the copy is read only split by a view: the copies' dim there (the source
    # needs `.unsqueeze(unsqueeze)` to broadcast)
    masks: tuple[str, ...] = ()  # the consumers that read it as an attention mask
    split_by: tuple[str, ...] = ()  # the views that split the copies out, in words: "`.view(2, 2, 12, 12)` at
    # file.py:12"
    interleave: int | None = None  # a repeat_interleave of a longer dim read only elementwise: its repeats
    interleave_dim: int | None = None  # that dim, counted from the end (-1: the last)
    via_cat: bool = False  # a cat along that dim of interleaved pieces lies on the way
    chained_into: str | None = None  # the repeat that alone reads this one's copy, in words ("`.repeat(2, 1)` at
    # line 12")
    one_copy: str | None = None  # the spelling that makes both repeats in one copy, from the source

    def message(self) -> str:
        dims = ", ".join(map(str, self.dims))
        consumers = _counted(self.consumed_by)
        one = len(self.consumed_by) == 1
        if self.chained_into is not None:
            return (f"`{self.call}` copies {bytes_text(self.copied)} per call into a {shape_text(self.expand_shape)} "
                    f"tensor that only {self.chained_into} reads, and copies again: both repeats fit in one copy")
        if self.interleave is not None:
            who = "its only consumer is" if one else "its only consumers are"
            return (f"`{self.call}` copies {bytes_text(self.copied)} per call to interleave a "
                    f"{shape_text(self.input_shape)} tensor into {shape_text(self.expand_shape)}; {who} elementwise "
                    f"({consumers}), which {'reads' if one else 'read'} `{self._unsqueezed}` of it as a broadcast against the other "
                    f"operands split by `.unflatten({self.interleave_dim}, (-1, {self.interleave}))`: no copy")
        who = "its only consumer" if one else "its only consumers"
        if self.masks and len(self.masks) == len(self.consumed_by):
            how = ("broadcasts" if one else "broadcast") + " an attention mask over size-1 dims anyway"
        elif not self.readers:
            how = "broadcasts size-1 dims anyway" if one else "broadcast size-1 dims anyway"
        elif len(self.readers) == len(self.consumed_by):
            how = ("writes a new tensor from it and reads" if one else "write a new tensor from it and read") + \
                " a stride-0 view as well as this copy"
        else:
            how = "broadcast size-1 dims or write a new tensor from it, and read a stride-0 view as well"
        if not self.dims:
            return (f"`{self.call}` copies {bytes_text(self.copied)} per call and replicates nothing (every factor "
                    f"is 1 at these sizes): {who} ({consumers}) read{'s' if one else ''} the "
                    f"{shape_text(self.input_shape)} tensor as well as this copy of it, and `{self._expand}` (a "
                    "zero-copy view for any factors) or the tensor itself does the same")
        split = f" once {' and '.join(self.split_by)} splits the copies out" if self.split_by else ""
        they = "it broadcasts" if one else "they broadcast"
        tail = (f"`{self._unsqueezed}` of it is what {they}" if self.masks and self.unsqueeze is not None
                else f"the un-replicated mask is what {they}" if self.masks
                else f"`{self._expand}` is a zero-copy view")
        return (f"`{self.call}` copies {bytes_text(self.copied)} per call to replicate a "
                f"{shape_text(self.input_shape)} tensor into {shape_text(self.expand_shape)} "
                f"(dim{'s' if len(self.dims) > 1 else ''} {dims}{split}); {who} "
                f"({consumers}) {how}, and {tail}")

    def fix_title(self) -> str:
        if self.chained_into is not None:
            if self.one_copy:
                return (f"make the final tensor in one copy: `{self.one_copy}` on the {shape_text(self.input_shape)} "
                        f"tensor, in place of `{self.call}` and {self.chained_into} (a size-1 dim inserted next to "
                        "each repeated dim, expanded, one reshape)")
            return (f"make the final tensor in one copy: insert a size-1 dim next to each repeated dim, `.expand` "
                    f"the copies there and `.reshape` once, in place of `{self.call}` and {self.chained_into}")
        if self.interleave is not None and self.interleave_dim is not None:
            d, r = self.interleave_dim, self.interleave
            cat = (" (a `torch.cat` along that dim takes the un-interleaved pieces: interleaving commutes with it)"
                   if self.via_cat else "")
            return (f"keep the tensor un-interleaved as `{self._unsqueezed}` (`.expand` it by {r} there where no "
                    f"other operand has the full size) and compute the elementwise ops on the other operands' "
                    f"`.unflatten({d}, (-1, {r}))` (operands without that dim stay as they are), then `.flatten({d - 1}, {d})` the result: the same values with no "
                    f"copy{cat}")
        if not self.dims:
            return f"use `{self._expand}` instead of `{self.call}`: a view for any factors, no copy"
        who = "its consumers broadcast" if len(self.broadcast_consumers) > 1 else "the consumer broadcasts"
        drop = f"drop `{self.call}`: {who} the {shape_text(self.input_shape)} tensor by itself"
        if self.unsqueeze is not None:
            drop = (f"use `.unsqueeze({self.unsqueeze})` in place of `{self.call}` and drop "
                    f"{' and '.join(self.split_by)}: {who} the {shape_text(self.source_shape)} tensor by itself")
        if self.masks:
            return drop + (" (not `.expand(...)`: an expanded mask makes SDPA's backward copy q, k and v's "
                           "gradients)")
        if self.via_contiguous:
            return "drop `.contiguous()` (the `.expand(...)` is a free view)" if not self.drop else drop
        if self.drop:
            return f"{drop} (or use `{self._expand}`, a zero-copy view, where the shape is needed)"
        also = " and the view after it" if self.unsqueeze is not None else ""
        return (f"use `{self._expand}` instead of `{self.call}`{also}: a view with stride 0 on the replicated dims, "
                "no copy")

    @property
    def _unsqueezed(self) -> str:
        if self.interleave is not None and self.interleave_dim is not None:
            return f".unsqueeze({self.interleave_dim})"
        return f".unsqueeze({self.unsqueeze})" if self.unsqueeze is not None else "the tensor itself"

    @property
    def _expand(self) -> str:
        first = f".unsqueeze({self.unsqueeze})" if self.unsqueeze is not None else ""
        return f"{first}.expand({args_text(self.expand_shape)})"


@rule("FXL104", "repeat-copy", "warning", violation=RepeatCopy, supersedes=("FXL101", "FXL405"),
      fix=FixSpec.rewrite_of(
    "repeat-to-expand", safe=False,
    why="the result becomes an expanded view (stride 0 on the repeated dims): not contiguous, and an "
        "in-place write into it raises (the rewrite is not applied where the graph writes into it)"))
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    for node in view.nodes:
        if node.op not in ("repeat", "repeat_interleave", "contiguous"):
            continue
        if node.tensor is not None and node.tensor.numel == 0:
            continue  # an empty tensor copies nothing
        chained = chained_repeat(node)
        if chained is not None:
            yield _chained_hit(chained)
            continue
        rep = repeat_like(node)
        if rep is None or node.tensor is None:
            continue
        family = view_family(rep.source)
        if mutated_after(family, node, view):
            continue  # the copy keeps the values the source had here: a view would see the later write
        mine = set(view.nodes)
        if any(u not in mine for u in rep.consumers) and (family & set(view.outputs) or any(
                n.kind != "op" for n in family)):
            continue  # read after a graph break while its source may be written outside this graph
        nbytes = node.tensor.nbytes
        src_shape = rep.source.tensor.shape if rep.source.tensor is not None else rep.source_shape
        violation = RepeatCopy(
            call=rep.spelled,
            copied=bytes_value(nbytes),
            input_shape=shape_value(src_shape),
            source_shape=shape_value(rep.source_shape),
            expand_shape=shape_value(rep.out_shape),
            dims=tuple(rep.dims),
            consumed_by=tuple(f"`{u.op}` at {_place(u, node)}" + (f" through {', '.join(f'`{v}`' for v in via)}"
                                                              if via else "")
                              for u, via in zip(rep.consumers, rep.via or ((),) * len(rep.consumers))),
            broadcast_consumers=[u.name for u in rep.consumers],
            drop=rep.drop,
            via_contiguous=node.op == "contiguous",
            source=rep.source.name,
            readers=tuple(u.name for u in rep.consumers if not u.is_pointwise and u.op != "scaled_dot_product_attention"),
            unsqueeze=rep.unsqueeze,
            masks=tuple(u.name for u in rep.consumers if u.op == "scaled_dot_product_attention"),
            split_by=tuple(dict.fromkeys(f"`{call_text(v)}` at {_place(v, node)}" for v in rep.splits)),
            interleave=rep.interleave,
            interleave_dim=rep.dims[0] - len(rep.out_shape) if rep.interleave is not None else None,
            via_cat=rep.via_cat,
        )
        yield Hit(node, violation, bytes=nbytes, backward_bytes=0)


def _chained_hit(ch: ChainedRepeat) -> Hit:
    node, second = ch.node, ch.second
    assert node.tensor is not None
    src = node.input.tensor if node.input is not None else None
    shape = shape_value(src.shape) if src is not None else shape_value(node.tensor.shape)
    second_text = f"`{_spelled(second)}` at {_place(second, node)}"
    violation = RepeatCopy(
        call=_spelled(node), copied=bytes_value(node.tensor.nbytes), input_shape=shape, source_shape=shape,
        expand_shape=shape_value(node.tensor.shape), dims=(), consumed_by=(second_text,),
        broadcast_consumers=[second.name], drop=False, via_contiguous=False,
        source=node.input.name if node.input is not None else node.name, chained_into=second_text,
        one_copy=ch.one_copy)
    return Hit(node, violation, bytes=node.tensor.nbytes, backward_bytes=0)


def _spelled(node: CanonNode) -> str:
    if node.op == "repeat_interleave":
        return interleave_text(node)
    reps = node.args.get("repeats")
    if isinstance(reps, (list, tuple)) and all(isinstance(x, int) for x in reps):
        return f".repeat({', '.join(map(str, reps))})"
    return call_text(node)


def _counted(items: tuple[str, ...]) -> str:
    """``a, b`` with repeats counted once: ``a (2 times), b``."""
    counts: dict[str, int] = {}
    for it in items:
        counts[it] = counts.get(it, 0) + 1
    return ", ".join(it if n == 1 else f"{it} ({n} times)" for it, n in counts.items())


def _place(u: CanonNode, node: CanonNode) -> str:
    """``line 12`` for a consumer in the repeat's own file, ``file.py:12`` for one in another file (a helper the
    value is handed to)."""
    if u.location is not None and node.location is not None and u.location.file != node.location.file:
        return f"{os.path.basename(u.location.file)}:{u.location.line}"
    return line_of(u)

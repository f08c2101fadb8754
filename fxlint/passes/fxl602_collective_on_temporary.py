"""An in-place collective on a temporary copy whose result is thrown away: a silent wrong result.

## What it does
Finds in-place collectives (`dist.all_reduce`, `dist.broadcast`, and the
`out` tensor of `dist.all_gather_into_tensor` / `dist.reduce_scatter_tensor`)
whose tensor is a fresh copy of another one and is never read afterwards:

* `dist.all_reduce(x.contiguous())` when `x` is not contiguous (on a
  contiguous `x`, `.contiguous()` returns `x` itself, and nothing is wrong);
* `dist.all_reduce(x.float())`, `x.to(torch.float32)`, `x.double()` on a tensor
  of another dtype, `x.to("cpu")` from another device, `x.clone()`;
* `dist.broadcast(x.half(), src=0)`; `dist.all_gather_into_tensor(out.contiguous(), y)`.

The collective writes its result into the copy; the copy has no name and no
other use, so the result is dropped and `x` keeps this rank's own values.

## Why is this bad?
Nothing fails: the call runs, the bytes travel, and every rank goes on with
its unreduced (or un-broadcast) `x`. Gradients averaged this way are not
averaged; a "synchronised" buffer differs between ranks. It is the most
common way to lose a collective's result, because `.contiguous()` and
`.float()` look like harmless conversions: they return a new tensor only
sometimes, exactly when the result is then lost.

## Example
```python
dist.all_reduce(grad.t().contiguous())     # reduces a copy; grad.t() is never reduced
dist.all_reduce(loss.float())              # a bf16 loss: reduces a float32 copy
```

## Use instead
```python
g = grad.t().contiguous()
dist.all_reduce(g)                         # and use g (or grad.copy_(g.t()))
loss32 = loss.float()
dist.all_reduce(loss32)
```

## When it is intentional
Never as written: a collective whose result nobody reads could be removed.
Communication used only to synchronise ranks is `dist.barrier()`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import GraphView
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._collectives import DIST_CALL, collectives, copy_of, read_after, tensor_text, writes

_WHY = {
    "contiguous": "`{source}` is not contiguous, so `.contiguous()` copies it",
    "clone": "`.clone()` copies `{source}`",
    "to": "the conversion copies `{source}`",
}


@dataclass(frozen=True)
class CollectiveOnTemporary(Violation):
    """An in-place collective whose result lands in a temporary copy that nobody reads."""

    collective: str  # "all_reduce"
    temporary: str  # the copy as written: "x.contiguous()"
    source: str  # the tensor it copies: "x"
    why: str  # why it is a copy
    output: bool  # the copy is the collective's output (all_gather_into_tensor's), not the tensor it reduces

    def message(self) -> str:
        lost = (f"the gathered result is thrown away and `{self.source}` never receives it" if self.output else
                f"the result is thrown away and `{self.source}` keeps this rank's own values")
        return (f"`dist.{self.collective}` writes its result into `{self.temporary}`, a temporary copy ({self.why}) "
                f"that is never read again: {lost}, a silently wrong result")

    def fix_title(self) -> str:
        return (f"keep the copy in a variable, pass that to `dist.{self.collective}` and read it afterwards "
                f"(or copy it back into `{self.source}`)")


@rule("FXL602", "collective-on-temporary", "error", violation=CollectiveOnTemporary)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in collectives(view):
        call = DIST_CALL.get(node.args.get("kind") or "", node.args.get("style", "collective"))
        sent = set(node.args.get("inputs") or ())
        for w in writes(node):
            temp = w.target
            source = copy_of(temp)
            if source is None or read_after(temp, w.node, view):
                continue
            why = _WHY.get(temp.op, "it is a copy of `{source}`").format(source=tensor_text(source))
            violation = CollectiveOnTemporary(collective=call, temporary=tensor_text(temp),
                                              source=tensor_text(source), why=why, output=temp not in sent)
            yield Hit(node, violation, dedup=f"{call}:{temp.name}")

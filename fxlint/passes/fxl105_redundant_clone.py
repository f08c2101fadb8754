"""A `.clone()` whose result and source are never written afterwards: a full copy that protects nothing; and `clone().detach()` in the wrong order.

## What it does
Finds `.clone()` (`torch.clone`, `aten.clone`) where neither the clone nor
its source (nor any view sharing storage with either) is written in place
later in the graph, and the clone does not hand a fresh tensor to the caller
in place of one the caller could otherwise alias (a returned clone of an
input, parameter, buffer or of another returned tensor is kept: that is what
clones are for).

It also finds `.clone().detach()` on a tensor that requires grad: the clone
records an autograd node (`CloneBackward0`) that the detach cuts off right
away. `.detach().clone()` makes the same copy without it. When that clone is
needed (it is written later), the finding is info and has no cost in bytes.

Clones that change the layout (`clone(memory_format=...)`) are not reported.
Bytes are the clone's size; backward pays nothing extra (the gradient of a
clone passes through).

## Why is this bad?
`clone()` allocates and copies every element (`aten::clone > aten::copy_`).
A copy is only needed when one side is going to change while the other must
not: an in-place write later, or a result that must not share memory with
the caller's tensors. Without either, the program computes the same values
from the original tensor, with one less full-size copy per call.

## Example
```python
def forward(self, x):
    h = self.proj(x)
    skip = h.clone()                # nobody writes h or skip later
    return self.out(h) + skip
```

## Use instead
```python
def forward(self, x):
    h = self.proj(x)
    return self.out(h) + h
```

## When it is intentional
The clone protects against a write this graph does not show: a custom op
that writes in place, an in-place write in code after a graph break on a
tensor that is not returned, or storage you want released. Silence one line
with `# fxlint: ignore[FXL105]`.

`details` (the fields of `RedundantClone`): `source` (node the clone copies;
replacing the clone by it is safe exactly when `redundant` is True),
`redundant`, `clone_then_detach` (True for `clone().detach()` on a tensor that
requires grad), `detach` (that detach node's name), `copied` (bytes the clone
copies), `backward_bytes` (0).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..canon import CanonNode, GraphView
from ..canon.alias import escapes, mutated_after, view_base, view_family
from ..canon.text import bytes_text, bytes_value
from ..findings import Severity, Violation
from ..registry import Hit, RuleContext, rule
from ._sites import numbered
from ._util import real_users


@dataclass(frozen=True)
class RedundantClone(Violation):
    """A `.clone()` that protects nothing, or a `.clone().detach()` that records an autograd node for nothing."""

    redundant: bool  # nothing writes the clone or its source, and no caller could alias them: replacing the
    # clone by its source is safe
    clone_then_detach: bool  # `.clone().detach()` on a tensor that requires grad
    copied: int | str | None  # bytes the clone copies per call (a formula under dynamic shapes)
    source: str  # the node the clone copies
    detach: str | None  # the `.detach()` node after it, if any

    def message(self) -> str:
        if not self.redundant:
            return ("`.clone().detach()` records an autograd node (CloneBackward0) for a tensor that requires "
                    "grad, and the `.detach()` cuts it off at once; the copy itself is needed here (the clone is "
                    "written later)")
        message = (f"`.clone()` copies {bytes_text(self.copied)} per call, but neither the clone nor its source "
                   "is written in place afterwards and the clone does not stand between the caller and a tensor "
                   "it could alias, so the copy protects nothing")
        if self.clone_then_detach:
            message += "; `.clone().detach()` also records an autograd node that the detach cuts off at once"
        return message

    def fix_title(self) -> str:
        if not self.redundant:
            return "write `.detach().clone()`: the same copy, no autograd node"
        fix = "use the tensor itself instead of `.clone()`"
        if self.clone_then_detach:
            fix += " (if you need a copy, `.detach().clone()` records no autograd node)"
        return fix


@rule("FXL105", "redundant-clone", "warning", violation=RedundantClone)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    for node in view.ops("clone"):
        src, out = node.input, node.tensor
        if src is None or src.tensor is None or out is None:
            continue
        fmt = node.args.get("memory_format")
        if fmt not in (None, torch.preserve_format):
            continue  # a layout conversion, not a plain copy
        redundant = _redundant(node, src, view)
        detach = _detach_after(node)
        order = detach is not None and bool(src.tensor.requires_grad) and node.grad_enabled
        if not redundant and not order:
            continue
        violation = RedundantClone(
            redundant=redundant,
            clone_then_detach=order,
            copied=bytes_value(out.nbytes),
            source=src.name,
            detach=detach.name if detach is not None else None,
        )
        # only a redundant clone's copy is avoidable; the other finding is about the autograd node
        severity, cost = (Severity.WARNING, out.nbytes) if redundant else (Severity.INFO, None)
        yield Hit(node, violation, bytes=cost, backward_bytes=0, severity=severity)


def _redundant(node: CanonNode, src: CanonNode, view: GraphView) -> bool:
    mine = view_family(node)
    theirs = view_family(src)
    if mutated_after(mine | theirs, node, view):
        return False
    if any(node.mutates or n.mutates for n in mine):
        return False
    if escapes(node, view):
        base = view_base(src)
        if base.kind in ("input", "parameter", "buffer", "constant"):
            return False  # returning a clone keeps the caller from aliasing its own tensors
        if theirs & set(view.outputs):
            return False  # the source is returned too: two outputs must not share storage
    return True


def _detach_after(node: CanonNode) -> CanonNode | None:
    users = [u for u in real_users(node) if u.kind != "output"]
    if len(users) == 1 and users[0].op == "detach" and not users[0].args.get("inplace"):
        return users[0]
    return None

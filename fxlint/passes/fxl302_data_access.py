"""`.data` on a path from trainable parameters to the output: a silent gradient cut that also hides in-place writes from autograd.

## What it does
Reports every `x.data` read in the forward pass that stops the gradient of
trainable parameters on their way to the output, naming them. Severity from
the effect, as for FXL301: **error** when a parameter loses every path to the
output (it never trains), **warning** with the fraction of its gradient paths
cut when some remain.

## Why is this bad?
`x.data` returns the same storage outside autograd: no gradient flows through
it, and, unlike `.detach()`, autograd is not told when that storage is then
written in place, so a gradient computed from values saved earlier can be
silently wrong instead of raising. It is a leftover of PyTorch before 0.4.

## Example
```python
w = self.proj.weight.data            # proj.weight never trains
return x @ w.t() + self.bias
```

## Use instead
```python
return x @ self.proj.weight.t() + self.bias      # or F.linear(x, self.proj.weight, self.bias)
```

## When it is intentional
Reading a parameter's value without tracking it (weight statistics, a
frozen copy): write `.detach()`, which says so and keeps autograd's in-place
checks, and silence the line with `# fxlint: ignore[FXL301]`; or keep `.data`
and silence it with `# fxlint: ignore[FXL302]`.

The fraction of paths cut is counted as in FXL301 (`fxlint explain FXL301`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from ..capture.program import Program
from ..registry import Hit, RuleContext, rule
from ._gradient import CutText, GradientCut, cut_hits


@dataclass(frozen=True)
class DataAccess(GradientCut):
    """An `x.data` read that stops trainable parameters' gradient outside autograd."""

    TEXT: ClassVar[CutText] = CutText(
        code="FXL302",
        name="`.data`",
        what="`.data` leaves autograd: no gradient flows through it",
        intent="If the cut is meant, write `.detach()` instead (autograd keeps checking in-place writes) "
               "and say so with `# fxlint: ignore[FXL301]`.",
        fix="use the tensor itself instead of `.data` (or `.detach()` for an intended cut)",
    )


@rule("FXL302", "data-access", "warning", scope="program", violation=DataAccess)
def check(program: Program, ctx: RuleContext) -> Iterator[Hit]:
    yield from cut_hits(program, ctx, "data", DataAccess)

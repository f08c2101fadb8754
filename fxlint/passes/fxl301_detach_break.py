"""`.detach()` on a path from trainable parameters to the output: their gradient stops there.

## What it does
Follows every trainable parameter through the captured graphs to the outputs
and reports each `detach()` that stops some of its gradient paths. It names
the parameters, and says how much they lose:

* **error**: a parameter loses *every* path to every output. It never receives
  a gradient and never trains (`param.grad` stays `None`).
* **warning**: some paths remain. The message gives the fraction of the
  parameter's gradient paths that are cut (see *How the fraction is counted*).

A `detach()` of a value no trainable parameter reaches (an input, a target) is
not reported, nor is a value returned without gradient beside a differentiable
output (`return loss, logits.detach()`, the detached hidden state handed to
the next chunk): an output no parameter reaches carries no gradient, so the
way to it is not a gradient path.

## Why is this bad?
Nothing errors: the loss goes down a little, then stalls, because part of the
network never learns. The classic case is an RNN whose hidden state is
detached inside the time loop: only the last steps carry gradient back to the
recurrent weights.

## Example
```python
h = torch.zeros(batch, hidden)
for t in range(steps):
    h = self.cell(x[t], h)
    h = h.detach()          # every step but the last loses its gradient
return self.head(h)
```

## Use instead
```python
h = torch.zeros(batch, hidden)
for t in range(steps):
    h = self.cell(x[t], h)
return self.head(h)
```

## When it is intentional
Truncated backpropagation through time (detach every k steps on purpose), a
GAN discriminator step on `fake.detach()`, stop-gradient targets (BYOL/EMA
teachers, TD targets). The finding still names the parameters cut, so a wrong
cut is visible; silence an intended one on its line with
`# fxlint: ignore[FXL301]`.

## How the fraction is counted
For a parameter, the paths from each of its uses to a graph output in the
data-flow graph, counted twice: with the cuts ignored, and stopping at every
cut. The fraction cut is `1 - uncut / all`, over every cut together (so with
two cut sites each finding shows the combined share). For a weight used once
per step of a loop unrolled over T steps and detached after step k, that is
k / T: the share of time steps whose gradient is dropped. Ops that have no
gradient by nature (integer results, comparisons, sizes) are not counted as
paths at all, and neither are paths to outputs that carry no gradient when
another output does. In `fxlint.lint`, autograd checks the verdict: a parameter the
returned values reach is never called "never trains".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from ..capture.program import Program
from ..registry import Hit, RuleContext, rule
from ._gradient import CutText, GradientCut, cut_hits


@dataclass(frozen=True)
class DetachBreak(GradientCut):
    """A `.detach()` that stops trainable parameters' gradient."""

    TEXT: ClassVar[CutText] = CutText(
        code="FXL301",
        name="`.detach()`",
        what="`.detach()` stops the gradient here",
        intent="Truncated BPTT, a GAN discriminator step or a stop-gradient target? "
               "Say so with `# fxlint: ignore[FXL301]` on this line.",
        fix="remove the `.detach()` if these parameters should learn through this value",
    )


@rule("FXL301", "detach-break", "warning", scope="program", violation=DetachBreak)
def check(program: Program, ctx: RuleContext) -> Iterator[Hit]:
    yield from cut_hits(program, ctx, "detach", DetachBreak)

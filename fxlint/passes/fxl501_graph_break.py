"""A Dynamo graph break: the compiled program splits here and runs this line in Python.

## What it does
Reports every graph break Dynamo took while capturing the model, with
Dynamo's reason and the line of your code that caused it, e.g. `print(...)`,
`.item()`/`.tolist()`, `if` on a tensor value, an unsupported builtin or
library call. A graph break is in no graph, so fxlint reads it from Dynamo
itself: in `fxlint.lint` from Dynamo's list of break reasons for the run, in
the backend from the reason that ended each graph it compiles.

When a break happens inside a `for`/`while` loop, Dynamo gives up on the
whole function and runs it eagerly: nothing in it is compiled, and nothing in
it can be linted. fxlint reports that at the function's `def` line (from
Dynamo's own record of the skipped frame), so a lint that found nothing there
does not look like a clean bill of health.

## Why is this bad?
At a break, the compiled graph ends and Python takes over: no fusion across
the break, the tensors live between the graphs are materialised, the rest of
the function is compiled as one more graph with its own guards, and some
breaks (`.item()`, `if tensor:`) also wait for the device. Breaks inside loops
multiply all of this. When the break turns a tensor into a Python number, the
gradient stops there too (FXL304 names the parameters that lose it).

## Example
```python
def forward(self, x):
    y = self.encoder(x)
    print("mean activation", y.mean())     # graph break
    return self.decoder(y)
```

## Use instead
```python
def forward(self, x):
    y = self.encoder(x)
    return self.decoder(y)                 # log outside the compiled model, or with torch._dynamo.config
```

## When it is intentional
Some breaks are the price of a feature (a data-dependent Python branch, a
call into a library Dynamo cannot trace). `torch.compile` works across
breaks; if this one is accepted, silence it with
`# fxlint: ignore[FXL501]` on the reported line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..capture.program import Program
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._gradient import quote

#: Dynamo's terse reasons, in words (the reason itself is kept in the message)
_PLAIN = [
    (re.compile(r"generic_jump|data[- ]dependent", re.I),
     "control flow on a tensor's value (`if`/`while` on a tensor) needs the value on the host"),
    (re.compile(r"Tensor\.item\(\)", re.I), "`.item()` (or `float()`/`int()` of a tensor) returns a Python number"),
    (re.compile(r"Tensor\.tolist\(\)", re.I), "`.tolist()` returns Python numbers"),
    (re.compile(r"Tensor\.numpy\(\)|numpy", re.I), "`.numpy()` leaves torch"),
    (re.compile(r"builtin operator|print", re.I), "a Python builtin Dynamo does not trace (`print`, ...)"),
]


def plain_reason(headline: str) -> str:
    """Dynamo's reason for a break (its first line), in words."""
    for pattern, text in _PLAIN:
        if pattern.search(headline):
            return text
    return "Dynamo cannot trace this line"


@dataclass(frozen=True)
class DynamoGraphBreak(Violation):
    """A graph break Dynamo took, or a function it gave up on because of a break inside a loop."""

    reason: str  # Dynamo's reason, in full
    headline: str  # its first line
    statement: str  # the user's code at the break, in backticks ("this line" when the source is unknown)
    hint: str | None  # Dynamo's advice, when it gives one
    skipped_frame: str | None = None  # the function Dynamo runs eagerly (a break inside a loop), if it gave up

    def message(self) -> str:
        if self.skipped_frame is not None:
            return (
                f"Dynamo gave up on `{self.skipped_frame}` and runs it eagerly: a graph break inside a `for`/`while` "
                f"loop is not supported (first break: \"{self.headline}\"). Nothing in this function is compiled, "
                "and fxlint could not analyse it."
            )
        return (
            f"graph break at {self.statement}: {plain_reason(self.headline)} (Dynamo: \"{self.headline}\"). The "
            "compiled graph ends here and Python runs this line; the rest is compiled as another graph, with no "
            "fusion across the break and one more guarded call every time it runs."
        )

    def fix_title(self) -> str:
        if self.skipped_frame is not None:
            return ("remove the graph break inside the loop (often `.item()`, `print` or `if` on a tensor), "
                    "or move the loop body into a function of its own")
        if self.hint and "capture_scalar_outputs" in self.hint:
            # Dynamo's flag removes the break, not what the line does: never advice that reads as the fix
            return (f"{self.hint.rstrip('.')}: that keeps one graph, but the value is still a Python number (no "
                    "gradient flows through it, and on a GPU the host still waits for it); keeping it a tensor "
                    "(`t.mean()`, not `t.mean().item()`) fixes the break and both of those")
        return self.hint or "move the line out of the compiled function, or rewrite it with tensor ops"


@rule("FXL501", "graph-break", "warning", scope="program", violation=DynamoGraphBreak)
def check(program: Program, ctx: RuleContext) -> Iterator[Hit]:
    for b in program.breaks:
        violation = DynamoGraphBreak(
            reason=b.reason,
            headline=b.headline,
            statement=quote(b.location.code if b.location is not None else None, "this line"),
            hint=b.hint,
            skipped_frame=b.skipped_frame,
        )
        if b.skipped_frame is not None:  # nothing of the function was captured: in no graph
            yield Hit(None, violation, location=b.location, dedup="skipped:" + b.headline)
        else:
            yield Hit(None, violation, location=b.location, graph=b.graph, dedup=b.headline)

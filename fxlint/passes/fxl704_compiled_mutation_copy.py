"""The compiled program computes the new value of an input written in place into a buffer of its own, then copies it back.

## What it does
Reads Inductor's lowering of the graph (under `torch.compile(..., backend="fxlint")` with Inductor, or
`fxlint lint --compiled`) and finds the copies that write a value back into an input of the graph: a
buffer or parameter updated in place (`self.ema.mul_(0.9).add_(x)`, a running statistic), or the
caller's tensor written in place (`x[idx] += 1`, `x.t()[1:3].add_(1)`). The graph Inductor compiles is
functional: the write becomes a computation of the new value plus a `copy_` back into the input at the
end, and where Inductor cannot compute the new value straight into the input (it is read after the write
by an ATen kernel, or the write goes through a view of it) that `copy_` is a kernel of its own. The bytes
are what it writes per call in the compiled program.

## Why is this bad?
Eager writes the input in place once; the compiled program writes a temporary and then the input, the
whole input where the write went through a view.

## Example
```python
def forward(self, x):
    self.ema.mul_(0.9).add_(x.detach() * 0.1)    # FXL704: the new ema is read by the matmul below,
    return x @ self.ema.t()                       # so it is computed apart and copied back
```

## Use instead
Update the state after its last read in the compiled function, or outside it: Inductor then computes the
new value straight into the input.
```python
def forward(self, x):
    out = x @ self.ema.t()                        # reads the state before the update
    self.ema.mul_(0.9).add_(x.detach() * 0.1)     # written in place, no copy back
    return out
```
(This reads the old value; where the new one is needed first, the copy is its price.) A write through a
view of the caller's tensor is best made out of place and returned.

## When it is intentional
A module's state (a running mean, a step counter) must be updated, often by a few bytes: the rule is at
info level. Silence one line with `# fxlint: ignore[FXL704]`.

`details` (the fields of `CompiledMutationCopy`): `target` (the input written: a buffer's or parameter's
dotted name, or the caller's tensor), `role` (`parameter`, `buffer` or `input`), `copied` (bytes per call
in the compiled program).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode
from ..canon.text import bytes_text, operand_name
from ..compiled.kinds import MUTATION
from ..compiled.lowering import CompiledBuffer
from ..compiled.program import CompiledGraph
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._compiled import in_phase, role_of


@dataclass(frozen=True)
class CompiledMutationCopy(Violation):
    """A value written in place into an input, computed apart and copied back."""

    target: str
    role: str  # parameter | buffer | input
    copied: int | None
    phase: str  # forward | backward (a copy of the compiled backward graph)

    def message(self) -> str:
        what = {"parameter": "the parameter", "buffer": "the buffer"}.get(self.role, "the input")
        return in_phase(self.phase, (
            f"{what} `{self.target}` is written in place here and read again after the write; the compiled "
            "program computes its new value into a buffer of its own and copies it back "
            f"({bytes_text(self.copied)} per call)"))

    def fix_title(self) -> str:
        if self.role == "input":
            return ("compute the new value out of place and return it, rather than writing the caller's tensor "
                    "in place (through a view, the whole tensor is copied back)")
        return (f"update `{self.target}` after its last read in the compiled function (Inductor then writes the "
                "new value straight into it), or outside the function; if this call needs the new value, the copy "
                "is its price")


@rule("FXL704", "compiled-mutation-copy", "info", scope="compiled", violation=CompiledMutationCopy)
def check(compiled: CompiledGraph, ctx: RuleContext) -> Iterator[Hit]:
    for buf in compiled.copies(MUTATION):
        target = compiled.node(buf.mutates)
        violation = CompiledMutationCopy(target=operand_name(target) if target is not None else "an input",
                                         role=role_of(target), copied=buf.bytes, phase=buf.phase)
        yield Hit(_writer(compiled, buf) or compiled.site(buf), violation, compiled_bytes=buf.bytes,
                  compiled_phase=buf.phase,
                  dedup=f"{violation.target}:{buf.phase}")


def _writer(compiled: CompiledGraph, buf: CompiledBuffer) -> CanonNode | None:
    """The in-place op of the user's that writes the input (its line is where the write is)."""
    target = compiled.node(buf.mutates)
    if target is None or compiled.view is None:
        return None
    writers = [w for w in compiled.view.writers if any(m is target or target in m.view_chain() for m in w.mutates)]
    return writers[-1] if writers else None

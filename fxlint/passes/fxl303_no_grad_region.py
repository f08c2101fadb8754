"""Trainable parameters used where autograd is off (`no_grad`, `set_grad_enabled(False)`, `inference_mode`): they get no gradient from that computation.

## What it does
Finds the computations that run with autograd disabled and involve trainable
parameters (`requires_grad=True`) on their way to the output, and names those
parameters. One finding per block, at its first line that uses them.
**Error** when a parameter loses every path to the output (it never trains),
**warning** with the fraction of its gradient paths cut when it still learns
elsewhere.

Dynamo records `with torch.no_grad():`, `torch.set_grad_enabled(False)`,
`@torch.no_grad()` and `with torch.inference_mode():` in the graph;
`torch.export` keeps `no_grad`/`set_grad_enabled` regions (as
`wrap_with_set_grad_enabled`) but drops `inference_mode`; `symbolic_trace`
records no grad mode at all, so this rule cannot see them there.

A model linted in `eval()` mode, or under `torch.no_grad()`, is inference:
this rule says nothing then.

## Why is this bad?
A sub-network that should learn (a GAN generator, one member of an ensemble,
a fine-tuned backbone) is run under `no_grad` by mistake: it keeps its
initial weights while everything else trains, and nothing errors.

## Example
```python
with torch.no_grad():
    feats = self.backbone(x)      # backbone.* still requires grad: it never trains
return self.head(feats)
```

## Use instead
```python
feats = self.backbone(x)          # fine-tune it
# or freeze it explicitly, then fxlint stays quiet:
self.backbone.requires_grad_(False)
```

## When it is intentional
A frozen feature extractor, a target/EMA network, a teacher. Say so in code
with `backbone.requires_grad_(False)` (the parameters are then no longer
trainable and this rule is quiet, and the optimizer skips them), or silence
the block with `# fxlint: ignore[FXL303]` on the `with` line or on the
reported line.

The fraction of paths cut is counted as in FXL301 (`fxlint explain FXL301`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from ..analysis.gradflow import CutSite
from ..capture.program import Program
from ..registry import Hit, RuleContext, rule
from ..util.source import Location, grad_off_block_lines, source_line
from ._gradient import CutText, GradientCut, cut_hits


@dataclass(frozen=True)
class NoGradRegion(GradientCut):
    """A block run with autograd off that uses trainable parameters on their way to the output."""

    TEXT: ClassVar[CutText] = CutText(
        code="FXL303",
        name="a grad-disabled block",
        what="this runs with autograd off (`no_grad`, `set_grad_enabled(False)` or `inference_mode`): "
             "no gradient flows back through it",
        intent="A frozen backbone or target network? Freeze it with `.requires_grad_(False)` (fxlint then "
               "stays quiet) or say so with `# fxlint: ignore[FXL303]` on the `with` line.",
        fix="compute these parameters' part outside the grad-disabled block, "
            "or freeze them with `.requires_grad_(False)` if they are not meant to train",
    )

    block: str | None = None  # the block's opening line: "`with torch.no_grad():` at line 37" (None: not found)

    def headline(self) -> str:
        if self.block is None:
            return super().headline()
        return f"inside {self.block}, autograd is off: no gradient flows back through it"


def _anchors(site: CutSite) -> list[Location]:
    """The `with torch.no_grad():` lines around the block: a comment there silences it."""
    out: list[Location] = []
    for cut in site.cuts:
        loc = cut.node.location
        if loc is None:
            continue
        for line in grad_off_block_lines(loc.file, loc.line):
            anchor = Location(loc.file, line, loc.function)
            if anchor not in out:
                out.append(anchor)
    return out


def _block(site: CutSite, anchors: tuple[Location, ...]) -> dict[str, str]:
    """Which block, by its opening line (the reported line is the first one inside it)."""
    if not anchors:
        return {}
    first = anchors[0]
    code = source_line(first.file, first.line)
    return {"block": f"`{code}` at line {first.line}" if code else f"the block at line {first.line}"}


@rule("FXL303", "no-grad-region", "warning", scope="program", violation=NoGradRegion)
def check(program: Program, ctx: RuleContext) -> Iterator[Hit]:
    yield from cut_hits(program, ctx, "no_grad", NoGradRegion, anchors_of=_anchors, fields_of=_block)

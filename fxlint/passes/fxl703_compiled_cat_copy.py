"""The compiled program copies an input of `torch.cat` into the concatenation: Inductor could not compute it in place.

## What it does
Reads Inductor's lowering of the graph (under `torch.compile(..., backend="fxlint")` with Inductor, or
`fxlint lint --compiled`) and finds the inputs of a `cat` that Inductor copies into the concatenation's
output. Inductor computes an input in place, in its slice of the output, when it is a computation it
generates and nothing else needs it in a buffer of its own; it copies the others: an input of the graph
(a parameter, the caller's tensor), the output of an ATen kernel it calls (a matmul, a convolution:
they write their own buffer), or a value other ops read too; and a `cat` whose other inputs are empty
(a KV cache's first update, `torch.cat([cache, k], dim=-2)` with an empty cache) is a copy of its one
piece. In training the backward of an op that takes a tensor apart (`unbind`, `split`, `chunk`) is a
concatenation of the pieces' gradients, and Inductor copies into it the gradients an ATen kernel wrote (a
matmul's backward): that finding is at the line of the op that took the tensor apart (`q, k, v =
qkv.unbind(0)`). The finding is at the `cat`'s line, also where the kernel that writes the piece computes it from
ops of other lines (a pad fused into the store). The bytes are what the copy writes per call.

## Why is this bad?
Eager `torch.cat` copies every input; the compiled program copies only these. Each is a read and a write
of the whole input per call, and a concatenation that grows in a loop copies its earlier inputs again
every time.

## Example
```python
tokens = self.proj(x)                          # an ATen kernel (mm) writes its own buffer
u = torch.cat((self.cls_token.expand(B, -1, -1), tokens), dim=1)   # FXL703: tokens copied into u
```

## Use instead
Where the pieces are projections of one input, one projection with the weights concatenated
(`torch.cat([w1, w2])`) writes the whole output at once:
```python
w = torch.cat([self.proj_a.weight, self.proj_b.weight])  # or one nn.Linear(d, 2 * d) from the start
u = F.linear(x, w)                                       # no cat, no copy
```
Otherwise the copy is the price of the concatenation. In the backward of `unbind`/`split`/`chunk`, it is
the price of computing the pieces apart; nothing in the model's code removes it under Inductor.

## When it is intentional
Most concatenations of an ATen kernel's output pay this copy in eager as well; it is reported at info
level. Silence one line with `# fxlint: ignore[FXL703]`.

`details` (the fields of `CompiledCatCopy`): `piece` (the input copied, by the user's name or the op
that made it), `why` (`graph input`, `aten kernel`, `read elsewhere`, `only piece`, `gradient pieces` (the backward of an op that
takes a tensor apart), or `unknown`), `kernel` (the op that
made the piece, when it is an ATen kernel), `copied` (bytes per call in the compiled program).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode
from ..canon.text import bytes_text, operand_name
from ..compiled.kinds import CAT
from ..compiled.lowering import CompiledBuffer
from ..compiled.program import CompiledGraph
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._compiled import backward_value, in_phase, value_text


@dataclass(frozen=True)
class CompiledCatCopy(Violation):
    """An input of a cat Inductor copies into the concatenation."""

    piece: str
    why: str  # graph input | aten kernel | read elsewhere | only piece | gradient pieces | unknown
    kernel: str | None
    copied: int | None
    phase: str  # forward | backward (a copy of the compiled backward graph)
    #: for ``gradient pieces``: how the user took the tensor apart (`` `qkv.unbind(...)` ``)
    parted: str | None = None

    def message(self) -> str:
        if self.why == "gradient pieces":
            return in_phase(self.phase, (
                f"{self.parted}'s gradient is put together from its pieces' gradients, and the compiled program "
                f"copies {self.piece} into it ({bytes_text(self.copied)} per call): an ATen kernel wrote that "
                "gradient in a buffer of its own"))
        reason = {
            "graph input": "it is an input of the compiled graph, which Inductor cannot compute into the output",
            "aten kernel": f"it comes from an ATen kernel (`{self.kernel}`) that writes a buffer of its own",
            "read elsewhere": "other ops read it too, so it is kept in a buffer of its own",
            "only piece": "the other inputs are empty, so the concatenation is a copy of it",
        }.get(self.why, "Inductor keeps it in a buffer of its own")
        return in_phase(self.phase, (
            f"the compiled program copies {self.piece} into the output of `torch.cat` "
            f"({bytes_text(self.copied)} per call): {reason}"))

    def fix_title(self) -> str:
        if self.why == "gradient pieces":
            return ("this copy is the price of computing the pieces apart (their gradients come from separate kernels); "
                    "nothing in the model's code removes it under Inductor")
        if self.why == "aten kernel":
            return ("if the pieces are projections of one input, project once with the weights concatenated "
                    "(the kernel then writes the whole output); otherwise this copy is the price of the cat")
        if self.why == "only piece":
            return ("where the other inputs are empty (a cache's first update), use the piece itself instead of "
                    "concatenating it onto an empty tensor")
        return "this copy is the price of the concatenation; keep the pieces apart where the next op allows it"


@rule("FXL703", "compiled-cat-copy", "info", scope="compiled", violation=CompiledCatCopy)
def check(compiled: CompiledGraph, ctx: RuleContext) -> Iterator[Hit]:
    for buf in compiled.copies(CAT):
        # the concatenation the piece is written into: its line is the copy's, even where the kernel that
        # writes the piece also computes it from ops of other lines (a pad fused into the slice's store)
        cat = compiled.node(buf.into_node) or compiled.node(buf.producer)
        piece = _piece(compiled, buf, cat)
        why, kernel = _why(compiled, buf, piece, cat)
        text = value_text(piece) if piece is not None else "one of its inputs"
        parted = None
        if buf.phase == "backward":  # a gradient the backward concatenates (a split's or a chunk's backward)
            text = backward_value(compiled, buf)
            if cat is not None and cat.kind == "op" and cat.op in _PARTING:  # unbind's, split's, chunk's backward
                why, kernel, parted = "gradient pieces", None, _parted(cat)
                text = _computed_by(compiled, buf)
        violation = CompiledCatCopy(piece=text, why=why, kernel=kernel, copied=buf.bytes, phase=buf.phase,
                                    parted=parted)
        site = cat if cat is not None and cat.kind == "op" else compiled.site(buf)
        yield Hit(site, violation, compiled_bytes=buf.bytes, compiled_phase=buf.phase,
                  dedup=f"{violation.piece}:{buf.phase}")


#: the ops that take a tensor apart, whose backward puts the pieces' gradients together
_PARTING = frozenset({"unbind", "split", "split_with_sizes", "chunk", "tensor_split"})


def _parted(op: CanonNode) -> str:
    """How the user took a tensor apart: `` `qkv.unbind(...)` ``."""
    whole = op.tensor_inputs[0] if op.tensor_inputs else None
    return f"`{operand_name(whole)}.{op.op}(...)`" if whole is not None else f"`.{op.op}(...)`"


def _computed_by(compiled: CompiledGraph, buf: CompiledBuffer) -> str:
    """The piece's gradient a backward concatenation copies, by the forward op whose backward computed it."""
    read = next((n for n in map(compiled.node, reversed(buf.read_nodes)) if n is not None), None)
    return f"the gradient computed by the backward of {value_text(read)}" if read is not None else "a gradient"


def _piece(compiled: CompiledGraph, buf: CompiledBuffer, cat: CanonNode | None) -> CanonNode | None:
    """The cat's input this copy writes: the value it reads (the node that made the buffer it copies
    from), else the one input among its sources, else the only input of its size."""
    for name in reversed(buf.read_nodes):
        node = compiled.node(name)
        if node is not None and (cat is None or node in cat.tensor_inputs or node.kind != "op"):
            return node
    if cat is None:
        return None
    pieces = cat.tensor_inputs
    named = [p for p in pieces if p.name in buf.sources]
    if len(named) == 1:
        return named[0]
    if buf.size is not None:
        same = [p for p in pieces if p.tensor is not None and tuple(p.tensor.shape) == tuple(buf.size)]
        if len(same) == 1:
            return same[0]
    return None


def _why(compiled: CompiledGraph, buf: CompiledBuffer, piece: CanonNode | None, cat: CanonNode | None
         ) -> tuple[str, str | None]:
    others = [p for p in cat.tensor_inputs if p is not piece] if cat is not None and piece is not None else []
    if others and all(p.tensor is not None and p.tensor.numel == 0 for p in others):
        return "only piece", None
    if buf.only_inputs or (piece is not None and piece.kind != "op"):
        return "graph input", None
    if piece is None:
        return "unknown", None
    base = piece.view_chain(maybe_views=True)[-1]
    if base.name in compiled.lowering.extern_sources:
        return "aten kernel", base.op
    if len([u for u in base.users if u.op != "cat"]) > 0:
        return "read elsewhere", None
    return "unknown", None

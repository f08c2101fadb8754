"""A value copied into a slice, then updated there in place (`buf[1:] = a`, then `buf[1:].mul_(n)`): the copy is a pass the first update's `out=` spelling does not need.

## What it does
Finds a subscript write of a tensor into a region of another
(`buf[s] = a`, `aten::copy_` into the region) whose next use of `buf` takes
the same region (`buf[s]`) and updates it in place with an elementwise op
(`.mul_(n)`, `.add_(b)`, `.clamp_(...)`...), with nothing reading `buf` (or
a view of it) in between, the update's own operands included. The first update can write its
result straight into the region instead: `torch.mul(a, n, out=buf[s])` reads
`a` once and writes the region once, where the copy and the in-place update
each read and write it.

Only tensors that need no gradient are reported (`out=` does not record
autograd): integer keys and indices, buffers filled under `no_grad`; and
only a value of the region's dtype and shape (a copy that casts or
broadcasts does more than `out=` would). Bytes are
the region's size, the copy that goes.

## Why is this bad?
The write `buf[s] = a` runs `aten::copy_` over the whole region, then the
in-place op reads the region back and writes it again. Computing the first
update with `out=` makes one pass of the two, with the same values in `buf`
and no temporary.

## Example
```python
idx = edge_index.new_empty(num_edges + 1)
idx[0] = -1
idx[1:] = edge_index[1]
idx[1:].mul_(num_nodes).add_(edge_index[0])
```

## Use instead
```python
idx = edge_index.new_empty(num_edges + 1)
idx[0] = -1
torch.mul(edge_index[1], num_nodes, out=idx[1:]).add_(edge_index[0])
```

## When it is intentional
Where the tensors need a gradient (`out=` is not differentiable) this rule
does not fire. Silence one line with `# fxlint: ignore[FXL116]`.

`details` (the fields of `CopyThenUpdate`): `region` (the subscript as
written, `[1:]`), `target` (the tensor written), `value` (the tensor copied
in), `update` (the in-place op, `mul_`), `out_of_place` (its out-of-place name,
`mul`), `copied` (bytes per call), `backward_bytes` (0).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.alias import view_base, view_family
from ..canon.text import bytes_text, bytes_value, line_of, operand_name, source_statement
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._sites import numbered
from ._util import real_users


@dataclass(frozen=True)
class CopyThenUpdate(Violation):
    """A region filled by a copy, then updated in place: the update's `out=` form writes it once."""

    region: str  # "[1:]"
    target: str  # the tensor written, as the user names it
    value: str  # the tensor copied in
    update: str  # "mul_"
    out_of_place: str  # "mul"
    update_line: str  # "line 10"
    copied: int | str | None  # bytes per call (a formula under dynamic shapes)

    def message(self) -> str:
        return (f"`{self.target}{self.region} = {self.value}` copies {bytes_text(self.copied)} per call into "
                f"`{self.target}`, then `.{self.update}(...)` at {self.update_line} updates the same region in place: "
                f"`{self._call}` computes the update straight into the region, without the copy")

    def fix_title(self) -> str:
        return f"write `{self._call}` in place of the copy and the first `.{self.update}(...)`"

    @property
    def _call(self) -> str:
        more = "" if self.update in _UNARY else ", ..."
        return f"torch.{self.out_of_place}({self.value}{more}, out={self.target}{self.region})"


@rule("FXL116", "copy-then-update", "warning", violation=CopyThenUpdate)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    for write in view.ops("setitem"):
        buf, value, spec = write.input, write.args.get("value"), write.args.get("index")
        if buf is None or not isinstance(value, CanonNode) or value.tensor is None or spec is None:
            continue
        if spec.is_advanced or _needs_grad(buf, view) or _needs_grad(value, view):
            continue
        if view_base(value) is view_base(buf):
            continue  # `buf[1:] = buf[:-1]`: an out= write over its own input
        region = _next_use(buf, write)
        if region is None or region.op != "slice" or region.tensor is None:
            continue
        if getattr(region.args.get("index"), "items", None) != spec.items:
            continue
        if value.tensor.dtype != region.tensor.dtype or tuple(value.tensor.shape) != tuple(region.tensor.shape):
            continue  # the copy casts or broadcasts: `out=` would compute in another dtype or shape
        users = real_users(region)
        update = users[0] if users else None
        if update is None or update.input is not region or region not in update.mutates or not _elementwise(update):
            continue
        family = view_family(buf)
        if any(write.position < u.position < update.position and u is not region
               for n in family for u in real_users(n)):
            continue  # `buf` read between the copy and the update (`buf[1:].sub_(buf.sum())`, another view): out=
            # would compute from the region before the copy
        nbytes = region.tensor.nbytes
        target, text = _as_written(write) or (operand_name(buf), operand_name(value))
        violation = CopyThenUpdate(
            region=spec.written or "[...]",
            target=target,
            value=text,
            update=update.op,
            out_of_place=update.op.removesuffix("_"),
            update_line=line_of(update),
            copied=bytes_value(nbytes),
        )
        yield Hit(write, violation, bytes=nbytes, backward_bytes=0)


def _needs_grad(node: CanonNode, view: GraphView) -> bool:
    """May ``node`` need a gradient? Dynamo's values say; fx and export values do not, so a floating-point
    tensor there may."""
    t = node.tensor
    if t is None or t.requires_grad:
        return True
    return not view.requires_grad_known and t.dtype.is_floating_point


def _as_written(write: CanonNode) -> tuple[str, str] | None:
    """(the tensor written, the value) as the statement spells them (`idx[1:] = edge_index[1]`: `idx`,
    `edge_index[1]`), when it is one plain assignment to a subscript."""
    import ast

    stmt = source_statement(write)
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Subscript):
        return None
    return ast.unparse(stmt.targets[0].value), ast.unparse(stmt.value)


def _next_use(buf: CanonNode, write: CanonNode) -> CanonNode | None:
    """The first node after ``write`` (graph order) that reads ``buf``."""
    later = [u for u in real_users(buf) if u.position > write.position]
    return min(later, key=lambda u: u.position) if later else None


#: in-place elementwise updates whose out-of-place form takes ``out=``
_UPDATES = frozenset({"mul_", "add_", "sub_", "div_", "clamp_", "clamp_min_", "clamp_max_", "remainder_",
                      "fmod_", "bitwise_and_", "bitwise_or_", "bitwise_xor_", "neg_", "abs_", "pow_"})


_UNARY = frozenset({"neg_", "abs_"})


def _elementwise(node: CanonNode) -> bool:
    return node.op in _UPDATES

"""`x[i] = x[i] + y` writes a fresh result back over the region it was computed from (a full copy); `x[i] += y` in training records a second backward for nothing.

## What it does
Finds a subscript assignment `x[i] = v` whose value `v` is computed from
the same region `x[i]` (same tensor, same index):

* **write-back** (`x[i] = x[i] + y`, `x[i] = (x[i].view(...) + a + b).view(...)`):
  the arithmetic allocates a fresh tensor and `__setitem__` then copies it
  into the region (`aten::copy_`, the region's size, every call). Computing
  in place on the region (`x[i] += y`, `x[i].add_(y)`) writes the result
  where it belongs, with no temporary and no copy.
* **self-assignment in training** (`x[i] += y` where `x` requires grad):
  Python runs `__iadd__` on the view and then `__setitem__`, which copies
  the view onto itself. In the forward pass ATen sees source and
  destination are the same memory and copies nothing (measured: 0.02 ms for
  a 16 MiB region that takes ~5 ms to really copy; so this rule is silent
  in inference), but autograd records the copy as a second `CopySlices`
  node, whose backward clones and copies the gradient again and runs an
  `as_strided` backward over the whole base: measured with
  `fxlint.audit(..., train=True)`, the base's size plus three times the
  region's size in extra backward copies per step (on an 8x8x129x129 base:
  37 ms per training step instead of 21 ms with `.add_`). Reported at info
  level with those backward bytes; the rewrite `drop-self-assign` removes
  the no-op write.

* **sort write-back** (`idx[1:], perm = idx[1:].sort()`, a tensor that needs
  no gradient): the sort writes its values into a fresh tensor, which
  `__setitem__` copies back over the region. `torch.sort(v, out=(v, perm))`
  on the region `v = idx[1:]` sorts it where it is (measured: one copy of
  the region fewer).

Not reported: a value that is not freshly computed from the region (a
different tensor, another index, a view of something else), a write-back
whose temporary has other users (it is needed apart from the write), and
indices holding tensors (an advanced-index write is a scatter: FXL4xx).

## Why is this bad?
A write-back allocates the result and copies it once more into `x`: twice
the memory traffic of the in-place update, for the same values. In
training, every extra in-place write through a view adds an autograd node
whose backward copies gradients of the region and of the base.

## Example
```python
attn[:, :, 1:, 1:] = attn[:, :, 1:, 1:] + rel_pos   # write-back: a copy of the region
x[:, :, 1:, :] += shortcut[:, :, 1:, :]             # training: a second CopySlices
```

## Use instead
```python
attn[:, :, 1:, 1:].add_(rel_pos)                     # or: view = attn[:, :, 1:, 1:]; view += rel_pos
x[:, :, 1:, :].add_(shortcut[:, :, 1:, :])
```

## When it is intentional
When `x[i]` is read again between the arithmetic and the write (the old
values are still needed), the out-of-place form is required; the rule only
fires when the temporary's one user is the write. Silence a line with
`# fxlint: ignore[FXL110]`.

`details` (the fields of `SubscriptWriteBack`): `form` (`"write-back"`, `"sort-back"` or
`"self-assign"`), `target` (the tensor written), `index` (the subscript as
written), `region` (the node that reads the region), `value` (the node
written), `region_shape`, `copied` (bytes the forward copies per call; 0 for
a self-assignment), `backward_extra` (bytes the extra backward copies, for a
self-assignment in training).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView, IndexSpec
from ..canon.text import bytes_text, bytes_value, operand_name, shape_text, shape_value, source_statement
from ..findings import Severity, Violation
from ..registry import FixSpec, Hit, RuleContext, rule
from ._sites import numbered
from ._util import real_users

#: ops that compute a fresh tensor from the region, elementwise
_ARITH = frozenset({"add", "sub", "mul", "div", "neg", "where", "masked_fill", "clamp", "relu", "sigmoid", "tanh",
                    "exp", "pow", "maximum", "minimum", "abs", "gelu", "softmax"})
#: in-place ops Python's augmented assignment (or the user) runs on the region
_INPLACE = frozenset({"add_", "sub_", "mul_", "div_", "floor_divide_", "pow_", "clamp_", "masked_fill_", "relu_",
                      "copy_", "fill_", "zero_"})
_SEARCH_DEPTH = 8


@dataclass(frozen=True)
class SubscriptWriteBack(Violation):
    """A subscript assignment writing back a value computed from the same region."""

    form: str  # "write-back" | "self-assign" | "sort-back"
    target: str  # the tensor written (node name)
    index: str  # the subscript, as written: "[:, :, 1:, 1:]"
    region: str  # the node that reads x[i]
    value: str  # the node written
    region_shape: tuple[int | str, ...]
    copied: int | str | None  # forward bytes per call (0 for a self-assignment: ATen skips it)
    backward_extra: int | str | None  # extra backward bytes per step (self-assignment in training)
    written: str | None = None  # the user's statement, when its line is one: "x[:, 1:] = x[:, 1:] + self.bias"
    in_place: str | None = None  # the same update in place, from that statement: "x[:, 1:] += self.bias"

    def message(self) -> str:
        sub = f"{self.target}{self.index}"
        if self.form == "sort-back":
            return (f"`{self.written or sub + ', perm = ' + sub + '.sort()'}` sorts the region into a fresh "
                    f"{shape_text(self.region_shape)} tensor and then copies it back ({bytes_text(self.copied)} per call)")
        if self.form == "self-assign":
            return (f"`{self.written or sub + ' += ...'}` writes the view back onto itself: the forward copy is "
                    "skipped by ATen, but "
                    f"autograd records it as a second CopySlices node whose backward copies "
                    f"{bytes_text(self.backward_extra)} more per training step")
        return (f"`{self.written or sub + ' = <expression of ' + sub + '>'}` computes a fresh "
                f"{tuple(self.region_shape)} tensor and then copies it back into the region "
                f"({bytes_text(self.copied)} per call)")

    def fix_title(self) -> str:
        sub = f"{self.target}{self.index}"
        if self.form == "sort-back":
            v = "region" if self.target != "region" else "region_"
            return (f"sort into the region itself: `{v} = {sub}; torch.sort({v}, out=({v}, perm))` (keeping the "
                    f"sort's dim, descending and stable arguments), with `perm = torch.empty(0, dtype=torch.long, "
                    f"device={v}.device)` (sort fills it): no fresh tensor, no copy back")
        if self.form == "self-assign":
            if self.in_place:
                return f"update the view in place without the write-back: `{self.in_place}`"
            return f"update the view in place without the write-back: `{sub}.add_(y)` (or `v = {sub}; v += y`)"
        if self.in_place:
            return f"compute in place on the region: `{self.in_place}`"
        return (f"compute in place on the region: `{sub} += y` / `{sub}.add_(y)` (for a chain, "
                f"`v = {sub}.view(...); v += a; v += b`)")


@rule("FXL110", "subscript-write-back", "warning", violation=SubscriptWriteBack, fix=FixSpec.rewrite_of(
    "drop-self-assign", safe=True,
    why="the write it removes copies a view onto itself: the values are the same, the backward "
        "loses a redundant CopySlices node"))
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view, ctx)))


def _hits(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    for node in view.ops("setitem"):
        found = match(node)
        if found is None:
            continue
        form, base, region, value = found
        t = region.tensor
        if t is None or base.tensor is None:
            continue
        index = index_text(node)
        target = operand_name(base)
        written, in_place = _written(node, target)
        if form == "self-assign":
            grad = node.grad_enabled and bool(base.tensor.requires_grad)
            if not (ctx.training and grad):
                continue  # no copy in the forward (ATen skips it): nothing to pay in inference
            extra = base.tensor.nbytes + 3 * t.nbytes
            violation = SubscriptWriteBack(form=form, target=target, index=index, region=region.name,
                                           value=value.name, region_shape=shape_value(t.shape), copied=0,
                                           backward_extra=bytes_value(extra), written=written, in_place=in_place)
            yield Hit(node, violation, bytes=0, backward_bytes=extra, severity=Severity.INFO,
                      tensor_shape=tuple(t.shape) if all(isinstance(d, int) for d in t.shape) else None)
            continue
        if form == "sort-back":
            if node.grad_enabled and bool(base.tensor.requires_grad):
                continue  # out= records no autograd
            written = _statement(node)
        violation = SubscriptWriteBack(form=form, target=target, index=index, region=region.name,
                                       value=value.name, region_shape=shape_value(t.shape),
                                       copied=bytes_value(t.nbytes), backward_extra=None, written=written,
                                       in_place=in_place)
        yield Hit(node, violation, bytes=t.nbytes, backward_bytes=None)


_AUG = {"Add": "+", "Sub": "-", "Mult": "*", "Div": "/"}
_METHOD = {"Add": "add_", "Sub": "sub_", "Mult": "mul_", "Div": "div_"}


def _written(node: CanonNode, target: str) -> tuple[str | None, str | None]:
    """The user's statement for this write when its line is one subscript assignment of ``target``, and
    the in-place form of a ``region = region <op> y`` write-back (``region <op>= y``)."""
    import ast

    stmt = source_statement(node)
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Subscript):
        sub = stmt.target
    elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript):
        sub = stmt.targets[0]
    else:
        return None, None
    name = ast.unparse(sub.value)
    if name != target and not name.endswith("." + target):
        return None, None
    written = ast.unparse(stmt)
    value = stmt.value
    if isinstance(stmt, ast.AugAssign) and type(stmt.op).__name__ in _METHOD:  # the view's own method: no write
        return written, f"{ast.unparse(sub)}.{_METHOD[type(stmt.op).__name__]}({ast.unparse(value)})"
    if isinstance(stmt, ast.Assign) and isinstance(value, ast.BinOp) and type(value.op).__name__ in _AUG \
            and ast.unparse(value.left) == ast.unparse(sub):
        return written, f"{ast.unparse(sub)} {_AUG[type(value.op).__name__]}= {ast.unparse(value.right)}"
    return written, None


def _statement(node: CanonNode) -> str | None:
    """The user's statement, when its line is one assignment."""
    import ast

    stmt = source_statement(node)
    return ast.unparse(stmt) if isinstance(stmt, ast.Assign) else None


#: sorts whose values have an ``out=`` that may be the sorted tensor itself
_SORTS = frozenset({"sort"})


def match(node: CanonNode) -> tuple[str, CanonNode, CanonNode, CanonNode] | None:
    """(form, base, region, value) of a setitem ``base[index] = value`` that writes back a value
    computed from ``base[index]`` itself, or None."""
    base, index, value = node.input, node.args.get("index"), node.args.get("value")
    if base is None or not isinstance(index, IndexSpec) or index.is_advanced or not isinstance(value, CanonNode):
        return None  # an advanced-index write is a scatter (FXL4xx); a scalar written is a fill
    if _is_region(value, base, index):
        return "self-assign", base, value, value
    if value.op in _INPLACE and value.input is not None and _is_region(value.input, base, index):
        return "self-assign", base, value.input, value
    # `x[s], perm = x[s].sort()`: the sorted values of the region written back over it
    if (value.op == "tuple_getitem" and value.args.get("index") == 0 and value.input is not None
            and value.input.op in _SORTS and value.input.input is not None
            and _is_region(value.input.input, base, index) and len(real_users(value)) == 1):
        return "sort-back", base, value.input.input, value
    # a write-back: a fresh tensor (optionally viewed back to the region's shape) whose one user is the write
    top = next(c for c in value.view_chain() if not (c.is_view and c.input is not None and len(real_users(c)) == 1))
    if top.op not in _ARITH or len(real_users(top)) != 1 or len(real_users(value)) != 1:
        return None
    region = _find_region(top, base, index)
    if region is None or region.tensor is None or value.tensor is None:
        return None
    if tuple(value.tensor.shape) != tuple(region.tensor.shape):
        return None
    return "write-back", base, region, value


def _find_region(start: CanonNode, base: CanonNode, index: IndexSpec) -> CanonNode | None:
    """The ``base[index]`` read among the arithmetic (and view) ancestors of ``start``."""
    frontier, seen = [start], set()
    for _ in range(_SEARCH_DEPTH):
        nxt = []
        for n in frontier:
            for i in n.tensor_inputs:
                if i in seen:
                    continue
                seen.add(i)
                if _is_region(i, base, index):
                    return i
                if i.op in _ARITH or i.is_view:
                    nxt.append(i)
        frontier = nxt
    return None


def _is_region(n: CanonNode, base: CanonNode, index: IndexSpec) -> bool:
    """``n`` reads ``base[index]``: a subscript of ``base`` itself naming the same elements."""
    read = n.args.get("index")
    return n.op == "slice" and n.input is base and isinstance(read, IndexSpec) and read.same_region(index)


def index_text(node: CanonNode) -> str:
    """``[:, :, 1:, 1:]``: the subscript of a canonical getitem/setitem node, as written."""
    index = node.args.get("index")
    return index.text if isinstance(index, IndexSpec) else "[?]"

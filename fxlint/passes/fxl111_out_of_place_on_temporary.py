"""Out-of-place `masked_fill`: a full copy of its input that `masked_fill_` on a temporary nothing else reads, or `torch.where` anywhere, avoids.

## What it does
Finds `t.masked_fill(mask, value)` where `t` is a fresh tensor computed in
this graph (not an input, parameter or buffer, not a view of one), that
nothing reads after this `masked_fill` (an earlier `t.clone()` or `t + 1`
may read it: their results are other memory), and which is not returned; or a view of
such a temporary covering all of it and itself contiguous (a `view` or
`reshape`; not a slice, a transpose or an expand), each step read by nothing else
(`(scores + bias).view(b, h, q, k).masked_fill(...)`, DeBERTa's attention
mask): the in-place write then lands in memory nobody else reads. ATen's
out-of-place `masked_fill` is `clone()` then `masked_fill_`
(`aten::masked_fill > aten::clone > aten::copy_`, the tensor's full size
every call); when nobody else reads `t`, the in-place `t.masked_fill_(...)`
gives the same result without the copy.

The usual spelling is a chain:
`m.masked_fill(m != 0, -100.0).masked_fill(m == 0, 0.0)` (torchvision's
shifted-window attention mask): the second call's input is the first call's
fresh result, read by nothing else; the first call's input `m` is read again
by `m == 0` and cannot be written in place (`torch.where` is offered for it,
below).

In training, where the temporary requires grad, the in-place write must not
change a tensor autograd saved: it is reported when the op that made the
temporary does not keep its own result for its backward (a matmul, `einsum`,
`bmm`, `linear`, `+`, `-`, `*`, `/`, `where`, `cat`, a `masked_fill`, a
conversion: checked with autograd in the tests), when nothing that read the
temporary earlier kept it either (a comparison, `clone`, `+`: they keep
nothing), and when the call writes the temporary itself, not a view of it.
An in-place write on a view of a tensor that requires grad makes autograd
rebuild the base in the backward (`CopySlices`: four more copies of the
view's size, measured) and is not offered; nor is it for a temporary made
by an op that keeps its result (`exp`, `softmax`, `sigmoid`, `tanh`, `relu`,
`sqrt`: `.backward()` would raise). A read of the temporary's dtype or shape
only (`.type_as(t)`, `t.size(1)`) is not a read.

Where the input cannot be written in place (an input of the graph or the
caller's tensor, read again later, returned, kept by autograd, a view, or
broadcast up by the mask: the checks above), `torch.where(mask, value, t)`
still avoids the copy, for a floating `t` filled with a number (or a 0-d
tensor of its dtype: `where` promotes, `masked_fill` keeps `t`'s dtype) and a
result laid out as `masked_fill`'s contiguous clone (`t` contiguous, or a mask
of the result's shape); other fills are not reported: it writes the result in one pass instead of cloning
`t` and then filling it (measured: no `aten::clone`, and faster on the CPU:
`python bench/where_vs_masked_fill.py`); the finding then
says why in-place is out and suggests `torch.where`. A Python scalar that
does not fit the dtype becomes infinity in `torch.where`, where `masked_fill`
raises.

Bytes are the temporary's size per call (the result's, for `torch.where`). Backward pays nothing more for the
out-of-place spelling: `masked_fill`'s gradient, in place or not, is the
output's gradient with the masked elements zeroed, a new tensor (the audit
files it as unavoidable, `masked-fill-grad`).

## Why is this bad?
The clone allocates and writes a second full-size tensor only to throw the
first away on the next line.

## Example
```python
mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
```

## Use instead
```python
mask = mask.masked_fill(mask != 0, -100.0).masked_fill_(mask == 0, 0.0)
# or, for this pattern, one op:  torch.where(mask != 0, -100.0, 0.0)
```

For a tensor that must stay as it is (an attention mask handed in):
```python
scores = torch.where(mask, float("-inf"), scores)   # not scores.masked_fill(mask, float("-inf"))
```

## When it is intentional
Never for the values; an in-place op inside a function that must stay
functional (`torch.func` transforms) is the exception: silence the line
with `# fxlint: ignore[FXL111]`.

`details` (the fields of `OutOfPlaceOnTemporary`): `op` (the call, e.g.
`masked_fill`), `inplace` (its in-place twin), `source` (the temporary's
node), `copied` (bytes per call), `fix` (`inplace` or `where`), `kept_because`
(why the input cannot be written in place, for `where`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.alias import escapes
from ..canon.text import bytes_text, bytes_value
from ..findings import Violation
from ..registry import Hit, RuleContext, rule
from ._sites import numbered
from ._util import real_users

#: out-of-place ops ATen implements as clone + their in-place twin (checked with the profiler:
#: ``aten::masked_fill > aten::clone > aten::copy_``)
_TWINS = {"masked_fill": "masked_fill_"}
#: ops whose backward does not read their own result: autograd lets their output be written in place
#: (tests/test_fxl111_out_of_place_on_temporary.py checks each against autograd; ``exp``, ``softmax``,
#: ``sigmoid``, ``tanh``, ``relu``, ``sqrt`` keep their result and are not here)
_RESULT_NOT_SAVED = frozenset({"matmul", "mm", "bmm", "einsum", "addmm", "baddbmm", "linear", "add", "sub", "rsub",
                               "mul", "div", "neg", "where", "masked_fill", "cat", "to", "clone"})
#: ops that keep nothing of their inputs for the backward (sizes and options at most)
_KEEP_NOTHING = frozenset({"add", "sub", "rsub", "neg", "clone", "contiguous", "to", "cat", "sum", "mean"})
#: calls that read only the dtype, device or shape of a tensor
_METADATA_READS = frozenset({"size", "zeros_like", "ones_like", "empty_like", "full_like", "new_zeros", "new_ones",
                             "new_empty", "new_full"})


@dataclass(frozen=True)
class OutOfPlaceOnTemporary(Violation):
    """An out-of-place `masked_fill` that clones its input: on a temporary nobody else reads (``fix`` "inplace"),
    or on a tensor that must stay as it is (``fix`` "where": `torch.where` writes the result without the copy)."""

    op: str
    inplace: str
    source: str
    copied: int | str | None
    fix: str = "inplace"  # "inplace" | "where"
    kept_because: str | None = None  # why the input must stay as it is (``fix`` "where")

    def message(self) -> str:
        if self.fix == "where":
            return (f"`.{self.op}(...)` clones its input ({bytes_text(self.copied)} per call) before writing the "
                    f"fill; the input cannot be written in place ({self.kept_because}), but `torch.where` writes "
                    "the same result in one pass, without the copy")
        return (f"`.{self.op}(...)` clones its input ({bytes_text(self.copied)} per call) before writing it, but "
                f"the input is a temporary nothing else reads")

    def fix_title(self) -> str:
        if self.fix == "where":
            return "use `torch.where(mask, value, t)` instead of `t.masked_fill(mask, value)`"
        return f"use the in-place `.{self.inplace}(...)` on the temporary"


@rule("FXL111", "out-of-place-on-temporary", "warning", violation=OutOfPlaceOnTemporary)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    for op, twin in _TWINS.items():
        for node in view.ops(op):
            src = node.input
            if src is None or src.tensor is None or node.tensor is None:
                continue
            kept = _kept_because(view, node, src)
            if kept is None:
                violation = OutOfPlaceOnTemporary(op=op, inplace=twin, source=src.name,
                                                  copied=bytes_value(src.tensor.nbytes))
                yield Hit(node, violation, bytes=src.tensor.nbytes, backward_bytes=0)
                continue
            if not _where_fits(node, src):
                continue  # torch.where would change the dtype or the layout: no spelling avoids the clone
            # the clone is of the input broadcast to the result's shape
            violation = OutOfPlaceOnTemporary(op=op, inplace=twin, source=src.name,
                                              copied=bytes_value(node.tensor.nbytes), fix="where", kept_because=kept)
            yield Hit(node, violation, bytes=node.tensor.nbytes, backward_bytes=0)


def _where_fits(node: CanonNode, src: CanonNode) -> bool:
    """`torch.where(mask, value, t)` gives what `t.masked_fill(mask, value)` gives: the same dtype (a floating `t`,
    and a Python number or a 0-d tensor of `t`'s dtype as the value: `where` promotes where `masked_fill` keeps `t`'s
    dtype) and a contiguous result, as `masked_fill`'s clone is (`t` contiguous, or a mask of the result's shape:
    `where` lays its result out from its operands)."""
    t, out = src.tensor, node.tensor
    if t is None or out is None or not t.dtype.is_floating_point:
        return False
    args = list(node.args.get("args") or [])
    kwargs = node.args.get("kwargs") or {}
    mask = kwargs.get("mask", args[1] if len(args) > 1 else None)
    value = kwargs.get("value", args[2] if len(args) > 2 else None)
    if isinstance(value, CanonNode):
        if value.tensor is None or value.tensor.ndim != 0 or value.tensor.dtype != t.dtype:
            return False
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    full_mask = isinstance(mask, CanonNode) and mask.tensor is not None and tuple(mask.tensor.shape) == tuple(out.shape)
    return t.is_contiguous() is True or full_mask


def _kept_because(view: GraphView, node: CanonNode, src: CanonNode) -> str | None:
    """Why ``src`` cannot be written in place at ``node`` (None: it can)."""
    assert src.tensor is not None and node.tensor is not None
    base = _private_base(src)
    if base is None:
        return "it shares memory with a tensor read elsewhere: a slice, a transpose or a view of it"
    if base.kind != "op":
        return "it is an input of the graph: the caller's tensor, a parameter or a buffer"
    if base.is_view or base.aliases or base.mutates:
        return "it shares memory with another tensor"
    if not _read_only_before(src, node):
        return "it is read again later"
    if escapes(base, view):
        return "it is returned"
    if src.tensor.requires_grad and node.grad_enabled and not _autograd_allows(src, base, node):
        return "autograd keeps it for the backward, or would rebuild the tensor it views"
    if tuple(src.tensor.shape) != tuple(node.tensor.shape):
        return "the mask broadcasts it to a larger shape"
    return None


def _read_only_before(t: CanonNode, reader: CanonNode) -> bool:
    """Every other reader of ``t`` runs before ``reader`` and leaves nothing that shares ``t``'s memory (x-transformers
    keeps ``qk_similarities = sim.clone()`` before ``sim = sim.masked_fill(...)``): writing ``t`` in place at
    ``reader`` changes nothing anyone reads later."""
    for u in real_users(t):
        if u.node is reader.node or _reads_metadata(u, t):
            continue
        if u.position > reader.position or u.is_view or u.is_maybe_view or t in u.aliases or t in u.mutates:
            return False
    return True


def _reads_metadata(u: CanonNode, t: CanonNode) -> bool:
    """``u`` reads only ``t``'s dtype, device or shape (``x.type_as(t)``, ``t.size(1)``, ``t.new_zeros(...)``)."""
    if u.op in _METADATA_READS:
        return True
    return u.op == "to" and u.input is not t  # ``x.type_as(t)``: t gives the dtype


def _autograd_allows(src: CanonNode, base: CanonNode, reader: CanonNode) -> bool:
    """In training: can ``base`` be written in place at ``reader`` without failing or costing the backward more?
    The write must land on ``base`` itself (through no-op conversions only, which return the same tensor: a view
    of a tensor that requires grad is rebuilt by ``CopySlices``), ``base``'s op must not keep its result for its
    backward, and no earlier reader may have kept ``base`` (one that requires no grad keeps nothing)."""
    if any(n.op not in ("to", "contiguous") for n in src.view_chain(aliasing=True)[:-1]):
        return False
    if base.op not in _RESULT_NOT_SAVED:
        return False
    for u in real_users(base):
        if u.node is reader.node or _reads_metadata(u, base) or u.op in _KEEP_NOTHING:
            continue
        if u.tensor is not None and not (u.tensor.requires_grad and u.grad_enabled):
            continue  # a comparison, an argmax: no autograd node, nothing kept
        if u in src.view_chain(aliasing=True):
            continue  # the no-op conversion the write goes through
        return False
    return True


def _private_base(src: CanonNode) -> CanonNode | None:
    """The tensor whose memory ``src`` is: ``src`` itself, or the base of a chain of views each read only
    by the next (``(a + b).view(...)``: writing the view in place writes a temporary nobody else reads).
    None when a view's base is read by something else too."""
    chain = src.view_chain(aliasing=True)  # a `.float()` of a float32 tensor (`reshape`, `contiguous`) is its input
    if chain[-1].is_view:
        return None  # a view of nothing the graph shows
    for view, base in itertools.pairwise(chain):
        t = view.tensor
        if t is None or t.is_contiguous() is not True:
            # out-of-place masked_fill returns a contiguous clone, the in-place one keeps the view's
            # strides: a transposed or expanded view would change what later ops see (or can view)
            return None
        if not _read_only_before(base, view):
            return None
        if base.tensor is None or base.tensor.numel != t.numel:
            return None  # a part of the base (a slice): the result would keep the whole base alive
    return chain[-1]

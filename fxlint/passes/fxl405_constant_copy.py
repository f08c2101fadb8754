"""A copy whose value depends only on the weights, buffers, constants and the input's shape, recomputed every call.

## What it does
Finds a copy that produces the same tensor every call, because everything it
is computed from is fixed: constants, buffers, deterministic factories
(`arange`, `zeros`, `x.new_zeros(shape)`), the input's *shape* (never its
data), and, in inference (`eval()` or `torch.no_grad()`), parameters. The
copies are:

* `.clone()` and `.repeat(...)` of such a value: Swin V2's
  `qkv_bias = torch.cat((q_bias, zeros, v_bias)).clone()`, built from two
  parameters every call (a repeat that FXL104 or FXL112 reports is left to
  them: better removed than cached; a copy that is returned, or written from
  the input afterwards, protects something and is not reported);
* subscript writes `t[a:b, c:d] = v` and `t[...].copy_(v)` into a tensor
  built that way: Swin's shifted-window mask,
  `attn_mask = x.new_zeros((H, W)); attn_mask[h0:h1, w0:w1] = count`, a
  function of the feature map's size only.

The value is reported once per source line (an unrolled loop of writes is one
finding), at info level, with the bytes it copies per call. In training only
values that do not depend on parameters are reported (the weights change
every step). Gathers from a weight table with fixed indices are FXL404's.

A scalar written through a mask or an index tensor (`t[t == 2] = finfo.max`)
is not reported: `index_put_` broadcasts the one value into the selected
elements, a masked fill that copies nothing (the audit agrees); a tensor
scattered that way copies its values, and those are the bytes reported.

Anything that reads an input's data is not fixed: an index or a scalar from
the input (`.item()`), a value written in place from it, random numbers.

## Why is this bad?
Each call allocates the tensor and copies into it to rebuild a value that was
the same last call: the bytes (and the dispatch of every small write, nine
for the Swin mask) are spent for nothing once the weights are loaded.

## Example
```python
attn_mask = x.new_zeros((pad_H, pad_W))
for h in h_slices:
    for w in w_slices:
        attn_mask[h[0]:h[1], w[0]:w[1]] = count  # 9 writes every call
```

## Use instead
```python
# computed once per size and kept (a dict on the module, or a non-persistent buffer):
key = (pad_H, pad_W)
if key not in self._masks:
    self._masks[key] = build_mask(pad_H, pad_W, device=x.device)
attn_mask = self._masks[key]
```
For a value built from parameters, compute it once after loading weights,
in `eval()` (a non-persistent buffer, recomputed when the model goes back to
training).

`torch.compile` does not remove the work: with Inductor (torch 2.13, CPU),
`torch._inductor.config.freezing = True` under `torch.no_grad()` included,
the Swin bias and mask are still rebuilt every call, fused into one kernel
instead of several copies (measured on this rule's fixture by
`bench/fxl405_freezing.py`: freezing turns the parameters into constants but
does not fold the values computed from them or from the shape). Caching the
value is the fix.

## When it is intentional
Training with weights that change every step, or online fine-tuning: keep the
copy. Silence a line with `# fxlint: ignore[FXL405]`.

Graphs are captured with static shapes by default: a size read from the input
(`H = x.shape[1]`; `t.repeat(H, 1)`) is a number in the graph, and `depends`
says `shape` only where the input tensor itself is read (`x.new_zeros(...)`,
or `x.shape` under dynamic shapes). The fix therefore says to key the cache on
the input's size whenever the code reads one.

`details` (the fields of `ConstantCopy`): `op` (`clone`, `repeat` or
`subscript write`), `target` (the tensor copied or written into), `depends`
(what the value depends on: `weights`, `buffers`, `shape`; empty for
constants only), `writes` (copies on the line per call), `copied` (bytes per
call).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..canon import CanonNode, GraphView, IndexSpec
from ..canon.alias import escapes, view_base
from ..canon.text import bytes_text, bytes_value, operand_name
from ..findings import Severity, Violation
from ..registry import Hit, RuleContext, rule
from ..tensor.info import Dim
from ._constant import Deps, Fixed, depends_text
from ._sites import numbered, sites, source_key

#: ops that return a fresh copy of their input (the audit's ``aten::clone``/``aten::repeat``)
_COPIES = ("clone", "repeat")
#: in-place writes that copy their value into the target (``__setitem__ > aten::copy_``); ``fill_``
#: and ``zero_`` are fills, not copies
_WRITES = ("setitem", "copy_")
_GRAPH_INPUTS = ("input", "parameter", "buffer", "constant")


@dataclass(frozen=True)
class ConstantCopy(Violation):
    """A copy whose value is the same every call (fixed inputs)."""

    op: str
    target: str
    depends: tuple[str, ...]
    writes: int
    copied: int | str | None

    def message(self) -> str:
        source = depends_text(frozenset(self.depends))
        if self.op == "subscript write":
            what = f"{self.writes} subscript writes" if self.writes > 1 else "a subscript write"
            verb = "copy" if self.writes > 1 else "copies"
            return (f"{what} into `{self.target}` {verb} {bytes_text(self.copied)} per call, building a value "
                    f"computed only from {source}: it is the same every call")
        return (f"`{self.target}.{self.op}()` copies {bytes_text(self.copied)} per call of a value computed only "
                f"from {source}: it is the same every call")

    def fix_title(self) -> str:
        how = ("e.g. in a dict keyed on the input's shape" if "shape" in self.depends
               else "e.g. a non-persistent buffer, keyed on the input's size if the code that builds it reads one")
        return (f"compute it once and keep it ({how}); Inductor fuses it but, with freezing too, still rebuilds "
                "it every call")


@rule("FXL405", "constant-copy", "info", violation=ConstantCopy)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    # parameters are fixed only in inference; buffers, constants and shapes in both modes
    return iter(numbered(_hits(view, Fixed(view, weights=not ctx.training))))


def _hits(view: GraphView, fixed: Fixed) -> Iterator[Hit]:
    for node in view.ops(*_COPIES):
        src = node.input
        if src is None or node.tensor is None:
            continue
        if escapes(node, view):
            continue  # a copy handed to the caller protects the source from the caller's writes
        deps = fixed.deps(node)  # the copy as made and every write into it afterwards
        if deps is None:
            continue  # reads the input's data (or random numbers), or is then written from it
        violation = ConstantCopy(op=node.op, target=operand_name(src), depends=_sorted(deps), writes=1,
                                 copied=bytes_value(node.tensor.nbytes))
        yield Hit(node, violation, bytes=node.tensor.nbytes, backward_bytes=0, severity=Severity.INFO)
    found: list[tuple[CanonNode, Dim | None, tuple]] = []
    deps_of: dict[CanonNode, Deps] = {}
    for node in view.writers:
        if node.op not in _WRITES or not node.mutates:
            continue
        if _masked_fill(node):
            continue  # one value written where an index selects: a fill, no bytes copied from anywhere
        base = view_base(node.mutates[0])
        if base.kind in _GRAPH_INPUTS:
            continue  # a write into the caller's state (a cache, a buffer): not a value rebuilt here
        deps = fixed.deps(base)  # the base as built and every write into it
        if deps is None:
            continue
        found.append((node, _written_bytes(node), source_key(node)))
        deps_of[node] = deps
    for site in sites(found, view):
        deps = frozenset().union(*(deps_of[n] for n in site.nodes))
        target = view_base(site.node.mutates[0])
        violation = ConstantCopy(op="subscript write", target=_variable(target), depends=_sorted(deps),
                                 writes=site.count, copied=bytes_value(site.nbytes))
        yield Hit(site.node, violation, bytes=site.nbytes, copy_sizes=site.copy_sizes, backward_bytes=0,
                  severity=Severity.INFO)


def _variable(node: CanonNode) -> str:
    """The variable a fresh tensor was assigned to: the node name without the ``_5`` FX adds to the
    sixth ``attn_mask`` of an unrolled model (one message for every block, grouped as one)."""
    return re.sub(r"_\d+$", "", operand_name(node)) if node.kind == "op" else operand_name(node)


def _sorted(deps: Deps) -> tuple[str, ...]:
    return tuple(k for k in ("weights", "buffers", "shape") if k in deps)


def _written_bytes(node: CanonNode) -> Dim | None:
    """The bytes one write copies: the region ``t[index]`` of a setitem, the target of a ``copy_``."""
    target = node.mutates[0]
    t = target.tensor
    if t is None:
        return None
    if node.op != "setitem":
        return t.nbytes
    index = node.args.get("index")
    if isinstance(index, IndexSpec) and index.is_advanced:
        value = node.args.get("value")
        v = value.tensor if isinstance(value, CanonNode) else None
        return v.nbytes if v is not None else None  # a scatter copies its values (``index_put_``)
    region = index.region_shape(t.shape) if isinstance(index, IndexSpec) else None
    if region is None:
        return None  # an advanced index or a dynamic bound: the region is not known here
    n = 1
    for d in region:
        n *= d
    return n * t.dtype.itemsize


def _masked_fill(node: CanonNode) -> bool:
    """``t[mask] = 3.0`` (or an index tensor, or a one-element tensor written): ATen's ``index_put_``
    broadcasts the one value into the selected elements, a masked fill (what ``fill_`` is to a
    slice). A basic-slice write of a scalar runs ``fill_ > copy_`` over the region, a copy the audit
    counts, and stays reported."""
    index = node.args.get("index")
    if node.op != "setitem" or not isinstance(index, IndexSpec) or not index.is_advanced:
        return False
    value = node.args.get("value")
    if not isinstance(value, CanonNode):
        return True  # a Python scalar
    v = value.tensor
    return v is not None and all(isinstance(d, int) for d in v.shape) and v.numel == 1

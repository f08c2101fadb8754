"""When is an advanced index exactly a basic slice? Shared by FXL401 and its rewrite.

``basic_equivalent(view, node)`` takes a canonical ``index`` node (getitem
with lists/tuples/ranges/index tensors, ``index_select``, ``aten.index``)
and returns the basic indexing expression (slices, ints, ``None``) that
selects the same elements in the same result layout, or None.

The rules, following PyTorch's advanced-indexing semantics:

* every index must be a compile-time constant of integers (a literal list,
  tuple or range, a constant tensor, a constant ``arange``/``tensor``);
  negative indices are wrapped, out-of-range ones give up (the program raises);
* the index shapes broadcast to a shape ``B`` that replaces the indexed dims.
  Each axis of ``B`` longer than one must be walked by exactly one index, as
  a strictly increasing arithmetic progression (a slice ``start:stop:step``);
  an index that is constant along every axis selects one element (an int, or
  a one-element slice where ``B`` keeps a size-1 axis for it);
* the dims of ``B`` must land where the slice would keep them: PyTorch puts
  them in place of adjacent indexed dims, or in front when the indexed dims
  are separated, and a basic slice keeps every dim in place.

So ``x[[1], [0, 2, 4]]`` is ``x[1, 0:5:2]`` and ``x[[[0], [1]], [0, 2]]`` is
``x[0:2, 0:3:2]``, while ``x[[0, 1], [2, 3]]`` (element pairs) is a gather.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import torch

from ..canon import CanonNode, GraphView, IndexItem, IndexSpec
from ..canon.text import slice_text  # the one slice rendering (kept in this module's API)
from ..tensor.info import TensorInfo
from ..tensor.symbolic import known, maybe_eq


def progression(values: Sequence[int], size: int | None) -> tuple[int, int, int] | None:
    """(start, stop, step) of the basic slice that selects exactly ``values``
    along a dim of ``size``, or None. Negative indices are wrapped; the
    progression must be strictly increasing (PyTorch slices have step > 0)."""
    if not values:
        return None
    vals = list(values)
    if any(v < 0 for v in vals):
        if size is None:
            return None
        vals = [v + size if v < 0 else v for v in vals]
    if size is not None and any(v < 0 or v >= size for v in vals):
        return None  # out of range: the program raises; not our business
    if len(vals) == 1:
        return vals[0], vals[0] + 1, 1
    step = vals[1] - vals[0]
    if step <= 0 or any(b - a != step for a, b in pairwise(vals)):
        return None
    return vals[0], vals[-1] + 1, step


@dataclass(frozen=True)
class Replacement:
    """What one advanced item of the spec becomes: a slice, or an int (the dim is dropped)."""

    dim: int
    start: int
    stop: int | None = None  # None: to the end of the dim
    step: int = 1
    size: int | None = None  # size of the indexed dim, when known
    is_int: bool = False  # an int index: ``start`` is the element

    @property
    def end(self) -> int | None:
        """The stop to emit: None when the slice runs to the end anyway (no bound to check)."""
        if self.stop is not None and self.size is not None and self.stop - 1 + self.step >= self.size:
            return None
        return self.stop

    @property
    def text(self) -> str:
        """The basic index that replaces it: ``5``, ``::2``, ``1:6:2``."""
        return str(self.start) if self.is_int else slice_text(self.start, self.stop, self.step, self.size)

    @property
    def values_text(self) -> str:
        """The indices it selects, for messages: ``[0, 2, 4, 6, ..., 62]``."""
        if self.is_int:
            return f"[{self.start}]"
        if self.stop is None:
            return f"arange({self.start}, <size of dim {self.dim}>, {self.step})"
        vals = list(range(self.start, self.stop, self.step))
        if len(vals) > 6:
            return "[" + ", ".join(map(str, vals[:4])) + f", ..., {vals[-1]}]"
        return str(vals)


@dataclass(frozen=True)
class BasicIndex:
    """The basic indexing equivalent of an advanced index."""

    spec: IndexSpec
    replace: dict[int, Replacement]  # item position in spec.items -> replacement

    @property
    def text(self) -> str:
        """The subscript, e.g. ``[:, ::2]``."""
        return self.spec.render({pos: r.text for pos, r in self.replace.items()})

    def shown(self, pos: int) -> str:
        """The advanced index at ``pos`` as the user wrote it when that is a short list, else its values."""
        spelled = self.spec.items[pos].spelled
        if spelled and len(spelled) <= 40 and spelled.startswith("["):
            return spelled
        return self.replace[pos].values_text

    @property
    def items(self) -> list[tuple[str, Any]]:
        """Per spec item: ("slice", (start, stop, step)), ("int", value) or ("newaxis", None).

        Untouched slice and int items keep their original (possibly symbolic) bounds.
        """
        out: list[tuple[str, Any]] = []
        for pos, it in enumerate(self.spec.items):
            r = self.replace.get(pos)
            if r is not None:
                out.append(("int", r.start) if r.is_int else ("slice", (r.start, r.end, r.step)))
            elif it.kind == "slice":
                out.append(("slice", (it.start, it.stop, it.step)))
            elif it.kind == "int":
                out.append(("int", it.value))
            else:
                out.append(("newaxis", None))
        return out


def _item_values(view: GraphView, item: IndexItem) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(flat values, index shape) of a constant integer index, or None."""
    values = item.values if item.values is not None else (
        view.const_ints(item.index) if item.index is not None else None
    )
    if values is None:
        return None
    shape = item.index_shape
    if shape is None:
        shape = (len(values),)
    dims: list[int] = []
    n = 1
    for d in shape:
        k = known(d)
        if k is None:
            return None
        dims.append(k)
        n *= k
    if n != len(values) or n == 0:
        return None
    return tuple(values), tuple(dims)


def _arange_to_end(view: GraphView, item: IndexItem, shape: tuple) -> Replacement | None:
    """``x[:, torch.arange(a, x.size(1), k)]`` under dynamic shapes: the stop is the dim's own
    (symbolic) size, so the index is ``a::k`` at every size, though its values are not constants."""
    idx = item.index
    if idx is None or idx.op != "factory" or idx.args.get("kind") != "arange" or item.dim is None:
        return None
    pos = list(idx.args.get("args", []))
    if len(pos) == 1:
        pos = [0, pos[0], 1]
    elif len(pos) == 2:
        pos = [pos[0], pos[1], 1]
    if len(pos) != 3:
        return None
    start, stop, step = pos
    if not (isinstance(start, int) and isinstance(step, int)) or start < 0 or step <= 0:
        return None
    stop_dim = stop.value if isinstance(stop, CanonNode) else stop
    if stop_dim is None or isinstance(stop_dim, int) or isinstance(stop_dim, TensorInfo):
        return None  # a constant stop is a constant index: the general path handles it
    if maybe_eq(stop_dim, shape[item.dim]) is not True:
        return None
    return Replacement(item.dim, start, None, step, known(shape[item.dim]))


def basic_equivalent(view: GraphView, node: CanonNode) -> BasicIndex | None:
    """The basic index selecting what the advanced ``index`` node selects, or None (see module doc)."""
    if node.op != "index":
        return None
    spec: IndexSpec | None = node.args.get("index")
    base = node.input
    if spec is None or base is None or base.tensor is None:
        return None
    adv_pos = [p for p, it in enumerate(spec.items) if it.kind in ("tensor", "mask")]
    if not adv_pos or any(spec.items[p].kind != "tensor" or spec.items[p].dim is None for p in adv_pos):
        return None  # masks are FXL403
    if len(adv_pos) > 1 and any(spec.items[p].kind == "int" for p in range(adv_pos[0], adv_pos[-1])):
        return None  # an int between tensors: PyTorch and NumPy disagree; leave it alone
    shape = base.tensor.shape

    if len(adv_pos) == 1:
        to_end = _arange_to_end(view, spec.items[adv_pos[0]], shape)
        if to_end is not None:
            return BasicIndex(spec, {adv_pos[0]: to_end})

    # values of each index, reshaped to its shape; negative indices wrapped
    consts: dict[int, torch.Tensor] = {}
    for p in adv_pos:
        item = spec.items[p]
        dim = item.dim
        assert dim is not None  # adv_pos holds only items with a dim
        got = _item_values(view, item)
        if got is None:
            return None
        values, ishape = got
        size = known(shape[dim]) if dim < len(shape) else None
        if any(v < 0 for v in values):
            if size is None:
                return None
            values = tuple(v + size if v < 0 else v for v in values)
        if size is not None and any(v < 0 or v >= size for v in values):
            return None
        consts[p] = torch.tensor(values, dtype=torch.long).reshape(ishape)
    try:
        bshape = tuple(torch.broadcast_shapes(*(t.shape for t in consts.values())))
    except RuntimeError:
        return None

    # which index walks which axis of the broadcast shape
    walker: dict[int, int] = {}  # axis -> item position
    replace: dict[int, Replacement] = {}
    for p, t in consts.items():
        aligned = (1,) * (len(bshape) - t.dim()) + tuple(t.shape)
        varying = [a for a, n in enumerate(aligned) if n > 1]
        item = spec.items[p]
        dim = item.dim
        assert dim is not None  # adv_pos holds only items with a dim
        size = known(shape[dim])
        if len(varying) > 1:
            return None  # walks two axes: a 2-D gather
        if not varying:
            replace[p] = Replacement(dim, int(t.reshape(-1)[0]), size=size, is_int=True)
            continue
        a = varying[0]
        if a in walker:
            return None  # two indices walk one axis together: element pairs
        prog = progression(t.reshape(-1).tolist(), size)
        if prog is None:
            return None
        walker[a] = p
        replace[p] = Replacement(dim, prog[0], prog[1], prog[2], size)

    # size-1 axes of B are kept by a one-element slice of a constant index, in dim order
    owner: list[int] = []
    last = -1
    for a, n in enumerate(bshape):
        if n > 1:
            p = walker[a]
        else:
            nxt = next((walker[b] for b in range(a + 1, len(bshape)) if b in walker), None)
            p = next((q for q in adv_pos if q > last and (nxt is None or q < nxt)
                      and replace[q].is_int and q not in owner), -1)
            if p < 0:
                return None
            r = replace[p]
            replace[p] = Replacement(r.dim, r.start, r.start + 1, 1, r.size)
        if p <= last:
            return None  # the slice would keep these dims in another order
        owner.append(p)
        last = p

    # result dims: advanced indexing puts B in place of adjacent indexed dims, else in front
    adjacent = adv_pos == list(range(adv_pos[0], adv_pos[-1] + 1))
    rest = [("d", p) for p, it in enumerate(spec.items) if it.kind in ("slice", "newaxis")]
    b_axes = [("b", a) for a in range(len(bshape))]
    if adjacent:
        at = sum(1 for p, it in enumerate(spec.items) if it.kind in ("slice", "newaxis") and p < adv_pos[0])
        advanced_order = rest[:at] + b_axes + rest[at:]
    else:
        advanced_order = b_axes + rest
    basic_order = []
    for p, it in enumerate(spec.items):
        if it.kind in ("slice", "newaxis"):
            basic_order.append(("d", p))
        elif p in owner:
            basic_order.append(("b", owner.index(p)))
    if advanced_order != basic_order:
        return None
    return BasicIndex(spec, replace)


__all__ = ["BasicIndex", "Replacement", "basic_equivalent", "progression", "slice_text"]

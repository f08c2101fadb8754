"""Grouping copies per source line: an unrolled loop makes several nodes on one line, and the cost
per call is their sum; and the structural key of "the same data in the same layout" (kept private to
the passes package)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass

from ..canon import CanonNode, GraphView
from ..canon.alias import is_mutated, view_family
from ..registry import Hit
from ..tensor import symbolic
from ..tensor.symbolic import Dim


def source_key(node: CanonNode | None) -> tuple:
    """A structural key for "the same data in the same layout": the base tensor and the view ops
    applied to it. Two copies with the same key (an unrolled loop) copy the same bytes twice."""
    if node is None:
        return (("base", None),)
    *views, base = node.view_chain()
    parts: list[tuple] = [(v.op, _args_key(v)) for v in views]
    parts.append(("base", base.name))
    return tuple(reversed(parts))


def _args_key(node: CanonNode) -> str:
    if node.op == "permute":
        return str(node.args.get("dims"))
    if node.op == "slice":
        return node.args["index"].render()
    if node.op in ("view", "reshape", "expand"):
        return str(node.args.get("shape"))
    return repr(sorted((k, str(v)) for k, v in node.args.items() if k != "input"))


@dataclass
class LineSite:
    """The copies one rule finds on one source line (one module instance): an unrolled loop makes
    several nodes on the same line, and the cost per call is their sum."""

    nodes: list[CanonNode]
    nbytes: Dim | None
    repeats: int  # the largest number of copies of the same data in the same layout
    sizes: tuple[Dim | None, ...] = ()  # each node's bytes, in ``nodes`` order

    @property
    def copy_sizes(self) -> tuple[int, ...] | None:
        """Each copy's bytes when the site stands for several copies of known size (for ``Hit.copy_sizes``:
        the runtime confirms each copy, not their sum, which other copies on the line would blur)."""
        if len(self.sizes) < 2 or not all(isinstance(b, int) for b in self.sizes):
            return None
        return tuple(int(b) for b in self.sizes if b is not None)

    @property
    def node(self) -> CanonNode:
        return self.nodes[0]

    @property
    def count(self) -> int:
        return len(self.nodes)


def sites(items: Iterable[tuple[CanonNode, Dim | None, tuple]], view: GraphView) -> list[LineSite]:
    """Group ``(node, bytes, source key)`` per (file, line, module path); nodes without a source
    line (symbolic_trace) stay on their own."""
    groups: dict[tuple, list[tuple[CanonNode, Dim | None, tuple]]] = {}
    for node, nbytes, key in items:
        loc = node.location
        where = (loc.file, loc.line, node.module_path) if loc is not None else (None, node.name, None)
        groups.setdefault(where, []).append((node, nbytes, key))
    out = []
    for members in groups.values():
        total: Dim | None = 0
        for _, b, _ in members:
            total = None if total is None or b is None else symbolic.sum_of((total, b))
        counts: dict[tuple, int] = {}
        for _node, _, key in members:
            base = _base_of_key(key, view)
            if base is not None and not is_mutated(view_family(base), view):
                counts[key] = counts.get(key, 0) + 1
        out.append(LineSite([m[0] for m in members], total, max(counts.values(), default=1),
                            tuple(m[1] for m in members)))
    return out


def _base_of_key(key: tuple, view: GraphView) -> CanonNode | None:
    name = key[0][1] if key and key[0][0] == "base" else None
    return view.by_name.get(name) if name else None


def count_text(count: int) -> str:
    """``" (3 copies per call on this line)"``, or ``""`` for one copy."""
    if count == 1:
        return ""
    return f" ({count} copies per call on this line)"


def numbered(hits: Iterable[Hit]) -> list[Hit]:
    """The hits, every one after the first on the same line (and module) given its own ``dedup`` key,
    so the engine's de-duplication (one finding per code, line, module and dedup key, across graphs
    and recompiles) keeps two copies written on one line, e.g. ``a.repeat(2, 1) + b.repeat(2, 1)``.
    A hit that has a key keeps it; the hits given are not changed (numbered ones are copies)."""
    out = []
    seen: dict[tuple, int] = {}
    for h in hits:
        n = h.node
        loc = h.location or (n.location if n is not None else None)
        key = (loc.file, loc.line, n.module_path if n is not None else None) if loc is not None else (id(h),)
        k = seen.get(key, 0)
        seen[key] = k + 1
        if k and not h.dedup:
            h = copy.copy(h)
            h.dedup = str(k)
        out.append(h)
    return out


__all__ = ["LineSite", "count_text", "numbered", "sites", "source_key"]

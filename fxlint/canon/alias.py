"""Alias and mutation analysis over the canonical view: which nodes share memory, who writes into it.

Two questions, two answers, both read from what ``fxlint.canon`` records on each node:

* **Definitely shares storage** (``view_base``, ``view_family``): a node and the
  view ops (``VIEW_OPS``: permute, slice, expand, view, detach...) above and
  below it. A rule that calls a copy redundant must know what *is* the same
  memory, not what might be: ``x.reshape(...)`` may or may not copy, so it is
  not in the family.
* **May share memory** (``Aliasing``): every ``CanonNode.aliases`` edge (views,
  ops that may return their input - ``reshape``, ``contiguous``, ``to``,
  eval-mode dropout, an unknown module -, in-place results), closed
  transitively. A rewrite that turns a copy into a view must assume the worst.

Writes: ``CanonNode.mutates`` lists what a node writes in place (in-place ops,
``copy_``, setitem, ``out=``); ``GraphView.writers`` the nodes that write,
in graph order. ``writes_after`` / ``mutated_after`` / ``is_mutated`` scan
those, not every node.

``escapes`` says whether a value (or a view of it) leaves the graph;
``may_require_grad`` whether a value could require grad.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from . import CanonNode, GraphView

#: node kinds whose memory belongs to the caller (graph inputs, parameters, buffers, constants)
GRAPH_INPUTS = ("input", "parameter", "buffer", "constant")


# --------------------------------------------------------------------------- definitely shared (view ops)


def view_base(node: CanonNode) -> CanonNode:
    """The tensor ``node`` is a view of (through view ops); ``node`` itself when it is not a view."""
    return node.view_chain()[-1]


def view_family(node: CanonNode) -> set[CanonNode]:
    """``node``'s base and every view of that base reachable downstream: the nodes that certainly
    share ``node``'s storage (``node`` included)."""
    base = view_base(node)
    seen = {base}
    stack = [base]
    while stack:
        cur = stack.pop()
        for u in cur.users:
            if u.is_view and u.input is cur and u not in seen:
                seen.add(u)
                stack.append(u)
    return seen


def escapes(node: CanonNode, view: GraphView) -> bool:
    """True when ``node`` or a view of it (or of its base) is a graph output: the caller, or code
    after a graph break, gets that memory."""
    return bool(view_family(node) & set(view.outputs))


# --------------------------------------------------------------------------- writes


def writes_after(nodes: Iterable[CanonNode], after: CanonNode,
                 view: GraphView) -> Iterator[tuple[CanonNode, CanonNode]]:
    """``(writer, target)`` for every in-place write into one of ``nodes`` by a node after ``after``,
    in graph order."""
    targets = nodes if isinstance(nodes, (set, frozenset)) else set(nodes)
    for n in view.writers:
        if n.position > after.position:
            for m in n.mutates:
                if m in targets:
                    yield n, m


def mutated_after(nodes: set[CanonNode], after: CanonNode, view: GraphView) -> list[CanonNode]:
    """Nodes after ``after`` (in graph order) that write in place into any of ``nodes``."""
    return [n for n in view.writers if n.position > after.position and any(m in nodes for m in n.mutates)]


def is_mutated(nodes: set[CanonNode], view: GraphView) -> bool:
    """Does any node of the graph write in place into one of ``nodes``?"""
    return any(any(m in nodes for m in n.mutates) for n in view.writers)


# --------------------------------------------------------------------------- may share memory


class Aliasing:
    """Which nodes may share memory: the union of every ``CanonNode.aliases`` edge of ``view``."""

    def __init__(self, view: GraphView) -> None:
        self.view = view
        self._parent: dict[CanonNode, CanonNode] = {}
        for n in view.nodes:
            for a in n.aliases:
                self._union(n, a)

    def _find(self, n: CanonNode) -> CanonNode:
        root = n
        while self._parent.get(root, root) is not root:
            root = self._parent[root]
        while self._parent.get(n, n) is not root:  # path compression
            self._parent[n], n = root, self._parent[n]
        return root

    def _union(self, a: CanonNode, b: CanonNode) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra is not rb:
            self._parent[ra] = rb

    def shares_memory(self, a: CanonNode, b: CanonNode) -> bool:
        """May ``a`` and ``b`` share memory?"""
        return self._find(a) is self._find(b)

    def group(self, n: CanonNode) -> list[CanonNode]:
        """The nodes that may share memory with ``n`` (``n`` included), in graph order."""
        root = self._find(n)
        return [m for m in self.view.nodes if self._find(m) is root]


def may_require_grad(view: GraphView, n: CanonNode, _memo: dict | None = None) -> bool:
    """Could ``n``'s value require grad? Autograd's own flag where the view knows it (Dynamo's
    fake values); else from the graph: a graph input or parameter that requires grad (any input
    of an exported program), an op run with autograd on over such a value, or a view of one
    (a view made under ``no_grad`` still requires grad through its base)."""
    memo: dict[CanonNode, bool] = {} if _memo is None else _memo
    if n in memo:
        return memo[n]
    memo[n] = True  # conservative while a cycle is open (there are none in a DAG)
    t = n.tensor
    if t is not None and not (t.dtype.is_floating_point or t.dtype.is_complex):
        out = False
    elif view.requires_grad_known and t is not None:
        out = t.requires_grad
    elif n.kind in GRAPH_INPUTS:
        # exported programs do not record requires_grad on their inputs: assume it
        out = (t is not None and t.requires_grad) or (view.origin == "export" and n.kind in ("input", "parameter"))
    elif n.grad_enabled:
        out = any(may_require_grad(view, i, memo) for i in n.tensor_inputs)
    else:
        out = any(may_require_grad(view, a, memo) for a in n.aliases)
    memo[n] = out
    return out


__all__ = [
    "GRAPH_INPUTS",
    "Aliasing",
    "escapes",
    "is_mutated",
    "may_require_grad",
    "mutated_after",
    "view_base",
    "view_family",
    "writes_after",
]

"""Alias and mutation analysis: may a copy become a view?

A copy (a gather, ``repeat``, ``contiguous``) gives its result memory of its
own. A view shares the memory of its base. Swapping one for the other is
invisible to the program only when nobody can tell:

* nothing writes in place, after the op, into the result or into any tensor
  sharing memory with it (its views), nor into the base or anything sharing
  memory with the base (in-place ops, ``copy_``, setitem, ``out=``): a write
  into either would now show through the other;
* the result (or a view of it) is not returned while the base's memory also
  belongs to a graph input, parameter or buffer, or to another output: the
  caller would get an output that aliases an input or another output where
  it used to own fresh memory;
* the copy does not run with autograd off (``no_grad``) on a tensor that
  requires grad: such a copy is a fresh tensor that does not require grad,
  but a view made under ``no_grad`` still requires grad through its base, so
  later ops (run with autograd back on) would send gradients where none went.

Memory sharing is read from the canonical view (``CanonNode.aliases``: views,
in-place results, ops that may hand back their input) and closed
transitively, conservatively: an op that *may* return its input counts.
"""

from __future__ import annotations

from ..canon import CanonNode, GraphView
from ..passes._util import operand_name

_GRAPH_INPUTS = ("input", "parameter", "buffer", "constant")


class Aliasing:
    """Which nodes may share memory (union of every ``aliases`` edge)."""

    def __init__(self, view: GraphView) -> None:
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

    def group(self, view: GraphView, n: CanonNode) -> list[CanonNode]:
        root = self._find(n)
        return [m for m in view.nodes if self._find(m) is root]


def _where(n: CanonNode) -> str:
    if n.location is not None:
        return f"line {n.location.line}"
    return f"node {n.name}"


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
    elif n.kind in ("input", "parameter", "buffer", "constant"):
        # exported programs do not record requires_grad on their inputs: assume it
        out = (t is not None and t.requires_grad) or (view.origin == "export" and n.kind in ("input", "parameter"))
    elif n.grad_enabled:
        out = any(may_require_grad(view, i, memo) for i in n.tensor_inputs)
    else:
        out = any(may_require_grad(view, a, memo) for a in n.aliases)
    memo[n] = out
    return out


def view_hazard(view: GraphView, node: CanonNode, base: CanonNode) -> str | None:
    """Why ``node`` (a copy of ``base``) must not become a view of ``base``; None when it may."""
    if not node.grad_enabled and may_require_grad(view, base):
            return (f"it runs with autograd off (`no_grad`), where the copy does not require grad; "
                    f"a view of `{operand_name(base)}` would still require grad through it")
    aliasing = Aliasing(view)
    result = aliasing.group(view, node)
    source = aliasing.group(view, base)
    in_result, in_source = set(result), set(source)
    for m in view.nodes[node.position + 1:]:
        for target in m.mutates:
            if target in in_result:
                return (f"the result is written in place afterwards ({m.spelling} at {_where(m)}); "
                        "as a view it would write into the indexed tensor too")
            if target in in_source:
                return (f"the indexed tensor is written in place afterwards ({m.spelling} at {_where(m)}); "
                        "a view would see the change where the copy does not")
    outputs = set(view.outputs)
    if outputs & in_result:
        inputs = [m for m in source if m.kind in _GRAPH_INPUTS]
        if inputs:
            return (f"the result is returned, and as a view it would alias the graph input "
                    f"`{operand_name(inputs[0])}`")
        others = [m for m in source if m in outputs and m not in in_result]
        if others:
            return f"the result is returned, and as a view it would alias the output `{operand_name(others[0])}`"
    return None

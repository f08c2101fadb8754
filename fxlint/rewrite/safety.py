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

Memory sharing and writes come from the one alias analysis, ``fxlint.canon.alias``
(``Aliasing``: every ``CanonNode.aliases`` edge - views, in-place results, ops
that may hand back their input - closed transitively, conservatively: an op
that *may* return its input counts).
"""

from __future__ import annotations

from ..canon import CanonNode, GraphView
from ..canon.alias import GRAPH_INPUTS, Aliasing, may_require_grad, writes_after
from ..canon.text import line_of, operand_name

# re-exported: rewrites imported them from here before fxlint.canon.alias held them
__all__ = ["Aliasing", "may_require_grad", "view_hazard"]


def view_hazard(view: GraphView, node: CanonNode, base: CanonNode) -> str | None:
    """Why ``node`` (a copy of ``base``) must not become a view of ``base``; None when it may."""
    if not node.grad_enabled and may_require_grad(view, base):
        return (f"it runs with autograd off (`no_grad`), where the copy does not require grad; "
                f"a view of `{operand_name(base)}` would still require grad through it")
    aliasing = Aliasing(view)
    result = aliasing.group(node)
    source = aliasing.group(base)
    in_result, in_source = set(result), set(source)
    for m, target in writes_after(in_result | in_source, node, view):
        if target in in_result:
            return (f"the result is written in place afterwards ({m.spelling} at {line_of(m)}); "
                    "as a view it would write into the indexed tensor too")
        return (f"the indexed tensor is written in place afterwards ({m.spelling} at {line_of(m)}); "
                "a view would see the change where the copy does not")
    outputs = set(view.outputs)
    if outputs & in_result:
        inputs = [m for m in source if m.kind in GRAPH_INPUTS]
        if inputs:
            return (f"the result is returned, and as a view it would alias the graph input "
                    f"`{operand_name(inputs[0])}`")
        others = [m for m in source if m in outputs and m not in in_result]
        if others:
            return f"the result is returned, and as a view it would alias the output `{operand_name(others[0])}`"
    return None

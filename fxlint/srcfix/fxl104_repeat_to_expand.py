"""FXL104 source fix: a ``repeat`` that only replicates size-1 dims -> ``expand`` (a view, no copy);
``expand(...).contiguous()`` -> the ``expand(...)``.

``x.repeat(a, b, c)`` (or ``x.repeat((a, b, c))``) with one count per dim of the result: a dim the
tensor has at size 1 (or a new leading dim) takes the count as the size, written as it was (``B``
stays ``B``: expanding a size-1 dim to ``B`` is what repeating it ``B`` times gives); any other dim
must be repeated a literal ``1`` and becomes ``-1``. ``tile`` and counts not one per dim get no edit.
Exactly one such call on the line, or no edit. Unsafe, as the rule's rewrite declares: the result is
an expanded view (stride 0), not a contiguous tensor.
"""

from __future__ import annotations

import libcst as cst

from ..findings import Finding
from ..registry import default_registry
from .base import Proposal, source_fix
from .locate import NoEdit, SourceFile, method_call


def _is_expand_contiguous(n: cst.CSTNode) -> bool:
    return (method_call(n, ("contiguous",)) and isinstance(n, cst.Call) and not n.args
            and isinstance(n.func, cst.Attribute) and method_call(n.func.value, ("expand",)))


@source_fix("FXL104")
def fix(finding: Finding, source: SourceFile) -> Proposal:
    d = finding.details
    why = default_registry().get("FXL104").fix.why
    assert finding.line is not None
    if d.get("via_contiguous"):
        node = source.unique(finding.line, _is_expand_contiguous, "`.expand(...).contiguous()` call")
        assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
        return Proposal(node, source.code(node.func.value), safe=False, why=why)
    call = str(d.get("call", ""))
    if not call.startswith(".repeat("):
        raise NoEdit(f"`{call}` is not a .repeat(...): write the .expand(...) yourself")
    node = source.unique(finding.line, lambda n: method_call(n, ("repeat",)), "`.repeat(...)` call")
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    args = list(node.args)
    if any(a.keyword is not None or a.star for a in args):
        raise NoEdit("the repeat counts are passed by keyword or unpacked")
    counts: list[cst.BaseExpression] = [a.value for a in args]
    if len(counts) == 1 and isinstance(counts[0], (cst.Tuple, cst.List)):
        seq = counts[0]
        if any(isinstance(e, cst.StarredElement) for e in seq.elements):
            raise NoEdit("the repeat counts are unpacked")
        counts = [e.value for e in seq.elements]
    source_shape = list(d.get("source_shape") or [])
    if len(counts) != len(source_shape):
        raise NoEdit(f"{len(counts)} repeat counts for a result of rank {len(source_shape)}")
    sizes = []
    for count, size in zip(counts, source_shape):
        if size == 1:
            sizes.append(source.code(count))
        elif isinstance(count, cst.Integer) and int(count.value, 0) == 1:
            sizes.append("-1")
        else:
            raise NoEdit(f"a dim of size {size} is repeated {source.code(count)} times: that tiles data")
    start, _ = source.span(node)
    name_start, _ = source.span(node.func.attr)
    after = source.text[start:name_start] + f"expand({', '.join(sizes)})"
    return Proposal(node, after, safe=False, why=why)

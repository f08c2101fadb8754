"""FXL401 source fix: a literal index list that steps evenly -> the basic slice (``x[:, [0, 2, 4, 6]]`` ->
``x[:, ::2]``).

Only one indexed dim, written as a list of integer literals equal to the progression the rule
derived (``start``/``stop``/``step``), in a subscript with as many entries as the rule's slice;
exactly one such subscript on the line, or no edit (an index built by ``range``/``torch.arange`` is
left to the graph rewrite's suggested edit in ``fxlint fix``). Unsafe, as the rule declares: the
result becomes a strided view of the indexed tensor.
"""

from __future__ import annotations

import libcst as cst

from ..findings import Finding
from ..registry import default_registry
from .base import Proposal, source_fix
from .locate import NoEdit, SourceFile


def _ints(e: cst.BaseExpression) -> list[int] | None:
    if not isinstance(e, (cst.List, cst.Tuple)) or not e.elements:
        return None
    out = []
    for x in e.elements:
        v = x.value
        if isinstance(v, cst.Integer):
            out.append(int(v.value, 0))
        elif isinstance(v, cst.UnaryOperation) and isinstance(v.operator, cst.Minus) and isinstance(
                v.expression, cst.Integer):
            out.append(-int(v.expression.value, 0))
        else:
            return None
    return out


def _entries(slice_text: str) -> list[str]:
    inner = slice_text.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        return []
    return [p.strip() for p in inner[1:-1].split(",")]


@source_fix("FXL401")
def fix(finding: Finding, source: SourceFile) -> Proposal:
    d = finding.details
    dims = list(d.get("dims") or [])
    if len(dims) != 1 or d.get("step") is None:
        raise NoEdit(f"{len(dims)} dims are indexed; the source edit handles one")
    wanted = list(range(int(d["start"]), int(d["stop"]), int(d["step"])))
    entries = _entries(str(d.get("slice", "")))

    def match(n: cst.CSTNode) -> bool:
        return isinstance(n, cst.Subscript) and len(n.slice) == len(entries) and any(
            isinstance(e.slice, cst.Index) and _ints(e.slice.value) == wanted for e in n.slice)

    assert finding.line is not None
    node = source.unique(finding.line, match, f"subscript indexed by the literal list {wanted}")
    assert isinstance(node, cst.Subscript)
    pos = [i for i, e in enumerate(node.slice) if isinstance(e.slice, cst.Index) and _ints(e.slice.value) == wanted]
    if len(pos) != 1:
        raise NoEdit("the list appears at several positions of the subscript")
    element = node.slice[pos[0]].slice
    start, end = source.span(element)
    nstart, nend = source.span(node)
    after = source.text[nstart:start] + entries[pos[0]] + source.text[end:nend]
    return Proposal(node, after, safe=False, why=default_registry().get("FXL401").fix.why)

"""FXL401 source fix: a literal index list that steps evenly -> the basic slice (``x[:, [0, 2, 4, 6]]`` ->
``x[:, ::2]``).

Only one indexed dim, in a subscript with as many entries as the rule's slice, indexed by a list of
integer literals equal to the progression the rule derived (``start``/``stop``/``step``), or by
``[i for i in range(a, b, c)]``, ``list(range(...))``, ``range(...)`` or ``torch.arange(...)`` whose
literal start and step are the rule's: the slice then keeps the user's own stop
(``[i for i in range(0, n, 2)]`` -> ``0:n:2``; ``x.size(1)`` as the stop of dim 1 -> ``::2``), so it
keeps working when ``n`` changes; a computed start or step takes the graph's numbers.
``torch.index_select(x, d, i)`` and ``x.index_select(d, i)`` with such an ``i`` (or ``torch.tensor([...])``
of literals) become the subscript (``x[:, ::3]``). Exactly one such subscript or call on the line, or
no edit. Unsafe, as the rule declares: the result becomes a strided
view of the indexed tensor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import libcst as cst

from ..findings import Finding
from ..registry import default_registry
from .base import Proposal, source_fix
from .locate import NoEdit, SourceFile, dotted


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


def _range_args(e: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The arguments of the ``range(...)``/``torch.arange(...)`` that ``e`` spells, if it spells one."""
    if isinstance(e, cst.ListComp) and isinstance(e.for_in, cst.CompFor):
        comp = e.for_in
        if (comp.inner_for_in is None and not comp.ifs and comp.asynchronous is None
                and isinstance(comp.target, cst.Name) and isinstance(e.elt, cst.Name)
                and e.elt.value == comp.target.value):
            e = comp.iter
    if isinstance(e, cst.Call) and dotted(e.func) == "list" and len(e.args) == 1:
        e = e.args[0].value
    if not isinstance(e, cst.Call) or not 1 <= len(e.args) <= 3:
        return None
    name = dotted(e.func)
    positional = [a for a in e.args if a.keyword is None and not a.star]
    keywords = [a for a in e.args if a.keyword is not None]
    if name == "range" and not keywords and len(positional) == len(e.args):
        return [a.value for a in positional]
    if name == "torch.arange" and all(a.keyword is not None and a.keyword.value in ("device", "dtype")
                                      for a in keywords) and positional:
        return [a.value for a in positional]
    return None


def _literal(e: cst.BaseExpression | None) -> int | None:
    if isinstance(e, cst.Integer):
        return int(e.value, 0)
    if (isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus)
            and isinstance(e.expression, cst.Integer)):
        return -int(e.expression.value, 0)
    return None


def _range_text(source: SourceFile, e: cst.BaseExpression, d: Mapping[str, Any], base: str,
                wanted: list[int]) -> str | None:
    """``0:n:2`` for ``[i for i in range(0, n, 2)]`` when it selects the rule's progression (the user's own
    stop); ``""`` when it does but only the graph's numbers can say it; None when ``e`` is no such range."""
    args = _range_args(e)
    if args is None:
        return None
    if len(args) == 1:
        start, stop, step = None, args[0], None
    else:
        start, stop, step = args[0], args[1], (args[2] if len(args) == 3 else None)
    lit_start = _literal(start) if start is not None else 0
    lit_step = _literal(step) if step is not None else 1
    lit_stop = _literal(stop)
    if lit_stop is not None:
        if lit_start is None or lit_step is None or lit_step == 0:
            return ""
        return "" if list(range(lit_start, lit_stop, lit_step)) == wanted else None
    if lit_start is None or lit_step is None:
        return ""  # a computed start or step: the graph's numbers are safer
    if lit_start != d.get("start") or lit_step != d.get("step"):
        return None
    stop_text = source.code(stop)
    dim = d.get("dim")
    if stop_text in (f"{base}.size({dim})", f"{base}.shape[{dim}]") or (dim == 0 and stop_text == f"len({base})"):
        stop_text = ""
    start_text = "" if (start is None or (stop_text == "" and lit_start == 0)) else source.code(start)
    return f"{start_text}:{stop_text}" + (f":{source.code(step)}" if step is not None and lit_step != 1 else "")


def _index_select_args(n: cst.Call) -> tuple[cst.BaseExpression, cst.BaseExpression, cst.BaseExpression] | None:
    """(tensor, dim, index) of ``torch.index_select(x, d, i)`` or ``x.index_select(d, i)``."""
    if any(a.keyword is not None or a.star for a in n.args):
        return None
    args = [a.value for a in n.args]
    if dotted(n.func) == "torch.index_select" and len(args) == 3:
        return args[0], args[1], args[2]
    if isinstance(n.func, cst.Attribute) and n.func.attr.value == "index_select" and len(args) == 2:
        if dotted(n.func.value) == "torch":
            return None
        return n.func.value, args[0], args[1]
    return None


def _is_index_select(n: cst.CSTNode, dim: Any) -> bool:
    if not isinstance(n, cst.Call):
        return False
    parts = _index_select_args(n)
    return parts is not None and _literal(parts[1]) == dim


def _index_select(source: SourceFile, call: cst.Call, d: Mapping[str, Any], entries: list[str],
                  wanted: list[int]) -> Proposal:
    parts = _index_select_args(call)
    assert parts is not None
    value, _, index = parts
    base = source.code(value)
    dim = int(d["dim"])
    if len(entries) != dim + 1:
        raise NoEdit(f"the rule's slice {d.get('slice')} does not end at dim {dim}")
    if isinstance(index, cst.Call) and dotted(index.func) == "torch.tensor" and len(index.args) == 1:
        literal = _ints(index.args[0].value)
        if literal != wanted:
            raise NoEdit("the index tensor is not the literal progression the rule derived")
        own: str | None = ""
    else:
        own = _range_text(source, index, d, base, wanted)
    if own is None:
        raise NoEdit("the index is not a literal list or a range selecting the rule's progression")
    texts = [*entries[:-1], own or entries[-1]]
    operand = base if isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) else f"({base})"
    return Proposal(call, f"{operand}[{', '.join(texts)}]", safe=False, why=default_registry().get("FXL401").fix.why)


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

    def text_for(sub: cst.Subscript, e: cst.BaseSlice) -> str | None:
        """The slice entry that replaces index entry ``e`` of ``sub``, None when ``e`` is not the index."""
        if not isinstance(e, cst.Index):
            return None
        value = e.value
        if isinstance(value, cst.Call) and dotted(value.func) == "torch.tensor" and len(value.args) == 1:
            value = value.args[0].value
        if _ints(value) == wanted:
            return ""
        return _range_text(source, value, d, source.code(sub.value), wanted)

    def positions(n: cst.CSTNode) -> list[int]:
        if not isinstance(n, cst.Subscript) or len(n.slice) != len(entries):
            return []
        return [i for i, e in enumerate(n.slice) if text_for(n, e.slice) is not None]

    assert finding.line is not None
    shown = str(wanted) if len(wanted) <= 6 else f"[{wanted[0]}, {wanted[1]}, ..., {wanted[-1]}]"
    found = source.on_line(finding.line, lambda n: bool(positions(n)) or _is_index_select(n, d.get("dim")))
    if len(found) != 1:
        what = f"subscript or index_select indexed by {shown} (a literal list or a range)"
        source.unique(finding.line, lambda n: any(n is f for f in found), what)  # raises with the count
    node = found[0]
    if isinstance(node, cst.Call):
        return _index_select(source, node, d, entries, wanted)
    assert isinstance(node, cst.Subscript)
    pos = positions(node)
    if len(pos) != 1:
        raise NoEdit("the index appears at several positions of the subscript")
    element = node.slice[pos[0]].slice
    own = text_for(node, element)
    start, end = source.span(element)
    nstart, nend = source.span(node)
    after = source.text[nstart:start] + (own or entries[pos[0]]) + source.text[end:nend]
    return Proposal(node, after, safe=False, why=default_registry().get("FXL401").fix.why)

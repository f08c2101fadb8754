"""FXL103 source fix: drop a dtype round trip written on one line (``x.half().float()`` -> ``x``).

Only when both conversions are one chained call on the finding's line (``part`` ``round_trip``,
``same_line``) and nothing else reads the intermediate; exactly one such chain, or no edit. Unsafe
either way: a lossless trip gives the same values but the result is then the tensor itself, not a
fresh copy; a lossy one (``float32 -> float16 -> float32``) changes the values (the rounding is gone),
so ``--apply``'s verification reverts it unless the outputs agree within tolerance.
"""

from __future__ import annotations

import libcst as cst

from ..findings import Finding
from .base import Proposal, source_fix
from .locate import NoEdit, SourceFile, as_operand, method_call

CONVERSIONS = ("half", "float", "double", "bfloat16", "to", "type", "int", "long", "short", "bool", "byte")


def _is_trip(n: cst.CSTNode) -> bool:
    return (method_call(n, CONVERSIONS) and isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
            and method_call(n.func.value, CONVERSIONS))


@source_fix("FXL103")
def fix(finding: Finding, source: SourceFile) -> Proposal:
    d = finding.details
    if d.get("part") != "round_trip" or not d.get("same_line"):
        raise NoEdit(f"the two conversions are not on one line ({d.get('first_at')}, {d.get('back_at')})")
    if d.get("intermediate_used_elsewhere"):
        raise NoEdit(f"the {d.get('dtype_via')} tensor is read elsewhere: only the conversion back is wasted")
    assert finding.line is not None
    node = source.unique(finding.line, _is_trip, "chained conversion (`.a().b()`)")
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    inner = node.func.value
    assert isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute)
    if d.get("lossless"):
        why = "the values are the same, but the result is the tensor itself instead of a fresh copy"
    else:
        why = (f"the values change: the trip {d.get('lost') or 'loses precision'}; without it they are exact "
               "(verification reverts the edit unless the outputs agree within tolerance)")
    return Proposal(node, as_operand(source, inner.func.value), safe=False, why=why)

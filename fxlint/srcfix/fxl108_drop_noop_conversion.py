"""FXL108 source fix: drop the conversion that returns its input (``y.float()`` -> ``y``).

The call is found on the finding's line by the method it calls (``details["call"]``: ``.float()``,
``.to(torch.float32)``, ``.contiguous()``, ``.type_as(...)``); exactly one such call, or no edit.
Safe, as the rule declares: the conversion returned its input itself (for the example inputs' dtype
and layout).
"""

from __future__ import annotations

import re

import libcst as cst

from ..findings import Finding
from .base import Proposal, source_fix
from .locate import NoEdit, SourceFile, as_operand, method_call


def method_of(call: str) -> str | None:
    """``.to(torch.float32)`` -> ``to``."""
    m = re.match(r"\.?([A-Za-z_][A-Za-z0-9_]*)\(", call.strip())
    return m.group(1) if m else None


@source_fix("FXL108")
def fix(finding: Finding, source: SourceFile) -> Proposal:
    call = str(finding.details.get("call") or "")
    name = method_of(call)
    if name is None:
        raise NoEdit(f"the conversion {call!r} is not a method call")
    assert finding.line is not None
    node = source.unique(finding.line, lambda n: method_call(n, (name,)), f"`.{name}(...)` call")
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    return Proposal(node, as_operand(source, node.func.value), safe=True,
                    why=f"`{call}` returned its input itself (for the example inputs' dtype and layout)")

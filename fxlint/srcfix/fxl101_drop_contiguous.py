"""FXL101 source fix: drop a ``.contiguous()`` whose consumers read any layout (verdict ``agnostic``).

Only ``x.contiguous()`` (not ``clone(memory_format=...)``) and only when the rule found every consumer
layout-agnostic; exactly one ``.contiguous()`` call on the line, or no edit. Unsafe: the values are
the same, but the tensor the program goes on with is now the strided view, not a contiguous copy
(``is_contiguous()``, ``.view()`` and ``data_ptr()`` see the difference).
"""

from __future__ import annotations

import libcst as cst

from ..findings import Finding
from .base import Proposal, source_fix
from .locate import NoEdit, SourceFile, as_operand, method_call


@source_fix("FXL101")
def fix(finding: Finding, source: SourceFile) -> Proposal:
    d = finding.details
    if d.get("call") != "contiguous":
        raise NoEdit("the copy is a clone(memory_format=...), not a .contiguous() call")
    if d.get("verdict") != "agnostic":
        raise NoEdit(f"the copy's consumers are not all layout-agnostic (verdict {d.get('verdict')!r})")
    if d.get("memory_format") not in (None, "contiguous_format"):
        raise NoEdit(f"the call asks for {d.get('memory_format')}, not the default contiguous format")
    assert finding.line is not None
    node = source.unique(finding.line, lambda n: method_call(n, ("contiguous",)), "`.contiguous()` call")
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    return Proposal(node, as_operand(source, node.func.value), safe=False,
                    why="the values are the same, but the program goes on with the strided view instead of "
                        "a contiguous copy (is_contiguous(), .view() and data_ptr() can tell)")

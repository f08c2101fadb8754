"""FXL111 source fix: ``t.masked_fill(mask, v)`` on a temporary nothing else reads -> ``t.masked_fill_(mask, v)``.

The rule proved ``t`` is fresh (computed in the graph, not an input, parameter or buffer, nor a view of
one), read by nothing else and not returned. The call is found on the line by its method; exactly one
``.masked_fill(...)``, or no edit. Unsafe: the values are the same, but in training autograd raises if
the temporary's producer saved it for its backward (``exp``, ``sigmoid``, ``softmax``...);
``--apply``'s verification runs the backward to check, on the example inputs only.
"""

from __future__ import annotations

import libcst as cst

from ..findings import Finding
from .base import Proposal, source_fix
from .locate import SourceFile, method_call


@source_fix("FXL111")
def fix(finding: Finding, source: SourceFile) -> Proposal:
    assert finding.line is not None
    node = source.unique(finding.line, lambda n: method_call(n, ("masked_fill",)), "`.masked_fill(...)` call")
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    start, _ = source.span(node)
    name_start, name_end = source.span(node.func.attr)
    _, end = source.span(node)
    after = source.text[start:name_start] + "masked_fill_" + source.text[name_end:end]
    return Proposal(node, after, safe=False,
                    why="the values are the same, but in training autograd raises if the temporary's producer "
                        "saved it for its backward (exp, sigmoid, softmax...)")

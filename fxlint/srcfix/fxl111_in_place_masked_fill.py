"""FXL111 source fix: ``t.masked_fill(mask, v)`` -> ``t.masked_fill_(mask, v)`` on a temporary nothing else reads,
or -> ``torch.where(mask, v, t)`` where ``t`` must stay as it is (``details["fix"]``).

For the in-place spelling the rule proved ``t`` is fresh (computed in the graph, not an input, parameter or
buffer, nor a view of one), read by nothing else and not returned. The call is found on the line by its method;
exactly one ``.masked_fill(...)``, or no edit. Unsafe: the values are the same, but in training autograd raises
if the temporary's producer saved it for its backward (``exp``, ``sigmoid``, ``softmax``...); ``--apply``'s
verification runs the backward to check, on the example inputs only.

``torch.where`` needs the mask and the value as the call's two positional arguments and ``torch`` imported by
that name, or no edit. Unsafe too: the values are the same, except that a Python scalar the dtype cannot hold
(``-1e9`` in float16) becomes infinity where ``masked_fill`` raises.
"""

from __future__ import annotations

import re

import libcst as cst

from ..findings import Finding
from .base import Proposal, source_fix
from .locate import NoEdit, SourceFile, method_call


@source_fix("FXL111")
def fix(finding: Finding, source: SourceFile) -> Proposal:
    assert finding.line is not None
    node = source.unique(finding.line, lambda n: method_call(n, ("masked_fill",)), "`.masked_fill(...)` call")
    assert isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
    start, end = source.span(node)
    if finding.details.get("fix") == "where":
        return _where(node, source)
    name_start, name_end = source.span(node.func.attr)
    after = source.text[start:name_start] + "masked_fill_" + source.text[name_end:end]
    return Proposal(node, after, safe=False,
                    why="the values are the same, but in training autograd raises if the temporary's producer "
                        "saved it for its backward (exp, sigmoid, softmax...)")


def _where(node: cst.Call, source: SourceFile) -> Proposal:
    assert isinstance(node.func, cst.Attribute)
    if len(node.args) != 2 or any(a.keyword is not None or a.star for a in node.args):
        raise NoEdit("`torch.where` needs the mask and the value passed by position: `t.masked_fill(mask, value)`")
    if not re.search(r"^import torch\s*($|#|,)", source.text, re.M):  # the name `torch`, bound at module level
        raise NoEdit("the file does not `import torch` by that name: write `torch.where(mask, value, t)` by hand")
    t, mask, value = (source.code(n) for n in (node.func.value, node.args[0].value, node.args[1].value))
    return Proposal(node, f"torch.where({mask}, {value}, {t})", safe=False,
                    why="the values are the same, except that a Python scalar the dtype cannot hold (-1e9 in "
                        "float16) becomes infinity where masked_fill raises")

"""FXL205 source fix: drop a pad whose widths are all zero (``F.pad(x, (0, 0))`` -> ``x``).

Only for the finding's ``noop`` kind, and only when the widths are written as literal zeros on the
line (widths that are zero only for these inputs stay: the pad is not always a no-op). Unsafe, as the
rule's rewrite: the values are equal, but the program then reads the padded tensor itself instead of
a fresh copy, so an in-place write to one would show in the other.
"""

from __future__ import annotations

import libcst as cst

from ..findings import Finding
from .base import Proposal, source_fix
from .locate import NoEdit, SourceFile, as_operand, dotted

_PADS = ("pad", "constant_pad_nd")


def _is_pad(n: cst.CSTNode) -> bool:
    if not isinstance(n, cst.Call):
        return False
    name = dotted(n.func)
    return name is not None and name.rsplit(".", 1)[-1] in _PADS and len(n.args) >= 1


def _zeros(e: cst.BaseExpression) -> bool:
    return (isinstance(e, (cst.Tuple, cst.List)) and len(e.elements) > 0
            and all(isinstance(x.value, cst.Integer) and int(x.value.value, 0) == 0 for x in e.elements))


@source_fix("FXL205")
def fix(finding: Finding, source: SourceFile) -> Proposal:
    if finding.details.get("kind") != "noop":
        raise NoEdit("the pad is not a no-op (some width is not zero)")
    assert finding.line is not None
    node = source.unique(finding.line, _is_pad, "pad call")
    assert isinstance(node, cst.Call)
    widths = [a.value for a in node.args[1:2] if a.keyword is None] + [
        a.value for a in node.args if a.keyword is not None and a.keyword.value == "pad"]
    if len(widths) != 1 or not _zeros(widths[0]):
        raise NoEdit("the widths are not written as literal zeros: they are zero for these inputs only")
    first = node.args[0]
    if first.keyword is not None and first.keyword.value != "input":
        raise NoEdit("the padded tensor is not the first argument")
    return Proposal(node, as_operand(source, first.value), safe=False,
                    why="the values are equal, but the program reads the input itself instead of a fresh "
                        "copy: an in-place write to one would show in the other")

"""FXL110 source fix: a write-back or a self-assignment through a subscript becomes the in-place op on
the region (``x[:, 1:] = x[:, 1:] + y`` and ``x[:, 1:] += y`` -> ``x[:, 1:].add_(y)``).

Only a statement of one of these shapes on the finding's line: ``T[I] = T[I] <op> Y`` (also ``Y <op>
T[I]`` for ``+`` and ``*``) with the same subscript written twice alike, or ``T[I] <op>= Y``, for
``+ - * /``; a value computed any other way (``(x[i].view(...) + a).view(...)``) gets no edit.
A self-assignment's edit is safe, as the rule's rewrite declares (the write it removes copied the
view onto itself). A write-back's is unsafe: the values are the same where the in-place op is
allowed, but it writes the region before ``Y`` is read, so a ``Y`` that overlaps ``T[I]`` reads the
new values, and an in-place op raises where the out-of-place one promoted the dtype (an integer
region plus a float) or where autograd saved the region's old values.
"""

from __future__ import annotations

import libcst as cst

from ..findings import Finding
from ..registry import default_registry
from .base import Proposal, source_fix
from .locate import NoEdit, SourceFile

_BIN = {cst.Add: "add_", cst.Subtract: "sub_", cst.Multiply: "mul_", cst.Divide: "div_"}
_AUG = {cst.AddAssign: "add_", cst.SubtractAssign: "sub_", cst.MultiplyAssign: "mul_", cst.DivideAssign: "div_"}


def _same(source: SourceFile, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return "".join(source.code(a).split()) == "".join(source.code(b).split())


def _shape(source: SourceFile, n: cst.CSTNode) -> tuple[cst.Subscript, str, cst.BaseExpression] | None:
    """(the region written, the in-place method, the other operand) for a statement of the rule's shapes."""
    if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Subscript):
        method = _AUG.get(type(n.operator))
        return (n.target, method, n.value) if method else None
    if not (isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Subscript)):
        return None
    target = n.targets[0].target
    value = n.value
    if not isinstance(value, cst.BinaryOperation) or value.lpar:
        return None
    method = _BIN.get(type(value.operator))
    if method is None:
        return None
    if isinstance(value.left, cst.Subscript) and _same(source, value.left, target):
        return target, method, value.right
    if method in ("add_", "mul_") and isinstance(value.right, cst.Subscript) and _same(source, value.right, target):
        return target, method, value.left
    return None


@source_fix("FXL110")
def fix(finding: Finding, source: SourceFile) -> Proposal:
    assert finding.line is not None
    node = source.unique(finding.line, lambda n: _shape(source, n) is not None,
                         "`x[i] = x[i] + y` or `x[i] += y` statement")
    shape = _shape(source, node)
    assert shape is not None
    target, method, other = shape
    after = f"{source.code(target)}.{method}({source.code(other)})"
    if finding.details.get("form") == "self-assign":
        if not isinstance(node, cst.AugAssign):
            raise NoEdit("the finding is a self-assignment but the line is not an augmented assignment")
        return Proposal(node, after, safe=True, why=default_registry().get("FXL110").fix.why)
    return Proposal(node, after, safe=False,
                    why="values are equal where the in-place op is allowed, but it writes the region before the "
                        "operand is read (an operand overlapping it sees the new values), and it raises where "
                        "the out-of-place op promoted the dtype or autograd saved the region's old values")

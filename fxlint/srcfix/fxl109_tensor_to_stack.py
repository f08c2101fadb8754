"""FXL109 source fix: ``torch.tensor([a, b])`` of tensors -> ``torch.stack([a, b])``.

Only a call of ``torch.tensor`` with one list or tuple argument, no keywords (``dtype=``/``device=``
have no place in ``torch.stack``) and as many elements as the rule counted; exactly one such call on
the line, or no edit. Unsafe: ``torch.stack`` keeps the elements' dtype and device and their autograd
history (the point: the gradient no longer stops there), where ``torch.tensor`` made a new leaf of
the default dtype; and it needs the elements to have one shape.
"""

from __future__ import annotations

import libcst as cst

from ..findings import Finding
from .base import Proposal, source_fix
from .locate import NoEdit, SourceFile, dotted


def _is_tensor_call(n: cst.CSTNode) -> bool:
    return (isinstance(n, cst.Call) and dotted(n.func) in ("torch.tensor", "tensor")
            and len(n.args) >= 1 and isinstance(n.args[0].value, (cst.List, cst.Tuple)))


@source_fix("FXL109")
def fix(finding: Finding, source: SourceFile) -> Proposal:
    assert finding.line is not None
    node = source.unique(finding.line, _is_tensor_call, "`torch.tensor([...])` call")
    assert isinstance(node, cst.Call)
    if len(node.args) != 1 or node.args[0].keyword is not None:
        raise NoEdit("the call passes more than the list (dtype=, device=, ...): torch.stack takes none of them")
    seq = node.args[0].value
    assert isinstance(seq, (cst.List, cst.Tuple))
    expected = finding.details.get("elements")
    if expected and len(seq.elements) != expected:
        raise NoEdit(f"the list has {len(seq.elements)} elements where the graph read {expected} tensors")
    if any(isinstance(e, cst.StarredElement) for e in seq.elements):
        raise NoEdit("the list unpacks (*xs): its length is not known from the source")
    fstart, fend = source.span(node.func)
    start, end = source.span(node)
    stack = "torch.stack" if dotted(node.func) == "torch.tensor" else "stack"
    if stack == "stack":
        raise NoEdit("`tensor` is imported by name; write torch.stack yourself")
    after = stack + source.text[fend:end]
    assert fstart == start
    return Proposal(node, after, safe=False, grad_changes=True,
                    why="torch.stack keeps the elements' dtype, device and autograd history (the gradient "
                        "now flows through), where torch.tensor made a new leaf of the default dtype")

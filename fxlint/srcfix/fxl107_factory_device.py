"""FXL107 source fix: build the tensor on its device (``torch.arange(n).to(x.device)`` ->
``torch.arange(n, device=x.device)``).

Only a factory (``details["kind"]``: ``torch.arange``, ``torch.zeros``, ``torch.tensor``...) built and
moved on the finding's line, without ``device=`` already and without CPU dtype conversions on the way
(their dtype would have to move into the factory too). The device is the user's own:

* moved by ``.to(D)`` right on the factory: ``device=D`` (``.to(x)`` with a tensor ``x``:
  ``device=x.device``; a ``.to`` with other arguments, such as ``dtype=`` or ``non_blocking=``, gets no
  edit), by ``.cuda()``: ``device="cuda"``; the move goes away;
* handed to an op that mixes devices, written directly on a plain name (``x[torch.arange(n)]``,
  ``x + torch.ones(n)``): ``device=x.device``, ``x`` being that op's other operand, which the rule
  found on the target device.

Anything else (the factory on another line than its move, a device no name on the line stands for):
no edit. Safe: the values are the same and so is where the result lives; only the host-to-device copy
is gone.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from ..findings import Finding
from .base import Proposal, source_fix
from .locate import NoEdit, SourceFile, dotted, method_call


def _factory(kind: str) -> Callable[[cst.CSTNode], bool]:
    def match(n: cst.CSTNode) -> bool:
        return isinstance(n, cst.Call) and dotted(n.func) in (f"torch.{kind}", kind)

    return match


def _with_device(source: SourceFile, call: cst.Call, device: str) -> str:
    if any(a.keyword is not None and a.keyword.value == "device" for a in call.args):
        raise NoEdit("the factory already has device=")
    start, end = source.span(call)
    if not call.args:
        _, fend = source.span(call.func)
        return source.text[start:fend] + f"(device={device})"
    _, last = source.span(call.args[-1].value)
    return source.text[start:last] + f", device={device}" + source.text[last:end]


def _device_of_to(source: SourceFile, move: cst.Call) -> str:
    assert isinstance(move.func, cst.Attribute)
    if move.func.attr.value == "cuda":
        if move.args:
            raise NoEdit("`.cuda(...)` has arguments")
        return '"cuda"'
    args = list(move.args)
    if len(args) != 1 or (args[0].keyword is not None and args[0].keyword.value != "device"):
        raise NoEdit("the `.to(...)` passes more than the device (dtype=, non_blocking=...)")
    value = args[0].value
    text = source.code(value)
    is_device = (isinstance(value, cst.SimpleString)
                 or (isinstance(value, cst.Attribute) and value.attr.value == "device")
                 or (isinstance(value, cst.Call) and dotted(value.func) == "torch.device"))
    if is_device or args[0].keyword is not None:
        return text
    raise NoEdit(f"`.to({text})`: whether {text} is a device or a tensor is not known from the source")


@source_fix("FXL107")
def fix(finding: Finding, source: SourceFile) -> Proposal:
    d = finding.details
    if not d.get("same_line"):
        raise NoEdit(f"built at {d.get('factory_at')} and moved at {d.get('move_at')}: add device= where it is built")
    if d.get("conversions"):
        raise NoEdit(f"converted to {d.get('converted_to')} on the CPU on the way: add dtype= and device= yourself")
    kind = str(d.get("kind", ""))
    assert finding.line is not None
    factory = source.unique(finding.line, _factory(kind), f"`torch.{kind}(...)` call")
    assert isinstance(factory, cst.Call)
    parent = source.parents.get(factory)
    if d.get("via") == "to":
        move = source.parents.get(parent) if isinstance(parent, cst.Attribute) else None
        if move is None or not method_call(move, ("to", "cuda")):
            raise NoEdit(f"the `torch.{kind}(...)` is not moved by a `.to(...)` called on it directly")
        assert isinstance(move, cst.Call)
        device = _device_of_to(source, move)
        return Proposal(move, _with_device(source, factory, device), safe=True,
                        why="the same values on the same device, built there instead of copied there")
    other: cst.CSTNode | None = None
    if isinstance(parent, cst.Index):
        element = source.parents.get(parent)
        sub = source.parents.get(element) if element is not None else None  # Index -> SubscriptElement -> Subscript
        other = sub.value if isinstance(sub, cst.Subscript) else None
    elif isinstance(parent, cst.BinaryOperation):
        other = parent.right if parent.left is factory else parent.left
    if not isinstance(other, (cst.Name, cst.Attribute)):
        raise NoEdit("no tensor on the line is known to be on the target device: add device= yourself")
    device = f"{source.code(other)}.device"
    return Proposal(factory, _with_device(source, factory, device), safe=True,
                    why=f"the same values, built on the device of `{source.code(other)}`, which the op mixes it with")

"""Helpers shared by the layout rules (FXL1xx/FXL2xx): how a layout came about (the view ops that
made it, in the user's names), where, and what a kernel prediction's copies come to on a hit (bytes per
event, backward bytes, reasons); ``OperandCopy``, the facts and the wording FXL201-FXL203 share about an
operand a kernel copies. Text goes through ``fxlint.canon.text``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..canon import CanonNode
from ..canon.text import (
    bytes_text,
    bytes_value,
    call_text,
    dims_value,
    line_of,
    operand_name,
    shape_text,
    shape_value,
    step_text,
    strided_text,
    torch_name,
)
from ..findings import Violation
from ..kernels import KernelCopy, ops, predict
from ..registry import Hit
from ..reporting.grouping import short_path
from ..tensor.info import TensorInfo
from ..tensor.symbolic import Dim, known, sum_of
from ..util.source import source_line


def total(copies: Iterable[KernelCopy]) -> Dim:
    """Bytes of all ``copies`` together."""
    return sum_of(c.nbytes for c in copies)


def copy_sizes(copies: Iterable[KernelCopy], limit: int = 64) -> list[int] | None:
    """The size of every runtime copy event the copies stand for (None when a size is symbolic, or
    when there are more than ``limit`` events - then the cross-check compares the line's total)."""
    sizes: list[int] = []
    for c in copies:
        each = known(c.each)
        if each is None:
            return None
        sizes.extend([each] * c.count)
        if len(sizes) > limit:
            return None
    return sizes


_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")


def _assigned_name(n: CanonNode, consumer: CanonNode | None) -> str | None:
    """The variable the user assigned ``n`` to (``q = ...view(...).transpose(1, 2)``), when ``n`` is
    the value of that statement and the statement is not the consumer's own line."""
    loc = n.location
    if loc is None or (consumer is not None and consumer.location is not None
                       and (consumer.location.file, consumer.location.line) == (loc.file, loc.line)):
        return None
    code = loc.code or source_line(loc.file, loc.line) or ""
    m = _ASSIGN.match(code)
    if not m:
        return None
    if any(u.location is not None and (u.location.file, u.location.line) == (loc.file, loc.line) for u in n.users):
        return None  # an intermediate value of the statement, not what was assigned
    return m.group(1)


_UNPACK = re.compile(r"^\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s*,?\s*=(?!=)")


def _unpacked_name(n: CanonNode) -> str | None:
    """The name an element of a tuple got where the statement unpacks it (``q, k, v = qkv.unbind(0)``)."""
    if n.op != "tuple_getitem" or not isinstance(n.args.get("index"), int) or n.location is None:
        return None
    src = n.input
    if src is None or src.location is None or (src.location.file, src.location.line) != (n.location.file,
                                                                                        n.location.line):
        return None
    m = _UNPACK.match(n.location.code or source_line(n.location.file, n.location.line) or "")
    names = [x.strip() for x in m.group(1).split(",")] if m else []
    i = n.args["index"]
    return names[i] if 0 <= i < len(names) and names[i] != "_" else None


def origin(node: CanonNode | None, consumer: CanonNode | None = None, max_steps: int = 4) -> str:
    """How the operand was made, in the user's names where we can: ``k.transpose(-2, -1)``,
    ``x.permute(1, 0, 2)``, ``linear.view(2, 16, 4, 8).transpose(1, 2)``."""
    if node is None:
        return "the operand"
    steps: list[str] = []
    cur = node
    while True:
        if cur.kind in ("input", "parameter", "buffer", "constant"):
            base = operand_name(cur)
            break
        assigned = _assigned_name(cur, consumer) or _unpacked_name(cur)
        if assigned is not None:
            base = assigned
            break
        if (cur.is_view or cur.is_maybe_view) and cur.input is not None and len(steps) < max_steps:
            steps.append(step_text(cur))
            cur = cur.input
            continue
        base = cur.op if cur.op and cur.op.isidentifier() else cur.name
        break
    return base + "".join(reversed(steps))


def layout_origin(node: CanonNode | None) -> CanonNode | None:
    """The closest view op above ``node`` (itself included) that made its layout non-contiguous:
    a permute, a step slice, an expand, ... ; None when the layout came from elsewhere."""
    if node is None:
        return None
    for cur in node.view_chain():
        t, src = cur.tensor, cur.input
        if cur.is_view and t is not None and src is not None and src.tensor is not None:
            if t.is_contiguous() is False and src.tensor.is_contiguous() is True:
                return cur
    return None


def origin_text(node: CanonNode | None) -> str:
    """``" (made by `.permute(0, 3, 1, 2)` at line 14)"`` or ``""``."""
    made = layout_origin(node)
    if made is None:
        return ""
    return made_by_text(call_text(made), line_of(made))


def made_by_text(call: str | None, at: str | None) -> str:
    """``" (made by `.permute(0, 3, 1, 2)` at line 14)"`` from its parts, or ``""`` without a call."""
    return f" (made by `{call}` at {at})" if call is not None else ""


@dataclass(frozen=True)
class InputLayout:
    """A copy's input as the message shows it: its layout and the view op that made it (a field of
    the violations of FXL101 and FXL102)."""

    dtype: str  # "float32"
    shape: tuple[int | str, ...]  # a size is its formula under dynamic shapes
    strides: tuple[int | str, ...]
    made_by: str | None = None  # the view op that made it non-contiguous, as written: ".permute(0, 3, 1, 2)"
    made_at: str | None = None  # where that op is: "line 14" ("node x" in a graph without source lines)

    @classmethod
    def of(cls, node: CanonNode) -> InputLayout:
        t = node.tensor
        assert t is not None, node
        made = layout_origin(node)
        return cls(torch_name(t.dtype), shape_value(t.shape), shape_value(t.stride),
                   call_text(made) if made is not None else None, line_of(made) if made is not None else None)

    def text(self) -> str:
        """``float32 (4, 8) with strides (1, 4) (made by `.t()` at line 3)``."""
        return strided_text(self.dtype, self.shape, self.strides) + made_by_text(self.made_by, self.made_at)


def made_by_permute(node: CanonNode | None) -> CanonNode | None:
    """The permute node (through other views) that gave ``node`` its layout, if any."""
    if node is None:
        return None
    return next((cur for cur in node.view_chain(maybe_views=True) if cur.op == "permute"), None)


def where(node: CanonNode | None, consumer: CanonNode | None = None) -> str | None:
    """``file:line`` of the user's line that made ``node`` (through views on the consumer's own line,
    e.g. ``k.transpose(-2, -1)`` written inside the matmul)."""
    if node is not None and consumer is not None and consumer.location is not None:
        line = (consumer.location.file, consumer.location.line)
        node = next((cur for cur in node.view_chain(maybe_views=True)
                     if cur.location is None or (cur.location.file, cur.location.line) != line
                     or not (cur.is_view or cur.is_maybe_view)), node.view_chain(maybe_views=True)[-1])
    if node is None or node.location is None or node.kind != "op":
        return None
    # as locations are shown everywhere: relative to the working directory, or from the package
    # (timm/models/cait.py) for a file in an installed package
    return f"{short_path(node.location.file)}:{node.location.line}"


def backward_bytes(backward: Sequence[KernelCopy] | None) -> Dim | None:
    """A hit's ``backward_bytes``: None when the backward is not modelled for this path, else the
    bytes of ``backward`` (0: none)."""
    return None if backward is None else (total(backward) if backward else 0)


def backward_copied(backward: Sequence[KernelCopy] | None) -> int | str | None:
    """The bytes a violation's "again in backward" clause shows: None when there is no backward copy
    (or it is not modelled), else the total (a formula under dynamic shapes)."""
    return bytes_value(total(backward)) if backward else None


def reasons(copies: Iterable[KernelCopy]) -> list[str]:
    """The kernel's reason codes for ``copies``, sorted (``batch-fold``, ``blas-layout``, ...)."""
    return sorted({c.reason for c in copies})


def backward_clause(copied: int | str | None) -> str:
    """``, and again in backward (6.3 MB more per training step)``, or ``""`` for no backward copy."""
    if copied is None:
        return ""
    return f", and again in backward ({bytes_text(copied)} more per training step)"


@dataclass(frozen=True)
class OperandCopy(Violation):
    """What FXL201-FXL203 say about an operand a kernel copies: the fields and the wording they share
    (each rule's violation type extends it with its own)."""

    origin: str | None  # how the operand was made, in the user's names: "k.transpose(-2, -1)" (None: no node)
    shape: tuple[int | str, ...] | None  # its shape and strides (a formula for a dynamic size)
    strides: tuple[int | str, ...] | None
    copied: int | str | None  # bytes copied per call (a formula under dynamic shapes)
    backward_copied: int | str | None  # bytes copied again in backward (None: none, or not modelled)
    why: str  # the kernel model's reason for the copy, one sentence
    reasons: list[str]  # the kernel model's codes for the copies
    kernel_path: str  # the implementation path the kernel model followed
    made_at: str | None  # file:line of the user's line that made the operand

    @property
    def operand_text(self) -> str:
        return self.origin if self.origin is not None else "the operand"

    def copy_text(self, what: str, extra: str = "") -> str:
        """``{what} (2, 16) with strides (1, 2): 128 B per call{extra}, and again in backward (...); {why}``."""
        return (f"{what} {shape_text(self.shape)} with strides {shape_text(self.strides)}: "
                f"{bytes_text(self.copied)} per call{extra}{backward_clause(self.backward_copied)}; {self.why}")


def operand_copy(operand: CanonNode | None, tensor: TensorInfo | None, consumer: CanonNode,
                 copies: Sequence[KernelCopy], backward: Sequence[KernelCopy] | None, path: str) -> dict[str, Any]:
    """The ``OperandCopy`` fields for ``copies`` of ``operand`` (its ``tensor``) by the kernel ``consumer``
    (``backward``: the copies paid again in backward, None when not modelled; ``path``: the kernel
    model's path). The reason is the first copy's that is not the result's."""
    main = next((c for c in copies if c.operand != "output"), copies[0])
    return {
        "origin": origin(operand, consumer) if operand is not None else None,
        "shape": dims_value(tensor.shape) if tensor is not None else None,
        "strides": dims_value(tensor.stride) if tensor is not None else None,
        "copied": bytes_value(total(copies)),
        "backward_copied": backward_copied(backward),
        "why": main.why,
        "reasons": reasons(copies),
        "kernel_path": path,
        "made_at": where(operand, consumer),
    }


def kernel_input_hits(view: Any, families: str | tuple[str, ...],
                      build: Callable[[CanonNode, CanonNode | None, TensorInfo | None, dict[str, Any]], Violation],
                      ) -> Iterator[Hit]:
    """A hit for every op of the kernel ``families`` whose kernel copies its ``input`` operand: ``build(node,
    input node, its tensor, the OperandCopy fields)`` gives the rule's violation (FXL207, FXL210)."""
    for node in view.ops(*ops(family=families)):
        pred = predict(node)
        if pred is None:
            continue
        copies = [c for c in pred.forward() if c.operand == "input"]
        if not copies:
            continue
        x = node.args.get("input") if isinstance(node.args.get("input"), CanonNode) else None
        t = x.tensor if x is not None else None
        facts = operand_copy(x, t, node, copies, pred.backward("input") if pred.backward_known else None, pred.path)
        yield Hit(node, build(node, x, t, facts), bytes=total(copies), copy_sizes=copy_sizes(copies),
                  backward_bytes=backward_bytes(pred.backward() if pred.backward_known else None), dedup=node.name)

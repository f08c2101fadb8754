"""Tensors built on the CPU by a factory (``torch.arange``, ``zeros``, ``tensor``...) and how they
reach another device. Shared by FXL107 (which reports them) and FXL106 (which leaves them to it)."""

from __future__ import annotations

from dataclasses import dataclass

from ..canon import CanonNode
from ._util import same_device

#: ops a freshly built CPU tensor may pass through and still be "the factory's tensor": views,
#: reshapes, dtype conversions on the CPU, and elementwise arithmetic with CPU/scalar operands
_PASS = {"reshape", "to", "contiguous", "clone"}


@dataclass(frozen=True)
class FactoryMove:
    factory: CanonNode  # the factory node (device cpu)
    move: CanonNode  # where the data reaches the other device: a `to` node, or an op mixing devices
    tensor: CanonNode  # the CPU tensor that is moved (the factory's value, maybe transformed)
    target: str  # the device it is moved to
    conversions: tuple[CanonNode, ...] = ()  # CPU dtype conversions on the way (`.float()`): copies too


def cpu_conversions(tensor: CanonNode, factory: CanonNode) -> tuple[CanonNode, ...]:
    """dtype conversions between ``factory`` and ``tensor`` (both on the CPU): each one copies, and
    building the factory with ``dtype=`` avoids it."""
    out = []
    cur: CanonNode | None = tensor
    while cur is not None and cur is not factory:
        src = cur.input
        if cur.op == "to" and src is not None and src.tensor is not None and cur.tensor is not None \
                and src.tensor.dtype != cur.tensor.dtype:
            out.append(cur)
        if cur.is_pointwise:  # follow the operand that carries the factory's data
            src = next((i for i in cur.tensor_inputs if from_cpu_factory(i) is factory), None)
        cur = src
    return tuple(reversed(out))


def _is_cpu(node: CanonNode) -> bool:
    t = node.tensor
    return t is not None and t.device.type == "cpu"


def from_cpu_factory(node: CanonNode, depth: int = 0) -> CanonNode | None:
    """The CPU factory ``node``'s value comes from (through the ops in ``_PASS``, views and CPU-only
    elementwise ops), or None."""
    if not _is_cpu(node) or depth > 8:
        return None
    if node.op == "factory":
        return node
    if node.is_view or node.op in _PASS:
        return from_cpu_factory(node.input, depth + 1) if node.input is not None else None
    if node.is_pointwise:
        found = None
        for i in node.tensor_inputs:
            if not _is_cpu(i):
                return None
            f = from_cpu_factory(i, depth + 1)
            if f is None and not _is_scalar(i):
                return None
            found = found or f
        return found
    return None


def _is_scalar(node: CanonNode) -> bool:
    t = node.tensor
    return t is not None and t.ndim == 0


def moves(factory: CanonNode) -> list[FactoryMove]:
    """Every place the CPU tensor built by ``factory`` reaches another device."""
    found: list[FactoryMove] = []
    seen: set[int] = set()

    def walk(node: CanonNode, depth: int) -> None:
        t = node.tensor  # the factory's, then users' that have one
        if id(node) in seen or depth > 8 or t is None:
            return
        seen.add(id(node))
        for u in node.users:
            if u.kind == "output" or u.tensor is None:
                continue
            if u.op == "to" and u.input is node:
                if same_device(t.device, u.tensor.device) is False:
                    found.append(FactoryMove(factory, u, node, str(u.tensor.device), cpu_conversions(node, factory)))
                    continue
                walk(u, depth + 1)
                continue
            foreign = [i.tensor for i in u.tensor_inputs
                       if i is not node and i.tensor is not None and same_device(i.tensor.device, t.device) is False]
            if foreign and t.ndim > 0:
                # a CPU index or operand handed to a kernel on another device: the kernel copies it over
                found.append(FactoryMove(factory, u, node, str(foreign[0].device),
                                         cpu_conversions(node, factory)))
                continue
            if from_cpu_factory(u) is factory:
                walk(u, depth + 1)

    walk(factory, 0)
    return found

"""`torch.arange(n)` (zeros, ones, full, eye, linspace, tensor, rand...) built on the CPU, then moved to the model's device on every call.

## What it does
Finds a tensor created by a factory without `device=` (or with
`device="cpu"`), whose value then reaches another device: moved with
`.to(x.device)`, `.cuda()`, `.to(x)`, `.type_as(x)`, or handed as an index
or operand to a kernel running elsewhere. The factory may be followed by
views, reshapes, dtype conversions and CPU arithmetic first
(`(torch.arange(T).float() / T).to(x.device)`). Factories: `arange`, `range`,
`zeros`, `ones`, `full`, `empty`, `eye`, `linspace`, `logspace`, `rand`,
`randn`, `randint`, `randperm`, `tensor`, `as_tensor`, `scalar_tensor`,
`tril_indices`, `triu_indices`.

When every tensor lives on the CPU nothing moves, and the rule is quiet.

The finding is on the line where the data crosses devices (where the copy is
made, which is the factory's line in the usual `torch.arange(n).to(x.device)`);
the message names the factory's line, which is where the fix goes. Bytes are
the tensor moved per call.

## Why is this bad?
The factory runs on the host, and the result is copied host-to-device on
every forward: a small PCIe transfer (in the OCR seed, `torch.arange(seq_len)`
for positional encodings cost 2 ms per forward), a synchronisation point for
pageable memory, and in a compiled model a graph split across devices.
Creating the tensor on the device costs nothing extra.

## Example
```python
pos = torch.arange(seq_len).to(x.device)
return x + self.pos_emb(pos)
```

## Use instead
```python
pos = torch.arange(seq_len, device=x.device)
return x + self.pos_emb(pos)
```
For a constant that never changes, `register_buffer` it once in `__init__`.

## When it is intentional
Almost never inside a model. If the values must be computed on the host
(e.g. with Python-side logic), build them once and cache them as a buffer.
Silence a line with `# fxlint: ignore[FXL107]`.

On a machine without an accelerator, the tests put the model on the `meta`
device: a CPU factory moved to `meta` is recorded by the profiler as a device
copy, exactly as a host-to-GPU copy would be. A CPU index handed to a kernel
on another device (`x[:, torch.arange(n)]` with `x` on the GPU) is copied by
that kernel; `meta` kernels copy nothing, so those findings cannot be
confirmed by the audit on such a machine.

A dtype conversion between the factory and the move
(`torch.arange(T).float().to(x.device)`) is one more copy, made on the CPU:
the message counts it, and `Finding.bytes` includes it when it is on the
line of the move; the fix then adds `dtype=` to the factory too.

`details` (the fields of `FactoryWithoutDevice`): `factory` (node name; add
`device=` there), `kind` (`arange`, `zeros`...), `factory_line`, `move` (node
name of the transfer or consuming op), `target_device` (the consumer's device:
build the factory there), `via` (`to` or the op that mixes devices),
`conversions` (node names of CPU dtype conversions on the way; add their dtype
to the factory), `converted_to`, the bytes moved and converted,
`backward_bytes` (0), `non_blocking_unpinned` (moved with `non_blocking=True`
from pageable memory: synchronous anyway), `raises`.

## With a target device (`--device cuda`)
On a CPU-only machine the model's tensors are on the CPU and a factory's
tensor moves nowhere. With a target device (`fxlint lint --device cuda`,
`fxlint.lint(..., device="cuda")`; a simulation, see docs/device.md) the
inputs, parameters and buffers live on that device while a factory without
`device=` stays on the CPU, so `torch.arange(n).to(x.device)` is the
host-to-device copy the GPU run makes. A CPU factory's tensor handed to an op
that needs all operands on one device (`x + torch.ones(n)`) is what the GPU
raises at ("Expected all tensors to be on the same device"): an error.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..analysis.device import mismatched, pinned
from ..canon import CanonNode, GraphView
from ..canon.text import bytes_text, bytes_value, line_of, torch_name
from ..findings import Severity, Violation
from ..registry import Hit, RuleContext, rule
from ._factory import moves
from ._sites import numbered


@dataclass(frozen=True)
class FactoryWithoutDevice(Violation):
    """A tensor built on the CPU by a factory (no `device=`) and moved to another device on every call."""

    kind: str  # the factory: "arange", "zeros", "tensor", ...
    target_device: str  # where it goes (build it there): "cuda:0"
    via: str  # "to" (moved explicitly), or the op that mixes devices and copies it over ("index", ...)
    moved: int | str | None  # bytes moved host-to-device per call (a formula under dynamic shapes)
    converted_to: str | None  # the dtype CPU conversions on the way give it ("float32"), if any
    converted: int | str | None  # the bytes those conversions copy (0: none)
    copied: int | str | None  # the bytes this finding counts: the move, and the conversions on its line
    same_line: bool  # built and moved on one line
    factory_at: str  # where it is built: "line 12"
    move_at: str  # where it is moved
    factory: str  # the factory's node (add `device=` there)
    factory_line: int | None
    move: str  # the node of the transfer or of the op that mixes devices
    conversions: list[str]  # the nodes of the CPU dtype conversions on the way (add their dtype to the factory)
    non_blocking_unpinned: bool = False  # moved with `non_blocking=True` from pageable memory: synchronous anyway
    raises: bool = False  # handed to an op that needs every operand on one device: the GPU run raises there

    def message(self) -> str:
        if self.raises:
            where = "here" if self.same_line else f"at {self.move_at}"
            built = "" if self.same_line else f" at {self.factory_at}"
            return (f"`torch.{self.kind}(...)`{built} is built on the CPU (no `device=`) and handed to `{self.via}` "
                    f"with tensors on {self.target_device} {where}: on the GPU run this raises (\"Expected all "
                    "tensors to be on the same device\")")
        via = (f"copied to {self.target_device}" if self.via == "to"
               else f"handed to `{self.via}` on {self.target_device}, which copies it over")
        where = "here" if self.same_line else f"at {self.move_at}"
        built = "" if self.same_line else f" at {self.factory_at}"
        message = (f"`torch.{self.kind}(...)`{built} is built on the CPU (no `device=`) and {via} {where} on every "
                   f"call: {bytes_text(self.moved)} host-to-device per call")
        if self.converted_to is not None:
            message += (f"; on the way it is converted to {self.converted_to} on the CPU, "
                        f"another {bytes_text(self.converted)} copied")
        if self.non_blocking_unpinned:
            message += ("; `non_blocking=True` does nothing here: a fresh CPU tensor is pageable (not pinned) "
                        "memory, so the copy is synchronous")
        return message

    def fix_title(self) -> str:
        dtype_kw = f", dtype=torch.{self.converted_to}" if self.converted_to is not None else ""
        return (f"build it on the device: `torch.{self.kind}(..., device=x.device{dtype_kw})` with `x` any tensor "
                f"already on {self.target_device} (or register a constant once as a buffer)")


@rule("FXL107", "factory-without-device", "warning", violation=FactoryWithoutDevice)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    for factory in view.ops("factory"):
        t = factory.tensor
        if t is None or t.device.type != "cpu":
            continue
        kind = factory.args.get("kind", "tensor")
        for mv in moves(factory):
            moved, move_t = mv.tensor.tensor, mv.move.tensor
            assert move_t is not None  # moves() reports only nodes that carry a tensor
            converted = [c.tensor for c in mv.conversions if c.tensor is not None]  # all of them: cpu_conversions
            move_bytes = move_t.nbytes if mv.move.op == "to" else (moved.nbytes if moved is not None else None)
            nbytes = move_bytes
            conv_bytes = sum(ct.nbytes for ct in converted) if converted else 0
            if mv.conversions and nbytes is not None and all(_same_line(c, mv.move) for c in mv.conversions):
                nbytes = nbytes + conv_bytes  # the same line pays both
            violation = FactoryWithoutDevice(
                kind=kind,
                target_device=mv.target,
                via="to" if mv.move.op == "to" else mv.move.op,
                moved=bytes_value(move_bytes),
                converted_to=torch_name(converted[-1].dtype) if converted else None,
                converted=bytes_value(conv_bytes),
                copied=bytes_value(nbytes),
                same_line=_same_line(factory, mv.move),
                factory_at=line_of(factory),
                move_at=line_of(mv.move),
                factory=factory.name,
                factory_line=factory.location.line if factory.location is not None else None,
                move=mv.move.name,
                conversions=[c.name for c in mv.conversions],
                non_blocking_unpinned=mv.move.op == "to" and bool(mv.move.args.get("non_blocking"))
                and not pinned(mv.tensor),
                raises=mv.move.op != "to" and mismatched(view, mv.move.name),
            )
            yield Hit(mv.move, violation, bytes=nbytes, backward_bytes=0,
                      severity=Severity.ERROR if violation.raises else None)


def _same_line(a: CanonNode, b: CanonNode) -> bool:
    return (a.location is not None and b.location is not None
            and (a.location.file, a.location.line) == (b.location.file, b.location.line))

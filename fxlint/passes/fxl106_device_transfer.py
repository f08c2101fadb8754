"""`.to(device)`, `.cuda()`, `.cpu()` inside the model: a host/device copy on every call (and back in backward).

## What it does
Finds conversions that move a tensor to another device inside the captured
graph: `.to("cuda")`, `.to(x.device)`, `.cuda()`, `.cpu()`, `.to(other)`,
`.type_as(other)` when `other` lives elsewhere. Only moves that really change
the device are reported (the fake tensors know where each value lives):
`.to(x.device)` when everything is on one device is a no-op and stays quiet.

A tensor freshly built by a factory on the CPU and then moved
(`torch.arange(n).to(x.device)`) is FXL107's finding (the fix is different:
build it on the device); this rule leaves it alone.

Bytes are the moved tensor's size. When gradients flow through the move,
backward copies the gradient back to the source device (`ToCopyBackward0`):
counted in `backward_bytes`.

## Why is this bad?
A host/device copy crosses PCIe (or the chip interconnect) on every call, is
synchronous for ordinary (pageable) host memory, and in a compiled model splits
work across devices. Data that is the same on every call (a parameter, a
buffer, a lookup table) should be moved once; per-call inputs should arrive on
the device already (the data loader's `pin_memory=True` and
`.to(device, non_blocking=True)` outside the model).

## Example
```python
def forward(self, x):
    table = self.table.to(x.device)     # a buffer moved on every call
    return x @ table
```

## Use instead
```python
self.register_buffer("table", table)    # in __init__; model.to(device) moves it once
def forward(self, x):
    return x @ self.table
```

## When it is intentional
Offloading (keeping large weights on the host and streaming them), a CPU-only
op in the middle of the model, or a result the host must read: the copy is
the point. Silence the line with `# fxlint: ignore[FXL106]`.

On a machine without an accelerator the tests use the `meta` device as the
"other" device: a CPU tensor moved to `meta` is recorded by the profiler as a
device copy exactly as a host-to-GPU copy would be.

## With a target device (`--device cuda`)
On a CPU-only machine everything lives on the CPU and nothing moves. With a
target device (`fxlint lint --device cuda`, `fxlint.lint(..., device="cuda")`,
`device` in `[tool.fxlint]`; a simulation, see docs/device.md) the inputs,
parameters and buffers live on that device, and the rule reports what the GPU
run would move, per call, with bytes, and the gradient copied back in backward:

* device-to-host copies (`.cpu()`, `.to("cpu")`, `.numpy()` after them): the
  host also waits for the device there (a sync); FXL304 does not report the
  same line again;
* host-to-device copies of host data (`.to(x.device)` of a host tensor);
* `non_blocking=True` from memory that is not pinned: the copy is not
  asynchronous at all (CUDA stages pageable memory through a pinned buffer
  while the host waits); pin the source (`pin_memory()`, `DataLoader(pin_memory=True)`)
  or drop the flag;
* an op that mixes a device tensor with a host tensor where the GPU raises
  ("Expected all tensors to be on the same device"): an error.

A model with parts deliberately on the host (an offloaded embedding table, a
metric kept in a host buffer) is reported at the boundary only: the
simulation keeps the parameters and buffers the model feeds host data on the
CPU (see docs/device.md), so the ops after the boundary are host ops, and
quiet.

`details` (the fields of `DeviceTransfer`): `src_device`, `dst_device`,
`source` (node name), `source_kind` (`input`, `parameter`, `buffer`, `op`...),
`source_name` (a parameter's or buffer's name), `copied`, `backward_bytes`,
`host_waits` (a device-to-host copy: a sync), `non_blocking_unpinned`,
`raises` (the op mixes devices: the GPU raises).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..analysis.device import mismatched, pinned
from ..canon import GraphView
from ..canon.alias import view_base
from ..canon.text import bytes_text, bytes_value
from ..findings import Severity, Violation
from ..registry import Hit, RuleContext, rule
from ._backward import conversion_backward_bytes
from ._factory import from_cpu_factory
from ._sites import numbered
from ._util import same_device


@dataclass(frozen=True)
class DeviceTransfer(Violation):
    """A tensor moved to another device inside the model, on every call."""

    src_device: str  # "cpu"
    dst_device: str  # "cuda:0"
    source_kind: str  # what the moved tensor is, at its base: "parameter", "buffer", "constant", "input", "op"
    source_name: str | None  # a parameter's or buffer's dotted name: "lin.weight"
    copied: int | str | None  # bytes per call (a formula under dynamic shapes)
    backward_copied: int | str | None  # bytes backward copies the gradient back (0: no gradient flows)
    source: str  # the node moved
    host_waits: bool = False  # device-to-host: the host waits for the device (a sync)
    non_blocking_unpinned: bool = False  # `non_blocking=True` from pageable host memory: not asynchronous
    raises: bool = False  # an op mixing devices (the op is `source`'s consumer): the GPU run raises here

    def message(self) -> str:
        what = {"parameter": f"the parameter `{self.source_name}`", "buffer": f"the buffer `{self.source_name}`",
                "constant": "a constant", "input": "an input"}.get(self.source_kind, "a tensor")
        if self.raises:
            return (f"mixes {what} on {self.src_device} with tensors on {self.dst_device} in one op: on the "
                    f"{self.dst_device.partition(':')[0].upper()} run this raises (\"Expected all tensors to be on "
                    "the same device\")")
        message = (f"moves {what} from {self.src_device} to {self.dst_device} on every call: "
                   f"{bytes_text(self.copied)} copied per call"
                   + (f", and its gradient copied back in backward ({bytes_text(self.backward_copied)})"
                      if self.backward_copied else ""))
        if self.host_waits:
            message += f"; the host waits for {self.src_device} to finish the work queued before it (a host sync)"
        if self.non_blocking_unpinned:
            message += ("; `non_blocking=True` does nothing here: the source is pageable (not pinned) host "
                        "memory, so the copy is synchronous")
        return message

    def fix_title(self) -> str:
        a, b = self.src_device, self.dst_device
        if self.raises:
            return f"move it to {b} once, or compute it there (build host tensors with `device=x.device`)"
        if self.non_blocking_unpinned and self.source_kind not in ("parameter", "buffer"):
            return ("pin the host tensor (`.pin_memory()`, `DataLoader(pin_memory=True)`) so the copy can overlap, "
                    f"or move the data to {b} once outside the model")
        if self.source_kind in ("parameter", "buffer"):  # registered already: the model's move takes it along
            return (f"keep it on {b}: move the model once (`model.to(device)` moves its parameters and buffers) "
                    "instead of moving it in forward")
        if self.source_kind == "constant":
            return (f"keep it on {b}: register it with `register_buffer`/as a parameter so `model.to(device)` "
                    "moves it once, instead of moving it in forward")
        if self.source_kind == "input":
            return (f"pass the input on {b} already: move it once before calling the model (DataLoader "
                    "`pin_memory=True`, `.to(device, non_blocking=True)`)")
        if b.partition(":")[0] == "cpu":
            return (f"keep the result on {a} and copy it to the host only where host data is needed, outside the "
                    "model, once")
        return f"compute it on {b} in the first place (build its inputs there)"


@rule("FXL106", "device-transfer", "warning", violation=DeviceTransfer)
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    yield from _mismatch_hits(view)
    for node in view.ops("to"):
        src, out = node.input, node.tensor
        if src is None or src.tensor is None or out is None:
            continue
        if same_device(src.tensor.device, out.device) is not False:
            continue
        if from_cpu_factory(src) is not None:
            continue  # FXL107
        base = view_base(src)
        nbytes = out.nbytes
        bwd = conversion_backward_bytes(node)
        violation = DeviceTransfer(
            src_device=str(src.tensor.device),
            dst_device=str(out.device),
            source_kind=base.kind,
            source_name=base.param_name if base.kind in ("parameter", "buffer") else None,
            copied=bytes_value(nbytes),
            backward_copied=bytes_value(bwd),
            source=src.name,
            host_waits=src.tensor.device.type != "cpu" and out.device.type == "cpu",
            non_blocking_unpinned=bool(node.args.get("non_blocking")) and src.tensor.device.type == "cpu"
            and out.device.type != "cpu" and not pinned(src),
        )
        yield Hit(node, violation, bytes=nbytes, backward_bytes=bwd)


def _mismatch_hits(view: GraphView) -> Iterator[Hit]:
    """Ops the simulated GPU run raises at (operands on two devices), unless a CPU factory is the host
    operand (FXL107 reports those)."""
    if not getattr(view, "device_mismatches", None):
        return
    for node in view.nodes:
        if not mismatched(view, node.name):
            continue
        host = [i for i in node.tensor_inputs if i.tensor is not None and i.tensor.device.type == "cpu"
                and i.tensor.ndim > 0]
        dev = next((i.tensor.device for i in node.tensor_inputs
                    if i.tensor is not None and i.tensor.device.type != "cpu"), None)
        if not host or dev is None or any(from_cpu_factory(h) is not None for h in host):
            continue
        src = host[0]
        base = view_base(src)
        violation = DeviceTransfer(
            src_device="cpu", dst_device=str(dev), source_kind=base.kind,
            source_name=base.param_name if base.kind in ("parameter", "buffer") else None,
            copied=None, backward_copied=None, source=src.name, raises=True)
        yield Hit(node, violation, severity=Severity.ERROR)

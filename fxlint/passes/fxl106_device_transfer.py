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
counted in `details["backward_bytes"]`.

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

`details` keys: `src_device`, `dst_device`, `source` (node name), `source_kind`
(`input`, `parameter`, `buffer`, `op`...), `backward_bytes`.
"""

from __future__ import annotations

from typing import Iterator

from ..canon import GraphView
from ..registry import Hit, RuleContext, rule
from ..alias import view_base
from ..text import bytes_text
from ._backward import conversion_backward_bytes
from ._sites import numbered
from ._util import same_device
from ._factory import from_cpu_factory


@rule("FXL106", "device-transfer", "warning")
def check(view: GraphView, ctx: RuleContext) -> Iterator[Hit]:
    return iter(numbered(_hits(view)))


def _hits(view: GraphView) -> Iterator[Hit]:
    for node in view.ops("to"):
        src, out = node.input, node.tensor
        if src is None or src.tensor is None or out is None:
            continue
        if same_device(src.tensor.device, out.device) is not False:
            continue
        if from_cpu_factory(src) is not None:
            continue  # FXL107
        base = view_base(src)
        a, b = str(src.tensor.device), str(out.device)
        nbytes = out.nbytes
        bwd = conversion_backward_bytes(node)
        what = {"parameter": f"the parameter `{base.param_name}`", "buffer": f"the buffer `{base.param_name}`",
                "constant": "a constant", "input": "an input"}.get(base.kind, "a tensor")
        message = (f"moves {what} from {a} to {b} on every call: {bytes_text(nbytes)} copied per call"
                   + (f", and its gradient copied back in backward ({bytes_text(bwd)})" if bwd else ""))
        if base.kind in ("parameter", "buffer", "constant"):
            fix = (f"keep it on {b}: register it with `register_buffer`/as a parameter so `model.to(device)` "
                   "moves it once, instead of moving it in forward")
        elif base.kind == "input":
            fix = (f"pass the input on {b} already: move it once before calling the model (DataLoader "
                   "`pin_memory=True`, `.to(device, non_blocking=True)`)")
        elif out.device.type == "cpu":
            fix = (f"keep the result on {a} and copy it to the host only where host data is needed, outside the "
                   "model, once")
        else:
            fix = f"compute it on {b} in the first place (build its inputs there)"
        yield Hit(
            node=node,
            message=message,
            fix=fix,
            bytes=nbytes,
            details={"src_device": a, "dst_device": b, "source": src.name, "source_kind": base.kind,
                     "backward_bytes": bwd},
        )

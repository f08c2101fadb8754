"""FXL108 rewrite: a ``.to()`` / ``.contiguous()`` / ``.float()`` that changes nothing is removed.

## What it does
Removes a conversion whose input already has the requested dtype, device
and memory format (``x.float()`` on a float32 tensor, ``x.to(x.device)``,
``x.contiguous()`` on a contiguous tensor). PyTorch returns the input itself
for these, so the program reads the same tensor either way; the rewrite makes
the graph say so.

## Preconditions (each checked on the graph, else "not applied: <reason>")
- The conversion does not ask for a copy (``copy=True``, ``_to_copy``, and
  ``clone`` always copy).
- The input's dtype, device and layout are known and already what is asked:
  the same dtype, the same device, contiguous (or channels_last when that is
  the requested format). A real conversion (``x.half()`` on float32, the
  first half of the ``x.half().float()`` round trip) changes values and is
  never removed.

## What changes
Nothing the program can observe: the op returned its input. Verification on
the example inputs confirms outputs and gradients.
"""

from __future__ import annotations

import torch

from .base import Change, NotApplied, Site, register
from .graph import bypass


@register("FXL108", "remove-noop-conversion")
def apply(site: Site) -> Change:
    node = site.node
    base = node.input
    if node.op not in ("to", "contiguous") or base is None or base.tensor is None:
        raise NotApplied("the node is not a .to()/.contiguous() conversion of a tensor")
    t = base.tensor
    if node.op == "to":
        if node.args.get("copy"):
            raise NotApplied("the conversion asks for a copy (copy=True)")
        dtype, device = node.args.get("dtype"), node.args.get("device")
        if dtype is not None and dtype != t.dtype:
            raise NotApplied(f"it converts {_dt(t.dtype)} to {_dt(dtype)}: a real conversion, values change")
        if device is not None and torch.device(device) != t.device and not _same_device(torch.device(device), t.device):
            raise NotApplied(f"it moves the tensor from {t.device} to {device}")
        fmt = node.args.get("memory_format")
    else:
        fmt = node.args.get("memory_format") or torch.contiguous_format
    if fmt in (torch.contiguous_format,) and t.is_contiguous() is not True:
        raise NotApplied("the input is not contiguous: .contiguous() copies it")
    if fmt in (torch.channels_last, torch.channels_last_3d) and t.is_channels_last() is not True:
        raise NotApplied("the input is not channels_last: the conversion copies it")
    if fmt not in (None, torch.preserve_format, torch.contiguous_format, torch.channels_last, torch.channels_last_3d):
        raise NotApplied(f"unknown memory format {fmt}")
    bypass(site.gm, node.node, base.node)
    return Change(new_nodes=[], description=f"{node.spelling} removed (returned its input)", bytes_saved=0)


def _dt(d: torch.dtype) -> str:
    return str(d).replace("torch.", "")


def _same_device(a: torch.device, b: torch.device) -> bool:
    """Provably the same device when the program runs: only the CPU. ``cuda`` means whatever device is
    current at run time, which need not be ``cuda:0`` (or the one seen while linting), so a move between
    CUDA spellings is never dropped as a no-op."""
    return a.type == b.type == "cpu"

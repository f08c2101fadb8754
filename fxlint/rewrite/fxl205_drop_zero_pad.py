"""FXL205 rewrite: a constant pad whose widths are all zero is removed.

## What it does
``F.pad(x, (0, 0, 0, pad_w, 0, pad_h))`` with ``pad_w == pad_h == 0`` (static
sizes) returns a clone of ``x``: the same values, copied. The rewrite hands
``x`` itself to the pad's users and drops the copy.

## Preconditions (each checked on the graph, else "not applied: <reason>")
- The node is a constant pad whose widths are all statically zero (widths
  that depend on a dynamic size are never assumed zero).
- Its result is not returned and is not written in place afterwards, and
  the padded tensor is not written in place after the pad either: the users
  now read the input itself, later.
- Autograd is not turned off at the pad while its input requires grad (the
  clone made under ``no_grad`` does not require grad; the input would).
- Every later op accepts the input's own layout (a clone of a non-dense
  view is contiguous; an op that needs contiguous memory refuses and the
  rewrite is not applied).

## What changes
The users read the input instead of a copy: values and gradients are equal
(verification on the example inputs checks both); the result shares the
input's memory, which is why the preconditions exclude in-place writes and
returning it.

Measured (torch 2.13 CPU, AMD EPYC, 2 threads, one run with the load of
other jobs): ``fxlint bench bench/zoo_rewrite.py:swin_t --mode infer
--backends eager`` (torchvision Swin-T at 224 px, batch 2; 15 zero-width pads
dropped, with 12 no-op ``.contiguous()`` removals): bytes copied per call
192.9 MB -> 177.2 MB, peak memory 28.9 MB -> 23.0 MB; the time ratio (0.95x,
IQR 9-15%) is within that run's noise: the pads are ~8% of the bytes a
Swin-T forward copies and a small share of its time.
"""

from __future__ import annotations

from ..canon.values import size_hint
from ..kernels.pad import pad_widths
from .base import Change, NotApplied, Site, register
from .graph import bypass, refresh_values
from .safety import view_hazard


@register("FXL205", "drop-zero-pad")
def apply(site: Site) -> Change:
    node = site.node
    base = node.input
    if node.op != "pad" or base is None or base.tensor is None:
        raise NotApplied("the node is not a pad of a tensor")
    if node.args.get("mode") != "constant":
        raise NotApplied(f"the pad's mode is {node.args.get('mode')!r}, not 'constant'")
    widths = pad_widths(node.args.get("pad"))
    if widths is None or any(w is None for w in widths):
        raise NotApplied("the widths are not all static: they may be non-zero for other input sizes")
    if any(w != 0 for w in widths):
        raise NotApplied(f"the widths {tuple(widths)} are not all zero: the pad pads")
    hazard = view_hazard(site.view, node, base)
    if hazard:
        raise NotApplied(hazard.replace("indexed tensor", "padded tensor"))
    users = [u.node for u in node.users]
    bypass(site.gm, node.node, base.node)
    refresh_values(site.gm, users)
    return Change(new_nodes=[], description=f"{node.spelling} with zero widths removed: its users read "
                                            f"{base.name} directly",
                  bytes_saved=size_hint(site.gm, base.tensor.nbytes))

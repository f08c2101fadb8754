"""FXL104 rewrite: a ``repeat`` that only repeats size-1 dims becomes ``expand`` (a view, no copy).

## What it does
``b.repeat(n, 1)`` on a ``(D,)`` or ``(1, D)`` tensor, ``b.tile(n, 1)`` and
``torch.tile``, where every repeated dim has size 1 (or is a new leading dim):
the repeated copy is replaced by ``b.expand(n, -1)``, the same values as a
zero-stride view. The consumers (``a + b.repeat(n, 1)``) read it exactly as
before; the ``n`` copies of ``b`` are never written, and in training the
backward is a sum instead of a sum over a copied gradient.

The other spelling, ``b.expand(n, -1).contiguous()``, loses its
``.contiguous()``: the expanded view is what the consumers read.

## Preconditions (each checked on the graph, else "not applied: <reason>")
- The repeat counts are constants, and every dim repeated more than once has
  size 1 in the input: repeating a longer dim tiles it, which no view can do.
- Neither the result nor the repeated tensor (nor anything sharing memory
  with either) is written in place afterwards: an expanded tensor shares one
  element between all its repeats.
- The result is not returned while the repeated tensor is a graph input,
  parameter, buffer or another output.
- Every later op accepts the expanded view (a ``.view()`` that needs
  contiguous memory refuses; fake tensors are propagated to check).

## What changes
The result is a view with stride 0 on the repeated dims: it is not
contiguous and may not be written in place (PyTorch raises on in-place writes
into expanded tensors, which the preconditions already exclude).
"""

from __future__ import annotations

import torch.fx as fx

from ..canon import CanonNode
from ..canon.values import size_hint
from ..tensor.info import known
from .base import Change, NotApplied, Site, register
from .graph import bypass, refresh_values, retarget
from .safety import view_hazard


@register("FXL104", "repeat-to-expand")
def apply(site: Site) -> Change:
    node = site.node
    if node.op == "contiguous" and node.input is not None and node.input.op == "expand":
        return _drop_contiguous_of_expand(site)
    if node.op == "repeat_interleave":
        raise NotApplied("a repeat_interleave is not rewritten: apply the finding's fix by hand (its shape changes "
                         "with the view after it)")
    if node.op != "repeat":
        raise NotApplied("the node is neither a repeat nor the .contiguous() of an expand")
    base = node.input
    reps = node.args.get("repeats") or ()
    if base is None or base.tensor is None or not reps or not all(isinstance(r, (int, CanonNode)) for r in reps):
        raise NotApplied("the repeat counts are neither constants nor sizes")
    shape = list(base.tensor.shape)
    reps = list(reps)
    if node.args.get("style") == "tile" and len(reps) < len(shape):
        reps = [1] * (len(shape) - len(reps)) + reps  # tile pads the counts on the left
    if len(reps) < len(shape):
        raise NotApplied("fewer repeat counts than dims")
    padded = [1] * (len(reps) - len(shape)) + shape
    sizes: list[int | fx.Node] = []  # -1 keeps a dim; a node is a dynamic count
    for d, (size, r) in enumerate(zip(padded, reps)):
        if isinstance(r, int) and r == 1:
            sizes.append(-1 if d >= len(reps) - len(shape) else 1)
        elif known(size) == 1:
            sizes.append(r.node if isinstance(r, CanonNode) else r)  # a size node (dynamic count) stays one
        else:
            times = getattr(r, "name", r)
            raise NotApplied(f"dim {d - (len(reps) - len(shape))} has size {size} and is repeated {times} times: "
                             "that tiles it, which a view cannot do")
    hazard = view_hazard(site.view, node, base)
    if hazard:
        raise NotApplied(hazard.replace("indexed tensor", "repeated tensor"))
    nodes = retarget(site.gm, node.node, "expand", base.node, [sizes])
    refresh_values(site.gm, nodes)
    out = node.tensor
    def text(v: object) -> str:
        return getattr(v, "name", None) or str(v)

    return Change(
        new_nodes=nodes,
        description=f"repeat({', '.join(map(text, reps))}) -> expand({', '.join(map(text, sizes))})",
        bytes_saved=size_hint(site.gm, out.nbytes) if out is not None else None,
    )


def _drop_contiguous_of_expand(site: Site) -> Change:
    node, expanded = site.node, site.node.input
    assert expanded is not None
    hazard = view_hazard(site.view, node, expanded)
    if hazard:
        raise NotApplied(hazard.replace("indexed tensor", "expanded tensor"))
    users = [u.node for u in node.users]
    out = node.tensor
    bypass(site.gm, node.node, expanded.node)
    refresh_values(site.gm, users)
    return Change(new_nodes=[], description=".contiguous() of an expand removed: its users read the expanded view",
                  bytes_saved=size_hint(site.gm, out.nbytes) if out is not None else None)

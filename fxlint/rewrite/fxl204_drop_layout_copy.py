"""FXL204 rewrite: a ``.contiguous()`` that turns channels_last data into NCHW right before a conv is removed.

## What it does
``x.permute(0, 3, 1, 2).contiguous()`` on an NHWC batch, then a convolution:
the permuted tensor already has the channels_last layout, which the
convolution kernels accept directly, so the full-size copy to NCHW buys
nothing. The rewrite hands the permuted (channels_last) tensor to the
convolution(s) and drops the copy.

## Preconditions (each checked on the graph, else "not applied: <reason>")
- The input of ``.contiguous()`` is a 4-D or 5-D channels_last tensor that is
  not contiguous (so the call really copies), with a static layout.
- Every user of the result is a convolution that reads it as its input (not
  as a weight), and the result is not returned.
- The tensor it copies is not written in place afterwards: the convolution
  now reads it directly, later.
- No gradient flows through the convolution: on CPU its channels_last backward
  copied more than the removed copy saves (``fxlint.audit(..., train=True)``
  on a 2x8x12x12 input into a 3x3 conv: 9.2 kB per step before, 31.2 kB after;
  inference: 9.2 kB before, 4.6 kB after, the weight converted to
  channels_last on each call).

## What changes
The convolution runs on channels_last data and returns channels_last output
(the same values, up to the floating-point order of its reductions, which
verification compares with the dtype's tolerance). Later ops see the other
layout; an op that needs NCHW memory (``.view()``) refuses and the rewrite is
not applied.
"""

from __future__ import annotations

from ..canon.values import size_hint
from .base import Change, NotApplied, Site, register
from .graph import bypass, refresh_values
from .safety import view_hazard


@register("FXL204", "drop-layout-copy")
def apply(site: Site) -> Change:
    node = site.node
    base = node.input
    if node.op != "contiguous" or base is None or base.tensor is None:
        raise NotApplied("the node is not a .contiguous() of a tensor")
    t = base.tensor
    if t.is_channels_last() is not True or t.is_contiguous() is not False:
        raise NotApplied("the input is not a (non-contiguous) channels_last tensor")
    if any(u.tensor is not None and u.tensor.requires_grad and u.grad_enabled for u in node.users):
        raise NotApplied("gradients flow through the convolution (autograd is on, its weight requires grad; "
                         "eval() does not turn that off), and on CPU the channels_last convolution backward "
                         "copies more than the copy saves (fxlint.audit, 2x8x12x12 input, 3x3 conv: 9.2 kB -> "
                         "31.2 kB per step); for inference rewrite under torch.no_grad() (`fxlint fix --no-grad`)")
    if node in site.view.outputs:
        raise NotApplied("the contiguous tensor is returned: the caller may rely on its layout")
    users = node.users
    if not users or any(u.op != "conv" or u.args.get("input") is not node for u in users):
        raise NotApplied("a user of the contiguous tensor is not a convolution reading it as its input")
    hazard = view_hazard(site.view, node, base)
    if hazard:
        raise NotApplied(hazard.replace("indexed tensor", "copied tensor"))
    user_nodes = [u.node for u in users]
    bypass(site.gm, node.node, base.node)
    refresh_values(site.gm, user_nodes)
    return Change(
        new_nodes=[],
        description=f".contiguous() removed: {', '.join(u.name for u in users)} read{'s' if len(users) == 1 else ''} "
                    "the channels_last tensor directly",
        bytes_saved=size_hint(site.gm, t.nbytes),
    )

"""FXL201 rewrite: a ``Linear`` applied to a dim moved last and moved back becomes a ``bmm`` over that dim.

## What it does
``proj(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)`` mixes the values along
dim 1 of ``x`` (the talking-heads attention of timm's CaiT, ``proj_l`` and
``proj_w`` over the heads of a ``(B, H, N, N)`` score tensor). ``F.linear``
flattens the permuted input's leading dims into the rows of one ``mm``; they
do not merge, so the input is copied on every call, in eager and, where its
producer is an ATen kernel (the ``q @ k.transpose(-2, -1)`` that makes the
scores), in Inductor's program too (``cpp_fused_clone_permute`` before
``extern_kernels.mm``). The rewrite computes the same values with the weight on
the other side, reading ``x`` as it is laid out:

```python
# d: the dim the linear mixes; B: the product of the sizes before it, R: after it
y = torch.bmm(weight.expand(B, G, C), x.reshape(B, C, R)) + bias.reshape(G, 1)
y = y.reshape(<the permuted-back result's shape>)
```

``weight.expand`` is a stride-0 view, which ``bmm`` reads without copying;
``x.reshape`` of a contiguous ``x`` is a view. In Inductor's program (checked
with ``torch._inductor.utils.run_and_get_code`` on CaiT's pattern) the copy
kernel before the ``mm`` is gone: an ``extern_kernels.bmm`` reads ``x`` where
it lies, and the bias's add is fused into the kernel that reads the result
(the softmax). ``baddbmm`` would not do: ATen copies its bias into the output
before the BLAS call, eager and Inductor's extern kernel alike.

## Preconditions (each checked on the graph, else "not applied: <reason>")
Its sites are FXL201's findings about the input of a ``Linear`` made by a
permute; the rule's other findings (a matmul's operands, SDPA's q/k/v) are advice
only and are not listed as "not applied".

- The finding is about the linear's input, which is a ``permute`` of a
  contiguous tensor ``x`` (static shape, float32 or float64) moving one dim
  ``d`` (not the last) to the end and keeping the others in order.
- The weight is 2-D over that dim (``(G, x.shape[d])``), the bias 1-D or none,
  both graph values (``nn.Linear``'s parameters, or any tensor).
- The linear's only user is a ``permute`` that puts the dims back (its
  permutation is the inverse of the first): the result then has ``x``'s order
  with ``G`` at dim ``d``, which is what ``bmm`` writes.
- Every later op accepts the new value (fake tensors are propagated).

## What changes
The permuted-back result used to be a non-contiguous view of the linear's
output; it is now a contiguous tensor of the same shape and values (a different
memory layout, and floating-point sums in another order: verification compares
outputs and gradients with the dtype's tolerance). In training the weight's
gradient is summed over the batch of the ``bmm`` (the expand's backward).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.fx as fx

from ..canon import CanonNode
from ..canon.text import operand_name
from ..canon.values import size_hint
from ..findings import Finding
from ..tensor.info import known
from .base import Change, NotApplied, Site, register
from .graph import copy_provenance, erase_if_dead, refresh_values

_DTYPES = (torch.float32, torch.float64)


def _addresses(finding: Finding) -> bool:
    """FXL201's findings about a linear's input made by a permute; its other findings (a matmul's operands,
    SDPA's q/k/v) are advice this rewrite does not act on, and are not listed as "not applied"."""
    d = finding.details
    return d.get("kernel") == "F.linear" and d.get("operand") == "input" and d.get("permute") is not None


@register("FXL201", "linear-over-dim", sites=_addresses)
def apply(site: Site) -> Change:
    node = site.node
    if node.op != "linear" or site.details.get("operand") != "input":
        raise NotApplied("the copy is not of a linear's input")
    perm = node.input
    if perm is None or perm.op != "permute" or not perm.args.get("dims") or perm.input is None:
        raise NotApplied("the linear's input is not a permute of a tensor")
    x = perm.input
    t = x.tensor
    if t is None or t.ndim < 2:
        raise NotApplied("the permuted tensor has no known value of 2 dims or more")
    dims = tuple(perm.args["dims"])
    n = len(dims)
    d = dims[-1]
    if d == n - 1 or dims[:-1] != tuple(i for i in range(n) if i != d):
        raise NotApplied(f"the permute {dims} does not move one dim to the end keeping the others in order")
    sizes = [known(s) for s in t.shape]
    shape = [s for s in sizes if s is not None]
    if len(shape) != n:
        raise NotApplied("a size of the permuted tensor is dynamic; the bmm's shapes would add guards")
    if t.is_contiguous() is not True:
        raise NotApplied("the permuted tensor is not contiguous: reshaping it for bmm would copy it")
    if t.dtype not in _DTYPES:
        raise NotApplied(f"{t.dtype} is not float32/float64: the CPU bmm of reduced precision (oneDNN) copies "
                         "a stride-0 batch, which this rewrite relies on")
    weight, bias = node.args.get("weight"), node.args.get("bias")
    if not isinstance(weight, CanonNode) or weight.tensor is None or weight.tensor.ndim != 2:
        raise NotApplied("the linear's weight is not a 2-D graph value")
    if bias is not None and (not isinstance(bias, CanonNode) or bias.tensor is None or bias.tensor.ndim != 1):
        raise NotApplied("the linear's bias is not a 1-D graph value")
    g, c = (known(s) for s in weight.tensor.shape)
    if g is None or c is None or c != shape[d]:
        raise NotApplied(f"the weight's shape does not contract dim {d} of size {shape[d]}")
    users = node.users
    inverse = tuple(dims.index(i) for i in range(n))
    if len(users) != 1 or users[0].op != "permute" or tuple(users[0].args.get("dims") or ()) != inverse:
        raise NotApplied(f"the linear's result is not only permuted back (by {inverse}): bmm would write "
                         "another layout than its users read")
    back = users[0]
    if node in site.view.outputs:
        raise NotApplied("the linear's result is returned")
    b, r = math.prod(shape[:d]), math.prod(shape[d + 1:])
    out_shape = [*shape[:d], g, *shape[d + 1:]]
    new = _emit(site.gm, node.node, back.node, x.node, weight.node,
                bias.node if isinstance(bias, CanonNode) else None, b, g, c, r, out_shape)
    refresh_values(site.gm, new)
    copied = site.finding.bytes or size_hint(site.gm, t.nbytes)
    spelled = "bmm" + (" + bias" if bias is not None else "")
    return Change(
        new_nodes=new,
        description=(f"{node.spelling}({operand_name(x)}.permute{dims}).permute{inverse} -> "
                     f"torch.{spelled} over dim {d} of {operand_name(x)}, read as it is laid out "
                     "(the weight expanded over the batch, a view)"),
        bytes_saved=copied if isinstance(copied, int) else None,
        also_changed=[perm.name],
    )


def _emit(gm: fx.GraphModule, linear: fx.Node, back: fx.Node, x: fx.Node, weight: fx.Node, bias: fx.Node | None,
          b: int, g: int, c: int, r: int, out_shape: list[int]) -> list[fx.Node]:
    """The bmm nodes, in the graph's dialect, before ``linear``; ``back``'s users read the last one."""
    graph = gm.graph
    aten = isinstance(linear.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket))
    new: list[fx.Node] = []

    def call(method: str, *args: Any) -> fx.Node:
        if aten:
            target = {"expand": torch.ops.aten.expand.default, "reshape": torch.ops.aten.reshape.default,
                      "bmm": torch.ops.aten.bmm.default, "add": torch.ops.aten.add.Tensor}[method]
            made = graph.call_function(target, args)
        elif method in ("bmm", "add"):
            made = graph.call_function(getattr(torch, method), args)
        else:
            made = graph.call_method(method, args)
        copy_provenance(made, linear)
        new.append(made)
        return made

    with graph.inserting_before(linear):
        w3 = call("expand", weight, [b, g, c])
        x3 = call("reshape", x, [b, c, r])
        y = call("bmm", w3, x3)
        if bias is not None:  # an add Inductor fuses into the next kernel (baddbmm would copy the bias into
            # its output before the BLAS call, in eager and as Inductor's extern kernel alike)
            y = call("add", y, call("reshape", bias, [g, 1]))
        out = call("reshape", y, out_shape)
    back.replace_all_uses_with(out)
    graph.erase_node(back)
    erase_if_dead(graph, [linear])
    return new

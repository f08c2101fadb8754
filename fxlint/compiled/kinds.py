"""What made Inductor copy: the one classification of the compiled program's copies.

Every copy buffer of a lowering (``CompiledBuffer.copy``) that no eager finding explains is of exactly
one kind, decided here and nowhere else; each kind has one rule (``fxlint/passes/fxl70x_*.py``), so a
copy of the compiled program has one owner, and ignoring a code hides that code's findings only:

* ``MUTATION``: it writes a value back into an input of the graph (a parameter, a buffer or the caller's
  tensor written in place: functionalization's epilogue ``copy_``) - FXL704;
* ``CAT``: it is written into a slice of a concatenation's output, because Inductor could not compute
  that input in place there, or it is the output of a concatenation of one piece and empty tensors (a
  copy of that piece, as Inductor lowers it) - FXL703;
* ``INPUT_LAYOUT``: it lays an input of the graph (a parameter, a buffer, the caller's tensor), as it
  comes in, out for an ATen kernel Inductor calls (a convolution's channels_last weight and input) - FXL702;
* ``KERNEL_LAYOUT``: it lays a value the graph computes out for an ATen kernel Inductor calls (the
  layout ``require_stride_order`` / ``realize_input`` asks of an extern kernel's input: mm, bmm,
  convolution, scaled_dot_product_attention, a fallback) - FXL701;
* ``OUTPUT_LAYOUT``: it converts a value the graph returns to the layout eager would return it in
  (a convolution's channels_last output returned NCHW) - FXL705;
* ``OTHER``: any other copy (a layout the graph asks for and no rule explains): listed in the report
  as a copy no finding explains.

The order above is the order of precedence: a mutation copy-back that also feeds a kernel is a mutation.
"""

from __future__ import annotations

from typing import Any

from .lowering import CompiledBuffer

MUTATION, CAT, INPUT_LAYOUT, KERNEL_LAYOUT = "mutation", "cat", "input-layout", "kernel-layout"
OUTPUT_LAYOUT, OTHER = "output-layout", "other"
KINDS = (MUTATION, CAT, INPUT_LAYOUT, KERNEL_LAYOUT, OUTPUT_LAYOUT, OTHER)


def kind_of(buf: CompiledBuffer, view: Any = None) -> str:
    """The kind of one copy buffer of the compiled program (``view``: the captured graph's canonical view,
    which tells an input as it comes in from a view of it)."""
    if buf.mutates is not None:
        return MUTATION
    if buf.into == "cat" or _made_by_a_cat(buf, view):
        return CAT
    if buf.consumers and buf.only_inputs and not _through_a_view(buf, view):
        return INPUT_LAYOUT  # the input as it comes in (a view of it in between is a computed value)
    if buf.consumers:
        return KERNEL_LAYOUT
    if buf.output and buf.read_nodes:
        return OUTPUT_LAYOUT
    return OTHER


def _made_by_a_cat(buf: CompiledBuffer, view: Any) -> bool:
    """Realised by a `cat` itself (its producer): a concatenation whose other inputs are empty (a KV cache's
    first update, `torch.cat([cache, k])` with an empty cache) is lowered to a copy of its one piece."""
    node = view.by_name.get(buf.producer) if view is not None and buf.producer is not None else None
    return node is not None and node.kind == "op" and node.op == "cat"


def _through_a_view(buf: CompiledBuffer, view: Any) -> bool:
    """Among the ops lowered into ``buf``, a view op of the user's that reads an input ``buf`` reads (the input
    is read through it). A view of another value does not count: a kernel fused from several ops gives each
    of its buffers the provenance of them all (a convolution's weight laid out in the kernel that computes
    the upsampled, sliced activation it convolves)."""
    if view is None:
        return False
    read = set(buf.read_nodes)
    nodes = [view.by_name.get(n) for n in buf.sources]
    return any(n is not None and n.kind == "op" and (n.is_view or n.is_maybe_view)
               and (not read or any(i.name in read for i in n.inputs)) for n in nodes)


__all__ = ["CAT", "INPUT_LAYOUT", "KERNEL_LAYOUT", "KINDS", "MUTATION", "OTHER", "OUTPUT_LAYOUT", "kind_of"]

"""What the compiled rules (FXL7xx) share: the kernels Inductor calls and the layouts it gives a copy,
in the user's words."""

from __future__ import annotations

from collections.abc import Sequence

from ..canon import CanonNode
from ..canon.text import call_text, operand_name, shape_text, user_name
from ..compiled.lowering import CompiledBuffer
from ..compiled.program import CompiledGraph

#: the ATen kernels Inductor calls (extern kernels and fallbacks), as the user knows them
KERNEL_NAMES = {
    "convolution": "the convolution", "_convolution": "the convolution",
    "convolution_backward": "the convolution's backward",
    "_scaled_dot_product_flash_attention_for_cpu": "scaled_dot_product_attention (its CPU flash kernel)",
    "_scaled_dot_product_flash_attention": "scaled_dot_product_attention (its flash kernel)",
    "_scaled_dot_product_efficient_attention": "scaled_dot_product_attention (its efficient kernel)",
    "_scaled_dot_product_cudnn_attention": "scaled_dot_product_attention (its cuDNN kernel)",
}

CONV_KERNELS = frozenset({"convolution", "_convolution", "convolution_backward"})
MATMUL_KERNELS = frozenset({"mm", "addmm", "bmm", "baddbmm"})
ATTENTION_PREFIX = "_scaled_dot_product"


def backward_value(compiled: CompiledGraph, buf: CompiledBuffer) -> str:
    """What a copy of the compiled backward copies, in the user's words: a forward value saved for the
    backward (`` `x` (saved for the backward)``), else the gradient computed for a forward op."""
    saved = next((n for n in map(compiled.node, reversed(buf.saved)) if n is not None), None)
    if saved is not None:
        return f"{value_text(saved)} (saved for the backward)"
    read = next((n for n in map(compiled.node, reversed(buf.read_nodes)) if n is not None), None)
    return f"the gradient of {value_text(read)}" if read is not None else "a gradient"


def in_phase(phase: str, message: str) -> str:
    """A compiled rule's message for a copy of the compiled backward: said so first."""
    return f"in the backward, {message}" if phase == "backward" else message


def kernel_text(ops: Sequence[str]) -> str:
    """``the convolution``, `` `bmm` and the convolution``: the ATen kernels that read a copy."""
    names = list(dict.fromkeys(KERNEL_NAMES.get(op, f"`{op}`") for op in ops))
    if not names:
        return "an ATen kernel"
    return " and ".join(names) if len(names) <= 2 else ", ".join(names[:-1]) + f" and {names[-1]}"


def layout_name(size: Sequence[int] | None, stride: Sequence[int] | None) -> str:
    """``channels_last``, ``channels_last_3d``, ``contiguous``, or ``strides (...)``: a copy's layout."""
    if size is None or stride is None:
        return "another layout"
    if _dense(size, stride, range(len(size) - 1, -1, -1)):
        return "contiguous"
    if len(size) == 4 and _dense(size, stride, (1, 3, 2, 0)):
        return "channels_last"
    if len(size) == 5 and _dense(size, stride, (1, 4, 3, 2, 0)):
        return "channels_last_3d"
    return f"strides {shape_text(tuple(stride))}"


def _dense(size: Sequence[int], stride: Sequence[int], order: Sequence[int]) -> bool:
    """Is ``stride`` the dense layout whose dims, innermost first, are ``order``? (size-1 dims are free)"""
    expected = 1
    for d in order:
        if size[d] != 1 and stride[d] != expected:
            return False
        expected *= size[d]
    return True


def value_text(node: CanonNode | None) -> str:
    """The user's words for a value, ready for a message: an input's or parameter's own name, an op's
    variable (`` `x` ``), the module whose output it is (``the output of `blocks.0.proj` ``), else how the
    op is written (`` `x.permute(0, 2, 1)` ``)."""
    if node is None:
        return "a value"
    if node.kind != "op":
        return f"`{operand_name(node)}`"
    name = user_name(node)
    if name is not None:
        return f"`{name}`"
    if node.module_path and node.op in MODULE_OPS:
        return f"the output of `{node.module_path}`"
    return f"`{call_text(node)}`"


#: canonical ops that are a module's own computation (its output is best named by the module)
MODULE_OPS = frozenset({"conv", "linear", "matmul", "batch_norm", "layer_norm", "group_norm", "embedding"})


def role_of(node: CanonNode | None) -> str:
    """``parameter``, ``buffer`` or ``input`` (the caller's tensor), for an input of the graph."""
    if node is None:
        return "input"
    return node.kind if node.kind in ("parameter", "buffer") else "input"


def operand_of(ops: Sequence[CanonNode], sources: Sequence[str], size: Sequence[int] | None) -> CanonNode | None:
    """Which tensor argument of the ops a kernel runs (one op, or the several a replacement stands for) a
    copy feeding it is: the one whose node (or a view of it) is among the copy's sources (the ops lowered
    into the copy), else the only one of the copy's size."""
    args = list(dict.fromkeys(a for op in ops for a in op.tensor_inputs))
    hit = [a for a in args if any(n.name in sources for n in a.view_chain())]
    if len(hit) > 1:
        hit = [a for a in hit if a.name in sources] or hit
    if len(hit) == 1:
        return hit[0]
    if size is not None:
        same = [a for a in args if a.tensor is not None and tuple(a.tensor.shape) == tuple(size)]
        if len(same) == 1:
            return same[0]
    return None


__all__ = ["ATTENTION_PREFIX", "CONV_KERNELS", "KERNEL_NAMES", "MATMUL_KERNELS", "backward_value", "in_phase",
           "kernel_text",
           "layout_name", "operand_of", "role_of", "value_text"]

"""The layout each tensor's gradient comes back in during the backward, predicted from the forward graph (kept
private to the passes package).

A view's backward reshapes the gradient it is handed back to the view's input, and that reshape copies when the
gradient is laid out so that the dims it merges are not adjacent in memory: `q.view(B, N, H, D).transpose(1, 2)`
whose gradient comes back contiguous in (B, H, N, D) order is copied by the view's backward. Whether it does
depends on which ops' backwards wrote the gradient, so the gradient's strides are carried from the graph's
outputs back to its inputs, op by op, with the rules below; where a rule is missing the layout is unknown (None)
and nothing is predicted from it.

What each op's backward hands its input (each rule measured with autograd hooks, torch 2.13, CPU;
tests/test_fxl121_gradient_layout_copy.py checks them):

* a permute, the permuted gradient; a view, reshape, squeeze or unsqueeze, the gradient reshaped to the input's
  shape (a view where ATen's view rule allows, else a contiguous copy: the copies this module predicts);
* a dropout of probability 0 (timm's default `nn.Dropout(0.0)`), or not training: the gradient itself (it hands
  back its input, no autograd node);
* `+`, `-`, `*`, `/`, `neg`, `exp`, `pow`, `sqrt`, `rsqrt`, `sigmoid`, `tanh`, `gelu`, `silu`, `F.normalize`,
  dropout, conversions, `clone`, `contiguous`: the gradient's
  own layout (TensorIterator lays its result out like the gradient, its first operand), for an input of the
  output's shape; `cat`: a slice of the gradient;
* `F.pad` with zeros of width 0 (timm's "same" padding where none is needed): the gradient itself; with a
  constant of some width, a new tensor of the input's shape, dense in the gradient's order; reflect, replicate
  and circular pads, a new contiguous tensor; an `expand` that broadcasts: the gradient summed over the broadcast
  dims, a new contiguous tensor (a GQA `k[:, :, None].expand(...)`);
* a subscript write of plain slices, `base[:, :, 1:, 1:] = value` (MViTv2's relative position terms): the value
  gets its piece of the base's gradient cloned into a new contiguous tensor (`CopySlices`);
* `F.interpolate` (4-D): nearest and bilinear, a new tensor in channels_last for a channels-last gradient, else
  contiguous; bicubic, contiguous;
* matmul, `mm`, `bmm`, `linear`, `softmax`, `log_softmax`, `layer_norm`, `where`, `masked_fill`, `relu`, `glu`,
  a slice
  (`slice_backward` zero-fills the input), `split`/`chunk`/`unbind` (their backward is a `cat`/`stack`): a new
  contiguous tensor;
* `einsum`: contiguous in the order `bmm` read the operand (``fxlint.kernels.einsum``);
* a convolution, `batch_norm` and the poolings (average, max, adaptive average): a new tensor in the input's
  memory format (contiguous, or channels_last for a channels_last input), whatever the output gradient's layout;
  a conv on an input in any other layout (a permuted view), contiguous: it runs on a contiguous copy; `group_norm`
  likewise on a 4-D input (channels_last for channels_last), and contiguous for any other layout (it
  runs on a contiguous copy); `mean` (and an adaptive average pool to 1 x 1, which ATen runs
  as one): the gradient expanded over the reduced dims and divided, a new tensor TensorIterator lays out from the
  expanded strides (contiguous for a contiguous gradient, whatever the input's layout);
* `scaled_dot_product_attention` on the CPU, without dropout (the flash kernel): q, k and v's gradients are
  written (B, N, H, D)-major and handed back transposed, the layout of `x.view(B, N, H, D).transpose(1, 2)`;
  with dropout, or a mask that needs a gradient (a learned position bias: T5, Swin), it runs the math path:
  q's and v's gradients contiguous, k's contiguous in the order `k.transpose(-2, -1)` is read (measured with
  tensor hooks and a contiguous output gradient).

Where several ops read a tensor, autograd adds their gradients as they arrive: the op latest in the forward
runs first in the backward, and the next gradient is added in place into the first one when that one is a dense
tensor nothing else holds any more: a fresh tensor, or a gradient passed on (through `+`, `.contiguous()`) whose
other holders have run by then (measured: the input of a diffusers transformer block, read by a residual add and a
LayerNorm, keeps the residual's gradient layout, its own). A slice of a gradient (a `cat`'s piece) is not added
into: the sum then lands in the next fresh gradient, or in a new tensor laid out like the first.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..canon import CanonNode, GraphView
from ..tensor.layout import (
    CHANNELS_LAST,
    CHANNELS_LAST_3D,
    CONTIGUOUS,
    contiguous_strides,
    dense_strides,
    is_contiguous_as,
    iter_output_strides,
)
from ..tensor.symbolic import Dim
from ..tensor.viewable import check_view, contiguous_copy_bytes
from ._constant import dropout_training

#: ops whose backward hands each input of the output's shape a gradient laid out like the output's
_FOLLOW = frozenset({"add", "sub", "rsub", "mul", "div", "true_divide", "neg", "exp", "gelu", "silu", "dropout",
                     "to", "clone", "contiguous", "alias", "identity", "pow", "sigmoid", "tanh", "sqrt", "rsqrt",
                     "normalize"})
#: of those, the ones whose backward passes the gradient itself on (no new tensor autograd could add into)
_PASS_ON = frozenset({"add", "sub", "clone", "contiguous", "alias", "identity"})
#: ops whose backward writes their input's gradient into a new contiguous tensor
_CONTIGUOUS = frozenset({"matmul", "mm", "bmm", "linear", "addmm", "baddbmm", "softmax", "log_softmax", "layer_norm",
                         "where", "masked_fill", "relu", "glu"})
#: ops that cut their input into pieces: their backward puts the pieces' gradients together with cat or stack
_PIECES = frozenset({"split", "chunk", "unbind", "split_with_sizes", "tensor_split"})
#: ops whose backward writes their input's gradient as a new tensor in the input's memory format, whatever the layout
#: of their output's gradient (measured with tensor hooks): conv, batch_norm; group_norm (contiguous input)
_IN_INPUT_LAYOUT = frozenset({"conv", "batch_norm", "group_norm"})
#: views whose backward is a reshape of the gradient
_RESHAPES = frozenset({"view", "reshape", "squeeze", "unsqueeze", "flatten", "unflatten"})
#: poolings: their backward writes the input's gradient in the input's memory format (measured with tensor hooks);
#: an adaptive average pool to 1 x 1 is a ``mean`` (below)
_POOLS = frozenset({"avg_pool2d", "max_pool2d", "adaptive_avg_pool2d"})


@dataclass(frozen=True)
class Grad:
    """The gradient handed back to a tensor: its strides, whether it is a fresh tensor (autograd may add the
    next gradient into it in place), the op whose backward wrote this layout (None: the graph's output), and the
    layout copy (`.contiguous()`, `clone(contiguous_format)`) it came back through, if any."""

    strides: tuple[Dim, ...]
    fresh: bool
    made_by: CanonNode | None
    through_copy: CanonNode | None = None


@dataclass(frozen=True)
class BackwardCopy:
    """A copy the backward makes of a gradient: at ``node`` (a view reshaping its gradient back, or a `linear`
    folding its output's gradient to 2-D), ``bytes`` per training step, of the gradient ``grad``."""

    node: CanonNode
    bytes: Dim
    grad: Grad


class GradLayouts:
    """The gradient layouts of one graph (``of(view)`` computes them once per view)."""

    def __init__(self, view: GraphView) -> None:
        self.grads: dict[int, Grad | None] = {}
        self.copies: list[BackwardCopy] = []
        self._compute(view)

    def at(self, node: CanonNode) -> Grad | None:
        """The gradient ``node``'s output gets back; None when no gradient flows or its layout is not known."""
        return self.grads.get(id(node))

    def copy_at(self, node: CanonNode) -> BackwardCopy | None:
        return next((c for c in self.copies if c.node is node), None)

    # -- the propagation ------------------------------------------------------------------------------
    def _compute(self, view: GraphView) -> None:
        contributions: dict[int, list[tuple[int, Grad | None]]] = {}
        returned = {id(n) for n in view.outputs if _has_grad(n)}
        for node in reversed(view.nodes):
            if node.kind != "op":
                continue
            if node.op == "setitem":  # no output of its own: its value gets a piece of the base's gradient
                self._setitem(node, contributions, returned)
                continue
            got = contributions.get(id(node))
            if not got and id(node) in returned:
                assert node.tensor is not None
                got = [(len(view.nodes), Grad(contiguous_strides(node.tensor.shape), True, None))]
            if not got:
                continue  # no gradient reaches it
            g = _accumulate(got, node.tensor.shape) if node.tensor is not None else None
            self.grads[id(node)] = g
            for inp, c in self._backward(node, g):
                if _has_grad(inp) or (inp.tensor is None and inp.op in _PIECES):
                    contributions.setdefault(id(inp), []).append((node.position, c))

    @staticmethod
    def _setitem(u: CanonNode, contributions: dict[int, list[tuple[int, Grad | None]]], returned: set[int]) -> None:
        """``base[slices] = value``: autograd's ``CopySlices`` hands ``value`` its piece of the base's gradient (the
        gradient of the ops that read the base after the write) cloned contiguous (measured with tensor hooks).
        Only plain slices of every dim are modelled."""
        base, value, spec = u.input, u.args.get("value"), u.args.get("index")
        if base is None or base.tensor is None or not isinstance(value, CanonNode) or not _has_grad(value) \
                or value.tensor is None or spec is None or value.tensor.ndim != base.tensor.ndim:
            return
        if not all(it.kind == "slice" for it in spec.items):
            return
        if id(base) not in returned and not any(p > u.position for p, _ in contributions.get(id(base), [])):
            return  # no gradient reaches the base after the write
        contributions.setdefault(id(value), []).append((u.position, Grad(contiguous_strides(value.tensor.shape), True,
                                                                         u)))

    def _backward(self, u: CanonNode, g: Grad | None) -> list[tuple[CanonNode, Grad | None]]:
        """What ``u``'s backward hands each of its tensor inputs, given the gradient ``g`` of its output."""
        op = u.op
        x = u.input
        if op == "dropout" and _returns_input(u):  # dropout(p=0) and eval-mode dropout hand back their input
            return [(x, g)] if x is not None else []
        if op == "tuple_getitem":  # a piece of split/chunk/unbind: the node cutting it decides (below)
            return [(x, g)] if x is not None else []
        if u.tensor is None:  # a node with several outputs
            if op in _PIECES and x is not None and x.tensor is not None:
                return [(x, Grad(contiguous_strides(x.tensor.shape), True, u))]
            return [(i, None) for i in u.tensor_inputs]
        if op == "permute" and x is not None:
            dims = u.args.get("dims")
            if g is None or dims is None or len(dims) != len(g.strides):
                return [(x, None)]
            strides: list[Dim] = [0] * len(dims)
            for j, d in enumerate(dims):
                strides[d] = g.strides[j]
            return [(x, Grad(tuple(strides), False, g.made_by, g.through_copy))]
        if (op in _RESHAPES or (op == "slice" and _whole(u))) and x is not None:
            return [(x, self._reshaped(u, x, g))]
        if op == "slice" and x is not None and x.tensor is not None:
            return [(x, Grad(contiguous_strides(x.tensor.shape), True, u))]
        if op == "expand" and x is not None and x.tensor is not None and u.tensor is not None:
            if tuple(x.tensor.shape) == tuple(u.tensor.shape):
                return [(x, g)]
            # the backward sums the gradient over the broadcast dims into a new contiguous tensor, whatever its
            # layout (measured: a GQA `k[:, :, None].expand(...)` with a transposed gradient)
            return [(x, Grad(contiguous_strides(x.tensor.shape), True, u))]
        if op == "pad" and x is not None:
            return [(x, _pad_grad(u, x, g))]
        if op == "upsample" and x is not None and x.tensor is not None:
            return [(x, _upsample_grad(u, x, g))]
        if op in _PIECES and x is not None and x.tensor is not None:
            return [(x, Grad(contiguous_strides(x.tensor.shape), True, u))]
        if op == "cat":  # each input gets a slice of the gradient: strided, unless the slice is contiguous
            return [(i, Grad(g.strides, False, u if _cut_strided(u, i, g) else g.made_by, g.through_copy)
                     if g is not None and _same_rank(i, g) else None) for i in u.tensor_inputs]
        if op == "scaled_dot_product_attention":
            return self._attention(u)
        if (op == "mean" or _global_pool(u)) and x is not None and x.tensor is not None:
            return [(x, _mean_grad(u, x, g))]
        if (op in _IN_INPUT_LAYOUT or op in _POOLS) and x is not None and x.tensor is not None:
            return [(x, self._input_layout(u, x))] + [(i, None) for i in u.tensor_inputs if i is not x]
        if op == "einsum":
            return self._einsum(u)
        if op in _CONTIGUOUS:
            if op == "linear":
                self._linear_fold(u, g)
            return [(i, Grad(contiguous_strides(i.tensor.shape), True, u)) for i in u.tensor_inputs
                    if i.tensor is not None]
        if op in _FOLLOW:
            out: list[tuple[CanonNode, Grad | None]] = []
            for i in u.tensor_inputs:
                if g is None or i.tensor is None or tuple(i.tensor.shape) != tuple(u.tensor.shape) or \
                        any(s == 0 for s in g.strides):
                    out.append((i, None))
                    continue
                through = u if op in ("contiguous", "clone") and _copies(u) else g.through_copy
                if op in _PASS_ON:
                    out.append((i, Grad(g.strides, False, g.made_by, through)))
                else:
                    dense = _dense_like(i.tensor.shape, g.strides)
                    out.append((i, Grad(dense, True, g.made_by, through) if dense is not None else None))
            return out
        return [(i, None) for i in u.tensor_inputs]

    @staticmethod
    def _input_layout(u: CanonNode, x: CanonNode) -> Grad | None:
        """A conv's, batch_norm's or pool's input gradient: a new tensor in the input's own memory format (contiguous,
        or channels_last for a channels_last input); group_norm's: channels_last for a 4-D channels_last input, else
        contiguous."""
        t = x.tensor
        if t is None or not all(isinstance(d, int) for d in (*t.shape, *t.stride)):
            return None
        if t.is_contiguous() is True:
            return Grad(contiguous_strides(t.shape), True, u)
        if t.ndim in ((4,) if u.op == "group_norm" else (4, 5)) and t.is_channels_last() is True:
            order = [0, *range(2, t.ndim), 1][::-1]  # fastest first: C, then the spatial dims from the last
            return Grad(dense_strides(t.shape, order), True, u)
        if u.op in ("group_norm", "conv"):  # any other layout: they run on a contiguous copy of their input
            return Grad(contiguous_strides(t.shape), True, u)
        return None

    def _reshaped(self, u: CanonNode, x: CanonNode, g: Grad | None) -> Grad | None:
        """A view's backward: ``g`` reshaped to the view's input, copied (and recorded) when no view can do it."""
        if g is None or x.tensor is None or u.tensor is None:
            return None
        chk = check_view(u.tensor.shape, g.strides, x.tensor.shape)
        if chk.viewable is None:
            return None
        if chk.viewable:
            return Grad(tuple(chk.strides or ()), False, g.made_by, g.through_copy)
        self.copies.append(BackwardCopy(u, x.tensor.nbytes, g))
        return Grad(contiguous_strides(x.tensor.shape), True, g.made_by, g.through_copy)

    def _linear_fold(self, u: CanonNode, g: Grad | None) -> None:
        """``linear`` on an input of more than two dims folds its output's gradient to 2-D in the backward: a copy
        when the gradient's leading dims do not merge."""
        t = u.tensor
        if g is None or t is None or t.ndim <= 2:
            return
        chk = check_view(t.shape, g.strides, (t.numel // t.shape[-1], t.shape[-1]))
        if chk.viewable is False:
            self.copies.append(BackwardCopy(u, t.nbytes, g))

    def _attention(self, u: CanonNode) -> list[tuple[CanonNode, Grad | None]]:
        qkv = [u.args.get(k) for k in ("query", "key", "value")]
        ins = [i for i in qkv if isinstance(i, CanonNode) and i.tensor is not None]
        infos = [i.tensor for i in ins if i.tensor is not None]
        dropout = u.args.get("dropout_p")
        gqa = u.args.get("enable_gqa")
        if len(infos) != 3 or any(t.ndim != 4 or t.device.type != "cpu" or t.stride[-1] != 1
                                  or str(t.dtype) not in ("torch.float32", "torch.bfloat16") for t in infos) or \
                not isinstance(dropout, (int, float)) or gqa not in (None, False):
            return [(i, None) for i in u.tensor_inputs]
        mask = u.args.get("attn_mask")
        # the flash kernel takes no dropout and no mask that needs a gradient (a learned position bias): the math
        # path then runs, matmuls whose gradients are contiguous (measured)
        math = dropout > 0 or (isinstance(mask, CanonNode) and _has_grad(mask) and u.grad_enabled)
        out: list[tuple[CanonNode, Grad | None]] = []
        for i, t, role in zip(ins, infos, ("query", "key", "value")):
            if math:  # matmuls: q's and v's gradients contiguous, k's contiguous as the k.transpose(-2, -1) read
                if role == "key":
                    b, h, n, d = t.shape
                    sb, sh, sd, sn = contiguous_strides((b, h, d, n))
                    out.append((i, Grad((sb, sh, sn, sd), True, u)))
                else:
                    out.append((i, Grad(contiguous_strides(t.shape), True, u)))
                continue
            b, h, n, d = t.shape
            sb, sn, sh, sd = contiguous_strides((b, n, h, d))
            out.append((i, Grad((sb, sh, sn, sd), True, u)))
        if isinstance(mask, CanonNode):
            out.append((mask, None))
        return out

    def _einsum(self, u: CanonNode) -> list[tuple[CanonNode, Grad | None]]:
        from ..kernels.einsum import einsum_operand_grad_strides

        a, b = u.args.get("a"), u.args.get("b")
        eqn = u.args.get("equation")
        if not isinstance(a, CanonNode) or not isinstance(b, CanonNode) or a.tensor is None or b.tensor is None or \
                len(u.args.get("operands") or ()) != 2 or not isinstance(eqn, str):
            return [(i, None) for i in u.tensor_inputs]
        got = einsum_operand_grad_strides(eqn, a.tensor, b.tensor)
        if got is None:
            return [(a, None), (b, None)]
        return [(a, Grad(tuple(got[0]), True, u)), (b, Grad(tuple(got[1]), True, u))]


_CACHE: weakref.WeakKeyDictionary[GraphView, GradLayouts] = weakref.WeakKeyDictionary()


def grad_layouts(view: GraphView) -> GradLayouts:
    """The gradient layouts of ``view``, computed once."""
    got = _CACHE.get(view)
    if got is None:
        got = _CACHE[view] = GradLayouts(view)
    return got


#: ops whose backward copies their output's gradient into the one layout it works in when it comes back in another
#: (each measured with the profiler, torch 2.13, CPU: tests/test_fxl122_strided_gradient_copy.py sweeps them)
OUTPUT_GRAD_OPS = ("layer_norm", "group_norm", "upsample", "max_pool2d", "avg_pool2d", "pad")
#: how messages name those of them whose canonical op is not the call the user wrote
SHOWN_AS = {"upsample": "interpolate"}


def grad_taken_as(node: CanonNode) -> tuple[str, ...]:
    """The layouts in which ``node``'s backward takes its output's gradient as it is (the first is the one it copies
    any other to); empty where that is not predicted."""
    t, x = node.tensor, node.input
    if t is None or not t.dtype.is_floating_point or x is None or x.tensor is None:
        return ()
    if node.op == "layer_norm":
        concrete = all(isinstance(d, int) for d in t.stride)
        return (CONTIGUOUS,) if concrete and is_contiguous_as(t.shape, t.stride, CONTIGUOUS) else ()
    if node.op == "group_norm":
        return (CONTIGUOUS,) if x.tensor.is_contiguous() is True else ()
    if node.op == "pad" and node.args.get("mode") in ("reflect", "replicate") and x.tensor.is_contiguous() is True:
        # as the pools: a channels-last gradient makes the kernel convert its input instead (not modelled)
        cl = {4: CHANNELS_LAST, 5: CHANNELS_LAST_3D}.get(t.ndim)
        return (CONTIGUOUS, cl) if cl is not None else (CONTIGUOUS,)
    if node.op == "upsample" and t.ndim == 4:  # nearest and bilinear take a channels-last gradient too
        mode = node.args.get("mode")
        return {"nearest": (CONTIGUOUS, CHANNELS_LAST), "bilinear": (CONTIGUOUS, CHANNELS_LAST),
                "bicubic": (CONTIGUOUS,)}.get(mode, ()) if isinstance(mode, str) else ()
    if node.op in ("max_pool2d", "avg_pool2d") and x.tensor.is_contiguous() is True:
        # a channels-last gradient makes the kernel work in channels_last (it converts the input instead: not
        # modelled); a gradient in neither layout is copied contiguous
        return (CONTIGUOUS, CHANNELS_LAST)
    return ()


@dataclass(frozen=True)
class OutputGradCopy:
    """The copy an op's backward makes of its output's gradient: that gradient, the bytes, and the layout it is
    copied to."""

    grad: Grad
    bytes: Dim
    layout: str


def output_grad_copy(view: GraphView, node: CanonNode) -> OutputGradCopy | None:
    """The copy ``node``'s backward makes of its output's gradient (an op of ``OUTPUT_GRAD_OPS`` whose gradient comes
    back in a layout it does not take), whoever laid that gradient out; None when it makes none or it is not known."""
    accepts = grad_taken_as(node)
    t = node.tensor
    if not accepts or t is None or not node.grad_enabled:
        return None
    g = grad_layouts(view).at(node)
    if g is None or len(g.strides) != t.ndim or not all(isinstance(d, int) for d in (*t.shape, *g.strides)):
        return None
    if any(is_contiguous_as(t.shape, g.strides, f) for f in accepts):
        return None
    return OutputGradCopy(g, t.nbytes, accepts[0])


def first_permute_after(node: CanonNode, until: int | None = None) -> CanonNode | None:
    """The first permute (not the identity) among the ops that read ``node``'s result, breadth first, up to position
    ``until`` when given: the op that lays the tensor out in the order its gradient then comes back in (a linear's
    output transposed back to NCHW before a `cat`; a model returning ``out.transpose(0, 1)``)."""
    seen: set[int] = set()
    todo = [node]
    while todo:
        n = todo.pop(0)
        for u in n.users:
            if id(u) in seen or (until is not None and u.position > until):
                continue
            seen.add(id(u))
            if u.op == "permute" and list(u.args.get("dims") or ()) != sorted(u.args.get("dims") or ()):
                return u
            todo.append(u)
    return None


def cause_name(node: CanonNode) -> str:
    """How a finding names the op whose backward laid a gradient out: the name it was called by, else its op."""
    return node.spelling.rsplit(".", 1)[-1] if node.spelling else node.op


def strided_output_grad(view: GraphView, node: CanonNode, fmt: str) -> Grad | None:
    """The gradient ``node``'s output gets back when it is not laid out in ``fmt`` (the memory format the op's
    backward makes it contiguous in), wrote by a known op and not through a ``.contiguous()``; else None."""
    t = node.tensor
    if t is None or not node.grad_enabled:
        return None
    g = grad_layouts(view).at(node)
    if g is None or g.made_by is None or g.through_copy is not None or len(g.strides) != t.ndim:
        return None
    if not all(isinstance(d, int) for d in (*t.shape, *g.strides)) or is_contiguous_as(t.shape, g.strides, fmt):
        return None
    return g


def _cut_strided(u: CanonNode, i: CanonNode, g: Grad) -> bool:
    """The cat's cut made ``i``'s piece of a contiguous gradient strided (a join along a dim after the first, with a
    batch of more than one): the cat laid it out. A piece of a gradient in another order keeps that order's
    author."""
    t, whole = i.tensor, u.tensor
    if t is None or whole is None or not all(isinstance(d, int) for d in (*t.shape, *whole.shape, *g.strides)):
        return False
    return is_contiguous_as(whole.shape, g.strides, CONTIGUOUS) and not is_contiguous_as(t.shape, g.strides,
                                                                                          CONTIGUOUS)


def _pad_grad(u: CanonNode, x: CanonNode, g: Grad | None) -> Grad | None:
    """``F.pad``'s backward: with zeros of width 0 the gradient itself; a constant pad crops the gradient into a new
    tensor laid out densely in the gradient's order; reflect, replicate and circular pads accumulate it into a new
    contiguous tensor (measured with tensor hooks for contiguous, transposed and channels-last gradients)."""
    t, widths, mode = x.tensor, u.args.get("pad"), u.args.get("mode")
    if t is None or not isinstance(widths, tuple) or not all(isinstance(w, int) for w in widths):
        return None
    if mode in ("reflect", "replicate", "circular"):
        return Grad(contiguous_strides(t.shape), True, u)
    if mode != "constant" or g is None or any(w < 0 for w in widths) or len(g.strides) != t.ndim:
        return None
    if all(w == 0 for w in widths):
        return Grad(g.strides, False, g.made_by, g.through_copy)
    if not all(isinstance(d, int) for d in g.strides):
        return None
    order = sorted(range(t.ndim), key=lambda d: (g.strides[d], -d))  # fastest first
    return Grad(dense_strides(t.shape, order), True, g.made_by, g.through_copy)


def _upsample_grad(u: CanonNode, x: CanonNode, g: Grad | None) -> Grad | None:
    """``F.interpolate``'s backward writes a new tensor: nearest and bilinear in channels_last when the output's
    gradient is channels_last (4-D), else contiguous; bicubic contiguous (measured with tensor hooks for contiguous,
    channels-last and permuted gradients, and contiguous and channels-last inputs)."""
    t, out, mode = x.tensor, u.tensor, u.args.get("mode")
    if t is None or out is None or mode not in ("nearest", "bilinear", "bicubic") or t.ndim != 4:
        return None
    if mode != "bicubic" and g is not None and all(isinstance(d, int) for d in (*out.shape, *g.strides)) \
            and is_contiguous_as(out.shape, g.strides, "channels_last"):
        return Grad(dense_strides(t.shape, [1, 3, 2, 0]), True, u)
    return Grad(contiguous_strides(t.shape), True, u)


def _returns_input(u: CanonNode) -> bool:
    """A dropout that hands back its input itself (``p`` 0, or not training: no autograd node, the gradient passes
    through as it is; measured with tensor hooks)."""
    args = u.args.get("args") or []
    p = (u.args.get("kwargs") or {}).get("p", args[1] if len(args) > 1 else 0.5)
    return (isinstance(p, (int, float)) and p == 0) or dropout_training(u) is False


def _mean_grad(u: CanonNode, x: CanonNode, g: Grad | None) -> Grad | None:
    """``mean``'s backward: the gradient expanded over the reduced dims (stride 0) and divided, a new tensor that
    TensorIterator lays out from the expanded operand's strides (``iter_output_strides``)."""
    t = x.tensor
    if g is None or t is None or not all(isinstance(d, int) for d in (*t.shape, *g.strides)):
        return None
    ndim = t.ndim
    if _global_pool(u):
        dims, keepdim = [ndim - 2, ndim - 1], True
    else:
        args = list(u.args.get("args") or ())[1:]
        kwargs = u.args.get("kwargs") or {}
        dim = args[0] if args else kwargs.get("dim")
        keepdim = args[1] if len(args) > 1 else kwargs.get("keepdim", False)
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
            dim = list(range(ndim))
        dims = [dim] if isinstance(dim, int) else list(dim)
        if not all(isinstance(d, int) for d in dims) or not isinstance(keepdim, bool):
            return None
        dims = [d % ndim for d in dims] if ndim else []
    strides = list(g.strides)
    if not keepdim:
        for d in sorted(dims):
            strides.insert(d, 0)
    if len(strides) != ndim:
        return None
    expanded = [0 if d in dims else strides[d] for d in range(ndim)]
    return Grad(iter_output_strides(t.shape, [(t.shape, expanded)]), True, u)


def global_pool(u: CanonNode) -> bool:
    """An adaptive average pool (1-D or 2-D) to size 1: ATen computes it as ``mean`` over the pooled dims."""
    size = u.args.get("output_size")
    if size is None and u.op == "adaptive_avg_pool1d":  # not normalised: the call as written
        args = u.args.get("args") or []
        size = args[1] if len(args) > 1 else (u.args.get("kwargs") or {}).get("output_size")
    sizes = size if isinstance(size, (tuple, list)) else (size,)
    return u.op in ("adaptive_avg_pool2d", "adaptive_avg_pool1d") and bool(sizes) and all(s == 1 for s in sizes)


def _global_pool(u: CanonNode) -> bool:
    """The 2-D global pool, whose backward layout the hooks measured (the 1-D one is not modelled)."""
    return u.op == "adaptive_avg_pool2d" and global_pool(u)


def _has_grad(n: CanonNode) -> bool:
    return n.tensor is not None and n.tensor.requires_grad and n.tensor.dtype.is_floating_point


def _same_rank(i: CanonNode, g: Grad) -> bool:
    return i.tensor is not None and i.tensor.ndim == len(g.strides)


def _whole(u: CanonNode) -> bool:
    """A subscript that cuts nothing (``x[None]``, ``x[:, None, ...]``): a reshape of the gradient."""
    spec = u.args.get("index")
    return spec is not None and all(it.kind in ("newaxis", "ellipsis") or it.is_full_slice for it in spec.items)


def _copies(u: CanonNode) -> bool:
    """A ``.contiguous()`` or ``clone(memory_format=...)`` that copies its input's layout in the forward (FXL101's
    copies)."""
    x = u.input
    if x is None or x.tensor is None or (u.op == "clone" and u.args.get("memory_format") == torch.preserve_format):
        return False
    return bool(contiguous_copy_bytes(x.tensor, u.args.get("memory_format")))


def _dense_like(shape: Sequence[Dim], strides: Sequence[Dim]) -> tuple[Dim, ...] | None:
    """The strides of a new tensor TensorIterator writes for an operand of ``strides``: dense, its dims in the
    operand's order (a slice of a gradient yields a dense result, not the slice's strides); None for symbols."""
    if not all(isinstance(s, int) for s in strides):
        return None
    order = sorted(range(len(shape)), key=lambda d: (strides[d], -d))  # fastest first
    return dense_strides(shape, order)


def _accumulate(got: Sequence[tuple[int, Grad | None]], shape: Sequence[Dim]) -> Grad | None:
    """The sum of the gradients several readers hand a tensor: the latest reader's backward runs first, and each
    next gradient is added in place into the first fresh one (so the sum keeps that one's layout)."""
    if any(g is None for _, g in got):
        return None
    ordered = [g for _, g in sorted(got, key=lambda pg: -pg[0]) if g is not None]
    acc = ordered[0]
    for g in ordered[1:]:
        if acc.fresh or acc.strides == g.strides or _dense_like(shape, acc.strides) == tuple(acc.strides):
            continue
        if g.fresh:
            acc = g
        else:  # out of place: a new tensor, laid out densely like the first
            dense = _dense_like(shape, acc.strides)
            if dense is None:
                return None
            acc = Grad(dense, True, acc.made_by, acc.through_copy)
    return acc


__all__ = [
    "OUTPUT_GRAD_OPS",
    "BackwardCopy",
    "Grad",
    "GradLayouts",
    "OutputGradCopy",
    "cause_name",
    "first_permute_after",
    "global_pool",
    "grad_layouts",
    "grad_taken_as",
    "output_grad_copy",
    "strided_output_grad",
]

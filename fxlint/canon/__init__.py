"""The canonical graph view: every pass reads the graph through this package only.

Dynamo, ``symbolic_trace`` and ``torch.export`` spell the same operation many
ways (``x.T``, ``x.mT``, ``x.t()``, ``torch.transpose``, ``call_method
permute``, ``aten.permute.default``; ``operator.getitem`` with lists,
``index_select``, ``aten.index.Tensor``). ``build_view`` turns any of those
graphs into ``CanonNode``s with one canonical ``op`` name and normalised
``args``, the tensor value (shape, strides, dtype, device, requires_grad) of
every node, the role of every graph input (user input, parameter, buffer,
constant), grad-mode regions, in-place mutations and view aliasing, and a
``networkx.DiGraph`` of the data flow.

Canonical ops a pass can rely on (``CanonNode.op``) and their ``args``
(generated from the registry by ``fxlint.canon.ops.op_table()``; a test keeps
this copy equal to it):

=========================================  ===================================================================
op                                         args
=========================================  ===================================================================
permute                                    input, dims (the full permutation), written (the two dims as a
                                           transpose wrote them, a one-operand einsum's equation, else None).
                                           Spelled: adjoint, H, mH, moveaxis, movedim, mT, numpy_T, permute,
                                           swapaxes, swapdims, T, t, t_, transpose, transpose_
view                                       input, shape (the result's). Spelled: _reshape_alias, _unsafe_view,
                                           view, view_as
reshape                                    input, shape (the result's). Spelled: flatten, ravel, reshape,
                                           reshape_as, unflatten; modules: Flatten
expand                                     input, shape (the result's). Spelled: broadcast_to, expand,
                                           expand_as, expand_copy
repeat                                     input, repeats, style (the spelling). Spelled: repeat, tile
repeat_interleave                          input, repeats (an int or SymInt node; a tensor of counts stays a
                                           node), dim (None: flattened). Spelled: repeat_interleave
slice                                      input, index: IndexSpec (basic indexing: slices, ints, None;
                                           ``getitem`` makes it too). Spelled: narrow, select, slice
tuple_getitem                              input, index (an element of a tuple value: ``getitem`` on a non-
                                           tensor)
index                                      input, index: IndexSpec (advanced: lists, index tensors, masks);
                                           index_select also dim. Spelled: _unsafe_index, getitem, index,
                                           index_select
setitem                                    input (the tensor written), index: IndexSpec (as ``getitem``'s:
                                           what ``input[index]`` reads is the region written), value (a node,
                                           or the Python scalar written). Spelled: setitem
contiguous                                 input, memory_format. Spelled: contiguous
clone                                      input, memory_format. Spelled: clone
to                                         input, dtype, device, memory_format, copy, non_blocking, style (the
                                           spelling). Spelled: _to_copy, _to_dtype, bfloat16, bool, byte,
                                           cdouble, cfloat, char, cpu, cuda, double, float, half, int, long,
                                           short, to, type, type_as
detach                                     input, inplace (``aten.alias`` keeps the autograd graph: a view,
                                           not a detach). Spelled: detach, detach_
data                                       input (``x.data``). Spelled: _get_data_attr, data
mm/bmm/matmul/mv/dot                       a, b. Spelled: __matmul__, bmm, dot, matmul, mm, mv
addmm/baddbmm/addbmm/addmv                 bias, a, b. Spelled: addbmm, addmm, addmv, baddbmm
linear                                     input, weight, bias; as a module: weight and bias None,
                                           weight_info, has_bias. Spelled: linear; modules: Linear
conv                                       input, weight, bias, transposed, groups, weight_info, has_bias,
                                           stride, padding, dilation, output_padding (one entry per spatial
                                           dim). Spelled: _convolution, conv1d, conv2d, conv3d,
                                           conv_transpose1d, conv_transpose2d, conv_transpose3d, convolution;
                                           modules: _ConvNd
layer_norm/...                             input, rest, kwargs (the rest of the call as written); batch_norm
                                           also has training (bool, None if unknown). Spelled:
                                           _fused_rms_norm, _native_batch_norm_legit,
                                           _native_batch_norm_legit_functional,
                                           _native_batch_norm_legit_no_training, batch_norm, group_norm,
                                           instance_norm, layer_norm, native_batch_norm, native_group_norm,
                                           native_layer_norm, rms_norm; modules: LayerNorm, GroupNorm,
                                           _BatchNorm, _InstanceNorm
softmax/log_softmax                        input, dim. Spelled: _log_softmax, _softmax, log_softmax, softmax;
                                           modules: Softmax, LogSoftmax
pad                                        input, pad (the widths as written: last dim first, (left, right)
                                           pairs; ints or SymInt nodes), mode (constant, reflect, replicate,
                                           circular), value. Spelled: constant_pad_nd, pad; modules:
                                           _ConstantPadNd
istft                                      input (the complex (N, F, T) or (F, T) spectrogram), n_fft,
                                           hop_length, win_length, window, center, normalized, onesided,
                                           length, return_complex. Spelled: istft
scaled_dot_product_attention               query, key, value, attn_mask, dropout_p, is_causal, scale,
                                           enable_gqa. Spelled: scaled_dot_product_attention
einsum                                     equation, operands, a and b (the first two operands). Spelled:
                                           einsum
avg_pool2d/max_pool2d/adaptive_avg_pool2d  input, output_size (adaptive pooling; else None). Spelled:
                                           _adaptive_avg_pool2d, adaptive_avg_pool2d, avg_pool2d, max_pool2d,
                                           max_pool2d_with_indices; modules: AvgPool2d, MaxPool2d,
                                           AdaptiveAvgPool2d
upsample                                   input, mode (F.interpolate's; None for an antialiased one),
                                           align_corners. Spelled: _upsample_nearest_exact2d, interpolate,
                                           upsample, upsample_bicubic2d, upsample_bilinear2d,
                                           upsample_nearest2d; modules: Upsample
im2col                                     input (``F.unfold``/``aten.im2col``/``nn.Unfold``;
                                           ``Tensor.unfold`` stays the view ``unfold``). Spelled: im2col,
                                           unfold; modules: Unfold
rnn                                        input, mode (LSTM, GRU, RNN_TANH, RNN_RELU), batch_first,
                                           bidirectional, proj (an LSTM with proj_size); a PackedSequence
                                           input is not this op (``nn.LSTM``/``GRU``/``RNN`` as
                                           ``torch._VF.lstm``... under ``allow_rnn``, or as a module).
                                           Spelled: gru, lstm, rnn, rnn_relu, rnn_tanh; modules: RNNBase
factory                                    kind (the spelling), args, device (explicit or None), dtype.
                                           Spelled: arange, as_tensor, empty, empty_strided, eye, full,
                                           linspace, logspace, ones, rand, randint, randn, randperm, range,
                                           scalar_tensor, tensor, tril_indices, triu_indices, zeros
set_grad_enabled                           enabled, style: ``"set_grad_enabled"`` (``no_grad``,
                                           ``enable_grad``, ``set_grad_enabled`` as Dynamo records them) or
                                           ``"inference_mode"`` (enter/exit; ``enabled`` is resolved to the
                                           grad mode in force after the node). Spelled: _enter_inference_mode,
                                           _exit_inference_mode, _set_grad_enabled, set_grad_enabled
grad_region                                enabled, returns (export's ``wrap_with_set_grad_enabled``: its
                                           inputs are the inlined region's results)
item/tolist/numpy                          input. Spelled: _local_scalar_dense, item, numpy, tolist
size                                       input, args. Spelled: dim, numel, shape, size, stride, sym_numel,
                                           sym_size, sym_stride
collective                                 kind (all_reduce, all_gather, reduce_scatter, all_to_all,
                                           broadcast), input (the tensor sent; a coalesced form's first),
                                           inputs, group_size, group, reduce_op, src, out (``_out`` forms),
                                           inplace, style (the ``torch.ops._c10d_functional`` op that
                                           ``dist.*`` calls are captured as). Spelled: all_gather_into_tensor,
                                           all_gather_into_tensor_coalesced, all_gather_into_tensor_out,
                                           all_reduce, all_reduce_, all_reduce_coalesced,
                                           all_reduce_coalesced_, all_to_all_single, broadcast, broadcast_,
                                           reduce_scatter_tensor, reduce_scatter_tensor_coalesced,
                                           reduce_scatter_tensor_out
wait                                       input (the collective's result it waits for; the same tensor comes
                                           back). Spelled: wait_tensor
=========================================  ===================================================================

Every other op keeps its own name (``add``, ``relu``...) with ``args`` holding
``{"input": ..., "args": [...], "kwargs": {...}}``.

Grad mode: ``CanonNode.grad_enabled`` is the autograd mode a node runs in.
Dynamo records ``no_grad``/``set_grad_enabled`` as ``_set_grad_enabled`` nodes
and ``inference_mode`` as ``_enter/_exit_inference_mode`` nodes;
``torch.export`` wraps a grad-disabled region in
``higher_order.wrap_with_set_grad_enabled`` with a submodule, which the view
inlines (its nodes appear in place, named ``<hop>/<node>``, with the region's
mode). ``symbolic_trace`` does not record grad mode at all.
``GraphView.entry_grad_enabled`` is the mode the graph starts in, and
``GraphView.requires_grad_known`` says whether ``tensor.requires_grad`` on op
nodes is autograd's own verdict (Dynamo's fake values) or unknown (export and
``symbolic_trace`` values do not track it).

The package: ``nodes`` (``CanonNode``, ``GraphView``, ``IndexSpec``),
``binding`` (arguments bound by name from the op's schema), ``registry`` (the
``@normaliser`` decorator and ``declare``), ``normalise`` (one function per op
family), ``ops`` (the tables derived from the registry), ``effects`` (what a
call writes in place and what its result aliases), ``builder``
(``build_view``: values, roles, grad-mode regions, export region inlining).

Adding a canonical op is one decorated function in ``normalise.py``::

    @normaliser("roll", spellings={"roll"}, doc="input, shifts, dims")
    def roll(c: Call) -> Args:
        return {"input": c.input, "shifts": c.get("shifts"), "dims": c.get("dims", ())}

then paste ``op_table()`` here (``tests/test_canon.py`` says when it is due)
and add its spellings to the tests.
"""

from __future__ import annotations

from ..capture.roles import dynamo_roles  # noqa: F401  (its old home; capture imports it from fxlint.capture.roles)
from ..tensor.info import info_of, known
from .builder import build_view
from .nodes import CanonNode, GraphView, IndexItem, IndexSpec
from .op_registry import Call, declare, normaliser
from .ops import FACTORY_NAMES, MAYBE_VIEW_OPS, POINTWISE_OPS, VIEW_OPS

__all__ = [
    "FACTORY_NAMES",
    "MAYBE_VIEW_OPS",
    "POINTWISE_OPS",
    "VIEW_OPS",
    "Call",
    "CanonNode",
    "GraphView",
    "IndexItem",
    "IndexSpec",
    "build_view",
    "declare",
    "info_of",
    "known",
    "normaliser",
]

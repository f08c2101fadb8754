"""Recurrent kernels on CPU (``nn.LSTM``, ``nn.GRU``, ``nn.RNN``) that copy their input sequence first.

Both CPU paths work on the time-major sequence ``(T, B, C)``: with
``batch_first=True`` the kernel transposes a ``(B, T, C)`` input to it first
(``RNN.cpp``: ``batch_first ? input.transpose(0, 1) : input``), so a
contiguous batch-first input reaches the kernel as a strided view. Then:

* the oneDNN LSTM (float32, ``torch.backends.mkldnn`` on, no ``proj_size``)
  makes that time-major input contiguous (``aten::contiguous``): one copy of
  the input unless it is a contiguous ``(T, B, C)`` tensor;
* the native path (GRU, RNN, LSTM with ``proj_size``, LSTM without oneDNN)
  multiplies the whole sequence by ``W_ih`` in one ``linear``, which reshapes
  it to ``(T * B, C)``: a copy (``aten::clone``) when ``T`` and ``B`` cannot
  be merged in a view - a batch-first contiguous input, a transposed one -
  once per direction (a bidirectional RNN copies twice). A slice of the
  channels of a time-major tensor merges and is not copied.

A bfloat16/float16 LSTM takes the oneDNN path only where the CPU supports it
(``mkldnn_bf16_device_check``; ``torch.ops.mkldnn._is_mkldnn_bf16_supported``
answers it on this machine), float64 never. A ``PackedSequence`` is already packed contiguously
and is not modelled (no copy). Checked against the profiler in
``tests/test_fxl207_noncontiguous_rnn.py`` (LSTM, GRU, RNN x batch_first x
contiguous, transposed and channel-sliced inputs x float32, bfloat16).
Not modelled: the hidden-state inputs, backward.
"""

from __future__ import annotations

from typing import Any

import torch

from ..tensor.info import TensorInfo
from .env import Env
from .geometry import Geometry, on_cpu
from .model_registry import kernel_model, needs_grad, tensor_arg
from .results import KernelPrediction, copy_of, none_when_undecided

__all__ = ["predict_rnn"]


def _onednn_lstm(dtype: torch.dtype, env: Env) -> bool:
    """Does the CPU LSTM take its oneDNN path for ``dtype`` on this machine and build (``use_mkldnn`` in
    ``RNN.cpp``): float32 wherever oneDNN is on; bfloat16/float16 where the CPU supports them
    (``Env.mkldnn_bf16``/``mkldnn_fp16``: oneDNN's own answer on this CPU)."""
    return env.mkldnn and (dtype == torch.float32 or env.onednn_reduced(dtype))


@none_when_undecided
def predict_rnn(mode: str, x: TensorInfo, *, batch_first: bool, bidirectional: bool = False, proj: bool = False,
                grad: bool = False, onednn: bool | None = None, env: Env | None = None) -> KernelPrediction | None:
    """The input copies of a ``mode`` (LSTM, GRU, RNN_TANH, RNN_RELU) call on a batched 3-D input on CPU."""
    if not on_cpu(x) or x.ndim != 3 or x.dtype not in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        return None
    g = Geometry.of(x)
    tm = g.transpose(0, 1) if batch_first else g  # what the kernel reads: (T, B, C)
    T, B, C = tm.shape
    _, merge_copies = tm.reshape((T * B, C))
    contiguous = tm.is_contiguous()
    onednn = _onednn_lstm(x.dtype, env or Env.current()) if onednn is None else onednn
    lstm_onednn = mode == "LSTM" and not proj and onednn
    src = "the (T, B, C) transpose of a batch-first input" if batch_first else "the (T, B, C) input"
    if lstm_onednn:
        path = "lstm: oneDNN, contiguous time-major input"
        copies = () if contiguous else (
            copy_of("input", tm, "aten::contiguous", "kernel-input",
                    f"the oneDNN LSTM kernel makes {src} contiguous first"),)
    else:
        n = 2 if bidirectional else 1  # each direction projects the whole sequence
        name = {"RNN_TANH": "RNN (tanh)", "RNN_RELU": "RNN (relu)"}.get(mode, mode)
        path = f"{mode.lower()}: native, input projection of the (T * B, C) sequence"
        copies = () if not merge_copies else (
            copy_of("input", tm, "aten::clone", "kernel-input",
                    f"the {name} kernel reshapes {src} to (T * B, C) for its input projection, which copies "
                    "it when T and B cannot be merged", count=n, nbytes=tm.nbytes * n),)
    kernel = mode.lower() if mode.startswith("RNN_") else f"rnn_{mode.lower()}"  # rnn_lstm, rnn_gru, rnn_tanh
    return KernelPrediction(kernel, path, copies, backward_known=not grad)


_OPERANDS = {"input": "input sequence"}


@kernel_model("rnn", family="rnn", operands=_OPERANDS)
def _rnn(node: Any, env: Env) -> KernelPrediction | None:
    x = tensor_arg(node, "input")
    if x is None:
        return None
    return predict_rnn(str(node.args.get("mode")), x, batch_first=bool(node.args.get("batch_first")),
                       bidirectional=bool(node.args.get("bidirectional")), proj=bool(node.args.get("proj")),
                       grad=needs_grad(node, x), env=env)

"""Spectral kernels on CPU: ``torch.istft`` (``SpectralOps.cpp``, the FFT's ``_exec_fft``).

``istft`` turns its ``(N, F, T)`` spectrogram (a 2-D ``(F, T)`` one is given
a batch of 1) into ``(N, T, F)`` with a transpose and runs the inverse FFT over
the frequencies of every (batch, frame) pair (``_fft_c2r``, or ``_fft_c2c``
for a two-sided or complex result). ``_exec_fft`` orders the batch dims by
stride, largest first, and folds them into one with ``reshape``: when they do
not fold as a view, the whole input is cloned first (``aten::clone``, the
input's bytes). The frequency dim itself may have any stride.

So the layout ``torch.stft`` returns (frequency innermost: strides
``(F*T, 1, F)``) is read as it is, and so is any layout whose frame and batch
strides nest; a contiguous ``(N, F, T)`` spectrogram with ``N > 1`` and
``T > 1`` (what convolutions, pads and elementwise ops on it produce) is
copied. Checked against the profiler in ``tests/_sweep.py`` (family
``spectral``: complex64 and complex128; contiguous, stft's layout, permuted,
sliced and stepped; one- and two-sided). Not modelled: the casts of the window
and envelope to complex for a complex result, real inputs (the deprecated real-view
form), other devices, the backward.
"""

from __future__ import annotations

from typing import Any

from ..tensor.info import TensorInfo
from ..tensor.symbolic import known
from .env import Env
from .geometry import Geometry, on_cpu
from .model_registry import kernel_model, needs_grad, tensor_arg
from .results import KernelPrediction, Unknown, copy_of, none_when_undecided

__all__ = ["COMPLEX_CASTS", "FFT_BATCH", "predict_istft"]

#: ``KernelCopy.reason``: the batch dims of the FFT do not fold into one as a view
FFT_BATCH = "fft-batch-fold"
#: a complex result (``return_complex=True``, two-sided) casts the real window and its overlap-add envelope to
#: complex: dtype casts of small tensors, not modelled
COMPLEX_CASTS = Unknown("forward", "*", "istft-complex-casts",
                        "a complex istft casts its window and envelope to complex (dtype casts)", machine=False)


def _fold(dims: list[tuple[int, int]]) -> bool:
    """Do these (size, stride) batch dims, ordered by stride (largest first), fold into one as a view?"""
    dims = sorted((d for d in dims if d[0] != 1), key=lambda d: -d[1])
    return all(dims[i][1] == dims[i + 1][0] * dims[i + 1][1] for i in range(len(dims) - 1))


@none_when_undecided
def predict_istft(x: TensorInfo, *, complex_result: bool = False, grad: bool = False,
                  env: Env | None = None) -> KernelPrediction | None:
    """``torch.istft(x, ...)`` of a complex ``(N, F, T)`` or ``(F, T)`` spectrogram on CPU: the clone of ``x``
    its inverse FFT makes when the batch and frame dims do not fold (``complex_result``: called with
    ``return_complex=True``)."""
    if not on_cpu(x) or not x.dtype.is_complex or x.ndim not in (2, 3):
        return None
    sizes = [known(s) for s in x.shape]
    strides = [known(s) for s in x.stride]
    if any(v is None for v in sizes + strides):
        return None
    if x.ndim == 2:
        sizes, strides = [1, *sizes], [0, *strides]
    n, _, t = sizes
    folds = _fold([(n, strides[0]), (t, strides[2])])  # type: ignore[list-item]
    copies = () if folds else (copy_of(
        "input", Geometry.of(x), "aten::clone", FFT_BATCH,
        "istft runs its inverse FFT over frequency for every (batch, frame) pair and folds those two dims into "
        "one with reshape: in this layout they do not fold, so the spectrogram is cloned first"),)
    return KernelPrediction("istft", "istft: inverse FFT over frequency", copies,
                            (COMPLEX_CASTS,) if complex_result else (), backward_known=not grad)


@kernel_model("istft", family="spectral", operands={"input": "spectrogram"})
def _istft(node: Any, env: Env) -> KernelPrediction | None:
    x = tensor_arg(node, "input")
    if x is None:
        return None
    return predict_istft(x, complex_result=node.args.get("return_complex") is True, grad=needs_grad(node, x),
                         env=env)

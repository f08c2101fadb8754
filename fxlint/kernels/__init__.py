"""A stride model of the ATen kernels that copy their inputs.

Given a canonical node whose op has a kernel model (``ops()`` lists them:
BLAS and batched matrix products, ``matmul``/``linear``, convolutions,
normalisations, softmax) and the shapes, strides and dtypes of its operands,
``predict`` says which operand the kernel copies, how many bytes, with which
ATen op, and whether the copy is paid again in backward. It answers ``None``
("unknown") rather than guess: when dynamic-shape symbols decide a stride
comparison, for devices other than the CPU (except the composite layers of
``matmul``/``linear``, which are the same everywhere), and for backend paths
it does not model.

## What is known, what is not

A prediction lists the copies it knows (``KernelPrediction.copies``) and names
the parts it does not (``KernelPrediction.unknown``: ``Unknown(phase,
operand, reason, why, machine)``). The parts are fine-grained: a conv whose
output oneDNN may reorder still knows ATen's conversion of its input, forward
and backward. ``knows(phase, operand, reasons)`` is how a rule asks
(``backward_known``/``output_known`` remain as the coarse views).

``machine=True`` parts depend on the CPU this runs on - what a backend
library does with these strides on its ISA (oneDNN's reorders), not ATen's
choice. They are never filled from a table measured on another CPU:
``probe`` (``fxlint.kernels.probe``) runs the one op on random tensors of the
same geometry under the profiler, on this machine, once (cached), and
``predict`` fills them with what it saw ("measured on this machine",
``KernelCopy.source == MEASURED``) where probing is on (``fxlint.lint`` by
default; the compile backend with ``options={"probe": True}``).

The models are ports of ATen's own decisions, checked against the runtime
(``tests/test_kernel_sweep.py`` compares every prediction with what
``torch.profiler`` records, over shapes, permutations, slices with steps,
expanded dims, dtypes and memory formats). Backward predictions assume the
gradient reaches the kernel in its output's own layout (what
layout-preserving downstream ops give); a gradient in another layout can add
a conversion the model does not count.

## Layout of the package

One module per kernel family, side by side, each documenting the ATen rules it
ports: ``blas`` (``mm``, ``addmm``, ``mv``, ``dot``), ``bmm`` (``bmm``,
``baddbmm``), ``matmul`` (``matmul``, ``linear``), ``einsum``, ``attention``
(``scaled_dot_product_attention``), ``conv``, ``norm``, ``softmax``, ``pad``
(``constant_pad_nd``), ``spatial`` (pooling, upsampling, ``im2col``), ``spectral``
(``istft``). ``docs/kernel-model.md`` summarises what each knows and what depends on the CPU.
What they share: ``env`` (``Env``, the facts of the running
build and CPU), ``geometry`` (``Geometry``, an operand's shape, strides, dtype
and ``requires_grad``, with ATen's view ops), ``results`` (``KernelCopy``,
``Unknown``, ``KernelPrediction``), ``registry`` (``kernel_model``,
``predict``, ``ops``, ``operand_role``), ``probe`` (``OpCall``, ``runner``,
``probing``, ``resolve``: measuring on the machine). The stride arithmetic is ``fxlint.tensor.layout``'s and the
symbolic-size arithmetic ``fxlint.tensor.symbolic``'s.

## The registry

Every model is one function ``(node, env) -> KernelPrediction | None``
registered for one canonical op::

    @kernel_model("mm", family="matmul", operands={"a": "left operand", "b": "right operand"})
    def _mm(node, env): ...

Everything that lists ops derives from it: ``predict`` dispatches on
``node.op``; a rule asks ``ops(family="matmul")`` (or several families,
``ops(family=("norm", "softmax"))``) for the ops it checks and
``operand_role(op, operand)`` for how to name an operand in its message.

## How to add a kernel model

1. Add one module next to its peers (``fxlint/kernels/pool.py``): a docstring
   that says which ATen code it ports and what copies, a ``predict_*``
   function over ``TensorInfo`` operands (decorated with
   ``none_when_undecided``), and a ``@kernel_model(op, family=...,
   operands=...)`` function that reads the canonical node's arguments
   (``tensor_arg``, ``needs_grad``) and calls it. Every module in this package
   is imported, so the registration is all it takes: ``predict``, ``ops()``
   and the rules selecting its family see it.
2. Use ``fxlint.tensor.layout`` and ``fxlint.tensor.symbolic`` for strides and comparisons
   (strict helpers raise ``Undecided``; the entry point turns that into None).
   Where a copy depends on the CPU rather than on ATen's rules, do not guess:
   add an ``Unknown(..., machine=True)`` part, attach ``probe=OpCall(...)`` to
   the prediction and register how to run the op with ``@probe.runner(name)``
   (``conv`` shows all three). A path not modelled at all is an
   ``Unknown(..., machine=False)`` part (or the whole prediction None).
3. Add its cases to the sweep (``tests/_sweep.py``) so the runtime checks the
   model, and an example node to ``tests/test_kernel_registry.py``.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

from ..tensor.layout import CHANNELS_LAST, CHANNELS_LAST_3D, CONTIGUOUS
from .attention import predict_sdpa
from .blas import predict_addmm, predict_mm, predict_mv
from .bmm import predict_bmm
from .conv import predict_conv, predict_conv_node
from .einsum import predict_einsum
from .env import Env
from .geometry import is_channels_last_dense, suggest_memory_format
from .matmul import predict_linear, predict_matmul
from .model_registry import (
    REGISTRY,
    KernelModel,
    KernelRegistry,
    families,
    kernel_model,
    model_for,
    models,
    operand_role,
    ops,
    predict,
)
from .norm import predict_norm
from .pad import predict_pad
from .results import KernelCopy, KernelPrediction, Unknown
from .softmax import predict_softmax
from .spatial import predict_spatial
from .spectral import predict_istft

# every module registers its models on import: a new family is a new file, nothing to add here
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = [
    "CHANNELS_LAST",
    "CHANNELS_LAST_3D",
    "CONTIGUOUS",
    "KERNEL_OPS",
    "REGISTRY",
    "Env",
    "KernelCopy",
    "KernelModel",
    "KernelPrediction",
    "KernelRegistry",
    "Unknown",
    "families",
    "is_channels_last_dense",
    "kernel_model",
    "model_for",
    "models",
    "operand_role",
    "ops",
    "predict",
    "predict_addmm",
    "predict_bmm",
    "predict_conv",
    "predict_conv_node",
    "predict_einsum",
    "predict_istft",
    "predict_linear",
    "predict_matmul",
    "predict_mm",
    "predict_mv",
    "predict_norm",
    "predict_pad",
    "predict_sdpa",
    "predict_softmax",
    "predict_spatial",
    "suggest_memory_format",
]


def __getattr__(name: str) -> Any:
    if name == "KERNEL_OPS":  # the canonical ops ``predict`` knows, from the registry (never a hand-kept list)
        return ops()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

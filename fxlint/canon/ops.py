"""Op tables, derived from the registry (``registry.py``, ``normalise.py``): what passes read.

The traits of ops that keep their own name are declared here, once each; the
traits of canonical ops come with their normaliser. ``op_table()`` renders the
op table of the ``fxlint.canon`` docs from the registry.
"""

from __future__ import annotations

import textwrap

import torch.nn as nn

from . import normalise as _normalise  # noqa: F401  (registers the normalisers)
from . import op_registry as registry
from .normalise import FACTORIES

# --------------------------------------------------------------------------- ops that keep their own name

#: views that are not normalised (their output shares storage with their first input)
registry.declare("squeeze", "unsqueeze", "unbind", "split", "chunk", "narrow", "select", "diagonal", "as_strided",
                 "real", "imag", "view_as_real", "view_as_complex", "unfold", "split_with_sizes", "alias", view=True)

#: elementwise ops (every spelling: ``a + b``, ``torch.add``, ``Tensor.add``, ``aten.add.Tensor``, ``nn.ReLU``):
#: they broadcast their tensor operands and read any strides without copying
registry.declare(
    # binary / ternary
    "add", "sub", "rsub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "maximum", "minimum",
    "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
    "bitwise_and", "bitwise_or", "bitwise_xor", "and_", "or_", "xor", "where", "masked_fill", "lerp",
    "addcmul", "addcdiv", "atan2", "hypot", "copysign", "xlogy", "true_divide", "multiply", "subtract",
    "divide",
    # unary
    "abs", "neg", "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos",
    "tan", "tanh", "sigmoid", "relu", "relu6", "gelu", "silu", "elu", "selu", "celu", "leaky_relu",
    "hardtanh", "hardswish", "hardsigmoid", "softplus", "mish", "erf", "erfc", "reciprocal", "sign",
    "floor", "ceil", "round", "trunc", "frac", "clamp", "clamp_min", "clamp_max", "clip", "logical_not",
    "bitwise_not", "square", "nan_to_num", "sinh", "cosh", "asin", "acos", "atan", "logit", "invert",
    "pos", "not_",
    pointwise=True,
)

#: ops that may hand back their input itself (eval-mode dropout returns its input)
registry.declare("dropout", "alpha_dropout", "feature_alpha_dropout", "dropout1d", "dropout2d", "dropout3d",
                 "identity", "lift_fresh", passthrough=True)

#: modules read under their own op name
registry.declare("embedding", modules={nn.Embedding: "embedding"})

# --------------------------------------------------------------------------- derived tables

#: ops whose output may share storage with their first input
VIEW_OPS: frozenset[str] = registry.VIEW
#: ops that return their input unchanged when nothing needs converting
MAYBE_VIEW_OPS: frozenset[str] = registry.MAYBE_VIEW
#: elementwise ops: they broadcast their tensor operands and read any strides without copying
POINTWISE_OPS: frozenset[str] = registry.POINTWISE
#: ops that may hand back their input itself (eval-mode dropout, ``nn.Identity``, a tuple's element)
PASSTHROUGH_OPS: frozenset[str] = registry.PASSTHROUGH
#: the raw names of tensor factories (``torch.arange``, ``torch.zeros``...): canonical op ``factory``
FACTORY_NAMES: frozenset[str] = FACTORIES
#: ``call_module`` ops known to compute a fresh tensor; any other module may return its input
#: (``nn.Identity``), and a module read as a view (``nn.Flatten``) may too
COMPUTING_MODULE_OPS: frozenset[str] = frozenset(
    raw for _, raw in registry.MODULE_OPS if raw not in VIEW_OPS | MAYBE_VIEW_OPS | PASSTHROUGH_OPS)
#: every canonical op (produced by a normaliser, or made by the builder)
CANONICAL_OPS: frozenset[str] = frozenset(n for n in registry.OPS if registry.is_canonical(n))


def op_table(width: int = 110) -> str:
    """The op table of the ``fxlint.canon`` docs (reStructuredText): one row per registered family
    and per declared canonical op, in registration order, with the spellings and module classes
    each family reads."""
    rows: list[tuple[str, str]] = []
    seen: set[int] = set()
    for name, info in registry.OPS.items():
        norm = info.normaliser
        if norm is not None:
            if id(norm) in seen:
                continue
            seen.add(id(norm))
            text = norm.doc + ". Spelled: " + ", ".join(sorted(norm.spellings, key=lambda s: (s.lower(), s)))
            if norm.modules:
                text += "; modules: " + ", ".join(cls.__name__ for cls in norm.modules)
            rows.append((norm.label, text))
        elif info.doc is not None:
            rows.append((info.label or name, info.doc))
    left = max(len("op"), *(len(r[0]) for r in rows))
    right = width - left - 2
    rule = "=" * left + "  " + "=" * right
    lines = [rule, "op".ljust(left) + "  args", rule]
    for label, doc in rows:
        wrapped = textwrap.wrap(doc, right) or [""]
        lines.append(label.ljust(left) + "  " + wrapped[0])
        lines.extend(" " * left + "  " + more for more in wrapped[1:])
    lines.append(rule)
    return "\n".join(lines)


__all__ = [
    "CANONICAL_OPS",
    "COMPUTING_MODULE_OPS",
    "FACTORY_NAMES",
    "MAYBE_VIEW_OPS",
    "PASSTHROUGH_OPS",
    "POINTWISE_OPS",
    "VIEW_OPS",
    "op_table",
]

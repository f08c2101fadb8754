"""Size arithmetic the copy rules share: contiguous strides, bytes of a shape, a symbolic sum.

Kept here, as they were, while ``fxlint/layout.py`` and ``fxlint/symbolic.py`` become their one
home; the rest of what this module held lives in ``fxlint.text`` (messages), ``fxlint.alias``
(views, aliasing, writes) and ``_consumers``, ``_sites``, ``_backward`` of this package.
"""

from __future__ import annotations

from typing import Sequence

import sympy
import torch

from ..tensorinfo import Dim


def _add(a: Dim, b: Dim) -> Dim:
    s = a + b
    return s if isinstance(s, int) else sympy.expand(s)


def _contiguous_strides(shape: Sequence[Dim]) -> tuple[Dim, ...]:
    strides: list[Dim] = []
    acc: Dim = 1
    for s in reversed(tuple(shape)):
        strides.append(acc)
        acc = acc * s
    return tuple(reversed(strides))


def _nbytes(shape: Sequence[Dim], dtype: torch.dtype) -> Dim:
    n: Dim = 1
    for s in shape:
        n = n * s
    return n * dtype.itemsize if isinstance(n, int) else sympy.expand(n * dtype.itemsize)

"""Arithmetic on sizes and strides that may be dynamic-shape symbols: the one home for it.

A size, stride or byte count is a ``Dim``: an ``int`` when it is known, a
``sympy`` expression when it depends on dynamic-shape symbols (``s0``,
``4*s0*s1``). Nothing here calls ``int()`` or ``bool()`` on a ``SymInt``:
fxlint never adds a guard to the user's compile.

**The one fact about symbols.** Every free symbol of a ``Dim`` is a size of
at least 2: Dynamo specialises sizes (and strides) 0 and 1 to constants, so
a symbol that survives is never 0 or 1 (for unbacked symbols this is ATen's
own size-oblivious assumption). ``_at_least_two`` is the only place that
applies it: it writes each symbol ``s`` as ``t + 2`` with ``t >= 0``, which
lets sympy decide ``4*s0 - 1 != 0`` or ``s0 >= 2`` but not ``s0 - 4 == 0``.

**The convention.**

* Strict comparisons - ``sign``, ``eq``, ``ne``, ``lt``, ``le``, ``gt``,
  ``ge``, ``max1``, ``require_int`` - answer a ``bool`` (or a value) that
  holds for every admissible value of the symbols, and raise ``Undecided``
  when the symbols decide it. Code that ports an ATen decision step by step
  uses them and catches ``Undecided`` once, at its entry point, to answer
  "unknown" (``None``).
* ``maybe_eq``, ``maybe_lt`` and ``maybe_ge`` are the same comparisons
  answering ``None`` instead of raising, for code that carries the unknown
  on (``TensorInfo``'s predicates).
* ``is_one`` is "provably the size 1" (``maybe_eq(x, 1) is True``): a plain
  symbol is never 1, ``s0 - 1`` is not provably 1.
* ``prod``, ``sum_of``, ``nbytes`` and ``divide_exact`` build ``Dim`` values: plain ``int``
  arithmetic when every operand is an ``int``, an expanded sympy polynomial
  otherwise (so equal amounts print alike: ``8*s0``, never ``4*s0 + 4*s0``).
* ``known`` is the ``int`` value or ``None``; ``simplify`` turns a sympy
  integer back into an ``int``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeAlias

import sympy

Dim: TypeAlias = int | sympy.Expr

__all__ = [
    "Dim",
    "Undecided",
    "divide_exact",
    "eq",
    "ge",
    "gt",
    "is_one",
    "known",
    "le",
    "lt",
    "max1",
    "maybe_eq",
    "maybe_ge",
    "maybe_lt",
    "nbytes",
    "ne",
    "prod",
    "require_int",
    "sign",
    "simplify",
    "sum_of",
]


class Undecided(Exception):
    """A comparison depends on dynamic-shape symbols (raised by the strict helpers)."""


def known(x: Dim | None) -> int | None:
    """The value as an ``int``, or None when it is symbolic (or None)."""
    if x is None:
        return None
    if isinstance(x, int):
        return x
    if isinstance(x, sympy.Integer):
        return int(x)
    return None


def simplify(x: Dim) -> Dim:
    """``x`` expanded; an ``int`` when it is a number."""
    if isinstance(x, int):
        return x
    x = sympy.expand(x)
    return int(x) if isinstance(x, sympy.Integer) else x


def _at_least_two(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with every symbol ``s`` written ``t + 2`` (``t >= 0``): the one place the fact
    "symbols are sizes >= 2" is applied."""
    sub = {s: sympy.Symbol(f"{s}_t", integer=True, nonnegative=True) + 2 for s in expr.free_symbols}
    return sympy.expand(expr.subs(sub)) if sub else expr


def sign(x: Dim) -> int:
    """-1, 0 or 1: the sign of ``x`` for every admissible value of its symbols; raises
    ``Undecided`` when the symbols decide it."""
    if isinstance(x, int):
        return (x > 0) - (x < 0)
    x = sympy.expand(x)
    if x.is_number:
        v = int(x)
        return (v > 0) - (v < 0)
    y = _at_least_two(x)
    if y.is_zero:
        return 0
    if y.is_positive:
        return 1
    if y.is_negative:
        return -1
    raise Undecided(str(x))


def _difference(a: Dim, b: Dim) -> sympy.Expr:
    """``a - b`` with the symbols written as sizes >= 2."""
    return _at_least_two(sympy.expand(sympy.sympify(a) - sympy.sympify(b)))


def eq(a: Dim, b: Dim) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    zero = _difference(a, b).is_zero
    if zero is None:
        raise Undecided(f"{a} == {b}")
    return bool(zero)


def ne(a: Dim, b: Dim) -> bool:
    return not eq(a, b)


def gt(a: Dim, b: Dim) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a > b
    d = _difference(a, b)
    if d.is_positive:
        return True
    if d.is_nonpositive:
        return False
    raise Undecided(f"{a} > {b}")


def ge(a: Dim, b: Dim) -> bool:
    if isinstance(a, int) and isinstance(b, int):
        return a >= b
    d = _difference(a, b)
    if d.is_nonnegative:
        return True
    if d.is_negative:
        return False
    raise Undecided(f"{a} >= {b}")


def lt(a: Dim, b: Dim) -> bool:
    return gt(b, a)


def le(a: Dim, b: Dim) -> bool:
    return ge(b, a)


def _maybe(compare: Callable[[Dim, Dim], bool], a: Dim, b: Dim) -> bool | None:
    try:
        return compare(a, b)
    except Undecided:
        return None


def maybe_eq(a: Dim, b: Dim) -> bool | None:
    """``a == b``; None when the symbols decide it."""
    return _maybe(eq, a, b)


def maybe_lt(a: Dim, b: Dim) -> bool | None:
    """``a < b``; None when the symbols decide it."""
    return _maybe(lt, a, b)


def maybe_ge(a: Dim, b: Dim) -> bool | None:
    """``a >= b``; None when the symbols decide it."""
    return _maybe(ge, a, b)


def is_one(a: Dim) -> bool:
    """True when ``a`` is provably the size 1 (a plain symbol never is)."""
    if isinstance(a, int):
        return a == 1
    return maybe_eq(a, 1) is True


def max1(a: Dim) -> Dim:
    """``max(1, a)`` for a size (sizes are >= 0; a symbol is >= 2)."""
    if isinstance(a, int):
        return max(1, a)
    return a if ge(a, 1) else 1


def require_int(x: Dim, what: str = "a size") -> int:
    """``x`` as an ``int``; raises ``Undecided`` when it is symbolic (a count or an order that
    must be a number, e.g. the batch count of a per-batch loop)."""
    k = known(x)
    if k is None:
        raise Undecided(f"{what} is symbolic: {x}")
    return k


def prod(xs: Iterable[Dim]) -> Dim:
    """The product (1 for none)."""
    out: Dim = 1
    for x in xs:
        out = out * x
    return out if isinstance(out, int) else sympy.expand(out)


def sum_of(xs: Iterable[Dim]) -> Dim:
    """The sum (0 for none)."""
    out: Dim = 0
    for x in xs:
        out = out + x
    return out if isinstance(out, int) else sympy.expand(out)


def nbytes(numel: Dim, itemsize: int) -> Dim:
    """Bytes of ``numel`` elements of ``itemsize`` bytes."""
    return prod((numel, itemsize))


def divide_exact(x: Dim, k: int) -> Dim:
    """``x / k`` for an ``x`` that ``k`` divides (the bytes of one of ``k`` equal copies)."""
    return x // k if isinstance(x, int) else sympy.simplify(x / k)

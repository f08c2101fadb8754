"""The one home of symbolic-size arithmetic (fxlint/tensor/symbolic.py): its convention (strict helpers
raise ``Undecided``, ``maybe_*`` answer None), the one fact it applies (a symbol is a size >= 2),
and the answers on which the helpers it replaced disagreed."""

from __future__ import annotations

import pytest
import sympy

from fxlint.tensor import symbolic as S
from fxlint.tensor.symbolic import Undecided

s0 = sympy.Symbol("s0", integer=True, positive=True)
s1 = sympy.Symbol("s1", integer=True, positive=True)


def test_ints_are_plain_python_arithmetic():
    assert S.eq(3, 3) and S.ne(3, 4) and S.lt(2, 3) and S.le(3, 3) and S.gt(4, 3) and S.ge(3, 3)
    assert [S.sign(x) for x in (-5, 0, 7)] == [-1, 0, 1]
    assert S.prod([2, 3, 4]) == 24 and S.prod([]) == 1
    assert S.sum_of([1, 2, 3]) == 6 and S.sum_of([]) == 0
    assert S.max1(0) == 1 and S.max1(1) == 1 and S.max1(5) == 5
    assert S.nbytes(6, 4) == 24 and S.divide_exact(24, 3) == 8
    assert all(isinstance(v, int) for v in (S.prod([2, 3]), S.sum_of([2, 3]), S.nbytes(2, 4)))


def test_a_symbol_is_a_size_of_at_least_two():
    """Dynamo specialises sizes 0 and 1: a surviving symbol is never 0 or 1, and is >= 2."""
    assert S.eq(s0, 0) is False and S.eq(s0, 1) is False
    assert S.ge(s0, 2) is True and S.gt(s0, 1) is True and S.lt(s0, 2) is False
    assert S.eq(4 * s0, 1) is False  # 4*s0 >= 8
    assert S.gt(s0 * s1, s0) is True  # s1 >= 2
    assert S.max1(s0) == s0
    assert S.is_one(s0) is False


def test_what_the_symbols_decide_raises_in_strict_helpers_and_is_none_in_maybe_helpers():
    for strict in (lambda: S.eq(s0, 4), lambda: S.gt(s0, 2), lambda: S.ge(s0, s1), lambda: S.sign(s0 - s1),
                   lambda: S.lt(s1, s0), lambda: S.require_int(s0)):
        with pytest.raises(Undecided):
            strict()
    assert S.maybe_eq(s0, 4) is None and S.maybe_lt(s0, s1) is None and S.maybe_ge(s0, 3) is None
    assert S.maybe_eq(s0, s0) is True and S.maybe_eq(2 * s0, s0 + s0) is True
    assert S.maybe_ge(s0, 2) is True and S.maybe_lt(s0, 2) is False


def test_is_one_means_provably_one():
    assert S.is_one(1) and S.is_one(sympy.Integer(1)) and S.is_one(s0 - s0 + 1)
    assert not S.is_one(2) and not S.is_one(s0)
    # s0 - 1 is 1 when s0 == 2: not provably 1, and not provably other than 1 either
    assert not S.is_one(s0 - 1) and S.maybe_eq(s0 - 1, 1) is None


def test_symbolic_results_are_expanded_so_equal_amounts_print_alike():
    assert S.sum_of([4 * s0, 4 * s0]) == 8 * s0
    assert str(S.sum_of([4 * (s0 + 1), 4 * s0])) == "8*s0 + 4"
    assert S.prod([s0 + 1, 2]) == 2 * s0 + 2 and str(S.nbytes(s0 * (s1 + 1), 4)) == "4*s0*s1 + 4*s0"
    assert S.divide_exact(8 * s0, 4) == 2 * s0
    assert S.simplify(sympy.Integer(6)) == 6 and isinstance(S.simplify(sympy.Integer(6)), int)
    assert S.known(sympy.Integer(3)) == 3 and S.known(s0) is None and S.known(None) is None


def test_the_answers_the_old_duplicates_disagreed_on():
    """tensorinfo.dim_eq ignored the >= 2 fact (``2*s0 == 1`` was None); kernels' sign-based
    ``_ge`` could not see ``s0 >= 2`` (``s0 - 2`` may be 0) and raised; viewable's ``is_one`` took
    ``s0 - 1`` for "not 1". One rule now: decide whatever holds for every size >= 2."""
    assert S.maybe_eq(2 * s0, 1) is False
    assert S.ge(s0, 2) is True and S.le(2, s0) is True
    assert S.maybe_eq(s0 - 1, 1) is None

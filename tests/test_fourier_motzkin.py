"""Fourier-Motzkin elimination (report sec. 4.2, Algorithm 3).

Oracles: islpy's exact integer sets, brute-force enumeration of a box, and
exact certificates (a rational point, or a Farkas row of F) for feasibility.
"""

import itertools
import math
import re
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from oracles import brute_force_points, isl_points

RADIUS = 4


@st.composite
def systems(draw, max_vars=3, max_rows=5, bounded=True):
    """A random ``A x >= b``; ``bounded`` adds the box ``-RADIUS <= x <= RADIUS``."""
    n_vars = draw(st.integers(1, max_vars))
    n_rows = draw(st.integers(0, max_rows))
    A = [draw(st.lists(st.integers(-3, 3), min_size=n_vars, max_size=n_vars)) for _ in range(n_rows)]
    b = draw(st.lists(st.integers(-6, 6), min_size=n_rows, max_size=n_rows))
    if bounded:
        for k in range(n_vars):
            unit = [int(j == k) for j in range(n_vars)]
            A += [unit, [-v for v in unit]]
            b += [-RADIUS, -RADIUS]
    return A, b


def loop_order(points):
    """x_{M-1} outermost, then x_{M-2}, ..., each ascending."""
    return sorted(points, key=lambda p: p[::-1])


@given(systems())
def test_integer_points_against_brute_force_and_isl(system):
    A, b = system
    points = tab.fourier_motzkin(A).integer_points(b)
    assert points == loop_order(brute_force_points(A, b, RADIUS))
    assert set(points) == isl_points(A, b)


@given(systems(max_vars=4, max_rows=6))
def test_pruning_keeps_the_solutions(system):
    A, b = system
    pruned, full = tab.fourier_motzkin(A), tab.fourier_motzkin(A, prune=False)
    assert pruned.integer_points(b) == full.integer_points(b)
    assert pruned.feasible(b) == full.feasible(b)
    for kept, every in zip(pruned.steps, full.steps):
        assert kept.kept <= every.kept


@given(systems(max_vars=3, max_rows=6, bounded=False))
def test_feasibility_has_exact_certificates(system):
    """feasible(b) comes with a rational point; infeasible with a Farkas row of F."""
    A, b = system
    fm = tab.fourier_motzkin(A)
    for f in fm.F.tolist():  # every row of F is a non-negative combination cancelling all variables
        assert all(v >= 0 for v in f)
        assert all(sum(f[i] * A[i][k] for i in range(len(A))) == 0 for k in range(fm.n_vars))
    if fm.feasible(b):
        x = fm.sample_point(b)
        assert all(sum(Fraction(c) * v for c, v in zip(row, x)) >= rhs for row, rhs in zip(A, b))
    else:
        assert fm.sample_point(b) is None and fm.integer_points(b) == []
        assert any(sum(fi * bi for fi, bi in zip(f, b)) > 0 for f in fm.F.tolist())


@given(systems(), st.data())
def test_bounds_contain_every_integer_solution(system, data):
    """Each point's coordinates lie within the bounds computed from its later coordinates;
    the innermost bounds are exact, and the outermost contain isl's integer projection."""
    A, b = system
    fm = tab.fourier_motzkin(A)
    points = fm.integer_points(b)
    for x in points:
        for k in range(fm.n_vars):
            low, high = fm.bounds(b, x[k + 1:])
            assert low <= x[k] <= high
        low, high = fm.bounds(b, x[1:])
        innermost = {p[0] for p in points if p[1:] == x[1:]}
        assert innermost == set(range(low, high + 1))
    if points:
        low, high = fm.bounds(b, ())
        outer = [p[-1] for p in points]
        assert low <= min(outer) and max(outer) <= high


def test_bounds_matrices_of_a_triangle():
    """0 <= x_1 <= 3, 0 <= x_0 <= x_1: the bounds read off eqs. 22-26."""
    A = [[1, 0], [0, 1], [0, -1], [-1, 1]]
    b = [0, 0, -3, 0]
    fm = tab.fourier_motzkin(A, names=["i", "j"])
    assert fm.L[0].tolist() == [[1, 0, 0, 0]] and fm.Lhat[0].tolist() == [[0]]
    assert fm.H[0].tolist() == [[0, 0, 0, -1]] and fm.Hhat[0].tolist() == [[1]]
    assert fm.bounds(b, [2]) == (0, 2)
    assert fm.bounds(b) == (0, 3)
    assert fm.real_bounds(b, []) == (0, 3)
    assert len(fm.integer_points(b)) == 10
    assert fm.feasible(b) and not fm.feasible([0, 0, 1, 0])


def test_rational_bounds_round_inwards():
    fm = tab.fourier_motzkin([[2], [-3]])  # 2x >= b0, -3x >= b1
    assert fm.real_bounds([1, -7], []) == (Fraction(1, 2), Fraction(7, 3))
    assert fm.bounds([1, -7]) == (1, 2)
    assert fm.integer_points([1, -7]) == [(1,), (2,)]
    assert not fm.feasible([3, -4]) and fm.integer_points([3, -4]) == []  # 1.5 <= x <= 1.33: empty
    assert fm.feasible([3, -5]) and fm.integer_points([3, -5]) == []  # 1.5 <= x <= 1.67: real only


def test_unbounded_variable_is_named():
    fm = tab.fourier_motzkin([[1, 0], [0, 1], [0, -1]], names=["i", "j"])
    with pytest.raises(ValueError, match="i has no upper bound"):
        fm.integer_points([0, 0, -2])
    assert fm.bounds([0, 0, -2], [1]) == (0, None)
    infeasible = tab.fourier_motzkin([[1, 0], [-1, 0]])
    assert infeasible.integer_points([1, 0]) == []  # x_0 >= 1 and x_0 <= 0: empty, not unbounded


def test_input_errors():
    with pytest.raises(ValueError, match=r"entry \(1, 0\) is 0.5"):
        tab.fourier_motzkin([[1], [0.5]])
    with pytest.raises(ValueError, match="b must have 2 entries, got 3"):
        tab.fourier_motzkin([[1], [-1]]).feasible([0, 0, 0])
    with pytest.raises(ValueError, match="1 names for 2 variables"):
        tab.fourier_motzkin([[1, 1]], names=["i"])
    with pytest.raises(ValueError, match="already fixed"):
        tab.fourier_motzkin([[1], [-1]]).bounds([0, 0], [1])


SQUARE = tab.fourier_motzkin([[1, 0], [0, 1], [-1, 0], [0, -1]])  # 0 <= x_0, x_1 <= 3 for b = (0, 0, -3, -3)


@pytest.mark.parametrize("call, message", [
    (lambda: SQUARE.bounds([0, 0, -3, -3], later=["a"]), "later: entry (0, 0) is 'a' (str), not a rational number"),
    (lambda: SQUARE.bounds([0, 0, -3, -3], later="a"), "later must be a sequence of numbers, the values of the "
                                                       "variables after the next one (x_(k+1), ..., x_1), got 'a'"),
    (lambda: SQUARE.bounds([0, 0, -3, -3], later=None), "later must be a sequence of numbers"),
    (lambda: SQUARE.real_bounds([0, 0, -3, -3], later=[None]), "later: entry (0, 0) is None"),
    (lambda: SQUARE.bounds(None), "b must be a vector of 4 numbers, got None"),
    (lambda: SQUARE.symbolic_bounds(None), "b must be a sequence of 4 numbers or sympy expressions, got None"),
    (lambda: tab.fourier_motzkin([[1, 0]], names=5), "fourier_motzkin: names must be a sequence of 2 strings, got 5"),
    (lambda: tab.fourier_motzkin([[1, 0]], names=["i", 2]), "names must be a sequence of 2 strings, got ['i', 2]"),
    (lambda: tab.fourier_motzkin([[1, 0]], names="ij"), "names must be a sequence of 2 strings, got 'ij'"),
    (lambda: tab.fourier_motzkin([[1, 0]], prune="no"), "fourier_motzkin: prune must be True or False, got 'no'"),
])
def test_public_arguments_are_checked(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def test_bounds_take_numbers_of_any_exact_kind():
    assert SQUARE.bounds([0, 0, -3, -3], later=(np.int64(2),)) == (0, 3)
    assert SQUARE.bounds([0, 0, -3, -3], later=[Fraction(1, 2)]) == (0, 3)
    assert SQUARE.bounds([0, 0, -3, -3], later=np.array([1])) == (0, 3)


def test_rational_coefficients():
    fm = tab.fourier_motzkin([[Fraction(1, 2)], [Fraction(-1, 3)]])
    assert fm.integer_points([1, -2]) == [(2,), (3,), (4,), (5,), (6,)]


def test_pruning_shrinks_the_octahedron():
    """|x| + |y| + |z| <= 3 as 8 inequalities: the report's Algorithm 3 grows to 59 rows, pruning keeps 8."""
    A = [list(signs) for signs in itertools.product([1, -1], repeat=3)]
    b = [-3] * 8
    pruned, full = tab.fourier_motzkin(A), tab.fourier_motzkin(A, prune=False)
    assert [s.kept for s in full.steps] == [16, 24, 59]
    assert [s.kept for s in pruned.steps] == [16, 8, 8]
    assert pruned.integer_points(b) == full.integer_points(b)
    assert len(pruned.integer_points(b)) == 63


def test_report_section_6_dd_bounds():
    """d[i + k] with i < 3, j < 4, k < 5: for dd[beta], max(0, beta - 2) <= k <= min(4, beta)."""
    inv = tab.integer_inverse([[1, 0, 1]])
    for beta in range(8):
        boxed = inv.solve([beta]).within((3, 4, 5))
        alphas = boxed.alphas()
        ks = sorted({alpha[2] for alpha in alphas})
        assert ks == list(range(max(0, beta - 2), min(4, beta) + 1))
        assert len(alphas) == 4 * len(ks)


def test_report_figure_4():
    """Fig. 4: A = (1 -2 -2), beta = 3, a 2-D kernel; every box point with A alpha = 3 appears once."""
    boxed = tab.integer_inverse([[1, -2, -2]]).solve([3]).within((8, 6, 6))
    alphas = boxed.alphas()
    expected = [(i, j, k) for i in range(8) for j in range(6) for k in range(6) if i - 2 * j - 2 * k == 3]
    assert sorted(alphas) == sorted(expected) and len(alphas) == len(set(alphas))
    assert boxed.system.n_vars == 2
    assert math.prod(boxed.solutions.kernel.shape) == 6


@given(systems(max_vars=3, max_rows=4), st.data())
def test_symbolic_bounds_agree_with_numeric_bounds(system, data):
    A, b = system
    fm = tab.fourier_motzkin(A)
    formulas = fm.symbolic_bounds(b)
    assert [name for name, _, _ in formulas] == list(reversed(fm.names))
    for x in fm.integer_points(b)[:5]:
        for depth, (_name, low, high) in enumerate(formulas):
            k = fm.n_vars - 1 - depth
            values = {sympy.Symbol(n, integer=True): v for n, v in zip(fm.names[k + 1:], x[k + 1:])}
            assert (int(low.subs(values)), int(high.subs(values))) == fm.bounds(b, x[k + 1:])


@pytest.mark.parametrize("A, shape", [([[1, 0, 1]], (3, 4, 5)), ([[1, -2]], (7, 5)), ([[2, 1, 1]], (3, 4, 4))])
def test_symbolic_region_matches_every_beta(A, shape):
    """Sigma(beta) with symbolic beta (eq. 45) gives, at each solvable beta, the numeric bounds."""
    inv = tab.integer_inverse(A)
    formulas = inv.symbolic_region(shape)
    (beta_symbol,) = sympy.symbols("beta_0", integer=True, seq=True)
    for beta in range(-8, 12):
        solutions = inv.solve([beta])
        if solutions is None:
            continue
        boxed = solutions.within(shape)
        name, low, high = formulas[0]
        numeric = boxed.system.bounds(boxed.rhs)
        assert (low.subs(beta_symbol, beta), high.subs(beta_symbol, beta)) == numeric


@settings(max_examples=60)
@given(st.integers(1, 3).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.lists(st.integers(-3, 3), min_size=n, max_size=n), st.integers(-6, 6)),
             min_size=1, max_size=6))))
def test_enumerated_search_finds_fourier_motzkins_first_point(system):
    """The parser searches small boxes point by point (lang.scope): the same first point as Fourier-Motzkin's
    loops, and None exactly where the system has no integer point."""
    from tensoradbook.lang import scope

    n, rows = system
    box_rows = [(tuple(int(j == k) * sign for j in range(n)), -4) for k in range(n) for sign in (1, -1)]
    A = tuple(tuple(row) for row, _ in rows) + tuple(row for row, _ in box_rows)  # inside -4 .. 4
    b = tuple(rhs for _, rhs in rows) + tuple(rhs for _, rhs in box_rows)
    variables = tuple(f"x{k}" for k in range(n))
    expected = next(tab.fourier_motzkin(A, names=variables).iter_integer_points(b), None)
    box = scope._propagated_box(A, b, n)
    got = None if box is None else scope._enumerated_first_point(A, b, box)
    assert got == (None if expected is None else tuple(expected))


@pytest.mark.parametrize("budget", [1, 3, 10 ** 6])  # past at once, past midway, never reached
@settings(max_examples=40)
@given(st.integers(1, 3).flatmap(lambda n: st.tuples(
    st.just(n),
    st.lists(st.tuples(st.lists(st.integers(-3, 3), min_size=n, max_size=n), st.integers(-6, 6)),
             min_size=1, max_size=6))))
def test_the_first_point_is_fourier_motzkins_on_both_sides_of_the_search_budget(budget, system):
    """lang.scope searches a finite box value by value for at most SEARCHED_POINTS partial points, then hands the
    system to Fourier-Motzkin: the first point (or None) is the same whichever of the two answers."""
    from tensoradbook.lang import scope

    n, rows = system
    box_rows = [(tuple(int(j == k) * sign for j in range(n)), -4) for k in range(n) for sign in (1, -1)]
    A = tuple(tuple(row) for row, _ in rows) + tuple(row for row, _ in box_rows)
    b = tuple(rhs for _, rhs in rows) + tuple(rhs for _, rhs in box_rows)
    variables = tuple(f"x{k}" for k in range(n))
    expected = next(tab.fourier_motzkin(A, names=variables).iter_integer_points(b), None)
    saved = scope.SEARCHED_POINTS
    scope._cached_first_point.cache_clear()
    try:
        scope.SEARCHED_POINTS = budget
        got = scope._cached_first_point(A, b, variables)
    finally:
        scope.SEARCHED_POINTS = saved
        scope._cached_first_point.cache_clear()
    assert got == (None if expected is None else tuple(expected))

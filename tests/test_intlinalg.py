"""Integer linear algebra (report sec. 4.1): Algorithms 1 and 2, pseudo-inverse, kernel, cokernel.

Oracles: sympy's Smith normal form, determinants and rational linear algebra,
and brute-force enumeration of small index boxes.
"""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import assume, given
from hypothesis import strategies as st
from sympy.matrices.normalforms import smith_normal_decomp

import tensoradbook as tab
from oracles import exact_product, to_sympy

big_ints = st.integers(min_value=-(10**40), max_value=10**40)


SMALL_INTEGERS = st.integers(-30, 30)


@st.composite
def int_matrices(draw, max_rows=5, max_cols=5, elements=SMALL_INTEGERS):
    n_rows = draw(st.integers(0, max_rows))
    n_cols = draw(st.integers(0, max_cols))
    entries = draw(st.lists(elements, min_size=n_rows * n_cols, max_size=n_rows * n_cols))
    # An object array keeps shapes like 0 x 3 that nested lists cannot express.
    A = np.empty((n_rows, n_cols), dtype=object)
    A.flat[:] = entries
    return A, (n_rows, n_cols)


# --- Algorithm 2 --------------------------------------------------------------------------

@given(big_ints, big_ints)
def test_extended_gcd_is_bezout(a, b):
    g, x, y = tab.extended_gcd(a, b)
    assert g == math.gcd(a, b)
    assert a * x + b * y == g
    if a and b:  # the Euclidean coefficients stay small
        assert abs(x) <= abs(b) // g and abs(y) <= abs(a) // g


@given(big_ints, big_ints)
def test_euclid_table_keeps_the_invariant(a, b):
    rows = tab.euclid_table(a, b)
    assert rows[0][1:] == (a, 1, 0) and rows[1][1:] == (b, 0, 1) and rows[-1][1] == 0
    for _q, r, s, t in rows:
        assert r == a * s + b * t
    for previous, current, following in zip(rows, rows[1:], rows[2:]):
        assert following[1] == previous[1] - current[0] * current[1]


def test_extended_gcd_edge_cases():
    assert tab.extended_gcd(0, 0) == (0, 1, 0)
    assert tab.extended_gcd(0, -7) == (7, 0, -1)
    assert tab.extended_gcd(240, 46) == (2, -9, 47)


@pytest.mark.parametrize("bad", [1.5, "3", None, True])
def test_extended_gcd_rejects_non_integers(bad):
    with pytest.raises(ValueError, match="not an integer"):
        tab.extended_gcd(bad, 3)


# --- Algorithm 1 --------------------------------------------------------------------------

def check_smith(result, A_rows, shape):
    n_rows, n_cols = shape
    S, U, V = result.S, result.U, result.V
    assert S.shape == shape and U.shape == (n_rows, n_rows) and V.shape == (n_cols, n_cols)
    assert all(type(v) is int for v in itertools.chain(S.flat, U.flat, V.flat))
    assert exact_product(U, A_rows, V) == to_sympy(S)
    assert abs(to_sympy(U).det()) == 1 and abs(to_sympy(V).det()) == 1
    diagonal = [S[k, k] for k in range(min(shape))]
    off_diagonal = [S[i, j] for i in range(n_rows) for j in range(n_cols) if i != j]
    assert all(v == 0 for v in off_diagonal)
    assert all(v > 0 for v in diagonal[:result.rank]) and all(v == 0 for v in diagonal[result.rank:])
    assert all(diagonal[k + 1] % diagonal[k] == 0 for k in range(result.rank - 1))


@given(int_matrices())
def test_smith_normal_form_against_sympy(matrix):
    rows, shape = matrix
    result = tab.smith_normal_form(rows)
    check_smith(result, rows, shape)
    if shape[0] and shape[1]:
        expected, _, _ = smith_normal_decomp(to_sympy(rows))
        assert to_sympy(result.S) == expected
        assert result.rank == to_sympy(rows).rank()


@given(int_matrices(max_rows=4, max_cols=4, elements=big_ints))
def test_smith_normal_form_with_huge_entries(matrix):
    rows, shape = matrix
    check_smith(tab.smith_normal_form(rows), rows, shape)


@given(int_matrices(max_rows=4, max_cols=4))
def test_every_step_keeps_the_invariant(matrix):
    """Each recorded state of Algorithm 1 satisfies S_k = U_k A V_k with unimodular U_k, V_k."""
    rows, shape = matrix
    result = tab.smith_normal_form(rows)
    steps = result.steps
    assert len(steps) == len(result.operations) + 1 and steps[0].operation is None
    for step in steps:
        assert exact_product(step.U, rows, step.V) == to_sympy(step.S)
    last = steps[-1]
    assert last.S.tolist() == result.S.tolist() and last.U.tolist() == result.U.tolist()
    for step in steps[1:]:
        assert step.words and step.line in range(1, 35)
        assert set(step.operation.touched) <= set(range(max(shape)))


def test_smith_normal_form_input_forms():
    A = [[2, 4, 4], [-6, 6, 12], [10, -4, -16]]
    expected = [[2, 0, 0], [0, 6, 0], [0, 0, 12]]
    for form in (A, np.array(A), np.array(A, dtype=np.int8), sympy.Matrix(A), tuple(map(tuple, A))):
        assert tab.smith_normal_form(form).S.tolist() == expected
    assert tab.smith_normal_form([[0, 0], [0, 0]]).rank == 0
    assert tab.smith_normal_form(np.zeros((0, 3), dtype=int)).V.shape == (3, 3)
    assert tab.smith_normal_form(np.zeros((2, 0), dtype=int)).U.shape == (2, 2)
    assert tab.smith_normal_form([[6, 10, 15]]).S.tolist() == [[1, 0, 0]]
    assert tab.smith_normal_form([[4], [6]]).S.tolist() == [[2], [0]]


@pytest.mark.parametrize("bad, message", [
    ([[1, 2], [3]], "ragged: row 0 has 2 entries but row 1 has 1"),
    ([[1, 2.5]], r"entry \(0, 1\) is 2.5"),
    ([[1, 2.0]], r"entry \(0, 1\) is 2.0 \(float\)"),
    ([[True, 0]], r"entry \(0, 0\) is the boolean True"),
    ([[1, "x"]], r"entry \(0, 1\) is 'x'"),
    ([1, 2], "row 0 is 1, not a list"),
    (np.array([1, 2]), "must be a 2-D matrix"),
    (np.array([[0.5]]), r"entry \(0, 0\) is 0.5"),
    (sympy.Matrix([[sympy.Rational(1, 2)]]), r"entry \(0, 0\) is 1/2"),
    ("12", "must be a matrix"),
])
def test_bad_matrices_are_named(bad, message):
    with pytest.raises(ValueError, match=message):
        tab.smith_normal_form(bad)


# --- integer pseudo-inverse, kernel, cokernel (eqs. 16-19) ----------------------------------

@given(int_matrices())
def test_integer_inverse_identities(matrix):
    rows, shape = matrix
    inv = tab.integer_inverse(rows)
    n_rows, n_cols = shape
    rank = inv.rank
    A = to_sympy(rows)
    assert inv.pinv.shape == (n_cols, n_rows)
    assert inv.kernel.shape == (n_cols, n_cols - rank)
    assert inv.cokernel.shape == (n_rows - rank, n_rows)
    assert A * to_sympy(inv.pinv) * A == A
    assert A * to_sympy(inv.kernel) == sympy.zeros(n_rows, n_cols - rank)
    assert to_sympy(inv.cokernel) * A == sympy.zeros(n_rows - rank, n_cols)
    assert to_sympy(inv.kernel).rank() == n_cols - rank
    assert to_sympy(inv.cokernel).rank() == n_rows - rank


def _in_integer_span(K, x) -> bool:
    """Whether ``x`` is an integer combination of the columns of K (sympy's rational solve)."""
    if K.shape[1] == 0:
        return all(v == 0 for v in x)
    z = sympy.symbols(f"z0:{K.shape[1]}")
    solution = sympy.linsolve((to_sympy(K), sympy.Matrix(x)), *z)
    if not solution:
        return False
    (values,) = solution
    return all(v.is_integer for v in values)


@given(int_matrices(max_rows=3, max_cols=3, elements=st.integers(-4, 4)))
def test_kernel_is_a_lattice_basis(matrix):
    """Every integer kernel vector in a box is an integer combination of K's columns."""
    rows, shape = matrix
    assume(shape[1] > 0)
    inv = tab.integer_inverse(rows)
    for x in itertools.product(range(-4, 5), repeat=shape[1]):
        if all(sum(a * v for a, v in zip(row, x)) == 0 for row in rows.tolist()):
            assert _in_integer_span(inv.kernel, x), f"{x} is in the kernel but not in the span of K"


@given(int_matrices(max_rows=3, max_cols=3, elements=st.integers(-4, 4)),
       st.lists(st.integers(-12, 12), min_size=3, max_size=3))
def test_solve_against_brute_force(matrix, beta_entries):
    rows, shape = matrix
    assume(shape[0] > 0 and shape[1] > 0)
    inv = tab.integer_inverse(rows)
    images = {}
    for x in itertools.product(range(-3, 4), repeat=shape[1]):
        images.setdefault(tuple(sum(a * v for a, v in zip(row, x)) for row in rows.tolist()), []).append(x)
    for beta, xs in images.items():  # every reachable beta is solvable and its solutions are found
        solutions = inv.solve(beta)
        assert solutions is not None
        for x in xs:
            offset = [v - p for v, p in zip(x, solutions.particular)]
            assert _in_integer_span(solutions.kernel, offset)
    beta = tuple(beta_entries[:shape[0]])
    solutions = inv.solve(beta)
    A = to_sympy(rows)
    if solutions is None:  # the reason is a certificate of no integer solution
        reason = inv.solvability(beta).reason
        assert reason.startswith("no")
        rational = sympy.linsolve((A, sympy.Matrix(beta)))
        if "cokernel" in reason:
            assert not rational
        else:
            assert rational and beta not in images
    else:
        assert all(type(v) is int for v in solutions.particular)
        assert A * sympy.Matrix(solutions.particular) == sympy.Matrix(beta)


def test_solvability_reasons():
    even = tab.integer_inverse([[2]])  # x[2 * i]: odd rows get no contribution
    assert even.solve([4]).particular == (2,)
    assert even.solve([3]) is None
    assert "I beta is not integral (entry 0 is 3/2)" in even.solvability([3]).reason
    diagonal = tab.integer_inverse([[1, 0, 0], [1, 0, 0]])  # c[i; i] over (i, j, k)
    assert diagonal.solve([2, 2]).particular[0] == 2
    assert "cokernel condition C beta = 0 fails" in diagonal.solvability([1, 2]).reason
    with pytest.raises(ValueError, match="beta must have 2 entries, got 1"):
        diagonal.solve([1])
    with pytest.raises(ValueError, match="not a rational number"):
        diagonal.solve([1, "a"])


def test_pinv_can_be_rational():
    """For x[2 i + 4 j] the pseudo-inverse halves beta: I beta is integral only for even beta."""
    inv = tab.integer_inverse([[2, 4]])
    assert any(isinstance(v, Fraction) and v.denominator == 2 for v in inv.pinv.flat)
    assert inv.solve([3]) is None and inv.solve([6]) is not None


def test_report_figure_3():
    """Fig. 3: A = (1 -2), beta = -1: I^T = (1 0), K^T = +-(2 1), Sigma = {1 <= z <= 3}."""
    inv = tab.integer_inverse([[1, -2]])
    assert inv.pinv.tolist() == [[1], [0]]
    assert [abs(v) for v in inv.kernel.flat] == [2, 1]
    boxed = inv.solve([-1]).within((7, 5))
    assert sorted(boxed.alphas()) == [(1, 1), (3, 2), (5, 3)]


@given(int_matrices(max_rows=2, max_cols=3, elements=st.integers(-3, 3)),
       st.lists(st.integers(1, 4), min_size=3, max_size=3),
       st.lists(st.integers(-6, 6), min_size=2, max_size=2))
def test_boxed_solutions_against_brute_force(matrix, sizes, beta_entries):
    """Sigma(beta) (eqs. 42-45) lists exactly the box indices alpha with A alpha = beta, once each."""
    rows, shape = matrix
    assume(shape[0] > 0 and shape[1] > 0)
    box = tuple(sizes[:shape[1]])
    beta = tuple(beta_entries[:shape[0]])
    expected = sorted(
        alpha for alpha in itertools.product(*(range(n) for n in box))
        if all(sum(a * v for a, v in zip(row, alpha)) == b for row, b in zip(rows.tolist(), beta))
    )
    solutions = tab.integer_inverse(rows).solve(beta)
    if solutions is None:
        assert expected == []
        return
    alphas = solutions.within(box).alphas()
    assert len(alphas) == len(set(alphas))
    assert sorted(alphas) == expected


def test_boxed_solutions_reject_bad_shapes():
    solutions = tab.integer_inverse([[1, 0, 1]]).solve([2])
    with pytest.raises(ValueError, match="shape .* has 2 entries but alpha has 3"):
        solutions.within((3, 4))
    with pytest.raises(ValueError, match="shape entry 1 is 0"):
        solutions.within((3, 0, 5))
    with pytest.raises(ValueError, match="shape must be a sequence of positive integers, one per entry of alpha, "
                                         "got None"):
        solutions.within(None)
    with pytest.raises(ValueError, match="shape must be a sequence"):
        solutions.within(3)


def test_solutions_and_regions_check_their_arguments():
    inverse = tab.integer_inverse([[2, 4]])
    solutions = inverse.solve([2])
    assert solutions.point([np.int64(1)]) == solutions.point([1])
    with pytest.raises(ValueError, match="z: entry 0 is 1/2, not an integer"):  # int() would truncate it to 0
        solutions.point([Fraction(1, 2)])
    with pytest.raises(ValueError, match=r"beta_names must be 1 strings, one per entry of beta, got \['b', 'c'\]"):
        inverse.symbolic_region((3, 3), ["b", "c"])
    with pytest.raises(ValueError, match="beta_names must be 1 strings, one per entry of beta, got 5"):
        inverse.symbolic_region((3, 3), 5)
    with pytest.raises(ValueError, match="shape must be a sequence"):
        inverse.symbolic_region(None)


@st.composite
def unimodular(draw, n):
    """A random unimodular n x n matrix: a product of elementary integer operations."""
    W = [[int(i == j) for j in range(n)] for i in range(n)]
    for _ in range(draw(st.integers(0, 6))):
        i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))
        if i != j:
            f = draw(st.integers(-3, 3))
            W = [[W[r][c] + (f * W[j][c] if r == i else 0) for c in range(n)] for r in range(n)]
    return W


@given(int_matrices(max_rows=2, max_cols=4, elements=st.integers(-4, 4)), st.data())
def test_any_kernel_basis_gives_the_same_solutions(matrix, data):
    rows, shape = matrix
    assume(shape[0] > 0 and shape[1] > 0)
    inv = tab.integer_inverse(rows)
    dim = inv.kernel.shape[1]
    W = data.draw(unimodular(dim)) if dim else []
    K = np.array(exact_product(inv.kernel, np.array(W, dtype=object).reshape(dim, dim)).tolist(),
                 dtype=object).reshape(shape[1], dim)
    assert inv.kernel_coordinates(K).tolist() == np.array(W, dtype=object).reshape(dim, dim).tolist()
    beta = tuple(sum(a * 1 for a in row) for row in rows.tolist())  # A (1, ..., 1) is solvable
    box = (3,) * shape[1]
    assert sorted(inv.solve(beta, kernel=K).within(box).alphas()) == sorted(inv.solve(beta).within(box).alphas())


def test_kernel_basis_errors():
    inv = tab.integer_inverse([[1, -2, -2]])  # the report's fig. 4
    with pytest.raises(ValueError, match=r"column 0 of K is not in the kernel: A K\[:, 0\] = \(-4,\)"):
        inv.solve([3], kernel=[[2, 0], [1, 1], [2, 1]])  # the basis printed in the report's dump
    with pytest.raises(ValueError, match="sublattice of index 2"):
        inv.solve([3], kernel=[[4, 2], [2, 0], [0, 1]])
    with pytest.raises(ValueError, match="linearly dependent"):
        inv.solve([3], kernel=[[2, 4], [1, 2], [0, 0]])
    with pytest.raises(ValueError, match="1 columns but the kernel has dimension 2"):
        inv.solve([3], kernel=[[2], [1], [0]])
    with pytest.raises(ValueError, match="K must have 3 rows"):
        inv.kernel_coordinates([[2, 0], [1, 1]])

"""The check functions of tensoradbook.exercises: right answers pass, typical wrong answers
fail with a message that says what is wrong, and the placeholder None says "no answer yet"."""

import itertools
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook import exercises as ex
from tensoradbook.integer.matrix import matmul
from feedback import hides, messages

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def ints(lo=-6, hi=6):
    return st.integers(lo, hi)


def matrices(max_rows=3, max_cols=4, lo=-6, hi=6):
    return st.integers(1, max_rows).flatmap(
        lambda n: st.integers(1, max_cols).flatmap(
            lambda m: st.lists(st.lists(ints(lo, hi), min_size=m, max_size=m), min_size=n, max_size=n)))


@st.composite
def unimodular(draw, n):
    """A random unimodular n x n matrix as a product of elementary operations."""
    W = np.empty((n, n), dtype=object)
    W[...] = 0
    for k in range(n):
        W[k, k] = 1
    for _ in range(draw(st.integers(0, 6))):
        if n < 2:
            if draw(st.booleans()):
                W = -W
            continue
        i, j = draw(st.permutations(range(n)))[:2]
        f = draw(st.integers(-3, 3))
        W[:, i] = W[:, i] + f * W[:, j]
        if draw(st.booleans()):
            W[:, [i, j]] = W[:, [j, i]]
    return W


# --- placeholders -----------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: ex.check_bezout(240, 46, None),
    lambda: ex.check_smith([[2, 4], [6, 8]], None),
    lambda: ex.check_kernel_basis([[1, -2, -2]], None),
    lambda: ex.check_integer_solutions([[2, 0]], [3], None),
    lambda: ex.check_loop_bounds([[1, 0], [-1, 0], [0, 1], [0, -1]], [0, -3, 0, -3], None),
    lambda: ex.check_point_count([[1, 0, 1]], [5], (3, 4, 5), None),
    lambda: ex.check_redundant_rows([[1, 0], [0, 1]], [0, 0], None),
])
def test_none_is_no_answer_yet(call):
    result = call()
    assert not result.ok and result.pending
    assert "no answer yet" in str(result)
    assert "no answer yet" in repr(result)


# --- Bezout -------------------------------------------------------------------------------------

@SETTINGS
@given(ints(-200, 200), ints(-200, 200))
def test_bezout_core_answer_passes(a, b):
    assert ex.check_bezout(a, b, tab.extended_gcd(a, b))


@SETTINGS
@given(ints(-200, 200), ints(-200, 200), ints(-5, 5))
def test_bezout_other_coefficients_pass_and_wrong_fail(a, b, t):
    g, x, y = tab.extended_gcd(a, b)
    if g:
        # (x + t b/g, y - t a/g) is another Bezout pair.
        assert ex.check_bezout(a, b, (g, x + t * b // g, y - t * a // g))
    result = ex.check_bezout(a, b, (g, x + 1, y))
    assert result.ok == (a == 0)


def _euclid(a, b):
    x0, y0, x1, y1 = 1, 0, 0, 1
    while b:
        q, r = divmod(a, b)
        a, b = b, r
        x0, y0, x1, y1 = x1, y1, x0 - q * x1, y0 - q * y1
    return a, x0, y0


def test_bezout_function_is_tried_on_other_pairs():
    """A function answer (the assignment's programming exercise) is called on the exercise's pair and on the check's
    own pairs, so one right for the exercise's pair only (no zero, a >= b) fails visibly, with the pair named."""
    right = ex.check_bezout(240, 46, _euclid)
    assert right.ok, str(right)
    assert ex.check_bezout(240, 46, tab.extended_gcd)

    def divides_first(a, b):  # divides before it tests b: fails for b = 0
        q, r = divmod(a, b)
        return _euclid(a, b)

    zero = ex.check_bezout(240, 46, divides_first)
    assert not zero and "bezout(84, 0) raised ZeroDivisionError" in messages(zero)

    def larger_first(a, b):  # swaps a < b and forgets to swap x and y back
        return _euclid(a, b) if a >= b else _euclid(b, a)

    swapped = ex.check_bezout(240, 46, larger_first)
    assert not swapped and "bezout(0, 35) = (35, 1, 0)" in messages(swapped)
    assert "must work for any non-negative a and b" in messages(swapped)
    assert "triple" in messages(ex.check_bezout(240, 46, lambda a, b: 2))
    for pair in ex.ch04a_integer_equations.BEZOUT_PAIRS:
        assert ex.check_bezout(*pair, _euclid), pair


def test_bezout_messages():
    assert "g = 4 does not divide b = 46" in messages(ex.check_bezout(240, 46, (4, 1, 1)))
    assert "not the greatest common divisor" in messages(ex.check_bezout(12, 18, (3, 1, -1)))
    assert "= -6, not g = 3" in messages(ex.check_bezout(12, 18, (3, 1, -1)))
    assert "negative" in messages(ex.check_bezout(12, 18, (-6, -1, 0)))
    assert "not an integer" in messages(ex.check_bezout(12, 18, (6.0, -1, 1)))
    assert "triple" in messages(ex.check_bezout(12, 18, 6))


# --- Smith normal form --------------------------------------------------------------------------

A3 = [[2, 4, 4], [-6, 6, 12], [10, -4, -16]]


@SETTINGS
@given(matrices())
def test_smith_core_answer_passes(A):
    s = tab.smith_normal_form(A)
    assert ex.check_smith(A, (s.S, s.U, s.V))


@SETTINGS
@given(st.data())
def test_smith_with_other_transforms_passes(data):
    # S = U A V is also S = (D U) A (V D') for sign/permutation tweaks that fix S; simplest:
    # the decomposition of A W (W unimodular) gives one of A by V -> W V.
    A = data.draw(matrices())
    m = len(A[0])
    W = data.draw(unimodular(m))
    AW = matmul(np.array(A, dtype=object), W)
    s = tab.smith_normal_form(AW)
    assert ex.check_smith(A, (s.S, s.U, matmul(W, s.V)))


@SETTINGS
@given(matrices(), st.data())
def test_smith_perturbed_entry_fails(A, data):
    s = tab.smith_normal_form(A)
    which = data.draw(st.sampled_from(["S", "U", "V"]))
    M = {"S": s.S, "U": s.U, "V": s.V}[which].copy()
    i = data.draw(st.integers(0, M.shape[0] - 1))
    j = data.draw(st.integers(0, M.shape[1] - 1))
    M[i, j] += data.draw(st.sampled_from([-2, -1, 1, 2]))
    answer = {"S": (M, s.U, s.V), "U": (s.S, M, s.V), "V": (s.S, s.U, M)}[which]
    S, U, V = answer
    # A changed U or V can still be a valid transform (e.g. a row of U that meets a zero row of A).
    still_valid = (which != "S" and round(abs(np.linalg.det(M.astype(float)))) == 1
                   and (matmul(matmul(U, np.array(A, dtype=object)), V) == S).all())
    result = ex.check_smith(A, answer)
    assert result.ok == still_valid
    if which == "S":
        assert "U A V is not S" in messages(result)


def test_smith_messages():
    s = tab.smith_normal_form(A3)
    assert "U is not unimodular: det U = 8" in messages(ex.check_smith(A3, (s.S, 2 * s.U, s.V)))
    assert "V is not unimodular" in messages(ex.check_smith(A3, (s.S, s.U, 3 * s.V)))
    bad = ex.check_smith([[4, 0], [0, 6]], ([[4, 0], [0, 6]], [[1, 0], [0, 1]], [[1, 0], [0, 1]]))
    assert "S[0,0] = 4 does not divide S[1,1] = 6" in messages(bad)
    neg = ex.check_smith([[-3]], ([[-3]], [[1]], [[1]]))
    assert "S[0,0] = -3 is negative" in messages(neg)
    zero_first = ex.check_smith([[0, 0], [0, 5]], ([[0, 0], [0, 5]], [[1, 0], [0, 1]], [[1, 0], [0, 1]]))
    assert "zeros belong at the end" in messages(zero_first)
    not_diag = ex.check_smith([[1, 2]], ([[1, 2]], [[1]], [[1, 0], [0, 1]]))
    assert "S is not diagonal: S[0,1] = 2" in messages(not_diag)
    shape = ex.check_smith([[1, 2]], ([[1, 0]], [[1]], [[1]]))
    assert "V must be 2x2" in messages(shape)
    mismatch = ex.check_smith([[2, 4]], ([[2, 0]], [[1]], [[1, 0], [0, 1]]))
    assert "U A V is not S: (U A V)[0,1] = 4 but S[0,1] = 0" in messages(mismatch)
    assert "not an integer" in messages(ex.check_smith([[2]], ([[2.5]], [[1]], [[1]])))


# --- kernel basis -------------------------------------------------------------------------------

@SETTINGS
@given(matrices(), st.data())
def test_kernel_unimodular_transform_passes(A, data):
    K = tab.integer_inverse(A).kernel
    W = data.draw(unimodular(K.shape[1]))
    assert ex.check_kernel_basis(A, matmul(K, W))


@SETTINGS
@given(matrices(), st.data())
def test_kernel_scaled_column_is_sublattice(A, data):
    K = tab.integer_inverse(A).kernel.copy()
    if K.shape[1] == 0:
        return
    j = data.draw(st.integers(0, K.shape[1] - 1))
    f = data.draw(st.sampled_from([2, 3, -2]))
    K[:, j] = f * K[:, j]
    result = ex.check_kernel_basis(A, K)
    assert not result.ok
    assert f"sublattice of index {abs(f)}" in messages(result)


@SETTINGS
@given(matrices(), st.data())
def test_kernel_perturbed_entry_fails(A, data):
    K = tab.integer_inverse(A).kernel.copy()
    if K.shape[1] == 0:
        return
    i = data.draw(st.integers(0, K.shape[0] - 1))
    j = data.draw(st.integers(0, K.shape[1] - 1))
    K[i, j] += 1
    A_arr = np.array(A, dtype=object)
    if any(A_arr[:, i]):  # otherwise the change stays inside the kernel
        result = ex.check_kernel_basis(A, K)
        assert not result.ok
        assert f"column {j} of K is not in the kernel" in messages(result)


def test_kernel_messages():
    A = [[1, -2, -2]]
    assert ex.check_kernel_basis(A, [[2, 2], [1, 0], [0, 1]])
    assert ex.check_kernel_basis(A, [[2, 0], [1, 1], [0, -1]])
    r = ex.check_kernel_basis(A, [[2, 2], [1, 0], [1, 1]])
    assert "column 0 of K is not in the kernel: A K[:,0] = (-2,)" in messages(r)
    assert "K has 1 column, but a basis of the kernel lattice has exactly M - rank A columns" in \
        messages(ex.check_kernel_basis(A, [[2], [1], [0]]))
    assert "linearly dependent" in messages(ex.check_kernel_basis(A, [[2, 4], [1, 2], [0, 0]]))
    assert "has 3 columns" in messages(ex.check_kernel_basis(A, [[2, 2, 0], [1, 0, 1], [0, 1, -1]]))
    r = ex.check_kernel_basis(A, [[4, 2], [2, 0], [0, 1]])
    assert "your K spans only a sublattice of index 2 of the kernel" in messages(r)
    assert "column 0 have the common factor 2" in messages(r)
    assert "must have M = 3 rows" in messages(ex.check_kernel_basis(A, [[2, 2], [1, 0]]))
    # A full-rank matrix has the empty kernel basis.
    assert ex.check_kernel_basis([[1, 0], [0, 1]], np.zeros((2, 0), dtype=int))
    # The blog post's SVD null space, rounded, is not an integer basis at all.
    assert "not an integer" in messages(ex.check_kernel_basis([[1, 2]], [[-0.894], [0.447]]))
    # ... and made integral by scaling, it can span a sublattice: x[2 i + 4 j].
    assert ex.check_kernel_basis([[2, 4]], [[-2], [1]])
    assert ex.check_kernel_basis([[1, 2], [2, 4]], [[-2], [1]])
    assert ex.check_kernel_basis([[2, 4, 6]], [[-2, -3], [1, 0], [0, 1]])
    assert "index 2" in messages(ex.check_kernel_basis([[2, 4, 6]], [[-2, -6], [1, 0], [0, 2]]))


def test_kernel_feedback_hides_the_basis():
    # 3 a + 5 b + 7 c = 0 (chapter 04a, exercise 3): the kernel has dimension 2.
    A = [[3, 5, 7]]
    K = tab.integer_inverse(A).kernel
    columns = [str(tuple(int(v) for v in K[:, j])).replace(",)", ")") for j in range(K.shape[1])]
    # Too few and too many columns draw the same words: neither says which way the count is off.
    too_few = ex.check_kernel_basis(A, K[:, :1])
    too_many = ex.check_kernel_basis(A, np.hstack([K, K[:, :1] + K[:, 1:]]))
    assert messages(too_few).replace("1 column,", "3 columns,") == messages(too_many)
    for result in (too_few, too_many):
        assert "M - rank A" in messages(result)
        assert hides(result, "dimension 2", "M - R = 3 - 1", "= 2,", "exactly 2", "too few", "more than")
    # Independent columns spanning a sublattice (index 3): no kernel vector is shown as a witness.
    sub = ex.check_kernel_basis(A, np.hstack([K[:, :1] + K[:, 1:], K[:, :1] - 2 * K[:, 1:]]))
    assert "sublattice of index 3" in messages(sub) and "Smith" in messages(sub)
    assert hides(sub, *columns, "kernel vector (")


# --- integer solutions --------------------------------------------------------------------------

@SETTINGS
@given(matrices(max_rows=2, max_cols=3, lo=-4, hi=4), st.data())
def test_solutions_core_answer_passes(A, data):
    inv = tab.integer_inverse(A)
    alpha = data.draw(st.lists(ints(-3, 3), min_size=len(A[0]), max_size=len(A[0])))
    beta = [sum(a * x for a, x in zip(row, alpha)) for row in A]
    sol = inv.solve(beta)
    assert sol is not None
    assert ex.check_integer_solutions(A, beta, (sol.particular, sol.kernel))
    # Any other solution as particular one, with a transformed basis, passes too.
    W = data.draw(unimodular(inv.kernel.shape[1]))
    assert ex.check_integer_solutions(A, beta, (alpha, matmul(inv.kernel, W)))
    assert not ex.check_integer_solutions(A, beta, ex.NO_SOLUTION)


def test_solutions_messages():
    # x[2 i]: odd beta has no integer solution.
    assert ex.check_integer_solutions([[2]], [3], ex.NO_SOLUTION)
    assert ex.check_integer_solutions([[2]], [3], "No solution")
    r = ex.check_integer_solutions([[2]], [3], ([1], np.zeros((1, 0), dtype=int)))
    assert "A alpha_p = (2,), not beta = (3,)" in messages(r) and "eq. 17" in messages(r)
    r = ex.check_integer_solutions([[2]], [4], ex.NO_SOLUTION)
    assert '"no solution" is not right' in messages(r) and "eq. 16" in messages(r)
    # c[i; i]: beta must have equal entries (the cokernel condition).
    r = ex.check_integer_solutions([[1, 0, 0], [1, 0, 0]], [1, 2], ([1, 0, 0], [[0, 0], [1, 0], [0, 1]]))
    assert "not a solution" in messages(r) and "cokernel condition (eq. 16)" in messages(r)
    assert ex.check_integer_solutions([[1, 0, 0], [1, 0, 0]], [2, 2], ([2, 5, -1], [[0, 0], [1, 0], [0, 1]]))
    r = ex.check_integer_solutions([[1, 0, 1]], [5], ([5, 0, 0], [[0, 1], [1, 0], [0, -2]]))
    assert "column 1 of K is not in the kernel" in messages(r)
    assert "alpha_p must have 3 entries" in messages(
        ex.check_integer_solutions([[1, 0, 1]], [5], ([5, 0], [[0, 1], [1, 0], [0, -1]])))
    assert "not" in messages(ex.check_integer_solutions([[1, 0, 1]], [5], "maybe"))


@pytest.mark.parametrize("A, beta, answer", [
    ([[2, 4, 6]], [3], ([1, 0, 0], [[2, 3], [-1, 0], [0, -1]])),  # chapter 04a, exercise 4 (a): a pair given
    ([[2]], [3], ([1.5], np.zeros((1, 0), dtype=int))),           # a real, not integer, solution
    ([[1, 0, 0], [1, 0, 0]], [1, 2], ([1, 0, 0], [[0, 0], [1, 0], [0, 1]])),
])
def test_solutions_feedback_does_not_say_there_is_none(A, beta, answer):
    result = ex.check_integer_solutions(A, beta, answer)
    assert hides(result, "no solution", "no integer solution", "not integral", "fails", "gcd")
    assert "eq. 16" in messages(result)  # the hint: decide solvability first, for either verdict


def test_solutions_feedback_on_a_wrong_pair_reads_the_same_for_both_verdicts():
    # The hint after a wrong alpha_p is the same whether or not solutions exist, so it tells nothing.
    solvable = ex.check_integer_solutions([[1, 1, 0], [0, 1, 1]], [3, 5], ([0, 0, 0], [[1], [-1], [1]]))
    unsolvable = ex.check_integer_solutions([[2, 4, 6]], [3], ([0, 0, 0], [[2, 3], [-1, 0], [0, -1]]))
    assert solvable.problems[-1] == unsolvable.problems[-1]


# --- loop bounds --------------------------------------------------------------------------------

# 0 <= x_0 <= 4, 0 <= x_1 <= 4, x_0 + x_1 <= 5
TRI_A = [[1, 0], [-1, 0], [0, 1], [0, -1], [-1, -1]]
TRI_B = [0, -4, 0, -4, -5]


def test_loop_bounds_messages():
    assert ex.check_loop_bounds(TRI_A, TRI_B, ((0, 4), lambda x1: (0, min(4, 5 - x1))))
    r = ex.check_loop_bounds(TRI_A, TRI_B, ((0, 4), lambda x1: (0, 4)))
    assert "your bounds include x = (4, 2), which is outside: inequality 4 (-x_0 - x_1 >= -5) fails" in messages(r)
    r = ex.check_loop_bounds(TRI_A, TRI_B, ((1, 4), lambda x1: (0, 5 - x1)))
    assert "your bounds miss the point x = (0, 0)" in messages(r)
    r = ex.check_loop_bounds(TRI_A, TRI_B, ((0, 4), lambda x1: (0, 2.5)), names=("z_0", "z_1"))
    assert "not an integer" in messages(r)
    r = ex.check_loop_bounds(TRI_A, TRI_B, ((0, 4), lambda x1: (0, 5 - x1)), names=("z_0", "z_1"))
    assert "your bounds include z = (5, 0)" in messages(r)


@SETTINGS
@given(st.integers(-3, 3), st.integers(1, 4), st.integers(-3, 3), st.integers(1, 4), st.integers(-2, 2),
       st.integers(-4, 6))
def test_loop_bounds_from_core_pass_and_shifted_fail(lo0, w0, lo1, w1, c, d):
    # Box plus one cut x_0 + c x_1 <= d, bounds from the core's Fourier-Motzkin.
    A = [[1, 0], [-1, 0], [0, 1], [0, -1], [-1, -c]]
    b = [lo0, -(lo0 + w0), lo1, -(lo1 + w1), -d]
    fm = tab.fourier_motzkin(A)
    if not fm.integer_points(b):
        return
    outer = fm.bounds(b)
    assert ex.check_loop_bounds(A, b, (outer, lambda x1: fm.bounds(b, [x1])))
    wrong = ex.check_loop_bounds(A, b, (outer, lambda x1: (fm.bounds(b, [x1])[0], fm.bounds(b, [x1])[1] + 1)))
    assert not wrong and "outside" in messages(wrong)


# --- point counts -------------------------------------------------------------------------------

@SETTINGS
@given(matrices(max_rows=1, max_cols=3, lo=-3, hi=3), st.integers(-6, 6))
def test_point_count(A, beta):
    shape = (3, 4, 2)[: len(A[0])]
    count = sum(1 for alpha in np.ndindex(*shape) if sum(a * x for a, x in zip(A[0], alpha)) == beta)
    assert ex.check_point_count(A, [beta], shape, count)
    assert not ex.check_point_count(A, [beta], shape, count + 1)


def test_point_count_messages():
    # d[i + k] with i < 3, j < 4, k < 5 at beta = 5: i in {1, 2}, 4 values of j.
    assert ex.check_point_count([[1, 0, 1]], [5], (3, 4, 5), 8)
    # too many and too few draw the same words (no binary search for the count)
    high, low = (messages(ex.check_point_count([[1, 0, 1]], [5], (3, 4, 5), n)) for n in (12, 6))
    assert high.replace("12", "6") == low and "both ends of each range included" in low
    # Fig. 3 and Fig. 4 of the report.
    assert ex.check_point_count([[1, -2]], [-1], (7, 5), 3)
    none = ex.check_point_count([[2, 0]], [3], (4, 4), 1)
    assert "eqs. 16-17" in messages(none)
    assert hides(none, "not integral", "no integer solution", 0)
    assert hides(ex.check_point_count([[1, 0, 1]], [5], (3, 4, 5), 12), 8)
    assert hides(ex.check_point_count([[1, 0, 1]], [5], (3, 4, 5), 6), 8)


# --- redundant rows -----------------------------------------------------------------------------

SQUARE_A = [[1, 0], [0, 1], [1, 1], [-1, 0], [0, -1]]
SQUARE_B = [0, 0, -1, -3, -3]


def test_redundant_rows_messages():
    assert ex.check_redundant_rows(SQUARE_A, SQUARE_B, {2})
    r = ex.check_redundant_rows(SQUARE_A, SQUARE_B, {0})
    assert "that is not the set of redundant rows" in messages(r) and "Fourier-Motzkin" in messages(r)
    assert hides(r, "row 0", "row 2", "x_0 + x_1 >= -1", "did not list", "x = (")
    assert "there is no row 7" in messages(ex.check_redundant_rows(SQUARE_A, SQUARE_B, {7}))
    # Two copies of a row: each alone is redundant.
    assert ex.check_redundant_rows([[1, 0], [1, 0], [-1, 0]], [0, 0, -2], {0, 1})


def _brute_min(A, b, i):
    """Exact min of A[i] x over the other rows in 2-D, by vertices and recession directions.

    The other rows always contain three of the four box rows, so they span R^2 (a pointed
    polyhedron): the minimum is -inf along a recession direction or attained at a vertex.
    """
    others = [k for k in range(len(A)) if k != i]
    a = A[i]
    directions = [(0, 1), (0, -1), (1, 0), (-1, 0)]
    for k in others:
        p, q = A[k]
        directions += [(-q, p), (q, -p)]
    for d in directions:
        if d != (0, 0) and all(A[k][0] * d[0] + A[k][1] * d[1] >= 0 for k in others) \
                and a[0] * d[0] + a[1] * d[1] < 0:
            return None
    values = []
    for k, l in itertools.combinations(others, 2):
        det = A[k][0] * A[l][1] - A[k][1] * A[l][0]
        if det == 0:
            continue
        x0 = Fraction(b[k] * A[l][1] - A[k][1] * b[l], det)
        x1 = Fraction(A[k][0] * b[l] - b[k] * A[l][0], det)
        if all(A[m][0] * x0 + A[m][1] * x1 >= b[m] for m in others):
            values.append(a[0] * x0 + a[1] * x1)
    return min(values)


@SETTINGS
@given(st.lists(st.tuples(st.integers(-2, 2), st.integers(-2, 2), st.integers(-4, 4)), min_size=1, max_size=3))
def test_redundant_rows_against_brute_force(cuts):
    # The box 0 <= x <= 3 plus random cuts; the truth comes from vertex enumeration.
    A = [[1, 0], [-1, 0], [0, 1], [0, -1]] + [[p, q] for p, q, _ in cuts if (p, q) != (0, 0)]
    b = [0, -3, 0, -3] + [r for p, q, r in cuts if (p, q) != (0, 0)]
    if not tab.fourier_motzkin(A).feasible(b):
        return
    truth = set()
    for i in range(len(A)):
        low = _brute_min(A, b, i)
        if low is not None and low >= b[i]:
            truth.add(i)
    assert ex.check_redundant_rows(A, b, truth)
    wrong = {messages(ex.check_redundant_rows(A, b, truth ^ {i})) for i in range(len(A))}
    # a row left out or wrongly claimed: the same words, no row named
    assert len(wrong) == 1 and not re.search(r"row \d", wrong.pop())

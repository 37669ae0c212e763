"""Tests of tensoradbook.integer.geometry: exact helpers for the widgets' pictures."""

from fractions import Fraction
from itertools import combinations, product

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook.integer.geometry import (AffineBound, box_range, drawn_entries, hidden_entries, image_range,
                                           loop_bounds, polygon_vertices, solutions_in_view)


def brute_image_range(A, shape):
    values = [[sum(a * x for a, x in zip(row, alpha)) for row in A]
              for alpha in product(*(range(n) for n in shape))]
    return [(min(v[i] for v in values), max(v[i] for v in values)) for i in range(len(A))]


def test_image_range_of_fig3():
    # beta = alpha_0 - 2 alpha_1 over 7 x 5: from 0 - 2*4 to 6 - 0.
    assert image_range([[1, -2]], (7, 5)) == [(-8, 6)]


@given(st.integers(1, 3).flatmap(lambda m: st.tuples(
    st.lists(st.lists(st.integers(-4, 4), min_size=m, max_size=m), min_size=1, max_size=3),
    st.lists(st.integers(1, 4), min_size=m, max_size=m))))
def test_image_range_matches_brute_force(case):
    A, shape = case
    assert image_range(A, shape) == brute_image_range(A, shape)


def test_image_range_rejects_bad_shape():
    with pytest.raises(ValueError, match="positive"):
        image_range([[1, 2]], (3, 0))
    with pytest.raises(ValueError, match="2 entries"):
        image_range([[1, 2]], (3,))


def test_polygon_of_fig4_kernel_is_a_triangle():
    boxed = tab.integer_inverse([[1, -2, -2]]).solve((3,)).within((8, 6, 6))
    vertices = polygon_vertices(boxed.constraint_matrix, boxed.rhs)
    assert set(vertices) == {(0, 0), (2, 0), (0, 2)}
    assert polygon_vertices(boxed.constraint_matrix, boxed.rhs, boxed.system) == vertices
    other = tab.fourier_motzkin([[1, 0], [0, 1]])
    with pytest.raises(ValueError, match="not made from A"):
        polygon_vertices(boxed.constraint_matrix, boxed.rhs, other)
    with pytest.raises(ValueError, match="not made from A: pass fourier_motzkin.A. or None, got 'system'"):
        polygon_vertices(boxed.constraint_matrix, boxed.rhs, "system")
    with pytest.raises(ValueError, match="loop_bounds: system must be a FourierMotzkin"):
        loop_bounds(None, boxed.rhs)
    assert all(isinstance(c, Fraction) for v in vertices for c in v)


def test_polygon_degenerate_and_empty_regions():
    square = [[1, 0], [-1, 0], [0, 1], [0, -1]]
    assert polygon_vertices(square, [1, -1, 2, -2]) == [(1, 2)]
    assert polygon_vertices(square, [0, -1, 2, -2]) == [(0, 2), (1, 2)]
    assert polygon_vertices(square, [2, -1, 0, 0]) == []


def test_polygon_rejects_unbounded_region_and_wrong_width():
    with pytest.raises(ValueError, match="unbounded"):
        polygon_vertices([[1, 0], [0, 1]], [0, 0])
    with pytest.raises(ValueError, match="2 columns"):
        polygon_vertices([[1, 0, 0]], [0])


def _inside_convex(vertices, point) -> bool:
    """Exact point-in-polygon for the CCW vertex list (also for a point or a segment)."""
    if len(vertices) == 1:
        return tuple(point) == tuple(vertices[0])
    if len(vertices) == 2:
        (ax, ay), (bx, by) = vertices
        px, py = point
        cross = (bx - ax) * (py - ay) - (by - ay) * (px - ax)
        return cross == 0 and min(ax, bx) <= px <= max(ax, bx) and min(ay, by) <= py <= max(ay, by)
    for (ax, ay), (bx, by) in zip(vertices, vertices[1:] + vertices[:1]):
        if (bx - ax) * (point[1] - ay) - (by - ay) * (point[0] - ax) < 0:
            return False
    return True


R = 6  # every region is clipped to the box |z_i| <= R so it is bounded


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(-8, 8)), max_size=4))
def test_polygon_vertices_match_brute_force(extra):
    A = [[1, 0], [-1, 0], [0, 1], [0, -1]] + [[p, q] for p, q, _ in extra]
    b = [-R, -R, -R, -R] + [c for _, _, c in extra]
    vertices = polygon_vertices(A, b)
    for v in vertices:
        assert all(p * v[0] + q * v[1] >= c for (p, q), c in zip(A, b))
    if len(vertices) >= 3:  # strictly convex, counter-clockwise
        for a, m, c in zip(vertices, vertices[1:] + vertices[:1], vertices[2:] + vertices[:2]):
            assert (m[0] - a[0]) * (c[1] - a[1]) - (m[1] - a[1]) * (c[0] - a[0]) > 0
    grid = product(range(-R, R + 1), repeat=2)
    expected = {z for z in grid if all(p * z[0] + q * z[1] >= c for (p, q), c in zip(A, b))}
    found = {z for z in product(range(-R, R + 1), repeat=2) if vertices and _inside_convex(vertices, z)}
    assert found == expected


def test_loop_bounds_of_fig3_fold_to_the_reports_range():
    boxed = tab.integer_inverse([[1, -2]]).solve((-1,)).within((7, 5))
    (lower, upper), = loop_bounds(boxed.system, boxed.rhs)
    # 1/2 <= z <= 7/2 over the reals; the loop runs 1 <= z <= 3 as in fig. 3.
    assert lower == [AffineBound(Fraction(1, 2), (), True)]
    assert upper == [AffineBound(Fraction(7, 2), (), False)]
    assert (lower[0].rounded_constant, upper[0].rounded_constant) == (1, 3)


kernels = st.integers(1, 3).flatmap(lambda m: st.lists(
    st.lists(st.integers(-3, 3), min_size=m, max_size=m), min_size=1, max_size=2))


@settings(max_examples=60, deadline=None)
@given(kernels, st.data())
def test_loop_bounds_agree_with_fourier_motzkin(A, data):
    n_cols = len(A[0])
    shape = data.draw(st.lists(st.integers(1, 5), min_size=n_cols, max_size=n_cols))
    beta = [data.draw(st.integers(lo, hi)) for lo, hi in image_range(A, shape)]
    solutions = tab.integer_inverse(A).solve(beta)
    if solutions is None or solutions.kernel.shape[1] == 0:
        return
    boxed = solutions.within(shape)
    system, bounds = boxed.system, loop_bounds(boxed.system, boxed.rhs)
    for k, (lower, upper) in enumerate(bounds):
        for later in product(range(-3, 4), repeat=system.n_vars - 1 - k):
            low, high = system.bounds(boxed.rhs, later)
            assert max(t.value(later) for t in lower) == low
            assert min(t.value(later) for t in upper) == high
            for t in lower + upper:  # the rounded constant gives the same integer bound
                if t.integral:
                    shifted = t.rounded_constant + sum(c * v for c, v in zip(t.coefficients, later))
                    assert shifted == t.value(later)


# --- the solutions alpha = p + K z seen on two entries of alpha (figs. 3, 4a) --------------------------

kernels = st.integers(3, 4).flatmap(lambda m: st.integers(1, 2).flatmap(lambda kappa: st.tuples(
    st.lists(st.integers(-5, 5), min_size=m, max_size=m),
    st.lists(st.lists(st.integers(-3, 3), min_size=kappa, max_size=kappa), min_size=m, max_size=m))))


def rank(rows) -> int:
    return int(np.linalg.matrix_rank(np.array(rows, dtype=float))) if rows else 0


@settings(max_examples=200, deadline=None)
@given(kernels)
def test_drawn_entries_are_the_first_pair_that_shows_every_solution_apart(case):
    _, K = case
    kappa = len(K[0])
    assume(rank(K) == kappa)
    pairs = [pair for pair in combinations(range(len(K)), 2) if rank([K[pair[0]], K[pair[1]]]) == kappa]
    assert drawn_entries(K) == pairs[0]


@settings(max_examples=200, deadline=None)
@given(kernels, st.tuples(st.integers(-6, 2), st.integers(0, 8), st.integers(-6, 2), st.integers(0, 8)))
# found by this test: an entry K does not move (K_c = 0) at p_c outside the view shows no solution at all
@example(([1, 0, 0], [[0], [0], [1]]), (0, 0, 0, 0))
def test_solutions_in_view_against_brute_force(case, window):
    p, K = case
    kappa = len(K[0])
    assume(rank(K) == kappa)
    a, b = drawn_entries(K)
    view = ((window[0] - 0.5, window[0] + window[1] + 0.5), (window[2] - 0.5, window[2] + window[3] + 0.5))
    shape = (3,) * len(p)

    def alpha(z):
        return [pc + sum(k * zj for k, zj in zip(row, z)) for pc, row in zip(p, K)]

    def in_view(z):
        return all(low <= alpha(z)[c] <= high for c, (low, high) in zip((a, b), view))

    # every z seen in a window of these sizes is within 80 of 0: p, K and the window are small
    brute = [z for z in product(range(-80, 81), repeat=kappa) if in_view(z)]
    assert sorted(solutions_in_view(p, K, (a, b), view, limit=10**6)) == sorted(brute)
    leaving = [z for z in brute if not all(0 <= v < 3 for v in alpha(z))]
    assert sorted(solutions_in_view(p, K, (a, b), view, outside=shape, limit=10**6)) == sorted(leaving)
    assert len(solutions_in_view(p, K, (a, b), view, limit=2)) == min(2, len(brute))


@settings(max_examples=200, deadline=None)
@given(kernels.filter(lambda case: len(case[1][0]) == 2), st.lists(st.integers(-9, 9), min_size=2, max_size=2))
def test_hidden_entries_follow_the_drawn_two_on_every_solution(case, z):
    p, K = case
    assume(rank(K) == 2)
    a, b = drawn_entries(K)
    alpha = [pc + k0 * z[0] + k1 * z[1] for pc, (k0, k1) in zip(p, K)]
    hidden = hidden_entries(p, K, (a, b))
    assert set(hidden) == set(range(len(p))) - {a, b}
    for h, (c, g_a, g_b) in hidden.items():
        assert c + g_a * alpha[a] + g_b * alpha[b] == alpha[h]


def test_the_alpha_helpers_check_their_arguments():
    with pytest.raises(ValueError, match="not independent"):
        drawn_entries([[1, 2], [2, 4], [3, 6]])
    with pytest.raises(ValueError, match="1 or 2 columns"):
        drawn_entries([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="integer particular solution"):
        solutions_in_view([Fraction(1, 2), 0], [[2], [1]], (0, 1), ((0, 5), (0, 5)))
    with pytest.raises(ValueError, match="2 columns"):
        hidden_entries([0, 0, 0], [[2], [1], [0]], (0, 1))


@given(st.lists(st.tuples(st.integers(-9, 9), st.integers(-5, 5), st.integers(0, 5)), max_size=4),
       st.integers(-20, 20))
def test_box_range_is_the_least_and_greatest_value_on_the_box(terms, constant):
    """Oracle: every corner and inner point of the box, enumerated."""
    boxes = [(c, (low, low + width)) for c, low, width in terms]
    values = [constant + sum(c * x for (c, _), x in zip(boxes, point))
              for point in product(*(range(a, b + 1) for _, (a, b) in boxes))]
    assert box_range(boxes, constant) == (min(values), max(values))

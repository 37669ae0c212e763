"""Feedback on a wrong answer says what is wrong and hints, but never gives the expected answer away.

For every exercise of the chapters (the same data as the notebooks' check cells), the right answer is
computed here independently (brute force, numpy, the core), then typical wrong answers are checked: the
feedback the student sees (the problems and the note, not the exercise's own title) must not contain the
expected value, a part of it (an entry, a member of the set), or a verdict such as "no solution" that
decides the exercise.
"""

import dataclasses
import itertools
import math

import numpy as np
import pytest

import tensoradbook as tab
from tensoradbook import chaining as jc
from tensoradbook import exercises as ex
from tensoradbook import inverse as ia
from tensoradbook.inverse.examples import circle_and_line, fig2_transcendental
from feedback import feedback, hides


SECTION6 = ("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
            {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)})


# --- counts and single numbers: the right number is never printed ------------------------------------

def only_accepted(check, candidates):
    """The one candidate answer ``check`` accepts (found by trying them all)."""
    accepted = [c for c in candidates if check(c).ok]
    assert len(accepted) == 1, accepted
    return accepted[0]


def test_bezout_hides_the_gcd():
    g = math.gcd(391, 299)
    for wrong in [(1, 1, 1), (17, 1, 1), (13, 0, 0), (46, 1, -1), (0, 1, 1)]:
        assert hides(ex.check_bezout(391, 299, wrong), g)


def test_smith_hides_the_invariant_factors():
    I2 = [[1, 0], [0, 1]]
    for S in ([[1, 0], [0, 20]], [[2, 0], [0, 5]], [[4, 0], [0, 6]], [[6, 0], [0, 6]]):
        assert hides(ex.check_smith([[6, 4], [4, 6]], (S, I2, I2)), "(2, 10)", "invariant factors (")


def test_point_count_hides_the_count():
    A, beta, shape = [[1, -2, -2]], [1], (7, 4, 4)  # chapter 04b, exercise 2
    right = sum(1 for alpha in np.ndindex(*shape) if alpha[0] - 2 * alpha[1] - 2 * alpha[2] == 1)
    assert ex.check_point_count(A, beta, shape, right)
    for wrong in (0, 1, right - 1, right + 1, 2 * right, 112):
        assert hides(ex.check_point_count(A, beta, shape, wrong), right)


def test_term_count_hides_the_count():
    text, shapes = SECTION6  # chapter 05, exercise 3: d[5]
    right = sum(1 for i in range(3) for j in range(4) for k in range(5) if i + k == 5)
    assert ex.check_term_count(text, "d", [5], right, shapes=shapes)
    for wrong in (0, 1, right - 1, right + 1, 20):
        assert hides(ex.check_term_count(text, "d", [5], wrong, shapes=shapes), right)


def test_max_contention_hides_the_maximum():
    text, shapes = SECTION6  # chapter 06, exercise 3: one thread per f[i; j] adds into db[j; k]: 3 of them
    right = only_accepted(lambda n: ex.check_max_contention(text, "b", n, shapes=shapes), range(30))
    assert right == 3
    for wrong in (1, 2, 4, 5, 12, 20):
        assert hides(ex.check_max_contention(text, "b", wrong, shapes=shapes), right)
        assert "more than 3" not in feedback(ex.check_max_contention(text, "b", wrong, shapes=shapes))


def test_hessian_pattern_hides_the_count_and_the_members():
    text, shapes = ("f[i] = tanh (sum{k}_0^2 (w[k] * x[i + k]))", {"f": (6,), "w": (3,), "x": (8,)})
    truth = {g for i in range(6) for g in range(i, i + 3) if i <= 3 < i + 3}  # outputs that read x[3]
    assert ex.check_hessian_pattern(text, "x", 3, sorted(truth), shapes=shapes)
    for wrong in (1, 3, len(truth) + 1, 8):
        assert hides(ex.check_hessian_pattern(text, "x", 3, wrong, shapes=shapes), len(truth))
    for gamma in sorted(truth):
        missing = ex.check_hessian_pattern(text, "x", 3, sorted(truth - {gamma}), shapes=shapes)
        assert hides(missing, f"{{{gamma}}}", f"v[{gamma}]", f"gamma in {{{gamma}")


def test_vec_index_hides_the_position():
    shape, index = (2, 3, 4), (1, 2, 0)  # chapter 03, exercise 1
    right = int(np.ravel_multi_index(index, shape, order="F"))
    for wrong in (int(np.ravel_multi_index(index, shape, order="C")), right + 1, right - 1, 0, 23, 24):
        assert hides(ex.check_vec_index(shape, index, wrong), right)


def test_jacobian_memory_hides_the_sizes():
    out_shape, in_shape = (32, 10), (32, 28, 28)  # chapter 03, exercise 2
    rows, cols = 320, 32 * 28 * 28
    size = rows * cols * 8
    for wrong in [(cols, rows, size), (rows, cols, rows * cols), (32, 28, 1), (10, 784, 62720)]:
        result = ex.check_jacobian_memory(out_shape, in_shape, wrong)
        own = set(wrong)
        assert hides(result, *[v for v in (rows, cols, size) if v not in own])


def chain_values():
    intro = jc.Chain([(5, 3, 28), (4, 5, 48), (1, 4, 5), (4, 1, 21)])  # chapter 09's running example
    chain4 = jc.Chain([(4, 3, 18), (6, 4, 18), (3, 6, 25), (2, 3, 8)])
    every = jc.schedules(intro)
    best = min(s.fma for s in every)
    threshold = min(s.memory for s in every if s.fma == best)
    bounded = min(s.fma for s in jc.schedules(chain4) if s.memory <= 63)
    cell = min(s.fma for s in jc.schedules(jc.Chain(intro.factors[1:3])))
    return intro, chain4, threshold, bounded, cell


def test_chaining_numbers_are_hidden():
    intro, chain4, threshold, bounded, cell = chain_values()
    for wrong in (0, cell - 1, cell + 1, 2 * cell, 10 ** 6):
        assert hides(ex.check_cell_fma(intro, 3, 2, wrong), cell)
    for wrong in (0, bounded - 1, bounded + 1, 10 ** 6):
        assert hides(ex.check_bounded_optimum(chain4, 63, wrong), bounded)
    for wrong in (0, threshold - 1, threshold + 1, 10 ** 6):
        assert hides(ex.check_tape_threshold(intro, wrong), threshold)
    sizes = (6, 3, 5, 40, 70)  # chapter 09, exercise 1
    eight = jc.two_factor_schedules(*sizes)
    cheapest = min(s.fma for s in eight.values())
    for letter, s in eight.items():
        if s.fma != cheapest:
            assert hides(ex.check_two_factor_optimum(sizes, letter), cheapest)
    for wrong in (1, cheapest - 1, cheapest + 1):
        assert hides(ex.check_two_factor_optimum(sizes, wrong), cheapest)


def test_homogeneous_costs_hide_the_sums():
    chain = jc.Chain.parse("4\n5 6 23\n3 5 16\n3 3 7\n4 3 4\n")  # chapter 09, exercise 2
    edges = sum(f.edges for f in chain)
    tangent, adjoint = chain.factor(1).n * edges, chain.factor(chain.q).m * edges
    for wrong in [(0, 0), (tangent + 1, adjoint + 1), (edges, edges), (1, 1)]:
        assert hides(ex.check_homogeneous_costs(chain, wrong), tangent, adjoint)


def test_scalar_gradient_hides_the_numbers():
    text, point = "f[] = log (x[]) * y[] + x[] ** 2", {"x": 2.0, "y": 3.0}  # chapter 02, exercise 3
    right = {"x": 3 / 2 + 4, "y": math.log(2)}
    for wrong in ({"x": 4.0, "y": 1.0}, {"x": 1.5, "y": 0.0}, {"x": 0.0, "y": 0.0}):
        assert hides(ex.check_scalar_gradient(text, point, wrong), right["x"], right["y"], "5.5", "0.693")


# --- vectors and matrices: no entry of the right answer is printed -----------------------------------

def test_step_inverse_hides_the_row():
    right = [0.25, -0.5, 0.25]  # chapter 08, exercise 1: a = 4, b = (2, -1)
    for wrong in ([4, 2, -1], [0.25, 0.5, -0.25], [0.25, -2, 1], [1, 1, 1], [4, -0.5, 0.25]):
        shown = [v for v in right if not any(math.isclose(v, w) for w in wrong)]
        assert hides(ex.check_step_inverse(4, [2, -1], wrong), *shown, "1/a", "-b_i / a")
    assert hides(ex.check_step_inverse(0, [2], [0, 0]), "no inverse")


def fractional(values):
    """The values that are not whole numbers (a whole one, printed "1", cannot be told from an index)."""
    return [float(v) for v in values if not float(v).is_integer()]


@pytest.mark.parametrize("transpose", [False, True])
def test_inverse_products_hide_the_entries(transpose):
    x = np.array([0.0, 2.0, 1.0])  # chapter 08, exercises 2 and 3
    seed = np.array([0.0, 0.0, 1.0]) if transpose else np.array([1.0, 0.0, 0.0])
    program = ia.trace(fig2_transcendental, 3)
    J = ia.jacobian(program, x)
    right = np.linalg.solve(J.T if transpose else J, seed)
    check = ex.check_forward_inverse if transpose else ex.check_reverse_inverse
    assert check(fig2_transcendental, 3, x, seed, right)
    for k in range(3):
        wrong = right.copy()
        wrong[k] += 0.5
        assert hides(check(fig2_transcendental, 3, x, seed, wrong), *fractional([right[k]]), "should be")
    assert hides(check(fig2_transcendental, 3, x, seed, right + 1.0), *fractional(right))


@pytest.mark.parametrize("start", [(2.0, 1.0), (1.5, 0.2)])  # chapter 08, exercise 4; a fractional step
def test_newton_step_hides_the_new_point(start):
    x = np.array(start)
    F = ia.trace(circle_and_line, 2)
    J = ia.jacobian(F, x)
    value = np.array([x[0] ** 2 + x[1] ** 2 - 4, x[0] - x[1]])
    right = x - np.linalg.solve(J, value)
    assert ex.check_newton_step(circle_and_line, 2, x, right)
    for k in range(2):
        wrong = right.copy()
        wrong[k] += 0.25
        assert hides(ex.check_newton_step(circle_and_line, 2, x, wrong), *fractional([right[k]]), "should be")


def test_jacobian_hides_the_entries():
    text, shapes = "f[i] = sum{j}_0^2 (x[i; j] * y[j])", {"f": (2,), "x": (2, 3), "y": (3,)}
    point = {"x": np.ones((2, 3)), "y": np.array([1.0, 2.0, 3.0])}  # chapter 03, exercise 3
    J = np.kron(np.array([[1.0, 2.0, 3.0]]), np.eye(2))  # columns of x stacked, first index fastest
    assert ex.check_jacobian(text, "x", point, J, shapes=shapes)
    wrong = J.copy()
    wrong[1, 3] = 7.0  # the right entry is 2
    result = ex.check_jacobian(text, "x", point, wrong, shapes=shapes)
    assert hides(result, "right value", "should be", "is 2")


def test_hessian_vector_product_hides_the_entries():
    fn = tab.parse(*SECTION6)  # chapter 07, exercise 3: H v with respect to b
    rng = np.random.default_rng(2017)
    point = tab.ad.gradcheck.random_arguments(fn, rng)
    df = rng.standard_normal((3, 4))
    v = rng.standard_normal((4, 5))
    first = tab.derive(fn)["b"]
    shapes = {k: s for k, s in first.shapes.items() if k != first.name}
    first = dataclasses.replace(first, name="g", shapes={**shapes, "g": first.shapes[first.name]})
    right = tab.derive(first).evaluate(dict(point, df=df), v)["b"]  # the core, derived twice
    assert ex.check_hessian_vector_product(fn, "b", point, df, v, right)
    wrong = right.copy()
    wrong[1, 2] += 1.0
    result = ex.check_hessian_vector_product(fn, "b", point, df, v, wrong)
    assert "element [1; 2]" in feedback(result) and hides(result, float(right[1, 2]), "should be")


# --- sets: a member the student left out is not named -------------------------------------------------

def test_scatter_races_hide_the_missing_elements():
    text, shapes = "f[i; j] = x[i + j] ** 2", {"f": (3, 4), "x": (6,)}  # chapter 06, exercise 2
    races = {m for m in range(6) if sum(1 for i in range(3) for j in range(4) if i + j == m) > 1}
    assert ex.check_scatter_races(text, "x", races, shapes=shapes)
    for m in sorted(races):
        result = ex.check_scatter_races(text, "x", races - {m}, shapes=shapes)
        assert hides(result, f"dx[{m}]")
    assert hides(ex.check_scatter_races(text, "x", set(), shapes=shapes), *[f"dx[{m}]" for m in races])


def test_redundant_rows_hide_the_missing_rows():
    A = [[1, 0], [0, 1], [1, 1], [-1, 0], [0, -1], [-1, -1], [1, -1]]  # chapter 04b, exercise 3
    b = [0, 0, -2, -3, -3, -5, -4]
    # On the box 0 <= x <= 3 (rows 0, 1, 3, 4) x_0 + x_1 >= 0 and x_0 - x_1 >= -3: rows 2 and 6 follow; row 5
    # does not (x = (3, 3) satisfies the others).
    right = {2, 6}
    assert ex.check_redundant_rows(A, b, right)
    for i in range(len(A)):
        assert hides(ex.check_redundant_rows(A, b, right ^ {i}), f"row {i} (", f"row {i} is", "did not list")
    assert hides(ex.check_redundant_rows(A, b, set()), *[f"row {i}" for i in right])


def test_kernel_and_solutions_hide_the_answer():
    K = tab.integer_inverse([[3, 5, 7]]).kernel  # chapter 04a, exercise 3
    assert hides(ex.check_kernel_basis([[3, 5, 7]], K[:, :1]), "dimension 2", "= 2")
    # chapter 04a, exercise 4 (a): x[2i + 4j + 6k] = 3 has no integer solution; a pair is not told so.
    result = ex.check_integer_solutions([[2, 4, 6]], [3], ([1, 0, 0], [[2, 3], [-1, 0], [0, -1]]))
    assert hides(result, "no solution", "no integer solution", "not integral", "gcd")
    # (b): x[i + j; j + k] = (3, 5) has solutions; "no solution" is wrong, and the feedback does not say why
    result = ex.check_integer_solutions([[1, 1, 0], [0, 1, 1]], [3, 5], ex.NO_SOLUTION)
    assert hides(result, "there are integer solutions", "holds")


def test_index_matrix_hides_the_rows():
    text, shapes = "f[i] = sum{k}_0^3 (w[i + k; k] * v[k])", {"f": (3,), "w": (6, 4), "v": (4,)}  # chapter 05
    assert ex.check_index_matrix(text, "w", [[1, 1], [0, 1]], shapes=shapes)
    for wrong in ([[1, 0], [0, 1]], [[1, 1], [1, 0]], [[0, 1], [1, 1]]):
        result = ex.check_index_matrix(text, "w", wrong, shapes=shapes)
        assert hides(result, "[1, 1]", "[0, 1]", "it is i + k", "it is k")


def test_lump_order_hides_the_optimum():
    def braid_steps(x):  # chapter 08, exercise 5
        t1 = ia.sin(x[0])
        t2 = ia.exp(x[2])
        x[2] = x[2] * t2
        x[0] = x[0] * t1 + x[1]
        x[0] = x[0] + t1
        x[2] = x[2] + t2

    program = ia.trace(braid_steps, 3)
    largest = {}
    for order in itertools.permutations(program.vertices):
        try:
            largest[order] = max(program.reorder(list(order)).lump_sizes)
        except ValueError:  # not a topological order
            continue
    best = min(largest.values())
    worse = [order for order, size in largest.items() if size > best]
    assert worse
    for order in worse[:10]:
        result = ex.check_lump_order(braid_steps, 3, list(order))
        assert hides(result, f"size {best}", f"sizes {best}:", f"of {best}")

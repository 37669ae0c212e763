"""The check functions of chapter 08 (inverse accumulation, tensoradbook.exercises): right answers in
several forms pass (lists, tuples, arrays, Fractions, the core's sweeps), typical wrong answers fail
with a message that names the mistake, None says "no answer yet", and bad exercise data raises."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensoradbook import exercises as ex
from tensoradbook import inverse as ia
from tensoradbook.inverse.examples import circle_and_line, fig2_transcendental, two_chains
from tensoradbook.inverse.examples import fig2_products as fig2
from feedback import messages

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("call", [
    lambda: ex.check_step_inverse(2, [3], None),
    lambda: ex.check_reverse_inverse(fig2, 3, (2, 3, 5), (1, 1, 1), None),
    lambda: ex.check_forward_inverse(fig2, 3, (2, 3, 5), (1, 1, 1), None),
    lambda: ex.check_newton_step(circle_and_line, 2, (1, 0.5), None),
    lambda: ex.check_lump_order(two_chains, 2, None),
])
def test_none_is_no_answer_yet(call):
    result = call()
    assert not result.ok and result.pending and "no answer yet" in str(result)


def test_pending_hints_say_what_to_give():
    assert "reverse-inverse sweep" in str(ex.check_reverse_inverse(fig2, 3, (2, 3, 5), (1, 1, 1), None))
    assert "forward-inverse sweep" in str(ex.check_forward_inverse(fig2, 3, (2, 3, 5), (1, 1, 1), None))
    assert "t1, t2, s1, s2, s3, s4" in str(ex.check_lump_order(two_chains, 2, None))


# -- one step (eq. 2.6f) -------------------------------------------------------------------------

nonzero = st.floats(-5, 5, allow_nan=False).filter(lambda v: abs(v) > 0.05)


@SETTINGS
@given(a=nonzero, b=st.lists(st.floats(-5, 5, allow_nan=False), min_size=1, max_size=3))
def test_step_inverse_accepts_the_row_and_the_whole_inverse(a, b):
    row = [1 / a] + [-v / a for v in b]
    assert ex.check_step_inverse(a, b, row)
    assert ex.check_step_inverse(a, b, tuple(row))
    assert ex.check_step_inverse(a, b, np.array(row))
    J = np.eye(len(b) + 1)
    J[0] = [a] + b
    assert ex.check_step_inverse(a, b, np.linalg.inv(J))          # numpy's inverse, whole
    assert ex.check_step_inverse(a, b, np.linalg.inv(J).tolist())  # as nested lists


@SETTINGS
@given(a=nonzero, b=st.lists(st.floats(-5, 5, allow_nan=False).filter(lambda v: abs(v) > 0.05),
                             min_size=1, max_size=3))
def test_step_inverse_names_the_typical_mistakes(a, b):
    wrong_sign = [1 / a] + [v / a for v in b]
    assert "wrong sign" in messages(ex.check_step_inverse(a, b, wrong_sign))
    not_divided = [1 / a] + [-v for v in b]
    # (for a = -1 forgetting to divide is the same as the wrong sign, and is named so)
    if not np.allclose(not_divided, [1 / a] + [-v / a for v in b]) and not np.allclose(not_divided[1:],
                                                                                    [v / a for v in b]):
        assert "not b_i times 1" in messages(ex.check_step_inverse(a, b, not_divided))
    kept = [a] + [-v / a for v in b]
    if not math.isclose(a, 1 / a, rel_tol=1e-6):
        assert "you kept a" in messages(ex.check_step_inverse(a, b, kept))
        assert f"of J_t^-1 J_t is {a * a:.6g}, not 1" in messages(ex.check_step_inverse(a, b, kept))


def test_step_inverse_exact_forms_and_bad_answers():
    assert ex.check_step_inverse(Fraction(2, 3), [Fraction(1, 2)], [Fraction(3, 2), Fraction(-3, 4)])
    assert ex.check_step_inverse(2, 3, [0.5, -1.5])  # a single b as a number
    assert "entries (one per register), yours has 1" in messages(ex.check_step_inverse(2, [3], [0.5]))
    assert "not a number" in messages(ex.check_step_inverse(2, [3], [0.5, "x"]))
    assert "the text" in messages(ex.check_step_inverse(2, [3], "0.5, -1.5"))
    assert "rows of the other inputs are not right" in messages(
        ex.check_step_inverse(2, [3], [[0.5, -1.5], [1, 1]]))
    assert "rows have different lengths" in messages(ex.check_step_inverse(2, [3], [[0.5, -1.5], [1]]))
    assert ex.check_step_inverse(0, [3], "no inverse")
    assert "invertible at all" in messages(ex.check_step_inverse(0, [3], [0, 0]))
    assert "no inverse" not in messages(ex.check_step_inverse(0, [3], [0, 0]))


# -- J^-1 ydot and J^-T xbar ----------------------------------------------------------------------

@pytest.mark.parametrize("seed, right", [
    ((1, 1, 1), [Fraction(-1, 3), 1, Fraction(-2, 3)]),
    ((1, 0, 0), [Fraction(1, 3), 0, Fraction(-5, 6)]),
    ((0, 0, 1), [0, 0, Fraction(1, 6)]),
])
def test_reverse_inverse_worked_numbers_in_several_forms(seed, right):
    for form in (right, tuple(right), np.array(right, dtype=float), [float(v) for v in right],
                 [round(float(v), 9) for v in right]):
        assert ex.check_reverse_inverse(fig2, 3, (2, 3, 5), seed, form)


@pytest.mark.parametrize("seed, right", [
    ((1, 1, 1), [Fraction(-1, 2), Fraction(1, 3), Fraction(1, 6)]),
    ((1, 0, 0), [Fraction(1, 3), Fraction(-2, 3), 0]),
    ((0, 0, 1), [Fraction(-5, 6), 0, Fraction(1, 6)]),
])
def test_forward_inverse_worked_numbers(seed, right):
    assert ex.check_forward_inverse(fig2, 3, (2, 3, 5), seed, right)


def test_second_worked_example():
    ones = (1, 1, 1)
    assert ex.check_reverse_inverse(fig2_transcendental, 3, (0, 1, 1), ones, [-1, 1, (1 - math.cos(2)) / 3])
    assert ex.check_forward_inverse(fig2_transcendental, 3, (0, 1, 1), ones, [1 - math.cos(2) / 3, -1, 1 / 3])
    # the digest's "(1 + cos 2)/3" is a typo: it fails, and says which entry is off
    result = ex.check_reverse_inverse(fig2_transcendental, 3, (0, 1, 1), ones, [-1, 1, (1 + math.cos(2)) / 3])
    assert not result and "entry 2 of J^-1 ydot is 0.194618, which is not right" in messages(result)
    assert "0.472049" not in str(result) and "should be" not in str(result)


point = st.lists(st.floats(0.5, 3), min_size=3, max_size=3)
seed_vector = st.lists(st.floats(-3, 3), min_size=3, max_size=3)


@SETTINGS
@given(x=point, seed=seed_vector, program=st.sampled_from([fig2, fig2_transcendental]))
def test_the_core_sweeps_pass_the_checks(x, seed, program):
    traced = ia.trace(program, 3)
    assert ex.check_reverse_inverse(program, 3, x, seed, ia.reverse_inverse(traced, x, seed))
    assert ex.check_forward_inverse(program, 3, x, seed, ia.forward_inverse(traced, x, seed))


@SETTINGS
@given(x=point, seed=seed_vector)
def test_other_modes_are_named(x, seed):
    traced = ia.trace(fig2, 3)
    right = ia.reverse_inverse(traced, x, seed)
    J = ia.jacobian(traced, x)
    if np.allclose(J @ seed, right, rtol=1e-5, atol=1e-5) or np.allclose(seed, right, rtol=1e-5, atol=1e-5):
        return  # seeds that J happens to fix tell the modes apart by nothing
    result = ex.check_reverse_inverse(fig2, 3, x, seed, ia.jvp(traced, x, seed))
    assert not result and "a forward sweep" in messages(result)
    if not np.allclose(-right, right, atol=1e-5):
        assert "the sign is off" in messages(ex.check_reverse_inverse(fig2, 3, x, seed, -right))


def test_wrong_orientation_and_shapes():
    other = ia.forward_inverse(ia.trace(fig2, 3), (2, 3, 5), (1, 1, 1))
    assert "J^-T ydot; the reverse-inverse sweep gives J^-1" in messages(
        ex.check_reverse_inverse(fig2, 3, (2, 3, 5), (1, 1, 1), other))
    assert "that is J^T xbar (a reverse sweep)" in messages(
        ex.check_forward_inverse(fig2, 3, (2, 3, 5), (1, 1, 1), [18, 13, 6]))
    assert "the seed ydot itself" in messages(ex.check_reverse_inverse(fig2, 3, (2, 3, 5), (1, 0, 0), [1, 0, 0]))
    assert "yours has 2" in messages(ex.check_reverse_inverse(fig2, 3, (2, 3, 5), (1, 1, 1), [1, 2]))
    assert "not finite" in messages(ex.check_reverse_inverse(fig2, 3, (2, 3, 5), (1, 1, 1), [1, math.nan, 2]))
    assert "got object" in messages(ex.check_reverse_inverse(fig2, 3, (2, 3, 5), (1, 1, 1), object()))


def test_lumped_programs_are_checked_too():
    traced = ia.trace(circle_and_line, 2)
    assert traced.lump_sizes == (2,)
    x, seed = (1.0, 0.5), (0.3, -1.0)
    assert ex.check_reverse_inverse(circle_and_line, 2, x, seed, ia.reverse_inverse(traced, x, seed))
    J = np.array([[2.0, 1.0], [1.0, -1.0]])  # by hand at (1, 0.5)
    assert ex.check_forward_inverse(circle_and_line, 2, x, seed, np.linalg.solve(J.T, seed))


def test_bad_exercise_data_raises():
    with pytest.raises(ValueError, match="positive integer"):
        ex.check_reverse_inverse(fig2, 0, (2, 3, 5), (1, 1, 1), [0, 0, 0])
    with pytest.raises(ValueError, match="x must have 3 entries"):
        ex.check_reverse_inverse(fig2, 3, (2, 3), (1, 1, 1), [0, 0, 0])
    with pytest.raises(ValueError, match="singular"):
        ex.check_reverse_inverse(fig2, 3, (2, 0, 5), (1, 1, 1), [0, 0, 0])
    with pytest.raises(ValueError, match="step must be a function"):
        ex.check_newton_step("x[0] = x[0]", 1, (1,), [0])


# -- Newton steps ---------------------------------------------------------------------------------

@SETTINGS
@given(x=st.tuples(st.floats(0.3, 3), st.floats(-3, 3)).filter(lambda p: abs(p[0] + p[1]) > 0.3))
def test_newton_step_by_hand_and_by_the_core(x):
    u, v = x
    F = np.array([u * u + v * v - 4, u - v])
    by_hand = np.array(x) - np.linalg.solve([[2 * u, 2 * v], [1, -1]], F)
    assert ex.check_newton_step(circle_and_line, 2, x, by_hand)
    traced = ia.trace(circle_and_line, 2)
    assert ex.check_newton_step(circle_and_line, 2, x, np.array(x) - ia.reverse_inverse(traced, x, ia.run(traced, x)))
    assert ex.check_newton_step(circle_and_line, 2, x, ia.newton(traced, x, max_iter=1,
                                                                 raise_on_failure=False).iterates[1])


def test_newton_step_mistakes():
    x = np.array([1.0, 1.5])
    J = np.array([[2.0, 3.0], [1.0, -1.0]])  # not symmetric: J^-T F differs from J^-1 F
    F = np.array([-0.75, -0.5])
    delta = np.linalg.solve(J, F)
    for answer, words in ((x + delta, "wrong way"), (delta, "that is the step"), (-delta, "add x"),
                          (x - np.linalg.solve(J.T, F), "forward-inverse"), (x - J.T @ F, "gradient step"),
                          (x - delta + [0, 0.1], "entry 1 of the new point")):
        result = ex.check_newton_step(circle_and_line, 2, x, answer)
        assert not result and words in messages(result), (answer, messages(result))
    assert "falls from 0.901" in str(ex.check_newton_step(circle_and_line, 2, x, x - delta))


# -- lumps ----------------------------------------------------------------------------------------

def test_lump_order_accepts_every_optimal_order_and_refuses_the_rest():
    program = ia.trace(two_chains, 2)
    assert ex.check_lump_order(two_chains, 2, program.reorder("greedy").order)
    assert ex.check_lump_order(two_chains, 2, "t2 s2 s4 t1 s1 s3")       # the other chain first, as text
    assert ex.check_lump_order(two_chains, 2, "t1, s1, s3, t2, s2, s4")
    result = ex.check_lump_order(two_chains, 2, ["t1", "t2", "s1", "s2", "s3", "s4"])
    assert not result and "lumps of sizes 2" in messages(result)
    assert "keeps the largest lump smaller" in messages(result)
    assert "size 1" not in str(result)  # the optimum, 1, is not given away
    assert "s1 comes before t1" in messages(ex.check_lump_order(two_chains, 2, "s1 t1 s3 t2 s2 s4"))
    assert "'q' is not a vertex" in messages(ex.check_lump_order(two_chains, 2, "q t1 s1 s3 t2 s2 s4"))
    assert "missing" in messages(ex.check_lump_order(two_chains, 2, ["t1", "s1"]))


def test_lump_order_of_a_constant_width_program_is_any_order():
    assert ex.check_lump_order(fig2, 3, ["s1", "s2"])
    assert "s2 comes before s1" in messages(ex.check_lump_order(fig2, 3, ["s2", "s1"]))

"""The check functions of chapter 07 (second derivatives, tensoradbook.exercises): right answers in
several forms pass, typical wrong answers fail with a message that says what is wrong, and None says
"no answer yet". The checks' oracle (second differences of L = sum(df * f)) is itself compared with the
core's second derivatives and with closed forms."""

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook import exercises as ex
from tensoradbook.exercises import ch07_higher_order as second_order
from tensoradbook.ad.gradcheck import random_arguments
from feedback import messages

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CUBE = ("f[i] = x[i] ** 3 * y[i]", {"f": (3,), "x": (3,), "y": (3,)})
SHIFT = ("f[i] = sin (x[i]) * x[i + 1]", {"f": (4,), "x": (5,)})
DIAGONAL = ("f[i] = x[i; i] ** 3", {"f": (3,), "x": (3, 3)})
LAYER = ("f[i] = tanh (sum{k}_0^3 (w[i; k] * x[k]))", {"f": (3,), "w": (3, 4), "x": (4,)})
SECTION6 = ("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
            {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)})

SHIFT_HV = ("dx[b] = if {b <= 3} then (df[b] * (cos (x[b]) * ddx[b + 1] - sin (x[b]) * x[b + 1] * ddx[b])) "
            "else (0) + if {b >= 1} then (df[b - 1] * cos (x[b - 1]) * ddx[b - 1]) else (0)")


def renamed(fn, name):
    """``fn`` with its output called ``name`` (so that deriving it again names nothing twice)."""
    shapes = {k: v for k, v in fn.shapes.items() if k != fn.name}
    shapes[name] = fn.shapes[fn.name]
    return dataclasses.replace(fn, name=name, shapes=shapes)


def point(fn, seed=0):
    rng = np.random.default_rng(seed)
    args = random_arguments(fn, rng)
    return args, rng.standard_normal(fn.shapes[fn.name])


def core_second(fn, first, args, df, v):
    """All second-order gradients of sum(df * f) along v on ``first``, by the core (derive twice)."""
    return tab.derive(renamed(tab.derive(fn)[first], "g")).evaluate(dict(args, df=df), v)


@pytest.mark.parametrize("call", [
    lambda: ex.check_second_derivative(CUBE[0], "x", "x", None, shapes=CUBE[1]),
    lambda: ex.check_second_derivative(CUBE[0], "x", "y", None, shapes=CUBE[1]),
    lambda: ex.check_hessian_vector_product(LAYER[0], "x", point(tab.parse(*LAYER))[0], np.ones(3), np.ones(4),
                                            None, shapes=LAYER[1]),
    lambda: ex.check_hessian_pattern(LAYER[0], "x", 0, None, shapes=LAYER[1]),
])
def test_none_is_no_answer_yet(call):
    result = call()
    assert not result.ok and result.pending
    assert "no answer yet" in str(result)


def test_pending_hints_name_what_to_write():
    hint = str(ex.check_second_derivative(CUBE[0], "x", "y", None, shapes=CUBE[1]))
    assert '"dy[...] = ..."' in hint and "ddx (the direction v)" in hint and "df" in hint
    hint = str(ex.check_hessian_pattern(DIAGONAL[0], "x", (1, 1), None, shapes=DIAGONAL[1]))
    assert "H[1; 1; gamma] != 0 (tuples)" in hint


# --- the oracle ------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [CUBE, SHIFT, DIAGONAL, LAYER, SECTION6])
def test_second_differences_agree_with_the_core(fn):
    fn = tab.parse(*fn)
    args, df = point(fn, 3)
    rng = np.random.default_rng(4)
    for first in fn.arguments:
        v = rng.standard_normal(fn.shapes[first])
        exact = core_second(fn, first, args, df, v)
        scale = second_order._loss_terms(fn, args, df)[1]
        for second in fn.arguments:
            numeric = second_order._second_differences(fn, args, df, first, v, second)
            # an argument the first derivative does not read has no entry: its block is 0
            right = exact.get(second, np.zeros(fn.shapes[second]))
            assert np.abs(numeric - right).max() <= second_order._hv_tolerance(numeric, scale) / 10


def test_second_differences_match_the_closed_form_hessian():
    # L = sum_i df_i tanh(W x)_i has H = W^T diag(df * tanh'') W, tanh'' = -2 t (1 - t^2)
    fn = tab.parse(*LAYER)
    args, df = point(fn, 5)
    W, x = args["w"], args["x"]
    t = np.tanh(W @ x)
    H = W.T @ np.diag(df * (-2 * t * (1 - t ** 2))) @ W
    scale = second_order._loss_terms(fn, args, df)[1]
    for k in range(4):
        numeric = second_order._second_differences(fn, args, df, "x", np.eye(4)[k], "x")
        assert np.abs(numeric - H[:, k]).max() <= second_order._hv_tolerance(H[:, k], scale) / 10


# --- check_second_derivative ------------------------------------------------------------------------

@pytest.mark.parametrize("fn, first, second, answer", [
    (CUBE, "x", "x", "dx[i] = ddx[i] * df[i] * y[i] * 6 * x[i]"),
    (CUBE, "x", "x", "dx[q] = 6 * (x[q] * y[q]) * (df[q] * ddx[q])"),
    (CUBE, "x", "y", "dy[i] = 3 * x[i] ** 2 * df[i] * ddx[i]"),
    (CUBE, "y", "x", "dx[i] = ddy[i] * df[i] * 3 * x[i] * x[i]"),
    (CUBE, "y", "y", "dy[i] = 0"),
    (SHIFT, "x", "x", SHIFT_HV),
    (SHIFT, "x", "x", SHIFT_HV.replace("{b <= 3}", "{3 - b >= 0}").replace("{b >= 1}", "{b - 1 >= 0}")),
    (DIAGONAL, "x", "x", "dx[i; j] = if {i = j} then (6 * x[i; i] * df[i] * ddx[i; i]) else (0)"),
    (DIAGONAL, "x", "x", "dx[p; q] = if {q - p = 0} then (df[q] * ddx[p; q] * 6 * x[p; q]) else (0)"),
])
def test_second_derivative_right_answers_pass(fn, first, second, answer):
    result = ex.check_second_derivative(fn[0], first, second, answer, shapes=fn[1])
    assert result.ok, str(result)
    assert "agrees with second differences" in str(result)


# (not SHIFT: its core second derivative reads df[4] outside df's shape under a factor that is 0
# there, which the parser's exact range check rejects)
@pytest.mark.parametrize("fn", [CUBE, DIAGONAL, LAYER])
def test_second_derivative_core_output_passes(fn):
    fn = tab.parse(*fn)
    for first in fn.arguments:
        second = tab.derive(tab.derive(fn)[first])  # adjoint dd<first>, as the check names it
        for name in fn.arguments:
            answer = str(second[name]) if name in second else f"d{name}[" + "; ".join(
                f"b{k}" for k in range(len(fn.shapes[name]))) + "] = 0"
            assert ex.check_second_derivative(fn, first, name, answer), (first, name)


def test_second_derivative_messages():
    text, shapes = CUBE
    factor = ex.check_second_derivative(text, "x", "x", "dx[i] = ddx[i] * df[i] * y[i] * 3 * x[i]", shapes=shapes)
    assert "every element is 0.5 times the right value" in messages(factor)
    sign = ex.check_second_derivative(text, "x", "x", "dx[i] = -ddx[i] * df[i] * y[i] * 6 * x[i]", shapes=shapes)
    assert "every element is -1 times the right value" in messages(sign)
    first_only = ex.check_second_derivative(text, "x", "x", "dx[i] = df[i] * y[i] * 3 * x[i] ** 2", shapes=shapes)
    assert "does not read ddx" in messages(first_only) and "linear in v" in messages(first_only)
    no_df = ex.check_second_derivative(text, "x", "x", "dx[i] = ddx[i] * y[i] * 6 * x[i]", shapes=shapes)
    assert "does not read df" in messages(no_df)
    name = ex.check_second_derivative(text, "x", "y", "dx[i] = 3 * x[i] ** 2 * df[i] * ddx[i]", shapes=shapes)
    assert "defines 'dx'" in messages(name) and "called 'dy'" in messages(name)
    unreadable = ex.check_second_derivative(text, "x", "x", "dx[i] = ddx[i] * (", shapes=shapes)
    assert "cannot be read" in messages(unreadable)
    itself = ex.check_second_derivative(text, "x", "x", "dx[i] = dx[i]", shapes=shapes)
    assert "cannot appear in its own definition" in messages(itself)


def test_second_derivative_conditions():
    text, shapes = DIAGONAL
    no_delta = ex.check_second_derivative(text, "x", "x", "dx[i; j] = 6 * x[i; i] * df[i] * ddx[i; i]",
                                          shapes=shapes)
    assert "must be 0" in messages(no_delta) and "condition is missing" in messages(no_delta)
    text, shapes = SHIFT
    one_side = ex.check_second_derivative(text, "x", "x", SHIFT_HV.split(" + if {b >= 1}")[0], shapes=shapes)
    assert not one_side.ok
    assert "yours gives 0 at dx[4]" in messages(one_side)
    wrong_element = ex.check_second_derivative(text, "x", "x", SHIFT_HV.replace("ddx[b - 1]", "ddx[b]"),
                                               shapes=shapes)
    assert "but should be" in messages(wrong_element) and "elements differ" in messages(wrong_element)


def test_second_derivative_bad_exercise_data():
    with pytest.raises(ValueError, match="not an argument"):
        ex.check_second_derivative(CUBE[0], "z", "x", None, shapes=CUBE[1])
    with pytest.raises(ValueError, match="name of the adjoint"):
        ex.check_second_derivative("f[i] = ddx[i] * x[i]", "x", "x", None, shapes={"f": (2,), "x": (2,), "ddx": (2,)})


# op: (first derivative, second derivative) of op(X), as text
DERIVATIVES = {
    "sin": ("cos (X)", "-sin (X)"),
    "cos": ("-sin (X)", "-cos (X)"),
    "exp": ("exp (X)", "exp (X)"),
    "tanh": ("(1 - tanh (X) ** 2)", "(-2 * tanh (X) * (1 - tanh (X) ** 2))"),
}


@SETTINGS
@given(st.integers(2, 6), st.sampled_from(sorted(DERIVATIVES)), st.integers(1, 3), st.integers(0, 99))
def test_second_derivative_of_a_shift(n, op, shift, seed):
    # f[i] = op(x[i]) * x[i + s], L = sum_i df_i op(x_i) x_(i+s):
    # (H v)_b = [b < n] df_b (op''(x_b) x_(b+s) v_b + op'(x_b) v_(b+s)) + [b >= s] df_(b-s) op'(x_(b-s)) v_(b-s)
    fn = tab.parse(f"f[i] = {op} (x[i]) * x[i + {shift}]", {"f": (n,), "x": (n + shift,)})
    d1, d2 = DERIVATIVES[op]
    own = (f"if {{b <= {n - 1}}} then (df[b] * ({d2.replace('X', 'x[b]')} * x[b + {shift}] * ddx[b] "
           f"+ {d1.replace('X', 'x[b]')} * ddx[b + {shift}])) else (0)")
    other = (f"if {{b >= {shift}}} then (df[b - {shift}] * {d1.replace('X', f'x[b - {shift}]')} * ddx[b - {shift}]) "
             f"else (0)")
    assert ex.check_second_derivative(fn, "x", "x", f"dx[b] = {own} + {other}", seed=seed)
    assert ex.check_second_derivative(fn, "x", "x", f"dx[q] = {other.replace('b', 'q')} + {own.replace('b', 'q')}",
                                      seed=seed)
    assert "0.5 times the right value" in messages(
        ex.check_second_derivative(fn, "x", "x", f"dx[b] = 0.5 * ({own} + {other})", seed=seed))
    dropped = ex.check_second_derivative(fn, "x", "x", f"dx[b] = {own}", seed=seed)
    assert f"yours gives 0 at dx[{max(n, shift)}]" in messages(dropped)  # the first b with only the other term


# --- check_hessian_vector_product ------------------------------------------------------------------

def layer_data(seed=0):
    fn = tab.parse(*LAYER)
    args, df = point(fn, seed)
    v = np.random.default_rng(seed + 1).standard_normal(4)
    return fn, args, df, v


def test_hessian_vector_product_right_answers():
    fn, args, df, v = layer_data()
    second = core_second(fn, "x", args, df, v)
    assert ex.check_hessian_vector_product(fn, "x", args, df, v, second["x"])
    assert ex.check_hessian_vector_product(fn, "x", args, df, v, second["x"].tolist())
    assert ex.check_hessian_vector_product(fn, "x", args, df, v, second["w"], wrt="w")
    # the closed form, and central differences of the core's gradient with a good step, are right too
    W, x = args["w"], args["x"]
    t = np.tanh(W @ x)
    assert ex.check_hessian_vector_product(fn, "x", args, df, v, W.T @ (df * (-2 * t * (1 - t ** 2)) * (W @ v)))
    grads = tab.derive(fn)

    def g(x):
        return grads.evaluate(dict(args, x=x), df)["x"]

    h = 1e-5
    assert ex.check_hessian_vector_product(fn, "x", args, df, v, (g(x + h * v) - g(x - h * v)) / (2 * h))
    # the numba kernel of the second-order gradients
    compiled = tab.derive(renamed(grads["x"], "gx")).compile("numba")(dict(args, df=df), v)
    assert ex.check_hessian_vector_product(fn, "x", args, df, v, compiled["x"])


def test_hessian_vector_product_messages():
    fn, args, df, v = layer_data()
    second = core_second(fn, "x", args, df, v)
    hv = second["x"]
    assert "sign is off" in messages(ex.check_hessian_vector_product(fn, "x", args, df, v, -hv))
    assert "factor 2 too large" in messages(ex.check_hessian_vector_product(fn, "x", args, df, v, 2 * hv))
    assert "factor 2 too small" in messages(ex.check_hessian_vector_product(fn, "x", args, df, v, hv / 2))
    gradient = tab.derive(fn).evaluate(args, df)["x"]
    assert "the gradient dL/dx itself" in messages(ex.check_hessian_vector_product(fn, "x", args, df, v, gradient))
    jv = ex.check_hessian_vector_product(fn, "x", args, df, v, second["df"])
    assert "shape of f" in messages(jv) and "J v" in messages(jv)
    assert "shape of x, (4,)" in messages(ex.check_hessian_vector_product(fn, "x", args, df, v, second["w"]))
    grads = tab.derive(fn)
    forward = (grads.evaluate(dict(args, x=args["x"] + 1e-3 * v), df)["x"] - gradient) / 1e-3
    assert "finite-difference approximation" in messages(ex.check_hessian_vector_product(fn, "x", args, df, v,
                                                                                         forward))
    other = hv.copy()
    other[2] += 1.0
    off = ex.check_hessian_vector_product(fn, "x", args, df, v, other)
    assert "element [2] is" in messages(off) and "which is not right" in messages(off)
    assert f"{hv[2]:.6g}" not in str(off) and "should be" not in str(off)
    assert "nan or inf" in messages(ex.check_hessian_vector_product(fn, "x", args, df, v, hv * np.nan))
    assert "array of numbers" in messages(ex.check_hessian_vector_product(fn, "x", args, df, v, ["a", "b", "c", "d"]))


def test_hessian_vector_product_bad_exercise_data():
    fn, args, df, v = layer_data()
    with pytest.raises(ValueError, match="v has shape"):
        ex.check_hessian_vector_product(fn, "x", args, df, np.ones(3), None)
    with pytest.raises(ValueError, match="df has shape"):
        ex.check_hessian_vector_product(fn, "x", args, np.ones(4), v, None)
    with pytest.raises(ValueError, match="not an argument"):
        ex.check_hessian_vector_product(fn, "x", args, df, v, None, wrt="q")


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # ~0.5 s per example
@given(st.sampled_from(["a", "b", "c", "d"]), st.sampled_from(["a", "b", "c", "d"]), st.integers(0, 99))
def test_hessian_vector_product_section6(first, second, seed):
    fn = tab.parse(*SECTION6)
    args, df = point(fn, seed)
    v = np.random.default_rng(seed).standard_normal(fn.shapes[first])
    exact = core_second(fn, first, args, df, v)[second]
    assert ex.check_hessian_vector_product(fn, first, args, df, v, exact, wrt=second)
    assert not ex.check_hessian_vector_product(fn, first, args, df, v, 1.5 * exact, wrt=second)


# --- check_hessian_pattern -------------------------------------------------------------------------

def conv(n, width):
    return (f"f[i] = tanh (sum{{k}}_0^{width - 1} (w[k] * x[i + k]))",
            {"f": (n,), "w": (width,), "x": (n + width - 1,)})


def conv_row(n, width, beta):
    """Brute force: gamma with H[beta, gamma] != 0 iff some output i reads both x[beta] and x[gamma]."""
    return {gamma for i in range(n) for gamma in range(i, i + width) if i <= beta < i + width}


@pytest.mark.parametrize("answer", [[1, 2, 3, 4, 5], (5, 4, 3, 2, 1), {1, 2, 3, 4, 5}, range(1, 6),
                                    np.arange(1, 6), [(1,), (2,), (3,), (4,), (5,)], 5])
def test_hessian_pattern_right_forms(answer):
    text, shapes = conv(6, 3)
    assert ex.check_hessian_pattern(text, "x", 3, answer, shapes=shapes), answer


@SETTINGS
@given(st.integers(1, 5), st.integers(1, 4), st.data())
def test_hessian_pattern_of_a_convolution(n, width, data):
    text, shapes = conv(n, width)
    beta = data.draw(st.integers(0, n + width - 2))
    truth = conv_row(n, width, beta)
    assert ex.check_hessian_pattern(text, "x", beta, sorted(truth), shapes=shapes)
    assert ex.check_hessian_pattern(text, "x", beta, len(truth), shapes=shapes)
    gamma = data.draw(st.sampled_from(sorted(truth)))
    missing = ex.check_hessian_pattern(text, "x", beta, sorted(truth - {gamma}), shapes=shapes)
    assert "that is not the set of gamma" in messages(missing)
    assert f"{{{gamma}}}" not in str(missing) and f"v[{gamma}]" not in str(missing)
    outside = [g for g in range(n + width - 1) if g not in truth]
    if outside:  # a gamma too many draws the same words as one missing
        extra = ex.check_hessian_pattern(text, "x", beta, sorted(truth | {outside[0]}), shapes=shapes)
        assert messages(extra) == messages(missing)


def test_hessian_pattern_messages():
    text, shapes = conv(6, 3)
    # too many and too few draw the same words (no binary search for the count)
    high, low = (messages(ex.check_hessian_pattern(text, "x", 3, n, shapes=shapes)) for n in (7, 3))
    assert high.replace("7", "N") == low.replace("3 is", "N is") and "non-linear factor" in low
    assert "more than once" in messages(ex.check_hessian_pattern(text, "x", 0, [0, 1, 2, 2], shapes=shapes))
    assert "outside the shape" in messages(ex.check_hessian_pattern(text, "x", 0, [0, 1, 9], shapes=shapes))
    assert "not an index of 1 integer" in messages(ex.check_hessian_pattern(text, "x", 0, [(0, 1)], shapes=shapes))
    assert "list of indices or a count" in messages(ex.check_hessian_pattern(text, "x", 0, "0, 1, 2", shapes=shapes))
    assert "list of indices or a count" in messages(ex.check_hessian_pattern(text, "x", 0, 1.5, shapes=shapes))
    # x[i] * x[i + 1] is linear in each element alone: no diagonal
    product = ("f[i] = x[i] * x[i + 1]", {"f": (4,), "x": (5,)})
    assert ex.check_hessian_pattern(product[0], "x", 2, [1, 3], shapes=product[1])
    diagonal = ex.check_hessian_pattern(product[0], "x", 2, [1, 2, 3], shapes=product[1])
    assert "x[2] itself counts when it appears non-linearly" in messages(diagonal)
    linear = ("f[i] = x[i] + 2 * x[i + 1]", {"f": (4,), "x": (5,)})
    assert ex.check_hessian_pattern(linear[0], "x", 1, [], shapes=linear[1])
    with pytest.raises(ValueError, match="outside the shape"):
        ex.check_hessian_pattern(text, "x", 8, None, shapes=shapes)


def test_hessian_pattern_two_dimensional():
    text, shapes = DIAGONAL  # f[i] = x[i; i] ** 3: only the diagonal, each alone
    assert ex.check_hessian_pattern(text, "x", (1, 1), [(1, 1)], shapes=shapes)
    assert ex.check_hessian_pattern(text, "x", (0, 1), [], shapes=shapes)
    assert "[1; 1]" in messages(ex.check_hessian_pattern(text, "x", (1, 1), [], shapes=shapes))
    fn = tab.parse(*SECTION6)  # d[i + k] for k in 0..4 and i in 0..2: |beta - gamma| <= 4, d[7] unread
    assert ex.check_hessian_pattern(fn, "d", 2, list(range(7)))
    assert ex.check_hessian_pattern(fn, "d", 0, [0, 1, 2, 3, 4])
    assert ex.check_hessian_pattern(fn, "d", 7, [])

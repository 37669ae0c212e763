"""Data-dependent operations: conditions on values, ``max (a, b)`` and ``min (a, b)``, and max / min
reductions, checked against numpy written independently (argmax for the routing of the adjoint).

The convention for kinks and ties is one, PyTorch's: a condition on values sends the adjoint into the branch it
picks (ReLU at 0 takes the else branch: gradient 0); ``max (a, b)`` gives a tie to ``a``; a max or min reduction
gives its whole adjoint to the first extremal element, the least index in the order of its (nested) reductions,
as ``np.argmax``, ``torch.max(dim)`` and max pooling do.
"""

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook import ExpressionError


def derive_at(text, shapes, args, df):
    fn = tab.parse(text, shapes)
    assert tab.parse(str(fn), shapes) == fn  # prints and reads back
    grads = tab.derive(fn)
    for gradient in grads.values():  # so do its derivatives
        assert tab.parse(str(gradient), gradient.shapes) == gradient
    return fn.evaluate(args), grads.evaluate(args, df)


def test_relu_and_its_tie_at_zero():
    x = np.array([-1.5, 0.0, 0.25, 2.0])
    df = np.array([1.0, 2.0, 3.0, 4.0])
    value, grads = derive_at("f[i] = if {x[i] > 0} then (x[i]) else (0)", {"f": (4,), "x": (4,)}, {"x": x}, df)
    np.testing.assert_array_equal(value, np.maximum(x, 0))
    np.testing.assert_array_equal(grads["x"], df * (x > 0))  # 0 at x = 0, as torch.relu


def test_clipping_and_leaky_relu():
    x = np.linspace(-2, 2, 9)
    df = np.arange(1.0, 10.0)
    text = "f[i] = if {x[i] > 1} then (1) else (if {x[i] < -1} then (-1) else (x[i])) + max (x[i], 0.1 * x[i])"
    value, grads = derive_at(text, {"f": (9,), "x": (9,)}, {"x": x}, df)
    np.testing.assert_allclose(value, np.clip(x, -1, 1) + np.maximum(x, 0.1 * x))
    inside = (x <= 1) & (x >= -1)
    np.testing.assert_allclose(grads["x"], df * inside + df * np.where(x >= 0.1 * x, 1.0, 0.1))


def test_max_and_min_of_two_values_give_a_tie_to_the_first():
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([2.0, 2.0, 1.0])
    df = np.array([1.0, 10.0, 100.0])
    shapes = {"f": (3,), "a": (3,), "b": (3,)}
    value, grads = derive_at("f[i] = max (a[i], b[i])", shapes, {"a": a, "b": b}, df)
    np.testing.assert_array_equal(value, np.maximum(a, b))
    np.testing.assert_array_equal(grads["a"], [0.0, 10.0, 100.0])
    np.testing.assert_array_equal(grads["b"], [1.0, 0.0, 0.0])
    value, grads = derive_at("f[i] = min (a[i], b[i])", shapes, {"a": a, "b": b}, df)
    np.testing.assert_array_equal(value, np.minimum(a, b))
    np.testing.assert_array_equal(grads["a"], [1.0, 10.0, 0.0])
    np.testing.assert_array_equal(grads["b"], [0.0, 0.0, 100.0])


def argmax_routing(x, df, pick=np.argmax):
    """The gradient of ``f[i] = max_k x[i; k]``: each row's adjoint at its first maximal element."""
    out = np.zeros_like(x)
    out[np.arange(len(x)), pick(x, axis=1)] = df
    return out


@settings(max_examples=30)
@given(st.lists(st.integers(0, 2), min_size=12, max_size=12), st.sampled_from(["max", "min"]))
@example([1] * 12, "max")            # every element ties
@example([0, 2, 2, 1] * 3, "max")    # a tie between two middle elements
def test_reductions_route_the_adjoint_to_the_first_extremum(values, op):
    x = np.array(values, dtype=float).reshape(3, 4)
    df = np.array([1.0, 2.0, 3.0])
    value, grads = derive_at(f"f[i] = {op}{{k}}_0^3 (x[i; k])", {"f": (3,), "x": (3, 4)}, {"x": x}, df)
    np.testing.assert_array_equal(value, x.max(axis=1) if op == "max" else x.min(axis=1))
    np.testing.assert_array_equal(grads["x"], argmax_routing(x, df, np.argmax if op == "max" else np.argmin))


def max_pool(x, size, stride):
    """Max pooling and its gradient for an adjoint of ones, by brute force over the windows."""
    n = (x.shape[0] - size) // stride + 1
    value, gradient = np.zeros((n, n)), np.zeros_like(x)
    for u in range(n):
        for v in range(n):
            window = x[stride * u:stride * u + size, stride * v:stride * v + size]
            value[u, v] = window.max()
            r, s = np.unravel_index(np.argmax(window), window.shape)  # the first maximum, row-major
            gradient[stride * u + r, stride * v + s] += 1.0
    return value, gradient


@settings(max_examples=20)
@given(st.lists(st.integers(0, 3), min_size=36, max_size=36), st.sampled_from([(2, 2), (3, 1), (2, 1)]))
@example([0] * 36, (3, 1))  # all ties: each window's first element, overlapping windows add up
def test_max_pooling_matches_brute_force(values, window):
    size, stride = window
    x = np.array(values, dtype=float).reshape(6, 6)
    n = (6 - size) // stride + 1
    text = (f"m[u; v] = max{{r}}_0^{size - 1} (max{{s}}_0^{size - 1} "
            f"(x[{stride} * u + r; {stride} * v + s]))").replace("1 * ", "")
    value, grads = derive_at(text, {"m": (n, n), "x": (6, 6)}, {"x": x}, np.ones((n, n)))
    expected_value, expected_gradient = max_pool(x, size, stride)
    np.testing.assert_array_equal(value, expected_value)
    np.testing.assert_array_equal(grads["x"], expected_gradient)


def test_softmax_with_a_max_shift_has_the_gradient_of_softmax():
    """The max subtracted for stability cancels in the value and in the gradient, whatever the tie rule."""
    z = np.array([[1.0, 3.0, 3.0], [0.5, -1.0, 2.0]])
    df = np.array([[0.3, -0.2, 0.1], [1.0, 2.0, -1.0]])
    text = "s[n; c] = exp (z[n; c] - max{k}_0^2 (z[n; k])) / sum{k}_0^2 (exp (z[n; k] - max{l}_0^2 (z[n; l])))"
    value, grads = derive_at(text, {"s": (2, 3), "z": (2, 3)}, {"z": z}, df)
    softmax = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(value, softmax, rtol=1e-14)
    np.testing.assert_allclose(grads["z"], softmax * (df - (df * softmax).sum(axis=1, keepdims=True)), rtol=1e-12)


def test_empty_reductions_are_their_identities():
    fn = tab.parse("f[i] = max{k}_(i + 1)^2 (x[k]) + min{k}_(i + 1)^2 (x[k]) * 0",
                   {"f": (3,), "x": (3,)})
    value = fn.evaluate({"x": np.array([1.0, 5.0, 2.0])})
    assert value[:2].tolist() == [5.0, 2.0] and np.isnan(value[2])  # -inf + inf * 0 at i = 2


def test_second_derivatives_through_conditions_on_values():
    fn = tab.parse("f[i] = if {x[i] > 0.2} then (x[i] ** 3) else (sin (x[i])) * max (x[i], y[i])",
                   {"f": (4,), "x": (4,), "y": (4,)})
    args = {"x": np.array([0.1, 0.7, 1.3, 0.4]), "y": np.array([0.5, 0.3, 2.0, 0.2])}
    assert max(tab.check_gradients(fn, args).values()) < 1e-8
    gradient = tab.derive(fn)["x"]
    assert max(tab.check_gradients(gradient, {**args, "df": np.ones(4)}).values()) < 1e-8


@pytest.mark.parametrize("text, message, marked", [
    ("f[i] = if {x[i] = 0} then (1) else (0)", "values are compared with <, <=, > or >=", "="),
    ("f[i] = if {x[i] > 0 and i >= 1} then (1) else (0)", "one comparison", "and"),
    ("f[i] = max (x[i])", "max takes two values", ")"),
    ("f[i] = max (x[i], x[i], x[i])", "')'", ","),
    ("f[i] = max{i}_0^2 (x[i])", "shadows an output index", "i"),
    ("f[i] = max{k}_0^2 x[k]", "the body of a sum is written in parentheses", "x"),
    ("f[i] = if {i > 0} then (x[i]) else (0)", "i > 0 is written i >= 1", ">"),
])
def test_errors_point_at_the_problem(text, message, marked):
    with pytest.raises(ExpressionError) as info:
        tab.parse(text, {"f": (3,), "x": (3,)})
    first, line, carets = str(info.value).split("\n")[:3]
    assert message in first
    start = carets.index("^")
    assert line[start:start + len(marked)] == marked


def test_latex_shows_reductions_and_cases():
    fn = tab.parse("f[i] = max{k}_0^2 (x[k] * x[i]) + if {x[i] >= 1} then (abs (x[i])) else (0)",
                   {"f": (3,), "x": (3,)})
    latex = fn._repr_latex_()
    assert r"\max_{k=0}^{2}" in latex and r"x_{i} \geq 1" in latex and r"\left|x_{i}\right|" in latex

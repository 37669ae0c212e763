"""The functions and data-dependent operations of the notation (sinh and cosh, for the report's
Fig. 2; the functions real models need: max and min, conditions on values, max/min reductions).

Each function is checked end to end: it parses, its derivative from the operation table matches
numpy's derivative written out by hand, finite differences agree away from its kinks, it prints as
text and LaTeX and reads back, and every kernel target computes what the reference evaluator does.
Kinks and ties follow one convention, PyTorch's where it has one: the derivative of abs, sign, floor,
ceil and round is 0 at their kinks; ``max (a, b)`` gives a tie to its first operand, a max or min
reduction to its first extremal element (the least index, as max pooling does), and a condition on
values passes the adjoint into the branch it picks.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook.lang.ops import FUNCTIONS, UNARY_FUNCTIONS

_erf = np.vectorize(math.erf)
# (numpy function, its derivative, the interval the test draws from) written out independently of the table
CALCULUS = {
    "exp": (np.exp, np.exp, (-2, 2)),
    "log": (np.log, lambda x: 1 / x, (0.1, 3)),
    "log10": (np.log10, lambda x: 1 / (x * np.log(10)), (0.1, 3)),
    "log1p": (np.log1p, lambda x: 1 / (1 + x), (-0.9, 3)),
    "expm1": (np.expm1, np.exp, (-2, 2)),
    "sin": (np.sin, np.cos, (-3, 3)),
    "cos": (np.cos, lambda x: -np.sin(x), (-3, 3)),
    "tan": (np.tan, lambda x: 1 / np.cos(x) ** 2, (-1.4, 1.4)),
    "asin": (np.arcsin, lambda x: 1 / np.sqrt(1 - x ** 2), (-0.95, 0.95)),
    "acos": (np.arccos, lambda x: -1 / np.sqrt(1 - x ** 2), (-0.95, 0.95)),
    "atan": (np.arctan, lambda x: 1 / (1 + x ** 2), (-3, 3)),
    "sinh": (np.sinh, np.cosh, (-2, 2)),
    "cosh": (np.cosh, np.sinh, (-2, 2)),
    "tanh": (np.tanh, lambda x: 1 / np.cosh(x) ** 2, (-2, 2)),
    "sqrt": (np.sqrt, lambda x: 0.5 / np.sqrt(x), (0.1, 3)),
    "erf": (_erf, lambda x: 2 / np.sqrt(np.pi) * np.exp(-x ** 2), (-2, 2)),
    "abs": (np.abs, np.sign, (-2, 2)),
    "sign": (np.sign, np.zeros_like, (-2, 2)),
    "floor": (np.floor, np.zeros_like, (-3, 3)),
    "ceil": (np.ceil, np.zeros_like, (-3, 3)),
    "round": (np.round, np.zeros_like, (-3, 3)),  # half to even, as numpy and Python
}
KINKS = {"abs": [0.0], "sign": [0.0], "floor": [-1.0, 0.0, 2.0], "ceil": [-1.0, 0.0, 2.0],
         "round": [-1.5, -0.5, 0.5, 1.5, 2.5]}
SHAPES = {"f": (4,), "x": (4,)}


def test_every_function_is_in_the_tables():
    assert set(UNARY_FUNCTIONS) - {"neg"} == set(CALCULUS)
    assert set(FUNCTIONS) == set(CALCULUS) | {"max", "min"}


@pytest.mark.parametrize("name", sorted(CALCULUS))
@given(st.data())
def test_values_and_derivatives_match_calculus(name, data):
    function, derivative, (low, high) = CALCULUS[name]
    x = np.array(data.draw(st.lists(st.floats(low, high), min_size=4, max_size=4)))
    fn = tab.parse(f"f[i] = {name} (x[i])", SHAPES)
    np.testing.assert_allclose(fn.evaluate({"x": x}), function(x), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(tab.derive(fn).evaluate({"x": x}, np.ones(4))["x"], derivative(x), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(KINKS))
def test_kinks_have_derivative_zero(name):
    """At a kink (abs at 0, floor at an integer, round at a half) the derivative is 0, as PyTorch's."""
    fn = tab.parse(f"f[i] = {name} (x[i])", {"f": (len(KINKS[name]),), "x": (len(KINKS[name]),)})
    x = np.array(KINKS[name])
    np.testing.assert_array_equal(fn.evaluate({"x": x}), CALCULUS[name][0](x))
    np.testing.assert_array_equal(tab.derive(fn).evaluate({"x": x}, np.ones(len(x)))["x"], 0.0)


@pytest.mark.parametrize("name", sorted(CALCULUS))
def test_finite_differences_away_from_kinks(name):
    """Each function inside a composition, by the dot-product test at points inside its domain."""
    low, high = CALCULUS[name][2]
    fn = tab.parse(f"f[i] = {name} (x[i] * 0.5 + y[3 - i] * 0.5) * x[i]", {"f": (4,), "x": (4,), "y": (4,)})
    # midpoints of the domain, away from integers and halves where floor and round jump
    args = {"x": np.linspace(low, high, 9)[1:8:2] + 0.137, "y": np.linspace(low, high, 9)[1:8:2][::-1] + 0.137}
    assert max(tab.check_gradients(fn, args).values()) < 1e-6


def test_figure_2_of_the_report_with_sinh():
    """f = sin(sin(x1 (x2 + x3) + sinh(x2 + x3))), the report's Fig. 2, checked by finite differences."""
    fn = tab.parse("f[] = sin (sin (x1[] * (x2[] + x3[]) + sinh (x2[] + x3[])))",
                   {"f": (), "x1": (), "x2": (), "x3": ()})
    assert "cosh (x2[] + x3[])" in str(tab.derive(fn)["x2"])
    assert max(tab.check_gradients(fn).values()) < 1e-6


@pytest.mark.parametrize("name", ["sinh", "cosh"])
def test_second_derivatives_by_finite_differences(name):
    fn = tab.parse(f"f[i] = {name} (x[i] * x[3 - i])", SHAPES)
    assert max(tab.check_gradients(fn).values()) < 1e-6
    gradient = tab.derive(fn)["x"]
    assert max(tab.check_gradients(gradient).values()) < 1e-6


@pytest.mark.parametrize("name", ["sinh", "cosh"])
def test_text_and_latex(name):
    fn = tab.parse(f"f[i] = {name} (x[i]) * 2", SHAPES)
    assert str(fn) == f"f[i] = {name} (x[i]) * 2"
    assert tab.parse(str(fn), SHAPES) == fn
    assert fn._repr_latex_() == rf"$\displaystyle f_{{i}} = \{name}\left(x_{{i}}\right) \cdot 2$"


@pytest.mark.parametrize("target", ["numpy", "numba", "cuda"])
def test_kernels_compute_sinh_and_cosh(target):
    fn = tab.parse("f[i] = cosh (x[i]) * sinh (x[i] ** 2)", SHAPES)
    args = {"x": np.array([0.1, 0.5, -0.7, 1.3])}
    np.testing.assert_allclose(fn.compile(target)(args), fn.evaluate(args), rtol=1e-14)
    grads = tab.derive(fn)
    expected = grads.evaluate(args, np.ones(4))["x"]
    np.testing.assert_allclose(grads.compile(target)(args, np.ones(4))["x"], expected, rtol=1e-12)

"""The functions of the notation (issue 10: sinh and cosh, for the report's Fig. 2).

Each function is checked end to end: it parses, its derivative from the table
in reverse.py matches numpy's derivative written out by hand, finite differences
agree, it prints as text and LaTeX and reads back, and every kernel target
computes what the reference evaluator does.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook.lang.ops import UNARY_FUNCTIONS
from tensoradbook.lang.ops import FUNCTIONS

# (numpy function, its derivative) written out independently of the derivative table
CALCULUS = {
    "exp": (np.exp, np.exp),
    "log": (np.log, lambda x: 1 / x),
    "sin": (np.sin, np.cos),
    "cos": (np.cos, lambda x: -np.sin(x)),
    "sinh": (np.sinh, np.cosh),
    "cosh": (np.cosh, np.sinh),
    "tanh": (np.tanh, lambda x: 1 / np.cosh(x) ** 2),
    "sqrt": (np.sqrt, lambda x: 0.5 / np.sqrt(x)),
}
SHAPES = {"f": (4,), "x": (4,)}


def test_every_function_is_in_the_tables():
    assert set(FUNCTIONS) == set(UNARY_FUNCTIONS) - {"neg"} == set(CALCULUS)


@pytest.mark.parametrize("name", sorted(CALCULUS))
@given(st.lists(st.floats(0.1, 2.0), min_size=4, max_size=4))
def test_values_and_derivatives_match_calculus(name, values):
    function, derivative = CALCULUS[name]
    fn = tab.parse(f"f[i] = {name} (x[i])", SHAPES)
    x = np.array(values)
    np.testing.assert_allclose(fn.evaluate({"x": x}), function(x), rtol=1e-14)
    np.testing.assert_allclose(tab.derive(fn).evaluate({"x": x}, np.ones(4))["x"], derivative(x), rtol=1e-12)


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

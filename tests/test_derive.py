"""The derivation (report sec. 2 and 5, Algorithm 4), checked by finite-difference dot-product tests.

Every gradient here is compared with central differences of the reference
evaluator (:func:`tensoradbook.check_gradients`); the section 6 example is
also checked for the report's structure.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook.gradcheck import directional_derivatives
from tensoradbook.expr import Affine, Binary, Element, ExpressionError, Function, If, Number, Sum, Unary

TOLERANCE = 1e-6

SECTION_6 = "f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))"
SECTION_6_SHAPES = {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}


def assert_gradients_right(fn, grads=None, seed=0, args=None):
    errors = tab.check_gradients(fn, args, grads=grads, seed=seed)
    assert errors and max(errors.values()) < TOLERANCE, errors


def constant(affines):
    return [a.offset for a in affines if a.is_constant]


def test_section_6_has_the_reports_structure():
    fn = tab.parse(SECTION_6, SECTION_6_SHAPES)
    grads = tab.derive(fn)
    assert list(grads) == ["a", "b", "c", "d"]
    da, db, dc, dd = (grads[n] for n in "abcd")
    assert (da.name, da.indices, da.shapes["da"]) == ("da", ("da_0", "da_1"), (3, 5))
    # da: a sum over j (4 terms), db: a sum over i (3 terms)
    assert isinstance(da.body, Sum) and constant(da.body.lower) == [0] and constant(da.body.upper) == [3]
    assert isinstance(db.body, Sum) and constant(db.body.lower) == [0] and constant(db.body.upper) == [2]
    # dc: guarded by the Kronecker delta dc_0 = dc_1, then two sums (k and j)
    assert isinstance(dc.body, If) and len(dc.body.condition) == 1
    (atom,) = dc.body.condition
    assert atom.modulus == 0 and not atom.inequality
    assert atom.affine in (Affine.of({"dc_0": 1, "dc_1": -1}), Affine.of({"dc_0": -1, "dc_1": 1}))
    assert isinstance(dc.body.then, Sum) and isinstance(dc.body.then.body, Sum)
    # dd: sum_{max(0, dd_0 - 2)}^{min(4, dd_0)} of a sum over j
    assert isinstance(dd.body, Sum)
    assert set(dd.body.lower) == {Affine.constant_value(0), Affine.of({"dd_0": 1}, -2)}
    assert set(dd.body.upper) == {Affine.constant_value(4), Affine.index("dd_0")}
    inner = dd.body.body
    assert isinstance(inner, Sum) and constant(inner.lower) == [0] and constant(inner.upper) == [3]
    assert_gradients_right(fn, grads)


def test_gradients_evaluate_and_print():
    grads = tab.derive(SECTION_6, SECTION_6_SHAPES)
    rng = np.random.default_rng(3)
    args = {n: rng.uniform(0, 1, s) for n, s in SECTION_6_SHAPES.items() if n != "f"}
    values = grads.evaluate(args, np.ones((3, 4)))
    assert {n: v.shape for n, v in values.items()} == {"a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}
    assert values["c"][0, 1] == 0 and values["c"][1, 1] != 0  # the Kronecker delta
    assert values["d"][7] == 0  # i + k never reaches 7
    for gradient in grads.values():  # the printed derivative reads back as the same function
        assert tab.parse(str(gradient), gradient.shapes) == gradient


@pytest.mark.parametrize("text, shapes, structure", [
    ("f[i; j] = x[2 * i; j] ** 2", {"f": (3, 4), "x": (6, 4)}, "modulus"),     # odd rows get 0
    ("f[i] = sin (x[i + 2])", {"f": (4,), "x": (7,)}, "inequality"),           # x[0], x[1], x[6] unused
    ("f[i] = sum{s}_0^3 (x[i; s] * y[s])", {"f": (2,), "x": (2, 4), "y": (4,)}, None),
    ("f[n] = sum{s}_0^2 (x[n; s; 2 * s])", {"f": (3,), "x": (3, 3, 5)}, "equality"),  # dx_2 = 2 dx_1
    ("f[n] = sum{s}_0^2 (x[s; n; n])", {"f": (3,), "x": (3, 3, 3)}, None),
    ("f[s; t] = exp (x[10 * s + t])", {"f": (3, 10), "x": (30,)}, None),
    ("f[i] = sum{k}_0^i (x[k] * x[i - k])", {"f": (5,), "x": (5,)}, None),
    ("f[i; j] = x[i] / (1 + y[j] ** 2) - log (z[i; j])", {"f": (2, 3), "x": (2,), "y": (3,), "z": (2, 3)}, None),
    ("f[i] = tanh (x[i]) * sqrt (x[i]) + cos (x[0])", {"f": (3,), "x": (3,)}, None),
    ("f[i] = x[i] ** y[i]", {"f": (3,), "x": (3,), "y": (3,)}, None),
    ("f[i] = if {i % 2 = 0} then (x[i]) else (x[i] ** 2)", {"f": (4,), "x": (4,)}, None),
])
def test_reference_patterns(text, shapes, structure):
    fn = tab.parse(text, shapes)
    grads = tab.derive(fn)
    assert_gradients_right(fn, grads)
    if structure is not None:
        atoms = [a for g in grads.values() for node in _nodes(g.body) if isinstance(node, If)
                 for a in node.condition]
        kinds = {"modulus" if a.modulus else "inequality" if a.inequality else "equality" for a in atoms}
        assert structure in kinds, (structure, str(grads))


def _nodes(node):
    from tensoradbook.expr import walk

    return list(walk(node))


@pytest.mark.parametrize("text, shapes", [
    (SECTION_6, SECTION_6_SHAPES),
    ("f[i; j] = sum{k}_0^3 (a[i; k] * b[k; j])", {"f": (2, 3), "a": (2, 4), "b": (4, 3)}),
    ("f[i] = exp (x[i + 1] * x[i])", {"f": (4,), "x": (5,)}),
])
def test_second_order(text, shapes):
    grads = tab.derive(text, shapes)
    for name, gradient in grads.items():
        second = tab.derive(gradient)
        assert all("d" + gradient.name in g.shapes for g in second.values())  # the adjoint of da is dda
        assert_gradients_right(gradient, second, seed=1)


def test_conditions_implied_by_the_box_disappear():
    grads = tab.derive("f[i; j] = x[2 * i; j] ** 2", {"f": (3, 4), "x": (6, 4)})
    assert str(grads["x"]) == "dx[dx_0; dx_1] = if {dx_0 % 2 = 0} then (df[dx_0 / 2; dx_1] * (2 * x[dx_0; dx_1])) else (0)"
    grads = tab.derive("f[i; j] = x[2 * i; j] ** 2", {"f": (3, 4), "x": (7, 4)})  # x[6] is even but unused
    assert str(grads["x"]).startswith("dx[dx_0; dx_1] = if {dx_0 % 2 = 0 and 4 - dx_0 >= 0} then (")


def test_numeric_gradient_is_the_per_element_oracle():
    from tensoradbook.gradcheck import numeric_gradient

    fn = tab.parse("f[i; j] = sin (x[i + j]) * y[j]", {"f": (2, 3), "x": (4,), "y": (3,)})
    rng = np.random.default_rng(5)
    args = {"x": rng.uniform(0, 1, 4), "y": rng.uniform(0, 1, 3)}
    df = rng.standard_normal((2, 3))
    exact = tab.derive(fn).evaluate(args, df)
    for name in ("x", "y"):
        assert np.allclose(numeric_gradient(fn, args, name, df), exact[name], rtol=1e-7, atol=1e-9)


def test_sums_of_one_term_disappear():
    grads = tab.derive("f[i; j] = x[i] * y[j]", {"f": (3, 1), "x": (3,), "y": (1,)})
    assert str(grads["x"]) == "dx[dx_0] = df[dx_0; 0] * y[0]"
    assert str(grads["y"]).startswith("dy[dy_0] = sum{dy_z0}_0^2 (")
    assert_gradients_right(grads.function, grads)


# --- random element-wise functions -------------------------------------------------------

OUTPUT = {"i": 3, "j": 2}


@st.composite
def affine_over(draw, names):
    return {n: draw(st.integers(-2, 2)) for n in names}


@st.composite
def expressions(draw, scope, depth=0):
    """A random expression over the index names in ``scope`` (name -> (low, high) range)."""
    kind = draw(st.sampled_from(["element", "element", "unary", "binary", "sum"] if depth < 3 else ["element"]))
    if kind == "element":
        argument = draw(st.sampled_from(["x", "y"]))
        dims = 1 if argument == "x" else 2
        indices = tuple(draw(affine_over(list(scope))) for _ in range(dims))
        return ("element", argument, indices)
    if kind == "unary":
        op = draw(st.sampled_from(["sin", "tanh", "exp", "sqrt1p", "neg"]))
        return ("unary", op, draw(expressions(scope, depth + 1)))
    if kind == "binary":
        op = draw(st.sampled_from(["+", "-", "*", "/", "**"]))
        return ("binary", op, draw(expressions(scope, depth + 1)), draw(expressions(scope, depth + 1)))
    name = f"k{depth}"
    dependent = draw(st.booleans())
    upper_name = draw(st.sampled_from(list(scope))) if dependent else None
    high = scope[upper_name][1] if upper_name else draw(st.integers(0, 3))
    inner = dict(scope)
    inner[name] = (0, high)
    return ("sum", name, upper_name, high, draw(expressions(inner, depth + 1)))


def build(tree, ranges, shapes):
    """The expression tree from the description, growing the argument shapes to fit every index."""
    kind = tree[0]
    if kind == "element":
        _, argument, coefficient_maps = tree
        indices = []
        for k, coefficients in enumerate(coefficient_maps):
            low = sum(min(c * ranges[n][0], c * ranges[n][1]) for n, c in coefficients.items())
            high = sum(max(c * ranges[n][0], c * ranges[n][1]) for n, c in coefficients.items())
            indices.append(Affine.of(coefficients, -low))
            key = (argument, k)
            shapes[key] = max(shapes.get(key, 1), high - low + 1)
        return Element(argument, tuple(indices))
    if kind == "unary":
        arg = build(tree[2], ranges, shapes)
        if tree[1] == "sqrt1p":  # sqrt(1 + u ** 2): smooth everywhere
            return Unary("sqrt", Binary("+", Number(1), Binary("**", arg, Number(2))))
        if tree[1] == "exp":
            return Unary("exp", Binary("*", Number(0.5), arg))
        return Unary(tree[1], arg)
    if kind == "binary":
        left, right = build(tree[2], ranges, shapes), build(tree[3], ranges, shapes)
        if tree[1] == "/":  # keep the denominator away from zero
            right = Binary("+", Number(2), Binary("**", right, Number(2)))
        if tree[1] == "**":
            right = Number(2)
        return Binary(tree[1], left, right)
    _, name, upper_name, high, body = tree
    inner = dict(ranges)
    inner[name] = (0, high)
    upper = Affine.index(upper_name) if upper_name else Affine.constant_value(high)
    return Sum(name, (Affine.constant_value(0),), (upper,), build(body, inner, shapes))


@settings(max_examples=120, deadline=None)
@given(expressions({n: (0, size - 1) for n, size in OUTPUT.items()}))
def test_random_functions_against_finite_differences(tree):
    sizes = {}
    body = build(tree, {n: (0, size - 1) for n, size in OUTPUT.items()}, sizes)
    shapes = {"f": tuple(OUTPUT.values())}
    for argument, dims in (("x", 1), ("y", 2)):
        if (argument, 0) in sizes:
            shapes[argument] = tuple(sizes[(argument, k)] for k in range(dims))
    fn = Function("f", tuple(OUTPUT), body, shapes)
    # Moderate inputs: saturated tanh or exp would make any finite difference ill-conditioned.
    rng = np.random.default_rng(0)
    args = {name: rng.uniform(-0.5, 0.5, shape) for name, shape in shapes.items() if name != "f"}
    # Terms can cancel exactly (y - (y - x)): an absolute tolerance covers a zero gradient.
    for name, (numeric, exact) in directional_derivatives(fn, args).items():
        assert np.isclose(numeric, exact, rtol=TOLERANCE, atol=1e-9), (name, numeric, exact)


# --- errors and the command line ---------------------------------------------------------

def test_derive_rejects_bad_input():
    with pytest.raises(ExpressionError):
        tab.derive("f[i] = expp(x[i])", {"f": (3,), "x": (3,)})
    with pytest.raises(ExpressionError, match="shapes only with the function's text"):
        tab.derive(tab.parse("f[i] = x[i]", {"f": (2,), "x": (2,)}), {"f": (2,)})
    with pytest.raises(ExpressionError, match="already an argument"):
        tab.derive("f[i] = x[i] * df[i]", {"f": (2,), "x": (2,), "df": (2,)})


def test_command_line(capsys):
    from tensoradbook.__main__ import main

    shapes = [f"--shape={n}={'x'.join(map(str, s))}" for n, s in SECTION_6_SHAPES.items()]
    assert main(["derive", SECTION_6, *shapes, "--check"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("da[da_0; da_1] = sum{da_z0}_0^3")
    largest = float(out.strip().splitlines()[-1].split()[2])
    assert largest < TOLERANCE
    assert main(["derive", "f[i] = x[i] ** 2", "--shape", "f=3", "--shape", "x=3", "--latex"]) == 0
    assert "\\" in capsys.readouterr().out
    assert main(["derive", "f[i] = x[i * i]", "--shape", "f=3", "--shape", "x=9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "^" in err and "Traceback" not in err


def test_the_check_catches_wrong_gradients():
    grads = tab.derive(SECTION_6, SECTION_6_SHAPES)
    fn = grads.function
    for name in "abcd":
        wrong = dict(grads.functions)
        right = grads[name]
        wrong[name] = Function(right.name, right.indices, Binary("*", Number(1.01), right.body), right.shapes)
        errors = tab.check_gradients(fn, grads=tab.Gradients(fn, wrong, grads.contributions))
        assert errors[name] > 1e-3 and max(v for k, v in errors.items() if k != name) < TOLERANCE
    dropped = dict(grads.functions)  # forgetting the d[i + k] ** 3 term's contribution to dd
    dropped["d"] = Function("dd", grads["d"].indices, Number(0), grads["d"].shapes)
    assert tab.check_gradients(fn, grads=tab.Gradients(fn, dropped, grads.contributions))["d"] > 0.5

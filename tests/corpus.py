"""Element-wise functions for tests: the reference patterns, and random functions.

The random functions have affine indices (coefficients -2..2), unary and binary
operations kept smooth, and sums with constant or output-dependent upper
bounds; the argument shapes grow to fit every index, so each function is
valid by construction.
"""

import numpy as np
from hypothesis import strategies as st

from tensoradbook.expr import Affine, Binary, Element, Function, Number, Sum, Unary

# The index patterns the authors' reference implementation tests, and more: (text, shapes, the kind
# of condition the gradients must contain, if any).
PATTERNS = [
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
    # the condition must guard every factor: dx reads y[dx_0 - 1] only where dx_0 >= 1
    ("f[i] = if {i >= 1} then (x[i] * y[i - 1]) else (0)", {"f": (4,), "x": (4,), "y": (3,)}, "inequality"),
]

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


def random_functions():
    """Functions ``f[i; j]`` (3 x 2) of ``x`` (1-D) and ``y`` (2-D) built from :func:`expressions`."""
    ranges = {n: (0, size - 1) for n, size in OUTPUT.items()}
    return expressions(ranges).map(_function)


def _function(tree) -> Function:
    sizes = {}
    body = build(tree, {n: (0, size - 1) for n, size in OUTPUT.items()}, sizes)
    shapes = {"f": tuple(OUTPUT.values())}
    for argument, dims in (("x", 1), ("y", 2)):
        if (argument, 0) in sizes:
            shapes[argument] = tuple(sizes[(argument, k)] for k in range(dims))
    return Function("f", tuple(OUTPUT), body, shapes)


def moderate_arguments(fn: Function, seed: int = 0) -> dict:
    """Inputs in [-0.5, 0.5]: saturated tanh or exp would make any finite difference ill-conditioned."""
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(-0.5, 0.5, fn.shapes[name]) for name in fn.arguments}

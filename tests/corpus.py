"""Element-wise functions for tests: the reference patterns, and random functions.

The random functions have affine indices (coefficients -2..2), unary and binary
operations kept smooth, and sums with constant or output-dependent upper
bounds; the argument shapes grow to fit every index, so each function is
valid by construction. The conditional ones add ``if``s whose conditions hold
always, never or sometimes on the index box, scalar and size-1 outputs, and
sums of one term: where the derivation decides conditions itself.
"""

import hypothesis
import numpy as np
from hypothesis import strategies as st

from tensoradbook.lang.expr import Affine, Atom, Binary, Element, If, Number, Sum, Unary
from tensoradbook.lang.function import Function

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
# Outputs of the conditional functions: a scalar and size-1 axes too, where conditions are decided on
# the box and sums of one term vanish at derive time (the cases that once gave a wrong gradient).
OUTPUTS = [{}, {"i": 1}, {"i": 3}, {"i": 1, "j": 1}, {"i": 2, "j": 1}, {"i": 3, "j": 2}]
DIMS = {"x": 1, "y": 2, "w": 0}  # argument -> number of indices


@st.composite
def affine_over(draw, names):
    return {n: draw(st.integers(-2, 2)) for n in names}


def _range(coefficients, ranges):
    """The least and greatest value of ``sum c * name`` over the box ``ranges``."""
    low = sum(min(c * ranges[n][0], c * ranges[n][1]) for n, c in coefficients.items())
    high = sum(max(c * ranges[n][0], c * ranges[n][1]) for n, c in coefficients.items())
    return low, high


@st.composite
def box_atoms(draw, scope):
    """A condition atom over ``scope`` that holds always, never or sometimes on its box (drawn)."""
    # Mostly on some index: a condition without any is decided as the derivation builds it.
    coefficients = {n: draw(st.sampled_from([1, -1, 2, -2, 0])) for n in scope}
    low, high = _range(coefficients, scope)
    kind = draw(st.sampled_from(["inequality", "equality", "modulus"]))
    truth = draw(st.sampled_from(["always", "never", "sometimes"]))
    if kind == "modulus":
        modulus = draw(st.integers(2, 3))
        return Atom(Affine.of(coefficients, draw(st.integers(0, modulus - 1))), modulus)
    if truth == "never":  # value + constant < 0 for every value
        constant = -high - 1
    elif kind == "inequality":  # value + constant >= 0 for all values when constant >= -low
        constant = -low if truth == "always" else draw(st.integers(-high, max(-high, -low - 1)))
    else:
        constant = draw(st.integers(-high, -low))
    return Atom(Affine.of(coefficients, constant), inequality=kind == "inequality")


@st.composite
def expressions(draw, scope, depth=0, conditions=False, kind=None):
    """A random expression over the index names in ``scope`` (name -> (low, high) range); with
    ``conditions``, also ``if``s with constant or expression branches and 0-d elements ``w[]``.
    ``kind`` fixes the kind of the root."""
    kinds = ["element", "element", "unary", "binary", "sum"] + ["if", "if"] * conditions
    kind = kind or draw(st.sampled_from(kinds if depth < 3 else ["element"]))
    if kind == "element":
        argument = draw(st.sampled_from(["x", "y", "w", "w"] if conditions else ["x", "y"]))
        indices = tuple(draw(affine_over(list(scope))) for _ in range(DIMS[argument]))
        return ("element", argument, indices)
    if kind == "unary":
        op = draw(st.sampled_from(["sin", "tanh", "exp", "sqrt1p", "neg"]))
        return ("unary", op, draw(expressions(scope, depth + 1, conditions)))
    if kind == "binary":
        op = draw(st.sampled_from(["+", "-", "*", "/", "**"]))
        return ("binary", op, draw(expressions(scope, depth + 1, conditions)),
                draw(expressions(scope, depth + 1, conditions)))
    if kind == "if":
        atoms = tuple(draw(st.lists(box_atoms(scope), min_size=1, max_size=2)))
        # A constant or a bare element as often as anything else: then derive decides the
        # condition of a whole gradient (its top-level if) on the box.
        branch = st.one_of(st.sampled_from([("number", 0), ("number", 1), ("number", 2.5)]),
                           expressions(scope, 3, conditions), expressions(scope, depth + 1, conditions))
        return ("if", atoms, draw(branch), draw(branch))
    name = f"k{depth}"
    dependent = draw(st.booleans())
    upper_name = draw(st.sampled_from(list(scope))) if dependent and scope else None
    high = scope[upper_name][1] if upper_name else draw(st.integers(0, 3))  # 0: a sum of one term
    inner = dict(scope)
    inner[name] = (0, high)
    return ("sum", name, upper_name, high, draw(expressions(inner, depth + 1, conditions)))


def build(tree, ranges, sizes):
    """The expression tree from the description, growing the argument sizes to fit every index."""
    kind = tree[0]
    if kind == "number":
        return Number(tree[1])
    if kind == "element":
        return _element(tree, ranges, sizes)
    if kind == "unary":
        return _unary(tree[1], build(tree[2], ranges, sizes))
    if kind == "binary":
        left, right = build(tree[2], ranges, sizes), build(tree[3], ranges, sizes)
        if tree[1] == "/":  # keep the denominator away from zero
            right = Binary("+", Number(2), Binary("**", right, Number(2)))
        if tree[1] == "**":
            right = Number(2)
        return Binary(tree[1], left, right)
    if kind == "if":
        _, atoms, then, otherwise = tree
        return If(atoms, build(then, ranges, sizes), build(otherwise, ranges, sizes))
    _, name, upper_name, high, body = tree
    inner = dict(ranges)
    inner[name] = (0, high)
    upper = Affine.index(upper_name) if upper_name else Affine.constant_value(high)
    return Sum(name, (Affine.constant_value(0),), (upper,), build(body, inner, sizes))


def _element(tree, ranges, sizes) -> Element:
    """An element read from the description, its argument grown to hold every index it reaches."""
    _, argument, coefficient_maps = tree
    indices = []
    extent = sizes.setdefault(argument, [1] * DIMS[argument])
    for k, coefficients in enumerate(coefficient_maps):
        low, high = _range(coefficients, ranges)
        indices.append(Affine.of(coefficients, -low))
        extent[k] = max(extent[k], high - low + 1)
    return Element(argument, tuple(indices))


def _unary(name: str, arg):
    if name == "sqrt1p":  # sqrt(1 + u ** 2): smooth everywhere
        return Unary("sqrt", Binary("+", Number(1), Binary("**", arg, Number(2))))
    if name == "exp":
        return Unary("exp", Binary("*", Number(0.5), arg))
    return Unary(name, arg)


def random_functions():
    """Functions ``f[i; j]`` (3 x 2) of ``x`` (1-D) and ``y`` (2-D) built from :func:`expressions`."""
    ranges = {n: (0, size - 1) for n, size in OUTPUT.items()}
    return expressions(ranges).map(lambda tree: _function(tree, OUTPUT))


@st.composite
def conditional_functions(draw):
    """Functions with ``if``s whose conditions hold always, never or sometimes on the box, of
    ``x`` (1-D), ``y`` (2-D) and ``w`` (0-d), for outputs of :data:`OUTPUTS`; at least one argument."""
    output = draw(st.sampled_from(OUTPUTS))
    scope = {n: (0, size - 1) for n, size in output.items()}
    # An if at the root, alone or in a sum of one term, is where derive decides conditions itself.
    root = draw(st.sampled_from(["if", "sum of one term", "any"]))
    if root == "sum of one term":
        tree = ("sum", "k", None, 0, draw(expressions({**scope, "k": (0, 0)}, 1, True, kind="if")))
    else:
        tree = draw(expressions(scope, conditions=True, kind="if" if root == "if" else None))
    fn = _function(tree, output)
    hypothesis.assume(fn.arguments)
    return fn


# Names that the derivation and the kernels make up themselves (gradients d<x>, the adjoint df, their
# indices d<x>_0 and d<x>_z0, the simplified form's df_<k>, the second derivative's dd<x>) and names
# of the generated Python code: a user may choose any of them.
TENSOR_NAMES = ["a", "b", "f", "da", "db", "df", "dda", "ddf", "df_1", "da_1", "df_k0", "f_k0", "a_0",
                "np", "np_", "a_b", "a__b", "range", "THREADS", "forward", "gradients", "f_kernel", "grad_a"]
INDEX_NAMES = ["i", "j", "k0", "k1", "k2", "a", "b", "f", "da", "da_0", "da_z0", "db_0", "df_0", "da_0_1",
               "dda_0", "k0_1", "k_", "np", "max", "range"]


@st.composite
def renamed_functions(draw):
    """Random functions (:func:`expressions`, outputs of :data:`OUTPUTS`) whose tensors and indices
    are renamed from :data:`TENSOR_NAMES` and :data:`INDEX_NAMES`: an index may share a tensor's name
    (the notation tells them apart), the function may be called ``da`` and read ``a``."""
    output = draw(st.sampled_from(OUTPUTS))
    tree = draw(expressions({n: (0, size - 1) for n, size in output.items()}))
    fn = _function(tree, output)
    hypothesis.assume(fn.arguments)
    tensors = dict(zip(fn.shapes, draw(st.lists(st.sampled_from(TENSOR_NAMES), min_size=len(fn.shapes),
                                                max_size=len(fn.shapes), unique=True))))
    old = list(dict.fromkeys([*fn.indices, "k0", "k1", "k2"]))
    indices = dict(zip(old, draw(st.lists(st.sampled_from(INDEX_NAMES), min_size=len(old), max_size=len(old),
                                          unique=True))))
    body = _rename(fn.body, tensors, {n: Affine.index(m) for n, m in indices.items()})
    return Function(tensors[fn.name], tuple(indices[i] for i in fn.indices), body,
                    {tensors[n]: shape for n, shape in fn.shapes.items()})


def _rename(node, tensors: dict, indices: dict):
    """``node`` with tensor names and index names (bound ones too) replaced, all at once."""
    if isinstance(node, Element):
        return Element(tensors[node.name], tuple(a.substitute(indices) for a in node.indices))
    if isinstance(node, Unary):
        return Unary(node.op, _rename(node.arg, tensors, indices))
    if isinstance(node, Binary):
        return Binary(node.op, _rename(node.left, tensors, indices), _rename(node.right, tensors, indices))
    if isinstance(node, If):
        condition = tuple(Atom(a.affine.substitute(indices), a.modulus, a.inequality) for a in node.condition)
        return If(condition, _rename(node.then, tensors, indices), _rename(node.otherwise, tensors, indices))
    if isinstance(node, Sum):
        return Sum(indices[node.index].names[0], tuple(a.substitute(indices) for a in node.lower),
                   tuple(a.substitute(indices) for a in node.upper), _rename(node.body, tensors, indices))
    return node


def _function(tree, output: dict) -> Function:
    sizes = {}
    body = build(tree, {n: (0, size - 1) for n, size in output.items()}, sizes)
    shapes = {"f": tuple(output.values())}
    shapes.update((argument, tuple(extent)) for argument, extent in sizes.items())
    return Function("f", tuple(output), body, shapes)


def moderate_arguments(fn: Function, seed: int = 0) -> dict:
    """Inputs in [-0.5, 0.5]: saturated tanh or exp would make any finite difference ill-conditioned."""
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(-0.5, 0.5, fn.shapes[name]) for name in fn.arguments}

"""Printing (report sec. 6): the text reads back to the same tree, and the LaTeX is well formed.

The round trip is a property over random trees built directly from the nodes
of :mod:`tensoradbook.lang.expr`, with argument shapes chosen large enough for every
index, so :func:`parse` accepts them.
"""

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tensoradbook.lang.ops import BINARY_OPERATORS, OPERATIONS, UNARY_FUNCTIONS
from tensoradbook.lang.expr import Affine, Atom, Binary, Element, If, Number, Sum, Unary, walk
from tensoradbook.lang.function import Function
from tensoradbook.lang.parser import parse
from tensoradbook.lang.printer import affine_text, expr_latex, expr_text, to_latex, to_text

ARGUMENTS = {0: ("u",), 1: ("x", "w"), 2: ("y",)}  # argument names by number of indices


def interval(affine, intervals):
    """Exact range of ``affine`` over a box of index intervals."""
    low = high = affine.offset
    for name, c in affine.coefficients.items():
        a, b = intervals[name]
        low, high = low + min(c * a, c * b), high + max(c * a, c * b)
    return low, high


class Trees:
    """Draws a random valid body and records how large each argument must be."""

    def __init__(self, draw):
        self.draw = draw
        self.sizes: dict[str, list[int]] = {}

    def affine(self, intervals, coefficient=1, constant=2, denominator=1):
        draw = self.draw
        terms = {n: draw(st.integers(-coefficient, coefficient)) for n in intervals}
        return Affine.of(terms, draw(st.integers(-constant, constant)), denominator)

    def non_negative(self, intervals):
        """A random integer affine shifted to be >= 0 on the box, and its maximum."""
        affine = self.affine(intervals, coefficient=2, constant=0)
        low, high = interval(affine, intervals)
        shift = -low + self.draw(st.integers(0, 2))
        return affine + shift, high + shift

    def element(self, intervals, guards):
        draw = self.draw
        arity = draw(st.integers(0, 2))
        name = draw(st.sampled_from(ARGUMENTS[arity]))
        sizes = self.sizes.setdefault(name, [1] * arity)  # each name has one arity
        indices = []
        for dim in range(arity):
            # a guarded division reads back only if its reduced numerator is the atom's affine
            divisible = [a for a in guards if a.affine.scale(Fraction(1, a.modulus)).denominator == a.modulus]
            if divisible and draw(st.booleans()):
                atom = draw(st.sampled_from(divisible))
                index = atom.affine.scale(Fraction(1, atom.modulus))
                largest = interval(atom.affine, intervals)[1] // atom.modulus
            else:
                index, largest = self.non_negative(intervals)
            indices.append(index)
            sizes[dim] = max(sizes[dim], int(largest) + 1)
        return Element(name, tuple(indices))

    def number(self):
        return Number(self.draw(st.one_of(
            st.integers(-5, 5),
            st.floats(-100, 100, allow_nan=False).map(lambda v: round(v, 3)),
            st.floats(allow_nan=False, allow_infinity=False))))

    def sum(self, intervals, guards, depth):
        draw = self.draw
        index = f"s{depth}"
        lower = tuple(self.affine(intervals, denominator=draw(st.sampled_from([1, 2])))
                      for _ in range(draw(st.integers(1, 2))))
        upper = tuple(self.affine(intervals, constant=3, denominator=draw(st.sampled_from([1, 2])))
                      for _ in range(draw(st.integers(1, 2))))
        low = max(math.ceil(interval(a, intervals)[0]) for a in lower)
        high = min(math.floor(interval(a, intervals)[1]) for a in upper)
        inner = dict(intervals, **{index: (low, max(low, high))})
        return Sum(index, lower, upper, self.expr(inner, guards, depth + 1))

    def condition(self, intervals, guards, depth):
        draw = self.draw
        atoms = []
        for _ in range(draw(st.integers(1, 2))):
            modulus = draw(st.sampled_from([0, 2, 3]))
            affine = self.non_negative(intervals)[0] if modulus else self.affine(intervals)
            atoms.append(Atom(affine, modulus, inequality=not modulus and draw(st.booleans())))
        then = self.expr(intervals, guards + tuple(a for a in atoms if a.modulus), depth + 1)
        return If(tuple(atoms), then, self.expr(intervals, guards, depth + 1))

    def expr(self, intervals, guards=(), depth=0):
        draw = self.draw
        kinds = ["number", "element"] + (["unary", "binary", "binary", "sum", "if"] if depth < 3 else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "number":
            return self.number()
        if kind == "element":
            return self.element(intervals, guards)
        if kind == "unary":
            return Unary(draw(st.sampled_from(UNARY_FUNCTIONS)), self.expr(intervals, guards, depth + 1))
        if kind == "binary":
            op = draw(st.sampled_from(BINARY_OPERATORS))
            return Binary(op, self.expr(intervals, guards, depth + 1), self.expr(intervals, guards, depth + 1))
        if kind == "sum":
            return self.sum(intervals, guards, depth)
        return self.condition(intervals, guards, depth)


@st.composite
def functions(draw):
    names = draw(st.sampled_from([(), ("i",), ("i", "j"), ("dd_0", "dd_z1")]))
    shape = tuple(draw(st.integers(1, 3)) for _ in names)
    intervals = {n: (0, size - 1) for n, size in zip(names, shape)}
    trees = Trees(draw)
    body = trees.expr(intervals)
    shapes = {"f": shape, **{name: tuple(sizes) for name, sizes in trees.sizes.items()}}
    return Function("f", names, body, shapes)


def random_args(fn, seed=0):
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(0.5, 2.0, fn.shapes[name]) for name in fn.arguments}


@given(functions())
def test_text_round_trip(fn):
    text = to_text(fn)
    back = parse(text, fn.shapes)
    assert back == fn, text
    assert str(fn) == text
    args = random_args(fn)
    np.testing.assert_array_equal(back.evaluate(args), fn.evaluate(args))


@given(functions())
def test_printing_a_parsed_function_is_stable(fn):
    once = to_text(parse(to_text(fn), fn.shapes))
    assert to_text(parse(once, fn.shapes)) == once


# --- what the text looks like -----------------------------------------------------------

i, j, k = (Affine.index(n) for n in "ijk")
x_i = Element("x", (i,))


def affine(terms=None, constant=0, denominator=1):
    return Affine.of(terms or {}, constant, denominator)


@pytest.mark.parametrize("value, text", [
    (affine({"dd_0": 1}, -2), "dd_0 - 2"),
    (affine({"i": 2, "j": -1}, 3), "2 * i - j + 3"),
    (affine({"b": 1}, -3, 2), "(b - 3) / 2"),
    (affine({"b": 1}, 0, 2), "b / 2"),
    (affine({"b": -3}, 0, 2), "-3 * b / 2"),
    (affine({"i": -1, "k": 1}), "k - i"),
    (affine({"i": -1, "j": -2}, -1), "-i - 2 * j - 1"),
    (affine(constant=-3), "-3"),
    (affine({"i": -1}, 3), "3 - i"),
    (affine({"i": -2, "j": -1}, 3, 2), "(3 - 2 * i - j) / 2"),
    (affine(constant=3, denominator=2), "3 / 2"),
    (affine(), "0"),
])
def test_affine_text(value, text):
    assert affine_text(value) == text


@pytest.mark.parametrize("node, text", [
    (Number(-2), "-2"),
    (Unary("neg", Number(2)), "-(2)"),
    (Unary("neg", Number(-2)), "-(-2)"),
    (Unary("neg", Unary("neg", x_i)), "-(-x[i])"),
    (Binary("**", Number(-2), x_i), "(-2) ** x[i]"),
    (Binary("**", x_i, Number(-2)), "x[i] ** -2"),
    (Unary("neg", Binary("**", Number(2), x_i)), "-2 ** x[i]"),
    (Binary("**", Binary("**", x_i, x_i), x_i), "(x[i] ** x[i]) ** x[i]"),
    (Binary("**", x_i, Binary("**", x_i, x_i)), "x[i] ** x[i] ** x[i]"),
    (Binary("-", x_i, Binary("-", x_i, Number(1))), "x[i] - (x[i] - 1)"),
    (Binary("+", x_i, Binary("+", x_i, Number(1))), "x[i] + (x[i] + 1)"),
    (Binary("*", Binary("+", x_i, Number(1)), Number(-1.5)), "(x[i] + 1) * -1.5"),
    (Binary("-", x_i, Number(-2)), "x[i] - -2"),
    (Number(1e-05), "1e-05"),
    (Number(0.1), "0.1"),
    (Unary("exp", Unary("neg", x_i)), "exp (-x[i])"),
    (Element("u", ()), "u[]"),
    (Binary("**", Sum("k", (affine(),), (affine(constant=3),), Element("x", (k,))), Number(2)),
     "(sum{k}_0^3 (x[k])) ** 2"),
])
def test_expression_text(node, text):
    assert expr_text(node) == text


def test_derivative_shapes_print_like_the_report():
    dd = Function("dd", ("dd_0",),
                  Sum("dd_z1", (affine(), affine({"dd_0": 1}, -2)), (affine(constant=4), affine({"dd_0": 1})),
                      Element("d", (affine({"dd_0": 1, "dd_z1": -1}),))),
                  {"dd": (8,), "d": (8,)})
    assert to_text(dd) == "dd[dd_0] = sum{dd_z1}_(max [0; dd_0 - 2])^(min [4; dd_0]) (d[dd_0 - dd_z1])"
    dc = Function("dc", ("dc_0", "dc_1"),
                  If((Atom(affine({"dc_0": 1, "dc_1": -1})),), Element("c", (Affine.index("dc_0"),)), Number(0)),
                  {"dc": (3, 3), "c": (3,)})
    assert to_text(dc) == "dc[dc_0; dc_1] = if {dc_0 - dc_1 = 0} then (c[dc_0]) else (0)"
    dx = Function("dx", ("dx_0",),
                  If((Atom(Affine.index("dx_0"), 2),), Element("df", (affine({"dx_0": 1}, 0, 2),)), Number(0)),
                  {"dx": (6,), "df": (3,)})
    assert to_text(dx) == "dx[dx_0] = if {dx_0 % 2 = 0} then (df[dx_0 / 2]) else (0)"
    feasible = Function("dx", ("dx_0",), If((Atom(affine({"dx_0": -1}, 3), inequality=True),), Number(1), Number(0)),
                        {"dx": (6,)})
    assert to_text(feasible) == "dx[dx_0] = if {3 - dx_0 >= 0} then (1) else (0)"
    rounded = Function("f", ("i",), Sum("k", (affine({"i": 1}, 1, 2),), (affine({"i": 2}, 5, 3), affine(constant=3)),
                                         Element("x", (k,))), {"f": (4,), "x": (4,)})
    assert to_text(rounded) == "f[i] = sum{k}_(ceil((i + 1) / 2))^(min [floor((2 * i + 5) / 3); 3]) (x[k])"
    for fn in (dd, dc, dx, feasible, rounded):
        assert parse(to_text(fn), fn.shapes) == fn


def test_section6_prints_as_the_report_minus_redundant_parentheses():
    text = "f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))"
    shapes = {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}
    assert to_text(parse(text, shapes)) == \
        "f[i; j] = exp (-sum{k}_0^4 ((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3))"


# --- LaTeX -------------------------------------------------------------------------------


def balanced(latex):
    depth = 0
    for ch in latex.replace(r"\{", "").replace(r"\}", ""):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0 and latex.count(r"\left") == latex.count(r"\right")


@given(functions())
def test_latex_is_balanced_and_names_its_parts(fn):
    latex = to_latex(fn)
    assert latex.startswith(r"$\displaystyle f") and latex.endswith("$")
    assert balanced(latex), latex
    nodes = list(walk(fn.body))
    if any(isinstance(n, Sum) for n in nodes):
        assert r"\sum_{" in latex
    for op in UNARY_FUNCTIONS[1:]:  # every function but neg is shown as its table row says
        if any(isinstance(n, Unary) and n.op == op for n in nodes):
            assert OPERATIONS[op].latex.split("{0}")[0].format() in latex
    if any(isinstance(n, Binary) and n.op == "/" for n in nodes):
        assert r"\frac{" in latex
    assert fn._repr_latex_() == latex


def test_latex_of_section6():
    fn = parse("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
               {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)})
    assert to_latex(fn) == (r"$\displaystyle f_{i,j} = \exp\left(-\sum_{k=0}^{4} \left({\left(a_{i,k} + b_{j,k}"
                            r"\right)}^{2} \cdot c_{i,i} + {d_{i + k}}^{3}\right)\right)$")


@pytest.mark.parametrize("node, fragment", [
    (If((Atom(affine({"dc_0": 1, "dc_1": -1})),), Number(1), Number(0)), r"\delta_{\mathrm{dc}_{0},\mathrm{dc}_{1}}"),
    (If((Atom(affine({"i": -1}, 2)),), Number(1), Number(0)), r"\delta_{i,2}"),
    (If((Atom(Affine.index("b"), 2),), Number(1), Number(0)), r"\left[\,b \equiv 0 \pmod{2}\,\right]"),
    (If((Atom(Affine.index("b")),), Number(1), Number(2)), r"\begin{cases} 1 & \text{if } b = 0"),
    (If((Atom(affine({"b": 1}, -3), inequality=True), Atom(affine({"b": -1}, -1), inequality=True)), Number(1),
        Number(0)), r"\left[\,b \geq 3 \wedge b \leq -1\,\right]"),
    (Sum("dd_z1", (affine(), affine({"dd_0": 1}, -2)), (affine(constant=4),), Number(1)),
     r"\sum_{\mathrm{dd}_{\mathrm{z1}}=\max\left(0, \mathrm{dd}_{0} - 2\right)}^{4}"),
    (Sum("k", (affine({"i": 1}, 1, 2),), (affine({"i": 1}, 0, 3),), Number(1)),
     r"\sum_{k=\left\lceil \frac{i + 1}{2} \right\rceil}^{\left\lfloor \frac{i}{3} \right\rfloor}"),
    (Binary("/", x_i, Number(2)), r"\frac{x_{i}}{2}"),
    (Binary("**", Binary("+", x_i, Number(1)), Number(2)), r"{\left(x_{i} + 1\right)}^{2}"),
    (Element("dd", (affine({"dd_0": 2}, -1),)), r"\mathrm{dd}_{2 \mathrm{dd}_{0} - 1}"),
    (Element("x_1", (i,)), r"{x_{1}}_{i}"),
    (Number(1.5e-07), r"1.5 \cdot 10^{-7}"),
    (Unary("sqrt", x_i), r"\sqrt{x_{i}}"),
])
def test_latex_fragments(node, fragment):
    assert fragment in expr_latex(node)
    assert balanced(expr_latex(node))


def test_latex_has_no_stray_python_syntax():
    latex = expr_latex(Binary("**", Binary("*", x_i, x_i), Number(2)))
    assert "**" not in latex and not re.search(r"\bx\[", latex)

"""Reading the report's notation (sec. 6): trees, values, and every error with its caret.

Oracles: numpy formulas written out by hand for the values, and brute-force
enumeration of the index box for the exact range check.
"""

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensoradbook.lang.expr import Affine, Atom, Binary, Element, ExpressionError, Number, Sum, Unary
from tensoradbook.ad.derive import derive
from tensoradbook.lang.function import Function
from tensoradbook.lang.parser import parse
from tensoradbook.lang.scope import lattice_implies_divisible
from tensoradbook.lang.tokens import CUT, SHOWN_LINE, caret_block
import contextlib

from alarm import time_limit

SEC6 = "f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))"
SEC6_SHAPES = {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}


def rng_args(fn, seed=0):
    rng = np.random.default_rng(seed)
    return {name: rng.uniform(0.1, 1.0, fn.shapes[name]) for name in fn.arguments}


def affine(terms=None, constant=0, denominator=1):
    return Affine.of(terms or {}, constant, denominator)


# --- the section 6 example --------------------------------------------------------------


def test_section6_tree():
    fn = parse(SEC6, SEC6_SHAPES)
    assert (fn.name, fn.indices, fn.source) == ("f", ("i", "j"), SEC6)
    assert fn.shapes == SEC6_SHAPES
    assert isinstance(fn.body, Unary) and fn.body.op == "exp"
    neg = fn.body.arg
    assert isinstance(neg, Unary) and neg.op == "neg"
    total = neg.arg
    assert isinstance(total, Sum)
    assert (total.index, total.lower, total.upper) == ("k", (affine(constant=0),), (affine(constant=4),))
    elements = {}
    for node in _walk(total.body):
        if isinstance(node, Element):
            elements[node.name] = node
    assert elements["c"].indices == (Affine.index("i"), Affine.index("i"))
    assert elements["d"].indices == (affine({"i": 1, "k": 1}),)
    assert elements["a"].indices == (Affine.index("i"), Affine.index("k"))
    # (a + b) ** 2 * c + d ** 3
    assert total.body == Binary("+", Binary("*", Binary("**", Binary("+", elements["a"], elements["b"]), Number(2)),
                                             elements["c"]),
                                Binary("**", elements["d"], Number(3)))


def _walk(node):
    yield node
    for child in node.children():
        yield from _walk(child)


def test_section6_spans_point_at_the_source():
    fn = parse(SEC6, SEC6_SHAPES)
    for node in _walk(fn.body):
        if isinstance(node, Element):
            assert SEC6[node.span.start:node.span.end].startswith(node.name + "[")
    assert SEC6[fn.body.span.start:fn.body.span.end] == SEC6[SEC6.index("exp"):]


@given(st.integers(0, 2**32 - 1))
def test_section6_values_match_numpy(seed):
    fn = parse(SEC6, SEC6_SHAPES)
    args = rng_args(fn, seed)
    a, b, c, d = (args[n] for n in "abcd")
    i, j, k = np.ogrid[0:3, 0:4, 0:5]
    expected = np.exp(-(((a[i, k] + b[j, k]) ** 2 * c[i, i] + d[i + k] ** 3).sum(axis=2)))
    np.testing.assert_allclose(fn.evaluate(args), expected, rtol=1e-12)


def test_section6_parses_to_the_same_tree_every_time():
    first = parse(SEC6, SEC6_SHAPES)
    with time_limit():  # a hang check: a parse takes milliseconds
        assert all(parse(SEC6, SEC6_SHAPES) == first for _ in range(20))


def test_report_derivatives_parse():
    """The four derivatives printed in sec. 6 read back, with df shaped like f."""
    shapes = dict(SEC6_SHAPES, df=(3, 4), dd=(8,), dc=(3, 3))
    dd = parse("dd[dd_0] = sum{dd_z1}_(max [0; -2 + dd_0])^(min [4; dd_0]) (sum{dd_z0}_0^3 "
               "(df[dd_0 + -dd_z1; dd_z0] * 3 * d[dd_0] ** (3 - 1)))", shapes)
    assert dd.body.lower == (affine(constant=0), affine({"dd_0": 1}, -2))
    assert dd.body.upper == (affine(constant=4), Affine.index("dd_0"))
    dc = parse("dc[dc_0; dc_1] = if {dc_0 + -dc_1 = 0} then (sum{dc_z1}_0^4 (sum{dc_z0}_0^3 "
               "(b[dc_z0; dc_z1] * df[dc_1; dc_z0]))) else (0)", shapes)
    assert dc.body.condition == (Atom(affine({"dc_0": 1, "dc_1": -1})),)
    assert dc.body.otherwise == Number(0)


# --- the reference implementation's index patterns (TensorAlgDiff ElementsTests.fs) --------

PATTERNS = [
    ("f[i; j] = x[2 * i; j]", {"f": (3, 4), "x": (6, 4)},
     lambda x, i, j: x[2 * i, j]),
    ("f[i] = x[i + 2]", {"f": (4,), "x": (6,)},
     lambda x, i: x[i + 2]),
    ("f[i] = sum{k}_0^3 (x[i; k])", {"f": (3,), "x": (3, 4)},
     lambda x, i: x[i].sum()),
    ("f[s; n] = sum{m}_0^2 (x[s; n; m] * x[s; m; n])", {"f": (2, 3), "x": (2, 3, 3)},
     lambda x, s, n: sum(x[s, n, m] * x[s, m, n] for m in range(3))),
    ("f[n; s] = x[n; s; 2 * s]", {"f": (2, 3), "x": (2, 3, 5)},
     lambda x, n, s: x[n, s, 2 * s]),
    ("f[s; t] = x[10 * s + t]", {"f": (3, 10), "x": (30,)},
     lambda x, s, t: x[10 * s + t]),
    ("f[i, j] = x[i - j + 3, (2 * j + 1) / 1]", {"f": (3, 4), "x": (6, 8)},
     lambda x, i, j: x[i - j + 3, 2 * j + 1]),
    ("f[] = sum{k}_0^4 (x[k] ** 2)", {"f": (), "x": (5,)},
     lambda x: (x ** 2).sum()),
]


@pytest.mark.parametrize("text, shapes, formula", PATTERNS)
def test_reference_patterns_evaluate(text, shapes, formula):
    fn = parse(text, shapes)
    x = rng_args(fn)["x"]
    expected = np.array([formula(x, *point) for point in itertools.product(*map(range, shapes["f"]))])
    np.testing.assert_allclose(fn.evaluate({"x": x}).reshape(-1), expected, rtol=1e-12)


def test_guarded_division():
    fn = parse("dx[b] = if {b % 2 = 0} then (df[b / 2]) else (0)", {"dx": (6,), "df": (3,)})
    assert fn.body.condition == (Atom(Affine.index("b"), 2),)
    assert fn.body.then.indices == (affine({"b": 1}, 0, 2),)
    df = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(fn.evaluate({"df": df}), [1, 0, 2, 0, 3, 0])


def test_guarded_division_with_offset_and_remainder():
    # (b - 1) / 2 needs the atom (b - 1) % 2 = 0, written here as b % 2 = 1
    fn = parse("dx[b] = if {b % 2 = 1} then (df[(b - 1) / 2]) else (0)", {"dx": (6,), "df": (3,)})
    assert fn.body.condition == (Atom(affine({"b": 1}, -1), 2),)
    np.testing.assert_array_equal(fn.evaluate({"df": np.array([1.0, 2.0, 3.0])}), [0, 1, 0, 2, 0, 3])


def test_conditions_and_equalities():
    fn = parse("f[i; j] = if {i = j and (i + j) % 4 = 0} then (x[i]) else (-1)", {"f": (4, 4), "x": (4,)})
    assert fn.body.condition == (Atom(affine({"i": 1, "j": -1})), Atom(affine({"i": 1, "j": 1}), 4))
    expected = [[(i if (i == j and (i + j) % 4 == 0) else -1) for j in range(4)] for i in range(4)]
    np.testing.assert_array_equal(fn.evaluate({"x": np.arange(4.0)}), expected)


def test_inequality_conditions():
    fn = parse("f[i; j] = if {i - 1 >= j and 2 * j <= 3} then (x[i - j - 1]) else (0)", {"f": (4, 4), "x": (3,)})
    assert fn.body.condition == (Atom(affine({"i": 1, "j": -1}, -1), inequality=True),
                                 Atom(affine({"j": -2}, 3), inequality=True))
    x = np.array([1.0, 2.0, 3.0])
    expected = [[(x[i - j - 1] if i - 1 >= j and 2 * j <= 3 else 0) for j in range(4)] for i in range(4)]
    np.testing.assert_array_equal(fn.evaluate({"x": x}), expected)


def brute_sum(x, low, high):
    return sum(x[k] for k in range(low, high + 1))


@pytest.mark.parametrize("text, low, high", [
    ("f[i] = sum{k}_(ceil((i + 1) / 2))^(floor((2 * i + 5) / 3)) (x[k])",
     lambda i: -(-(i + 1) // 2), lambda i: (2 * i + 5) // 3),
    ("f[i] = sum{k}_(max [0; i - 2])^(min [4; i]) (x[k])", lambda i: max(0, i - 2), lambda i: min(4, i)),
    ("f[i] = sum{k}_(max [0, ceil((i - 3) / 2)])^(min [floor(i / 2), 3]) (x[k])",
     lambda i: max(0, -(-(i - 3) // 2)), lambda i: min(i // 2, 3)),
    ("f[i] = sum{k}_max [1; i]^min [2; i] (x[k])", lambda i: max(1, i), lambda i: min(2, i)),
    ("f[i] = sum{k}_(i + 1)^(7 - 1) (x[k])", lambda i: i + 1, lambda i: 6),
    ("f[i] = sum{k}_i^3 (x[k])", lambda i: i, lambda i: 3),
    # a rounded bound with an integer part taken out, as derivatives print one whose numerator passes MAX_INTEGER
    ("f[i] = sum{k}_(ceil((i + 1) / 3) - 1)^(min [7; floor(i / 2) + i - 2]) (x[k])",
     lambda i: -(-(i + 1) // 3) - 1, lambda i: min(7, i // 2 + i - 2)),
])
def test_rounded_and_min_max_bounds(text, low, high):
    fn = parse(text, {"f": (8,), "x": (8,)})
    x = np.arange(1.0, 9.0)
    np.testing.assert_array_equal(fn.evaluate({"x": x}), [brute_sum(x, low(i), high(i)) for i in range(8)])


def test_ceil_bound_tree():
    fn = parse("f[i] = sum{k}_(ceil((i + 1) / 2))^(floor(i / 3)) (x[k])", {"f": (8,), "x": (8,)})
    assert fn.body.lower == (affine({"i": 1}, 1, 2),)
    assert fn.body.upper == (affine({"i": 1}, 0, 3),)


def test_a_bound_whose_numerator_passes_max_integer_prints_its_integer_part_apart():
    """``(p + 2**52) * 3 / 3`` is ``floor((dy + 3 * 2**52 + 3) / 3)`` with a literal past MAX_INTEGER; written as
    ``floor(dy / 3) + 2**52 + 1`` every number stays below it, and it reads back as the same affine."""
    upper = affine({"i": 1}, 3 * 2**52 + 3, 3)
    fn = Function("f", ("i",), Sum("k", (Affine.constant_value(0),), (upper,), Element("x", ())),
                  {"f": (3,), "x": ()})
    assert "floor(i / 3) + 4503599627370497" in str(fn)
    again = parse(str(fn), fn.shapes)
    assert again == fn and again.body.upper == (upper,)


@pytest.mark.parametrize("bound, accepted", [
    ("t - 1", True),  # t in 1 .. 2**53 - 1: from 0 to 2**53 - 2 although |t| + |-1| is 2**53
    ("t + 1", False),  # reaches 2**53
    ("t - 9007199254740991 + t", False),  # t + t, a partial sum in some order, reaches 2**54 - 2
])
def test_the_reach_of_a_bound_counts_each_terms_sign(bound, accepted):
    text = f"f[i] = max{{t}}_1^9007199254740991 (sum{{s}}_0^({bound}) (x[]))"
    if accepted:
        parse(text, {"f": (1,), "x": ()})
    else:
        with pytest.raises(ExpressionError, match="can reach"):
            parse(text, {"f": (1,), "x": ()})


def test_empty_sums_are_zero_and_never_range_checked():
    fn = parse("f[i; j] = sum{k}_3^2 (x[k + 100]) + sum{k}_(i + 1)^i (x[j + 5])", {"f": (3, 2), "x": (2,)})
    np.testing.assert_array_equal(fn.evaluate({"x": np.ones(2)}), np.zeros((3, 2)))


def test_unreachable_branches_are_never_range_checked():
    fn = parse("f[i; j] = if {i = 5 and j = 0} then (x[i]) else (if {2 * i = 2 * j + 1} then (x[j + 9]) else (1))",
               {"f": (3, 2), "x": (2,)})
    np.testing.assert_array_equal(fn.evaluate({"x": np.ones(2)}), np.ones((3, 2)))


@pytest.mark.parametrize("text, tree", [
    ("f[] = -2", Number(-2)),
    ("f[] = -(2)", Unary("neg", Number(2))),
    ("f[] = - 2.5", Number(-2.5)),
    ("f[] = -2 ** 2", Unary("neg", Binary("**", Number(2), Number(2)))),
    ("f[] = (-2) ** 2", Binary("**", Number(-2), Number(2))),
    ("f[] = 2 ** -1", Binary("**", Number(2), Number(-1))),
    ("f[] = 2 ** 3 ** 2", Binary("**", Number(2), Binary("**", Number(3), Number(2)))),
    ("f[] = -u[] ** 2", Unary("neg", Binary("**", Element("u", ()), Number(2)))),
    ("f[] = 1 - 2 - 3", Binary("-", Binary("-", Number(1), Number(2)), Number(3))),
    ("f[] = 1 / 2 * 3", Binary("*", Binary("/", Number(1), Number(2)), Number(3))),
    ("f[] = 1 + 2 * 3", Binary("+", Number(1), Binary("*", Number(2), Number(3)))),
    ("f[] = 1 - -2", Binary("-", Number(1), Number(-2))),
    ("f[] = .5 + 2e-3 + 1.5E2", Binary("+", Binary("+", Number(0.5), Number(0.002)), Number(150.0))),
    ("f[] = exp(u[]) * sqrt (u[])", Binary("*", Unary("exp", Element("u", ())), Unary("sqrt", Element("u", ())))),
    ("f[] = -sum{k}_0^1 (x[k]) * 2", Binary("*", Unary("neg", Sum("k", (affine(constant=0),), (affine(constant=1),),
                                                                 Element("x", (Affine.index("k"),)))), Number(2))),
])
def test_precedence_and_numbers(text, tree):
    assert parse(text, {"f": (), "u": (), "x": (2,)}).body == tree


def test_number_types():
    body = parse("f[] = 3 + 3.0", {"f": ()}).body
    assert type(body.left.value) is int and type(body.right.value) is float


@given(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(2**53) + 1, 2**53 - 1))
def test_every_number_prints_and_reads_back(value):
    fn = parse(f"f[] = {value!r}", {"f": ()})
    assert fn.body.value == value and type(fn.body.value) is type(value)
    assert parse(str(fn), {"f": ()}) == fn


@given(st.from_regex(r"[0-9]{1,4}(\.[0-9]{0,4})?([eE][+-]?[0-9]{1,3})?", fullmatch=True))
def test_every_accepted_float_literal_reads_back_from_its_print(literal):
    """A literal is accepted exactly when float64 holds it (not inf, not a non-zero rounded to 0)."""
    value = float(literal)
    holds = value != float("inf") and (value != 0 or not literal.lower().split("e")[0].strip("0."))
    try:
        fn = parse(f"f[] = {literal}", {"f": ()})
    except ExpressionError as error:
        assert not holds and "float64" in str(error)
        return
    assert holds and fn.body.value == value
    assert parse(str(fn), {"f": ()}).body.value == value


# --- errors: message and caret ------------------------------------------------------------


def caret(message):
    """(source line, caret column, caret width) of an error message; of a line cut to a window, the window
    without its cut marks and the column in it."""
    lines = message.split("\n")
    source, marks = lines[-2][2:], lines[-1][2:]
    column = len(marks) - len(marks.lstrip())
    if source.startswith(CUT):
        source, column = source[len(CUT):], column - len(CUT)
    return source.removesuffix(CUT), column, len(marks.strip())


S = {"f": (3,), "x": (3,), "y": (3, 3), "u": ()}

ERRORS = [
    # text, shapes, message fragment, the text the carets are under
    ("f[i] = expp(x[i])", S, "unknown function 'expp'", "expp"),
    ("f[i] = x[i] +", S, "expected an expression, found the end of the text", ""),
    ("f[i] = (x[i] + 1", S, "expected ')'", ""),
    ("f[i] = x[i] + 1)", S, "unexpected ')' after the end of the expression", ")"),
    ("f[i] = x[i]]", S, "unexpected ']'", "]"),
    ("f[i] = x[i] # 1", S, "unexpected character '#'", "#"),
    ("f[i] = 2x[i]", S, "write a product with '*'", "2x"),
    ("f[i] = x[i] * * 2", S, "expected an expression, found '*'", "*"),
    ("f[i] = x[j]", S, "unbound index 'j'", "j"),
    ("f[i] = sum{k}_0^2 (x[k]) + x[k]", S, "unbound index 'k'", "k"),
    ("f[i; i] = y[i; i]", {"f": (3, 3), "y": (3, 3)}, "output index 'i' appears twice", "i"),
    ("f[i] = x[i * i]", S, "an index is affine", "i * i"),
    ("f[i] = x[i / 2]", S, "index i / 2 is not an integer for every i", "i / 2"),
    ("f[i] = if {i % 3 = 1} then (x[i / 2]) else (0)", S, "index i / 2 is not an integer", "i / 2"),
    ("f[i] = sum{k}_1^2 (x[i / k])", S, "divided by a non-zero integer constant", "k"),
    ("f[i] = x[i / 0]", S, "divided by a non-zero integer constant", "0"),
    ("f[i] = x[1.5]", S, "indices are integers, not 1.5", "1.5"),
    ("f[i] = x[i ** 2]", S, "'**' cannot appear in an index", "**"),
    ("f[i] = x[i; i]", S, "the argument 'x' has shape (3,) but 2 indices", "x[i; i]"),
    ("f[i] = y[i]", S, "the argument 'y' has shape (3, 3) but 1 index", "y[i]"),
    ("f[i] = z[i]", S, "no shape given for the argument 'z' (1 index): add it to shapes, e.g. shapes['z'] = (n0,)",
     "z[i]"),
    ("g[i; j] = x[i]", S, "no shape given for the output 'g' (2 indices)", "g[i; j]"),
    ("f[i; j] = x[i]", S, "the output 'f' has shape (3,) but 2 indices", "f[i; j]"),
    ("f[i] = f[i]", S, "the output 'f' cannot appear in its own definition", "f[i]"),
    ("f[i] = x", S, "expected '[' after 'x' (a scalar argument is written x[])", "x"),
    ("f[i] = i", S, "the index 'i' can only be used inside an argument's brackets", "i"),
    ("f[sum] = x[0]", S, "'sum' is a reserved word", "sum"),
    ("f[i] = x[i + 1]", S, "x[i + 1] leaves x's shape (3,) at i = 2: index 3 > 2", "i + 1"),
    ("f[i] = x[i - 1]", S, "x[i - 1] leaves x's shape (3,) at i = 0: index -1 < 0", "i - 1"),
    ("f[i] = sum{k}_0^2 (y[i; i + k - 2])", S, "y[i; i + k - 2] leaves y's shape (3, 3) at i = 0, k = 0: index -2 < 0",
     "i + k - 2"),
    ("d2[i; j] = sum{k}_0^i (x[i - k + j])", {"d2": (3, 2), "x": (3,)}, "at i = 2, j = 1, k = 0: index 3 > 2",
     "i - k + j"),
    ("dx[b] = if {b % 2 = 0} then (x[b / 2]) else (0)", {"dx": (7,), "x": (3,)},
     "x[b / 2] leaves x's shape (3,) at b = 6: index 3 > 2", "b / 2"),
    ("f[i] = sum{i}_0^2 (x[i])", S, "the sum index 'i' shadows an output index", "i"),
    ("f[i] = sum{k}_0^2 (sum{k}_0^2 (x[k]))", S, "the sum index 'k' shadows the index of an enclosing sum", "k"),
    ("f[i] = sum{k}_0^k (x[k])", S, "unbound index 'k'", "k"),
    ("f[i] = sum{k}_0^i - 1 (x[k])", S, "a bound of more than one token is parenthesised", "-"),
    ("f[i] = sum{k}_0 + 1^2 (x[k])", S, "a bound of more than one token is parenthesised", "+"),
    ("f[i] = sum{k}_-1^2 (x[k])", S, "a bound of more than one token is parenthesised", "-"),
    ("f[i] = sum{k}_(i / 2)^2 (x[k])", S, "the bound i / 2 is not an integer; round it inwards with ceil(...)",
     "i / 2"),
    ("f[i] = sum{k}_0^(floor(i / 2) + i / 3) (x[k])", S,
     "+ i / 3 is added to a rounded bound, so it is an integer: no division outside", "+ i / 3"),
    ("f[i] = sum{k}_0^(ceil(i / 2)) (x[k])", S,
     "ceil in an upper bound: an upper bound is rounded inwards with floor(...)", "ceil"),
    ("f[i] = sum{k}_0^(max [i; 2]) (x[k])", S, "max in an upper bound: an upper bound takes min", "max"),
    ("f[i] = sum{k}_(min [i; 2])^2 (x[k])", S, "min in a lower bound: a lower bound takes max", "min"),
    ("f[i] = sum{k}_(floor(i / 2))^2 (x[k])", S, "floor in a lower bound", "floor"),
    ("f[i] = sum{k}_(max [])^2 (x[k])", S, "expected an index expression, found ']'", "]"),
    ("f[i] = if {i + 1 % 2 = 0} then (x[i]) else (0)", S, "parenthesise the left side of %", "i + 1"),
    ("f[i] = if {i % 0 = 0} then (x[i]) else (0)", S, "the modulus must be a positive integer", "0"),
    ("f[i] = if {i / 2 = 0} then (x[i]) else (0)", S, "a condition compares integers", "i / 2"),
    ("f[i] = if {i % 2 >= 0} then (x[i]) else (0)", S, "expected = in the condition, found '>='", ">="),
    ("f[i] = if {i > 0} then (x[i]) else (0)", S, "i > 0 is written i >= 1", ">"),
    ("f[i] = if {i} then (x[i]) else (0)", S, "expected =, >= or <= in the condition, found '}'", "}"),
    ("f[i] = if {i >= 1} then (x[i - 2]) else (0)", S, "x[i - 2] leaves x's shape (3,) at i = 1: index -1 < 0", "i - 2"),  # noqa: E501
    ("f[i] = if {i = 0} (x[i]) else (0)", S, "expected 'then', found '('", "("),
    ("f[i] = if {i = 0} then (x[i])", S, "expected 'else', found the end of the text", ""),
    ("f[i] = exp x[i]", S, "expected '(' after exp", "x"),
    ("f[i] x[i]", S, "expected '=' after the output", "x"),
    ("f = x[0]", S, "expected '[' after the output's name (a scalar output is written f[])", "="),
    # a sum's body is parenthesised, and so is a sum raised to a power (sum x ** 2 read as (sum x) ** 2)
    ("f[i] = sum{k}_0^2 x[k] ** 2", S, "the body of a sum is written in parentheses: sum{k}_0^2 (...); e.g. "
     "sum{k}_0^2 (x[k] ** 2) is a sum of squares, (sum{k}_0^2 (x[k])) ** 2 the square of a sum", "x"),
    ("f[i] = sum{k}_(max [0; i - 1])^i exp (x[k])", S, "the body of a sum is written in parentheses: "
     "sum{k}_(max [0; i - 1])^i (...)", "exp"),
    ("f[i] = sum{k}_0^2 (x[k]) ** 2", S, "parenthesise a sum raised to a power, (sum{k}_0^2 (...)) ** ..., or "
     "write the power inside: sum{k}_0^2 (... ** ...)", "**"),
    ("f[i] = 2 ** sum{k}_0^2 (x[k]) ** 2", S, "parenthesise a sum raised to a power", "**"),
    # literals that once did not print and read back
    ("f[i] = 1e400 * x[i]", S, "the number 1e400 is too large for float64", "1e400"),
    ("f[i] = x[i] - 2.5E+309", S, "the number 2.5E+309 is too large for float64", "2.5E+309"),
    ("f[i] = 1e-400 * x[i]", S, "the number 1e-400 is too small for float64", "1e-400"),
    ("f[i] = " + "7" * 5000 + " * x[i]", S, "the integer 77777777...(5000 digits) is too large: integers are below "
     "MAX_INTEGER = 2**53 = 9007199254740992; write a float instead", "7" * 5000),
    ("f[i] = 9007199254740992 * x[i]", S, "the integer 9007199254740992 is too large", "9007199254740992"),
    ("u[] = \u0661\u0662", S, "unexpected character '\u0661'", "\u0661"),  # Arabic-Indic digits
    ("f[i] = x[\uff11]", S, "unexpected character", "\uff11"),  # a fullwidth 1
]


@pytest.mark.parametrize("text, shapes, fragment, marked", ERRORS)
def test_errors_name_the_problem_and_point_at_it(text, shapes, fragment, marked):
    with pytest.raises(ExpressionError) as info:
        parse(text, shapes)
    message = str(info.value)
    assert fragment in message.split("\n")[0]
    source, column, width = caret(message)
    assert source == text if len(text) <= SHOWN_LINE else source in text
    if marked:  # a token longer than the window is marked to the window's end
        assert source[column:column + width] == marked[:len(source) - column]
    else:  # the end of the text
        assert (column, width) == (len(text), 1)


def test_caret_on_the_right_line():
    text = "f[i] =\n  x[i]\n\t+ expp(x[i])"
    with pytest.raises(ExpressionError) as info:
        parse(text, S)
    *_, source, marks = str(info.value).split("\n")
    assert source == "  \t+ expp(x[i])"
    assert marks == "  \t  ^^^^"


# --- long lines, byte order marks and invisible characters -------------------------------

@pytest.mark.parametrize("where", [0, 500_000, 2**20 - 1])
def test_a_megabyte_line_is_shown_as_a_window_with_the_caret_under_the_character(where):
    text = "x" * where + "$" + "y" * (2**20 - 1 - where)
    block = caret_block(text, where, where + 1)
    source, marks = (line[2:] for line in block.split("\n"))
    assert len(source) <= SHOWN_LINE + 2 * len(CUT)
    assert source[marks.index("^")] == "$" and marks.count("^") == 1
    assert source.startswith(CUT) == (where > 0) and source.endswith(CUT) == (where < 2**20 - 1)


def test_an_error_on_a_long_line_is_short_and_points_at_the_character():
    text = "f[i] = x[i]" + " " * 2**20 + "+ $ + x[i]"  # a megabyte line
    with pytest.raises(ExpressionError) as info:
        parse(text, S)
    message = str(info.value)
    assert message.startswith("unexpected character '$'") and len(message) < 300
    source, column, width = caret(message)
    assert source[column] == "$" and width == 1
    assert text.index(source) + column == text.index("$")


@pytest.mark.parametrize("text, fragment", [
    ("f[i] = " + "a" * 5000 + "[i]", "no shape given for the argument 'aaaaaaaaaaaaaaaaaaaa...(5,000 characters)'"),
    ("f[i] = " + "a" * 5000 + " (x[i])", "unknown function 'aaaaaaaaaaaaaaaaaaaa...(5,000 characters)'"),
    ("f[i] = x[i + " + "1" * 5000 + ".5]", "indices are integers, not 11111111111111111111...(5,002 characters)"),
    ("f[i] = x[i" + " + 1 - 1" * 600 + " + 5]", "x[i + 1 - 1 + 1 - 1 ...(4,808 characters) leaves x's shape (3,)"),
])
def test_long_tokens_are_quoted_by_their_start_and_length(text, fragment):
    with pytest.raises(ExpressionError) as info:
        parse(text, S)
    assert fragment in str(info.value) and len(str(info.value)) < 500


def test_a_leading_byte_order_mark_is_skipped():
    """Notepad starts UTF-8 files with U+FEFF; it was an unexpected character under an invisible caret."""
    assert parse("\ufefff[i] = x[i] * 2", S) == parse("f[i] = x[i] * 2", S)
    program = parse("\ufeffa[i] = x[i] * 2\nb[i] = a[i] + 1", {**S, "a": (3,), "b": (3,)})
    assert [d.name for d in program.definitions] == ["a", "b"]
    with pytest.raises(ExpressionError) as info:
        parse("\ufefff[i] = x[i] + $", S)
    source, column, _ = caret(str(info.value))
    assert source == "f[i] = x[i] + $" and source[column] == "$"


@pytest.mark.parametrize("character, named", [
    ("\u200b", "'\\u200b' (U+200B ZERO WIDTH SPACE)"),
    ("\ufeff", "'\\ufeff' (U+FEFF ZERO WIDTH NO-BREAK SPACE)"),  # a byte order mark inside the text
    ("\u00ad", "'\\xad' (U+00AD SOFT HYPHEN)"),
    ("\x00", "'\\x00' (U+0000, a control character)"),
    ("\u00d7", "'×' (U+00D7 MULTIPLICATION SIGN)"),
])
def test_an_unexpected_character_is_named_when_the_caret_line_cannot_show_it(character, named):
    with pytest.raises(ExpressionError) as info:
        parse(f"f[i] = x[i] {character}+ 1", S)
    assert str(info.value).split("\n")[0] == f"unexpected character {named}"


@pytest.mark.parametrize("text, shapes, fragment", [
    ("", S, "empty text"),
    ("   \n ", S, "empty text"),
    ("f[i] = x[i]", {"f": (3,), "x": (0,)}, "shape of 'x' must be a tuple of positive ints"),
    ("f[i] = x[i]", {"f": (3,), "x": 3}, "shape of 'x' must be a tuple of positive ints"),
    ("f[i] = x[i]", {"f": (3,), "x": (2.0,)}, "shape of 'x' must be a tuple of positive ints"),
    ("f[i] = x[i]", {"f": (3,), "x": "3"}, "shape of 'x' must be a tuple of positive ints"),
    ("f[i] = x[i]", [("f", (3,))], "shapes must be a dict"),
    (b"f[i] = x[i]", S, "must be given as text"),
    # DerivationExplorer once passed such shapes through
    ("f[i] = x[i]", {"f": (3,), "x": (10**20,)}, "shape of 'x', (100000000000000000000,), has 1e+20 elements; "
     "a tensor has at most MAX_ELEMENTS = 2**32 = 4,294,967,296"),
    ("f[i] = x[i]", {"f": (3,), "x": (2**16, 2**16, 2)}, "has 8.59e+09 elements"),
])
def test_bad_arguments(text, shapes, fragment):
    with pytest.raises(ExpressionError, match=re.escape(fragment)):
        parse(text, shapes)


def test_shapes_are_plain_tuples():
    fn = parse("f[i] = x[i]", {"f": [3], "x": np.array([4]), "unused": (2, 2)})
    assert fn.shapes == {"f": (3,), "x": (4,), "unused": (2, 2)}
    assert all(type(n) is int for shape in fn.shapes.values() for n in shape)


def test_broadcast_output_index_is_fine():
    fn = parse("f[i; j] = x[i]", {"f": (3, 2), "x": (3,)})
    np.testing.assert_array_equal(fn.evaluate({"x": np.arange(3.0)}), [[0, 0], [1, 1], [2, 2]])


def test_deep_nesting_is_an_expression_error():
    with pytest.raises(ExpressionError):
        parse("f[] = " + "(" * 5000 + "1" + ")" * 5000, {"f": ()})


# --- garbage never escapes as another exception ---------------------------------------

PIECES = ["f", "[", "]", "i", "j", "k", ";", ",", "=", "x", "y", "(", ")", "+", "-", "*", "/", "**", "%",
          "sum", "{", "}", "_", "^", "if", "then", "else", "and", "max", "min", "ceil", "floor", "exp",
          "0", "1", "2", "-1", "1.5", "e", " ", "\n", "ceil(i / 2)", "x[i]", "y[i; j]", "f[i; j] ="]


@given(st.lists(st.sampled_from(PIECES), max_size=30))
def test_token_soup_raises_only_expression_errors(pieces):
    text = "".join(pieces)
    try:
        parse(text, {"f": (2, 3), "x": (3,), "y": (2, 3)})
    except ExpressionError as error:
        assert str(error)


@given(st.text(max_size=40))
def test_random_text_raises_only_expression_errors(text):
    with contextlib.suppress(ExpressionError):
        parse("f[i; j] = " + text, {"f": (2, 3), "x": (3,), "y": (2, 3)})


# --- the range check is exact ------------------------------------------------------------


@st.composite
def index_problems(draw):
    """``f[i; j] = if {cond} then (sum{k}_L^U (x[index])) else (0)`` with small random pieces."""
    coef = st.integers(-2, 2)
    shape = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    lower = (draw(coef), draw(coef), draw(st.integers(-2, 2)))  # a * i + b * j + c
    upper = (draw(coef), draw(coef), draw(st.integers(0, 4)))
    index = (draw(coef), draw(coef), draw(coef), draw(st.integers(-2, 4)))  # i, j, k, constant
    atom = (draw(st.integers(-1, 1)), draw(st.integers(-1, 1)), draw(st.integers(-2, 2)),  # a * i + b * j + c
            draw(st.sampled_from([0, 2, 3, ">="])))  # = 0, % m = 0, or >= 0
    size = draw(st.integers(1, 6))
    return shape, lower, upper, index, atom, size


def _affine_text(names, coefficients, constant):
    return " + ".join([f"{c} * {n}" for n, c in zip(names, coefficients)] + [f"({constant})"])


@given(index_problems())
def test_range_check_matches_brute_force(problem):
    shape, lower, upper, index, atom, size = problem
    a_i, a_j, a_m, relation = atom
    condition = f"({_affine_text('ij', (a_i, a_j), a_m)}) " + \
        {0: "= 0", 2: "% 2 = 0", 3: "% 3 = 0", ">=": ">= 0"}[relation]
    text = (f"f[i; j] = if {{{condition}}} then (sum{{k}}_({_affine_text('ij', lower[:2], lower[2])})"
            f"^({_affine_text('ij', upper[:2], upper[2])}) (x[{_affine_text('ijk', index[:3], index[3])}])) else (0)")
    reached = []
    for i, j in itertools.product(range(shape[0]), range(shape[1])):
        value = a_i * i + a_j * j + a_m
        if not (value >= 0 if relation == ">=" else (value % relation if relation else value) == 0):
            continue
        for k in range(lower[0] * i + lower[1] * j + lower[2], upper[0] * i + upper[1] * j + upper[2] + 1):
            reached.append(index[0] * i + index[1] * j + index[2] * k + index[3])
    fits = all(0 <= v < size for v in reached)
    try:
        parse(text, {"f": shape, "x": (size,)})
        assert fits, text
    except ExpressionError as error:
        assert not fits, str(error)
        assert "leaves x's shape" in str(error)


def test_a_guard_that_differs_by_multiples_shows_a_division_whole_at_once():
    """The derivative's guard dx_2 % 3 = 0 shows (dx_2 - 3 * z) / 3 whole without the exact check, which
    took minutes on these nested sums with many bounds (found by the grammar fuzzer)."""
    text = ("f[j; i; n] = if {(i) * 3 >= 0} then (2.5E+0) else (a[(j) * 2] + a[i] + (sum{m}_max [ceil((n - 1 - i) "
            "/ 3);-n - 1;i + j + 1]^(3 + i + 2 * j) (sum{u}_(-m - 1)^min [n * 2 + 2 + i; floor((-n) / 3)] "
            "(sum{t}_(max [ceil((1) / 3);1])^(1 + 2 * i) (x[0; m *  -2 + u + 10; 3 * i + j * 3])))))")
    fn = parse(text, {"f": (1, 1, 3), "a": (1,), "x": (1, 9, 1)})
    for grad in derive(fn).values():
        assert str(parse(str(grad), grad.shapes)) == str(grad)
    # sufficient, not exact: only a guard whose modulus is a multiple of the denominator counts
    guarded = "f[i] = if {(i - 2) % 4 = 0} then (x[(i + 2) / 2]) else (0)"
    assert str(parse(guarded, {"f": (8,), "x": (5,)})) == guarded


@pytest.mark.parametrize("text, shapes, whole", [
    # the sweep's reproducers: the exact check tried every remainder 1..m-1, 19 s at m = 10**6 + 1, and near
    # 2**53 never answered
    ("f[i] = x[i / 1000001]", {"f": (1000002,), "x": (2,)}, False),
    ("f[i] = x[i / 9007199254740991]", {"f": (4096,), "x": (1,)}, False),
    ("f[i] = x[(i + 4096) / 9007199254740991]", {"f": (4096,), "x": (1,)}, False),
    ("f[i] = x[i / 9007199254740991]", {"f": (1,), "x": (1,)}, True),  # i = 0 only
    ("f[i] = if {i % 1000001 = 0} then (x[2 * i / 1000001]) else (0)", {"f": (1000002,), "x": (3,)}, True),
    # an else of a large modulus: the range check searches the ways it fails
    ("f[i] = if {i % 1000001 = 0} then (0) else (x[i - 1])", {"f": (1000002,), "x": (1000002,)}, True),
    ("f[i] = if {i % 9007199254740991 = 0} then (0) else (x[i - 1])", {"f": (4,), "x": (3,)}, True),
    ("f[i] = if {i % 1000001 = 0} then (0) else (x[i - 1])", {"f": (1000003,), "x": (1000000,)}, False),
    # the guard's multiple is not the numerator's: the search of the box took 27 s, the equations settle it
    ("f[i; j] = if {i % 5 = 0} then (b[2 * i / 5 + j]) else (0)", {"f": (1000, 1000), "b": (1400,)}, True),
    ("f[i; j] = if {i - 2 * j = 0 and j % 5 = 0} then (b[(i + 3 * j) / 25]) else (0)", {"f": (1000, 500), "b": (100,)},
     True),
    ("f[i; j] = if {i % 5 = 0} then (b[(2 * i + j) / 5]) else (0)", {"f": (1000, 1000), "b": (1400,)}, False),
])
def test_a_division_is_checked_whole_in_time_independent_of_the_divisor(text, shapes, whole):
    with time_limit():
        try:
            parse(text, shapes)
            accepted = True
        except ExpressionError as error:
            assert "is not an integer" in str(error) or "leaves x's shape" in str(error), str(error)
            accepted = False
    assert accepted == whole, text


@settings(max_examples=200)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(-4, 4), st.sampled_from([0, 2, 3, 4])),
                min_size=0, max_size=2),
       st.tuples(st.integers(-6, 6), st.integers(-6, 6), st.integers(-6, 6)), st.integers(2, 6))
def test_the_equations_imply_divisibility_only_where_every_solution_has_it(equations, numerator, d):
    """``scope.lattice_implies_divisible`` against every point of a box wide enough to hold the lattice's periods:
    where it says the equations make ``n`` a multiple of ``d``, no solution in the box has ``n % d != 0``, and
    where it says not, some solution does."""
    def affine(a, b, c):
        return Affine.of({"i": a, "j": b}, c)

    atoms = tuple(Atom(affine(a, b, c), m) for a, b, c, m in equations)
    divisible = Atom(affine(*numerator), d)
    solutions = [(i, j) for i in range(-60, 61) for j in range(-60, 61)
                 if all(atom.holds({"i": i, "j": j}) for atom in atoms)]
    failing = [p for p in solutions if not divisible.holds({"i": p[0], "j": p[1]})]
    assert lattice_implies_divisible(atoms, divisible) == (not failing), (atoms, divisible, failing[:3])


def test_past_max_integer_checks_a_shared_subtree_on_each_box():
    """lang.scope.past_max_integer visits a subtree a derivative shares once per box: the one element ``x[2**52 s]``
    under two sums fits where ``s <= 1`` and passes MAX_INTEGER where ``s <= 3``, whichever sum comes first."""
    from tensoradbook.lang.scope import past_max_integer

    shared = Element("x", (Affine.of({"s": 2**52}),))
    for ranges in ((1, 3), (3, 1)):
        sums = [Sum("s", (Affine.constant_value(0),), (Affine.constant_value(n),), shared) for n in ranges]
        fn = Function("f", (), Binary("+", sums[0], sums[1]), {"f": (), "x": (2**32,)})
        affine, far = past_max_integer(fn)
        assert affine == shared.indices[0] and far == 3 * 2**52
    fits = Function("f", (), Sum("s", (Affine.constant_value(0),), (Affine.constant_value(1),), shared),
                    {"f": (), "x": (2**32,)})
    assert past_max_integer(fits) is None

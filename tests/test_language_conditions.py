"""Conditions in the notation: remainders are remainders, and the exact range check knows
that an else branch is read only where its condition fails.

Oracle: brute-force enumeration of the output box and the sum's range.
"""

import itertools
import math
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook.lang.expr import Affine, Atom, ExpressionError


def test_the_issues_else_branch_is_read_only_where_the_condition_fails():
    # x = 0, 1 take the then branch; the else branch reads input[3 - 2] = input[1] only
    fn = tab.parse("f[x] = if {x <= 1} then (input[x]) else (input[3 - x])", {"f": (3,), "input": (2,)})
    np.testing.assert_array_equal(fn.evaluate({"input": np.array([1.0, 2.0])}), [1.0, 2.0, 2.0])
    assert max(tab.check_gradients(fn).values()) < 1e-8


@pytest.mark.parametrize("text, message", [
    ("f[x] = if {x <= 0} then (input[x]) else (input[3 - x])", "input[3 - x] leaves input's shape (2,) at x = 1"),
    ("f[x] = if {x = 2} then (input[0]) else (input[x])", "input[x] leaves input's shape (2,) at x = 3"),
    ("f[x] = if {x % 2 = 1} then (input[0]) else (input[x / 2 + 1])", "input[x / 2 + 1] leaves input's shape (2,) at x = 2"),  # noqa: E501
])
def test_else_branches_that_do_leave_are_still_refused(text, message):
    with pytest.raises(ExpressionError, match=re.escape(message)):
        tab.parse(text, {"f": (4,), "input": (2,)})


@pytest.mark.parametrize("text, shapes, formula", [
    # a = 0 fails as a >= 1 or a <= -1: both sides
    ("f[x; y] = if {x = y} then (0) else (input[x + y - 1])", {"f": (3, 3), "input": (4,)},
     lambda v, x, y: 0 if x == y else v[x + y - 1]),
    # a % m = 0 fails as a = m q + r with r in 1..m-1
    ("f[x] = if {x % 2 = 0} then (0) else (input[x - 1])", {"f": (5,), "input": (4,)},
     lambda v, x: 0 if x % 2 == 0 else v[x - 1]),
    # ... and makes x / 2 an integer
    ("f[x] = if {x % 2 = 1} then (input[0]) else (input[x / 2])", {"f": (4,), "input": (2,)},
     lambda v, x: v[0] if x % 2 == 1 else v[x // 2]),
    # a conjunction fails where any of its atoms fails
    ("f[x; y] = if {x >= 1 and y >= 1} then (1) else (input[x + y])", {"f": (3, 3), "input": (3,)},
     lambda v, x, y: 1 if x >= 1 and y >= 1 else v[x + y]),
])
def test_else_branches_read_only_where_the_condition_fails(text, shapes, formula):
    fn = tab.parse(text, shapes)
    v = np.arange(1.0, shapes["input"][0] + 1)
    expected = [formula(v, *point) for point in itertools.product(*map(range, shapes["f"]))]
    np.testing.assert_array_equal(fn.evaluate({"input": v}).reshape(-1), expected)


# --- remainders ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, marked", [
    ("f[i] = if {i % 2 = 3} then (x[i]) else (0)", "3"),  # the issue's reproducer: true for odd i
    ("f[i] = if {i % 2 = 2} then (x[i]) else (0)", "2"),
    ("f[i] = if {i % 3 = -1} then (x[i]) else (0)", "-1"),
    ("f[i] = if {(i + 1) % 4 = 2 + 2} then (x[i]) else (0)", "2 + 2"),
])
def test_a_residue_outside_0_to_m_minus_1_is_refused(text, marked):
    with pytest.raises(ExpressionError) as info:
        tab.parse(text, {"f": (4,), "x": (4,)})
    message = str(info.value)
    assert "is not a remainder modulo" in message.split("\n")[0]
    marks = message.split("\n")[-1][2:]
    assert text[marks.index("^"):marks.index("^") + marks.count("^")] == marked


@pytest.mark.parametrize("m", [1, 2, 3, 5])
def test_every_residue_0_to_m_minus_1_means_what_it_says(m):
    for r in range(m):
        fn = tab.parse(f"f[i] = if {{i % {m} = {r}}} then (1) else (0)", {"f": (12,)})
        np.testing.assert_array_equal(fn.evaluate({}), [float(i % m == r) for i in range(12)])


def test_a_congruence_between_indices_is_still_a_congruence():
    fn = tab.parse("f[i; j] = if {i % 3 = j} then (1) else (0)", {"f": (6, 6)})
    np.testing.assert_array_equal(fn.evaluate({}), [[float((i - j) % 3 == 0) for j in range(6)] for i in range(6)])


# --- the range check against brute force, else branches included -------------------------------------------


AFFINE = st.tuples(st.integers(-2, 2), st.integers(-2, 2), st.integers(-3, 3))  # a * i + b * j + c


@st.composite
def atoms(draw):
    """(text, predicate on (i, j)) for one condition atom."""
    a, b, c = draw(AFFINE)
    text = f"({a} * i + {b} * j + ({c}))"
    relation = draw(st.sampled_from(["=", ">=", "<=", "%"]))
    if relation == "%":
        m = draw(st.integers(1, 3))
        r = draw(st.integers(0, m - 1))
        return f"{text} % {m} = {r}", lambda i, j: (a * i + b * j + c) % m == r
    holds = {"=": lambda v: v == 0, ">=": lambda v: v >= 0, "<=": lambda v: v <= 0}[relation]
    return f"{text} {relation} 0", lambda i, j: holds(a * i + b * j + c)


@st.composite
def conditions(draw):
    parts = draw(st.lists(atoms(), min_size=1, max_size=2))
    return " and ".join(text for text, _ in parts), lambda i, j: all(holds(i, j) for _, holds in parts)


@st.composite
def else_problems(draw):
    """``f[i; j] = if {c1} then (1) else (if {c2} then (READ) else (2))`` or with READ in the inner else,
    READ = ``sum{k}_L^U (x[index])``, and the points (i, j, k) at which READ is read."""
    shape = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    (c1, holds1), (c2, holds2) = draw(conditions()), draw(conditions())
    inner_then = draw(st.booleans())
    low, high = draw(st.integers(-1, 1)), draw(st.integers(-1, 2))
    a, b, c = draw(AFFINE)
    d = draw(st.integers(-1, 1))
    read = f"sum{{k}}_({low})^({high}) (x[{a} * i + {b} * j + {d} * k + ({c})])"
    inner = f"if {{{c2}}} then ({read}) else (2)" if inner_then else f"if {{{c2}}} then (2) else ({read})"
    text = f"f[i; j] = if {{{c1}}} then (1) else ({inner})"
    values = [a * i + b * j + d * k + c
              for i, j in itertools.product(range(shape[0]), range(shape[1]))
              if not holds1(i, j) and holds2(i, j) == inner_then
              for k in range(low, high + 1)]
    return text, shape, values, draw(st.integers(1, 6))


@given(else_problems())
@example(("f[i; j] = if {(1 * i + 0 * j + (-1)) <= 0} then (1) else (if {(0 * i + 0 * j + (0)) = 0} then (2) else "
          "(sum{k}_(0)^(0) (x[1 * i + 0 * j + 0 * k + (-2)])))", (3, 1), [], 1))
def test_range_check_with_else_branches_matches_brute_force(problem):
    text, shape, values, size = problem
    fits = all(0 <= v < size for v in values)
    try:
        tab.parse(text, {"f": shape, "x": (size,)})
        assert fits, text
    except ExpressionError as error:
        assert not fits, str(error)
        assert "leaves x's shape" in str(error)


# --- divisions: an index with a denominator must be an integer wherever it is read ------------------------


@pytest.mark.parametrize("text, shapes", [
    ("dx2[b] = if {b % 2 = 0} then (x2[-b / 2]) else (0)", {"dx2": (1,), "x2": (1,)}),  # the fuzzer's: -b % 2 = 0
    ("f[x] = if {x % 4 = 2} then (input[x / 2]) else (0)", {"f": (8,), "input": (4,)}),  # 4 | x - 2 => 2 | x
    ("f[x] = sum{k}_0^1 (if {k = 0} then (input[x / 2]) else (0))", {"f": (1,), "input": (1,)}),  # x = 0 only
])
def test_any_condition_that_makes_a_division_whole_guards_it(text, shapes):
    fn = tab.parse(text, shapes)
    assert tab.parse(str(fn), shapes) == fn
    args = {name: np.arange(1.0, 1.0 + math.prod(shapes[name])).reshape(shapes[name]) for name in fn.arguments}
    assert np.isfinite(fn.evaluate(args)).all()


def test_gradients_with_negated_divisions_read_back():
    """Found by the grammar fuzzer: dx2 reads x2[-dx2_0 / 2] under if {dx2_0 % 2 = 0}."""
    fn = tab.parse("f[i; p] = x2[-p] * x2[p * 2]", {"f": (3, 1), "x2": (1,)})
    for gradient in tab.derive(fn).values():
        assert tab.parse(str(gradient), gradient.shapes) == gradient


@given(st.integers(-3, 3), st.integers(-3, 3), st.integers(2, 4), st.sampled_from([None, 2, 3, 4]), st.integers(0, 3),
       st.integers(1, 8), st.integers(1, 4))
def test_divisions_are_accepted_exactly_where_they_are_whole_and_inside(a, c, d, m, r, n, size):
    """``f[i] = if {i % m = r} then (x[(a * i + c) / d]) else (0)`` against every i of the box."""
    r = r % m if m else 0
    guard = f"i % {m} = {r}" if m else "i >= 0"
    text = f"f[i] = if {{{guard}}} then (x[({a} * i + ({c})) / {d}]) else (0)"
    read = [i for i in range(n) if not m or i % m == r]
    fits = all((a * i + c) % d == 0 and 0 <= (a * i + c) // d < size for i in read)
    try:
        tab.parse(text, {"f": (n,), "x": (size,)})
        assert fits, text
    except ExpressionError as error:
        assert not fits, str(error)


# --- conditions with a denominator ------------------------------------------------------------------------


@pytest.mark.parametrize("relation", ["=", ">=", "%"])
def test_a_condition_with_a_denominator_keeps_its_exact_meaning(relation):
    """Substituting I beta (eq. 41) gives atoms such as (b - 1) / 2 = 0: true at b = 1 only, not where
    floor((b - 1) / 2) = 0, i.e. at b = 2 as well."""
    half = Affine.of({"b": 1}, -1, 2)  # (b - 1) / 2
    atom = {"=": Atom(half), ">=": Atom(half, inequality=True), "%": Atom(half, 3)}[relation]
    exact = {"=": lambda v: v == 0, ">=": lambda v: v >= 0, "%": lambda v: v == int(v) and int(v) % 3 == 0}[relation]
    b = np.arange(-8, 9)
    np.testing.assert_array_equal(atom.holds({"b": b}), [exact(Fraction(v - 1, 2)) for v in b])
    assert atom.affine.is_integral  # kept multiplied through, so it prints as the parser reads it


def test_gradients_with_conditions_from_rational_indices_read_back():
    """Found by the grammar fuzzer: dx2 printed (16 - 3 * dx2_0) / 2 >= 0, which the parser refuses."""
    fn = tab.parse("f[i] = if {-i <= -1 + 2 * i} then (1e-1 + (x2[-2 * i + 6])) else (0.5)", {"f": (4,), "x2": (7,)})
    for gradient in tab.derive(fn).values():
        assert tab.parse(str(gradient), gradient.shapes) == gradient
    assert max(tab.check_gradients(fn).values()) < 1e-8

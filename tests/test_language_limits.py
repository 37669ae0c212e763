"""Limits of the notation: what the parser accepts derives, prints and reads back; past a limit
it refuses with a caret under the token and the limit in the message, instead of a RecursionError,
an OverflowError or minutes of work later."""

import math
import sys

import numpy as np
import pytest
from hypothesis import given

import tensoradbook as tab
from tensoradbook.lang import evaluate as reference
from tensoradbook.lang.expr import (Affine, Atom, Binary, Element, ExpressionError, If, Number, Sum, Unary,
                                    free_indices, replace, substitute)
from tensoradbook.lang.evaluate import MAX_WORK
from tensoradbook.lang.function import Function
from tensoradbook.lang.limits import MAX_BOUNDS, MAX_DEPTH, MAX_NESTED_SUMS, MAX_SOURCE_CHARS
from tensoradbook.lang.printer import to_latex
from tensoradbook.lang.tokens import CUT, SHOWN_LINE
from test_printer import functions
from alarm import time_limit

SCALARS = {"f": (), "x": (), "y": ()}


def refused(text, shapes, fragment):
    """The error's first line (which must hold ``fragment``) and the text under its carets (in the window of
    the line the message shows)."""
    with pytest.raises(ExpressionError) as info:
        tab.parse(text, shapes)
    message = str(info.value)
    assert fragment in message.split("\n")[0], message
    *_, source, marks = message.split("\n")
    column = len(marks) - len(marks.lstrip()) - 2
    shown = source[2:]
    assert shown.removeprefix(CUT).removesuffix(CUT) in text and len(shown) <= SHOWN_LINE + 2 * len(CUT)
    return shown[column:column + marks.count("^")]


def round_trip(fn):
    """Derives, prints as text and LaTeX, and reads back, for the function and its gradients."""
    grads = tab.derive(fn)
    assert tab.parse(str(fn), fn.shapes) == fn
    to_latex(fn)
    for gradient in grads.values():
        str(gradient), to_latex(gradient)
    return grads


def chain(n, op="+"):
    return "f[] = " + f" {op} ".join(["x[]", "y[]"] * (n // 2) + ["x[]"] * (n % 2))


# --- depth -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    chain(MAX_DEPTH), chain(MAX_DEPTH, "*"), chain(MAX_DEPTH, "/"), chain(MAX_DEPTH, "**"),
    "f[] = " + "-" * (MAX_DEPTH - 1) + "x[]",
    "f[] = " + "sin (" * (MAX_DEPTH - 1) + "x[]" + ")" * (MAX_DEPTH - 1),
    "f[] = " + "x[] * (" * (MAX_DEPTH // 2 - 1) + "x[]" + ")" * (MAX_DEPTH // 2 - 1),
    "f[] = " + "if {0 = 0} then (" * (MAX_DEPTH - 1) + "x[]" + ") else (y[])" * (MAX_DEPTH - 1),
])
def test_everything_at_the_depth_limit_derives_prints_and_reads_back(text):
    round_trip(tab.parse(text, SCALARS))


@pytest.mark.parametrize("text, marked", [
    (chain(MAX_DEPTH + 1), "+"),
    (chain(501), "+"),  # the first report: RecursionError in derive and str
    ("f[] = " + "-" * 500 + "x[]", "-"),  # the report's other case
    ("f[] = " + "-" * 5000 + "x[]", "-"),  # read in a loop: refused by depth, not by Python's recursion
    ("f[] = " + "sin (" * MAX_DEPTH + "x[]" + ")" * MAX_DEPTH, "sin"),
    (chain(MAX_DEPTH + 1, "**"), "**"),
])
def test_deeper_trees_are_refused_with_a_caret(text, marked):
    assert refused(text, SCALARS, f"more than {MAX_DEPTH} levels deep") == marked


def test_the_caret_is_under_the_operator_past_the_limit():
    text = chain(MAX_DEPTH + 1)
    with pytest.raises(ExpressionError) as info:
        tab.parse(text, SCALARS)
    *_, source, marks = str(info.value).split("\n")
    assert source[marks.index("^"):] == text[text.rindex("+"):]  # the line's end is in its window


def test_minus_signs_in_an_index_need_no_recursion():
    fn = tab.parse("f[i] = x[" + "-" * 5001 + "(-i)]", {"f": (3,), "x": (3,)})
    assert str(fn) == "f[i] = x[i]"


@pytest.mark.parametrize("text, marked", [
    ("f[] = " + "(" * 5000 + "1" + ")" * 5000, "("),
    ("f[] = x[" + "(" * 5000 + "0" + ")" * 5000 + "]", "("),
    ("f[] = " + " ** ".join(["x[0]"] * 5000), "**"),
    ("f[] = " + "if {0 = 0} then x[0] else " * 3000 + "x[0]", "x"),  # x[0] of the 101st if is 101 deep
])
def test_deep_nesting_is_refused_with_a_caret(text, marked):
    assert refused(text, {"f": (), "x": (1,)}, f"nested more than {MAX_DEPTH} levels deep") == marked


def test_depth_limit_holds_with_little_stack_left():
    """The parser refuses past MAX_DEPTH before Python's recursion limit, even called from deep code."""
    def nested(levels, text):
        return tab.parse(text, SCALARS) if levels == 0 else nested(levels - 1, text)

    levels = sys.getrecursionlimit() // 4
    assert nested(levels, chain(MAX_DEPTH, "**")) == tab.parse(chain(MAX_DEPTH, "**"), SCALARS)
    with pytest.raises(ExpressionError, match=f"more than {MAX_DEPTH} levels deep"):
        nested(levels, chain(MAX_DEPTH + 1, "**"))


# --- nested sums ---------------------------------------------------------------------------------------------


def nested_sums(n):
    """Sums whose bounds depend on the enclosing sum's index: Fourier-Motzkin's hard case."""
    names = [f"k{m}" for m in range(n)]
    text = "x[" + " + ".join(["i"] + names) + "]"
    for m in reversed(range(n)):
        text = f"sum{{{names[m]}}}_0^({'i' if m == 0 else names[m - 1]} + 1) ({text})"
    return "f[i] = " + text, {"f": (3,), "x": ((n + 4) ** 2,)}


def test_nested_sums_at_the_limit_derive_and_read_back():
    fn = tab.parse(*nested_sums(MAX_NESTED_SUMS))
    # reading a derivative back runs the exact range check on its max/min bounds (once 24 s for 8 sums): the
    # alarm catches a return to minutes without failing a busy machine
    with time_limit():
        grads = round_trip(fn)
        assert tab.parse(str(grads["x"]), grads["x"].shapes) == grads["x"]


def test_second_derivatives_of_nested_sums_derive_or_are_refused_with_the_limit():
    """Found by the robustness sweep: the second derivative at MAX_NESTED_SUMS ran for minutes (its
    Fourier-Motzkin rows grow doubly exponentially with the sums' max/min bounds); now refused at once."""
    second = tab.derive(tab.derive(tab.parse(*nested_sums(4)))["x"])
    for g in second.values():
        assert tab.parse(str(g), g.shapes) == g
    for n in (5, MAX_NESTED_SUMS):
        gradient = tab.derive(tab.parse(*nested_sums(n)))["x"]
        with time_limit(), pytest.raises(ExpressionError, match=r"more than 20000 \(MAX_GENERATED_BOUNDS\)"):
            tab.derive(gradient)


def test_more_nested_sums_are_refused_with_a_caret():
    text, shapes = nested_sums(MAX_NESTED_SUMS + 1)
    assert refused(text, shapes, f"more than {MAX_NESTED_SUMS} nested sums (MAX_NESTED_SUMS)") == "sum"
    assert text.rindex("sum") == len(text) - text[::-1].index("mus") - 3


# --- trees deeper than Python's recursion limit: derivatives of trees at the limit are deeper still ----------


I, ONE = Affine.index("i"), Affine.constant_value(1)
SHAPES = {"f": (2,), "x": (2,), "w": (2,), "y": ()}


def deep(depth, make, leaf="x", i=I):
    """``make`` applied ``depth - 1`` times to ``leaf[i]``; ``i`` is also the index in ``make``'s bounds and
    conditions."""
    node = Element(leaf, (i,))
    for _ in range(depth - 1):
        node = make(node, i)
    return node


DEEP = [
    lambda node, i: Binary("+", node, Element("y", ())),
    lambda node, i: Binary("**", Element("y", ()), node),
    lambda node, i: Unary("neg", node),
    lambda node, i: Unary("sin", node),
    lambda node, i: If((Atom(i, inequality=True),), node, Number(1.5)),
]


@pytest.mark.parametrize("make", DEEP + [lambda node, i: Sum("k", (i,), (Affine.constant_value(0),), node)])
def test_trees_deeper_than_the_recursion_limit_compare_hash_print_and_walk(make):
    depth = 2 * sys.getrecursionlimit()
    body = deep(depth, make)
    assert body == deep(depth, make) and hash(body) == hash(deep(depth, make))
    assert body != deep(depth - 1, make) and body != deep(depth, make, "w")
    fn = Function("f", ("i",), body, SHAPES)
    assert str(fn).startswith("f[i] = ") and to_latex(fn).endswith("$")
    assert repr(fn).startswith("Function(name='f', indices=('i',), body=") and repr(body).count("(") > depth
    assert free_indices(body) == {"i"}
    assert replace(body, Element("x", (I,)), Element("w", (I,))) == deep(depth, make, "w")
    assert substitute(body, {"i": ONE}) == deep(depth, make, i=ONE)


@pytest.mark.parametrize("make", DEEP)
def test_the_reference_evaluator_needs_no_recursion(make):
    fn = Function("f", ("i",), deep(2 * sys.getrecursionlimit(), make), SHAPES)
    assert np.all(np.isfinite(fn.evaluate({"x": [0.5, 0.25], "y": 0.5})))


def test_derivatives_of_the_deepest_functions_print_and_evaluate():
    """Gradients of a depth-MAX_DEPTH function are about twice as deep, second derivatives deeper still."""
    fn = tab.parse("f[] = " + "sinh (" * (MAX_DEPTH - 2) + "x[] * y[]" + ")" * (MAX_DEPTH - 2), SCALARS)
    for gradient in round_trip(fn).values():
        for second in tab.derive(gradient).values():
            str(second), to_latex(second)
            assert np.isfinite(second.evaluate({name: 0.01 for name in second.arguments}))


# --- the reference evaluator's work ------------------------------------------------------------------------


@pytest.mark.parametrize("check", [lambda fn: fn.evaluate({"x": np.ones(3)}), tab.check_gradients])
def test_the_reference_evaluator_refuses_work_of_minutes_at_once(check):
    fn = tab.parse("f[i] = sum{k}_0^100000000000 (x[i])", {"f": (3,), "x": (3,)})
    runs = []
    evaluate = reference._evaluate
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reference, "_evaluate", lambda *call: runs.append(call) or evaluate(*call))
        with pytest.raises(ExpressionError, match=r"would visit up to 2.56e\+13 element-terms .* MAX_WORK = 1e\+08; "
                                                  r"use smaller shapes or sum bounds, or a compiled kernel"):
            check(fn)
    assert runs == [], "refused before the evaluator ran a single term"


def test_work_at_the_limit_is_evaluated():
    n = MAX_WORK // 256 - 1  # a one-element output: the evaluator's overhead per sum index value counts
    fn = tab.parse(f"f[] = sum{{k}}_1^{n} (x[])", {"f": (), "x": ()})
    assert fn.work <= MAX_WORK
    with time_limit():
        assert fn.evaluate({"x": 1.0}) == n


def evaluator_runs(fn, args) -> int:
    """Oracle: the sum bodies the evaluator actually runs over the grid, counted as it runs them."""
    runs = []
    evaluate = reference._evaluate

    def counted(*call):
        runs.append(call[0])
        return evaluate(*call)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(reference, "_evaluate", counted)
        fn.evaluate(args)
    return len(runs)


@given(functions())
def test_work_bounds_the_evaluators_passes(fn):
    runs = evaluator_runs(fn, {name: np.ones(fn.shapes[name]) for name in fn.arguments})
    size = math.prod(fn.shapes["f"])
    assert size + max(size, 256) * (runs - 1) <= fn.work


POOLING = "f[i; j] = max{p}_0^1 (max{q}_0^1 (x[2 * i + p; 2 * j + q]))", {"f": (32, 32), "x": (64, 64)}


def test_the_gradient_of_a_max_pooling_is_evaluated_and_checked():
    """Found by the robustness sweep: the gradient's sums range over one window per element,
    ``ceil((dx_1 - 1) / 2) .. floor(dx_1 / 2)``, yet the evaluator looped over all 32 windows and its
    estimate said 1.5e10 element-terms, refusing it; now both take each element's own range."""
    fn = tab.parse(*POOLING)
    grad = tab.derive(fn)["x"]
    rng = np.random.default_rng(0)
    x, df = rng.normal(size=(64, 64)), rng.normal(size=(32, 32))
    windows = x.reshape(32, 2, 32, 2).transpose(0, 2, 1, 3).reshape(32, 32, 4)
    expected = np.zeros((32, 2, 32, 2))
    p, q = np.divmod(windows.argmax(axis=2), 2)
    expected[np.arange(32)[:, None], p, np.arange(32)[None, :], q] = df
    np.testing.assert_array_equal(grad.evaluate({"x": x, "df": df}), expected.reshape(64, 64))
    runs = evaluator_runs(grad, {"x": x, "df": df})
    assert 64 * 64 * runs <= grad.work <= MAX_WORK // 100
    assert tab.check_gradients(fn)["x"] < 1e-6


# --- index arithmetic in 64 bits -----------------------------------------------------------------------


@pytest.mark.parametrize("text, marked, fragment", [
    # the reported cases: OverflowError / numba TypingError later
    ("f[i] = if {i % 100000000000000000000000 = 0} then (x[i]) else (0)", "100000000000000000000000",
     "the integer 10000000...(24 digits) is too large: integers are below MAX_INTEGER = 2**53"),
    ("f[i] = sum{k}_0^" + str(10**41) + " (x[i])", str(10**41), "the integer 10000000...(42 digits) is too large"),
    ("f[i] = x[1000000 * 1000000 * 1000000 * i - 1000000 * 1000000 * 1000000 * i + i]", "1000000 * 1000000 * 1000000",
     "1000000 * 1000000 * 1000000 computes with 1e+18: index arithmetic stays below MAX_INTEGER = 2**53"),
    ("f[i] = x[i / 9007199254740991 / 2]", "i / 9007199254740991 / 2", "computes with 1.8e+16"),
    # values reached on the box: 3002399751580331 * 3 = 2**53 + 1
    ("f[i] = if {3002399751580331 * i = 1} then (x[i]) else (0)", "3002399751580331 * i = 1",
     "3002399751580331 * i = 1 can reach 9.01e+15 on the output's box and the sums' ranges"),
    ("f[i] = sum{k}_0^(3002399751580331 * i) (x[i])", "3002399751580331 * i", "can reach 9.01e+15"),
    ("f[i] = sum{k}_0^4503599627370496 (sum{j}_0^(k + k) (x[i]))", "k + k", "can reach 9.01e+15"),
])
def test_index_arithmetic_beyond_64_bits_is_refused_with_a_caret(text, marked, fragment):
    assert refused(text, {"f": (4,), "x": (4,)}, fragment) == marked


@pytest.mark.parametrize("target", ["numpy", "numba", "cuda"])
def test_index_arithmetic_just_within_the_limit_compiles(target):
    # |constant| + |coefficient| * 3 = 2**53 - 4 bounds every partial sum; true at i = 1; the kernels agree
    text = "f[i] = if {2251799813685247 * i - 2251799813685247 = 0} then (x[i]) else (0) + sum{k}_(i)^(i + 1) (x[i])"
    fn = tab.parse(text, {"f": (4,), "x": (4,)})
    args = {"x": np.array([1.0, 2.0, 3.0, 4.0])}
    np.testing.assert_array_equal(fn.evaluate(args), [2, 6, 6, 8])
    np.testing.assert_array_equal(fn.compile(target)(args), fn.evaluate(args))
    grads = tab.derive(fn)
    np.testing.assert_array_equal(grads.compile(target)(args, np.ones(4))["x"], grads.evaluate(args, np.ones(4))["x"])


def test_long_bound_lists_are_refused_with_a_caret():
    """Found by the grammar fuzzer: a max list of thousands of bounds made derive run for minutes."""
    items = [f"i - {m}" for m in range(MAX_BOUNDS + 1)]
    text = f"f[i] = sum{{k}}_(max [{'; '.join(items)}])^3 (x[k])"
    assert refused(text, {"f": (4,), "x": (4,)}, f"more than {MAX_BOUNDS} bounds in one max list") == "i"
    fn = tab.parse(text.replace(f"; {items[-1]}", ""), {"f": (4,), "x": (4,)})
    with time_limit():
        grads = round_trip(fn)
    assert set(grads) == {"x"}


def test_text_past_the_source_limit_is_refused_naming_the_limit_and_its_size():
    """tab.parse once read text of any size (the command line a file of gigabytes)."""
    with pytest.raises(ExpressionError, match=r"^the text has 4,000,001 characters: a function or program is at most "
                       r"MAX_SOURCE_CHARS = 4,000,000 characters \(tensoradbook.lang.limits\)$"):
        tab.parse("f[] = x[]" + " " * (MAX_SOURCE_CHARS - 8), SCALARS)
    assert tab.parse("f[] = x[]" + " " * (MAX_SOURCE_CHARS - 9), SCALARS) == tab.parse("f[] = x[]", SCALARS)


def test_a_long_program_is_read_in_time_linear_in_its_length():
    """Each definition was checked against every one below it: 25,000 definitions took minutes."""
    lines = ["a0[i] = x[i]", *(f"a{k}[i] = a{k - 1}[i] * x[i] + 1" for k in range(1, 25_000))]
    shapes = {f"a{k}": (3,) for k in range(len(lines))} | {"x": (3,)}
    with time_limit():
        program = tab.parse("\n".join(lines), shapes)
    assert len(program.definitions) == len(lines)
    with pytest.raises(ExpressionError, match="line 2: 'a1' is defined below, on line 3"):
        tab.parse("\n".join([lines[0], lines[2], lines[1]]), shapes)

"""Limits of the notation (issue 10): what the parser accepts derives, prints and reads back; past a limit
it refuses with a caret under the token and the limit in the message, instead of a RecursionError,
an OverflowError or minutes of work later."""

import sys
import time

import pytest

import tensoradbook as tab
from tensoradbook.expr import ExpressionError
from tensoradbook.parser import MAX_DEPTH, MAX_NESTED_SUMS
from tensoradbook.printer import to_latex

SCALARS = {"f": (), "x": (), "y": ()}


def refused(text, shapes, fragment):
    """The error's first line (which must hold ``fragment``) and the text under its carets."""
    with pytest.raises(ExpressionError) as info:
        tab.parse(text, shapes)
    message = str(info.value)
    assert fragment in message.split("\n")[0], message
    *_, source, marks = message.split("\n")
    column = len(marks) - len(marks.lstrip()) - 2
    assert source[2:] == text
    return text[column:column + marks.count("^")]


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
    (chain(501), "+"),  # the reproducer: RecursionError in derive and str
    ("f[] = " + "-" * 500 + "x[]", "-"),  # the other reproducer
    ("f[] = " + "sin (" * MAX_DEPTH + "x[]" + ")" * MAX_DEPTH, "sin"),
    (chain(MAX_DEPTH + 1, "**"), "**"),
])
def test_deeper_trees_are_refused_with_a_caret(text, marked):
    assert refused(text, SCALARS, f"more than {MAX_DEPTH} levels deep") == marked


def test_the_caret_is_under_the_operator_past_the_limit():
    text = chain(MAX_DEPTH + 1)
    with pytest.raises(ExpressionError) as info:
        tab.parse(text, SCALARS)
    marks = str(info.value).split("\n")[-1]
    assert marks.index("^") - 2 == text.rindex("+")


def test_minus_signs_in_an_index_need_no_recursion():
    fn = tab.parse("f[i] = x[" + "-" * 5001 + "(-i)]", {"f": (3,), "x": (3,)})
    assert str(fn) == "f[i] = x[i]"


@pytest.mark.parametrize("text, marked", [
    ("f[] = " + "(" * 5000 + "1" + ")" * 5000, "("),
    ("f[] = x[" + "(" * 5000 + "0" + ")" * 5000 + "]", "("),
])
def test_deep_nesting_is_refused_with_a_caret(text, marked):
    assert refused(text, {"f": (), "x": (1,)}, f"nested more than {MAX_DEPTH} levels deep") == marked


def test_depth_limit_holds_with_little_stack_left():
    """The parser refuses past MAX_DEPTH before Python's recursion limit, even called from deep code."""
    def nested(levels):
        return tab.parse(chain(MAX_DEPTH, "**"), SCALARS) if levels == 0 else nested(levels - 1)

    nested(sys.getrecursionlimit() // 4)


# --- nested sums ---------------------------------------------------------------------------------------------


def nested_sums(n):
    """Sums whose bounds depend on the enclosing sum's index: Fourier-Motzkin's hard case."""
    names = [f"k{m}" for m in range(n)]
    text = "x[" + " + ".join(["i"] + names) + "]"
    for m in reversed(range(n)):
        text = f"sum{{{names[m]}}}_0^({'i' if m == 0 else names[m - 1]} + 1) ({text})"
    return "f[i] = " + text, {"f": (3,), "x": ((n + 4) ** 2,)}


def test_nested_sums_at_the_limit_derive_in_seconds():
    fn = tab.parse(*nested_sums(MAX_NESTED_SUMS))
    start = time.perf_counter()
    grads = round_trip(fn)
    # reading a derivative back runs the exact range check on its max/min bounds (was 24 s for 8 sums)
    assert tab.parse(str(grads["x"]), grads["x"].shapes) == grads["x"]
    assert time.perf_counter() - start < 20


def test_more_nested_sums_are_refused_with_a_caret():
    text, shapes = nested_sums(MAX_NESTED_SUMS + 1)
    assert refused(text, shapes, f"more than {MAX_NESTED_SUMS} nested sums (MAX_NESTED_SUMS)") == "sum"
    assert text.rindex("sum") == len(text) - text[::-1].index("mus") - 3

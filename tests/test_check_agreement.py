"""The visible checks agree with grading: a student who passes an exercise's visible check passes its hidden tests,
unless they wrote for the visible cases alone.

The exercise files (``course/exercises/``) give some parts hidden tests, which only the autograder runs. For every
such part of every chapter:

* the hidden tests call the same check function as the visible call, on other data, so what they test is what
  the visible check tests, on more cases (:func:`test_hidden_tests_call_the_visible_check`);
* the instructor's solution passes both;
* a catalogue of plausible wrong answers (:data:`MUTANTS`: the typical slips of each exercise, a size typed, a
  case left out, the answer right only for inputs like the visible one) is run through both, and every mutant that
  fails a hidden test fails the visible check too. Where one did not, the check was strengthened (it tries inputs
  of its own besides the exercise's, as the hidden tests do), never the hidden test weakened;
* one more mutant per part answers exactly the calls the visible check makes, with the solution's own results
  recorded, and something stale otherwise: it passes the visible check and fails the hidden tests, which is what
  the hidden tests are for (:func:`test_hard_coding_the_visible_cases_fails_the_hidden_tests`).

Chapter 12's catalogue is that of tests/test_exercises_build.py (the same form: the text of the solution and what
replaces it), which asserts more there: every mutant fails the visible check.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from classroom import assignments

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the chapter 12 catalogue beside this file

#: stem -> answer -> what the mutant gets wrong -> (text of the solution, what replaces it), or the whole code that
#: replaces the solution. Each fails a hidden test unless it says otherwise; the test says which fail the visible
#: check (all of them must that fail a hidden one).
MUTANTS: dict[str, dict[str, dict[str, tuple[str, str] | str]]] = {
    "03_tensor_functions": {"vec_index": {
        "row-major: the last index fastest": ("zip(shape, index)", "zip(reversed(shape), reversed(index))"),
        "counted from 1, as eq. 4 counts": ("return position", "return position + 1"),
        "the stride grown before it is used (s_0 = N_0)": (
            "position += i * stride\n        stride *= n", "stride *= n\n        position += i * stride"),
        "the strides from the sizes less one": ("stride *= n", "stride *= n - 1"),
        "the last index left out (right at (1, 2, 0))": ("zip(shape, index)", "zip(shape[:-1], index)"),
        "three dimensions only, as in the example": (
            "def vec_index(shape, index):\n"
            "    return index[0] + shape[0] * index[1] + shape[0] * shape[1] * index[2]\n"),
        "the first two indices only (right at (1, 2, 0))": (
            "def vec_index(shape, index):\n"
            "    return index[0] + shape[0] * index[1]\n"),
    }},
    "04a_integer_equations": {"bezout": {
        "divides before it tests b (fails for b = 0)": (
            "def bezout(a, b):\n"
            "    x0, y0, x1, y1 = 1, 0, 0, 1\n"
            "    q, r = divmod(a, b)\n"
            "    while r:\n"
            "        a, b = b, r\n"
            "        x0, y0, x1, y1 = x1, y1, x0 - q * x1, y0 - q * y1\n"
            "        q, r = divmod(a, b)\n"
            "    return b, x1, y1\n"),
        "a < b swapped, x and y not swapped back": ("x0, y0, x1, y1 = 1, 0, 0, 1",
                                                    "x0, y0, x1, y1 = 1, 0, 0, 1\n    if a < b:\n        a, b = b, a"),
        "the zero case with x and y the wrong way round": (
            "def bezout(a, b):\n"
            "    if b == 0:\n"
            "        return a, 0, 1\n"
            "    g, x, y = bezout(b, a % b)\n"
            "    return g, y, x - (a // b) * y\n"),
        "the sign of the update": ("x0 - q * x1, y0 - q * y1", "x0 + q * x1, y0 + q * y1"),
        "the coefficients of the last row": ("return a, x0, y0", "return a, x1, y1"),
        "g from the last remainder": ("return a, x0, y0", "return b, x0, y0"),
        "the coefficients searched for between -100 and 100": (
            "def bezout(a, b):\n"
            "    import math\n"
            "    g = math.gcd(a, b)\n"
            "    for x in range(-100, 101):\n"
            "        for y in range(-100, 101):\n"
            "            if a * x + b * y == g:\n"
            "                return g, x, y\n"
            "    return g, 0, 0\n"),
    }},
    "06a_kernels": {"dy_element": {
        "the size typed": ("range(x.shape[0])", "range(3)"),
        "the smaller size of x (3 here)": ("range(x.shape[0])", "range(min(x.shape))"),
        "x's other size less 2 (3 here)": ("range(x.shape[0])", "range(x.shape[1] - 2)"),
        "numpy's squeeze (fails where a size is 1)": (
            "def dy_element(k, j, x, df):\n"
            "    import numpy as np\n"
            "    return float(np.squeeze(df)[:, j] @ np.squeeze(x)[:, k])\n"),
        "one term too few": ("range(x.shape[0])", "range(x.shape[0] - 1)"),
        "x read transposed": ("x[i, k]", "x[k, i]"),
        "df read transposed": ("df[i, j]", "df[j, i]"),
    }},
}


def _chapter12_mutants() -> dict:
    """Chapter 12's catalogue, kept with its other tests; none (and so a failing catalogue test naming chapter 12)
    where that module no longer has one."""
    try:
        from test_exercises_build import MUTANTS as chapter12  # noqa: PLC0415 -- it builds chapter 12's solutions
    except ImportError:
        return {}
    return chapter12


MUTANTS["12_build_it_yourself"] = _chapter12_mutants()

#: The fewest mutants a part with hidden tests has in its catalogue.
MIN_MUTANTS = 3


# --- the table's parts with hidden tests, run as nbgrader's source notebook runs them -------------------------------

HIDDEN = [(assignment, exercise, part) for assignment in assignments.ASSIGNMENTS for exercise in assignment.exercises
          for part in exercise.parts if part.hidden]


def part_id(item) -> str:
    assignment, exercise, part = item
    return f"{assignment.stem} ex{exercise.number}{part.label} {part.answer}"


def namespace(assignment: assignments.Assignment, replace: dict | None = None) -> dict:
    """The assignment's setup, given code and solutions run in one namespace, as the source notebook runs them;
    ``replace`` maps an answer's name to the code that takes its solution's place."""
    scope: dict = {"__name__": f"{assignment.stem}_answers"}
    with contextlib.redirect_stdout(io.StringIO()):  # given code may print (the notebook shows it)
        exec(assignment.setup, scope)  # noqa: S102 -- the exercise files
        for exercise in assignment.exercises:
            if exercise.given:
                exec(exercise.given, scope)  # noqa: S102
            for part in exercise.parts:
                exec((replace or {}).get(part.answer, part.solution), scope)  # noqa: S102
    return scope


def visible_call(part: assignments.Part) -> str:
    return part.call


def passes_visible(part: assignments.Part, scope: dict) -> bool:
    """The graded cell's visible check: its result is right (an error in the student's code fails it too)."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return bool(eval(visible_call(part), dict(scope)))  # noqa: S307 -- the exercise files
    except Exception:  # noqa: BLE001 -- the cell fails, as it would in grading
        return False


def passes_hidden(part: assignments.Part, scope: dict) -> bool:
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(part.hidden, dict(scope))  # noqa: S102 -- the exercise files
    except Exception:  # noqa: BLE001 -- an assertion, or an error in the student's code: the points are lost
        return False
    return True


def mutant_code(part: assignments.Part, mutant) -> str:
    if isinstance(mutant, str):
        return mutant
    old, new = mutant
    assert part.solution.count(old) == 1, f"{part.answer}: {old!r} is not once in the solution"
    return part.solution.replace(old, new)


def check_names(code: str) -> set[str]:
    return {call.func.id for call in assignments.check_calls(code)}


# --- the structure: hidden tests call the visible check ------------------------------------------------------------

@pytest.mark.parametrize("item", HIDDEN, ids=part_id)
def test_hidden_tests_call_the_visible_check(item):
    """Every hidden test calls a check function, and only check functions that the visible call calls: a hidden
    test tests nothing that the visible check does not, only on other data."""
    _, _, part = item
    visible, hidden = check_names(visible_call(part)), check_names(part.hidden)
    assert hidden, f"{part.answer}: the hidden tests call no check function"
    assert hidden <= visible, f"{part.answer}: the hidden tests call {sorted(hidden - visible)}, the visible one not"


@pytest.mark.parametrize("item", HIDDEN, ids=part_id)
def test_the_solution_passes_visible_and_hidden_tests(item):
    assignment, _, part = item
    scope = namespace(assignment)
    assert passes_visible(part, scope), str(eval(visible_call(part), dict(scope)))  # noqa: S307
    assert passes_hidden(part, scope)


@pytest.mark.parametrize("item", HIDDEN, ids=part_id)
def test_every_part_with_hidden_tests_has_a_catalogue(item):
    assignment, _, part = item
    catalogue = MUTANTS.get(assignment.stem, {}).get(part.answer, {})
    assert len(catalogue) >= MIN_MUTANTS, f"{part_id(item)}: {len(catalogue)} mutants, at least {MIN_MUTANTS} wanted"


def test_the_catalogue_names_parts_that_exist():
    parts = {(a.stem, p.answer) for a, _, p in HIDDEN}
    named = {(stem, answer) for stem, answers in MUTANTS.items() for answer in answers}
    assert named <= parts, f"mutants of parts without hidden tests: {sorted(named - parts)}"


# --- the mutants ---------------------------------------------------------------------------------------------------

MUTANT_CASES = [(assignment, exercise, part, what) for assignment, exercise, part in HIDDEN
                for what in MUTANTS.get(assignment.stem, {}).get(part.answer, {})]


@pytest.mark.parametrize("case", MUTANT_CASES, ids=lambda c: f"{part_id(c[:3])}: {c[3]}")
def test_a_mutant_that_fails_grading_fails_the_visible_check(case):
    assignment, _, part, what = case
    code = mutant_code(part, MUTANTS[assignment.stem][part.answer][what])
    scope = namespace(assignment, {part.answer: code})
    visible, hidden = passes_visible(part, scope), passes_hidden(part, scope)
    assert not (visible and hidden), f"{what}: passes the visible and the hidden tests, so it is no wrong answer"
    assert hidden or not visible, f"{what}: passes the visible check but fails the hidden tests: strengthen the check"


# --- hard-coding the visible cases ---------------------------------------------------------------------------------

def _key(value):
    """A hashable stand-in for an argument, equal for equal values (arrays by their bytes)."""
    if isinstance(value, np.ndarray):
        return ("array", value.shape, np.asarray(value).tobytes())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((repr(k), _key(v)) for k, v in value.items()))
    try:
        hash(value)
    except TypeError:
        return ("repr", repr(value))
    return value


def hard_coded(function, scope: dict, part: assignments.Part):
    """``function`` replaced by a table of the calls the visible check makes of it, with its results; any other
    call gets the result of the first (what a student who wrote for the visible cases would return)."""
    table: dict = {}

    @functools.wraps(function)
    def recording(*args, **kwargs):
        result = function(*args, **kwargs)
        table.setdefault(_key((args, kwargs)), result)
        return result

    assert passes_visible(part, {**scope, part.answer: recording})
    first = next(iter(table.values()))

    @functools.wraps(function)  # the same parameters, which some checks read
    def lookup(*args, **kwargs):
        return table.get(_key((args, kwargs)), first)

    return lookup


@pytest.mark.parametrize("item", HIDDEN, ids=part_id)
def test_hard_coding_the_visible_cases_fails_the_hidden_tests(item):
    """The one way to pass the visible check and fail grading: the answers to exactly the visible check's calls."""
    assignment, _, part = item
    scope = namespace(assignment)
    assert callable(scope[part.answer]), "the parts with hidden tests are functions the student writes"
    scope[part.answer] = hard_coded(scope[part.answer], scope, part)
    assert passes_visible(part, scope), "the visible check's calls answered from the table"
    assert not passes_hidden(part, scope), "the hidden tests try no input beyond the visible check's"


def test_the_checks_own_inputs_differ_from_the_hidden_tests():
    """The inputs a check tries of its own are not the hidden tests' (those stay unknown to a student who reads the
    library's source), but of the same kinds."""
    from tensoradbook.exercises.ch04a_integer_equations import BEZOUT_PAIRS
    from tensoradbook.exercises.ch05_derivatives import VEC_SHAPES

    hidden = {part.answer: part.hidden for _, _, part in HIDDEN}
    pairs = {tuple(map(int, pair)) for pair in re.findall(r"\((\d+), (\d+)\)", hidden["bezout"])}
    assert pairs and not pairs & set(BEZOUT_PAIRS)
    listed = re.search(r"for shape in (\[.*?\]):", hidden["vec_index"]).group(1)
    assert not set(ast.literal_eval(listed)) & set(VEC_SHAPES)

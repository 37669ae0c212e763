"""Checks that cannot be mined for the answer, and chapters that do not print it.

The exercises are graded by nbgrader, so a check must not be an oracle: a student who tries answer after answer
may learn right or wrong, and what is wrong with the answer tried, but nothing that finds the right one faster
than trying. Every check function exported by :mod:`tensoradbook.exercises` is run on the exercises of the
exercise files (``course/exercises/``: each Part's check call, with the right answer from the instructor's solution run
after the assignment's setup and the exercises' given code) and on wrong answers drawn around the right one with
a fixed seed:

* the feedback on a wrong answer (``str(result)`` without the exercise's title, which is its data) never shows
  the expected answer: its text, its distinctive numbers, its entries in order;
* where the answers are few (a count, a letter, an order, a set of indices, a small matrix), the feedback, with
  the student's own answer masked, is the same for every wrong answer, or depends only on what the student can
  compute from their own answer and the exercise's data (:func:`count_label`, :func:`pooling_label` and the
  comments below say what, and why).

And no stored output of a chapter (stream text, text/plain, text/html, text/markdown) shows an exercise's expected
answer where it is distinctive (:func:`tokens`), and no line of one is accepted by a check that takes text; the
coincidences that cannot be avoided are in :data:`ALLOWED`, each with its reason.

Nor does any text a student reads while solving hold an instructor's solution (the last section says how each
kind of solution is looked for, and why): no docstring of the check modules or of a library object an exercise
names holds a line of a solution, a distinctive value of an answer, or a formula that passes its check; no
chapter cell or docstring is a near-copy of a code solution; no chapter defines a function that an exercise asks
for; no string, code span or line of a chapter's cells passes a check that takes text.
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import functools
import inspect
import io
import itertools
import json
import random
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import tensoradbook as tab
from classroom import assignments, source
from tensoradbook import chaining as jc
from tensoradbook import exercises as ex
from tensoradbook import inverse as ia

REPO = Path(__file__).resolve().parents[1]
SEED = 24


# --- the exercises of the exercise files --------------------------------------------------------------------


@dataclass
class Case:
    """One check call of the exercise files: ``call`` has ``__answer__`` where the answer goes."""

    name: str
    check: str
    call: str
    namespace: dict = field(repr=False)
    right: object = field(repr=False)

    def __call__(self, answer):
        return eval(self.call, {**self.namespace, "__answer__": answer})  # noqa: S307 -- the exercise files

    def data(self) -> dict:
        """The check's arguments by name (the exercise's data), without the answer."""
        node = ast.parse(self.call, mode="eval").body

        def value(arg):
            return eval(compile(ast.Expression(arg), self.name, "eval"), self.namespace)  # noqa: S307

        args = [None if isinstance(a, ast.Name) and a.id == "__answer__" else value(a) for a in node.args]
        bound = inspect.signature(getattr(ex, self.check)).bind(*args, **{k.arg: value(k.value) for k in node.keywords})
        bound.apply_defaults()
        return dict(bound.arguments)


def _answer_call(part: assignments.Part, scope: dict) -> tuple[str, object]:
    """The call with ``__answer__`` for the answer, and the right answer."""
    return part.call_on("__answer__"), scope[part.answer]


def _cases() -> list[Case]:
    cases = []
    for assignment in assignments.ASSIGNMENTS:
        namespace: dict = {}
        with contextlib.redirect_stdout(io.StringIO()):  # given code may print (the notebook shows it)
            exec(assignment.setup, namespace)  # noqa: S102 -- the exercise files
            for exercise in assignment.exercises:
                if exercise.given:
                    exec(exercise.given, namespace)  # noqa: S102
                for part in exercise.parts:
                    scope = dict(namespace)
                    exec(part.solution, scope)  # noqa: S102
                    call, right = _answer_call(part, scope)
                    check = ast.parse(call, mode="eval").body.func.id
                    name = f"{assignment.stem} ex{exercise.number}{part.label}"
                    cases.append(Case(name, check, call, scope, right))
    return cases


CASES = _cases()


def shown(result) -> str:
    """What a wrong answer's feedback shows beyond the exercise's title (the exercise's own data)."""
    assert not result.ok and not result.pending and result.problems, str(result)
    return str(result).replace(result.exercise, "", 1)


# --- what an answer looks like in text ----------------------------------------------------------------------

NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])")


def numbers_in(text: str) -> list[float]:
    return [float(m.group()) for m in NUMBER.finditer(text)]


def leaves(value) -> list:
    """The numbers of an answer, in order (tuples, lists, arrays, dicts' values)."""
    if isinstance(value, dict):
        return [v for item in value.values() for v in leaves(item)]
    if isinstance(value, np.ndarray):
        return value.ravel().tolist()
    if isinstance(value, (tuple, list)):
        return [v for item in value for v in leaves(item)]
    if isinstance(value, (int, float, np.integer, np.floating, Fraction)) and not isinstance(value, bool):
        return [float(value)]
    return []


def rebuilt(value, numbers: list):
    """``value`` with its numbers (in :func:`leaves` order) replaced by ``numbers``, which it consumes."""
    if isinstance(value, dict):
        return {k: rebuilt(v, numbers) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return np.array([numbers.pop(0) for _ in range(value.size)]).reshape(value.shape)
    if isinstance(value, (tuple, list)):
        return type(value)(rebuilt(item, numbers) for item in value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(numbers.pop(0))
    if isinstance(value, (float, np.floating, Fraction)):
        return float(numbers.pop(0))
    return value


def distinctive(v: float) -> bool:
    """A number unlikely to turn up by chance: 10 or more, or not a fraction of a small denominator (1/3 and
    0.25 are everywhere)."""
    return abs(v) >= 10 or abs(float(Fraction(v).limit_denominator(12)) - v) > 1e-9


def number_pattern(v: float) -> str:
    if float(v).is_integer():
        return rf"(?<![\w.]){int(v)}(?![\w.])"
    forms = {f"{v:.6g}", f"{v:.4g}"}
    return "|".join(rf"(?<![\w.]){re.escape(form)}" for form in forms)


def has_sequence(text: str, sequence: list[float]) -> bool:
    """Do the numbers of ``sequence`` stand one after another in ``text`` (to 4 significant digits)?"""
    found, n = numbers_in(text), len(sequence)
    target = np.array(sequence)
    return any(np.allclose(found[k:k + n], target, rtol=1e-3, atol=0) for k in range(len(found) - n + 1))


def normalized(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Token:
    """A form of the expected answer that must not be shown."""

    label: str
    text: str = ""
    sequence: tuple = ()
    pattern: str = ""

    def found_in(self, text: str) -> bool:
        if self.text:
            return self.text in normalized(text)
        if self.pattern:
            return re.search(self.pattern, text) is not None
        return has_sequence(text, list(self.sequence))


def _two_factor_right(case: Case) -> tuple[int, list[str]]:
    sizes = case.data()["sizes"]
    n1, m1, m2, e1, e2 = sizes
    chain = jc.Chain([(m1, n1, e1), (m2, m1, e2)])
    eight = jc.two_factor_schedules(*sizes)
    best = min(s.fma for s in eight.values())
    return best, [s.notation(chain) for s in eight.values() if s.fma == best]


def tokens(case: Case) -> list[Token]:
    """The distinctive forms of the expected answer: its text (formulas, orders), a count of 10 or more, a
    number of 100 or more inside a tuple (smaller ones turn up by chance), the entries of a tuple, matrix or
    array in order (row by row or column by column) when there are six or more or one is distinctive; a letter
    by the schedule it names and its cost (both are answers the check takes)."""
    right = case.right
    if case.check == "check_two_factor_optimum":
        cost, notations = _two_factor_right(case)
        return [Token(f"cost {cost}", pattern=number_pattern(cost))] + \
            [Token(n, text=normalized(n)) for n in notations]
    if isinstance(right, str):
        return [] if right == ex.NO_SOLUTION else [Token("the answer's text", text=normalized(right))]
    if isinstance(right, (int, np.integer)) and not isinstance(right, bool):
        return [Token(str(right), pattern=number_pattern(right))] if abs(right) >= 10 else []
    numbers = leaves(right)
    if len(numbers) < 2:
        return []
    found = [Token(f"{v:g}", pattern=number_pattern(v)) for v in numbers
             if (isinstance(right, tuple) and abs(v) >= 100) or not float(v).is_integer() and distinctive(v)]
    if len(numbers) >= 6 or any(distinctive(v) for v in numbers):
        found.append(Token("entries in order", sequence=tuple(numbers)))
        with contextlib.suppress(ValueError, TypeError):  # not a matrix
            matrix = np.array(right, dtype=float)
            if matrix.ndim == 2:
                found.append(Token("entries column by column", sequence=tuple(matrix.T.ravel())))
    return found


# --- wrong answers ------------------------------------------------------------------------------------------

COUNTS = {"check_term_count", "check_point_count", "check_max_contention", "check_vec_index", "check_cell_fma",
          "check_bounded_optimum", "check_tape_threshold"}
SETS = {"check_scatter_races", "check_redundant_rows", "check_hessian_pattern"}
SMALL_MATRICES = {"check_index_matrix", "check_jacobian", "check_pooling_gradient"}
FORMULAS = {"check_derivative", "check_adjoint", "check_second_derivative", "check_intermediate_adjoint",
            "check_layer"}
NUMBERS = {"check_scalar_gradient", "check_jacobian_memory", "check_homogeneous_costs", "check_bezout",
           "check_smith", "check_kernel_basis", "check_integer_solutions", "check_step_inverse",
           "check_reverse_inverse", "check_forward_inverse", "check_newton_step", "check_hessian_vector_product"}
# answers that are code: what they print is checked, not whether repeated tries could fit them
CODE = {"check_loop_bounds", "check_gather_bounds", "check_gradient_element", "check_softmax_program",
        "check_reads", "check_adjoints", "check_index_solve", "check_box_solutions", "check_algorithm4"}
KINDS = COUNTS | SETS | SMALL_MATRICES | FORMULAS | NUMBERS | CODE | {"check_two_factor_optimum", "check_lump_order"}


def test_every_check_is_covered():
    exported = {name for name in ex.__all__ if name.startswith("check_")}
    assert exported == KINDS, "sort every check into a kind of answer above"
    assert exported == {case.check for case in CASES}, "every check is called by the exercise files"


def case_id(case: Case) -> str:
    return case.name


def is_code(case: Case) -> bool:
    """The answer is code: a check of :data:`CODE`, or a function the student writes for a check that also takes a
    value (``vec_index`` for check_vec_index, ``bezout`` for check_bezout), called on the check's own inputs."""
    return case.check in CODE or callable(case.right)


def of(*checks) -> list[Case]:
    """The cases of these checks; those whose answer is code only where the checks are :data:`CODE`."""
    code = set(checks) <= CODE
    return [case for case in CASES if (case.check in checks and not code and not is_code(case))
            or (code and is_code(case))]


def assert_hidden(case: Case, result, own=()):
    """No form of the expected answer in the feedback, once the numbers of the student's own answer (and what
    they compute from it, ``own``) are masked."""
    text = shown(result)
    for v in own:
        text = re.sub(number_pattern(v), "<own>", text)
    for token in tokens(case):
        assert not token.found_in(text), f"{case.name}: the feedback shows {token.label}:\n{text}"


def masked(text: str, own: float) -> str:
    """The text with the student's own number masked where the words state it, first."""
    return re.sub(number_pattern(own), "<yours>", text, count=1)


# --- counts: one set of words for every wrong number --------------------------------------------------------


def _count_variants() -> list[Case]:
    """The count cases, and the checks that also take a count: the cost of the cheapest of the eight schedules,
    the number of non-zero entries of a Hessian row."""
    variants = of(*COUNTS)
    for case in of("check_two_factor_optimum"):
        variants.append(Case(f"{case.name} (cost)", case.check, case.call, case.namespace, _two_factor_right(case)[0]))
    for case in of("check_hessian_pattern"):
        variants.append(Case(f"{case.name} (count)", case.check, case.call, case.namespace, len(case.right)))
    return variants


def count_label(case: Case, n: int) -> str:
    """What a wrong count's words may depend on besides "wrong": facts about the number itself and the data,
    never the right answer."""
    data = case.data()
    if case.check == "check_vec_index":
        shape, index = data["shape"], data["index"]
        if not 0 <= n < int(np.prod(shape)):
            return "not a position of vec A"
        if n == int(np.ravel_multi_index(index, shape, order="C")):
            return "the row-major position: a mistake whatever the answer"
    if case.check == "check_bounded_optimum":
        chain = data["chain"] if isinstance(data["chain"], jc.Chain) else jc.Chain(data["chain"])
        if n == jc.optimize(chain, data["memory"], rule="paper").fma:
            return "what the paper's single-value rule finds, never below the exact optimum (sec. 4)"
    return ""


@pytest.mark.parametrize("case", _count_variants(), ids=case_id)
def test_a_wrong_count_draws_the_same_words_whatever_it_is(case):
    right = int(case.right)
    rng = random.Random(SEED)
    wrong = [*range(max(0, right - 25), right + 26), 2 * right + 1, 10 * right + 3]
    wrong += [rng.randrange(0, 20 * right + 100) for _ in range(5)]
    words: dict[str, set[str]] = {}
    for n in dict.fromkeys(w for w in wrong if w != right):
        result = case(n)
        assert_hidden(case, result)
        words.setdefault(count_label(case, n), set()).add(masked(shown(result), n))
    for label, texts in words.items():
        assert len(texts) == 1, f"{case.name}: wrong counts ({label or 'any'}) draw different words:\n" + \
            "\n---\n".join(sorted(texts))


# --- letters, orders and sets --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", of("check_two_factor_optimum"), ids=case_id)
def test_a_wrong_schedule_draws_words_about_itself_alone(case):
    sizes = case.data()["sizes"]
    n1, m1, m2, e1, e2 = sizes
    chain = jc.Chain([(m1, n1, e1), (m2, m1, e2)])
    cost, _ = _two_factor_right(case)
    words: dict[bool, set[str]] = {}
    for letter, schedule in jc.two_factor_schedules(*sizes).items():
        if schedule.fma == cost:
            continue
        notation = schedule.notation(chain)
        for answer in (letter, letter.upper(), notation, [letter]):
            result = case(answer)
            assert_hidden(case, result)
            text = shown(result).replace(f"schedule {letter} = {notation}", "schedule <yours>")
            # f, g and h never win (Theorem 3.1): saying so depends on the letter alone
            words.setdefault(letter in "fgh", set()).add(text)
    for texts in words.values():
        assert len(texts) == 1, "\n---\n".join(sorted(texts))


@pytest.mark.parametrize("case", of("check_lump_order"), ids=case_id)
def test_a_wrong_order_draws_the_same_words_besides_its_own_lumps(case):
    data = case.data()
    program = ia.trace(data["step"], data["n"])
    largest = {}
    for order in itertools.permutations(program.vertices):
        with contextlib.suppress(ValueError):  # not a topological order
            largest[order] = program.reorder(list(order)).lump_sizes
    best = min(max(sizes) for sizes in largest.values())
    worse = [order for order, sizes in largest.items() if max(sizes) > best]
    texts = set()
    for order in random.Random(SEED).sample(worse, min(12, len(worse))):
        result = case(" ".join(order))
        assert_hidden(case, result)
        # the lump sizes of one's own order: what tensoradbook.inverse.trace(...).reorder(order) gives anyone
        texts.add(shown(result).replace(", ".join(map(str, largest[order])), "<yours>"))
    assert len(texts) == 1, "\n---\n".join(sorted(texts))


def universe(case: Case) -> list:
    data = case.data()
    if case.check == "check_redundant_rows":
        return list(range(len(data["A"])))
    fn = data["fn"] if not isinstance(data["fn"], str) else tab.parse(data["fn"], data["shapes"])
    (size,) = fn.shapes[data["argument"]]  # the table's exercises have vector arguments
    return list(range(size))


@pytest.mark.parametrize("case", of(*SETS), ids=case_id)
def test_a_wrong_set_draws_the_same_words_whatever_it_is(case):
    members = universe(case)
    right = set(case.right)
    rng = random.Random(SEED)
    wrong = [right ^ {m} for m in members]  # one member too many or too few, each in turn
    wrong += [{m for m in members if rng.random() < 0.5} for _ in range(20)]
    texts = set()
    for answer in wrong:
        if answer == right:
            continue
        result = case(sorted(answer) if case.check == "check_hessian_pattern" else answer)
        text = shown(result)
        for token in tokens(case) + [Token("the set", text=str(sorted(right))), Token("the set", text=str(right))]:
            assert not token.found_in(text), f"{case.name}: {token.label} in\n{text}"
        texts.add(text)
    assert len(texts) == 1, f"{case.name}: wrong sets draw different words:\n" + "\n---\n".join(sorted(texts))


# --- small matrices: no entry, row or window named ------------------------------------------------------------


def _routing(x, dm, order):
    """Each 2 x 2 window's dm to its maximal element that comes first in ``order`` (positions 0..3, row-major)."""
    out = np.zeros_like(x)
    for u, v in np.ndindex(*dm.shape):
        window = x[2 * u:2 * u + 2, 2 * v:2 * v + 2].ravel()
        k = next(k for k in order if window[k] == window.max())
        out[2 * u + k // 2, 2 * v + k % 2] = dm[u, v]
    return out


def pooling_label(case: Case, mine) -> tuple:
    """What max-pooling feedback may depend on: which rules the student's own dx breaks against the data (x and
    dm), and which whole other convention it is, never where it differs from the answer."""
    data = case.data()
    x, dm = np.asarray(data["x"], float), np.asarray(data["df"], float)
    conventions = {name: _routing(x, dm, order) for name, order in
                   (("first", (0, 1, 2, 3)), ("last", (3, 2, 1, 0)), ("column-major", (0, 2, 1, 3)))}
    whole = next((name for name, routed in conventions.items() if np.allclose(mine, routed)), None)
    windows = [(mine[2 * u:2 * u + 2, 2 * v:2 * v + 2], x[2 * u:2 * u + 2, 2 * v:2 * v + 2], dm[u, v])
               for u, v in np.ndindex(*dm.shape)]
    return (whole,
            any(not np.isclose(w.sum(), d) for w, _, d in windows),
            any(np.count_nonzero(w) > 1 for w, _, _ in windows),
            any(((w != 0) & (xw < xw.max())).any() for w, xw, _ in windows))


@pytest.mark.parametrize("case", of(*SMALL_MATRICES), ids=case_id)
def test_a_wrong_matrix_draws_words_that_name_no_entry(case):
    right = np.array(case.right, dtype=float)
    integers = case.check == "check_index_matrix"
    wrong = []
    for index in np.ndindex(*right.shape):
        for delta in (1, -1) if integers else (1.0, -0.5):
            changed = right.copy()
            changed[index] += delta
            wrong.append(changed)
    if case.check == "check_pooling_gradient":  # each window's adjoint moved to each other element
        for u, v in np.ndindex(right.shape[0] // 2, right.shape[1] // 2):
            block = right[2 * u:2 * u + 2, 2 * v:2 * v + 2]
            for r, s in np.ndindex(2, 2):
                moved = right.copy()
                moved[2 * u:2 * u + 2, 2 * v:2 * v + 2] = 0.0
                moved[2 * u + r, 2 * v + s] = block.sum()
                if not np.array_equal(moved, right):
                    wrong.append(moved)
    words: dict[object, set[str]] = {}
    for answer in wrong:
        result = case(answer.astype(int).tolist() if integers else answer)
        assert_hidden(case, result)
        label = pooling_label(case, answer) if case.check == "check_pooling_gradient" else ()
        words.setdefault(label, set()).add(shown(result))
    for label, texts in words.items():
        assert len(texts) == 1, f"{case.name} ({label}): \n" + "\n---\n".join(sorted(texts))


# --- formulas, numbers and code: the expected answer is never shown ------------------------------------------


def wrong_texts(text: str) -> list[str]:
    """A formula off by a factor, and with a coefficient changed."""
    left, sep, body = text.partition(" = ") if re.match(r"\s*\w+\[", text) else ("", "", text)
    head = f"{left}{sep}"
    out = [f"{head}2 * ({body})"]
    number = re.search(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w.])", body)
    if number:
        value = number.group(1)
        other = str(int(value) + 1) if value.isdigit() else str(float(value) * 1.5)
        out.append(head + body[:number.start()] + other + body[number.end():])
    return out


@pytest.mark.parametrize("case", of(*FORMULAS), ids=case_id)
def test_a_wrong_formula_is_not_told_the_right_one(case):
    right = normalized(case.right)
    body = right.partition(" = ")[2] or right
    for answer in wrong_texts(case.right):
        text = normalized(shown(case(answer)))
        assert right not in text and body not in text, f"{case.name}: the right formula in\n{text}"


def own_numbers(case: Case, answer) -> list[float]:
    """Numbers the feedback may show because the student computes them from their own answer."""
    data = case.data()
    if case.check == "check_bezout":
        g, x, y = answer
        return [data["a"] * x + data["b"] * y]
    if case.check == "check_smith":
        _, U, V = (np.array(m, dtype=object) for m in answer)
        return [float(v) for v in (U.dot(np.array(data["A"], dtype=object)).dot(V)).ravel()]
    if case.check == "check_step_inverse":
        k = len(answer)
        J = np.eye(k)
        J[0, 0], J[0, 1:] = data["a"], data["b"]
        return (np.array(answer) @ J).tolist()
    return []


def wrong_numbers(case: Case) -> list:
    """Each number of the right answer changed in turn, and all of them at once (integers stay integers)."""
    numbers = leaves(case.right)
    rng = random.Random(SEED)

    def moved(v):
        return v + rng.choice([-3, -2, -1, 1, 2, 3]) if float(v).is_integer() else v + rng.choice([-0.5, 0.5, 1.25])

    out = [rebuilt(case.right, [moved(v) if j == k else v for j, v in enumerate(numbers)])
           for k in range(min(len(numbers), 8))]
    out.append(rebuilt(case.right, [moved(v) for v in numbers]))
    return out


@pytest.mark.parametrize("case", of(*NUMBERS), ids=case_id)
def test_wrong_numbers_are_not_told_the_right_ones(case):
    if isinstance(case.right, str):  # no solution: any pair is wrong, and must not be told why
        rng = random.Random(SEED)
        pairs = [([rng.randint(-3, 3) for _ in range(3)], [[rng.randint(-3, 3) for _ in range(2)] for _ in range(3)])
                 for _ in range(8)]
        for pair in pairs:
            text = shown(case(pair))
            for words in ("no solution", "no integer solution", "not integral", "gcd"):
                assert words not in text, f"{case.name}: {words!r} decides the exercise:\n{text}"
        return
    answers = wrong_numbers(case)
    if case.check == "check_integer_solutions":
        answers.append(ex.NO_SOLUTION)
    for answer in answers:
        result = case(answer)
        assert_hidden(case, result, own=leaves(answer) + own_numbers(case, answer))


def off(value):
    """A value a little wrong: a number or array moved, a text with a term more, a collection one item short."""
    if isinstance(value, str):
        return f"{value} + 1"
    if isinstance(value, dict) and value:
        return dict(list(value.items())[:-1])
    if isinstance(value, (list, tuple)) and value:
        return type(value)(value[:-1])
    return value + 1


def wrong_code(case: Case) -> list:
    right = case.right
    if case.check == "check_loop_bounds":
        (low, high), inner = right
        return [((low, high + 1), inner), ((low, high), lambda x1: (inner(x1)[0], inner(x1)[1] + 1))]
    if case.check == "check_gather_bounds":  # every value of the loop index, whatever the element
        return [lambda *beta: (0, 9)]
    if case.check == "check_softmax_program":  # not divided by the sum
        return [tab.parse("s[i] = exp (x[i])", {"x": (64,), "s": (64,)})]

    @functools.wraps(right)  # the same parameters, which some checks read
    def slightly_off(*args, **kwargs):
        return off(right(*args, **kwargs))

    return [slightly_off]


@pytest.mark.parametrize("case", of(*CODE), ids=case_id)
def test_wrong_code_is_not_told_the_right_answer(case):
    for answer in wrong_code(case):
        assert_hidden(case, case(answer))


# --- the chapters' stored outputs ---------------------------------------------------------------------------


#: Outputs that state numbers of another kind only: the estimated times (notebooks/bookdata.py), minutes summed from
#: the exercises' metadata, the words of the chapters and their run times, which may equal an answer by chance
#: (81 minutes, 09b's exercise 2) but say nothing about one.
NOT_ANSWERS = ("estimated_time(", "estimated_minutes(")


def _outputs() -> list[tuple[str, int, str]]:
    found = []
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        for k, cell in enumerate(json.loads(path.read_text())["cells"]):
            if any(call in "".join(cell["source"]) for call in NOT_ANSWERS):
                continue
            for output in cell.get("outputs", []):
                texts = [output.get("text", "")] + [output.get("data", {}).get(kind, "")
                                                    for kind in ("text/plain", "text/html", "text/markdown")]
                found += [(path.stem, k, "".join(t)) for t in texts if t]
    return found


OUTPUTS = _outputs()

#: (exercise, chapter, token label) -> why the chapter may show it
ALLOWED = {
    ("03_tensor_functions ex2", "09b_tape_bounds", "320"): "an fma of the paper's sec. 4 tables, not a row count",
    ("09a_jacobian_chaining ex1", "09b_tape_bounds", "(F2dot I3) F1bar"):
        "part of the schedule of another chain (sec. 5's, whose m1 is 3 too), with no sizes of exercise 1",
    ("09a_jacobian_chaining ex2", "06b_gather_scatter", "200"): "200 orders of a sum, not an fma",
    ("09b_tape_bounds ex2", "06b_gather_scatter", "81"): "the timed calls of a recorded busy series, not minutes",
    ("09b_tape_bounds ex1", "11_capstone_cnn", "146"): "a number of training images per class, not an fma",
}


def test_no_chapter_output_shows_an_answer():
    shown_here, used = [], set()
    for case in CASES:
        for token in tokens(case):
            for chapter, cell, text in OUTPUTS:
                if token.found_in(text):
                    key = (case.name, chapter, token.label)
                    if key in ALLOWED:
                        used.add(key)
                    else:
                        shown_here.append(f"{case.name}'s answer ({token.label}) in {chapter}, cell {cell}")
    assert not shown_here, "\n".join(shown_here)
    assert used == set(ALLOWED), f"allowed but no longer shown: {set(ALLOWED) - used}"


@pytest.mark.parametrize("case", [c for c in CASES if isinstance(c.right, str) and c.right != ex.NO_SOLUTION],
                         ids=case_id)
def test_no_chapter_output_line_passes_a_text_exercise(case):
    """The same answer in another form: no output line (from the answer's left side on, if it has one) passes."""
    left = re.match(r"\s*(\w+\[)", case.right) if " = " in case.right else None
    for chapter, cell, text in OUTPUTS:
        for line in text.splitlines():
            starts = [m.start() for m in re.finditer(re.escape(left.group(1)), line)] if left else [0]
            for start in starts:
                try:
                    passes = case(line[start:].strip()).ok
                except Exception:  # a line that is no answer at all  # noqa: BLE001
                    continue
                assert not passes, f"{chapter}, cell {cell}: {line!r}"


# --- no answer in the text: docstrings, and cells that are near-copies of a solution ----------------------------
#
# A chapter teaches, its exercises practise: neither the chapters' cells nor the docstrings a student reads while
# solving (the check modules', and those of every library function or class an exercise names) may hold an
# instructor's solution. What a solution is decides how it is looked for:
#
# * code (a function, a lambda, a call of the library): lexically. Tokens without whitespace or comments, every
#   name renamed by its first appearance (v0, v1, ...: renamed variables hide nothing, names used differently
#   count as different), then difflib's ratio 2M / (len(a) + len(b)) of the solution against the best window of
#   the text; a near-copy is at least NEAR_COPY. And no chapter cell defines the function a part asks for;
# * a formula or program in the report's notation: by meaning. In that notation every formula of a sum of
#   products has one token skeleton, so the ratio cannot tell a copy (0.89 to 0.92 measured for the chapter-11
#   layers against the network's own) from an unrelated definition (0.89 for chapter 03's matrix product against
#   chapter 05's dv). Instead no string of a chapter's code, no code span or line of its markdown, and no line of a
#   docstring passes the exercise's check (the outputs' lines are tested above);
# * a value (a number, a tuple, a matrix, a set, a letter): by its distinctive forms, :func:`tokens`, in the
#   docstrings (the outputs are tested above; markdown and code would show a number in any other sense);
# * and in every docstring, no line of any solution, tokens compared without whitespace: a line of fewer than
#   MIN_LINE_TOKENS tokens is left out ("return position", "stride *= n": any code has them, and they give
#   nothing away alone).

#: The least difflib ratio of a near-copy (see above). Measured on this book: the best windows of texts that are no
#: copy reach 0.72 (chapter 12's given ``gradient`` wrapper against the solution's own, which differs from it), 0.70
#: (chapter 07's evaluation of a derived function against exercise 3's) and 0.71 (chapter 04b's example of the
#: answer's form, ``((0, 4), lambda x1: (0, x1))``, which gave exercise 1's outer loop away and was changed); the
#: copy the review found, check_gradient_element's docstring example ``dx_element`` (the matrix product's other
#: gradient, sizes typed) against chapter 06a's exercise 1, is 0.81.
NEAR_COPY = 0.75
MIN_LINE_TOKENS = 6
TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|\*\*|//|->|[-+*/%=<>!]=|\S")
KEYWORDS = set(__import__("keyword").kwlist) | {
    "sum", "range", "zip", "len", "min", "max", "abs", "divmod", "int", "float", "enumerate", "math", "ceil",
    "floor", "exp", "log", "sin", "cos", "tanh", "sqrt", "then"}


def code_tokens(text: str) -> list[str]:
    return TOKEN.findall("\n".join(line.split("  #")[0] for line in text.splitlines()))


def renamed(tokens: list[str]) -> list[str]:
    names: dict[str, str] = {}
    return [names.setdefault(t, f"v{len(names)}") if (t[0].isalpha() or t[0] == "_") and t not in KEYWORDS else t
            for t in tokens]


@dataclass(frozen=True)
class Solution:
    name: str  # assignment stem, exercise and part
    stem: str
    kind: str  # "code", "formula" or "value"
    text: str  # the code, the formula (program) text, or the value's source
    answer: str  # the name the part assigns or defines
    lines: tuple[str, ...]  # what no docstring may contain


def _solution(assignment: assignments.Assignment, exercise: assignments.Exercise, part: assignments.Part) -> Solution:
    tree = ast.parse(part.solution)
    name = f"{assignment.stem} ex{exercise.number}{part.label}"
    value = tree.body[-1].value if isinstance(tree.body[-1], ast.Assign) else None
    if value is None or any(isinstance(n, (ast.FunctionDef, ast.Lambda)) for n in ast.walk(tree)):
        kind, text = "code", part.solution
    elif isinstance(value, ast.Constant) and isinstance(value.value, str):
        kind, text = "formula", value.value
    elif isinstance(value, ast.Call) and ast.unparse(value.func) == "tab.parse":
        kind, text = "formula", value.args[0].value
    elif any(isinstance(n, ast.Call) and ast.unparse(n.func).startswith(("tab.", "ia.", "jc."))
             for n in ast.walk(value)):
        kind, text = "code", ast.get_source_segment(part.solution, value)
    else:
        kind, text = "value", ast.get_source_segment(part.solution, value)
    if kind == "formula":
        lines = tuple(text.splitlines())
    elif value is not None and kind != "code":
        lines = (text,)
    else:
        lines = tuple(ast.get_source_segment(part.solution, value) if value is not None else line
                      for line in (part.solution.splitlines() if value is None else [""]))
    lines = tuple(line for line in lines if len(code_tokens(line)) >= MIN_LINE_TOKENS)
    return Solution(name, assignment.stem, kind, text, part.answer, lines)


SOLUTIONS = [_solution(a, e, p) for a in assignments.ASSIGNMENTS for e in a.exercises for p in e.parts]


def _documented(obj) -> list[tuple[str, str]]:
    """``(where, docstring)`` of a library object: a function's or property's own, a class's and its public
    methods' (an instance: its class's)."""
    if not inspect.isclass(obj) and not inspect.isroutine(obj) and not isinstance(obj, property):
        obj = type(obj)
    module = getattr(inspect.getmodule(obj), "__name__", "") or ""
    if not module.startswith("tensoradbook"):
        return []
    name = f"{module}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"
    found = [(name, inspect.getdoc(obj) or "")]
    if inspect.isclass(obj):
        found += [(f"{name}.{attr}", inspect.getdoc(member) or "") for attr, member in vars(obj).items()
                  if not attr.startswith("_") and (inspect.isroutine(member) or isinstance(member, property))]
    return found


def _module_docstrings(path: Path) -> list[tuple[str, str]]:
    tree = ast.parse(path.read_text())
    nodes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    return [(f"{path.stem}.{getattr(n, 'name', '')}", ast.get_docstring(n) or "") for n in nodes]


def _named_in(texts: list[str]) -> set[str]:
    """Dotted names in code, and in markdown's code spans: ``tab.derive``, ``braid.vertices``, ``ChainTable``."""
    names = set()
    for text in texts:
        pieces = [text] + re.findall(r"`([^`\n]+)`", text) + re.findall(r"#\s*(?:e\.g\.)?(.*)", text)
        for piece in pieces:
            try:
                tree = ast.parse("\n".join(line for line in piece.strip().splitlines()
                                           if not line.lstrip().startswith("%")))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, (ast.Attribute, ast.Name)):
                    with contextlib.suppress(Exception):
                        names.add(ast.unparse(node))
    return names


def _named_docstrings(name: str, scope: dict, classes: list) -> dict[str, str]:
    """The docstrings of what ``name`` names in ``scope``; where it names nothing there (a name of the chapter's own,
    or a call's result), those of the methods called ``name``'s last part of the library's ``classes``."""
    try:
        obj = eval(name, dict(scope))  # noqa: S307 -- names of the exercise files and the chapters
    except Exception:  # noqa: BLE001 -- a name of the chapter's own, or a call's result
        method = name.rsplit(".", 1)[-1]
        docs = {}
        for cls in classes:
            if isinstance(vars(cls).get(method), (property, type(lambda: 0))):
                docs.update(_documented(vars(cls)[method]))
        return docs
    return {} if inspect.ismodule(obj) else dict(_documented(obj))


def _library_docstrings() -> dict[str, str]:
    """Every docstring a student reads while solving: the check modules' (tensoradbook/exercises/, the policy
    module aside, which names what is forbidden) and those of every library object an exercise names, in the
    chapter's Exercises section or the course's texts, given code and setup; a method called on a result
    (``tab.derive(...).evaluate``) by the methods of that name of the library's public classes."""
    import tensoradbook.widgets as widgets

    docs = {}
    for path in sorted((REPO / "tensoradbook" / "exercises").glob("*.py")):
        if path.stem != "policy":
            docs.update(_module_docstrings(path))
    public = {**{n: getattr(tab, n) for n in dir(tab) if not n.startswith("_")},
              **{n: getattr(widgets, n) for n in dir(widgets) if not n.startswith("_")}}
    classes = [c for c in public.values() if inspect.isclass(c)] + [
        c for module in (tab.ad.derive, tab.lang.function, ia, jc) for c in vars(module).values()
        if inspect.isclass(c) and getattr(c, "__module__", "").startswith("tensoradbook")]
    for assignment in assignments.ASSIGNMENTS:
        scope = {**public, "tab": tab, "tensoradbook": tab, "ia": ia, "jc": jc, "ex": ex}
        with contextlib.redirect_stdout(io.StringIO()):
            exec(assignment.setup, scope)  # noqa: S102 -- the exercise files
            for exercise in assignment.exercises:
                if exercise.given:
                    exec(exercise.given, scope)  # noqa: S102
        cells = source.exercise_cells(REPO / "notebooks" / f"{assignment.stem}.ipynb")
        texts = ["".join(c["source"]) for c in cells] + [assignment.setup] + [
            text for e in assignment.exercises for text in (e.given, e.text, e.extra, *(p.stub for p in e.parts))]
        for name in _named_in(texts):
            docs.update(_named_docstrings(name, scope, classes))
    return {where: doc for where, doc in docs.items() if doc}


DOCSTRINGS = _library_docstrings()


def _contains(tokens: list[str], part: list[str]) -> bool:
    n = len(part)
    return any(tokens[k:k + n] == part for k in range(len(tokens) - n + 1))


def test_the_docstrings_read_include_the_checks_and_the_library_named():
    assert any(where.startswith("ch06_kernels.check_gradient_element") for where in DOCSTRINGS)
    for named in ("tensoradbook.ad.derive.derive", "tensoradbook.inverse.program.trace", "ChainTable", "MemoryBudget",
                  "Gradients.evaluate"):
        assert any(named in where for where in DOCSTRINGS), named


@pytest.mark.parametrize("solution", SOLUTIONS, ids=lambda s: s.name)
def test_no_docstring_holds_a_solution_line(solution):
    for line in solution.lines:
        wanted = code_tokens(line)
        found = [where for where, doc in DOCSTRINGS.items() if _contains(code_tokens(doc), wanted)]
        assert not found, f"{solution.name}: {line!r} in the docstrings of {found}"


def _windows_ratio(solution: list[str], text: list[str]) -> float:
    """The best difflib ratio of ``solution`` (renamed tokens) against a window of ``text`` (raw tokens) as long:
    windows every n/16 tokens first, then every token around the best of them."""
    n = len(solution)
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(solution)
    loose = difflib.SequenceMatcher(None, autojunk=False)  # every name alike: a bound on the renamed ratio
    loose.set_seq2(["N" if t.startswith("v") and t[1:].isdigit() else t for t in solution])
    plain = ["N" if (t[0].isalpha() or t[0] == "_") and t not in KEYWORDS else t for t in text]
    loose.set_seq1(plain)
    if loose.quick_ratio() * (len(plain) + n) / (min(len(plain), n) + n) < NEAR_COPY - 0.1:
        return 0.0  # too few tokens in common anywhere

    def ratio(start: int) -> float:
        loose.set_seq1(plain[start:start + n])
        if loose.real_quick_ratio() < NEAR_COPY - 0.1 or loose.quick_ratio() < NEAR_COPY - 0.1:
            return 0.0
        matcher.set_seq1(renamed(text[start:start + n]))
        return matcher.ratio()

    last, step = max(0, len(text) - n // 2), max(1, n // 16)
    coarse = max(range(0, last + 1, step), key=ratio, default=0)
    return max(ratio(start) for start in range(max(0, coarse - step), min(last, coarse + step) + 1))


def _texts() -> list[tuple[str, str]]:
    """``(where, text)``: every chapter cell's source and text outputs, and every docstring read."""
    found = []
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        for k, cell in enumerate(json.loads(path.read_text())["cells"]):
            found.append((f"{path.stem}, cell {k}", "".join(cell["source"])))
            found += [(f"{path.stem}, cell {k} (output)", text) for _, _, text in
                      [o for o in OUTPUTS if o[0] == path.stem and o[1] == k]]
    return found + [(f"docstring of {where}", doc) for where, doc in DOCSTRINGS.items()]


TEXTS = _texts()
TEXT_TOKENS = [(where, code_tokens(text)) for where, text in TEXTS]


def _code_pieces() -> list[tuple[str, str]]:
    """``(name, code)``: each code solution whole, and each of its functions of 30 tokens or more on its own (a
    text may copy one function of a solution of several)."""
    pieces = []
    for solution in SOLUTIONS:
        if solution.kind != "code":
            continue
        pieces.append((solution.name, solution.text))
        with contextlib.suppress(SyntaxError):
            functions = [n for n in ast.parse(solution.text).body if isinstance(n, ast.FunctionDef)]
            if len(functions) > 1:
                pieces += [(f"{solution.name} {n.name}", ast.get_source_segment(solution.text, n)) for n in functions
                           if len(code_tokens(ast.get_source_segment(solution.text, n))) >= 30]
    return pieces


@pytest.mark.parametrize("piece", _code_pieces(), ids=lambda p: p[0])
def test_no_text_is_a_near_copy_of_a_code_solution(piece):
    name, code = piece
    wanted = renamed(code_tokens(code))
    near = [f"{where} ({ratio:.2f})" for where, tokens in TEXT_TOKENS
            if (ratio := _windows_ratio(wanted, tokens)) >= NEAR_COPY]
    assert not near, f"{name} near-copied in: {near}"


#: (assignment, function) -> why a chapter may define it whole although the solution defines it too
GIVEN_WHOLE = {
    ("12_build_it_yourself", "adjoints"):
        "a wrapper the chapter gives whole in section 2 (it calls the student's sweep, which is the exercise); the "
        "course's solution repeats it because the assignment's answer cell has no given code",
    ("12_build_it_yourself", "gradient"):
        "a wrapper the chapter gives whole in section 5 (it calls the student's read_term, which is the exercise); "
        "the course's solution repeats it",
}


def test_what_is_given_whole_is_defined_in_its_chapter():
    for stem, name in GIVEN_WHOLE:
        cells = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())["cells"]
        assert any(n.name == name and not _stub(n) for c in cells if c["cell_type"] == "code"
                   for n in _defined("".join(c["source"]))), f"{stem} no longer gives {name}: drop it from GIVEN_WHOLE"


def _stub(node: ast.FunctionDef) -> bool:
    """A placeholder for the student to fill in: a body of ``...``, ``pass``, a docstring, ``return None`` or
    ``NotImplemented``, or a NotImplementedError."""
    def empty(statement):
        if isinstance(statement, ast.Pass):
            return True
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            return statement.value.value is Ellipsis or isinstance(statement.value.value, str)
        if isinstance(statement, ast.Return):
            return statement.value is None or ast.unparse(statement.value) in ("None", "NotImplemented")
        return isinstance(statement, ast.Raise) and "NotImplementedError" in ast.unparse(statement)

    return all(empty(statement) for statement in node.body)


def _defined(code: str) -> list[ast.FunctionDef]:
    try:
        tree = ast.parse("\n".join(line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))))
    except SyntaxError:  # a markdown cell
        return []
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]


@pytest.mark.parametrize("assignment", assignments.ASSIGNMENTS, ids=lambda a: a.stem)
def test_no_chapter_defines_the_function_a_part_asks_for(assignment):
    """A chapter may give a function's placeholder to fill in, never the function: no code cell of any chapter
    defines, with a body, a function that a part of this assignment asks the student to write (one its solution
    defines at the top, other than those the chapter's Exercises section gives whole, which the solution repeats)."""
    given = {n.name for cell in source.exercise_cells(REPO / "notebooks" / f"{assignment.stem}.ipynb")
             if cell["cell_type"] == "code" for n in _defined("".join(cell["source"])) if not _stub(n)}
    given |= {name for stem, name in GIVEN_WHOLE if stem == assignment.stem}
    asked = {n.name for e in assignment.exercises for p in e.parts for n in ast.parse(p.solution).body
             if isinstance(n, ast.FunctionDef)} - given
    found = []
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        for k, cell in enumerate(json.loads(path.read_text())["cells"]):
            if cell["cell_type"] == "code":
                found += [f"{n.name} in {path.stem}, cell {k}" for n in _defined("".join(cell["source"]))
                          if n.name in asked and not _stub(n)]
    assert not found, f"{assignment.stem}: the functions its exercises ask for are defined in {found}"


def _pieces(text: str, code: bool) -> list[str]:
    """The candidate answers in a text: its lines, its code spans (``x`` and `x`), and a code cell's strings."""
    pieces = text.splitlines() + re.findall(r"``([^`]+)``|`([^`\n]+)`", text)
    pieces = [p for piece in pieces for p in ((piece,) if isinstance(piece, str) else piece) if p]
    if code:
        with contextlib.suppress(SyntaxError):
            tree = ast.parse("\n".join(line for line in text.splitlines() if not line.lstrip().startswith(("%", "!"))))
            pieces += [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return pieces


def _sources() -> list[tuple[str, str]]:
    """``(where, candidate)``: the pieces of every chapter cell's source and of every docstring read."""
    found = []
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        for k, cell in enumerate(json.loads(path.read_text())["cells"]):
            found += [(f"{path.stem}, cell {k}", piece)
                      for piece in _pieces("".join(cell["source"]), cell["cell_type"] == "code")]
    found += [(f"docstring of {where}", piece) for where, doc in DOCSTRINGS.items() for piece in _pieces(doc, False)]
    return found


SOURCES = _sources()
NAME = re.compile(r"[A-Za-z_]\w*")


def _worth_trying(case: Case, piece: str) -> bool:
    """Could ``piece`` be the answer at all: every array the answer names appears in it (a letter, or a schedule's
    factors, for the two-factor schedule)."""
    if case.check == "check_two_factor_optimum":  # a schedule written out; a lone letter is any other letter too
        return "F1" in piece
    names = set(NAME.findall(case.right)) - KEYWORDS
    return names <= set(NAME.findall(piece))


@pytest.mark.parametrize("case", [c for c in CASES if isinstance(c.right, str) and c.right != ex.NO_SOLUTION],
                         ids=case_id)
def test_no_chapter_source_or_docstring_passes_a_text_exercise(case):
    """Formulas, orders and letters by meaning (see above): no line, code span or string of a chapter's cells, and
    no line or code span of a docstring read, passes the exercise's check, from the answer's left side on."""
    left = re.match(r"\s*(\w+\[)", case.right) if " = " in case.right else None
    passing = []
    for where, piece in SOURCES:
        starts = [m.start() for m in re.finditer(re.escape(left.group(1)), piece)] if left else [0]
        for start in starts:
            candidate = piece[start:].strip().strip("\"'`").strip()
            if not candidate or not _worth_trying(case, candidate):
                continue
            try:
                passes = case(candidate).ok
            except Exception:  # a piece that is no answer at all  # noqa: BLE001
                continue
            if passes:
                passing.append(f"{where}: {candidate!r}")
    assert not passing, f"{case.name}: " + "\n".join(passing)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_no_docstring_shows_an_answer(case):
    """Values by their distinctive forms (:func:`tokens`) in every docstring read."""
    found = [f"{token.label} in {where}" for token in tokens(case) for where, doc in DOCSTRINGS.items()
             if token.found_in(doc)]
    assert not found, f"{case.name}: {found}"

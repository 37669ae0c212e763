"""Chapter 12 (build the engine yourself): the student's code is the engine, and the checks can tell.

* The course's solutions (course/exercises/12_build_it_yourself.py), written from the primitives the chapter
  gives, score full marks, visible and hidden tests alike, in the notebook and across the grader's wire; other
  right forms pass too.
* An answer made of library calls scores 0 on every exercise: while a check runs the student's function, the
  library's answers (derive, the reverse sweep, the integer inverse, Fourier-Motzkin, finite differences, the checks
  and their helpers) raise an error that the verdict names, and everything is put back afterwards; a gradient that
  sums over the whole box (eq. 40) is refused by the count of its terms.
* Every mutant of a solution (a condition dropped, a rule left out, a bound mangled) that a hidden test fails, the
  visible check fails too, so a student who passes the visible checks passes the hidden ones unless they wrote for
  the visible cases; the mutants that the report's conditions are about (I (beta - a) integral, eq. 34, the
  cokernel) fail visibly.
* Feedback says what is wrong, never the right value.

Deterministic: fixed seeds, and hypothesis with derandomize-friendly settings (tests/conftest.py).
"""

import itertools
import json
import random
import textwrap
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from classroom import assignments, paths
from classroom import wire
from feedback import hides, messages
from tensoradbook import exercises as ex
from tensoradbook.ad.derive import extended_domain
from tensoradbook.ad.reverse import reverse_accumulate
from tensoradbook.exercises import ch12_build as build
from tensoradbook.exercises import ch12_solve, ch12_support
from tensoradbook.lang.expr import Affine, Element, Number, Sum
from tensoradbook.lang.printer import expr_text
from tensoradbook.lang.simplify import ZERO

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ASSIGNMENT = assignments.BY_STEM["12_build_it_yourself"]
SECTION6 = ch12_support.SECTION6
F6 = tab.parse(*SECTION6)


# --- the course's solutions, run as nbgrader's source notebook runs them ---------------------------------------

def _namespace(replace: dict | None = None) -> dict:
    """The assignment's setup, given code and solutions run in one namespace; ``replace`` maps an answer's name to
    the solution code that takes its place (a mutant)."""
    namespace: dict = {"__name__": "chapter12_answers"}
    exec(ASSIGNMENT.setup, namespace)
    for exercise in ASSIGNMENT.exercises:
        if exercise.given:
            exec(exercise.given, namespace)
        for part in exercise.parts:
            exec((replace or {}).get(part.answer, part.solution), namespace)
    return namespace


SOLUTIONS = _namespace()
PARTS = {part.answer: (exercise.number, part) for exercise in ASSIGNMENT.exercises for part in exercise.parts}
NET = SOLUTIONS["net"]


def visible(part: assignments.Part, namespace: dict):
    return eval(part.call, namespace)


def hidden_passes(part: assignments.Part, namespace: dict) -> bool:
    scope = dict(namespace)
    try:
        exec(part.hidden, scope)
    except AssertionError:
        return False
    return True


def across_wire(function):
    """``function`` as the grader calls it: its arguments and its result cross as JSON data (classroom.wire),
    and what cannot cross fails as the worker's error reply does, as a RuntimeError."""
    def remote(*args):
        sent = wire.decode(json.loads(json.dumps(wire.encode(list(args), []))))
        result = function(*sent)
        try:
            return wire.decode(json.loads(json.dumps(wire.encode(result, []))))
        except wire.WireError as error:
            raise RuntimeError(str(error)) from None

    return remote


# --- the placeholder and the exports ---------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: ex.check_reads(None), lambda: ex.check_adjoints(None), lambda: ex.check_index_solve(None),
    lambda: ex.check_box_solutions(None), lambda: ex.check_algorithm4(None), lambda: ex.check_algorithm4(None, NET),
])
def test_none_is_no_answer_yet(call):
    result = call()
    assert not result.ok and result.pending
    assert "no answer yet" in str(result)


def test_exported():
    for name in ("check_reads", "check_adjoints", "check_index_solve", "check_box_solutions", "check_algorithm4"):
        assert name in ex.__all__ and getattr(ex, name) is getattr(build, name)


def test_the_chapter_s_placeholders_are_named():
    placeholder = lambda *_: NotImplemented  # noqa: E731
    for check in (ex.check_reads, ex.check_adjoints, ex.check_index_solve, ex.check_box_solutions,
                  ex.check_algorithm4):
        assert "returns NotImplemented, the chapter's placeholder" in messages(check(placeholder))
    assert "placeholder" in messages(ex.check_algorithm4(placeholder, NET))


# --- a solution from the primitives scores full marks --------------------------------------------------------------

@pytest.mark.parametrize("answer", list(PARTS))
def test_the_solutions_pass_visible_and_hidden_tests(answer):
    number, part = PARTS[answer]
    result = visible(part, SOLUTIONS)
    assert result, str(result)
    assert hidden_passes(part, SOLUTIONS), f"exercise {number}'s hidden tests"


def test_full_marks_across_the_wire():
    """The grader calls the student's functions with data and reads data back."""
    wired = {**SOLUTIONS, **{name: across_wire(SOLUTIONS[name]) for name in PARTS}}
    for answer, (_, part) in PARTS.items():
        assert visible(part, wired), answer
    assert sum(part.points for _, part in PARTS.values()) == ASSIGNMENT.points == 18


def reads_other_form(fn):
    """Another walk (a stack, lists for tuples) and another box with the same points: rows doubled, a redundant row,
    the rows in reverse."""
    found, waiting = [], [(fn.body, ())]
    while waiting:
        node, sums = waiting.pop()
        if isinstance(node, Element):
            alpha, A, a, R, r = SOLUTIONS["read_geometry"](fn, node, sums)
            R2 = [[2 * c for c in row] for row in R][::-1] + [[0] * len(alpha)]
            r2 = [2 * v for v in r][::-1] + [-1]
            found.append([expr_text(node).replace(" ", "  "), list(alpha), A, a, R2, r2])
            continue
        inner = sums + (node,) if isinstance(node, Sum) else sums
        waiting += [(child, inner) for child in node.children()]
    return found


def eliminate_unpruned(M):
    """Algorithm 3 as the report writes it: every generated row kept, none merged."""
    N, kappa = len(M), (len(M[0]) if M else 0)
    rows = [([Fraction(v) for v in M[n]], [Fraction(int(j == n)) for j in range(N)]) for n in range(N)]
    bounds = []
    for k in range(kappa):
        lower = [(m, w) for m, w in rows if m[k] > 0]
        upper = [(m, w) for m, w in rows if m[k] < 0]
        bounds.append(tuple([[v / m[k] for v in w] + [0] * (k + 1) + [-v / m[k] for v in m[k + 1:]] for m, w in side]
                            for side in (lower, upper)))
        rows = [(m, w) for m, w in rows if m[k] == 0] + [
            ([-mu[k] * x + ml[k] * y for x, y in zip(ml, mu)], [-mu[k] * x + ml[k] * y for x, y in zip(wl, wu)])
            for ml, wl in lower for mu, wu in upper]
    return bounds, [w for _, w in rows]


def test_other_right_forms_pass():
    assert ex.check_reads(reads_other_form)
    assert ex.check_box_solutions(eliminate_unpruned)
    as_function = ex.check_algorithm4(lambda fn, a: tab.parse(SOLUTIONS["gradient"](fn, a), {
        **fn.shapes, "d" + fn.name: fn.shapes[fn.name], "d" + a: fn.shapes[a]}))
    assert as_function, str(as_function)
    as_lists = ex.check_algorithm4(lambda p, v: {k: g.tolist() for k, g in SOLUTIONS["backprop"](p, v).items()}, NET)
    assert as_lists, str(as_lists)


# --- library calls score 0 ---------------------------------------------------------------------------------------

def library_reads(fn):
    found, waiting = [], [(fn.body, ())]
    while waiting:
        node, sums = waiting.pop()
        if isinstance(node, Element):
            alpha, R, r = extended_domain(fn, sums)
            A = [[int(index.coefficient(n)) for n in alpha] for index in node.indices]
            found.append((expr_text(node), alpha, A, [int(i.constant) for i in node.indices], R, r))
            continue
        waiting += [(child, sums + ((node,) if isinstance(node, Sum) else ())) for child in node.children()]
    return found


def library_adjoints(fn):
    seed = Element("d" + fn.name, tuple(Affine.index(i) for i in fn.indices))
    return {expr_text(o.element): expr_text(o.adjoint) for o in reverse_accumulate(fn.body, seed).occurrences}


def library_index_solve(A):
    inverse = tab.integer_inverse(A)
    return inverse.pinv.tolist(), inverse.kernel.tolist(), inverse.cokernel.tolist()


def library_eliminate(M):
    system = tab.fourier_motzkin(np.array(M, dtype=object).reshape(len(M), len(M[0]) if M else 0))
    N = len(M)
    bounds = [tuple([list(row) + [0] * (N + system.n_vars - len(row) - len(hat)) + list(hat)
                     for row, hat in zip(L.tolist(), Lhat.tolist())] for L, Lhat in ((system.L[k], system.Lhat[k]),
                                                                                      (system.H[k], system.Hhat[k])))
              for k in range(system.n_vars)]
    return bounds, system.F.tolist()


LIBRARY = {
    "reads": [library_reads, lambda fn: ch12_support.read_scopes(fn) and library_reads(fn)],
    "adjoints": [library_adjoints],
    "index_solve": [library_index_solve],
    "eliminate": [library_eliminate],
    "gradient": [lambda fn, a: str(tab.derive(fn)[a]),
                 lambda fn, a: next(str(g[a]) for g in [tab.derive(fn)]),
                 lambda fn, a: ex.check_algorithm4(SOLUTIONS["gradient"], [fn]) and SOLUTIONS["gradient"](fn, a)],
    "backprop": [lambda p, v: tab.derive(p).evaluate(v, 1.0),
                 lambda p, v: {n: tab.ad.gradcheck.numeric_gradient(p, v, n, 1.0) for n in p.arguments},
                 lambda p, v: {n: tab.check_gradients(p, v) and 0 for n in p.arguments}],
}


@pytest.mark.parametrize("answer", list(PARTS))
def test_library_calls_score_zero(answer):
    number, part = PARTS[answer]
    for k, library in enumerate(LIBRARY[answer]):
        result = visible(part, {**SOLUTIONS, answer: library})
        assert not result and "switched off while the check runs your function" in messages(result), (k, str(result))
        assert not hidden_passes(part, {**SOLUTIONS, answer: library})


def test_chapter_12_answered_with_library_calls_scores_zero():
    points = 0
    for answer, (_, part) in PARTS.items():
        namespace = {**SOLUTIONS, answer: LIBRARY[answer][0]}
        points += part.points if visible(part, namespace) and hidden_passes(part, namespace) else 0
    assert points == 0


def test_the_library_is_put_back_however_the_call_ends():
    originals = (tab.derive, tab.integer_inverse, tab.fourier_motzkin, reverse_accumulate, build.check_reads,
                 tab.IntegerInverse.__init__, ch12_support.read_scopes)

    def raises(fn):
        raise KeyError("mine")

    for answer in (LIBRARY["gradient"][0], raises):
        assert not ex.check_algorithm4(answer)
    import tensoradbook.ad.reverse as reverse

    assert (tab.derive, tab.integer_inverse, tab.fourier_motzkin, reverse.reverse_accumulate, build.check_reads,
            tab.IntegerInverse.__init__, ch12_support.read_scopes) == originals
    assert tab.derive(F6)["d"] and tab.integer_inverse([[1, 1]]).kernel.shape == (2, 1)


def test_the_parser_may_still_solve_index_equations():
    """Reading a text with a divided index makes the parser itself solve an index equation (the integer inverse):
    a student's function that parses is not refused for it."""
    def parses(A):
        tab.parse("dx[b] = if {(b + 2) % 4 = 0} then (df[(b + 2) / 2 - 1]) else (0)", {"dx": (6,), "df": (3,)})
        return SOLUTIONS["index_solve"](A)

    assert ex.check_index_solve(parses)


def gradient_by_eq40(fn, argument):
    """Eq. 40 from the student's own pieces: every alpha of the box, tested against beta; no solving."""
    from tensoradbook.lang.expr import Atom, substitute
    from tensoradbook.lang.simplify import add, if_

    beta = [f"d{argument}_{n}" for n in range(len(fn.shapes[argument]))]
    seed = Element("d" + fn.name, tuple(Affine.index(i) for i in fn.indices))
    total = ZERO
    for (read, sums), adjoint in SOLUTIONS["sweep"](fn.body, seed).items():
        if read.name != argument:
            continue
        alpha = list(fn.indices) + [s.index for s in sums]
        fresh = {name: Affine.index(f"{name}_s") for name in alpha}
        body = substitute(adjoint, fresh)
        equal = tuple(Atom(index.substitute(fresh) - Affine.index(b)) for index, b in zip(read.indices, beta))
        body = if_(equal, body, ZERO)
        ranges = list(zip(fn.indices, fn.shapes[fn.name])) + [(s.index, None) for s in sums]
        for (name, size), s in reversed(list(zip(ranges, [None] * len(fn.indices) + list(sums)))):
            low, high = ((Affine.constant_value(0),), (Affine.constant_value(size - 1),)) if s is None else (
                tuple(b.substitute(fresh) for b in s.lower), tuple(b.substitute(fresh) for b in s.upper))
            body = Sum(f"{name}_s", low, high, body)
        total = add(total, body)
    return f"d{argument}[{'; '.join(beta)}] = {expr_text(total)}"


def test_a_gradient_over_the_whole_box_is_refused():
    """Eq. 40's gradients are right, and pass where the box is small; the check's large box refuses them by the count
    of their terms, before evaluating anything."""
    assert ex.check_algorithm4(gradient_by_eq40, functions=build.FUNCTIONS[1:3])
    result = ex.check_algorithm4(gradient_by_eq40)
    assert not result and "eq. 40" in messages(result)
    big = ex.check_algorithm4(gradient_by_eq40, functions=build.FUNCTIONS[-1:])
    assert not big and "eq. 40" in messages(big)


# --- the visible checks test what the hidden tests test -----------------------------------------------------------

MUTANTS = {  # answer -> {what the mutant gets wrong: (text of the solution, what replaces it)}
    "reads": {
        "the sums' ranges left out": ("for s in sums:  # eq. 52", "for s in ():  # eq. 52"),
        "only the first term of a max or min bound": ("for low in s.lower:", "for low in s.lower[:1]:"),
        "a bound's denominator dropped": ("high.numerator - k.scale(high.denominator)", "high.numerator - k"),
        "the output's upper ends left out": (
            "at_least_zero(Affine.constant_value(size - 1) - Affine.index(name))", "pass"),
        "the sums innermost first": ("[s.index for s in sums]", "[s.index for s in sums][::-1]"),
        "the offset left out": ("a = [int(index.constant) for index in read.indices]", "a = [0 for _ in read.indices]"),
        "a select's compared values skipped": (
            "for child in node.children():",
            "for child in (node.children() if not isinstance(node, Select) else (node.then, node.otherwise)):"),
    },
    "adjoints": {
        "an if passes its adjoint unconditionally": (
            "visit(node.then, if_(node.condition, adjoint, ZERO), sums)", "visit(node.then, adjoint, sums)"),
        "an if's else-branch gets nothing": ("visit(node.otherwise, if_(node.condition, ZERO, adjoint), sums)", "pass"),
        "a select treated as a leaf": ("elif isinstance(node, Select):", "elif False:"),
        "the seed left out": ("visit(node, seed, ())", 'visit(node, tab.parse("g[] = 1", {"g": ()}).body, ())'),
        "the paths into one read not added": ("add(found.get((node, sums), ZERO), adjoint)", "adjoint"),
        "a sum's body not visited": ("for child, partial in local_partials(node):",
                                     "for child, partial in ([] if isinstance(node, Sum) else local_partials(node)):"),
    },
    "index_solve": {
        "I without U": ("* U[r][n]", "* int(r == n)"),
        "s_r for 1 / s_r": ("Fraction(1, S[r][r])", "S[r][r]"),
        "the wrong columns of V": ("[row[R:] for row in V]", "[row[:M - R] for row in V]"),
        "no cokernel": ("U[R:]", "[]"),
    },
    "eliminate": {
        "no F": ("return bounds, [w for _, w in rows]", "return bounds, []"),
        "the rows without z_k dropped": ("rest.append((m, w))\n", "pass\n"),
        "no pairs combined": ("for _, mu, wu in upper:", "for _, mu, wu in upper[:0]:"),
        "a bound not divided by its coefficient": ("[v / m[k] for v in w]", "[v for v in w]"),
    },
    "gradient": {
        "I (beta - a) integral dropped (the report's eq. 46)": (
            "conditions += [Atom(v.numerator, v.denominator) for v in p if not v.is_integral]", "pass"),
        "eq. 34's conditions dropped": (
            "conditions += [Atom(-combine(row, rhs), 0, inequality=True) for row in F]", "pass"),
        "C (beta - a) = 0 dropped": ("conditions = [Atom(combine(row, target)) for row in C]", "conditions = []"),
        "the offset ignored": ("target = [Affine.index(b) - o for b, o in zip(beta, a)]",
                               "target = [Affine.index(b) for b, o in zip(beta, a)]"),
        "the sums over z left out": ("enumerate(bounds):", "enumerate(bounds[:0]):"),
        "the bounds of z on the wrong side": ("tuple(map(bound, lower)), tuple(map(bound, upper))",
                                              "tuple(map(bound, upper)), tuple(map(bound, lower))"),
    },
    "backprop": {
        "the consumers' contributions not added": ("adjoint.get(argument, 0) + dx", "dx"),
        "the seed 2": ("np.ones(program.shapes[program.name])", "2 * np.ones(program.shapes[program.name])"),
        "the definitions in the wrong order": ("reversed(program.definitions)", "program.definitions"),
    },
}


def _mutant(answer: str, old: str, new: str) -> dict:
    _, part = PARTS[answer]
    assert old in part.solution, (answer, old)
    return _namespace({answer: part.solution.replace(old, new)})


@pytest.mark.parametrize("answer, what", [(a, w) for a, ms in MUTANTS.items() for w in ms], ids=lambda v: str(v))
def test_the_visible_check_fails_every_mutant(answer, what):
    """Each mutant fails the visible check; so, where a hidden test fails it, the visible one did first."""
    namespace = _mutant(answer, *MUTANTS[answer][what])
    _, part = PARTS[answer]
    result = visible(part, namespace)
    assert not result and result.problems, f"{answer}, {what}: passes the visible check"


def test_the_report_s_conditions_fail_visibly_with_a_hint():
    for what, words in [("I (beta - a) integral dropped (the report's eq. 46)", "eq. 46"),
                        ("eq. 34's conditions dropped", "eq. 34"), ("C (beta - a) = 0 dropped", "eq. 16")]:
        result = visible(PARTS["gradient"][1], _mutant("gradient", *MUTANTS["gradient"][what]))
        assert words in messages(result), (what, str(result))
    no_f = visible(PARTS["eliminate"][1], _mutant("eliminate", *MUTANTS["eliminate"]["no F"]))
    assert "eq. 34" in messages(no_f) and "F must carry" in messages(no_f)


# --- feedback: what is wrong, never the right value ---------------------------------------------------------------

def test_reads_messages():
    right = SOLUTIONS["reads"]
    assert "misses reads" in messages(ex.check_reads(lambda fn: right(fn)[:-1], [SECTION6]))
    assert "more often" in messages(ex.check_reads(lambda fn: right(fn) + right(fn)[:1], [SECTION6]))
    shifted = ex.check_reads(lambda fn: [(t, al, A, a, R, [v - 1 for v in r]) for t, al, A, a, R, r in right(fn)],
                             [SECTION6])
    assert "a bound is missing or too wide" in messages(shifted)
    narrow = ex.check_reads(lambda fn: [(t, al, A, a, R, [v + 1 for v in r]) for t, al, A, a, R, r in right(fn)],
                            [SECTION6])
    assert "too narrow" in messages(narrow)
    assert "not index 0 of the read" in messages(ex.check_reads(
        lambda fn: [(t, al, [[c + 1 for c in row] for row in A], a, R, r) for t, al, A, a, R, r in right(fn)],
        [SECTION6]))
    assert "extended index" in messages(ex.check_reads(
        lambda fn: [(t, al[:2], [row[:2] for row in A], a, [row[:2] for row in R], r)
                    for t, al, A, a, R, r in right(fn)], [SECTION6]))
    assert "expression node" in messages(ex.check_reads(lambda fn: [(Element("d", ()), (), [], [], [], [])]))
    assert "raised ZeroDivisionError" in messages(ex.check_reads(lambda fn: 1 / 0))
    assert "your function" in messages(ex.check_reads(right(F6)))


def test_adjoint_messages_hide_the_adjoints():
    adjoints, sweep = SOLUTIONS["adjoints"], SOLUTIONS["sweep"]
    right = adjoints(F6)
    unseeded = ex.check_adjoints(lambda fn: {expr_text(r): expr_text(a) for (r, _), a in
                                             sweep(fn.body, Number(1)).items()}, [SECTION6])
    assert "leaves out the seed" in messages(unseeded) and hides(unseeded, *right.values())
    scalar = ("f[] = sin (x[] * y[]) * x[]", {"f": (), "x": (), "y": ()})
    one_path = ex.check_adjoints(lambda fn: {"x[]": "df[] * sin (x[] * y[])",
                                             "y[]": "df[] * x[] * cos (x[] * y[]) * x[]"}, [scalar])
    assert "one path only" in messages(one_path) and hides(one_path, *adjoints(tab.parse(*scalar)).values())
    flipped = ex.check_adjoints(lambda fn: {k: f"-({v})" for k, v in adjoints(fn).items()}, [SECTION6])
    assert "sign is off" in messages(flipped)
    padded = build.FUNCTIONS[9]
    ungated = ex.check_adjoints(_mutant("adjoints", *MUTANTS["adjoints"]["an if passes its adjoint "
                                                                         "unconditionally"])["adjoints"], [padded])
    assert "an if passes its adjoint" in messages(ungated)
    assert "two keys name the read" in messages(ex.check_adjoints(lambda fn: {"a[i; k]": "0", "a[i;k]": "0"},
                                                                  [SECTION6]))


def test_index_solve_messages_hide_the_matrices():
    index_solve = SOLUTIONS["index_solve"]

    def with_part(k, value):
        def answer(A):
            triple = list(index_solve(A))
            triple[k] = value(A, triple)
            return tuple(triple)
        return answer

    shown = [str(m) for m in index_solve(np.array(build.INDEX_MATRICES[0]))]
    cases = {
        "A I A is not A": with_part(0, lambda A, t: [[v * 2 for v in row] for row in t[0]]),
        "I A is not an integer matrix": with_part(
            0, lambda A, t: sympy.Matrix(np.array(A).tolist()).pinv().tolist() if len(A) else t[0]),
        "is not in the kernel": with_part(1, lambda A, t: [[1] * len(row) for row in t[1]]),
        "C A is not 0": with_part(2, lambda A, t: [[1] * len(A)] * len(t[2])),
        "use fractions.Fraction": with_part(0, lambda A, t: [[float(v) for v in row] for row in t[0]]),
        "must return a triple": lambda A: index_solve(A)[:2],
    }
    for expected, answer in cases.items():
        result = ex.check_index_solve(answer)
        assert expected in messages(result), (expected, str(result))
        assert hides(result, *shown)
        for formula in ("V S^+ U", "last M - R", "last N - R"):
            assert formula not in str(result)


def test_eliminate_messages():
    eliminate = SOLUTIONS["eliminate"]
    assert "must return a pair" in messages(ex.check_box_solutions(lambda M: eliminate(M)[0],
                                                                   systems=[build.SYSTEMS[3]]))
    assert "names z_0 or a variable before it" in messages(ex.check_box_solutions(
        lambda M: ([(lo, [row[:-1] + [1] for row in up]) for lo, up in eliminate(M)[0]], eliminate(M)[1]),
        systems=[build.SYSTEMS[3]]))
    assert "has no lower bound" in messages(ex.check_box_solutions(
        lambda M: ([([], up) for _, up in eliminate(M)[0]], eliminate(M)[1]), systems=[build.SYSTEMS[0]]))
    dropped = ex.check_box_solutions(lambda M: ([(lo, up[1:]) for lo, up in eliminate(M)[0]], eliminate(M)[1]),
                                     systems=[build.SYSTEMS[2]])
    assert "fails row" in messages(dropped) and "too loose" in messages(dropped)
    assert "Fraction" in messages(ex.check_box_solutions(
        lambda M: ([([[float(v) for v in row] for row in lo], up) for lo, up in eliminate(M)[0]], eliminate(M)[1]),
        systems=[build.SYSTEMS[3]]))


def test_gradient_messages_hide_the_gradient():
    gradient = SOLUTIONS["gradient"]
    grads = tab.derive(F6)
    doubled = ex.check_algorithm4(lambda fn, a: gradient(fn, a).replace("= ", "= 2 * (", 1) + ")", [SECTION6])
    assert "2 times the right value" in messages(doubled) and hides(doubled, str(grads["a"]))
    assert "call it 'da'" in messages(ex.check_algorithm4(lambda fn, a: gradient(fn, a).replace("da[", "g[", 1),
                                                          [SECTION6]))
    assert "expression node" in messages(ex.check_algorithm4(lambda fn, a: Number(0)))
    assert "must be text" in messages(ex.check_algorithm4(lambda fn, a: 0))
    assert "raised KeyError" in messages(ex.check_algorithm4(lambda fn, a: {}[a]))


def test_backprop_messages():
    backprop = SOLUTIONS["backprop"]
    half = ex.check_algorithm4(lambda p, v: {k: g / 2 for k, g in backprop(p, v).items()}, NET)
    assert "not exact" in messages(half) and "0.5 times the right value" in messages(half)
    missing = ex.check_algorithm4(lambda p, v: {k: g for k, g in backprop(p, v).items() if k != "W"}, NET)
    assert "no gradient for the input W" in messages(missing)
    shaped = ex.check_algorithm4(lambda p, v: {k: np.ravel(g) for k, g in backprop(p, v).items()}, NET)
    assert "has shape" in messages(shaped)


def test_a_check_refuses_functions_it_cannot_read():
    with pytest.raises(ValueError, match="index of its own"):
        ex.check_reads(SOLUTIONS["reads"], [("f[i] = sum{k}_0^1 (x[k]) + sum{k}_0^1 (x[k + 1])",
                                            {"f": (2,), "x": (3,)})])
    with pytest.raises(ValueError, match="start at 0"):
        ex.check_adjoints(SOLUTIONS["adjoints"], [("f[i] = sum{k}_(-1)^0 (x[i + k + 1])", {"f": (2,), "x": (3,)})])


# --- hypothesis: any right triple; the loops of any small system ------------------------------------------------

matrices = st.integers(1, 2).flatmap(lambda n: st.integers(1, 3).flatmap(
    lambda m: st.lists(st.lists(st.integers(-3, 3), min_size=m, max_size=m), min_size=n, max_size=n)))


def unimodular(rng: random.Random, n: int) -> sympy.Matrix:
    W = sympy.eye(n)
    for _ in range(3 * n):
        i, j = rng.sample(range(n), 2) if n > 1 else (0, 0)
        if i != j:
            W[i, :] = W[i, :] + rng.randint(-2, 2) * W[j, :]
        if rng.random() < 0.3:
            W[i, :] = -W[i, :]
    return W


@SETTINGS
@given(matrices, st.randoms(use_true_random=False))
def test_index_solve_other_right_triples_pass(A, rng):
    """I + K X (X integer), K W (W unimodular) and T C (T invertible) are as right as the Smith matrices."""
    I, K, C = (sympy.Matrix(len(m), len(m[0]) if m else 0, [v for row in m for v in row])
               for m in SOLUTIONS["index_solve"](np.array(A)))
    N, M = len(A), len(A[0])
    K = K.reshape(M, K.shape[1]) if K.shape[1] else sympy.zeros(M, 0)
    X = sympy.Matrix(K.shape[1], N, lambda *_: rng.randint(-2, 2))
    T = unimodular(rng, C.shape[0]) * (2 if C.shape[0] else 1)
    other = ((I + K * X).tolist(), (K * unimodular(rng, K.shape[1])).tolist() if K.shape[1] else [[]] * M,
             (T * C).tolist() if C.shape[0] else [])
    result = ex.check_index_solve(lambda _: other, matrices=[A])
    assert result, str(result)


box_systems = st.integers(1, 3).flatmap(lambda k: st.lists(
    st.lists(st.integers(-2, 2), min_size=k, max_size=k), min_size=0, max_size=3).map(
        lambda extra: [[int(i == j) for j in range(k)] for i in range(k)]
        + [[-int(i == j) for j in range(k)] for i in range(k)] + extra))


@SETTINGS
@given(box_systems, st.integers(0, 3))
def test_eliminate_right_on_bounded_systems(M, seed):
    """On any bounded system (a box and some rows more) the solution's loops visit exactly the integer points that
    brute force finds in the box, and the check agrees."""
    assert ex.check_box_solutions(SOLUTIONS["eliminate"], systems=[M], seed=seed)
    bounds, F = SOLUTIONS["eliminate"](M)
    kappa = len(M[0])
    for b in ch12_solve._right_sides(len(M), seed)[:10]:
        brute = sorted(z for z in itertools.product(range(-7, 8), repeat=kappa)
                       if all(sum(c * v for c, v in zip(row, z)) >= bn for row, bn in zip(M, b)))
        assert sorted(ch12_solve._loop_points(bounds, F, b, kappa, budget=10**5)) == brute


def test_the_default_batteries_are_the_chapter_s():
    """The chapter's text counts the cases its checks try."""
    chapter = json.loads((paths.NOTEBOOKS / "12_build_it_yourself.ipynb").read_text())
    text = " ".join("".join(c["source"]) for c in chapter["cells"] if c["cell_type"] == "markdown")
    words = {14: "fourteen", 18: "eighteen", 9: "nine", 40: "forty"}
    assert len(build.FUNCTIONS) == 14 and f"{words[len(build.FUNCTIONS)]} functions" in text
    assert f"{words[len(build.INDEX_MATRICES)]} matrices" in text
    assert f"{words[len(build.SYSTEMS)]} systems" in text and f"{words[ch12_solve.RIGHT_SIDES]} right sides" in text
    minutes = [c["metadata"]["tensoradbook"] for c in chapter["cells"] if "tensoradbook" in c["metadata"]]
    assert [m["exercise"] for m in minutes] == [1, 2, 3, 4, 5, 6] and all(m["minutes"] > 10 for m in minutes)


def test_the_text_gives_no_answer():
    """No cell of the chapter transcribes a solution: the formulas of the index solve, the loops of the
    elimination, the lines of Algorithm 4's assembly."""
    chapter = json.loads((paths.NOTEBOOKS / "12_build_it_yourself.ipynb").read_text())
    text = "\n".join("".join(c["source"]) for c in chapter["cells"] if "# given:" not in "".join(c["source"]))
    for answer in ("V S^+ U", "VS^+U", "V[:, R:]", "U[R:", "V_{:,R:}", "U_{R:", "kernel_loops", "index_matrix(",
                   "extended_domain", "integer_inverse", "tab.fourier_motzkin", "reverse_accumulate"):
        assert answer not in text, answer
    for _, part in PARTS.values():
        for line in textwrap.dedent(part.solution).splitlines():
            line = line.split("#")[0].strip()
            if len(line) > 40:
                assert line not in text, line

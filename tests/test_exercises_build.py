"""The check functions of chapter 12 (build the core yourself): right answers pass in any form, also when called
across the grader's wire; typical wrong answers fail with a message that says what is wrong and never the right
value; None says "no answer yet". The right answers are the assignment's own (classroom/course.py) and others
written here independently of the checks (another walk, the sweep, Fourier-Motzkin loops, Algorithm 4 and eq. 40 by
brute force); the checks compare with the core and with brute force."""

import itertools
import json
import math
import random
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from classroom import course as cc
from classroom import wire
from feedback import feedback, hides, messages
from tensoradbook import exercises as ex
from tensoradbook.ad.derive import extended_domain
from tensoradbook.exercises.ch12_build import BOX_CASES, INDEX_MATRICES, index_matrix, kernel_loops
from tensoradbook.lang.expr import Affine, Atom, Binary, Element, Number, Sum, Unary, substitute
from tensoradbook.lang.printer import expr_text
from tensoradbook.lang.simplify import ZERO, add, if_

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SECTION6 = ("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
            {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)})
F6 = tab.parse(*SECTION6)
SCALAR = ("f[] = sin (x[] * y[]) * x[]", {"f": (), "x": (), "y": ()})
NESTED = ("f[i] = sum{k}_0^2 (sum{l}_0^1 (x[i + k; l] * w[l]))", {"f": (3,), "x": (5, 2), "w": (2,)})
TRIANGLE = ("f[i] = exp (sum{k}_0^i (x[i - k] * y[k]))", {"f": (4,), "x": (4,), "y": (4,)})  # bounds move with i
MORE = [  # Algorithm 4's cases beyond sec. 6: a sum, an index equation, strides, two reads, a division, a delta
    ("f[i; j] = sum{k}_0^4 (x[i; k] * y[k; j])", {"f": (3, 4), "x": (3, 5), "y": (5, 4)}),
    ("f[i; j] = exp (x[4 * i + j])", {"f": (3, 4), "x": (12,)}),
    ("f[i] = sum{k}_0^3 (x[2 * i + k])", {"f": (4,), "x": (10,)}),
    ("f[i] = x[i] * x[i + 1]", {"f": (3,), "x": (5,)}),
    ("f[i] = x[2 * i] ** 2", {"f": (3,), "x": (6,)}),
    ("f[i] = x[i; i] ** 3 * w[]", {"f": (3,), "x": (3, 3), "w": ()}),
    ("f[i] = x[i] / (y[i] - x[i])", {"f": (4,), "x": (4,), "y": (4,)}),
]


# --- right answers ---------------------------------------------------------------------------------------------

def _instructor_answers() -> dict:
    """The assignment's own solutions (classroom/course.py), run on its setup and data as nbgrader's source does:
    the tree walk, the sweep, the index solve and the affine combination are used as they are there."""
    assignment = cc.BY_STEM["12_build_it_yourself"]
    namespace: dict = {}
    exec(assignment.setup, namespace)
    for exercise in assignment.exercises:
        exec(exercise.given, namespace)
        for part in exercise.parts:
            exec(part.solution, namespace)
    return namespace


_INSTRUCTOR = _instructor_answers()
reads, sweep, index_solve, combine = (_INSTRUCTOR[name] for name in ("reads", "sweep", "index_solve", "combine"))


def reads_by_stack(fn):  # another walk, another order, lists for tuples, another spelling of the indices
    found, pending = [], [(fn.body, [])]
    while pending:
        node, scope = pending.pop()
        if isinstance(node, Element):
            found.append([expr_text(node).replace(" ", "  "), list(scope)])
        pending += [(child, scope + ([node.index] if isinstance(node, Sum) else [])) for child in node.children()]
    return found


def seed_of(fn):
    return Element("d" + fn.name, tuple(Affine.index(i) for i in fn.indices))


def adjoints(fn):
    return {expr_text(read): expr_text(adjoint) for (read, _), adjoint in sweep(fn.body, seed_of(fn)).items()}


def adjoints_unsimplified(fn):
    """The same adjoints with the operations' own derivative rules written out and nothing simplified."""
    found = {}

    def partials(node):
        u = node.arg if isinstance(node, Unary) else node.left
        rules = {"exp": [node], "neg": [Number(-1)], "sin": [Unary("cos", u)], "cos": [Unary("neg", Unary("sin", u))]}
        if isinstance(node, Unary):
            return list(zip([u], rules[node.op]))
        v = node.right
        if node.op == "**":
            return [(u, Binary("*", v, Binary("**", u, Binary("-", v, Number(1)))))]
        return list(zip([u, v], {"+": [Number(1), Number(1)], "-": [Number(1), Number(-1)], "*": [v, u],
                                 "/": [Binary("/", Number(1), v), Unary("neg", Binary("/", u, Binary("*", v, v)))]}
                        [node.op]))

    def visit(node, adjoint):
        if isinstance(node, Element):
            found[node] = Binary("+", found[node], adjoint) if node in found else adjoint
        elif isinstance(node, Sum):
            visit(node.body, adjoint)
        elif not isinstance(node, Number):
            for child, partial in partials(node):
                visit(child, Binary("*", adjoint, partial))

    visit(fn.body, seed_of(fn))
    return {expr_text(read): expr_text(adjoint) for read, adjoint in found.items()}



def solutions_in_box(A, offset, box, beta):
    I, K, C = index_solve(A)
    target = [b - a for b, a in zip(beta, offset)]
    if any(sum(c * t for c, t in zip(row, target)) for row in C):
        return []
    p = [sum(Fraction(v) * t for v, t in zip(row, target)) for row in I]
    if any(v.denominator != 1 for v in p):
        return []
    kappa = len(K[0]) if K else 0
    rows = [list(row) for row in K] + [[-v for v in row] for row in K]
    rhs = [low - v for (low, _), v in zip(box, p)] + [v - high for (_, high), v in zip(box, p)]
    system = tab.fourier_motzkin(np.array(rows, dtype=object).reshape(len(rows), kappa))
    return [tuple(int(v + sum(k * zk for k, zk in zip(row, z))) for v, row in zip(p, K))
            for z in system.integer_points(rhs)]


def solutions_by_brute_force(A, offset, box, beta):
    A = np.asarray(A)
    return [alpha for alpha in itertools.product(*(range(low, high + 1) for low, high in box))
            if list(A.dot(alpha) + np.asarray(offset, dtype=int)) == list(beta)][::-1]



def gradient(fn, argument):
    """Algorithm 4 with the helpers of the chapter."""
    name = "d" + argument
    beta = [f"{name}_{n}" for n in range(len(fn.shapes[argument]))]
    total = ZERO
    for (read, sums), adjoint in sweep(fn.body, seed_of(fn)).items():
        if read.name != argument:
            continue
        alpha, R, r = extended_domain(fn, sums)
        A, a = index_matrix(read, alpha)
        I, K, C = index_solve(A)
        target = [Affine.index(b) - c for b, c in zip(beta, a)]
        conditions = [Atom(combine(row, target)) for row in C]
        p = [combine(row, target) for row in I]
        conditions += [Atom(v.numerator, v.denominator) for v in p if not v.is_integral]
        kappa = len(K[0]) if K else 0
        z = [f"{name}_z{n}" for n in range(kappa)]
        at = {n: p[j] + Affine.of(dict(zip(z, K[j]))) for j, n in enumerate(alpha)}
        RK = np.array([[sum(R[i][j] * K[j][c] for j in range(len(alpha))) for c in range(kappa)]
                       for i in range(len(R))], dtype=object).reshape(len(R), kappa)
        rhs = [Affine.constant_value(r[i]) - combine(R[i], p) for i in range(len(R))]
        bounds, feasible = kernel_loops(tab.fourier_motzkin(RK), rhs, z)
        body = substitute(adjoint, at)
        for k, (lower, upper) in enumerate(bounds):
            body = Sum(z[k], lower, upper, body)
        total = add(total, if_(tuple(conditions + feasible), body, ZERO))
    return f"{name}[{'; '.join(beta)}] = {expr_text(total)}"


def gradient_as_function(fn, argument):
    grads = tab.derive(fn)
    return tab.parse(gradient(fn, argument), {**grads[argument].shapes, "d" + argument: fn.shapes[argument]})


def gradient_by_eq40(fn, argument):
    """Eq. 40: every extended index alpha of the output and the sums, tested against beta; no solving."""
    beta = [f"g{n}" for n in range(len(fn.shapes[argument]))]
    total = ZERO
    for (read, sums), adjoint in sweep(fn.body, seed_of(fn)).items():
        if read.name != argument:
            continue
        alpha, _, _ = extended_domain(fn, sums)
        fresh = {name: f"{name}_s" for name in alpha}
        body = substitute(adjoint, {n: Affine.index(m) for n, m in fresh.items()})
        equal = tuple(Atom(index.substitute({n: Affine.index(m) for n, m in fresh.items()}) - Affine.index(b))
                      for index, b in zip(read.indices, beta))
        body = if_(equal, body, ZERO)
        ranges = list(zip(fn.indices, fn.shapes[fn.name])) + [(s.index, s.upper[0].constant + 1) for s in sums]
        for name, size in reversed(ranges):
            body = Sum(fresh[name], (Affine.constant_value(0),), (Affine.constant_value(size - 1),), body)
        total = add(total, body)
    return f"d{argument}[{'; '.join(beta)}] = {expr_text(total)}"


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


# --- the placeholder and the exports --------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: ex.check_reads(F6, None),
    lambda: ex.check_adjoints(F6, None),
    lambda: ex.check_index_solve(None),
    lambda: ex.check_box_solutions(None),
    lambda: ex.check_algorithm4(F6, "d", None),
])
def test_none_is_no_answer_yet(call):
    result = call()
    assert not result.ok and result.pending
    assert "no answer yet" in str(result)


def test_exported():
    for name in ("check_reads", "check_adjoints", "check_index_solve", "check_box_solutions", "check_algorithm4"):
        assert name in ex.__all__
        assert name in ex.__doc__


# --- right answers pass, in the notebook and across the wire ----------------------------------------------------

@pytest.mark.parametrize("wired", [False, True], ids=["notebook", "wire"])
def test_right_answers_pass(wired):
    call = across_wire if wired else (lambda f: f)
    for case in (SECTION6, SCALAR, NESTED, TRIANGLE, *MORE):
        assert ex.check_reads(case[0], call(reads), shapes=case[1])
        assert ex.check_adjoints(case[0], call(adjoints), shapes=case[1])
    assert ex.check_index_solve(call(index_solve))
    assert ex.check_box_solutions(call(solutions_in_box))
    for argument in F6.arguments:
        assert ex.check_algorithm4(F6, argument, call(gradient))
    for argument in ("x", "y"):
        assert ex.check_algorithm4(TRIANGLE[0], argument, call(gradient), shapes=TRIANGLE[1])


@pytest.mark.parametrize("case", [SECTION6, SCALAR, NESTED, *MORE], ids=lambda c: c[0])
def test_other_right_forms_pass(case):
    fn = tab.parse(*case)
    assert ex.check_reads(fn, reads_by_stack), ex.check_reads(fn, reads_by_stack)
    result = ex.check_adjoints(fn, adjoints_unsimplified)
    assert result, str(result)
    for argument in fn.arguments:
        for form in (gradient, gradient_as_function, gradient_by_eq40):
            result = ex.check_algorithm4(fn, argument, form)
            assert result, f"{form.__name__}, d{argument}: {result}"


def test_reads_and_adjoints_of_a_sum_whose_bounds_move():
    """A read such as x[i - k] under sum{k}_0^i leaves x's shape outside the sum's range: the checks read the
    student's text within the sum's bounds, not on the box of every index's values."""
    assert ex.check_reads(TRIANGLE[0], reads_by_stack, shapes=TRIANGLE[1])
    assert ex.check_adjoints(TRIANGLE[0], adjoints_unsimplified, shapes=TRIANGLE[1])
    doubled = ex.check_adjoints(TRIANGLE[0], lambda fn: {k: f"2 * ({v})" for k, v in adjoints(fn).items()},
                                shapes=TRIANGLE[1])
    assert "every value is 2 times the right one" in messages(doubled)


def test_box_solutions_by_brute_force_pass():
    assert ex.check_box_solutions(solutions_by_brute_force)


def test_a_read_with_zero_adjoint_may_be_left_out():
    fn = tab.parse("f[i] = x[i] * 0 + y[i]", {"f": (3,), "x": (3,), "y": (3,)})
    assert ex.check_adjoints(fn, lambda fn: {"y[i]": "df[i]"})
    assert ex.check_adjoints(fn, lambda fn: {"y[i]": "df[i]", "x[i]": "0"})


# --- hypothesis: any right triple, any order of the box's solutions ---------------------------------------------

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
    I, K, C = (sympy.Matrix(len(m), len(m[0]) if m else 0, [v for row in m for v in row]) for m in index_solve(A))
    N, M = len(A), len(A[0])
    K = K.reshape(M, K.shape[1]) if K.shape[1] else sympy.zeros(M, 0)
    X = sympy.Matrix(K.shape[1], N, lambda *_: rng.randint(-2, 2))
    T = unimodular(rng, C.shape[0]) * (2 if C.shape[0] else 1)
    other = ((I + K * X).tolist(), (K * unimodular(rng, K.shape[1])).tolist() if K.shape[1] else [[]] * M,
             (T * C).tolist() if C.shape[0] else [])
    result = ex.check_index_solve(lambda _: other, matrices=[A])
    assert result, str(result)


@SETTINGS
@given(matrices, st.randoms(use_true_random=False))
def test_index_solve_a_kernel_sublattice_fails(A, rng):
    I, K, C = index_solve(A)
    if not K or not K[0]:
        return
    column = rng.randrange(len(K[0]))
    scaled = [[v * (2 if c == column else 1) for c, v in enumerate(row)] for row in K]
    result = ex.check_index_solve(lambda _: (I, scaled, C), matrices=[A])
    assert "sublattice of index 2" in messages(result)


@SETTINGS
@given(st.sampled_from(BOX_CASES), st.randoms(use_true_random=False))
def test_box_solutions_in_any_order_pass_and_one_missing_fails(case, rng):
    right = solutions_in_box(*case)
    shuffled = list(right)
    rng.shuffle(shuffled)
    assert ex.check_box_solutions(lambda *_: shuffled, cases=[case])
    if right:
        dropped = shuffled[:-1]
        result = ex.check_box_solutions(lambda *_: dropped, cases=[case])
        assert "misses solutions" in messages(result)
        assert hides(result, str(shuffled[-1]))


@SETTINGS
@given(st.integers(1, 3), st.integers(-3, 3).filter(bool), st.integers(-3, 3), st.integers(0, 2),
       st.integers(2, 5), st.integers(-4, 12))
def test_box_solutions_agree_with_brute_force(a, b, offset, low, size, beta):
    case = ([[a, b]], [offset], [(low, low + size), (0, size)], [beta])
    assert sorted(solutions_in_box(*case)) == sorted(solutions_by_brute_force(*case))
    assert ex.check_box_solutions(solutions_in_box, cases=[case])


# --- wrong answers: what is wrong, never the right value --------------------------------------------------------

def test_reads_messages():
    shallow = ex.check_reads(F6, lambda fn: [r for r in reads(fn) if not r[1]])
    assert "misses reads" in messages(shallow) and "body of each Sum" in messages(shallow)
    assert hides(shallow, "d[i + k]", "('k',)")
    flat = ex.check_reads(F6, lambda fn: [(text, ()) for text, _ in reads(fn)])
    assert "are not the ones around it" in messages(flat) and hides(flat, "('k',)")
    inverted = ex.check_reads(NESTED[0], lambda fn: [(t, s[::-1]) for t, s in reads(fn)], shapes=NESTED[1])
    assert "outermost sum comes first" in messages(inverted) and hides(inverted, "('k', 'l')")
    once = ex.check_reads(SCALAR[0], lambda fn: list(dict.fromkeys(reads(fn))), shapes=SCALAR[1])
    assert "a read written twice is listed twice" in messages(once)
    twice = ex.check_reads(F6, lambda fn: reads(fn) + reads(fn)[:1])
    assert "more often than f reads it" in messages(twice)
    assert "does not read d[i]" in messages(ex.check_reads(F6, lambda fn: reads(fn)[:3] + [("d[i]", ("k",))]))
    assert "expression node" in messages(ex.check_reads(F6, lambda fn: [(Element("d", ()), ())]))
    assert "must return a list of pairs" in messages(ex.check_reads(F6, lambda fn: "a[i; k]"))
    assert "raised ZeroDivisionError" in messages(ex.check_reads(F6, lambda fn: 1 / 0))
    assert "your function" in messages(ex.check_reads(F6, reads(F6)))


def test_adjoint_messages_hide_the_adjoints():
    right = adjoints(F6)
    unseeded = ex.check_adjoints(F6, lambda fn: {k: expr_text(a) for (r, _), a in sweep(fn.body, Number(1)).items()
                                                 for k in [expr_text(r)]})
    assert "leaves out the seed" in messages(unseeded) and hides(unseeded, *right.values())
    one_path = ex.check_adjoints(SCALAR[0], lambda fn: {"x[]": "df[] * sin (x[] * y[])",
                                                        "y[]": "df[] * x[] * cos (x[] * y[]) * x[]"},
                                 shapes=SCALAR[1])
    assert "one path only" in messages(one_path) and "eq. 2" in messages(one_path)
    assert hides(one_path, *adjoints(tab.parse(*SCALAR)).values())
    flipped = ex.check_adjoints(F6, lambda fn: {k: f"-({v})" for k, v in adjoints(fn).items()})
    assert "sign is off" in messages(flipped)
    wrong_rule = ex.check_adjoints(F6, lambda fn: {**adjoints(fn), "d[i + k]": right["d[i + k]"].replace(
        "d[i + k] ** 2", "d[i + k]")})
    assert "local derivatives" in messages(wrong_rule) and hides(wrong_rule, right["d[i + k]"])
    two_for_three = right["d[i + k]"].replace("3 *", "2 *")
    wrong_factor = ex.check_adjoints(F6, lambda fn: {**adjoints(fn), "d[i + k]": two_for_three})
    assert "constant factor is off" in messages(wrong_factor) and hides(wrong_factor, right["d[i + k]"])
    missing = ex.check_adjoints(F6, lambda fn: {k: v for k, v in adjoints(fn).items() if k != "c[i; i]"})
    assert "no adjoint for the read c[i; i]" in messages(missing)
    broken = ex.check_adjoints(F6, lambda fn: {**adjoints(fn), "a[i; k]": "df[i; j] *"})
    assert "cannot be read" in messages(broken)
    assert "expr_text(node)" in messages(ex.check_adjoints(F6, lambda fn: {"a[i; k]": Number(1)}))
    assert "two keys name the read" in messages(ex.check_adjoints(F6, lambda fn: {"a[i; k]": "0", "a[i;k]": "0"}))
    assert "must return a dict" in messages(ex.check_adjoints(F6, lambda fn: list(adjoints(fn).items())))


def test_adjoint_feedback_hides_the_values():
    """On random inputs the check names the student's value at the point, never the right one."""
    fn, wrong = tab.parse(*SCALAR), {"x[]": "df[] * sin (x[] * y[])", "y[]": "df[] * x[] * cos (x[] * y[]) * x[]"}
    rng = np.random.default_rng(0)
    values = {"x": rng.uniform(0.5, 1.5), "y": rng.uniform(0.5, 1.5), "df": rng.standard_normal(())}
    right = tab.derive(fn).evaluate({"x": values["x"], "y": values["y"]}, values["df"])["x"]
    assert hides(ex.check_adjoints(fn, lambda _: wrong), float(right))


def test_index_solve_messages_hide_the_matrices():
    def with_part(k, value):
        def answer(A):
            triple = list(index_solve(A))
            triple[k] = value(A, triple)
            return tuple(triple)
        return answer

    smith = [index_solve(A) for A in INDEX_MATRICES[:1]]
    shown = [str(m) for triple in smith for m in triple]
    cases = {
        "A I A is not A": with_part(0, lambda A, t: [[v * 2 for v in row] for row in t[0]]),
        "I A is not an integer matrix": with_part(
            0, lambda A, t: sympy.Matrix(np.array(A).tolist()).pinv().tolist() if len(A) else t[0]),
        "is not in the kernel": with_part(1, lambda A, t: [[1] * len(row) for row in t[1]]),
        "is the last M - R columns of V": with_part(1, lambda A, t: [row[:-1] for row in t[1]]),
        "C A is not 0": with_part(2, lambda A, t: [[1] * len(A)] * len(t[2])),
        "conditions C beta = 0": with_part(2, lambda A, t: t[2] + [[0] * len(A)]),
        "use fractions.Fraction": with_part(0, lambda A, t: [[float(v) for v in row] for row in t[0]]),
        "return nested lists": with_part(1, lambda A, t: np.array(t[1], dtype=object)),
        "must return a triple": lambda A: index_solve(A)[:2],
    }
    for expected, answer in cases.items():
        result = ex.check_index_solve(answer)
        assert expected in messages(result), (expected, str(result))
        assert hides(result, *shown)
    transposed = ex.check_index_solve(with_part(0, lambda A, t: np.array(t[0], dtype=object).T.tolist()),
                                      matrices=[[[1, 0, 1]]])
    assert "has 3 rows and 1 columns" in messages(transposed)


def test_index_solve_object_arrays_fail_across_the_wire_too():
    answer = across_wire(lambda A: tuple(np.array(m, dtype=object) for m in index_solve(A)))
    assert "use numbers" in messages(ex.check_index_solve(answer))


def test_box_messages():
    ignores_offset = ex.check_box_solutions(lambda A, a, box, beta: solutions_in_box(A, [0] * len(a), box, beta))
    assert "offset a subtracted" in messages(ignores_offset)
    def widened(A, a, box, beta):
        return solutions_in_box(A, a, [(low - 1, high + 1) for low, high in box], beta)
    assert "lies outside the box" in messages(ex.check_box_solutions(widened))
    repeated = ex.check_box_solutions(lambda *case: solutions_in_box(*case) * 2)
    assert "more than once" in messages(repeated)
    assert "tuple of 3 integers" in messages(ex.check_box_solutions(lambda *case: [(0.5, 0, 0)]))
    empty = ex.check_box_solutions(lambda *case: [], cases=BOX_CASES[:1])
    assert "misses solutions" in messages(empty)
    assert hides(empty, *(str(alpha) for alpha in solutions_in_box(*BOX_CASES[0])))


def test_algorithm4_messages_hide_the_gradient():
    grads = tab.derive(F6)
    text = gradient(F6, "d")
    unbounded = ex.check_algorithm4(F6, "d", lambda fn, a: text.replace("max [dd_0 - 2; 0]", "0"))
    assert "cannot be read" in messages(unbounded) and "leaves" in messages(unbounded)
    no_delta = ex.check_algorithm4(F6, "c", lambda fn, a: gradient(fn, a).replace("dc_1 - dc_0 = 0 and ", ""))
    assert "no element of f reads c[0; 1]" in messages(no_delta) and "eq. 16" in messages(no_delta)
    assert hides(no_delta, str(grads["c"]), gradient(F6, "c"))
    doubled = ex.check_algorithm4(F6, "d", lambda fn, a: text.replace("= sum", "= 2 * sum", 1))
    assert "2 times the right value" in messages(doubled)
    narrow = ex.check_algorithm4(F6, "d", lambda fn, a: text.replace("min [dd_0; 4]", "min [dd_0; 3]"))
    assert "too narrow" in messages(narrow)
    rng = np.random.default_rng(0)
    values = {name: rng.uniform(0.5, 1.5, F6.shapes[name]) for name in F6.arguments}
    right = grads.evaluate(values, rng.standard_normal((3, 4)))["d"]
    assert hides(narrow, *(float(v) for v in right if v), str(grads["d"]))
    assert "call it 'dd'" in messages(ex.check_algorithm4(F6, "d", lambda fn, a: text.replace("dd[dd_0]", "g[dd_0]")))
    assert "expression node" in messages(ex.check_algorithm4(F6, "d", lambda fn, a: Number(0)))
    assert "must be text" in messages(ex.check_algorithm4(F6, "d", lambda fn, a: 0))
    assert "raised KeyError" in messages(ex.check_algorithm4(F6, "d", lambda fn, a: {}[a]))
    with pytest.raises(ValueError, match="not an argument"):
        ex.check_algorithm4(F6, "x", gradient)


def test_checks_refuse_functions_they_cannot_read():
    with pytest.raises(ValueError, match="index of its own"):
        ex.check_reads("f[i] = sum{k}_0^1 (x[k]) + sum{k}_0^1 (x[k + 1])", reads, shapes={"f": (2,), "x": (3,)})
    with pytest.raises(ValueError, match="start at 0"):
        ex.check_adjoints("f[i] = sum{k}_(-1)^0 (x[i + k + 1])", adjoints, shapes={"f": (2,), "x": (3,)})


def test_kernel_loops_are_the_loops_of_eq_45():
    """The helper's bounds enumerate exactly the z of Sigma(beta) (eq. 42) for each beta."""
    A, a = index_matrix(F6.body.arg.arg.body.right.left, ["i", "j", "k"])
    assert A.tolist() == [[1, 0, 1]] and a == [0]
    I, K, _ = index_solve(A)
    beta = Affine.index("b")
    rhs = [Affine.constant_value(-low) for low in (0, 0, 0)]
    R = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [-1, 0, 0], [0, -1, 0], [0, 0, -1]]
    r = [0, 0, 0, -2, -3, -4]
    p = [combine(row, [beta]) for row in I]
    rhs = [Affine.constant_value(r[i]) - combine(R[i], p) for i in range(6)]
    RK = np.array([[sum(R[i][j] * K[j][c] for j in range(3)) for c in range(2)] for i in range(6)], dtype=object)
    bounds, conditions = kernel_loops(tab.fourier_motzkin(RK), rhs, ["z0", "z1"])
    assert not conditions
    for b in range(-1, 9):
        def value(affines, env, pick):
            return pick(math.ceil(t.evaluate(env)) if pick is max else math.floor(t.evaluate(env)) for t in affines)
        points = []
        high1 = value(bounds[1][1], {"b": b}, min)
        for z1 in range(value(bounds[1][0], {"b": b}, max), high1 + 1):
            env = {"b": b, "z1": z1}
            points += [(z0, z1) for z0 in range(value(bounds[0][0], env, max), value(bounds[0][1], env, min) + 1)]
        alphas = sorted(tuple(int(p_.evaluate({"b": b}) + sum(k * z for k, z in zip(row, pt))) for p_, row in zip(p, K))
                        for pt in points)
        assert alphas == sorted(solutions_by_brute_force([[1, 0, 1]], [0], [(0, 2), (0, 3), (0, 4)], [b]))


def test_feedback_is_words_not_objects():
    """Every verdict prints as text a student can read (no reprs of nodes or arrays)."""
    for result in (ex.check_reads(F6, lambda fn: 3), ex.check_index_solve(lambda A: None),
                   ex.check_box_solutions(lambda *case: None), ex.check_algorithm4(F6, "d", lambda fn, a: None)):
        text = feedback(result)
        assert "Element(" not in text and "array(" not in text and text.strip()


def test_the_chapters_placeholder_is_named():
    for answer in (lambda *_: NotImplemented, across_wire(lambda *_: NotImplemented)):
        result = ex.check_index_solve(answer)
        assert "returns NotImplemented, the chapter's placeholder" in messages(result)

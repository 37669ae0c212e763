"""Grammar-based fuzzing of the parser and everything after it.

For every text from tests/grammar.py, :func:`tensoradbook.parse` either refuses it with an
:class:`ExpressionError` whose message shows a caret line, or returns a function that

* derives (:func:`tensoradbook.ad.derive`);
* prints (``str``) as a text that parses back to the same tree, and so does each derivative;
* compiles for numpy to the reference evaluator's values (``fn.evaluate``), its gradients to
  ``grads.evaluate``'s;
* has gradients that agree with finite differences, where its values are finite;
* for a fixed subset of the grammar's cases, compiles for numba, numba-scatter, cuda and
  cuda-scatter (the simulator, tests/conftest.py) to the reference's values too.

Texts the grammar writes as valid must be accepted; texts with non-ASCII digits must not be. Any
other exception, or a case running past its time limit, is a failure naming the text and shapes.
Each test checks all its cases and then reports every distinct failure (by phase, exception and
place), with the shortest text that shows it.

Under CI (CI=true) the cases come from a fixed seed, so every run checks the same texts; locally
each run draws a new seed, printed in the report, and ``FUZZ_SEED=<seed>`` replays it.
"""

import itertools
import math
import os
import random
import re
import traceback
from dataclasses import dataclass

import numpy as np
import pytest

import tensoradbook as tab
from tensoradbook.lang.expr import Element, ExpressionError, If, Number, Select, Sum, Unary, walk
from tensoradbook.lang.evaluate import MAX_WORK, bound_value
from tensoradbook.ad.gradcheck import directional_derivatives, random_arguments
from tensoradbook.codegen import GATHER_TARGETS
from conftest import IN_CI
from grammar import Case, Grammar, extreme_cases
from alarm import time_limit

CI_SEED = 20240610
SEED = int(os.environ.get("FUZZ_SEED") or (CI_SEED if IN_CI else random.SystemRandom().randrange(10 ** 9)))

# ~2.5 minutes on 2 cores: grammar ~50 s, targets ~25 s, mutated ~15 s, extreme ~30 s
GRAMMAR_CASES = 1500
MUTATED_CASES = 3000
TARGET_CASES = 10           # grammar cases compiled for every other target: ~2.5 s of Numba each
TARGETS = ("numba", "numba-scatter", "cuda", "cuda-scatter")
# Per case, a hang check: most cases take a tenth of a second, a tower of 100 powers (its derivative's finite
# differences) one or two seconds on a quiet machine; a suite on 2 busy cores stretches that several times.
SECONDS, TARGET_SECONDS = 60, 120

RTOL, ATOL = 1e-9, 1e-12
FD_TOLERANCE = 1e-6         # relative, with an absolute floor of this much where a gradient is 0
# Smaller steps where the first misses: cos(u ** 3) can turn so fast that h ** 4 shows even at 1e-4, while
# a wrong gradient is as wrong at every step.
FD_STEPS = (1e-3, 1e-4, 1e-5, 1e-6)
FD_LARGEST = 1e6            # values beyond this make finite differences meaningless
ENUMERATED_WORK = 10 ** 5   # functions this small have every index they read enumerated
CARET = re.compile(r"^\s*\^+\s*$", re.MULTILINE)
LIBRARY = os.path.dirname(tab.__file__) + os.sep


@pytest.fixture(scope="module", autouse=True)
def kernel_cache(tmp_path_factory):
    """Thousands of generated modules go to a temporary directory, not the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TENSORADBOOK_CACHE", str(tmp_path_factory.mktemp("kernels")))
        yield


@dataclass
class Failure:
    case: Case
    phase: str
    error: BaseException
    where: str

    @property
    def signature(self) -> tuple:
        return self.phase, type(self.error).__name__, self.where

    def describe(self, count: int) -> str:
        message = "\n    ".join(str(self.error).splitlines()[:6])
        cases = f"{count} case{'s' if count > 1 else ''}"
        return (f"[{cases}] {self.phase}: {type(self.error).__name__} at {self.where}\n"
                f"    text ({self.case.kind}): {self.case.text[:300]!r}\n"
                f"    shapes: {self.case.shapes!r}\n    {message}")


def _where(error: BaseException) -> str:
    """The innermost frame in the library: the place a failure comes from (a generated kernel's caller)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename.startswith(LIBRARY)]
    if not frames:  # a failed check of this module: the start of its message says which
        return re.sub(r"\d+", "#", str(error).splitlines()[0][:70]) if str(error) else "-"
    frame = frames[-1]
    return f"{os.path.basename(frame.filename)}:{frame.name}"


JUMPS = {"ceil", "floor", "round", "sign"}


def _has_jumps(fn) -> bool:
    """Whether ``fn`` has a step in its values: a rounding, a sign, or a comparison of values (a select)."""
    return any(isinstance(n, Select) or isinstance(n, Unary) and n.op in JUMPS for n in walk(fn.body))


def _settled(differences: list[float]) -> bool:
    """Whether finite differences at the two smallest steps agree: they measure a derivative, not a jump."""
    a, b = differences
    return abs(a - b) <= FD_TOLERANCE * max(1.0, abs(a), abs(b))


def _assert_close(got, expected, what: str, values: bool):
    got = np.asarray(got)
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    if not values:
        return
    # where the reference overflows, inf * 0 and inf - inf may come out in another order
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=RTOL, atol=ATOL, err_msg=what)


def _assert_reads_back(fn):
    text = str(fn)
    again = tab.parse(text, fn.shapes)
    assert again == fn and str(again) == text, f"reads back differently: {text!r} -> {str(again)!r}"


def _reads(fn) -> dict[str, list[tuple[int, int]]]:
    """Per argument and dimension, the least and the greatest index the function reads: every point of the
    output box and of the sums' ranges, each ``if`` taking the branch its condition picks there."""
    reads: dict[str, list[tuple[int, int]]] = {}

    def visit(node, env):
        if isinstance(node, Element):
            extents = reads.setdefault(node.name, [(math.inf, -math.inf)] * len(node.indices))
            for k, affine in enumerate(node.indices):
                value = affine.evaluate(env)
                extents[k] = (min(extents[k][0], value), max(extents[k][1], value))
        elif isinstance(node, Sum):
            low, high = bound_value(node.lower, env, lower=True), bound_value(node.upper, env, lower=False)
            for k in range(low, high + 1):
                visit(node.body, {**env, node.index: k})
        elif isinstance(node, If):
            visit(node.then if all(atom.holds(env) for atom in node.condition) else node.otherwise, env)
        else:
            for child in node.children():
                visit(child, env)

    for point in itertools.product(*map(range, fn.shapes[fn.name])):
        visit(fn.body, dict(zip(fn.indices, point)))
    return reads


def _assert_range_check_exact(case: Case, fn):
    """The parser's range check (exact, by Fourier-Motzkin) against enumeration: what it accepts never reads
    outside a shape; a grammar case fits the least shapes that hold what it reads, and not one smaller."""
    reads = _reads(fn)
    for name, extents in reads.items():
        for k, (low, high) in enumerate(extents):
            assert low >= 0 and high < fn.shapes[name][k], f"{name}: index {k} reads {low}..{high}, accepted"
    if case.kind != "grammar":
        return
    tight = {**case.shapes, **{name: tuple(high + 1 for _, high in extents) for name, extents in reads.items()}}
    tab.parse(case.text, tight)
    for name, extents in reads.items():
        for k, (_, high) in enumerate(extents):
            if high > 0:
                smaller = {**tight, name: tight[name][:k] + (high,) + tight[name][k + 1:]}
                with pytest.raises(ExpressionError, match=CARET):
                    tab.parse(case.text, smaller)


def _assert_derivative_reads_back(grad):
    """A derivative is deeper than its function, so one of a function near MAX_DEPTH or MAX_NESTED_SUMS may pass
    the limit (a max reduction's derivative counts the earlier terms reaching the reduction inside a sum of its
    own, so the reduction nests one level deeper): its text is then refused with the limit and a caret, a stated
    limit (the function itself reads back)."""
    try:
        _assert_reads_back(grad)
    except ExpressionError as error:
        if not ("MAX_DEPTH" in str(error) or "MAX_NESTED_SUMS" in str(error)) or not CARET.search(str(error)):
            raise


def _assert_refused_past_the_limit(subject):
    """The reference evaluator refuses ``subject`` (a function or its gradients) with its stated limit."""
    fn = subject if isinstance(subject, tab.Function) else subject.function
    args = random_arguments(fn, np.random.default_rng(0))
    with pytest.raises(ExpressionError, match="MAX_WORK"):
        if isinstance(subject, tab.Function):
            subject.evaluate(args)
        else:
            subject.evaluate(args, np.zeros(fn.shapes[fn.name]))


def test_a_derivative_nesting_a_max_scan_in_four_sums_is_evaluated():
    """Found by test_grammar_texts (FUZZ_SEED=825856428): a valid text whose gradient with respect to y nests a max
    reduction's scan in four sums. The evaluator refused it at 1.3e8 element-terms while it ran every sum over its
    whole range; it runs each at one element's range now, within MAX_WORK. The reference, the compiled kernels and
    finite differences agree."""
    text = ("loss[j; p; i] = y[6 - 2 * i + 3 * p] * y[0] / (if {-p = i * 3} then (max{u}_1^(2 + p) "
            "(sum{k}_ceil((p + 3) / 2)^(2 * u + 2 - p) (y[p]))) else "
            "(max{t}_(ceil((-1) / 3))^min [floor((0) / 3);i + j + 3] (x2[0])))")
    fn = tab.parse(text, {"loss": (2, 1, 4), "y": (7,), "x2": (1,)})
    grads = tab.derive(fn)
    assert max(g.work for g in grads.values()) <= MAX_WORK
    args = {"y": np.linspace(0.5, 1.5, 7), "x2": np.array([0.75])}
    df = np.random.default_rng(3).standard_normal((2, 1, 4))
    compiled = grads.compile("numba")
    expected, ours = grads.evaluate(args, df), compiled(args, df)
    for name in expected:
        np.testing.assert_allclose(ours[name], expected[name], rtol=1e-12, atol=1e-12, err_msg=name)
    errors = tab.check_gradients(fn, args, grads=compiled, seed=3)
    assert max(errors.values()) < 1e-6, errors


# Cases the random runs found, each checked on every run (FUZZ_SEED replays the run that found it).
FOUND_CASES = [
    # FUZZ_SEED=443535849, grammar: reading dx2 back ran Fourier-Motzkin on 6 variables and 26 rows of nested
    # conditions with modulo (43 s); the parser's search of the box now settles it (lang.scope.SEARCHED_POINTS)
    Case("grammar", "g[j;i]=exp(if{a[i+2-j]>=(x2[0;-2*i+2;i]*(w[-i+j+1]))/(2*(a[2-j+2*i]))}then(if{2*i=2}then("
         "x2[i;i;0])else(w[i]+a[i+j]))else(if{2*j+2*i=0 and(i)*3>=0 and(4-i*2+j*3)%4=2}then(if{-i>=1-2*i and("
         "j+1)%4=1}then(w[(3*j+2-2*i)/4])else(x2[3*j+2*i;i+2-j;4-j*2]))else(if{3*j<=0}then(x2[j+2*i;j;(i)*2])"
         "else(x2[-i+1;j+1-i;0]))))**2.5e-1", {"g": (3, 2), "a": (5,), "x2": (9, 4, 5), "w": (4,)},
         valid=True, positive=True, derivable=True),
    # FUZZ_SEED=93728746, grammar: dx2's select read b[t / 3] outside the gate t % 3 = 0, which the forward's
    # outermost if puts around it: under an else the adjoint's gate is if {c} then (0) else (...), and the select
    # kept it inside (simplify.select moves both forms out now)
    Case("grammar", "f[p] = max{t}_((p) * 2)^2 (if {2 * p - t >= 2 and p >= -p - 1 and (2 + t) % 3 = 2} then (if {t = "
         "2 - t} then (b[2 * t + p]) else (if {-p = -2 + p and -t >= -1} then (1) else (if {x2[] <= b[t / 3]} then ("
         "x2[]) else (W[t / 3])))) else (sign(0.5)))", {"f": (3,), "b": (7,), "x2": (), "W": (1,)},
         valid=True, positive=True, derivable=True),
    # FUZZ_SEED=1234567, mutated: the forward's j = 2**52, false on the whole box, became -da_0 - (2**53 - 6) = 0 in
    # da once j = (6 - da_0) / 2 was multiplied out, and did not read back (contribution.box_decided decides every if)
    Case("mutated", "f[j] = max (sqrt(a[j]); abs (erf((if {j = 4503599627370496} then (y[0]) else (x2[j * -2 + 6])) / ("
         "if {j <= 1 and j * -2 = -7 and j % 2 = 0} then (x2[j / 2]) else (a[6 - j * 2])))))",
         {"f": (4,), "a": (7,), "y": (1,), "x2": (7,)}),
    # FUZZ_SEED=7770002, grammar: the simplified gradients folded the forward's (if {c} then (cosh (1)) else (0)) *
    # min{s} (...) inside a comparison into if {c} then (cosh (1) * min{s} (...)) else (0): 0, where an empty min
    # (inf) makes the forward nan; db differed on numpy (simplify._hoisted keeps a node nothing moved below)
    Case("grammar", "out[n, p] = if {(if {(n + 3) % 4 = 3} then (cosh (1)) else (0)) * (min{s}_(-1)^(min [3; -1 - n "
         "+ 2 * p]) (b[4 - 2 * p] + x2[s + p + 1])) >= -((x2[n * -2 - 2 * p + 6] - 0.75) * w[p]) ** 3} then (b[n - "
         "p * 2 + 4]) else (b[0] ** 3 * (W[0; p] - (0.5) + exp(x2[p])))",
         {"out": (2, 3), "b": (6,), "x2": (7,), "w": (3,), "W": (1, 3)}, valid=True, derivable=True),
    # FUZZ_SEED=7770002, mutated: ceil (sinh (y[0] / 0.1)) jumps within every finite-difference step (the test's
    # _settled), and x2[9007199254740991 * p; ...] recomputed in its own adjoint read at A I beta + a, 2.7e31 *
    # dx2_1 (contribution._far: it reads at beta)
    Case("mutated", "f[j, i] = ceil (sinh(if {(3 + i - j) % 3 = 1} then (x2[0; (2 + i - j) / 3; 4 + i - j * 2] * x2[i;"
         " (-j + i + 2) / 3; (2 + i - j) / 3]) else (y[0] / 1e-1))) ** 2.5e-1",
         {"f": (3, 2), "x2": (2, 2, 6), "y": (1,)}),
    Case("mutated", "f[n; p; i] = sum{m}_(-1 + 2 * p)^min [-1;floor((3 + p) / 3)] (sinh(x2[9007199254740991 * (p), 3 "
         "* p, 0] + x2[i; -2 - 2 * m; i]) ** 0.5)", {"f": (1, 1, 4), "x2": (4, 1, 4)}),
    # FUZZ_SEED=992486399 and 443535849, mutated: the gradient's bound 3 - (2**53 - 1) * dx_z1 passed MAX_INTEGER
    # and did not read back (contribution._without_dominated drops it: 0 decides that bound)
    Case("mutated", "loss[n]=sum{k}_(max[ceil((1)/2),ceil((-n+3)/9007199254740991),ceil((1-n)/3)])^2(sum{u}_("
         "-1)^4503599627370496(cosh(.25+x[])))", {"loss": (1,), "x": ()}),
    # FUZZ_SEED=31337, mutated: the first extremum's bound dx_z2 - 1, dx_z2 up to 2**53 - 1, was refused on reading
    # back at the 2**53 of its magnitudes (the parser's reach is now that of its positive and negative parts)
    Case("mutated", "f[i; j] = max{t}_1^9007199254740991 (x[])", {"f": (2, 2), "x": ()}),
    # FUZZ_SEED=4242, mutated: Fourier-Motzkin multiplied p + 2**52 by the 3 of y[n; 3 * p], floor((dy_1 +
    # 13510798882111491) / 3), a literal past MAX_INTEGER (the integer part is taken out: floor(dy_1 / 3) + ...)
    Case("mutated", "f[n; p; j] = max{t}_(-1 - p)^(p + 4503599627370496 + j) (y[j, j] / y[n;3 * p])",
         {"f": (4, 1, 2), "y": (4, 4)}),
    # FUZZ_SEED=31337, mutated: (-2 n + 2) % (2**53 - 1) = 2 read at n = dx2_0 / 3 became -2 dx2_0 % (3 * (2**53 - 1))
    # = 0, a modulus past MAX_INTEGER (contribution.small_moduli splits it: % 3 and % (2**53 - 1))
    Case("mutated", "f[n] = x2[2 * n] / (if {(-2 * n + 2) % 9007199254740991 = 2} then (x2[3 * (n)] * (if {n <= 1} "
         "then (.25) else (1e-1))) else ((min{m}_(max [2;3 - n;0])^(n + 3) (1)) + (x2[-n] + x2[n]) * x2[3 * n]))",
         {"f": (1,), "x2": (1,)}),
    # FUZZ_SEED=4242, mutated: t <= j + 3 with t from -(2**53 - 1) is j >= t - 3 in dW, past MAX_INTEGER: derive
    # refuses it with the limit (contribution._within_max_integer) instead of printing a text the parser refuses
    Case("mutated", "out[j] = log (tanh (if {-j <= 1 and 3 * j = 1 and j % 4 = 0} then (min{t}_(-9007199254740991)^("
         "j + 3) (log1p(W[]))) else (W[])))", {"out": (2,), "W": ()}),
    # FUZZ_SEED=161803 and 99991, mutated: a read at 9007199254740991 * n, substituted, wrote 12009599006321320 *
    # da_0 (da_0 only 0 on its box) in another element's index, a literal the parser refuses: derive writes da_0 as 0
    Case("mutated", "out[n] = a[2 * n, n * 2] ** -2 / (if {n <= 1 and n >= 2 * n - 1 and (1 + 3 * n) % 2 = 1} then (a"
         "[(n * 3) / 2;(n * 9007199254740991) / 2] * (.25 + a[(n * 3) / 2, n])) else (W[n * 3; -n]))",
         {"out": (1,), "a": (1, 1), "W": (1, 1)}),
    Case("mutated", "f[i, j, n] = (min{m}_(-1)^(min [2 * n + 1; floor((1 + n + j) / 2); -1]) (if {(i * 3 + 1) % 3 = 1 "
         "and 2 * m <= -1} then (w[-i]) else (a[-2 * n + i + 2;3 * j + 3 * i]))) ** x2[i; 0; 4 - j * 2 + "
         "9007199254740991 * i]", {"f": (1, 3, 2), "w": (1,), "a": (3, 7), "x2": (1, 1, 5)}),
]


@pytest.mark.parametrize("case", FOUND_CASES, ids=lambda case: case.text[:24])
def test_found_cases(case):
    checker = Checker()
    checker.run(case, 0, TARGETS if case.positive else (), TARGET_SECONDS)
    assert not checker.failures, checker.report("found cases", 1)


def _derived(fn, case: Case):
    """The gradients of ``fn``, or None where the grammar allows a refusal (Case.derivable): the forward is still
    checked."""
    try:
        return tab.derive(fn)
    except ExpressionError:
        if case.derivable:
            raise
        return None


def _assert_finite_differences_agree(fn, args: dict, grads, seed: int) -> None:
    """Directional derivatives by central differences agree with the gradients at some step of FD_STEPS."""
    differences: dict[str, list[float]] = {}
    for step in FD_STEPS:
        pairs = directional_derivatives(fn, args, grads=grads, seed=seed, step=step)
        for name, (numeric, _) in pairs.items():
            differences.setdefault(name, []).append(numeric)
        wrong = {name: pair for name, pair in pairs.items()
                 if abs(pair[0] - pair[1]) > FD_TOLERANCE * max(1.0, *map(abs, pair))}
        if not wrong:
            break
    if _has_jumps(fn):
        # a step (ceil, floor, round, sign, a comparison of values) crossed within every step size: differences
        # that change with the step measure the jump, not the gradient; those that settle must still agree
        wrong = {name: pair for name, pair in wrong.items() if _settled(differences[name][-2:])}
    assert not wrong, f"finite differences, then the gradients: {wrong}"


class Checker:
    """Runs the properties on cases; :attr:`failures` keeps what failed, :attr:`phase` where."""

    def __init__(self):
        self.failures: list[Failure] = []
        self.accepted = self.refused = 0
        self.phase = ""

    def run(self, case: Case, seed: int, targets=(), seconds: float = SECONDS) -> bool:
        """Checks one case (on ``targets`` too where its values are finite); whether they are finite."""
        self.phase = "parse"
        try:
            with time_limit(seconds), np.errstate(all="ignore"):
                return self.check(case, seed, targets)
        except BaseException as error:  # noqa: B036 - every exception, the alarm's too, is a finding
            if isinstance(error, KeyboardInterrupt):
                raise
            self.failures.append(Failure(case, self.phase, error, _where(error)))
            return False

    def check(self, case: Case, seed: int, targets) -> bool:
        try:
            fn = tab.parse(case.text, case.shapes)
        except ExpressionError as error:
            self.refused += 1
            assert not case.valid, f"a valid text was refused: {error}"
            # a caret needs a token to point at: not so for an empty text or broken shapes
            assert CARET.search(str(error)) or not (case.caret and case.text.strip()), \
                f"refused without a caret line: {error}"
            return False
        self.accepted += 1
        assert not any(ord(ch) > 127 and ch.isdecimal() for ch in case.text), "accepted non-ASCII digits"
        if fn.work <= ENUMERATED_WORK:
            self.phase = "range check"
            _assert_range_check_exact(case, fn)
        self.phase = "print and parse back"
        _assert_reads_back(fn)
        self.phase = "derive"
        grads = _derived(fn, case)
        self.phase = "print and parse back"
        for g in grads.functions.values() if grads else ():
            _assert_derivative_reads_back(g)
        self.phase = "reference"
        functions = [fn, *(grads.values() if grads else ())]
        if max(g.work for g in functions) > MAX_WORK:
            # A valid text stays within the evaluator; its derivative may not (a max reduction's gradient nests
            # the reduction again): the evaluator refuses that with its stated limit
            assert not case.valid or fn.work <= MAX_WORK, "a valid text needs more work than the reference evaluator"
            _assert_refused_past_the_limit(fn if fn.work > MAX_WORK else grads)
            return False
        rng = np.random.default_rng(seed)
        args = random_arguments(fn, rng)
        df = rng.standard_normal(fn.shapes[fn.name])
        forward = fn.evaluate(args)
        gradients = grads.evaluate(args, df) if grads else {}
        self.phase = "numpy"
        # Literals near float64's ends (1e308) overflow or vanish in one order of the same operations and
        # not in another (the simplified gradients fold 2.5 * 1e308): such kernels must run, not agree.
        tame = all(not n.value or 1e-100 < abs(n.value) < 1e100 for n in walk(fn.body) if isinstance(n, Number))
        self.compare(fn, grads, "numpy", args, df, forward, gradients, values=tame)
        finite = tame and grads is not None and all(
            np.isfinite(v).all() and np.abs(v).max(initial=0) < FD_LARGEST for v in [forward, *gradients.values()])
        if not finite:
            return False
        self.phase = "finite differences"
        _assert_finite_differences_agree(fn, args, grads, seed)
        # only finite cases: the CUDA simulator runs Python's math, which raises where a GPU gives inf or nan
        for target in targets:
            self.phase = target
            self.compare(fn, grads, target, args, df, forward, gradients)
        return True

    @staticmethod
    def compare(fn, grads, target, args, df, forward, gradients, values: bool = True):
        if target in GATHER_TARGETS:
            _assert_close(fn.compile(target)(args), forward, f"{target}: {fn.name}", values)
        if grads is None:
            return
        compiled = grads.compile(target)
        got = compiled(args, df)
        assert set(got) == set(gradients), f"{target}: gradients of {sorted(got)}, expected {sorted(gradients)}"
        for name, expected in gradients.items():
            _assert_close(got[name], expected, f"{target}: d{name}", values)
        _assert_close(compiled.forward(args), forward, f"{target}: the gradients' forward", values)

    def report(self, what: str, cases: int) -> str:
        groups: dict[tuple, list[Failure]] = {}
        for failure in self.failures:
            groups.setdefault(failure.signature, []).append(failure)
        lines = [f"{len(self.failures)} of {cases} {what} failed ({len(groups)} distinct; "
                 f"FUZZ_SEED={SEED} replays them):"]
        for group in sorted(groups.values(), key=len, reverse=True):
            shortest = min(group, key=lambda f: len(f.case.text))
            lines.append(shortest.describe(len(group)))
        return "\n".join(lines)


def test_grammar_texts():
    """Valid texts: accepted, and every property holds; the first finite ones on every target."""
    grammar, checker = Grammar(random.Random(f"{SEED} grammar")), Checker()
    compiled = 0
    for number in range(GRAMMAR_CASES):
        case = grammar.valid()
        if compiled < TARGET_CASES and case.positive:
            if checker.run(case, number, TARGETS, TARGET_SECONDS):
                compiled += 1
        else:
            checker.run(case, number)
    print(f"FUZZ_SEED={SEED}: {checker.accepted} accepted, {compiled} compiled for {', '.join(TARGETS)}")
    if checker.failures:
        pytest.fail(checker.report("grammar texts", GRAMMAR_CASES), pytrace=False)
    assert compiled == TARGET_CASES  # the grammar's positive cases are finite, nearly always


def test_mutated_texts():
    """Damaged texts: refused with a caret, or accepted and every property holds."""
    grammar, checker = Grammar(random.Random(f"{SEED} mutated")), Checker()
    for number in range(MUTATED_CASES):
        checker.run(grammar.mutated(), number)
    print(f"FUZZ_SEED={SEED}: {checker.accepted} accepted, {checker.refused} refused")
    if checker.failures:
        pytest.fail(checker.report("mutated texts", MUTATED_CASES), pytrace=False)
    assert checker.accepted and checker.refused  # both sides of the parser are exercised


def test_extreme_texts():
    """Nesting beyond any limit, huge numbers and shapes: refused with a message, or run in time."""
    checker = Checker()
    cases = extreme_cases()
    for number, case in enumerate(cases):
        checker.run(case, number)
    if checker.failures:
        pytest.fail(checker.report("extreme texts", len(cases)), pytrace=False)

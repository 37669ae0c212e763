"""Chapter 12's checks of exercises 3-6 (:mod:`.ch12_build` has the chapter's story): the index solve from the Smith
normal form (sec. 4.1), Fourier-Motzkin elimination with a symbolic right side (sec. 4.2, Algorithm 3), Algorithm 4
assembled from the pieces (sec. 5) and reverse accumulation across a program with it.
"""

from __future__ import annotations

import itertools
import math
import re
from fractions import Fraction

import numpy as np
import sympy

from ..ad.derive import derive
from ..integer.fourier_motzkin import fourier_motzkin
from ..integer.matrix import as_rational_matrix
from ..integer.smith import integer_inverse
from ..lang.expr import ExpressionError, Expr, If, Sum
from ..lang.function import Function
from ..lang.parser import parse
from ..lang.program import Program
from .checking import ATOL, Wrong, pending, type_name
from .feedback import CheckResult, element_problems, index_text, number_text

from .ch12_support import answer_text, call_answer, close_to, first_failure, functions_tried, random_inputs


# --- exercise 3: the index solve ---------------------------------------------------------------------------------

#: The index matrices of exercise 3: the reads of sec. 6 over alpha = (i, j, k), a[i; k], b[j; k], c[i; i] and
#: d[i + k]; figs. 3 and 4; invariant factors above 1 (2 i + 4 j + 6 k, a diagonal, chapter 04a's [[6, 4], [4, 6]],
#: [[2, 4], [6, 8]]); 4 i + j; a unimodular matrix; gcd 1 without a unit entry (6 i + 10 j + 15 k, 3 i + 5 j + 7 k);
#: a zero row; rows that depend on each other; and a scalar argument read over (i, j) (no rows).
INDEX_MATRICES = (
    [[1, 0, 0], [0, 0, 1]], [[0, 1, 0], [0, 0, 1]], [[1, 0, 0], [1, 0, 0]], [[1, 0, 1]],
    [[1, -2]], [[1, -2, -2]], [[2, 4, 6]], [[2, 0], [0, 3]], [[6, 4], [4, 6]], [[2, 4], [6, 8]], [[4, 1]],
    [[1, 1, 0], [0, 1, 1]], [[2, 1], [1, 1]], [[6, 10, 15]], [[3, 5, 7]], [[0, 0, 0]], [[1, 2, 3], [2, 4, 6]],
    np.zeros((0, 2), dtype=np.int64),
)


def _exact(value, what: str, integer: bool = False) -> sympy.Matrix:
    if isinstance(value, np.ndarray) and value.dtype == object:
        raise Wrong(f"{what} is a numpy array of Python objects, which cannot be graded; return nested "
                     f"lists: {what}.tolist()")
    try:
        M = as_rational_matrix(value, what)
    except ValueError as err:
        hint = " (use fractions.Fraction for an exact fraction)" if "float" in str(err) else ""
        raise Wrong(f"{err}{hint}") from None
    if integer and any(isinstance(v, Fraction) and v.denominator != 1 for v in M.flat):
        raise Wrong(f"{what} must be an integer matrix (a lattice basis has integer columns)")
    return sympy.Matrix(M.shape[0], M.shape[1], [sympy.Rational(v.numerator, v.denominator)
                                                  if isinstance(v, Fraction) else v for v in M.flat])


def _index_solve_problems(A: np.ndarray, triple) -> list[str]:
    """What is wrong with ``(I, K, C)`` for the integer matrix ``A`` (N x M, rank R); empty when nothing is."""
    N, M = A.shape
    exact = sympy.Matrix(N, M, [int(v) for v in A.flat])
    R = exact.rank()
    if not isinstance(triple, (tuple, list)) or len(triple) != 3:
        return [f"index_solve(A) must return a triple (I, K, C), got {type_name(triple)}"]
    I, K, C = (_exact(v, w, integer=(w == "K")) for v, w in zip(triple, ("I", "K", "C")))
    if N == 0 and not I:  # a list of no rows cannot say that I is M x 0
        I = sympy.zeros(M, 0)
    if I.shape != (M, N):
        return [f"I is {I.shape[0]}x{I.shape[1]}, but it maps beta ({N} entries) to alpha ({M} entries), so it "
                f"has {M} rows and {N} columns"]
    problems = []
    if exact * I * exact != exact:
        problems.append("A I A is not A: I is not a pseudo-inverse of A (eqs. 18-19: solve S alpha' = U b for the "
                        "rows that S does not zero, and go back from alpha' to alpha)")
    elif any(not v.is_integer for v in I * exact):
        problems.append("A I A = A, but I A is not an integer matrix: I is a pseudo-inverse, not the one of the "
                        "Smith normal form, and for some beta with integer solutions I beta is fractional (eq. 17 "
                        "would wrongly find none); build it from the unimodular U and V (eq. 18)")
    problems += _kernel_problems(A, exact, K, M - R)
    if C.shape[0] and C.shape[1] != N:
        problems.append(f"C has {C.shape[1]} columns; it acts on beta, which has {N} entries")
    elif C.shape[0] != N - R:
        problems.append(f"C has {C.shape[0]} rows, but there are N - R conditions C beta = 0 (eq. 16), N the "
                        f"entries of beta and R the rank (the non-zero entries of S)")
    elif C.shape[0] and any(C * exact):
        problems.append("C A is not 0: a row of C does not vanish on the image of A, so C beta = 0 fails for "
                        "some beta that has solutions (eq. 16: which rows of S alpha' = U b ask something of b alone?)")
    elif C.shape[0] and C.rank() != N - R:
        problems.append("the rows of C are linearly dependent: C beta = 0 then lets through beta that have no "
                        "solution")
    return problems


def _kernel_problems(A: np.ndarray, exact: sympy.Matrix, K: sympy.Matrix, dimension: int) -> list[str]:
    """What is wrong with ``K`` as a basis of the lattice ``{alpha integer: A alpha = 0}`` of ``dimension``."""
    M = A.shape[1]
    if not K.shape[1]:
        return [] if dimension == 0 else [
            "K has no columns, but A alpha = 0 has solutions other than 0: which entries of alpha' does "
            "S alpha' = 0 leave free?"]
    if K.shape[0] != M:
        return [f"K has {K.shape[0]} rows; its columns are solutions alpha of A alpha = 0, with {M} entries"]
    image = exact * K
    for column in range(K.shape[1]):
        if any(image[:, column]):
            return [f"column {column} of K is not in the kernel: A K[:, {column}] = {tuple(image[:, column])}"]
    if K.shape[1] != dimension:
        return [f"K has {K.shape[1]} columns, but the kernel has dimension M - R (M entries of alpha, R the rank: "
                f"the non-zero entries of S)"]
    # any basis of the kernel lattice is V[:, R:] W with W unimodular (the core's coordinates W, exactly)
    W = integer_inverse(A.astype(object)).kernel_coordinates(np.array(K.tolist(), dtype=object).reshape(K.shape))
    index = abs(int(sympy.Matrix(W.tolist()).det()))
    if index == 0:
        return ["the columns of K are linearly dependent"]
    if index != 1:
        return [f"the columns of K span only a sublattice of index {index} of the integer kernel: some integer "
                f"solutions of A alpha = 0 are not integer combinations of them (take the columns of the "
                f"unimodular V, not a rational basis)"]
    return []


def check_index_solve(answer, matrices=None) -> CheckResult:
    """Exercise 3: ``index_solve(A)``, the integer pseudo-inverse, kernel and cokernel of ``A`` (sec. 4.1).

    The answer is a function of an integer matrix ``A`` (N x M; it gets a numpy integer array) returning
    ``(I, K, C)`` as nested lists of ints and Fractions, worked out from the Smith normal form ``S = U A V``
    (eq. 12; :func:`tensoradbook.smith_normal_form`, called once). Any right triple passes, judged by what makes
    it right: ``A I A = A`` with ``I A`` integral (so
    ``I beta`` is integral exactly where an integer solution exists, eq. 17), ``K`` a basis of the lattice of
    integer solutions of ``A alpha = 0``, and ``C`` with N - R independent rows and ``C A = 0`` (so
    ``C beta = 0`` exactly on the image). Tried on each of ``matrices`` (default :data:`INDEX_MATRICES`).
    """
    name = "index_solve(A): the pseudo-inverse I, kernel K and cokernel C"
    if answer is None:
        return pending(name, "Your answer is your function index_solve(A), which returns (I, K, C) as nested "
                              "lists (Fractions where needed).")
    matrices = INDEX_MATRICES if matrices is None else matrices
    for matrix in matrices:
        A = np.array(matrix, dtype=np.int64)
        shown = f"A = {A.tolist()}" if A.shape[0] else f"A with no rows and {A.shape[1]} columns (a scalar argument)"
        try:
            problems = _index_solve_problems(A, call_answer(answer, "index_solve(A)", A))
        except Wrong as err:
            problems = [str(err)]
        if problems:
            return CheckResult(name, False, [f"for {shown}: {problems[0]}"] + problems[1:])
    return CheckResult(name, True, note=f"Right for all {len(matrices)} matrices: A I A = A with I A integral, K a "
                                        f"lattice basis of the kernel, C the conditions of the image.")


# --- exercise 4: the solutions in the box -------------------------------------------------------------------


# --- exercise 4: Fourier-Motzkin elimination ----------------------------------------------------------------------

#: The systems ``M z >= b`` of exercise 4, each from the loops of a gradient sum (``M = R K``, eq. 42-44): the read
#: d[i + k] of sec. 6; c[i; i], whose box has rows without z (eq. 34 must carry them); fig. 4's A = (1 -2 -2); a
#: stride (x[2 i + k]: coefficients 2, bounds with a denominator); an empty kernel (x[i]: no variable at all, every
#: row a condition); a padded convolution x[n; i + p; j + q] (three variables, rows without z); i + j + k; a sum
#: whose bound moves (sum{k}_0^i); and three variables bound together with coefficients 2 and 3.
SYSTEMS = (
    [[0, -1], [0, 1], [1, 0], [-1, 0], [0, 1], [0, -1]],
    [[0, 0], [0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]],
    [[2, 2], [-2, -2], [1, 0], [-1, 0], [0, 1], [0, -1]],
    [[1], [-1], [-2], [2]],
    [[], []],
    [[0, 0, 0], [0, 0, 0], [1, 0, 0], [-1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1], [0, 1, 0],
     [0, -1, 0], [0, 0, 1], [0, 0, -1]],
    [[-1, -1], [1, 1], [1, 0], [-1, 0], [0, 1], [0, -1]],
    [[1], [-1], [1], [-1], [0]],
    [[1, 0, 0], [0, 1, 0], [0, 0, 1], [-1, -1, -2], [2, -1, 0], [-1, 3, -1]],
)
#: Right sides tried per system: random integers (feasible and not) in this range, inclusive.
RIGHT_SIDES, RIGHT_SIDE_RANGE = 40, (-6, 2)


def _right_sides(rows: int, seed: int = 0) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    low, high = RIGHT_SIDE_RANGE
    return [[int(v) for v in rng.integers(low, high + 1, rows)] for _ in range(RIGHT_SIDES)]


def _rational(value) -> Fraction | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, np.integer)):
        return Fraction(int(value))
    if isinstance(value, Fraction):
        return value
    return None


def _rows(value, length: int, what: str) -> list[list[Fraction]]:
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise Wrong(f"{what} is a numpy array of Python objects, which cannot be graded; return nested lists: "
                        f"{what}.tolist()")
        value = value.tolist()
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise Wrong(f"{what} must be a list of rows, got {type_name(value)}")
    out = []
    for row in value:
        if isinstance(row, (str, bytes, dict)) or not hasattr(row, "__iter__"):
            raise Wrong(f"{what} must be a list of rows (lists of numbers), got a row {row!r}")
        entries = [_rational(v) for v in row]
        if len(entries) != length or any(v is None for v in entries):
            hint = " (use fractions.Fraction for an exact fraction)" if any(isinstance(v, float) for v in row) else ""
            raise Wrong(f"each row of {what} must hold {length} integers or Fractions, got {row!r}{hint}")
        out.append(entries)
    return out


def _elimination(result, N: int, kappa: int) -> tuple[list, list]:
    """The student's ``(bounds, F)`` read and checked for form; or a Wrong."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Wrong(f"eliminate(M) must return a pair (bounds, F), got {type_name(result)}")
    bounds, F = result
    if isinstance(bounds, (str, bytes, dict)) or not hasattr(bounds, "__iter__"):
        raise Wrong(f"bounds must be a list with one pair (lower, upper) per variable, got {type_name(bounds)}")
    bounds = list(bounds)
    if len(bounds) != kappa:
        raise Wrong(f"bounds has {len(bounds)} entries, but M z >= b has {kappa} variables z_0 .. z_{kappa - 1}: "
                    f"one pair (lower, upper) per variable, z_0 first")
    read = []
    for k, pair in enumerate(bounds):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise Wrong(f"bounds[{k}] must be a pair (lower, upper) of lists of rows, got {type_name(pair)}"
                        f"{f' of {len(pair)}' if isinstance(pair, (tuple, list)) else ''}")
        sides = [_rows(side, N + kappa, f"bounds[{k}][{n}]") for n, side in enumerate(pair)]
        for side, word in zip(sides, ("lower", "upper")):
            if not side:
                raise Wrong(f"z_{k} has no {word} bound: every variable of these systems is bounded on both "
                            f"sides (a row whose coefficient of z_k is positive bounds it below, negative above)")
            if any(row[N + j] for row in side for j in range(k + 1)):
                raise Wrong(f"one of the {word} bounds of z_{k} names z_{k} or a variable before it: the bounds of "
                            f"z_k may name only b and the later variables z_(k+1) .. z_(kappa-1), which the loops "
                            f"outside it have fixed (z_(kappa-1) is the outermost loop)")
        read.append(tuple(sides))
    return read, _rows(F, N, "F")


def _bound_value(row, b, z, N) -> Fraction:
    return sum((c * v for c, v in zip(row[:N], b)), Fraction(0)) + sum((c * v for c, v in zip(row[N:], z)), Fraction(0))


def _loop_points(bounds, F, b, kappa: int, budget: int) -> list[tuple[int, ...]] | None:
    """The points the loops visit for the right side ``b`` (none where a row of F says ``F b > 0``), or None past
    ``budget`` iterations."""
    N = len(b)
    if any(sum(f * v for f, v in zip(row, b)) > 0 for row in F):
        return []
    points, steps = [], 0
    z = [0] * kappa

    def loop(k: int) -> bool:
        nonlocal steps
        if k < 0:
            points.append(tuple(z))
            return True
        lower, upper = bounds[k]
        low = max(math.ceil(_bound_value(row, b, z, N)) for row in lower)
        high = min(math.floor(_bound_value(row, b, z, N)) for row in upper)
        for value in range(low, high + 1):
            steps += 1
            if steps > budget:
                return False
            z[k] = value
            if not loop(k - 1):
                return False
        z[k] = 0
        return True

    return points if loop(kappa - 1) else None


def _system_problems(M: list, answer, seed: int) -> list[str]:
    N, kappa = len(M), (len(M[0]) if M else 0)
    matrix = np.array(M, dtype=object).reshape(N, kappa)
    truth_system = fourier_motzkin(matrix)
    bs = _right_sides(N, seed)
    truths = [sorted(truth_system.integer_points(b)) for b in bs]
    bounds, F = _elimination(call_answer(answer, "eliminate(M)", [list(row) for row in M]), N, kappa)
    for b, truth in zip(bs, truths):
        points = _loop_points(bounds, F, b, kappa, budget=50 * (len(truth) + 20))
        if points is None:
            return [f"for b = {b} your loops run far longer than M z >= b has points: a bound is too loose"]
        if len(set(points)) != len(points):
            return [f"for b = {b} your loops visit a point twice"]
        outside = [p for p in points if p not in set(truth)]
        if outside:
            p = outside[0]
            failed = next(n for n, row in enumerate(M) if sum(c * v for c, v in zip(row, p)) < b[n])
            if not any(M[failed]):
                return [f"for b = {b} M z >= b has no solution (row {failed} has no z and asks 0 >= {b[failed]}), "
                        f"but your loops visit z = {p}: that row is a condition on b alone, which F must carry "
                        f"(eq. 34: what is left when every variable is eliminated)"]
            return [f"for b = {b} your loops visit z = {p}, which fails row {failed} of M z >= b: a bound is too "
                    f"loose (a row bounds z_k by itself divided by its coefficient; an upper bound rounds down, a "
                    f"lower one up) or F lets through a b without solutions"]
        if len(points) < len(truth):
            if not points and truth and any(sum(f * v for f, v in zip(row, b)) > 0 for row in F):
                return [f"for b = {b} your F rules out b (F b <= 0 fails), but M z >= b has integer solutions: a "
                        f"row of F is not a consequence of M z >= b"]
            return [f"for b = {b} your loops miss integer points of M z >= b: a bound is too tight (each pair of "
                    f"a lower and an upper bound of z_k gives a row of the next system; the rows without z_k go on "
                    f"unchanged)"]
    return []


def check_box_solutions(answer, systems=None, seed: int = 0) -> CheckResult:
    """Exercise 4: ``eliminate(M)``, Fourier-Motzkin elimination (sec. 4.2, Algorithm 3) of ``M z >= b``, ``b``
    symbolic: the loops of eq. 45 over the solutions in the box, and the conditions on ``b`` of eq. 34.

    The answer is a function of ``M`` (a list of N rows of kappa integers; kappa may be 0) returning ``(bounds, F)``:
    ``bounds[k] = (lower, upper)`` for ``z_k``, each a list of rows ``w`` of N + kappa numbers (ints or Fractions)
    meaning the bound ``w[:N] . b + w[N:] . z``, which names only the later variables (the entries for ``z_0`` ..
    ``z_k`` are 0); ``z_k`` runs from the ceiling of the largest lower bound to the floor of the smallest upper
    one, ``z_(kappa-1)`` outermost (eq. 45). ``F``: rows of N numbers, the conditions ``F b <= 0`` (eq. 34). For
    each system of ``systems`` (default :data:`SYSTEMS`) and :data:`RIGHT_SIDES` integer right sides (drawn with
    ``seed``), the points
    the loops visit (none where ``F b <= 0`` fails) must be exactly the integer solutions, each once; the check
    walks the loops itself and stops them when they run far longer than there are points.
    """
    name = "eliminate(M): Fourier-Motzkin loops over the solutions of M z >= b"
    if answer is None:
        return pending(name, "Your answer is your function eliminate(M), which returns (bounds, F): a pair (lower "
                             "rows, upper rows) per variable, and the rows of F b <= 0.")
    systems = SYSTEMS if systems is None else systems
    for M in systems:
        M = [list(row) for row in M]
        try:
            problems = _system_problems(M, answer, seed)
        except Wrong as err:
            problems = [str(err)]
        if problems:
            return CheckResult(name, False, [f"for M = {M}: {problems[0]}"] + problems[1:])
    return CheckResult(name, True, note=f"Your loops visit exactly the integer solutions of all {len(systems)} "
                                        f"systems, each for {RIGHT_SIDES} right sides b.")


# --- exercise 5: Algorithm 4; exercise 6: a program ---------------------------------------------------------------

class _TooMany(Exception):
    pass


def _terms(fn: Function, budget: int) -> int | None:
    """How many sum terms evaluating ``fn`` at every element of its output visits: an index condition's branch that
    is not taken is not visited, both branches of a select are. None past ``budget``."""
    count = 0

    def visit(node: Expr, env: dict) -> None:
        nonlocal count
        if isinstance(node, Sum):
            low = max(-((-a.numerator.evaluate(env)) // a.denominator) for a in node.lower)
            high = min(a.numerator.evaluate(env) // a.denominator for a in node.upper)
            for value in range(low, high + 1):
                count += 1
                if count > budget:
                    raise _TooMany
                visit(node.body, {**env, node.index: value})
        elif isinstance(node, If):
            visit(node.then if all(atom.holds(env) for atom in node.condition) else node.otherwise, env)
        else:
            for child in node.children():
                visit(child, env)

    try:
        for beta in itertools.product(*(range(n) for n in fn.shapes[fn.name])):
            visit(fn.body, dict(zip(fn.indices, beta)))
    except _TooMany:
        return None
    return count


#: A gradient may visit this many times the sum terms of the library's (plus :data:`TERMS_SLACK`): its loops may
#: differ (a loop of one term the library substitutes, a condition inside a sum), but not run over the whole box.
TERMS_FACTOR, TERMS_SLACK = 4, 100


def _gradient_problems(label: str, argument: str, fn_name: str, yours: np.ndarray, right: np.ndarray) -> list[str]:
    """What is wrong where ``yours`` differs from ``right``, the most telling first; never a right value."""
    zero_atol = ATOL * max(float(np.abs(right).max(initial=0)), np.finfo(float).tiny)
    return element_problems(
        label, yours, right, close_to(yours, right), zero_atol,
        lambda b: f"no element of {fn_name} reads {argument}{index_text(b)}",
        "a condition is missing: C (beta - a) = 0 (eq. 16), I (beta - a) integral (eq. 41, which the report's "
        "eq. 46 drops), or a row of eq. 34 on beta alone",
        hint="check the substitution alpha = I (beta - a) + K z into the read's adjoint (eq. 47) and the bounds "
             "of the sums over z (eq. 45)")


def _gradient_text(answer, fn: Function, argument: str, accepted) -> str:
    """The text of the student's ``gradient(fn, argument)``; Wrong where its left side names none of ``accepted``
    (the first the name to use)."""
    result = call_answer(answer, f"gradient(fn, {argument!r})", fn, argument)
    if isinstance(result, Function):
        result = str(result)
    text = answer_text(result, f"gradient(fn, {argument!r})'s result")
    defined = re.match(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*\[", text)
    if defined and defined.group(1) not in accepted:
        gradient = next(iter(accepted))
        raise Wrong(f"your gradient of {argument} defines {defined.group(1)!r}; call it {gradient!r} "
                    f"({gradient}[...] = ...)")
    return text


def _unreadable(error: ExpressionError, gradient: str, argument: str, adjoint: str) -> str:
    """Why the parser refused the student's gradient: its message, after what a missing condition would cause."""
    indented = "\n".join("    " + line for line in str(error).splitlines())
    if "leaves" in str(error) and adjoint in str(error).split("leaves")[0]:
        return (f"your gradient {gradient} cannot be read: it reads {adjoint} outside its "
                f"shape where no alpha of the box reads {argument}[beta] (a condition of eq. 34 on beta "
                f"alone is missing, or a bound of a sum over z):\n{indented}")
    if "is not an integer" in str(error):
        return (f"your gradient {gradient} cannot be read: it divides an index where the division is not "
                f"exact, at beta that no integer alpha reads (the condition that I (beta - a) is integral "
                f"is missing: eq. 41 has it, the report's eq. 46 drops it):\n{indented}")
    return f"your gradient {gradient} cannot be read:\n{indented}"


def _function_problems(fn: Function, answer, trials: int, seed: int) -> list[str]:
    grads = derive(fn)
    rng = np.random.default_rng(seed)
    points = []
    for _ in range(trials):
        values = random_inputs(fn, rng)
        values[grads.adjoint_name] = rng.standard_normal(fn.shapes[fn.name])
        points.append(values)
    for argument in fn.arguments:
        truth = grads[argument]
        gradient = "d" + argument
        accepted = dict.fromkeys([gradient, truth.name])
        answer_shapes = {**truth.shapes, **{n: tuple(fn.shapes[argument]) for n in accepted}}
        text = _gradient_text(answer, fn, argument, accepted)
        try:
            mine = parse(text, answer_shapes)
        except ExpressionError as error:
            return [_unreadable(error, gradient, argument, grads.adjoint_name)]
        if not isinstance(mine, Function):
            raise Wrong("your gradient must be one definition, \"name[indices] = expression\"")
        limit = TERMS_FACTOR * _terms(truth, 10**9) + TERMS_SLACK
        if _terms(mine, limit) is None:
            return [f"your {gradient} visits more than {TERMS_FACTOR} times as many sum terms as Algorithm 4 "
                    f"needs: its sums run over every alpha of the box and test each one (eq. 40), where Algorithm 4 "
                    f"loops over the solutions of A alpha + a = beta alone (eqs. 41-45)"]
        for values in points:
            right = truth.evaluate(values)
            yours = mine.evaluate(values)
            if not close_to(yours, right).all():
                return _gradient_problems(gradient, argument, fn.name, yours, right)
    return []


def _program_problems(program: Program, answer, seed: int) -> tuple[list[str], int]:
    """What is wrong with ``backprop(program, values)``; and at how many entries central differences agreed."""
    rng = np.random.default_rng(seed)
    values = {name: rng.standard_normal(program.shapes[name]) for name in program.arguments}
    right = derive(program).evaluate(values, 1.0)
    result = call_answer(answer, "backprop(program, values)", program, {k: v.copy() for k, v in values.items()})
    if not isinstance(result, dict):
        raise Wrong(f"backprop(program, values) must return a dict from each input's name to its gradient (an "
                    f"array of the input's shape), got {type_name(result)}")
    output, yours = program.name, {}
    for name in program.arguments:
        if name not in result:
            return [f"no gradient for the input {name}: every input of the program gets one (d{output} / d{name})"], 0
        try:
            got = np.asarray(result[name], dtype=float)
        except (TypeError, ValueError):
            return [f"the gradient of {name} must be an array of numbers, got {type_name(result[name])}"], 0
        if got.shape != tuple(program.shapes[name]):
            return [f"the gradient of {name} has shape {got.shape}; {name} has shape {tuple(program.shapes[name])}"], 0
        yours[name] = got
        scale = max(float(np.abs(right[name]).max(initial=0)), np.finfo(float).tiny)
        if not np.allclose(got, right[name], rtol=1e-9, atol=1e-12 * scale):
            problems = element_problems(
                "d" + name, got, right[name], np.isclose(got, right[name], rtol=1e-9, atol=1e-12 * scale),
                1e-12 * scale, lambda b, name=name: f"{output} does not depend on {name}{index_text(b)}",
                "something flows where nothing should",
                hint=f"follow {name} to {output}: the gradient of each definition that reads it (your exercise 5), "
                     f"the adjoint of each definition the sum of what its readers pass back (eq. 2), and the seed "
                     f"d{output} = 1")
            return [f"the gradient of {output} with respect to {name} is not exact: {problems[0]}"] + problems[1:], 0
    return _central_difference_problems(program, values, yours, rng)


def _central_difference_problems(program: Program, values: dict, yours: dict, rng) -> tuple[list[str], int]:
    """The exact gradient ``yours`` against central differences at a few entries of each input, the student's
    values; the problem and how many entries agreed."""
    checked = 0
    for name in program.arguments:
        for flat in rng.choice(int(np.prod(program.shapes[name], dtype=int)), size=2, replace=False):
            index = np.unravel_index(int(flat), program.shapes[name])
            moved = []
            for step in (1e-6, -1e-6):
                shifted = {k: v.copy() for k, v in values.items()}
                shifted[name][index] += step
                moved.append(float(program.evaluate(shifted)))
            numeric = (moved[0] - moved[1]) / 2e-6
            if abs(numeric - float(yours[name][index])) > 1e-5 * max(1.0, abs(numeric)):
                return [f"the gradient of {name} at {index_text(index)} disagrees with central differences "
                        f"(yours is {number_text(float(yours[name][index]))})"], checked
            checked += 1
    return [], checked


def check_algorithm4(answer, functions=None, trials: int = 3, seed: int = 0) -> CheckResult:
    """Exercise 5: ``gradient(fn, argument)``, Algorithm 4 (sec. 5) built from the pieces of exercises 1-4; exercise
    6, given a program: ``backprop(program, values)``.

    For a function the answer is a function of a :class:`~tensoradbook.Function` and an argument's name returning
    the gradient ``dx`` of ``sum(df * f)`` as text in the report's notation, ``"dx[...] = ..."`` (or a Function):
    for each read ``x[A alpha + a]`` (line 3: its adjoint, by reverse accumulation; line 4: the box
    ``R alpha >= r``; lines 5-7: I, K, C; lines 8-9: Fourier-Motzkin on ``R K z >= r - R I (beta - a)``), the sums
    over ``z`` of the adjoint at ``alpha = I (beta - a) + K z`` under the conditions ``C (beta - a) = 0``,
    ``I (beta - a)`` integral (eq. 41; the report's eq. 46 drops it, and with it Algorithm 4's line 10) and those
    of eq. 34 on ``beta`` alone. Any way of writing it passes: it is parsed and evaluated at every element on
    ``trials`` random inputs and random ``df`` against :func:`tensoradbook.derive`, for every argument of every
    function of ``functions`` (default :data:`FUNCTIONS`); it is refused where its sums visit many times the terms
    of Algorithm 4's (the whole box of eq. 40).

    For a :class:`~tensoradbook.Program` (chapter 11's network), the answer is a function of the program and a dict
    of input values returning the gradient of the program's scalar value with respect to every input (a dict of
    arrays): reverse accumulation across the definitions with the student's gradient for each. It must equal the
    exact gradient to rounding, and agree with central differences at a few entries of every input.
    """
    programs = isinstance(functions, Program) or (isinstance(functions, (list, tuple)) and functions and
                                                  all(isinstance(p, Program) for p in functions))
    name = ("backprop(program, values): the gradient of a program by your engine" if programs else
            "gradient(fn, argument): Algorithm 4")
    if answer is None:
        return pending(name, "Your answer is your function backprop(program, values), which returns a dict from "
                             "each input's name to its gradient." if programs else
                       "Your answer is your function gradient(fn, argument), which returns the text "
                       "\"d<argument>[...] = ...\" (the adjoint of fn is d<name of fn>).")
    if programs:
        tried = [functions] if isinstance(functions, Program) else list(functions)
        checked = 0
        for program in tried:
            try:
                problems, n = _program_problems(program, answer, seed)
            except Wrong as err:
                problems, n = [str(err)], 0
            if problems:
                return CheckResult(name, False, [f"for the program ending in {program.name}: {problems[0]}"] +
                                   problems[1:])
            checked += n
        return CheckResult(name, True, note=f"Your engine's gradient of every input equals the exact one to rounding, "
                                            f"and central differences agree at {checked} entries.")
    tried = functions_tried(functions)
    failed = first_failure(name, tried, lambda fn: _function_problems(fn, answer, trials, seed))
    if failed is not None:
        return failed
    return CheckResult(name, True, note=f"Your gradients agree with tab.derive at every element of every argument of "
                                        f"all {len(tried)} functions, on {trials} random inputs.")

"""Check functions for the exercises at the end of each chapter.

Every ``check_*`` function takes the data of an exercise and the student's
answer and returns a :class:`CheckResult`, which prints whether the answer is
right and, if not, what exactly is wrong ("U is not unimodular: det U = 2",
"your bounds miss the point z = (1, 2)", ...). An answer of ``None`` is the
notebooks' placeholder and gives "no answer yet" instead of an error.

The checks never compare against a stored solution: they test the defining
properties of a right answer exactly (integer arithmetic, sympy determinants)
and compare with the core's algorithms (:mod:`tensoradbook.intlinalg`,
:mod:`tensoradbook.fourier_motzkin`) or with brute-force enumeration. So any
right answer passes, not only the one the core happens to compute.

Chapter 04a (integer equations, report sec. 4.1):
:func:`check_bezout`, :func:`check_smith`, :func:`check_kernel_basis`,
:func:`check_integer_solutions`.
Chapter 04b (inequalities, report sec. 4.2 and eqs. 42-45):
:func:`check_loop_bounds`, :func:`check_point_count`, :func:`check_redundant_rows`.

This module is part of the core: numpy, sympy and fractions only, no Jupyter.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import sympy

from ._matrix import as_int_matrix, as_rational_matrix, matmul, matvec, normalize
from .fourier_motzkin import fourier_motzkin
from .intlinalg import extended_gcd, integer_inverse, smith_normal_form

__all__ = [
    "CheckResult",
    "NO_SOLUTION",
    "check_bezout",
    "check_integer_solutions",
    "check_kernel_basis",
    "check_loop_bounds",
    "check_point_count",
    "check_redundant_rows",
    "check_smith",
]

#: The answer to give :func:`check_integer_solutions` when there is no integer solution.
NO_SOLUTION = "no solution"


@dataclass
class CheckResult:
    """The verdict on one answer: ``ok``, and the problems found when it is not.

    ``bool(result)`` is ``result.ok``; ``pending`` marks the placeholder answer
    ``None``. Printing it (or leaving it as a cell's last expression) gives
    the verdict in words.
    """

    exercise: str
    ok: bool
    problems: list[str] = field(default_factory=list)
    pending: bool = False
    note: str = ""

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self.pending:
            head = f"{self.exercise}: no answer yet -- replace None by your answer and run the cell again."
        elif self.ok:
            head = f"{self.exercise}: right!"
        else:
            head = f"{self.exercise}: not right yet."
        lines = [head] + [f"  - {p}" for p in self.problems]
        if self.note:
            lines.append(f"  {self.note}")
        return "\n".join(lines)

    __repr__ = __str__


class _Wrong(Exception):
    """Raised inside a check to stop at a problem that makes later tests meaningless."""


def _pending(exercise: str, hint: str = "") -> CheckResult:
    return CheckResult(exercise, False, pending=True, note=hint)


def _fmt(value) -> str:
    value = normalize(value)
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    return str(value)


def _vec(values) -> str:
    values = list(values)
    if len(values) == 1:
        return f"({_fmt(values[0])},)"
    return "(" + ", ".join(_fmt(v) for v in values) + ")"


def _triple(answer, labels: str) -> tuple:
    """The three parts of a triple answer, or a _Wrong saying the answer is not one."""
    try:
        first, second, third = answer
    except (TypeError, ValueError):
        raise _Wrong(f"the answer must be a triple ({labels}), got {type(answer).__name__}") from None
    return first, second, third


def _int_matrix(value, what: str) -> np.ndarray:
    """The answer as an exact integer matrix, or a _Wrong saying why it is not one."""
    try:
        return as_int_matrix(value, what)
    except ValueError as err:
        raise _Wrong(str(err)) from None


def _int_vector(value, length: int, what: str) -> list[int]:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = [value]
    try:
        values = list(value)
    except TypeError:
        raise _Wrong(f"{what} must be a vector of {length} integers, got {value!r}") from None
    if len(values) != length:
        raise _Wrong(f"{what} must have {length} entries (one per entry of alpha), yours has {len(values)}")
    out = []
    for k, v in enumerate(values):
        if isinstance(v, bool) or not (isinstance(v, (int, np.integer)) or getattr(v, "is_Integer", False)
                                       or (isinstance(v, Fraction) and v.denominator == 1)):
            raise _Wrong(f"{what}: entry {k} is {v!r}, not an integer")
        out.append(int(v))
    return out


def _det(M: np.ndarray) -> int:
    return int(sympy.Matrix(M.tolist()).det()) if M.shape[0] else 1


def _is_integer(value) -> bool:
    return isinstance(value, int) or (isinstance(value, Fraction) and value.denominator == 1)


# ---------------------------------------------------------------------------
# Chapter 04a: integer equations
# ---------------------------------------------------------------------------


def check_bezout(a: int, b: int, answer) -> CheckResult:
    """Exercise: a Bezout triple ``(g, x, y)`` with ``g = gcd(a, b) = a x + b y`` (Algorithm 2)."""
    name = f"Bezout triple for a = {a}, b = {b}"
    if answer is None:
        return _pending(name, "Your answer is a triple (g, x, y).")
    try:
        g, x, y = _triple(answer, "g, x, y")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    problems = []
    for label, v in (("g", g), ("x", x), ("y", y)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            problems.append(f"{label} = {v!r} is not an integer")
    if problems:
        return CheckResult(name, False, problems)
    g, x, y = int(g), int(x), int(y)
    true_gcd = extended_gcd(a, b)[0]
    if g < 0:
        problems.append(f"g = {g} is negative; the greatest common divisor is taken non-negative")
    elif g == 0 and true_gcd != 0:
        problems.append("g = 0 is not a common divisor of a and b")
    elif g != true_gcd:
        not_dividing = [f"{label} = {v}" for label, v in (("a", a), ("b", b)) if v % g]
        if not_dividing:
            problems.append(f"g = {g} does not divide {' and '.join(not_dividing)}")
        else:
            problems.append(f"g = {g} divides a and b, but it is not the greatest common divisor")
    combination = a * x + b * y
    if combination != g:
        problems.append(f"a x + b y = {a}*({x}) + {b}*({y}) = {combination}, not g = {g}")
    return CheckResult(name, not problems, problems)


def check_smith(A, answer) -> CheckResult:
    """Exercise: a Smith decomposition ``(S, U, V)`` of ``A`` with ``S = U A V`` (eqs. 10-12).

    Checked: the shapes, that U and V are unimodular (det = +-1), that
    ``U A V == S``, that S is diagonal with non-negative entries, the zeros
    last and each entry dividing the next (eq. 11). Any valid (U, V) passes.
    """
    A = as_int_matrix(A, "A")
    n_rows, n_cols = A.shape
    name = f"Smith decomposition of a {n_rows}x{n_cols} matrix"
    if answer is None:
        return _pending(name, "Your answer is a triple (S, U, V) of integer matrices with S = U A V.")
    problems = []
    try:
        S, U, V = _triple(answer, "S, U, V")
        S, U, V = _int_matrix(S, "S"), _int_matrix(U, "U"), _int_matrix(V, "V")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    for label, M, want in (("S", S, (n_rows, n_cols)), ("U", U, (n_rows, n_rows)), ("V", V, (n_cols, n_cols))):
        if M.shape != want:
            problems.append(f"{label} must be {want[0]}x{want[1]}, yours is {M.shape[0]}x{M.shape[1]}")
    if problems:
        return CheckResult(name, False, problems)
    for label, M in (("U", U), ("V", V)):
        det = _det(M)
        if det not in (1, -1):
            problems.append(f"{label} is not unimodular: det {label} = {det} (it must be +1 or -1)")
    UAV = matmul(matmul(U, A), V)
    mismatches = [(i, j) for i in range(n_rows) for j in range(n_cols) if UAV[i, j] != S[i, j]]
    if mismatches:
        i, j = mismatches[0]
        more = f" (and {len(mismatches) - 1} more entries)" if len(mismatches) > 1 else ""
        problems.append(f"U A V is not S: (U A V)[{i},{j}] = {UAV[i, j]} but S[{i},{j}] = {S[i, j]}{more}")
    off = [(i, j) for i in range(n_rows) for j in range(n_cols) if i != j and S[i, j] != 0]
    if off:
        i, j = off[0]
        problems.append(f"S is not diagonal: S[{i},{j}] = {S[i, j]}")
    diagonal = [int(S[k, k]) for k in range(min(n_rows, n_cols))]
    for k, v in enumerate(diagonal):
        if v < 0:
            problems.append(f"S[{k},{k}] = {v} is negative (eq. 10 has non-negative entries; negate a column)")
    for k in range(len(diagonal) - 1):
        if diagonal[k] == 0 and diagonal[k + 1] != 0:
            problems.append(f"S[{k},{k}] = 0 comes before the non-zero S[{k + 1},{k + 1}] = {diagonal[k + 1]}: "
                            f"the zeros belong at the end of the diagonal (eq. 10)")
        elif diagonal[k] != 0 and diagonal[k + 1] % diagonal[k]:
            problems.append(f"S[{k},{k}] = {diagonal[k]} does not divide S[{k + 1},{k + 1}] = {diagonal[k + 1]} "
                            f"(eq. 11)")
    if not problems:
        # By uniqueness of the Smith normal form this cannot differ; kept as a cross-check with Algorithm 1.
        reference = smith_normal_form(A)
        mine = tuple(abs(v) for v in diagonal if v)
        if mine != reference.invariant_factors:
            problems.append(f"the diagonal {mine} differs from the invariant factors "
                            f"{reference.invariant_factors} that Algorithm 1 finds")
    return CheckResult(name, not problems, problems)


def _kernel_problems(A: np.ndarray, K, what: str = "K") -> list[str]:
    """What is wrong with K as a basis of the integer kernel lattice {x in Z^M : A x = 0}."""
    n_cols = A.shape[1]
    inverse = integer_inverse(A)
    dim = n_cols - inverse.rank
    if hasattr(K, "tolist"):
        K = K.tolist()
    if isinstance(K, (list, tuple)) and K and all(isinstance(v, (int, np.integer)) for v in K):
        K = [[v] for v in K]  # a plain vector is one column
    if isinstance(K, (list, tuple)) and len(K) == 0:
        K = [[] for _ in range(n_cols)]
    K = _int_matrix(K, what)
    if K.shape[0] != n_cols:
        return [f"{what} must have M = {n_cols} rows (one per entry of alpha), yours has {K.shape[0]}"]
    problems = []
    for j in range(K.shape[1]):
        image = matvec(A, list(K[:, j]))
        if any(image):
            problems.append(f"column {j} of {what} is not in the kernel: A {what}[:,{j}] = {_vec(image)}")
    if problems:
        return problems
    k = K.shape[1]
    rank_K = sympy.Matrix(K.tolist()).rank() if k else 0
    if k < dim:
        return [f"the kernel of A has dimension M - R = {n_cols} - {inverse.rank} = {dim}, "
                f"but {what} has only {k} column{'s' if k != 1 else ''}"]
    if k > dim:
        return [f"{what} has {k} columns but the kernel has dimension {dim}: "
                f"a basis has exactly {dim} (your columns are linearly dependent)"]
    if rank_K < k:
        return [f"the columns of {what} are linearly dependent (rank {rank_K} < {k})"]
    if k == 0:
        return []
    X = sympy.Matrix(inverse.kernel_coordinates(K).tolist())  # K = kernel @ X
    index = abs(int(X.det()))
    if index != 1:
        X_inv = X.inv()
        K0 = inverse.kernel
        for j in range(dim):
            if any(not v.is_integer for v in X_inv[:, j]):
                witness = _vec(K0[:, j])
                break
        else:  # pragma: no cover -- a non-unimodular X has a non-integral inverse column
            witness = None
        problems.append(f"your {what} spans only a sublattice of index {index} of the kernel: "
                        f"the kernel vector {witness} is not an integer combination of your columns")
    return problems


def check_kernel_basis(A, answer) -> CheckResult:
    """Exercise: an integer matrix K whose columns are a LATTICE basis of ``{x in Z^M : A x = 0}``.

    Checked exactly: ``A K = 0`` column by column, the number of columns is
    ``M - rank A``, the columns are independent, and ``K Z^k`` is the whole
    kernel lattice, not a sublattice (the coordinates of K in the core's basis
    have determinant +-1). Any lattice basis passes, e.g. ``K W`` for a
    unimodular W.
    """
    A = as_int_matrix(A, "A")
    name = f"integer kernel basis of a {A.shape[0]}x{A.shape[1]} matrix"
    if answer is None:
        return _pending(name, "Your answer is an integer matrix K with one kernel vector per column.")
    try:
        problems = _kernel_problems(A, answer)
    except _Wrong as err:
        problems = [str(err)]
    return CheckResult(name, not problems, problems)


def check_integer_solutions(A, beta, answer) -> CheckResult:
    """Exercise: decide whether ``A alpha = beta`` has integer solutions and give them all (eq. 41).

    The answer is :data:`NO_SOLUTION` (the string ``"no solution"``) or a pair
    ``(alpha_p, K)``: one integer solution and an integer kernel basis, so that
    the solutions are exactly ``alpha_p + K z`` for integer z.
    """
    A = as_int_matrix(A, "A")
    inverse = integer_inverse(A)
    check = inverse.solvability(beta)
    beta_text = _vec(check.beta)
    name = f"integer solutions of A alpha = beta for beta = {beta_text}"
    if answer is None:
        return _pending(name, 'Your answer is "no solution" or a pair (alpha_p, K).')
    says_none = isinstance(answer, str)
    if says_none and answer.strip().lower() not in ("no solution", "none", "no"):
        return CheckResult(name, False, [f'answer with "no solution" or a pair (alpha_p, K), not {answer!r}'])
    if says_none:
        if check.solvable:
            return CheckResult(name, False, [
                "there are integer solutions: the cokernel condition C beta = 0 holds (eq. 16) "
                "and I beta is integral (eq. 17)"])
        return CheckResult(name, True, note=f"Indeed: {check.reason}.")
    try:
        alpha_p, K = answer
    except (TypeError, ValueError):
        return CheckResult(name, False, ['the answer must be "no solution" or a pair (alpha_p, K)'])
    problems = []
    if not check.solvable:
        problems.append(f"A alpha = beta has {check.reason}")
    try:
        alpha_p = _int_vector(alpha_p, A.shape[1], "alpha_p")
    except _Wrong as err:
        return CheckResult(name, False, problems + [str(err)])
    image = matvec(A, alpha_p)
    if tuple(image) != tuple(check.beta):
        problems.append(f"alpha_p = {_vec(alpha_p)} is not a solution: A alpha_p = {_vec(image)}, "
                        f"not beta = {beta_text}")
    try:
        problems += _kernel_problems(A, K)
    except _Wrong as err:
        problems.append(str(err))
    return CheckResult(name, not problems, problems)


# ---------------------------------------------------------------------------
# Chapter 04b: inequalities and loop bounds
# ---------------------------------------------------------------------------


def _polytope_points(A: np.ndarray, b: list) -> list[tuple[int, ...]]:
    """The integer points of ``A x >= b`` by Algorithm 3 (core), for bounded polytopes."""
    return fourier_motzkin(A).integer_points(b)


def _violated_row(A: np.ndarray, b: list, x) -> int | None:
    for i, row in enumerate(A.tolist()):
        if sum(a * v for a, v in zip(row, x)) < b[i]:
            return i
    return None


def _range(bounds, what: str) -> range:
    try:
        low, high = bounds
    except (TypeError, ValueError):
        raise _Wrong(f"{what} must return a pair (low, high), got {bounds!r}") from None
    for v in (low, high):
        if isinstance(v, bool) or not (isinstance(v, (int, np.integer)) or _is_integer(v)):
            raise _Wrong(f"{what} gave the bound {v!r}, not an integer (round with math.ceil / math.floor)")
    return range(int(low), int(high) + 1)


def check_loop_bounds(A, b, answer, names=("x_0", "x_1")) -> CheckResult:
    """Exercise: loop bounds that visit every integer point of the 2-D polytope ``A x >= b`` exactly once.

    The answer is a pair ``(outer, inner)``: ``outer`` is ``(low, high)`` for
    ``x_1`` (the outer loop, as Algorithm 3 orders them), ``inner`` a function
    of ``x_1`` giving ``(low, high)`` for ``x_0``; both ends inclusive. The
    points your loops visit are compared with brute-force enumeration.
    """
    A = as_rational_matrix(A, "A")
    b = [Fraction(v) for v in b]
    if A.shape[1] != 2:
        raise ValueError(f"check_loop_bounds is for two variables; A has {A.shape[1]} columns")
    name = f"loop bounds for the polytope A x >= b in ({names[0]}, {names[1]})"
    if answer is None:
        return _pending(name, f"Your answer is a pair (outer, inner): outer = (low, high) for {names[1]}, "
                              f"inner = a function of {names[1]} giving (low, high) for {names[0]}.")
    truth = _brute_force_points(A, b)
    try:
        outer, inner = answer
        outer_range = _range(outer() if callable(outer) else outer, f"the outer bounds for {names[1]}")
        visited = []
        for x1 in outer_range:
            for x0 in _range(inner(x1), f"the inner bounds for {names[0]} at {names[1]} = {x1}"):
                visited.append((x0, x1))
                if len(visited) > 10 * len(truth) + 10_000:
                    raise _Wrong("your loops visit far too many points; are the bounds finite?")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    except (TypeError, ValueError) as err:
        return CheckResult(name, False, [f"the answer must be (outer, inner) with inner a function: {err}"])
    problems = []
    point = names[0].split("_")[0]
    outside = [x for x in visited if x not in truth]
    for x in outside[:3]:
        row = _violated_row(A, b, x)
        problems.append(f"your bounds include {point} = {_vec(x)}, which is outside: inequality {row} "
                        f"({_inequality_text(A, b, row, names)}) fails there")
    if len(outside) > 3:
        problems.append(f"... and {len(outside) - 3} more points outside")
    seen = set(visited)
    missing = [x for x in sorted(truth, key=lambda p: (p[1], p[0])) if x not in seen]
    for x in missing[:3]:
        problems.append(f"your bounds miss the point {point} = {_vec(x)}")
    if len(missing) > 3:
        problems.append(f"... and {len(missing) - 3} more missing points")
    return CheckResult(name, not problems, problems,
                       note="" if problems else f"Your loops visit all {len(truth)} integer points.")


def _inequality_text(A: np.ndarray, b: list, row: int, names) -> str:
    terms = []
    for coeff, label in zip(A[row].tolist(), names):
        coeff = normalize(coeff)
        if coeff == 0:
            continue
        sign = "-" if coeff < 0 else "+"
        mag = abs(coeff)
        body = label if mag == 1 else f"{_fmt(mag)}*{label}"
        terms.append(f"{sign} {body}")
    text = " ".join(terms).lstrip("+ ").strip() if terms else "0"
    if text.startswith("- "):
        text = "-" + text[2:]
    return f"{text} >= {_fmt(b[row])}"


def _brute_force_points(A: np.ndarray, b: list) -> set[tuple[int, ...]]:
    """All integer points of a bounded ``A x >= b``, by scanning a box around the real bounds.

    The box comes from each variable's real range (Fourier-Motzkin projection
    with that variable eliminated last); inside it every point is tested
    against ``A x >= b`` directly.
    """
    n = A.shape[1]
    ranges = []
    for k in range(n):
        order = [j for j in range(n) if j != k] + [k]
        system = fourier_motzkin(A[:, order])
        if not system.feasible(b):
            return set()
        low, high = system.bounds(b)
        if low is None or high is None:
            raise ValueError("the polytope is unbounded")
        ranges.append(range(low, high + 1))
    return {x for x in itertools.product(*ranges) if _violated_row(A, b, x) is None}


def check_point_count(A, beta, shape, answer) -> CheckResult:
    """Exercise: how many indices alpha in the box ``0 <= alpha < shape`` solve ``A alpha = beta``?

    That is ``|Sigma(beta)|`` of eq. 42, the number of terms of the gradient
    sum (eq. 47). Compared with brute force over the box and with the core's
    Fourier-Motzkin enumeration.
    """
    A = as_int_matrix(A, "A")
    beta = list(beta) if hasattr(beta, "__iter__") else [beta]
    shape = tuple(shape)
    name = f"|Sigma(beta)| for beta = {_vec(beta)} in a box of shape {shape}"
    if answer is None:
        return _pending(name, "Your answer is a non-negative integer.")
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        return CheckResult(name, False, [f"the answer must be an integer count, got {answer!r}"])
    brute = [alpha for alpha in np.ndindex(*shape) if tuple(matvec(A, list(alpha))) == tuple(beta)]
    solutions = integer_inverse(A).solve(beta)
    core = 0 if solutions is None else len(solutions.within(shape).points())
    if core != len(brute):  # pragma: no cover -- would be a bug in the core
        raise AssertionError(f"core counts {core} points, brute force {len(brute)}")
    if int(answer) == len(brute):
        return CheckResult(name, True)
    problems = [f"you counted {int(answer)}, but that is not the number of indices alpha in the box "
                f"with A alpha = beta"]
    if solutions is None:
        problems.append(integer_inverse(A).solvability(beta).reason)
    elif int(answer) > len(brute):
        problems.append("too many: did you count points of the line/plane outside the box, "
                        "or non-integer z?")
    else:
        problems.append("too few: check both ends of each range (they are inclusive)")
    return CheckResult(name, False, problems)


def _min_of_row(A: np.ndarray, b: list, row: int):
    """The real minimum of ``A[row] x`` over the other rows' polytope, via Fourier-Motzkin.

    A new variable ``t = A[row] x`` is appended last, so it is eliminated last
    and its real range is the projection. Returns ``(feasible, low)`` with
    ``low`` None when unbounded below.
    """
    others = [i for i in range(A.shape[0]) if i != row]
    n = A.shape[1]
    rows = [list(A[i]) + [Fraction(0)] for i in others]
    rhs = [b[i] for i in others]
    a = list(A[row])
    rows.append([-v for v in a] + [Fraction(1)])  # t - a x >= 0
    rows.append(list(a) + [Fraction(-1)])  # a x - t >= 0
    rhs += [Fraction(0), Fraction(0)]
    system = fourier_motzkin(rows, names=[f"x_{k}" for k in range(n)] + ["t"])
    if not system.feasible(rhs):
        return False, None
    low, _ = system.real_bounds(rhs, ())
    return True, low


def _witness_outside_row(A: np.ndarray, b: list, row: int, low):
    """A rational point that satisfies every row but ``row`` and violates ``row``."""
    others = [i for i in range(A.shape[0]) if i != row]
    target = b[row] - 1 if low is None else (low + b[row]) / 2
    rows = [list(A[i]) for i in others] + [[-v for v in A[row]]]
    rhs = [b[i] for i in others] + [-target]
    return fourier_motzkin(rows).sample_point(rhs)


def check_redundant_rows(A, b, answer) -> CheckResult:
    """Exercise: which single inequalities of ``A x >= b`` can be dropped without changing the (real) solution set?

    The answer is a set of row indices. Row i is redundant when the other rows
    imply it: the minimum of ``A[i] x`` over them is at least ``b[i]``, found by
    Fourier-Motzkin projection. Each row is judged on its own (of two equal
    rows each is redundant, but not both together).
    """
    A = as_rational_matrix(A, "A")
    b = [Fraction(v) for v in b]
    name = "redundant inequalities"
    if answer is None:
        return _pending(name, "Your answer is a set of row indices, e.g. {0, 3}; the empty set is set().")
    try:
        claimed = {int(i) for i in answer}
    except (TypeError, ValueError):
        return CheckResult(name, False, [f"the answer must be a set of row indices, got {answer!r}"])
    problems = [f"there is no row {i}: A has rows 0 to {A.shape[0] - 1}"
                for i in sorted(claimed) if not 0 <= i < A.shape[0]]
    if problems:
        return CheckResult(name, False, problems)
    names = [f"x_{k}" for k in range(A.shape[1])]
    for i in range(A.shape[0]):
        feasible, low = _min_of_row(A, b, i)
        redundant = (not feasible) or (low is not None and low >= b[i])
        if redundant and i not in claimed:
            why = ("the other rows have no solution at all" if not feasible else
                   f"on the other rows {_inequality_text(A, b, i, names).split(' >=')[0]} is at least "
                   f"{_fmt(low)} >= {_fmt(b[i])}")
            problems.append(f"row {i} ({_inequality_text(A, b, i, names)}) is redundant: {why}")
        elif not redundant and i in claimed:
            witness = _witness_outside_row(A, b, i, low)
            problems.append(f"row {i} ({_inequality_text(A, b, i, names)}) is not redundant: "
                            f"x = {_vec(witness)} satisfies all other rows but violates row {i}")
    return CheckResult(name, not problems, problems)

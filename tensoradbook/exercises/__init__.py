"""Check functions for the exercises at the end of each chapter.

Every ``check_*`` function takes the data of an exercise and the student's
answer and returns a :class:`CheckResult`, which prints whether the answer is
right and, if not, what exactly is wrong ("U is not unimodular: det U = 2",
"your bounds miss the point z = (1, 2)", ...). An answer of ``None`` is the
notebooks' placeholder and gives "no answer yet" instead of an error.

The checks never compare against a stored solution: they test the defining
properties of a right answer exactly (integer arithmetic, sympy determinants)
and compare with the core's algorithms (:mod:`tensoradbook.integer.smith`,
:mod:`tensoradbook.integer.fourier_motzkin`) or with brute-force enumeration. So any
right answer passes, not only the one the core happens to compute.

Chapter 04a (integer equations, report sec. 4.1):
:func:`check_bezout`, :func:`check_smith`, :func:`check_kernel_basis`,
:func:`check_integer_solutions`.
Chapter 04b (inequalities, report sec. 4.2 and eqs. 42-45):
:func:`check_loop_bounds`, :func:`check_point_count`, :func:`check_redundant_rows`.
Chapters 01 and 05 (the introduction, sec. 1; Algorithm 4, sec. 5):
:func:`check_derivative`, :func:`check_term_count`, :func:`check_index_matrix`.
Chapter 02 (reverse accumulation, sec. 2): :func:`check_adjoint`, :func:`check_scalar_gradient`.
Chapter 03 (tensor-valued functions, sec. 3): :func:`check_vec_index`,
:func:`check_jacobian_memory`, :func:`check_jacobian`. These compare with the
core's derivation (:func:`tensoradbook.ad.derive`, the reverse sweep) on random
inputs, or with brute force and numpy.
Chapter 06 (kernels, sec. 6; gather vs. scatter): :func:`check_gradient_element`,
:func:`check_scatter_races`, :func:`check_max_contention`, :func:`check_gather_bounds`.
Chapter 07 (second derivatives, sec. 5.3; checked by second differences of L):
:func:`check_second_derivative`, :func:`check_hessian_vector_product`, :func:`check_hessian_pattern`.
Chapter 08 (inverse accumulation, Pearlmutter & Siskind; checked with numpy.linalg.solve on a
central-difference Jacobian, lump orders against every topological order): :func:`check_step_inverse`,
:func:`check_reverse_inverse`, :func:`check_forward_inverse`, :func:`check_newton_step`, :func:`check_lump_order`.
Chapter 09 (matrix-free Jacobian chaining, Naumann secs. 3-5; checked by enumerating every schedule):
:func:`check_two_factor_optimum`, :func:`check_homogeneous_costs`, :func:`check_cell_fma`,
:func:`check_bounded_optimum`, :func:`check_tape_threshold`.

This module is part of the core: numpy, sympy and fractions only, no Jupyter.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import sympy

from ..integer.matrix import as_int_matrix, as_rational_matrix, matmul, matvec, normalize
from ..integer.fourier_motzkin import fourier_motzkin
from ..integer.smith import extended_gcd, integer_inverse, smith_normal_form

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


def _int_triple(answer, labels: str) -> tuple[int, int, int]:
    """A triple answer of integers, or a _Wrong naming every part that is not one."""
    parts = _triple(answer, labels)
    bad = [f"{label} = {v!r} is not an integer" for label, v in zip(labels.split(", "), parts)
           if isinstance(v, bool) or not isinstance(v, (int, np.integer))]
    if bad:
        raise _Wrong("; ".join(bad))
    return tuple(int(v) for v in parts)


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
        g, x, y = _int_triple(answer, "g, x, y")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    problems = []
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
            problems.append(f"the diagonal {mine} is not the Smith normal form of A: Algorithm 1 finds other "
                            f"invariant factors")
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
        return [f"{what} has only {k} column{'s' if k != 1 else ''}: too few to span the kernel, whose "
                f"dimension is M - rank A (M = {n_cols}); some integer solution of A x = 0 is not a "
                f"combination of your columns"]
    if k > dim:
        return [f"{what} has {k} columns, more than the dimension M - rank A of the kernel: a basis has "
                f"exactly that many columns (yours are linearly dependent)"]
    if rank_K < k:
        return [f"the columns of {what} are linearly dependent (rank {rank_K} < {k})"]
    if k == 0:
        return []
    X = sympy.Matrix(inverse.kernel_coordinates(K).tolist())  # K = kernel @ X
    index = abs(int(X.det()))
    if index != 1:
        problems.append(f"your {what} spans only a sublattice of index {index} of the kernel: some integer "
                        f"solution of A x = 0 is not an integer combination of your columns")
        common = [(j, math.gcd(*(int(v) for v in K[:, j]))) for j in range(k)]
        scaled = [(j, g) for j, g in common if g > 1]
        if scaled:
            j, g = scaled[0]
            problems.append(f"hint: the entries of column {j} have the common factor {g}; dividing it out "
                            f"gives a shorter kernel vector")
        else:
            problems.append("hint: independent columns are not enough; take the kernel columns of V from a "
                            "Smith decomposition (eq. 13), which are a lattice basis")
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
                '"no solution" is not right: compute C beta for the cokernel condition (eq. 16) and I beta '
                'for integrality (eq. 17) again'])
        return CheckResult(name, True, note=f"Indeed: {check.reason}.")
    try:
        alpha_p, K = answer
    except (TypeError, ValueError):
        return CheckResult(name, False, ['the answer must be "no solution" or a pair (alpha_p, K)'])
    problems = []
    decide = ("hint: before looking for alpha_p, decide with the cokernel condition (eq. 16) and the "
              "integrality of I beta (eq. 17) whether an integer solution exists")
    try:
        alpha_p = _int_vector(alpha_p, A.shape[1], "alpha_p")
    except _Wrong as err:
        return CheckResult(name, False, [str(err), decide])
    image = matvec(A, alpha_p)
    if tuple(image) != tuple(check.beta):
        problems.append(f"alpha_p = {_vec(alpha_p)} is not a solution: A alpha_p = {_vec(image)}, "
                        f"not beta = {beta_text}")
        problems.append(decide)
    try:
        problems += _kernel_problems(A, K)
    except _Wrong as err:
        problems.append(str(err))
    return CheckResult(name, not problems, problems)


# ---------------------------------------------------------------------------
# Chapter 04b: inequalities and loop bounds
# ---------------------------------------------------------------------------


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
    if int(answer) > len(brute):
        problems.append("too many: did you count points of the line/plane outside the box, or non-integer z? "
                        "Check first whether A alpha = beta has integer solutions at all (eqs. 16-17).")
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
    missed = False
    for i in range(A.shape[0]):
        feasible, low = _min_of_row(A, b, i)
        redundant = (not feasible) or (low is not None and low >= b[i])
        if redundant and i not in claimed:
            missed = True
        elif not redundant and i in claimed:
            witness = _witness_outside_row(A, b, i, low)
            problems.append(f"row {i} ({_inequality_text(A, b, i, names)}) is not redundant: "
                            f"x = {_vec(witness)} satisfies all other rows but violates row {i}")
    if missed:
        problems.append("a row you did not list is redundant too: for each row, find the least value of its left "
                        "side over the other rows (a new variable t equal to it, eliminated last by "
                        "Fourier-Motzkin) and compare it with the row's bound")
    return CheckResult(name, not problems, problems)


# ---------------------------------------------------------------------------
# Chapters 01, 02, 03 and 05: derivatives of element-wise functions
# ---------------------------------------------------------------------------
#
# Chapter 01 (introduction, report sec. 1) and 05 (sec. 5):
# :func:`check_derivative`, :func:`check_term_count`, :func:`check_index_matrix`.
# Chapter 02 (reverse accumulation, sec. 2): :func:`check_adjoint`, :func:`check_scalar_gradient`.
# Chapter 03 (tensor-valued functions, sec. 3): :func:`check_vec_index`,
# :func:`check_jacobian_memory`, :func:`check_jacobian`.
#
# These checks compare with the core's derivation (:func:`tensoradbook.ad.derive`,
# :func:`tensoradbook.ad.reverse.reverse_accumulate`) numerically on random
# inputs, or with brute-force enumeration and numpy, so any correct way of
# writing an answer passes.

__all__ += [
    "check_adjoint",
    "check_derivative",
    "check_index_matrix",
    "check_jacobian",
    "check_jacobian_memory",
    "check_scalar_gradient",
    "check_term_count",
    "check_vec_index",
]

_RTOL, _ATOL = 1e-6, 1e-9


def _function(fn, shapes):
    """A :class:`~tensoradbook.lang.function.Function` from a Function or from its text and shapes."""
    from ..lang.function import Function
    from ..lang.parser import parse

    if isinstance(fn, Function):
        return fn
    return parse(fn, shapes or {})


def _index_text(index) -> str:
    return "[" + "; ".join(str(int(v)) for v in index) + "]"


def _number(value: float) -> str:
    return f"{value:.6g}"


def _scalar_shapes(text: str) -> dict:
    import re

    return {name: () for name in re.findall(r"([A-Za-z][A-Za-z0-9_]*)\s*\[\s*\]", text)}


def _parse_answer(text, shapes, what: str):
    """The student's text parsed with ``shapes``, or a _Wrong with the parser's message (caret included)."""
    from ..lang.expr import ExpressionError
    from ..lang.parser import parse

    if not isinstance(text, str):
        raise _Wrong(f"{what} must be text in the report's notation, got {type(text).__name__}")
    try:
        return parse(text, shapes)
    except ExpressionError as err:
        indented = "\n".join("    " + line for line in str(err).splitlines())
        raise _Wrong(f"your {what} cannot be read:\n{indented}") from None


def _element_problems(label: str, yours, right, close, zero_atol: float, why_zero, missing: str,
                      ratio_rtol: float = 1e-6) -> list[str]:
    """What is wrong with the tensor ``yours`` where it is not ``close`` to ``right``, the most telling
    first: an element that must be 0 (``why_zero(index)`` says why, ``missing`` what is missing), one that
    is wrongly 0, a constant factor, or else the first wrong element; then how many differ."""
    wrong = [tuple(int(v) for v in idx) for idx in np.argwhere(~close)] if np.ndim(right) else [()]
    zero_should = [b for b in wrong if abs(right[b]) <= zero_atol]
    zero_yours = [b for b in wrong if abs(yours[b]) <= zero_atol and b not in zero_should]
    nonzero = np.abs(right) > zero_atol
    ratio = np.asarray(yours)[nonzero] / np.asarray(right)[nonzero]
    if zero_should:
        b = zero_should[0]
        problems = [f"{label}{_index_text(b)} must be 0 ({why_zero(b)}), yours is {_number(yours[b])}: {missing}"]
    elif zero_yours:
        b = zero_yours[0]
        problems = [f"yours gives 0 at {label}{_index_text(b)}, but the right value is {_number(right[b])}: "
                    f"are your sum ranges or conditions too narrow?"]
    elif ratio.size and np.all(np.isfinite(ratio)) and np.allclose(ratio, ratio[0], rtol=ratio_rtol):
        problems = [f"every element is {_number(ratio[0])} times the right value: a constant factor "
                    f"(or the sign) is off"]
    else:
        b = wrong[0]
        problems = [f"{label}{_index_text(b)} is {_number(yours[b])} but should be {_number(right[b])} "
                    f"(on random inputs)"]
    if len(wrong) > 1:
        problems.append(f"{len(wrong)} of {max(1, np.size(right))} elements differ")
    return problems


def check_derivative(fn, argument: str, answer, shapes=None, trials: int = 3, seed: int = 0) -> CheckResult:
    """Exercise: write the gradient ``dx`` of ``sum(df * f)`` element-wise, in the report's notation.

    ``fn`` is a function (or its text with ``shapes``), ``argument`` the name
    of the argument ``x``. The answer is text such as
    ``"dx[i] = sum{j}_0^3 (df[i; j] * 2 * x[i])"``: any index names, any
    equivalent form. It is parsed (a mistake shows the parser's caret message,
    e.g. a sum range that leaves the shape of ``df``) and evaluated on random
    inputs and random ``df`` against the core's derivative (Algorithm 4); the
    first elements that differ are named. The gradient is called ``d`` and the
    argument's name (``dx``), or what the core calls it when that name is taken
    (the gradient of a first derivative ``dx`` with respect to ``x`` is ``dx_1``).
    """
    from ..ad.derive import derive
    from ..ad.gradcheck import random_arguments

    fn = _function(fn, shapes)
    if argument not in fn.arguments:
        raise ValueError(f"{argument!r} is not an argument of {fn.name}; it has {fn.arguments}")
    grads = derive(fn)
    truth_fn = grads[argument]
    core_name, adjoint = truth_fn.name, grads.adjoint_name
    natural = "d" + argument
    gradient = natural if natural == core_name or natural not in truth_fn.arguments else core_name
    accepted = dict.fromkeys([gradient, core_name])
    answer_shapes = dict(truth_fn.shapes)
    answer_shapes.update({n: truth_fn.shapes[core_name] for n in accepted})
    name = f"{gradient}, the derivative of {fn.name} with respect to {argument}"
    if answer is None:
        sizes = ", ".join(f"{k}: {v}" for k, v in truth_fn.shapes.items() if k not in accepted)
        return _pending(name, f"Your answer is text like \"{gradient}[...] = ...\" using {adjoint} "
                              f"and the arguments (shapes {sizes}).")
    try:
        mine = _parse_answer(answer, answer_shapes, "derivative")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    if mine.name not in accepted:
        return CheckResult(name, False, [f"your left side defines {mine.name!r}; the gradient is called "
                                         f"{gradient!r} (write {gradient}[...] = ...)"])
    unknown = [a for a in mine.arguments if a not in truth_fn.shapes or a in accepted]
    if unknown:  # pragma: no cover -- the parser rejects names without a shape
        return CheckResult(name, False, [f"your expression uses {unknown[0]!r}, which is not available"])
    rng = np.random.default_rng(seed)
    problems = []
    for _ in range(trials):
        args = random_arguments(fn, rng)
        values = dict(args)
        values[adjoint] = rng.standard_normal(fn.shapes[fn.name])
        for extra in mine.arguments:  # e.g. df of a second derivative
            if extra not in values:
                values[extra] = rng.uniform(0.5, 1.5, truth_fn.shapes[extra])
        for extra in truth_fn.arguments:
            if extra not in values:
                values[extra] = rng.uniform(0.5, 1.5, truth_fn.shapes[extra])
        right = truth_fn.evaluate(values)
        yours = mine.evaluate(values)
        close = np.isclose(yours, right, rtol=_RTOL, atol=_ATOL * max(1.0, float(np.abs(right).max(initial=0))))
        if close.all():
            continue
        problems += _element_problems(gradient, yours, right, close, _ATOL,
                                      lambda b: f"no element of {fn.name} reads {argument}{_index_text(b)}",
                                      "a Kronecker delta / condition is missing")
        break
    return CheckResult(name, not problems, problems,
                       note="" if problems else f"Your expression agrees with the core's derivative on "
                                                f"{trials} random inputs.")


def _element_points(fn, argument: str, beta: tuple) -> list:
    """Brute force: every (occurrence, extended index) at which ``fn`` reads ``argument[beta]``."""
    from ..lang.expr import Element, If, Sum
    from ..lang.evaluate import bound_value

    hits = set()

    def visit(node, env, scope):
        if isinstance(node, Element):
            if node.name == argument and tuple(int(a.evaluate(env)) for a in node.indices) == beta:
                hits.add((node, scope, tuple(sorted(env.items()))))
            return
        if isinstance(node, Sum):
            low = int(bound_value(node.lower, env, lower=True))
            high = int(bound_value(node.upper, env, lower=False))
            for k in range(low, high + 1):
                inner = dict(env)
                inner[node.index] = k
                visit(node.body, inner, scope + (node.index,))
            return
        if isinstance(node, If):
            visit(node.then if all(atom.holds(env) for atom in node.condition) else node.otherwise, env, scope)
            return
        for child in node.children():
            visit(child, env, scope)

    for point in np.ndindex(*fn.shapes[fn.name]):
        visit(fn.body, dict(zip(fn.indices, (int(v) for v in point))), ())
    return sorted(hits, key=lambda h: h[2])


def check_term_count(fn, argument: str, beta, answer, shapes=None) -> CheckResult:
    """Exercise: how many terms does the gradient element ``dx[beta]`` add up?

    That is the number of extended indices ``alpha`` (output index and sum
    indices, sec. 5.2) in range at which the function reads ``x[beta]``: the
    size of the set Gamma of eq. 39 (summed over the occurrences of x). Counted
    by brute force over every element of the output and every sum.
    """
    fn = _function(fn, shapes)
    if argument not in fn.arguments:
        raise ValueError(f"{argument!r} is not an argument of {fn.name}; it has {fn.arguments}")
    beta = tuple(int(v) for v in (beta if hasattr(beta, "__iter__") else [beta]))
    name = f"number of terms of d{argument}{_index_text(beta)}"
    if answer is None:
        return _pending(name, "Your answer is a non-negative integer.")
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        return CheckResult(name, False, [f"the answer must be an integer count, got {answer!r}"])
    hits = _element_points(fn, argument, beta)
    count = len(hits)
    if int(answer) == count:
        return CheckResult(name, True, note=f"Indeed, {fn.name} reads {argument}{_index_text(beta)} "
                                            f"at {count} extended ind{'ex' if count == 1 else 'ices'}.")
    problems = [f"you counted {int(answer)}, but {fn.name} reads {argument}{_index_text(beta)} at a "
                f"different number of extended indices (output index and sum indices)"]
    if int(answer) > count:
        problems.append("too many: some of your indices lie outside the ranges (the shape of "
                        f"{fn.name} and the sums' bounds), or do not map onto {_index_text(beta)}")
    else:
        problems.append("too few: remember that indices missing from the argument run over their whole "
                        "range, and that both ends of every range count")
    return CheckResult(name, False, problems)


def _row_text(row, names) -> str:
    from ..lang.expr import Affine
    from ..lang.printer import affine_text

    return affine_text(Affine.of({n: int(c) for n, c in zip(names, row) if c}))


def check_index_matrix(fn, argument: str, answer, shapes=None, occurrence: int = 0) -> CheckResult:
    """Exercise: the index matrix ``A`` of an argument's occurrence ``x[A alpha + a]`` (eq. 35, sec. 5.2).

    Its columns belong to the extended index ``alpha``: the output indices,
    then the sum indices from the outermost sum inwards; one row per index of
    the argument. Compared with the matrix Algorithm 4 uses.
    """
    from ..ad.derive import derive

    fn = _function(fn, shapes)
    parts = derive(fn).contributions.get(argument)
    if not parts:
        raise ValueError(f"{argument!r} is not an argument of {fn.name} with a non-zero derivative")
    part = parts[occurrence]
    from ..lang.printer import expr_text

    element = expr_text(part.element)
    alpha = ", ".join(part.alpha)
    name = f"index matrix of {element} over alpha = ({alpha})"
    A = part.index_matrix
    if answer is None:
        return _pending(name, f"Your answer is an integer matrix with {A.shape[0]} row(s) (one per index of "
                              f"{argument}) and {A.shape[1]} columns ({alpha}).")
    try:
        mine = _int_matrix(answer, "A")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    if mine.ndim == 1 or mine.shape != A.shape:
        got = "x".join(str(n) for n in mine.shape)
        return CheckResult(name, False, [f"A must be {A.shape[0]}x{A.shape[1]}: one row per index of {argument}, "
                                         f"one column per entry of alpha = ({alpha}); yours is {got}"])
    problems = []
    for r in range(A.shape[0]):
        if list(mine[r]) != list(A[r]):
            problems.append(f"row {r} says index {r} of {argument} is {_row_text(mine[r], part.alpha)}, "
                            f"which is not index {r} of {element}: entry c of the row is the coefficient of "
                            f"alpha's entry c (in the order {alpha}) in that index")
    return CheckResult(name, not problems, problems,
                       note="" if problems or not any(part.offset) else
                       f"(The constant offset a = {_vec(part.offset)} is not part of A.)")


def _consumer_parts(root, node):
    """``[(parent, contribution, local partial)]`` for each edge into ``node`` in the sweep with seed 1 (eq. 1)."""
    from ..lang.expr import Number
    from ..ad.reverse import local_partials, reverse_accumulate

    sweep = reverse_accumulate(root, Number(1))
    found = any(step.node == node for step in sweep.steps)
    parts = []
    for step in sweep.steps:
        partials = dict(local_partials(step.node)) if not hasattr(step.node, "condition") else {}
        for child, contribution in step.contributions:
            if child == node:
                parts.append((step.node, contribution, partials.get(child)))
    adjoint = next((step.adjoint for step in sweep.steps if step.node == node), None)
    return found, adjoint, parts


def _scalar_value(expr, shapes, values) -> float:
    from ..lang.function import Function

    return float(Function("v", (), expr, {**shapes, "v": ()}).evaluate(values))


def check_adjoint(fn, node, answer, shapes=None, points: int = 3, seed: int = 0) -> CheckResult:
    """Exercise: the adjoint ``df/d node`` of a part of a scalar function (eqs. 1-2).

    ``fn`` is a scalar function such as ``"f[] = sin (x[] * y[]) * x[]"``,
    ``node`` the text of one of its parts (``"x[] * y[]"``). The answer is an
    expression in the arguments (text, or a number). It is compared on random
    points with the core's reverse sweep seeded with ``df/df = 1`` (eq. 1).
    Typical slips get their own message: only the local derivative
    ``d parent / d node``, or only one of several consumers (eq. 2 sums them).
    """
    from ..lang.printer import expr_text

    text = fn if isinstance(fn, str) else str(fn)
    shapes = dict(shapes) if shapes is not None else _scalar_shapes(text)
    fn = _function(fn, shapes)
    shapes = dict(fn.shapes)
    node_fn = _function(f"{fn.name}[] = {node}" if isinstance(node, str) else node, shapes)
    found, adjoint, parts = _consumer_parts(fn.body, node_fn.body)
    if not found:
        raise ValueError(f"{node!r} is not a part of {fn}")
    node_text = expr_text(node_fn.body)
    name = f"adjoint of the part {node_text} of {fn.name}"
    if answer is None:
        return _pending(name, f"Your answer is an expression in {', '.join(fn.arguments)} (text), "
                              f"e.g. \"cos ({fn.arguments[0]}[])\", or a number.")
    if isinstance(answer, (int, float, np.integer, np.floating)) and not isinstance(answer, bool):
        answer = repr(float(answer))
    try:
        mine = _parse_answer(f"{fn.name}[] = {answer}" if isinstance(answer, str) else answer, shapes, "adjoint")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    rng = np.random.default_rng(seed)
    for _ in range(points):
        values = {a: rng.uniform(0.5, 1.5) for a in fn.arguments}
        right = _scalar_value(adjoint, shapes, values)
        yours = float(mine.evaluate(values))
        if np.isclose(yours, right, rtol=_RTOL, atol=_ATOL):
            continue
        at = ", ".join(f"{k} = {_number(v)}" for k, v in values.items())
        problems = [f"at {at} your adjoint is {_number(yours)}, the right value is {_number(right)}"]
        for parent, contribution, partial in parts:
            parent_text = expr_text(parent)
            if len(parts) > 1 and np.isclose(yours, _scalar_value(contribution, shapes, values), rtol=_RTOL):
                problems.append(f"that is only the path through the consumer {parent_text}; the part is used "
                                f"by {len(parts)} consumers and eq. 2 sums over all of them")
                break
            if partial is not None and np.isclose(yours, _scalar_value(partial, shapes, values), rtol=_RTOL) \
                    and not np.isclose(yours, _scalar_value(contribution, shapes, values), rtol=_RTOL):
                problems.append(f"that is the local derivative d({parent_text})/d({node_text}) only; "
                                f"multiply it by the adjoint of {parent_text} (eq. 2)")
                break
        return CheckResult(name, False, problems)
    return CheckResult(name, True, note=f"Your expression agrees with the reverse sweep at {points} random points.")


def check_scalar_gradient(fn, point: dict, answer, shapes=None, rtol: float = 1e-3) -> CheckResult:
    """Exercise: the numbers ``df/dx`` for every argument of a scalar function at a point (eq. 3).

    The answer is a dict ``{"x": value, ...}`` (values to about 4 digits are
    fine). Compared with the core's derivative (tested against finite
    differences in the test suite).
    """
    from ..ad.derive import derive
    from ..lang.expr import Element

    text = fn if isinstance(fn, str) else str(fn)
    shapes = dict(shapes) if shapes is not None else _scalar_shapes(text)
    fn = _function(fn, shapes)
    at = ", ".join(f"{k} = {_number(v)}" for k, v in point.items())
    name = f"gradient of {fn.name} at {at}"
    if answer is None:
        return _pending(name, "Your answer is a dict {" + ", ".join(f'"{a}": ...' for a in fn.arguments) + "}.")
    if not isinstance(answer, dict):
        return CheckResult(name, False, [f"the answer must be a dict like {{'{fn.arguments[0]}': 1.23, ...}}, "
                                         f"got {type(answer).__name__}"])
    grads = derive(fn)
    values = {k: float(v) for k, v in point.items()}
    args = {k: np.float64(v) for k, v in values.items()}
    exact = {a: float(v) for a, v in grads.evaluate(args, np.float64(1.0)).items()}
    problems = []
    missing = [a for a in fn.arguments if a not in answer]
    if missing:
        problems.append(f"give a value for every argument; missing: {', '.join(missing)}")
    extra = [a for a in answer if a not in fn.arguments]
    if extra:
        problems.append(f"{', '.join(map(str, extra))} is not an argument of {fn.name}")
    for a in fn.arguments:
        if a not in answer:
            continue
        try:
            yours = float(answer[a])
        except (TypeError, ValueError):
            problems.append(f"df/d{a} must be a number, got {answer[a]!r}")
            continue
        if np.isclose(yours, exact[a], rtol=rtol, atol=1e-4):
            continue
        message = f"df/d{a} = {_number(yours)} is not right"
        _, _, parts = _consumer_parts(fn.body, Element(a, ()))
        values_parts = []
        for parent, contribution, _ in parts:
            values_parts.append(_scalar_value(contribution, fn.shapes, args))
        if len(parts) > 1 and any(np.isclose(yours, v, rtol=rtol, atol=1e-4) for v in values_parts):
            message += (f": it is the path through one consumer only; {a} is used by {len(parts)} parts "
                        f"and eq. 3 adds all their contributions")
        problems.append(message)
    return CheckResult(name, not problems, problems)


def check_vec_index(shape, index, answer) -> CheckResult:
    """Exercise: the position of ``A[index]`` in ``vec A`` (eq. 4), zero-based.

    vec stacks the columns: the first index runs fastest, with strides
    ``s_0 = 1``, ``s_d = N_0 ... N_(d-1)``. Compared with numpy's
    ``ravel_multi_index(..., order="F")`` and with a brute-force walk. An
    index whose row-major (C order) position is the same (the first and the
    last element, for instance) is refused with a ValueError: there the
    row-major answer would pass.
    """
    shape = tuple(int(n) for n in shape)
    index = tuple(int(i) for i in index)
    if len(index) != len(shape) or any(not 0 <= i < n for i, n in zip(index, shape)):
        raise ValueError(f"{_index_text(index)} is not an index of an array of shape {shape}")
    if int(np.ravel_multi_index(index, shape, order="F")) == int(np.ravel_multi_index(index, shape, order="C")):
        raise ValueError(f"A{_index_text(index)} has the same position in vec A (column-major) and in row-major "
                         f"order, so the exercise cannot tell the two apart: pick another index")
    name = f"vec index of A{_index_text(index)} for A of shape {shape}"
    if answer is None:
        return _pending(name, "Your answer is one integer (zero-based).")
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        return CheckResult(name, False, [f"the answer must be an integer position, got {answer!r}"])
    right = int(np.ravel_multi_index(index, shape, order="F"))
    walk = [tuple(reversed(p)) for p in np.ndindex(*reversed(shape))]  # first index fastest
    if walk.index(index) != right:  # pragma: no cover -- numpy and the walk agree
        raise AssertionError("vec order inconsistent")
    answer = int(answer)
    if answer == right:
        return CheckResult(name, True)
    problems = [f"position {answer} of vec A holds A{_index_text(walk[answer])}, not A{_index_text(index)}"
                if 0 <= answer < len(walk) else
                f"vec A has positions 0 to {len(walk) - 1}; {answer} is outside"]
    if answer == int(np.ravel_multi_index(index, shape, order="C")):
        problems.append("that is the row-major (C order) position; vec stacks columns, so the FIRST index "
                        "runs fastest (eq. 4)")
    elif answer == right + 1:
        problems.append("off by one: the book counts from 0 like the report's sec. 6 (eq. 4 counts from 1)")
    return CheckResult(name, False, problems)


def check_jacobian_memory(out_shape, in_shape, answer, itemsize: int = 8) -> CheckResult:
    """Exercise: rows, columns and bytes of the explicit Jacobian ``d vec F / d vec X`` (eq. 6).

    One row per element of the output, one column per element of the input
    (eq. 5), ``itemsize`` bytes per entry (8 for float64). The answer is the
    triple ``(rows, columns, bytes)``.
    """
    out_shape, in_shape = tuple(int(n) for n in out_shape), tuple(int(n) for n in in_shape)
    rows, cols = math.prod(out_shape), math.prod(in_shape)
    size = rows * cols * itemsize
    name = f"explicit Jacobian of F: {in_shape} -> {out_shape}"
    if answer is None:
        return _pending(name, f"Your answer is a triple (rows, columns, bytes) for {itemsize}-byte entries.")
    try:
        r, c, b = _int_triple(answer, "rows, columns, bytes")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    problems = []
    if (r, c) == (cols, rows) and rows != cols:
        problems.append("rows and columns are swapped: d vec F / d vec X has one row per element of F "
                        "and one column per element of X, eq. 5")
    else:
        if r != rows:
            problems.append(f"rows = {r}: the Jacobian has one row per element of vec F, and F has shape {out_shape}")
        if c != cols:
            problems.append(f"columns = {c}: the Jacobian has one column per element of vec X, and X has "
                            f"shape {in_shape}")
    if b != size:
        if b == rows * cols:
            problems.append(f"bytes = {b} is the number of entries; each takes {itemsize} bytes")
        elif r * c * itemsize == b:
            problems.append(f"bytes = {b} follows from your rows and columns, which are not right")
        else:
            problems.append(f"bytes = {b} is not rows * columns * {itemsize}")
    return CheckResult(name, not problems, problems,
                       note="" if problems else f"That is {size / 2**20:.4g} MiB.")


def check_jacobian(fn, argument: str, args: dict, answer, shapes=None) -> CheckResult:
    """Exercise: the explicit Jacobian ``d vec f / d vec x`` at ``args`` as a matrix (eqs. 4-6).

    Rows follow ``vec f`` and columns ``vec x`` (column-major, the first index
    fastest). Each row is the core's gradient with ``df`` a unit tensor
    (sec. 5.3: substitute ``df_alpha = prod delta``).
    """
    from ..ad.derive import derive

    fn = _function(fn, shapes)
    out_shape, in_shape = tuple(fn.shapes[fn.name]), tuple(fn.shapes[argument])
    rows, cols = math.prod(out_shape), math.prod(in_shape)
    name = f"Jacobian d vec {fn.name} / d vec {argument} ({rows}x{cols})"
    if answer is None:
        return _pending(name, f"Your answer is a {rows}x{cols} matrix (nested lists or a numpy array).")
    try:
        mine = np.array(answer, dtype=float)
    except (TypeError, ValueError):
        return CheckResult(name, False, ["the answer must be a matrix of numbers"])
    grads = derive(fn)
    J = np.zeros((rows, cols))
    for r in range(rows):
        df = np.zeros(rows)
        df[r] = 1.0
        J[r] = grads.evaluate(args, df.reshape(out_shape, order="F"))[argument].reshape(-1, order="F")
    if mine.shape != J.shape:
        if mine.shape == J.T.shape:
            return CheckResult(name, False, [f"your matrix is {mine.shape[0]}x{mine.shape[1]}: that is the "
                                             f"transpose; a Jacobian has one row per element of {fn.name} (eq. 5)"])
        return CheckResult(name, False, [f"the Jacobian must be {rows}x{cols} (elements of {fn.name} x elements "
                                         f"of {argument}), yours has shape {mine.shape}"])
    close = np.isclose(mine, J, rtol=1e-6, atol=1e-8)
    if close.all():
        return CheckResult(name, True)
    perm_out = np.array([np.ravel_multi_index(np.unravel_index(k, out_shape, order="C"), out_shape, order="F")
                         for k in range(rows)], dtype=int)
    perm_in = np.array([np.ravel_multi_index(np.unravel_index(k, in_shape, order="C"), in_shape, order="F")
                        for k in range(cols)], dtype=int)
    problems = []
    if np.allclose(mine, J[np.ix_(perm_out, perm_in)], rtol=1e-6, atol=1e-8):
        problems.append("your rows and columns are in row-major (C) order; vec stacks columns, so the first "
                        "index runs fastest (eq. 4)")
    else:
        r, c = (int(v) for v in np.argwhere(~close)[0])
        out_idx = np.unravel_index(r, out_shape, order="F")
        in_idx = np.unravel_index(c, in_shape, order="F")
        problems.append(f"entry [{r}, {c}] = d{fn.name}{_index_text(out_idx)} / d{argument}{_index_text(in_idx)} "
                        f"is {_number(mine[r, c])}, which is not right: differentiate that element of {fn.name} "
                        f"with respect to that element of {argument} at the given point")
        if (~close).sum() > 1:
            problems.append(f"{int((~close).sum())} of {J.size} entries differ")
    return CheckResult(name, False, problems)


# ---------------------------------------------------------------------------
# Chapter 06: kernels (report sec. 6; gather, eq. 47, against scatter, eq. 40)
# ---------------------------------------------------------------------------
#
# :func:`check_gradient_element` runs the student's Python code for one
# gradient element (what one thread of a gather kernel computes) on random
# inputs against the core's derivative and finite differences;
# :func:`check_scatter_races` and :func:`check_max_contention` are about the
# scatter kernel of eq. 40 (who writes which gradient element), and
# :func:`check_gather_bounds` about the loops of a gather kernel. The last
# three enumerate every read of the argument by brute force.

__all__ += [
    "check_gather_bounds",
    "check_gradient_element",
    "check_max_contention",
    "check_scatter_races",
]


class _Guarded(np.ndarray):
    """A read-only array whose integer indexing refuses indices outside the shape.

    numpy wraps ``x[-1]`` around to the last element without a word; a kernel
    on a GPU reads whatever lies before the array. Both hide wrong loop bounds,
    so the checks hand the student's code these instead.
    """

    def __new__(cls, array, label: str):
        out = np.array(array, dtype=np.float64).view(cls)
        out.label = label
        out.flags.writeable = False
        return out

    def __array_finalize__(self, obj):
        self.label = getattr(obj, "label", "the array")

    def __getitem__(self, key):
        parts = key if isinstance(key, tuple) else (key,)
        if parts and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in parts):
            for v, n in zip(parts, self.shape):
                if not 0 <= int(v) < n:
                    raise IndexError(f"it reads {self.label}{_index_text(parts)}, outside the shape "
                                     f"{tuple(self.shape)} of {self.label} (numpy would wrap a negative index "
                                     f"around silently, a GPU would read foreign memory)")
        out = super().__getitem__(key)
        return out.view(np.ndarray) if isinstance(out, np.ndarray) else out


def _reads(fn, argument: str):
    """Brute force: every read of ``argument`` by ``fn`` as ``(occurrence, beta, env)``.

    ``env`` maps the output indices and the indices of the sums around the
    read to their values: the extended index alpha of sec. 5.2. Each sum
    index takes every value in its range; conditions are decided per point.
    """
    from ..lang.expr import Element, If, Sum
    from ..lang.evaluate import bound_value

    out = []

    def visit(node, env):
        if isinstance(node, Element):
            if node.name == argument:
                beta = tuple(int(a.evaluate(env)) for a in node.indices)
                out.append((node, beta, dict(env)))
            return
        if isinstance(node, Sum):
            low = int(bound_value(node.lower, env, lower=True))
            high = int(bound_value(node.upper, env, lower=False))
            for k in range(low, high + 1):
                visit(node.body, {**env, node.index: k})
            return
        if isinstance(node, If):
            visit(node.then if all(atom.holds(env) for atom in node.condition) else node.otherwise, env)
            return
        for child in node.children():
            visit(child, env)

    for point in np.ndindex(*fn.shapes[fn.name]):
        visit(fn.body, dict(zip(fn.indices, (int(v) for v in point))))
    return out


def _checked_argument(fn, argument: str) -> None:
    if argument not in fn.arguments:
        raise ValueError(f"{argument!r} is not an argument of {fn.name}; it has {fn.arguments}")


def _gradient_by_elements(answer, pass_names: list[str], arrays: dict, shape: tuple, gradient: str):
    """The student's element function evaluated at every gradient index, or a _Wrong naming the first failure."""
    out = np.zeros(shape)
    for beta in np.ndindex(*shape):
        try:
            value = answer(*(int(v) for v in beta), **{p: arrays[p] for p in pass_names})
        except IndexError as err:
            raise _Wrong(f"your function fails at {gradient}{_index_text(beta)}: {err}") from None
        except Exception as err:  # the student's code: report any error with the element it happened at
            raise _Wrong(f"your function raised {type(err).__name__} at {gradient}{_index_text(beta)}: "
                         f"{err}") from None
        try:
            out[beta] = float(value)
        except (TypeError, ValueError):
            raise _Wrong(f"at {gradient}{_index_text(beta)} your function returned {value!r}, "
                         f"not a number") from None
    return out


def check_gradient_element(fn, argument: str, answer, shapes=None, trials: int = 3, seed: int = 0) -> CheckResult:
    """Exercise: the Python code one thread of a gather kernel runs, for one element ``dx[beta]``.

    The answer is a function whose first parameters are the indices of the
    gradient element (one per index of ``x``) and whose further parameters
    are arrays by name: any of the arguments of ``fn``, the adjoint ``df`` and
    the forward result ``f``, e.g. for the matrix product::

        def dx_element(i, k, y, df):
            return sum(df[i, j] * y[k, j] for j in range(4))

    It is run for every element on ``trials`` random inputs and random
    ``df`` and compared with the core's derivative (Algorithm 4, the
    reference evaluator); a right answer is also confirmed by a
    finite-difference dot-product test, which does not use the core. The
    arrays it gets are read-only and refuse indices outside their shape
    (numpy would wrap ``x[-1]`` around silently).
    """
    import inspect

    from ..ad.derive import derive
    from ..ad.gradcheck import random_arguments

    fn = _function(fn, shapes)
    _checked_argument(fn, argument)
    grads = derive(fn)
    gradient, adjoint = "d" + argument, grads.adjoint_name
    shape = tuple(fn.shapes[argument])
    index_names = list(grads[argument].indices)
    available = list(fn.arguments) + [adjoint, fn.name]
    name = f"one element of {gradient}, the gradient of {fn.name} with respect to {argument}"
    if answer is None:
        example = ", ".join(index_names + ["...", adjoint])
        return _pending(name, f"Your answer is a Python function like def {gradient}_element({example}): "
                              f"{len(shape)} index parameter(s) first, then any of the arrays "
                              f"{', '.join(available)} by name; it returns the number {gradient}[...].")
    if not callable(answer):
        return CheckResult(name, False, [f"the answer must be a function returning one element of {gradient}, "
                                         f"got {type(answer).__name__}"])
    try:
        params = list(inspect.signature(answer).parameters.values())
    except (TypeError, ValueError):
        return CheckResult(name, False, ["cannot read the parameters of your function; define it with def"])
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return CheckResult(name, False, ["name every parameter: no *args or **kwargs"])
    if len(params) < len(shape):
        return CheckResult(name, False, [f"{gradient} has {len(shape)} ind{'ex' if len(shape) == 1 else 'ices'}, "
                                         f"so your function must take {len(shape)} index parameter(s) first; "
                                         f"it has {len(params)} parameter(s)"])
    pass_names = [p.name for p in params[len(shape):]]
    unknown = [p for p in pass_names if p not in available]
    if unknown:
        return CheckResult(name, False, [f"parameter {unknown[0]!r} is not an array your kernel can read: after "
                                         f"the {len(shape)} index parameter(s) come arrays by name, any of "
                                         f"{', '.join(available)}"])
    if adjoint not in pass_names:
        return CheckResult(name, False, [f"your function does not read {adjoint}: {gradient} is the gradient of "
                                         f"sum({adjoint} * {fn.name}), which is linear in {adjoint}; "
                                         f"take {adjoint} as a parameter and use it"])
    plain = hasattr(answer, "py_func")  # a numba function: it cannot take the guarded array type
    rng = np.random.default_rng(seed)
    for trial in range(trials):
        args = random_arguments(fn, rng)
        df = rng.standard_normal(fn.shapes[fn.name])
        values = {**args, adjoint: df, fn.name: fn.evaluate(args)}
        arrays = {k: (np.array(v, dtype=np.float64) if plain else _Guarded(v, k)) for k, v in values.items()}
        try:
            yours = _gradient_by_elements(answer, pass_names, arrays, shape, gradient)
        except _Wrong as err:
            return CheckResult(name, False, [str(err)])
        right = grads.evaluate(args, df)[argument]
        scale = max(1.0, float(np.abs(right).max(initial=0)))
        close = np.isclose(yours, right, rtol=_RTOL, atol=_ATOL * scale)
        if close.all():
            continue
        problems = _element_problems(gradient, yours, right, close, _ATOL,
                                     lambda b: f"{fn.name} never reads {argument}{_index_text(b)}",
                                     "a condition is missing, or a loop runs too far")
        return CheckResult(name, False, problems)
    # The defining property, without the core: <dx, v> = d/dt sum(df * f(x + t v)) at t = 0.
    direction = rng.standard_normal(shape)
    shifted = []
    for h in (1e-3, 5e-4):
        sides = []
        for sign in (1, -1):
            moved = dict(args)
            moved[argument] = args[argument] + sign * h * direction
            sides.append(float(np.sum(df * fn.evaluate(moved))))
        shifted.append((sides[0] - sides[1]) / (2 * h))
    numeric = (4 * shifted[1] - shifted[0]) / 3
    exact = float(np.sum(yours * direction))
    error = abs(numeric - exact) / max(abs(numeric), abs(exact), 1e-300)
    if error > 1e-6 and abs(numeric - exact) > 1e-8:  # pragma: no cover -- would be a bug in the core
        raise AssertionError(f"the core's derivative fails the finite-difference test (error {error:.2g})")
    return CheckResult(name, True, note=f"Your kernel agrees with the core's derivative on {trials} random inputs, "
                                        f"and with finite differences (relative error below 1e-6).")


def _thread_of(fn, env: dict, threads: str) -> tuple:
    return tuple(env[i] for i in fn.indices) if threads == "output" else tuple(sorted(env.items()))


def _thread_text(fn, thread: tuple, threads: str) -> str:
    if threads == "output":
        return f"{fn.name}{_index_text(thread)}"
    return "(" + ", ".join(f"{k} = {v}" for k, v in thread) + ")"


def _writers(fn, argument: str, threads: str) -> tuple[dict, dict]:
    """Per gradient element: the threads of the scatter kernel that add into it, and the number of adds."""
    if threads not in ("output", "extended"):
        raise ValueError(f"threads must be 'output' (one thread per element of the result, as the core's "
                         f"scatter kernels) or 'extended' (one per extended index), not {threads!r}")
    writers, adds = {}, {}
    for _, beta, env in _reads(fn, argument):
        writers.setdefault(beta, set()).add(_thread_of(fn, env, threads))
        adds[beta] = adds.get(beta, 0) + 1
    return writers, adds


def _gradient_indices(answer, shape: tuple, gradient: str) -> set:
    """A set of gradient indices from a set/list of tuples (ints for one index) or a boolean mask."""
    if isinstance(answer, np.ndarray) and answer.dtype == bool:
        if answer.shape != shape:
            raise _Wrong(f"a mask must have the shape {shape} of {gradient}, yours has {answer.shape}")
        return {tuple(int(v) for v in idx) for idx in np.argwhere(answer)}
    if isinstance(answer, (str, bytes, dict)) or not hasattr(answer, "__iter__"):
        raise _Wrong(f"the answer must be a set of indices of {gradient} (tuples, or integers for one index), "
                     f"got {answer!r}")
    out = set()
    for item in answer:
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            item = (item,)
        try:
            index = tuple(item)
        except TypeError:
            raise _Wrong(f"{item!r} is not an index of {gradient}") from None
        if len(index) != len(shape) or any(isinstance(v, bool) or not isinstance(v, (int, np.integer))
                                           for v in index):
            raise _Wrong(f"{item!r} is not an index of {gradient}: it needs {len(shape)} integer(s)")
        index = tuple(int(v) for v in index)
        if any(not 0 <= v < n for v, n in zip(index, shape)):
            raise _Wrong(f"{gradient}{_index_text(index)} is not an element: {gradient} has shape {shape}")
        out.add(index)
    return out


def _threads_list(fn, threads_set, threads: str, limit: int = 3) -> str:
    ordered = sorted(threads_set)
    text = ", ".join(_thread_text(fn, t, threads) for t in ordered[:limit])
    return text + (f" and {len(ordered) - limit} more" if len(ordered) > limit else "")


def check_scatter_races(fn, argument: str, answer, shapes=None, threads: str = "output") -> CheckResult:
    """Exercise: which elements of ``dx`` do two or more threads of the scatter kernel add into?

    The scatter kernel of eq. 40 runs one thread per element of the result
    (``threads="output"``, like the core's ``"cuda-scatter"`` target; the
    sums run serially inside the thread) or one per extended index
    (``threads="extended"``, the sums' indices too), and each thread adds
    into ``dx`` at every index at which it reads ``x``. An element written
    by two threads is a race: without ``atomic.add`` an update can be lost.
    The answer is a set of indices of ``x`` (tuples; plain integers for a
    vector), or a boolean mask of ``x``'s shape. Checked by enumerating every
    read by brute force.
    """
    fn = _function(fn, shapes)
    _checked_argument(fn, argument)
    gradient, shape = "d" + argument, tuple(fn.shapes[argument])
    per = "element of " + fn.name if threads == "output" else "extended index"
    name = f"races in the scatter kernel of {gradient} (one thread per {per})"
    writers, adds = _writers(fn, argument, threads)
    if answer is None:
        return _pending(name, f"Your answer is a set of indices of {gradient}, e.g. "
                              f"{'{(0, 1), (2, 2)}' if len(shape) > 1 else '{0, 3}'}; set() if there are none.")
    try:
        claimed = _gradient_indices(answer, shape, gradient)
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    races = {beta for beta, who in writers.items() if len(who) > 1}
    problems = []
    missed = sorted(races - claimed)
    if missed:
        one = "one thread per element of " + fn.name if threads == "output" else "one thread per extended index"
        problems.append(f"some element of {gradient} that you did not list is written by two or more threads: "
                        f"with {one}, write down which elements of {argument} each thread reads; an element "
                        f"read by two threads is a race")
    wrong = sorted(claimed - races)
    for beta in wrong[:3]:
        if beta not in writers:
            problems.append(f"{gradient}{_index_text(beta)} is never written: {fn.name} does not read "
                            f"{argument}{_index_text(beta)}")
        else:
            (thread,) = writers[beta]
            again = (f", {adds[beta]} times in its loop, one add after the other: no race"
                     if adds[beta] > 1 else ": no race")
            problems.append(f"{gradient}{_index_text(beta)} is written by one thread only "
                            f"({_thread_text(fn, thread, threads)}){again}")
    if len(wrong) > 3:
        problems.append(f"... and {len(wrong) - 3} more elements that do not race")
    if problems:
        return CheckResult(name, False, problems)
    if not races:
        note = "Indeed no element is written by two threads: this scatter kernel needs no atomics."
    else:
        top = max(sorted(races), key=lambda b: len(writers[b]))
        note = (f"{len(races)} of {math.prod(shape)} elements race; the most contended, "
                f"{gradient}{_index_text(top)}, gets adds from {len(writers[top])} threads.")
    return CheckResult(name, True, note=note)


def check_max_contention(fn, argument: str, answer, shapes=None, threads: str = "output") -> CheckResult:
    """Exercise: at most how many threads of the scatter kernel add into one element of ``dx``?

    With ``atomic.add`` these adds are serialised, so the most contended
    element bounds the kernel's speed (the report's footnote 4). Threads as
    in :func:`check_scatter_races`; adds of one thread (its sum loop) count
    once. Checked by brute-force enumeration.
    """
    fn = _function(fn, shapes)
    _checked_argument(fn, argument)
    gradient = "d" + argument
    per = "element of " + fn.name if threads == "output" else "extended index"
    name = f"largest number of threads adding into one element of {gradient} (one thread per {per})"
    writers, adds = _writers(fn, argument, threads)
    if answer is None:
        return _pending(name, "Your answer is a non-negative integer.")
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        return CheckResult(name, False, [f"the answer must be an integer count, got {answer!r}"])
    answer = int(answer)
    counts = {beta: len(who) for beta, who in writers.items()}
    most = max(counts.values(), default=0)
    top = min(b for b, c in counts.items() if c == most) if counts else None
    if answer == most:
        note = (f"{gradient}{_index_text(top)} gets adds from {most} threads: "
                f"{_threads_list(fn, writers[top], threads)}." if top is not None else "")
        return CheckResult(name, True, note=note)
    problems = []
    if answer in adds.values() and answer not in counts.values():
        beta = min(b for b, n in adds.items() if n == answer)
        problems.append(f"{answer} is the number of adds into {gradient}{_index_text(beta)}, not of threads: "
                        f"the adds of one thread (its loop over a sum) come one after another and do not race")
    elif answer < most:
        problems.append(f"too low: some element of {gradient} gets adds from more than {answer} threads; "
                        f"look for the element of {argument} that the most threads read")
    else:
        problems.append(f"too high: no element of {gradient} is written by as many as {answer} threads; count "
                        f"the threads that read one element of {argument}, each thread once")
    return CheckResult(name, False, problems)


def _loops_text(gradient_fn) -> str:
    """The sums of a derived gradient as loops: ``dd_z1 from max [dd_0 - 2; 0] to min [dd_0; 4]``."""
    from ..lang.expr import Sum, walk
    from ..lang.printer import bound_text

    loops = [f"{node.index} from {bound_text(node.lower, True, standalone=True)} to "
             f"{bound_text(node.upper, False, standalone=True)}"
             for node in walk(gradient_fn.body) if isinstance(node, Sum)]
    return "; ".join(loops) if loops else "no loop"


def check_gather_bounds(fn, argument: str, index: str, answer, shapes=None) -> CheckResult:
    """Exercise: the bounds of the loop over ``index`` in the gather kernel of ``dx[beta]``.

    ``index`` is an index of the extended index alpha (an output index of
    ``fn`` or one of its sum indices) that ``x``'s indices do not fix. For a
    gradient element ``beta`` the kernel must visit exactly the values of
    ``index`` at which some in-range alpha reads ``x[beta]`` (the projection
    of Sigma(beta), eqs. 42-45). The answer is a function of the gradient
    indices returning ``(low, high)``, both inclusive (or a ``range``, for a
    step). Checked for every ``beta`` against brute-force enumeration; any
    way of writing the bounds passes.
    """
    from ..ad.derive import derive
    from ..lang.expr import Sum, walk
    from ..lang.printer import expr_text

    fn = _function(fn, shapes)
    _checked_argument(fn, argument)
    sums = [node.index for node in walk(fn.body) if isinstance(node, Sum)]
    if index not in fn.indices and index not in sums:
        raise ValueError(f"{index!r} is neither an output index {fn.indices} nor a sum index {tuple(sums)} "
                         f"of {fn.name}")
    reads = _reads(fn, argument)
    elements = sorted({expr_text(node) for node, _, _ in reads})
    if len(elements) > 1:
        raise ValueError(f"{argument} occurs {len(elements)} times in {fn.name} ({', '.join(elements)}): "
                         f"its gather kernel has one loop nest per occurrence; pick a function with one")
    if sums.count(index) > 1:
        raise ValueError(f"{fn.name} has several sums over {index!r}")
    gradient, shape = "d" + argument, tuple(fn.shapes[argument])
    beta_names = list(derive(fn)[argument].indices)
    name = f"bounds of the loop over {index} in the gather kernel of {gradient}"
    if answer is None:
        return _pending(name, f"Your answer is a function of {', '.join(beta_names)} returning (low, high) for "
                              f"{index}, both ends inclusive, e.g. lambda {', '.join(beta_names)}: (0, 3).")
    if not callable(answer):
        return CheckResult(name, False, [f"the answer must be a function of the index of {gradient} returning "
                                         f"(low, high), got {type(answer).__name__}"])
    truth: dict[tuple, dict] = {beta: {} for beta in np.ndindex(*shape)}
    for _, beta, env in reads:
        truth[beta].setdefault(env[index], env)  # value of the loop index -> a witness alpha
    element = elements[0] if elements else f"{argument}[...]"
    alpha = ", ".join(reads[0][2] if reads else fn.indices)
    problems, extra_count, missing_count = [], 0, 0
    for beta in truth:
        at = f"{gradient}{_index_text(beta)}"
        try:
            result = answer(*(int(v) for v in beta))
        except Exception as err:  # the student's code: say where it failed
            return CheckResult(name, False, [f"your function raised {type(err).__name__} at {at}: {err}"])
        try:
            visited = result if isinstance(result, range) else _range(result, f"your function at {at}")
        except _Wrong as err:
            return CheckResult(name, False, [str(err)])
        if len(visited) > 10_000:
            return CheckResult(name, False, [f"at {at} your loop visits {len(visited)} values: "
                                             f"are the bounds finite?"])
        visited = set(visited)
        extra = sorted(visited - truth[beta].keys())
        missing = sorted(truth[beta].keys() - visited)
        extra_count += len(extra)
        missing_count += len(missing)
        if extra and len(problems) < 3:
            problems.append(f"at {at} your loop visits {index} = {extra[0]}, but no in-range ({alpha}) with "
                            f"{index} = {extra[0]} has {element} = {argument}{_index_text(beta)}")
        if missing and len(problems) < 3:
            env = truth[beta][missing[0]]
            witness = ", ".join(f"{k} = {v}" for k, v in env.items())
            problems.append(f"at {at} your loop misses {index} = {missing[0]}: {witness} reads "
                            f"{argument}{_index_text(beta)}")
    if problems:
        counts = []
        if extra_count:
            counts.append(f"{extra_count} value(s) too many")
        if missing_count:
            counts.append(f"{missing_count} missing")
        problems.append("in all, over every element of " + gradient + ": " + " and ".join(counts))
        return CheckResult(name, False, problems)
    loops = _loops_text(derive(fn).simplified[argument])
    return CheckResult(name, True, note=f"Your loop visits exactly the right values for all {len(truth)} elements. "
                                        f"For comparison, the core's {gradient} sums over: {loops}.")


# ---------------------------------------------------------------------------
# Chapter 07: second derivatives (report sec. 5.3)
# ---------------------------------------------------------------------------
#
# :func:`check_second_derivative`, :func:`check_hessian_vector_product`,
# :func:`check_hessian_pattern`.
#
# The oracle is the loss ``L = sum(df * f)`` alone: mixed second central
# differences of L, Richardson-extrapolated (:func:`_second_difference`). These
# checks never use the core's derivatives, so they also test the derivation.

__all__ += [
    "check_hessian_pattern",
    "check_hessian_vector_product",
    "check_second_derivative",
]

_FD_STEP = 1e-3     # central differences at h and h / 2: truncation ~h**4, round-off ~eps |L| / h**2
_FD_RTOL = 1e-5     # an answer passes within this of the largest element ...
_FD_ATOL = 1e-6     # ... plus this times sum |df * f| (the scale of L's round-off)
_PATTERN_ZERO = 1e-7  # a Hessian entry below this times sum |df * f| counts as zero


def _loss_terms(fn, values: dict, df) -> tuple[float, float]:
    """``L = sum(df * f)`` and ``sum |df * f|`` (the scale of its round-off) at ``values``."""
    terms = df * fn.evaluate(values)
    return float(np.sum(terms)), float(np.sum(np.abs(terms)))


def _second_difference(fn, values: dict, df, first: str, v, second: str, beta: tuple,
                       step: float = _FD_STEP) -> float:
    """``e_beta^T H v``: ``d/ds d/dt L(first + t v, second + s e_beta)`` at 0, by finite differences.

    The four-point central difference at ``h`` and ``h / 2``, combined by
    Richardson extrapolation; ``first`` and ``second`` may be the same argument.
    """
    base_first = np.asarray(values[first], dtype=np.float64)

    def central(h):
        total = 0.0
        for t in (1, -1):
            for s in (1, -1):
                shifted = dict(values)
                shifted[first] = base_first + t * h * v
                moved = np.array(shifted[second], dtype=np.float64)
                moved[beta] += s * h
                shifted[second] = moved
                total += t * s * _loss_terms(fn, shifted, df)[0]
        return total / (4 * h * h)

    return (4 * central(step / 2) - central(step)) / 3


def _second_differences(fn, values: dict, df, first: str, v, second: str) -> np.ndarray:
    """The whole vector ``H v`` block ``d/d second <v, dL/d first>``, element by element (shape of ``second``)."""
    shape = tuple(fn.shapes[second])
    out = np.zeros(shape)
    for beta in np.ndindex(*shape):
        out[beta] = _second_difference(fn, values, df, first, v, second, beta)
    return out


def _hv_tolerance(right: np.ndarray, scale: float) -> float:
    return _FD_RTOL * float(np.abs(right).max(initial=0.0)) + _FD_ATOL * scale


def _checked_pair(fn, first: str, second: str) -> None:
    for name in (first, second):
        if name not in fn.arguments:
            raise ValueError(f"{name!r} is not an argument of {fn.name}; it has {fn.arguments}")


def check_second_derivative(fn, first: str, second: str, answer, shapes=None, trials: int = 2,
                            seed: int = 0) -> CheckResult:
    """Exercise: write a second derivative element-wise, in the report's notation (sec. 5.3).

    The first derivative ``d<first>`` (the gradient of ``L = sum(df * f)``
    with respect to ``first``) is itself an element-wise function. Derived
    once more with the incoming adjoint ``dd<first>`` (a direction ``v``
    shaped like ``first``), its gradient with respect to ``second`` is
    ``d<second>[beta] = sum_gamma d^2 L / d second_beta d first_gamma * v_gamma``:
    a Hessian-vector product (``first == second``) or a mixed second
    derivative. The answer is text such as
    ``"dx[b] = df[b] * ddx[b] * 6 * x[b]"``: any index names, any equivalent
    form. It is evaluated on random inputs, ``df`` and ``v`` and compared with
    mixed second differences of ``L`` itself (not with the core's derivative).
    """
    fn = _function(fn, shapes)
    _checked_pair(fn, first, second)
    adjoint, direction, result = "d" + fn.name, "dd" + first, "d" + second
    for taken in (adjoint, direction):
        if taken in fn.shapes:
            raise ValueError(f"{fn.name} has an argument called {taken!r}, the name of the adjoint")
    answer_shapes = dict(fn.shapes)
    answer_shapes.update({adjoint: tuple(fn.shapes[fn.name]), direction: tuple(fn.shapes[first]),
                          result: tuple(fn.shapes[second])})
    what = "the Hessian-vector product" if first == second else "the mixed second derivative"
    name = f"{result} = d/d{second} sum({direction} * d{first}), {what} of sum({adjoint} * {fn.name})"
    if answer is None:
        sizes = ", ".join(f"{k}: {v}" for k, v in answer_shapes.items() if k != result)
        return _pending(name, f"Your answer is text like \"{result}[...] = ...\" using {direction} (the direction v), "
                              f"{adjoint} and the arguments (shapes {sizes}).")
    import re

    left = re.match(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*\[", answer) if isinstance(answer, str) else None
    # The core derives the gradient under a fresh name when d<second> is taken (dx_1 for the gradient of dx
    # with respect to x): that name is the same gradient.
    fresh = left is not None and re.fullmatch(rf"{re.escape(result)}_\d+", left.group(1)) is not None \
        and left.group(1) not in answer_shapes
    if left and left.group(1) != result and not fresh:
        return CheckResult(name, False, [f"your left side defines {left.group(1)!r}; the gradient with respect to "
                                         f"{second} is called {result!r} (write {result}[...] = ...)"])
    accepted = {result} | ({left.group(1)} if fresh else set())
    answer_shapes.update({n: tuple(fn.shapes[second]) for n in accepted})
    try:
        mine = _parse_answer(answer, answer_shapes, "second derivative")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    if mine.name not in accepted:  # pragma: no cover -- caught from the text above
        return CheckResult(name, False, [f"your left side defines {mine.name!r}; the gradient with respect to "
                                         f"{second} is called {result!r} (write {result}[...] = ...)"])
    from ..ad.gradcheck import random_arguments

    rng = np.random.default_rng(seed)
    problems = []
    for _ in range(trials):
        args = random_arguments(fn, rng)
        df = rng.standard_normal(fn.shapes[fn.name])
        v = rng.standard_normal(fn.shapes[first])
        values = dict(args)
        values.update({adjoint: df, direction: v})
        yours = mine.evaluate(values)
        right = _second_differences(fn, args, df, first, v, second)
        tolerance = _hv_tolerance(right, _loss_terms(fn, args, df)[1])
        close = np.abs(yours - right) <= tolerance
        if close.all():
            continue
        problems += _element_problems(
            result, yours, right, close, tolerance,
            lambda b: f"L's derivative with respect to {second}{_index_text(b)} does not change along v",
            "a condition is missing or a sum range is too wide", ratio_rtol=1e-4)
        for n, kind in ((direction, "v"), (adjoint, "df")):
            if n not in mine.arguments:
                problems.append(f"your expression does not read {n}, yet {what} is linear in {kind}: "
                                f"every term carries one factor of {n}")
        break
    return CheckResult(name, not problems, problems,
                       note="" if problems else f"Your expression agrees with second differences of "
                                                f"sum({adjoint} * {fn.name}) on {trials} random inputs.")


def check_hessian_vector_product(fn, argument: str, args: dict, df, v, answer, shapes=None,
                                 wrt: str | None = None) -> CheckResult:
    """Exercise: compute ``H v`` for ``L = sum(df * f)`` at ``args`` (numbers, not a formula).

    ``H`` is the Hessian of ``L`` with respect to ``argument``, ``v`` a
    direction shaped like ``argument``; with ``wrt`` another argument ``y``,
    the answer is the mixed block ``d/dy <v, dL/d argument>`` instead. The
    answer is an array (shaped like ``wrt``), computed any way, e.g. with the
    derived second-order functions. It is compared with mixed second
    differences of ``L`` itself, element by element.
    """
    fn = _function(fn, shapes)
    wrt = argument if wrt is None else wrt
    _checked_pair(fn, argument, wrt)
    arrays = fn.argument_arrays(args)
    df = np.asarray(df, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if df.shape != tuple(fn.shapes[fn.name]):
        raise ValueError(f"df has shape {df.shape}, {fn.name} has {tuple(fn.shapes[fn.name])}")
    if v.shape != tuple(fn.shapes[argument]):
        raise ValueError(f"v has shape {v.shape}, {argument} has {tuple(fn.shapes[argument])}")
    shape = tuple(fn.shapes[wrt])
    if wrt == argument:
        name = f"H v: the Hessian of sum(d{fn.name} * {fn.name}) with respect to {argument}, times v"
    else:
        name = f"d/d{wrt} <v, dL/d{argument}>: the mixed second derivative of sum(d{fn.name} * {fn.name}), times v"
    if answer is None:
        return _pending(name, f"Your answer is an array of shape {shape}: derive d{argument} once more and evaluate "
                              f"its gradient with respect to {wrt} with the adjoint dd{argument} = v.")
    try:
        mine = np.asarray(answer, dtype=np.float64)
    except (TypeError, ValueError):
        return CheckResult(name, False, [f"the answer must be an array of numbers, got {type(answer).__name__}"])
    if mine.shape != shape:
        problems = [f"the answer must have the shape of {wrt}, {shape}; yours has {mine.shape}"]
        if mine.shape == tuple(fn.shapes[fn.name]):
            problems.append(f"that is the shape of {fn.name}: the second-order gradient with respect to "
                            f"d{fn.name} is J v (the derivative of {fn.name} along v), not H v")
        return CheckResult(name, False, problems)
    if not np.all(np.isfinite(mine)):
        return CheckResult(name, False, ["your answer contains nan or inf"])
    right = _second_differences(fn, arrays, df, argument, v, wrt)
    tolerance = _hv_tolerance(right, _loss_terms(fn, arrays, df)[1])
    difference = np.abs(mine - right)
    if np.all(difference <= tolerance):
        return CheckResult(name, True, note=f"It agrees with second differences of sum(d{fn.name} * {fn.name}) "
                                            f"to within {_FD_RTOL:g} of its largest element.")
    problems = []
    size = float(np.abs(right).max(initial=0.0))
    from ..ad.gradcheck import numeric_gradient

    def like(candidate) -> bool:
        return bool(np.all(np.abs(mine - candidate) <= tolerance))

    if like(-right):
        problems.append("your answer is -H v: the sign is off")
    elif size and like(2 * right):
        problems.append("your answer is 2 H v: a factor 2 too large")
    elif size and like(right / 2):
        problems.append("your answer is H v / 2: a factor 2 too small")
    elif like(numeric_gradient(fn, arrays, wrt, df)):
        problems.append(f"that is the gradient dL/d{wrt} itself; H v is the gradient of <v, dL/d{argument}>: "
                        f"derive d{argument} once more, with the adjoint dd{argument} = v")
    elif size and np.abs(mine - right).max() <= 1e-2 * size:
        relative = float(np.abs(mine - right).max() / size)
        problems.append(f"close to H v (relative error {relative:.1g}), but not within {_FD_RTOL:g}: a "
                        f"finite-difference approximation? The derived second-order functions give H v up to "
                        f"rounding.")
    else:
        wrong = np.argwhere(difference > tolerance)
        idx = tuple(int(k) for k in wrong[0])
        problems.append(f"element {_index_text(idx)} is {_number(mine[idx])}, which is not right: derive "
                        f"d{argument} once more and evaluate its gradient with respect to {wrt} with the adjoint "
                        f"dd{argument} = v")
        if len(wrong) > 1:
            problems.append(f"{len(wrong)} of {right.size} elements differ")
    return CheckResult(name, False, problems)


def _index_answer(value, shape: tuple, what: str) -> tuple[int, ...]:
    """One index of an array of ``shape`` (an int for a vector), or a _Wrong."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    try:
        index = tuple(value)
    except TypeError:
        raise _Wrong(f"{what} {value!r} is not an index") from None
    if len(index) != len(shape) or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) for k in index):
        raise _Wrong(f"{what} {value!r} is not an index of {len(shape)} integer(s)")
    index = tuple(int(k) for k in index)
    if any(not 0 <= k < n for k, n in zip(index, shape)):
        raise _Wrong(f"{what} {_index_text(index)} is outside the shape {shape}")
    return index


def check_hessian_pattern(fn, argument: str, beta, answer, shapes=None, points: int = 2,
                          seed: int = 0) -> CheckResult:
    """Exercise: which ``v_gamma`` does ``(H v)_beta`` read, i.e. where is row ``beta`` of the Hessian non-zero?

    ``H`` is the Hessian of ``L = sum(df * f)`` with respect to ``argument``.
    ``H[beta, gamma]`` is non-zero where some element of ``f`` (with its sum
    terms) depends on both ``x[beta]`` and ``x[gamma]`` jointly (for
    ``gamma == beta``: non-linearly). The answer is a collection of indices
    ``gamma`` (ints for a vector, tuples otherwise), or just their number. The
    row is measured by second differences of ``L`` at random points: an entry
    counts as non-zero if it is at any of them.
    """
    fn = _function(fn, shapes)
    _checked_pair(fn, argument, argument)
    shape = tuple(fn.shapes[argument])
    try:
        beta = _index_answer(beta, shape, "beta")
    except _Wrong as err:
        raise ValueError(str(err)) from None
    entry = "H[" + "; ".join([str(k) for k in beta] + ["gamma"]) + "]"
    name = f"non-zero entries of row {_index_text(beta)} of the Hessian of sum(d{fn.name} * {fn.name}) " \
           f"with respect to {argument}"
    if answer is None:
        return _pending(name, f"Your answer is a list of the indices gamma of {argument} with "
                              f"{entry} != 0 ({'ints' if len(shape) == 1 else 'tuples'}), "
                              f"or their number.")
    from ..ad.gradcheck import random_arguments

    rng = np.random.default_rng(seed)
    row = np.zeros(shape)
    for _ in range(points):
        args = random_arguments(fn, rng)
        df = rng.standard_normal(fn.shapes[fn.name])
        scale = _loss_terms(fn, args, df)[1]
        for gamma in np.ndindex(*shape):
            unit = np.zeros(shape)
            unit[gamma] = 1.0
            value = abs(_second_difference(fn, args, df, argument, unit, argument, beta))
            if value > _PATTERN_ZERO * scale:
                row[gamma] = max(row[gamma], value)
    truth = {tuple(int(k) for k in gamma) for gamma in np.ndindex(*shape) if row[gamma]}
    if isinstance(answer, (int, np.integer)) and not isinstance(answer, bool):
        count = int(answer)
        if count == len(truth):
            return CheckResult(name, True, note=f"Indeed: gamma in {_indices_text(truth)}.")
        problems = [f"you counted {count}, but row {_index_text(beta)} has a different number of non-zero entries"]
        here = f"{argument}{_index_text(beta)}"
        problems.append(f"too many: {here} and {argument}[gamma] must meet in one term of L, non-linearly"
                        if count > len(truth) else
                        f"too few: every output element (and sum term) that reads {here} couples it to every "
                        f"element of {argument} it reads in the same non-linear factor")
        return CheckResult(name, False, problems)
    try:
        if isinstance(answer, (str, bytes)):
            raise _Wrong(f"the answer must be a list of indices or a count, got {answer!r}")
        items = list(answer.tolist() if hasattr(answer, "tolist") else answer)
    except TypeError:
        return CheckResult(name, False, [f"the answer must be a list of indices or a count, got {answer!r}"])
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    mine, problems = [], []
    for item in items:
        try:
            mine.append(_index_answer(item, shape, "gamma ="))
        except _Wrong as err:
            problems.append(str(err))
    if problems:
        return CheckResult(name, False, problems)
    repeated = sorted({g for g in mine if mine.count(g) > 1})
    if repeated:
        problems.append(f"you list {_indices_text(repeated)} more than once")
    extra = sorted(set(mine) - truth)
    missing = sorted(truth - set(mine))
    if extra:
        why = (f"L is linear in {argument}{_index_text(beta)} on its own" if extra[0] == beta else
               f"no term of L depends on {argument}{_index_text(beta)} and {argument}{_index_text(extra[0])} jointly")
        problems.append(f"{entry} = 0 for gamma in {_indices_text(extra)}: (H v){_index_text(beta)} does not "
                        f"read v there ({why})")
    if missing:
        here = f"{argument}{_index_text(beta)}"
        problems.append(f"{entry} != 0 for some gamma you did not list: (H v){_index_text(beta)} reads more of v; "
                        f"every term of L that reads {here} couples it to every element of {argument} in the same "
                        f"non-linear factor (and to {here} itself if it appears non-linearly)")
    count = len(truth)
    return CheckResult(name, not problems, problems,
                       note="" if problems else f"That is the whole row: {count} non-zero entr"
                                                f"{'y' if count == 1 else 'ies'}; second differences of L "
                                                f"vanish everywhere else.")


def _indices_text(indices) -> str:
    indices = sorted(indices)
    if not indices:
        return "{}"
    if all(len(g) == 1 for g in indices):
        return "{" + ", ".join(str(g[0]) for g in indices) + "}"
    return "{" + ", ".join(_index_text(g) for g in indices) + "}"


# ---------------------------------------------------------------------------
# Chapter 08: inverse accumulation mode (Pearlmutter & Siskind)
# ---------------------------------------------------------------------------
#
# :func:`check_step_inverse` (the inverse of one step's Jacobian, eq. 2.6f),
# :func:`check_reverse_inverse` (``J^-1 ydot``, eq. 2.4b),
# :func:`check_forward_inverse` (``J^-T xbar``, eq. 2.4a), :func:`check_newton_step`
# and :func:`check_lump_order` (sec. 3, Fig. 4).
#
# A program is given as the step function ``tensoradbook.inverse.trace`` reads
# (``def step(x): x[0] = x[0] * x[1]; ...``) and its number of registers. The
# oracle is independent of the sweeps: the step function run on plain floats,
# its Jacobian by central differences, and ``numpy.linalg.solve``. Lump orders
# are compared with every topological order, tried one by one.

__all__ += [
    "check_forward_inverse",
    "check_lump_order",
    "check_newton_step",
    "check_reverse_inverse",
    "check_step_inverse",
]

_INVERSE_RTOL = 1e-6  # central differences (h = 1e-6) are good to about 1e-9 relative; answers may be rounded


def _float_vector(value, length: int, what: str) -> np.ndarray:
    """The answer as ``length`` finite floats (lists, tuples, arrays, Fractions, ints), or a _Wrong saying why not."""
    if isinstance(value, (str, bytes)):
        raise _Wrong(f"{what} must be {length} numbers, got the text {value!r}")
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (int, float, Fraction, np.number)) and not isinstance(value, bool):
        value = [value]
    try:
        items = list(value)
    except TypeError:
        raise _Wrong(f"{what} must be {length} numbers, got {type(value).__name__}") from None
    if len(items) != length:
        raise _Wrong(f"{what} must have {length} entries (one per register), yours has {len(items)}")
    values = []
    for k, item in enumerate(items):
        if isinstance(item, bool) or isinstance(item, (str, bytes)):
            raise _Wrong(f"entry {k} of {what} is {item!r}, not a number")
        try:
            number = float(item)
        except (TypeError, ValueError):
            raise _Wrong(f"entry {k} of {what} is {item!r}, not a number") from None
        if not math.isfinite(number):
            raise _Wrong(f"entry {k} of {what} is {number}: not finite")
        values.append(number)
    return np.array(values)


def _register_function(step, n: int):
    """``F(x)``: the step function run on ``n`` plain float registers (``ia.sin`` and friends take floats)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n (the number of registers) must be a positive integer, got {n!r}")
    if not callable(step):
        raise ValueError(f"step must be a function that updates its registers x in place, got {step!r}")

    def F(x):
        registers = [float(v) for v in x]
        step(registers)
        return np.array(registers, dtype=float)

    return F


def _difference_jacobian(F, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of ``F`` at ``x``, column by column."""
    return np.column_stack([(F(x + h * e) - F(x - h * e)) / (2 * h) for e in np.eye(len(x))])


def _numbers_text(values) -> str:
    return "(" + ", ".join(f"{float(v):.6g}" for v in values) + ")"


def _close(mine: np.ndarray, right: np.ndarray) -> bool:
    return bool(np.abs(mine - right).max() <= _INVERSE_RTOL * (1 + np.abs(right).max()))


def _point(x, n: int, what: str) -> np.ndarray:
    try:
        return _float_vector(x, n, what)
    except _Wrong as err:
        raise ValueError(str(err)) from None


def _solve_or_explain(J: np.ndarray, rhs: np.ndarray, where: str) -> np.ndarray:
    if abs(np.linalg.det(J)) < 1e-12 * max(1.0, np.abs(J).max()) ** len(J):
        raise ValueError(f"the Jacobian at {where} is singular: the exercise has no answer there")
    return np.linalg.solve(J, rhs)


def check_step_inverse(a, b, answer) -> CheckResult:
    """Exercise: the row ``R`` of ``J_t^-1`` for one step ``x[R] <- h(x[R], x[S_1], ...)`` (eq. 2.6f).

    The step's Jacobian is the identity except row ``R``, which holds ``a``
    (``dh/dx[R]``) on the diagonal and ``b_i`` (``dh/dx[S_i]``) at the other
    inputs. The answer is that row of the inverse, in the same order: ``(1/a,
    -b_1/a, ...)``, or the whole inverse (a ``k x k`` matrix with ``R`` first).
    It is compared with ``numpy.linalg.inv`` of the step's Jacobian.
    """
    b = [b] if isinstance(b, (int, float, Fraction, np.number)) else list(b)
    k = 1 + len(b)
    name = f"row R of J_t^-1 for a = {float(a):.6g}, b = {_numbers_text(b)}"
    if answer is None:
        return _pending(name, f"Your answer is {k} numbers: the inverse's entries for x[R] and then for each other "
                              f"input (or the whole {k} x {k} inverse); \"no inverse\" if J_t has none.")
    J = np.eye(k)
    J[0, 0], J[0, 1:] = float(a), [float(v) for v in b]
    if float(a) == 0:
        if isinstance(answer, str) and answer.strip().lower() == "no inverse":
            return CheckResult(name, True, note="det J_t = a = 0: the step forgets x[R].")
        return CheckResult(name, False, ["your answer is not right: before inverting, check whether J_t is "
                                         "invertible at all (det J_t is the product of its diagonal)"])
    right = np.linalg.inv(J)
    try:
        try:
            whole = np.ndim(answer) == 2 and not isinstance(answer, str)
        except ValueError:  # ragged rows
            raise _Wrong(f"your rows have different lengths; give {k} numbers or a {k} x {k} matrix") from None
        if whole:
            matrix = np.array([_float_vector(row, k, f"row {i} of your inverse") for i, row in enumerate(answer)])
            if matrix.shape != (k, k):
                raise _Wrong(f"the whole inverse must be {k} x {k}, yours is {matrix.shape[0]} x {matrix.shape[1]}")
            if not _close(matrix[1:], right[1:]):
                return CheckResult(name, False, ["the rows of the other inputs are not right: a step only changes "
                                                 "x[R], and its inverse leaves the other registers as they are"])
            mine = matrix[0]
        else:
            mine = _float_vector(answer, k, "your row")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    if _close(mine, right[0]):
        return CheckResult(name, True, note="The inverse has the sparsity of J_t itself: one row, k entries.")
    problems = []
    product = mine @ J  # row R of (your inverse) times J_t: must be row R of the identity
    if not _close(mine[:1], right[0, :1]):
        problems.append(f"the diagonal entry is {mine[0]:.6g}: with it, entry (R, R) of J_t^-1 J_t is "
                        f"{product[0]:.6g}, not 1" + (" (you kept a, but the inverse must undo the step)"
                                                      if math.isclose(mine[0], float(a)) else ""))
    off = mine[1:]
    if not _close(off, right[0, 1:]):
        if _close(off, -right[0, 1:]):
            problems.append("the entries for the other inputs have the wrong sign")
        elif _close(off, -J[0, 1:]):
            problems.append("the entries for the other inputs are -b_i: they must cancel b_i times the diagonal "
                            "entry of the inverse, not b_i times 1")
        else:
            problems.append(f"the entries for the other inputs are not right: row R of J_t^-1 J_t must be 0 off "
                            f"the diagonal, and with your row it is {_numbers_text(product[1:])} there")
    return CheckResult(name, False, problems)


def _product_problems(mine, right, candidates, symbol: str, hint: str) -> list[str]:
    """Why ``mine`` is not ``right``: the first candidate it matches (another mode, a sign), or the element off."""
    for candidate, words in candidates:
        if _close(mine, candidate):
            return [words]
    i = int(np.argmax(np.abs(mine - right)))
    wrong = int(np.sum(np.abs(mine - right) > _INVERSE_RTOL * (1 + np.abs(right).max())))
    return [f"entry {i} of {symbol} is {mine[i]:.6g}, which is not right"
            + (f" ({wrong} of {len(right)} entries are off)" if wrong > 1 else " (the other entries are right)")
            + f": {hint}"]


def _inverse_product(step, n, x, seed, answer, transpose: bool) -> CheckResult:
    F = _register_function(step, n)
    x = _point(x, n, "x")
    seed = _point(seed, n, "the seed")
    if transpose:
        name, symbol, given = (f"J^-T xbar at x = {_numbers_text(x)} for xbar = {_numbers_text(seed)}",
                               "J^-T xbar", "xbar")
        sweep = "a forward-inverse sweep: in program order, u = v[R] / a; v[R] = u; v[S_i] -= b_i u"
    else:
        name, symbol, given = (f"J^-1 ydot at x = {_numbers_text(x)} for ydot = {_numbers_text(seed)}",
                               "J^-1 ydot", "ydot")
        sweep = "a reverse-inverse sweep: from the last step back, v[R] = (v[R] - sum_i b_i v[S_i]) / a"
    if answer is None:
        return _pending(name, f"Your answer is {n} numbers. Compute them with {sweep}.")
    try:
        mine = _float_vector(answer, n, f"your {symbol}")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    J = _difference_jacobian(F, x)
    A = J.T if transpose else J
    right = _solve_or_explain(A, seed, f"x = {_numbers_text(x)}")
    if _close(mine, right):
        return CheckResult(name, True, note=f"It agrees with numpy.linalg.solve on a finite-difference Jacobian: "
                                            f"{symbol} = {_numbers_text(np.round(right, 8) + 0.0)}.")
    other = np.linalg.solve(J if transpose else J.T, seed)
    candidates = [
        (-right, "the sign is off: every entry has the opposite sign"),
        (J @ seed, f"that is J {given} (a forward sweep), not its inverse: divide by a instead of multiplying"),
        (J.T @ seed, f"that is J^T {given} (a reverse sweep), not its inverse: divide by a instead of multiplying"),
        (other, "that is J^-1 applied in the other orientation: "
                + ("J^-1 xbar; the forward-inverse sweep gives J^-T" if transpose else
                   "J^-T ydot; the reverse-inverse sweep gives J^-1")),
        (seed, f"that is the seed {given} itself"),
    ]
    return CheckResult(name, False, _product_problems(
        mine, right, candidates, symbol, "redo the sweep step by step, each step with its partials a and b_i taken "
                                         "at the values its registers held then (run the program forward first)"))


def check_reverse_inverse(step, n: int, x, ydot, answer) -> CheckResult:
    """Exercise: ``J^-1 ydot`` for the register program ``step`` on ``n`` registers at ``x`` (eq. 2.4b).

    Any way of computing it passes (by hand, with a reverse-inverse sweep, with
    ``tensoradbook.inverse``); it is compared with ``numpy.linalg.solve`` on the
    central-difference Jacobian of the program run on plain floats.
    """
    return _inverse_product(step, n, x, ydot, answer, transpose=False)


def check_forward_inverse(step, n: int, x, xbar, answer) -> CheckResult:
    """Exercise: ``J^-T xbar`` for the register program ``step`` on ``n`` registers at ``x`` (eq. 2.4a).

    Compared with ``numpy.linalg.solve(J.T, xbar)`` on the central-difference
    Jacobian of the program run on plain floats.
    """
    return _inverse_product(step, n, x, xbar, answer, transpose=True)


def check_newton_step(step, n: int, x, answer) -> CheckResult:
    """Exercise: the next Newton iterate ``x - J^-1 F(x)`` for ``F(x) = 0``, ``F`` the program ``step``.

    Compared with ``numpy.linalg.solve`` on the central-difference Jacobian.
    """
    F = _register_function(step, n)
    x = _point(x, n, "x")
    name = f"the Newton step from x = {_numbers_text(x)}"
    if answer is None:
        return _pending(name, f"Your answer is the new point, {n} numbers: x - J^-1 F(x), with J^-1 F(x) from one "
                              f"reverse-inverse sweep seeded with F(x).")
    try:
        mine = _float_vector(answer, n, "your new point")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    value = F(x)
    J = _difference_jacobian(F, x)
    delta = _solve_or_explain(J, value, f"x = {_numbers_text(x)}")
    right = x - delta
    if _close(mine, right):
        residual = float(np.linalg.norm(F(right)))
        return CheckResult(name, True, note=f"|F| falls from {np.linalg.norm(value):.3g} to {residual:.3g}.")
    candidates = [
        (x + delta, "you moved the wrong way: the new point is x - J^-1 F(x), not x + J^-1 F(x)"),
        (delta, "that is the step J^-1 F(x); the new point is x minus it"),
        (-delta, "that is -J^-1 F(x), the step; add x to get the new point"),
        (x - np.linalg.solve(J.T, value), "that uses J^-T F(x) (a forward-inverse sweep); Newton needs J^-1 F(x), "
                                          "the reverse-inverse sweep"),
        (x - J.T @ value, "that is a gradient step x - J^T F(x), not a Newton step"),
    ]
    return CheckResult(name, False, _product_problems(
        mine, right, candidates, "the new point", "compute F(x), then J^-1 F(x) with one reverse-inverse sweep "
                                                  "seeded with F(x), and subtract it from x"))


def check_lump_order(step, n: int, answer) -> CheckResult:
    """Exercise: a topological order of the program's vertices whose largest lump is as small as can be (sec. 3).

    The answer is a list of vertex names (``"t1"``, ``"s3"``, ... as
    ``tensoradbook.inverse.trace(step, n).vertices`` lists them) or their text.
    The check cuts the program along it and compares its largest lump with
    the smallest largest lump over every topological order (tried one by one).
    """
    from itertools import permutations

    from .. import inverse

    program = inverse.trace(step, n)
    vertices = program.vertices
    if len(vertices) > 7:
        raise ValueError(f"the program has {len(vertices)} vertices: too many to try every order (at most 7)")
    name = "an order with the smallest lumps"
    if answer is None:
        return _pending(name, f"Your answer is an order of the vertices {', '.join(vertices)}: every vertex after "
                              f"the vertices it reads.")
    if isinstance(answer, str):
        answer = [v for v in answer.replace(",", " ").split() if v]
    try:
        mine = program.reorder(list(answer))
    except (ValueError, TypeError) as err:
        return CheckResult(name, False, [str(err)])
    best = len(vertices) + n
    for order in permutations(vertices):
        try:
            best = min(best, max(program.reorder(list(order)).lump_sizes))
        except ValueError:  # not a topological order
            continue
    sizes = ", ".join(map(str, mine.lump_sizes))
    if max(mine.lump_sizes) == best:
        return CheckResult(name, True, note=f"Lump sizes {sizes}: no order does better than a largest lump of "
                                            f"{best}.")
    return CheckResult(name, False, [f"your order gives lumps of sizes {sizes}; another order keeps the largest "
                                     f"lump smaller: cut as soon as exactly {n} values are live, e.g. finish "
                                     f"what one register needs before starting on the next"])


# ---------------------------------------------------------------------------
# Chapter 09: matrix-free Jacobian chaining (Naumann, secs. 3-5)
# ---------------------------------------------------------------------------
#
# :func:`check_two_factor_optimum` (sec. 3, the eight schedules of F_2 o F_1),
# :func:`check_homogeneous_costs` (sec. 5's baselines), :func:`check_cell_fma`
# (a cell of eq. 3.7), :func:`check_bounded_optimum` (sec. 4, a tape bound) and
# :func:`check_tape_threshold` (the least bound that keeps the optimum).
#
# The oracle is brute force: every schedule of the (sub)chain enumerated by
# :func:`tensoradbook.chaining.schedules`, its fma and tape added up step by
# step (secs. 2-4), never the dynamic programme; the homogeneous modes are
# summed factor by factor. Chains are given as a Chain, its file text
# ("q" then "m n |E|" lines) or (m, n, |E|) triples, F_1 first.

__all__ += [
    "check_bounded_optimum",
    "check_cell_fma",
    "check_homogeneous_costs",
    "check_tape_threshold",
    "check_two_factor_optimum",
]

_CHAIN_EXERCISE_MAX_Q = 6  # brute force enumerates 29,948 schedules at q = 6


def _exercise_chain(chain):
    """The exercise's chain (Chain, file text or triples), small enough for brute force."""
    from ..chaining import Chain

    if not isinstance(chain, Chain):
        chain = Chain.parse(chain) if isinstance(chain, str) else Chain(chain)
    if chain.q > _CHAIN_EXERCISE_MAX_Q:
        raise ValueError(f"exercise chains have at most {_CHAIN_EXERCISE_MAX_Q} factors for brute force, "
                         f"got q = {chain.q}")
    return chain


def _count_answer(answer, what: str) -> int:
    """A non-negative whole number given as an int, a whole float or text like "1,234"; else a _Wrong."""
    if isinstance(answer, bool):
        raise _Wrong(f"{what} must be a whole number, got {answer!r}")
    if isinstance(answer, (int, np.integer)):
        value = int(answer)
    elif isinstance(answer, (float, np.floating)) and float(answer).is_integer():
        value = int(answer)
    elif isinstance(answer, str) and answer.strip().replace(",", "").replace("_", "").isdigit():
        value = int(answer.strip().replace(",", "").replace("_", ""))
    else:
        raise _Wrong(f"{what} must be a whole number, got {answer!r}")
    if value < 0:
        raise _Wrong(f"{what} cannot be negative, got {value}")
    return value


def _compact_notation(text: str) -> str:
    return "".join(text.split())


def check_two_factor_optimum(sizes, answer) -> CheckResult:
    """Exercise (sec. 3): a cheapest of the eight schedules of ``F' = F'_2 F'_1``.

    ``sizes`` is ``(n1, m1, m2, |E1|, |E2|)`` (``m1 = n2``). The answer is the
    letter a..h of a cheapest schedule in the paper's order, several letters
    (each must be cheapest), the schedule in the notation of
    :mod:`tensoradbook.chaining` (``"(F2dot I4)(I4 F1bar)"``) or its cost in
    fma. Brute force over every schedule of the two-factor chain decides.
    """
    from ..chaining import Chain, schedules, two_factor_schedules

    try:
        n1, m1, m2, e1, e2 = (int(v) for v in sizes)
    except (TypeError, ValueError):
        raise ValueError(f"sizes must be (n1, m1, m2, |E1|, |E2|), got {sizes!r}") from None
    chain = Chain([(m1, n1, e1), (m2, m1, e2)])
    eight = two_factor_schedules(n1, m1, m2, e1, e2)
    name = f"cheapest schedule of F2 o F1 with n1={n1}, m1=n2={m1}, m2={m2}, |E1|={e1}, |E2|={e2}"
    if answer is None:
        return _pending(name, "Your answer is a letter a..h (the paper's order), the schedule written like "
                              "'(F2dot I4)(I4 F1bar)', or its cost in fma.")
    best = min(s.fma for s in schedules(chain))
    cheapest = [letter for letter, s in eight.items() if s.fma == best]
    summary = f"{best} fma: " + ", ".join(f"{letter} = {eight[letter].notation(chain)}" for letter in cheapest) + "."
    by_notation = {_compact_notation(s.notation(chain)): letter for letter, s in eight.items()}

    def letter_of(item) -> str:
        text = str(item).strip()
        if text.strip("()").lower() in eight:
            return text.strip("()").lower()
        if _compact_notation(text) in by_notation:
            return by_notation[_compact_notation(text)]
        raise _Wrong(f"{text!r} is neither a letter a..h nor one of the eight schedules "
                     f"(written like {eight['e'].notation(chain)!r})")

    try:
        if isinstance(answer, (list, tuple, set, frozenset)):
            letters = [letter_of(item) for item in answer]
            if not letters:
                raise _Wrong("the list of schedules is empty")
        elif isinstance(answer, str) and not answer.strip().replace(",", "").isdigit():
            letters = [letter_of(answer)]
        else:
            letters = None
            cost = _count_answer(answer, "the cost")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    if letters is None:
        if cost == best:
            return CheckResult(name, True, note=summary)
        if cost < best:
            return CheckResult(name, False, [f"no schedule of F2 o F1 costs as little as {cost} fma"])
        matching = [letter for letter, s in eight.items() if s.fma == cost]
        return CheckResult(name, False, [f"{cost} fma is what schedule {matching[0]} = "
                                         f"{eight[matching[0]].notation(chain)} costs; another one costs less"
                                         if matching else f"{cost} fma is not the cost of any of the eight schedules"])
    problems = []
    for letter in dict.fromkeys(letters):
        s = eight[letter]
        if s.fma != best:
            why = (" (it preaccumulates both factors and multiplies them: by the proof of Theorem 3.1 that never "
                   "beats the best of a-e)" if letter in "fgh" else "")
            problems.append(f"schedule {letter} = {s.notation(chain)} costs {s.fma} fma; another of the eight "
                            f"costs less{why}")
    if problems:
        return CheckResult(name, False, problems)
    return CheckResult(name, True, note=summary)


def check_homogeneous_costs(chain, answer) -> CheckResult:
    """Exercise (sec. 5): the fma of homogeneous tangent and homogeneous adjoint mode, as a pair.

    Tangent mode pushes the ``n_1`` columns of the identity through every
    factor (``n_1 |E_i|`` each); adjoint mode pulls the ``m_q`` rows of the
    identity back through every factor (``m_q |E_i|`` each), summed here
    factor by factor.
    """
    chain = _exercise_chain(chain)
    name = f"homogeneous tangent and adjoint fma of the chain {[(f.m, f.n, f.edges) for f in chain]}"
    if answer is None:
        return _pending(name, "Your answer is a pair (tangent fma, adjoint fma).")
    columns, rows = chain.factor(1).n, chain.factor(chain.q).m
    tangent = sum(columns * f.edges for f in chain)
    adjoint = sum(rows * f.edges for f in chain)
    try:
        if isinstance(answer, (str, bytes)) or not hasattr(answer, "__len__") or len(answer) != 2:
            raise _Wrong(f"the answer must be a pair (tangent, adjoint), got {answer!r}")
        pair = list(answer)
        mine_tangent, mine_adjoint = (_count_answer(v, what) for v, what in zip(pair, ("tangent", "adjoint")))
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    if (mine_tangent, mine_adjoint) == (tangent, adjoint):
        return CheckResult(name, True, note=f"n1 * sum |E| = {columns} * {tangent // columns} and "
                                            f"m{chain.q} * sum |E| = {rows} * {adjoint // rows}.")
    if (mine_tangent, mine_adjoint) == (adjoint, tangent):
        return CheckResult(name, False, ["the two are swapped: tangent mode carries the n1 columns of the "
                                         "identity, adjoint mode the m_q rows"])
    problems = []
    for mine, right, mode, size, own in ((mine_tangent, tangent, "tangent", f"n1 = {columns} columns", "n"),
                                         (mine_adjoint, adjoint, "adjoint", f"m{chain.q} = {rows} rows", "m")):
        if mine == right:
            continue
        if mine == sum(getattr(f, own) * f.edges for f in chain):
            problems.append(f"{mode}: {mine} uses each factor's own {own}_i; homogeneous {mode} mode carries "
                            f"the same {size} through every factor")
        else:
            problems.append(f"{mode}: {mine} is not it; homogeneous {mode} mode carries {size} through every "
                            f"factor, |E_i| fma each")
    return CheckResult(name, False, problems)


def _best_by_last_step(chain) -> dict[tuple[str, int], int]:
    """Brute force: per last step (op, k) of a schedule of the whole chain, the least fma."""
    from ..chaining import schedules

    best: dict[tuple[str, int], int] = {}
    for s in schedules(chain):
        key = (s.op, s.k)
        best[key] = min(best.get(key, s.fma), s.fma)
    return best


def check_cell_fma(chain, j: int, i: int, answer) -> CheckResult:
    """Exercise (eq. 3.7): the fma that cell ``(j, i)`` of the table holds, unlimited tape.

    That is the least fma of any schedule for ``F'_{j,i} = F'_j ... F'_i``:
    here every schedule of the subchain ``F_i .. F_j`` is enumerated.
    """
    from ..chaining import Chain

    chain = _exercise_chain(chain)
    if not 1 <= i <= j <= chain.q:
        raise ValueError(f"cell ({j}, {i}) is not in the table of a chain of {chain.q} factors")
    name = f"fma of cell F'_{{{j},{i}}} (unlimited tape)"
    if answer is None:
        return _pending(name, "Your answer is a whole number of fma.")
    try:
        mine = _count_answer(answer, "the fma")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    sub = Chain(chain.factors[i - 1:j])
    options = _best_by_last_step(sub)
    best = min(options.values())
    if mine == best:
        winners = sorted(f"{op}({k + i - 1})" if j > i else op for (op, k), fma in options.items() if fma == best)
        return CheckResult(name, True, note=f"Reached by: {', '.join(winners)}.")
    if mine < best:
        return CheckResult(name, False, [f"no schedule of F'_{{{j},{i}}} costs as little as {mine} fma"])
    matching = sorted(f"{op}({k + i - 1})" if j > i else op for (op, k), fma in options.items() if fma == mine)
    if matching:
        return CheckResult(name, False, [f"{mine} fma is the best with last step {matching[0]}; another split or "
                                         f"operation is cheaper (eq. 3.7 takes the minimum over all)"])
    return CheckResult(name, False, [f"{mine} fma is not the best cost of any last step (k, MxM / GxM / MxG): "
                                     f"recheck the terms of eq. 3.7"])


def check_bounded_optimum(chain, memory: int, answer) -> CheckResult:
    """Exercise (sec. 4): the least fma of a schedule whose tape is at most ``memory``.

    Tape is counted as in the paper's tables (:mod:`tensoradbook.chaining`:
    an adjoint sweep adds its edges to the tape of the matrix it is seeded
    with). Every schedule is enumerated; the paper's single-value rule is
    consulted only to explain a typical wrong answer.
    """
    from ..chaining import optimize, schedules

    chain = _exercise_chain(chain)
    name = f"least fma with tape at most {memory}"
    if answer is None:
        return _pending(name, "Your answer is a whole number of fma.")
    try:
        mine = _count_answer(answer, "the fma")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    every = schedules(chain)
    fitting = [s for s in every if s.memory <= memory]
    best = min(s.fma for s in fitting)
    if mine == best:
        witness = min((s for s in fitting if s.fma == best), key=lambda s: s.memory)
        paper = optimize(chain, memory, rule="paper").fma
        return CheckResult(name, True, note=f"For example {witness.notation(chain)} (tape {witness.memory})"
                                            + (f"; the paper's single-value rule settles for {paper}" if paper != best
                                               else "") + ".")
    if mine < best:
        needs = [s.memory for s in every if s.fma == mine]
        return CheckResult(name, False, [f"{mine} fma needs tape {min(needs)} > {memory}" if needs else
                                         f"no schedule with tape at most {memory} costs as little as {mine} fma"])
    paper = optimize(chain, memory, rule="paper")
    if mine == paper.fma:
        return CheckResult(name, False, [f"{mine} fma is what the paper's single-value rule finds "
                                         f"({paper.notation}); keeping only the cheapest solution per cell loses "
                                         f"a cheaper schedule that fits the bound"])
    return CheckResult(name, False, [f"a schedule with tape at most {memory} costs less than {mine} fma"])


def check_tape_threshold(chain, answer) -> CheckResult:
    """Exercise (sec. 4): the least tape bound ``Mbar`` under which the unlimited optimum is still reached.

    Brute force: the least tape of a schedule of minimal fma.
    """
    from ..chaining import schedules

    chain = _exercise_chain(chain)
    name = "least tape bound that keeps the unlimited optimum"
    if answer is None:
        return _pending(name, "Your answer is a whole number (edges of tape).")
    try:
        mine = _count_answer(answer, "the bound")
    except _Wrong as err:
        return CheckResult(name, False, [str(err)])
    every = schedules(chain)
    best = min(s.fma for s in every)
    threshold = min(s.memory for s in every if s.fma == best)
    if mine == threshold:
        return CheckResult(name, True, note=f"With less tape the best costs "
                                            f"{min(s.fma for s in every if s.memory < threshold)} fma instead of "
                                            f"{best}." if threshold else "No tape at all is needed.")
    if mine < threshold:
        cheapest = min(s.fma for s in every if s.memory <= mine)
        return CheckResult(name, False, [f"with tape at most {mine} the best schedule costs {cheapest} fma, more "
                                         f"than the unlimited optimum"])
    uses = any(s.fma == best and s.memory == mine for s in every)
    return CheckResult(name, False, [f"an optimal schedule uses tape {mine}, but another optimal one needs less"
                                     if uses else f"a bound below {mine} already keeps the optimum"])

"""Chapter 04b: inequalities and loop bounds.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

from ..integer.fourier_motzkin import fourier_motzkin
from ..integer.matrix import as_int_matrix, as_rational_matrix, matvec, normalize
from ..integer.smith import integer_inverse
from .answers import exact_text, read_range, vector_text
from .checking import MAX_PROBLEMS, Wrong, pending, verdict
from .feedback import CheckResult

__all__ = ["check_loop_bounds", "check_point_count", "check_redundant_rows"]

# Loops that visit more points than this (a multiple of the polytope's, plus room for a small one) are taken as
# unbounded and stopped, rather than run on for ever: right bounds visit each point once.
_VISITS_PER_POINT, _VISITS_SPARE = 10, 10_000


def _violated_row(A: np.ndarray, b: list, x) -> int | None:
    for i, row in enumerate(A.tolist()):
        if sum(a * v for a, v in zip(row, x)) < b[i]:
            return i
    return None


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
        return pending(name, f"Your answer is a pair (outer, inner): outer = (low, high) for {names[1]}, "
                              f"inner = a function of {names[1]} giving (low, high) for {names[0]}.")
    truth = _brute_force_points(A, b)
    try:
        visited = _visited(answer, len(truth), names)
    except Wrong as err:
        return err.result(name)
    except (TypeError, ValueError) as err:
        return CheckResult(name, False, [f"the answer must be (outer, inner) with inner a function: {err}"])
    return verdict(name, _loop_problems(A, b, visited, truth, names),
                   note=f"Your loops visit all {len(truth)} integer points.")


def _visited(answer, points: int, names) -> list[tuple]:
    """The points the loops ``answer = (outer, inner)`` visit, in order; Wrong once they visit far more than the
    polytope's ``points``."""
    outer, inner = answer
    outer_range = read_range(outer() if callable(outer) else outer, f"the outer bounds for {names[1]}")
    visited = []
    for x1 in outer_range:
        for x0 in read_range(inner(x1), f"the inner bounds for {names[0]} at {names[1]} = {x1}"):
            visited.append((x0, x1))
            if len(visited) > _VISITS_PER_POINT * points + _VISITS_SPARE:
                raise Wrong("your loops visit far too many points; are the bounds finite?")
    return visited


def _loop_problems(A: np.ndarray, b: list, visited: list, truth, names) -> list[str]:
    """The points visited outside the polytope, then those of ``truth`` never visited."""
    problems = []
    point = names[0].split("_")[0]
    outside = [x for x in visited if x not in truth]
    for x in outside[:MAX_PROBLEMS]:
        row = _violated_row(A, b, x)
        problems.append(f"your bounds include {point} = {vector_text(x)}, which is outside: inequality {row} "
                        f"({_inequality_text(A, b, row, names)}) fails there")
    if len(outside) > MAX_PROBLEMS:
        problems.append(f"... and {len(outside) - MAX_PROBLEMS} more points outside")
    seen = set(visited)
    missing = [x for x in sorted(truth, key=lambda p: (p[1], p[0])) if x not in seen]
    for x in missing[:MAX_PROBLEMS]:
        problems.append(f"your bounds miss the point {point} = {vector_text(x)}")
    if len(missing) > MAX_PROBLEMS:
        problems.append(f"... and {len(missing) - MAX_PROBLEMS} more missing points")
    return problems


def _inequality_text(A: np.ndarray, b: list, row: int, names) -> str:
    terms = []
    for coeff, label in zip(A[row].tolist(), names):
        coeff = normalize(coeff)
        if coeff == 0:
            continue
        sign = "-" if coeff < 0 else "+"
        mag = abs(coeff)
        body = label if mag == 1 else f"{exact_text(mag)}*{label}"
        terms.append(f"{sign} {body}")
    text = " ".join(terms).lstrip("+ ").strip() if terms else "0"
    if text.startswith("- "):
        text = "-" + text[2:]
    return f"{text} >= {exact_text(b[row])}"


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
    name = f"|Sigma(beta)| for beta = {vector_text(beta)} in a box of shape {shape}"
    if answer is None:
        return pending(name, "Your answer is a non-negative integer.")
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        return CheckResult(name, False, [f"the answer must be an integer count, got {answer!r}"])
    brute = [alpha for alpha in np.ndindex(*shape) if tuple(matvec(A, list(alpha))) == tuple(beta)]
    solutions = integer_inverse(A).solve(beta)
    core = 0 if solutions is None else len(solutions.within(shape).points())
    if core != len(brute):  # pragma: no cover -- would be a bug in the core
        raise AssertionError(f"core counts {core} points, brute force {len(brute)}")
    if int(answer) == len(brute):
        return CheckResult(name, True)
    # The same words for every wrong count: "too many" / "too few" would make repeated tries a binary search.
    return CheckResult(name, False, [
        f"{int(answer)} is not the number of indices alpha in the box with A alpha = beta",
        "hint: decide first whether A alpha = beta has integer solutions at all (eqs. 16-17); if it has, they are "
        "alpha_p + K z (eq. 41): count the integer z that keep every entry of alpha inside the box, both ends of "
        "each range included (the bounds on z by Fourier-Motzkin, eqs. 42-45)"])


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
        return pending(name, "Your answer is a set of row indices, e.g. {0, 3}; the empty set is set().")
    try:
        claimed = {int(i) for i in answer}
    except (TypeError, ValueError):
        return CheckResult(name, False, [f"the answer must be a set of row indices, got {answer!r}"])
    problems = [f"there is no row {i}: A has rows 0 to {A.shape[0] - 1}"
                for i in sorted(claimed) if not 0 <= i < A.shape[0]]
    if problems:
        return CheckResult(name, False, problems)
    redundant = set()
    for i in range(A.shape[0]):
        feasible, low = _min_of_row(A, b, i)
        if not feasible or (low is not None and low >= b[i]):
            redundant.add(i)
    if claimed == redundant:
        return CheckResult(name, True)
    # One message for every wrong set: a witness that a listed row is not redundant, or "a row you did not list
    # is", would answer the exercise row by row over a few tries.
    return CheckResult(name, False, [
        "that is not the set of redundant rows",
        "hint: for each row i, find the least value of its left side A[i] x over the polytope of the other rows (a "
        "new variable t = A[i] x, eliminated last by Fourier-Motzkin); the row is redundant when that least value "
        "is at least b[i], or when the other rows have no solution at all"])

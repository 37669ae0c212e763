"""Chapter 04a: integer equations (report sec. 4.1).

:func:`check_bezout` (the extended Euclidean algorithm), :func:`check_smith` (a Smith normal form
``U A V = S``, Alg. 1-2), :func:`check_kernel_basis` and :func:`check_integer_solutions` (all integer
solutions of ``A x = b`` as ``x0 + K z``). Each tests the defining properties exactly (unimodularity by
sympy determinants, divisibility of the diagonal, integer arithmetic), so any right answer passes.
"""

from __future__ import annotations

import math

import numpy as np
import sympy

from ..integer.matrix import as_int_matrix, matmul, matvec
from ..integer.smith import extended_gcd, integer_inverse, smith_normal_form
from .answers import determinant, read_int_matrix, read_int_triple, read_int_vector, read_triple, vector_text
from .checking import Wrong, pending, verdict
from .feedback import CheckResult

__all__ = ["check_bezout", "check_smith", "check_kernel_basis", "check_integer_solutions"]


#: The pairs on which :func:`check_bezout` tries a function answer besides the exercise's own: a zero on either side,
#: a < b, a = b, a divisor, coprime and large numbers (Mersenne primes), as the hidden tests of the assignment try
#: others of each kind.
BEZOUT_PAIRS = ((84, 0), (0, 35), (0, 1), (36, 120), (9, 9), (1, 5), (13, 52), (52, 13), (1001, 221), (35, 64),
                (2 ** 19 - 1, 2 ** 17 - 1), (2 ** 61 - 1, 2 ** 31 - 1))


def _bezout_problems(a: int, b: int, g: int, x: int, y: int) -> list[str]:
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
    return problems


def _bezout_function_problems(a: int, b: int, function) -> list[str]:
    """What is wrong with ``function`` as an extended Euclidean algorithm: its triple for the exercise's pair first,
    then for :data:`BEZOUT_PAIRS`; the first wrong call, and how many are wrong."""
    pairs = [(a, b)] + [pair for pair in BEZOUT_PAIRS if pair != (a, b)]
    problems, wrong = [], 0
    for p, q in pairs:
        call = f"bezout({p}, {q})"
        try:
            g, x, y = read_int_triple(function(p, q), "g, x, y")
            found = [f"{call} = ({g}, {x}, {y}): {problem}" for problem in _bezout_problems(p, q, g, x, y)]
        except Wrong as err:
            found = [f"{call}: {err}"]
        except Exception as err:  # the student's code: any error, with the call it happened at
            found = [f"{call} raised {type(err).__name__}: {err}"]
        if found:
            wrong += 1
            problems = problems or found
    if problems:
        problems.append(f"wrong on {wrong} of {len(pairs)} pairs (with zeros, a < b, a = b, large numbers): the "
                        f"function must work for any non-negative a and b")
    return problems


def check_bezout(a: int, b: int, answer) -> CheckResult:
    """Exercise: a Bezout triple ``(g, x, y)`` with ``g = gcd(a, b) = a x + b y`` (Algorithm 2); or a function
    ``bezout(a, b)`` returning one for any non-negative ``a``, ``b``, which is called on ``(a, b)`` and on the pairs of
    :data:`BEZOUT_PAIRS`, as the hidden tests of the assignment call it on others."""
    if callable(answer):
        name = f"bezout(a, b) on a = {a}, b = {b} and on other pairs"
        return verdict(name, _bezout_function_problems(a, b, answer))
    name = f"Bezout triple for a = {a}, b = {b}"
    if answer is None:
        return pending(name, "Your answer is a triple (g, x, y).")
    try:
        g, x, y = read_int_triple(answer, "g, x, y")
    except Wrong as err:
        return err.result(name)
    return verdict(name, _bezout_problems(a, b, g, x, y))


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
        return pending(name, "Your answer is a triple (S, U, V) of integer matrices with S = U A V.")
    try:
        S, U, V = read_triple(answer, "S, U, V")
        S, U, V = read_int_matrix(S, "S"), read_int_matrix(U, "U"), read_int_matrix(V, "V")
    except Wrong as err:
        return err.result(name)
    problems = [f"{label} must be {want[0]}x{want[1]}, yours is {M.shape[0]}x{M.shape[1]}"
                for label, M, want in (("S", S, (n_rows, n_cols)), ("U", U, (n_rows, n_rows)),
                                       ("V", V, (n_cols, n_cols))) if M.shape != want]
    if problems:
        return CheckResult(name, False, problems)
    for label, M in (("U", U), ("V", V)):
        det = determinant(M)
        if det not in (1, -1):
            problems.append(f"{label} is not unimodular: det {label} = {det} (it must be +1 or -1)")
    UAV = matmul(matmul(U, A), V)
    mismatches = [(i, j) for i in range(n_rows) for j in range(n_cols) if UAV[i, j] != S[i, j]]
    if mismatches:
        i, j = mismatches[0]
        more = f" (and {len(mismatches) - 1} more entries)" if len(mismatches) > 1 else ""
        problems.append(f"U A V is not S: (U A V)[{i},{j}] = {UAV[i, j]} but S[{i},{j}] = {S[i, j]}{more}")
    diagonal = [int(S[k, k]) for k in range(min(n_rows, n_cols))]
    problems += _diagonal_problems(S, diagonal)
    if not problems:
        # By uniqueness of the Smith normal form this cannot differ; kept as a cross-check with Algorithm 1.
        reference = smith_normal_form(A)
        mine = tuple(abs(v) for v in diagonal if v)
        if mine != reference.invariant_factors:
            problems.append(f"the diagonal {mine} is not the Smith normal form of A: Algorithm 1 finds other "
                            f"invariant factors")
    return verdict(name, problems)


def _diagonal_problems(S: np.ndarray, diagonal: list[int]) -> list[str]:
    """What keeps ``S`` from the form of eqs. 10-11: an entry off the diagonal, a negative one, a 0 before a
    non-zero one, one that does not divide the next."""
    problems = []
    off = [(i, j) for i in range(S.shape[0]) for j in range(S.shape[1]) if i != j and S[i, j] != 0]
    if off:
        i, j = off[0]
        problems.append(f"S is not diagonal: S[{i},{j}] = {S[i, j]}")
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
    return problems


def _kernel_problems(A: np.ndarray, K, what: str = "K") -> list[str]:
    """What is wrong with K as a basis of the integer kernel lattice {x in Z^M : A x = 0}."""
    n_cols = A.shape[1]
    inverse = integer_inverse(A)
    dim = n_cols - inverse.rank
    K = _read_kernel(K, n_cols, what)
    if K.shape[0] != n_cols:
        return [f"{what} must have M = {n_cols} rows (one per entry of alpha), yours has {K.shape[0]}"]
    problems = []
    for j in range(K.shape[1]):
        image = matvec(A, list(K[:, j]))
        if any(image):
            problems.append(f"column {j} of {what} is not in the kernel: A {what}[:,{j}] = {vector_text(image)}")
    if problems:
        return problems
    k = K.shape[1]
    rank_K = sympy.Matrix(K.tolist()).rank() if k else 0
    if k != dim:
        # not "too few" or "too many": the formula is the hint, the count itself the student's to work out
        return [f"{what} has {k} column{'s' if k != 1 else ''}, but a basis of the kernel lattice has exactly "
                f"M - rank A columns (M = {n_cols}, the number of entries of alpha)"]
    if rank_K < k:
        return [f"the columns of {what} are linearly dependent (rank {rank_K} < {k})"]
    if k == 0:
        return []
    X = sympy.Matrix(inverse.kernel_coordinates(K).tolist())  # K = kernel @ X
    index = abs(int(X.det()))
    return _sublattice_problems(K, index, what) if index != 1 else []


def _read_kernel(K, n_cols: int, what: str) -> np.ndarray:
    """The student's K as an integer matrix: a plain vector is one column, an empty list no columns."""
    if hasattr(K, "tolist"):
        K = K.tolist()
    if isinstance(K, (list, tuple)) and K and all(isinstance(v, (int, np.integer)) for v in K):
        K = [[v] for v in K]  # a plain vector is one column
    if isinstance(K, (list, tuple)) and len(K) == 0:
        K = [[] for _ in range(n_cols)]
    return read_int_matrix(K, what)


def _sublattice_problems(K: np.ndarray, index: int, what: str) -> list[str]:
    """Independent kernel columns spanning a sublattice of ``index`` > 1: that, and a hint."""
    problems = [f"your {what} spans only a sublattice of index {index} of the kernel: some integer "
                f"solution of A x = 0 is not an integer combination of your columns"]
    common = [(j, math.gcd(*(int(v) for v in K[:, j]))) for j in range(K.shape[1])]
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
        return pending(name, "Your answer is an integer matrix K with one kernel vector per column.")
    try:
        problems = _kernel_problems(A, answer)
    except Wrong as err:
        problems = [str(err)]
    return verdict(name, problems)


def check_integer_solutions(A, beta, answer) -> CheckResult:
    """Exercise: decide whether ``A alpha = beta`` has integer solutions and give them all (eq. 41).

    The answer is :data:`NO_SOLUTION` (the string ``"no solution"``) or a pair
    ``(alpha_p, K)``: one integer solution and an integer kernel basis, so that
    the solutions are exactly ``alpha_p + K z`` for integer z.
    """
    A = as_int_matrix(A, "A")
    inverse = integer_inverse(A)
    check = inverse.solvability(beta)
    beta_text = vector_text(check.beta)
    name = f"integer solutions of A alpha = beta for beta = {beta_text}"
    if answer is None:
        return pending(name, 'Your answer is "no solution" or a pair (alpha_p, K).')
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
        alpha_p = read_int_vector(alpha_p, A.shape[1], "alpha_p")
    except Wrong as err:
        return CheckResult(name, False, [str(err), decide])
    image = matvec(A, alpha_p)
    if tuple(image) != tuple(check.beta):
        problems.append(f"alpha_p = {vector_text(alpha_p)} is not a solution: A alpha_p = {vector_text(image)}, "
                        f"not beta = {beta_text}")
        problems.append(decide)
    try:
        problems += _kernel_problems(A, K)
    except Wrong as err:
        problems.append(str(err))
    return verdict(name, problems)

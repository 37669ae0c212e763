"""Chapter 08: inverse accumulation mode (Pearlmutter & Siskind).

:func:`check_step_inverse` (the inverse of one step's Jacobian, eq. 2.6f),
:func:`check_reverse_inverse` (``J^-1 ydot``, eq. 2.4b),
:func:`check_forward_inverse` (``J^-T xbar``, eq. 2.4a), :func:`check_newton_step`
and :func:`check_lump_order` (sec. 3, Fig. 4).

A program is given as the step function ``tensoradbook.inverse.trace`` reads
(``def step(x): x[0] = x[0] * x[1]; ...``) and its number of registers. The
oracle is independent of the sweeps: the step function run on plain floats,
its Jacobian by central differences, and ``numpy.linalg.solve``. Lump orders
are compared with every topological order, tried one by one.
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import permutations

import numpy as np

from ..ad.finite_differences import jacobian
from .. import inverse
from .answers import read_entries
from .checking import Wrong, pending
from .feedback import CheckResult

__all__ = [
    "check_step_inverse",
    "check_reverse_inverse",
    "check_forward_inverse",
    "check_newton_step",
    "check_lump_order",
]


_FD_STEP = 1e-6       # the oracle's central differences: error ~h**2 + eps / h, about 1e-9 relative
_INVERSE_RTOL = 1e-6  # the oracle is good to about 1e-9 relative; answers may be rounded
# A Jacobian whose determinant is below this times its largest entry ** n is singular to the oracle's precision: the
# exercise has no answer at that point.
_SINGULAR = 1e-12


def _float_vector(value, length: int, what: str) -> np.ndarray:
    """The answer as ``length`` finite floats (lists, tuples, arrays, Fractions, ints), or a Wrong saying why not."""
    if isinstance(value, (str, bytes)):
        raise Wrong(f"{what} must be {length} numbers, got the text {value!r}")
    items = read_entries(value, length, what, (int, float, Fraction, np.number),
                     lambda v: f"{what} must be {length} numbers, got {type(v).__name__}", "register")
    values = []
    for k, item in enumerate(items):
        if isinstance(item, (bool, str, bytes)):
            raise Wrong(f"entry {k} of {what} is {item!r}, not a number")
        try:
            number = float(item)
        except (TypeError, ValueError):
            raise Wrong(f"entry {k} of {what} is {item!r}, not a number") from None
        if not math.isfinite(number):
            raise Wrong(f"entry {k} of {what} is {number}: not finite")
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


def _numbers_text(values) -> str:
    return "(" + ", ".join(f"{float(v):.6g}" for v in values) + ")"


def _close(mine: np.ndarray, right: np.ndarray) -> bool:
    return bool(np.abs(mine - right).max() <= _INVERSE_RTOL * (1 + np.abs(right).max()))


def _point(x, n: int, what: str) -> np.ndarray:
    try:
        return _float_vector(x, n, what)
    except Wrong as err:
        raise ValueError(str(err)) from None


def _solve_or_explain(J: np.ndarray, rhs: np.ndarray, where: str) -> np.ndarray:
    if abs(np.linalg.det(J)) < _SINGULAR * max(1.0, np.abs(J).max()) ** len(J):
        raise ValueError(f"the Jacobian at {where} is singular: the exercise has no answer there")
    return np.linalg.solve(J, rhs)


def check_step_inverse(a, b, answer) -> CheckResult:
    """Exercise: the row ``R`` of ``J_t^-1`` for one step ``x[R] <- h(x[R], x[S_1], ...)`` (eq. 2.6f).

    The step's Jacobian is the identity except row ``R``, which holds ``a``
    (``dh/dx[R]``) on the diagonal and ``b_i`` (``dh/dx[S_i]``) at the other
    inputs. The answer is that row of the inverse, in the same order (the entry
    for ``x[R]`` first), or the whole inverse (a ``k x k`` matrix with ``R``
    first).
    It is compared with ``numpy.linalg.inv`` of the step's Jacobian.
    """
    b = [b] if isinstance(b, (int, float, Fraction, np.number)) else list(b)
    k = 1 + len(b)
    name = f"row R of J_t^-1 for a = {float(a):.6g}, b = {_numbers_text(b)}"
    if answer is None:
        return pending(name, f"Your answer is {k} numbers: the inverse's entries for x[R] and then for each other "
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
        mine = _read_step_row(answer, k, right)
    except Wrong as err:
        return err.result(name)
    if _close(mine, right[0]):
        return CheckResult(name, True, note="The inverse has the sparsity of J_t itself: one row, k entries.")
    return CheckResult(name, False, _step_row_problems(mine, right, J, float(a)))


def _read_step_row(answer, k: int, right: np.ndarray) -> np.ndarray:
    """Row R of the student's inverse of a step's ``k x k`` Jacobian: the answer itself, or the first row of a whole
    inverse whose other rows are right (``right``'s); else a Wrong."""
    try:
        whole = np.ndim(answer) == 2 and not isinstance(answer, str)
    except ValueError:  # ragged rows
        raise Wrong(f"your rows have different lengths; give {k} numbers or a {k} x {k} matrix") from None
    if not whole:
        return _float_vector(answer, k, "your row")
    matrix = np.array([_float_vector(row, k, f"row {i} of your inverse") for i, row in enumerate(answer)])
    if matrix.shape != (k, k):
        raise Wrong(f"the whole inverse must be {k} x {k}, yours is {matrix.shape[0]} x {matrix.shape[1]}")
    if not _close(matrix[1:], right[1:]):
        raise Wrong("the rows of the other inputs are not right: a step only changes x[R], and its inverse leaves "
                    "the other registers as they are")
    return matrix[0]


def _step_row_problems(mine: np.ndarray, right: np.ndarray, J: np.ndarray, a: float) -> list[str]:
    """What is wrong with row R of the inverse, ``mine`` (``right`` the inverse, ``J`` the step's Jacobian): its
    diagonal entry, the sign or the size of the others."""
    problems = []
    product = mine @ J  # row R of (your inverse) times J_t: must be row R of the identity
    if not _close(mine[:1], right[0, :1]):
        problems.append(f"the diagonal entry is {mine[0]:.6g}: with it, entry (R, R) of J_t^-1 J_t is "
                        f"{product[0]:.6g}, not 1" + (" (you kept a, but the inverse must undo the step)"
                                                      if math.isclose(mine[0], a) else ""))
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
    return problems


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
        return pending(name, f"Your answer is {n} numbers. Compute them with {sweep}.")
    try:
        mine = _float_vector(answer, n, f"your {symbol}")
    except Wrong as err:
        return err.result(name)
    J = jacobian(F, x, _FD_STEP)  # central differences
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
        return pending(name, f"Your answer is the new point, {n} numbers: x - J^-1 F(x), with J^-1 F(x) from one "
                              f"reverse-inverse sweep seeded with F(x).")
    try:
        mine = _float_vector(answer, n, "your new point")
    except Wrong as err:
        return err.result(name)
    value = F(x)
    J = jacobian(F, x, _FD_STEP)  # central differences
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
    program = inverse.trace(step, n)
    vertices = program.vertices
    if len(vertices) > 7:
        raise ValueError(f"the program has {len(vertices)} vertices: too many to try every order (at most 7)")
    name = "an order with the smallest lumps"
    if answer is None:
        return pending(name, f"Your answer is an order of the vertices {', '.join(vertices)}: every vertex after "
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

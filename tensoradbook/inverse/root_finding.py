"""Newton's method with one reverse-inverse sweep per iteration (sec. 6): ``x -= J^-1 F(x)`` without
forming ``J``; and the baseline :func:`finite_difference_newton` (``n + 1`` runs and a solve per step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
import numpy as np
from ..integer.matrix import shown

from .program import Program
from .sweeps import _newton_settings, _program, _real, _vector, logdet, reverse_inverse, run

# A Newton step this many times longer than the point (plus 1) means a Jacobian singular to working precision there:
# its solve divided by a pivot near 0, and the iteration is stopped with that diagnosis rather than run off to inf.
_EXPLODED = 1e12

@dataclass(frozen=True)
class NewtonResult:
    """Newton's method on ``F(x) = 0``: ``iterates[k]`` and ``residuals[k] = |F(iterates[k])|`` for every
    iteration, ``logdets[k] = log |det J|`` there (it falls towards -inf near a singular point)."""

    x: np.ndarray
    converged: bool
    iterates: np.ndarray
    residuals: np.ndarray
    logdets: np.ndarray
    message: str

    @property
    def iterations(self) -> int:
        return len(self.iterates) - 1

    def __str__(self) -> str:
        return self.message


class NewtonError(ValueError):
    """Newton's method failed; ``result`` holds the iterates so far."""

    def __init__(self, result: NewtonResult):
        super().__init__(result.message)
        self.result = result


def newton(program: Program, x0, tol: float = 1e-10, max_iter: int = 50, engine: str = "auto",
           raise_on_failure: bool = True) -> NewtonResult:
    """Solve ``F(x) = 0`` for the program's function ``F``: ``x <- x - J^-1 F(x)``, one reverse-inverse sweep
    per iteration, until ``|F(x)| <= tol``.

    Fails (NewtonError, or a result with ``converged=False`` when
    ``raise_on_failure`` is false) at a point where a step's diagonal partial
    or a lump's block is singular, when a step explodes (the Jacobian nearly
    singular), or after ``max_iter`` iterations.
    """
    x = _vector(x0, _program(program).n, "x0").copy()
    tol, max_iter = _newton_settings(tol, max_iter)
    if not isinstance(raise_on_failure, (bool, np.bool_)):
        raise ValueError(f"raise_on_failure must be True or False, got {shown(raise_on_failure)}")
    iterates, residuals, logdets = [], [], []
    message = None
    for k in range(max_iter + 1):
        value = run(program, x, engine)
        iterates.append(x.copy())
        residuals.append(float(np.linalg.norm(value)))
        logdets.append(logdet(program, x, engine) if np.all(np.isfinite(x)) else np.nan)
        if not np.isfinite(residuals[-1]):
            message = f"Newton's method failed at iteration {k}: F(x) is not finite at x = {_show(x)}"
            break
        if residuals[-1] <= tol:
            message = f"converged in {k} iterations: |F(x)| = {residuals[-1]:.3g} at x = {_show(x)}"
            break
        if k == max_iter:
            message = (f"Newton's method did not converge in {max_iter} iterations: |F(x)| = {residuals[-1]:.3g} "
                       f"at x = {_show(x)}, log|det J| = {logdets[-1]:.3g}")
            break
        try:
            delta = reverse_inverse(program, x, value, engine)
        except ValueError as err:
            message = f"Newton's method failed at iteration {k}, x = {_show(x)}: {err}"
            break
        with np.errstate(over="ignore"):
            exploded = not np.all(np.isfinite(delta)) or np.linalg.norm(delta) > _EXPLODED * (1 + np.linalg.norm(x))
        if exploded:
            message = (f"Newton's method failed at iteration {k}, x = {_show(x)}: the step J^-1 F(x) explodes "
                       f"(log|det J| = {logdets[-1]:.3g}): the Jacobian is nearly singular here")
            break
        x = x - delta
    converged = message.startswith("converged")
    result = NewtonResult(x, converged, np.array(iterates), np.array(residuals), np.array(logdets), message)
    if not converged and raise_on_failure:
        raise NewtonError(result)
    return result


# A point of more registers than this is shown by its first three and last two, to keep a message on a line.
_SHOWN_IN_FULL = 6


def _show(x: np.ndarray) -> str:
    if len(x) > _SHOWN_IN_FULL:
        return f"[{', '.join(f'{v:.6g}' for v in x[:3])}, ..., {', '.join(f'{v:.6g}' for v in x[-2:])}]"
    return f"[{', '.join(f'{v:.6g}' for v in x)}]"


def finite_difference_newton(program, x0, h: float, tol: float = 1e-10,
                             max_iter: int = 50) -> NewtonResult:
    """The baseline for :func:`newton`: the Jacobian from forward differences of :func:`run` (step ``h``)
    and ``numpy.linalg.solve``: ``n + 1`` runs and an ``O(n^3)`` solve per iteration, and only linear
    convergence (an ``O(h)`` error in J) or a stall at round-off (tiny ``h``)."""
    x = _vector(x0, _program(program).n, "x0").copy()
    h = _real(h, "h (the difference step)", 0, math.inf)
    tol, max_iter = _newton_settings(tol, max_iter)
    iterates, residuals, logdets = [], [], []
    message = None
    for k in range(max_iter + 1):
        value = run(program, x)
        iterates.append(x.copy())
        residuals.append(float(np.linalg.norm(value)))
        with np.errstate(all="ignore"):
            J = np.column_stack([(run(program, x + h * e) - value) / h for e in np.eye(program.n)])
        logdets.append(float(np.linalg.slogdet(J)[1]) if np.all(np.isfinite(J)) else math.nan)
        if not math.isfinite(residuals[-1]):
            message = f"failed at iteration {k}: F(x) is not finite"
            break
        if residuals[-1] <= tol:
            message = f"converged in {k} iterations: |F(x)| = {residuals[-1]:.3g}"
            break
        if k == max_iter:
            message = f"did not converge in {max_iter} iterations: |F(x)| = {residuals[-1]:.3g}"
            break
        try:
            delta = np.linalg.solve(J, value)
        except np.linalg.LinAlgError:
            message = f"failed at iteration {k}: the finite-difference Jacobian is singular"
            break
        if not np.all(np.isfinite(delta)):
            message = f"failed at iteration {k}: the step is not finite"
            break
        x = x - delta
    return NewtonResult(x, message.startswith("converged"), np.array(iterates), np.array(residuals),
                           np.array(logdets), message)

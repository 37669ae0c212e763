"""Finite-difference checks of derivatives: the dot-product test.

For each argument ``x`` and a random direction ``v``, the central difference
``<df, f(x + h v) - f(x - h v)> / 2h`` must equal ``<dx, v>``, where ``dx`` is
the gradient of ``sum(df * f)``. This needs a few evaluations per argument
instead of a whole Jacobian (as in HIPS autograd's ``check_grads``).
Richardson extrapolation of the central differences at ``h`` and ``h / 2``
cancels the ``h**2`` error term, so a moderate ``h`` keeps both truncation and
round-off small (the formulas: :mod:`tensoradbook.ad.finite_differences`).

Every check takes a :class:`~tensoradbook.lang.program.Program` as well as a function: the finite
differences are then of the program's value (its last definition), against the gradients of
reverse accumulation across its definitions (:mod:`tensoradbook.ad.program`).
"""

from __future__ import annotations

import numpy as np

from ..lang.function import Function
from ..lang.program import Program
from .derive import derive
from .finite_differences import central, richardson

# A central difference errs by O(h**2) (truncation) and O(eps / h) (round-off), least near h = eps ** (1 / 3),
# about 6e-6 in float64 for values of order 1.
CENTRAL_STEP = 1e-6
# Richardson's extrapolation errs by O(h**4) and O(eps / h), least near h = eps ** (1 / 5), about 7e-4.
RICHARDSON_STEP = 1e-3


def random_arguments(fn: Function | Program, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Inputs in [0.5, 1.5]: away from the poles of log, sqrt and division."""
    return {name: rng.uniform(0.5, 1.5, fn.shapes[name]) for name in fn.arguments}


def numeric_gradient(fn: Function | Program, args: dict, name: str, df, step: float = CENTRAL_STEP,
                     forward=None) -> np.ndarray:
    """The gradient of ``sum(df * f)`` with respect to ``args[name]``, one central difference per element.

    The brute-force oracle (two evaluations per element): for small shapes
    and for teaching; the dot-product test needs only a few evaluations.
    ``forward(args) -> f`` defaults to the reference evaluator; a compiled
    forward kernel (``fn.compile("numba")``) makes it fast.
    """
    forward = forward if forward is not None else fn.evaluate
    args = fn.argument_arrays(args)
    gradient = np.zeros_like(args[name])
    for beta in np.ndindex(*gradient.shape):
        values = {key: value.copy() for key, value in args.items()}
        values[name][beta] += step
        plus = np.sum(df * forward(values))
        values[name][beta] -= 2 * step
        gradient[beta] = (plus - np.sum(df * forward(values))) / (2 * step)
    return gradient


def directional_derivatives(fn: Function | Program, args=None, *, grads=None, seed: int = 0,
                            step: float = RICHARDSON_STEP) -> dict[str, tuple[float, float]]:
    """Per argument, ``(finite difference, gradient)`` of ``<df, J v>`` for a random ``df`` and ``v``.

    ``args`` defaults to random inputs; ``grads`` to ``derive(fn)``, or anything with
    ``evaluate(args, df)``, such as compiled kernels (``grads.compile("numba")``).
    """
    rng = np.random.default_rng(seed)
    args = fn.argument_arrays(args) if args is not None else random_arguments(fn, rng)
    grads = grads if grads is not None else derive(fn)
    df = rng.standard_normal(fn.shapes[fn.name])
    gradients = grads.evaluate(args, df)
    out = {}
    for name in fn.arguments:
        # A unit direction: the step is then the length of the whole perturbation at every size
        # (a standard normal one grows as the square root of the argument's size).
        direction = rng.standard_normal(fn.shapes[name])
        direction /= max(np.linalg.norm(direction), np.finfo(np.float64).tiny)

        def loss(t, name=name, direction=direction):
            return np.sum(df * fn.evaluate({**args, name: args[name] + t * direction}))

        numeric = richardson(lambda h, loss=loss: central(loss, h), step)
        out[name] = (float(numeric), float(np.sum(gradients[name] * direction)))
    return out


def check_gradients(fn: Function | Program, args=None, *, grads=None, seed: int = 0,
                    step: float = RICHARDSON_STEP) -> dict[str, float]:
    """Relative error of each argument's gradient against finite differences (dot-product test).

    ``args`` defaults to random inputs; ``grads`` to ``derive(fn)``. Errors
    around 1e-8 and below mean the gradient is right. Where a gradient is
    exactly zero (terms that cancel) the relative error only measures
    round-off; compare :func:`directional_derivatives` with an absolute
    tolerance there.
    """
    pairs = directional_derivatives(fn, args, grads=grads, seed=seed, step=step)
    return {name: abs(numeric - exact) / max(abs(numeric), abs(exact), np.finfo(np.float64).tiny)
            for name, (numeric, exact) in pairs.items()}

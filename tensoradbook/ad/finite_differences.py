"""Finite differences: the one home of the difference quotients every derivative is checked against.

Plain numpy on plain callables, so that every part of the book uses the same formulas: the
dot-product test of :mod:`tensoradbook.ad.gradcheck` (sec. 5's gradients), the second-order
checks of chapter 07's exercises, and the finite-difference baselines of the inverse accumulation
paper. It imports nothing from the rest of the package, so the two papers' packages, which stand
apart from the language, may use it too.

* :func:`central`: ``(g(h) - g(-h)) / 2h``, error ``O(h**2)``;
* :func:`mixed_central`: ``d/ds d/dt g(t, s)`` from four points, error ``O(h**2)``;
* :func:`richardson`: a difference at ``h`` and ``h / 2`` combined so that the ``h**2`` term cancels
  (error ``O(h**4)``), so that a moderate ``h`` keeps both truncation and round-off small;
* :func:`jacobian`: ``F``'s Jacobian column by column, central or forward (``n + 1`` evaluations).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def central(g: Callable[[float], float], h: float) -> float:
    """``g'(0)`` as ``(g(h) - g(-h)) / 2h``."""
    return (g(h) - g(-h)) / (2 * h)


def mixed_central(g: Callable[[float, float], float], h: float) -> float:
    """``d/ds d/dt g(t, s)`` at 0 from the four points ``(+-h, +-h)``."""
    return sum(t * s * g(t * h, s * h) for t in (1, -1) for s in (1, -1)) / (4 * h * h)


def richardson(difference: Callable[[float], float], h: float) -> float:
    """``(4 D(h / 2) - D(h)) / 3`` for a difference ``D`` whose error is ``c h**2 + O(h**4)``."""
    return (4 * difference(h / 2) - difference(h)) / 3


def jacobian(F: Callable[[np.ndarray], np.ndarray], x, h: float, *, forward: bool = False,
             value: np.ndarray | None = None) -> np.ndarray:
    """The Jacobian of ``F`` at the vector ``x``, one column per coordinate.

    Central differences by default (error ``O(h**2)``, ``2 n`` evaluations); ``forward=True`` gives
    ``(F(x + h e) - F(x)) / h`` (error ``O(h)``, ``n + 1`` evaluations; ``value`` is ``F(x)`` where the
    caller has it already).
    """
    x = np.asarray(x, dtype=np.float64)
    basis = np.eye(len(x))
    if forward:
        value = F(x) if value is None else value
        return np.column_stack([(F(x + h * e) - value) / h for e in basis])
    return np.column_stack([(F(x + h * e) - F(x - h * e)) / (2 * h) for e in basis])


__all__ = ["central", "jacobian", "mixed_central", "richardson"]

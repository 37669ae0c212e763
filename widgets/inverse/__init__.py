"""Widgets for inverse accumulation mode (Pearlmutter & Siskind, arXiv 2411.18786).

* :class:`StepInverse` -- one binary step ``x1 <- h(x1, x2)`` through its
  partials ``a`` and ``b``: the step Jacobian ``J = [[a, b], [0, 1]]`` (eq.
  2.5aa), ``J^T``, ``J^-1 = [[1/a, -b/a], [0, 1]]`` (eq. 2.6f) and ``J^-T``,
  their sparsity, the four flow graphs of Fig. 1, and what happens as ``a``
  approaches 0 (sec. 2: a step is invertible iff ``a != 0``).
* :class:`RegisterMachine` -- the program of Fig. 2 (``r1 <- p(r1, r2); r3 <-
  q(r1, r3)``) swept in each of the four modes (eqs. 2.3a/b, 2.4a/b) one step
  at a time, with the registers, the derivative registers and the tape.
* :class:`LumpExplorer` -- a program with temporaries cut into lumps along a
  topological order of its vertices (sec. 3, Fig. 4): live values per cut,
  the lumps and their blocks ``A``, ``B`` (eqs. 2.6g/h).
* :class:`NewtonDemo` -- Newton's method for ``F(x) = 0`` with one
  reverse-inverse sweep per iteration (sec. 1) against Newton with a
  finite-difference Jacobian, with a convergence plot.

The sweeps, lumps and Newton iterations come from :mod:`tensoradbook.inverse`;
the widgets draw them. Two things are computed here: the closed forms of eq.
2.6f along the ``a`` axis (the curves of the ``a -> 0`` plot, whose markers
are the core's values), and the baseline :func:`tensoradbook.inverse.finite_difference_newton`.

One module per widget (:mod:`.step_inverse`, :mod:`.register_machine`, :mod:`.lump_explorer`,
:mod:`.newton_demo`); what they share is in :mod:`.shared`.
"""

from .lump_explorer import LUMP_PRESETS, LumpExplorer
from .newton_demo import NEWTON_MAX_ITER, NEWTON_PRESETS, NEWTON_TOL, NewtonDemo
from .register_machine import FIG2_PRESETS, MODE_NAMES, RegisterMachine
from .shared import parse_vector
from .step_inverse import PARTIAL_LIMIT, StepInverse

__all__ = [
    "FIG2_PRESETS", "LUMP_PRESETS", "MODE_NAMES", "NEWTON_MAX_ITER", "NEWTON_PRESETS", "NEWTON_TOL", "PARTIAL_LIMIT",
    "LumpExplorer", "NewtonDemo", "RegisterMachine", "StepInverse", "parse_vector",
]

"""Widgets for Naumann, "Matrix-Free Jacobian Chaining", drawn from :mod:`tensoradbook.chaining`.

* :class:`TwoFactorExplorer` -- sec. 3, ``q = 2``: the eight schedules of
  ``F_2 o F_1`` from the proof of Theorem 3.1 as bars, the optimum
  highlighted, with presets for the paper's five cases;
* :class:`ChainTable` -- the dynamic programme of eq. 3.7 (eq. 3.8 and the
  paper's single-value rule under a tape bound, sec. 4) filled diagonal by
  diagonal, as the reference implementation prints it (sec. 5); selecting a
  cell ``F'_{j,i}`` lists the candidates it compared;
* :class:`ScheduleView` -- the chosen schedule as a tree (tangents, adjoints,
  dense products), adjoint sweeps coloured by their tape, beside the
  homogeneous tangent, homogeneous adjoint and optimal preaccumulation
  baselines (sec. 5);
* :class:`MemoryBudget` -- the least fma against the tape bound ``Mbar`` as a
  staircase (sec. 4): the paper's single-value rule against the exact optimum
  (at ``Mbar = 55`` in sec. 4 the rule pays 120 fma where 64 suffice).

Costs, tapes and schedules all come from the core; the widgets only draw.
Notation is the core's ASCII one: ``F3dot`` the tangent of ``F_3``, ``F2bar``
the adjoint of ``F_2``, ``I4`` an identity, juxtaposed brackets a dense product.

One module per widget (:mod:`.two_factor`, :mod:`.chain_table`, :mod:`.schedule_view`,
:mod:`.memory_budget`); their shared controls are in :mod:`.controls`, presets and formatting in
:mod:`.shared`.
"""

from .two_factor import TwoFactorExplorer
from .chain_table import ChainTable
from .schedule_view import ScheduleView
from .memory_budget import MemoryBudget
from .shared import CHAIN_PRESETS, NOT_MONOTONE, SECTION_4, SECTION_5, SECTION_6, TWO_FACTOR_PRESETS

__all__ = [
    "ChainTable",
    "MemoryBudget",
    "ScheduleView",
    "TwoFactorExplorer",
    "CHAIN_PRESETS",
    "NOT_MONOTONE",
    "SECTION_4",
    "SECTION_5",
    "SECTION_6",
    "TWO_FACTOR_PRESETS",
]

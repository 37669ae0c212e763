"""Matrix-free Jacobian chaining (Naumann, "Matrix-Free Jacobian Chaining").

The Jacobian of a chain ``F = F_q o ... o F_1`` (``F_i: R^{n_i} -> R^{m_i}``,
``n_{i+1} = m_i``, eq. 1.2) is accumulated from the tangents and adjoints of
the factors, each given as a DAG with ``|E_i|`` edges (sec. 2). Costs are fused
multiply-adds (fma); the primal and the local partials are not counted:

* tangent of ``F_i`` on a matrix with ``c`` columns: ``c |E_i|`` (eq. 2.5);
  adjoint on ``r`` rows: ``r |E_i|`` (eq. 2.6), which needs the tape, ``|E_i|``;
* preaccumulation of ``F'_j``: tangent ``n_j |E_j|`` or adjoint ``m_j |E_j|``;
* ``F'_{j,i}`` split at ``k`` (``F'_{j,i} = F'_{j,k+1} F'_{k,i}``, sec. 3):
  ``MxM`` dense product, ``m_j m_k n_i``; ``GxM`` tangent of ``F_j..F_{k+1}`` on
  ``F'_{k,i}``, ``n_i (|E_{k+1}| + ... + |E_j|)``; ``MxG`` adjoint of
  ``F_k..F_i`` seeded with ``F'_{j,k+1}``, ``m_j (|E_i| + ... + |E_k|)``.

A :class:`Schedule` is a tree of these steps; there are 2, 8, 52, 396, 3332,
... of them for q = 1, 2, ... (:func:`schedule_count`, :func:`schedules`;
:func:`two_factor_schedules` gives sec. 3's eight for q = 2). Its tape
``memory`` follows the paper's accounting (sec. 4-5, the "R1" rule of the
notes): tangent preaccumulation 0, adjoint preaccumulation ``|E_j|``, MxM
``max(M_left, M_right)``, GxM ``M_right``, MxG ``M_left + |E_i| + ... + |E_k|``
(an MxG continues the adjoint sweep that produced its seed). ``sweep_tape`` is
the largest single adjoint sweep, what :mod:`tensoradbook.chaining.programs`
records when it runs a schedule.

:func:`optimize` solves eq. 3.7 (unlimited tape) by dynamic programming in
O(q^3), vectorised over each diagonal of the table: only MxM needs every split;
with prefix sums ``P`` of ``|E|`` the best GxM and MxG splits are running minima
(q = 500 in well under a second). Under a tape bound ``Mbar`` (sec. 4):

* ``rule="paper"``: the single-value programme the paper's numbers come from
  (eq. 3.8 with the tape accounting above). Each cell keeps one fma-minimal
  solution; a candidate with ``M > Mbar`` is dropped. Ties: strict ``<``, ``k``
  ascending, within ``k`` MxM, GxM, MxG; preaccumulation ties go to the
  tangent. A heuristic: a cheaper sub-solution may use more tape, so optimal
  substructure fails, and the cost is not even monotone in ``Mbar``.
* ``rule="exact"`` (default): the same accounting, solved exactly. ``M`` only
  grows through max, identity and sums, so every cell keeps its Pareto front of
  ``(fma, M)`` and the optimum is the cheapest entry of the last cell (checked
  against :func:`brute_force`). ``prune=True`` drops entries that cannot be
  part of an optimal schedule, for long chains (see :func:`optimize`). Without a bound each cell
  keeps the lexicographic minimum of ``(fma, M)``, which is exact there.
* ``rule="local"``: eq. 3.8 as printed: an adjoint sweep (preaccumulation or
  MxG) is allowed if its own tape, ``sweep_tape``, is at most ``Mbar``; the
  programme is exact for that condition.

Notation (:attr:`Plan.notation`, ``str(plan)``), ASCII for the paper's:
``F3dot`` is the tangent of ``F_3`` applied to the matrix on its right,
``F2bar`` the adjoint of ``F_2`` applied to the matrix on its left, ``I4`` the
4x4 identity, and two parenthesised matrices side by side are a dense product.
So ``(F3dot I1)((I1 F2bar) F1bar)`` is the paper's sec. 5 optimum
``(Ḟ_3 I_1)((I_1 F̄_2) F̄_1)``. :meth:`Plan.table` prints the cells as the
reference implementation does (``F_{3,1}: MxM(2); fma=56; M=43;``) and
:func:`reference_report` its whole output.

Baselines (:func:`baselines`; also :func:`tangent`, :func:`adjoint`,
:func:`preaccumulation`): homogeneous tangent ``n_1 sum |E|``, homogeneous
adjoint ``m_q sum |E|`` (tape ``sum |E|``), optimal preaccumulation (each
factor in its cheaper mode, then the classical dense bracketing of eq. 1.1).

Integers: costs are Python ints. The vectorised programme runs in numpy int64
when every candidate provably stays below 2^62 (at most ``2q`` steps, each at
most ``max(m^2 n, max(m, n) sum |E|)``), otherwise on Python ints (slower).

The package: :mod:`.chain` (factors, operations, bounds), :mod:`.schedules`, :mod:`.table` and
:mod:`.bounded` (the two dynamic programming tables), :mod:`.plan`, :mod:`.optimize` (entry points and
reports) and :mod:`.programs` (elemental programs that check the cost model). It stands apart from the
rest of tensoradbook.
"""

from .chain import ADJOINT, Chain, Factor, GXM, MXG, MXM, RULES, TANGENT, memory_bound
from .schedules import Schedule, TWO_FACTOR_SCHEDULES, own_cost_factors, schedule_count, schedules, two_factor_schedules
from .table import Candidate, Cell
from .plan import Plan
from .optimize import (
    adjoint, baselines, brute_force, optimize, paper_rule_pieces, preaccumulation, reference_report, tangent,
)

__all__ = [
    "ADJOINT",
    "GXM",
    "MXG",
    "MXM",
    "RULES",
    "TANGENT",
    "TWO_FACTOR_SCHEDULES",
    "Candidate",
    "Cell",
    "Chain",
    "Factor",
    "Plan",
    "Schedule",
    "adjoint",
    "baselines",
    "brute_force",
    "memory_bound",
    "own_cost_factors",
    "optimize",
    "paper_rule_pieces",
    "preaccumulation",
    "reference_report",
    "schedule_count",
    "schedules",
    "tangent",
    "two_factor_schedules",
]

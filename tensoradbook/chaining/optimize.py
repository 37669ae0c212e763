"""The entry points: :func:`optimize` (the exact optimum, the paper's rule or the local rule, with
or without a memory bound), :func:`brute_force`, the baselines (tangent, adjoint, preaccumulation)
and the reports that compare them.
"""

from __future__ import annotations

import numpy as np
from ..integer.matrix import shown

from .chain import ADJOINT, Chain, GXM, MXG, MXM, RULES, TANGENT, _chain, memory_bound
from .schedules import Schedule, schedules
from .table import _SingleValueTable
from .bounded import _ParetoTable
from .plan import Plan


def _table_bound(chain: Chain, bound: int | None) -> int | None:
    """The bound the tables work with: at most ``sum |E|``, which no tape exceeds, so that any bound
    (2**63 included) gives the same plan and the tables' int64 keys stay in range."""
    return None if bound is None else min(bound, chain.total_edges)


def optimize(chain: Chain, memory: int | None = None, rule: str = "exact", prune: bool = False) -> Plan:
    """The cheapest schedule with tape at most ``memory`` (None: unlimited), by dynamic programming.

    ``rule``: "exact" (default; Pareto fronts, optimal under the paper's tape
    accounting), "paper" (the paper's single-value programme, its tables and
    ties), "local" (eq. 3.8 as printed). See the module docstring.

    ``prune`` (exact rule with a bound): keep only front entries that can be
    part of an optimal schedule (their fma plus a lower bound for the rest of
    the chain at most the paper rule's feasible cost). The optimum is the same
    and long chains are much faster (benchmarks/chaining.py), but cells then
    show partial fronts, possibly empty ones. Without it every cell holds its
    whole Pareto front within the bound.
    """
    chain, bound = _chain(chain), memory_bound(memory)
    if not isinstance(rule, str) or rule not in RULES:
        raise ValueError(f"unknown rule {shown(rule)}; expected one of {RULES}")
    if not isinstance(prune, (bool, np.bool_)):
        raise ValueError(f"prune must be True or False, got {shown(prune)}")
    if rule == "exact" and bound is not None:
        table = _ParetoTable(chain, _table_bound(chain, bound), prune)
    else:
        table = _SingleValueTable(chain, _table_bound(chain, bound), local=rule == "local",
                                  lexicographic=rule == "exact")
    return Plan(chain, table.schedule(chain.q, 1), "dynamic programming", rule, bound, table)


def brute_force(chain: Chain, memory: int | None = None, rule: str = "exact") -> Plan:
    """The optimum by enumerating every schedule (``q <= 7``): least fma, then least tape.

    ``rule`` "exact" bounds the paper's tape accounting, "local" every single
    adjoint sweep ("paper" is a heuristic, not a feasibility notion).
    """
    chain, bound = _chain(chain), memory_bound(memory)
    if not isinstance(rule, str) or rule not in ("exact", "local"):
        raise ValueError(f"brute force takes rule 'exact' or 'local', got {shown(rule)}")

    def tape(s: Schedule) -> int:
        return s.sweep_tape if rule == "local" else s.memory

    feasible = [s for s in schedules(chain) if bound is None or tape(s) <= bound]
    best = min(feasible, key=lambda s: (s.fma, s.memory))
    return Plan(chain, best, "brute force", rule, bound)


def tangent(chain: Chain, memory: int | None = None) -> Plan:
    """Homogeneous tangent mode ``F_q dot ... F_2 dot (F_1 dot I)``: ``n_1 sum |E|`` fma, no tape."""
    chain = _chain(chain)
    schedule = Schedule.make(chain, TANGENT, 1, 1)
    if chain.q > 1:
        schedule = Schedule.make(chain, GXM, chain.q, 1, 1, right=schedule)
    return Plan(chain, schedule, "homogeneous tangent", "exact", memory_bound(memory))


def adjoint(chain: Chain, memory: int | None = None) -> Plan:
    """Homogeneous adjoint mode ``(I F_q bar) F_{q-1} bar ... F_1 bar``: ``m_q sum |E|`` fma, tape ``sum |E|``.

    Under a smaller ``memory`` bound the plan is returned with ``feasible`` False.
    """
    chain = _chain(chain)
    schedule = Schedule.make(chain, ADJOINT, chain.q, chain.q)
    if chain.q > 1:
        schedule = Schedule.make(chain, MXG, chain.q, 1, chain.q - 1, left=schedule)
    return Plan(chain, schedule, "homogeneous adjoint", "exact", memory_bound(memory))


def preaccumulation(chain: Chain, memory: int | None = None) -> Plan:
    """Every ``F'_i`` in its cheaper mode (adjoint only if its tape fits), then the best dense bracketing (eq. 1.1)."""
    chain, bound = _chain(chain), memory_bound(memory)
    table = _SingleValueTable(chain, _table_bound(chain, bound), local=False, lexicographic=False, ops=(MXM,))
    return Plan(chain, table.schedule(chain.q, 1), "optimal preaccumulation", "paper", bound, table)


def baselines(chain: Chain, memory: int | None = None) -> dict[str, Plan]:
    """``{"tangent": ..., "adjoint": ..., "preaccumulation": ...}`` (check ``feasible`` under a bound)."""
    return {"tangent": tangent(chain, memory), "adjoint": adjoint(chain, memory),
            "preaccumulation": preaccumulation(chain, memory)}


def reference_report(chain: Chain, memory: int | None = None, rule: str = "paper") -> str:
    """What the reference implementation's ``solve.exe FILE Mbar`` prints (sec. 5).

    ``memory`` None means unlimited (the paper passes ``sum |E|``).
    """
    chain = _chain(chain)
    plan = optimize(chain, memory, rule)
    base = baselines(chain, memory)
    pre = base["preaccumulation"].fma_by_op()
    leaves = pre[TANGENT] + pre[ADJOINT]
    lines = [f"G_{{{index}}}=[ {f.m} {f.n} {f.edges} ]" for index, f in enumerate(chain, start=1)]
    lines += [plan.table(all_cells=True),
              f"Optimal Cost={plan.fma}",
              f"Memory Requirement={plan.memory}",
              "Cost of",
              f"homogeneous tangent mode={base['tangent'].fma}",
              f"homogeneous adjoint mode={base['adjoint'].fma}",
              f"optimal preaccumulation={leaves}+{pre[MXM]}={leaves + pre[MXM]}"]
    return "\n".join(lines)


def paper_rule_pieces(chain: Chain) -> list[tuple[int, int, Plan]]:
    """The paper's single-value programme (``rule="paper"``) at every tape bound ``0 .. sum |E|``, as
    ``(low, high, plan)`` pieces (ascending) on which its plan does not change: its staircase, which
    unlike the exact optimum's can rise as the bound grows (sec. 4).

    The rule compares tapes only where it drops adjoint candidates (adjoint
    preaccumulation and ``MxG``, sec. 4). A run at bound ``high`` therefore
    makes the same choices at every bound from the largest such candidate tape
    that fits (``low``) up to ``high``; the next piece ends at ``low - 1``.
    """
    chain = _chain(chain)
    pieces, high = [], chain.total_edges
    while high >= 0:
        plan = optimize(chain, high, rule="paper")
        low = max((c.memory for j in range(1, chain.q + 1) for i in range(1, j + 1)
                   for c in plan.candidates(j, i) if c.op in (ADJOINT, MXG) and c.memory <= high), default=0)
        if pieces and pieces[0][2].notation == plan.notation:  # the same plan: one piece
            low_high = (low, pieces[0][1])
            pieces[0] = (*low_high, plan)
        else:
            pieces.insert(0, (low, high, plan))
        high = low - 1
    return pieces

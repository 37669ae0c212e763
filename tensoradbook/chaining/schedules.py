"""Schedules (sec. 3): bracketings of the chain with an operation per node (tangent or adjoint
preaccumulation of a factor; MxM, GxM or MxG to join two), their fma costs and tape sizes, the
eight schedules of two factors (the notes' table a..h), and every schedule by enumeration.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..integer.matrix import as_int, shown

from .chain import (
    ADJOINT, BRUTE_FORCE_MAX_Q, Chain, GXM, LEAF_OPS, MXG, MXM, SCHEDULE_COUNT_MAX_Q, SPLIT_OPS, TANGENT,
    _chain, _index,
)


# --------------------------------------------------------------------------- schedules


def _label(op: str, k: int) -> str:
    """The reference implementation prints preaccumulation as a join at split 0."""
    return {TANGENT: "GxM(0)", ADJOINT: "MxG(0)"}.get(op, f"{op}({k})")


def own_cost_factors(chain: Chain, op: str, j: int, i: int, k: int = 0) -> tuple[tuple[str, tuple[int, ...], int], ...]:
    """The factors whose product is the fma of the step ``op`` on ``F'_{j,i}`` (split ``k``) itself, secs. 2-3.

    Each is ``(symbol, subscripts, value)``: ``("n", (i,), n_i)`` or ``("m", (j,), m_j)`` for a factor's
    input or output size, ``("E", (first, last), |E_first| + ... + |E_last|)`` for the edges a tangent
    or adjoint sweep runs over. Preaccumulation costs ``n_j |E_j|`` (tangent) or ``m_j |E_j|`` (adjoint),
    a dense product ``m_j m_k n_i``, a tangent sweep over ``F'_{k,i}`` ``n_i (|E_{k+1}| + ... + |E_j|)``
    and an adjoint sweep over ``F'_{j,k+1}`` ``m_j (|E_i| + ... + |E_k|)``.
    """
    if op in LEAF_OPS:
        f = chain.factor(j)
        return (("n", (j,), f.n) if op == TANGENT else ("m", (j,), f.m)), ("E", (j, j), f.edges)
    if op == MXM:
        return ("m", (j,), chain.factor(j).m), ("m", (k,), chain.factor(k).m), ("n", (i,), chain.factor(i).n)
    if op == GXM:
        return ("n", (i,), chain.factor(i).n), ("E", (k + 1, j), chain.edge_sum(k + 1, j))
    return ("m", (j,), chain.factor(j).m), ("E", (i, k), chain.edge_sum(i, k))


def _own_cost(chain: Chain, op: str, j: int, i: int, k: int) -> int:
    return math.prod(value for *_, value in own_cost_factors(chain, op, j, i, k))


def _check_split(op: str, j: int, i: int, k: int, left, right) -> None:
    """Refuses a split step ``op(k)`` on ``F'_{j,i}`` whose operands are not the subchains it multiplies."""
    if op not in SPLIT_OPS:
        raise ValueError(f"unknown operation {op!r}; expected one of {LEAF_OPS + SPLIT_OPS}")
    if not i <= k < j:
        raise ValueError(f"{op}({k}) on F'_{{{j},{i}}}: the split needs {i} <= k < {j}")
    need_left, need_right = op in (MXM, MXG), op in (MXM, GXM)
    for child, needed, cell in ((left, need_left, (j, k + 1)), (right, need_right, (k, i))):
        if child is not None and not isinstance(child, Schedule):
            raise ValueError(f"{op}({k}) on F'_{{{j},{i}}}: an operand must be a Schedule, got {shown(child)}")
        if needed and (child is None or (child.j, child.i) != cell):
            raise ValueError(f"{op}({k}) on F'_{{{j},{i}}} needs F'_{{{cell[0]},{cell[1]}}} as operand")
        if not needed and child is not None:
            raise ValueError(f"{op}({k}) on F'_{{{j},{i}}} takes no operand F'_{{{child.j},{child.i}}}")


@dataclass(frozen=True, eq=False)
class Schedule:
    """One way to accumulate ``F'_{j,i} = F'_j ... F'_i``: a tree (two are alike if their ``notation`` is).

    Leaves (``j == i``) preaccumulate ``F'_j`` (``op`` "tangent" or "adjoint",
    ``k = 0`` as the paper prints). Inner nodes split at ``k``: "MxM" multiplies
    ``left = F'_{j,k+1}`` by ``right = F'_{k,i}``; "GxM" applies the tangent of
    ``F_j..F_{k+1}`` to ``right``; "MxG" the adjoint of ``F_k..F_i`` to ``left``.
    ``cost`` is this step's fma, ``fma`` the subtree's; ``memory`` is the tape
    under the paper's accounting (module docstring), ``sweep_tape`` the largest
    single adjoint sweep (what the local rule bounds, and what an execution records).
    """

    op: str
    j: int
    i: int
    k: int
    cost: int
    fma: int
    memory: int
    sweep_tape: int
    left: Schedule | None = None
    right: Schedule | None = None

    @classmethod
    def make(cls, chain: Chain, op: str, j: int, i: int, k: int = 0,
             left: Schedule | None = None, right: Schedule | None = None) -> Schedule:
        """Build a node; its cost follows sec. 2-4 (independently of the dynamic programme)."""
        if not isinstance(chain, Chain):
            raise ValueError(f"Schedule.make: chain must be a Chain, got {shown(chain)}")
        j, i, k = _index(j, "Schedule.make: j"), _index(i, "Schedule.make: i"), _index(k, "Schedule.make: k")
        if not 1 <= i <= j <= chain.q:
            raise ValueError(f"F'_{{{j},{i}}} is not a subchain: need 1 <= i <= j <= {chain.q}")
        if op in LEAF_OPS:
            if j != i or left is not None or right is not None:
                raise ValueError(f"{op} preaccumulation is a leaf F'_{{{j},{j}}}, got F'_{{{j},{i}}}")
            cost, edges = _own_cost(chain, op, j, i, 0), chain.factor(j).edges
            return cls(op, j, i, 0, cost, cost, *((0, 0) if op == TANGENT else (edges, edges)))
        _check_split(op, j, i, k, left, right)
        cost = _own_cost(chain, op, j, i, k)
        if op == MXM:
            memory = max(left.memory, right.memory)
            sweep = max(left.sweep_tape, right.sweep_tape)
            fma = left.fma + right.fma + cost
        elif op == GXM:
            memory, sweep, fma = right.memory, right.sweep_tape, right.fma + cost
        else:  # the adjoint sweep over F'_{k,i} tapes its edges
            swept = chain.edge_sum(i, k)
            memory, sweep, fma = left.memory + swept, max(left.sweep_tape, swept), left.fma + cost
        return cls(op, j, i, k, cost, fma, memory, sweep, left, right)

    @property
    def label(self) -> str:
        """The reference implementation's code: ``GxM(0)``/``MxG(0)`` for preaccumulation."""
        return _label(self.op, self.k)

    def nodes(self) -> list[Schedule]:
        """Every step in an order that can run it: operands first (``right`` before ``left``)."""
        order, stack = [], [(self, False)]
        while stack:
            node, expanded = stack.pop()
            if expanded:
                order.append(node)
                continue
            stack.append((node, True))
            for child in (node.left, node.right):  # popped in reverse: right first
                if child is not None:
                    stack.append((child, False))
        return order

    def notation(self, chain: Chain) -> str:
        """The schedule in the module's ASCII notation (needs the chain for the identities' sizes)."""
        text: dict[int, str] = {}
        for node in self.nodes():
            if node.op == TANGENT:
                text[id(node)] = f"(F{node.j}dot I{chain.factor(node.j).n})"
            elif node.op == ADJOINT:
                text[id(node)] = f"(I{chain.factor(node.j).m} F{node.j}bar)"
            elif node.op == GXM:
                dots = " ".join(f"F{v}dot" for v in range(node.j, node.k, -1))
                text[id(node)] = f"({dots} {text[id(node.right)]})"
            elif node.op == MXG:
                bars = " ".join(f"F{v}bar" for v in range(node.k, node.i - 1, -1))
                text[id(node)] = f"({text[id(node.left)]} {bars})"
            else:
                text[id(node)] = f"({text[id(node.left)]}{text[id(node.right)]})"
        return text[id(self)][1:-1]

    def line(self) -> str:
        """``F_{j,i}: OP(k); fma=...; M=...;`` as the reference implementation prints a cell."""
        return f"F_{{{self.j},{self.i}}}: {self.label}; fma={self.fma}; M={self.memory};"

    def fma_by_op(self) -> dict[str, int]:
        """fma summed per kind of step (tangent, adjoint, MxM, GxM, MxG)."""
        totals = dict.fromkeys(LEAF_OPS + SPLIT_OPS, 0)
        for node in self.nodes():
            totals[node.op] += node.cost
        return totals

    def __repr__(self) -> str:
        return f"<Schedule F'_{{{self.j},{self.i}}} {self.label}: fma={self.fma}, M={self.memory}>"


def _schedule_lists(chain: Chain) -> dict[tuple[int, int], list[Schedule]]:
    """Every schedule of every subchain (memoised per cell, shorter cells first)."""
    table: dict[tuple[int, int], list[Schedule]] = {}
    for j in range(1, chain.q + 1):
        table[j, j] = [Schedule.make(chain, op, j, j) for op in LEAF_OPS]
    for length in range(1, chain.q):
        for i in range(1, chain.q - length + 1):
            j, trees = i + length, []
            for k in range(i, j):
                lefts, rights = table[j, k + 1], table[k, i]
                trees += [Schedule.make(chain, MXM, j, i, k, a, b) for a in lefts for b in rights]
                trees += [Schedule.make(chain, GXM, j, i, k, right=b) for b in rights]
                trees += [Schedule.make(chain, MXG, j, i, k, left=a) for a in lefts]
            table[j, i] = trees
    return table


def schedules(chain: Chain) -> list[Schedule]:
    """Every schedule of the whole chain (2, 8, 52, 396, 3332, ... for q = 1, 2, ...)."""
    chain = _chain(chain)
    if chain.q > BRUTE_FORCE_MAX_Q:
        raise ValueError(f"q = {chain.q} has {schedule_count(chain.q):,} schedules; "
                         f"enumeration stops at q = {BRUTE_FORCE_MAX_Q}")
    return _schedule_lists(chain)[chain.q, 1]


def schedule_count(q: int) -> int:
    """How many schedules a chain of length ``q <= SCHEDULE_COUNT_MAX_Q`` has (search space of sec. 3)."""
    q = as_int(q, "schedule_count: q", minimum=1, maximum=SCHEDULE_COUNT_MAX_Q)
    count = [0] * (q + 1)  # count[length]: schedules of a subchain with that many factors
    count[1] = 2
    for length in range(2, q + 1):
        count[length] = sum(count[a] * count[b] + count[a] + count[b]
                            for a, b in ((s, length - s) for s in range(1, length)))
    return count[q]


# The q = 2 schedules of sec. 3 in the paper's order a..h (the notes' table).
TWO_FACTOR_SCHEDULES = {
    "a": (GXM, None, TANGENT),     # F2dot (F1dot I)
    "b": (GXM, None, ADJOINT),     # F2dot (I F1bar)
    "c": (MXG, ADJOINT, None),     # (I F2bar) F1bar
    "d": (MXG, TANGENT, None),     # (F2dot I) F1bar
    "e": (MXM, TANGENT, ADJOINT),  # (F2dot I)(I F1bar)
    "f": (MXM, ADJOINT, ADJOINT),  # (I F2bar)(I F1bar)
    "g": (MXM, ADJOINT, TANGENT),  # (I F2bar)(F1dot I)
    "h": (MXM, TANGENT, TANGENT),  # (F2dot I)(F1dot I)
}


def two_factor_schedules(n1: int, m1: int, m2: int, e1: int, e2: int) -> dict[str, Schedule]:
    """The eight schedules of ``F_2 o F_1`` (sec. 3, example) as ``{"a": ..., ..., "h": ...}``.

    ``F_1: R^{n1} -> R^{m1}`` with ``e1`` edges, ``F_2: R^{m1} -> R^{m2}`` with
    ``e2``. Use ``.fma``, ``.memory`` and ``.notation(chain)`` of each; the
    chain is ``Chain([(m1, n1, e1), (m2, m1, e2)])``.
    """
    chain = Chain([(m1, n1, e1), (m2, m1, e2)])
    out = {}
    for letter, (op, second, first) in TWO_FACTOR_SCHEDULES.items():
        left = Schedule.make(chain, second, 2, 2) if second else None
        right = Schedule.make(chain, first, 1, 1) if first else None
        out[letter] = Schedule.make(chain, op, 2, 1, 1, left, right)
    return out

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
"""

from __future__ import annotations

import itertools
import numbers
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

import numpy as np

from ..integer.matrix import as_int, shown

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
    "optimize",
    "paper_rule_pieces",
    "preaccumulation",
    "reference_report",
    "schedule_count",
    "schedules",
    "tangent",
    "two_factor_schedules",
]

TANGENT, ADJOINT = "tangent", "adjoint"  # preaccumulation of one factor
MXM, GXM, MXG = "MxM", "GxM", "MxG"  # the three ways to join F'_{j,k+1} and F'_{k,i}
SPLIT_OPS = (MXM, GXM, MXG)  # the paper's tie order within one split k
LEAF_OPS = (TANGENT, ADJOINT)  # tie goes to the tangent
RULES = ("exact", "paper", "local")
BRUTE_FORCE_MAX_Q = 7  # 281,764 schedules; q = 8 has 2,740,572
SCHEDULE_COUNT_MAX_Q = 1000  # the count's recurrence is quadratic in q on big ints: ~1 s at q = 1000
PRUNE_LEVELS = 16  # free-tape levels of the pruning bound


# --------------------------------------------------------------------------- chains


@dataclass(frozen=True)
class Factor:
    """One elemental function ``F_i: R^n -> R^m`` whose DAG has ``edges`` edges."""

    m: int  # rows of F'_i (outputs)
    n: int  # columns of F'_i (inputs)
    edges: int  # |E_i|: fma per tangent column or adjoint row, and the tape size


def _positive(value, what: str) -> int:
    return as_int(value, what, minimum=1)


def _index(value, what: str) -> int:
    """An integer argument; a plain int (every internal call) passes without the full check."""
    return value if type(value) is int else as_int(value, what)


def _factor(entry, where: str) -> Factor:
    if isinstance(entry, Factor):
        entry = (entry.m, entry.n, entry.edges)
    try:
        m, n, edges = entry
    except (TypeError, ValueError):
        raise ValueError(f"{where}: expected (m, n, |E|), got {shown(entry)}") from None
    return Factor(_positive(m, f"{where}: m (rows)"), _positive(n, f"{where}: n (columns)"),
                  _positive(edges, f"{where}: |E| (edges)"))


class Chain:
    """``F_q o ... o F_1`` given by ``(m_i, n_i, |E_i|)`` per factor, ``F_1`` first.

    Factors are numbered from 1 as in the paper; ``n_{i+1} = m_i`` is checked.
    """

    def __init__(self, factors: Iterable, *, _where=None):
        where = _where or (lambda index: f"factor F_{index}")
        if isinstance(factors, (str, bytes)) or not isinstance(factors, Iterable):
            hint = "; Chain.parse reads a chain file's text" if isinstance(factors, str) else ""
            raise ValueError(f"Chain takes a sequence of (m, n, |E|) triples, F_1 first, got {shown(factors)}{hint}")
        parsed = [_factor(entry, where(index)) for index, entry in enumerate(factors, start=1)]
        if not parsed:
            raise ValueError("a chain needs at least one factor")
        for index in range(2, len(parsed) + 1):
            here, before = parsed[index - 1], parsed[index - 2]
            if here.n != before.m:
                raise ValueError(f"{where(index)}: n = {here.n} columns, but F_{index - 1} has "
                                 f"m = {before.m} rows (the chain needs n_{index} = m_{index - 1})")
        self.factors: tuple[Factor, ...] = tuple(parsed)
        self._prefix = tuple(itertools.accumulate((f.edges for f in parsed), initial=0))

    @classmethod
    def parse(cls, text: str) -> Chain:
        """Read the reference implementation's file: ``q``, then ``q`` lines ``m n |E|``.

        Blank lines are skipped; numbers are ASCII digits; errors name the line.
        """
        if not isinstance(text, str):
            raise ValueError(f"Chain.parse reads a chain file's text (a str), got {shown(text)}")
        lines = [(number, line.split()) for number, line in enumerate(text.splitlines(), start=1)
                 if line.strip()]
        if not lines:
            raise ValueError("empty chain file: expected q on the first line")
        first_number, first = lines[0]
        if len(first) != 1:
            raise ValueError(f"line {first_number}: expected the chain length q alone, got {' '.join(first)!r}")
        q = _integer_field(first[0], first_number, "q")
        if q < 1:
            raise ValueError(f"line {first_number}: q must be at least 1, got {q}")
        rows = lines[1:]
        if len(rows) != q:
            raise ValueError(f"line {first_number} says q = {q}, but {len(rows)} factor line(s) follow")
        entries = []
        for number, fields in rows:
            if len(fields) != 3:
                raise ValueError(f"line {number}: expected three integers 'm n |E|', got {' '.join(fields)!r}")
            entries.append(tuple(_integer_field(field, number, name)
                                 for field, name in zip(fields, ("m", "n", "|E|"))))
        line_of = {index: number for index, (number, _) in enumerate(rows, start=1)}
        return cls(entries, _where=lambda index: f"line {line_of[index]} (factor F_{index})")

    @classmethod
    def random(cls, q: int, seed: int | None = 0, max_size: int | None = None) -> Chain:
        """A chain from the paper's generator (sec. 5, Table 1).

        ``m, n ~ U{1..max_size}`` (default ``max_size = q``) and
        ``|E| ~ U{m + n .. (m + n)^2}``, from ``random.Random(seed)``.
        """
        q = _positive(q, "q")
        size = q if max_size is None else _positive(max_size, "max_size")
        if seed is not None:
            seed = as_int(seed, "seed (an integer, or None for a fresh one)")
        rng = random.Random(seed)
        n = rng.randint(1, size)
        factors = []
        for _ in range(q):
            m = rng.randint(1, size)
            factors.append((m, n, rng.randint(m + n, (m + n) ** 2)))
            n = m
        return cls(factors)

    @property
    def q(self) -> int:
        return len(self.factors)

    def factor(self, index: int) -> Factor:
        """``F_index``, counted from 1."""
        index = _index(index, "factor index")
        if not 1 <= index <= self.q:
            raise ValueError(f"factor index {index} is outside 1..{self.q}")
        return self.factors[index - 1]

    def edge_sum(self, first: int, last: int) -> int:
        """``|E_first| + ... + |E_last|`` (1-based, inclusive), the tape of that adjoint sweep; 0 if
        ``first = last + 1``."""
        first, last = _index(first, "edge_sum: first"), _index(last, "edge_sum: last")
        if not 1 <= first <= last + 1 <= self.q + 1:
            raise ValueError(f"edge_sum({first}, {last}) needs 1 <= first <= last + 1 <= {self.q + 1}")
        return self._prefix[last] - self._prefix[first - 1]

    @property
    def total_edges(self) -> int:
        return self._prefix[-1]

    def to_text(self) -> str:
        """The chain in the reference implementation's file format (see :meth:`parse`)."""
        return "\n".join([str(self.q)] + [f"{f.m} {f.n} {f.edges}" for f in self.factors]) + "\n"

    def __len__(self) -> int:
        return self.q

    def __iter__(self) -> Iterator[Factor]:
        return iter(self.factors)

    def __eq__(self, other) -> bool:
        return isinstance(other, Chain) and self.factors == other.factors

    def __hash__(self) -> int:
        return hash(self.factors)

    def __repr__(self) -> str:
        return f"Chain({[(f.m, f.n, f.edges) for f in self.factors]})"

    def _fits_int64(self) -> bool:
        big_m = max(max(f.m for f in self.factors), max(f.n for f in self.factors))
        largest_step = max(big_m ** 3, big_m * self.total_edges)
        return 2 * (2 * self.q) * largest_step < 2 ** 62


def _integer_field(text: str, line: int, name: str) -> int:
    # int() also reads other scripts' digits ('١٢') and underscores ('1_000'); the file format is ASCII.
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise ValueError(f"line {line}: {name} must be an integer, got {text!r} (write it in ASCII digits 0-9)")
    try:
        return int(text)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits())
        raise ValueError(f"line {line}: {name} has {len(text)} digits, too many to read") from None


# --------------------------------------------------------------------------- schedules


def _label(op: str, k: int) -> str:
    """The reference implementation prints preaccumulation as a join at split 0."""
    return {TANGENT: "GxM(0)", ADJOINT: "MxG(0)"}.get(op, f"{op}({k})")


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
            f = chain.factor(j)
            if op == TANGENT:
                return cls(op, j, i, 0, f.n * f.edges, f.n * f.edges, 0, 0)
            return cls(op, j, i, 0, f.m * f.edges, f.m * f.edges, f.edges, f.edges)
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
        if op == MXM:
            cost = chain.factor(j).m * chain.factor(k).m * chain.factor(i).n
            memory = max(left.memory, right.memory)
            sweep = max(left.sweep_tape, right.sweep_tape)
            fma = left.fma + right.fma + cost
        elif op == GXM:
            cost = chain.factor(i).n * chain.edge_sum(k + 1, j)
            memory, sweep, fma = right.memory, right.sweep_tape, right.fma + cost
        else:
            swept = chain.edge_sum(i, k)
            cost = chain.factor(j).m * swept
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


# --------------------------------------------------------------------------- plans and tables


@dataclass(frozen=True)
class Candidate:
    """One way to fill a cell from its operands' kept solutions.

    ``feasible``: within the tape bound under the plan's rule; ``kept``: the
    cell keeps it (its choice, or a member of its Pareto front).
    """

    op: str
    k: int
    fma: int
    memory: int
    feasible: bool
    kept: bool

    @property
    def label(self) -> str:
        return _label(self.op, self.k)


@dataclass(frozen=True)
class Cell:
    """Cell ``(j, i)`` of the dynamic programme: what it keeps for ``F'_{j,i}``.

    ``front`` holds the kept solutions, cheapest first: one for the
    single-value rules, the Pareto front of ``(fma, M)`` within the bound for
    the exact rule (only its entries that can still be part of an optimal
    schedule when pruned, see :func:`optimize`; then it may be empty).
    ``op``, ``k``, ``fma`` and ``memory`` describe ``front[0]``.
    """

    j: int
    i: int
    front: tuple[Schedule, ...]

    @property
    def best(self) -> Schedule | None:
        """``front[0]``; None when pruning left the cell empty (then op, k, fma, ... are None too)."""
        return self.front[0] if self.front else None

    def _of_best(self, name: str):
        return None if self.best is None else getattr(self.best, name)

    @property
    def op(self) -> str | None:
        return self._of_best("op")

    @property
    def k(self) -> int | None:
        return self._of_best("k")

    @property
    def label(self) -> str | None:
        return self._of_best("label")

    @property
    def fma(self) -> int | None:
        return self._of_best("fma")

    @property
    def memory(self) -> int | None:
        return self._of_best("memory")

    def line(self) -> str:
        if self.best is None:
            return f"F_{{{self.j},{self.i}}}: pruned (cannot be part of an optimal schedule);"
        text = self.best.line()
        if len(self.front) > 1:
            text += " Pareto (fma, M): " + " ".join(f"({s.fma}, {s.memory})" for s in self.front)
        return text


class _SingleValueTable:
    """Eq. 3.7 / 3.8 with one kept solution per cell, vectorised over each diagonal.

    ``local``: feasibility by the local rule, else by the paper's tape
    accounting; ``lexicographic``: ties in fma go to the smaller tape (exact
    without a bound) instead of the paper's order; ``ops``: the allowed joins
    (only MxM for preaccumulation). Kept: least fma (then least tape if
    lexicographic), then least ``k``, then the order MxM, GxM, MxG.

    Cells are stored as [first factor, length] and [last factor, length]
    (0-based, length ``j - i``) so that the operands of a whole diagonal are
    slices. MxM needs every split, O(q^3) in all. GxM costs
    ``F_{k,i} - n_i P_k + n_i P_j`` (``P`` prefix sums of ``|E|``), so its best
    split is a running minimum per ``i`` as ``j`` grows; without a bound MxG is
    likewise a running minimum per ``j`` of ``F_{j,k+1} + m_j P_k`` (with a
    bound its feasibility depends on ``i``, so every split is checked).
    """

    def __init__(self, chain: Chain, bound: int | None, *, local: bool, lexicographic: bool,
                 ops: tuple[str, ...] = SPLIT_OPS):
        self.chain, self.bound, self.local, self.lexicographic = chain, bound, local, lexicographic
        self.ops = ops
        q = chain.q
        dtype = np.int64 if chain._fits_int64() else object
        self.sentinel = np.iinfo(np.int64).max if dtype is np.int64 else float("inf")
        m = np.array([f.m for f in chain.factors], dtype=dtype)
        n = np.array([f.n for f in chain.factors], dtype=dtype)
        prefix = np.array(chain._prefix, dtype=dtype)  # prefix[k + 1] = |E_0| + ... + |E_k|
        self.m, self.n, self.prefix = m, n, prefix
        self.fma_by_first, self.fma_by_last = np.zeros((q, q), dtype), np.zeros((q, q), dtype)
        self.mem_by_first, self.mem_by_last = np.zeros((q, q), dtype), np.zeros((q, q), dtype)
        self.choice = np.zeros((q, q), dtype=np.int64)  # [first, length]: leaf rank, or 3 (k - i) + rank
        edges = np.diff(prefix)
        leaf = [(n * edges, np.zeros_like(edges), np.zeros(q, np.int64)),
                (m * edges, edges, np.zeros(q, np.int64))]
        if bound is not None:
            leaf[1] = (np.where(edges <= bound, leaf[1][0], self.sentinel),) + leaf[1][1:]
        self._store(0, *self._combine(leaf, 2))
        # running minima: GxM per first factor i, MxG per last factor j (value, tape key, k - i or k)
        tangent_best = [np.full(q, self.sentinel, dtype=dtype), np.zeros(q, dtype), np.zeros(q, np.int64)]
        adjoint_best = [np.full(q, self.sentinel, dtype=dtype), np.zeros(q, dtype), np.zeros(q, np.int64)]
        window = np.lib.stride_tricks.sliding_window_view
        for length in range(1, q):
            cells = q - length
            first = np.arange(cells)
            options: list[tuple | None] = [None, None, None]
            left_fma = self.fma_by_last[length:, length - 1::-1]  # [cell, k - i] -> F'_{j,k+1}
            left_mem = self.mem_by_last[length:, length - 1::-1]
            right_fma = self.fma_by_first[:cells, :length]  # [cell, k - i] -> F'_{k,i}
            right_mem = self.mem_by_first[:cells, :length]
            if MXM in ops:
                costs = (m[length:] * n[:cells])[:, None] * window(m, length)[:cells]
                options[0] = self._best_split(left_fma + right_fma + costs,
                                              lambda rows, split: np.maximum(left_mem[rows, split],
                                                                             right_mem[rows, split]),
                                              lambda rows: np.maximum(left_mem[rows], right_mem[rows]))
            if GXM in ops:  # newest split k = j - 1, operand F'_{j-1,i} of length - 1
                new = (self.fma_by_first[:cells, length - 1] - n[:cells] * prefix[length:q],
                       self.mem_by_first[:cells, length - 1], np.full(cells, length - 1))
                self._improve(tangent_best, new, slice(0, cells), newest_wins=False)
                value, mem, split = (a[:cells] for a in tangent_best)
                options[1] = (value + n[:cells] * prefix[length + 1:], mem, split)
            if MXG in ops and bound is None:  # newest split k = i, operand F'_{j,i+1} of length - 1
                new = (self.fma_by_last[length:, length - 1] + m[length:] * prefix[1:cells + 1],
                       self.mem_by_last[length:, length - 1] + prefix[1:cells + 1], first)
                self._improve(adjoint_best, new, slice(length, q), newest_wins=True)
                value, mem, k = (a[length:] for a in adjoint_best)
                options[2] = (value - m[length:] * prefix[:cells], mem - prefix[:cells], k - first)
            elif MXG in ops:
                swept = window(prefix[1:], length)[:cells] - prefix[:cells, None]  # |E_i| + ... + |E_k|
                mem = left_mem + swept
                ok = (swept if local else mem) <= bound
                fma = np.where(ok, left_fma + m[length:, None] * swept, self.sentinel)
                options[2] = self._best_split(fma, lambda rows, split: mem[rows, split], lambda rows: mem[rows])
            self._store(length, *self._combine(options, 3))
        self._built: dict[tuple[int, int], Schedule] = {}

    def _best_split(self, fma, mem_at, mem_of):
        """(value, tape, k - i) of the best split per cell from the full (cells, splits) costs.

        ``mem_at(rows, splits)`` gives the tape of those options, ``mem_of(rows)``
        of every split of those cells (needed only where the least fma is tied).
        """
        split = np.argmin(fma, axis=1)
        rows = np.arange(fma.shape[0])
        value = fma[rows, split]
        if self.lexicographic:
            tied = np.flatnonzero(np.count_nonzero(fma == value[:, None], axis=1) > 1)
            if len(tied):
                cheapest = fma[tied] == value[tied, None]
                split[tied] = np.argmin(np.where(cheapest, mem_of(tied), self.sentinel), axis=1)
        return value, mem_at(rows, split), split

    def _improve(self, best, new, where, newest_wins: bool):
        """Fold the newest split into a running minimum ``best`` (value, tape, split) at ``where``.

        Splits arrive in ascending ``k`` (GxM) or descending ``k`` (MxG); the
        lesser ``k`` wins ties, so ``newest_wins`` says who takes an equal key.
        """
        value, mem = best[0][where], best[1][where]
        if self.lexicographic:
            better = (new[0] < value) | ((new[0] == value) & ((new[1] <= mem) if newest_wins else (new[1] < mem)))
        else:
            better = (new[0] <= value) if newest_wins else (new[0] < value)
        for array, update in zip(best, new):
            array[where] = np.where(better, update, array[where])

    def _combine(self, options, width: int):
        """Per cell the kept option among the per-operation bests: (fma, tape, choice code)."""
        present = [(rank, option) for rank, option in enumerate(options) if option is not None]
        values = np.array([option[0] for _, option in present])
        mems = np.array([option[1] for _, option in present])
        codes = np.array([option[2] * width + rank for rank, option in present])
        best = values.min(axis=0)
        keys = np.where(values == best, codes, np.iinfo(np.int64).max)
        if self.lexicographic:
            least = np.where(values == best, mems, self.sentinel).min(axis=0)
            keys = np.where(mems == least, keys, np.iinfo(np.int64).max)
        winner = np.argmin(keys, axis=0)
        columns = np.arange(values.shape[1])
        return values[winner, columns], mems[winner, columns], codes[winner, columns]

    def _store(self, length: int, fma, mem, codes) -> None:
        q = self.chain.q
        self.fma_by_first[: q - length, length] = self.fma_by_last[length:, length] = fma
        self.mem_by_first[: q - length, length] = self.mem_by_last[length:, length] = mem
        self.choice[: q - length, length] = codes

    def _decode(self, j: int, i: int) -> tuple[str, int]:
        """The kept op and split of cell (j, i), both 1-based."""
        choice = int(self.choice[i - 1, j - i])
        if j == i:
            return LEAF_OPS[choice], 0
        return SPLIT_OPS[choice % 3], i + choice // 3

    def _cell(self, j: int, i: int) -> tuple[int, int]:
        return int(self.fma_by_first[i - 1, j - i]), int(self.mem_by_first[i - 1, j - i])

    def schedule(self, j: int, i: int) -> Schedule:
        """The kept schedule of cell (j, i), 1-based; built bottom-up (no deep recursion)."""
        needed, stack = [], [(j, i)]
        while stack:
            cell = stack.pop()
            if cell in self._built or cell in needed:
                continue
            needed.append(cell)
            op, k = self._decode(*cell)
            if op in (MXM, MXG):
                stack.append((cell[0], k + 1))
            if op in (MXM, GXM):
                stack.append((k, cell[1]))
        for cj, ci in sorted(needed, key=lambda c: c[0] - c[1]):
            op, k = self._decode(cj, ci)
            self._built[cj, ci] = Schedule.make(
                self.chain, op, cj, ci, k,
                left=self._built[cj, k + 1] if op in (MXM, MXG) else None,
                right=self._built[k, ci] if op in (MXM, GXM) else None)
        return self._built[j, i]

    def front(self, j: int, i: int) -> tuple[Schedule, ...]:
        return (self.schedule(j, i),)

    def candidates(self, j: int, i: int) -> tuple[Candidate, ...]:
        """Every option of cell (j, i), recomputed one by one from the operands' kept values."""
        chain, bound = self.chain, self.bound
        chosen = self._decode(j, i)
        out = []
        if j == i:
            for op in LEAF_OPS:
                leaf = Schedule.make(chain, op, j, j)
                ok = bound is None or leaf.memory <= bound
                out.append(Candidate(op, 0, leaf.fma, leaf.memory, ok, (op, 0) == chosen))
            return tuple(out)
        for k in range(i, j):
            (left_fma, left_mem), (right_fma, right_mem) = self._cell(j, k + 1), self._cell(k, i)
            swept = chain.edge_sum(i, k)
            options = {
                MXM: (left_fma + right_fma + chain.factor(j).m * chain.factor(k).m * chain.factor(i).n,
                      max(left_mem, right_mem), True),
                GXM: (right_fma + chain.factor(i).n * chain.edge_sum(k + 1, j), right_mem, True),
                MXG: (left_fma + chain.factor(j).m * swept, left_mem + swept,
                      bound is None or (swept if self.local else left_mem + swept) <= bound),
            }
            out += [Candidate(op, k, fma, mem, ok, (op, k) == chosen)
                    for op, (fma, mem, ok) in options.items() if op in self.ops]
        return tuple(out)


class _Entries(NamedTuple):
    """Solutions kept for one cell, column by column: fma, tape, split ``k`` (0 for a leaf),
    rank of the operation (in LEAF_OPS or SPLIT_OPS), and the index of the left and the right
    operand in its own cell's front (-1: none)."""

    fma: np.ndarray
    mem: np.ndarray
    k: np.ndarray
    rank: np.ndarray
    left: np.ndarray
    right: np.ndarray

    @classmethod
    def join(cls, parts) -> _Entries:
        return cls(*(np.concatenate(columns) for columns in zip(*parts)))

    def take(self, where) -> _Entries:
        return _Entries(*(column[where] for column in self))

    def row(self, index: int) -> tuple[int, ...]:
        return tuple(int(column[index]) for column in self)

    def __len__(self) -> int:
        return len(self.fma)


class _Line:
    """Fronts of one row or column of the table, concatenated in the order they are made, with
    the split each entry serves as an operand and its index in its own cell's front."""

    def __init__(self, dtype):
        empty = np.zeros(0, np.int64)
        self.entries = _Entries(np.zeros(0, dtype), np.zeros(0, dtype), empty, empty, empty, empty)
        self.split, self.index = empty, empty

    def append(self, front: _Entries, split: int) -> None:
        self.entries = _Entries.join([self.entries, front])
        self.split = np.concatenate([self.split, np.full(len(front), split, np.int64)])
        self.index = np.concatenate([self.index, np.arange(len(front))])


def _pareto(entries: _Entries) -> _Entries:
    """Entries not dominated in (fma, M), cheapest first; ties keep the first in (k, op) order."""
    ordered = entries.take(np.lexsort(entries[::-1]))  # by fma, then tape, k, op, operands
    if len(ordered) < 2:
        return ordered
    keep = np.ones(len(ordered), bool)
    keep[1:] = ordered.mem[1:] < np.minimum.accumulate(ordered.mem)[:-1]
    return ordered.take(keep)


def _outside_costs(chain: Chain, bound: int, levels: list[int]) -> np.ndarray:
    """Lower bounds on the rest of any feasible schedule around a step (inside-outside).

    ``[l, j, i]`` (0-based cells) bounds the cost outside ``F'_{j,i}`` when its
    tape leaves at most ``levels[l]`` free under ``bound`` (``levels``
    ascending, ending with ``bound``): the cheapest parent operation plus the
    parent's own outside cost and, for MxM, the local-rule optimum of the other
    operand (a relaxation: every feasible schedule satisfies the local rule).
    Only an MxG parent uses up free tape, ``|E_I| + ... + |E_{i-1}|``; the
    parent's level is rounded up, which keeps the bound valid.
    """
    inside = _SingleValueTable(chain, bound, local=True, lexicographic=False)
    q = chain.q
    dtype = inside.fma_by_first.dtype
    fma = np.zeros((q, q), dtype)  # [j, i]
    for length in range(q):
        first = np.arange(q - length)
        fma[first + length, first] = inside.fma_by_first[: q - length, length]
    m, n, prefix = inside.m, inside.n, inside.prefix
    free = np.array(levels, dtype)[:, None]
    outside = np.zeros((len(levels), q, q), dtype)
    for length in range(q - 2, -1, -1):  # parents are longer, so already done
        for i in range(q - length):
            j = i + length
            options = []
            if i > 0:  # F'_{j,i} as the left operand of a parent (j, I), split k = i - 1
                parents = outside[:, j, :i]
                options.append((parents + m[j] * m[i - 1] * n[:i] + fma[i - 1, :i]).min(axis=1))
                swept = prefix[i] - prefix[:i]
                left = free - swept  # tape still free in the parent, per level and parent
                fits = left >= 0
                if fits.any():
                    level = np.searchsorted(levels, np.where(fits, left, 0).ravel()).reshape(left.shape)
                    via = outside[level, j, np.arange(i)[None, :]] + m[j] * swept
                    options.append(np.where(fits, via, inside.sentinel).min(axis=1))
            if j < q - 1:  # as the right operand of a parent (J, i), split k = j
                parents = outside[:, j + 1:, i]
                options += [(parents + m[j + 1:] * m[j] * n[i] + fma[j + 1:, j + 1]).min(axis=1),
                            (parents + n[i] * (prefix[j + 2:] - prefix[j + 1])).min(axis=1)]
            outside[:, j, i] = np.min(options, axis=0)
    return outside


class _ParetoTable:
    """Exact memory-bounded programme: per cell the Pareto front of (fma, M) under the paper's
    accounting, built for all splits of a cell at once with numpy.

    With ``prune`` a cell keeps only entries that can still be part of an
    optimal schedule: ``fma`` plus a lower bound on the rest of the chain
    (:func:`_outside_costs`) at most the cost of a known feasible schedule
    (the paper's rule under the same bound).
    """

    def __init__(self, chain: Chain, bound: int, prune: bool):
        self.chain, self.bound = chain, bound
        self.dtype = np.int64 if chain._fits_int64() else object
        self.m = np.array([f.m for f in chain.factors], dtype=self.dtype)
        self.n = np.array([f.n for f in chain.factors], dtype=self.dtype)
        self.prefix = np.array(chain._prefix, dtype=self.dtype)
        self.fronts: dict[tuple[int, int], _Entries] = {}  # 1-based (j, i)
        # When cell (j, i) is made, its left operands F'_{j,k+1} are exactly the cells of row j
        # made so far and its right operands F'_{k,i} those of column i: both kept concatenated.
        q = chain.q
        self.rows = [_Line(self.dtype) for _ in range(q + 1)]
        self.columns = [_Line(self.dtype) for _ in range(q + 1)]
        if prune:
            feasible = _SingleValueTable(chain, bound, local=False, lexicographic=False)._cell(q, 1)[0]
            levels = sorted({bound * step // PRUNE_LEVELS for step in range(PRUNE_LEVELS + 1)})
            outside = _outside_costs(chain, bound, levels)

        def keep(j: int, i: int, candidates: _Entries) -> None:
            front = _pareto(candidates)
            if prune:
                level = np.searchsorted(levels, bound - front.mem)  # free tape, rounded up to a level
                front = front.take(front.fma + outside[level, j - 1, i - 1] <= feasible)
            self.fronts[j, i] = front
            self.rows[j].append(front, i - 1)  # as a left operand it follows the split k = i - 1
            self.columns[i].append(front, j)

        for j in range(1, q + 1):
            leaves = self._leaf_options(j)
            keep(j, j, leaves.take(leaves.mem <= bound))
        for length in range(1, q):
            for i in range(1, q - length + 1):
                j = i + length
                limit = feasible - outside[-1, j - 1, i - 1] if prune else None  # with all tape free
                keep(j, i, self._split_options(j, i, bound, limit))
        self._built: dict[tuple[int, int, int], Schedule] = {}

    def _entries(self, fma, mem, k, rank, left, right) -> _Entries:
        size = len(fma)
        column = lambda value: value if isinstance(value, np.ndarray) else np.full(size, value, np.int64)
        return _Entries(fma, mem, column(k), column(rank), column(left), column(right))

    def _leaf_options(self, j: int) -> _Entries:
        f = self.chain.factor(j)
        return self._entries(np.array([f.n * f.edges, f.m * f.edges], self.dtype),
                             np.array([0, f.edges], self.dtype), 0, np.arange(2), -1, -1)

    def _split_options(self, j: int, i: int, bound: int | None, limit: int | None = None) -> _Entries:
        """Candidates from the operands' fronts; MxG beyond ``bound`` dropped (None: kept), and
        none dearer than ``limit``."""
        row, column = self.rows[j], self.columns[i]
        a, a_split, a_index = row.entries, row.split, row.index  # F'_{j,k+1}, k descending
        b, b_split, b_index = column.entries, column.split, column.index  # F'_{k,i}, k ascending
        if (j, i) in self.fronts:  # the table is done: keep only this cell's operands
            mine = a_split >= i
            a, a_split, a_index = a.take(mine), a_split[mine], a_index[mine]
            mine = b_split < j
            b, b_split, b_index = b.take(mine), b_split[mine], b_index[mine]
        m, n, prefix = self.m, self.n, self.prefix
        parts = [
            self._entries(b.fma + n[i - 1] * (prefix[j] - prefix[b_split]), b.mem, b_split, 1, -1, b_index),  # GxM
            self._entries(a.fma + m[j - 1] * (prefix[a_split] - prefix[i - 1]),  # MxG
                          a.mem + prefix[a_split] - prefix[i - 1], a_split, 2, a_index, -1),
        ]
        if bound is not None:
            parts[1] = parts[1].take(parts[1].mem <= bound)
        if len(a) and len(b):
            # MxM: a Pareto pair (x, y) with M_y <= M_x pairs x with the cheapest y of the same
            # split that fits under M_x (and symmetrically). Fronts fall in tape, so that y is the
            # first with M_y <= M_x: a sorted search over keys (split, top - M), the split
            # counted so that the searched side's keys ascend (k for columns, j - 1 - k for rows).
            top = self.bound + 1  # every operand's tape is within the bound
            slack = lambda entries: top - 1 - entries.mem
            a_split_key, b_split_key = a_split.astype(self.dtype) * top, b_split.astype(self.dtype) * top
            a_row_key, b_row_key = (j - 1 - a_split).astype(self.dtype) * top, (j - 1 - b_split).astype(self.dtype) * top
            for ours, ours_split, ours_index, ours_key, theirs, theirs_split, theirs_index, theirs_key, ours_left in (
                    (a, a_split, a_index, a_split_key + slack(a), b, b_split, b_index, b_split_key + slack(b), True),
                    (b, b_split, b_index, b_row_key + slack(b), a, a_split, a_index, a_row_key + slack(a), False)):
                found = np.searchsorted(theirs_key, ours_key)
                pair = np.minimum(found, len(theirs) - 1)
                ok = (found < len(theirs)) & (theirs_split[pair] == ours_split)
                pair, split = pair[ok], ours_split[ok]
                ends = (ours_index[ok], theirs_index[pair])
                left, right = ends if ours_left else ends[::-1]
                parts.append(self._entries(ours.fma[ok] + theirs.fma[pair] + m[j - 1] * m[split - 1] * n[i - 1],
                                           ours.mem[ok], split, 0, left, right))
        candidates = _Entries.join(parts)
        return candidates if limit is None else candidates.take(candidates.fma <= limit)

    def schedule(self, j: int, i: int, index: int = 0) -> Schedule:
        """The schedule of entry ``index`` of cell (j, i)'s front, built bottom-up."""
        needed, stack = [], [(j, i, index)]
        while stack:
            key = stack.pop()
            if key in self._built or key in needed:
                continue
            needed.append(key)
            stack.extend(self._operands(*key))
        for key in sorted(needed, key=lambda c: c[0] - c[1]):
            cj, ci, position = key
            _, _, k, rank, left, right = self.fronts[cj, ci].row(position)
            if cj == ci:
                self._built[key] = Schedule.make(self.chain, LEAF_OPS[rank], cj, ci)
                continue
            self._built[key] = Schedule.make(
                self.chain, SPLIT_OPS[rank], cj, ci, k,
                left=self._built[cj, k + 1, left] if left >= 0 else None,
                right=self._built[k, ci, right] if right >= 0 else None)
        return self._built[j, i, index]

    def _operands(self, j: int, i: int, index: int) -> list[tuple[int, int, int]]:
        _, _, k, _, left, right = self.fronts[j, i].row(index)
        out = []
        if left >= 0:
            out.append((j, k + 1, left))
        if right >= 0:
            out.append((k, i, right))
        return out

    def front(self, j: int, i: int) -> tuple[Schedule, ...]:
        return tuple(self.schedule(j, i, index) for index in range(len(self.fronts[j, i])))

    def candidates(self, j: int, i: int) -> tuple[Candidate, ...]:
        """Per (k, op) the Pareto front of that option alone, infeasible entries included."""
        options = self._leaf_options(j) if j == i else self._split_options(j, i, None)
        front = self.fronts[j, i]
        kept = {front.row(index) for index in range(len(front))}
        names = LEAF_OPS if j == i else SPLIT_OPS
        out = []
        for k, rank in sorted(set(zip(options.k.tolist(), options.rank.tolist()))):
            group = _pareto(options.take((options.k == k) & (options.rank == rank)))
            for row in (group.row(index) for index in range(len(group))):
                out.append(Candidate(names[rank], k, row[0], row[1], row[1] <= self.bound, row in kept))
        return tuple(out)


@dataclass(frozen=True, eq=False)
class Plan:
    """A schedule for the whole chain, with the dynamic programme that chose it.

    ``method``: "dynamic programming", "brute force", "homogeneous tangent",
    "homogeneous adjoint" or "optimal preaccumulation"; ``rule`` says how tape
    feasibility is judged (module docstring); ``memory_bound`` is ``Mbar`` (None:
    unlimited).
    """

    chain: Chain
    schedule: Schedule
    method: str
    rule: str = "exact"
    memory_bound: int | None = None
    _table: _SingleValueTable | _ParetoTable | None = None

    @property
    def fma(self) -> int:
        return self.schedule.fma

    @property
    def memory(self) -> int:
        """Tape under the paper's accounting (module docstring)."""
        return self.schedule.memory

    @property
    def feasible(self) -> bool:
        """Whether the schedule respects the tape bound under :attr:`rule`."""
        if self.memory_bound is None:
            return True
        used = self.schedule.sweep_tape if self.rule == "local" else self.schedule.memory
        return used <= self.memory_bound

    @property
    def notation(self) -> str:
        return self.schedule.notation(self.chain)

    @property
    def has_table(self) -> bool:
        return self._table is not None

    @property
    def kept_entries(self) -> int:
        """Solutions the programme kept over all cells (one per cell unless fronts are kept)."""
        if self._table is None:
            return 0
        if isinstance(self._table, _ParetoTable):
            return sum(len(front) for front in self._table.fronts.values())
        return self.chain.q * (self.chain.q + 1) // 2

    def _need_table(self):
        if self._table is None:
            raise ValueError(f"this plan ({self.method}) has no dynamic programming table")
        return self._table

    def _check_cell(self, j: int, i: int) -> tuple[int, int]:
        j, i = _index(j, "cell row j"), _index(i, "cell column i")
        if not 1 <= i <= j <= self.chain.q:
            raise ValueError(f"cell ({j}, {i}) is outside the table: need 1 <= i <= j <= {self.chain.q}")
        return j, i

    def cell(self, j: int, i: int) -> Cell:
        """Cell ``(j, i)`` (1-based, ``j >= i``): what the programme keeps for ``F'_{j,i}``."""
        table = self._need_table()
        j, i = self._check_cell(j, i)
        return Cell(j, i, table.front(j, i))

    @cached_property
    def cells(self) -> tuple[Cell, ...]:
        """Every cell in the reference implementation's order (``j`` ascending, ``i`` descending)."""
        if self._table is None:
            return ()
        return tuple(self.cell(j, i) for j in range(1, self.chain.q + 1) for i in range(j, 0, -1))

    def candidates(self, j: int, i: int) -> tuple[Candidate, ...]:
        """The options the programme compared for cell ``(j, i)`` (k ascending, MxM, GxM, MxG)."""
        table = self._need_table()
        j, i = self._check_cell(j, i)
        return table.candidates(j, i)

    def steps(self) -> list[Schedule]:
        """The schedule's steps in an executable order."""
        return self.schedule.nodes()

    def fma_by_op(self) -> dict[str, int]:
        return self.schedule.fma_by_op()

    def table(self, all_cells: bool | None = None) -> str:
        """The table as the reference implementation prints it.

        ``all_cells`` False lists only the cells the schedule uses (as the
        paper does for the OpenFOAM case); the default lists all when ``q <= 8``.
        Plans without a table list their steps.
        """
        if all_cells is None:
            all_cells = self.chain.q <= 8
        if self._table is None or not all_cells:
            lines = [s.line() for s in sorted(self.steps(), key=lambda s: (s.j, -s.i))]
        else:
            lines = [cell.line() for cell in self.cells]
        return "\n".join(["Dynamic Programming Table:"] + lines)

    def __str__(self) -> str:
        bound = "unlimited tape" if self.memory_bound is None else f"tape bound {self.memory_bound}"
        status = "" if self.feasible else " (INFEASIBLE)"
        return "\n".join([
            f"F' = {self.notation}",
            f"{self.method}, {self.rule} rule, {bound}: fma={self.fma}; M={self.memory};{status}",
            self.table(),
        ])

    def __repr__(self) -> str:
        return f"<Plan {self.method} ({self.rule}): fma={self.fma}, M={self.memory}, {self.notation}>"


# --------------------------------------------------------------------------- entry points


def memory_bound(memory) -> int | None:
    """``memory`` checked as a tape bound: None (unlimited) or a non-negative integer of any size
    (a bound of at least the chain's ``sum |E|`` is no bound: no schedule's tape exceeds that)."""
    if memory is None:
        return None
    if isinstance(memory, (bool, np.bool_)) or not isinstance(memory, numbers.Integral) or memory < 0:
        raise ValueError(f"memory bound must be a non-negative integer or None, got {shown(memory)}")
    return int(memory)


def _chain(chain) -> Chain:
    return chain if isinstance(chain, Chain) else Chain(chain)


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

"""The dynamic programming table under a memory bound (sec. 5): per sub-chain the Pareto front of
(fma, tape) pairs, pruned by a lower bound on what lies outside the sub-chain.
"""

from __future__ import annotations

from typing import NamedTuple
import numpy as np

from .chain import Chain, LEAF_OPS, PRUNE_LEVELS, SPLIT_OPS
from .schedules import Schedule
from .table import Candidate, _SingleValueTable


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

        def column(value):
            return value if isinstance(value, np.ndarray) else np.full(size, value, np.int64)

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

            def slack(entries):
                return top - 1 - entries.mem

            a_split_key, b_split_key = a_split.astype(self.dtype) * top, b_split.astype(self.dtype) * top
            a_row_key = (j - 1 - a_split).astype(self.dtype) * top
            b_row_key = (j - 1 - b_split).astype(self.dtype) * top
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

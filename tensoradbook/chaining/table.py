"""The dynamic programming table without a memory bound (sec. 4, eqs. 3.7-3.8): one optimal schedule per
sub-chain, filled diagonal by diagonal, with each cell's candidates kept for the widgets.
"""

from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from .chain import Chain, GXM, LEAF_OPS, MXG, MXM, SPLIT_OPS
from .schedules import Schedule, _label


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

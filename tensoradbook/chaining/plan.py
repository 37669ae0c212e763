"""A plan: the schedule a table chooses for the whole chain, with its cost, its tape and its table.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .chain import Chain, _index
from .schedules import Schedule
from .table import Candidate, Cell, _SingleValueTable
from .bounded import _ParetoTable


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

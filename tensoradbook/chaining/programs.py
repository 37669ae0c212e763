"""Runnable elemental functions that check the cost model of :mod:`tensoradbook.chaining`.

Naumann, "Matrix-Free Jacobian Chaining", sec. 2: each ``F_i`` is a DAG
``G_i = (V_i, E_i)`` whose edges carry the local partial derivatives. Here an
:class:`Elemental` is such a DAG, linearised at a fixed argument, built at
random with exactly ``|E_i|`` edges: ``n`` input vertices, some intermediates,
``m`` output vertices, every non-input vertex the partial-weighted sum of its
predecessors. Its vector tangent (eq. 2.5) and vector adjoint (eq. 2.6) are
compiled Numba loops that perform one multiply-add per edge and per column
(row) and count them, so a tangent on ``c`` columns performs exactly
``c |E_i|`` fma and an adjoint on ``r`` rows ``r |E_i|``; an adjoint sweep over
several factors records their edge lists (the tape) first.

:meth:`ChainProgram.execute` runs a schedule (a :class:`~tensoradbook.chaining.Plan`
or :class:`~tensoradbook.chaining.Schedule`) step by step, with a counted dense
product for MxM, and returns the Jacobian it computed, the fma it performed and
the largest tape one adjoint sweep recorded. The oracles are independent of the
propagation: each factor's Jacobian solves ``(I - C) D = I`` for the matrix
``C`` of local partials (numpy), and the chain's is their dense product.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codegen.cache import package_jit
from ..integer.matrix import as_int, shown
from .chain import ADJOINT, GXM, MXG, MXM, TANGENT, Chain
from .plan import Plan
from .schedules import Schedule

__all__ = ["ChainProgram", "Elemental", "Execution"]

_jit = package_jit(error_model="numpy")


@_jit
def _tangent_sweep(n_vertices, n, m, sources, targets, partials, seeds):
    """Forward propagation of the columns of ``seeds`` (n x c); returns outputs (m x c) and fma."""
    columns = seeds.shape[1]
    values = np.zeros((n_vertices, columns))
    values[:n] = seeds
    fma = 0
    for edge in range(sources.shape[0]):  # sorted by target: predecessors are final
        source, target, partial = sources[edge], targets[edge], partials[edge]
        for column in range(columns):
            values[target, column] += partial * values[source, column]
            fma += 1
    return values[n_vertices - m:].copy(), fma


@_jit
def _adjoint_sweep(n_vertices, n, m, sources, targets, partials, seeds):
    """Reverse propagation of the rows of ``seeds`` (r x m); returns input adjoints (r x n) and fma."""
    rows = seeds.shape[0]
    adjoints = np.zeros((n_vertices, rows))
    adjoints[n_vertices - m:] = seeds.T
    fma = 0
    for edge in range(sources.shape[0] - 1, -1, -1):  # reverse: successors are final
        source, target, partial = sources[edge], targets[edge], partials[edge]
        for row in range(rows):
            adjoints[source, row] += partial * adjoints[target, row]
            fma += 1
    return adjoints[:n].T.copy(), fma


@_jit
def _counted_product(a, b):
    """Dense ``a @ b`` by multiply-adds, counted."""
    out = np.zeros((a.shape[0], b.shape[1]))
    fma = 0
    for r in range(a.shape[0]):
        for s in range(a.shape[1]):
            for c in range(b.shape[1]):
                out[r, c] += a[r, s] * b[s, c]
                fma += 1
    return out, fma


@dataclass(frozen=True, eq=False)
class Elemental:
    """``F: R^n -> R^m`` as a linearised DAG: vertices ``0..n-1`` inputs, the last ``m`` outputs.

    Edge ``e`` says ``v[targets[e]] += partials[e] * v[sources[e]]``; edges are
    sorted by target, which is a topological order.
    """

    m: int
    n: int
    n_vertices: int
    sources: np.ndarray
    targets: np.ndarray
    partials: np.ndarray

    @property
    def edges(self) -> int:
        return len(self.partials)

    @classmethod
    def random(cls, m: int, n: int, edges: int, rng: np.random.Generator, where: str = "F") -> Elemental:
        """A random DAG with exactly ``edges`` edges; every output and intermediate has a predecessor.

        Needs ``edges >= m`` (each output depends on something).
        """
        m, n, edges = (as_int(value, f"{where}: {name}", minimum=1)
                       for value, name in ((m, "m"), (n, "n"), (edges, "|E|")))
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"{where}: rng must be a numpy.random.Generator, got {shown(rng)}")
        if edges < m:
            raise ValueError(f"{where}: a DAG with m = {m} outputs needs at least {m} edges, got |E| = {edges}")
        # Intermediates h: at least enough slots (each vertex may read any earlier non-output
        # vertex) for all edges, at most one per edge beyond the outputs'.
        def slots(h):
            return h * n + h * (h - 1) // 2 + m * (n + h)

        least = next(h for h in range(edges - m + 1) if slots(h) >= edges)
        h = int(rng.integers(least, min(edges - m, least + max(1, edges // 4)) + 1))
        readable = [n + t for t in range(h)] + [n + h] * m  # predecessors available per non-input vertex
        targets_all = np.repeat(np.arange(n, n + h + m), readable)
        sources_all = np.concatenate([np.arange(r) for r in readable])
        first_slot = np.concatenate([[0], np.cumsum(readable)[:-1]])
        mandatory = first_slot + np.array([rng.integers(r) for r in readable], dtype=np.int64)
        rest = np.setdiff1d(np.arange(len(targets_all)), mandatory)
        chosen = np.concatenate([mandatory, rng.choice(rest, edges - len(mandatory), replace=False)])
        chosen.sort()  # slots are grouped by target, so this is a topological edge order
        partials = rng.uniform(0.5, 1.5, edges) * rng.choice([-1.0, 1.0], edges)
        return cls(m, n, n + h + m, sources_all[chosen].astype(np.int64), targets_all[chosen].astype(np.int64),
                   partials)

    def jacobian(self) -> np.ndarray:
        """Dense ``F'`` (m x n) from ``(I - C)^{-1}``, not from the sweeps: the oracle."""
        local = np.zeros((self.n_vertices, self.n_vertices))
        np.add.at(local, (self.targets, self.sources), self.partials)
        total = np.linalg.solve(np.eye(self.n_vertices) - local, np.eye(self.n_vertices))
        return total[self.n_vertices - self.m:, : self.n]

    def tangent(self, seeds: np.ndarray) -> tuple[np.ndarray, int]:
        """``F' seeds`` for ``seeds`` of shape (n, c), and the fma performed (``c |E|``)."""
        seeds = np.ascontiguousarray(seeds, dtype=float)
        if seeds.ndim != 2 or seeds.shape[0] != self.n:
            raise ValueError(f"tangent of an R^{self.n} -> R^{self.m} function needs {self.n} rows, got {seeds.shape}")
        out, fma = _tangent_sweep(self.n_vertices, self.n, self.m, self.sources, self.targets, self.partials, seeds)
        return out, int(fma)

    def adjoint(self, seeds: np.ndarray) -> tuple[np.ndarray, int]:
        """``seeds F'`` for ``seeds`` of shape (r, m), and the fma performed (``r |E|``)."""
        seeds = np.ascontiguousarray(seeds, dtype=float)
        if seeds.ndim != 2 or seeds.shape[1] != self.m:
            raise ValueError(f"adjoint of an R^{self.n} -> R^{self.m} function needs {self.m} columns, "
                             f"got {seeds.shape}")
        out, fma = _adjoint_sweep(self.n_vertices, self.n, self.m, self.sources, self.targets, self.partials, seeds)
        return out, int(fma)


@dataclass(frozen=True)
class Execution:
    """What running a schedule did: the Jacobian, the fma counted, per step ``(line, fma)``,
    and the largest tape (edges recorded) of one adjoint sweep."""

    jacobian: np.ndarray
    fma: int
    tape: int
    steps: tuple[tuple[str, int], ...]


def _checked(chain) -> Chain:
    if not isinstance(chain, Chain):
        raise ValueError(f"chain must be a Chain (tensoradbook.chaining), got {shown(chain)}")
    return chain


class ChainProgram:
    """One random :class:`Elemental` per factor of a :class:`~tensoradbook.chaining.Chain`."""

    def __init__(self, chain: Chain, elementals):
        self.chain = _checked(chain)
        self.elementals = tuple(elementals)
        for index, (factor, elemental) in enumerate(zip(chain, self.elementals), start=1):
            if (elemental.m, elemental.n, elemental.edges) != (factor.m, factor.n, factor.edges):
                raise ValueError(f"F_{index}: elemental is {elemental.m}x{elemental.n} with {elemental.edges} "
                                 f"edges, the chain says {factor.m}x{factor.n} with {factor.edges}")
        if len(self.elementals) != chain.q:
            raise ValueError(f"the chain has {chain.q} factors but {len(self.elementals)} elementals were given")

    @classmethod
    def random(cls, chain: Chain, seed: int = 0) -> ChainProgram:
        rng = np.random.default_rng(None if seed is None else as_int(seed, "seed", minimum=0))
        chain = _checked(chain)
        return cls(chain, [Elemental.random(f.m, f.n, f.edges, rng, f"F_{index}")
                           for index, f in enumerate(chain, start=1)])

    def jacobian(self) -> np.ndarray:
        """``F'_q ... F'_1`` by dense products of the factors' oracle Jacobians."""
        out = self.elementals[0].jacobian()
        for elemental in self.elementals[1:]:
            out = elemental.jacobian() @ out
        return out

    def execute(self, schedule: Schedule | Plan) -> Execution:
        """Run every step of ``schedule`` (operands first), counting fma."""
        if isinstance(schedule, Plan):
            schedule = schedule.schedule
        if not isinstance(schedule, Schedule):
            raise ValueError(f"execute runs a Schedule or a Plan, got {shown(schedule)}")
        if (schedule.j, schedule.i) != (self.chain.q, 1):
            raise ValueError(f"the schedule computes F'_{{{schedule.j},{schedule.i}}}, "
                             f"not the whole chain F'_{{{self.chain.q},1}}")
        results: dict[int, np.ndarray] = {}
        total, largest_tape, steps = 0, 0, []
        for node in schedule.nodes():
            out, fma, tape = self._step(node, results)
            results[id(node)] = out
            total += fma
            largest_tape = max(largest_tape, tape)
            steps.append((node.line(), fma))
        return Execution(results[id(schedule)], total, largest_tape, tuple(steps))

    def _step(self, node, results: dict[int, np.ndarray]) -> tuple[np.ndarray, int, int]:
        """One step of a schedule on its operands' results (taken out of ``results``): its result, its fma and
        the tape it records."""
        F = self.elementals[node.j - 1]
        if node.op == TANGENT:
            return *F.tangent(np.eye(F.n)), 0
        if node.op == ADJOINT:
            return *F.adjoint(np.eye(F.m)), F.edges
        if node.op == GXM:
            out, fma = results.pop(id(node.right)), 0
            for v in range(node.k + 1, node.j + 1):
                out, used = self.elementals[v - 1].tangent(out)
                fma += used
            return out, fma, 0
        if node.op == MXG:
            out, fma = results.pop(id(node.left)), 0
            swept = self.elementals[node.i - 1: node.k]
            for elemental in reversed(swept):
                out, used = elemental.adjoint(out)
                fma += used
            return out, fma, sum(e.edges for e in swept)  # recorded before the sweep
        if node.op == MXM:
            out, fma = _counted_product(results.pop(id(node.left)), results.pop(id(node.right)))
            return out, int(fma), 0
        raise ValueError(f"unknown step {node.op!r}")

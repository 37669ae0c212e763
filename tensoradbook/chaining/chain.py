"""A chain of elemental Jacobians ``F' = F'_q ... F'_1`` (Naumann, sec. 2): each factor's shape and the costs
of its tangent and adjoint models; the operations that join them; the checks of a memory bound.
"""

from __future__ import annotations

import itertools
import numbers
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
import numpy as np
from ..integer.matrix import as_int, shown




TANGENT, ADJOINT = "tangent", "adjoint"  # preaccumulation of one factor
MXM, GXM, MXG = "MxM", "GxM", "MxG"  # the three ways to join F'_{j,k+1} and F'_{k,i}
SPLIT_OPS = (MXM, GXM, MXG)  # the paper's tie order within one split k
LEAF_OPS = (TANGENT, ADJOINT)  # tie goes to the tangent
RULES = ("exact", "paper", "local")
BRUTE_FORCE_MAX_Q = 7  # 281,764 schedules; q = 8 has 2,740,572
SCHEDULE_COUNT_MAX_Q = 1000  # the count's recurrence is quadratic in q on big ints
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

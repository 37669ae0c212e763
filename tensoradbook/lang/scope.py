"""What holds at a point of a function's text, for the parser's exact range checks (report sec. 4.2).

The index values reachable at an argument element form a union of integer polytopes: the output box,
the enclosing sums' bounds, the enclosing thens' conditions and, per enclosing else, one way its
condition fails (:class:`Scope`, :class:`Polytope`). The parser searches them for a point where an
index leaves its argument's shape or a division is not exact, with Fourier-Motzkin elimination.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..integer.fourier_motzkin import fourier_motzkin
from ..integer.smith import integer_inverse
from .evaluate import sum_range
from .expr import Affine, Atom, Element, If, Sum
from .limits import MAX_INTEGER

@dataclass(frozen=True)
class SumFrame:
    index: str
    lower: tuple[Affine, ...]
    upper: tuple[Affine, ...]


@dataclass(frozen=True)
class Scope:
    """What is in force at a point of the text: bound index names, enclosing sums and conditions."""

    indices: tuple[str, ...]  # output indices, then sum indices outermost first
    sums: tuple[SumFrame, ...] = ()
    conditions: tuple[Atom, ...] = ()  # atoms of the enclosing if-thens
    negations: tuple[tuple[Atom, ...], ...] = ()  # conditions of the enclosing if-elses: each fails

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.indices[:len(self.indices) - len(self.sums)]

    def with_sum(self, frame: SumFrame) -> Scope:
        return Scope(self.indices + (frame.index,), self.sums + (frame,), self.conditions, self.negations)

    def with_conditions(self, atoms: tuple[Atom, ...]) -> Scope:
        return Scope(self.indices, self.sums, self.conditions + atoms, self.negations)

    def with_negation(self, atoms: tuple[Atom, ...]) -> Scope:
        return Scope(self.indices, self.sums, self.conditions, self.negations + (atoms,))

    def pieces(self) -> list[tuple[Atom, ...]]:
        """The conditions in force as a union of conjunctions: the enclosing thens' atoms and, per
        enclosing else, one way in which its condition fails (:func:`failures`)."""
        pieces = [self.conditions]
        for n, atoms in enumerate(self.negations):
            ways = [way for k, atom in enumerate(atoms) for way in failures(atom, f"%r{n}_{k}")]
            # leaving an else's condition out only adds points: the check stays safe, if less exact
            if len(pieces) * len(ways) <= MAX_PIECES:
                pieces = [piece + way for piece in pieces for way in ways]
        return pieces


# Polytopes searched for one element at most: nested elses multiply the ways their conditions fail.
MAX_PIECES = 64


def failures(atom: Atom, fresh: str) -> list[tuple[Atom, ...]]:
    """The ways ``atom`` fails, each a conjunction of atoms: ``a >= 0`` as ``a <= -1``; ``a = 0`` as
    ``a >= 1`` or ``a <= -1``; ``a % m = 0`` as ``m q + 1 <= a <= m q + m - 1`` with a fresh integer
    ``q`` (then ``floor(a / m)``). Not as ``a = m q + r`` with ``r`` in 1..m-1: a search would try each
    remainder, so its time would grow with ``m`` (hours near MAX_INTEGER), while ``q`` has one or no
    integer value per point of the other indices."""
    a = atom.affine
    if atom.inequality:
        return [(Atom(-a - 1, inequality=True),)]
    if not atom.modulus:
        return [(Atom(a - 1, inequality=True),), (Atom(-a - 1, inequality=True),)]
    multiple = Affine.index(fresh).scale(atom.modulus)
    return [(Atom(a - multiple - 1, inequality=True),
             Atom(multiple + (atom.modulus - 1) - a, inequality=True))]



def index_box(scope: Scope, out_shape: tuple) -> dict | None:
    """A box around every index's reachable values, or None if an enclosing sum is empty everywhere."""
    intervals = {name: (0, n - 1) for name, n in zip(scope.outputs, out_shape)}
    for frame in scope.sums:
        low, high = sum_range(frame.lower, frame.upper, intervals)
        if low > high:
            return None
        intervals[frame.index] = (low, high)
    return intervals


def reach(affine: Affine, intervals: dict) -> int:
    """The largest magnitude a sum of some of ``affine``'s numerator terms (the constant one of them) takes on
    ``intervals``: the positive parts of their greatest values added up, or the negative parts of their least.
    ``dx_z2 - 1`` with ``dx_z2`` in ``1 .. 2**53 - 1`` reaches ``2**53 - 1``, not the ``2**53`` of its magnitudes."""
    ends = [(c * low, c * high) for name, c in affine.terms for low, high in (intervals[name],)]
    ends.append((affine.constant, affine.constant))
    return max(sum(max(0, *pair) for pair in ends), sum(max(0, -min(pair)) for pair in ends))


def parts_reach(parts: tuple[Affine, ...], intervals: dict) -> int:
    """The reach of an index written as the sum of ``parts`` (a rounded bound and its integer part, or one
    affine): of each numerator, as the kernels compute it, and of the value."""
    reaches = [reach(part, intervals) for part in parts]
    return max(*reaches, sum(-(-r // part.denominator) for r, part in zip(reaches, parts)))


def written_number(affine: Affine) -> int:
    """The largest number written in ``affine``: a coefficient, the constant or the divisor."""
    return max(abs(affine.constant), affine.denominator, *(abs(c) for _, c in affine.terms))


def _own_past_max_integer(node, intervals: dict) -> tuple[Affine, int] | None:
    """The first index expression ``node`` itself writes (not its children) that :func:`past_max_integer`
    refuses on ``intervals``, and how far it reaches or the number it writes; None where every one fits."""
    affines: list[tuple[Affine, ...]] = []
    if isinstance(node, Element):
        affines = [(a,) for a in node.indices]
    elif isinstance(node, If):
        for atom in node.condition:
            if atom.modulus >= MAX_INTEGER:
                return atom.affine, atom.modulus
        affines = [(atom.affine,) for atom in node.condition]
    elif isinstance(node, Sum):
        affines = [a.written_parts for a in node.lower + node.upper]
    for parts in affines:
        far = max(parts_reach(parts, intervals), *(written_number(part) for part in parts))
        if far >= MAX_INTEGER:
            return sum(parts[1:], parts[0]), far
    return None


def past_max_integer(fn) -> tuple[Affine, int] | None:
    """The first index expression of ``fn`` (a Function) whose text the parser refuses at MAX_INTEGER, and how far
    it reaches or the largest number it writes, on the same box the parser checks (the output's shape, each sum's
    range; :func:`index_box`); None where every one fits. A modulus is a number it writes, so it counts at its own
    size."""
    stack = [(fn.body, {name: (0, n - 1) for name, n in zip(fn.indices, fn.shapes[fn.name])})]
    seen, boxes = set(), []  # a derivative shares subtrees: each is checked once per box (boxes keeps their ids)
    while stack:
        node, intervals = stack.pop()
        if (id(node), id(intervals)) in seen:
            continue
        seen.add((id(node), id(intervals)))
        if (found := _own_past_max_integer(node, intervals)) is not None:
            return found
        if isinstance(node, Sum):
            low, high = sum_range(node.lower, node.upper, intervals)
            if low > high:  # never computed, as the parser's check skips it
                continue
            intervals = {**intervals, node.index: (low, high)}
            boxes.append(intervals)
        stack.extend((child, intervals) for child in node.children())
    return None


def lattice_implies_divisible(conditions: tuple[Atom, ...], divisible: Atom) -> bool:
    """Whether the equations and congruences among ``conditions`` alone make ``n % d = 0`` hold: every integer
    solution of them (``a = 0``; ``a % m = 0`` as ``a = m q``), ``particular + K t`` by the Smith normal form (eq.
    41), gives ``n`` a multiple of ``d``, as do the columns of ``K``. Sufficient, as the inequalities only remove
    points; it spares the exact search, whose time grows with the box (``if {i % 5 = 0} then
    (b[2 * i / 5 + j])`` on 1000 x 1000, where no point fails, took half a minute)."""
    equations = [atom for atom in conditions if not atom.inequality]
    names = sorted({name for atom in (*equations, divisible) for name in atom.affine.names})
    columns = names + [f"%q{k}" for k, atom in enumerate(equations) if atom.modulus]
    rows, rhs, multiples = [], [], iter(columns[len(names):])
    for atom in equations:
        affine = atom.affine.numerator
        row = [int(affine.coefficient(name)) for name in names] + [0] * (len(columns) - len(names))
        if atom.modulus:
            row[columns.index(next(multiples))] = -atom.modulus
        rows.append(row)
        rhs.append(-int(affine.constant))
    n, d = divisible.affine.numerator, divisible.modulus
    weights = [int(n.coefficient(name)) for name in names] + [0] * (len(columns) - len(names))
    if not rows:
        return all(w % d == 0 for w in weights) and n.constant % d == 0
    solutions = integer_inverse(np.array(rows, dtype=object).reshape(len(rows), len(columns))).solve(rhs)
    if solutions is None:  # no integer point at all
        return True
    at_particular = sum(w * p for w, p in zip(weights, solutions.particular)) + int(n.constant)
    steps = [sum(w * int(k) for w, k in zip(weights, column)) for column in solutions.kernel.T.tolist()]
    return at_particular % d == 0 and all(step % d == 0 for step in steps)


class Polytope:
    """The integer points of the indices at an element (one piece of them): ``rows`` of ``affine >= 0``.

    The output box, each enclosing sum's bounds multiplied through by their
    denominators, and each of ``conditions``: ``a >= 0`` as it is, ``a = 0``
    as two inequalities, ``a % m = 0`` exactly as ``a = m q`` with a fresh
    integer ``q``. Names in ``conditions`` that are not indices (an else's
    remainders) are integer variables too.
    """

    def __init__(self, scope: Scope, out_shape: tuple, conditions: tuple[Atom, ...]):
        self.conditions = conditions
        rows = []
        for name, n in zip(scope.outputs, out_shape):
            rows += [Affine.index(name), Affine.constant_value(n - 1) - Affine.index(name)]
        for frame in scope.sums:
            k = Affine.index(frame.index)
            rows += [k.scale(a.denominator) - a.numerator for a in frame.lower]
            rows += [a.numerator - k.scale(a.denominator) for a in frame.upper]
        multiples = []
        for atom in conditions:
            if atom.inequality:
                rows.append(atom.affine)
                continue
            equal = atom.affine
            if atom.modulus:
                # '%' cannot be a name in the text, so these never clash with an index
                multiples.append(f"%{len(multiples)}")
                equal = equal - Affine.index(multiples[-1]).scale(atom.modulus)
            rows += [equal, -equal]
        self.rows = rows
        fresh = sorted({name for atom in conditions for name in atom.affine.names} - set(scope.indices))
        # Fourier-Motzkin loops x_{M-1} outermost: outputs outside, then the sums, multiples innermost.
        self.variables = tuple(multiples) + tuple(fresh) + tuple(reversed(scope.indices))
        # Indices that share no row are independent; eliminating each group alone is much cheaper.
        self.groups: list[set[str]] = []
        for row in rows:
            joined = set(row.names).union(*(g for g in self.groups if g & set(row.names)))
            self.groups = [g for g in self.groups if not g & joined] + [joined]
        # a row without indices is a condition such as 1 = 0: false everywhere or true everywhere
        self.empty = any(row.constant < 0 for row in rows if row.is_constant) or \
            any(self.point(group) is None for group in self.groups if group)

    def point(self, group: set[str], extra: tuple[Affine, ...] = ()) -> dict | None:
        """The first integer point of the rows on ``group`` (and ``extra``), or None."""
        rows = [row for row in self.rows if set(row.names) & group] + list(extra)
        return first_point(rows, tuple(v for v in self.variables if v in group))

    def search(self, extra: Affine) -> dict | None:
        """An integer point with ``extra >= 0`` (on the indices tied to it), given that the polytope is not empty."""
        return self.point(set(extra.names).union(*(g for g in self.groups if g & set(extra.names))), (extra,))


def first_point(rows: list[Affine], variables: tuple[str, ...]) -> dict | None:
    """The first integer point with every row ``>= 0``, in Fourier-Motzkin's loop order, or None."""
    A = tuple(tuple(int(row.coefficient(v)) for v in variables) for row in rows)
    point = _cached_first_point(A, tuple(-row.constant for row in rows), variables)
    return None if point is None else dict(zip(variables, point))


# A finite box is searched value by value first, for at most this many partial points: Fourier-Motzkin's rows
# can grow doubly exponentially with the variables (a derivative's nested sums and else-conditions: one
# system of 6 variables and 26 rows, in a box of 17,280 points that the search settles in a few hundred), while
# the search narrows each range by the values chosen, so it visits far fewer points than the box holds.
SEARCHED_POINTS = 1 << 16


class _SearchTooLong(Exception):
    """The search visited SEARCHED_POINTS partial points: Fourier-Motzkin decides instead."""


@lru_cache(maxsize=4096)
def _cached_first_point(A: tuple, b: tuple, variables: tuple) -> tuple | None:
    # the elements of a derivative repeat the same indices under the same sums many times
    box = _propagated_box(A, b, len(variables))
    if box is None:
        return None
    if all(math.isfinite(low) and math.isfinite(high) for low, high in box):
        try:
            return _enumerated_first_point(A, b, box)
        except _SearchTooLong:
            pass
    return next(fourier_motzkin(A, names=variables).iter_integer_points(b), None)


def _bound(row: tuple, rhs: int, k: int, box: list) -> tuple[float, float]:
    """The values of ``x_k`` that ``row . x >= rhs`` allows while the other variables range over ``box``."""
    rest = 0
    for j, c in enumerate(row):
        if c and j != k:
            low, high = box[j]
            rest += max(c * low, c * high)  # inf where unbounded: then the row bounds nothing
    c = row[k]
    if rest == math.inf:
        return -math.inf, math.inf
    need = rhs - rest  # c x_k >= need
    return (-(-need // c), math.inf) if c > 0 else (-math.inf, need // c)


def _propagated_box(A: tuple, b: tuple, n: int) -> list | None:
    """A box around the integer points of ``A x >= b`` by interval propagation over the rows (sound: no point
    is outside it), with infinite sides where the rows bound nothing; None where it is empty."""
    box = [(-math.inf, math.inf)] * n
    for _ in range(n + 2):  # each round can only narrow; a few rounds reach the box of an index set
        changed = False
        for row, rhs in zip(A, b):
            for k, c in enumerate(row):
                if not c:
                    continue
                low, high = _bound(row, rhs, k, box)
                new = (max(box[k][0], low), min(box[k][1], high))
                if new != box[k]:
                    if new[0] > new[1]:
                        return None
                    box[k], changed = new, True
        if not changed:
            break
    return box


def _enumerated_first_point(A: tuple, b: tuple, box: list) -> tuple | None:
    """The first integer point of ``A x >= b`` in Fourier-Motzkin's loop order (``x_{M-1}`` outermost, each
    variable upwards), by a depth-first search of the finite ``box`` that narrows each variable's range by
    the rows given the values chosen so far; :class:`_SearchTooLong` past SEARCHED_POINTS partial points."""
    n = len(box)
    order = list(range(n - 1, -1, -1))
    value: list = [None] * n
    visited = 0

    def search(depth: int) -> bool:
        nonlocal visited
        visited += 1
        if visited > SEARCHED_POINTS:
            raise _SearchTooLong
        if depth == n:
            return all(sum(c * v for c, v in zip(row, value)) >= rhs for row, rhs in zip(A, b))
        k = order[depth]
        current = [(v, v) if v is not None else box[j] for j, v in enumerate(value)]
        low, high = box[k]
        for row, rhs in zip(A, b):
            if row[k]:
                bound = _bound(row, rhs, k, current)
                low, high = max(low, bound[0]), min(high, bound[1])
        for v in range(int(low), int(high) + 1):
            value[k] = v
            if search(depth + 1):
                return True
        value[k] = None
        return False

    return tuple(value) if search(0) else None

"""Systems of linear inequalities (report sec. 4.2, Algorithm 3).

:func:`fourier_motzkin` eliminates the variables of ``A x >= b`` one after the
other, ``x_0`` first, keeping ``b`` symbolic: each inequality carries the row of
``B`` that says which combination of the original right-hand sides it has. The
result gives, per variable, the bound matrices of eqs. 22-26,

    max(L[k] b + Lhat[k] x_{k+1..}) <= x_k <= min(H[k] b + Hhat[k] x_{k+1..}),

and the feasibility matrix ``F`` of eq. 34 (``F b <= 0``), so the loops run with
``x_{M-1}`` outermost and ``x_0`` innermost.

Beyond the report (whose Algorithm 3 keeps every generated row), duplicate
inequalities are merged and redundant ones dropped by Chernikov's rule: after
``s`` eliminations a row built from more than ``s + 1`` original rows is
implied by the others, for every ``b``. The rows generated and kept are
recorded per step.

:class:`BoxedSolutions` applies this to the report's ``Sigma(beta)`` (eqs. 42-45):
the kernel coordinates ``z`` whose index ``alpha = I beta + K z`` lies in a box.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

import numpy as np

from .matrix import as_exact_vector, as_lists, as_rational_matrix, normalize, shown, zeros

if TYPE_CHECKING:
    import sympy


def _array(rows: list[list], n_cols: int) -> np.ndarray:
    out = zeros(len(rows), n_cols)
    for i, row in enumerate(rows):
        out[i, :] = [normalize(v) for v in row]
    return out


def _primitive_key(row: list) -> tuple:
    """The row (exact rationals: Fractions or ints) scaled to coprime integers: equal keys mean the same
    inequality. Integer arithmetic on numerators and denominators, since pruning keys every generated row."""
    scale = math.lcm(1, *(v.denominator for v in row))
    integers = [v.numerator * (scale // v.denominator) for v in row]
    divisor = math.gcd(*integers) or 1
    return tuple(v // divisor for v in integers)


@dataclass(frozen=True)
class EliminationStep:
    """What eliminating one variable did (for the widget and the benchmark)."""

    variable: int
    lower: int  # rows giving a lower bound (coefficient +1 after scaling)
    upper: int  # rows giving an upper bound (coefficient -1)
    untouched: int  # rows without the variable
    generated: int  # rows of the next system before pruning
    kept: int  # rows of the next system after pruning
    A: np.ndarray  # the next system's coefficients
    B: np.ndarray  # and its right-hand side combinations


@dataclass(frozen=True)
class FourierMotzkin:
    """The output of Algorithm 3 for ``A x >= b`` with symbolic ``b``.

    ``L[k]``, ``H[k]`` (rows x N) and ``Lhat[k]``, ``Hhat[k]`` (rows x
    (M-k-1)) are the bound matrices of variable ``k``; ``F`` is the
    feasibility matrix.
    """

    A: np.ndarray
    names: tuple[str, ...]
    L: tuple[np.ndarray, ...]
    H: tuple[np.ndarray, ...]
    Lhat: tuple[np.ndarray, ...]
    Hhat: tuple[np.ndarray, ...]
    F: np.ndarray
    steps: tuple[EliminationStep, ...]
    pruned: bool

    @property
    def n_vars(self) -> int:
        return self.A.shape[1]

    def _rhs(self, b) -> list:
        return as_exact_vector(b, self.A.shape[0], "b")

    def _later(self, later) -> list:
        if isinstance(later, (str, bytes)) or not hasattr(later, "__iter__"):
            raise ValueError(f"later must be a sequence of numbers, the values of the variables after the next "
                             f"one (x_(k+1), ..., x_{self.n_vars - 1}), got {shown(later)}")
        values = list(later)
        return as_exact_vector(values, len(values), "later")

    def feasible(self, b) -> bool:
        """Whether ``A x >= b`` has a real solution (eq. 34: ``F b <= 0``).

        An integer solution may still be missing; :meth:`integer_points` says.
        """
        return self._feasible(self._rhs(b))

    def _feasible(self, b: list) -> bool:
        return all(sum(f * v for f, v in zip(row, b)) <= 0 for row in as_lists(self.F))

    def real_bounds(self, b, later) -> tuple[Fraction | None, Fraction | None]:
        """Exact real range of the next variable given the later ones (eqs. 22-26).

        ``later`` holds the values of ``x_{k+1}, ..., x_{M-1}`` in index order,
        so the next variable is ``k = M - 1 - len(later)``. None marks an
        unbounded side.
        """
        return self._real_bounds(self._rhs(b), self._later(later))

    def _real_bounds(self, b: list, later: list):
        k = self.n_vars - 1 - len(later)
        if k < 0:
            raise ValueError(f"all {self.n_vars} variables are already fixed")

        def values(M, Mhat):
            return [sum(m * v for m, v in zip(row, b)) + sum(m * v for m, v in zip(hat, later))
                    for row, hat in zip(as_lists(M), as_lists(Mhat))]

        lows, highs = values(self.L[k], self.Lhat[k]), values(self.H[k], self.Hhat[k])
        return (max(lows) if lows else None), (min(highs) if highs else None)

    def bounds(self, b, later=()) -> tuple[int | None, int | None]:
        """Integer range ``(max ceil(...), min floor(...))`` of the next variable; None if unbounded."""
        low, high = self.real_bounds(b, later)
        return (None if low is None else math.ceil(low)), (None if high is None else math.floor(high))

    def unbounded_variable(self) -> tuple[str, str] | None:
        """The first variable lacking a lower or upper bound, as ``(name, side)``."""
        for k in reversed(range(self.n_vars)):
            if not self.L[k].shape[0]:
                return self.names[k], "lower"
            if not self.H[k].shape[0]:
                return self.names[k], "upper"
        return None

    def integer_points(self, b) -> list[tuple[int, ...]]:
        """Every integer solution of ``A x >= b`` exactly once, in loop order.

        The loops run ``x_{M-1}`` outermost; each point is ``(x_0, ..., x_{M-1})``.
        Raises ValueError naming the variable if the solution set is unbounded.
        """
        return list(self.iter_integer_points(b))

    def iter_integer_points(self, b):
        """:meth:`integer_points` as a generator, so a search can stop at the first point."""
        b = self._rhs(b)
        if not self._feasible(b):
            return
        missing = self.unbounded_variable()
        if missing is not None:
            name, side = missing
            raise ValueError(f"{name} has no {side} bound: A x >= b has infinitely many integer solutions")

        def loop(later: list):
            if len(later) == self.n_vars:
                yield tuple(reversed(later))
                return
            low, high = self._real_bounds(b, list(reversed(later)))
            for value in range(math.ceil(low), math.floor(high) + 1):
                yield from loop(later + [value])

        yield from loop([])

    def symbolic_bounds(self, b) -> list[tuple[str, sympy.Expr, sympy.Expr]]:
        """Eqs. 22-26 as formulas: ``(name, lower, upper)`` per variable, outermost first.

        ``b`` may hold numbers or sympy expressions (e.g. in the index ``beta``);
        ``lower`` is ``Max(ceiling(...), ...)``, ``upper`` likewise with ``Min``
        and ``floor``, and an unbounded side is ``-oo`` / ``oo``.
        """
        import sympy  # at first use: sympy's import (~0.3 s) is not paid by what never needs it

        if isinstance(b, (str, bytes)) or not hasattr(b, "__len__"):
            raise ValueError(f"b must be a sequence of {self.A.shape[0]} numbers or sympy expressions, "
                             f"got {shown(b)}")
        if len(b) != self.A.shape[0]:
            raise ValueError(f"b must have {self.A.shape[0]} entries, got {len(b)}")
        b = [sympy.sympify(v) for v in b]
        symbols = [sympy.Symbol(name, integer=True) for name in self.names]
        out = []
        for k in reversed(range(self.n_vars)):
            def side(M, Mhat, rounding):
                return [rounding(sum((sympy.Rational(m) * v for m, v in zip(row, b)), sympy.Integer(0))
                                 + sum((sympy.Rational(h) * z for h, z in zip(hat, symbols[k + 1:])),
                                       sympy.Integer(0)))
                        for row, hat in zip(as_lists(M), as_lists(Mhat))]

            lows = side(self.L[k], self.Lhat[k], sympy.ceiling)
            highs = side(self.H[k], self.Hhat[k], sympy.floor)
            out.append((self.names[k], sympy.Max(*lows) if lows else -sympy.oo,
                        sympy.Min(*highs) if highs else sympy.oo))
        return out

    def sample_point(self, b) -> tuple | None:
        """A rational solution of ``A x >= b`` by back-substitution, or None if infeasible."""
        b = self._rhs(b)
        if not self._feasible(b):
            return None
        later: list = []
        for _ in range(self.n_vars):
            low, high = self._real_bounds(b, later)
            value = low if low is not None else (high if high is not None else 0)
            later.insert(0, value)
        return tuple(normalize(v) for v in later)


class TooManyInequalities(ValueError):
    """An elimination step would generate more rows than the caller's ``max_generated``."""


def fourier_motzkin(A, names=None, prune: bool = True, max_generated: int | None = None) -> FourierMotzkin:
    """Algorithm 3 on ``A x >= b`` (``A`` integer or rational, N x M), ``b`` symbolic.

    ``names`` label the variables in messages (default ``x_0, x_1, ...``);
    ``prune=False`` keeps every generated row, as the report does. With
    ``max_generated``, a step that would generate more rows raises
    :class:`TooManyInequalities` before it does: the rows can grow doubly
    exponentially with the variables.
    """
    A = as_rational_matrix(A, "fourier_motzkin: A")
    n_rows, n_vars = A.shape
    names = _variable_names(names, n_vars)
    if not isinstance(prune, (bool, np.bool_)):
        raise ValueError(f"fourier_motzkin: prune must be True or False, got {shown(prune)}")
    rows = [[Fraction(v) for v in row] for row in as_lists(A)]
    combos = [[Fraction(int(i == j)) for j in range(n_rows)] for i in range(n_rows)]
    L, H, Lhat, Hhat, steps = [], [], [], [], []
    for k in range(n_vars):
        _scale_column(rows, combos, k)  # lines 2-5
        zero = [i for i, row in enumerate(rows) if row[k] == 0]  # line 7
        plus = [i for i, row in enumerate(rows) if row[k] == 1]
        minus = [i for i, row in enumerate(rows) if row[k] == -1]
        L.append(_array([combos[i] for i in plus], n_rows))  # lines 8-10
        H.append(_array([[-v for v in combos[i]] for i in minus], n_rows))
        Lhat.append(_array([[-v for v in rows[i][k + 1:]] for i in plus], n_vars - k - 1))
        Hhat.append(_array([rows[i][k + 1:] for i in minus], n_vars - k - 1))
        if max_generated is not None and len(zero) + len(plus) * len(minus) > max_generated:
            raise TooManyInequalities(f"eliminating {names[k]} would generate {len(zero) + len(plus) * len(minus)} "
                                      f"inequalities, more than {max_generated}")
        new_rows = [rows[i] for i in zero]  # lines 11-22
        new_combos = [combos[i] for i in zero]
        if plus and minus:
            for p in plus:
                for n in minus:
                    new_rows.append([x + y for x, y in zip(rows[p], rows[n])])
                    new_combos.append([x + y for x, y in zip(combos[p], combos[n])])
        generated = len(new_rows)
        if prune:
            new_rows, new_combos = _prune(new_rows, new_combos, eliminated=k + 1)
        rows, combos = new_rows, new_combos
        steps.append(EliminationStep(k, len(plus), len(minus), len(zero), generated, len(rows),
                                     _array(rows, n_vars), _array(combos, n_rows)))
    F = _array(combos, n_rows)  # line 23: rows with no variables left
    return FourierMotzkin(A, names, tuple(L), tuple(H), tuple(Lhat), tuple(Hhat), F, tuple(steps), prune)


def _variable_names(names, n_vars: int) -> tuple[str, ...]:
    """``names`` as a tuple of ``n_vars`` strings (default ``x_0, x_1, ...``), or a ValueError saying why not."""
    if names is None:
        return tuple(f"x_{k}" for k in range(n_vars))
    if isinstance(names, str) or not hasattr(names, "__iter__") or not all(isinstance(v, str) for v in names):
        raise ValueError(f"fourier_motzkin: names must be a sequence of {n_vars} strings, got {shown(names)}")
    names = tuple(names)
    if len(names) != n_vars:
        raise ValueError(f"fourier_motzkin: {len(names)} names for {n_vars} variables")
    return names


def _scale_column(rows: list, combos: list, k: int) -> None:
    """Divide every row with a coefficient on variable ``k`` (and its combination) by that coefficient's size."""
    for i, row in enumerate(rows):
        if row[k] != 0:
            scale = abs(row[k])
            rows[i] = [v / scale for v in row]
            combos[i] = [v / scale for v in combos[i]]


def _prune(rows: list, combos: list, eliminated: int) -> tuple[list, list]:
    """Drop repeated inequalities and, by Chernikov's rule, those combining too many originals.

    A row's combination (its row of B) has non-negative weights on the original
    inequalities; after ``eliminated`` eliminations a row whose combination uses
    more than ``eliminated + 1`` originals is implied by the rest for every b.
    """
    seen = set()
    kept_rows, kept_combos = [], []
    for row, combo in zip(rows, combos):
        if sum(1 for v in combo if v != 0) > eliminated + 1:
            continue
        key = _primitive_key(row + combo)
        if key in seen:
            continue
        seen.add(key)
        kept_rows.append(row)
        kept_combos.append(combo)
    return kept_rows, kept_combos


@dataclass(frozen=True)
class BoxedSolutions:
    """``Sigma(beta)`` of eq. 42: kernel coordinates ``z`` with ``0 <= I beta + K z < shape``.

    The box is rewritten as ``K z >= -p`` and ``-K z >= p - (shape - 1)``
    (eqs. 43-44, ``p = I beta``) and solved by :func:`fourier_motzkin`
    (eq. 45).
    """

    solutions: object  # intlinalg.IntegerSolutions
    shape: tuple[int, ...]

    def __post_init__(self):
        if len(self.shape) != len(self.solutions.particular):
            raise ValueError(f"shape {self.shape} has {len(self.shape)} entries "
                             f"but alpha has {len(self.solutions.particular)}")
        for k, size in enumerate(self.shape):
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
                raise ValueError(f"shape entry {k} is {size!r}; sizes must be positive integers")

    @cached_property
    def constraint_matrix(self) -> np.ndarray:
        K = self.solutions.kernel
        return np.concatenate([K, -K], axis=0) if K.size else zeros(2 * K.shape[0], K.shape[1])

    @cached_property
    def rhs(self) -> tuple:
        p = self.solutions.particular
        return tuple([-v for v in p] + [v - (size - 1) for v, size in zip(p, self.shape)])

    @property
    def system(self) -> FourierMotzkin:
        """Algorithm 3 on ``[K; -K]``: it depends on the kernel only, so it is computed once per kernel."""
        return _kernel_system(tuple(map(tuple, as_lists(self.constraint_matrix))), self.solutions.kernel.shape[1])

    def points(self) -> list[tuple[int, ...]]:
        """The integer ``z`` in ``Sigma(beta)``, in loop order."""
        return self.system.integer_points(self.rhs)

    def alphas(self) -> list[tuple[int, ...]]:
        """The indices ``alpha = I beta + K z`` for the points of :meth:`points`."""
        return [self.solutions.point(z) for z in self.points()]


@lru_cache(maxsize=256)
def _kernel_system(constraint_rows: tuple, n_vars: int) -> FourierMotzkin:
    matrix = zeros(len(constraint_rows), n_vars)
    for i, row in enumerate(constraint_rows):
        matrix[i, :] = row
    return fourier_motzkin(matrix, names=[f"z_{k}" for k in range(n_vars)])

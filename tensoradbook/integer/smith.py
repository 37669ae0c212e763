"""Systems of linear integer equations (report sec. 4.1, Algorithms 1 and 2).

This module owns the integer linear algebra the derivation stands on:

* :func:`extended_gcd` -- Bezout's identity by the extended Euclidean
  algorithm (Algorithm 2);
* :func:`smith_normal_form` -- ``S = U A V`` (eq. 12) by the elementary row and
  column operations of Algorithm 1, with every operation logged so that the
  stepper widget can replay it;
* :func:`integer_inverse` -- the pseudo-inverse ``I = V S^+ U`` (eqs. 18-19),
  the kernel ``K`` and the cokernel ``C`` (eq. 16), and the integer solutions of
  ``A alpha = beta`` as ``I beta + K z``.

All arithmetic is on Python integers (and Fractions for the pseudo-inverse):
entries of any size, no overflow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property

import numpy as np

from .matrix import as_exact_vector, as_int_matrix, as_lists, identity, matmul, matvec, normalize, shown, zeros


def euclid_table(a: int, b: int) -> list[tuple[int | None, int, int, int]]:
    """The rows ``(q_i, r_i, s_i, t_i)`` of Algorithm 2, from ``(a, 1, 0)`` and ``(b, 0, 1)`` down to ``r = 0``.

    Every row keeps ``r_i = a s_i + b t_i``; ``q_i = r_{i-1} // r_i`` is the
    quotient that forms the next row (None on the first and the last row).
    Floor division keeps the remainders shrinking for any signs.
    """
    for name, value in (("a", a), ("b", b)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"extended_gcd: {name} = {value!r} is not an integer")
    rows = [[None, int(a), 1, 0], [None, int(b), 0, 1]]
    while rows[-1][1] != 0:
        previous, current = rows[-2], rows[-1]
        q = previous[1] // current[1]
        current[0] = q
        rows.append([None] + [p - q * c for p, c in zip(previous[1:], current[1:])])
    return [tuple(row) for row in rows]


def extended_gcd(a: int, b: int) -> tuple[int, int, int]:
    """Return ``(g, x, y)`` with ``g = gcd(a, b) = a*x + b*y`` and ``g >= 0`` (Algorithm 2).

    The report states Algorithm 2 for positive numbers; :func:`euclid_table`
    runs it for any signs, and a final sign flip makes ``g`` non-negative.
    ``extended_gcd(0, 0) == (0, 1, 0)``.
    """
    _, g, x, y = euclid_table(a, b)[-2]  # the last non-zero remainder
    return (-g, -x, -y) if g < 0 else (g, x, y)


@dataclass(frozen=True)
class Operation:
    """One elementary operation of Algorithm 1.

    ``axis`` is ``"rows"`` (applied to S and U) or ``"cols"`` (applied to S and
    V). For a two-line operation the new lines are
    ``p' = c11 p + c12 q`` and ``q' = c21 p + c22 q`` with a unimodular
    ``[[c11, c12], [c21, c22]]``; for a one-line operation (``second is None``)
    ``p' = c11 p``.
    """

    axis: str
    first: int
    second: int | None
    coeffs: tuple[int, ...]
    line: int
    words: str

    @property
    def touched(self) -> tuple[int, ...]:
        return (self.first,) if self.second is None else (self.first, self.second)


def _apply(op: Operation, S: list[list[int]], T: list[list[int]]) -> None:
    """Apply ``op`` in place to S and to its transform T (U for rows, V for columns)."""
    for M in (S, T):
        if op.axis == "rows":
            p = M[op.first]
            if op.second is None:
                M[op.first] = [op.coeffs[0] * x for x in p]
                continue
            q = M[op.second]
            c11, c12, c21, c22 = op.coeffs
            M[op.first] = [c11 * x + c12 * y for x, y in zip(p, q)]
            M[op.second] = [c21 * x + c22 * y for x, y in zip(p, q)]
        else:
            for row in M:
                p = row[op.first]
                if op.second is None:
                    row[op.first] = op.coeffs[0] * p
                    continue
                q = row[op.second]
                c11, c12, c21, c22 = op.coeffs
                row[op.first] = c11 * p + c12 * q
                row[op.second] = c21 * p + c22 * q


@dataclass(frozen=True)
class SmithStep:
    """The state of Algorithm 1 after one operation (``operation is None`` for the start)."""

    index: int
    operation: Operation | None
    S: np.ndarray
    U: np.ndarray
    V: np.ndarray

    @property
    def words(self) -> str:
        if self.operation is None:
            return "Start: S = A, U and V are identity matrices."
        return self.operation.words

    @property
    def line(self) -> int | None:
        return None if self.operation is None else self.operation.line


def _initial_state(A: np.ndarray):
    """Lines 0-1 of Algorithm 1: S = A, U and V identities, as mutable lists."""
    return as_lists(A), as_lists(identity(A.shape[0])), as_lists(identity(A.shape[1]))


def _to_array(rows: list[list[int]], n_cols: int) -> np.ndarray:
    out = zeros(len(rows), n_cols)
    for i, row in enumerate(rows):
        out[i, :] = row
    return out


@dataclass(frozen=True)
class SmithNormalForm:
    """``S = U A V`` (eq. 12) with ``S = diag(alpha_1, ..., alpha_R, 0, ...)`` (eqs. 10-11).

    ``S``, ``U``, ``V`` are object arrays of Python ints; ``U`` and ``V`` are
    unimodular. ``operations`` is the log of Algorithm 1 and ``steps`` replays it
    into the sequence of intermediate ``(S, U, V)`` states.
    """

    A: np.ndarray
    S: np.ndarray
    U: np.ndarray
    V: np.ndarray
    rank: int
    operations: tuple[Operation, ...] = field(repr=False)

    @property
    def invariant_factors(self) -> tuple[int, ...]:
        return tuple(int(self.S[k, k]) for k in range(self.rank))

    @cached_property
    def steps(self) -> tuple[SmithStep, ...]:
        n_rows, n_cols = self.A.shape
        S, U, V = _initial_state(self.A)

        def snapshot(index, op):
            return SmithStep(index, op, _to_array(S, n_cols), _to_array(U, n_rows), _to_array(V, n_cols))

        states = [snapshot(0, None)]
        for k, op in enumerate(self.operations, start=1):
            _apply(op, S, U if op.axis == "rows" else V)
            states.append(snapshot(k, op))
        return tuple(states)


class _SmithRun:
    """Algorithm 1 on mutable lists, logging each operation as it is applied."""

    def __init__(self, A: np.ndarray):
        self.n_rows, self.n_cols = A.shape
        self.S, self.U, self.V = _initial_state(A)
        self.log: list[Operation] = []

    def do(self, axis, first, second, coeffs, line, words):
        op = Operation(axis, first, second, tuple(coeffs), line, words)
        _apply(op, self.S, self.U if axis == "rows" else self.V)
        self.log.append(op)

    def pivot(self, a: int) -> tuple[int, int] | None:
        """The non-zero entry of smallest magnitude in the active block, or None (line 1)."""
        best = None
        for i in range(a, self.n_rows):
            for j in range(a, self.n_cols):
                value = self.S[i][j]
                if value and (best is None or abs(value) < abs(self.S[best[0]][best[1]])):
                    best = (i, j)
        return best

    def diagonalize_from(self, a: int) -> int:
        """Lines 1-25: diagonalize the block from row/column ``a``; return the rank."""
        S = self.S
        while (found := self.pivot(a)) is not None:
            i, j = found
            if j != a:
                self.do("cols", a, j, (0, 1, 1, 0), 2,
                        f"Swap columns {a} and {j} to bring the pivot {S[i][j]} into column {a} (lines 2-3).")
            if i != a:
                self.do("rows", a, i, (0, 1, 1, 0), 4,
                        f"Swap rows {a} and {i} to bring the pivot {S[i][a]} to position ({a}, {a}) (lines 4-5).")
            while self._clear_pivot_row_and_column(a):  # until a pass changes nothing
                pass
            a += 1
        return a

    def _clear_pivot_row_and_column(self, a: int) -> bool:
        """One pass of lines 6-24: zero column ``a`` below the pivot, then row ``a`` right of it; whether any
        operation was done."""
        below = self._clear_past_pivot(a, "rows")
        right = self._clear_past_pivot(a, "cols")
        return below or right

    def _clear_past_pivot(self, a: int, axis: str) -> bool:
        """Zero column ``a`` below the pivot by row operations (``axis`` "rows", lines 6-15) or row ``a`` right of
        it by column operations ("cols", lines 16-24); whether any operation was done."""
        S, rows = self.S, axis == "rows"

        def entry(k: int) -> int:
            return S[k][a] if rows else S[a][k]

        changing = False
        for k in range(a + 1, self.n_rows if rows else self.n_cols):
            if entry(k) % S[a][a]:
                self._combine(axis, a, k, S[a][a], entry(k))
                changing = True
            if entry(k):
                f = entry(k) // S[a][a]
                self.do(axis, a, k, (1, 0, -f, 1), 13 if rows else 22,
                        f"Row {k} -= {f} * row {a}: zero S[{k}, {a}] (lines 12-15)." if rows else
                        f"Column {k} -= {f} * column {a}: zero S[{a}, {k}] (lines 21-24).")
                changing = True
        return changing

    def _combine(self, axis, a, k, pivot, other):
        """Lines 8-11 (rows) or 17-20 (columns): replace the pivot by gcd(pivot, other)."""
        beta, sigma, tau = extended_gcd(pivot, other)
        gamma, alpha = other // beta, pivot // beta
        noun = "Row" if axis == "rows" else "Column"
        where = f"S[{k}, {a}]" if axis == "rows" else f"S[{a}, {k}]"
        self.do(axis, a, k, (sigma, tau, -gamma, alpha), 8 if axis == "rows" else 17,
                f"{pivot} does not divide {where} = {other}: Bezout gcd {beta} = {sigma}*{pivot} + {tau}*{other}; "
                f"{noun.lower()} {a} <- {sigma}*{noun.lower()} {a} + {tau}*{noun.lower()} {k}, "
                f"{noun.lower()} {k} <- {-gamma}*{noun.lower()} {a} + {alpha}*{noun.lower()} {k} "
                f"(lines {'8-11' if axis == 'rows' else '17-20'}).")

    def run(self) -> int:
        rank = self.diagonalize_from(0)
        a = 0
        while a < rank:  # lines 27-34
            if self.S[a][a] < 0:
                self.do("cols", a, None, (-1,), 28,
                        f"S[{a}, {a}] is negative: negate column {a} (lines 28-30).")
            if a + 1 < rank and self.S[a + 1][a + 1] % self.S[a][a]:
                self.do("cols", a, a + 1, (1, 1, 0, 1), 31,
                        f"S[{a}, {a}] = {self.S[a][a]} does not divide S[{a + 1}, {a + 1}] = {self.S[a + 1][a + 1]}: "
                        f"add column {a + 1} to column {a} and diagonalize again (lines 31-34).")
                self.diagonalize_from(a)
                a = 0
                continue
            a += 1
        return rank


def smith_normal_form(A) -> SmithNormalForm:
    """Smith normal form ``S = U A V`` of an integer matrix by Algorithm 1.

    ``A`` may be a nested list, a numpy integer array or a sympy matrix of any
    shape (zero rows or columns included). Among the non-zero entries of the
    active block the smallest in magnitude is taken as pivot, which keeps the
    number of gcd steps and the size of U and V small.
    """
    A = as_int_matrix(A, "smith_normal_form: A")
    run = _SmithRun(A)
    rank = run.run()
    n_rows, n_cols = A.shape
    return SmithNormalForm(A, _to_array(run.S, n_cols), _to_array(run.U, n_rows),
                           _to_array(run.V, n_cols), rank, tuple(run.log))


@dataclass(frozen=True)
class Solvability:
    """Whether ``A alpha = beta`` has integer solutions, and why not (eqs. 16-17)."""

    beta: tuple
    cokernel_residual: tuple  # C beta: must be zero (eq. 16)
    particular: tuple  # I beta: must be integral (eq. 17)

    @property
    def solvable(self) -> bool:
        return self.reason is None

    @property
    def reason(self) -> str | None:
        """None when solvable, else which condition fails, in words."""
        nonzero = [k for k, value in enumerate(self.cokernel_residual) if value != 0]
        if nonzero:
            k = nonzero[0]
            return (f"no solution: the cokernel condition C beta = 0 fails "
                    f"(row {k} of C beta is {self.cokernel_residual[k]}), so beta is not in the image of A")
        fractional = [k for k, value in enumerate(self.particular) if not _is_integral(value)]
        if fractional:
            k = fractional[0]
            return (f"no integer solution: I beta is not integral "
                    f"(entry {k} is {self.particular[k]}), so beta is in the image of A only over the rationals")
        return None


def _is_integral(value) -> bool:
    return not isinstance(value, Fraction) or value.denominator == 1


@dataclass(frozen=True)
class IntegerSolutions:
    """The integer solutions ``alpha = particular + kernel @ z`` of ``A alpha = beta`` (eq. 41)."""

    particular: tuple[int, ...]
    kernel: np.ndarray

    def point(self, z) -> tuple[int, ...]:
        z = as_exact_vector(z, self.kernel.shape[1], "z")
        fractional = [k for k, v in enumerate(z) if not _is_integral(v)]
        if fractional:
            raise ValueError(f"z: entry {fractional[0]} is {z[fractional[0]]}, not an integer")
        offset = matvec(self.kernel, z)
        return tuple(int(p + o) for p, o in zip(self.particular, offset))

    def within(self, shape):
        """The solutions inside the index box ``0 <= alpha < shape`` (eq. 42), see :class:`BoxedSolutions`."""
        from .fourier_motzkin import BoxedSolutions

        if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
            raise ValueError(f"shape must be a sequence of positive integers, one per entry of alpha, "
                             f"got {shown(shape)}")
        return BoxedSolutions(self, tuple(shape))


@dataclass(frozen=True)
class IntegerInverse:
    """Pseudo-inverse, kernel and cokernel of an integer matrix (eqs. 16-19).

    ``pinv`` is ``I = V S^+ U`` (M x N, Fractions where needed) with
    ``A I A = A``; the columns of ``kernel`` (M x (M-R)) are a basis of the
    integer lattice ``{x : A x = 0}``; the rows of ``cokernel`` ((N-R) x N)
    give the solvability conditions ``C beta = 0``.
    """

    A: np.ndarray
    smith: SmithNormalForm
    pinv: np.ndarray
    kernel: np.ndarray
    cokernel: np.ndarray

    @property
    def rank(self) -> int:
        return self.smith.rank

    def solvability(self, beta) -> Solvability:
        beta = tuple(as_exact_vector(beta, self.A.shape[0], "beta"))
        return Solvability(
            beta,
            tuple(normalize(v) for v in matvec(self.cokernel, beta)),
            tuple(normalize(v) for v in matvec(self.pinv, beta)),
        )

    def symbolic_region(self, shape, beta_names=None) -> list:
        """``Sigma(beta)`` of eq. 45 with ``beta`` symbolic: the loop bounds of ``z``, outermost first.

        Valid wherever ``A alpha = beta`` is solvable (``C beta = 0`` and
        ``I beta`` integral); the bounds are those of
        :meth:`tensoradbook.FourierMotzkin.symbolic_bounds`.
        """
        import sympy  # at first use: sympy's import (~0.3 s) is not paid by what never needs it

        n_rows = self.A.shape[0]
        names = beta_names or [f"beta_{k}" for k in range(n_rows)]
        if (isinstance(names, str) or not hasattr(names, "__len__") or len(names) != n_rows
                or not all(isinstance(name, str) for name in names)):
            raise ValueError(f"beta_names must be {n_rows} strings, one per entry of beta, got {shown(beta_names)}")
        beta = [sympy.Symbol(name, integer=True) for name in names]
        particular = [sum((sympy.Rational(v) * s for v, s in zip(row, beta)), sympy.Integer(0))
                      for row in as_lists(self.pinv)]
        boxed = IntegerSolutions(tuple([0] * self.A.shape[1]), self.kernel).within(shape)
        rhs = [-v for v in particular] + [v - (n - 1) for v, n in zip(particular, boxed.shape)]
        return boxed.system.symbolic_bounds(rhs)

    def kernel_coordinates(self, K) -> np.ndarray:
        """The exact ``W`` with ``K = kernel @ W`` for candidate kernel vectors ``K`` (M x k).

        ``kernel = V[:, R:]`` and V is unimodular, so ``W = (V^-1 K)[R:]`` is an
        integer matrix; K is another lattice basis of the kernel exactly when W
        is square with ``det W = +-1``, and ``|det W|`` is the index of the
        lattice K spans. Raises ValueError naming a column of K that is not in
        the kernel.
        """
        K = as_int_matrix(K, "K")
        n_cols = self.A.shape[1]
        if K.shape[0] != n_cols:
            raise ValueError(f"K must have {n_cols} rows (one per entry of alpha), got {K.shape[0]}")
        for j in range(K.shape[1]):
            image = matvec(self.A, list(K[:, j]))
            if any(image):
                raise ValueError(f"column {j} of K is not in the kernel: A K[:, {j}] = {tuple(image)}")
        import sympy  # at first use: sympy's import (~0.3 s) is not paid by what never needs it

        V_inverse = sympy.Matrix(self.smith.V.tolist()).inv() if n_cols else sympy.zeros(0, 0)
        coordinates = (V_inverse * sympy.Matrix(K.shape[0], K.shape[1], list(K.flat)))[self.rank:, :]
        return _to_array([[int(v) for v in coordinates.row(i)] for i in range(coordinates.rows)], K.shape[1])

    def lattice_basis(self, K) -> np.ndarray:
        """``K`` checked to be a basis of the integer kernel lattice (any basis ``kernel @ W``, W unimodular)."""
        W = self.kernel_coordinates(K)
        dim = self.kernel.shape[1]
        if W.shape != (dim, dim):
            raise ValueError(f"K has {W.shape[1]} columns but the kernel has dimension {dim}")
        import sympy  # at first use: sympy's import (~0.3 s) is not paid by what never needs it

        index = abs(int(sympy.Matrix(W.tolist()).det())) if dim else 1
        if index != 1:
            raise ValueError(f"the columns of K span only a sublattice of index {index} of the kernel"
                             if index else "the columns of K are linearly dependent")
        return as_int_matrix(K, "K")

    def solve(self, beta, kernel=None) -> IntegerSolutions | None:
        """All integer solutions of ``A alpha = beta``, or None when there are none.

        ``kernel`` chooses another lattice basis of the kernel for ``z`` (checked
        by :meth:`lattice_basis`); the set of solutions is the same, its
        parametrization by ``z`` is not (the report's figs. 3 and 4).
        """
        check = self.solvability(beta)
        basis = self.kernel if kernel is None else self.lattice_basis(kernel)
        if not check.solvable:
            return None
        return IntegerSolutions(tuple(int(v) for v in check.particular), basis)


def integer_inverse(A) -> IntegerInverse:
    """Integer pseudo-inverse, kernel and cokernel of ``A`` from its Smith normal form."""
    smith = smith_normal_form(A)
    n_rows, n_cols = smith.A.shape
    rank = smith.rank
    S_plus = zeros(n_cols, n_rows)
    for k in range(rank):
        S_plus[k, k] = Fraction(1, int(smith.S[k, k]))
    pinv = matmul(matmul(smith.V, S_plus), smith.U)
    for index in np.ndindex(pinv.shape):
        pinv[index] = normalize(pinv[index])
    kernel = smith.V[:, rank:].copy()
    cokernel = smith.U[rank:, :].copy()
    return IntegerInverse(smith.A, smith, pinv, kernel, cokernel)

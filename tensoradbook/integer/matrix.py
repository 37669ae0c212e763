"""Exact matrices for the integer algebra: input checking, products and printing.

Matrices are numpy object arrays whose entries are Python ``int`` (or
``fractions.Fraction`` where the report allows rationals), so no arithmetic
ever overflows or rounds. Every public function of the integer algebra takes
its input through :func:`as_int_matrix` or :func:`as_rational_matrix`, which
turn nested lists, numpy arrays and sympy matrices into that form and say
which entry is wrong when one is.
"""

from __future__ import annotations

import numbers
import reprlib
from fractions import Fraction

import numpy as np


def shown(value) -> str:
    """``repr(value)`` cut to a readable length (a 400-digit integer would swamp the message)."""
    return reprlib.repr(value)


def as_int(value, what: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as a Python int: any integer (numpy's included, not bool) in ``minimum .. maximum``.

    Raises ValueError naming ``what`` and the integers it accepts.
    """
    expected = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum)
    if expected is None:
        expected = "an integer" + (f" >= {minimum}" if minimum is not None else "")
    if maximum is not None:
        expected += f" up to {maximum}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{what} must be {expected}, got {shown(value)}")
    number = int(value)
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise ValueError(f"{what} must be {expected}, got {shown(number)}")
    return number


def _rows_of(matrix, what: str) -> tuple[list[list], int]:
    """Return the entries of ``matrix`` as a list of rows and the column count."""
    if hasattr(matrix, "tolist") and hasattr(matrix, "shape"):
        shape = tuple(matrix.shape)
        if len(shape) != 2:
            raise ValueError(f"{what} must be a 2-D matrix, got shape {shape}")
        # tolist() loses the other dimension of empty matrices; the shape keeps it.
        rows = [list(row) for row in matrix.tolist()] if shape[1] else [[] for _ in range(shape[0])]
        return rows, shape[1]
    if isinstance(matrix, (str, bytes)) or not hasattr(matrix, "__iter__"):
        raise ValueError(f"{what} must be a matrix (a list of rows), got {type(matrix).__name__}")
    rows = []
    for i, row in enumerate(matrix):
        if isinstance(row, (str, bytes)) or not hasattr(row, "__iter__"):
            raise ValueError(f"{what}: row {i} is {row!r}, not a list of entries")
        rows.append(list(row))
    for i, row in enumerate(rows):
        if len(row) != len(rows[0]):
            raise ValueError(
                f"{what} is ragged: row 0 has {len(rows[0])} entries but row {i} has {len(row)}"
            )
    return rows, (len(rows[0]) if rows else 0)


def _exact_entry(value, i: int, j: int, what: str, rational: bool):
    kind = "a rational number" if rational else "an integer"
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{what}: entry ({i}, {j}) is the boolean {value!r}, not {kind}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if rational and isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    # sympy numbers are not registered with the numbers ABCs.
    if getattr(value, "is_Integer", False):
        return int(value)
    if rational and getattr(value, "is_Rational", False):
        return Fraction(int(value.p), int(value.q))
    raise ValueError(f"{what}: entry ({i}, {j}) is {value!r} ({type(value).__name__}), not {kind}")


def _as_exact_matrix(matrix, what: str, rational: bool) -> np.ndarray:
    rows, n_cols = _rows_of(matrix, what)
    out = np.empty((len(rows), n_cols), dtype=object)
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            out[i, j] = _exact_entry(value, i, j, what, rational)
    return out


def as_int_matrix(matrix, what: str = "matrix") -> np.ndarray:
    """Check ``matrix`` and return it as an object array of Python ints.

    Accepts nested lists, numpy integer arrays and sympy matrices. Raises
    ValueError naming the entry for anything that is not an integer and the row
    for ragged input.
    """
    return _as_exact_matrix(matrix, what, rational=False)


def as_rational_matrix(matrix, what: str = "matrix") -> np.ndarray:
    """Like :func:`as_int_matrix`, but Fractions (and sympy Rationals) are allowed."""
    return _as_exact_matrix(matrix, what, rational=True)


def as_exact_vector(vector, length: int, what: str) -> list:
    """Check a vector of ``length`` integers or rationals; return it as a list."""
    if hasattr(vector, "tolist"):
        vector = vector.tolist()
    if isinstance(vector, numbers.Number) or getattr(vector, "is_Number", False):
        vector = [vector]
    if isinstance(vector, (str, bytes)):  # list() would make characters (or byte values) of them
        raise ValueError(f"{what} must be a vector of {length} numbers, got {shown(vector)}")
    try:
        values = list(vector)
    except TypeError:
        raise ValueError(f"{what} must be a vector of {length} numbers, got {shown(vector)}") from None
    values = [v[0] if isinstance(v, list) and len(v) == 1 else v for v in values]
    if len(values) != length:
        raise ValueError(f"{what} must have {length} entries, got {len(values)}")
    return [_exact_entry(v, k, 0, what, rational=True) for k, v in enumerate(values)]


def as_lists(matrix: np.ndarray) -> list[list]:
    """Rows of an object matrix as mutable lists, also for shapes like 3 x 0."""
    return [list(row) for row in matrix.tolist()] if matrix.shape[1] else [[] for _ in range(matrix.shape[0])]


def identity(n: int) -> np.ndarray:
    out = np.zeros((n, n), dtype=object)
    out[:] = 0
    for k in range(n):
        out[k, k] = 1
    return out


def zeros(n_rows: int, n_cols: int) -> np.ndarray:
    out = np.empty((n_rows, n_cols), dtype=object)
    out[...] = 0
    return out


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact product of object matrices, also when an inner dimension is 0."""
    out = zeros(a.shape[0], b.shape[1])
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            out[i, j] = sum((a[i, k] * b[k, j] for k in range(a.shape[1])), 0)
    return out


def matvec(a: np.ndarray, x) -> list:
    """Exact matrix-vector product as a list."""
    return [sum((a[i, k] * x[k] for k in range(a.shape[1])), 0) for i in range(a.shape[0])]


def normalize(value):
    """A Fraction with denominator 1 becomes an int, so results print simply."""
    if isinstance(value, Fraction) and value.denominator == 1:
        return int(value)
    return value


def matrix_latex(matrix: np.ndarray, highlight_rows=(), highlight_cols=()) -> str:
    """LaTeX for an exact matrix; highlighted rows/columns are coloured."""
    n_rows, n_cols = matrix.shape
    if n_rows == 0 or n_cols == 0:
        return rf"\text{{(empty {n_rows}}}\times\text{{{n_cols})}}"
    lines = []
    for i in range(n_rows):
        cells = []
        for j in range(n_cols):
            value = normalize(matrix[i, j])
            if isinstance(value, Fraction):
                sign = "-" if value < 0 else ""
                text = rf"{sign}\tfrac{{{abs(value.numerator)}}}{{{value.denominator}}}"
            else:
                text = str(value)
            if i in highlight_rows or j in highlight_cols:
                text = rf"\color{{#d62728}}{{{text}}}"
            cells.append(text)
        lines.append(" & ".join(cells))
    return r"\begin{pmatrix}" + r" \\ ".join(lines) + r"\end{pmatrix}"

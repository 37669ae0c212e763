"""Independent oracles for the integer algebra: sympy, islpy and brute force."""

from __future__ import annotations

import itertools

import islpy as isl
import sympy


def to_sympy(matrix) -> sympy.Matrix:
    return sympy.Matrix(matrix.shape[0], matrix.shape[1], [sympy.Rational(v) for v in matrix.flat])


def exact_product(*matrices) -> sympy.Matrix:
    out = to_sympy(matrices[0])
    for m in matrices[1:]:
        out = out * to_sympy(m)
    return out


def isl_points(A, b, names=None) -> set[tuple[int, ...]]:
    """The integer points of ``A x >= b`` according to islpy (must be bounded)."""
    n = len(A[0])
    names = [f"x{k}" for k in range(n)]
    terms = []
    for row, rhs in zip(A, b):
        lhs = " ".join(f"{'-' if c < 0 else '+'} {abs(int(c))} {v}" for c, v in zip(row, names))
        terms.append(f"0 {lhs} >= {int(rhs)}")
    text = "{ [" + ", ".join(names) + "] : " + (" and ".join(terms) or "true") + " }"
    points = []
    isl.Set(text).foreach_point(
        lambda p: points.append(tuple(p.get_coordinate_val(isl.dim_type.set, k).to_python() for k in range(n)))
    )
    return set(points)


def brute_force_points(A, b, radius: int) -> set[tuple[int, ...]]:
    """Integer points of ``A x >= b`` with every coordinate in ``[-radius, radius]``."""
    n = len(A[0])
    return {
        x
        for x in itertools.product(range(-radius, radius + 1), repeat=n)
        if all(sum(c * v for c, v in zip(row, x)) >= rhs for row, rhs in zip(A, b))
    }

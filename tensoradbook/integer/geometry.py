"""Small exact geometry for drawing the report's index sets (sec. 5.1, figs. 3 and 4).

The widgets in :mod:`tensoradbook.widgets` draw ``alpha``-space and ``z``-space
pictures; everything they compute beyond the core algorithms lives here, in
exact arithmetic (``int`` and ``fractions.Fraction``):

* :func:`image_range` -- the range of each entry of ``A alpha`` over the index
  box ``0 <= alpha < shape`` (the values ``beta`` can take);
* :func:`polygon_vertices` -- the vertices of a bounded 2-D region
  ``{z : A z >= b}``, e.g. ``Sigma(beta)`` of eq. 42 relaxed to real ``z``
  (the parallelogram of fig. 4b);
* :func:`loop_bounds` -- the loop bounds of eq. 45 for one right-hand side
  ``b``, as exact affine terms in the outer variables together with the
  ceiling/floor rounding the integer loops apply to them;
* :func:`drawn_entries`, :func:`solutions_in_view` and :func:`hidden_entries`
  -- the solutions ``alpha = I beta + K z`` of eq. 41 seen on two entries of
  ``alpha`` (the alpha-space panels of figs. 3 and 4a).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations, islice

from .matrix import as_exact_vector, as_int_matrix, as_rational_matrix, shown
from .fourier_motzkin import FourierMotzkin, fourier_motzkin


def box_range(terms, constant=0) -> tuple:
    """``(least, greatest)`` of ``constant + sum c * x`` while each ``x`` ranges over its ``(low, high)``, for
    ``terms`` of ``(c, (low, high))``: a linear form takes its extremes at the box's corners, so each term
    adds the smaller and the larger of its two ends. Exact on integers and fractions."""
    low = high = constant
    for c, (a, b) in terms:
        low += min(c * a, c * b)
        high += max(c * a, c * b)
    return low, high


def image_range(A, shape) -> list[tuple[int, int]]:
    """``(min, max)`` of each entry of ``A alpha`` over the box ``0 <= alpha <= shape - 1``.

    Per entry, :func:`box_range` of the row over the box.
    """
    A = as_int_matrix(A, "image_range: A")
    shape = as_exact_vector(shape, A.shape[1], "image_range: shape")
    if any(not isinstance(n, int) or n < 1 for n in shape):
        raise ValueError(f"image_range: shape {tuple(shape)} must hold positive integers")
    return [box_range(zip(row, ((0, n - 1) for n in shape))) for row in A.tolist()]


def _system_of(A, system: FourierMotzkin | None) -> FourierMotzkin:
    """``fourier_motzkin(A)``: the caller's ``system`` where it was made from ``A``, a ValueError where not."""
    if system is None:
        return fourier_motzkin(A)
    if not isinstance(system, FourierMotzkin) or system.A.shape != A.shape or not (system.A == A).all():
        raise ValueError(f"polygon_vertices: system was not made from A: pass fourier_motzkin(A) or None, "
                         f"got {shown(system)}")
    return system


def polygon_vertices(A, b, system: FourierMotzkin | None = None) -> list[tuple[Fraction, Fraction]]:
    """Vertices of the bounded region ``{z in R^2 : A z >= b}``, counter-clockwise.

    Returns ``[]`` for an empty region, one vertex for a single point and two for
    a segment. Every vertex is the intersection of two constraint lines that
    satisfies all constraints, so the vertices are exact Fractions. Raises
    ValueError when the region is non-empty and unbounded (Fourier-Motzkin,
    Algorithm 3, finds a variable without a lower or upper bound).
    ``system`` is ``fourier_motzkin(A)`` when the caller already has it (it
    does not depend on ``b``, as the report notes after eq. 45).
    """
    A = as_rational_matrix(A, "polygon_vertices: A")
    if A.shape[1] != 2:
        raise ValueError(f"polygon_vertices: A must have 2 columns, got {A.shape[1]}")
    b = [Fraction(v) for v in as_exact_vector(b, A.shape[0], "polygon_vertices: b")]
    system = _system_of(A, system)
    if not system.feasible(b):
        return []
    if system.unbounded_variable() is not None:
        raise ValueError("polygon_vertices: the region {z : A z >= b} is unbounded")
    rows = [(Fraction(p), Fraction(q)) for p, q in A.tolist()]

    def inside(z):
        return all(p * z[0] + q * z[1] >= c for (p, q), c in zip(rows, b))

    vertices = set()
    for i, j in combinations(range(len(rows)), 2):
        (p1, q1), (p2, q2) = rows[i], rows[j]
        det = p1 * q2 - q1 * p2
        if det == 0:
            continue
        z = ((b[i] * q2 - q1 * b[j]) / det, (p1 * b[j] - b[i] * p2) / det)  # Cramer's rule
        if inside(z):
            vertices.add(z)
    if len(vertices) < 3:
        return sorted(vertices)
    # A convex polygon's vertices are seen from its centroid in distinct directions.
    cx = sum(v[0] for v in vertices) / len(vertices)
    cy = sum(v[1] for v in vertices) / len(vertices)
    return sorted(vertices, key=lambda v: math.atan2(v[1] - cy, v[0] - cx))


@dataclass(frozen=True)
class AffineBound:
    """One term of a loop bound in eq. 45: ``constant + coefficients . x_{k+1..}``.

    ``constant`` is exact (the line to draw); the integer loop takes the
    ceiling of a lower term and the floor of an upper one (eq. 45).
    """

    constant: Fraction
    coefficients: tuple[Fraction, ...]
    lower: bool

    @property
    def integral(self) -> bool:
        """Whether the coefficients are integers, so the rounding acts on the constant alone."""
        return all(c.denominator == 1 for c in self.coefficients)

    @property
    def rounded_constant(self) -> Fraction:
        """For integer coefficients and integer ``x``, ``ceil(c + a.x) = ceil(c) + a.x`` (floor alike)."""
        if not self.integral:
            return self.constant
        return Fraction(math.ceil(self.constant) if self.lower else math.floor(self.constant))

    def value(self, later) -> int:
        """The integer bound this term gives for integer values of the later variables."""
        raw = self.constant + sum(c * v for c, v in zip(self.coefficients, later))
        return math.ceil(raw) if self.lower else math.floor(raw)


def _terms(M, Mhat, b: list, lower: bool) -> list[AffineBound]:
    """The distinct terms ``M b + Mhat x`` of one side; constant terms folded into the tightest."""
    terms, constants = [], []
    for row, hat in zip(M.tolist(), Mhat.tolist()):
        constant = sum((Fraction(m) * v for m, v in zip(row, b)), Fraction(0))
        coefficients = tuple(Fraction(h) for h in hat)
        if not any(coefficients):
            constants.append(constant)
            continue
        term = AffineBound(constant, coefficients, lower)
        if term not in terms:
            terms.append(term)
    if constants:
        tightest = max(constants) if lower else min(constants)
        terms.insert(0, AffineBound(tightest, (Fraction(0),) * Mhat.shape[1], lower))
    return terms


def loop_bounds(system: FourierMotzkin, b) -> list[tuple[list[AffineBound], list[AffineBound]]]:
    """Per variable ``k`` (index order), the lower and upper terms of eq. 45 for this ``b``.

    ``max(t.value(later) for t in lower) <= x_k <= min(t.value(later) for t in upper)``
    is exactly :meth:`FourierMotzkin.bounds`; an empty side means unbounded.
    """
    if not isinstance(system, FourierMotzkin):
        raise ValueError(f"loop_bounds: system must be a FourierMotzkin (from fourier_motzkin(A)), got {shown(system)}")
    b = [Fraction(v) for v in as_exact_vector(b, system.A.shape[0], "loop_bounds: b")]
    return [(_terms(system.L[k], system.Lhat[k], b, lower=True),
             _terms(system.H[k], system.Hhat[k], b, lower=False))
            for k in range(system.n_vars)]


def drawn_entries(kernel) -> tuple[int, int]:
    """The first pair of entries ``(a, b)`` of ``alpha`` on which ``z -> (I beta + K z)[a, b]`` is one to
    one: the ``2 x kappa`` block of the kernel basis ``K`` (``kappa`` = 1 or 2 columns) has rank ``kappa``.
    Drawn against each other, those two entries show every solution apart (figs. 3, 4a)."""
    K = as_int_matrix(kernel, "drawn_entries: kernel")
    kappa = K.shape[1]
    if kappa not in (1, 2) or K.shape[0] < 2:
        raise ValueError(f"drawn_entries: a kernel basis of 1 or 2 columns and at least 2 rows, got {K.shape}")
    rows = K.tolist()
    for a, b in combinations(range(len(rows)), 2):
        if (rows[a][0] or rows[b][0]) if kappa == 1 else rows[a][0] * rows[b][1] - rows[a][1] * rows[b][0]:
            return a, b
    raise ValueError(f"drawn_entries: the columns of {rows} are not independent")


def _solution_family(particular, kernel, what: str) -> tuple[list[int], list[list[int]]]:
    """``p`` and ``K`` of the solutions ``p + K z`` as Python integers, checked."""
    K = as_int_matrix(kernel, f"{what}: kernel")
    p = as_exact_vector(particular, K.shape[0], f"{what}: particular")
    if not all(isinstance(v, int) for v in p) or K.shape[1] not in (1, 2):
        raise ValueError(f"{what}: an integer particular solution and a kernel basis of 1 or 2 columns, "
                         f"got {shown(particular)} and {K.shape[1]} columns")
    return p, K.tolist()


def solutions_in_view(particular, kernel, entries, view, outside=None, limit: int = 400) -> list[tuple[int, ...]]:
    """The integer ``z`` (at most ``limit``, in a fixed order) whose solution ``alpha = p + K z`` has its
    ``entries`` ``(a, b)`` inside ``view = ((low_a, high_a), (low_b, high_b))`` (real bounds, closed) and,
    given a shape ``outside``, leaves the box ``0 <= alpha < outside``.

    ``(a, b)`` is a pair of :func:`drawn_entries`, so ``z`` follows from
    ``alpha[a, b]``: for one kernel column an interval of ``z``, for two the
    points of the view's integer grid whose ``K_ab^-1 (alpha_ab - p_ab)`` is
    integral (Cramer's rule). Python integers throughout: a basis typed by
    hand may leave int64.
    """
    p, K = _solution_family(particular, kernel, "solutions_in_view")
    a, b = entries
    if len(K[0]) == 1:
        low, high = -math.inf, math.inf
        for (v0, v1), c in zip(view, (a, b)):
            if K[c][0]:
                ends = sorted(((Fraction(v0) - p[c]) / K[c][0], (Fraction(v1) - p[c]) / K[c][0]))
                low, high = max(low, ends[0]), min(high, ends[1])
            elif not v0 <= p[c] <= v1:  # this entry is p_c for every z: in the view for all or for none
                return []
        candidates = ((z,) for z in range(math.ceil(low), math.floor(high) + 1))
    else:
        (k00, k01), (k10, k11) = K[a], K[b]
        det = k00 * k11 - k01 * k10
        numerators = ((k11 * (x - p[a]) - k01 * (y - p[b]), -k10 * (x - p[a]) + k00 * (y - p[b]))
                      for x in range(math.ceil(view[0][0]), math.floor(view[0][1]) + 1)
                      for y in range(math.ceil(view[1][0]), math.floor(view[1][1]) + 1))
        candidates = ((n0 // det, n1 // det) for n0, n1 in numerators if n0 % det == 0 and n1 % det == 0)

    def leaves(z):
        alpha = (pc + sum(k * zj for k, zj in zip(row, z)) for pc, row in zip(p, K))
        return not all(0 <= v < n for v, n in zip(alpha, outside))

    return list(islice((z for z in candidates if outside is None or leaves(z)), limit))


def hidden_entries(particular, kernel, entries) -> dict[int, tuple[Fraction, Fraction, Fraction]]:
    """For a kernel basis of two columns: each entry ``h`` of ``alpha`` not in ``entries = (a, b)`` as an
    affine function of those two on the solutions, ``alpha_h = c + g_a alpha_a + g_b alpha_b``, as
    ``{h: (c, g_a, g_b)}`` (exact; ``alpha_h = p_h + K_h K_ab^-1 (alpha_ab - p_ab)``)."""
    p, K = _solution_family(particular, kernel, "hidden_entries")
    if len(K[0]) != 2:
        raise ValueError(f"hidden_entries: a kernel basis of 2 columns, got {len(K[0])}")
    a, b = entries
    (k00, k01), (k10, k11) = K[a], K[b]
    det = Fraction(k00 * k11 - k01 * k10)
    out = {}
    for h in range(len(p)):
        if h in (a, b):
            continue
        g_a = (K[h][0] * k11 - K[h][1] * k10) / det
        g_b = (-K[h][0] * k01 + K[h][1] * k00) / det
        out[h] = (p[h] - g_a * p[a] - g_b * p[b], g_a, g_b)
    return out

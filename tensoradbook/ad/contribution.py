"""One occurrence's contribution to a gradient by Algorithm 4 of the report (sec. 5, eqs. 38-47).

For an occurrence ``x[A alpha + a]`` with adjoint ``Delta`` (:mod:`tensoradbook.ad.reverse`), the gradient
element ``dx[beta]`` gets

    [C (beta - a) = 0] [I (beta - a) integral] [F b <= 0] sum_{z in Sigma(beta)} Delta(alpha = I (beta - a) + K z)

with ``I``, ``K``, ``C`` from the Smith normal form (sec. 4.1) and ``Sigma(beta)`` the box of the output and the
liberated sums (sec. 5.2) solved by Fourier-Motzkin (sec. 4.2) into nested sums. The work splits in two:
:func:`lattice` is the integer geometry of the occurrence (what does not depend on its adjoint or on the order of
its loops), :func:`solved` orders the loops, bounds them and writes the expression. The report's form
(:func:`tensoradbook.ad.derive.derive`) and the kernels' form (:mod:`tensoradbook.ad.kernel_form`) share the
first and differ in what they give the second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..integer.fourier_motzkin import TooManyInequalities, fourier_motzkin
from ..integer.smith import IntegerInverse, integer_inverse
from ..lang.evaluate import sum_range
from ..lang.expr import (Affine, Atom, Element, ExpressionError, Expr, If, Sum, postorder, rebuild, replace_free,
                         substitute, with_children)
from ..lang.function import Function
from ..lang.limits import MAX_GENERATED_BOUNDS, MAX_INTEGER
from ..lang.printer import affine_text
from ..lang.scope import past_max_integer
from ..lang.simplify import ZERO, add, decided_on, hoist_invariants, if_
from .reverse import Occurrence


def extended_domain(fn: Function, scope: tuple[Sum, ...]) -> tuple[list[str], list[list[int]], list[int]]:
    """The extended index ``alpha`` (outputs, then liberated sums) and its box ``R alpha >= r`` (eq. 52)."""
    names = list(fn.indices) + [s.index for s in scope]
    position = {name: k for k, name in enumerate(names)}
    R, r = [], []

    def row(affine: Affine, sign: int, extra: tuple[str, int] | None):
        # sign * numerator(affine) + extra >= 0, i.e. coefficients . alpha >= -constant
        coefficients = [0] * len(names)
        for name, c in affine.terms:
            coefficients[position[name]] += sign * c
        if extra is not None:
            coefficients[position[extra[0]]] += extra[1]
        R.append(coefficients)
        r.append(-sign * affine.constant)

    for name, size in zip(fn.indices, fn.shapes[fn.name]):
        row(Affine.index(name), 1, None)                            # i >= 0
        row(Affine.index(name) - (size - 1), -1, None)              # size - 1 - i >= 0
    for s in scope:
        for low in s.lower:   # s >= ceil(low)  <=>  d s - num >= 0
            row(low.numerator, -1, (s.index, low.denominator))
        for high in s.upper:  # s <= floor(high) <=>  num - d s >= 0
            row(high.numerator, 1, (s.index, -high.denominator))
    return names, R, r


def _affine(coefficients, names, constant=0) -> Affine:
    return Affine.of({n: Fraction(c) for n, c in zip(names, coefficients) if c}, constant)


@dataclass(frozen=True)
class Lattice:
    """The integer geometry of one occurrence ``x[A alpha + a]`` on the gradient's indices ``beta``: what Algorithm 4
    finds before any loop is ordered or any adjoint is read. For ``x[(A alpha + a) / d]``, ``A`` and ``a`` are the
    numerator's: it reads ``beta`` where ``A alpha + a = d beta``."""

    alpha: tuple[str, ...]           # the extended index: outputs, then liberated sums (eq. 52)
    box: tuple[list, list]           # R and r of the box R alpha >= r
    index_matrix: np.ndarray         # A
    offset: tuple[int, ...]          # a
    inverse: IntegerInverse          # I, K and C of the Smith normal form (sec. 4.1)
    particular: tuple[Affine, ...]   # I (beta - a), affine in beta
    conditions: tuple[Atom, ...]     # C (beta - a) = 0 and I (beta - a) integral (eqs. 16, 17)
    beta: tuple[str, ...]
    z_names: tuple[str, ...]         # one per column of K


@dataclass(frozen=True)
class Contribution:
    """What one occurrence adds to ``dx[beta]``, with the matrices behind it (Alg. 4)."""

    element: Element
    lattice: Lattice
    kernel: np.ndarray      # K, its columns in the order of the loops (z_0 innermost)
    bounds: object          # the FourierMotzkin of R K z >= r - R I (beta - a)
    expression: Expr
    scope: tuple[Sum, ...]  # the liberated sums around the occurrence (sec. 5.2)
    adjoint: Expr           # its Delta (eq. 38), free in alpha: what the scatter form of eq. 40 adds

    @property
    def index_matrix(self) -> np.ndarray:
        return self.lattice.index_matrix

    @property
    def offset(self) -> tuple[int, ...]:
        return self.lattice.offset

    @property
    def alpha(self) -> tuple[str, ...]:
        return self.lattice.alpha

    @property
    def pseudo_inverse(self) -> np.ndarray:
        return self.lattice.inverse.pinv

    @property
    def cokernel(self) -> np.ndarray:
        return self.lattice.inverse.cokernel


def lattice(fn: Function, occurrence: Occurrence, beta, z_names) -> Lattice:
    """The occurrence's geometry: its index matrix, the integer inverse and the conditions of eqs. 16 and 17."""
    element = occurrence.element
    alpha, R, r = extended_domain(fn, occurrence.scope)
    # An index (A alpha + a) / d with a division (a gradient's df[b / 2], derived again) reads beta where
    # A alpha + a = d beta: integer equations that hold only where the division is exact, so A and a are
    # its numerator's and the target is d beta - a (d = 1 without a division).
    A = [[int(index.numerator.coefficient(name)) for name in alpha] for index in element.indices]
    matrix = np.array(A, dtype=object).reshape(len(A), len(alpha))
    inverse = integer_inverse(matrix)
    target = [Affine.index(b).scale(index.denominator) - index.constant
              for b, index in zip(beta, element.indices)]   # d beta - a

    def combine(row):  # row . (beta - a) as an affine in beta
        out = Affine.constant_value(0)
        for c, t in zip(row, target):
            out = out + t.scale(c)
        return out

    atoms = [Atom(combine(row), 0) for row in inverse.cokernel.tolist()]            # eq. 16
    particular = [combine(row) for row in inverse.pinv.tolist()]                      # I (beta - a)
    atoms += [Atom(p.numerator, p.denominator) for p in particular if not p.is_integral]  # eq. 17
    return Lattice(tuple(alpha), (R, r), matrix, tuple(index.constant for index in element.indices), inverse,
                   tuple(particular), tuple(atoms), tuple(beta), tuple(z_names[:inverse.kernel.shape[1]]))


def solved(fn: Function, geometry: Lattice, occurrence: Occurrence, shapes: dict, kernel: list,
           system=None) -> Contribution:
    """The occurrence's contribution with the kernel basis ``kernel`` (the columns of ``K`` in loop order, ``z_0``
    innermost): the loops' bounds by Fourier-Motzkin (eqs. 42-44) unless ``system`` gives them already (solved for
    the same ``kernel``), the adjoint at ``alpha = I (beta - a) + K z``, and the conditions outside which it is 0
    (eqs. 16, 17, 34), decided on the gradient's box."""
    element, z_names, beta = occurrence.element, list(geometry.z_names), list(geometry.beta)
    mapping = {name: geometry.particular[j] + _affine(kernel[j], z_names) for j, name in enumerate(geometry.alpha)}
    system, rhs = _loop_system(fn, element, geometry, kernel, system)
    bounds = _loop_bounds(system, rhs, z_names)
    bounds = _without_dominated(bounds, z_names, dict(zip(beta, [(0, n - 1) for n in shapes[element.name]])))
    adjoint = occurrence.adjoint
    if _far(element, mapping, shapes):
        # The element itself, recomputed in its adjoint, is read at beta: alpha = I beta + K z makes its indices
        # A I beta + a, equal to beta where the conditions of eqs. 16 and 17 hold, but with the pseudo-inverse's
        # entries (x2[9007199254740991 * p; 3 * p; 0] gave 2.7e31 * dx2_1, past MAX_INTEGER, though dx2_1 is 0).
        adjoint = replace_free(adjoint, element, Element(element.name, tuple(Affine.index(b) for b in beta)))
    body = _nested_sums(_small_moduli_everywhere(substitute(adjoint, mapping)), bounds, z_names)
    atoms = [*geometry.conditions, *_range_conditions(system, rhs)]
    expression = box_decided(if_(small_moduli(atoms), body, ZERO), beta, fn.shapes[element.name])
    n_z = len(z_names)
    return Contribution(element, geometry, np.array(kernel, dtype=object).reshape(len(geometry.alpha), n_z),
                        system, expression, occurrence.scope, occurrence.adjoint)


def _loop_system(fn: Function, element: Element, geometry: Lattice, kernel: list, system=None):
    """Sigma(beta) as ``(R K) z >= r - R I beta'`` (eqs. 42-44): its Fourier-Motzkin system (``system`` where
    given), and the right-hand sides, affine in ``beta``."""
    (R, r), particular, n_z = geometry.box, geometry.particular, len(geometry.z_names)
    n_alpha = len(geometry.alpha)
    RK = [[sum(R[i][j] * kernel[j][k] for j in range(n_alpha)) for k in range(n_z)] for i in range(len(R))]
    rhs = []
    for i in range(len(R)):
        value = Affine.constant_value(r[i])
        for j in range(n_alpha):
            value = value - particular[j].scale(R[i][j])
        rhs.append(value)
    if system is not None:
        return system, rhs
    try:
        system = fourier_motzkin(np.array(RK, dtype=object).reshape(len(R), n_z), names=list(geometry.z_names),
                                 max_generated=MAX_GENERATED_BOUNDS)
    except TooManyInequalities as error:
        raise ExpressionError(
            f"{fn.name}: the loop bounds of the gradient's sums over {element.name}[...] ({n_z} nested sums whose "
            f"bounds depend on each other) need too many inequalities: {error} (MAX_GENERATED_BOUNDS), which "
            "would take minutes. A derivative's sums have max/min bounds, so second derivatives reach this first "
            "(4 nested sums derive twice, 5 may not); split the function into smaller ones") from None
    return system, rhs


def _loop_bounds(system, rhs: list, z_names: list) -> list[tuple]:
    """Each loop's ``(lower, upper)`` bound terms, ``z_0`` innermost, from the eliminated system (eqs. 22-26)."""
    def bound(M, Mhat, k):
        terms = []
        for row, hat in zip(M.tolist(), Mhat.tolist()):
            value = Affine.constant_value(0)
            for c, b in zip(row, rhs):
                value = value + b.scale(c)
            terms.append(value + _affine(hat, z_names[k + 1:]))
        return terms

    return [(_tidy(bound(system.L[k], system.Lhat[k], k), lower=True),
             _tidy(bound(system.H[k], system.Hhat[k], k), lower=False)) for k in range(len(z_names))]


def _nested_sums(body: Expr, bounds: list[tuple], z_names: list) -> Expr:
    """``body`` inside the loops over ``z`` (``z_0`` innermost, eq. 45); a loop of one term is substituted."""
    for k, (lower, upper) in enumerate(bounds):
        if len(lower) == 1 and lower == upper and lower[0].is_integral:
            body = substitute(body, {z_names[k]: lower[0]})
        else:
            body = Sum(z_names[k], lower, upper, body)
    return body


def _range_conditions(system, rhs: list) -> list[Atom]:
    """The conditions of eq. 34, ``F b <= 0`` (``-F b >= 0``), that the loops' ranges do not already carry."""
    atoms = []
    for row in system.F.tolist():
        if sum(1 for c in row if c) > 1:
            # A combination of a lower and an upper bound of some z_k: when it fails, z_k's range
            # is empty and the sums give 0 anyway. Only original rows without any z need a condition.
            continue
        value = Affine.constant_value(0)
        for c, b in zip(row, rhs):
            value = value - b.scale(c)
        atoms.append(Atom(value.numerator, 0, inequality=True))
    return atoms


def gradient_function(fn: Function, name: str, beta, parts, shapes: dict, hoisted: bool) -> Function:
    """``name[beta] = `` the sum of the contributions ``parts``, its loop invariants hoisted where ``hoisted`` (the
    kernels' form), refused where its index arithmetic passes MAX_INTEGER."""
    total = ZERO
    for part in parts:
        total = add(total, part.expression)
    if hoisted:
        total = hoist_invariants(total, {b: (0, n - 1) for b, n in zip(beta, shapes[name])})
    return _within_max_integer(Function(name, tuple(beta), total, shapes), fn)


def _far(element: Element, mapping: dict, shapes: dict) -> bool:
    """Whether ``element``'s indices, with ``mapping`` substituted, may pass MAX_INTEGER: each name counted at the
    largest extent of any dimension (an upper bound for the gradient's indices; a sum's may be larger)."""
    extent = max((n for shape in shapes.values() for n in shape), default=1)
    for index in element.indices:
        moved = index.substitute(mapping)
        if abs(moved.constant) + sum(abs(c) for _, c in moved.terms) * extent >= MAX_INTEGER:
            return True
    return False


def _small_residue(atom: Atom) -> Atom:
    """``atom`` with a modulus ``m`` and its coefficients and constant taken modulo ``m`` where one is ``m`` or
    more in size: the same condition. Substituting ``alpha = I beta + K z`` multiplies an index's
    coefficients (``(2**52 * p + j) % 4`` becomes ``(2**52 * b - (2**52 + 2) * z + ...) % 4``) past what
    index arithmetic may reach, MAX_INTEGER, while the residues stay below ``m``."""
    m, affine = atom.modulus, atom.affine
    if not m or all(abs(c) < m for c in (affine.constant, *(c for _, c in affine.terms))):
        return atom
    return Atom(Affine.of({name: c % m for name, c in affine.terms}, affine.constant % m), m)


def small_moduli(atoms) -> tuple[Atom, ...]:
    """``atoms`` with every modulus below MAX_INTEGER where it can be, the same conditions: the residues of
    :func:`_small_residue`, and a modulus that a denominator multiplied past it split by the Chinese remainder
    theorem. Substituting ``n = dx_0 / 3`` into ``(2 - 2 n) % M = 2`` gives ``-2 dx_0 % 3 M = 0`` (eq. 41's
    rational ``I beta``, multiplied through); with ``M = 2**53 - 1`` that is ``% 3 = 0`` and ``% M = 0``.
    A common factor of the modulus and every coefficient is divided out first; a prime power past MAX_INTEGER
    stays, and the parser refuses its text with that limit."""
    out = []
    for atom in atoms:
        m, affine = atom.modulus, atom.affine
        if not m:  # an equation or inequality
            out.append(atom)
            continue
        if m >= MAX_INTEGER:
            common = math.gcd(m, affine.constant, *(c for _, c in affine.terms))
            m, affine = m // common, Affine.of({n: c // common for n, c in affine.terms}, affine.constant // common)
        out.extend(_small_residue(Atom(affine, factor)) for factor in _coprime_factors(m))
    return tuple(out)


def _coprime_factors(m: int) -> tuple[int, ...]:
    """Pairwise coprime factors of ``m``, each below MAX_INTEGER where its prime powers are: the
    prime powers packed first-fit, largest first; ``(m,)`` where one prime power reaches MAX_INTEGER."""
    if m < MAX_INTEGER:
        return (m,)
    from sympy import factorint  # at first use: sympy's import (~0.3 s) is not paid by what never needs it

    powers = sorted((p**e for p, e in factorint(m).items()), reverse=True)
    if powers[0] >= MAX_INTEGER:
        return (m,)
    factors: list[int] = []
    for power in powers:
        fits = next((k for k, factor in enumerate(factors) if factor * power < MAX_INTEGER), None)
        if fits is None:
            factors.append(power)
        else:
            factors[fits] *= power
    return tuple(factors)


def _small_moduli_everywhere(expression: Expr) -> Expr:
    """:func:`small_moduli` on the conditions of every ``if`` in ``expression``."""
    def step(node, children):
        node = with_children(node, children)
        if isinstance(node, If):
            condition = small_moduli(node.condition)
            if condition != node.condition:
                return If(condition, node.then, node.otherwise, node.span)
        return node

    return rebuild(expression, step)


def _without_dominated(bounds: list[tuple], z_names: list[str], box: dict) -> list[tuple]:
    """Each sum's ``(lower, upper)`` bound lists (``z_0`` innermost) without the terms that never decide the bound
    on ``box``: a lower bound term whose greatest value is at most another's least (an upper one likewise).

    The same sums, in fewer terms; and Fourier-Motzkin's products stay small. It multiplies a row by the other's
    coefficient, so ``k >= ceil((3 - n) / D)`` beside ``k >= 1`` becomes ``D k >= 3 - n``, and the gradient's bound
    ``3 - D dx_z1`` reached 2 D where ``D = 2**53 - 1``: past MAX_INTEGER, so the derivative did not read back,
    while ``0`` decided that bound everywhere."""
    ranges, kept = dict(box), list(bounds)
    for k in reversed(range(len(bounds))):  # outermost first: inner bounds range over the outer sums' indices
        lower, upper = bounds[k]
        low, high = sum_range(lower, upper, ranges)
        if low > high:  # empty everywhere: the sum stays as derived
            return kept
        kept[k] = _deciding(lower, ranges, 1), _deciding(upper, ranges, -1)
        ranges[z_names[k]] = (low, high)
    return kept


def _deciding(terms: tuple[Affine, ...], ranges: dict, sign: int) -> tuple[Affine, ...]:
    """The terms of a max (``sign`` 1) or min (-1) that can be its value on ``ranges``: a term goes where another is
    never below it (above, for a min); of terms equal everywhere, the first stays."""
    spans = [sorted(x * sign for x in a.interval(ranges)) for a in terms]

    def beaten(i: int, j: int) -> bool:
        return spans[i][1] <= spans[j][0]

    return tuple(a for i, a in enumerate(terms)
                 if not any(j != i and beaten(i, j) and not (beaten(j, i) and j > i) for j in range(len(terms))))


def _tidy(terms: list[Affine], lower: bool) -> tuple[Affine, ...]:
    """Merge bound terms that differ only in their constant: the tightest one wins."""
    best: dict[tuple, Affine] = {}
    for t in terms:
        key = (t.terms, t.denominator)
        if key not in best or (t.constant > best[key].constant) == lower:
            best[key] = t
    return tuple(best.values())


def _within_max_integer(gradient: Function, fn: Function) -> Function:
    """``gradient``, refused with the limit where its index arithmetic passes MAX_INTEGER, so that every derivative
    reads back. Fourier-Motzkin rearranges the bounds: ``t <= j + 3`` with ``t`` from ``-(2**53 - 1)`` gives the
    gradient's ``j >= t - 3``, which reaches ``-(2**53 + 2)``. An index of the gradient's own that takes one value
    (a dimension of size 1) is written as that value first: ``12009599006321320 * da_0`` with ``da_0`` only 0."""
    past = past_max_integer(gradient)
    if past is None:
        return gradient
    pins = {b: Affine.constant_value(0) for b, n in zip(gradient.indices, gradient.shapes[gradient.name]) if n == 1}
    if pins:
        pinned = Function(gradient.name, gradient.indices, substitute(gradient.body, pins), gradient.shapes)
        if (past := past_max_integer(pinned)) is None:
            return pinned
    affine, far = past
    raise ExpressionError(f"derive: {gradient.name}, the gradient of {fn.name}, computes {affine_text(affine)}, whose "
                          f"numbers or values reach {far:.3g}: past MAX_INTEGER = 2**53, where index arithmetic stays "
                          "(Fourier-Motzkin rearranges bounds and indices); keep the sums' bounds and the indices of "
                          f"{fn.name} further from it")


def never_reached(fn: Function, scope: tuple[Sum, ...]) -> bool:
    """Whether a sum of ``scope`` is empty at every element of the output's box, so an occurrence inside it
    adds nothing. Its Fourier-Motzkin bounds would add the sum's lower and upper bounds, which the parser
    bounds by MAX_INTEGER each, not their sum (``max [9007199254740991 + p; 1]`` to ``3`` gave 2**54)."""
    intervals = {name: (0, n - 1) for name, n in zip(fn.indices, fn.shapes[fn.name])}
    for s in scope:
        low, high = sum_range(s.lower, s.upper, intervals)
        if low > high:
            return True
        intervals[s.index] = (low, high)
    return False


def sum_depth(node: Expr) -> int:
    """How many sums there are: an upper bound on the kernel dimension beyond the output's."""
    return sum(isinstance(n, Sum) for n in postorder(node))


def box_decided(expression: Expr, beta: list[str], shape) -> Expr:
    """Decide the conditions of the ``if``s on the gradient's box ``0 <= beta < shape``
    (:func:`~tensoradbook.lang.simplify.decided_on`).

    The top-level ``if`` is the gate of eqs. 16, 17 and 34 (``else (0)``) or, where the gate is
    empty, the element's own conditional from the function (any ``else``,
    e.g. ``dw[] = if {0 - 1 >= 0} then (0) else (df[0])``): the decision must
    not take the ``else`` to be 0. The ``if``s below it are the function's own,
    with ``beta`` substituted: one that holds nowhere (``j = 2**52`` at ``j = (6 -
    da_0) / 2``) may leave MAX_INTEGER once its denominator is multiplied out
    (``-da_0 - 9007199254740986 = 0``), so it goes too.
    """
    return decided_on(expression, dict(zip(beta, [(0, n - 1) for n in shape])))

"""Derivatives of element-wise defined functions: Algorithm 4 of the report (sec. 5).

For ``f[alpha] = body`` and the adjoint ``df`` (shaped like ``f``), the
gradient of ``sum(df * f)`` with respect to an argument ``x`` is, per element
``beta`` of ``x`` (eqs. 38-47),

    dx[beta] = sum over occurrences x[A alpha + a] of
               [C (beta - a) = 0] [I (beta - a) integral] [F b <= 0]
               sum_{z in Sigma(beta)} Delta(alpha = I (beta - a) + K z)

where ``Delta`` is the occurrence's adjoint from reverse accumulation (sec. 2,
:mod:`tensoradbook.ad.reverse`), ``I``, ``K``, ``C`` come from the Smith normal form
(sec. 4.1) and ``Sigma(beta)`` is the box of ``f`` and the liberated sums'
ranges (sec. 5.2) solved by Fourier-Motzkin (sec. 4.2) into nested sums with
``max``/``min`` bounds. Each gradient element is an independent expression:
one thread per element, no atomics.

The result of :func:`derive` is again a set of element-wise functions, so it
can be derived again (sec. 5.3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from fractions import Fraction

import numpy as np
from sympy import factorint

from ..lang.expr import (Affine, Atom, Binary, Element, ExpressionError, Expr, If, Number, Sum, memory_step,
                         Unary, postorder, rebuild, replace, replace_free, substitute, with_children)
from ..lang.evaluate import sum_range
from ..lang.function import Function
from ..lang.names import all_names, apart, fresh_name
from ..lang.parser import parse
from ..lang.printer import affine_text
from ..lang.scope import past_max_integer
from ..integer.fourier_motzkin import TooManyInequalities, fourier_motzkin
from ..lang.limits import MAX_GENERATED_BOUNDS, MAX_INTEGER
from ..integer.smith import integer_inverse
from .reverse import Occurrence, ReverseSweep, reverse_accumulate
from ..lang.simplify import ZERO, add, atom_truth, hoist_invariants, if_, peel_gates


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
class Contribution:
    """What one occurrence ``x[A alpha + a]`` adds to ``dx[beta]``, with the matrices behind it (Alg. 4). For
    ``x[(A alpha + a) / d]``, ``A`` and ``a`` are the numerator's: it reads ``beta`` where ``A alpha + a = d beta``."""

    element: Element
    index_matrix: np.ndarray
    offset: tuple[int, ...]
    alpha: tuple[str, ...]
    pseudo_inverse: np.ndarray
    kernel: np.ndarray
    cokernel: np.ndarray
    bounds: object  # the FourierMotzkin of R K z >= r - R I (beta - a)
    expression: Expr
    scope: tuple[Sum, ...]  # the liberated sums around the occurrence (sec. 5.2)
    adjoint: Expr           # its Delta (eq. 38), free in alpha: what the scatter form of eq. 40 adds


def _loop_order(adjoint: Expr, alpha: list[str], kernel: list[list[int]], shapes: dict) -> list[list[int]]:
    """The kernel basis's columns reordered so the innermost loop (``z_0``) has the smallest memory strides.

    Any order of the columns is a basis of the same lattice, and
    Fourier-Motzkin bounds any order of loops (sec. 4.2); only the speed
    differs. The cost of ``z_k`` is how far, in elements of row-major arrays,
    one step of ``z_k`` moves each read of the adjoint.
    """
    n_z = len(kernel[0]) if kernel else 0
    if n_z < 2:
        return kernel
    cost = [memory_step(adjoint, {name: row[k] for name, row in zip(alpha, kernel)}, shapes) for k in range(n_z)]
    order = sorted(range(n_z), key=cost.__getitem__)
    return [[row[k] for k in order] for row in kernel]


def _contribution(fn: Function, occurrence, beta: list[str], z_names: list[str], shapes: dict,
                  fast_loop_order: bool) -> Contribution:
    element = occurrence.element
    alpha, R, r = extended_domain(fn, occurrence.scope)
    # An index (A alpha + a) / d with a division (a gradient's df[b / 2], derived again) reads beta where
    # A alpha + a = d beta: integer equations that hold only where the division is exact, so A and a are
    # its numerator's and the target is d beta - a (d = 1 without a division).
    A = [[int(index.numerator.coefficient(name)) for name in alpha] for index in element.indices]
    offset = [index.constant for index in element.indices]
    inverse = integer_inverse(np.array(A, dtype=object).reshape(len(A), len(alpha)))
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
    n_z = inverse.kernel.shape[1]
    z_names = z_names[:n_z]
    kernel = inverse.kernel.tolist()
    if fast_loop_order:
        kernel = _loop_order(occurrence.adjoint, alpha, kernel, shapes)
    mapping = {}
    for j, name in enumerate(alpha):
        mapping[name] = particular[j] + _affine(kernel[j], z_names)
    # Sigma(beta): R (I beta' + K z) >= r  <=>  (R K) z >= r - R I beta'  (eqs. 42-44)
    RK = [[sum(R[i][j] * kernel[j][k] for j in range(len(alpha))) for k in range(n_z)] for i in range(len(R))]
    rhs = []
    for i in range(len(R)):
        value = Affine.constant_value(r[i])
        for j in range(len(alpha)):
            value = value - particular[j].scale(R[i][j])
        rhs.append(value)
    try:
        system = fourier_motzkin(np.array(RK, dtype=object).reshape(len(R), n_z), names=z_names,
                                 max_generated=MAX_GENERATED_BOUNDS)
    except TooManyInequalities as error:
        raise ExpressionError(
            f"{fn.name}: the loop bounds of the gradient's sums over {element.name}[...] ({n_z} nested sums whose "
            f"bounds depend on each other) need too many inequalities: {error} (MAX_GENERATED_BOUNDS), which "
            "would take minutes. A derivative's sums have max/min bounds, so second derivatives reach this first "
            "(4 nested sums derive twice, 5 may not); split the function into smaller ones") from None

    def bound(M, Mhat, k):
        terms = []
        for row, hat in zip(M.tolist(), Mhat.tolist()):
            value = Affine.constant_value(0)
            for c, b in zip(row, rhs):
                value = value + b.scale(c)
            terms.append(value + _affine(hat, z_names[k + 1:]))
        return terms

    bounds = [(_tidy(bound(system.L[k], system.Lhat[k], k), lower=True),
               _tidy(bound(system.H[k], system.Hhat[k], k), lower=False)) for k in range(n_z)]
    bounds = _without_dominated(bounds, z_names, dict(zip(beta, [(0, n - 1) for n in shapes[element.name]])))
    adjoint = occurrence.adjoint
    if _far(element, mapping, shapes):
        # The element itself, recomputed in its adjoint, is read at beta: alpha = I beta + K z makes its indices
        # A I beta + a, equal to beta where the conditions of eqs. 16 and 17 hold, but with the pseudo-inverse's
        # entries (x2[9007199254740991 * p; 3 * p; 0] gave 2.7e31 * dx2_1, past MAX_INTEGER, though dx2_1 is 0).
        adjoint = replace_free(adjoint, element, Element(element.name, tuple(Affine.index(b) for b in beta)))
    body = _small_moduli_everywhere(substitute(adjoint, mapping))
    for k, (lower, upper) in enumerate(bounds):  # z_0 innermost (eqs. 22-26, 45)
        if len(lower) == 1 and lower == upper and lower[0].is_integral:  # a sum of one term
            body = substitute(body, {z_names[k]: lower[0]})
        else:
            body = Sum(z_names[k], lower, upper, body)
    for row in system.F.tolist():  # eq. 34: F b <= 0, i.e. -F b >= 0
        if sum(1 for c in row if c) > 1:
            # A combination of a lower and an upper bound of some z_k: when it fails, z_k's range
            # is empty and the sums give 0 anyway. Only original rows without any z need a condition.
            continue
        value = Affine.constant_value(0)
        for c, b in zip(row, rhs):
            value = value - b.scale(c)
        atoms.append(Atom(value.numerator, 0, inequality=True))
    expression = _box_decide(if_(_small_moduli(atoms), body, ZERO), beta, fn.shapes[element.name])
    return Contribution(element, np.array(A, dtype=object).reshape(len(A), len(alpha)), tuple(offset),
                        tuple(alpha), inverse.pinv, np.array(kernel, dtype=object).reshape(len(alpha), n_z),
                        inverse.cokernel, system, expression,
                        occurrence.scope, occurrence.adjoint)


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


def _small_moduli(atoms) -> tuple[Atom, ...]:
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
    """:func:`_small_moduli` on the conditions of every ``if`` in ``expression``."""
    def step(node, children):
        node = with_children(node, children)
        if isinstance(node, If):
            condition = _small_moduli(node.condition)
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


class GradientMap(Mapping):
    """The gradients as a mapping, input name -> the Function of its gradient (``self.functions``), printed
    as every tensor of the backward pass (``self.backward``) in order."""

    functions: dict
    backward: tuple

    def __getitem__(self, name: str) -> Function:
        return self.functions[name]

    def __iter__(self):
        return iter(self.functions)

    def __len__(self) -> int:
        return len(self.functions)

    def __str__(self) -> str:
        return "\n".join(str(tensor) for tensor in self.backward)

    def _repr_latex_(self) -> str:
        return "$$" + r" \\ ".join(tensor._repr_latex_().strip("$") for tensor in self.backward) + "$$"


@dataclass(frozen=True)
class Gradients(GradientMap):
    """The gradients of ``sum(df * f)``: one element-wise function per argument (``grads["a"]`` is ``da``).

    The adjoint is ``df`` and the gradient of ``a`` is ``da`` unless the
    function uses that name already; then it is the first of ``da_1``,
    ``da_2``, ... that it does not (the gradient of ``a`` in the second
    derivative ``derive(da)`` is such a name: ``da`` is the function).

    As :func:`derive` returns them they are the report's output (sec. 6):
    every summand recomputes the forward expression. :meth:`simplified` gives
    the form the kernels run, which reads the forward result ``f`` instead.
    """

    function: Function
    functions: dict
    contributions: dict
    adjoint_name: str  # of df, the incoming adjoint: "d" + the function's name unless that is taken
    reads_forward: bool = False
    intermediates: dict = field(default_factory=dict)  # output-shaped adjoints the simplified form reads

    def evaluate(self, args: dict, df) -> dict[str, np.ndarray]:
        """``{"a": dA, ...}``: the gradients of ``sum(df * f)`` at ``args``, by the reference evaluator."""
        values = self.function.argument_arrays(args, (self.adjoint_name, df))
        if self.reads_forward:
            values[self.function.name] = self.function.evaluate(args)
        for name, intermediate in self.intermediates.items():
            values[name] = intermediate.evaluate(values)
        return {name: fn.evaluate(values) for name, fn in self.functions.items()}

    @cached_property
    def simplified(self) -> Gradients:
        """The same gradients as the kernels compute them: reading ``f`` and with loop invariants hoisted.

        Where the forward expression (the whole body of ``f``) appears in an
        adjoint, as ``exp(...)`` does in its own derivative, the simplified
        gradients read ``f[...]`` instead: computed once, not once per summand
        (the cheap gradient principle). So do the adjoints of the outermost
        sums, kept in :attr:`intermediates` (``df_k[i; j] = -(df[i; j] * f[i; j])``
        for sec. 6). Factors and conditions that do not
        depend on a sum's index move out of it
        (:func:`tensoradbook.lang.simplify.hoist_invariants`), and nested sums are
        ordered so the innermost walks memory with the smallest strides. For evaluation only:
        derive :attr:`functions`, not these, again, since here ``f`` is data.
        """
        if self.reads_forward:
            return self
        return _derive(self.function, reads_forward=True)

    def compile(self, target: str = "numba"):
        """``grad(args, df) -> {"a": dA, ...}`` running generated kernels (:mod:`tensoradbook.codegen`).

        Targets: ``"numpy"``, ``"numba"`` (CPU threads, one gradient element
        each), ``"cuda"`` (one GPU thread per gradient element), and the
        scatter baselines of eq. 40, ``"numba-scatter"`` and ``"cuda-scatter"``.
        ``grad`` computes ``f`` once itself; ``grad.forward`` is the forward kernel.
        """
        from ..codegen import compile_gradients

        return compile_gradients(self.simplified, target)

    def source(self, target: str = "numba") -> str:
        """The generated module behind :meth:`compile` (the forward kernel, one kernel per gradient)."""
        from ..codegen import gradients_source

        return gradients_source(self.simplified, target)

    @property
    def backward(self) -> tuple[Function, ...]:
        """Every tensor the backward pass computes, in order: the intermediates, then the gradients."""
        return (*self.intermediates.values(), *self.functions.values())


def derive(fn, shapes=None, *, wrt=None):
    """Algorithm 4: the gradient functions of an element-wise function (or of its text and shapes).

    For a :class:`~tensoradbook.lang.program.Program` (or text of several
    definitions), reverse accumulation across its definitions (sec. 2, eqs. 1-3),
    each one's contributions by Algorithm 4:
    :class:`~tensoradbook.ad.program.ProgramGradients`, with respect to the
    inputs named in ``wrt`` (all by default).
    """
    from ..lang.program import Program
    from .program import program_gradients  # a facade: ad.program derives each definition with this module

    if isinstance(fn, str):
        fn = parse(fn, shapes or {})
    elif shapes is not None:
        raise ExpressionError("derive: give shapes only with the function's text")
    if isinstance(fn, Program):
        return program_gradients(fn, wrt)
    if wrt is not None:
        raise ExpressionError("derive: wrt names inputs of a program; a function's gradients are all its arguments'")
    return _derive(fn, reads_forward=False)


def _derive(fn: Function, reads_forward: bool) -> Gradients:
    fn = apart(fn)
    # The adjoint df and the gradients dx get names of their own, fresh against every name of fn
    # (df_1 where df is an argument, dx_1 where dx is, or where fn itself is called dx: a second
    # derivative): a derivative that read a tensor of its own name would be wrong.
    used = all_names(fn)
    adjoint = fresh_name("d" + fn.name, used)
    gradients = {name: fresh_name("d" + name, used) for name in fn.arguments}
    seed = Element(adjoint, tuple(Affine.index(i) for i in fn.indices))
    sweep = reverse_accumulate(fn.body, seed)
    shapes = dict(fn.shapes)
    shapes[adjoint] = tuple(fn.shapes[fn.name])
    occurrences, intermediates = sweep.occurrences, {}
    if reads_forward:
        occurrences, intermediates = _tensor_adjoints(fn, sweep, seed, used, shapes)
    functions, contributions = {}, {}
    for name in fn.arguments:
        gradient = gradients[name]
        names = set(used)
        beta = [fresh_name(f"{gradient}_{k}", names) for k in range(len(fn.shapes[name]))]
        z_names = [fresh_name(f"{gradient}_z{k}", names) for k in range(len(fn.indices) + _depth(fn.body))]
        parts = [_contribution(fn, occ, beta, z_names, shapes, fast_loop_order=reads_forward)
                 for occ in occurrences if occ.element.name == name and not _never_reached(fn, occ.scope)]
        total = ZERO
        for part in parts:
            total = add(total, part.expression)
        if reads_forward:
            total = hoist_invariants(total, {b: (0, n - 1) for b, n in zip(beta, fn.shapes[name])})
        gradient_shapes = dict(shapes)
        gradient_shapes[gradient] = tuple(fn.shapes[name])
        functions[name] = _within_max_integer(Function(gradient, tuple(beta), total, gradient_shapes), fn)
        contributions[name] = tuple(parts)
    return Gradients(fn, functions, contributions, adjoint, reads_forward, intermediates)


def _within_max_integer(gradient: Function, fn: Function) -> Function:
    """``gradient``, refused with the limit where its index arithmetic passes MAX_INTEGER, so that every derivative
    reads back. Fourier-Motzkin rearranges the bounds: ``t <= j + 3`` with ``t`` from ``-(2**53 - 1)`` gives the
    gradient's ``j >= t - 3``, which reaches ``-(2**53 + 2)``."""
    past = past_max_integer(gradient)
    if past is None:
        return gradient
    affine, far = past
    raise ExpressionError(f"derive: {gradient.name}, the gradient of {fn.name}, computes {affine_text(affine)}, which "
                          f"can reach {far:.3g}: past MAX_INTEGER = 2**53, where index arithmetic stays (Fourier-"
                          "Motzkin rearranges bounds and indices); keep the sums' bounds and the indices of "
                          f"{fn.name} further from it")


def _tensor_adjoints(fn: Function, sweep: ReverseSweep, seed: Element, used: set, shapes: dict):
    """The occurrences as the kernels use them, and the output-shaped adjoints they read.

    The forward expression in an adjoint becomes a read of ``f`` (computed
    once). The adjoint of a sum outside all sums depends on the output index
    only, yet the report's formula recomputes it in every summand of every
    gradient: here it is a tensor of ``f``'s shape (``df_k`` for ``sum{k}``),
    computed once, and the reverse sweep restarts inside the sum from it.
    An occurrence outside the sums whose adjoint contains such a sum's adjoint
    (``b[j]`` in ``g(sum{k} (...) + b[j])``: both are the adjoint of the ``+``)
    reads the tensor too. ``used`` and ``shapes`` gain the new tensors' names.

    The sweep inside the sum starts from the tensor under the index conditions outside which the sum's
    adjoint is 0 (:func:`_gates`): the conditions of the ``if`` the sum lies in, which keep its body's reads in
    their tensors (``b[i - 1]`` in ``if {i >= 1} then (sum{u} (b[i - 1] * ...))``), and a tensor that is 0
    there would not stop the reads. A sum whose adjoint's terms are gated apart keeps the report's form.
    """
    forward = Element(fn.name, seed.indices)
    occurrences, intermediates, replaced = [], {}, {}
    for step in sweep.steps:
        if not isinstance(step.node, Sum) or step.scope or isinstance(step.adjoint, (Element, Number)):
            continue
        gates = _gates(step.adjoint)
        if gates is None:
            continue
        name = fresh_name(f"{seed.name}_{step.node.index}", used)
        shapes[name] = shapes[fn.name]
        intermediates[name] = Function(name, fn.indices, replace(step.adjoint, fn.body, forward), dict(shapes))
        tensor = Element(name, seed.indices)
        restart = tensor
        for condition, holds in reversed(gates):
            restart = if_(condition, restart, ZERO) if holds else if_(condition, ZERO, restart)
        occurrences += reverse_accumulate(step.node, restart).occurrences
        replaced[step.node] = (step.adjoint, tensor)
    kept = [occ for occ in sweep.occurrences if not (occ.scope and occ.scope[0] in replaced)]
    for adjoint, tensor in replaced.values():  # f = g(sum{k} (...) + b[j]): db's summand is dy_k's adjoint again
        kept = [Occurrence(occ.element, occ.scope, replace(occ.adjoint, adjoint, tensor)) for occ in kept]
    return [Occurrence(occ.element, occ.scope, replace(occ.adjoint, fn.body, forward))
            for occ in kept + occurrences], intermediates


def _gates(adjoint: Expr) -> tuple | None:
    """The index conditions outside which ``adjoint`` is 0 (:func:`~tensoradbook.lang.simplify.peel_gates`),
    where they gate every term of it alike; ``()`` where a term has none (the sum is reached outside every
    ``if``), None where the terms' gates differ."""
    chains, pending = set(), [adjoint]
    while pending:
        term = pending.pop()
        if isinstance(term, Binary) and term.op in ("+", "-"):
            pending += [term.left, term.right]
            continue
        if isinstance(term, Unary) and term.op == "neg":
            pending.append(term.arg)
            continue
        chain, term = peel_gates(term)
        if isinstance(term, If):  # both branches non-zero: conditions this function does not follow
            return None
        if not chain:
            return ()
        chains.add(chain)
    return chains.pop() if len(chains) == 1 else None


def _never_reached(fn: Function, scope: tuple[Sum, ...]) -> bool:
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


def _depth(node: Expr) -> int:
    """How many sums there are: an upper bound on the kernel dimension beyond the output's."""
    return sum(isinstance(n, Sum) for n in postorder(node))


def _box_decide(expression: Expr, beta: list[str], shape) -> Expr:
    """Decide the conditions of the ``if``s on the gradient's box ``0 <= beta < shape``.

    An atom that holds for every ``beta`` in the box goes; a condition with an
    atom that holds for none gives its ``else`` branch. The top-level ``if``
    is the gate of eqs. 16, 17 and 34 (``else (0)``) or, where the gate is
    empty, the element's own conditional from the function (any ``else``,
    e.g. ``dw[] = if {0 - 1 >= 0} then (0) else (df[0])``): the decision must
    not take the ``else`` to be 0. The ``if``s below it are the function's own,
    with ``beta`` substituted: one that holds nowhere (``j = 2**52`` at ``j = (6 -
    da_0) / 2``) may leave MAX_INTEGER once its denominator is multiplied out
    (``-da_0 - 9007199254740986 = 0``), so it goes too.
    """
    box = dict(zip(beta, [(0, n - 1) for n in shape]))

    def step(node: Expr, values: list[Expr]) -> Expr:
        return _decided(node, values, box) if isinstance(node, If) else with_children(node, values)

    return rebuild(expression, step)


def _decided(node: If, branches: list[Expr], box: dict) -> Expr:
    """``node`` with its condition decided on ``box`` and its branches decided already."""
    then, otherwise = branches
    ranges, narrowing = dict(box), set()
    # true for every integer (2 * b % 2 = 0, a guard substituted; 0 % 4 = 0): it guards no division
    identities = {atom for atom in node.condition if atom.modulus and atom.affine.denominator == 1 and
                  all(c % atom.modulus == 0 for c in (atom.affine.constant, *(c for _, c in atom.affine.terms)))}
    for atom in node.condition:  # a divisibility atom on one index narrows that index's range
        affine = atom.affine
        if atom in identities:
            continue
        if atom.modulus and affine.denominator == 1 and len(affine.terms) == 1 and affine.names[0] in box:
            narrowing.add(atom)
            ((name, c),) = affine.terms
            low, high = ranges[name]
            # c v + c0 = 0 (mod m) holds exactly for v = v0 (mod m / g), g = gcd(c, m), if g divides c0
            g = math.gcd(c, atom.modulus)
            if affine.constant % g:
                return otherwise
            step = atom.modulus // g
            v0 = (-affine.constant // g) * pow(c // g, -1, step) % step if step > 1 else 0
            first, last = low + (v0 - low) % step, high - (high - v0) % step
            if first > last:
                return otherwise
            ranges[name] = (first, last)
    kept = []
    for atom in node.condition:  # the narrowing atoms on the whole box: they hold on their ranges
        if atom in identities:
            continue
        truth = atom_truth(atom, box if atom in narrowing else ranges)
        if truth is False:
            return otherwise
        if truth is None or atom.modulus:  # a divisibility atom guards the division it makes exact: it stays
            kept.append(atom)
    return if_(tuple(kept), then, otherwise)

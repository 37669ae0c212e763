"""The kernels' form of a function's gradients: a pass over the report's form (sec. 6, the cheap gradient).

The report's gradients (:func:`tensoradbook.ad.derive.derive`) recompute the forward expression in every summand
and every outer sum's adjoint in every summand of every gradient. The kernels' form, from the same reverse sweep
and the same occurrence geometry (:class:`~tensoradbook.ad.contribution.Lattice`):

- reads the forward result ``f[...]`` where the forward expression (the whole body of ``f``) appears;
- keeps the adjoint of each sum outside all sums as an output-shaped tensor (``df_k`` for ``sum{k}``), computed
  once, and restarts the sweep inside the sum from it;
- orders each gradient's loops so the innermost walks memory with the smallest strides;
- hoists loop invariants (:func:`tensoradbook.lang.simplify.hoist_invariants`).

Each occurrence keeps the report's lattice; only where the fast order of its loops differs from the report's are
their bounds solved again.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..lang.expr import Affine, Binary, Element, Expr, If, Number, Sum, Unary, memory_step, replace
from ..lang.function import Function
from ..lang.names import fresh_name
from ..lang.simplify import ZERO, if_, peel_gates
from .contribution import Contribution, Lattice, gradient_function, never_reached, solved
from .reverse import Occurrence, ReverseSweep, SweepStep, reverse_accumulate


@dataclass(frozen=True)
class KeptSum:
    """A sum outside all sums whose adjoint the kernels keep as the tensor ``name``: its step of the sweep, and
    the index conditions outside which that adjoint is 0 (:func:`_gates`), under which the sweep restarts."""

    name: str
    step: SweepStep
    gates: tuple


def kept_sums(sweep: ReverseSweep, seed: Element, used: set) -> tuple[KeptSum, ...]:
    """The outer sums whose adjoints the kernels' form keeps, named fresh in ``used`` (which gains the names): the
    report's form reserves them, so that every name either form makes is the same."""
    kept = []
    for step in sweep.steps:
        if not isinstance(step.node, Sum) or step.scope or isinstance(step.adjoint, (Element, Number)):
            continue
        gates = _gates(step.adjoint)
        if gates is not None:
            kept.append(KeptSum(fresh_name(f"{seed.name}_{step.node.index}", used), step, gates))
    return tuple(kept)


def kernel_form(fn: Function, adjoint_name: str, sweep: ReverseSweep, kept: tuple[KeptSum, ...],
                report: dict, contributions: dict) -> tuple[dict, dict, dict]:
    """``(functions, contributions, intermediates)`` of the kernels' form, from the report's gradient functions
    ``report`` (argument -> Function) and their ``contributions``."""
    shapes = dict(fn.shapes)
    shapes[adjoint_name] = tuple(fn.shapes[fn.name])
    seed = Element(adjoint_name, tuple(Affine.index(i) for i in fn.indices))
    occurrences, intermediates = _tensor_adjoints(fn, sweep, seed, kept, shapes)
    derived = {(part.element, part.scope): part for parts in contributions.values() for part in parts}
    functions, parts_of = {}, {}
    for name, gradient in report.items():
        parts = tuple(_solved_again(fn, derived[occ.element, occ.scope], occ, shapes)
                      for occ in occurrences if occ.element.name == name and not never_reached(fn, occ.scope))
        gradient_shapes = dict(shapes)
        gradient_shapes[gradient.name] = tuple(fn.shapes[name])
        functions[name] = gradient_function(fn, gradient.name, gradient.indices, parts, gradient_shapes, hoisted=True)
        parts_of[name] = parts
    return functions, parts_of, intermediates


def _solved_again(fn: Function, derived: Contribution, occurrence: Occurrence, shapes: dict) -> Contribution:
    """The report's contribution ``derived`` for the kernels' ``occurrence`` (the same element, another adjoint):
    the loops in the fast order, their bounds solved again only where that order differs from the report's."""
    kernel = _loop_order(occurrence, derived.lattice, shapes)
    same_order = kernel == derived.kernel.tolist()
    return solved(fn, derived.lattice, occurrence, shapes, kernel, derived.bounds if same_order else None)


def _loop_order(occurrence: Occurrence, geometry: Lattice, shapes: dict) -> list[list[int]]:
    """The kernel basis's columns reordered so the innermost loop (``z_0``) has the smallest memory strides.

    Any order of the columns is a basis of the same lattice, and
    Fourier-Motzkin bounds any order of loops (sec. 4.2); only the speed
    differs. The cost of ``z_k`` is how far, in elements of row-major arrays,
    one step of ``z_k`` moves each read of the adjoint.
    """
    kernel = geometry.inverse.kernel.tolist()
    n_z = len(kernel[0]) if kernel else 0
    if n_z < 2:
        return kernel
    cost = [memory_step(occurrence.adjoint, {name: row[k] for name, row in zip(geometry.alpha, kernel)}, shapes)
            for k in range(n_z)]
    order = sorted(range(n_z), key=cost.__getitem__)
    return [[row[k] for k in order] for row in kernel]


def _tensor_adjoints(fn: Function, sweep: ReverseSweep, seed: Element, kept: tuple[KeptSum, ...], shapes: dict):
    """The occurrences as the kernels use them, and the output-shaped adjoints they read.

    The forward expression in an adjoint becomes a read of ``f`` (computed
    once). The adjoint of a sum outside all sums depends on the output index
    only, yet the report's formula recomputes it in every summand of every
    gradient: here it is a tensor of ``f``'s shape (``df_k`` for ``sum{k}``),
    computed once, and the reverse sweep restarts inside the sum from it.
    An occurrence outside the sums whose adjoint contains such a sum's adjoint
    (``b[j]`` in ``g(sum{k} (...) + b[j])``: both are the adjoint of the ``+``)
    reads the tensor too. ``shapes`` gains the new tensors' shapes.

    The sweep inside the sum starts from the tensor under the index conditions outside which the sum's
    adjoint is 0 (:func:`_gates`): the conditions of the ``if`` the sum lies in, which keep its body's reads in
    their tensors (``b[i - 1]`` in ``if {i >= 1} then (sum{u} (b[i - 1] * ...))``), and a tensor that is 0
    there would not stop the reads. A sum whose adjoint's terms are gated apart keeps the report's form.
    """
    forward = Element(fn.name, seed.indices)
    occurrences, intermediates, replaced = [], {}, {}
    for sum_ in kept:
        step = sum_.step
        shapes[sum_.name] = shapes[fn.name]
        intermediates[sum_.name] = Function(sum_.name, fn.indices, replace(step.adjoint, fn.body, forward),
                                            dict(shapes))
        tensor = Element(sum_.name, seed.indices)
        restart = tensor
        for condition, holds in reversed(sum_.gates):
            restart = if_(condition, restart, ZERO) if holds else if_(condition, ZERO, restart)
        occurrences += reverse_accumulate(step.node, restart).occurrences
        replaced[step.node] = (step.adjoint, tensor)
    kept_occurrences = [occ for occ in sweep.occurrences if not (occ.scope and occ.scope[0] in replaced)]
    for adjoint, tensor in replaced.values():  # f = g(sum{k} (...) + b[j]): db's summand is dy_k's adjoint again
        kept_occurrences = [Occurrence(occ.element, occ.scope, replace(occ.adjoint, adjoint, tensor))
                            for occ in kept_occurrences]
    return [Occurrence(occ.element, occ.scope, replace(occ.adjoint, fn.body, forward))
            for occ in kept_occurrences + occurrences], intermediates


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




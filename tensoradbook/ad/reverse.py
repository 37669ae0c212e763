"""Symbolic reverse accumulation on a scalar expression DAG (report sec. 2, eqs. 1-3).

:func:`reverse_accumulate` walks the expression from the root to the leaves
once, in an order where every node comes after all its parents, and gives each
node its adjoint ``Delta = sum over parents of Delta_parent * d parent / d node``.
Equal subexpressions are one node, so each is visited once (no blow-up).

Sums are *liberated* on the way (sec. 5.2): the adjoint of a sum's body is the
sum's adjoint, with the sum index now free; the sums a node lies inside are its
*scope*, and the same subexpression in two scopes is two nodes. The adjoints of
the argument elements (the leaves) are what Algorithm 4 turns into gradients.

The sweep is kept step by step (:class:`SweepStep`) for the GraphView widget.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..lang import simplify
from ..lang.expr import Binary, Element, Expr, If, Select, Sum, Unary
from ..lang.ops import OPERATIONS, REDUCTIONS
from ..lang.simplify import ZERO, add, if_, mul, select


def local_partials(node: Expr) -> list[tuple[Expr, Expr]]:
    """``(child, d node / d child)`` for each child, from the operation table's derivative rules
    (:data:`tensoradbook.lang.ops.OPERATIONS`); a sum's body has partial 1 (sec. 5.2), a max's or min's
    1 at its first extremal element (:data:`tensoradbook.lang.ops.REDUCTIONS`)."""
    if isinstance(node, (Unary, Binary)):
        partials = OPERATIONS[node.op].partials(node, simplify)
        return [(child, partial) for child, partial in zip(node.children(), partials) if partial is not None]
    if isinstance(node, Sum):
        return [(node.body, REDUCTIONS[node.op].body_partial(node, simplify))]
    return []


@dataclass(frozen=True)
class SweepStep:
    """One node of the reverse sweep: its adjoint and what it passed to each child."""

    node: Expr
    scope: tuple[Sum, ...]  # the liberated sums the node lies inside, outermost first
    adjoint: Expr
    contributions: tuple[tuple[Expr, Expr], ...]  # (child, adjoint contribution)


@dataclass(frozen=True)
class Occurrence:
    """An argument element with its adjoint: the ``Delta`` of eq. 38 for one ``x[A alpha]``."""

    element: Element
    scope: tuple[Sum, ...]
    adjoint: Expr


@dataclass(frozen=True)
class ReverseSweep:
    steps: tuple[SweepStep, ...]
    occurrences: tuple[Occurrence, ...]

    def states(self) -> tuple[dict, ...]:
        """The adjoints known after 0, 1, ..., n steps, keyed ``(node, scope)``: the sums of eq. 2 as they
        grow, with the sweep's own :func:`~tensoradbook.lang.simplify.add`, so that each step's adjoint is
        its entry in the state before it and the last state holds every adjoint (the GraphView's frames)."""
        first = self.steps[0]
        states = [{(first.node, first.scope): first.adjoint}]
        for step in self.steps:
            known = dict(states[-1])
            for child, contribution in step.contributions:
                key = (child, inner_scope(step.node, step.scope))
                known[key] = add(known.get(key, ZERO), contribution)
            states.append(known)
        return tuple(states)


def inner_scope(node: Expr, scope: tuple) -> tuple:
    """The liberated sums a node's children lie inside: its own scope, and the node if it is a sum."""
    return scope + (node,) if isinstance(node, Sum) else scope


def child_keys(node: Expr, scope: tuple) -> list[tuple[Expr, tuple]]:
    """The sweep's keys ``(child, scope)`` of a node's children, in order."""
    inner = inner_scope(node, scope)
    return [(child, inner) for child in node.children()]


def reverse_accumulate(root: Expr, seed: Expr) -> ReverseSweep:
    """The reverse sweep from ``root`` with adjoint ``seed`` (e.g. ``df[i; j]``)."""
    order: list[tuple[Expr, tuple]] = []  # reverse post-order: parents before children
    seen = set()
    stack = [((root, ()), False)]
    while stack:  # iterative DFS: deep expressions must not hit the recursion limit
        key, done = stack.pop()
        if done:
            order.append(key)
            continue
        if key in seen:
            continue
        seen.add(key)
        stack.append((key, True))
        stack.extend((child, False) for child in child_keys(*key) if child not in seen)
    order.reverse()

    adjoints: dict[tuple[Expr, tuple], Expr] = {(root, ()): seed}
    steps, occurrences = [], []
    for node, scope in order:
        delta = adjoints.get((node, scope), ZERO)
        contributions = []
        if isinstance(node, If):
            parts = [(node.then, if_(node.condition, delta, ZERO)),
                     (node.otherwise, if_(node.condition, ZERO, delta))]
        elif isinstance(node, Select):  # the compared values get nothing: the derivative is 0 almost everywhere
            parts = [(node.then, select(node.op, node.left, node.right, delta, ZERO)),
                     (node.otherwise, select(node.op, node.left, node.right, ZERO, delta))]
        else:
            parts = [(child, mul(delta, partial)) for child, partial in local_partials(node)]
        inner = inner_scope(node, scope)
        for child, contribution in parts:
            key = (child, inner)
            adjoints[key] = add(adjoints.get(key, ZERO), contribution)
            contributions.append((child, contribution))
        steps.append(SweepStep(node, scope, delta, tuple(contributions)))
        if isinstance(node, Element) and delta != ZERO:
            occurrences.append(Occurrence(node, scope, delta))
    return ReverseSweep(tuple(steps), tuple(occurrences))

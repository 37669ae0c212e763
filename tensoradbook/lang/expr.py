"""Expressions of element-wise defined functions (report sec. 5): the tree's nodes and its traversal.

A function ``f[i; j] = body`` (:class:`tensoradbook.lang.function.Function`) has a scalar ``body``
built from the nodes below. Argument indices are :class:`Affine` in the output and sum
indices (integer coefficients; a denominator appears only in derivatives,
guarded by a divisibility condition, e.g. ``if {b % 2 = 0} then (df[b / 2])``).

Nodes are immutable and compare by value, so equal subexpressions are equal
keys and the derivation can share them (the report's DAG, sec. 2).

Every pass walks trees with the generic traversal here, without recursion (expressions may
be deep): :func:`postorder`, :func:`rebuild` (bottom-up, on :func:`_fold`), :func:`with_children`,
:func:`walk`, :func:`substitute`, :func:`replace`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from fractions import Fraction

from ..integer.geometry import box_range
from .limits import MAX_INTEGER




class ExpressionError(ValueError):
    """A bad element-wise function: what is wrong and, for text, where (a caret line)."""


@dataclass(frozen=True)
class Span:
    """Where a node came from in the source text (start and end offsets), for caret messages."""

    start: int
    end: int


@dataclass(frozen=True)
class Affine:
    """``(sum_k coefficients[k] * name_k + constant) / denominator`` over index names.

    Coefficients and constant are Python ints, ``denominator >= 1`` and the
    whole is reduced (gcd 1), so equal affines are equal objects. Build them
    with :meth:`of`, :meth:`index`, :meth:`constant_value` and arithmetic.
    """

    terms: tuple[tuple[str, int], ...]  # sorted by name, no zero coefficient
    constant: int = 0
    denominator: int = 1

    @staticmethod
    def of(coefficients: dict, constant=0, denominator: int = 1) -> Affine:
        """From ``{name: coefficient}`` (ints or Fractions) and a constant, reduced."""
        values = {name: Fraction(c) / denominator for name, c in coefficients.items()}
        constant = Fraction(constant) / denominator
        common = math.lcm(constant.denominator, *(v.denominator for v in values.values()))
        numerators = {name: int(v * common) for name, v in values.items() if v != 0}
        c0 = int(constant * common)
        divisor = math.gcd(common, c0, *numerators.values())
        return Affine(tuple(sorted((n, c // divisor) for n, c in numerators.items())),
                      c0 // divisor, common // divisor)

    @staticmethod
    def index(name: str) -> Affine:
        return Affine(((name, 1),))

    @staticmethod
    def constant_value(value) -> Affine:
        return Affine.of({}, value)

    @property
    def coefficients(self) -> dict[str, Fraction]:
        return {name: Fraction(c, self.denominator) for name, c in self.terms}

    @property
    def offset(self) -> Fraction:
        return Fraction(self.constant, self.denominator)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.terms)

    @property
    def is_integral(self) -> bool:
        """Whether the coefficients and constant are integers (no division)."""
        return self.denominator == 1

    @property
    def is_constant(self) -> bool:
        return not self.terms

    @property
    def numerator(self) -> Affine:
        """``denominator * self``: the integer affine whose divisibility makes ``self`` integral."""
        return Affine(self.terms, self.constant, 1)

    def coefficient(self, name: str) -> Fraction:
        return self.coefficients.get(name, Fraction(0))

    def split(self) -> tuple[Affine, Affine]:
        """``(fraction, whole)`` with ``self = fraction + whole``: ``whole`` integral and every number of
        ``fraction``'s numerator in ``0 .. denominator - 1``. For integer indices ``floor(self) = floor(fraction) +
        whole`` (ceil alike), so a bound whose numerator passes MAX_INTEGER is written with small numbers."""
        d = self.denominator
        whole = Affine(tuple((n, c // d) for n, c in self.terms if c // d), self.constant // d)
        return self - whole, whole

    @property
    def written_parts(self) -> tuple[Affine, ...]:
        """What a bound item writes: itself, or :meth:`split` where a number of its numerator reaches
        MAX_INTEGER, which the notation does not write."""
        if self.is_integral or all(abs(n) < MAX_INTEGER for n in (self.constant, *(c for _, c in self.terms))):
            return (self,)
        return self.split()

    def __add__(self, other: Affine) -> Affine:
        other = other if isinstance(other, Affine) else Affine.constant_value(other)
        merged = dict(self.coefficients)
        for name, c in other.coefficients.items():
            merged[name] = merged.get(name, 0) + c
        return Affine.of(merged, self.offset + other.offset)

    def __neg__(self) -> Affine:
        return Affine(tuple((n, -c) for n, c in self.terms), -self.constant, self.denominator)

    def __sub__(self, other: Affine) -> Affine:
        other = other if isinstance(other, Affine) else Affine.constant_value(other)
        return self + (-other)

    def scale(self, factor) -> Affine:
        factor = Fraction(factor)
        return Affine.of({n: c * factor for n, c in self.coefficients.items()}, self.offset * factor)

    def substitute(self, mapping: dict[str, Affine]) -> Affine:
        """Replace index names by affines (names not in ``mapping`` stay)."""
        out = Affine.constant_value(self.offset)
        for name, c in self.coefficients.items():
            out = out + (mapping[name].scale(c) if name in mapping else Affine.of({name: c}))
        return out

    def interval(self, intervals: dict) -> tuple[Fraction, Fraction]:
        """The least and greatest value while each index ranges over ``intervals[name] = (least, greatest)``."""
        low, high = box_range(((c, intervals[name]) for name, c in self.terms), self.constant)
        return Fraction(low, self.denominator), Fraction(high, self.denominator)

    def evaluate(self, env: dict):
        """The value for index values ``env`` (ints or numpy int arrays); floor division by the denominator.

        Exact where the divisibility condition guarding a denominator holds,
        which is the only place such a value is used.
        """
        total = self.constant
        for name, c in self.terms:
            total = total + c * env[name]
        return total // self.denominator if self.denominator != 1 else total


@dataclass(frozen=True)
class Atom:
    """One condition on integer indices: ``affine = 0`` (``modulus == 0``), ``affine % modulus = 0``,
    or, with ``inequality``, ``affine >= 0`` (the feasibility rows ``F b <= 0`` of eq. 34)."""

    affine: Affine
    modulus: int = 0
    inequality: bool = False

    def __post_init__(self):
        # Substituting rational indices (I beta of eq. 41) gives atoms such as (16 - 3 b) / 2 >= 0. Each is
        # kept multiplied through by its denominator d, which keeps its meaning exactly (a % m = 0 becomes
        # d a % (d m) = 0), so it prints as the parser reads it and no one floors a / d to evaluate it.
        if not self.affine.is_integral:
            object.__setattr__(self, "modulus", self.modulus * self.affine.denominator)
            object.__setattr__(self, "affine", self.affine.numerator)

    def holds(self, env: dict):
        value = self.affine.evaluate(env)
        if self.inequality:
            return value >= 0
        return value == 0 if self.modulus == 0 else value % self.modulus == 0


class Expr:
    """Base of the scalar expression nodes.

    Equality and hashing are by value, as dataclasses' would be, but walk the
    tree without recursion: a derivative can be several hundred levels deep.
    The hash is computed once per node and kept in a slot (not in ``__dict__``,
    which holds exactly the dataclass fields).
    """

    __slots__ = ("_hash",)

    def children(self) -> tuple[Expr, ...]:
        return ()

    def own_fields(self) -> tuple:
        """What tells this node from another of its class with equal children."""
        raise NotImplementedError

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            pass
        for node in postorder(self, below=lambda node: not hasattr(node, "_hash")):
            if not hasattr(node, "_hash"):
                key = (type(node).__name__, node.own_fields(), *(child._hash for child in node.children()))
                object.__setattr__(node, "_hash", hash(key))
        return self._hash

    def __eq__(self, other) -> bool:
        if not isinstance(other, Expr):
            return NotImplemented
        pending, compared = [(self, other)], set()
        while pending:
            a, b = pending.pop()
            if a is b or (id(a), id(b)) in compared:
                continue
            if type(a) is not type(b) or hash(a) != hash(b) or a.own_fields() != b.own_fields():
                return False
            compared.add((id(a), id(b)))  # shared subtrees of a derivative are compared once
            pending.extend(zip(a.children(), b.children()))
        return True

    def __getstate__(self):
        # the cached hash holds string hashes, which differ between processes
        return self.__dict__

    def __repr__(self) -> str:
        """As a dataclass writes it, ``Binary(op='+', left=..., right=...)``, built without recursion."""
        def leave(node, _, children):
            made = dict(zip(_CHILD_FIELDS[type(node)], children))
            return f"{type(node).__name__}(" + ", ".join(
                f"{f.name}={made[f.name] if f.name in made else repr(getattr(node, f.name))}"
                for f in fields(node) if f.repr) + ")"

        return _fold(self, None, lambda node, _: (None, None), leave)


@dataclass(frozen=True, eq=False, repr=False)
class Number(Expr):
    """A constant: a Python int (kept exact by the simplifier) or a float."""

    value: int | float
    span: Span | None = field(default=None, compare=False, repr=False)

    def own_fields(self):
        return (self.value,)


@dataclass(frozen=True, eq=False, repr=False)
class Element(Expr):
    """``name[indices]``: an element of an argument (or of the output's adjoint)."""

    name: str
    indices: tuple[Affine, ...]
    span: Span | None = field(default=None, compare=False, repr=False)

    def own_fields(self):
        return (self.name, self.indices)




@dataclass(frozen=True, eq=False, repr=False)
class Unary(Expr):
    """``op(arg)`` for a unary ``op`` of :data:`tensoradbook.lang.ops.OPERATIONS` (``neg`` is unary minus)."""

    op: str
    arg: Expr
    span: Span | None = field(default=None, compare=False, repr=False)

    def children(self):
        return (self.arg,)

    def own_fields(self):
        return (self.op,)


@dataclass(frozen=True, eq=False, repr=False)
class Binary(Expr):
    """``left op right`` for a binary ``op`` of :data:`tensoradbook.lang.ops.OPERATIONS`."""

    op: str
    left: Expr
    right: Expr
    span: Span | None = field(default=None, compare=False, repr=False)

    def children(self):
        return (self.left, self.right)

    def own_fields(self):
        return (self.op,)


@dataclass(frozen=True, eq=False, repr=False)
class Sum(Expr):
    """``sum{index}_lower^upper (body)`` with inclusive bounds ``max(ceil(lower))`` .. ``min(floor(upper))``.

    Each bound is a tuple of affines; an affine with a denominator is rounded
    inwards (ceiling below, floor above), as Fourier-Motzkin's bounds are
    (eqs. 22-26). An empty range sums to 0.

    ``op`` names the reduction (:data:`tensoradbook.lang.ops.REDUCTIONS`): the report's ``"sum"``, or
    ``"max"`` / ``"min"`` (``max{k}_0^3 (x[k])``, max pooling), which range and liberate their index
    exactly as a sum does (sec. 5.2); an empty range gives ``-inf`` / ``inf``.
    """

    index: str
    lower: tuple[Affine, ...]
    upper: tuple[Affine, ...]
    body: Expr
    span: Span | None = field(default=None, compare=False, repr=False)
    op: str = "sum"

    def children(self):
        return (self.body,)

    def own_fields(self):
        return (self.index, self.lower, self.upper, self.op)

    def renewed(self, index: str | None = None, lower=None, upper=None, body: Expr | None = None) -> Sum:
        """The same reduction with some parts replaced (its ``op`` and ``span`` kept)."""
        return Sum(self.index if index is None else index, self.lower if lower is None else lower,
                   self.upper if upper is None else upper, self.body if body is None else body, self.span, self.op)


@dataclass(frozen=True, eq=False, repr=False)
class If(Expr):
    """``if {atom and ...} then (then) else (otherwise)``: Kronecker deltas and integrality conditions."""

    condition: tuple[Atom, ...]
    then: Expr
    otherwise: Expr
    span: Span | None = field(default=None, compare=False, repr=False)

    def children(self):
        return (self.then, self.otherwise)

    def own_fields(self):
        return (self.condition,)


@dataclass(frozen=True, eq=False, repr=False)
class Select(Expr):
    """``if {left op right} then (then) else (otherwise)``: a condition on values, not indices (ReLU,
    clipping, selects). ``op`` is a comparison of :data:`tensoradbook.lang.ops.COMPARISONS`. Its
    derivative is 0 almost everywhere: the adjoint flows into the branch taken (where the values are
    equal, the branch the comparison picks)."""

    op: str
    left: Expr
    right: Expr
    then: Expr
    otherwise: Expr
    span: Span | None = field(default=None, compare=False, repr=False)

    def children(self):
        return (self.left, self.right, self.then, self.otherwise)

    def own_fields(self):
        return (self.op,)


def postorder(node: Expr, below=lambda node: True):
    """Every distinct node object of the tree below ``node`` once, children before their parents and
    left before right, without recursion. ``below(n)`` False leaves out what lies below ``n``."""
    done, pending = set(), [(node, False)]
    while pending:
        current, expanded = pending.pop()
        if id(current) in done:
            continue
        if expanded or not below(current):
            done.add(id(current))
            yield current
            continue
        pending.append((current, True))
        pending.extend((child, False) for child in reversed(current.children()) if id(child) not in done)


def _fold(root: Expr, context, enter, leave):
    """A value for ``root`` computed from its children's values, bottom up and without recursion.

    ``enter(node, context)`` gives ``(value, None)`` to stop at ``node``, or
    ``(None, the children's context)``; ``leave(node, context, values)`` gives
    the node's value from its children's. A subtree shared within one context
    is computed once.
    """
    values: dict[tuple[int, int], object] = {}
    contexts = [context]  # kept alive: their ids are part of the keys
    pending = [(root, context, None, False)]
    while pending:
        node, outer, inner, expanded = pending.pop()
        key = (id(node), id(outer))
        if key in values:
            continue
        if expanded:
            values[key] = leave(node, outer, [values[(id(child), id(inner))] for child in node.children()])
            continue
        value, inner = enter(node, outer)
        if value is not None:
            values[key] = value
            continue
        if inner is not outer:
            contexts.append(inner)
        pending.append((node, outer, inner, True))
        pending.extend((child, inner, None, False) for child in reversed(node.children()))
    return values[(id(root), id(context))]


def rebuild(root: Expr, step, below=lambda node: True):
    """``step(node, values)`` over ``root`` from the leaves up, ``values`` being the results for its
    children; where ``below(node)`` is false, ``step(node, [])`` without looking below it. No recursion
    (derivatives of long chains are trees hundreds of levels deep), and a shared subtree is done once."""
    return _fold(root, None, lambda node, _: (None, None) if below(node) else (step(node, []), None),
                 lambda node, _, values: step(node, values))


_CHILD_FIELDS = {Number: (), Element: (), Unary: ("arg",), Binary: ("left", "right"), Sum: ("body",),
                 If: ("then", "otherwise"), Select: ("left", "right", "then", "otherwise")}


def with_children(node: Expr, children: list) -> Expr:
    """``node`` with new children (``node`` itself where they are the same objects)."""
    if all(new is old for new, old in zip(children, node.children())):
        return node
    if isinstance(node, Unary):
        return Unary(node.op, *children, node.span)
    if isinstance(node, Binary):
        return Binary(node.op, *children, node.span)
    if isinstance(node, Sum):
        return node.renewed(body=children[0])
    if isinstance(node, Select):
        return Select(node.op, *children, node.span)
    return If(node.condition, *children, node.span)



def substitute(node: Expr, mapping: dict[str, Affine]) -> Expr:
    """``node`` with index names replaced by affines everywhere (indices, bounds, conditions).

    Sum indices are unique in a function (the derivation renames them first),
    so no bound name is captured; a sum's own index is not replaced below it.
    """
    if not mapping:
        return node

    def enter(current, outer):
        if isinstance(current, Number):
            return current, None
        if isinstance(current, Element):
            return Element(current.name, tuple(a.substitute(outer) for a in current.indices), current.span), None
        if isinstance(current, Sum) and current.index in outer:
            return None, {k: v for k, v in outer.items() if k != current.index}
        return None, outer

    def leave(current, outer, children):
        if isinstance(current, Sum):
            return current.renewed(lower=tuple(a.substitute(outer) for a in current.lower),
                                   upper=tuple(a.substitute(outer) for a in current.upper), body=children[0])
        if isinstance(current, If):
            condition = tuple(Atom(a.affine.substitute(outer), a.modulus, a.inequality) for a in current.condition)
            return If(condition, *children, current.span)
        return with_children(current, children)

    return _fold(node, mapping, enter, leave)


def walk(node: Expr):
    """Every node of the tree below ``node`` (shared subtrees once per occurrence), parents first."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children()))


def replace(node: Expr, target: Expr, replacement: Expr) -> Expr:
    """``node`` with every subtree equal to ``target`` replaced by ``replacement``."""
    return _fold(node, None, lambda current, _: (replacement if current == target else None, None),
                 lambda current, _, children: with_children(current, children))


def replace_free(node: Expr, target: Element, replacement: Expr) -> Expr:
    """``node`` with every element equal to ``target`` replaced by ``replacement``, but where a sum inside
    ``node`` binds an index ``target`` reads: there the same text reads another element."""
    names = frozenset(name for affine in target.indices for name in affine.names)

    def enter(current: Expr, bound: frozenset):
        if current == target and not bound & names:
            return replacement, None
        if isinstance(current, Sum) and current.index in names:
            return None, bound | {current.index}
        return None, bound

    return _fold(node, frozenset(), enter, lambda current, _, children: with_children(current, children))


def free_indices(node: Expr) -> frozenset[str]:
    """The index names ``node``'s value depends on: those of its elements, bounds and conditions
    that no sum inside ``node`` binds."""

    def leave(current, _, children):
        names = frozenset().union(*children)
        if isinstance(current, Element):
            return frozenset(name for a in current.indices for name in a.names)
        if isinstance(current, Sum):
            return frozenset({name for a in current.lower + current.upper for name in a.names}
                             | (names - {current.index}))
        if isinstance(current, If):
            return names | {name for atom in current.condition for name in atom.affine.names}
        return names

    return _fold(node, None, lambda current, _: (None, None), leave)


def memory_step(node: Expr, direction: dict[str, int], shapes: dict) -> int:
    """How far the reads of ``node`` move, in elements of row-major arrays, when the index names
    move by ``direction`` (``{"k": 1}``: one step of ``k``): the sum over reads of the address change.

    The smaller, the more contiguous a loop in that direction reads memory;
    the kernels choose their innermost loops by it.
    """
    total = 0
    for element in walk(node):
        if not isinstance(element, Element):
            continue
        shape = tuple(shapes[element.name])
        strides = [math.prod(shape[k + 1:]) for k in range(len(shape))]
        step = sum(stride * index.coefficient(name) * direction.get(name, 0)
                   for stride, index in zip(strides, element.indices) for name in index.names)
        total += abs(step)
    return total

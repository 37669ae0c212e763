"""Element-wise defined functions (report sec. 5): the expression tree and its reference evaluator.

A function ``f[i; j] = body`` is a :class:`Function`: output index names,
a scalar ``body`` built from the nodes below, and the shapes of the output and
every argument. Argument indices are :class:`Affine` in the output and sum
indices (integer coefficients; a denominator appears only in derivatives,
guarded by a divisibility condition, e.g. ``if {b % 2 = 0} then (df[b / 2])``).

Nodes are immutable and compare by value, so equal subexpressions are equal
keys and the derivation can share them (the report's DAG, sec. 2).

:meth:`Function.evaluate` is the reference evaluator: numpy over the whole
output grid, one exact loop per sum index, used to check every other way of
computing a function (derivatives, generated kernels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np


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

    def holds(self, env: dict):
        value = self.affine.evaluate(env)
        if self.inequality:
            return value >= 0
        return value == 0 if self.modulus == 0 else value % self.modulus == 0


class Expr:
    """Base of the scalar expression nodes."""

    def children(self) -> tuple[Expr, ...]:
        return ()


@dataclass(frozen=True)
class Number(Expr):
    """A constant: a Python int (kept exact by the simplifier) or a float."""

    value: int | float
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Element(Expr):
    """``name[indices]``: an element of an argument (or of the output's adjoint)."""

    name: str
    indices: tuple[Affine, ...]
    span: Span | None = field(default=None, compare=False, repr=False)


UNARY_FUNCTIONS = ("neg", "exp", "log", "sin", "cos", "sinh", "cosh", "tanh", "sqrt")
BINARY_OPERATORS = ("+", "-", "*", "/", "**")


@dataclass(frozen=True)
class Unary(Expr):
    """``op(arg)`` for ``op`` in :data:`UNARY_FUNCTIONS` (``neg`` is unary minus)."""

    op: str
    arg: Expr
    span: Span | None = field(default=None, compare=False, repr=False)

    def children(self):
        return (self.arg,)


@dataclass(frozen=True)
class Binary(Expr):
    """``left op right`` for ``op`` in :data:`BINARY_OPERATORS`."""

    op: str
    left: Expr
    right: Expr
    span: Span | None = field(default=None, compare=False, repr=False)

    def children(self):
        return (self.left, self.right)


@dataclass(frozen=True)
class Sum(Expr):
    """``sum{index}_lower^upper body`` with inclusive bounds ``max(ceil(lower))`` .. ``min(floor(upper))``.

    Each bound is a tuple of affines; an affine with a denominator is rounded
    inwards (ceiling below, floor above), as Fourier-Motzkin's bounds are
    (eqs. 22-26). An empty range sums to 0.
    """

    index: str
    lower: tuple[Affine, ...]
    upper: tuple[Affine, ...]
    body: Expr
    span: Span | None = field(default=None, compare=False, repr=False)

    def children(self):
        return (self.body,)


@dataclass(frozen=True)
class If(Expr):
    """``if {atom and ...} then (then) else (otherwise)``: Kronecker deltas and integrality conditions."""

    condition: tuple[Atom, ...]
    then: Expr
    otherwise: Expr
    span: Span | None = field(default=None, compare=False, repr=False)

    def children(self):
        return (self.then, self.otherwise)


def bound_value(affines: tuple[Affine, ...], env: dict, lower: bool):
    """``max(ceil(...))`` of a lower bound or ``min(floor(...))`` of an upper bound."""
    values = []
    for a in affines:
        numerator = a.numerator.evaluate(env)
        # ceil(n / d) = -floor(-n / d)
        values.append(-((-numerator) // a.denominator) if lower else numerator // a.denominator)
    pick = np.maximum if lower else np.minimum
    out = values[0]
    for v in values[1:]:
        out = pick(out, v)
    return out


_NUMPY_UNARY = {"neg": np.negative, "exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos,
                "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "sqrt": np.sqrt}
_NUMPY_BINARY = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "**": np.power}


def _clipped(index, size: int):
    """Indices clipped into range: lanes outside a sum's range or a condition read a valid element,
    and their value is masked out afterwards."""
    if isinstance(index, (int, np.integer)):
        return min(max(int(index), 0), size - 1)
    return np.minimum(np.maximum(index, 0), size - 1)  # np.clip costs several times more on small arrays


def _evaluate(node: Expr, env: dict, args: dict, grid_shape: tuple) -> np.ndarray:
    if isinstance(node, Number):
        return np.float64(node.value)
    if isinstance(node, Element):
        array = args[node.name]
        index = tuple(_clipped(a.evaluate(env), n) for a, n in zip(node.indices, array.shape))
        return array[index] if index else array[()]
    if isinstance(node, Unary):
        return _NUMPY_UNARY[node.op](_evaluate(node.arg, env, args, grid_shape))
    if isinstance(node, Binary):
        return _NUMPY_BINARY[node.op](_evaluate(node.left, env, args, grid_shape),
                                      _evaluate(node.right, env, args, grid_shape))
    if isinstance(node, If):
        mask = np.ones(grid_shape, dtype=bool)
        for atom in node.condition:
            mask = mask & atom.holds(env)
        return np.where(mask, _evaluate(node.then, env, args, grid_shape),
                        _evaluate(node.otherwise, env, args, grid_shape))
    if isinstance(node, Sum):
        low = np.broadcast_to(bound_value(node.lower, env, lower=True), grid_shape)
        high = np.broadcast_to(bound_value(node.upper, env, lower=False), grid_shape)
        total = np.zeros(grid_shape)
        if low.size == 0 or high.size == 0:
            return total
        for k in range(int(low.min()), int(high.max()) + 1):
            inner = dict(env)
            inner[node.index] = k
            value = _evaluate(node.body, inner, args, grid_shape)
            total = total + np.where((low <= k) & (k <= high), value, 0.0)
        return total
    raise TypeError(f"not an expression node: {node!r}")


@dataclass(frozen=True)
class Function:
    """``name[indices] = body`` with the shapes of the output and the arguments (report eq. 38).

    Build one with :func:`tensoradbook.parse` (which checks it) or directly from nodes.
    """

    name: str
    indices: tuple[str, ...]
    body: Expr
    shapes: dict = field(hash=False)
    source: str | None = field(default=None, compare=False, repr=False)

    @property
    def arguments(self) -> tuple[str, ...]:
        """The argument names in order of first appearance."""
        seen: dict[str, None] = {}
        for node in walk(self.body):
            if isinstance(node, Element):
                seen.setdefault(node.name, None)
        return tuple(seen)

    def __str__(self) -> str:
        """The report's notation (sec. 6); :func:`tensoradbook.parse` reads it back."""
        from .printer import to_text

        return to_text(self)

    def _repr_latex_(self) -> str:
        from .printer import to_latex

        return to_latex(self)

    def argument_arrays(self, args, adjoint: tuple[str, object] | None = None) -> dict[str, np.ndarray]:
        """``args`` (a dict from argument names to arrays) as float64 arrays, each checked to be
        there, to hold real numbers and to have its declared shape.

        ``adjoint`` is ``(name, value)`` of the gradients' incoming adjoint
        (``df``), checked the same way against the output's shape and
        returned with the arguments. Complex values are refused: float64
        would silently drop their imaginary parts.
        """
        from collections.abc import Mapping
        from numbers import Complex, Real

        if not isinstance(args, Mapping):
            raise ExpressionError(f"{self.name}: expected a dict from argument names to arrays "
                                  f"({', '.join(self.arguments) or 'no arguments'}), got {type(args).__name__}")
        wanted = [(name, f"argument {name!r}", args, tuple(self.shapes[name])) for name in self.arguments]
        if adjoint is not None:
            wanted.append((adjoint[0], f"the adjoint {adjoint[0]!r}", {adjoint[0]: adjoint[1]},
                           tuple(self.shapes[self.name])))
        arrays = {}
        for name, what, values, shape in wanted:
            if name not in values:
                raise ExpressionError(f"{self.name}: no value given for {what}")
            try:
                array = np.asarray(values[name])
            except ValueError:  # numpy: "inhomogeneous shape"
                raise ExpressionError(f"{self.name}: {what} is not a rectangular array (rows of different "
                                      f"lengths?); expected shape {shape}") from None
            items = array.ravel().tolist() if array.dtype.kind == "O" else []
            if array.dtype.kind == "c" or any(isinstance(v, Complex) and not isinstance(v, Real) for v in items):
                raise ExpressionError(f"{self.name}: {what} is complex; the functions compute with real numbers "
                                      "(float64 would drop the imaginary part)")
            if array.dtype.kind not in "biufO" or not all(isinstance(v, Real) for v in items):
                raise ExpressionError(f"{self.name}: {what} is not an array of real numbers (dtype {array.dtype})")
            try:
                array = array.astype(np.float64, copy=False)
            except OverflowError:
                raise ExpressionError(f"{self.name}: {what} holds a number too large for float64") from None
            if array.shape != shape:
                raise ExpressionError(f"{self.name}: {what} has shape {array.shape}, expected {shape}")
            arrays[name] = array
        return arrays

    def evaluate(self, args: dict) -> np.ndarray:
        """The reference value of the whole output as a float64 array of the output's shape."""
        shape = tuple(self.shapes[self.name])
        arrays = self.argument_arrays(args)
        grid = np.indices(shape, sparse=True) if shape else ()
        env = dict(zip(self.indices, grid))
        with np.errstate(all="ignore"):  # masked-out lanes may overflow or divide by zero harmlessly
            value = _evaluate(self.body, env, arrays, shape)
        return np.array(np.broadcast_to(value, shape), dtype=np.float64)

    def compile(self, target: str = "numba"):
        """``fwd(args) -> ndarray``: generated kernels for ``"numpy"``, ``"numba"`` or ``"cuda"``
        (:mod:`tensoradbook.kernels`), equal to :meth:`evaluate`."""
        from .kernels import compile_function

        return compile_function(self, target)

    def kernel_source(self, target: str = "numba") -> str:
        """The generated module behind :meth:`compile`."""
        from .kernels import function_source

        return function_source(self, target)


def substitute(node: Expr, mapping: dict[str, Affine]) -> Expr:
    """``node`` with index names replaced by affines everywhere (indices, bounds, conditions).

    Sum indices are unique in a function (the derivation renames them first),
    so no bound name is captured.
    """
    if not mapping:
        return node
    if isinstance(node, Number):
        return node
    if isinstance(node, Element):
        return Element(node.name, tuple(a.substitute(mapping) for a in node.indices), node.span)
    if isinstance(node, Unary):
        return Unary(node.op, substitute(node.arg, mapping), node.span)
    if isinstance(node, Binary):
        return Binary(node.op, substitute(node.left, mapping), substitute(node.right, mapping), node.span)
    if isinstance(node, Sum):
        inner = {k: v for k, v in mapping.items() if k != node.index}
        return Sum(node.index, tuple(a.substitute(mapping) for a in node.lower),
                   tuple(a.substitute(mapping) for a in node.upper), substitute(node.body, inner), node.span)
    if isinstance(node, If):
        condition = tuple(Atom(a.affine.substitute(mapping), a.modulus, a.inequality) for a in node.condition)
        return If(condition, substitute(node.then, mapping), substitute(node.otherwise, mapping), node.span)
    raise TypeError(f"not an expression node: {node!r}")


def walk(node: Expr):
    """Every node of the tree below ``node`` (shared subtrees once per occurrence), parents first."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children()))


def replace(node: Expr, target: Expr, replacement: Expr) -> Expr:
    """``node`` with every subtree equal to ``target`` replaced by ``replacement``."""
    if node == target:
        return replacement
    if isinstance(node, Unary):
        return Unary(node.op, replace(node.arg, target, replacement), node.span)
    if isinstance(node, Binary):
        return Binary(node.op, replace(node.left, target, replacement),
                      replace(node.right, target, replacement), node.span)
    if isinstance(node, Sum):
        return Sum(node.index, node.lower, node.upper, replace(node.body, target, replacement), node.span)
    if isinstance(node, If):
        return If(node.condition, replace(node.then, target, replacement),
                  replace(node.otherwise, target, replacement), node.span)
    return node


def free_indices(node: Expr) -> frozenset[str]:
    """The index names ``node``'s value depends on: those of its elements, bounds and conditions
    that no sum inside ``node`` binds."""
    if isinstance(node, Element):
        return frozenset(name for a in node.indices for name in a.names)
    if isinstance(node, Sum):
        bounds = {name for a in node.lower + node.upper for name in a.names}
        return frozenset(bounds | (free_indices(node.body) - {node.index}))
    names = set()
    if isinstance(node, If):
        names = {name for atom in node.condition for name in atom.affine.names}
    for child in node.children():
        names |= free_indices(child)
    return frozenset(names)


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

"""The one table of operations: everything a pass needs to know about ``exp``, ``+`` or ``**``.

Each :class:`Operation` row says what the operation is: how the notation writes it (sec. 6), its
arity and precedence, how LaTeX shows it, and its local derivatives: the ``d node / d child`` of the
reverse sweep (sec. 2, eqs. 1-3). The parser, both printers, the evaluator, the reverse sweep and
every kernel printer read this table; the inverse-mode engine's numeric rules are checked against
it by a test. How code computes an operation is not the table's: the reference evaluator has its
numpy spelling of each (``lang.evaluate``), and each kernel target its own
(``tensoradbook.codegen.spellings``).

Adding an operation is one row here and its spelling in the evaluator and in every kernel target
(tests/test_spellings.py names any missing): then its text reads, prints, evaluates, derives and
compiles for every target. (A row whose ``text`` is not a name, or that needs a new precedence, also
needs the parser's grammar.)

The derivative rules are written against a builder namespace (``tensoradbook.lang.simplify``,
passed in by the reverse sweep) rather than importing it, so that this table sits at the bottom of
the language layer and every module above may read it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np


@dataclass(frozen=True)
class Operation:
    """One operation of the notation.

    ``partials(node, b)`` gives ``d node / d child`` for each child in order, built with the
    simplifying constructors of ``b`` (``b.mul``, ``b.div``, ``b.ONE``, ...); a partial that is
    ``None`` is a child with nothing to carry (a constant exponent).
    """

    name: str                    # Unary.op or Binary.op
    arity: int
    latex: str                   # format string over the operands' LaTeX (functions only)
    partials: Callable[..., tuple]
    precedence: int | None = None  # binary operators: loosest first, see PREFIX ... ATOM
    is_function: bool = False      # written ``name (argument)`` in the notation


# Precedence of infix operators, loosest first (sums and ifs are prefix and bind loosest).
PREFIX, ADD, MUL, UNARY, POWER, ATOM = range(6)


def _function(name: str, partial: Callable, latex: str | None = None) -> Operation:
    """A function of one argument, ``partial(node, argument, b)`` its derivative."""
    return Operation(name, 1, latex or rf"\{name}\left({{0}}\right)", lambda node, b: (partial(node, node.arg, b),),
                     is_function=True)


def _power_partials(node, b):
    u, v = node.left, node.right
    by_base = b.mul(v, b.power(u, b.sub(v, b.ONE)))
    if isinstance(v, b.Number):  # a constant exponent has no derivative to carry
        return by_base, None
    return by_base, b.mul(node, b.unary("log", u))


def _extremum(name: str, relation: str) -> Operation:
    """``max (a, b)`` or ``min (a, b)``: the whole adjoint goes to the operand that is taken, and a tie goes
    to the first operand (``relation`` holds), as for the first maximal element of a reduction."""
    return Operation(name, 2, rf"\{name}\left({{0}}, {{1}}\right)",
                     lambda node, b: (b.select(relation, node.left, node.right, b.ONE, b.ZERO),
                                      b.select(relation, node.left, node.right, b.ZERO, b.ONE)),
                     ATOM, is_function=True)


def _flat(name: str, latex: str) -> Operation:
    """A step function (sign, floor, ceil, round): derivative 0 wherever it is differentiable, and 0 taken at
    its jumps too, as PyTorch does."""
    return Operation(name, 1, latex, lambda node, b: (b.ZERO,), is_function=True)


_ROWS = (
    Operation("neg", 1, "-{0}", lambda node, b: (b.number(-1),)),
    _function("exp", lambda y, u, b: y),                                         # exp' = exp
    _function("log", lambda y, u, b: b.div(b.ONE, u)),
    _function("log10", lambda y, u, b: b.div(b.ONE, b.mul(b.unary("log", b.number(10)), u)),
              latex=r"\log_{{10}}\left({0}\right)"),
    _function("log1p", lambda y, u, b: b.div(b.ONE, b.add(b.ONE, u)),
              latex=r"\log\left(1 + {0}\right)"),
    _function("expm1", lambda y, u, b: b.add(y, b.ONE),                        # (e^u - 1)' = e^u
              latex=r"\left(e^{{{0}}} - 1\right)"),
    _function("sin", lambda y, u, b: b.unary("cos", u)),
    _function("cos", lambda y, u, b: b.neg(b.unary("sin", u))),
    _function("tan", lambda y, u, b: b.add(b.ONE, b.power(y, b.number(2)))),    # 1 + tan^2
    _function("asin", lambda y, u, b: b.div(b.ONE, b.unary("sqrt", b.sub(b.ONE, b.power(u, b.number(2))))),
              latex=r"\arcsin\left({0}\right)"),
    _function("acos", lambda y, u, b: b.neg(b.div(b.ONE, b.unary("sqrt", b.sub(b.ONE, b.power(u, b.number(2)))))),
              latex=r"\arccos\left({0}\right)"),
    _function("atan", lambda y, u, b: b.div(b.ONE, b.add(b.ONE, b.power(u, b.number(2)))),
              latex=r"\arctan\left({0}\right)"),
    _function("sinh", lambda y, u, b: b.unary("cosh", u)),
    _function("cosh", lambda y, u, b: b.unary("sinh", u)),                       # no minus, unlike cos
    _function("tanh", lambda y, u, b: b.sub(b.ONE, b.power(y, b.number(2)))),    # 1 - tanh^2
    _function("sqrt", lambda y, u, b: b.div(b.ONE, b.mul(b.number(2), y)),       # 1 / (2 sqrt u)
              latex=r"\sqrt{{{0}}}"),
    # erf' = 2 / sqrt(pi) exp(-u^2)
    _function("erf", lambda y, u, b: b.mul(b.number(2 / math.sqrt(math.pi)),
                                           b.unary("exp", b.neg(b.power(u, b.number(2))))),
              latex=r"\operatorname{{erf}}\left({0}\right)"),
    # |u|' = sign(u): 0 at the kink u = 0, as PyTorch's abs
    Operation("abs", 1, r"\left|{0}\right|", lambda node, b: (b.unary("sign", node.arg),), is_function=True),
    _flat("sign", r"\operatorname{{sign}}\left({0}\right)"),  # as numpy's: sign(nan) is nan, sign(-0.0) is 0.0
    _flat("floor", r"\left\lfloor {0} \right\rfloor"),
    _flat("ceil", r"\left\lceil {0} \right\rceil"),
    _flat("round", r"\operatorname{{round}}\left({0}\right)"),  # half to even, as numpy's rint
    Operation("+", 2, "{0} + {1}", lambda node, b: (b.ONE, b.ONE), ADD),
    Operation("-", 2, "{0} - {1}", lambda node, b: (b.ONE, b.number(-1)), ADD),
    Operation("*", 2, r"{0} \cdot {1}", lambda node, b: (node.right, node.left), MUL),
    Operation("/", 2, r"\frac{{{0}}}{{{1}}}",
              lambda node, b: (b.div(b.ONE, node.right), b.neg(b.div(node, node.right))), MUL),
    Operation("**", 2, "{{{0}}}^{{{1}}}", _power_partials, POWER),
    _extremum("max", ">="),
    _extremum("min", "<="),
)


@dataclass(frozen=True)
class Reduction:
    """A reduction over a range of an index, ``sum{k}_l^u (body)`` (the report's sums), ``max{k}`` or ``min{k}``.

    ``identity`` is its value over an empty range, where no term is folded in (the evaluator and each
    kernel target spell the folding). ``body_partial(node, b)`` is ``d node / d body`` at the liberated index
    (sec. 5.2): 1 for a sum; for max and min, 1 at the first extremal element (the least index among
    ties, as PyTorch's max pooling and ``torch.max(dim)``) and 0 elsewhere.
    """

    name: str
    identity: float
    latex: str
    body_partial: Callable[..., object]


REDUCTIONS: MappingProxyType[str, Reduction] = MappingProxyType({row.name: row for row in (
    Reduction("sum", 0.0, r"\sum", lambda node, b: b.ONE),
    Reduction("max", -math.inf, r"\max", lambda node, b: b.first_extremum(node, ">=")),
    Reduction("min", math.inf, r"\min", lambda node, b: b.first_extremum(node, "<=")),
)})


@dataclass(frozen=True)
class Comparison:
    """A comparison of two values in a condition, ``if {x[i] > 0} then (...) else (...)``: its text (also
    Python's and numpy's operator) and its LaTeX. Its derivative is 0 almost everywhere: the adjoint flows
    into the branch that was taken."""

    text: str
    latex: str


COMPARISONS: MappingProxyType[str, Comparison] = MappingProxyType({row.text: row for row in (
    Comparison(">", ">"), Comparison(">=", r"\geq"), Comparison("<", "<"), Comparison("<=", r"\leq"),
)})

_NUMPY_MISSING = {"erf": np.vectorize(math.erf, otypes=[np.float64])}


def numpy_function(name: str):
    """The numpy function called ``name``, or our vectorised stand-in where numpy has none (``erf``): for the
    reference evaluator, and imported from here by the generated numpy modules."""
    return getattr(np, name, None) or _NUMPY_MISSING[name]


OPERATIONS: MappingProxyType[str, Operation] = MappingProxyType({row.name: row for row in _ROWS})
UNARY_FUNCTIONS = tuple(row.name for row in _ROWS if row.arity == 1)
BINARY_OPERATORS = tuple(row.name for row in _ROWS if row.arity == 2)
FUNCTIONS = tuple(row.name for row in _ROWS if row.is_function)  # the names the parser reads as functions

__all__ = ["Operation", "OPERATIONS", "Reduction", "REDUCTIONS", "Comparison", "COMPARISONS", "numpy_function",
           "UNARY_FUNCTIONS", "BINARY_OPERATORS", "FUNCTIONS",
           "PREFIX", "ADD", "MUL", "UNARY", "POWER", "ATOM"]

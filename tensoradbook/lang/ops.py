"""The one table of operations: everything a pass needs to know about ``exp``, ``+`` or ``**``.

Each :class:`Operation` row says how the notation writes the operation (sec. 6), how LaTeX shows
it, which numpy function evaluates it (the reference evaluator and the numpy kernels), which scalar
function Numba and Numba CUDA call, and its local derivatives: the ``d node / d child`` of the
reverse sweep (sec. 2, eq. 1). The parser, both printers, the evaluator, the reverse sweep and
every kernel printer read this table; the inverse-mode engine's numeric rules are checked against
it by a test.

Adding an operation is one row here: its text reads, prints, evaluates, derives and compiles for
every target. (A row whose ``text`` is not a name, or that needs a new precedence, also needs the
parser's grammar.)

The derivative rules are written against a builder namespace (``tensoradbook.lang.simplify``,
passed in by the reverse sweep) rather than importing it, so that this table sits at the bottom of
the language layer and every module above may read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Operation:
    """One operation of the notation.

    ``partials(node, b)`` gives ``d node / d child`` for each child in order, built with the
    simplifying constructors of ``b`` (``b.mul``, ``b.div``, ``b.ONE``, ...); a partial that is
    ``None`` is a child with nothing to carry (a constant exponent).
    ``scalar`` and ``cuda`` are format strings of one Python expression over the operands'
    texts ``{0}``, ``{1}``; ``numpy`` is the name of the numpy function (``np.<name>``).
    """

    name: str                    # Unary.op or Binary.op
    arity: int
    latex: str                   # format string over the operands' LaTeX (functions only)
    numpy: str
    scalar: str                  # Numba on the CPU (math module, operators)
    cuda: str                    # Numba CUDA (the math module's device functions, operators)
    partials: Callable[..., tuple]
    precedence: int | None = None  # binary operators: loosest first, see PREFIX ... ATOM
    is_function: bool = False      # written ``name (argument)`` in the notation


# Precedence of infix operators, loosest first (sums and ifs are prefix and bind loosest).
PREFIX, ADD, MUL, UNARY, POWER, ATOM = range(6)


def _function(name: str, partial: Callable, latex: str | None = None, numpy: str | None = None) -> Operation:
    """A function of one argument whose numpy and math names are its own name."""
    return Operation(name, 1, latex or rf"\{name}\left({{0}}\right)", numpy or name, f"math.{name}({{0}})",
                     f"math.{name}({{0}})", lambda node, b: (partial(node, node.arg, b),), is_function=True)


def _power_partials(node, b):
    u, v = node.left, node.right
    by_base = b.mul(v, b.power(u, b.sub(v, b.ONE)))
    if isinstance(v, b.Number):  # a constant exponent has no derivative to carry
        return by_base, None
    return by_base, b.mul(node, b.unary("log", u))


_ROWS = (
    Operation("neg", 1, "-{0}", "negative", "(-{0})", "(-{0})", lambda node, b: (b.number(-1),)),
    _function("exp", lambda y, u, b: y),                                         # exp' = exp
    _function("log", lambda y, u, b: b.div(b.ONE, u)),
    _function("sin", lambda y, u, b: b.unary("cos", u)),
    _function("cos", lambda y, u, b: b.neg(b.unary("sin", u))),
    _function("sinh", lambda y, u, b: b.unary("cosh", u)),
    _function("cosh", lambda y, u, b: b.unary("sinh", u)),                       # no minus, unlike cos
    _function("tanh", lambda y, u, b: b.sub(b.ONE, b.power(y, b.number(2)))),    # 1 - tanh^2
    _function("sqrt", lambda y, u, b: b.div(b.ONE, b.mul(b.number(2), y)),       # 1 / (2 sqrt u)
              latex=r"\sqrt{{{0}}}"),
    Operation("+", 2, "{0} + {1}", "add", "({0} + {1})", "({0} + {1})",
              lambda node, b: (b.ONE, b.ONE), ADD),
    Operation("-", 2, "{0} - {1}", "subtract", "({0} - {1})", "({0} - {1})",
              lambda node, b: (b.ONE, b.number(-1)), ADD),
    Operation("*", 2, r"{0} \cdot {1}", "multiply", "({0} * {1})", "({0} * {1})",
              lambda node, b: (node.right, node.left), MUL),
    Operation("/", 2, r"\frac{{{0}}}{{{1}}}", "divide", "({0} / {1})", "({0} / {1})",
              lambda node, b: (b.div(b.ONE, node.right), b.neg(b.div(node, node.right))), MUL),
    Operation("**", 2, "{{{0}}}^{{{1}}}", "power", "({0} ** {1})", "({0} ** {1})", _power_partials, POWER),
)

OPERATIONS: MappingProxyType[str, Operation] = MappingProxyType({row.name: row for row in _ROWS})
UNARY_FUNCTIONS = tuple(row.name for row in _ROWS if row.arity == 1)
BINARY_OPERATORS = tuple(row.name for row in _ROWS if row.arity == 2)
FUNCTIONS = tuple(row.name for row in _ROWS if row.is_function)  # the names the parser reads as functions

__all__ = ["Operation", "OPERATIONS", "UNARY_FUNCTIONS", "BINARY_OPERATORS", "FUNCTIONS",
           "PREFIX", "ADD", "MUL", "UNARY", "POWER", "ATOM"]

"""The inverse engine's instruction set, and its local derivatives written from the one operation table.

Each instruction of a lump (:mod:`.program`) is an opcode below over at most two operands ``a``, ``b`` and a
constant ``c``. Its value and its partials ``d value / d a``, ``d value / d b`` come from
:mod:`.instructions`, a module that :func:`render` writes from the operation table
(``tensoradbook.lang.ops.OPERATIONS``): it evaluates each row's ``partials(node, b)`` once with :data:`BUILDER`, a
builder namespace whose constructors spell numeric code over ``a``, ``b``, ``c`` and the instruction's value
``v``, in place of the language's simplifying constructors. So the rules are written once, in the table.

Why a written module rather than reading the table at import: this package stands apart from the language
(tests/test_layout.py lets it import only itself and a few leaves), and Numba compiles and caches a function
from its source file. tests/test_inverse.py renders the module again from the table and fails while the
committed one differs; to bring it up to date after a rule changes, run in ``.venv/bin/python``::

    from tensoradbook.lang.ops import OPERATIONS
    from tensoradbook.inverse import rules
    rules.write(OPERATIONS)

and set ``engine.RULES_DIGEST`` to ``rules.digest`` of the new text (the test says the value): Numba caches the
sweeps with the rules compiled into them, and renews that cache only when the sweeps' own file changes.

A new operation reaches the engine with an opcode and its line in :data:`INSTRUCTIONS` (and its spelling in
:data:`FUNCTIONS` where it is a function), a traced function in :mod:`.registers`, and ``rules.write``; its
derivative is the table's, written nowhere else.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

# Opcodes. Traced inputs have the code INPUT; CONST is a constant, its value in ``c``. POWC is ``a ** c``, the
# table's ``**`` with a constant exponent, which has no partial for the exponent and so takes one operand.
INPUT = -1
CONST, ADD, SUB, MUL, DIV, NEG, POWC, POW, EXP, LOG, SIN, COS, TANH, SQRT = range(14)

#: opcode -> (its name in the generated code, the operation table's row it computes)
INSTRUCTIONS = {
    ADD: ("ADD", "+"), SUB: ("SUB", "-"), MUL: ("MUL", "*"), DIV: ("DIV", "/"), NEG: ("NEG", "neg"),
    POWC: ("POWC", "**"), POW: ("POW", "**"), EXP: ("EXP", "exp"), LOG: ("LOG", "log"), SIN: ("SIN", "sin"),
    COS: ("COS", "cos"), TANH: ("TANH", "tanh"), SQRT: ("SQRT", "sqrt"),
}

#: The engine's spelling of the table's functions: numpy's scalar functions, which Numba compiles and which give
#: numpy's answers (inf, nan) in both engines where ``math`` raises in Python (log 0, sqrt -1, exp 1000).
FUNCTIONS = {name: f"np.{name}" for name in ("exp", "log", "sin", "cos", "tanh", "sqrt", "sinh", "cosh")}

#: The instructions that are functions of their operand (``exp(a)``), and the infix operators (``a + b``), by opcode.
CALLS = {opcode: name for opcode, (_, name) in INSTRUCTIONS.items() if name in FUNCTIONS}
INFIX = {opcode: name for opcode, (_, name) in INSTRUCTIONS.items() if opcode not in (*CALLS, NEG, POWC)}

# Python's operator precedence, loosest first, to parenthesise exactly where the tree needs it.
_CONDITION, _ADD, _MUL, _UNARY, _POWER, _ATOM = range(6)


@dataclass(frozen=True)
class Code:
    """A numeric expression of the generated module: its text and how tightly it binds."""

    text: str
    precedence: int = _ATOM
    log_of: Code | None = None   # the argument, where this is ``log(argument)``


@dataclass(frozen=True)
class Number(Code):
    """A constant: a literal, or the instruction's constant ``c`` (the table's rules ask ``isinstance(v,
    b.Number)`` to see a constant exponent)."""


@dataclass(frozen=True)
class Node(Code):
    """The instruction as the table's ``partials(node, b)`` sees it: its value ``v`` and its operands."""

    arg: Code | None = None
    left: Code | None = None
    right: Code | None = None


def _operand(code: Code, precedence: int, tight: bool) -> str:
    """``code`` as an operand of an operator of ``precedence``, in parentheses where it binds more loosely (or
    as loosely, where ``tight``: the right side of a left-associative operator, the left side of ``**``), so that
    the generated arithmetic runs in the table's order."""
    return f"({code.text})" if code.precedence < precedence or (tight and code.precedence == precedence) else code.text


def _binary(symbol: str, precedence: int, left: Code, right: Code) -> Code:
    power = precedence == _POWER
    return Code(f"{_operand(left, precedence, power)} {symbol} {_operand(right, precedence, not power)}", precedence)


def number(value) -> Number:
    value = float(value)
    return Number(repr(value), _UNARY if value < 0 else _ATOM)


def neg(a: Code) -> Code:
    return Code(f"-{_operand(a, _UNARY, False)}", _UNARY)


def add(a: Code, b: Code) -> Code:
    return _binary("+", _ADD, a, b)


def sub(a: Code, b: Code) -> Code:
    return _binary("-", _ADD, a, b)


def mul(a: Code, b: Code) -> Code:
    """``a * b``; a factor ``log(u)`` beside a factor ``x`` is ``x log u`` with ``0 log u = 0`` where ``u`` is not
    positive (the exponent's partial of ``0 ** y``), as PyTorch's ``pow`` takes it, and NaN elsewhere there."""
    for x, factor in ((a, b), (b, a)):
        if factor.log_of is not None:
            u = factor.log_of
            return Code(f"{_binary('*', _MUL, x, factor).text} if {_operand(u, _ADD, False)} > 0 "
                        f"else (0.0 if {_operand(x, _ADD, False)} == 0 else np.nan)", _CONDITION)
    return _binary("*", _MUL, a, b)


def div(a: Code, b: Code) -> Code:
    return _binary("/", _MUL, a, b)


def power(a: Code, b: Code) -> Code:
    """``a ** b``; a square is ``a * a``, the one rounding of a product (``pow`` may round otherwise)."""
    if b == number(2) and a.precedence == _ATOM:
        return _binary("*", _MUL, a, a)
    return _binary("**", _POWER, a, b)


def unary(name: str, a: Code) -> Code:
    if name not in FUNCTIONS:
        raise KeyError(f"the inverse engine has no spelling of {name!r}: add it to rules.FUNCTIONS")
    return Code(f"{FUNCTIONS[name]}({a.text})", log_of=a if name == "log" else None)


_RELATIONS = (">", ">=", "<", "<=")


def select(relation: str, left: Code, right: Code, then: Code, otherwise: Code) -> Code:
    assert relation in _RELATIONS, relation
    return Code(f"{_operand(then, _ADD, False)} if {_operand(left, _ADD, False)} {relation} "
                f"{_operand(right, _ADD, False)} else {_operand(otherwise, _ADD, False)}", _CONDITION)


#: The builder namespace the table's ``partials(node, b)`` is evaluated with.
BUILDER = SimpleNamespace(Number=Number, ONE=number(1), ZERO=number(0), number=number, neg=neg, add=add, sub=sub,
                          mul=mul, div=div, power=power, unary=unary, select=select)

_OPERATORS = {"+": add, "-": sub, "*": mul, "/": div, "**": power}
_A, _B, _C, _V = Code("a"), Code("b"), Number("c"), "v"


def node(opcode: int, arity: int) -> Node:
    """The instruction ``opcode`` as a node of the table: operand ``a`` (and ``b``, or the constant ``c``)."""
    if arity == 1:
        return Node(_V, arg=_A)
    return Node(_V, left=_A, right=_C if opcode == POWC else _B)


def value(opcode: int, row, instruction: Node) -> Code:
    """The instruction's value in the engine's spelling."""
    if row.arity == 1:
        return neg(instruction.arg) if row.name == "neg" else unary(row.name, instruction.arg)
    return _OPERATORS[row.name](instruction.left, instruction.right)


def partials(opcode: int, row) -> tuple[Code, Code]:
    """``(d v / d a, d v / d b)`` from the table's row; ``0.0`` for an operand there is not (or that carries
    nothing, a constant exponent)."""
    found = row.partials(node(opcode, row.arity), BUILDER)
    zero = number(0)
    return tuple(p if p is not None else zero for p in found) + (zero,) * (2 - len(found))


_HEADER = '''"""The value and local partials of each instruction of the inverse engine, written by
:func:`tensoradbook.inverse.rules.render` from the operation table (``tensoradbook.lang.ops``): do not edit, run
``rules.write`` (see :mod:`.rules`). Both engines call :func:`instruction`: the Numba sweeps compiled, the Python
lumps as its ``py_func``.
"""

from __future__ import annotations

import numpy as np

from ..codegen.cache import package_jit
from .rules import {names}

_jit = package_jit(error_model="numpy")

#: operands each opcode reads (the table's arity; POWC reads one, its exponent is the constant)
ARITY = np.array([{arity}], dtype=np.int64)


@_jit
def instruction(op, a, b, c):  # noqa: C901 -- a branch per opcode, inlined into every sweep's inner loop
    """``(value, d value / d a, d value / d b)`` of one instruction over operands ``a``, ``b`` and constant ``c``."""
    if op == CONST:
        return c, 0.0, 0.0
'''


def render(operations) -> str:
    """The text of :mod:`.instructions` from ``operations``, the table (``name -> row`` with ``arity`` and
    ``partials``)."""
    arity = [0] * (max(INSTRUCTIONS) + 1)
    body = []
    for opcode, (label, name) in INSTRUCTIONS.items():
        row = operations[name]
        arity[opcode] = 1 if opcode == POWC else row.arity
        by_a, by_b = (_operand(p, _ADD, False) for p in partials(opcode, row))
        body += [f"    if op == {label}:  # {name}" + (" by a constant" if opcode == POWC else ""),
                 f"        v = {value(opcode, row, node(opcode, row.arity)).text}",
                 f"        return v, {by_a}, {by_b}"]
    names = ", ".join(["CONST"] + [label for label, _ in INSTRUCTIONS.values()])
    head = _HEADER.format(names=names, arity=", ".join(map(str, arity)))
    return head + "\n".join(body + ["    return np.nan, np.nan, np.nan  # not an opcode", ""])


GENERATED = Path(__file__).with_name("instructions.py")


def write(operations) -> None:
    """Write :mod:`.instructions` from the table (see the module's docstring for the command); then set
    ``engine.RULES_DIGEST`` to :func:`digest` of it, as tests/test_inverse.py says."""
    GENERATED.write_text(render(operations))


def digest(text: str) -> str:
    """A short fingerprint of the text of :mod:`.instructions`, which :mod:`.engine` names (``RULES_DIGEST``)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]

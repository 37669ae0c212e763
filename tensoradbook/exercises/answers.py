"""Reading students' answers: numbers, integer vectors and matrices, index triples, loop bounds and
functions in the report's notation, each refused with a message that says what is wrong with it
(:class:`_Wrong`), and the formatting of numbers in feedback.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy

from ..integer.matrix import as_int_matrix, normalize
from ..lang.expr import ExpressionError
from ..lang.function import Function
from ..lang.parser import parse

#: The answer to give :func:`check_integer_solutions` when there is no integer solution.
NO_SOLUTION = "no solution"


class _Wrong(Exception):
    """Raised inside a check to stop at a problem that makes later tests meaningless."""


# Numeric answers pass within these of the core's value (relative, absolute).
_RTOL, _ATOL = 1e-6, 1e-9


def _fmt(value) -> str:
    value = normalize(value)
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    return str(value)


def _vec(values) -> str:
    values = list(values)
    if len(values) == 1:
        return f"({_fmt(values[0])},)"
    return "(" + ", ".join(_fmt(v) for v in values) + ")"


def _triple(answer, labels: str) -> tuple:
    """The three parts of a triple answer, or a _Wrong saying the answer is not one."""
    try:
        first, second, third = answer
    except (TypeError, ValueError):
        raise _Wrong(f"the answer must be a triple ({labels}), got {type(answer).__name__}") from None
    return first, second, third


def _int_triple(answer, labels: str) -> tuple[int, int, int]:
    """A triple answer of integers, or a _Wrong naming every part that is not one."""
    parts = _triple(answer, labels)
    bad = [f"{label} = {v!r} is not an integer" for label, v in zip(labels.split(", "), parts)
           if isinstance(v, bool) or not isinstance(v, (int, np.integer))]
    if bad:
        raise _Wrong("; ".join(bad))
    return tuple(int(v) for v in parts)


def _int_matrix(value, what: str) -> np.ndarray:
    """The answer as an exact integer matrix, or a _Wrong saying why it is not one."""
    try:
        return as_int_matrix(value, what)
    except ValueError as err:
        raise _Wrong(str(err)) from None


def _entries(value, length: int, what: str, scalars: tuple, not_a_vector, each: str) -> list:
    """An answer as ``length`` entries: arrays and sequences as they are, a lone scalar of ``scalars`` as one
    entry; else a _Wrong with ``not_a_vector(value)``, or saying how many entries (``each``: one per what)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, scalars) and not isinstance(value, bool):
        value = [value]
    try:
        items = list(value)
    except TypeError:
        raise _Wrong(not_a_vector(value)) from None
    if len(items) != length:
        raise _Wrong(f"{what} must have {length} entries (one per {each}), yours has {len(items)}")
    return items


def _int_vector(value, length: int, what: str) -> list[int]:
    values = _entries(value, length, what, (int, np.integer),
                      lambda v: f"{what} must be a vector of {length} integers, got {v!r}", "entry of alpha")
    out = []
    for k, v in enumerate(values):
        if isinstance(v, bool) or not (isinstance(v, (int, np.integer)) or getattr(v, "is_Integer", False)
                                       or (isinstance(v, Fraction) and v.denominator == 1)):
            raise _Wrong(f"{what}: entry {k} is {v!r}, not an integer")
        out.append(int(v))
    return out


def _det(M: np.ndarray) -> int:
    return int(sympy.Matrix(M.tolist()).det()) if M.shape[0] else 1


def _is_integer(value) -> bool:
    return isinstance(value, int) or (isinstance(value, Fraction) and value.denominator == 1)


def _function(fn, shapes):
    """A :class:`~tensoradbook.lang.function.Function` from a Function or from its text and shapes."""
    if isinstance(fn, Function):
        return fn
    return parse(fn, shapes or {})


def _index_text(index) -> str:
    return "[" + "; ".join(str(int(v)) for v in index) + "]"


def _number(value: float) -> str:
    return f"{value:.6g}"


def _parse_answer(text, shapes, what: str):
    """The student's text parsed with ``shapes``, or a _Wrong with the parser's message (caret included)."""
    if not isinstance(text, str):
        raise _Wrong(f"{what} must be text in the report's notation, got {type(text).__name__}")
    try:
        return parse(text, shapes)
    except ExpressionError as err:
        indented = "\n".join("    " + line for line in str(err).splitlines())
        raise _Wrong(f"your {what} cannot be read:\n{indented}") from None


def _range(bounds, what: str) -> range:
    try:
        low, high = bounds
    except (TypeError, ValueError):
        raise _Wrong(f"{what} must return a pair (low, high), got {bounds!r}") from None
    for v in (low, high):
        if isinstance(v, bool) or not (isinstance(v, (int, np.integer)) or _is_integer(v)):
            raise _Wrong(f"{what} gave the bound {v!r}, not an integer (round with math.ceil / math.floor)")
    return range(int(low), int(high) + 1)

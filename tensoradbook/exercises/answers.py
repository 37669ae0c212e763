"""Reading students' answers: numbers, integer vectors and matrices, index triples, loop bounds and
functions in the report's notation, each refused with a message that says what is wrong with it
(:class:`~.checking.Wrong`), and the exact writing of integers and fractions in feedback.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import sympy

from ..integer.matrix import as_int_matrix, normalize
from ..lang.expr import ExpressionError
from ..lang.function import Function
from ..lang.parser import parse
from .checking import Wrong

#: The answer to give :func:`check_integer_solutions` when there is no integer solution.
NO_SOLUTION = "no solution"


def exact_text(value) -> str:
    value = normalize(value)
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    return str(value)


def vector_text(values) -> str:
    values = list(values)
    if len(values) == 1:
        return f"({exact_text(values[0])},)"
    return "(" + ", ".join(exact_text(v) for v in values) + ")"


def read_triple(answer, labels: str) -> tuple:
    """The three parts of a triple answer, or a Wrong saying the answer is not one."""
    try:
        first, second, third = answer
    except (TypeError, ValueError):
        raise Wrong(f"the answer must be a triple ({labels}), got {type(answer).__name__}") from None
    return first, second, third


def read_int_triple(answer, labels: str) -> tuple[int, int, int]:
    """A triple answer of integers, or a Wrong naming every part that is not one."""
    parts = read_triple(answer, labels)
    bad = [f"{label} = {v!r} is not an integer" for label, v in zip(labels.split(", "), parts)
           if isinstance(v, bool) or not isinstance(v, (int, np.integer))]
    if bad:
        raise Wrong("; ".join(bad))
    return tuple(int(v) for v in parts)


def read_int_matrix(value, what: str) -> np.ndarray:
    """The answer as an exact integer matrix, or a Wrong saying why it is not one."""
    try:
        return as_int_matrix(value, what)
    except ValueError as err:
        raise Wrong(str(err)) from None


def read_entries(value, length: int, what: str, scalars: tuple, not_a_vector, each: str) -> list:
    """An answer as ``length`` entries: arrays and sequences as they are, a lone scalar of ``scalars`` as one
    entry; else a Wrong with ``not_a_vector(value)``, or saying how many entries (``each``: one per what)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, scalars) and not isinstance(value, bool):
        value = [value]
    try:
        items = list(value)
    except TypeError:
        raise Wrong(not_a_vector(value)) from None
    if len(items) != length:
        raise Wrong(f"{what} must have {length} entries (one per {each}), yours has {len(items)}")
    return items


def read_int_vector(value, length: int, what: str) -> list[int]:
    values = read_entries(value, length, what, (int, np.integer),
                      lambda v: f"{what} must be a vector of {length} integers, got {v!r}", "entry of alpha")
    out = []
    for k, v in enumerate(values):
        if isinstance(v, bool) or not (isinstance(v, (int, np.integer)) or getattr(v, "is_Integer", False)
                                       or (isinstance(v, Fraction) and v.denominator == 1)):
            raise Wrong(f"{what}: entry {k} is {v!r}, not an integer")
        out.append(int(v))
    return out


def read_array(value) -> np.ndarray:
    """The answer as an array of floats, or a Wrong saying it is not one."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise Wrong(f"the answer must be an array of numbers, got {type(value).__name__}") from None


def determinant(M: np.ndarray) -> int:
    return int(sympy.Matrix(M.tolist()).det()) if M.shape[0] else 1


def _is_integer(value) -> bool:
    return isinstance(value, int) or (isinstance(value, Fraction) and value.denominator == 1)


def read_function(fn, shapes):
    """A :class:`~tensoradbook.lang.function.Function` from a Function or from its text and shapes."""
    if isinstance(fn, Function):
        return fn
    return parse(fn, shapes or {})


def parse_answer(text, shapes, what: str, max_length: int):
    """The student's text parsed with ``shapes``, or a Wrong with the parser's message (caret included).

    ``max_length``: the most characters the check reads, which each check states (a right answer is far
    shorter): past it the text is refused before it is parsed, so that no answer makes grading parse and
    evaluate a body of hundreds of kilobytes."""
    if not isinstance(text, str):
        raise Wrong(f"{what} must be text in the report's notation, got {type(text).__name__}")
    if len(text) > max_length:
        raise Wrong(f"your {what} is {len(text):,} characters long: this check reads answers of at most "
                    f"{max_length:,} characters (write it without repeating parts)")
    try:
        return parse(text, shapes)
    except ExpressionError as err:
        indented = "\n".join("    " + line for line in str(err).splitlines())
        raise Wrong(f"your {what} cannot be read:\n{indented}") from None


def read_range(bounds, what: str) -> range:
    try:
        low, high = bounds
    except (TypeError, ValueError):
        raise Wrong(f"{what} must return a pair (low, high), got {bounds!r}") from None
    for v in (low, high):
        if isinstance(v, bool) or not (isinstance(v, (int, np.integer)) or _is_integer(v)):
            raise Wrong(f"{what} gave the bound {v!r}, not an integer (round with math.ceil / math.floor)")
    return range(int(low), int(high) + 1)

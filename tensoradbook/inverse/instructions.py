"""The value and local partials of each instruction of the inverse engine, written by
:func:`tensoradbook.inverse.rules.render` from the operation table (``tensoradbook.lang.ops``): do not edit, run
``rules.write`` (see :mod:`.rules`). Both engines call :func:`instruction`: the Numba sweeps compiled, the Python
lumps as its ``py_func``.
"""

from __future__ import annotations

import numpy as np

from ..codegen.cache import package_jit
from .rules import CONST, ADD, SUB, MUL, DIV, NEG, POWC, POW, EXP, LOG, SIN, COS, TANH, SQRT

_jit = package_jit(error_model="numpy")

#: operands each opcode reads (the table's arity; POWC reads one, its exponent is the constant)
ARITY = np.array([0, 2, 2, 2, 2, 1, 1, 2, 1, 1, 1, 1, 1, 1], dtype=np.int64)


@_jit
def instruction(op, a, b, c):  # noqa: C901 -- a branch per opcode, inlined into every sweep's inner loop
    """``(value, d value / d a, d value / d b)`` of one instruction over operands ``a``, ``b`` and constant ``c``."""
    if op == CONST:
        return c, 0.0, 0.0
    if op == ADD:  # +
        v = a + b
        return v, 1.0, 1.0
    if op == SUB:  # -
        v = a - b
        return v, 1.0, -1.0
    if op == MUL:  # *
        v = a * b
        return v, b, a
    if op == DIV:  # /
        v = a / b
        return v, 1.0 / b, -(v / b)
    if op == NEG:  # neg
        v = -a
        return v, -1.0, 0.0
    if op == POWC:  # ** by a constant
        v = a ** c
        return v, c * a ** (c - 1.0), 0.0
    if op == POW:  # **
        v = a ** b
        return v, b * a ** (b - 1.0), (v * np.log(a) if a > 0 else (0.0 if v == 0 else np.nan))
    if op == EXP:  # exp
        v = np.exp(a)
        return v, v, 0.0
    if op == LOG:  # log
        v = np.log(a)
        return v, 1.0 / a, 0.0
    if op == SIN:  # sin
        v = np.sin(a)
        return v, np.cos(a), 0.0
    if op == COS:  # cos
        v = np.cos(a)
        return v, -np.sin(a), 0.0
    if op == TANH:  # tanh
        v = np.tanh(a)
        return v, 1.0 - v * v, 0.0
    if op == SQRT:  # sqrt
        v = np.sqrt(a)
        return v, 1.0 / (2.0 * v), 0.0
    return np.nan, np.nan, np.nan  # not an opcode

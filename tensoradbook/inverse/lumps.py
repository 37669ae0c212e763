"""One lump evaluated in Python: its values and its Jacobian blocks ``A`` and ``B`` (eq. 2.6g), from the
numeric local partials of each instruction; the plain-Python engine of the sweeps.
"""

from __future__ import annotations

import numpy as np
from .engine import (ADD, ARITY, CONST, COS, DIV, EXP, LOG, MUL, NEG, POW, POWC, SIN, SQRT,
                               SUB, TANH)

from .program import _Code


def _numeric(op: int, a: float, b: float, c: float) -> float:
    if op == CONST:
        return c
    if op == ADD:
        return a + b
    if op == SUB:
        return a - b
    if op == MUL:
        return a * b
    if op == DIV:
        return a / b
    if op == NEG:
        return -a
    if op == POWC:
        return a ** c
    if op == POW:
        return a ** b
    return {EXP: np.exp, LOG: np.log, SIN: np.sin, COS: np.cos, TANH: np.tanh, SQRT: np.sqrt}[op](a)


def _local_partials(op: int, a: float, b: float, c: float, value: float) -> tuple[float, float]:
    """``(d value / d arg0, d value / d arg1)`` of one instruction."""
    if op == ADD:
        return 1.0, 1.0
    if op == SUB:
        return 1.0, -1.0
    if op == MUL:
        return b, a
    if op == DIV:
        return 1.0 / b, -value / b
    if op == NEG:
        return -1.0, 0.0
    if op == POWC:
        return c * a ** (c - 1.0), 0.0
    if op == POW:
        return b * a ** (b - 1.0), value * np.log(a) if a > 0 else 0.0 if value == 0 else np.nan
    if op == EXP:
        return value, 0.0
    if op == LOG:
        return 1.0 / a, 0.0
    if op == SIN:
        return np.cos(a), 0.0
    if op == COS:
        return -np.sin(a), 0.0
    if op == TANH:
        return 1.0 - value * value, 0.0
    if op == SQRT:
        return 0.5 / value, 0.0
    return 0.0, 0.0   # CONST


def _lump_python(code: _Code, j: int, registers: np.ndarray, want_blocks: bool):
    """Values of lump ``j``'s outputs from the registers, and its blocks ``(A, B)`` by local reverse accumulation."""
    lo, hi = int(code.node_start[j]), int(code.node_start[j + 1])
    ops, arg0, arg1, consts = code.ops[lo:hi], code.arg0[lo:hi], code.arg1[lo:hi], code.consts[lo:hi]
    values = np.empty(hi - lo)
    d0, d1 = np.zeros(hi - lo), np.zeros(hi - lo)

    def operand(index):
        return registers[-1 - index] if index < 0 else values[index]

    for i in range(hi - lo):
        arity = ARITY[ops[i]]
        a = operand(arg0[i]) if arity > 0 else 0.0
        b = operand(arg1[i]) if arity > 1 else 0.0
        values[i] = _numeric(ops[i], a, b, consts[i])
        d0[i], d1[i] = _local_partials(ops[i], a, b, consts[i], values[i])
    outs = code.out_node[code.out_start[j]:code.out_start[j + 1]]
    written = code.out_slot[code.out_start[j]:code.out_start[j + 1]]
    read = code.read_slot[code.read_start[j]:code.read_start[j + 1]]
    if not want_blocks:
        return values[outs], None, None
    rows = []
    for out in outs:
        adjoint = np.zeros(hi - lo)
        slots = {}
        adjoint[out] = 1.0
        for i in range(out, -1, -1):
            if adjoint[i] == 0.0:
                continue
            for arg, partial in ((arg0[i], d0[i]), (arg1[i], d1[i]))[:ARITY[ops[i]]]:
                if arg < 0:
                    slots[-1 - arg] = slots.get(-1 - arg, 0.0) + adjoint[i] * partial
                else:
                    adjoint[arg] += adjoint[i] * partial
        rows.append([slots.get(s, 0.0) for s in written] + [slots.get(s, 0.0) for s in read])
    block = np.array(rows, dtype=float).reshape(len(outs), len(written) + len(read))
    return values[outs], block[:, :len(written)], block[:, len(written):]

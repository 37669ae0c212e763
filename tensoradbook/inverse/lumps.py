"""One lump evaluated in Python: its values and its Jacobian blocks ``A`` and ``B`` (eq. 2.6g), from the
numeric local partials of each instruction (:func:`.instructions.instruction`, the same rules the compiled
engine runs); the plain-Python engine of the sweeps.
"""

from __future__ import annotations

import numpy as np

from .engine import Instructions
from .instructions import ARITY, instruction

_instruction = instruction.py_func  # Python's own run of the compiled rules: no JIT wait for small programs


def _lump_python(code: Instructions, j: int, registers: np.ndarray, want_blocks: bool):
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
        values[i], d0[i], d1[i] = _instruction(ops[i], a, b, consts[i])
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

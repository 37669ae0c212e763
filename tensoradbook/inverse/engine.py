"""The compiled half of :mod:`tensoradbook.inverse`: the instruction arrays (:class:`Instructions`), the analysis
that cuts a traced graph into lumps, and the sweeps over the instruction arrays (Numba, serial). The instruction
set and each instruction's value and local partials are :mod:`.rules`' and :mod:`.instructions`', written from the
operation table.

The analysis (sec. 3) finds the graph's vertices (values written to registers
and temporaries two of them share), counts the live values along an order and
cuts where exactly ``n`` are live, then writes each lump's instructions.

The four sweeps of eqs. 2.3-2.4 (with the lump blocks of eqs. 2.6g/h) as
loops over lumps; :func:`forward` runs the program and applies each lump's
partials at once (no tape), :func:`record` keeps the partials ``A``, ``B`` of
every lump in one flat array and :func:`backward` replays it from the end. A
lump's partials come from its instructions by local reverse accumulation, one
pass per output. The sweeps return ``-1``, or the index of the first lump whose
block ``A`` is singular at the point (the caller names it).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..codegen.cache import package_jit
from .instructions import ARITY, instruction
# The instruction set, also read here by callers that write instruction arrays themselves.
from .rules import ADD, CONST, COS, DIV, EXP, INPUT, LOG, MUL, NEG, POW, POWC, SIN, SQRT, SUB, TANH  # noqa: F401

_jit = package_jit(error_model="numpy")

# The rules of .instructions this file's sweeps are compiled with (rules.digest of its text). Numba's on-disk cache
# of a sweep keeps the rules it inlined and is renewed only when this file changes, so a change of the rules must
# change this line too; tests/test_inverse.py checks it.
RULES_DIGEST = "982d958e8e23b6f5"


class Instructions(NamedTuple):
    """The instruction arrays the sweeps read (Numba takes a named tuple of arrays by its fields).

    Lump ``j`` runs the instructions ``node_start[j]:node_start[j+1]`` (opcode ``ops``, operands ``arg0``,
    ``arg1``: ``>= 0`` an instruction of the same lump, ``< 0`` the register ("slot") ``-1 - arg`` as it was when
    the lump began; constant ``consts``), writes the slots ``out_slot[out_start[j]:out_start[j+1]]`` with the
    values of its instructions ``out_node``, and reads the other slots ``read_slot[read_start[j]:read_start[j+1]]``;
    at the end, slot ``output_slots[r]`` holds result ``r``.
    """

    ops: np.ndarray
    arg0: np.ndarray
    arg1: np.ndarray
    consts: np.ndarray
    node_start: np.ndarray
    out_start: np.ndarray
    out_node: np.ndarray
    out_slot: np.ndarray
    read_start: np.ndarray
    read_slot: np.ndarray
    output_slots: np.ndarray

    def tape_offsets(self) -> np.ndarray:
        """Where lump ``j``'s partials ``A`` (``l x l``) then ``B`` (``l x k``) start in the flat tape."""
        l = np.diff(self.out_start)
        k = np.diff(self.read_start)
        return np.concatenate([[0], np.cumsum(l * l + l * k)]).astype(np.int64)


# A lump's instructions are its vertices' nodes plus its own copies of the constants they read: at most two
# (one per operand) besides each node, so three instructions per node always suffice.
_INSTRUCTIONS_PER_NODE = 3


@_jit
def _evaluate(code, j, registers, values, d0, d1):
    """Values and local partials of lump ``j``'s instructions, reading the registers as they are."""
    lo = code.node_start[j]
    for i in range(code.node_start[j + 1] - lo):
        op = code.ops[lo + i]
        count = ARITY[op]
        a = 0.0
        b = 0.0
        if count > 0:
            index = code.arg0[lo + i]
            a = registers[-1 - index] if index < 0 else values[index]
        if count > 1:
            index = code.arg1[lo + i]
            b = registers[-1 - index] if index < 0 else values[index]
        values[i], d0[i], d1[i] = instruction(op, a, b, code.consts[lo + i])


@_jit
def _blocks(code, j, values, d0, d1, adjoint, slot_adjoint, block):  # noqa: C901 -- per lump, see build's comment
    """Lump ``j``'s ``A`` (``l x l``) then ``B`` (``l x k``), row-major, into ``block``."""
    ops, arg0, arg1, node_start = code.ops, code.arg0, code.arg1, code.node_start
    out_start, out_node, out_slot = code.out_start, code.out_node, code.out_slot
    read_start, read_slot = code.read_start, code.read_slot
    lo = node_start[j]
    l = out_start[j + 1] - out_start[j]
    k = read_start[j + 1] - read_start[j]
    for row in range(l):
        out = out_node[out_start[j] + row]
        for i in range(out + 1):
            adjoint[i] = 0.0
        adjoint[out] = 1.0
        for i in range(out, -1, -1):
            w = adjoint[i]
            if w == 0.0:
                continue
            count = ARITY[ops[lo + i]]
            if count > 0:
                index = arg0[lo + i]
                if index < 0:
                    slot_adjoint[-1 - index] += w * d0[i]
                else:
                    adjoint[index] += w * d0[i]
            if count > 1:
                index = arg1[lo + i]
                if index < 0:
                    slot_adjoint[-1 - index] += w * d1[i]
                else:
                    adjoint[index] += w * d1[i]
        for c in range(l):
            s = out_slot[out_start[j] + c]
            block[row * l + c] = slot_adjoint[s]
            slot_adjoint[s] = 0.0
        for c in range(k):
            s = read_slot[read_start[j] + c]
            block[l * l + row * k + c] = slot_adjoint[s]
            slot_adjoint[s] = 0.0


@_jit
def _solve(A, l, rhs, transpose, work):  # noqa: C901 -- per lump, see build's comment
    """Solve ``A u = rhs`` (``A^T u = rhs`` when ``transpose``) in place in ``rhs``; False if ``A`` is singular.

    Gaussian elimination with partial pivoting on a copy of ``A`` in ``work``.
    """
    for r in range(l):
        for c in range(l):
            work[r * l + c] = A[c * l + r] if transpose else A[r * l + c]
    for col in range(l):
        pivot = col
        for r in range(col + 1, l):
            if abs(work[r * l + col]) > abs(work[pivot * l + col]):
                pivot = r
        if work[pivot * l + col] == 0.0 or not math.isfinite(work[pivot * l + col]):
            return False
        if pivot != col:
            for c in range(l):
                work[col * l + c], work[pivot * l + c] = work[pivot * l + c], work[col * l + c]
            rhs[col], rhs[pivot] = rhs[pivot], rhs[col]
        for r in range(col + 1, l):
            factor = work[r * l + col] / work[col * l + col]
            for c in range(col, l):
                work[r * l + c] -= factor * work[col * l + c]
            rhs[r] -= factor * rhs[col]
    for r in range(l - 1, -1, -1):
        total = rhs[r]
        for c in range(r + 1, l):
            total -= work[r * l + c] * rhs[c]
        rhs[r] = total / work[r * l + r]
    return True


def _scratch(code, n):
    nodes = int(np.max(np.diff(code.node_start), initial=1))
    l = int(np.max(np.diff(code.out_start), initial=1))
    k = int(np.max(np.diff(code.read_start), initial=0))
    return (np.empty(nodes), np.empty(nodes), np.empty(nodes), np.empty(nodes), np.zeros(n),
            np.empty(l * l + l * k), np.empty(l * l), np.empty(l))


@_jit
def _run(code, registers, values, d0, d1):
    out_start, out_node, out_slot = code.out_start, code.out_node, code.out_slot
    for j in range(len(code.node_start) - 1):
        _evaluate(code, j, registers, values, d0, d1)
        for i in range(out_start[j], out_start[j + 1]):
            registers[out_slot[i]] = values[out_node[i]]


def run(code, x):
    """The registers after the program, in slot order."""
    registers = x.copy()
    values, d0, d1, _, _, _, _, _ = _scratch(code, len(x))
    _run(code, registers, values, d0, d1)
    return registers


@_jit
def _forward(code, registers, v, inverse, values, d0, d1, adjoint, slot_adjoint, block, work, u):  # noqa: C901 -- see build
    out_start, out_node, out_slot = code.out_start, code.out_node, code.out_slot
    read_start, read_slot = code.read_start, code.read_slot
    for j in range(len(code.node_start) - 1):
        _evaluate(code, j, registers, values, d0, d1)
        _blocks(code, j, values, d0, d1, adjoint, slot_adjoint, block)
        w0 = out_start[j]
        l = out_start[j + 1] - w0
        r0 = read_start[j]
        k = read_start[j + 1] - r0
        if l == 1:
            # The scalar step of eqs. 2.6c/f: a = block[0], b = block[1:].
            a = block[0]
            w = out_slot[w0]
            if inverse:
                if a == 0.0 or not math.isfinite(a):
                    return j
                t = v[w] / a
                v[w] = t
                for c in range(k):
                    v[read_slot[r0 + c]] -= block[1 + c] * t
            else:
                t = a * v[w]
                for c in range(k):
                    t += block[1 + c] * v[read_slot[r0 + c]]
                v[w] = t
        elif inverse:
            # v[W] = A^-T v[W]; v[S] -= B^T v[W]
            for i in range(l):
                u[i] = v[out_slot[w0 + i]]
            if not _solve(block, l, u, True, work):
                return j
            for i in range(l):
                v[out_slot[w0 + i]] = u[i]
            for c in range(k):
                total = 0.0
                for i in range(l):
                    total += block[l * l + i * k + c] * u[i]
                v[read_slot[r0 + c]] -= total
        else:
            # v[W] = A v[W] + B v[S]
            for i in range(l):
                total = 0.0
                for c in range(l):
                    total += block[i * l + c] * v[out_slot[w0 + c]]
                for c in range(k):
                    total += block[l * l + i * k + c] * v[read_slot[r0 + c]]
                u[i] = total
            for i in range(l):
                v[out_slot[w0 + i]] = u[i]
        for i in range(l):
            registers[out_slot[w0 + i]] = values[out_node[w0 + i]]
    return -1


def forward(code, x, v, inverse):
    """``J xdot`` (or ``J^-T xbar`` when ``inverse``) into ``v``, in one pass with the primal: no tape."""
    return _forward(code, x.copy(), v, inverse, *_scratch(code, len(x)))


@_jit
def _record(code, registers, tape, offsets, values, d0, d1, adjoint, slot_adjoint):
    out_start, out_node, out_slot = code.out_start, code.out_node, code.out_slot
    for j in range(len(code.node_start) - 1):
        _evaluate(code, j, registers, values, d0, d1)
        _blocks(code, j, values, d0, d1, adjoint, slot_adjoint, tape[offsets[j]:offsets[j + 1]])
        for i in range(out_start[j], out_start[j + 1]):
            registers[out_slot[i]] = values[out_node[i]]


def record(code, x, tape, offsets):
    """Run the program, keeping every lump's ``A`` and ``B`` in ``tape``; the final registers."""
    registers = x.copy()
    values, d0, d1, adjoint, slot_adjoint, _, _, _ = _scratch(code, len(x))
    _record(code, registers, tape, offsets, values, d0, d1, adjoint, slot_adjoint)
    return registers


@_jit
def _backward(code, tape, offsets, v, inverse, work, u):  # noqa: C901 -- per lump, see build's comment
    out_start, out_slot, read_start, read_slot = code.out_start, code.out_slot, code.read_start, code.read_slot
    for j in range(len(code.node_start) - 2, -1, -1):
        block = tape[offsets[j]:offsets[j + 1]]
        w0 = out_start[j]
        l = out_start[j + 1] - w0
        r0 = read_start[j]
        k = read_start[j + 1] - r0
        if l == 1:
            a = block[0]
            w = out_slot[w0]
            if inverse:
                t = v[w]
                for c in range(k):
                    t -= block[1 + c] * v[read_slot[r0 + c]]
                if a == 0.0 or not math.isfinite(a):
                    return j
                v[w] = t / a
            else:
                t = v[w]
                for c in range(k):
                    v[read_slot[r0 + c]] += block[1 + c] * t
                v[w] = a * t
        elif inverse:
            # v[W] = A^-1 (v[W] - B v[S])
            for i in range(l):
                total = v[out_slot[w0 + i]]
                for c in range(k):
                    total -= block[l * l + i * k + c] * v[read_slot[r0 + c]]
                u[i] = total
            if not _solve(block, l, u, False, work):
                return j
            for i in range(l):
                v[out_slot[w0 + i]] = u[i]
        else:
            # v[S] += B^T v[W]; v[W] = A^T v[W]
            for c in range(k):
                total = 0.0
                for i in range(l):
                    total += block[l * l + i * k + c] * v[out_slot[w0 + i]]
                v[read_slot[r0 + c]] += total
            for c in range(l):
                total = 0.0
                for i in range(l):
                    total += block[i * l + c] * v[out_slot[w0 + i]]
                u[c] = total
            for c in range(l):
                v[out_slot[w0 + c]] = u[c]
    return -1


def backward(code, tape, offsets, v, inverse):
    """``J^T ybar`` (or ``J^-1 ydot`` when ``inverse``) into ``v`` from the tape, last lump first."""
    _, _, _, _, _, _, work, u = _scratch(code, len(v))
    return _backward(code, tape, offsets, v, inverse, work, u)


@_jit
def _logdet(code, tape, offsets, work):  # noqa: C901 -- per lump, see build's comment
    out_start = code.out_start
    total = 0.0
    for j in range(len(code.node_start) - 1):
        l = out_start[j + 1] - out_start[j]
        block = tape[offsets[j]:offsets[j + 1]]
        if l == 1:
            total += math.log(abs(block[0]))
            continue
        # log |det A| from the pivots of Gaussian elimination with partial pivoting.
        for i in range(l * l):
            work[i] = block[i]
        for col in range(l):
            pivot = col
            for r in range(col + 1, l):
                if abs(work[r * l + col]) > abs(work[pivot * l + col]):
                    pivot = r
            if work[pivot * l + col] == 0.0:
                return -np.inf
            for c in range(l):
                work[col * l + c], work[pivot * l + c] = work[pivot * l + c], work[col * l + c]
            total += math.log(abs(work[col * l + col]))
            for r in range(col + 1, l):
                factor = work[r * l + col] / work[col * l + col]
                for c in range(col, l):
                    work[r * l + c] -= factor * work[col * l + c]
    return total


def logdet(code, tape, offsets):
    """``sum_t log |det A_t|`` from a recorded tape."""
    return _logdet(code, tape, offsets, np.empty(int(np.max(np.diff(code.out_start), initial=1)) ** 2))


# ----------------------------------------------------------------------------------------------
# Analysis of a traced graph (nodes numbered in the order they were made, inputs 0..n-1 first).


@_jit
def mark_useful(ops, arg0, arg1, n, outputs):
    """1 for every node the outputs depend on."""
    useful = np.zeros(len(ops), dtype=np.uint8)
    for node in outputs:
        useful[node] = 1
    for node in range(len(ops) - 1, n - 1, -1):
        if useful[node]:
            count = ARITY[ops[node]]
            if count > 0:
                useful[arg0[node]] = 1
            if count > 1:
                useful[arg1[node]] = 1
    return useful


@_jit
def own(ops, arg0, arg1, n, useful, pinned):
    """The graph's vertices (``key``) and, for every other node, the one vertex that uses it (``owner``).

    From the last node back: a pinned node (a value written to a register, an
    output) is a vertex; a node that only one vertex uses is part of it; a node
    two vertices use is a temporary, a vertex of its own.
    """
    count = len(ops)
    key = np.zeros(count, dtype=np.uint8)
    owner = np.full(count, -1, dtype=np.int64)
    conflict = -2
    for node in range(count - 1, n - 1, -1):
        if not useful[node] or ops[node] == CONST:
            continue
        if pinned[node] or owner[node] == conflict:
            key[node] = 1
            owner[node] = node
        for k in range(ARITY[ops[node]]):
            a = arg0[node] if k == 0 else arg1[node]
            if a >= n and ops[a] != CONST:
                if owner[a] == -1:
                    owner[a] = owner[node]
                elif owner[a] != owner[node]:
                    owner[a] = conflict
    return key, owner


@_jit
def _number_values(n, key):
    """``value`` (node -> value: inputs ``0..n-1``, then the vertices ``n..``; -1 for nodes inside a vertex) and
    ``vertex_node``, the node of each vertex."""
    value = np.full(len(key), -1, dtype=np.int64)
    for node in range(n):
        value[node] = node
    vertex_node = np.flatnonzero(key[n:]) + n
    for v in range(len(vertex_node)):
        value[vertex_node[v]] = n + v
    return value, vertex_node


@_jit
def _vertex_members(ops, n, useful, owner, value, vertices):
    """The nodes of each vertex, in the order made: ``members[member_start[v]:member_start[v+1]]``."""
    sizes = np.zeros(vertices + 1, dtype=np.int64)
    for node in range(n, len(ops)):
        if useful[node] and ops[node] != CONST:
            sizes[value[owner[node]] - n + 1] += 1
    member_start = np.cumsum(sizes)
    members = np.empty(member_start[-1], dtype=np.int64)
    fill = member_start[:-1].copy()
    for node in range(n, len(ops)):
        if useful[node] and ops[node] != CONST:
            v = value[owner[node]] - n
            members[fill[v]] = node
            fill[v] += 1
    return member_start, members


@_jit
def vertex_graph(ops, arg0, arg1, n, useful, key, owner):
    """Values (inputs ``0..n-1``, then the vertices ``n..``), each vertex's nodes and the values it reads.

    Returns ``value`` (node -> value, -1 for nodes inside a vertex),
    ``vertex_node``, the nodes of vertex ``v`` in ``members[member_start[v]:member_start[v+1]]``
    (in the order made, the vertex last) and the values it reads in ``preds[pred_start[v]:...]``.
    """
    value, vertex_node = _number_values(n, key)
    vertices = len(vertex_node)
    member_start, members = _vertex_members(ops, n, useful, owner, value, vertices)
    seen = np.full(n + vertices, -1, dtype=np.int64)
    pred_start = np.zeros(vertices + 1, dtype=np.int64)
    preds = np.empty(2 * len(members), dtype=np.int64)
    total = 0
    for v in range(vertices):
        for m in range(member_start[v], member_start[v + 1]):
            node = members[m]
            for k in range(ARITY[ops[node]]):
                a = arg0[node] if k == 0 else arg1[node]
                p = value[a]
                if ops[a] != CONST and p >= 0 and a != node and seen[p] != v:
                    seen[p] = v
                    preds[total] = p
                    total += 1
        pred_start[v + 1] = total
    return value, vertex_node, member_start, members, pred_start, preds[:total]


@_jit
def _uses(pred_start, preds, values):
    uses = np.zeros(values, dtype=np.int64)
    for p in preds:
        uses[p] += 1
    return uses


@_jit
def live_counts(sequence, pred_start, preds, is_output, n):
    """Live values after each vertex of ``sequence``; the cut positions (exactly ``n`` live); the first
    position where fewer than ``n`` are live, or -1."""
    remaining = _uses(pred_start, preds, len(is_output))
    live = np.empty(len(sequence), dtype=np.int64)
    cuts = np.empty(len(sequence) + 1, dtype=np.int64)
    cuts[0] = 0
    count = 1
    current = n
    for position in range(len(sequence)):
        v = sequence[position]
        for i in range(pred_start[v], pred_start[v + 1]):
            p = preds[i]
            remaining[p] -= 1
            if remaining[p] == 0 and not is_output[p]:
                current -= 1
        current += 1
        live[position] = current
        if current < n:
            return live, cuts[:count], position
        if current == n:
            cuts[count] = position + 1
            count += 1
    return live, cuts[:count], -1


@_jit
def _consumers(pred_start, preds, uses, n):
    """The vertices that read each value, ``consumers[consumer_start[p]:consumer_start[p+1]]``, and how many
    vertices (not inputs) each vertex waits for."""
    vertices = len(pred_start) - 1
    consumer_start = np.zeros(len(uses) + 1, dtype=np.int64)
    consumer_start[1:] = np.cumsum(uses)
    consumers = np.empty(len(preds), dtype=np.int64)
    fill = consumer_start[:-1].copy()
    waiting = np.zeros(vertices, dtype=np.int64)
    for v in range(vertices):
        for i in range(pred_start[v], pred_start[v + 1]):
            p = preds[i]
            consumers[fill[p]] = v
            fill[p] += 1
            if p >= n:
                waiting[v] += 1
    return consumer_start, consumers, waiting


@_jit
def greedy_order(pred_start, preds, is_output, n):
    """A topological order that always takes the ready vertex after which the fewest values are live
    (ties: the one made first). Quadratic in the number of ready vertices: for modest programs."""
    vertices = len(pred_start) - 1
    remaining = _uses(pred_start, preds, len(is_output))
    consumer_start, consumers, waiting = _consumers(pred_start, preds, remaining, n)
    ready = np.empty(vertices, dtype=np.int64)
    count = 0
    for v in np.flatnonzero(waiting == 0):
        ready[count] = v
        count += 1
    sequence = np.empty(vertices, dtype=np.int64)
    for position in range(vertices):
        best, best_growth = 0, 1 << 62
        for r in range(count):
            v = ready[r]
            growth = 1
            for i in range(pred_start[v], pred_start[v + 1]):
                p = preds[i]
                if remaining[p] == 1 and not is_output[p]:
                    growth -= 1
            if growth < best_growth or (growth == best_growth and v < ready[best]):
                best, best_growth = r, growth
        v = ready[best]
        count -= 1
        ready[best] = ready[count]
        sequence[position] = v
        for i in range(pred_start[v], pred_start[v + 1]):
            remaining[preds[i]] -= 1
        for i in range(consumer_start[n + v], consumer_start[n + v + 1]):
            c = consumers[i]
            waiting[c] -= 1
            if waiting[c] == 0:
                ready[count] = c
                count += 1
    return sequence


@_jit
def build(sequence, cuts, pred_start, preds, member_start, members, ops, arg0, arg1, consts, value,  # noqa: C901 -- see below
          is_output, home, n):
    """The instruction arrays of the lumps between consecutive cuts (see :class:`Instructions`).

    Each lump's new values take the slots of the values it kills (a value
    prefers the slot of the register the program wrote it to); its
    instructions are its vertices' nodes in order, with its own copies of the
    constants they use. Also returns the final slot of every value and the
    lump of every vertex.
    """
    # One function on purpose, as _forward and _backward: Numba counts a reference to every array passed to a
    # helper, on every call, and per lump that costs more than the lump's own work.
    values = len(is_output)
    lumps = len(cuts) - 1
    remaining = _uses(pred_start, preds, values)
    slot = np.full(values, -1, dtype=np.int64)
    for i in range(n):
        slot[i] = i
    lump_of = np.full(values, -1, dtype=np.int64)
    killed_mark = np.full(values, -1, dtype=np.int64)
    read_mark = np.full(values, -1, dtype=np.int64)
    local = np.full(len(ops), -1, dtype=np.int64)
    const_mark = np.full(len(ops), -1, dtype=np.int64)
    capacity = _INSTRUCTIONS_PER_NODE * len(members)
    out_ops = np.empty(capacity, dtype=np.int64)
    out_arg0 = np.zeros(capacity, dtype=np.int64)
    out_arg1 = np.zeros(capacity, dtype=np.int64)
    out_consts = np.zeros(capacity)
    node_start = np.zeros(lumps + 1, dtype=np.int64)
    out_start = np.zeros(lumps + 1, dtype=np.int64)
    read_start = np.zeros(lumps + 1, dtype=np.int64)
    out_node = np.empty(len(sequence), dtype=np.int64)
    out_slot = np.empty(len(sequence), dtype=np.int64)
    read_slot = np.empty(len(preds), dtype=np.int64)
    killed = np.empty(values, dtype=np.int64)
    read = np.empty(values, dtype=np.int64)
    new = np.empty(values, dtype=np.int64)
    size = 0
    outs = 0
    reads = 0
    for j in range(lumps):
        begin, end = cuts[j], cuts[j + 1]
        for position in range(begin, end):
            lump_of[n + sequence[position]] = j
        nk = 0
        nr = 0
        for position in range(begin, end):
            v = sequence[position]
            for i in range(pred_start[v], pred_start[v + 1]):
                p = preds[i]
                remaining[p] -= 1
                if lump_of[p] == j:
                    continue
                if remaining[p] == 0 and not is_output[p]:
                    killed_mark[p] = j
                    killed[nk] = p
                    nk += 1
                elif read_mark[p] != j:
                    read_mark[p] = j
                    read[nr] = p
                    nr += 1
        # Instructions: each vertex's nodes in the order made; operands from before the lump are slots.
        base = size
        for position in range(begin, end):
            v = sequence[position]
            for m in range(member_start[v], member_start[v + 1]):
                node = members[m]
                for k in range(ARITY[ops[node]]):
                    a = arg0[node] if k == 0 else arg1[node]
                    if ops[a] == CONST and const_mark[a] != j:
                        const_mark[a] = j
                        local[a] = size - base
                        out_ops[size] = CONST
                        out_consts[size] = consts[a]
                        size += 1
                for k in range(ARITY[ops[node]]):
                    a = arg0[node] if k == 0 else arg1[node]
                    p = value[a]
                    inside = ops[a] == CONST or p < 0 or lump_of[p] == j
                    operand = local[a] if inside else -1 - slot[p]
                    if k == 0:
                        out_arg0[size] = operand
                    else:
                        out_arg1[size] = operand
                out_ops[size] = ops[node]
                out_consts[size] = consts[node]
                local[node] = size - base
                size += 1
        node_start[j + 1] = size
        # Slots: the new values take the slots the killed values free.
        free = np.empty(nk, dtype=np.int64)
        for i in range(nk):
            free[i] = slot[killed[i]]
            slot[killed[i]] = -1
        free = np.sort(free)
        taken = np.zeros(nk, dtype=np.uint8)
        nn = 0
        for position in range(begin, end):
            v = n + sequence[position]
            if remaining[v] > 0 or is_output[v]:
                new[nn] = v
                nn += 1
        for i in range(nn):
            for f in range(nk):
                if not taken[f] and free[f] == home[new[i]]:
                    taken[f] = 1
                    slot[new[i]] = free[f]
                    break
        f = 0
        for i in range(nn):
            if slot[new[i]] < 0:
                while taken[f]:
                    f += 1
                taken[f] = 1
                slot[new[i]] = free[f]
        for f in range(nk):
            for i in range(nn):
                if slot[new[i]] == free[f]:
                    out_node[outs] = local[members[member_start[new[i] - n + 1] - 1]]
                    out_slot[outs] = free[f]
                    outs += 1
        out_start[j + 1] = outs
        first = reads
        for i in range(nr):
            if killed_mark[read[i]] != j:
                read_slot[reads] = slot[read[i]]
                reads += 1
        read_slot[first:reads] = np.sort(read_slot[first:reads])
        read_start[j + 1] = reads
    return (out_ops[:size], out_arg0[:size], out_arg1[:size], out_consts[:size], node_start, out_start,
            out_node[:outs], out_slot[:outs], read_start, read_slot[:reads], slot, lump_of)

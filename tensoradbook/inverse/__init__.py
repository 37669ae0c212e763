"""Inverse accumulation mode: ``J^-1 ydot`` and ``J^-T xbar`` at the cost of ``J xdot`` and ``J^T ybar``.

Pearlmutter & Siskind, "Automatic Differentiation: Inverse Accumulation Mode"
(arXiv 2411.18786). A function ``f: R^n -> R^n`` is written as a register
machine: ``n`` registers, each step overwriting one register with a function of
registers that includes the old value of that register (sec. 2, eqs. 2.5).
The step's Jacobian is the identity except for its row ``R``, ``(a, b)`` with
``a = dh/dx[R]`` the diagonal partial and ``b`` the partials for the other
registers it reads (eq. 2.6c); its inverse has the same sparsity, ``(1/a,
-b/a)`` (eq. 2.6f). So eqs. 2.3 (forward and reverse) and 2.4 (their inverses)
cost the same:

=========================  ===============  =========================================  =======
sweep                      computes         per step                                   order
=========================  ===============  =========================================  =======
:func:`jvp`                ``J xdot``       ``v[R] = a v[R] + b.v[S]``                 forward
:func:`vjp`                ``J^T ybar``     ``v[S] += b v[R]; v[R] = a v[R]``          reverse
:func:`forward_inverse`    ``J^-T xbar``    ``u = v[R]/a; v[R] = u; v[S] -= b u``      forward
:func:`reverse_inverse`    ``J^-1 ydot``    ``v[R] = (v[R] - b.v[S]) / a``             reverse
=========================  ===============  =========================================  =======

The reverse sweeps replay the partials from a tape; forward inverse needs
none. A step is invertible iff ``a != 0``, and ``det J = prod_t a_t``.

Programs with temporaries (sec. 3) have more than ``n`` live values at some
points. :func:`trace` records the program as a data-flow graph, orders it
topologically (program order, a greedy order, or one the user gives) and cuts
it where exactly ``n`` values are live; each piece is a *lump*, a step with
``l`` outputs whose Jacobian is ``[[A, B], [0, I]]`` with inverse ``[[A^-1,
-A^-1 B], [0, I]]`` (eqs. 2.6g, 2.6h). The order changes the lump sizes
(Fig. 4). The invariants of eqs. 4.7 and the ODE view of sec. 5 (eqs. 5.10:
Euler steps, whose inverse sweeps integrate backwards in time) are what the
tests check. :func:`newton` solves ``F(x) = 0`` with one reverse-inverse sweep
per iteration.

Every sweep has two engines over the same instruction arrays: plain Python
(``engine="python"``, also the one that records the register values after each
step, :func:`sweep`) and compiled Numba loops (``engine="numba"``, in
:mod:`tensoradbook.inverse.engine`) for programs of millions of steps.
"""

from __future__ import annotations

import functools
import math
import numbers
from array import array
from dataclasses import dataclass

import numpy as np

from . import engine as _kernels
from ..integer.matrix import as_int, shown
from .engine import (ADD, ARITY, CONST, COS, DIV, EXP, INPUT, LOG, MUL, NEG, POW, POWC, SIN, SQRT,
                               SUB, TANH)

__all__ = [
    "Lump", "NewtonError", "NewtonResult", "Program", "Step", "Sweep", "Tape",
    "cos", "exp", "finite_difference_newton", "forward_inverse", "jacobian", "jvp", "log", "logdet",
    "newton", "partials", "reverse_inverse", "run", "sin", "sqrt", "sweep", "tanh", "trace", "unlayer", "vjp",
]

_UNARY = {EXP: "exp", LOG: "log", SIN: "sin", COS: "cos", TANH: "tanh", SQRT: "sqrt"}
_BINARY = {ADD: "+", SUB: "-", MUL: "*", DIV: "/", POW: "**"}
ENGINES = ("auto", "python", "numba")
# "auto" compiles only programs long enough for the first call's JIT time to pay off; so does trace().
_AUTO_NODES = 5000
MAX_REGISTERS = 10**7  # the trace keeps a few arrays of n entries; the benchmarks go to 10**4


# ----------------------------------------------------------------------------------------------
# Tracing: register values are Var nodes of a graph; assignments to registers are the steps.


class _Graph:
    """The traced data-flow graph: one entry per operation, inputs first."""

    def __init__(self, n: int):
        self.op = array("q", [INPUT] * n)
        self.arg0 = array("q", [-1] * n)
        self.arg1 = array("q", [-1] * n)
        self.const = array("d", [0.0] * n)
        self.registers = list(range(n))   # the node each register holds now
        self.assignments: list[tuple[int, int, int]] = []  # (register, node overwritten, node written)
        self._constants: dict[float, int] = {}

    def node(self, op: int, arg0: int = -1, arg1: int = -1, const: float = 0.0) -> Var:
        self.op.append(op)
        self.arg0.append(arg0)
        self.arg1.append(arg1)
        self.const.append(const)
        return Var(self, len(self.op) - 1)

    def operand(self, value, where: str) -> int:
        """The node of a register value or of a number (one node per distinct constant)."""
        if type(value) is Var:
            if value.graph is not self:
                raise ValueError(f"{where}: a value from another trace was mixed into this one")
            return value.id
        if type(value) in (float, int) or (isinstance(value, numbers.Real) and not isinstance(value, bool)):
            value = float(value)
            node = self._constants.get(value) if value != 0 else None   # 0.0 and -0.0 differ as divisors
            if node is None:
                node = self.node(CONST, const=value).id
                self._constants[value] = node
            return node
        raise TypeError(f"{where}: register values combine with numbers, not {type(value).__name__}")


def _combinable(value) -> bool:
    return type(value) in (Var, float, int) or (isinstance(value, numbers.Real) and not isinstance(value, bool))


class Var:
    """A register value while :func:`trace` records a program: supports ``+ - * / **`` and the ``ia`` functions."""

    __slots__ = ("graph", "id")

    def __init__(self, graph: _Graph, node: int):
        self.graph = graph
        self.id = node

    def _binary(self, op: int, other, swap: bool = False):
        if not _combinable(other):
            return NotImplemented
        mine, theirs = self.id, self.graph.operand(other, f"'{_BINARY[op]}'")
        return self.graph.node(op, theirs, mine) if swap else self.graph.node(op, mine, theirs)

    def __add__(self, other):
        return self._binary(ADD, other)

    def __radd__(self, other):
        return self._binary(ADD, other, swap=True)

    def __sub__(self, other):
        return self._binary(SUB, other)

    def __rsub__(self, other):
        return self._binary(SUB, other, swap=True)

    def __mul__(self, other):
        return self._binary(MUL, other)

    def __rmul__(self, other):
        return self._binary(MUL, other, swap=True)

    def __truediv__(self, other):
        return self._binary(DIV, other)

    def __rtruediv__(self, other):
        return self._binary(DIV, other, swap=True)

    def __pow__(self, other):
        if type(other) is not Var and _combinable(other):
            # A constant exponent has no partial of its own: x ** c is one unary instruction.
            if other == 0:
                return Var(self.graph, self.graph.operand(1.0, "'**'"))
            return self.graph.node(POWC, self.id, const=float(other))
        return self._binary(POW, other)

    def __rpow__(self, other):
        return self._binary(POW, other, swap=True)

    def __neg__(self):
        return self.graph.node(NEG, self.id)

    def __pos__(self):
        return self

    def __bool__(self):
        raise TypeError("a traced register value has no truth value: the program's control flow "
                        "must not depend on register values (trace records one straight-line program)")

    __lt__ = __le__ = __gt__ = __ge__ = lambda self, other: self.__bool__()

    def __float__(self):
        raise TypeError("a traced register value has no number yet: use ia.run(prog, x) for values")

    def __repr__(self):
        return f"<traced value #{self.id}>"


def _elementary(op: int, name: str, numeric):
    def function(value):
        if isinstance(value, Var):
            return value.graph.node(op, value.id)
        return numeric(value)
    function.__name__ = name
    function.__doc__ = (f"``{name}`` of a traced register value (a new node), or of a plain number.")
    return function


exp = _elementary(EXP, "exp", np.exp)
log = _elementary(LOG, "log", np.log)
sin = _elementary(SIN, "sin", np.sin)
cos = _elementary(COS, "cos", np.cos)
tanh = _elementary(TANH, "tanh", np.tanh)
sqrt = _elementary(SQRT, "sqrt", np.sqrt)


class Registers:
    """The ``n`` registers a traced step function reads and writes: ``x[i]`` and ``x[i] = value``."""

    def __init__(self, graph: _Graph):
        self._graph = graph

    def __len__(self) -> int:
        return len(self._graph.registers)

    def _index(self, i) -> int:
        n = len(self._graph.registers)
        if type(i) is int and 0 <= i < n:
            return i
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"registers are indexed by integers 0..{n - 1}, not {i!r}")
        if not -n <= i < n:
            raise IndexError(f"register x[{i}] does not exist: there are {n} registers, x[0]..x[{n - 1}]")
        return int(i) % n

    def __getitem__(self, i) -> Var:
        return Var(self._graph, self._graph.registers[self._index(i)])

    def __setitem__(self, i, value) -> None:
        graph, register = self._graph, self._index(i)
        node = graph.operand(value, f"x[{register}] = ...")
        graph.assignments.append((register, graph.registers[register], node))
        graph.registers[register] = node

    def __iter__(self):
        return (self[i] for i in range(len(self)))


# ----------------------------------------------------------------------------------------------
# The program: steps, lumps and the instruction arrays the sweeps run.


@dataclass(frozen=True)
class Step:
    """One assignment ``x[register] = text`` of the traced program (``index`` counts from 1).

    ``inputs`` names what the right-hand side reads (registers ``x[i]`` as they
    were before the step, temporaries ``t1, t2, ...``); ``lump`` is the index of
    the lump that computes it (``None`` for a copy of an existing value).
    """

    index: int
    register: int
    text: str
    inputs: tuple[str, ...]
    lump: int | None

    def __str__(self) -> str:
        return f"step {self.index}: x[{self.register}] = {self.text}"


@dataclass(frozen=True)
class Lump:
    """A block step of the lumped program (eqs. 2.6g/h): writes ``written``, also reads ``read``.

    ``size`` is ``l = len(written)``; the block ``A`` (``l x l``) holds the
    partials of the new values for the old values of the written registers,
    ``B`` (``l x len(read)``) those for the other registers read. ``cut`` is
    the position in :attr:`Program.order` after which the lump ends (where
    exactly ``n`` values are live); ``vertices`` are the graph vertices it
    computes, ``steps`` the assignments among them.
    """

    index: int
    written: tuple[int, ...]
    read: tuple[int, ...]
    vertices: tuple[str, ...]
    steps: tuple[int, ...]
    cut: int

    @property
    def size(self) -> int:
        return len(self.written)

    def describe(self) -> str:
        registers = ", ".join(f"x[{r}]" for r in self.written)
        if self.vertices == tuple(f"s{s}" for s in self.steps) and len(self.steps) == 1:
            return f"step {self.steps[0]} (writes {registers})"
        steps = ", ".join(map(str, self.steps)) or "none"
        return f"lump {self.index} (steps {steps}; writes {registers})"


class Program:
    """A traced register program of width ``n``, cut into lumps; build it with :func:`trace`.

    ``steps`` are the assignments as written and ``lumps`` the block steps the
    sweeps run (one per step for a constant-width program). The lumps come from
    the graph's vertices (``vertices``: ``s3`` is the value step 3 wrote,
    ``t1`` the first temporary, a value two vertices share) taken in ``order``;
    ``live[i]`` is the number of live values after ``order[i]``, ``cuts`` the
    positions where exactly ``n`` are (each lump ends at one), and
    ``output_slots[r]`` the slot holding register ``r``'s result at the end
    (the identity unless the program moves values between registers, e.g. a
    swap).
    """

    def __init__(self, graph: _Graph, order="program"):
        self.n = len(graph.registers)
        self._ops = np.frombuffer(graph.op, dtype=np.int64)
        self._arg0 = np.frombuffer(graph.arg0, dtype=np.int64)
        self._arg1 = np.frombuffer(graph.arg1, dtype=np.int64)
        self._consts = np.frombuffer(graph.const, dtype=np.float64)
        assignments = np.asarray(graph.assignments, dtype=np.int64).reshape(-1, 3)
        self._assigned_register, self._overwritten, self._written = assignments.T
        self._outputs = np.asarray(graph.registers, dtype=np.int64)
        self._analyse()
        self._lumpify(order)

    # -- structure -----------------------------------------------------------------------------

    def _analyse(self) -> None:
        """Reject programs singular at every point; find the vertices of the lump graph."""
        n, ops, count = self.n, self._ops, len(self._ops)
        useful = self._kernel(_kernels.mark_useful)(ops, self._arg0, self._arg1, n, self._outputs)
        # The first step that writes a value names it ("s3") and gives it its register.
        first = np.full(count, -1, dtype=np.int64)
        first[self._written[::-1]] = np.arange(len(self._written))[::-1]
        first[:n] = -1
        first[ops == CONST] = -1
        self._first_written = first
        if not useful[:n].all():
            self._blame(range(len(self._written)))
            raise ValueError(f"the result does not depend on input x[{int(np.argmin(useful[:n]))}]: "
                             "the Jacobian is singular")
        holders: dict[int, list[int]] = {}
        for register, node in enumerate(self._outputs.tolist()):
            holders.setdefault(node, []).append(register)
        for node, registers in holders.items():
            if len(registers) > 1 or ops[node] == CONST:
                self._blame(range(len(self._written)))
                names = " and ".join(f"x[{r}]" for r in registers)
                raise ValueError(f"registers {names} end with the same value: equal rows, the Jacobian is singular"
                                 if len(registers) > 1 else
                                 f"register {names} ends with a constant: a zero row, the Jacobian is singular")
        pinned = (first >= 0).astype(np.uint8)
        pinned[self._outputs] = 1
        pinned[:n] = 0
        key, owner = self._kernel(_kernels.own)(ops, self._arg0, self._arg1, n, useful, pinned)
        (self._value, self._vertex_node, self._member_start, self._members, self._pred_start,
         self._preds) = self._kernel(_kernels.vertex_graph)(ops, self._arg0, self._arg1, n, useful, key, owner)
        values = n + len(self._vertex_node)
        self._is_output = np.zeros(values, dtype=np.uint8)
        self._is_output[self._value[self._outputs]] = 1
        self._value_step = np.concatenate([np.full(n, -1), first[self._vertex_node]])
        self._home = np.concatenate([np.arange(n), np.where(
            self._value_step[n:] >= 0, self._assigned_register[np.maximum(self._value_step[n:], 0)], -1)])

    def _kernel(self, kernel):
        """A compiled analysis kernel, or the same code run by Python for a small graph (no JIT wait)."""
        return kernel if len(self._ops) >= _AUTO_NODES else kernel.py_func

    def _blame(self, candidates) -> None:
        """Raise for the first of these steps that overwrites its register without reading it.

        Such a step makes a program singular everywhere unless the old value
        lives on elsewhere (a swap through a temporary), so this only names
        the culprit once the program is known to be singular.
        """
        for index in candidates:
            register, old, new = (int(v[index]) for v in (self._assigned_register, self._overwritten, self._written))
            if not self._reads(index, new, old):
                raise ValueError(
                    f"step {index + 1} (x[{register}] = {self._text_of(index)}) does not read register x[{register}], "
                    f"which it overwrites: its diagonal partial is 0 and the Jacobian is singular")

    def _reads(self, step: int, node: int, target: int) -> bool:
        """Whether the expression of ``step`` (value ``node``) reads ``target`` itself, not through the value
        of an earlier step. Nodes are numbered in order, so the search stops below ``target``."""
        stack, seen = [node], set()
        while stack:
            current = stack.pop()
            if current == target:
                return True
            if (current < target or current in seen or self._ops[current] == INPUT
                    or 0 <= self._first_written[current] < step):
                continue
            seen.add(current)
            stack += [int(a) for a in (self._arg0[current], self._arg1[current])[:ARITY[self._ops[current]]]]
        return False

    def _lumpify(self, order) -> None:
        """Cut the ordered vertices where exactly n values are live (sec. 3); build the instruction arrays."""
        n = self.n
        sequence = self._sequence(order)
        live, cuts, short = self._kernel(_kernels.live_counts)(sequence, self._pred_start, self._preds,
                                                               self._is_output, n)
        if short >= 0:
            self._blame(range(len(self._written)))
            raise ValueError(f"after vertex {self._name(n + sequence[short])} only {live[short]} values are live, "
                             f"fewer than the {n} registers: the Jacobian is singular")
        (ops, arg0, arg1, consts, node_start, out_start, out_node, out_slot, read_start, read_slot, slot,
         self._lump_of) = self._kernel(_kernels.build)(sequence, cuts, self._pred_start, self._preds,
                                                       self._member_start, self._members, self._ops, self._arg0,
                                                       self._arg1, self._consts, self._value, self._is_output,
                                                       self._home, n)
        output_slots = slot[self._value[self._outputs]]
        self.code = _Code(ops, arg0, arg1, consts, node_start, out_start, out_node, out_slot, read_start,
                          read_slot, output_slots)
        self._sequence_values = sequence
        self.live = live
        self.cuts = cuts
        self.output_slots = tuple(output_slots.tolist())

    def _sequence(self, order) -> np.ndarray:
        vertices = len(self._vertex_node)
        if isinstance(order, str):
            if order == "program":
                return np.arange(vertices, dtype=np.int64)
            if order == "greedy":
                return self._kernel(_kernels.greedy_order)(self._pred_start, self._preds, self._is_output, self.n)
            raise ValueError(f"unknown order {order!r}: give 'program', 'greedy' or a list of vertex names")
        if not isinstance(order, (list, tuple)) or not all(isinstance(name, str) for name in order):
            raise ValueError(f"order must be 'program', 'greedy' or a list of vertex names (str), got {shown(order)}")
        by_name = {name: v for v, name in enumerate(self.vertices)}
        sequence, placed = [], set()
        for name in order:
            if name not in by_name:
                raise ValueError(f"order: {name!r} is not a vertex of this program "
                                 f"(its vertices: {', '.join(self.vertices)})")
            v = by_name[name]
            if v in placed:
                raise ValueError(f"order: vertex {name} appears twice")
            reads = self._preds[self._pred_start[v]:self._pred_start[v + 1]]
            missing = [self._name(p) for p in reads if p >= self.n and p - self.n not in placed]
            if missing:
                raise ValueError(f"order: vertex {name} comes before {', '.join(missing)}, which it reads")
            placed.add(v)
            sequence.append(v)
        if len(sequence) != vertices:
            left = [name for v, name in enumerate(self.vertices) if v not in placed]
            raise ValueError(f"order: vertices {', '.join(left)} are missing")
        return np.asarray(sequence, dtype=np.int64)

    def reorder(self, order) -> Program:
        """The same program cut along another order: ``"program"``, ``"greedy"`` or a list of vertex names."""
        program = Program.__new__(Program)
        program.__dict__.update({k: v for k, v in self.__dict__.items() if k not in _LUMPED})
        program._lumpify(order)
        return program

    # -- description ---------------------------------------------------------------------------

    def _name(self, value: int) -> str:
        return f"x{value}" if value < self.n else self.vertices[value - self.n]

    @functools.cached_property
    def vertices(self) -> tuple[str, ...]:
        """The vertices' names, in the order their values were made."""
        names, temporaries = [], 0
        for step in self._value_step[self.n:].tolist():
            if step >= 0:
                names.append(f"s{step + 1}")
            else:
                temporaries += 1
                names.append(f"t{temporaries}")
        return tuple(names)

    @functools.cached_property
    def order(self) -> tuple[str, ...]:
        """The vertices in the order the lumps were cut along."""
        return tuple(self.vertices[v] for v in self._sequence_values.tolist())

    @functools.cached_property
    def lump_sizes(self) -> tuple[int, ...]:
        return tuple(np.diff(self.code.out_start).tolist())

    @functools.cached_property
    def lumps(self) -> tuple[Lump, ...]:
        return tuple(self.lump(j) for j in range(len(self)))

    def lump(self, j: int) -> Lump:
        """Lump ``j`` (``lumps[j]``, without describing all of them)."""
        j = as_int(j, "lump index j", minimum=0, maximum=len(self) - 1)
        code = self.code
        begin, end = int(self.cuts[j]), int(self.cuts[j + 1])
        steps = np.flatnonzero(self._step_lumps == j) + 1
        return Lump(j, tuple(code.out_slot[code.out_start[j]:code.out_start[j + 1]].tolist()),
                    tuple(code.read_slot[code.read_start[j]:code.read_start[j + 1]].tolist()),
                    tuple(self.vertices[v] for v in self._sequence_values[begin:end].tolist()),
                    tuple(steps.tolist()), end)

    @functools.cached_property
    def _step_lumps(self) -> np.ndarray:
        """The lump computing each step's value; -1 for a step that copies a value or whose value is unused."""
        value = self._value[self._written]
        made_here = (self._first_written[self._written] == np.arange(len(self._written))) & (value >= self.n)
        return np.where(made_here, self._lump_of[np.maximum(value, 0)], -1)

    @functools.cached_property
    def steps(self) -> tuple[Step, ...]:
        """The assignments as traced, with what each reads and the lump that computes it."""
        lumps = self._step_lumps.tolist()
        return tuple(Step(index + 1, register, text, inputs, lumps[index] if lumps[index] >= 0 else None)
                     for index, register, text, inputs in self._replay())

    def _replay(self, stop: int | None = None):
        """``(index, register, text, inputs)`` of each assignment, naming what it reads as it was then:
        ``x[r]`` for a value register r holds, else its name (``x0`` for an input, ``s3``, ``t1``)."""
        holder = {i: i for i in range(self.n)}          # node -> the register holding it
        named = set(self._vertex_node.tolist()) if hasattr(self, "_vertex_node") else set()
        for index, (register, old, new) in enumerate(zip(self._assigned_register.tolist()[:stop],
                                                         self._overwritten.tolist(), self._written.tolist())):
            def name(node, top=False):
                if node in holder:
                    return f"x[{holder[node]}]"
                if node < self.n:
                    return f"x{node}"
                if node in named and not top:
                    return self._name(int(self._value[node]))
                return None
            inputs = []
            text = self._render(new, name, inputs, top=True)
            yield index, register, text, tuple(dict.fromkeys(inputs))
            if holder.get(old) == register:
                del holder[old]
            holder[new] = register

    def _text_of(self, index: int) -> str:
        return list(self._replay(index + 1))[-1][2]

    def _render(self, node: int, name, inputs: list, top: bool = False) -> str:
        label = name(node, top)
        if label is not None:
            inputs.append(label)
            return label
        op, arg0, arg1 = int(self._ops[node]), int(self._arg0[node]), int(self._arg1[node])
        if op == CONST:
            return f"{self._consts[node]:g}"
        if op in _UNARY:
            return f"{_UNARY[op]}({self._render(arg0, name, inputs)})"
        if op == NEG:
            return f"-{_paren(self._render(arg0, name, inputs))}"
        if op == POWC:
            return f"{_paren(self._render(arg0, name, inputs))} ** {self._consts[node]:g}"
        left = self._render(arg0, name, inputs)
        return f"{_paren(left)} {_BINARY[op]} {_paren(self._render(arg1, name, inputs))}"

    @property
    def tape_bytes(self) -> int:
        """Bytes of partials a reverse sweep keeps: every lump's ``A`` and ``B`` (forward inverse keeps none)."""
        return int(self.code.tape_offsets()[-1]) * 8

    def __len__(self) -> int:
        return len(self.code.node_start) - 1

    def __repr__(self) -> str:
        sizes = np.diff(self.code.out_start)
        return (f"<inverse.Program: {self.n} registers, {len(self._written)} steps, {len(sizes)} lumps "
                f"(largest {int(sizes.max(initial=0))})>")


# What reorder() recomputes; the rest of a Program is shared.
_LUMPED = ("code", "_sequence_values", "live", "cuts", "output_slots", "_lump_of", "_step_lumps", "order",
           "lump_sizes", "lumps", "steps")


def _paren(text: str) -> str:
    """``text`` in parentheses when it has an operator outside any parentheses."""
    depth = 0
    for char in text:
        depth += (char == "(") - (char == ")")
        if char == " " and depth == 0:
            return f"({text})"
    return text


@dataclass(frozen=True)
class _Code:
    """The instruction arrays: lump ``j`` runs nodes ``node_start[j]:node_start[j+1]``, writes
    ``out_slot[out_start[j]:out_start[j+1]]`` with the values of its nodes ``out_node``, and reads the
    other slots ``read_slot[read_start[j]:read_start[j+1]]``; ``output_slots[r]`` holds result ``r``."""

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


def trace(step, n: int, order="program") -> Program:
    """Record ``step(x)`` on ``n`` registers as a :class:`Program`.

    ``step`` assigns registers in place (``x[0] = x[0] * x[1]``); each
    assignment is a step. It may keep values in local variables (temporaries);
    then the program is cut into lumps along ``order``: ``"program"`` (the order
    the values were computed), ``"greedy"`` (always the ready vertex that leaves
    the fewest values live) or a list of vertex names (:attr:`Program.order`
    lists them: ``s3`` is the value of step 3, ``t1`` the first temporary).
    Raises ValueError when the Jacobian is singular whatever the point: a step
    that overwrites a register it does not read, an input the result does not
    depend on, two registers ending with the same value.
    """
    if not callable(step):
        raise ValueError(f"step must be a function that updates its registers in place (x[i] = ...), "
                         f"got {shown(step)}")
    graph = _Graph(as_int(n, "n (the number of registers)", minimum=1, maximum=MAX_REGISTERS))
    result = step(Registers(graph))
    if result is not None:
        raise ValueError("the step function must update its registers in place (x[i] = ...) and return None, "
                         f"but it returned {type(result).__name__}")
    return Program(graph, order)


# ----------------------------------------------------------------------------------------------
# Evaluation in Python: one lump's values and its blocks A and B.


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


# ----------------------------------------------------------------------------------------------
# The sweeps.

MODES = ("jvp", "vjp", "forward_inverse", "reverse_inverse")


@dataclass(frozen=True)
class Tape:
    """The partials of every lump at one point: what the reverse sweeps replay (Python engine).

    ``A[j]`` and ``B[j]`` are lump ``j``'s blocks (eq. 2.6g); for a
    constant-width program ``a`` holds the diagonal partials ``a_t`` and
    ``b[t]`` the off-diagonal ones, for registers ``program.lumps[t].read``.
    ``values[j]`` are the registers before lump ``j`` (``values[-1]`` after
    the last), ``nbytes`` what the partials take.
    """

    program: Program
    values: np.ndarray
    A: tuple[np.ndarray, ...]
    B: tuple[np.ndarray, ...]

    @property
    def a(self) -> np.ndarray:
        return np.array([block[0, 0] for block in self._scalar(self.A)])

    @property
    def b(self) -> tuple[np.ndarray, ...]:
        return tuple(block[0] for block in self._scalar(self.B))

    def _scalar(self, blocks):
        if any(block.shape[0] != 1 for block in self.A):
            raise ValueError("the program has lumps of several outputs: read their blocks A and B instead")
        return blocks

    @property
    def nbytes(self) -> int:
        return sum(block.nbytes for block in self.A + self.B)

    @property
    def logdet(self) -> float:
        """``log |det J| = sum_t log |det A_t|`` (``sum_t log |a_t|`` for scalar steps)."""
        return float(sum(np.linalg.slogdet(block)[1] for block in self.A))

    def layers(self) -> list[np.ndarray]:
        """The lumps' Jacobians ``J_j`` as ``n x n`` matrices, ``J = J_T ... J_1`` (Fig. 3(b), the layered
        primal graph): the rows a lump writes hold its blocks ``A`` and ``B``; every other register is
        copied, an edge of weight 1."""
        n, out = self.program.n, []
        for lump, A, B in zip(self.program.lumps, self.A, self.B):
            J = np.eye(n)
            J[np.ix_(lump.written, lump.written)] = A
            J[np.ix_(lump.written, lump.read)] = B
            out.append(J)
        return out

    def inverse_layers(self) -> list[np.ndarray]:
        """Each layer inverted as the reverse inverse sweep does (Fig. 1(e), Fig. 3(c), eq. 2.6h): the
        written rows become ``A^-1`` and ``-A^-1 B``, so ``J_j^-1`` has the sparsity of ``J_j``. Raises
        ValueError, naming the step, where a block ``A`` is singular at the point."""
        out = []
        for j, (lump, layer) in enumerate(zip(self.program.lumps, self.layers())):
            A, B = self.A[j], self.B[j]
            inverse = layer.copy()
            inverse[np.ix_(lump.written, lump.written)] = _solve(self.program, j, A, np.eye(lump.size))
            inverse[np.ix_(lump.written, lump.read)] = -_solve(self.program, j, A, B)
            out.append(inverse)
        return out


@dataclass(frozen=True)
class Sweep:
    """One sweep recorded step by step (Python engine), for stepping through it.

    ``lumps`` is the order the sweep visits the lumps (forward sweeps go
    0, 1, ..., reverse sweeps back from the last); ``states[0]`` is the seed
    in the registers and ``states[i]`` the derivative registers after visiting
    ``lumps[i - 1]`` (by slot: see :attr:`Program.output_slots`). ``tape``
    holds the primal values and partials; ``result`` is the answer, in
    register order.
    """

    mode: str
    lumps: tuple[int, ...]
    states: np.ndarray
    tape: Tape
    result: np.ndarray

    @property
    def tape_bytes(self) -> int:
        """Bytes of partials the sweep had to keep: none for the forward sweeps."""
        return self.tape.nbytes if self.mode in ("vjp", "reverse_inverse") else 0


def _vector(value, n: int, what: str) -> np.ndarray:
    try:
        vector = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} must be a vector of {n} numbers, got {shown(value)}") from None
    if vector.shape != (n,):
        raise ValueError(f"{what} must be a vector of {n} numbers (one per register), got shape {vector.shape}")
    return vector


def _program(program) -> Program:
    if not isinstance(program, Program):
        raise ValueError(f"program must be a Program (from ia.trace), got {shown(program)}")
    return program


def _real(value, what: str, low: float, high: float) -> float:
    """A real number (not bool) with ``low < value < high``; ValueError naming ``what`` otherwise."""
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)
            or not low < float(value) < high):
        raise ValueError(f"{what} must be a number between {low:g} and {high:g} (exclusive), got {shown(value)}")
    return float(value)


def _newton_settings(tol, max_iter) -> tuple[float, int]:
    return _real(tol, "tol", 0, math.inf), as_int(max_iter, "max_iter", minimum=0)


def _engine(program: Program, engine: str) -> str:
    if not isinstance(engine, str) or engine not in ENGINES:
        raise ValueError(f"unknown engine {shown(engine)}: choose one of {', '.join(map(repr, ENGINES))}")
    if engine == "auto":
        return "numba" if len(program.code.ops) >= _AUTO_NODES else "python"
    return engine


def _singular(program: Program, j: int, A) -> ValueError:
    """The error for lump ``j`` whose block ``A`` (flat or square) is singular at the point."""
    lump = program.lump(j)
    if lump.size == 1 and len(lump.steps) == 1:
        index = lump.steps[0]
        r = int(program._assigned_register[index - 1])
        return ValueError(f"step {index} (x[{r}] = {program._text_of(index - 1)}): the diagonal partial "
                          f"d x[{r}]'/d x[{r}] is {float(np.ravel(A)[0]):g} at this point, so the Jacobian is singular")
    return ValueError(f"{lump.describe()}: its block A (d new/d old values of the registers it writes) is "
                      f"singular at this point, so the Jacobian is singular")


def _solve(program: Program, j: int, A: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    if A.shape == (1, 1):
        if A[0, 0] == 0 or not np.isfinite(A[0, 0]):
            raise _singular(program, j, A)
        return rhs / A[0, 0]
    try:
        solution = np.linalg.solve(A, rhs)
    except np.linalg.LinAlgError:
        raise _singular(program, j, A) from None
    if not np.all(np.isfinite(solution)) and np.all(np.isfinite(rhs)):
        raise _singular(program, j, A)
    return solution


def _apply(mode: str, program: Program, j: int, A, B, v: np.ndarray) -> None:
    """One lump of one sweep on the derivative registers ``v`` (the table in the module docstring)."""
    code = program.code
    written = code.out_slot[code.out_start[j]:code.out_start[j + 1]]
    read = code.read_slot[code.read_start[j]:code.read_start[j + 1]]
    if mode == "jvp":
        v[written] = A @ v[written] + B @ v[read]
    elif mode == "vjp":
        v[read] += B.T @ v[written]
        v[written] = A.T @ v[written]
    elif mode == "forward_inverse":
        u = _solve(program, j, A.T, v[written])
        v[written] = u
        v[read] -= B.T @ u
    else:
        v[written] = _solve(program, j, A, v[written] - B @ v[read])


def sweep(program: Program, x, seed, mode: str) -> Sweep:
    """One sweep (``"jvp"``, ``"vjp"``, ``"forward_inverse"``, ``"reverse_inverse"``) in Python, every state kept.

    ``seed`` is ``xdot``, ``ybar``, ``xbar`` or ``ydot`` as for the function of that name.
    """
    program = _program(program)
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"unknown mode {shown(mode)}: choose one of {', '.join(MODES)}")
    n, code = program.n, program.code
    x = _vector(x, n, "x")
    seed = _vector(seed, n, "the seed")
    with np.errstate(all="ignore"):
        tape = partials(program, x)
        v = np.zeros(n)
        if mode in ("jvp", "forward_inverse"):
            v[:] = seed
            order = range(len(program))
        else:
            v[code.output_slots] = seed
            order = range(len(program) - 1, -1, -1)
        states = [v.copy()]
        for j in order:
            _apply(mode, program, j, tape.A[j], tape.B[j], v)
            states.append(v.copy())
    result = v[code.output_slots] if mode in ("jvp", "forward_inverse") else v.copy()
    return Sweep(mode, tuple(order), np.array(states), tape, result)


def partials(program: Program, x) -> Tape:
    """The register values before each lump and the blocks ``A``, ``B`` of every lump at ``x`` (in Python)."""
    x = _vector(x, _program(program).n, "x")
    registers = x.copy()
    values, As, Bs = [registers.copy()], [], []
    code = program.code
    with np.errstate(all="ignore"):
        for j in range(len(program)):
            outputs, A, B = _lump_python(code, j, registers, want_blocks=True)
            registers[code.out_slot[code.out_start[j]:code.out_start[j + 1]]] = outputs
            values.append(registers.copy())
            As.append(A)
            Bs.append(B)
    return Tape(program, np.array(values), tuple(As), tuple(Bs))


def unlayer(inverse_layers, inputs, written) -> tuple[list[tuple[str, str, float]], list[str]]:
    """The reverse inverse flow graph of Fig. 3(d, e): the layered inverse graph with every copied
    vertex merged into the vertex it copies, so only the operations' edges are left.

    ``inverse_layers`` are the layers from the bottom (``x*``) up, e.g.
    ``Tape.inverse_layers()`` (Fig. 3(d)'s time shift drops the copy layer
    that would end them); ``inputs`` names the registers' values at the
    bottom and ``written[k]`` maps each register layer ``k`` writes to the
    name of its new value. Returns the edges ``(source, target, weight)``,
    the tangent of ``target`` taking ``weight`` times that of ``source``,
    layer by layer, and the value whose tangent each register holds at the
    top (where ``y*`` enters).
    """
    n = len(inputs)
    holder, edges = list(inputs), []
    for k, (inverse, names) in enumerate(zip(inverse_layers, written)):
        inverse = np.asarray(inverse, dtype=float)
        if inverse.shape != (n, n) or not set(names) <= set(range(n)):
            raise ValueError(f"unlayer: layer {k} is {inverse.shape} with registers {sorted(names)} written, "
                             f"for {n} inputs")
        below = holder
        holder = [names.get(r, name) for r, name in enumerate(below)]
        edges += [(holder[s], below[r], float(inverse[r, s]))
                  for r in sorted(names) for s in np.flatnonzero(inverse[r])]
    return edges, holder


def run(program: Program, x, engine: str = "auto") -> np.ndarray:
    """The program's result ``f(x)``, in register order."""
    x = _vector(x, _program(program).n, "x")
    code = program.code
    if _engine(program, engine) == "numba":
        return _kernels.run(_kernels.pack(code), x)[code.output_slots]
    registers = x.copy()
    with np.errstate(all="ignore"):
        for j in range(len(program)):
            outputs, _, _ = _lump_python(code, j, registers, want_blocks=False)
            registers[code.out_slot[code.out_start[j]:code.out_start[j + 1]]] = outputs
    return registers[code.output_slots]


def _compiled(program: Program, x: np.ndarray, seed: np.ndarray, mode: str) -> np.ndarray:
    code = program.code
    packed = _kernels.pack(code)
    v = np.zeros(program.n)
    offsets = code.tape_offsets()
    tape = None
    if mode in ("jvp", "forward_inverse"):
        v[:] = seed
        status = _kernels.forward(packed, x, v, mode == "forward_inverse")
    else:
        v[code.output_slots] = seed
        tape = np.empty(offsets[-1])
        _kernels.record(packed, x, tape, offsets)
        status = _kernels.backward(packed, tape, offsets, v, mode == "reverse_inverse")
    if status >= 0:
        if tape is None:   # the forward sweeps keep no tape: record one to show the singular block
            tape = np.empty(offsets[-1])
            _kernels.record(packed, x, tape, offsets)
        raise _singular(program, int(status), tape[offsets[status]:offsets[status + 1]])
    return v[code.output_slots] if mode in ("jvp", "forward_inverse") else v


def _derivative(program: Program, x, seed, mode: str, engine: str) -> np.ndarray:
    x = _vector(x, _program(program).n, "x")
    seed = _vector(seed, program.n, {"jvp": "xdot", "vjp": "ybar", "forward_inverse": "xbar",
                                     "reverse_inverse": "ydot"}[mode])
    if _engine(program, engine) == "numba":
        return _compiled(program, x, seed, mode)
    return sweep(program, x, seed, mode).result


def jvp(program: Program, x, xdot, engine: str = "auto") -> np.ndarray:
    """``J xdot`` by a forward sweep (eq. 2.3a)."""
    return _derivative(program, x, xdot, "jvp", engine)


def vjp(program: Program, x, ybar, engine: str = "auto") -> np.ndarray:
    """``J^T ybar`` by a reverse sweep over the tape of partials (eq. 2.3b)."""
    return _derivative(program, x, ybar, "vjp", engine)


def forward_inverse(program: Program, x, xbar, engine: str = "auto") -> np.ndarray:
    """``J^-T xbar`` by a forward sweep with no tape (eq. 2.4a)."""
    return _derivative(program, x, xbar, "forward_inverse", engine)


def reverse_inverse(program: Program, x, ydot, engine: str = "auto") -> np.ndarray:
    """``J^-1 ydot`` by a reverse sweep over the tape of partials (eq. 2.4b)."""
    return _derivative(program, x, ydot, "reverse_inverse", engine)


def logdet(program: Program, x, engine: str = "auto") -> float:
    """``log |det J| = sum_t log |a_t|`` (``log |det A_t|`` for lumps): no Jacobian needed."""
    x = _vector(x, _program(program).n, "x")
    if _engine(program, engine) == "numba":
        code = program.code
        offsets = code.tape_offsets()
        tape = np.empty(offsets[-1])
        _kernels.record(_kernels.pack(code), x, tape, offsets)
        return float(_kernels.logdet(_kernels.pack(code), tape, offsets))
    return partials(program, x).logdet


def jacobian(program: Program, x, engine: str = "auto") -> np.ndarray:
    """The dense Jacobian from ``n`` forward sweeps (for checks and small programs)."""
    eye = np.eye(_program(program).n)
    return np.column_stack([jvp(program, x, eye[i], engine) for i in range(program.n)])


# ----------------------------------------------------------------------------------------------
# Newton's method with the reverse-inverse sweep.


@dataclass(frozen=True)
class NewtonResult:
    """Newton's method on ``F(x) = 0``: ``iterates[k]`` and ``residuals[k] = |F(iterates[k])|`` for every
    iteration, ``logdets[k] = log |det J|`` there (it falls towards -inf near a singular point)."""

    x: np.ndarray
    converged: bool
    iterates: np.ndarray
    residuals: np.ndarray
    logdets: np.ndarray
    message: str

    @property
    def iterations(self) -> int:
        return len(self.iterates) - 1

    def __str__(self) -> str:
        return self.message


class NewtonError(ValueError):
    """Newton's method failed; ``result`` holds the iterates so far."""

    def __init__(self, result: NewtonResult):
        super().__init__(result.message)
        self.result = result


def newton(program: Program, x0, tol: float = 1e-10, max_iter: int = 50, engine: str = "auto",
           raise_on_failure: bool = True) -> NewtonResult:
    """Solve ``F(x) = 0`` for the program's function ``F``: ``x <- x - J^-1 F(x)``, one reverse-inverse sweep
    per iteration, until ``|F(x)| <= tol``.

    Fails (NewtonError, or a result with ``converged=False`` when
    ``raise_on_failure`` is false) at a point where a step's diagonal partial
    or a lump's block is singular, when a step explodes (the Jacobian nearly
    singular), or after ``max_iter`` iterations.
    """
    x = _vector(x0, _program(program).n, "x0").copy()
    tol, max_iter = _newton_settings(tol, max_iter)
    if not isinstance(raise_on_failure, (bool, np.bool_)):
        raise ValueError(f"raise_on_failure must be True or False, got {shown(raise_on_failure)}")
    iterates, residuals, logdets = [], [], []
    message = None
    for k in range(max_iter + 1):
        value = run(program, x, engine)
        iterates.append(x.copy())
        residuals.append(float(np.linalg.norm(value)))
        logdets.append(logdet(program, x, engine) if np.all(np.isfinite(x)) else np.nan)
        if not np.isfinite(residuals[-1]):
            message = f"Newton's method failed at iteration {k}: F(x) is not finite at x = {_show(x)}"
            break
        if residuals[-1] <= tol:
            message = f"converged in {k} iterations: |F(x)| = {residuals[-1]:.3g} at x = {_show(x)}"
            break
        if k == max_iter:
            message = (f"Newton's method did not converge in {max_iter} iterations: |F(x)| = {residuals[-1]:.3g} "
                       f"at x = {_show(x)}, log|det J| = {logdets[-1]:.3g}")
            break
        try:
            delta = reverse_inverse(program, x, value, engine)
        except ValueError as err:
            message = f"Newton's method failed at iteration {k}, x = {_show(x)}: {err}"
            break
        with np.errstate(over="ignore"):
            exploded = not np.all(np.isfinite(delta)) or np.linalg.norm(delta) > 1e12 * (1 + np.linalg.norm(x))
        if exploded:
            message = (f"Newton's method failed at iteration {k}, x = {_show(x)}: the step J^-1 F(x) explodes "
                       f"(log|det J| = {logdets[-1]:.3g}): the Jacobian is nearly singular here")
            break
        x = x - delta
    converged = message.startswith("converged")
    result = NewtonResult(x, converged, np.array(iterates), np.array(residuals), np.array(logdets), message)
    if not converged and raise_on_failure:
        raise NewtonError(result)
    return result


def _show(x: np.ndarray) -> str:
    if len(x) > 6:
        return f"[{', '.join(f'{v:.6g}' for v in x[:3])}, ..., {', '.join(f'{v:.6g}' for v in x[-2:])}]"
    return f"[{', '.join(f'{v:.6g}' for v in x)}]"


def finite_difference_newton(program, x0, h: float, tol: float = 1e-10,
                             max_iter: int = 50) -> NewtonResult:
    """The baseline for :func:`newton`: the Jacobian from forward differences of :func:`run` (step ``h``)
    and ``numpy.linalg.solve``: ``n + 1`` runs and an ``O(n^3)`` solve per iteration, and only linear
    convergence (an ``O(h)`` error in J) or a stall at round-off (tiny ``h``)."""
    x = _vector(x0, _program(program).n, "x0").copy()
    h = _real(h, "h (the difference step)", 0, math.inf)
    tol, max_iter = _newton_settings(tol, max_iter)
    iterates, residuals, logdets = [], [], []
    message = None
    for k in range(max_iter + 1):
        value = run(program, x)
        iterates.append(x.copy())
        residuals.append(float(np.linalg.norm(value)))
        with np.errstate(all="ignore"):
            J = np.column_stack([(run(program, x + h * e) - value) / h for e in np.eye(program.n)])
        logdets.append(float(np.linalg.slogdet(J)[1]) if np.all(np.isfinite(J)) else math.nan)
        if not math.isfinite(residuals[-1]):
            message = f"failed at iteration {k}: F(x) is not finite"
            break
        if residuals[-1] <= tol:
            message = f"converged in {k} iterations: |F(x)| = {residuals[-1]:.3g}"
            break
        if k == max_iter:
            message = f"did not converge in {max_iter} iterations: |F(x)| = {residuals[-1]:.3g}"
            break
        try:
            delta = np.linalg.solve(J, value)
        except np.linalg.LinAlgError:
            message = f"failed at iteration {k}: the finite-difference Jacobian is singular"
            break
        if not np.all(np.isfinite(delta)):
            message = f"failed at iteration {k}: the step is not finite"
            break
        x = x - delta
    return NewtonResult(x, message.startswith("converged"), np.array(iterates), np.array(residuals),
                           np.array(logdets), message)

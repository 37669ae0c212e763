"""A traced program (secs. 2-3): its steps, the cut of its data-flow graph into lumps where exactly ``n``
values are live (eqs. 2.6g, 2.6h; the order changes the lump sizes, Fig. 4), and the instruction arrays
that both engines sweep. :func:`trace` records one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from . import engine as _kernels
from ..integer.matrix import as_int, shown
from .engine import Instructions
from .instructions import ARITY
from .registers import Registers, _Graph
from .rules import CALLS, CONST, INFIX, INPUT, NEG, POWC

# "auto" compiles only programs long enough for the first call's JIT time to pay off; so does trace().
_AUTO_NODES = 5000
MAX_REGISTERS = 10**7  # the trace keeps a few arrays of n entries; the benchmarks go to 10**4


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
        self.code = Instructions(ops, arg0, arg1, consts, node_start, out_start, out_node, out_slot, read_start,
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
        if op in CALLS:
            return f"{CALLS[op]}({self._render(arg0, name, inputs)})"
        if op == NEG:
            return f"-{_paren(self._render(arg0, name, inputs))}"
        if op == POWC:
            return f"{_paren(self._render(arg0, name, inputs))} ** {self._consts[node]:g}"
        left = self._render(arg0, name, inputs)
        return f"{_paren(left)} {INFIX[op]} {_paren(self._render(arg1, name, inputs))}"

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

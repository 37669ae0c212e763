"""Tracing a register machine (Pearlmutter & Siskind, sec. 2): register values are :class:`Var` nodes of a
data-flow graph, each assignment to a register a step (eqs. 2.5); the elementary functions
(:func:`exp`, :func:`log`, ...) record their node.
"""

from __future__ import annotations

import numbers
from array import array

import numpy as np

from .rules import ADD, CONST, COS, DIV, EXP, INFIX, INPUT, LOG, MUL, NEG, POW, POWC, SIN, SQRT, SUB, TANH


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
        mine, theirs = self.id, self.graph.operand(other, f"'{INFIX[op]}'")
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

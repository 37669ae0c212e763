"""A program of several element-wise definitions: the composition of tensor functions the report's sec. 1 and
sec. 3 motivate (a loss of a network), one definition ``name[indices] = body`` (eq. 38) per line.

Each definition reads the inputs and the definitions above it; the last one is the program's value. Its
gradients are reverse accumulation (sec. 2, eqs. 1-3) at the tensor level, :mod:`tensoradbook.ad.program`:
each definition's adjoint is the sum of what its consumers' Algorithm 4 gives for it.

Like :class:`~tensoradbook.lang.function.Function` it evaluates (the reference evaluator, each definition
once, in order), prints (one line per definition) and compiles (``program.compile(target)``, the upward
import to :mod:`tensoradbook.codegen` that tests/test_layout.py allows as a facade), so code written for a
Function takes a Program: ``.name .indices .arguments .shapes .evaluate .compile .argument_arrays``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from . import printer
from .expr import Element, Expr, ExpressionError, rebuild, substitute, with_children
from .function import Function
from .names import _unique_sums, all_names

# ``name[indices] =`` at the start of a line: where a definition starts
HEAD = re.compile(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*\[[^\[\]]*\]\s*=")


def definition_lines(text: str) -> tuple[str, list[tuple[int, str]]]:
    """The text of a program split into its definitions: ``text`` with its comment lines emptied, and each
    definition as (its first line's number, its lines), for :func:`tensoradbook.parse`.

    A definition starts on a line that begins ``name[indices] =``; one inside brackets (an ``if {..``
    continued on the next line) does not. Lines before the first head belong to the first definition, as a
    single definition may start with its name alone on a line.
    """
    lines = ["" if line.lstrip().startswith("#") else line for line in text.split("\n")]
    starts, depth = [], 0
    for number, line in enumerate(lines):
        if depth <= 0 and HEAD.match(line):
            starts.append(number)
        depth += sum(map(line.count, "([{")) - sum(map(line.count, ")]}"))
    content = [number for number, line in enumerate(lines) if line.strip()]
    if content and (not starts or content[0] < starts[0]):
        starts = [content[0], *starts[1:]]
    ends = [*starts[1:], len(lines)]
    return "\n".join(lines), [(start + 1, "\n".join(lines[start:end]).rstrip())
                              for start, end in zip(starts, ends)]


@dataclass(frozen=True)
class Program:
    """Definitions in order, each reading the inputs and the definitions above it; the last is the value.

    Build one with :func:`tensoradbook.parse` from text of several lines
    (which checks everything and points at the line of a mistake), or from
    Functions whose order is checked here. ``shapes`` holds the inputs' and
    every definition's shape.
    """

    definitions: tuple[Function, ...]
    shapes: dict = field(hash=False)
    source: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if not self.definitions or not all(isinstance(d, Function) for d in self.definitions):
            raise ExpressionError("a program is a non-empty tuple of Functions")
        defined: dict[str, int] = {}
        lines = {d.name: k for k, d in reversed(list(enumerate(self.definitions, 1)))}
        for k, definition in enumerate(self.definitions, 1):
            if definition.name in defined:
                raise ExpressionError(f"definition {k}: {definition.name!r} is defined twice "
                                      f"(first by definition {defined[definition.name]})")
            for name in definition.arguments:
                if lines.get(name, 0) >= k:
                    raise ExpressionError(f"definition {k} ({definition.name}) reads {name!r}, defined by definition "
                                          f"{lines[name]}: a definition reads the inputs and the definitions above it")
            defined[definition.name] = k

    @property
    def output(self) -> Function:
        """The last definition: its value is the program's."""
        return self.definitions[-1]

    @property
    def name(self) -> str:
        return self.output.name

    @property
    def indices(self) -> tuple[str, ...]:
        return self.output.indices

    def consumers(self, name: str) -> tuple[str, ...]:
        """The definitions that read ``name``, in order: its consumers, ``csmr`` of eq. 2."""
        return tuple(d.name for d in self.definitions if name in d.arguments)

    @property
    def intermediates(self) -> tuple[str, ...]:
        """The names of the definitions before the last, in order."""
        return tuple(d.name for d in self.definitions[:-1])

    @cached_property
    def arguments(self) -> tuple[str, ...]:
        """The inputs: names read by some definition and defined by none, in order of first appearance."""
        defined = {d.name for d in self.definitions}
        seen: dict[str, None] = {}
        for definition in self.definitions:
            for name in definition.arguments:
                if name not in defined:
                    seen.setdefault(name, None)
        return tuple(seen)

    # The same checks as a Function's: the inputs, and an adjoint shaped like the last definition.
    argument_arrays = Function.argument_arrays

    def values(self, args) -> dict[str, np.ndarray]:
        """Every definition's value by the reference evaluator, each computed once, in order."""
        known = self.argument_arrays(args)
        out = {}
        for definition in self.definitions:
            out[definition.name] = known[definition.name] = definition.evaluate(known)
        return out

    def evaluate(self, args) -> np.ndarray:
        """The last definition's value (:meth:`values`) as a float64 array of its shape."""
        return self.values(args)[self.name]

    @cached_property
    def work(self) -> int:
        """An upper bound on the element-terms :meth:`evaluate` visits: the definitions' together."""
        return sum(d.work for d in self.definitions)

    def compile(self, target: str = "numba"):
        """``fwd(args) -> ndarray``: one generated kernel per definition, run in order (:mod:`tensoradbook.codegen`),
        equal to :meth:`evaluate`."""
        from ..codegen import compile_function

        return compile_function(self, target)

    def kernel_source(self, target: str = "numba") -> str:
        """The generated module behind :meth:`compile`."""
        from ..codegen import function_source

        return function_source(self, target)

    def __str__(self) -> str:
        """One line per definition in the report's notation; :func:`tensoradbook.parse` reads it back."""
        return printer.to_text(self)

    def _repr_latex_(self) -> str:
        return printer.to_latex(self)

    def inlined(self) -> Function:
        """The program as one expression: every read ``m[A alpha + a]`` of a definition replaced by its body
        (its output indices by the read's, its sums renamed apart), so each intermediate is recomputed
        wherever it is read, as the report's single-expression form must (sec. 1). The result may be
        deeper than the parser's limits allow for text; :func:`tensoradbook.derive` still takes it."""
        used = set().union(*(all_names(definition) for definition in self.definitions))
        bodies: dict[str, tuple[tuple[str, ...], Expr]] = {}

        def expand(node: Expr, children: list) -> Expr:
            if isinstance(node, Element) and node.name in bodies:
                indices, body = bodies[node.name]
                # fresh sum indices for each copy: the read's indices may name the reader's sums
                return substitute(_unique_sums(body, used), dict(zip(indices, node.indices)))
            return with_children(node, children)

        for definition in self.definitions:
            bodies[definition.name] = (definition.indices, rebuild(definition.body, expand))
        return Function(self.name, self.indices, bodies[self.name][1], self.shapes)


def definitions_of(subject: Function | Program) -> tuple[Function, ...]:
    """A program's definitions, or the function alone: what a forward pass computes, in order."""
    return subject.definitions if isinstance(subject, Program) else (subject,)

"""Gradients of a program of several definitions: reverse accumulation (report sec. 2, eqs. 1-3) at the tensor level.

Sec. 2 accumulates the adjoint of every node of a scalar graph as the sum over its consumers,
``dx = sum over consumers c of dc * dc/dx`` (eq. 2; eq. 3 for the inputs). Here the nodes are tensors: the
inputs and the definitions of a :class:`~tensoradbook.lang.program.Program`. Walking the definitions backwards from the
last, whose adjoint ``df`` is given, each definition ``D`` with adjoint ``dD`` contributes, by Algorithm 4
(:mod:`tensoradbook.ad.derive`, sec. 5), the gradient of ``sum(dD * D)`` with respect to each tensor it
reads. An intermediate's adjoint is the sum of its consumers' contributions, complete once every
consumer (each defined further down) has been visited; an input's gradient likewise. Each sum is one
element-wise function again, so each adjoint is one gather kernel with no atomics (sec. 6), and every
intermediate is a tensor computed once in the forward pass and read by the backward one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from ..lang.expr import Affine, ExpressionError, substitute
from ..lang.function import Function
from ..lang.names import all_names, fresh_name
from ..lang.program import Program
from ..lang.simplify import ZERO, add
from .gradient_map import GradientMap

if TYPE_CHECKING:
    from .derive import Gradients


@dataclass(frozen=True)
class Step:
    """One definition of the backward sweep: its gradients by Algorithm 4 (with respect to the tensors it reads
    that lead to a wanted input) and the name of its adjoint tensor, which those gradients read."""

    definition: Function
    gradients: Gradients
    adjoint: str


@dataclass(frozen=True)
class ProgramGradients(GradientMap):
    """The gradients of ``sum(df * last)`` with respect to a program's inputs: ``grads["x"]`` is ``dx``.

    ``grads["x"]`` is one element-wise :class:`~tensoradbook.lang.function.Function`,
    the sum over the definitions that read ``x`` of their gradient with respect
    to it (eq. 3); it reads those definitions' adjoints. :attr:`adjoints` holds the
    intermediates' adjoints, built the same way, and :attr:`steps` the sweep
    itself, one :class:`Step` per definition in backward order (definitions that
    lead to no wanted input, or that the last does not read, are skipped). The
    adjoint of the last definition is ``df`` (:attr:`adjoint_name`, ``"d"`` + its
    name unless taken); every tensor the sweep makes has a name of its own.

    As :func:`tensoradbook.derive` returns them they are the report's form
    (sec. 6): each contribution recomputes its definition's expression from
    the tensors that definition reads. :attr:`simplified` is what the
    kernels run: each reads its definition's kept forward value.
    """

    program: Program
    steps: tuple[Step, ...]
    adjoints: dict  # intermediate name -> the Function of its adjoint
    functions: dict  # input name -> the Function of its gradient
    adjoint_name: str
    reads_forward: bool = False

    @property
    def function(self) -> Program:
        """The program, under the name :class:`~tensoradbook.ad.derive.Gradients` gives what it derives."""
        return self.program

    @property
    def backward(self) -> tuple[Function, ...]:
        """Every tensor of the backward sweep in the order it is computed: per step the definition's adjoint
        (none for the last: ``df`` is given) and the outer sums' adjoints its simplified gradients read
        (:attr:`Gradients.intermediates`), then the inputs' gradients."""
        tensors = []
        for step in self.steps:
            if step.definition.name in self.adjoints:
                tensors.append(self.adjoints[step.definition.name])
            tensors += step.gradients.intermediates.values()
        return (*tensors, *self.functions.values())

    def evaluate(self, args, df) -> dict[str, np.ndarray]:
        """``{"x": dX, ...}`` at ``args`` by the reference evaluator: the forward values once, then the sweep."""
        values = self.program.argument_arrays(args, (self.adjoint_name, df))
        values.update(self.program.values(values))
        for tensor in self.backward:
            values[tensor.name] = tensor.evaluate(values)
        return {name: values[gradient.name] for name, gradient in self.functions.items()}

    @cached_property
    def simplified(self) -> ProgramGradients:
        """The same gradients as the kernels compute them: each definition's from its simplified
        :class:`~tensoradbook.ad.derive.Gradients` (reading its forward value, loop invariants hoisted).
        For evaluation only: the forward values are data here."""
        if self.reads_forward:
            return self
        steps = tuple(Step(step.definition, step.gradients.simplified, step.adjoint) for step in self.steps)
        return _assembled(self.program, steps, tuple(self.functions), reads_forward=True)

    def compile(self, target: str = "numba"):
        """``grad(args, df) -> {"x": dX, ...}`` running generated kernels (:mod:`tensoradbook.codegen`): one
        per definition forward, then the sweep, every intermediate kept on the target in between.
        ``grad.forward(args)`` is the last definition's value; targets as for
        :meth:`~tensoradbook.ad.derive.Gradients.compile`."""
        from ..codegen import compile_gradients

        return compile_gradients(self.simplified, target)

    def source(self, target: str = "numba") -> str:
        """The generated module behind :meth:`compile`."""
        from ..codegen import gradients_source

        return gradients_source(self.simplified, target)



def program_gradients(program: Program, wrt, derive_function: Callable[[Function], Gradients]) -> ProgramGradients:
    """Reverse accumulation over ``program``'s definitions (sec. 2 at the tensor level), with respect to the
    inputs named in ``wrt`` (all by default), each definition's gradients by ``derive_function`` (Algorithm 4,
    :func:`tensoradbook.ad.derive.derive_function`, which derives a program through this function)."""
    wanted = _wanted(program, wrt)
    return _assembled(program, _steps(program, wanted, derive_function), wanted, reads_forward=False)


def _wanted(program: Program, wrt) -> tuple[str, ...]:
    """The inputs named in ``wrt``, in the program's order; all of them for None."""
    inputs = program.arguments
    if wrt is None:
        return inputs
    wrt = (wrt,) if isinstance(wrt, str) else tuple(wrt)
    for name in wrt:
        if name not in inputs:
            raise ExpressionError(f"derive: {name!r} is not an input of the program (its inputs: "
                                  f"{', '.join(inputs) or 'none'})")
    return tuple(name for name in inputs if name in wrt)


def _steps(program: Program, wanted: tuple, derive_function) -> tuple[Step, ...]:
    """The sweep: the definitions that read a wanted input and that the last one reads, backwards, each with its
    gradients with respect to the tensors it reads that lead to a wanted input."""
    reaches = set(wanted)  # the tensors that read a wanted input through a path
    for definition in program.definitions:
        if reaches.intersection(definition.arguments):
            reaches.add(definition.name)
    defined = {d.name for d in program.definitions}
    live = {program.name}  # the definitions the last one reads through a path
    for definition in reversed(program.definitions):
        if definition.name in live:
            live.update(name for name in definition.arguments if name in defined)
    made: dict[str, tuple] = {}  # the sweep's tensors so far -> their shapes
    steps = []
    for definition in reversed(program.definitions):
        if definition.name not in live or definition.name not in reaches:
            continue
        # every name the program and the sweep use so far in its shapes: derive's fresh names avoid them
        grads = derive_function(Function(definition.name, definition.indices, definition.body,
                                         {**program.shapes, **definition.shapes, **made}, definition.source))
        keep = [name for name in grads if name in reaches]
        grads = replace(grads, functions={name: grads[name] for name in keep},
                        contributions={name: grads.contributions[name] for name in keep})
        made.update(dict.fromkeys(grads.tensor_names, tuple(program.shapes[definition.name])))
        steps.append(Step(definition, grads, grads.adjoint_name))
    return tuple(steps)


def _assembled(program: Program, steps: tuple[Step, ...], wanted: tuple, reads_forward: bool) -> ProgramGradients:
    """The adjoints and the inputs' gradients as the sums over their consumers' gradients (eqs. 2, 3)."""
    made: dict[str, tuple] = {}
    parts: dict[str, list[Function]] = {}  # tensor -> its consumers' gradients with respect to it
    adjoints = {}
    for step in steps:
        grads, shape = step.gradients, tuple(program.shapes[step.definition.name])
        if step.definition is not program.output:  # its consumers, all further down, are done: eq. 2's sum
            adjoints[step.definition.name] = _total(grads.adjoint_name, parts.pop(step.definition.name), shape,
                                                    grads.function.shapes)
        for name in grads:
            parts.setdefault(name, []).append(grads[name])
        made.update(dict.fromkeys(grads.tensor_names, shape))
    adjoint_name = steps[0].adjoint if steps else \
        fresh_name("d" + program.name, all_names(program.output) | set(program.shapes))  # as derive names it
    shapes = {**program.shapes, **made}
    used = set(shapes)
    functions = {name: _total(fresh_name("d" + name, used), parts.get(name, []), tuple(program.shapes[name]), shapes)
                 for name in wanted}  # no part: an input that no wanted path reads has gradient 0
    return ProgramGradients(program, steps, adjoints, functions, adjoint_name, reads_forward)


def _total(name: str, parts: list[Function], shape: tuple, shapes: dict) -> Function:
    """``name[beta] = `` the sum of ``parts``, gradient functions of one tensor over index names of their own
    (renamed to common ones that none of them uses otherwise, so that no sum captures one)."""
    used = {name}.union(*(all_names(part) - set(part.indices) for part in parts), shapes)
    beta = tuple(fresh_name(f"{name}_{k}", used) for k in range(len(shape)))
    body = ZERO
    shapes = dict(shapes)
    for part in parts:
        renamed = {old: Affine.index(new) for old, new in zip(part.indices, beta) if old != new}
        body = add(body, substitute(part.body, renamed))
        shapes.update(part.shapes)
    shapes[name] = shape
    return Function(name, beta, body, shapes)

"""Derivatives of element-wise defined functions: Algorithm 4 of the report (sec. 5).

For ``f[alpha] = body`` and the adjoint ``df`` (shaped like ``f``), the
gradient of ``sum(df * f)`` with respect to an argument ``x`` is, per element
``beta`` of ``x`` (eqs. 38-47),

    dx[beta] = sum over occurrences x[A alpha + a] of
               [C (beta - a) = 0] [I (beta - a) integral] [F b <= 0]
               sum_{z in Sigma(beta)} Delta(alpha = I (beta - a) + K z)

where ``Delta`` is the occurrence's adjoint from reverse accumulation (sec. 2,
:mod:`tensoradbook.ad.reverse`), ``I``, ``K``, ``C`` come from the Smith normal form
(sec. 4.1) and ``Sigma(beta)`` is the box of ``f`` and the liberated sums'
ranges (sec. 5.2) solved by Fourier-Motzkin (sec. 4.2) into nested sums with
``max``/``min`` bounds (:mod:`tensoradbook.ad.contribution`). Each gradient element is an independent
expression: one thread per element, no atomics.

The result of :func:`derive` is again a set of element-wise functions, so it
can be derived again (sec. 5.3). :attr:`Gradients.simplified`, the form the kernels run, is a pass over it
(:mod:`tensoradbook.ad.kernel_form`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from ..lang.expr import Affine, Element, ExpressionError
from ..lang.function import Function
from ..lang.names import all_names, apart, fresh_name
from ..lang.parser import parse
from ..lang.program import Program
from .contribution import Contribution, extended_domain, gradient_function, lattice, never_reached, solved, sum_depth
from .gradient_map import GradientMap
from .kernel_form import KeptSum, kept_sums, kernel_form
from .program import program_gradients
from .reverse import ReverseSweep, reverse_accumulate

# what code written against this module imports from it: the chapters read extended_domain here
__all__ = ["Contribution", "GradientMap", "Gradients", "derive", "derive_function", "extended_domain"]


@dataclass(frozen=True)
class Gradients(GradientMap):
    """The gradients of ``sum(df * f)``: one element-wise function per argument (``grads["a"]`` is ``da``).

    The adjoint is ``df`` and the gradient of ``a`` is ``da`` unless the
    function uses that name already; then it is the first of ``da_1``,
    ``da_2``, ... that it does not (the gradient of ``a`` in the second
    derivative ``derive(da)`` is such a name: ``da`` is the function).

    As :func:`derive` returns them they are the report's output (sec. 6):
    every summand recomputes the forward expression. :meth:`simplified` gives
    the form the kernels run, which reads the forward result ``f`` instead.
    """

    function: Function
    functions: dict
    contributions: dict
    adjoint_name: str  # of df, the incoming adjoint: "d" + the function's name unless that is taken
    reads_forward: bool = False  # True for the kernels' form (simplified), which reads f
    intermediates: dict = field(default_factory=dict)  # output-shaped adjoints the simplified form reads
    sweep: ReverseSweep | None = None  # the reverse sweep the contributions come from (sec. 2)
    kept_sums: tuple[KeptSum, ...] = ()  # the outer sums whose adjoints the simplified form keeps as tensors

    @property
    def tensor_names(self) -> tuple[str, ...]:
        """The output-shaped tensors the backward pass makes: the adjoint ``df`` and the kept sums' adjoints
        (named in either form, so that a program's sweep gives its other tensors other names)."""
        return (self.adjoint_name, *(kept.name for kept in self.kept_sums))

    def evaluate(self, args: dict, df) -> dict[str, np.ndarray]:
        """``{"a": dA, ...}``: the gradients of ``sum(df * f)`` at ``args``, by the reference evaluator."""
        values = self.function.argument_arrays(args, (self.adjoint_name, df))
        if self.reads_forward:
            values[self.function.name] = self.function.evaluate(args)
        for name, intermediate in self.intermediates.items():
            values[name] = intermediate.evaluate(values)
        return {name: fn.evaluate(values) for name, fn in self.functions.items()}

    @cached_property
    def simplified(self) -> Gradients:
        """The same gradients as the kernels compute them: reading ``f`` and with loop invariants hoisted.

        Where the forward expression (the whole body of ``f``) appears in an
        adjoint, as ``exp(...)`` does in its own derivative, the simplified
        gradients read ``f[...]`` instead: computed once, not once per summand
        (the cheap gradient principle). So do the adjoints of the outermost
        sums, kept in :attr:`intermediates` (``df_k[i; j] = -(df[i; j] * f[i; j])``
        for sec. 6). Factors and conditions that do not
        depend on a sum's index move out of it
        (:func:`tensoradbook.lang.simplify.hoist_invariants`), and nested sums are
        ordered so the innermost walks memory with the smallest strides. For evaluation only:
        derive :attr:`functions`, not these, again, since here ``f`` is data.
        A pass over these gradients' sweep and contributions (:func:`tensoradbook.ad.kernel_form.kernel_form`).
        """
        if self.reads_forward:
            return self
        functions, contributions, intermediates = kernel_form(self.function, self.adjoint_name, self.sweep,
                                                              self.kept_sums, self.functions, self.contributions)
        return Gradients(self.function, functions, contributions, self.adjoint_name, True, intermediates,
                         self.sweep, self.kept_sums)

    def compile(self, target: str = "numba"):
        """``grad(args, df) -> {"a": dA, ...}`` running generated kernels (:mod:`tensoradbook.codegen`).

        Targets: ``"numpy"``, ``"numba"`` (CPU threads, one gradient element
        each), ``"cuda"`` (one GPU thread per gradient element), and the
        scatter baselines of eq. 40, ``"numba-scatter"`` and ``"cuda-scatter"``.
        ``grad`` computes ``f`` once itself; ``grad.forward`` is the forward kernel.
        """
        from ..codegen import compile_gradients

        return compile_gradients(self.simplified, target)

    def source(self, target: str = "numba") -> str:
        """The generated module behind :meth:`compile` (the forward kernel, one kernel per gradient)."""
        from ..codegen import gradients_source

        return gradients_source(self.simplified, target)

    @property
    def backward(self) -> tuple[Function, ...]:
        """Every tensor the backward pass computes, in order: the intermediates, then the gradients."""
        return (*self.intermediates.values(), *self.functions.values())


def derive(fn, shapes=None, *, wrt=None):
    """Algorithm 4: the gradient functions of an element-wise function (or of its text and shapes).

    For a :class:`~tensoradbook.lang.program.Program` (or text of several
    definitions), reverse accumulation across its definitions (sec. 2, eqs. 1-3),
    each one's contributions by Algorithm 4:
    :class:`~tensoradbook.ad.program.ProgramGradients`, with respect to the
    inputs named in ``wrt`` (all by default).
    """
    if isinstance(fn, str):
        fn = parse(fn, shapes or {})
    elif shapes is not None:
        raise ExpressionError("derive: give shapes only with the function's text")
    if isinstance(fn, Program):
        return program_gradients(fn, wrt, derive_function)
    if wrt is not None:
        raise ExpressionError("derive: wrt names inputs of a program; a function's gradients are all its arguments'")
    return derive_function(fn)


def derive_function(fn: Function) -> Gradients:
    """Algorithm 4 on one function: its gradients in the report's form."""
    fn = apart(fn)
    # The adjoint df and the gradients dx get names of their own, fresh against every name of fn
    # (df_1 where df is an argument, dx_1 where dx is, or where fn itself is called dx: a second
    # derivative): a derivative that read a tensor of its own name would be wrong.
    used = all_names(fn)
    adjoint = fresh_name("d" + fn.name, used)
    gradients = {name: fresh_name("d" + name, used) for name in fn.arguments}
    seed = Element(adjoint, tuple(Affine.index(i) for i in fn.indices))
    sweep = reverse_accumulate(fn.body, seed)
    kept = kept_sums(sweep, seed, used)
    shapes = dict(fn.shapes)
    shapes[adjoint] = tuple(fn.shapes[fn.name])
    functions, contributions = {}, {}
    for name in fn.arguments:
        gradient = gradients[name]
        names = set(used)
        beta = [fresh_name(f"{gradient}_{k}", names) for k in range(len(fn.shapes[name]))]
        z_names = [fresh_name(f"{gradient}_z{k}", names) for k in range(len(fn.indices) + sum_depth(fn.body))]
        parts = []
        for occurrence in sweep.occurrences:
            if occurrence.element.name == name and not never_reached(fn, occurrence.scope):
                geometry = lattice(fn, occurrence, beta, z_names)
                parts.append(solved(fn, geometry, occurrence, shapes, geometry.inverse.kernel.tolist()))
        gradient_shapes = dict(shapes)
        gradient_shapes[gradient] = tuple(fn.shapes[name])
        functions[name] = gradient_function(fn, gradient, beta, parts, gradient_shapes, hoisted=False)
        contributions[name] = tuple(parts)
    return Gradients(fn, functions, contributions, adjoint, False, {}, sweep, kept)

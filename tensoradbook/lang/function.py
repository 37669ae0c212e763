"""An element-wise defined function ``f[i; j] = body`` (report sec. 5, eq. 38): its output indices, body
and the shapes of its output and arguments.

The facade a reader meets first: ``fn.evaluate(args)`` (the reference evaluator,
:mod:`tensoradbook.lang.evaluate`), ``str(fn)`` and the LaTeX Jupyter shows (:mod:`tensoradbook.lang.printer`),
and ``fn.compile(target)`` (the kernels of :mod:`tensoradbook.codegen`, a layer above: the one import
here that goes upward, documented as a facade and allowed by tests/test_layout.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from numbers import Complex, Real

import numpy as np

from . import evaluate as reference, printer
from .expr import Affine, Element, Expr, ExpressionError, Sum, postorder, rebuild, with_children


@dataclass(frozen=True)
class Function:
    """``name[indices] = body`` with the shapes of the output and the arguments (report eq. 38).

    Build one with :func:`tensoradbook.parse` (which checks it) or directly from nodes.
    """

    name: str
    indices: tuple[str, ...]
    body: Expr
    shapes: dict = field(hash=False)
    source: str | None = field(default=None, compare=False, repr=False)

    @property
    def arguments(self) -> tuple[str, ...]:
        """The argument names in order of first appearance."""
        seen: dict[str, None] = {}
        for node in postorder(self.body):  # leaves left to right, as a walk from the root meets them
            if isinstance(node, Element):
                seen.setdefault(node.name, None)
        return tuple(seen)

    def __str__(self) -> str:
        """The report's notation (sec. 6); :func:`tensoradbook.parse` reads it back."""
        return printer.to_text(self)

    def _repr_latex_(self) -> str:
        return printer.to_latex(self)

    def argument_arrays(self, args, adjoint: tuple[str, object] | None = None) -> dict[str, np.ndarray]:
        """``args`` (a dict from argument names to arrays) as float64 arrays, each checked to be
        there, to hold real numbers and to have its declared shape.

        ``adjoint`` is ``(name, value)`` of the gradients' incoming adjoint
        (``df``), checked the same way against the output's shape and
        returned with the arguments. Complex values are refused: float64
        would silently drop their imaginary parts.
        """
        if not isinstance(args, Mapping):
            raise ExpressionError(f"{self.name}: expected a dict from argument names to arrays "
                                  f"({', '.join(self.arguments) or 'no arguments'}), got {type(args).__name__}")
        wanted = [(name, f"argument {name!r}", args, tuple(self.shapes[name])) for name in self.arguments]
        if adjoint is not None:
            wanted.append((adjoint[0], f"the adjoint {adjoint[0]!r}", {adjoint[0]: adjoint[1]},
                           tuple(self.shapes[self.name])))
        arrays = {}
        for name, what, values, shape in wanted:
            if name not in values:
                raise ExpressionError(f"{self.name}: no value given for {what}")
            try:
                array = np.asarray(values[name])
            except ValueError:  # numpy: "inhomogeneous shape"
                raise ExpressionError(f"{self.name}: {what} is not a rectangular array (rows of different "
                                      f"lengths?); expected shape {shape}") from None
            items = array.ravel().tolist() if array.dtype.kind == "O" else []
            if array.dtype.kind == "c" or any(isinstance(v, Complex) and not isinstance(v, Real) for v in items):
                raise ExpressionError(f"{self.name}: {what} is complex; the functions compute with real numbers "
                                      "(float64 would drop the imaginary part)")
            if array.dtype.kind not in "biufO" or not all(isinstance(v, Real) for v in items):
                raise ExpressionError(f"{self.name}: {what} is not an array of real numbers (dtype {array.dtype})")
            try:
                array = array.astype(np.float64, copy=False)
            except OverflowError:
                raise ExpressionError(f"{self.name}: {what} holds a number too large for float64") from None
            if array.shape != shape:
                raise ExpressionError(f"{self.name}: {what} has shape {array.shape}, expected {shape}")
            arrays[name] = array
        return arrays

    @cached_property
    def work(self) -> int:
        """An upper bound on the element-terms :meth:`evaluate` visits (:func:`tensoradbook.lang.evaluate.work`)."""
        return reference.work(self)

    def evaluate(self, args: dict) -> np.ndarray:
        """The reference value of the whole output as a float64 array of the output's shape
        (:func:`tensoradbook.lang.evaluate.evaluate`; refused above :data:`~tensoradbook.lang.evaluate.MAX_WORK`)."""
        return reference.evaluate(self, args)

    def compile(self, target: str = "numba"):
        """``fwd(args) -> ndarray``: generated kernels for ``"numpy"``, ``"numba"`` or ``"cuda"``
        (:mod:`tensoradbook.codegen`), equal to :meth:`evaluate`."""
        from ..codegen import compile_function

        return compile_function(self, target)

    def kernel_source(self, target: str = "numba") -> str:
        """The generated module behind :meth:`compile`."""
        from ..codegen import function_source

        return function_source(self, target)

    def scaled(self, factor: int) -> Function:
        """This function at ``factor`` times the size: every tensor's sizes times ``factor``, and every sum
        whose bounds are integer constants ``l .. u`` over ``factor * l .. factor * (u + 1) - 1``; bounds that
        name an index follow the scaled indices by themselves. Whether the result reads inside its
        arguments is :func:`~tensoradbook.lang.parser.parse`'s to say (of its text)."""
        def widen(node: Expr, children: list) -> Expr:
            node = with_children(node, children)
            if isinstance(node, Sum) and all(len(b) == 1 and b[0].is_constant and b[0].is_integral
                                             for b in (node.lower, node.upper)):
                low, high = int(node.lower[0].constant), int(node.upper[0].constant)
                return node.renewed(lower=(Affine.constant_value(factor * low),),
                                    upper=(Affine.constant_value(factor * (high + 1) - 1),))
            return node

        shapes = {name: tuple(factor * n for n in shape) for name, shape in self.shapes.items()}
        return Function(self.name, self.indices, rebuild(self.body, widen), shapes)

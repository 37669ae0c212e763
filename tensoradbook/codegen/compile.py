"""Compiled kernels (report sec. 6): generated modules loaded and wrapped as plain callables.

``fn.compile(target)`` is :class:`CompiledFunction`, ``grads.compile(target)`` is
:class:`CompiledGradients`: they check the arguments (:meth:`Function.argument_arrays`), move them to
the target's memory and back, and call the module's ``forward`` / ``gradients``. Both take a program of
several definitions (:class:`~tensoradbook.lang.program.Program`, :class:`~tensoradbook.ad.program.ProgramGradients`)
as well. :func:`compile_ptx` compiles the CUDA kernels to PTX without a GPU: a type check the simulator
does not do.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..ad.derive import Gradients
from ..ad.program import ProgramGradients
from ..lang.expr import ExpressionError
from ..lang.function import Function
from ..lang.program import Program
from .cache import load_module
from ..lang.program import definitions_of
from .module import Sweep, function_source, gradients_source, module_functions, scatter_reads
from .printer import py_name
from .targets import GATHER_TARGETS, TARGETS, storage_shape, target_named


def _arrays(fn: Function | Program, args, vector: bool, adjoint: tuple[str, object] | None = None) -> list[np.ndarray]:
    """The arguments of ``fn`` in its order, then the adjoint ``(name, value)`` if given, as C-contiguous
    float64 arrays, checked by :meth:`Function.argument_arrays` (real numbers, declared shapes)."""
    arrays = fn.argument_arrays(args, adjoint)
    return [np.ascontiguousarray(a).reshape(storage_shape(a.shape, vector)) for a in arrays.values()]


class CompiledFunction:
    """``fwd(args) -> f`` for one target (for a program, the last definition's value); ``.source`` and
    ``.path`` show the generated module."""

    def __init__(self, fn: Function | Program, target: str):
        self.kind = target_named(target, GATHER_TARGETS)
        self.kind.check_available()
        self.function, self.target = fn, target
        self.source = function_source(fn, target)
        self.module = load_module(self.source)
        self.path = self.module.__file__

    def __call__(self, args: dict) -> np.ndarray:
        arrays = self.kind.to_device(_arrays(self.function, args, self.kind.vector))
        shape = tuple(self.function.shapes[self.function.name])
        return self.kind.to_host(self.module.forward(*arrays)).reshape(shape)


class CompiledGradients:
    """``grad(args, df) -> {"a": dA, ...}`` for one target; ``grad.forward(args)`` is ``f`` alone.

    ``grad.values(args)`` is every definition's value (``{"f": f}`` for a function), the forward pass the
    gradients read; ``grad(args, df, values)`` reads those instead of running the forward pass again.
    """

    def __init__(self, grads: Gradients | ProgramGradients, target: str):
        self.kind = target_named(target, TARGETS)
        self.kind.check_available()
        self.gradients, self.target = grads, target
        self.source = gradients_source(grads, target)
        self.module = load_module(self.source)
        self.path = self.module.__file__

    def _inputs(self, args, adjoint: tuple[str, object] | None = None) -> list:
        return self.kind.to_device(_arrays(self.gradients.function, args, self.kind.vector, adjoint))

    def forward(self, args: dict) -> np.ndarray:
        fn = self.gradients.function
        return self.kind.to_host(self.module.forward(*self._inputs(args))).reshape(fn.shapes[fn.name])

    def values(self, args: dict) -> dict[str, np.ndarray]:
        """Every definition's value, each computed once by its kernel."""
        definitions = definitions_of(self.gradients.function)
        values = self.module._values(*self._inputs(args))
        return {fn.name: self.kind.to_host(value).reshape(fn.shapes[fn.name]) for fn, value in zip(definitions, values)}

    def __call__(self, args: dict, df, values: dict | None = None) -> dict[str, np.ndarray]:
        fn = self.gradients.function
        inputs = self._inputs(args, (self.gradients.adjoint_name, df))
        if values is None:
            out = self.module.gradients(*inputs)
        else:
            out = self.module._backward(*inputs[:-1], *self._kept(values), inputs[-1])
        return {name: self.kind.to_host(out[name]).reshape(fn.shapes[name]) for name in out}

    def _kept(self, values: dict) -> list:
        """The forward values given to :meth:`__call__`, checked to be there with their definitions' shapes."""
        arrays = []
        for fn in definitions_of(self.gradients.function):
            if fn.name not in values:
                raise ExpressionError(f"{fn.name}: no forward value given for {fn.name!r}")
            array = np.asarray(values[fn.name], dtype=np.float64)
            if array.shape != tuple(fn.shapes[fn.name]):
                raise ExpressionError(f"{fn.name}: the forward value has shape {array.shape}, expected "
                                      f"{tuple(fn.shapes[fn.name])}")
            arrays.append(np.ascontiguousarray(array).reshape(storage_shape(array.shape, self.kind.vector)))
        return self.kind.to_device(arrays)

    # as Gradients.evaluate, so tensoradbook.check_gradients(fn, grads=compiled) checks the kernels
    evaluate = __call__


def compile_function(fn: Function | Program, target: str = "numba") -> CompiledFunction:
    """``fn``'s kernels for ``target`` (one of :data:`GATHER_TARGETS`), compiled."""
    return CompiledFunction(fn, target)


def compile_gradients(grads: Gradients | ProgramGradients, target: str = "numba") -> CompiledGradients:
    """The gradients' kernels for ``target`` (one of :data:`TARGETS`), compiled."""
    return CompiledGradients(grads, target)


def compile_ptx(subject, target: str = "cuda", cc: tuple[int, int] = (7, 5)) -> dict[str, str]:
    """PTX of every CUDA kernel generated for a :class:`Function` or :class:`Gradients` (or a program's), by NVVM,
    no GPU needed.

    ``target`` is ``"cuda"`` or ``"cuda-scatter"`` (gradients only). Needs
    the ``cuda`` extra (``numba-cuda[cu13]``) and the real CUDA target, not the
    simulator: the simulator runs the kernels as Python, so only this shows
    that Numba can type and compile them for a GPU.
    """
    from numba import config, float64  # numba-cuda's compiler: only here, it is an optional extra

    if config.ENABLE_CUDASIM:
        raise RuntimeError("compile_ptx needs the real CUDA target: unset NUMBA_ENABLE_CUDASIM")
    from numba import cuda

    parameters = {}  # kernel -> its parameters' shapes
    if isinstance(subject, (Function, Program)):
        target_named(target, ("cuda",))
        source = function_source(subject, target)
        kernels = {f"{py_name(fn.name)}_kernel": fn for fn in definitions_of(subject)}
    else:
        target_named(target, ("cuda", "cuda-scatter"))
        grads = subject.simplified
        source = gradients_source(grads, target)
        first, gather = module_functions(grads)
        kernels = {**first, **({} if target == "cuda-scatter" else gather)}
        for step, _, name in Sweep.of(grads).steps if target == "cuda-scatter" else ():
            parameters[name] = {py_name(a): shape for a, shape in scatter_reads(step).items()}
            parameters[name].update({py_name(g.name): g.shapes[g.name] for g in step.functions.values()})
    for name, fn in kernels.items():
        parameters[name] = {**{py_name(a): fn.shapes[a] for a in fn.arguments}, "_out": fn.shapes[fn.name]}
    module = load_module(source)
    ptx = {}
    for name, shapes in parameters.items():
        kernel = getattr(module, name)
        signature = []
        for parameter in inspect.signature(kernel.py_func).parameters:
            shape = storage_shape(tuple(shapes[parameter]), vector=False)
            signature.append(float64[(slice(None),) * (len(shape) - 1) + (slice(None, None, 1),)])
        ptx[name] = cuda.compile_ptx(kernel.py_func, tuple(signature), cc=cc)[0]
    return ptx

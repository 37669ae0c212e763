"""Compiled kernels (report sec. 6): generated modules loaded and wrapped as plain callables.

``fn.compile(target)`` is :class:`CompiledFunction`, ``grads.compile(target)`` is
:class:`CompiledGradients`: they check the arguments (:meth:`Function.argument_arrays`), move them to
the target's memory and back, and call the module's ``forward`` / ``gradients``. :func:`compile_ptx`
compiles the CUDA kernels to PTX without a GPU: a type check the simulator does not do.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..ad.derive import Gradients
from ..lang.function import Function
from .cache import load_module
from .module import function_source, gradients_source, module_functions, scatter_reads
from .printer import py_name
from .targets import GATHER_TARGETS, TARGETS, storage_shape, target_named


def _arrays(fn: Function, args, vector: bool, adjoint: tuple[str, object] | None = None) -> list[np.ndarray]:
    """The arguments of ``fn`` in its order, then the adjoint ``(name, value)`` if given, as C-contiguous
    float64 arrays, checked by :meth:`Function.argument_arrays` (real numbers, declared shapes)."""
    arrays = fn.argument_arrays(args, adjoint)
    return [np.ascontiguousarray(a).reshape(storage_shape(a.shape, vector)) for a in arrays.values()]


class CompiledFunction:
    """``fwd(args) -> f`` for one target; ``.source`` and ``.path`` show the generated module."""

    def __init__(self, fn: Function, target: str):
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
    """``grad(args, df) -> {"a": dA, ...}`` for one target; ``grad.forward(args)`` is ``f`` alone."""

    def __init__(self, grads: Gradients, target: str):
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

    def __call__(self, args: dict, df) -> dict[str, np.ndarray]:
        fn = self.gradients.function
        out = self.module.gradients(*self._inputs(args, (self.gradients.adjoint_name, df)))
        return {name: self.kind.to_host(out[name]).reshape(fn.shapes[name]) for name in out}

    # as Gradients.evaluate, so tensoradbook.check_gradients(fn, grads=compiled) checks the kernels
    evaluate = __call__


def compile_function(fn: Function, target: str = "numba") -> CompiledFunction:
    """``fn``'s kernel for ``target`` (one of :data:`GATHER_TARGETS`), compiled."""
    return CompiledFunction(fn, target)


def compile_gradients(grads: Gradients, target: str = "numba") -> CompiledGradients:
    """The gradients' kernels for ``target`` (one of :data:`TARGETS`), compiled."""
    return CompiledGradients(grads, target)


def compile_ptx(subject, target: str = "cuda", cc: tuple[int, int] = (7, 5)) -> dict[str, str]:
    """PTX of every CUDA kernel generated for a :class:`Function` or :class:`Gradients`, by NVVM, no GPU needed.

    ``target`` is ``"cuda"`` or ``"cuda-scatter"`` (gradients only). Needs
    the ``cuda`` extra (``numba-cuda[cu13]``) and the real CUDA target, not the
    simulator: the simulator runs the kernels as Python, so only this shows
    that Numba can type and compile them for a GPU.
    """
    from numba import config, float64  # numba-cuda's compiler: only here, it is an optional extra

    if config.ENABLE_CUDASIM:
        raise RuntimeError("compile_ptx needs the real CUDA target: unset NUMBA_ENABLE_CUDASIM")
    from numba import cuda

    if isinstance(subject, Function):
        target_named(target, ("cuda",))
        source = function_source(subject, target)
    else:
        target_named(target, ("cuda", "cuda-scatter"))
        grads = subject.simplified
        source = gradients_source(grads, target)
    if isinstance(subject, Function):
        kernels = {f"{py_name(subject.name)}_kernel": subject}
    else:
        first, gradients = module_functions(grads)
        kernels = {**first, **gradients}
    shapes, outputs = {}, {}
    for name, fn in kernels.items():
        shapes.update({py_name(a): tuple(fn.shapes[a]) for a in fn.arguments})
        outputs[name] = tuple(fn.shapes[fn.name])
    if not isinstance(subject, Function):
        shapes.update({py_name(a): shape for a, shape in scatter_reads(grads).items()})
        shapes.update({py_name(g.name): tuple(g.shapes[g.name]) for g in grads.functions.values()})
    module = load_module(source)
    ptx = {}
    for name in [*outputs, "scatter"]:
        kernel = getattr(module, name, None)
        if kernel is None:
            continue
        signature = []
        for parameter in inspect.signature(kernel.py_func).parameters:
            shape = storage_shape(outputs[name] if parameter == "_out" else shapes[parameter], vector=False)
            signature.append(float64[(slice(None),) * (len(shape) - 1) + (slice(None, None, 1),)])
        ptx[name] = cuda.compile_ptx(kernel.py_func, tuple(signature), cc=cc)[0]
    return ptx

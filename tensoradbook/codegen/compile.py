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
import json
import os
import subprocess
import sys

import numpy as np

from ..ad.derive import Gradients
from ..ad.program import ProgramGradients
from ..lang.evaluate import element_terms
from ..lang.expr import ExpressionError
from ..lang.function import Function
from ..lang.limits import MAX_KERNEL_WORK
from ..lang.program import Program
from .cache import load_module
from .scratch import held_by, keep_freed_memory
from .threads import MeasuredPlan
from ..lang.program import definitions_of
from .module import function_module, function_source, gradients_module, gradients_source, module_functions
from .render import render
from .targets import GATHER_TARGETS, KERNEL_TARGETS, TARGETS, Target, target_named


#: Seconds to wait for the helper process of :func:`precompile` before compiling its share here instead.
HELPER_TIMEOUT_S = 300
#: Kernels not in the disk cache from which a helper process pays: starting one (Python, numpy, Numba) costs
#: about as much as compiling a kernel, so it takes half of at least four.
HELPER_KERNELS = 4
#: A CPU counts as idle for the helper where the load average is below the CPUs by this much: a CPU busy half
#: the time would make the helper's compiling as slow as compiling here.
IDLE_MARGIN = 0.5

_HELPER = """
import importlib.util, json, sys
from numba import types
from tensoradbook.codegen import cache
path, name, jobs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
cache.helper_for(path)
spec = importlib.util.spec_from_file_location(name, path)
module = importlib.util.module_from_spec(spec)
sys.modules[name] = module
spec.loader.exec_module(module)
for kernel, dimensions in jobs.items():
    getattr(module, kernel).compile(tuple(types.Array(types.float64, n, "C") for n in dimensions))
"""


def precompile(module) -> None:
    """Type and compile every kernel of a generated Numba module now, for the float64 C-order arrays the module
    passes (its ``KERNEL_ARRAYS``), rather than one by one at the first call: each is loaded from Numba's disk
    cache where it is there. Where :data:`HELPER_KERNELS` or more are not and a CPU is idle (the load average
    below the CPUs this process may use by :data:`IDLE_MARGIN`), a helper process compiles every second one into that
    cache meanwhile (Numba's compiler is Python, one core per process), and this one then loads them. Arrays of
    other types (a read-only input) still compile at the call that brings them."""
    from numba import types

    signatures = {name: tuple(types.Array(types.float64, n, "C") for n in dimensions)
                  for name, dimensions in module.KERNEL_ARRAYS.items()}
    cold = sorted((name for name in signatures if not _cached(getattr(module, name))),
                  key=lambda name: not getattr(module, name).targetoptions.get("parallel"))  # slowest first
    cpus = len(os.sched_getaffinity(0))
    shared = cold[1::2] if len(cold) >= HELPER_KERNELS and os.getloadavg()[0] < cpus - IDLE_MARGIN else []
    helper = None
    if shared:
        jobs = json.dumps({name: module.KERNEL_ARRAYS[name] for name in shared})
        try:
            helper = subprocess.Popen([sys.executable, "-c", _HELPER, module.__file__, module.__name__, jobs],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError:  # no interpreter to start: compile them all here
            shared = []
    for name, signature in signatures.items():
        if name not in shared:
            getattr(module, name).compile(signature)
    if helper is not None:
        try:
            helper.wait(HELPER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            helper.kill()
            helper.wait()
    for name in shared:  # from the disk cache where the helper compiled it, else compiled here
        getattr(module, name).compile(signatures[name])


def _cached(dispatcher) -> bool:
    """Whether Numba's disk cache holds code for ``dispatcher`` (its index file exists). Where Numba's cache
    is laid out otherwise than this knows, say so: no helper process is then started for nothing."""
    try:
        return os.path.exists(dispatcher._cache._cache_file._index_path)
    except AttributeError:
        return True


def _arrays(fn: Function | Program, args, kind: Target, adjoint: tuple[str, object] | None = None) -> list[np.ndarray]:
    """The arguments of ``fn`` in its order, then the adjoint ``(name, value)`` if given, as C-contiguous
    float64 arrays in ``kind``'s shapes, checked by :meth:`Function.argument_arrays` (real numbers, declared
    shapes)."""
    arrays = fn.argument_arrays(args, adjoint)
    return [np.ascontiguousarray(a).reshape(kind.stored_shape(a.shape)) for a in arrays.values()]


def _loaded(owner, source: str):
    """The module of ``source``, held by ``owner`` (its scratch arrays freed with the last holder), the process's
    freed memory kept for the next call's arrays (:mod:`.scratch`)."""
    keep_freed_memory()
    return held_by(owner, load_module(source))


def _run(kind: Target, plans: dict[str, MeasuredPlan], entry, *arrays):
    """``entry(*arrays)``, where ``kind`` runs on threads on as many as the machine's load leaves, shared between
    kernels and BLAS as ``plans`` (one per entry point of the module) measured."""
    if not kind.threaded:
        return entry(*arrays)
    return plans.setdefault(entry.__name__, MeasuredPlan()).run(entry, *arrays)


def check_work(functions) -> None:
    """Refuse kernels past :data:`~tensoradbook.lang.limits.MAX_KERNEL_WORK` element-terms, which would run for
    days: an :class:`ExpressionError` naming the function, its work and the limit."""
    for fn in functions:
        terms = element_terms(fn)
        if terms > MAX_KERNEL_WORK:
            raise ExpressionError(
                f"{fn.name}: its kernel would compute about {terms:.3g} element-terms (the output's elements times "
                f"its sums' ranges), more than MAX_KERNEL_WORK = {MAX_KERNEL_WORK:.0e}, days of work; use smaller "
                "shapes or sum bounds")


#: A loaded module's name -> its entry points' plans: every compiled object of one module (a chapter compiles the
#: same function again and again) shares what its calls measured, as the loaded module itself is shared.
_PLANS: dict[str, dict[str, MeasuredPlan]] = {}


class _Planned:
    """A compiled module whose entry points measure how they share the CPUs (:class:`MeasuredPlan`)."""

    _plans: dict[str, MeasuredPlan]

    @property
    def plans(self) -> dict[str, dict[int, tuple[int, int]]]:
        """The plan each entry point chose on this machine so far: ``{entry: {threads: (Numba's threads,
        OpenBLAS's threads)}}`` (empty until its calls have tried every candidate)."""
        return {name: dict(plan.chosen) for name, plan in self._plans.items()}


class CompiledFunction(_Planned):
    """``fwd(args) -> f`` for one target (for a program, the last definition's value); ``.source`` and
    ``.path`` show the generated module."""

    def __init__(self, fn: Function | Program, target: str):
        self.kind = target_named(target, GATHER_TARGETS)
        self.kind.check_available()
        self.function, self.target = fn, target
        check_work(definitions_of(fn))
        self.source = function_source(fn, target)
        self.module = _loaded(self, self.source)
        self.path = self.module.__file__
        self._plans = _PLANS.setdefault(self.module.__name__, {})
        if self.kind.precompiled:
            precompile(self.module)

    def __call__(self, args: dict) -> np.ndarray:
        arrays = self.kind.to_device(_arrays(self.function, args, self.kind))
        shape = tuple(self.function.shapes[self.function.name])
        return self.kind.to_host(_run(self.kind, self._plans, self.module.forward, *arrays)).reshape(shape)


class CompiledGradients(_Planned):
    """``grad(args, df) -> {"a": dA, ...}`` for one target; ``grad.forward(args)`` is ``f`` alone.

    ``grad.values(args)`` is every definition's value (``{"f": f}`` for a function), the forward pass the
    gradients read; ``grad(args, df, values)`` reads those instead of running the forward pass again.
    """

    def __init__(self, grads: Gradients | ProgramGradients, target: str):
        self.kind = target_named(target, TARGETS)
        self.kind.check_available()
        self.gradients, self.target = grads, target
        first, gather = module_functions(grads)
        check_work([*first.values(), *gather.values()])
        self.source = gradients_source(grads, target)
        self.module = _loaded(self, self.source)
        self.path = self.module.__file__
        self._plans = _PLANS.setdefault(self.module.__name__, {})
        if self.kind.precompiled:
            precompile(self.module)

    def _inputs(self, args, adjoint: tuple[str, object] | None = None) -> list:
        return self.kind.to_device(_arrays(self.gradients.function, args, self.kind, adjoint))

    def forward(self, args: dict) -> np.ndarray:
        fn = self.gradients.function
        value = _run(self.kind, self._plans, self.module.forward, *self._inputs(args))
        return self.kind.to_host(value).reshape(fn.shapes[fn.name])

    def values(self, args: dict) -> dict[str, np.ndarray]:
        """Every definition's value, each computed once by its kernel."""
        definitions = definitions_of(self.gradients.function)
        values = _run(self.kind, self._plans, self.module._values, *self._inputs(args))
        return {fn.name: self.kind.to_host(value).reshape(fn.shapes[fn.name]) for fn, value in zip(definitions, values)}

    def __call__(self, args: dict, df, values: dict | None = None) -> dict[str, np.ndarray]:
        fn = self.gradients.function
        inputs = self._inputs(args, (self.gradients.adjoint_name, df))
        if values is None:
            out = _run(self.kind, self._plans, self.module.gradients, *inputs)
        else:
            out = _run(self.kind, self._plans, self.module._backward, *inputs[:-1], *self._kept(values), inputs[-1])
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
            arrays.append(np.ascontiguousarray(array).reshape(self.kind.stored_shape(array.shape)))
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

    if isinstance(subject, (Function, Program)):
        kind = target_named(target, tuple(name for name in GATHER_TARGETS if KERNEL_TARGETS[name].on_gpu))
        planned = function_module(subject, kind)
    else:
        kind = target_named(target, tuple(name for name in TARGETS if KERNEL_TARGETS[name].on_gpu))
        planned = gradients_module(subject.simplified, kind)
    module = load_module(render(planned, kind))
    ptx = {}
    for name, shapes in planned.compiled_kernels().items():
        kernel = getattr(module, name)
        signature = []
        for parameter in inspect.signature(kernel.py_func).parameters:
            shape = kind.stored_shape(tuple(shapes[parameter]))
            signature.append(float64[(slice(None),) * (len(shape) - 1) + (slice(None, None, 1),)])
        ptx[name] = cuda.compile_ptx(kernel.py_func, tuple(signature), cc=cc)[0]
    return ptx

"""Serial kernels launched one after another, compiled as one function: a pass over a planned module.

Numba compiles each kernel through its whole pipeline and wraps it for Python, about a tenth of a second per kernel
however small, so a program of 200 definitions (about 600 kernels) took over a minute to compile
(benchmarks/compile_time.py). Where an entry point launches at least :data:`~.thresholds.FUSED_KERNELS` serial
kernels in a row, with nothing between them but the allocation of their outputs, the pass allocates those first and
launches one :class:`~.kernel_ir.FusedKernel` that calls each kernel in turn; Numba inlines them
(``inline="always"``) and compiles the whole once. Kernels of a fused run share its decorator, so a run holds kernels
that all reassociate sums or all do not (``exact``). A run longer than :data:`MAX_FUSED` is cut into parts of about
equal size.

The fused function computes what its kernels compute, one after another, in the same order: the same bits.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

from .kernel_ir import Allocate, ArraysTable, Entry, FusedKernel, Kernel, Launch, Module
from .targets import Target
from .thresholds import FUSED_KERNELS

#: Kernels in one fused function at most: Numba's typing and LLVM's passes grow faster than the code beyond that.
MAX_FUSED = 32
#: Arguments of a kernel a fused function can call: CPython passes more as one tuple (``CALL_FUNCTION_EX``, past
#: its compiler's ``STACK_USE_GUIDELINE``), which Numba does not inline.
MAX_CALL_ARGUMENTS = 30


def fuse(module: Module, target: Target) -> Module:
    """``module`` with each entry point's runs of serial kernels launched as fused functions, where ``target``
    compiles kernels one by one (:attr:`~.targets.Target.fuses`)."""
    if not target.fuses:
        return module
    kernels = {kernel.name: kernel for kernel in module.kernels if isinstance(kernel, Kernel)}
    fused: dict[tuple, FusedKernel] = {}
    entries = tuple(replace(entry, body=_fused_body(entry.body, kernels, fused)) if isinstance(entry, Entry)
                    else entry for entry in module.entries)
    if not fused:
        return module
    inlined = {call[0] for node in fused.values() for call in node.calls}
    launched = {node.kernel for entry in entries if isinstance(entry, Entry) for node in _launches(entry.body)}
    every = [replace(kernel, inlined=True, typed=kernel.typed and kernel.name in launched)
             if isinstance(kernel, Kernel) and kernel.name in inlined else kernel for kernel in module.kernels]
    every += fused.values()
    table = None if module.table is None else ArraysTable(tuple(
        (kernel.name, kernel.shapes) for kernel in every
        if isinstance(kernel, FusedKernel) or (isinstance(kernel, Kernel) and kernel.typed)))
    return replace(module, kernels=tuple(every), entries=entries, table=table)


def _fusible(node, kernels: dict) -> Kernel | None:
    """The kernel ``node`` launches, where it may join a fused run: typed, serial, called on few enough arrays
    (a launch's arguments are always the names of arrays, :class:`~.kernel_ir.Launch`)."""
    if not isinstance(node, Launch) or node.kernel not in kernels or len(node.args) > MAX_CALL_ARGUMENTS:
        return None
    kernel = kernels[node.kernel]
    return None if kernel.parallel or not kernel.typed else kernel


def _fused_body(body: tuple, kernels: dict, fused: dict) -> tuple:
    """``body`` with its runs of fusible launches (and the allocations among them) replaced."""
    out: list = []
    run: list = []
    for node in body:
        kernel = _fusible(node, kernels)
        launches = [n for n in run if isinstance(n, Launch)]
        same = kernel is not None and (not launches or kernels[launches[0].kernel].exact == kernel.exact)
        if isinstance(node, Allocate) or same:
            run.append(node)
            continue
        out += _flushed(run, kernels, fused)
        run = [node] if kernel is not None else []
        if kernel is None:
            out.append(node)
    return tuple(out + _flushed(run, kernels, fused))


def _flushed(run: list, kernels: dict, fused: dict) -> list:
    """A run's nodes: as they were, or its allocations then its fused launches."""
    launches = [node for node in run if isinstance(node, Launch)]
    if not FUSED_KERNELS.reached(len(launches)):
        return run
    nodes = [node for node in run if isinstance(node, Allocate)]
    parts = -(-len(launches) // MAX_FUSED)
    size = -(-len(launches) // parts)  # parts of equal size but for the last: never a last part of one
    for start in range(0, len(launches), size):
        part = launches[start:start + size]
        node = _fused_kernel(part, kernels, fused)
        nodes.append(Launch(node.name, node.params, sum(launch.size for launch in part)))
    return nodes


def _fused_kernel(launches: list, kernels: dict, fused: dict) -> FusedKernel:
    """The fused function calling ``launches`` in turn (one per distinct run of calls in the module)."""
    calls = tuple((launch.kernel, launch.args) for launch in launches)
    if calls not in fused:
        shapes: dict[str, tuple] = {}
        for launch in launches:
            for arg, shape in zip(launch.args, kernels[launch.kernel].shapes):
                shapes.setdefault(arg, shape)
        fused[calls] = FusedKernel(f"_fused_{len(fused) + 1}_kernel", tuple(shapes), tuple(shapes.values()),
                                   kernels[launches[0].kernel].exact, calls)
    return fused[calls]


def _launches(nodes: tuple):
    """Every :class:`Launch` among ``nodes`` and inside them (the branches of guarded and kept parts)."""
    for node in nodes:
        if isinstance(node, Launch):
            yield node
        elif is_dataclass(node):
            for value in (getattr(node, field.name) for field in fields(node)):
                if isinstance(value, tuple):
                    yield from _launches(value)

"""Code generation (report sec. 6): element-wise functions and their gradients as numpy, Numba CPU and
Numba CUDA kernels, one thread per output (or gradient) element, with no atomics.

* :mod:`.printer`: the lowering of a kernel's expression to statements and values (nodes of :mod:`.kernel_ir`),
  one ``_print_<Node>`` per expression node and one subclass per kind of code (scalar for Numba, CUDA, vector for
  numpy), which decides the temporaries;
* :mod:`.targets`: one class per target (``"numpy"``, ``"numba"``, ``"cuda"`` and the scatter
  baselines ``"numba-scatter"``, ``"cuda-scatter"`` of eq. 40): everything that differs between them;
* :mod:`.module`: the planning of a generated module, for any target, written down once as the nodes of
  :mod:`.kernel_ir` (kernels, loops, allocations, launches, BLAS products, what the backward pass reuses);
* :mod:`.render` and :mod:`.values`: those nodes as source, in the target's spelling of each statement and value;
* :mod:`.cache`: generated modules on disk, where Numba's own cache finds them again;
* :mod:`.compile`: the compiled callables behind ``fn.compile(target)`` and ``grads.compile(target)``,
  and :func:`compile_ptx`, the CUDA kernels compiled to PTX without a GPU.

Adding a target is one class in :mod:`.targets` (and a values table in :mod:`.values` if its code differs: a C one
in ``tests/test_c_target.py``); docs/developer.md's "How the code is laid out" shows one.
"""

from .cache import cache_directory, load_module
from .compile import CompiledFunction, CompiledGradients, compile_function, compile_gradients, compile_ptx
from .module import function_source, gradients_source
from .targets import GATHER_TARGETS, KERNEL_TARGETS, SCATTER_TARGETS, TARGETS, THREADS_PER_BLOCK, cuda_problem

__all__ = [
    "CompiledFunction", "CompiledGradients", "GATHER_TARGETS", "KERNEL_TARGETS", "SCATTER_TARGETS", "TARGETS",
    "THREADS_PER_BLOCK", "cache_directory", "compile_function", "compile_gradients", "compile_ptx",
    "cuda_problem", "function_source", "gradients_source", "load_module",
]

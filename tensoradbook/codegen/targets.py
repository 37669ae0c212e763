"""The kernel targets (report sec. 6): what differs between numpy, Numba on the CPU and Numba CUDA.

One class per target; everything target-specific lives here, in the values tables (:mod:`.values`) and in the
printers' counting of brackets (:mod:`tensoradbook.codegen.printer`), so the planner
(:mod:`tensoradbook.codegen.module`), the renderer (:mod:`tensoradbook.codegen.render`) and the compiled callables
(:mod:`tensoradbook.codegen.compile`) never ask which target they serve. The planner asks a target what it decides
(rows of lanes, BLAS, scatter or gather gradients); the renderer asks for its spelling of a node
(:meth:`Target.element_loop` answers with simpler nodes, :meth:`Target.allocation` and the statements of a kernel's
body with a line). The base class spells Python; a target of another language overrides those spellings (a C one
in ``tests/test_c_target.py``):

* ``"numpy"``: vectorised over the whole output, one numpy pass per sum step;
* ``"numba"``: ``numba.njit``, a loop over the elements (or rows of lanes): a ``prange`` on Numba's threads
  (``parallel=True``) where a kernel's work pays for waking them (:data:`.thresholds.PARALLEL_WORK`), else a serial
  loop;
  a definition that is a plain contraction is a BLAS call instead (:mod:`.contraction`), and an element-wise body
  with a function of :attr:`NumbaTarget.numpy_faster` numpy over views (:func:`.module.broadcast_kernel`). Kernels are
  compiled with ``fastmath={"reassoc"}`` alone: LLVM may then add a sum's terms in several running totals
  at once (SIMD) rather than one after the other. The order is fixed when the kernel compiles, so the same
  inputs give the same bits on every run; no other fast-math flag is set, so infinities and NaNs propagate
  as in the reference. A kernel that compares computed values (a max or min reduction, a select) has no
  flag at all: it may regroup a product too, and a max reduction's adjoint compares each term, computed
  again, with the forward kernel's maximum, which it reaches only in the same bits;
* ``"cuda"``: ``numba.cuda.jit``, one GPU thread per element (on the CUDA simulator when
  ``NUMBA_ENABLE_CUDASIM=1`` is set before numba is imported);
* ``"numba-scatter"`` and ``"cuda-scatter"``: the baseline of eq. 40, a loop over the *forward*
  elements adding each occurrence's adjoint into the gradient element it reads; parallel only with
  atomics (CUDA), so serial on the CPU. This is what the report's gather form replaces.
"""

from __future__ import annotations

import numpy as np

from .kernel_ir import Allocate, Block, ElementLoop, Kernel, Line, RowBlock, ScatterLoop, Unflatten
from .printer import CudaPrinter, KernelPrinter, ScalarPrinter, VectorPrinter, py_name
from .values import CudaValues, ScalarValues, VectorValues

#: CUDA threads per block: a multiple of the 32 threads of a warp, small enough that a kernel's registers fit
#: several blocks on one multiprocessor.
THREADS_PER_BLOCK = 128


def storage_shape(shape: tuple, vector: bool) -> tuple:
    """Scalar kernels keep a 0-d tensor as one element ``x[0]``; numpy handles 0-d natively."""
    return tuple(shape) if (shape or vector) else (1,)


def size_of(shape) -> int:
    return int(np.prod(shape, dtype=object))


class Target:
    """A kernel target: its printer, the module's imports, and how kernels are declared, looped,
    allocated for, launched, fed and read back."""

    name: str
    label: str            # its name in a menu, with how it runs
    compiling = ""        # what compiling its kernels costs, where a user waits for it
    printer: type[KernelPrinter]  # lowers an expression to statements and values (codegen.printer)
    values: type[ScalarValues] = ScalarValues  # spells those values (codegen.values)
    scatters_gradients = False  # one scatter kernel per definition (eq. 40) rather than one gather kernel each
    lanes = False         # rows of the last output index as lanes (see codegen.module.lane)
    on_gpu = False        # runs on an NVIDIA GPU (or Numba's CUDA simulator)
    precompiled = False   # kernels typed and compiled when the module loads (codegen.compile.precompile)
    quiet = False         # entry points run numpy arithmetic (grids, BLAS) under np.errstate, as the reference
    blas = False          # plain contractions as BLAS calls rather than kernels (codegen.contraction)
    threaded = False      # calls run on CPU threads, as many as the machine's load leaves (codegen.threads)
    fuses = False         # serial kernels launched in a row compiled as one function (codegen.fusion)
    imports: tuple[str, ...] = ()
    numpy_faster: frozenset = frozenset()  # functions numpy evaluates faster than the kernels (see module.broadcasts)
    scratch_setup: tuple[str, ...] = ()  # the module's scratch arrays, where it keeps any (see scratch)
    kernel_decorator: tuple[str, ...] = ()

    def decorator(self, parallel: bool, exact: bool = False, inlined: bool = False) -> tuple[str, ...]:
        """The lines above a kernel's ``def``; ``parallel``: its work pays for running on several threads;
        ``exact``: it compares computed values (:func:`~.module.compares`), which must round as the reference's;
        ``inlined``: a fused kernel calls it (:mod:`.fusion`, where the target :attr:`fuses`)."""
        return self.kernel_decorator

    def element_loop(self, loop: ElementLoop) -> tuple:
        """``loop`` as nodes: a loop over its elements binding the element number ``_flat``, its indices, its
        body."""
        raise NotImplementedError

    def scatter_loop(self, loop: ScatterLoop) -> tuple:
        """``loop`` (eq. 40, over every forward element) as nodes, where the target :attr:`scatters_gradients`."""
        raise NotImplementedError(f"the {self.name} target gathers each gradient element: it writes no scatter loop")

    def accumulate(self, gradient: str, element: str, index: tuple[str, ...], value: str) -> str:
        """``value`` added into ``element`` (of the array ``gradient``, at the index codes ``index``), where the
        target :attr:`scatters_gradients`: a plain add where one thread adds, an atomic one where several may."""
        raise NotImplementedError(f"the {self.name} target gathers each gradient element: it accumulates nothing")

    # -- the statements of a kernel, spelled (codegen.render): Python's, but for a target's own
    empty_block: tuple[str, ...] = ("pass",)  # a block with no statements
    block_end: tuple[str, ...] = ()  # the lines closing a block: none, the indentation closes it
    else_header = "else:"

    def statement(self, text: str) -> str:
        """A simple statement's line (an assignment, a call)."""
        return text

    def comment(self, text: str) -> str:
        return f"# {text}"

    def if_header(self, condition: str) -> str:
        return f"if {condition}:"

    def negation(self, condition: str) -> str:
        return f"not ({condition})"

    def kernel_header(self, name: str, params: tuple[str, ...]) -> str:
        return f"def {name}({', '.join(params)}):"

    def kernel_prologue(self, kernel: Kernel) -> tuple:
        """Statements opening a kernel's body, before its loop (a language that declares its variables does it
        here)."""
        return ()

    def unflatten(self, node: Unflatten) -> tuple:
        """``i = _flat // 4``, ``j = _flat % 4``: the indices of the element number, row-major like numpy."""
        flat = f"(_flat // {node.blocks})" if node.blocks > 1 else "_flat"
        strides, stride = [], 1
        for n in reversed(node.shape):
            strides.append(stride)
            stride *= n
        lines = []
        for name, n, s in zip(node.names, node.shape, reversed(strides)):
            value = flat if s == 1 else f"{flat} // {s}"
            if s * n != stride:  # not the outermost index: wrap around
                value = f"{value} % {n}" if s == 1 else f"({value}) % {n}"
            lines.append(Line(f"{py_name(name)} = {value}"))
        return tuple(lines)

    def row_block(self, node: RowBlock) -> tuple:
        """``_first`` and ``_stop``, the lanes of the element number's block of its row."""
        return (Line(f"_first = _flat % {node.blocks} * {node.width}"),
                Line(f"_stop = min(_first + {node.width}, {node.extent})"))

    def fill(self, name: str, width: int, value: str) -> str:
        """Every lane of the per-lane array ``name`` (of ``width``) set to the code ``value``."""
        return f"{name}[:] = {value}"

    def range_loop(self, index: str, low: str, high: str) -> str:
        """The header of a loop of ``index`` from ``low`` to ``high``, both included."""
        return f"for {index} in range({low}, {high} + 1):"

    def lane_loop(self, lane: str, width: int, first: str | None, stop: str | None) -> str:
        """The header of a loop of ``lane`` over a row's lanes: all ``width`` of them, or (the code of) ``first`` up
        to ``stop``."""
        bounds = str(width) if first is None else f"{first}, {stop}"
        return f"for {lane} in range({bounds}):"

    def declaration(self, name: str, width: int) -> str:
        """A per-lane array ``name`` of ``width`` values allocated."""
        return f"{name} = np.empty({width})"

    def output_element(self, indices: tuple[str, ...], shape: tuple[int, ...]) -> str:
        """The subscript of ``_out`` (of ``shape``) an element loop's body writes, at the output's ``indices``."""
        return ", ".join(indices) if indices else "0"

    def stored_shape(self, shape) -> tuple:
        """The shape of a tensor's array on this target: a 0-d tensor is one element ``x[0]`` in a kernel."""
        return storage_shape(shape, vector=False)

    def allocation(self, node: Allocate) -> str:
        """``node``'s array allocated: a scratch array where it asks for one and the target keeps them."""
        kept = self.scratch(node.name) if node.how == "scratch" else None
        if kept:
            return f"{node.name} = {kept.format(shape=node.shape)}"
        return self.allocate(node.name, node.shape, zero=node.how == "zeroed")

    def allocate(self, name: str, shape: tuple, zero: bool = False) -> str:
        return f"{name} = np.{'zeros' if zero else 'empty'}({self.stored_shape(shape)!r})"

    def call(self, kernel: str, args: str, size: int) -> str:
        return f"{kernel}({args})"

    def scratch(self, name: str) -> str | None:
        """Code of the array ``name`` keeps from call to call (:mod:`.scratch`), with ``{shape}`` to fill in; None
        where each call allocates its own."""
        return None

    def guarded(self, statements: tuple) -> tuple:
        """An entry point's statements, where ``quiet`` under ``np.errstate``: numpy's arithmetic (a whole grid, a
        BLAS product) meets inf and NaN as the reference evaluator does, without warnings (masked-out lanes of the
        numpy kernels may divide by zero)."""
        if not self.quiet:
            return statements
        return (Block('with np.errstate(all="ignore"):', statements),)

    # -- in the compiled callables
    def check_available(self) -> None:
        """Raise where this process cannot run the target."""

    def to_device(self, arrays: list[np.ndarray]) -> list:
        return arrays

    def to_host(self, array) -> np.ndarray:
        return array


class NumpyTarget(Target):
    name = "numpy"
    label = "numpy (vectorised)"
    printer = VectorPrinter
    values = VectorValues
    quiet = True
    imports = ("import numpy as np", "", "from tensoradbook.lang.ops import numpy_function")

    def element_loop(self, loop: ElementLoop) -> tuple:
        """No loop: the body computes the whole output at once, its indices a sparse grid."""
        grid = (Line(f"{', '.join(loop.indices)}, = np.indices(_GRID, sparse=True)"),) if loop.shape else ()
        return (Line(f"_GRID = {loop.shape!r}"), *grid, *loop.body)

    def output_element(self, indices: tuple[str, ...], shape: tuple[int, ...]) -> str:
        return "..."

    def stored_shape(self, shape) -> tuple:
        return storage_shape(shape, vector=True)


class NumbaTarget(Target):
    name = "numba"
    label = "numba (CPU threads, gather)"
    compiling = "Numba: several seconds for new sizes, then cached on disk"
    printer = ScalarPrinter
    lanes = True
    blas = True
    threaded = True
    fuses = True
    precompiled = True
    quiet = True
    imports = ("import math", "", "import numba", "import numpy as np")

    #: Functions numpy evaluates over a whole array several times faster than Numba one element at a time: Numba's
    #: LLVM has no vector math library, numpy has SIMD versions of these (sin and cos it has not, and sqrt is an
    #: instruction either way). The softplus and softmax workloads of benchmarks/workloads.py measure the gain.
    numpy_faster = frozenset({"exp", "log", "log10", "log1p", "expm1", "tan", "asin", "acos", "atan", "sinh",
                              "cosh", "tanh"})
    #: the module's scratch arrays (:mod:`.scratch`), where it has any
    scratch_setup = ("from tensoradbook.codegen.scratch import Scratch", "",
                     "_scratch = Scratch()  # the tensors each call computes and reads, kept from call to call")

    def decorator(self, parallel: bool, exact: bool = False, inlined: bool = False) -> tuple[str, ...]:
        options = ["parallel=True"] * parallel + ["cache=True", 'error_model="numpy"']
        options += [] if exact else ['fastmath={"reassoc"}']
        options += ['inline="always"'] * inlined
        return (f"@numba.njit({', '.join(options)})",)

    def scratch(self, name: str) -> str | None:
        return f"_scratch.array({name!r}, {{shape!r}})"

    def element_loop(self, loop: ElementLoop) -> tuple:
        # prange's index is unsigned: index arithmetic such as max(-i, 0) needs a signed one
        header = f"for _element in {'numba.prange' if loop.parallel else 'range'}({loop.count}):"
        return (Block(header, (Line("_flat = np.int64(_element)"), *loop.unflatten, *loop.body)),)


class CudaTarget(Target):
    name = "cuda"
    label = "cuda (GPU thread per element)"
    printer = CudaPrinter
    values = CudaValues
    on_gpu = True
    imports = ("import math", "", "import numpy as np", "from numba import cuda", "", f"THREADS = {THREADS_PER_BLOCK}")
    kernel_decorator = ("@cuda.jit(cache=True)",)

    def element_loop(self, loop: ElementLoop | ScatterLoop) -> tuple:
        """One thread per element; the last block's threads past the end do nothing."""
        return (Line("_flat = cuda.grid(1)"), Block(f"if _flat < {loop.count}:", (*loop.unflatten, *loop.body)))

    def allocate(self, name: str, shape: tuple, zero: bool = False) -> str:
        shape = self.stored_shape(shape)
        return f"{name} = cuda.to_device(np.zeros({shape!r}))" if zero else f"{name} = cuda.device_array({shape!r})"

    def call(self, kernel: str, args: str, size: int) -> str:
        return f"{kernel}[{-(-size // THREADS_PER_BLOCK)}, THREADS]({args})"

    def check_available(self) -> None:
        problem = cuda_problem()
        if problem:
            raise RuntimeError(problem)

    def to_device(self, arrays: list[np.ndarray]) -> list:
        from numba import cuda  # only here: importing numba.cuda costs a second and needs numba-cuda

        return [cuda.to_device(a) for a in arrays]

    def to_host(self, array) -> np.ndarray:
        return array.copy_to_host()


class NumbaScatterTarget(NumbaTarget):
    """Eq. 40 on the CPU: serial, since concurrent adds into one gradient element would race."""

    name = "numba-scatter"
    label = "numba-scatter (eq. 40, serial)"
    scatters_gradients = True
    blas = False  # the baseline of eq. 40 stays loops alone
    numpy_faster = frozenset()

    def scatter_loop(self, loop: ScatterLoop) -> tuple:
        return (Block(f"for _flat in range({loop.count}):", (*loop.unflatten, *loop.body)),)

    def accumulate(self, gradient: str, element: str, index: tuple[str, ...], value: str) -> str:
        return f"{element} += {value}"


class CudaScatterTarget(CudaTarget):
    """Eq. 40 on the GPU: one thread per forward element, atomic adds into the gradients."""

    name = "cuda-scatter"
    label = "cuda-scatter (eq. 40, atomics)"
    scatters_gradients = True

    def scatter_loop(self, loop: ScatterLoop) -> tuple:
        return self.element_loop(loop)

    def accumulate(self, gradient: str, element: str, index: tuple[str, ...], value: str) -> str:
        # one index plain (NVVM rejects a 1-tuple for a 1-D array), several as a tuple
        where = index[0] if len(index) == 1 else f"({', '.join(index)})" if index else "0"
        return f"cuda.atomic.add({gradient}, {where}, {value})"


KERNEL_TARGETS: dict[str, Target] = {t.name: t for t in (NumpyTarget(), NumbaTarget(), CudaTarget(),
                                                         NumbaScatterTarget(), CudaScatterTarget())}
GATHER_TARGETS = tuple(name for name, t in KERNEL_TARGETS.items() if not t.scatters_gradients)
SCATTER_TARGETS = tuple(name for name, t in KERNEL_TARGETS.items() if t.scatters_gradients)
TARGETS = GATHER_TARGETS + SCATTER_TARGETS


def target_named(name: str, allowed: tuple[str, ...] = TARGETS) -> Target:
    """The target called ``name``, which must be one of ``allowed``."""
    if name not in allowed:
        raise ValueError(f"unknown target {name!r}: choose one of {', '.join(map(repr, allowed))}")
    return KERNEL_TARGETS[name]


def cuda_problem() -> str:
    """Why the ``"cuda"`` targets cannot run in this process, or ``""`` (a GPU, or the simulator)."""
    try:
        from numba import config, cuda  # numba-cuda is optional: only the CUDA targets need it
    except ImportError as error:
        return f"target 'cuda' needs numba-cuda ({error})"
    if config.ENABLE_CUDASIM or cuda.is_available():
        return ""
    return ("target 'cuda' needs an NVIDIA GPU, or the CUDA simulator: set the environment "
            "variable NUMBA_ENABLE_CUDASIM=1 before numba is first imported")

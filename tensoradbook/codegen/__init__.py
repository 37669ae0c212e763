"""Generated kernels: element-wise functions and their gradients as Numba CPU, Numba CUDA and numpy code.

The report's point (secs. 5-6) is that each gradient element is a closed-form
expression of its own: a kernel can give every element to one thread, with no
atomics and no temporaries. This module writes that kernel as Python source,
one per function, into a real module file, and compiles it:

* ``"numba"``: ``numba.njit(parallel=True)``, a ``prange`` over the elements;
* ``"cuda"``: ``numba.cuda.jit``, one GPU thread per element (on the CUDA
  simulator when ``NUMBA_ENABLE_CUDASIM=1`` is set before numba is imported);
* ``"numpy"``: vectorised over the whole output, one numpy pass per sum step;
* ``"numba-scatter"`` and ``"cuda-scatter"``: the baseline of eq. 40, a loop
  over the *forward* elements that adds each occurrence's adjoint into the
  gradient element it reads; parallel only with atomics (CUDA), so serial on
  the CPU. This is what the report's gather form replaces.

Sums become loops with their ``max``/``min`` bounds, conditions become
branches (masks in numpy), repeated subexpressions are computed once. Gradient
modules compute the forward result ``f`` once and their kernels read it
(:attr:`tensoradbook.ad.derive.Gradients.simplified`).

Modules are written once per distinct source, named by its hash, into the
cache directory (``$TENSORADBOOK_CACHE``, else ``$XDG_CACHE_HOME/tensoradbook``
or ``~/.cache/tensoradbook``), so Numba's on-disk cache (``cache=True``) finds
its machine code again in a new process and tracebacks show the generated
lines. :func:`compile_ptx` compiles the CUDA kernels to PTX without a GPU: a
type check the simulator does not do.
"""

from __future__ import annotations

import hashlib
import importlib.util
import keyword
import os
import sys
import tempfile
from contextlib import ExitStack, contextmanager
from pathlib import Path

import numpy as np

from ..lang.names import all_names, apart, fresh_name
from ..lang.expr import Affine, Atom, Binary, Element, Expr, If, Number, Sum, Unary, free_indices, memory_step, postorder, substitute
from ..lang.function import Function
from ..lang.printer import expr_text, to_text
from ..lang.simplify import hoist_invariants

GATHER_TARGETS = ("numpy", "numba", "cuda")
SCATTER_TARGETS = ("numba-scatter", "cuda-scatter")
TARGETS = GATHER_TARGETS + SCATTER_TARGETS
THREADS_PER_BLOCK = 128
_FORMAT = 1  # bump when the generated code changes meaning: new hashes, new module files

# Names the generated code uses itself; user names that clash get a suffix.
_RESERVED = {"math", "np", "numba", "cuda", "range", "max", "min", "forward", "gradients", "scatter", "THREADS"}


def _py(name: str) -> str:
    """A user's tensor or index name as a Python identifier that cannot clash with the generated code's.

    Generated temporaries start with ``_``, kernels end with ``_kernel``, and
    Numba, compiling a ``prange`` loop, renames variables by doubling their
    underscores, which must not give the name of another variable (``a_``
    beside ``a__``). So a plain name (no ``_`` first or last, no ``__``, not a
    keyword, not a name the module uses, not ending with ``_kernel``) stays,
    and any other has each ``_`` written ``_u`` and a ``_`` appended: ``np``
    becomes ``np_`` and ``np_`` becomes ``np_u_``. No identifier has a double
    underscore, and no two names meet.
    """
    if (keyword.iskeyword(name) or name in _RESERVED or name.startswith("_") or name.endswith("_")
            or "__" in name or name.endswith("_kernel")):
        return name.replace("_", "_u") + "_"
    return name


def _check_target(target: str, allowed: tuple[str, ...]) -> None:
    if target not in allowed:
        raise ValueError(f"unknown target {target!r}: choose one of {', '.join(map(repr, allowed))}")


def _storage_shape(shape: tuple, vector: bool) -> tuple:
    """Scalar kernels keep a 0-d tensor as one element ``x[0]``; numpy handles 0-d natively."""
    return tuple(shape) if (shape or vector) else (1,)


class _Writer:
    """Python statements computing one scalar expression (``vector=False``) or one whole grid (numpy).

    :meth:`value` returns the text of an expression and writes, before it,
    the statements it needs (sum loops, branches, shared temporaries).
    """

    def __init__(self, shapes: dict, names: set[str], vector: bool, depth: int,
                 lane: tuple[str, int] | None = None):
        self.shapes, self.vector = shapes, vector
        self.names = set(names)  # every tensor and index name the code may meet: fresh ones avoid them
        self.lines: list[str] = []
        self.depth = depth
        self.known: list[dict] = [{}]   # per block: key of a node -> text valid in that block and below
        self.counter = 0
        self.repeated: set[int] = set()  # keys of the nodes that occur more than once
        self.keys: dict[int, tuple[Expr, int]] = {}  # id -> (node, key); the node is kept alive
        self.signatures: dict[tuple, int] = {}
        self.active: set[str] = set()  # index names bound by enclosing loops (Python has no block scope)
        # Lanes (numba only): the last output index runs innermost over a whole row, see _element_kernel.
        self.lane, self.width = lane if lane else (None, 0)
        self.declarations: list[str] = []

    def varies(self, node: Expr) -> bool:
        """Whether ``node``'s value differs between lanes (it depends on the lane index)."""
        return self.lane is not None and self.lane in free_indices(node)

    def store(self, name: str, text: str, lanes: bool, op: str = "=") -> str:
        """``name op text``, as a row of lanes when ``lanes``; returns how to read ``name`` back."""
        if not lanes:
            self.line(f"{name} {op} {text}")
            return name
        if op == "=" and f"{name} = np.empty({self.width})" not in self.declarations:
            self.declarations.append(f"{name} = np.empty({self.width})")
        lane = _py(self.lane)
        with self.block(f"for {lane} in range({self.width}):"):
            self.line(f"{name}[{lane}] {op} {text}")
        return f"{name}[{lane}]"

    def key(self, node: Expr) -> int:
        """A number per distinct subexpression (equal subtrees, equal numbers), found once per node object.

        The nodes' own hashes walk their whole subtree every time: on the
        deep, widely shared trees of derivatives that costs the cube of the
        depth, and recursion as deep as the tree.
        """
        pending = [node]
        while pending:
            current = pending[-1]
            if id(current) in self.keys:
                pending.pop()
                continue
            children = current.children()
            missing = [child for child in children if id(child) not in self.keys]
            if missing:
                pending += missing
                continue
            pending.pop()
            signature = (type(current), *_fields(current), *(self.keys[id(child)][1] for child in children))
            self.keys[id(current)] = (current, self.signatures.setdefault(signature, len(self.signatures)))
        return self.keys[id(node)][1]

    def share(self, root: Expr) -> None:
        """Compute operations that occur more than once in ``root`` (read as a tree) into temporaries."""
        order = _parents_first(root)
        count = {id(root): 1}  # occurrences in the tree, counted on the shared nodes, up to 2
        for node in order:
            for child in node.children():
                count[id(child)] = min(2, count.get(id(child), 0) + count[id(node)])
        total: dict[int, int] = {}
        for node in order:
            if isinstance(node, (Unary, Binary)):
                key = self.key(node)
                total[key] = min(2, total.get(key, 0) + count[id(node)])
        self.repeated |= {key for key, n in total.items() if n > 1}

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    @contextmanager
    def block(self, header: str):
        self.line(header)
        self.depth += 1
        self.known.append({})
        try:
            yield
        finally:
            self.known.pop()
            self.depth -= 1

    def temp(self, prefix: str) -> str:
        self.counter += 1
        return f"_{prefix}{self.counter}"

    # -- integer parts ----------------------------------------------------------------
    def affine(self, a: Affine, floor: bool = True) -> str:
        """``a`` as integer code; with a denominator, floor (or, ``floor=False``, ceiling) division."""
        parts = []
        for name, c in a.terms:
            term = _py(name) if abs(c) == 1 else f"{abs(c)} * {_py(name)}"
            parts.append(("- " if c < 0 else "+ ") + term)
        if a.constant or not parts:
            parts.append(("- " if a.constant < 0 else "+ ") + str(abs(a.constant)))
        text = " ".join(parts)
        text = text[2:] if text.startswith("+ ") else "-" + text[2:]
        if a.denominator == 1:
            return text
        if floor:
            return f"({text}) // {a.denominator}"
        return f"-(-({text}) // {a.denominator})"

    def bound(self, affines: tuple[Affine, ...], lower: bool) -> str:
        """``max`` of the ceilings of lower bounds, ``min`` of the floors of upper ones (eqs. 22-26)."""
        pick = ("np.maximum" if lower else "np.minimum") if self.vector else ("max" if lower else "min")
        texts = [self.affine(a, floor=not lower) for a in affines]
        out = texts[0]
        for text in texts[1:]:
            out = f"{pick}({out}, {text})"
        return out

    def condition(self, atoms: tuple[Atom, ...]) -> str:
        parts = []
        for atom in atoms:
            value = self.affine(atom.affine)
            if atom.inequality:
                parts.append(f"{value} >= 0")
            elif atom.modulus:
                parts.append(f"({value}) % {atom.modulus} == 0")
            else:
                parts.append(f"{value} == 0")
        if self.vector:
            return " & ".join(f"({p})" for p in parts)
        return " and ".join(parts)

    def element(self, name: str, indices) -> str:
        """``x[...]`` for index texts; numpy clips, since masked-out lanes still read."""
        shape = self.shapes[name]
        if not shape:
            return f"{_py(name)}[()]" if self.vector else f"{_py(name)}[0]"
        if self.vector:
            indices = [f"np.clip({i}, 0, {n - 1})" for i, n in zip(indices, shape)]
        return f"{_py(name)}[{', '.join(indices)}]"

    # -- values --------------------------------------------------------------------------
    def lookup(self, node: Expr) -> str | None:
        key = self.key(node)
        for known in reversed(self.known):
            if key in known:
                return known[key]
        return None

    def value(self, node: Expr) -> str:
        """The text of ``node``'s value; the statements it needs are written before it.

        Chains of operations are written bottom-up from an explicit stack: a
        sum of hundreds of terms must not recurse hundreds of levels. Sums and
        conditions open blocks of their own and recurse once per level.
        """
        pending = [(node, False)]
        while pending:
            current, expanded = pending.pop()
            if self.text(current) is not None:
                continue
            if isinstance(current, (Unary, Binary)) and not expanded:  # children first, left to right
                pending.append((current, True))
                pending.extend((child, False) for child in reversed(current.children()))
            else:
                self.write(current)
        return self.text(node)

    def text(self, node: Expr) -> str | None:
        """How to read ``node`` here: a constant, an element, or what was written for it; None if not yet."""
        if isinstance(node, Number):
            if self.vector:  # numpy scalars: 1e308 ** 7.25 is inf and 1.0 / 0 is inf, as in the reference
                return f"np.float64({float(node.value)!r})"
            return f"({float(node.value)!r})" if node.value < 0 else repr(float(node.value))
        if isinstance(node, Element):
            return self.element(node.name, [self.affine(a) for a in node.indices])
        return self.lookup(node)

    def write(self, node: Expr) -> None:
        """Write ``node``, whose operands (for an operation) are written already, and remember its text."""
        if isinstance(node, Sum):
            text = self.sum(node)
        elif isinstance(node, If):
            text = self.branch(node)
        elif isinstance(node, Unary):
            arg = self.value(node.arg)
            text = f"(-{arg})" if node.op == "neg" else f"{'np' if self.vector else 'math'}.{node.op}({arg})"
        elif isinstance(node, Binary):
            text = self.binary(node)
        else:
            raise TypeError(f"not an expression node: {node!r}")
        # A temporary for what is used twice, and where brackets nest deeply: Python's parser stops at
        # 200 levels (a chain of 200 additions is one expression).
        if (self.key(node) in self.repeated or _nesting(text) > _MAX_NESTING) and not text.startswith("_"):
            text = self.store(self.temp("t"), text, self.varies(node))
        self.known[-1][self.key(node)] = text

    def binary(self, node: Binary) -> str:
        left = self.value(node.left)
        exponent = node.right.value if isinstance(node.right, Number) else None
        if node.op == "**" and exponent in (2, 3):  # repeated products: no pow call (also for 2.0 and 3.0)
            if not left.startswith("_") and not left.isidentifier():
                left = self.store(self.temp("t"), left, self.varies(node.left))
            return "(" + " * ".join([left] * int(exponent)) + ")"
        return f"({left} {node.op} {self.value(node.right)})"

    def sum(self, node: Sum) -> str:
        total = self.temp("s")
        low, high = self.bound(node.lower, lower=True), self.bound(node.upper, lower=False)
        if node.index in self.active:  # a sum inside an adjoint reusing a liberated sum's index (scatter)
            fresh = fresh_name(node.index, self.names)
            node = Sum(fresh, node.lower, node.upper, substitute(node.body, {node.index: Affine.index(fresh)}))
        with self.binding(node.index):
            return self._sum(node, total, low, high)

    @contextmanager
    def binding(self, name: str):
        self.active.add(name)
        try:
            yield
        finally:
            self.active.discard(name)

    def _sum(self, node: Sum, total: str, low: str, high: str) -> str:
        index = _py(node.index)
        constant = all(a.is_constant for a in node.lower + node.upper)
        if not self.vector:
            lanes = self.varies(node)
            if lanes:
                self.declarations.append(f"{total} = np.empty({self.width})")
                self.line(f"{total}[:] = 0.0")
            else:
                self.line(f"{total} = 0.0")
            with self.block(f"for {index} in range({low}, {high} + 1):"):
                read = self.store(total, self.value(node.body), lanes, op="+=")
            return read
        self.line(f"{total} = np.zeros(_GRID)")
        if constant:
            with self.block(f"for {index} in range({low}, {high} + 1):"):
                self.line(f"{total} = {total} + {self.value(node.body)}")
            return total
        lo, hi = self.temp("lo"), self.temp("hi")
        self.line(f"{lo}, {hi} = {low}, {high}")
        with self.block(f"for {index} in range(np.min({lo}), np.max({hi}) + 1):"):
            body = self.value(node.body)
            self.line(f"{total} = {total} + np.where(({lo} <= {index}) & ({index} <= {hi}), {body}, 0.0)")
        return total

    def branch(self, node: If) -> str:
        condition = self.condition(node.condition)
        if self.vector:
            return f"np.where({condition}, {self.value(node.then)}, {self.value(node.otherwise)})"
        result, lanes = self.temp("c"), self.varies(node)
        with self.block(f"if {condition}:"):
            read = self.store(result, self.value(node.then), lanes)
        with self.block("else:"):
            self.store(result, self.value(node.otherwise), lanes)
        return read


_MAX_NESTING = 50  # brackets in one generated expression, well below Python's limit of 200


def _fields(node: Expr) -> tuple:
    """What tells ``node`` from another node of its class with equal children."""
    if isinstance(node, Number):
        return (node.value,)
    if isinstance(node, Element):
        return (node.name, node.indices)
    if isinstance(node, (Unary, Binary)):
        return (node.op,)
    if isinstance(node, Sum):
        return (node.index, node.lower, node.upper)
    if isinstance(node, If):
        return (node.condition,)
    raise TypeError(f"not an expression node: {node!r}")


def _parents_first(root: Expr) -> list[Expr]:
    """Every node object below ``root`` once, each after all the nodes that have it as a child."""
    done, order, pending = set(), [], [(root, False)]
    while pending:  # depth first; finished nodes in reverse are a topological order
        node, expanded = pending.pop()
        if expanded:
            order.append(node)
        elif id(node) not in done:
            done.add(id(node))
            pending.append((node, True))
            pending.extend((child, False) for child in node.children() if id(child) not in done)
    return order[::-1]


def _nesting(text: str) -> int:
    """How deeply brackets nest in ``text``."""
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    return deepest


def _unflatten(writer: _Writer, names: tuple[str, ...], shape: tuple, flat: str) -> None:
    """``i, j = divmod`` of the flat element number: row-major, like numpy."""
    stride = 1
    strides = []
    for n in reversed(shape):
        strides.append(stride)
        stride *= n
    for name, n, s in zip(names, shape, reversed(strides)):
        value = flat if s == 1 else f"{flat} // {s}"
        if s * n != stride:  # not the outermost index: wrap around
            value = f"{value} % {n}" if s == 1 else f"({value}) % {n}"
        writer.line(f"{_py(name)} = {value}")


def _element_kernel(fn: Function, target: str, name: str) -> list[str]:
    """A kernel ``name(args..., _out)`` writing every element of ``fn``'s output."""
    fn = apart(fn)  # f[x] = x[x]: the index x would overwrite the array x
    shape = tuple(fn.shapes[fn.name])
    size = int(np.prod(shape, dtype=object))
    params = ", ".join([_py(a) for a in fn.arguments] + ["_out"])
    body = hoist_invariants(fn.body)
    vector = target == "numpy"
    bound = set(fn.indices)
    head = {"numba": ['@numba.njit(parallel=True, cache=True, error_model="numpy")'],
            "cuda": ["@cuda.jit(cache=True)"], "numpy": []}[target]
    lines = head + [f"def {name}({params}):"]
    if vector:
        writer = _Writer(fn.shapes, all_names(fn), vector=True, depth=1)
        writer.active |= bound
        if shape:
            writer.line(f"{', '.join(_py(i) for i in fn.indices)}, = np.indices(_GRID, sparse=True)")
        writer.share(body)
        value = writer.value(body)
        writer.line(f"_out[...] = {value}")
        return lines + [f"    _GRID = {shape!r}"] + writer.lines
    lane = _lane(fn, body) if target == "numba" else None
    rows = size // lane[1] if lane else size
    writer = _Writer(fn.shapes, all_names(fn), vector=False, depth=2, lane=lane)
    writer.active |= bound
    if target == "numba":
        # prange's index is unsigned: index arithmetic such as max(-i, 0) needs a signed one
        lines += [f"    for _element in numba.prange({rows}):", "        _flat = np.int64(_element)"]
    else:
        lines += ["    _flat = cuda.grid(1)", f"    if _flat < {size}:"]
    _unflatten(writer, fn.indices[:-1] if lane else fn.indices, shape[:-1] if lane else shape, "_flat")
    top = len(writer.lines)
    writer.share(body)
    value = writer.value(body)
    where = ", ".join(_py(i) for i in fn.indices) if shape else "0"
    if lane:
        with writer.block(f"for {_py(lane[0])} in range({lane[1]}):"):
            writer.line(f"_out[{where}] = {value}")
    else:
        writer.line(f"_out[{where}] = {value}")
    writer.lines[top:top] = ["    " * 2 + d for d in writer.declarations]
    return lines + writer.lines


def _lane(fn: Function, body: Expr) -> tuple[str, int] | None:
    """The last output index as lanes, where that reads memory more contiguously than any sum.

    Then a CPU thread computes a whole row: each sum loop runs once per row
    and the per-element work is an inner loop over the last index, whose
    reads (``b[j; k]`` for consecutive ``k``) are contiguous and whose
    accumulators are independent, so the compiler can vectorise it. Each
    element still adds its terms in the same order: the same floats as
    element by element. Only where the loops' bounds and the conditions do
    not depend on the last index, and not for a 1-D output (one row would
    leave nothing to run in parallel).
    """
    if len(fn.indices) < 2:
        return None
    lane = fn.indices[-1]
    nodes = list(postorder(body))
    sums = [node for node in nodes if isinstance(node, Sum)]
    for node in nodes:
        if isinstance(node, Sum) and any(lane in a.names for a in node.lower + node.upper):
            return None
        if isinstance(node, If) and any(lane in atom.affine.names for atom in node.condition):
            return None
    if not sums or memory_step(body, {lane: 1}, fn.shapes) >= min(
            memory_step(body, {s.index: 1}, fn.shapes) for s in sums):
        return None
    return lane, fn.shapes[fn.name][-1]


def _module_functions(grads) -> tuple[dict[str, Function], dict[str, Function]]:
    """The element kernels of a gradient module by name: those that run first (the forward, the
    intermediates), and one per gradient (gather targets only). The derivation names every tensor
    apart (:func:`tensoradbook.ad.derive`), so the kernels' names differ too."""
    first = {f"{_py(g.name)}_kernel": g for g in [grads.function, *grads.intermediates.values()]}
    return first, {f"{_py(g.name)}_kernel": g for g in grads.functions.values()}


def _scatter_reads(grads) -> dict[str, tuple]:
    """Name -> shape of each tensor the scatter kernel reads: those in the occurrences' adjoints
    (arguments, the adjoint ``df``, ``f`` and the intermediates), in order of appearance. Not the
    gradients' reads: a gradient that is 0 on its whole box reads nothing, its adjoint does."""
    fn = grads.function
    output = tuple(fn.shapes[fn.name])
    shapes = {**fn.shapes, grads.adjoint_name: output, **dict.fromkeys(grads.intermediates, output)}
    reads = {}
    for parts in grads.contributions.values():
        for part in parts:
            for node in postorder(part.adjoint):
                if isinstance(node, Element):
                    reads.setdefault(node.name, tuple(shapes[node.name]))
    return reads


def _scatter_kernel(grads, target: str) -> list[str]:
    """Eq. 40 as written: for every forward element ``alpha`` (and liberated sum index), add each
    occurrence's adjoint into the gradient element it reads. Races unless atomic, hence serial on the CPU."""
    fn = grads.function
    shape = tuple(fn.shapes[fn.name])
    size = int(np.prod(shape, dtype=object))
    shapes = _scatter_reads(grads)
    params = ", ".join(_py(a) for a in [*shapes, *(g.name for g in grads.functions.values())])
    shapes.update({g.name: g.shapes[g.name] for g in grads.functions.values()})
    names = all_names(fn) | set(shapes)
    writer = _Writer(shapes, names, vector=False, depth=2)
    if target == "numba-scatter":
        lines = ['@numba.njit(cache=True, error_model="numpy")', f"def scatter({params}):",
                 f"    for _flat in range({size}):"]
    else:
        lines = ["@cuda.jit(cache=True)", f"def scatter({params}):", "    _flat = cuda.grid(1)",
                 f"    if _flat < {size}:"]
    _unflatten(writer, fn.indices, shape, "_flat")
    writer.active |= set(fn.indices)
    for name, parts in grads.contributions.items():
        gradient = grads.functions[name].name
        for part in parts:
            inside = " inside the sums over " + ", ".join(s.index for s in part.scope) if part.scope else ""
            writer.line(f"# {expr_text(part.element)}{inside}")
            with ExitStack() as loops:
                for s in part.scope:
                    low, high = writer.bound(s.lower, lower=True), writer.bound(s.upper, lower=False)
                    loops.enter_context(writer.block(f"for {_py(s.index)} in range({low}, {high} + 1):"))
                    loops.enter_context(writer.binding(s.index))
                writer.share(part.adjoint)
                value = writer.value(part.adjoint)
                index = [writer.affine(a) for a in part.element.indices]
                if target == "cuda-scatter":
                    # one index plain (NVVM rejects a 1-tuple for a 1-D array), several as a tuple
                    where = index[0] if len(index) == 1 else f"({', '.join(index)})" if index else "0"
                    writer.line(f"cuda.atomic.add({_py(gradient)}, {where}, {value})")
                else:
                    writer.line(f"{writer.element(gradient, index)} += {value}")
    if not writer.lines:  # a scalar function that reads no argument: the loop still needs a body
        writer.line("pass")
    return lines + writer.lines


def _header(fns: list[Function], target: str) -> list[str]:
    lines = [f"# Generated by tensoradbook ({target} target, format {_FORMAT}) from:"]
    lines += [f"#   {to_text(fn)}" for fn in fns]
    lines += ["# Do not edit: the cache regenerates it from the functions above.", ""]
    lines += {"numpy": ["import numpy as np"],
              "numba": ["import math", "", "import numba", "import numpy as np"],
              "cuda": ["import math", "", "import numpy as np", "from numba import cuda"]}[target.split("-")[0]]
    if target.startswith("cuda"):
        lines += ["", f"THREADS = {THREADS_PER_BLOCK}"]
    return lines + ["", ""]


def _allocate(name: str, shape: tuple, target: str, zero: bool = False) -> str:
    shape = _storage_shape(shape, target == "numpy")
    if target.startswith("cuda"):
        return f"{name} = cuda.to_device(np.zeros({shape!r}))" if zero else f"{name} = cuda.device_array({shape!r})"
    return f"{name} = np.{'zeros' if zero else 'empty'}({shape!r})"


def _call(kernel: str, fn: Function, out: str, target: str) -> str:
    args = ", ".join([_py(a) for a in fn.arguments] + [out])
    if target.startswith("cuda"):
        size = int(np.prod(fn.shapes[fn.name], dtype=object))
        return f"{kernel}[{-(-size // THREADS_PER_BLOCK)}, THREADS]({args})"
    return f"{kernel}({args})"


def _forward_entry(fn: Function, target: str) -> list[str]:
    base = target.split("-")[0]
    lines = [f"def forward({', '.join(_py(a) for a in fn.arguments)}):"]
    if base == "numpy":
        lines.append("    with np.errstate(all=\"ignore\"):  # masked-out lanes may divide by zero harmlessly")
        indent = "        "
    else:
        indent = "    "
    lines.append(indent + _allocate(_py(fn.name), fn.shapes[fn.name], base))
    lines.append(indent + _call(f"{_py(fn.name)}_kernel", fn, _py(fn.name), base))
    return lines + [f"    return {_py(fn.name)}", "", ""]


def function_source(fn: Function, target: str = "numba") -> str:
    """The module behind :meth:`Function.compile`: ``<name>_kernel`` and ``forward(*arguments)``."""
    _check_target(target, GATHER_TARGETS)
    lines = _header([fn], target)
    lines += _element_kernel(fn, target, f"{_py(fn.name)}_kernel") + ["", ""]
    lines += _forward_entry(fn, target)
    return "\n".join(lines).rstrip() + "\n"


def gradients_source(grads, target: str = "numba") -> str:
    """The module behind :meth:`Gradients.compile`: the forward kernel, the gradient kernels (gather,
    one per argument) or one scatter kernel, and ``gradients(*arguments, df)`` returning a dict."""
    _check_target(target, TARGETS)
    fn = grads.function
    base = target.split("-")[0]
    intermediates = list(grads.intermediates.values())
    lines = _header([fn, *intermediates, *grads.functions.values()], target)
    first, gradients = _module_functions(grads)
    for name, g in first.items():
        lines += _element_kernel(g, base, name) + ["", ""]
    if target in SCATTER_TARGETS:
        lines += _scatter_kernel(grads, target) + ["", ""]
    else:
        for name, g in gradients.items():
            lines += _element_kernel(g, target, name) + ["", ""]
    lines += _forward_entry(fn, target)
    adjoint = _py(grads.adjoint_name)
    lines.append(f"def gradients({', '.join([_py(a) for a in fn.arguments] + [adjoint])}):")
    indent = "    "
    if base == "numpy":
        lines.append("    with np.errstate(all=\"ignore\"):")
        indent = "        "
    lines.append(indent + f"{_py(fn.name)} = forward({', '.join(_py(a) for a in fn.arguments)})")
    for g in intermediates:  # output-shaped adjoints, computed once (Gradients.simplified)
        lines.append(indent + _allocate(_py(g.name), g.shapes[g.name], base))
        lines.append(indent + _call(f"{_py(g.name)}_kernel", g, _py(g.name), base))
    outputs = {name: _py(g.name) for name, g in grads.functions.items()}
    for name, g in grads.functions.items():
        lines.append(indent + _allocate(outputs[name], g.shapes[g.name], base, zero=target in SCATTER_TARGETS))
    if target in SCATTER_TARGETS:
        args = ", ".join([_py(a) for a in _scatter_reads(grads)] + list(outputs.values()))
        launch = f"[{-(-int(np.prod(fn.shapes[fn.name], dtype=object)) // THREADS_PER_BLOCK)}, THREADS]"
        lines.append(indent + f"scatter{launch if base == 'cuda' else ''}({args})")
    else:
        for name, g in grads.functions.items():
            lines.append(indent + _call(f"{outputs[name]}_kernel", g, outputs[name], base))
    lines.append(f"    return {{{', '.join(f'{name!r}: {out}' for name, out in outputs.items())}}}")
    return "\n".join(lines).rstrip() + "\n"


# -- compiling and caching -----------------------------------------------------------------

_MODULES: dict[str, object] = {}


def cache_directory() -> Path:
    """Where generated modules (and, beside them, Numba's compiled code) are kept."""
    configured = os.environ.get("TENSORADBOOK_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tensoradbook" / "kernels"


def load_module(source: str):
    """Import generated ``source`` from a module file named by its hash (written once, then reused)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    if digest in _MODULES:
        return _MODULES[digest]
    directory = cache_directory()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home: a per-user temporary directory still lets numba cache
        directory = Path(tempfile.gettempdir()) / f"tensoradbook-kernels-{os.getuid()}"
        directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"k_{digest}.py"
    if not path.exists() or path.read_text(encoding="utf-8") != source:
        # Write aside, then link into place only if no other process did first: a reader never sees
        # half a module, and an existing file keeps its time stamp, on which Numba's cache depends.
        handle, partial = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(source)
        try:
            if path.exists():  # a different text under the same hash prefix: replace it
                os.replace(partial, path)
            else:
                os.link(partial, path)
        except FileExistsError:
            pass
        finally:
            if os.path.exists(partial):
                os.unlink(partial)
    name = f"tensoradbook_kernels.k_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _MODULES[digest] = module
    return module


def cuda_problem() -> str:
    """Why the ``"cuda"`` targets cannot run in this process, or ``""`` (a GPU, or the simulator)."""
    try:
        from numba import config, cuda
    except ImportError as error:  # numba-cuda missing
        return f"target 'cuda' needs numba-cuda ({error})"
    if config.ENABLE_CUDASIM or cuda.is_available():
        return ""
    return ("target 'cuda' needs an NVIDIA GPU, or the CUDA simulator: set the environment "
            "variable NUMBA_ENABLE_CUDASIM=1 before numba is first imported")


def _require_cuda() -> None:
    problem = cuda_problem()
    if problem:
        raise RuntimeError(problem)


def _arrays(fn: Function, args, vector: bool, adjoint: tuple[str, object] | None = None) -> list[np.ndarray]:
    """The arguments of ``fn`` in its order, then the adjoint ``(name, value)`` if given, as C-contiguous
    float64 arrays, checked by :meth:`Function.argument_arrays` (real numbers, declared shapes)."""
    arrays = fn.argument_arrays(args, adjoint)
    return [np.ascontiguousarray(a).reshape(_storage_shape(a.shape, vector)) for a in arrays.values()]


class CompiledFunction:
    """``fwd(args) -> f`` for one target; ``.source`` and ``.path`` show the generated module."""

    def __init__(self, fn: Function, target: str):
        _check_target(target, GATHER_TARGETS)
        if target == "cuda":
            _require_cuda()
        self.function, self.target = fn, target
        self.source = function_source(fn, target)
        self.module = load_module(self.source)
        self.path = self.module.__file__

    def __call__(self, args: dict) -> np.ndarray:
        arrays = _arrays(self.function, args, self.target == "numpy")
        shape = tuple(self.function.shapes[self.function.name])
        if self.target == "cuda":
            from numba import cuda

            return self.module.forward(*map(cuda.to_device, arrays)).copy_to_host().reshape(shape)
        return self.module.forward(*arrays).reshape(shape)


class CompiledGradients:
    """``grad(args, df) -> {"a": dA, ...}`` for one target; ``grad.forward(args)`` is ``f`` alone."""

    def __init__(self, grads, target: str):
        _check_target(target, TARGETS)
        if target.startswith("cuda"):
            _require_cuda()
        self.gradients, self.target = grads, target
        self.source = gradients_source(grads, target)
        self.module = load_module(self.source)
        self.path = self.module.__file__

    def _inputs(self, args, adjoint: tuple[str, object] | None = None) -> list:
        arrays = _arrays(self.gradients.function, args, self.target == "numpy", adjoint)
        if self.target.startswith("cuda"):
            from numba import cuda

            arrays = [cuda.to_device(a) for a in arrays]
        return arrays

    def _host(self, array, shape) -> np.ndarray:
        array = array.copy_to_host() if self.target.startswith("cuda") else array
        return array.reshape(shape)

    def forward(self, args: dict) -> np.ndarray:
        fn = self.gradients.function
        return self._host(self.module.forward(*self._inputs(args)), tuple(fn.shapes[fn.name]))

    def __call__(self, args: dict, df) -> dict[str, np.ndarray]:
        fn = self.gradients.function
        out = self.module.gradients(*self._inputs(args, (self.gradients.adjoint_name, df)))
        return {name: self._host(out[name], tuple(fn.shapes[name])) for name in out}

    # as Gradients.evaluate, so tensoradbook.check_gradients(fn, grads=compiled) checks the kernels
    evaluate = __call__


def compile_function(fn: Function, target: str = "numba") -> CompiledFunction:
    return CompiledFunction(fn, target)


def compile_gradients(grads, target: str = "numba") -> CompiledGradients:
    return CompiledGradients(grads, target)


def compile_ptx(subject, target: str = "cuda", cc: tuple[int, int] = (7, 5)) -> dict[str, str]:
    """PTX of every CUDA kernel generated for a :class:`Function` or :class:`Gradients`, by NVVM, no GPU needed.

    ``target`` is ``"cuda"`` or ``"cuda-scatter"`` (gradients only). Needs
    the ``cuda`` extra (``numba-cuda[cu13]``) and the real CUDA target, not the
    simulator: the simulator runs the kernels as Python, so only this shows
    that Numba can type and compile them for a GPU.
    """
    import inspect

    from numba import config, float64

    if config.ENABLE_CUDASIM:
        raise RuntimeError("compile_ptx needs the real CUDA target: unset NUMBA_ENABLE_CUDASIM")
    from numba import cuda

    if isinstance(subject, Function):
        _check_target(target, ("cuda",))
        source = function_source(subject, target)
    else:
        _check_target(target, ("cuda", "cuda-scatter"))
        grads = subject.simplified
        source = gradients_source(grads, target)
    if isinstance(subject, Function):
        kernels = {f"{_py(subject.name)}_kernel": subject}
    else:
        first, gradients = _module_functions(grads)
        kernels = {**first, **gradients}
    shapes, outputs = {}, {}
    for name, fn in kernels.items():
        shapes.update({_py(a): tuple(fn.shapes[a]) for a in fn.arguments})
        outputs[name] = tuple(fn.shapes[fn.name])
    if not isinstance(subject, Function):
        shapes.update({_py(a): shape for a, shape in _scatter_reads(grads).items()})
        shapes.update({_py(g.name): tuple(g.shapes[g.name]) for g in grads.functions.values()})
    module = load_module(source)
    ptx = {}
    for name in [*outputs, "scatter"]:
        kernel = getattr(module, name, None)
        if kernel is None:
            continue
        signature = []
        for parameter in inspect.signature(kernel.py_func).parameters:
            shape = _storage_shape(outputs[name] if parameter == "_out" else shapes[parameter], vector=False)
            signature.append(float64[(slice(None),) * (len(shape) - 1) + (slice(None, None, 1),)])
        ptx[name] = cuda.compile_ptx(kernel.py_func, tuple(signature), cc=cc)[0]
    return ptx

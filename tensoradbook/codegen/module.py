"""Generated modules (report sec. 6): a function's kernel, or its gradients' kernels, as Python source.

The report's point (secs. 5-6) is that each gradient element is a closed-form expression of its own:
a kernel can give every element to one thread, with no atomics and no temporaries. This module writes
that kernel for any target (:mod:`tensoradbook.codegen.targets`), with the target's printer
(:mod:`tensoradbook.codegen.printer`): sums become loops with their ``max``/``min`` bounds, conditions
become branches (masks in numpy), repeated subexpressions are computed once. Gradient modules compute
the forward result ``f`` once and their kernels read it
(:attr:`tensoradbook.ad.derive.Gradients.simplified`); the scatter targets add one kernel of eq. 40.
"""

from __future__ import annotations

from contextlib import ExitStack

from ..ad.derive import Gradients
from ..lang.expr import Element, Expr, If, Sum, memory_step, postorder
from ..lang.function import Function
from ..lang.names import all_names, apart
from ..lang.printer import expr_text, to_text
from ..lang.simplify import hoist_invariants
from .printer import py_name
from .targets import GATHER_TARGETS, TARGETS, Target, size_of, target_named

FORMAT = 1  # bump when the generated code changes meaning: new hashes, new module files


def _unflatten(writer, names: tuple[str, ...], shape: tuple, flat: str) -> None:
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
        writer.line(f"{py_name(name)} = {value}")


def element_kernel(fn: Function, target: Target, name: str) -> list[str]:
    """A kernel ``name(args..., _out)`` writing every element of ``fn``'s output."""
    fn = apart(fn)  # f[x] = x[x]: the index x would overwrite the array x
    shape = tuple(fn.shapes[fn.name])
    params = ", ".join([py_name(a) for a in fn.arguments] + ["_out"])
    body = hoist_invariants(fn.body)
    lines = [*target.kernel_decorator, f"def {name}({params}):"]
    if target.vector:
        writer = target.printer(fn.shapes, all_names(fn), depth=1)
        writer.active |= set(fn.indices)
        if shape:
            writer.line(f"{', '.join(py_name(i) for i in fn.indices)}, = np.indices(_GRID, sparse=True)")
        writer.share(body)
        writer.line(f"_out[...] = {writer.value(body)}")
        return lines + [f"    _GRID = {shape!r}"] + writer.lines
    row = lane(fn, body) if target.lanes else None
    writer = target.printer(fn.shapes, all_names(fn), depth=2, lane=row)
    writer.active |= set(fn.indices)
    lines += target.element_loop(size_of(shape) // row[1] if row else size_of(shape))
    _unflatten(writer, fn.indices[:-1] if row else fn.indices, shape[:-1] if row else shape, "_flat")
    top = len(writer.lines)
    writer.share(body)
    value = writer.value(body)
    where = ", ".join(py_name(i) for i in fn.indices) if shape else "0"
    if row:
        with writer.block(f"for {py_name(row[0])} in range({row[1]}):"):
            writer.line(f"_out[{where}] = {value}")
    else:
        writer.line(f"_out[{where}] = {value}")
    writer.lines[top:top] = ["    " * 2 + d for d in writer.declarations]
    return lines + writer.lines


def lane(fn: Function, body: Expr) -> tuple[str, int] | None:
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
    last = fn.indices[-1]
    nodes = list(postorder(body))
    sums = [node for node in nodes if isinstance(node, Sum)]
    for node in nodes:
        if isinstance(node, Sum) and any(last in a.names for a in node.lower + node.upper):
            return None
        if isinstance(node, If) and any(last in atom.affine.names for atom in node.condition):
            return None
    if not sums or memory_step(body, {last: 1}, fn.shapes) >= min(
            memory_step(body, {s.index: 1}, fn.shapes) for s in sums):
        return None
    return last, fn.shapes[fn.name][-1]


def module_functions(grads: Gradients) -> tuple[dict[str, Function], dict[str, Function]]:
    """The element kernels of a gradient module by name: those that run first (the forward, the
    intermediates), and one per gradient (gather targets only). The derivation names every tensor
    apart (:func:`tensoradbook.ad.derive`), so the kernels' names differ too."""
    first = {f"{py_name(g.name)}_kernel": g for g in [grads.function, *grads.intermediates.values()]}
    return first, {f"{py_name(g.name)}_kernel": g for g in grads.functions.values()}


def scatter_reads(grads: Gradients) -> dict[str, tuple]:
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


def scatter_kernel(grads: Gradients, target: Target) -> list[str]:
    """Eq. 40 as written: for every forward element ``alpha`` (and liberated sum index), add each
    occurrence's adjoint into the gradient element it reads. Races unless atomic, hence serial on the CPU."""
    fn = grads.function
    shape = tuple(fn.shapes[fn.name])
    shapes = scatter_reads(grads)
    params = ", ".join(py_name(a) for a in [*shapes, *(g.name for g in grads.functions.values())])
    shapes.update({g.name: g.shapes[g.name] for g in grads.functions.values()})
    writer = target.printer(shapes, all_names(fn) | set(shapes), depth=2)
    lines = [*target.scatter_decorator, f"def scatter({params}):", *target.scatter_loop(size_of(shape))]
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
                    loops.enter_context(writer.block(f"for {py_name(s.index)} in range({low}, {high} + 1):"))
                    loops.enter_context(writer.binding(s.index))
                writer.share(part.adjoint)
                value = writer.value(part.adjoint)
                index = [writer.affine(a) for a in part.element.indices]
                writer.line(target.accumulate(py_name(gradient), writer.element(gradient, index), index, value))
    if not writer.lines:  # a scalar function that reads no argument: the loop still needs a body
        writer.line("pass")
    return lines + writer.lines


def _header(fns: list[Function], target: Target) -> list[str]:
    lines = [f"# Generated by tensoradbook ({target.name} target, format {FORMAT}) from:"]
    lines += [f"#   {to_text(fn)}" for fn in fns]
    lines += ["# Do not edit: the cache regenerates it from the functions above.", ""]
    return lines + list(target.imports) + ["", ""]


def _launch(target: Target, kernel: str, fn: Function, out: str) -> str:
    args = ", ".join([py_name(a) for a in fn.arguments] + [out])
    return target.call(kernel, args, size_of(fn.shapes[fn.name]))


def _forward_entry(fn: Function, target: Target) -> list[str]:
    body = [target.allocate(py_name(fn.name), fn.shapes[fn.name]),
            _launch(target, f"{py_name(fn.name)}_kernel", fn, py_name(fn.name))]
    return [f"def forward({', '.join(py_name(a) for a in fn.arguments)}):", *target.guarded(body),
            f"    return {py_name(fn.name)}", "", ""]


def function_source(fn: Function, target: str = "numba") -> str:
    """The module behind :meth:`Function.compile`: ``<name>_kernel`` and ``forward(*arguments)``."""
    kind = target_named(target, GATHER_TARGETS)
    lines = _header([fn], kind)
    lines += element_kernel(fn, kind, f"{py_name(fn.name)}_kernel") + ["", ""]
    lines += _forward_entry(fn, kind)
    return "\n".join(lines).rstrip() + "\n"


def gradients_source(grads: Gradients, target: str = "numba") -> str:
    """The module behind :meth:`Gradients.compile`: the forward kernel, the gradient kernels (gather,
    one per argument) or one scatter kernel, and ``gradients(*arguments, df)`` returning a dict."""
    kind = target_named(target, TARGETS)
    fn = grads.function
    intermediates = list(grads.intermediates.values())
    lines = _header([fn, *intermediates, *grads.functions.values()], kind)
    first, gradients = module_functions(grads)
    for name, g in first.items():
        lines += element_kernel(g, kind, name) + ["", ""]
    if kind.scatter:
        lines += scatter_kernel(grads, kind) + ["", ""]
    else:
        for name, g in gradients.items():
            lines += element_kernel(g, kind, name) + ["", ""]
    lines += _forward_entry(fn, kind)
    adjoint = py_name(grads.adjoint_name)
    lines.append(f"def gradients({', '.join([py_name(a) for a in fn.arguments] + [adjoint])}):")
    body = [f"{py_name(fn.name)} = forward({', '.join(py_name(a) for a in fn.arguments)})"]
    for g in intermediates:  # output-shaped adjoints, computed once (Gradients.simplified)
        body.append(kind.allocate(py_name(g.name), g.shapes[g.name]))
        body.append(_launch(kind, f"{py_name(g.name)}_kernel", g, py_name(g.name)))
    outputs = {name: py_name(g.name) for name, g in grads.functions.items()}
    for name, g in grads.functions.items():
        body.append(kind.allocate(outputs[name], g.shapes[g.name], zero=kind.scatter))
    if kind.scatter:
        args = ", ".join([py_name(a) for a in scatter_reads(grads)] + list(outputs.values()))
        body.append(kind.call("scatter", args, size_of(fn.shapes[fn.name])))
    else:
        for name, g in grads.functions.items():
            body.append(_launch(kind, f"{outputs[name]}_kernel", g, outputs[name]))
    lines += kind.guarded(body)
    lines.append(f"    return {{{', '.join(f'{name!r}: {out}' for name, out in outputs.items())}}}")
    return "\n".join(lines).rstrip() + "\n"

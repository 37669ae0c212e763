"""Generated modules (report sec. 6): a function's kernel, or its gradients' kernels, as Python source.

The report's point (secs. 5-6) is that each gradient element is a closed-form expression of its own:
a kernel can give every element to one thread, with no atomics and no temporaries. This module writes
that kernel for any target (:mod:`tensoradbook.codegen.targets`), with the target's printer
(:mod:`tensoradbook.codegen.printer`): sums become loops with their ``max``/``min`` bounds, conditions
become branches (masks in numpy), repeated subexpressions are computed once. Gradient modules compute
the forward result ``f`` once and their kernels read it
(:attr:`tensoradbook.ad.derive.Gradients.simplified`); the scatter targets add one kernel of eq. 40.

A program of several definitions (:class:`~tensoradbook.lang.program.Program`) is one kernel per
definition, run in order; its gradient module runs the sweep of :mod:`tensoradbook.ad.program`: the
forward values once, kept on the target, then per definition its adjoint (one gather kernel summing
its consumers' contributions) or, for the scatter targets, one scatter kernel per definition adding
into the adjoints of what it reads. Every gradient module has ``forward(*inputs)``,
``gradients(*inputs, df)``, and ``_values(*inputs)`` and ``_backward(*inputs, *values, df)``, its two
halves: the backward pass reads forward values given to it (names with ``_`` first are the module's
own, never a tensor's).

Planning here decides once, and writes down as :mod:`.kernel_ir` nodes, what :mod:`.render` then writes for
the target: :func:`plan_module` (BLAS products, gathers, scratch arrays, the parts the backward pass reads
again), :func:`lane` and :func:`_blocks` (rows of lanes and their blocks), :func:`_parallel`, :func:`broadcasts`
(numpy over views), then the kernels (:func:`element_kernel`, :func:`broadcast_kernel`, :func:`scatter_kernel`)
and the entry points (:func:`_compute` per tensor; the backward pass by :func:`_gather_pass` or
:func:`_scatter_pass`, the one question of the target's that picks between the two forms).
:func:`function_module` and :func:`gradients_module` give the plan; :func:`function_source` and
:func:`gradients_source` its source.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..ad.derive import Gradients
from ..ad.program import ProgramGradients
from ..lang.evaluate import typical_terms
from ..lang.expr import Binary, Element, Expr, If, Select, Sum, Unary, memory_step, postorder
from ..lang.function import Function
from ..lang.names import all_names, apart
from ..lang.program import Program, definitions_of
from ..lang.printer import to_text
from ..lang.simplify import decided_on, gates_as_bounds
from .contraction import (Contraction, contraction_of, gathered_contraction, inner_contraction, part_key,
                          plain_index, reads_plainly, split_contractions)
from .kernel_ir import (Alias, Allocate, ArraysTable, BlasProduct, BroadcastKernel, ElementLoop, Entry, FillKept,
                        GradientsEntry, GuardedProduct, Header, Kernel, Launch, Module, ReadKept, Return,
                        ReturnGradients, RowBlock, ScatterLoop, ScratchSetup, Statements, Store, Unflatten, Var)
from .fusion import fuse
from .printer import BroadcastPrinter, KernelPrinter, Lanes, py_name
from .render import render
from .targets import GATHER_TARGETS, TARGETS, Target, size_of, target_named
from .thresholds import BLAS_WORK, LANE_BLOCK, MIN_LANES, MIN_ROWS, PARALLEL_WORK, VECTOR_WORK


def element_kernel(fn: Function, target: Target, name: str) -> Kernel:
    """A kernel ``name(args..., _out)`` writing every element of ``fn``'s output."""
    fn = apart(fn)  # f[x] = x[x]: the index x would overwrite the array x
    shape = tuple(fn.shapes[fn.name])
    body = kernel_body(fn)
    row = lane(fn, body) if target.lanes else None
    count, blocks = _iterations(fn, row), _blocks(fn, row)
    parallel = _parallel(fn, row)
    indices = tuple(py_name(i) for i in fn.indices)
    unflatten: tuple = (Unflatten(fn.indices[:-1] if row else fn.indices, shape[:-1] if row else shape, blocks),)
    if blocks > 1:  # the row's lanes a block at a time: element _flat is block _flat % blocks of its row
        unflatten += (RowBlock(blocks, LANE_BLOCK.value, shape[-1]),)
        row = Lanes(row.name, LANE_BLOCK.value, Var("_first"), Var("_stop"), row.extent, base="_first")
    writer = target.printer(fn.shapes, all_names(fn), lane=row)
    printed = _printed(writer, fn.indices, body, Store(indices, row=row, shape=shape))
    loop = ElementLoop(count, parallel, indices, shape, unflatten, (printed,))
    return Kernel(name, (*(py_name(a) for a in fn.arguments), "_out"), _parameter_shapes(fn), parallel,
                  compares(body), (loop,))


def _printed(writer: KernelPrinter, bound: tuple[str, ...], body: Expr, store: Store) -> Statements:
    """The statements computing ``body`` (its shared subexpressions first) inside loops binding ``bound``, then
    ``store`` of its value."""
    writer.active |= set(bound)
    writer.share(body)
    value = writer.value(body)
    return Statements((*writer.statements, replace(store, value=value)), tuple(writer.declarations),
                      writer.lanes is not None)


def _parameter_shapes(fn: Function) -> tuple[tuple, ...]:
    """The shapes of an element kernel's parameters: its arguments', then its output's."""
    return tuple(tuple(fn.shapes[a]) for a in (*fn.arguments, fn.name))


def compares(node: Expr) -> bool:
    """Whether ``node`` compares values (a max or min reduction, a select): computed values compared must round
    as the reference's and as the forward kernel's do, which a kernel allowed to regroup operations does not."""
    return any(isinstance(part, Select) or isinstance(part, Sum) and part.op != "sum" for part in postorder(node))


def broadcasts(fn: Function, target: Target) -> bool:
    """Whether ``fn`` runs as numpy over views of its arguments (:func:`broadcast_kernel`): an element-wise body
    (no sum, condition or select) of at least :data:`~.thresholds.VECTOR_WORK` elements with a function numpy
    evaluates faster than the target's kernels (``target.numpy_faster``: softplus's ``exp`` and ``log``, softmax's
    ``exp``), every read at plain indices in the output's order over whole dimensions, or a scalar."""
    shape = tuple(fn.shapes[fn.name])
    nodes = list(postorder(fn.body))
    if not target.numpy_faster or not shape or any(isinstance(node, (Sum, If, Select)) for node in nodes):
        return False
    if not any(isinstance(node, (Unary, Binary)) and node.op in target.numpy_faster for node in nodes):
        return False
    if not VECTOR_WORK.reached(size_of(shape)):
        return False
    extents = dict(zip(fn.indices, shape))
    for node in (node for node in nodes if isinstance(node, Element) and fn.shapes[node.name]):
        if not reads_plainly(node, fn.shapes, extents):
            return False
        positions = [fn.indices.index(plain_index(index)) for index in node.indices]
        if positions != sorted(set(positions)):
            return False
    return True


def broadcast_kernel(fn: Function, name: str) -> BroadcastKernel:
    """``name(args..., _out)`` as numpy over views of the arguments (:class:`~.printer.BroadcastPrinter`), for a
    function that :func:`broadcasts`. numpy's functions are its own, not the kernels', and give the same bits on
    every run, as the reference evaluator's do."""
    fn = apart(fn)
    printed = _printed(BroadcastPrinter(fn.shapes, all_names(fn), output=fn.indices), (), fn.body, Store(None))
    return BroadcastKernel(name, (*(py_name(a) for a in fn.arguments), "_out"), (printed,))


def kernel_body(fn: Function) -> Expr:
    """What a kernel computes for ``fn``: its body with the conditions decided on the output's box gone (a
    gradient's ``if {dx_3 >= 0 and 63 - dx_3 >= 0} ...``) and the gates of sums as their bounds
    (:func:`~tensoradbook.lang.simplify.gates_as_bounds`): the same terms, so the same values, infinities and NaNs.
    No factor moves out of a sum here: ``c * sum_k x[k]`` is not ``sum_k c * x[k]`` where ``c`` is inf and an
    ``x[k]`` is 0; the simplified gradients (:attr:`~tensoradbook.ad.derive.Gradients.simplified`) are hoisted as
    functions of their own, which their reference evaluates as they are."""
    box = dict(zip(fn.indices, ((0, n - 1) for n in fn.shapes[fn.name])))
    return gates_as_bounds(decided_on(fn.body, box))


def _blocks(fn: Function, row: Lanes | None) -> int:
    """Into how many blocks of :data:`LANE_BLOCK` lanes a kernel cuts each row: one, unless it has fewer rows
    than :data:`MIN_ROWS` and work that pays for threads (a bias's gradient, ``db[j] = sum{i} (dy[i; j])``, is
    a single row: its blocks run in parallel, each reading contiguous pieces of the rows of ``dy``)."""
    if row is None or MIN_ROWS.reached(size_of(fn.shapes[fn.name]) // row.width):
        return 1
    if not PARALLEL_WORK.reached(typical_terms(fn)):
        return 1
    return -(-row.width // LANE_BLOCK.value) if LANE_BLOCK.exceeded(row.width) else 1


def _iterations(fn: Function, row: Lanes | None) -> int:
    """How many times a kernel's loop runs: once per element, or per row (or block of a row) of lanes."""
    size = size_of(fn.shapes[fn.name])
    return size // row.width * _blocks(fn, row) if row else size


def _parallel(fn: Function, row: Lanes | None) -> bool:
    """Whether ``fn``'s kernel runs on several threads: more than one iteration, and work that pays for them."""
    return _iterations(fn, row) > 1 and PARALLEL_WORK.reached(typical_terms(fn))


def lane(fn: Function, body: Expr) -> Lanes | None:
    """The last output index as lanes, where that reads memory more contiguously than any sum.

    Then a CPU thread computes a whole row: each sum loop runs once per row
    and the per-element work is an inner loop over the last index, whose
    reads (``b[j; k]`` for consecutive ``k``) are contiguous and whose
    accumulators are independent, so the compiler can vectorise it. Each
    element still adds its terms in the same order as element by element.
    An element-wise body (no sums) runs by rows too: no division of the
    element number per element, and what is the same along a row (a layer
    norm's ``sqrt (v[n] + eps)``) is computed once per row. Sums whose
    bounds depend on the last index run each term on the lanes it is in
    range for (:func:`~.printer.lane_gated`): a padded convolution's borders
    (gates made bounds by :func:`kernel_body`), the bounds Algorithm 4 gives
    its gradient. A 1-D output is one row: a column sum
    (``db[j] = sum{i} (dy[i; j])``) then reads its rows contiguously, cut
    into blocks (:func:`_blocks`) to run on several threads. Not where a row
    is shorter than :data:`MIN_LANES`, nor where a condition depends on the
    last index (a branch per lane would not vectorise).
    """
    if not fn.indices or not MIN_LANES.reached(fn.shapes[fn.name][-1]):
        return None
    last = fn.indices[-1]
    nodes = list(postorder(body))
    sums = [node for node in nodes if isinstance(node, Sum)]
    for node in nodes:
        if isinstance(node, If) and any(last in atom.affine.names for atom in node.condition):
            return None
    if sums and memory_step(body, {last: 1}, fn.shapes) >= min(
            memory_step(body, {s.index: 1}, fn.shapes) for s in sums):
        return None
    return Lanes(last, fn.shapes[fn.name][-1], extent=fn.shapes[fn.name][-1])


@dataclass(frozen=True)
class Sweep:
    """What a gradient module computes, for :class:`Gradients` (one definition) and :class:`ProgramGradients`
    alike: the forward definitions, then per definition in backward order its gradients, the Function of its
    adjoint (``None`` for the last: ``df`` is given) and the name of its scatter kernel, then the gradients."""

    subject: Function | Program
    steps: tuple[tuple[Gradients, Function | None, str], ...]
    outputs: dict  # argument -> the Function of its gradient
    adjoint: str  # df
    into: dict  # tensor a definition reads -> the tensor its scatter contributions add into

    @staticmethod
    def of(grads: Gradients | ProgramGradients) -> Sweep:
        outputs = dict(grads.functions)
        into = {name: g.name for name, g in outputs.items()}
        if isinstance(grads, Gradients):
            return Sweep(grads.function, ((grads, None, "scatter"),), outputs, grads.adjoint_name, into)
        into.update({name: adjoint.name for name, adjoint in grads.adjoints.items()})
        # one kernel keeps the name "scatter" of a function's module (compile_ptx reports it by that name)
        steps = tuple((step.gradients, grads.adjoints.get(step.definition.name),
                       "scatter" if len(grads.steps) == 1 else f"_scatter{k}") for k, step in enumerate(grads.steps))
        return Sweep(grads.program, steps, outputs, grads.adjoint_name, into)

    @property
    def first(self) -> list[Function]:
        """The tensors every target computes with a kernel of its own: the definitions, the intermediates."""
        return [*definitions_of(self.subject), *(g for step, _, _ in self.steps for g in step.intermediates.values())]

    @property
    def accumulated(self) -> list[Function]:
        """The tensors the sweep sums into: the adjoints of the definitions before the last, the gradients
        (one gather kernel each, or the scatter kernels' targets)."""
        return [*(adjoint for _, adjoint, _ in self.steps if adjoint is not None), *self.outputs.values()]


def module_functions(grads: Gradients | ProgramGradients) -> tuple[dict[str, Function], dict[str, Function]]:
    """The element kernels of a gradient module by name: those that run first (the forward definitions, the
    intermediates), and the gather kernels (gather targets only): the adjoints of a program's definitions
    and one per gradient. The derivation names every tensor apart (:func:`tensoradbook.ad.derive`,
    :mod:`tensoradbook.ad.program`), so the kernels' names differ too."""
    sweep = Sweep.of(grads)
    return ({f"{py_name(g.name)}_kernel": g for g in sweep.first},
            {f"{py_name(g.name)}_kernel": g for g in sweep.accumulated})


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


def scatter_kernel(grads: Gradients, target: Target, name: str = "scatter") -> Kernel:
    """Eq. 40 as written: for every forward element ``alpha`` (and liberated sum index), add each
    occurrence's adjoint into the gradient element it reads. Races unless atomic, hence serial on the CPU.
    Its parameters: the tensors it reads (:func:`scatter_reads`), then one gradient per argument."""
    fn = grads.function
    shape = tuple(fn.shapes[fn.name])
    shapes = scatter_reads(grads)
    params = tuple(py_name(a) for a in [*shapes, *(g.name for g in grads.functions.values())])
    parameter_shapes = (*shapes.values(), *(tuple(g.shapes[g.name]) for g in grads.functions.values()))
    shapes.update({g.name: g.shapes[g.name] for g in grads.functions.values()})
    writer = target.printer(shapes, all_names(fn) | set(shapes))
    writer.active |= set(fn.indices)
    for argument, parts in grads.contributions.items():
        for part in parts:
            writer.contribution(grads.functions[argument].name, part)
    exact = any(compares(part.adjoint) for parts in grads.contributions.values() for part in parts)
    loop = ScatterLoop(size_of(shape), (Unflatten(fn.indices, shape),), (Statements(tuple(writer.statements)),))
    return Kernel(name, params, parameter_shapes, False, exact, (loop,))


def _header(fns: list[Function]) -> Header:
    """The module's comment: the functions it computes, as the parser reads them (the disk cache hashes it)."""
    return Header(tuple(to_text(fn) for fn in fns))


@dataclass(frozen=True)
class Plan:
    """How a module computes its functions: ``whole`` maps a function that is a plain contraction to its BLAS call;
    ``parts`` a function to the contractions split off its body (computed first, by BLAS) and ``kernels`` to the
    function its kernel then computes; ``reused``: a part of the backward pass -> the forward part computing the same
    contraction, which the forward pass keeps (a dense layer's ``dy_k`` reads ``x w^T`` again); ``padded``: a
    product over a zero-padded copy (:func:`~.contraction.gathered_contraction`) -> (the function it computes,
    with its gate, and the other factors' tensors), which its own kernel computes where one of those holds an inf
    or a NaN."""

    whole: dict
    parts: dict
    kernels: dict
    reused: dict = field(default_factory=dict)
    padded: dict = field(default_factory=dict)

    def with_reuse(self, forward: list[Function]) -> Plan:
        """This plan with the backward functions' parts that the ``forward`` definitions' parts compute too: the
        same contraction, or the same gather up to the names of its indices (a convolution's forward gather and
        its filter gradient's)."""
        computed = {part_key(*split): split[0].name for fn in forward for split in self.parts.get(fn.name, ())}
        kept = {fn.name for fn in forward}
        reused = {split[0].name: computed[part_key(*split)] for name, splits in self.parts.items()
                  if name not in kept for split in splits if part_key(*split) in computed}
        return replace(self, reused=reused)

    @property
    def kept(self) -> list[str]:
        """The forward parts the backward pass reads, in a fixed order."""
        return sorted(set(self.reused.values()))


def _runs_parallel(fn: Function, target: Target) -> bool:
    return _parallel(fn, lane(fn, kernel_body(fn)) if target.lanes else None)


def plan_module(fns, target: Target) -> Plan:
    """BLAS (matrix products) for the plain contractions of at least :data:`BLAS_WORK` element-terms
    (:mod:`.contraction`): whole definitions, whole definitions once a factor read at affine indices is gathered
    (a strided convolution), contractions split off a body (a dense layer's) or summed inside it (a strided
    convolution's gradient), where they are the larger part of the module's work. Where the kernels' parallel
    work is the larger part, no BLAS, the kernels as they are. How the kernels and the products share the threads
    at run time is measured per module (:class:`~.threads.MeasuredPlan`)."""
    if not target.blas:
        return Plan({}, {}, {})
    used = set().union(*(all_names(fn) for fn in fns))
    whole, parts, kernels, known, padded = {}, {}, {}, [], {}
    for fn in fns:
        if BLAS_WORK.reached(typical_terms(fn)):
            _find_contractions(fn, used, known, padded, whole, parts, kernels)
    products = [typical_terms(fn) for fn in fns if fn.name in whole]
    products += [typical_terms(part) for split in parts.values() for part, found in split if found]
    blas_work = sum(products)
    rest = [kernels.get(fn.name, fn) for fn in fns if fn.name not in whole]
    rest += [part for split in parts.values() for part, found in split if not found]
    loop_work = sum(typical_terms(fn) for fn in rest if _runs_parallel(fn, target))
    if not blas_work or loop_work > blas_work:
        return Plan({}, {}, {})
    return Plan(whole, parts, kernels, padded=padded)


def _find_contractions(fn: Function, used: set, known: list, padded: dict, whole: dict, parts: dict,
                       kernels: dict) -> None:
    """Where ``fn``'s BLAS products are, the first of these that applies: ``fn`` a plain contraction
    (``whole``), a gather and a plain contraction of it (``parts`` and ``whole``), contractions split off its body
    or summed inside it (``parts``, and the kernel of the rest in ``kernels``). ``known`` and ``padded`` collect
    the parts and padded copies found so far, which later functions share."""
    found = contraction_of(fn)
    if found:
        whole[fn.name] = found
        return
    gathered = gathered_contraction(fn, used, known, padded)
    if gathered:
        parts[fn.name], whole[fn.name] = gathered[0], contraction_of(gathered[1])
        return
    split, rewritten = split_contractions(fn, used, BLAS_WORK, known, padded)
    if not split:
        split, rewritten = _inner_split(fn, used)
    if split:
        parts[fn.name], kernels[fn.name] = split, rewritten


def _inner_split(fn: Function, used: set) -> tuple[list, Function]:
    """The sums over whole dimensions inside ``fn``'s body (on its output's box) as one contraction split off,
    where it has :data:`BLAS_WORK` element-terms; else nothing split."""
    box = dict(zip(fn.indices, ((0, n - 1) for n in fn.shapes[fn.name])))
    inner = inner_contraction(replace(fn, body=decided_on(fn.body, box)), used)
    if inner and BLAS_WORK.reached(typical_terms(inner[0])):
        return [(inner[0], contraction_of(inner[0]))], inner[1]
    return [], fn


def _kernels(fns: dict[str, Function], target: Target, plan: Plan) -> list:
    """The element-wise kernels of ``{kernel name: function}``, but for the contractions BLAS computes, and the
    kernels of the gathers split off them; for each product over a padded copy, the kernel of its gated sum (not
    typed when the module loads: compiled at its first call, where an inf or NaN meets the padding)."""
    exact = {f"{py_name(name)}_kernel": fn for name, (fn, _) in plan.padded.items()}
    kernels = []
    for name, fn in {**_element_kernels(fns, plan), **exact}.items():
        if broadcasts(fn, target):
            kernels.append(broadcast_kernel(fn, name))
        else:
            kernels.append(replace(element_kernel(fn, target, name), typed=name not in exact))
    return kernels


def _element_kernels(fns: dict[str, Function], plan: Plan) -> dict[str, Function]:
    """Kernel name -> the function its kernel computes: each gather split off a definition, then the definition
    itself unless BLAS computes it whole."""
    kernels = {}
    for name, fn in fns.items():  # a gather the backward pass reads again has its kernel once, the forward's
        kernels.update({f"{py_name(part.name)}_kernel": part for part, found in plan.parts.get(fn.name, ())
                        if not found and plan.reused.get(part.name, part.name) == part.name})
        if fn.name not in plan.whole:
            kernels[name] = plan.kernels.get(fn.name, fn)
    return kernels


def _arrays_table(kernels: list) -> ArraysTable:
    """``KERNEL_ARRAYS``: the shapes of every kernel typed when the module loads, with which
    :func:`~tensoradbook.codegen.compile.precompile` compiles them before the first call."""
    return ArraysTable(tuple((k.name, k.shapes) for k in kernels if isinstance(k, Kernel) and k.typed))


def _product(out: str, name: str, contraction: Contraction, plan: Plan, into_scratch: bool = False) -> tuple:
    """``out`` (the tensor ``name``) as its BLAS product; for a product over a padded copy, only where the other
    factors are finite, else by the kernel of its gated sum (:attr:`Plan.padded`): the padding's zeros times an
    inf would add NaNs where the gates skip those terms."""
    product = BlasProduct(out, contraction, into_scratch)
    if name not in plan.padded:
        return (product,)
    exact, others = plan.padded[name]
    return (GuardedProduct(product, tuple(py_name(other) for other in others), _launch(out, exact, exact)),)


def _compute(fn: Function, plan: Plan, backward: bool = False) -> tuple:
    """``fn``'s output allocated, and its kernel launched to fill it; a contraction is one BLAS call, and the
    tensors split off ``fn`` (contractions, gathers) come first; in the ``backward`` pass, those the forward pass
    keeps are read from it (computed where the caller brought the forward values)."""
    nodes: tuple = ()
    for part, found in plan.parts.get(fn.name, ()):  # never returned: scratch arrays where the target keeps them
        kept = py_name(plan.reused[part.name]) if backward and part.name in plan.reused else None
        nodes += _part(py_name(part.name), part, found, kept, plan)
    if fn.name in plan.whole:
        return nodes + _product(py_name(fn.name), fn.name, plan.whole[fn.name], plan)
    return nodes + _launch(py_name(fn.name), fn, plan.kernels.get(fn.name, fn))


def _part(out: str, part: Function, found: Contraction | None, kept: str | None, plan: Plan) -> tuple:
    """A tensor split off a definition: its product or its gather kernel; ``kept``: the forward pass's tensor
    computing the same, which the caller may have given."""
    if found is not None:  # kept by the forward pass, unless the caller brought the forward values
        product = _product(out, part.name, found, plan, into_scratch=True)
        return (ReadKept(out, kept, product),) if kept else product
    if kept:  # the forward pass's gather, the same tensor: computed by its kernel where not given
        return (FillKept(kept, _launch(kept, part, part, scratch=True)),) + ((Alias(out, kept),) if out != kept else ())
    return _launch(out, part, part, scratch=True)


def _launch(out: str, fn: Function, kernel: Function, scratch: bool = False) -> tuple:
    """``out``, of ``fn``'s shape, allocated (a scratch array if ``scratch`` and the target keeps them) and filled
    by its kernel, ``out_kernel``, which computes ``kernel`` (``fn`` or its rewriting)."""
    shape = tuple(fn.shapes[fn.name])
    args = (*(py_name(a) for a in kernel.arguments), out)
    return Allocate(out, shape, "scratch" if scratch else "fresh"), Launch(f"{out}_kernel", args, size_of(shape))


def _forward_entry(subject: Function | Program, plan: Plan, name: str = "forward", every: bool = False) -> Entry:
    """``name(*inputs)``: every definition's kernel in order, returning the last value (all, and the parts the
    backward pass reuses, if ``every``)."""
    definitions = definitions_of(subject)
    body = tuple(node for fn in definitions for node in _compute(fn, plan))
    names = [py_name(fn.name) for fn in (definitions if every else definitions[-1:])]
    names += [py_name(part) for part in plan.kept] if every else []
    return Entry(name, tuple(py_name(a) for a in subject.arguments), body, Return(tuple(names), every))


def function_module(fn: Function | Program, target: Target) -> Module:
    """The plan of :func:`function_source`: ``<name>_kernel`` per definition and ``forward(*arguments)``."""
    definitions = definitions_of(fn)
    plan = plan_module(definitions, target)
    kernels = _kernels({f"{py_name(d.name)}_kernel": d for d in definitions}, target, plan)
    return fuse(Module(_header(list(definitions)), ScratchSetup() if plan.parts else None, tuple(kernels),
                       (_forward_entry(fn, plan),), _arrays_table(kernels) if target.precompiled else None), target)


def function_source(fn: Function | Program, target: str = "numba") -> str:
    """The module behind :meth:`Function.compile` and :meth:`Program.compile`: ``<name>_kernel`` per
    definition and ``forward(*arguments)``."""
    kind = target_named(target, GATHER_TARGETS)
    return render(function_module(fn, kind), kind)


def gradients_module(grads: Gradients | ProgramGradients, target: Target) -> Module:
    """The plan of :func:`gradients_source`."""
    sweep = Sweep.of(grads)
    first, gather = module_functions(grads)
    plan = plan_module([*first.values(), *gather.values()], target).with_reuse(definitions_of(sweep.subject))
    backward = _scatter_pass if target.scatters_gradients else _gather_pass
    kernels, statements = backward(sweep, target, plan, first, gather)
    subject, adjoint = sweep.subject, py_name(sweep.adjoint)
    arguments = tuple(py_name(a) for a in subject.arguments)
    values = tuple(py_name(fn.name) for fn in definitions_of(subject))
    outputs = tuple((name, py_name(g.name)) for name, g in sweep.outputs.items())
    backward_entry = Entry("_backward", (*arguments, *values, adjoint, *(f"{py_name(p)}=None" for p in plan.kept)),
                           statements, ReturnGradients(outputs))
    entries = (_forward_entry(subject, plan), _forward_entry(subject, plan, "_values", every=True),
               GradientsEntry(arguments, adjoint, len(values), bool(plan.kept)), backward_entry)
    return fuse(Module(_header([*first.values(), *gather.values()]), ScratchSetup() if plan.parts else None,
                       tuple(kernels), entries, _arrays_table(kernels) if target.precompiled else None), target)


def gradients_source(grads: Gradients | ProgramGradients, target: str = "numba") -> str:
    """The module behind :meth:`Gradients.compile` and :meth:`ProgramGradients.compile`: the forward
    kernels, the intermediates' and adjoints' kernels, then the gradient kernels (gather, one per
    argument) or one scatter kernel per definition; ``forward(*arguments)``, ``gradients(*arguments, df)``
    returning a dict, and its halves ``_values`` and ``_backward``, which reads the forward values."""
    kind = target_named(target, TARGETS)
    return render(gradients_module(grads, kind), kind)


def _gather_pass(sweep: Sweep, target: Target, plan: Plan, first: dict, gather: dict) -> tuple[list, tuple]:
    """The gather form's kernels and backward pass: per definition its adjoint's kernel, summing its consumers'
    contributions, and its intermediates; at the end one gather kernel per gradient."""
    body: tuple = ()
    for step, adjoint, _ in sweep.steps:
        body += _compute(adjoint, plan, backward=True) if adjoint is not None else ()
        body += tuple(node for g in step.intermediates.values() for node in _compute(g, plan, backward=True))
    body += tuple(node for g in sweep.outputs.values() for node in _compute(g, plan, backward=True))
    return _kernels({**first, **gather}, target, plan), body


def _scatter_pass(sweep: Sweep, target: Target, plan: Plan, first: dict, gather: dict) -> tuple[list, tuple]:
    """Eq. 40's kernels and backward pass: every adjoint and gradient starts from zero, then per definition its
    intermediates and its scatter kernel, adding into the adjoints of what it reads."""
    body = tuple(Allocate(py_name(g.name), tuple(g.shapes[g.name]), "zeroed") for g in sweep.accumulated)
    kernels = _kernels(first, target, plan)
    for step, _, name in sweep.steps:  # output-shaped adjoints, computed once (Gradients.simplified)
        body += tuple(node for g in step.intermediates.values() for node in _compute(g, plan, backward=True))
        args = (*(py_name(a) for a in scatter_reads(step)), *(py_name(sweep.into[n]) for n in step.functions))
        body += (Launch(name, args, size_of(step.function.shapes[step.function.name])),)
        kernels.append(scatter_kernel(step, target, name))
    return kernels, body

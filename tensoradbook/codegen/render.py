"""Rendering: a planned module (:mod:`.kernel_ir`) as source, for one target.

:class:`Renderer` has one method per statement node type, ``_<Node>``, each returning the node's lines at an
indentation depth; what a target spells its own way (decorators, kernel headers, loop headers and blocks, element
loops, assignments, accumulations, allocations, launches, the errstate guard, its imports) it asks the target
(:class:`~.targets.Target`), which answers with text or with simpler nodes (a :class:`~.kernel_ir.Block` for a
loop). Values are spelled by the target's values table (:attr:`~.targets.Target.values`, :mod:`.values`); a
broadcast kernel's by numpy's, which it is by construction. Every line is written once, at its final place.
"""

from __future__ import annotations

from .kernel_ir import (Accumulate, Alias, Allocate, ArraysTable, Assign, BlasProduct, Block, Bounds, Branch,
                        BroadcastKernel, Comment, Declare, ElementLoop, Entry, Fill, FillKept, For, FusedKernel,
                        GradientsEntry, GuardedProduct, Header, Index, Kernel, LaneLoop, Launch, Line, Module, ReadKept,
                        Return, ReturnGradients, RowBlock, ScatterLoop, ScratchSetup, Statements, Store, Unflatten)
from .printer import py_name
from .targets import Target
from .values import VectorValues

FORMAT = 1  # bump when the generated code changes meaning: new hashes, new module files
INDENT = "    "


class Renderer:
    """Lines of nodes for ``target``."""

    def __init__(self, target: Target):
        self.target = target
        self.style = target.values  # how values are spelled: the target's, numpy's in a broadcast kernel
        self.values = self.style()

    def text(self, value) -> str:
        """A value's code (:mod:`.values`)."""
        return self.values.text(value)

    def lines(self, nodes, depth: int = 0) -> list[str]:
        out = []
        for node in nodes:
            out += getattr(self, f"_{type(node).__name__}")(node, depth)
        return out

    # -- statements
    def _Line(self, node: Line, depth: int) -> list[str]:
        return [INDENT * depth + node.text]

    def _Block(self, node: Block, depth: int) -> list[str]:
        body = self.lines(node.body, depth + 1) or [INDENT * (depth + 1) + line for line in self.target.empty_block]
        return [INDENT * depth + node.header, *body, *(INDENT * depth + line for line in self.target.block_end)]

    def _statement(self, text: str, depth: int) -> list[str]:
        return self._Line(Line(self.target.statement(text)), depth)

    # -- a kernel's body
    def _Statements(self, node: Statements, depth: int) -> list[str]:
        self.values = self.style(node.lanes)
        return self.lines((*node.declarations, *node.body), depth)

    def _Declare(self, node: Declare, depth: int) -> list[str]:
        return self._Line(Line(self.target.declaration(node.name, node.width)), depth)

    def _Assign(self, node: Assign, depth: int) -> list[str]:
        name = node.name if node.lanes is None else f"{node.name}[{self.values.slot(node.lanes)}]"
        return self._statement(f"{name} {node.op} {self.text(node.value)}", depth)

    def _Fill(self, node: Fill, depth: int) -> list[str]:
        return self._Line(Line(self.target.fill(node.name, node.width, self.text(node.value))), depth)

    def _Bounds(self, node: Bounds, depth: int) -> list[str]:
        return self._statement(f"{node.lower}, {node.upper} = {self.text(node.low)}, {self.text(node.high)}", depth)

    def _For(self, node: For, depth: int) -> list[str]:
        header = self.target.range_loop(py_name(node.index), self.text(node.low), self.text(node.high))
        return self._Block(Block(header, node.body), depth)

    def _LaneLoop(self, node: LaneLoop, depth: int) -> list[str]:
        lanes = node.lanes
        first, stop = (None, None) if lanes.first is None else (self.text(lanes.first), self.text(lanes.stop))
        return self._Block(Block(self.target.lane_loop(py_name(lanes.name), lanes.width, first, stop), node.body),
                           depth)

    def _Branch(self, node: Branch, depth: int) -> list[str]:
        condition = self.text(node.condition)
        condition = condition if node.holds else self.target.negation(condition)
        otherwise = () if node.orelse is None else (Block(self.target.else_header, node.orelse),)
        return self.lines((Block(self.target.if_header(condition), node.body), *otherwise), depth)

    def _Accumulate(self, node: Accumulate, depth: int) -> list[str]:
        index = tuple(self.text(Index(a)) for a in node.element.indices)
        code = self.target.accumulate(py_name(node.gradient), self.text(node.element), index, self.text(node.value))
        return self._Line(Line(code), depth)

    def _Comment(self, node: Comment, depth: int) -> list[str]:
        return self._Line(Line(self.target.comment(node.text)), depth)

    # -- inside a kernel
    def _Unflatten(self, node: Unflatten, depth: int) -> list[str]:
        return self.lines(self.target.unflatten(node), depth)

    def _RowBlock(self, node: RowBlock, depth: int) -> list[str]:
        return self.lines(self.target.row_block(node), depth)

    def _Store(self, node: Store, depth: int) -> list[str]:
        where = "..." if node.indices is None else self.target.output_element(node.indices, node.shape)
        store = Line(self.target.statement(f"_out[{where}] = {self.text(node.value)}"))
        return self.lines([LaneLoop(node.row, (store,)) if node.row else store], depth)

    def _ElementLoop(self, node: ElementLoop, depth: int) -> list[str]:
        return self.lines(self.target.element_loop(node), depth)

    def _ScatterLoop(self, node: ScatterLoop, depth: int) -> list[str]:
        return self.lines(self.target.scatter_loop(node), depth)

    # -- kernels
    def _Kernel(self, node: Kernel, depth: int) -> list[str]:
        decorator = [Line(line) for line in self.target.decorator(node.parallel, node.exact, node.inlined)]
        body = (*self.target.kernel_prologue(node), *node.body)
        return self.lines([*decorator, Block(self.target.kernel_header(node.name, node.params), body)], depth)

    def _FusedKernel(self, node: FusedKernel, depth: int) -> list[str]:
        decorator = [Line(line) for line in self.target.decorator(False, node.exact)]
        calls = tuple(Line(self.target.statement(f"{kernel}({', '.join(args)})")) for kernel, args in node.calls)
        return self.lines([*decorator, Block(self.target.kernel_header(node.name, node.params), calls)], depth)

    def _BroadcastKernel(self, node: BroadcastKernel, depth: int) -> list[str]:
        self.style = VectorValues  # numpy's over views, whatever the target
        try:
            return self._broadcast(node, depth)
        finally:
            self.style = self.target.values

    def _broadcast(self, node: BroadcastKernel, depth: int) -> list[str]:
        guard = Block('with np.errstate(all="ignore"):  # inf and nan as the kernels give them, without warnings',
                      node.body)
        header = f"def {node.name}({', '.join(node.params)}):  # numpy's vector math (see broadcasts)"
        return self.lines([Block(header, (guard,))], depth)

    # -- in the entry points
    def _Allocate(self, node: Allocate, depth: int) -> list[str]:
        return self._Line(Line(self.target.allocation(node)), depth)

    def _Launch(self, node: Launch, depth: int) -> list[str]:
        return self._Line(Line(self.target.call(node.kernel, ", ".join(node.args), node.size)), depth)

    def _BlasProduct(self, node: BlasProduct, depth: int) -> list[str]:
        buffer = self.target.scratch(node.out) if node.into_scratch else None
        code = node.contraction.code([py_name(name) for name in node.contraction.operands], buffer)
        return self._Line(Line(f"{node.out} = {code}  # a plain contraction: BLAS"), depth)

    def _GuardedProduct(self, node: GuardedProduct, depth: int) -> list[str]:
        finite = " and ".join(f"np.isfinite({name}).all()" for name in node.finite)
        return self.lines((Block(f"if {finite}:", (node.product,)),
                           Block("else:  # an inf or NaN meeting the padding: the gated sum", node.fallback)), depth)

    def _ReadKept(self, node: ReadKept, depth: int) -> list[str]:
        return self.lines((Block(f"if {node.kept} is not None:", (Alias(node.out, node.kept),)),
                           Block("else:", node.otherwise)), depth)

    def _FillKept(self, node: FillKept, depth: int) -> list[str]:
        return self.lines((Block(f"if {node.kept} is None:", node.compute),), depth)

    def _Alias(self, node: Alias, depth: int) -> list[str]:
        return self._Line(Line(f"{node.name} = {node.value}"), depth)

    # -- the module
    def _Header(self, node: Header, depth: int) -> list[str]:
        return [f"# Generated by tensoradbook ({self.target.name} target, format {FORMAT}) from:",
                *(f"#   {text}" for text in node.texts),
                "# Do not edit: the cache regenerates it from the functions above.", "", *self.target.imports]

    def _ScratchSetup(self, node: ScratchSetup, depth: int) -> list[str]:
        return list(self.target.scratch_setup)

    def _Entry(self, node: Entry, depth: int) -> list[str]:
        body = (*self.target.guarded(node.body or (Line("pass"),)), node.returns)
        return self.lines((Block(f"def {node.name}({', '.join(node.params)}):", body),), depth)

    def _Return(self, node: Return, depth: int) -> list[str]:
        one = node.every and len(node.names) == 1
        return self._Line(Line(f"return {', '.join(node.names)}{',' if one else ''}"), depth)

    def _ReturnGradients(self, node: ReturnGradients, depth: int) -> list[str]:
        pairs = ", ".join(f"{name!r}: {out}" for name, out in node.outputs)
        return self._Line(Line(f"return {{{pairs}}}"), depth)

    def _GradientsEntry(self, node: GradientsEntry, depth: int) -> list[str]:
        inputs = ", ".join(node.arguments)
        given = f"{inputs}, " if inputs else ""
        if node.keeps:  # the forward pass's values, then df, then the parts it keeps for the backward pass
            body = (Line(f"_kept = _values({inputs})"),
                    Line(f"return _backward({given}*_kept[:{node.count}], {node.adjoint}, *_kept[{node.count}:])"))
        else:
            body = (Line(f"return _backward({given}*_values({inputs}), {node.adjoint})"),)
        return self.lines((Block(f"def gradients({', '.join((*node.arguments, node.adjoint))}):", body),), depth)

    def _ArraysTable(self, node: ArraysTable, depth: int) -> list[str]:
        rows = {name: tuple(len(self.target.stored_shape(shape)) for shape in shapes) for name, shapes in node.rows}
        return [f"KERNEL_ARRAYS = {rows!r}"]


def render(module: Module, target: Target) -> str:
    """``module``'s source for ``target``: each top-level piece followed by two blank lines, as PEP 8 has them."""
    renderer = Renderer(target)
    pieces = [module.header, module.setup, *module.kernels, *module.entries, module.table]
    lines = []
    for piece in pieces:
        if piece is not None:
            lines += renderer.lines([piece]) + ["", ""]
    return "\n".join(lines).rstrip() + "\n"

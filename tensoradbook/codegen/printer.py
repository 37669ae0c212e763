"""Kernel printers (report sec. 6): the lowering of one expression to a kernel's statements and values
(:mod:`.kernel_ir` nodes), one ``_print_<Node>`` per expression node.

:class:`KernelPrinter` holds what every target shares: shared subexpressions computed once into
temporaries (which ones, the pass :mod:`.sharing` decides before printing), sums as loops, conditions as
branches, an explicit stack instead of recursion for long chains of operations, and integer index
arithmetic. Each block the printer opens carries the row of lanes its statements run on, so a lane-gated
sum's loop passes its cut row to its body. Nothing here is code: the target's renderer spells the statements and
values (:mod:`.render`, :mod:`.values`). How a value is computed, and how deeply its spelling nests brackets (where a
temporary is made), is the subclass's:

* :class:`ScalarPrinter` (Numba on the CPU): one element at a time, Python's ``math`` functions,
  optionally a row of *lanes* (the last output index innermost, see ``codegen.module``);
* :class:`CudaPrinter`: the same for one GPU thread, with CUDA's spellings;
* :class:`VectorPrinter` (numpy): the whole output grid at once, masks instead of branches.

Each printer counts brackets with its target's spelling of every operation (:mod:`.spellings`), as sympy's code
printers take a function table per language.
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from functools import partial

from ..lang.expr import (Affine, Atom, Binary, Element, Expr, If, Number, Select, Sum, Unary, free_indices, postorder,
                         substitute)
from ..lang.names import fresh_name
from ..lang.ops import REDUCTIONS
from ..lang.printer import expr_text
from ..lang.simplify import atom_as_bound, peel_gates
from .kernel_ir import (Accumulate, After, Assign, Atoms, Bound, Bounds, Branch, Choose, Comment, Compare, Const,
                        Declare, Extent, Fill, Fold, For, Full, Identity, Index, LaneLoop, Op, Power, Read, Temp, View,
                        Within)
from .sharing import Sharing, shared
from .spellings import CUDA, NUMPY, SCALAR, nesting, read_twice, spelled
from .thresholds import MAX_NESTING

# Names the generated code uses itself; user names that clash get a suffix.
_RESERVED = {"math", "np", "numba", "cuda", "range", "max", "min", "forward", "gradients", "scatter", "THREADS"}


def py_name(name: str) -> str:
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
    if (keyword.iskeyword(name) or name in _RESERVED or name.startswith("_") or name.endswith(("_", "_kernel"))
            or "__" in name):
        return name.replace("_", "_u") + "_"
    return name


@dataclass(frozen=True)
class Lanes:
    """A row of lanes: the output index ``name`` runs innermost, ``width`` values at a time (see
    ``codegen.module.lane``), over its whole extent or, in a block of a row, from ``first`` up to ``stop``
    (integer values, :mod:`.kernel_ir`); per-lane values sit in arrays of ``width``."""

    name: str
    width: int
    first: object = None
    stop: object = None
    extent: int = 0  # the whole row's length (the output's last dimension)
    base: str | None = None  # the kernel's variable holding the lane stored first in the per-lane arrays, where not 0

    def within(self, firsts: list, stops: list) -> Lanes:
        """These lanes cut to those at or above every value of ``firsts`` and below every one of ``stops``."""
        first = self.first or Index(Affine.constant_value(0))
        stop = self.stop or Index(Affine.constant_value(self.width))
        return replace(self, first=Bound((first, *firsts), lower=True), stop=Bound((stop, *stops), lower=False))


def lane_gated(node: Sum, lane: str, extent: int) -> tuple[Sum, list[Atom]]:
    """A reduction whose bounds depend on the lane index ``lane`` (``0 <= lane < extent``) as a loop over the
    hull of its ranges for every lane, with the conditions a term's lanes then meet. A padded convolution's
    row, ``sum{q}_(max [0; 2 - j])^(min [4; 65 - j]) (...)`` (its border gates as bounds,
    :func:`~tensoradbook.lang.simplify.gates_as_bounds`), runs each ``q`` for the lanes ``j`` where the term
    is inside the image, so the lane loop has no branch and vectorises. Nothing changes for a sum whose bounds
    are free of ``lane``."""
    k = Affine.index(node.index)
    atoms, lower, upper = [], [], []
    for bounds, hull, is_lower in ((node.lower, lower, True), (node.upper, upper, False)):
        for a in bounds:
            c = a.coefficient(lane)
            if c == 0:
                hull.append(a)
                continue
            atoms.append(Atom(k - a if is_lower else a - k, inequality=True))  # ceil(a) <= k <=> a <= k
            at_least = (c > 0) == is_lower  # the lane where the bound is the loosest: 0 or the last
            hull.append(a.substitute({lane: Affine.constant_value(0 if at_least else extent - 1)}))
    return node.renewed(lower=tuple(lower), upper=tuple(upper)), atoms


def lane_range(atoms: list[Atom], lane: str) -> tuple[list[Affine], list[Affine]]:
    """The conditions ``c * lane + r >= 0`` as the lane's lower and upper bounds (:func:`atom_as_bound`)."""
    firsts, lasts = [], []
    for atom in atoms:
        bound, is_lower = atom_as_bound(atom, lane)
        (firsts if is_lower else lasts).append(bound)
    return firsts, lasts


def temp_nesting(value: Temp) -> int:
    """The brackets of a temporary's code: a lane's subscript where it is per lane."""
    return int(value.lanes is not None)


@dataclass(frozen=True)
class _Scope:
    """A block of the code being written: the values computed in it, by their keys (valid in it and
    in the blocks inside it), how deeply brackets nest in each (:meth:`KernelPrinter.nested`), the row of lanes
    its statements run on, and its statements (:mod:`.kernel_ir` nodes)."""

    known: dict[int, object]
    lanes: Lanes | None
    nests: dict[int, int] = field(default_factory=dict)
    body: list = field(default_factory=list)


class KernelPrinter:
    """The statements computing one expression, as :mod:`.kernel_ir` nodes; :meth:`value` returns its value (a
    value node) and writes, before it, the statements it needs (sum loops, branches, shared temporaries).

    What is computed once into a temporary is decided before printing (:func:`.sharing.shared`, which
    :meth:`share` runs); the printer keeps only what printing needs: the statements and per-lane arrays written,
    the blocks open (each with what is known in it and its lanes), the loop indices bound, and a counter of
    temporaries."""

    scalar_reads = False  # an element read loads one number (not a gather of a grid)
    spellings = SCALAR  # the target's code of each operation (codegen.spellings), whose brackets it counts

    def __init__(self, shapes: dict, names: set[str], lane: Lanes | None = None,
                 spellings: Mapping[str, str] | None = None, sharing: Sharing | None = None):
        self.spellings = self.spellings if spellings is None else spellings
        self.shapes = shapes
        self.names = set(names)  # every tensor and index name the code may meet: fresh ones avoid them
        self.sharing = sharing or Sharing()
        self.declarations: list[Declare] = []  # the per-lane arrays, allocated once before the kernel's loops
        self.declared: set[str] = set()  # the temporaries those arrays are
        self.scopes = [_Scope({}, lane)]  # the blocks open, innermost last
        self.statements = self.scopes[0].body  # the outermost block's
        self.active: set[str] = set()  # index names bound by enclosing loops (Python has no block scope)
        self.counter = 0

    # -- bookkeeping -----------------------------------------------------------------------
    @property
    def lanes(self) -> Lanes | None:
        """The row of lanes the code is in, cut to a term's range inside lane-gated sums."""
        return self.scopes[-1].lanes

    @property
    def lane(self) -> str | None:
        """The lane index's name, None outside rows of lanes."""
        return self.lanes.name if self.lanes else None

    @property
    def width(self) -> int:
        """How many lanes the per-lane arrays hold."""
        return self.lanes.width if self.lanes else 0

    def varies(self, node: Expr) -> bool:
        """Whether ``node``'s value differs between lanes (it depends on the lane index)."""
        return self.lane is not None and self.lane in free_indices(node)

    def store(self, name: str, value, lanes: bool, op: str = "=") -> Temp:
        """``name op value``, as a row of lanes when ``lanes``; returns how to read ``name`` back: the temporary,
        never stored again (the printer knows it by its type, not by its spelling)."""
        if not lanes:
            self.emit(Assign(name, value, op=op))
            return Temp(name)
        if op == "=":
            self.declare(name)
        self.emit(LaneLoop(self.lanes, (Assign(name, value, self.lanes, op),)))
        return Temp(name, self.lanes)

    def declare(self, name: str) -> None:
        """A per-lane array ``name``, allocated once before the kernel's loops."""
        if name not in self.declared:
            self.declared.add(name)
            self.declarations.append(Declare(name, self.width))

    def key(self, node: Expr) -> int:
        """A number per distinct subexpression (:class:`.sharing.SubexpressionKeys`)."""
        return self.sharing.keys(node)

    def share(self, root: Expr) -> None:
        """Compute operations that occur more than once in ``root`` (read as a tree) into temporaries."""
        self.sharing = shared(root, self.sharing)

    def emit(self, statement) -> None:
        self.scopes[-1].body.append(statement)

    @contextmanager
    def block(self, make=None, lanes: Lanes | None = None):
        """Statements in a block of their own, on the row ``lanes`` (by default the enclosing block's), yielded as
        they are written; ``make`` gives the statement holding them, written after the block."""
        scope = _Scope({}, self.lanes if lanes is None else lanes)
        self.scopes.append(scope)
        try:
            yield scope.body
        finally:
            self.scopes.pop()
        if make is not None:
            self.emit(make(tuple(scope.body)))

    @contextmanager
    def binding(self, name: str):
        self.active.add(name)
        try:
            yield
        finally:
            self.active.discard(name)

    def temp(self, prefix: str) -> str:
        self.counter += 1
        return f"_{prefix}{self.counter}"

    # -- integer parts ---------------------------------------------------------------------
    @staticmethod
    def bound(affines: tuple[Affine, ...], lower: bool) -> Bound:
        """The greatest of the ceilings of lower bounds, the least of the floors of upper ones (eqs. 22-26)."""
        return Bound(tuple(Index(a, floor=not lower) for a in affines), lower)

    def condition_nesting(self, atoms: tuple[Atom, ...]) -> int:
        """The brackets of :meth:`condition`'s code: a modulus's around its affine (an atom's affine is integral, no
        floor division), in those :meth:`conjunction` puts around each part."""
        return self.part_brackets + max((int(bool(atom.modulus) and not atom.inequality) for atom in atoms),
                                        default=0)

    part_brackets = 0  # the brackets the spelling of a conjunction puts around each part

    def element(self, name: str, indices: tuple[Affine, ...]) -> Read:
        return Read(name, tuple(indices), tuple(self.shapes[name]))

    # -- values --------------------------------------------------------------------------
    def lookup(self, node: Expr):
        key = self.key(node)
        for scope in reversed(self.scopes):
            if key in scope.known:
                return scope.known[key]
        return None

    def value(self, node: Expr):
        """``node``'s value; the statements it needs are written before it.

        Chains of operations are written bottom-up from an explicit stack: a
        sum of hundreds of terms must not recurse hundreds of levels. Sums and
        conditions open blocks of their own and recurse once per level.
        """
        pending = [(node, False)]
        while pending:
            current, expanded = pending.pop()
            if self.read(current) is not None:
                continue
            if isinstance(current, (Unary, Binary)) and not expanded:  # children first, left to right
                pending.append((current, True))
                pending.extend((child, False) for child in reversed(current.children()))
            else:
                self.write(current)
        return self.read(node)

    def read(self, node: Expr):
        """How to read ``node`` here: a constant, an element, or what was written for it; None if not yet."""
        if isinstance(node, Number):
            return Const(node.value)
        if isinstance(node, Element):
            return self._print_Element(node)
        return self.lookup(node)

    def write(self, node: Expr) -> None:
        """Write ``node``, whose operands (for an operation) are written already, and remember its value."""
        method = getattr(self, f"_print_{type(node).__name__}", None)
        if method is None or isinstance(node, (Number, Element)):
            raise TypeError(f"not an expression node: {node!r}")
        value = method(node)
        depth = temp_nesting(value) if isinstance(value, Temp) else self.nesting_of(node)
        # a temporary for what is used twice, and where brackets nest deeply (see MAX_NESTING)
        if not isinstance(value, Temp) and (self.sharing.is_repeated(node) or MAX_NESTING.exceeded(depth)):
            value = self.store(self.temp("t"), value, self.varies(node))
            depth = temp_nesting(value)
        self.scopes[-1].known[self.key(node)] = value
        self.scopes[-1].nests[self.key(node)] = depth

    def nested(self, node: Expr) -> int:
        """How deeply brackets nest in the code of ``node`` (written already, so known in an open block). Counted
        over the expression and the spellings, not read from code written."""
        if isinstance(node, Number):
            return self.number_nesting(node)
        if isinstance(node, Element):
            return self.element_nesting(node)
        key = self.key(node)
        return next(scope.nests[key] for scope in reversed(self.scopes) if key in scope.nests)

    def nesting_of(self, node: Expr) -> int:
        """How deeply brackets nest in the code of the operation ``node`` over its operands' code: its spelling's
        own brackets around each operand (:func:`~.spellings.nesting`) over the operand's; one pair for a select
        and a repeated product. An operand read several times is a name (:meth:`named`)."""
        children = node.children()
        if isinstance(node, Binary) and node.op == "**" and _repeated_product(node):
            return 1 + self.named_nesting(node.left)
        if isinstance(node, (Unary, Binary)):
            template = self.template(node.op)
            own, around = nesting(template)
            operand = self.named_nesting if read_twice(template) else self.nested
            return max(own, *(around.get(k, 0) + operand(child) for k, child in enumerate(children)))
        operands = (node.left, node.right, *children) if isinstance(node, Select) else children
        condition = self.condition_nesting(node.condition) if isinstance(node, If) else 0
        return 1 + max(condition, *(self.nested(child) for child in operands))

    def named_nesting(self, node: Expr) -> int:
        """The brackets of :meth:`named`'s code for ``node``: an element read again, else a temporary's (a lane's
        subscript where ``node`` varies between lanes)."""
        if self.scalar_reads and isinstance(node, Element):
            return self.nested(node)
        if isinstance(self.read(node), Temp):
            return temp_nesting(self.read(node))
        return int(self.varies(node))

    def number_nesting(self, node: Number) -> int:
        """The brackets of a number's code (a negative one's)."""
        return int(node.value < 0)

    def _print_Element(self, node: Element) -> Read:
        return self.element(node.name, node.indices)

    def element_nesting(self, node: Element) -> int:
        """The brackets of :meth:`element`'s code: the subscript's, around the deepest index's (a floor division's
        one pair, :meth:`affine`) in the subscript's :attr:`index_brackets`."""
        if not node.indices:
            return 1
        return 1 + self.index_brackets + max(int(a.denominator != 1) for a in node.indices)

    index_brackets = 0  # the brackets the spelling of a subscript puts around each index

    def template(self, op: str) -> str:
        """The code of operation ``op`` as a format string over its operands' code."""
        return spelled(self.spellings, op)

    def _print_Unary(self, node: Unary) -> Op:
        operand = self.value(node.arg)
        if read_twice(self.template(node.op)):  # sign and round on CUDA read their operand several times
            operand = self.named(operand, node.arg)
        return Op(node.op, (operand,))

    def named(self, value, node: Expr):
        """``value`` (of ``node``) as a name or element read, stored into a temporary if it is more. Where
        reading an element loads one number (:attr:`scalar_reads`), it is read again where it is needed: a copy per
        lane costs a loop and an array for nothing (a kernel summing 200 squares of reads took 34 s to compile with
        them); a vector printer's read is a gather of a whole grid, kept once."""
        if isinstance(value, Temp) or (self.scalar_reads and isinstance(node, Element)):
            return value
        return self.store(self.temp("t"), value, self.varies(node))

    def _print_Binary(self, node: Binary):
        left = self.value(node.left)
        if node.op == "**" and _repeated_product(node):  # no pow call (also for 2.0 and 3.0)
            return Power(self.named(left, node.left), int(node.right.value))
        right = self.value(node.right)
        if read_twice(self.template(node.op)):  # max and min read their operands several times
            left, right = self.named(left, node.left), self.named(right, node.right)
        return Op(node.op, (left, right))

    def _print_Sum(self, node: Sum, into: str | None = None, lanes: bool | None = None) -> Temp:
        """A reduction's loop into a new total, or, for a sum directly inside a sum, ``into`` the outer one's
        (``lanes``: whether that total is per lane)."""
        total = into or self.temp("s")
        if node.index in self.active:  # a sum inside an adjoint reusing a liberated sum's index (scatter)
            fresh = fresh_name(node.index, self.names)
            node = node.renewed(index=fresh, body=substitute(node.body, {node.index: Affine.index(fresh)}))
        gates = []
        if lanes is None:  # before the bounds lose the lane index: a body the same on every lane still sums per lane
            lanes = self.varies(node)
        if self.lanes is not None:
            node, gates = lane_gated(node, self.lane, self.lanes.extent)
        low, high = self.bound(node.lower, lower=True), self.bound(node.upper, lower=False)
        with self.binding(node.index):
            return self.loop(node, total, low, high, gates, lanes, fresh=into is None)

    def loop(self, node: Sum, total: str, low: Bound, high: Bound, gates=(), lanes=False, fresh=True) -> Temp:
        """The reduction as a loop accumulating into ``total`` (per lane if ``lanes``), which starts at the identity
        if ``fresh``; each term only on the lanes that meet ``gates`` (see :func:`lane_gated`). A sum per lane whose
        body is a sum adds the inner terms straight into its total: no inner total, no pass adding it up per lane
        (one element's nested sums keep their totals: LLVM vectorises the innermost as a reduction of its own)."""
        start = Identity(REDUCTIONS[node.op].identity)
        if fresh and lanes:
            self.declare(total)
            self.emit(Fill(total, self.width, start))
        elif fresh:
            self.emit(Assign(total, start))
        with self.block(partial(For, node.index, low, high), self.gated(gates)):
            if lanes and node.op == "sum" and isinstance(node.body, Sum) and node.body.op == "sum":
                return self._print_Sum(node.body, into=total, lanes=lanes)
            term = self.value(node.body)
            if node.op == "sum":
                return self.store(total, term, lanes, op="+=")
            running = Temp(total, self.lanes if lanes else None)
            return self.store(total, Fold(node.op, running, self.named(term, node.body)), lanes)

    def contribution(self, gradient: str, part) -> None:
        """Eq. 40 for one occurrence (a :class:`~tensoradbook.ad.contribution.Contribution`): its adjoint added
        (:class:`~.kernel_ir.Accumulate`, as the target spells it) into the element of ``gradient`` it reads,
        inside its liberated sums, where its gates hold (elsewhere the element's index may leave the gradient)."""
        inside = " inside the sums over " + ", ".join(s.index for s in part.scope) if part.scope else ""
        self.emit(Comment(f"{expr_text(part.element)}{inside}"))
        with ExitStack() as loops:
            for s in part.scope:
                low, high = self.bound(s.lower, lower=True), self.bound(s.upper, lower=False)
                loops.enter_context(self.block(partial(For, s.index, low, high)))
                loops.enter_context(self.binding(s.index))
            gates, adjoint = peel_gates(part.adjoint)
            for condition, holds in gates:
                loops.enter_context(self.block(partial(Branch, Atoms(condition), holds=holds)))
            self.share(adjoint)
            value = self.value(adjoint)
            self.emit(Accumulate(gradient, self.element(gradient, part.element.indices), value))

    def gated(self, gates) -> Lanes | None:
        """The lanes where a term meets ``gates`` (:func:`lane_gated`); None (the enclosing ones) without gates."""
        if not gates:
            return None
        firsts, lasts = lane_range(gates, self.lane)
        return self.lanes.within([Index(a, floor=False) for a in firsts], [After(Index(a)) for a in lasts])

    def _print_Select(self, node: Select):
        """Both branches, then the one the comparison picks: no branch in the code, so rows of lanes stay
        vectorisable (a branch reads only valid elements: index conditions guard themselves). Except where
        a branch runs a loop and the comparison is the same for every lane: then only the branch taken
        runs (a max's gradient scans the earlier terms only at the extremal element, not at every one)."""
        comparison = Compare(node.op, self.value(node.left), self.value(node.right))
        if not self.varies(node) and any(_has_loop(branch) for branch in (node.then, node.otherwise)):
            return self.branch(comparison, node.then, node.otherwise, lanes=False)
        return Choose(comparison, self.value(node.then), self.value(node.otherwise))

    def _print_If(self, node: If):
        return self.branch(Atoms(node.condition), node.then, node.otherwise, self.varies(node))

    def branch(self, condition, then: Expr, otherwise: Expr, lanes: bool):
        """``then`` or ``otherwise`` as an ``if`` statement: only the branch taken is computed."""
        result = self.temp("c")
        with self.block() as taken:
            read = self.store(result, self.value(then), lanes)
        with self.block(partial(Branch, condition, tuple(taken))):
            self.store(result, self.value(otherwise), lanes)
        return read


class ScalarPrinter(KernelPrinter):
    """Numba on the CPU: one output element (or one row of lanes) per iteration of a ``prange``; off rows of lanes
    its subscripts are unsigned (:class:`~.values.ScalarValues`), one pair of brackets around each index."""

    scalar_reads = True

    @property
    def index_brackets(self) -> int:
        return int(self.lanes is None)


class CudaPrinter(ScalarPrinter):
    """Numba CUDA: one output element per GPU thread, with the device functions of the operation table."""

    spellings = CUDA
    index_brackets = 0  # signed subscripts: a GPU thread has no loop to vectorise


class VectorPrinter(KernelPrinter):
    """numpy: every output element at once over the grid ``_GRID``; conditions are masks, and indices are
    clipped, since masked-out lanes still read."""

    spellings = NUMPY
    part_brackets = 1
    index_brackets = 1

    def element_nesting(self, node: Element) -> int:
        return 2 if not node.indices else super().element_nesting(node)  # x[()]

    def number_nesting(self, node: Number) -> int:
        return 1  # np.float64(...)

    def loop(self, node: Sum, total: str, low: Bound, high: Bound, gates=(), lanes=False, fresh=True) -> Temp:
        identity = Identity(REDUCTIONS[node.op].identity)  # no lanes here: no gates, and every sum its own total
        self.emit(Assign(total, Full(identity)))
        if all(a.is_constant for a in node.lower + node.upper):
            with self.block(partial(For, node.index, low, high)):
                self.emit(Assign(total, Fold(node.op, Temp(total), self.value(node.body))))
            return Temp(total)
        lo, hi = Temp(self.temp("lo")), Temp(self.temp("hi"))
        self.emit(Bounds(lo.name, hi.name, low, high))
        with self.block(partial(For, node.index, Extent(lo, lower=True), Extent(hi, lower=False))):
            body = self.value(node.body)
            self.emit(Assign(total, Fold(node.op, Temp(total), Choose(Within(node.index, lo, hi), body, identity))))
        return Temp(total)

    def branch(self, condition, then: Expr, otherwise: Expr, lanes: bool) -> Choose:
        return Choose(condition, self.value(then), self.value(otherwise))


class BroadcastPrinter(VectorPrinter):
    """numpy over views: an element-wise body whose every read is at plain indices in the output's order (``s[i;
    j] - m[i]``) reads each tensor as a view broadcast against the output (``s[:, :] - m[:, None]``), with no grid
    and no copy; :func:`tensoradbook.codegen.module.broadcasts` says which bodies qualify. ``output`` is the
    output's indices."""

    def __init__(self, shapes: dict, names: set[str], output: tuple[str, ...]):
        super().__init__(shapes, names)
        self.output = list(output)

    def _print_Element(self, node: Element) -> View:
        if not node.indices:
            return View(node.name, ())  # the Numba modules keep a scalar as one element
        read = [a.terms[0][0] for a in node.indices]  # plain indices in the output's order (see broadcasts)
        return View(node.name, tuple(axis in read for axis in self.output[self.output.index(read[0]):]))

    def element_nesting(self, node: Element) -> int:
        return 1


def _has_loop(node: Expr) -> bool:
    """Whether computing ``node`` runs a reduction loop."""
    return any(isinstance(part, Sum) for part in postorder(node))


def _repeated_product(node: Binary) -> bool:
    """Whether ``node`` is a square or a cube, written as a product of its base repeated (no pow call)."""
    return isinstance(node.right, Number) and node.right.value in (2, 3)

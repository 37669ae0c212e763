"""The kernel representation: a generated module as values, planned once and rendered in a target's spelling.

Planning (:mod:`.module`) decides what a module computes and how: which definitions are BLAS products, which
gathers come first, which kernels run on rows of lanes or in parallel, which arrays are scratch, what the
backward pass reads from the forward pass. The printer (:mod:`.printer`) lowers each kernel's expression to
statements over values: loops, branches, accumulations and temporaries as nodes, the operations as the table's
names, indices and bounds as the language's affines, never code. It writes those decisions down as the frozen
values below, once; :mod:`.render` then writes them as source, asking the target (:mod:`.targets`) for its
spelling of each statement (decorators, loop headers, blocks, element loops, allocations, launches, accumulations,
the errstate guard) and the target's values table (:mod:`.values`) for each value. No rendered line is edited
afterwards: whatever a line depends on is a field of its node.

Where the lowering makes a temporary depends on how deeply the spelling of its operations nests brackets, so a
plan is made with one style of printer (the numba, CUDA or numpy one, :attr:`~.targets.Target.printer`); any
target renders it: ``tests/test_c_target.py`` renders the numba target's plans as C with spellings alone.

The nodes, from the inside out:

* values (:class:`Const`, :class:`Read`, :class:`View`, :class:`Temp`, :class:`Op`, :class:`Power`,
  :class:`Compare`, :class:`Choose`, :class:`Fold`, :class:`Identity`; numpy's grids :class:`Full`,
  :class:`Within`, :class:`Extent`) and integers (:class:`Index`, an affine; :class:`Var`, :class:`After`,
  :class:`Bound`; conditions :class:`Atoms`);
* a kernel's statements: :class:`Statements` holding :class:`Declare`, :class:`Assign`, :class:`Fill`,
  :class:`Bounds`, :class:`For`, :class:`LaneLoop`, :class:`Branch`, :class:`Accumulate`, :class:`Comment`;
* inside a kernel: :class:`Unflatten` (the output indices of the element number), :class:`RowBlock` (the lanes
  of a block of a row), :class:`Store` (the element written), :class:`ElementLoop` (every output element, or
  row of lanes), :class:`ScatterLoop` (every forward element, eq. 40);
* kernels: :class:`Kernel`, :class:`BroadcastKernel` (numpy over views), :class:`FusedKernel` (serial kernels
  compiled as one);
* in the entry points: :class:`Allocate`, :class:`Launch`, :class:`BlasProduct`, :class:`GuardedProduct` (a
  product over a padded copy, with its gated kernel where an operand is not finite), :class:`ReadKept` and
  :class:`FillKept` (what the backward pass reads from the forward pass, computed where not given),
  :class:`Alias`;
* the module: :class:`Header`, :class:`ScratchSetup`, :class:`Entry` with :class:`Return` or
  :class:`ReturnGradients`, :class:`GradientsEntry`, :class:`ArraysTable`, and :class:`Module` holding them;
* spelled statements: :class:`Line` and :class:`Block` (a header and an indented body), which a target answers
  the renderer with; planning writes none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the nodes hold these as they are; nothing here calls them
    from ..lang.expr import Affine
    from .contraction import Contraction
    from .printer import Lanes


# -- statements (rendering) ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Line:
    """One statement, as a target spells it (a target answers the renderer with these; planning writes none)."""

    text: str


@dataclass(frozen=True)
class Block:
    """``header`` (ending with ``:``) and its body, one level deeper; an empty body is ``pass`` (as a target
    spells a loop or a guard for the renderer)."""

    header: str
    body: tuple


# -- values of a kernel's body (spelled by the target's values table, :mod:`.values`) -------------------------------
@dataclass(frozen=True)
class Index:
    """An affine index as an integer; with a denominator, its floor (or, ``floor`` false, its ceiling)."""

    affine: Affine
    floor: bool = True


@dataclass(frozen=True)
class Var:
    """The kernel's own integer variable ``name`` (``_first``, ``_stop``: a block's lanes, :class:`RowBlock`)."""

    name: str


@dataclass(frozen=True)
class After:
    """One past the integer ``value``: a range's end from its last value."""

    value: object


@dataclass(frozen=True)
class Bound:
    """The greatest of ``parts`` (integers) where ``lower``, else the least: a range's bound (eqs. 22-26)."""

    parts: tuple
    lower: bool


@dataclass(frozen=True)
class Atoms:
    """The conjunction of index conditions ``atoms`` (the language's :class:`~tensoradbook.lang.expr.Atom`)."""

    atoms: tuple


@dataclass(frozen=True)
class Const:
    """The number ``value``."""

    value: float


@dataclass(frozen=True)
class Identity:
    """A reduction's value over an empty range: 0, or an infinity."""

    value: float


@dataclass(frozen=True)
class Read:
    """The element of tensor ``name`` (of ``shape``) at the affine ``indices``."""

    name: str
    indices: tuple
    shape: tuple


@dataclass(frozen=True)
class View:
    """Tensor ``name`` as a view broadcast against the output: per output axis from its first read, whether the
    tensor has it (numpy over views, :class:`BroadcastKernel`)."""

    name: str
    axes: tuple[bool, ...]


@dataclass(frozen=True)
class Temp:
    """The temporary ``name``, or its current lane's element where it is per lane of ``lanes``."""

    name: str
    lanes: Lanes | None = None


@dataclass(frozen=True)
class Op:
    """Operation ``op`` of the table (:data:`~tensoradbook.lang.ops.OPERATIONS`) over ``operands``."""

    op: str
    operands: tuple


@dataclass(frozen=True)
class Power:
    """``base`` multiplied by itself, ``times`` times in all (a square or a cube: no pow call)."""

    base: object
    times: int


@dataclass(frozen=True)
class Compare:
    """``left op right``, ``op`` a comparison."""

    op: str
    left: object
    right: object


@dataclass(frozen=True)
class Choose:
    """``then`` where ``condition`` holds, else ``otherwise``, both computed."""

    condition: object
    then: object
    otherwise: object


@dataclass(frozen=True)
class Fold:
    """The reduction ``op``'s ``running`` value with one more ``term``."""

    op: str
    running: object
    term: object


@dataclass(frozen=True)
class Full:
    """A grid of the output's shape, every element ``value`` (numpy)."""

    value: object


@dataclass(frozen=True)
class Within:
    """Whether ``low <= index <= high``, element by element of the grids ``low`` and ``high`` (numpy)."""

    index: str
    low: object
    high: object


@dataclass(frozen=True)
class Extent:
    """The least (``lower``) or greatest element of the grid ``grid`` (numpy)."""

    grid: object
    lower: bool


# -- statements of a kernel's body (the printer's lowering of an expression) ------------------------------------
@dataclass(frozen=True)
class Statements:
    """What the expression printer lowered an expression to: its per-lane arrays (:class:`Declare`) first, then
    the statements computing the value."""

    body: tuple
    declarations: tuple = ()
    lanes: bool = False  # on rows of lanes (subscripts may then be spelled otherwise, :mod:`.values`)


@dataclass(frozen=True)
class Declare:
    """A per-lane array ``name`` of ``width`` values, allocated once before the kernel's loops."""

    name: str
    width: int


@dataclass(frozen=True)
class Assign:
    """``name op value`` (``op`` ``=`` or ``+=``); on the current lane of ``lanes`` (the lane's element of the
    per-lane array ``name``) where given."""

    name: str
    value: object
    lanes: Lanes | None = None
    op: str = "="


@dataclass(frozen=True)
class Fill:
    """Every lane of the per-lane array ``name`` (of ``width``) set to ``value``."""

    name: str
    width: int
    value: object


@dataclass(frozen=True)
class Bounds:
    """A sum's bounds ``low`` and ``high`` (per element of a grid) into the names ``lower`` and ``upper``."""

    lower: str
    upper: str
    low: object
    high: object


@dataclass(frozen=True)
class For:
    """``body`` for ``index`` from ``low`` to ``high``, both included."""

    index: str
    low: object
    high: object
    body: tuple


@dataclass(frozen=True)
class LaneLoop:
    """``body`` on each lane of ``lanes``."""

    lanes: Lanes
    body: tuple


@dataclass(frozen=True)
class Branch:
    """``body`` where ``condition`` holds (its negation where not ``holds``), else ``orelse`` (None: nothing)."""

    condition: object
    body: tuple
    orelse: tuple | None = None
    holds: bool = True


@dataclass(frozen=True)
class Accumulate:
    """``value`` added into ``element`` (a :class:`Read`) of the array ``gradient``: eq. 40's add, plain or atomic
    as the target spells it."""

    gradient: str
    element: Read
    value: object


@dataclass(frozen=True)
class Comment:
    """A comment line: what the statements after it compute."""

    text: str


# -- inside a kernel ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Unflatten:
    """The indices ``names`` of ``shape`` of the element number ``_flat``, row-major; with ``blocks`` blocks per
    row, of the row number ``_flat // blocks``."""

    names: tuple[str, ...]
    shape: tuple[int, ...]
    blocks: int = 1


@dataclass(frozen=True)
class RowBlock:
    """``_first`` and ``_stop``: the lanes of block ``_flat % blocks`` of a row of ``extent``, ``width`` each."""

    blocks: int
    width: int
    extent: int


@dataclass(frozen=True)
class Store:
    """``_out`` at the output indices (the whole array where ``indices`` is None) set to ``value``; on each lane of
    ``row`` where given."""

    indices: tuple[str, ...] | None
    value: object = None
    row: Lanes | None = None
    shape: tuple[int, ...] = ()  # the output's


@dataclass(frozen=True)
class ElementLoop:
    """``body`` for every element of an output of ``shape`` (``count`` iterations: elements, or rows of lanes,
    or blocks of rows), ``parallel`` where its work pays for threads. ``indices`` are the output's indices;
    ``unflatten`` the nodes binding them from the element number, for targets that loop one element at a time."""

    count: int
    parallel: bool
    indices: tuple[str, ...]
    shape: tuple[int, ...]
    unflatten: tuple
    body: tuple


@dataclass(frozen=True)
class ScatterLoop:
    """``body`` for every element of the forward output (eq. 40), bound by ``unflatten``."""

    count: int
    unflatten: tuple
    body: tuple


# -- kernels ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Kernel:
    """``name(params)``: a compiled kernel whose parameters have ``shapes``; ``parallel``: its loop runs on
    threads; ``exact``: it compares computed values (no reassociation); ``typed``: compiled when the module loads
    (listed in ``KERNEL_ARRAYS``), else at its first call."""

    name: str
    params: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    parallel: bool
    exact: bool
    body: tuple
    typed: bool = True
    inlined: bool = False  # called from a fused kernel, which compiles it inline (:mod:`.fusion`)


@dataclass(frozen=True)
class FusedKernel:
    """``name(params)``: serial kernels called one after another, ``calls`` (kernel name, its arguments), compiled
    as one (:mod:`.fusion`); ``shapes`` and ``exact`` as a :class:`Kernel`'s."""

    name: str
    params: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    exact: bool
    calls: tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True)
class BroadcastKernel:
    """``name(params)`` as numpy over views of its arguments (:func:`~.module.broadcasts`), not compiled."""

    name: str
    params: tuple[str, ...]
    body: tuple


# -- in the entry points ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Allocate:
    """``name`` of ``shape``: ``how`` is ``"fresh"`` (contents undefined), ``"zeroed"``, or ``"scratch"`` (kept
    from call to call where the target keeps scratch arrays, else fresh)."""

    name: str
    shape: tuple[int, ...]
    how: str = "fresh"


@dataclass(frozen=True)
class Launch:
    """The kernel ``kernel`` run over ``size`` elements on the arrays named ``args`` (names, never expressions: a
    fused kernel takes them as its parameters, :mod:`.fusion`)."""

    kernel: str
    args: tuple[str, ...]
    size: int


@dataclass(frozen=True)
class BlasProduct:
    """``out`` as the numpy (BLAS) code of ``contraction``; ``into_scratch``: written into a scratch array where
    the product lands in the output's order."""

    out: str
    contraction: Contraction
    into_scratch: bool = False


@dataclass(frozen=True)
class GuardedProduct:
    """``product`` where every array of ``finite`` is finite, else ``fallback`` (the gated sum's kernel): a product
    over a zero-padded copy would add the padding's zeros times an inf, NaNs where the gates skip those terms."""

    product: BlasProduct
    finite: tuple[str, ...]
    fallback: tuple


@dataclass(frozen=True)
class ReadKept:
    """``out`` read from the forward pass's ``kept`` where the caller gave it, else computed by ``otherwise``."""

    out: str
    kept: str
    otherwise: tuple


@dataclass(frozen=True)
class FillKept:
    """The forward pass's ``kept`` computed by ``compute`` where the caller did not give it."""

    kept: str
    compute: tuple


@dataclass(frozen=True)
class Alias:
    """``name`` is the array ``value``."""

    name: str
    value: str


# -- the module ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Header:
    """The comment naming the functions the module computes (as text), and the target's imports."""

    texts: tuple[str, ...]


@dataclass(frozen=True)
class ScratchSetup:
    """The module's scratch arrays (:mod:`.scratch`), where the target keeps any."""


@dataclass(frozen=True)
class Return:
    """``return`` of ``names``: one value, or a tuple where ``every`` (a 1-tuple too)."""

    names: tuple[str, ...]
    every: bool = False


@dataclass(frozen=True)
class ReturnGradients:
    """``return {argument: gradient array}``."""

    outputs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Entry:
    """``name(params)``: ``body`` (under the target's guard) then ``returns``."""

    name: str
    params: tuple[str, ...]
    body: tuple
    returns: Return | ReturnGradients


@dataclass(frozen=True)
class GradientsEntry:
    """``gradients(*arguments, adjoint)``: ``_values``, then ``_backward`` on its first ``count`` values (the
    definitions'), the adjoint and, where ``keeps``, the parts the forward pass keeps for the backward pass."""

    arguments: tuple[str, ...]
    adjoint: str
    count: int
    keeps: bool


@dataclass(frozen=True)
class ArraysTable:
    """``KERNEL_ARRAYS``: per typed kernel (its name) the shapes of its array parameters, written as their
    dimensions (all float64, C order)."""

    rows: tuple[tuple[str, tuple[tuple[int, ...], ...]], ...]


@dataclass(frozen=True)
class Module:
    """A generated module: its header, scratch setup (or None), kernels, entry points and types table (or None)."""

    header: Header
    setup: ScratchSetup | None
    kernels: tuple
    entries: tuple
    table: ArraysTable | None

    def compiled_kernels(self) -> dict[str, dict[str, tuple[int, ...]]]:
        """Kernel name -> its parameters' shapes by name, for every compiled kernel (:func:`~.compile.compile_ptx`)."""
        return {k.name: dict(zip(k.params, k.shapes)) for k in self.kernels if isinstance(k, Kernel)}

"""How each target spells a value of a kernel's body (:mod:`.kernel_ir`'s values): the renderer's table for them.

A value is a tree the printer (:mod:`.printer`) lowered an expression to: operations of the table, element reads at
affine indices, numbers, temporaries, selects, bounds and conditions. One class per style of spelling, one
``_<Node>`` method per value node, each returning the node's code over its operands' code; the operations' own
spellings are the target's table (:mod:`.spellings`). :class:`ScalarValues` writes Python as Numba compiles it on the
CPU, :class:`CudaValues` as Numba CUDA does, :class:`VectorValues` numpy over whole grids (and views,
:class:`~.kernel_ir.View`). A target of another language (C, say) is a class of its own here, beside its statements'
spellings (:class:`~.targets.Target`).
"""

from __future__ import annotations

from collections.abc import Mapping

from .kernel_ir import Index
from .printer import py_name
from .spellings import ACCUMULATE, CUDA, NUMPY, NUMPY_ACCUMULATE, SCALAR, spelled


class ScalarValues:
    """Numba on the CPU, one element at a time: Python's own syntax, the ``math`` module. Off rows of lanes
    (``lanes`` false), subscripts are unsigned (``x[np.uint64(i + p - 2)]``): every read the kernels make is in range
    (the bounds and conditions of the derivation see to it), and Numba then leaves out its check for negative
    indices, whose branch on every read keeps LLVM from vectorising loops with variable bounds (a padded
    convolution's weight gradient, for one); rows of lanes vectorise as they are, and slower with them."""

    spellings: Mapping[str, str] = SCALAR  # each operation's code (codegen.spellings)
    folds: Mapping[str, str] = ACCUMULATE  # a reduction's running value {0} and term {1}, folded
    maximum, minimum = "max", "min"
    infinity = "math.inf"

    def __init__(self, lanes: bool = False):
        self.lanes = lanes

    def text(self, value) -> str:
        return getattr(self, f"_{type(value).__name__}")(value)

    # -- integers: indices, bounds, conditions
    def _Index(self, value: Index) -> str:
        """An affine index as integer code; with a denominator, its floor (or ceiling) division."""
        a = value.affine
        parts = []  # (whether subtracted, the term's code)
        for name, c in a.terms:
            parts.append((c < 0, self.name(name) if abs(c) == 1 else f"{abs(c)} * {self.name(name)}"))
        if a.constant or not parts:
            parts.append((a.constant < 0, str(abs(a.constant))))
        (negative, first), rest = parts[0], parts[1:]
        text = ("-" if negative else "") + first + "".join(f" {'-' if neg else '+'} {term}" for neg, term in rest)
        return text if a.denominator == 1 else self.division(text, a.denominator, value.floor)

    def division(self, text: str, denominator: int, floor: bool) -> str:
        """The integer code ``text`` divided by ``denominator``, rounded down (``floor``) or up."""
        if floor:
            return f"({text}) // {denominator}"
        return f"-(-({text}) // {denominator})"

    @staticmethod
    def name(name: str) -> str:
        """A user's tensor or index name as the generated code has it."""
        return py_name(name)

    def _Var(self, value) -> str:
        return value.name

    def _After(self, value) -> str:
        return f"{self.text(value.value)} + 1"

    def _Bound(self, value) -> str:
        """The greatest (``lower``) or least of the parts, as nested calls from the left (eqs. 22-26)."""
        pick = self.maximum if value.lower else self.minimum
        texts = [self.text(part) for part in value.parts]
        out = texts[0]
        for text in texts[1:]:
            out = f"{pick}({out}, {text})"
        return out

    def _Atoms(self, value) -> str:
        parts = []
        for atom in value.atoms:
            code = self.text(Index(atom.affine))
            if atom.inequality:
                parts.append(f"{code} >= 0")
            elif atom.modulus:
                parts.append(f"({code}) % {atom.modulus} == 0")
            else:
                parts.append(f"{code} == 0")
        return self.conjunction(parts)

    def conjunction(self, parts: list[str]) -> str:
        return " and ".join(parts)

    # -- numbers
    def _Const(self, value) -> str:
        return f"({float(value.value)!r})" if value.value < 0 else repr(float(value.value))

    def _Identity(self, value) -> str:
        """A reduction's value over an empty range: ``0.0``, or the infinity with its sign."""
        if abs(value.value) != float("inf"):
            return repr(value.value)
        return ("-" if value.value < 0 else "") + self.infinity

    def _Read(self, value) -> str:
        indices = [self.text(Index(a)) for a in value.indices]
        if not value.shape:  # a 0-d tensor is stored as one element
            return f"{self.name(value.name)}[0]"
        return self.element(self.name(value.name), indices, value.shape)

    def element(self, name: str, indices: list[str], shape: tuple) -> str:
        if not self.lanes:
            indices = [f"np.uint64({index})" for index in indices]
        return f"{name}[{', '.join(indices)}]"

    def _Temp(self, value) -> str:
        return value.name if value.lanes is None else f"{value.name}[{self.slot(value.lanes)}]"

    def slot(self, lanes) -> str:
        """The subscript of the current lane in a per-lane array."""
        return self.name(lanes.name) + ("" if lanes.base is None else f" - {lanes.base}")

    # -- operations
    def _Op(self, value) -> str:
        return spelled(self.spellings, value.op).format(*map(self.text, value.operands))

    def _Power(self, value) -> str:
        return "(" + " * ".join([self.text(value.base)] * value.times) + ")"

    def _Compare(self, value) -> str:
        return f"{self.text(value.left)} {value.op} {self.text(value.right)}"

    def _Choose(self, value) -> str:
        return f"({self.text(value.then)} if {self.text(value.condition)} else {self.text(value.otherwise)})"

    def _Fold(self, value) -> str:
        return self.folds[value.op].format(self.text(value.running), self.text(value.term))


class CudaValues(ScalarValues):
    """Numba CUDA: the device functions of its table; signed subscripts (a GPU thread has no loop to vectorise)."""

    spellings = CUDA

    def element(self, name: str, indices: list[str], shape: tuple) -> str:
        return f"{name}[{', '.join(indices)}]"


class VectorValues(ScalarValues):
    """numpy over the grid ``_GRID`` of every output element at once: conditions are masks, selects
    ``np.where``, and indices are clipped, since masked-out lanes still read."""

    spellings = NUMPY
    folds = NUMPY_ACCUMULATE
    maximum, minimum = "np.maximum", "np.minimum"
    infinity = "np.inf"

    def conjunction(self, parts: list[str]) -> str:
        return " & ".join(f"({p})" for p in parts)

    def _Const(self, value) -> str:
        # numpy scalars: 1e308 ** 7.25 is inf and 1.0 / 0 is inf, as in the reference
        return f"np.float64({float(value.value)!r})"

    def _Read(self, value) -> str:
        if not value.shape:
            return f"{self.name(value.name)}[()]"
        return super()._Read(value)

    def element(self, name: str, indices: list[str], shape: tuple) -> str:
        indices = [f"np.clip({i}, 0, {n - 1})" for i, n in zip(indices, shape)]
        return f"{name}[{', '.join(indices)}]"

    def _View(self, value) -> str:
        """A tensor as a view broadcast against the output (``m[:, None]``); a scalar as the Numba modules keep it."""
        if not value.axes:
            return f"{self.name(value.name)}[0]"
        return f"{self.name(value.name)}[{', '.join(':' if read else 'None' for read in value.axes)}]"

    def _Choose(self, value) -> str:
        return f"np.where({self.text(value.condition)}, {self.text(value.then)}, {self.text(value.otherwise)})"

    def _Full(self, value) -> str:
        return f"np.full(_GRID, {self.text(value.value)})"

    def _Within(self, value) -> str:
        index = self.name(value.index)
        return f"({self.text(value.low)} <= {index}) & ({index} <= {self.text(value.high)})"

    def _Extent(self, value) -> str:
        return f"np.{'min' if value.lower else 'max'}({self.text(value.grid)})"


"""Printing element-wise functions: the report's text notation (sec. 6) and LaTeX for Jupyter.

:func:`to_text` writes what the report prints, ``f[i; j] = exp (-sum{k}_0^4 (...))``,
with the fewest parentheses that keep the tree: ``parse(to_text(fn), fn.shapes) == fn``
for every function :func:`tensoradbook.lang.parser.parse` accepts, including the
derivatives of sec. 5.3 with their ``max``/``min`` and ``ceil``/``floor``
bounds (eqs. 22-26) and their ``if`` conditions (eqs. 16, 17 and 34).
:func:`to_latex` renders the same tree as mathematics: sums with bounds,
Kronecker deltas, Iverson brackets, powers and fractions.

One ``_print_<Node>`` method per node class, as sympy's printers do; each
returns the text and its precedence, and the caller adds parentheses.
"""

from __future__ import annotations

import re
from numbers import Integral
from typing import TYPE_CHECKING

from .expr import Affine, Atom, Binary, Element, Expr, If, Number, Select, Sum, Unary, postorder
from .ops import ATOM, COMPARISONS, MUL, OPERATIONS, POWER, PREFIX, REDUCTIONS, UNARY

if TYPE_CHECKING:  # Function and Program print themselves with this module
    from .function import Function
    from .program import Program

_AND = r" \wedge "
_SINGLE_TOKEN = re.compile(r"\d+|[A-Za-z][A-Za-z0-9_]*")


def _linear(affine: Affine, name, times: str) -> str:
    """The numerator of ``affine`` as signed terms: positive terms first, then the negative ones and the
    constant (a positive constant leads if no term is positive: ``3 - i`` rather than ``-i + 3``)."""
    pieces = [(c, name(n)) for n, c in sorted(affine.terms, key=lambda t: (t[1] < 0, t[0]))]
    if affine.constant or not pieces:
        leads = affine.constant > 0 and not any(c > 0 for c, _ in pieces)
        pieces.insert(0 if leads else len(pieces), (affine.constant, None))
    out = ""
    for k, (c, symbol) in enumerate(pieces):
        magnitude = abs(c) if k else c
        if symbol is None:
            text = str(magnitude)
        elif magnitude in (1, -1):
            text = symbol if magnitude == 1 else "-" + symbol
        else:
            text = f"{magnitude}{times}{symbol}"
        out += text if not k else (" - " if c < 0 else " + ") + text
    return out


def _pieces(affine: Affine) -> int:
    return len(affine.terms) + (affine.constant != 0)


def affine_text(affine: Affine) -> str:
    """An index as it is written: ``2 * i - j + 3``, ``dd_0 - 2``, ``(b - 3) / 2``."""
    numerator = _linear(affine, str, " * ")
    if affine.is_integral:
        return numerator
    if _pieces(affine) > 1:
        numerator = f"({numerator})"
    return f"{numerator} / {affine.denominator}"


def bound_text(affines: tuple[Affine, ...], lower: bool, standalone: bool = False) -> str:
    """A sum bound in the report's notation: ``0``, ``(dd_0 - 2)``, ``(max [dd_0 - 2; 0])``, ``(floor(b / 2))``.

    Inside ``sum{k}_..^..`` a bound of more than one token is parenthesised;
    ``standalone`` leaves that out, for bounds written as ``lower <= k <= upper``.
    """
    items = [_rounded_text(a, lower) for a in affines]
    text = items[0] if len(items) == 1 else f"{'max' if lower else 'min'} [{'; '.join(items)}]"
    return text if standalone or _SINGLE_TOKEN.fullmatch(text) else f"({text})"


def _rounded_text(affine: Affine, lower: bool) -> str:
    """One bound item: ``dd_0 - 2`` or ``ceil((b - 3) / 2)``; where the numerator's numbers reach MAX_INTEGER
    (Fourier-Motzkin multiplies a bound ``p + 2**52`` by the 3 of ``x[3 * p]``) the integer part is taken out,
    ``floor(dy_1 / 3) + 4503599627370497``, so that every number written stays below it."""
    if affine.is_integral:
        return affine_text(affine)
    rounding = "ceil" if lower else "floor"
    if len(affine.written_parts) == 1:
        return f"{rounding}({affine_text(affine)})"
    fraction, whole = affine.written_parts
    rest = affine_text(whole)
    return f"{rounding}({affine_text(fraction)}) " + (f"- {rest[1:]}" if rest.startswith("-") else f"+ {rest}")


def atom_text(atom: Atom) -> str:
    """One condition of an ``if``: ``dc_0 - dc_1 = 0``, ``(b - 1) % 3 = 0`` or ``6 - dd_0 >= 0``."""
    text = affine_text(atom.affine)
    if atom.inequality:
        return f"{text} >= 0"
    if not atom.modulus:
        return f"{text} = 0"
    return f"{f'({text})' if _pieces(atom.affine) > 1 else text} % {atom.modulus} = 0"


def _number_text(value) -> str:
    # repr is the shortest text that reads back as the same float
    return str(int(value)) if isinstance(value, Integral) else repr(float(value))


class _Printer:
    """Shared precedence handling: :meth:`show` parenthesises a child looser than ``minimum``.

    Every node is printed once, children first, without recursion: a node's
    ``_print_`` method finds its children's text already made (derivatives are
    hundreds of levels deep, and share subtrees).
    """

    def __init__(self):
        self.printed: dict[int, tuple[str, int]] = {}  # id(node) -> (text, precedence)

    def show(self, node: Expr, minimum: int = PREFIX) -> str:
        if id(node) not in self.printed:
            for each in postorder(node, below=lambda n: id(n) not in self.printed):
                if id(each) not in self.printed:
                    self.printed[id(each)] = getattr(self, "_print_" + type(each).__name__)(each)
        text, precedence = self.printed[id(node)]
        return self.parens(text) if precedence < minimum else text

    @staticmethod
    def parens(text: str) -> str:
        return f"({text})"


class _TextPrinter(_Printer):
    """The report's notation; every choice here is one :func:`~tensoradbook.lang.parser.parse` reads back."""

    def _print_Number(self, node: Number):
        text = _number_text(node.value)
        return text, UNARY if text.startswith("-") else ATOM

    def _print_Element(self, node: Element):
        return f"{node.name}[{'; '.join(affine_text(a) for a in node.indices)}]", ATOM

    def _print_Unary(self, node: Unary):
        if node.op != "neg":
            return f"{node.op} ({self.show(node.arg)})", ATOM
        arg = node.arg
        # -(2) and -(-x): "-2" would read back as the number -2, and "--x" is hard to read
        if isinstance(arg, Number) or (isinstance(arg, Unary) and arg.op == "neg"):
            return f"-({self.show(arg)})", UNARY
        return "-" + self.show(arg, UNARY), UNARY

    def _print_Binary(self, node: Binary):
        precedence = OPERATIONS[node.op].precedence
        if OPERATIONS[node.op].is_function:
            return f"{node.op} ({self.show(node.left)}, {self.show(node.right)})", ATOM
        if node.op == "**":  # right-associative, and its exponent may carry a unary minus
            left, right = self.show(node.left, ATOM), self.show(node.right, UNARY)
        else:  # left-associative: an equal-precedence right operand keeps its parentheses
            left, right = self.show(node.left, precedence), self.show(node.right, precedence + 1)
        return f"{left} {node.op} {right}", precedence

    def _print_Sum(self, node: Sum):
        lower, upper = bound_text(node.lower, lower=True), bound_text(node.upper, lower=False)
        return f"{node.op}{{{node.index}}}_{lower}^{upper} ({self.show(node.body)})", UNARY

    def _print_If(self, node: If):
        condition = " and ".join(atom_text(a) for a in node.condition)
        return f"if {{{condition}}} then ({self.show(node.then)}) else ({self.show(node.otherwise)})", UNARY

    def _print_Select(self, node: Select):
        condition = f"{self.show(node.left)} {node.op} {self.show(node.right)}"
        return f"if {{{condition}}} then ({self.show(node.then)}) else ({self.show(node.otherwise)})", UNARY



def latex_name(name: str) -> str:
    """``x`` stays, ``dd`` is upright, ``dd_z1`` is ``\\mathrm{dd}_{\\mathrm{z1}}``."""
    base, _, sub = name.partition("_")
    head = base if len(base) == 1 else rf"\mathrm{{{base}}}"
    if not sub:
        return head
    return f"{head}_{{{sub if sub.isdigit() else latex_name(sub)}}}"


def affine_latex(affine: Affine) -> str:
    numerator = _linear(affine, latex_name, " ")
    return numerator if affine.is_integral else rf"\frac{{{numerator}}}{{{affine.denominator}}}"


def _subscripted(name: str, subscripts: list[str]) -> str:
    symbol = latex_name(name)
    if not subscripts:
        return symbol
    # a name that has a subscript of its own is grouped, so the indices form a second one
    head = f"{{{symbol}}}" if "_" in name else symbol
    return f"{head}_{{{','.join(subscripts)}}}"


def _sides(affine: Affine) -> tuple[str, str, bool]:
    """``affine`` as ``left - right``, both with positive coefficients, and whether it was negated to get a
    positive term on the left (``i = j``, ``i >= 2``, ``i <= 4``)."""
    flipped = not any(c > 0 for _, c in affine.terms)
    if flipped:
        affine = -affine
    positive = Affine.of({n: c for n, c in affine.coefficients.items() if c > 0})
    return affine_latex(positive), affine_latex(positive - affine), flipped


class _LatexPrinter(_Printer):
    """Mathematics for a notebook; it only has to read well, not to read back."""

    @staticmethod
    def parens(text: str) -> str:
        return rf"\left({text}\right)"

    def _print_Number(self, node: Number):
        text = _number_text(node.value)
        if "e" in text:
            mantissa, exponent = text.split("e")
            power = f"10^{{{int(exponent)}}}"
            return (power if mantissa == "1" else rf"{mantissa} \cdot {power}"), MUL
        if text in ("inf", "-inf"):
            text = text.replace("inf", r"\infty")
        return text, UNARY if text.startswith("-") else ATOM

    def _print_Element(self, node: Element):
        return _subscripted(node.name, [affine_latex(a) for a in node.indices]), ATOM

    def _print_Unary(self, node: Unary):
        arg = node.arg
        if node.op != "neg":
            return OPERATIONS[node.op].latex.format(self.show(arg)), ATOM
        if isinstance(arg, Sum):
            return "-" + self.show(arg), UNARY
        if isinstance(arg, Unary) and arg.op == "neg":
            return "-" + self.parens(self.show(arg)), UNARY
        return "-" + self.show(arg, UNARY), UNARY

    def _print_Binary(self, node: Binary):
        row = OPERATIONS[node.op]
        if row.is_function:
            return row.latex.format(self.show(node.left), self.show(node.right)), ATOM
        if node.op == "/":  # the fraction bar groups both operands
            return row.latex.format(self.show(node.left), self.show(node.right)), MUL
        if node.op == "**":  # the exponent is raised: only the base may need brackets
            return row.latex.format(self.show(node.left, ATOM), self.show(node.right)), POWER
        # + and * are associative, so only - needs its right operand parenthesised at equal precedence
        precedence = row.precedence
        right_minimum = precedence + 1 if node.op == "-" else precedence
        return row.latex.format(self.show(node.left, precedence), self.show(node.right, right_minimum)), precedence

    def _print_Sum(self, node: Sum):
        body = self.factor(node.body)
        lower, upper = self.bound(node.lower, lower=True), self.bound(node.upper, lower=False)
        return rf"{REDUCTIONS[node.op].latex}_{{{latex_name(node.index)}={lower}}}^{{{upper}}} {body}", PREFIX

    def _print_Select(self, node: Select):
        return self.cases(node, f"{self.show(node.left)} {COMPARISONS[node.op].latex} {self.show(node.right)}")

    def _print_If(self, node: If):
        if node.otherwise == Number(0):
            deltas = [a for a in node.condition if not (a.modulus or a.inequality)]
            others = [self.atom(a) for a in node.condition if a not in deltas]
            factors = [r"\delta_{{{},{}}}".format(*_sides(a.affine)[:2]) for a in deltas]
            if others:  # an Iverson bracket: 1 where the conditions hold, else 0
                factors.append(r"\left[\," + _AND.join(others) + r"\,\right]")
            return r" \, ".join(factors + [self.factor(node.then)]), PREFIX
        return self.cases(node, _AND.join(self.atom(a) for a in node.condition))

    def cases(self, node: If | Select, condition: str):
        return (rf"\begin{{cases}} {self.show(node.then)} & \text{{if }} {condition} \\ "
                rf"{self.show(node.otherwise)} & \text{{otherwise}} \end{{cases}}"), PREFIX

    def factor(self, node: Expr) -> str:
        """The last factor after a sum sign or a delta: nested sums and deltas read as one product,
        anything looser than a product (or starting with a minus) is grouped."""
        text = self.show(node, PREFIX if isinstance(node, (Sum, If, Select)) else MUL)
        return self.parens(text) if text.startswith("-") else text

    @staticmethod
    def bound(affines: tuple[Affine, ...], lower: bool) -> str:
        rounding = (r"\left\lceil ", r" \right\rceil") if lower else (r"\left\lfloor ", r" \right\rfloor")
        items = [affine_latex(a) if a.is_integral else rounding[0] + affine_latex(a) + rounding[1]
                 for a in affines]
        if len(items) == 1:
            return items[0]
        return rf"\{'max' if lower else 'min'}\left({', '.join(items)}\right)"

    @staticmethod
    def atom(atom: Atom) -> str:
        if atom.modulus:
            return rf"{affine_latex(atom.affine)} \equiv 0 \pmod{{{atom.modulus}}}"
        left, right, flipped = _sides(atom.affine)
        relation = (r"\leq" if flipped else r"\geq") if atom.inequality else "="
        return f"{left} {relation} {right}"


def expr_text(node: Expr) -> str:
    """One expression in the report's notation."""
    return _TextPrinter().show(node)


def expr_latex(node: Expr) -> str:
    """One expression as LaTeX (no math delimiters)."""
    return _LatexPrinter().show(node)


def to_text(fn: Function | Program) -> str:
    """``name[i; j] = body`` in the report's notation, one line per definition of a program;
    :func:`~tensoradbook.lang.parser.parse` reads it back."""
    # a Program by its definitions: lang.program imports this module, so no isinstance here
    return "\n".join(f"{d.name}[{'; '.join(d.indices)}] = {expr_text(d.body)}"
                     for d in getattr(fn, "definitions", (fn,)))


def to_latex(fn: Function | Program) -> str:
    """``$\\displaystyle f_{i,j} = ...$`` for Jupyter's ``_repr_latex_``; a program's definitions aligned at ``=``."""
    definitions = getattr(fn, "definitions", (fn,))
    equals = "=" if len(definitions) == 1 else "&="
    rows = r" \\ ".join(f"{_subscripted(d.name, [latex_name(i) for i in d.indices])} {equals} {expr_latex(d.body)}"
                        for d in definitions)
    if len(definitions) == 1:
        return rf"$\displaystyle {rows}$"
    return rf"$\displaystyle \begin{{aligned}} {rows} \end{{aligned}}$"

"""Reading element-wise functions in the report's own notation (sec. 6) into :mod:`tensoradbook.lang.expr` trees.

:func:`parse` accepts what the report prints, so an example can be pasted from it::

    f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))

and the derivatives it prints (sec. 5.3): sums with bounds ``max [..; ..]`` / ``min [..; ..]`` and, for rational
bounds, ``ceil(..)`` / ``floor(..)`` (eqs. 22-26; with an integer part after it where the numerator is large,
``floor(dy_1 / 3) + 4503599627370497``), and ``if {..} then (..) else (..)`` for Kronecker deltas, integrality
conditions (``b % 2 = 0``) and feasibility conditions (``b - 3 >= 0``, eq. 34).

A sum's body is always parenthesised, ``sum{k}_0^3 (x[k] ** 2)``, and a sum raised to a power is too,
``(sum{k}_0^3 (x[k])) ** 2``: read the other way, ``sum{k}_0^3 x[k] ** 2`` would square the sum where a reader of
Σ x_k² sees a sum of squares.

The parser is responsible for the function being well defined: every index name is bound, every argument index is
integer-affine (sec. 5: ``A alpha``) and an index with a division is an integer wherever it is read, every argument
has a shape with the right number of dimensions, and no index ever leaves its argument's shape. Those last two
checks are exact: the indices reachable at an element form a union of integer polytopes (the output box, the
enclosing sums' bounds, the enclosing thens' conditions and, for each enclosing else, one way its condition fails),
searched for a bad point with Fourier-Motzkin elimination (sec. 4.2).

It also keeps everything it accepts computable: the tree is at most :data:`MAX_DEPTH` deep with at most
:data:`MAX_NESTED_SUMS` nested sums (and :data:`MAX_BOUNDS` bounds in a ``max``/``min`` list; all in
:mod:`tensoradbook.lang.limits`), index arithmetic stays below :data:`MAX_INTEGER` (64-bit kernels), a tensor has
at most :data:`MAX_ELEMENTS` elements, and every number literal is one that float64 holds and the printer writes
back (ASCII digits only). The text itself is at most :data:`MAX_SOURCE_CHARS` characters.

Every mistake is an :class:`~tensoradbook.lang.expr.ExpressionError` that says what is wrong and shows the source
line with a caret under the offending token (a window of a long line, :func:`~tensoradbook.lang.tokens.caret_block`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from .expr import Affine, Atom, Binary, Element, Expr, ExpressionError, If, Number, Select, Span, Sum, Unary
from .function import Function
from .program import HEAD, Program, definition_lines
from .limits import MAX_BOUNDS, MAX_DEPTH, MAX_INTEGER, MAX_NESTED_SUMS, MAX_SOURCE_CHARS
from .ops import COMPARISONS, FUNCTIONS, OPERATIONS, REDUCTIONS
from .evaluate import upper_bound
from .scope import Polytope, Scope, SumFrame, failures, index_box, lattice_implies_divisible, parts_reach
from .shapes import check_shapes, shape_text
from .tokens import KEYWORDS, SEPARATORS, TOKEN, Token, caret_block, character_name, shown
from .printer import affine_text, atom_text


@dataclass(frozen=True)
class _Index:
    """An index expression while it is read: its value, where it is, and whether it is a top-level +/-."""

    affine: Affine
    start: int
    end: int
    additive: bool = False


@dataclass(frozen=True)
class _Use:
    """One argument element, remembered for the range check."""

    element: Element
    spans: tuple[tuple[int, int], ...]
    scope: Scope


def _side(lower: bool) -> str:
    return "a lower bound" if lower else "an upper bound"


class _Parser:
    """Recursive descent over the token list; one method per rule of the notation."""

    def __init__(self, text: str, shapes: dict):
        self.text = text
        self.shapes = shapes
        self.tokens = self._tokenize(text)
        self.pos = 0
        self.uses: list[_Use] = []
        self.arithmetic: list[tuple[tuple[Affine, ...], int, int, Scope]] = []  # bounds, conditions: check_reach
        self.polytopes: dict[Scope, list[Polytope]] = {}  # the non-empty pieces where an element is read
        self.name = ""
        self.out_shape: tuple[int, ...] = ()
        # parentheses, exponents and unparenthesised if branches open around the current token: the
        # parser's recursion (minus signs in a row are read in a loop)
        self.nesting = 0
        self.depths: dict[int, int] = {}  # id(node) -> depth of the tree below it; leaves are 1

    # --- limits on nesting ---------------------------------------------------

    def enter(self, token: Token):
        """One more level of nesting at ``token``: refused past MAX_DEPTH, long before the recursion of
        this parser (a few Python frames per level) nears Python's limit. The printer writes at most
        one per node, so any tree within MAX_DEPTH reads back."""
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            self.fail_at(f"nested more than {MAX_DEPTH} levels deep (MAX_DEPTH); split the function into "
                         "smaller ones", token)

    def leave(self):
        self.nesting -= 1

    def made(self, node: Expr, token: Token) -> Expr:
        """``node``, checked to be at most MAX_DEPTH deep; ``token`` is the operator that made it."""
        depth = 1 + max(self.depths.get(id(child), 1) for child in node.children())
        if depth > MAX_DEPTH:
            self.fail_at(f"the expression is more than {MAX_DEPTH} levels deep here (MAX_DEPTH): split the function "
                         "into smaller ones, or group a long chain of terms as (a + b) + (c + d)", token)
        self.depths[id(node)] = depth
        return node

    # --- tokens and errors -------------------------------------------------

    def fail(self, message: str, start: int, end: int):
        raise ExpressionError(f"{message}\n{caret_block(self.text, start, end)}")

    def fail_at(self, message: str, token: Token):
        self.fail(message, token.start, token.end)

    def _tokenize(self, text: str) -> list[Token]:
        tokens, pos = [], 0
        while pos < len(text):
            match = TOKEN.match(text, pos)
            if match is None:
                self.fail(f"unexpected character {character_name(text[pos])}", pos, pos + 1)
            kind = match.lastgroup
            if kind != "space":
                tokens.append(Token(match.group() if kind == "op" else kind, match.group(), pos, match.end()))
            pos = match.end()
        for before, after in zip(tokens, tokens[1:]):
            if before.kind == "number" and after.kind == "name" and before.end == after.start:
                self.fail(f"write a product with '*': {shown(before.text)} * {shown(after.text)}", before.start,
                          after.end)
        tokens.append(Token("end", "", len(text), len(text)))
        return tokens

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.pos + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        token = self.peek()
        self.pos = min(self.pos + 1, len(self.tokens) - 1)
        return token

    def expect(self, kind: str, what: str, hint: str = "") -> Token:
        token = self.peek()
        if token.kind != kind:
            self.fail_at(f"expected {what}, found {token.describe()}{hint}", token)
        return self.advance()

    def expect_name(self, what: str) -> Token:
        token = self.expect("name", what)
        if token.text in KEYWORDS:
            self.fail_at(f"{token.text!r} is a reserved word and cannot be {what}", token)
        return token

    # --- the function ------------------------------------------------------

    def function(self) -> Function:
        if self.peek().kind == "end":
            raise ExpressionError("empty text: write a function such as f[i] = x[i] ** 2")
        head = self.expect_name("the output's name")
        self.name = head.text
        self.expect("[", f"'[' after the output's name (a scalar output is written {head.text}[])")
        names = self.output_indices()
        close = self.expect("]", "';', ',' or ']' in the output's indices")
        shape = self.out_shape = self.shape_of(head.text, len(names), "the output", head.start, close.end)
        self.expect("=", "'=' after the output")
        body = self.expression(Scope(tuple(t.text for t in names)))
        if self.peek().kind != "end":
            self.fail_at(f"unexpected {self.peek().describe()} after the end of the expression", self.peek())
        intervals = {}
        for parts, start, end, scope in self.arithmetic + [
                ((affine,), start, end, use.scope) for use in self.uses
                for affine, (start, end) in zip(use.element.indices, use.spans)]:
            if scope not in intervals:
                intervals[scope] = index_box(scope, shape)
            if intervals[scope] is not None:  # else inside a sum that is empty everywhere: never computed
                self.check_reach(parts, start, end, intervals[scope])
        for use in self.uses:
            self.check_range(use)
        return Function(head.text, tuple(t.text for t in names), body, self.shapes, self.text)

    def output_indices(self) -> list[Token]:
        """The output's index names up to its ']', each once."""
        names: list[Token] = []
        if self.peek().kind != "]":
            names.append(self.expect_name("an output index"))
            while self.peek().kind in SEPARATORS:
                self.advance()
                names.append(self.expect_name("an output index"))
        seen = set()
        for token in names:
            if token.text in seen:
                self.fail_at(f"output index {token.describe()} appears twice", token)
            seen.add(token.text)
        return names

    def shape_of(self, name: str, n_indices: int, role: str, start: int, end: int) -> tuple[int, ...]:
        """The shape of ``name``, which must exist and have one size per index."""
        plural = "index" if n_indices == 1 else "indices"
        if name not in self.shapes:
            example = shape_text(tuple(f"n{k}" for k in range(n_indices))).replace("'", "")
            self.fail(f"no shape given for {role} {shown(name)!r} ({n_indices} {plural}): add it to shapes, "
                      f"e.g. shapes[{shown(name)!r}] = {example}", start, end)
        shape = self.shapes[name]
        if len(shape) != n_indices:
            self.fail(f"{role} {shown(name)!r} has shape {shape_text(shape)} but {n_indices} {plural}", start, end)
        return shape

    # --- scalar expressions: + -, then * /, then unary minus, then ** ------

    def expression(self, scope: Scope) -> Expr:
        left = self.term(scope)
        while self.peek().kind in ("+", "-"):
            op = self.advance()
            right = self.term(scope)
            left = self.made(Binary(op.text, left, right, span=Span(left.span.start, right.span.end)), op)
        return left

    def term(self, scope: Scope) -> Expr:
        left = self.unary(scope)
        while self.peek().kind in ("*", "/"):
            op = self.advance()
            right = self.unary(scope)
            left = self.made(Binary(op.text, left, right, span=Span(left.span.start, right.span.end)), op)
        return left

    def unary(self, scope: Scope) -> Expr:
        # "-2" is the number -2, but "-2 ** x" is -(2 ** x), as in Python
        def negative_number() -> bool:
            return self.peek().kind == "-" and self.peek(1).kind == "number" and self.peek(2).kind != "**"

        signs = []  # minus signs in a row are read without recursion, then applied innermost first
        while self.peek().kind == "-" and not negative_number():
            signs.append(self.advance())
        if negative_number():
            token, literal = self.advance(), self.advance()
            node = Number(-self.number_value(literal), span=Span(token.start, literal.end))
        else:
            node = self.power(scope)
        for sign in reversed(signs):
            node = self.made(Unary("neg", node, span=Span(sign.start, node.span.end)), sign)
        return node

    def at_reduction(self) -> bool:
        """Whether a reduction starts here: ``sum{``, ``max{`` or ``min{`` (``max (a, b)`` is a function)."""
        token = self.peek()
        return token.kind == "name" and token.text in REDUCTIONS and (token.text == "sum" or self.peek(1).kind == "{")

    def power(self, scope: Scope) -> Expr:
        bare_sum = self.at_reduction()
        base = self.primary(scope)
        if self.peek().kind != "**":
            return base
        if bare_sum:  # sum{k}_0^3 (x[k]) ** 2 reads as the sum of squares to many, so say which
            header = self.text[base.span.start:base.body.span.start].rstrip(" (")
            self.fail_at(f"parenthesise a sum raised to a power, ({header} (...)) ** ..., or write the power "
                         f"inside: {header} (... ** ...)", self.peek())
        operator = self.advance()
        self.enter(operator)
        exponent = self.unary(scope)  # right-associative: x ** y ** z is x ** (y ** z)
        self.leave()
        return self.made(Binary("**", base, exponent, span=Span(base.span.start, exponent.span.end)), operator)

    def number_value(self, token: Token) -> int | float:
        """The literal's value: an int below MAX_INTEGER, or a finite, non-zero-rounding float (whose repr,
        which the printer writes, reads back as the same float)."""
        if token.text.isdigit():
            return self.integer_value(token, "write a float instead, e.g. 1e20")
        value = float(token.text)
        if math.isinf(value):
            self.fail_at(f"the number {shown(token.text)} is too large for float64 (at most about 1.8e308)", token)
        if value == 0 and token.text.lower().split("e")[0].strip("0.") != "":
            self.fail_at(f"the number {shown(token.text)} is too small for float64 (at least about 5e-324) and would "
                         "read as 0", token)
        return value

    def integer_value(self, token: Token, hint: str) -> int:
        digits = token.text.lstrip("0")
        # the length first: int() of thousands of digits is slow and refused by Python itself
        if len(digits) > len(str(MAX_INTEGER)) or int(digits or "0") >= MAX_INTEGER:
            shown = digits if len(digits) <= 20 else f"{digits[:8]}...({len(digits)} digits)"
            self.fail_at(f"the integer {shown} is too large: integers are below MAX_INTEGER = 2**53 = "
                         f"{MAX_INTEGER}; {hint}", token)
        return int(digits or "0")

    def primary(self, scope: Scope) -> Expr:
        token = self.peek()
        if token.kind == "number":
            self.advance()
            return Number(self.number_value(token), span=Span(token.start, token.end))
        if token.kind == "(":
            self.advance()
            self.enter(token)
            inner = self.expression(scope)
            self.leave()
            self.expect(")", "')'")
            return inner
        if token.kind != "name":
            self.fail_at(f"expected an expression, found {token.describe()}", token)
        if self.at_reduction():
            return self.sum(scope)
        if token.text == "if":
            return self.condition(scope)
        if token.text in FUNCTIONS:
            return self.call(token, scope)
        if token.text in KEYWORDS:
            self.fail_at(f"unexpected {token.describe()}", token)
        if self.peek(1).kind == "[":
            return self.element(scope)
        self.not_an_element(token, scope)

    def not_an_element(self, token: Token, scope: Scope):
        """Fails saying what a name not followed by '[' was taken for."""
        if self.peek(1).kind == "(":
            self.fail_at(f"unknown function {token.describe()} (the functions are {', '.join(FUNCTIONS)})", token)
        if token.text in scope.indices:
            self.fail_at(f"the index {token.describe()} can only be used inside an argument's brackets", token)
        self.fail_at(f"expected '[' after {token.describe()} (a scalar argument is written {shown(token.text)}[])",
                     token)

    def call(self, token: Token, scope: Scope) -> Expr:
        """A function of one value, ``sin (a)``, or of two, ``max (a, b)``."""
        self.advance()
        self.enter(self.expect("(", f"'(' after {token.text}"))
        args = [self.expression(scope)]
        if OPERATIONS[token.text].arity == 2:  # max (a, b), min (a, b)
            self.expect_separator(f"{token.text} takes two values: {token.text} (a, b)")
            args.append(self.expression(scope))
        self.leave()
        close = self.expect(")", "')'" if len(args) == 2 else f"')' ({token.text} takes one value)")
        node = Unary(token.text, *args, span=Span(token.start, close.end)) if len(args) == 1 else \
            Binary(token.text, *args, span=Span(token.start, close.end))
        return self.made(node, token)

    def expect_separator(self, hint: str):
        token = self.peek()
        if token.kind not in SEPARATORS:
            self.fail_at(f"expected ',' or ';', found {token.describe()}: {hint}", token)
        self.advance()

    def element(self, scope: Scope) -> Element:
        name = self.advance()
        self.advance()  # "["
        indices: list[_Index] = []
        if self.peek().kind != "]":
            indices.append(self.index(scope))
            while self.peek().kind in SEPARATORS:
                self.advance()
                indices.append(self.index(scope))
        token = self.peek()
        if token.kind != "]":
            if token.kind in ("**", "%"):
                self.fail_at(f"{token.describe()} cannot appear in an index: indices are affine "
                             "(+, -, and * or / by integer constants)", token)
            self.fail_at(f"expected ';', ',' or ']' in the indices of {name.describe()}, found {token.describe()}",
                         token)
        close = self.advance()
        if name.text == self.name:
            self.fail(f"the output {name.describe()} cannot appear in its own definition", name.start, close.end)
        self.shape_of(name.text, len(indices), "the argument", name.start, close.end)
        for index in indices:
            affine = index.affine
            if not affine.is_integral and not self.always_integral(affine, scope):
                names = ", ".join(affine.names) or "every value"
                self.fail(f"index {affine_text(affine)} is not an integer for every {names}; a division needs "
                          f"an enclosing if {{{atom_text(Atom(affine.numerator, affine.denominator))}}} "
                          "then (...)", index.start, index.end)
        element = Element(name.text, tuple(i.affine for i in indices), span=Span(name.start, close.end))
        self.uses.append(_Use(element, tuple((i.start, i.end) for i in indices), scope))
        return element

    def always_integral(self, affine: Affine, scope: Scope) -> bool:
        """Whether ``affine`` is an integer wherever ``scope`` is in force: its numerator is a multiple of
        its denominator at every point of the output box, the sums and the conditions (exactly, as the
        range check: ``if {-b % 2 = 0}`` or an else of ``b % 2 = 1`` guard ``b / 2`` too)."""
        divisible = Atom(affine.numerator, affine.denominator)
        if divisible in scope.conditions or lattice_implies_divisible(scope.conditions, divisible):
            return True  # the guard as the derivation writes it, or what the equations alone imply
        failure = failures(divisible, "%div")[0]
        return all(Polytope(scope, self.out_shape, piece.conditions + failure).empty
                   for piece in self.reachable(scope))

    def reachable(self, scope: Scope) -> list[Polytope]:
        """The non-empty pieces of the points where ``scope`` is in force (:meth:`Scope.pieces`)."""
        if scope not in self.polytopes:
            pieces = (Polytope(scope, self.out_shape, conditions) for conditions in scope.pieces())
            self.polytopes[scope] = [polytope for polytope in pieces if not polytope.empty]
        return self.polytopes[scope]

    # --- sums and conditions -------------------------------------------------

    def sum(self, scope: Scope) -> Sum:
        keyword = self.advance()  # sum, max or min
        if len(scope.sums) == MAX_NESTED_SUMS:
            self.fail_at(f"more than {MAX_NESTED_SUMS} nested sums (MAX_NESTED_SUMS): their derivatives take too "
                         "long to find; split the function into smaller ones", keyword)
        self.expect("{", f"'{{' after {keyword.text}")
        index = self.expect_name(f"a {keyword.text} index")
        if index.text in scope.indices:
            what = "an output index" if index.text in scope.outputs else "the index of an enclosing sum"
            self.fail_at(f"the sum index {index.describe()} shadows {what}", index)
        self.expect("}", "'}' after the sum index")
        self.expect("_", "'_' and the lower bound")
        lower = self.bound(scope, lower=True)
        self.expect("^", "'^' and the upper bound", self.paren_hint())
        upper = self.bound(scope, lower=False)
        if self.peek().kind in ("+", "-", "*", "/"):
            self.fail_at(f"expected the sum's body{self.paren_hint()}", self.peek())
        if self.peek().kind != "(":
            # sum{k}_0^3 x[k] ** 2 would be the square of the sum, not the sum of squares a reader sees
            header = self.text[keyword.start:self.tokens[self.pos - 1].end]
            x = f"x[{index.text}]"
            self.fail_at(f"the body of a sum is written in parentheses: {header} (...); e.g. {header} ({x} ** 2) "
                         f"is a sum of squares, ({header} ({x})) ** 2 the square of a sum", self.peek())
        body = self.primary(scope.with_sum(SumFrame(index.text, lower, upper)))
        return self.made(Sum(index.text, lower, upper, body, span=Span(keyword.start, body.span.end), op=keyword.text),
                         keyword)

    def paren_hint(self) -> str:
        if self.peek().kind in ("+", "-", "*", "/"):
            return "; a bound of more than one token is parenthesised, e.g. sum{k}_(i + 1)^(n - 1) (...)"
        return ""

    def bound(self, scope: Scope, lower: bool) -> tuple[Affine, ...]:
        """``INT``, ``NAME``, or a parenthesised affine, ``max``/``min`` list or ``ceil``/``floor``."""
        token = self.peek()
        if token.kind == "(":
            self.advance()
            affines = self.bound_list(scope, lower)
            self.expect(")", "')' closing the bound")
            return affines
        if token.kind == "name" and token.text in ("max", "min", "ceil", "floor"):
            return self.bound_list(scope, lower)
        if token.kind in ("number", "name"):
            return (self.index_atom(scope).affine,)
        if token.kind == "-":
            self.fail_at("a bound of more than one token is parenthesised, e.g. sum{k}_(-1)^3 (...)", token)
        self.fail_at(f"expected {_side(lower)}, found {token.describe()}", token)

    def bound_list(self, scope: Scope, lower: bool) -> tuple[Affine, ...]:
        token = self.peek()
        if token.kind == "name" and token.text in ("max", "min"):
            wanted = "max" if lower else "min"
            if token.text != wanted:
                side = _side(lower)
                self.fail_at(f"{token.text} in {side}: {side} takes {wanted} [..; ..]", token)
            self.advance()
            self.expect("[", f"'[' after {token.text}")
            items = [self.bound_item(scope, lower)]
            while self.peek().kind in SEPARATORS:
                self.advance()
                if len(items) == MAX_BOUNDS:
                    self.fail_at(f"more than {MAX_BOUNDS} bounds in one {token.text} list (MAX_BOUNDS)", self.peek())
                items.append(self.bound_item(scope, lower))
            self.expect("]", f"';', ',' or ']' in the {token.text} list")
            return tuple(items)
        return (self.bound_item(scope, lower),)

    def bound_item(self, scope: Scope, lower: bool) -> Affine:
        token = self.peek()
        rounding = "ceil" if lower else "floor"
        if token.kind == "name" and token.text in ("ceil", "floor"):
            if token.text != rounding:
                side = _side(lower)
                self.fail_at(f"{token.text} in {side}: {side} is rounded inwards with {rounding}(...)", token)
            self.advance()
            self.expect("(", f"'(' after {token.text}")
            index = self.index(scope)
            close = self.expect(")", "')'")
            if self.peek().kind in ("+", "-"):  # floor(dy_1 / 3) + 4503599627370497: an integer part taken out
                whole = self.integer_part(scope)
                self.arithmetic.append(((index.affine, whole.affine), token.start, whole.end, scope))
                return index.affine + whole.affine
            index = _Index(index.affine, token.start, close.end)
        else:
            index = self.index(scope)
            if not index.affine.is_integral:
                self.fail(f"the bound {affine_text(index.affine)} is not an integer; round it inwards with "
                          f"{rounding}(...)", index.start, index.end)
        self.arithmetic.append(((index.affine,), index.start, index.end, scope))
        return index.affine

    def integer_part(self, scope: Scope) -> _Index:
        """The ``+ dy_z0 + 4503599627370496`` after a rounded bound: signed index terms with no division."""
        start = self.peek().start
        whole = self.index_sum(_Index(Affine.constant_value(0), start, start), scope)
        if not whole.affine.is_integral:
            self.fail(f"{shown(self.text[start:whole.end])} is added to a rounded bound, so it is an integer: no "
                      "division outside the ceil(...) or floor(...)", start, whole.end)
        return whole

    def compares_values(self) -> bool:
        """Whether the condition opening here compares values (``x[i] > 0``) rather than indices: it holds
        an element, a function, a reduction or a number that is not an integer before its closing brace, or
        compares numbers alone with ``<`` or ``>`` (``if {3 > 10}``)."""
        depth, ahead, strict, names = 0, 0, False, False
        while True:
            token = self.peek(ahead)
            if token.kind == "end" or (token.kind == "}" and depth == 0):
                return strict and not names  # if {3 > 10}: numbers compared as values
            depth += {"{": 1, "}": -1}.get(token.kind, 0)
            strict |= token.kind in ("<", ">")
            names |= token.kind == "name"
            if token.kind == "[" or (token.kind == "number" and not token.text.isdigit()):
                return True
            if token.kind == "name" and (token.text in FUNCTIONS or token.text in REDUCTIONS):
                return True
            ahead += 1

    def condition(self, scope: Scope) -> Expr:
        keyword = self.advance()
        self.expect("{", "'{' after if")
        if self.compares_values():
            return self.selection(keyword, scope)
        atoms = [self.atom(scope)]
        while self.peek().kind == "name" and self.peek().text == "and":
            self.advance()
            atoms.append(self.atom(scope))
        self.expect("}", "'and' or '}' in the condition")
        # a branch in parentheses is read without an extra Python frame: ifs nest deepest of all
        self.expect_keyword("then")
        inner = scope.with_conditions(tuple(atoms))
        then = self.primary(inner) if self.peek().kind == "(" else self.bare_branch(inner)
        self.expect_keyword("else")
        inner = scope.with_negation(tuple(atoms))
        otherwise = self.primary(inner) if self.peek().kind == "(" else self.bare_branch(inner)
        return self.made(If(tuple(atoms), then, otherwise, span=Span(keyword.start, otherwise.span.end)), keyword)

    def selection(self, keyword: Token, scope: Scope) -> Select:
        """``if {left op right} then (...) else (...)`` on values: one comparison of two expressions."""
        left = self.expression(scope)
        relation = self.peek()
        if relation.kind not in COMPARISONS:
            hint = (": values are compared with <, <=, > or >= (two floats are rarely exactly equal)"
                    if relation.kind == "=" else "")
            self.fail_at(f"expected <, <=, > or >= comparing two values, found {relation.describe()}{hint}", relation)
        self.advance()
        right = self.expression(scope)
        if self.peek().kind == "name" and self.peek().text == "and":
            self.fail_at("a condition on values is one comparison: nest a second if in the then branch to "
                         "require both", self.peek())
        self.expect("}", "'}' after the comparison")
        self.expect_keyword("then")
        then = self.primary(scope) if self.peek().kind == "(" else self.bare_branch(scope)
        self.expect_keyword("else")
        otherwise = self.primary(scope) if self.peek().kind == "(" else self.bare_branch(scope)
        return self.made(Select(relation.kind, left, right, then, otherwise,
                                span=Span(keyword.start, otherwise.span.end)), keyword)

    def bare_branch(self, scope: Scope) -> Expr:
        """A then or else branch without parentheses (``else if ...``): a level of nesting of its own."""
        self.enter(self.peek())
        node = self.primary(scope)
        self.leave()
        return node

    def expect_keyword(self, word: str):
        token = self.peek()
        if token.kind != "name" or token.text != word:
            self.fail_at(f"expected {word!r}, found {token.describe()}", token)
        self.advance()

    def atom(self, scope: Scope) -> Atom:
        """``lhs = rhs``, ``lhs % m = rhs``, ``lhs >= rhs`` or ``lhs <= rhs``, kept as ``Atom(lhs - rhs, ...)``."""
        lhs = self.index(scope)
        modulus = 0
        if self.peek().kind == "%":
            if lhs.additive:
                self.fail("parenthesise the left side of %, e.g. (i + 1) % 2 = 0", lhs.start, lhs.end)
            self.advance()
            literal = self.expect("number", "the modulus (a positive integer)")
            modulus = self.integer_value(literal, "a 64-bit kernel computes the remainder") \
                if literal.text.isdigit() else 0
            if modulus == 0:
                self.fail_at("the modulus must be a positive integer", literal)
        relation = self.peek()
        if relation.kind not in ("=", ">=", "<=") or (modulus and relation.kind != "="):
            strict = " (for indices i > 0 is written i >= 1)" if relation.kind in ("<", ">") else ""
            self.fail_at(f"expected {'=' if modulus else '=, >= or <='} in the condition, found "
                         f"{relation.describe()}{strict}", relation)
        self.advance()
        rhs = self.index(scope)
        for side in (lhs, rhs):
            if not side.affine.is_integral:
                self.fail("a condition compares integers: multiply it through by the denominator",
                          side.start, side.end)
        if modulus and rhs.affine.is_constant and not 0 <= rhs.affine.constant < modulus:
            # i % 2 = 3 would read as the congruence i = 3 (mod 2), true for odd i
            self.fail(f"{rhs.affine.constant} is not a remainder modulo {modulus}: write one of 0 to {modulus - 1}",
                      rhs.start, rhs.end)
        if relation.kind == "<=":
            atom = Atom(rhs.affine - lhs.affine, inequality=True)
        else:
            atom = Atom(lhs.affine - rhs.affine, modulus, inequality=relation.kind == ">=")
        self.arithmetic.append(((atom.affine,), lhs.start, rhs.end, scope))
        return atom

    # --- affine index expressions -------------------------------------------

    def index(self, scope: Scope) -> _Index:
        return self.index_sum(self.index_term(scope), scope)

    def index_sum(self, left: _Index, scope: Scope) -> _Index:
        """``left`` and the terms added to or subtracted from it."""
        additive = False
        while self.peek().kind in ("+", "-"):
            op = self.advance().text
            right = self.index_term(scope)
            value = left.affine + right.affine if op == "+" else left.affine - right.affine
            left, additive = self.sized(value, left.start, right.end), True
        return _Index(left.affine, left.start, left.end, additive)

    def index_term(self, scope: Scope) -> _Index:
        left = self.index_factor(scope)
        while self.peek().kind in ("*", "/"):
            op = self.advance()
            right = self.index_factor(scope)
            a, b = left.affine, right.affine
            if op.text == "*":
                if not (a.is_constant or b.is_constant):
                    self.fail("an index is affine: a product needs a constant factor", left.start, right.end)
                value = b.scale(a.offset) if a.is_constant else a.scale(b.offset)
            else:
                if not (b.is_constant and b.is_integral) or b.constant == 0:
                    self.fail("an index can only be divided by a non-zero integer constant", right.start, right.end)
                value = a.scale(Fraction(1, b.constant))
            left = self.sized(value, left.start, right.end)
        return left

    def sized(self, affine: Affine, start: int, end: int) -> _Index:
        """``affine``, whose numbers (coefficients, constant, divisor) must be below MAX_INTEGER."""
        largest = max(abs(n) for n in (affine.constant, affine.denominator, *(c for _, c in affine.terms)))
        if largest >= MAX_INTEGER:
            self.fail(f"{shown(self.text[start:end])} computes with {largest:.3g}: index arithmetic stays below "
                      f"MAX_INTEGER = 2**53, as 64-bit kernels need", start, end)
        return _Index(affine, start, end)

    def check_reach(self, parts: tuple[Affine, ...], start: int, end: int, intervals: dict):
        """Refuses an index, the sum of ``parts`` (a rounded bound and its integer part, or one affine), if a
        numerator, a partial sum of its terms in any order, or the value can reach MAX_INTEGER on ``intervals``."""
        if (reach := parts_reach(parts, intervals)) >= MAX_INTEGER:
            self.fail(f"{shown(self.text[start:end])} can reach {reach:.3g} on the output's box and the sums' ranges: "
                      f"index arithmetic stays below MAX_INTEGER = 2**53, as 64-bit kernels need", start, end)

    def index_factor(self, scope: Scope) -> _Index:
        token = self.peek()
        if token.kind == "-":
            # minus signs in a row are read without recursion
            signs = 0
            while self.peek().kind == "-":
                self.advance()
                signs += 1
            inner = self.index_factor(scope)
            return _Index(-inner.affine if signs % 2 else inner.affine, token.start, inner.end)
        if token.kind != "(":
            return self.index_atom(scope)
        self.advance()
        self.enter(token)
        inner = self.index(scope)
        self.leave()
        close = self.expect(")", "')'")
        return _Index(inner.affine, token.start, close.end)

    def index_atom(self, scope: Scope) -> _Index:
        token = self.advance()
        if token.kind == "number":
            if not token.text.isdigit():
                self.fail_at(f"indices are integers, not {shown(token.text)}", token)
            value = self.integer_value(token, "64-bit kernels compute the indices")
            return _Index(Affine.constant_value(value), token.start, token.end)
        if token.kind == "name":
            if token.text not in scope.indices:
                bound = ", ".join(scope.indices) or "none"
                self.fail_at(f"unbound index {token.describe()}: it is neither an output index nor the index of "
                             f"an enclosing sum (bound here: {bound})", token)
            return _Index(Affine.index(token.text), token.start, token.end)
        self.fail_at(f"expected an index expression, found {token.describe()}", token)

    # --- the exact range check ----------------------------------------------

    def check_range(self, use: _Use):
        shape = self.shapes[use.element.name]
        intervals = index_box(use.scope, self.out_shape)
        if intervals is None:  # some enclosing sum is empty everywhere: the element is never read
            return
        for affine, size, span in zip(use.element.indices, shape, use.spans):
            numerator, limit = affine.numerator, affine.denominator * (size - 1)
            sums = use.scope.sums
            if -upper_bound(-numerator, sums, intervals) >= 0 and upper_bound(numerator, sums, intervals) <= limit:
                continue  # a cheap bound already shows it fits
            # numerator <= -1, or numerator >= limit + 1
            for extra in (-numerator - 1, numerator - (limit + 1)):
                for polytope in self.reachable(use.scope):
                    point = polytope.search(extra)
                    if point is not None:
                        self.report_range(use, affine, size, shape, span, point)

    def report_range(self, use: _Use, affine: Affine, size: int, shape: tuple, span: tuple, point: dict):
        value = affine.evaluate(point)
        relation = f"{value} < 0" if value < 0 else f"{value} > {size - 1}"
        at = ", ".join(f"{n} = {point[n]}" for n in use.scope.indices if n in point)
        source = shown(self.text[use.element.span.start:use.element.span.end])
        self.fail(f"{source} leaves {shown(use.element.name)}'s shape {shape_text(shape)}{' at ' + at if at else ''}: "
                  f"index {relation}", *span)


def parse(text: str, shapes: Mapping) -> Function | Program:
    """The :class:`~tensoradbook.lang.function.Function` written as ``text`` in the report's notation (sec. 6),
    or the :class:`~tensoradbook.lang.program.Program` of several definitions.

    A definition starts on a line that begins ``name[indices] =`` (outside any
    bracket); the lines below it that do not start another continue it. Blank
    lines and lines whose first non-blank character is ``#`` (comments) are
    skipped. Each definition reads the inputs and the definitions above it.
    ``shapes`` maps every input and every definition to a tuple of positive
    sizes. Raises :class:`~tensoradbook.lang.expr.ExpressionError` (with a caret
    line; for a program, the message starts with the line's number) for anything
    that is not a well-defined element-wise function or program of them, and for
    text of more than :data:`MAX_SOURCE_CHARS` characters. A leading byte order
    mark (U+FEFF, which Notepad writes at the start of UTF-8 files) is skipped.
    """
    if not isinstance(text, str):
        raise ExpressionError(f"the function must be given as text, got {type(text).__name__}")
    if len(text) > MAX_SOURCE_CHARS:
        raise ExpressionError(f"the text has {len(text):,} characters: a function or program is at most "
                              f"MAX_SOURCE_CHARS = {MAX_SOURCE_CHARS:,} characters (tensoradbook.lang.limits)")
    text = text.removeprefix("\ufeff")
    try:
        shapes = check_shapes(shapes)
        uncommented, definitions = definition_lines(text)
        if len(definitions) <= 1:
            return _Parser(uncommented, shapes).function()
        return _program(text, definitions, shapes)
    except ExpressionError:
        raise
    except RecursionError:
        raise ExpressionError("the expression is nested too deeply to read") from None
    except Exception as error:  # a bug here must still surface as the one documented error class
        raise ExpressionError(f"could not read the function: {type(error).__name__}: {error}") from error


# --- programs: several definitions, one per line (lang.program splits the text) ---------


class _DefinitionParser(_Parser):
    """The parser of one definition of a program: every error names its line in the whole text."""

    def __init__(self, text: str, shapes: dict, line: int):
        self.line = line  # of the definition's first line; set first, tokenizing may fail
        super().__init__(text, shapes)

    def fail(self, message: str, start: int, end: int):
        super().fail(f"line {self.line + self.text.count(chr(10), 0, start)}: {message}", start, end)


def _program(text: str, definitions: list[tuple[int, str]], shapes: dict) -> Program:
    """Each definition parsed with the shapes, checked to be defined once and to read only the inputs
    and the definitions above it (so there is no cycle)."""
    # name -> the lines of the definitions it heads, in order: looked up per name read, as a scan of the
    # definitions below each one made a program's reading quadratic in its length
    heading: dict[str, list[int]] = {}
    for line, lines in definitions:
        if match := HEAD.match(lines):
            heading.setdefault(match.group(1), []).append(line)
    defined: dict[str, int] = {}  # name -> its line
    functions = []
    for line, lines in definitions:
        parser = _DefinitionParser(lines, shapes, line)
        head = parser.tokens[0]
        if head.kind == "name" and head.text in defined:
            parser.fail_at(f"{head.describe()} is defined twice: first on line {defined[head.text]}", head)
        for token, following in zip(parser.tokens[1:], parser.tokens[2:]):
            if token.kind != "name" or following.kind != "[" or token.text in defined or token.text == head.text:
                continue
            below = next((later for later in heading.get(token.text, ()) if later > line), None)
            if below is not None:
                parser.fail_at(f"{token.describe()} is defined below, on line {below}: a definition reads the "
                               "inputs and the definitions above it", token)
        function = parser.function()
        defined[function.name] = line
        functions.append(function)
    return Program(tuple(functions), shapes, text)

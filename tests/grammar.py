"""Random texts in the notation :mod:`tensoradbook.lang.parser` reads, for the fuzz test (tests/test_fuzz.py).

Three kinds of :class:`Case`, each a text with its shapes:

* :meth:`Grammar.valid`: a well-defined function by construction, drawn from the whole grammar
  (outputs of rank 0-3, integer-affine indices with constant factors, divisions under the
  matching ``%`` condition, sums, max and min reductions with ``max``/``min``/``ceil``/``floor``
  bounds, ``if`` with ``=``, ``>=``, ``<=``, ``%`` and ``and``, conditions on values
  (``if {x[i] > 0}``), every function of the operation table, ``max (a, b)``, ``**`` with int,
  float and expression exponents, numbers, unary minus). Every argument's shape is grown to hold every
  index the text can reach, and everything stays far inside the parser's stated limits, so the
  parser must accept it. Half of them are *positive*: every ``log``, ``sqrt``, division and
  non-integer power sees a positive value, so the values are finite for inputs in [0.5, 1.5].
* :meth:`Grammar.mutated`: a valid text with characters or tokens deleted, inserted or swapped,
  operators and functions exchanged, numbers made extreme (10**40, 1e400, 5000 digits, int64's and
  MAX_INTEGER's edges) or written in non-ASCII digits, or the shapes broken; the parser may accept it
  or refuse it.
* :func:`extreme_cases`: fixed texts at and beyond the parser's limits: deep nesting of every
  construct, long chains, huge numbers and shapes, non-ASCII digits.

A sum or an ``if`` that is an operand is always parenthesised, and a sum's body always is, so a
valid text means the same however far a sum is read to reach.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass, field

from tensoradbook.lang import parser

# Precedence of a piece of text as the parser reads it, loosest first. PREFIX (a sum or an if) is
# below every operator, so it is parenthesised wherever it is an operand.
PREFIX, ADD, MUL, UNARY, POWER, ATOM = range(6)

MAX_DEPTH = 5        # expression nesting of a valid case
MAX_NESTED_SUMS = 3
MAX_SUM_TERMS = 7    # terms of one sum: the reference evaluator loops over them in Python
MAX_BOUNDS = 3       # items of a max [..] or min [..] bound
# The parser's stated limits, where it states them: valid cases stay inside, extreme cases probe them.
PARSER_LIMITS = {name: getattr(parser, name) for name in dir(parser)
                 if name.startswith("MAX_") and isinstance(getattr(parser, name), int)}
assert PARSER_LIMITS.get("MAX_DEPTH", math.inf) > MAX_DEPTH * 3  # a level of ours is at most 3 of the tree's
assert PARSER_LIMITS.get("MAX_NESTED_SUMS", math.inf) > MAX_NESTED_SUMS
assert PARSER_LIMITS.get("MAX_BOUNDS", math.inf) > MAX_BOUNDS

OUTPUTS = ["f", "f", "f", "g", "out", "F2", "loss"]
ARGUMENTS = ["x", "y", "w", "a", "b", "W", "x2"]
# Names that clash with what derive and the kernels generate (adjoints df, gradients dx, intermediates
# f_k, Python keywords and modules), drawn now and then.
ARGUMENTS_RARE = ["df", "dx", "dg", "f_k", "df_k", "np", "math", "range", "lambda", "in", "cuda",
                  "forward", "x_kernel", "e"]
OUTPUT_INDICES = ["i", "j", "n", "p"]
OUTPUT_INDICES_RARE = ["dx_0", "df_0", "x", "i_", "lambda", "k"]
SUM_INDICES = ["k", "m", "s", "t", "u"]
SUM_INDICES_RARE = ["da_z0", "dx_z0", "dx_0", "k_", "f_k", "for"]

# Functions of a positive argument that are positive; the functions of any argument; those that need a
# positive argument to be finite (tan, asin and acos may give nan: such a case is only compared, not derived).
POSITIVE_FUNCTIONS = ["exp", "cosh", "sqrt", "tanh", "sinh", "erf", "atan", "log1p", "expm1", "abs", "ceil"]
FUNCTIONS = ["exp", "log", "sqrt", "sin", "cos", "tanh", "sinh", "cosh", "tan", "asin", "acos", "atan", "log10",
             "log1p", "expm1", "erf", "abs", "sign", "floor", "ceil", "round"]
POSITIVE_DOMAIN = {"log", "sqrt", "log10", "log1p"}
POSITIVE_NUMBERS = ["1", "2", "3", "0.5", "1.5", "2.", ".25", "1e-1", "2.5E+0", "10", "0.75"]
INT_EXPONENTS = ["0", "1", "2", "3", "4"]
NEGATIVE_EXPONENTS = ["-1", "-2", "-0.5"]
FLOAT_EXPONENTS = ["2.0", "3.0", "0.5", "1.5", "2.5e-1"]


@dataclass(frozen=True)
class Case:
    """One text to parse. ``valid``: the parser must accept it. ``caret``: a refusal must show a caret
    line (not so where the shapes, not the text, are broken). ``derivable``: derive must not refuse it
    (it may refuse an argument named like the adjoint, df of f: it may refuse that clash at once)."""

    kind: str
    text: str
    shapes: dict = field(hash=False)
    valid: bool = False
    caret: bool = True
    positive: bool = False
    derivable: bool = False


@dataclass(frozen=True)
class _Lin:
    """An integer affine ``sum(c * name) + const`` over index names."""

    terms: tuple[tuple[str, int], ...]
    const: int

    def interval(self, ranges: dict) -> tuple[int, int]:
        low = high = self.const
        for name, c in self.terms:
            a, b = ranges[name]
            low += min(c * a, c * b)
            high += max(c * a, c * b)
        return low, high

    def plus(self, value: int) -> _Lin:
        return _Lin(self.terms, self.const + value)

    def content(self) -> int:
        return math.gcd(self.const, *(c for _, c in self.terms))


@dataclass(frozen=True)
class _Scope:
    ranges: dict = field(hash=False)       # index name -> (low, high) over the points reaching here
    divisions: tuple = ()                  # (Q, m) with an enclosing "Q % m = 0": Q / m is an index
    sums: int = 0                          # enclosing sums


class Grammar:
    """Draws cases from ``rng`` (a :class:`random.Random`)."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    # --- names and shapes --------------------------------------------------------------------------

    def pick(self, common: list[str], rare: list[str], avoid=()) -> str:
        names = [n for n in (rare if self.rng.random() < 0.04 else common) if n not in avoid]
        return self.rng.choice(names or [n for n in common if n not in avoid])

    def argument(self) -> str:
        known = [n for n in self.sizes]
        if known and (len(known) >= 4 or self.rng.random() < 0.5):
            return self.rng.choice(known)
        name = self.pick(ARGUMENTS, ARGUMENTS_RARE, avoid=(self.output,))
        self.sizes.setdefault(name, [1] * self.rng.choice([0, 1, 1, 2, 2, 3]))
        return name

    # --- affine index text ---------------------------------------------------------------------------

    def lin(self, scope: _Scope, names: int, coefficients=(-2, -1, 1, 1, 1, 2, 3), constants=(-3, 3)) -> _Lin:
        chosen = self.rng.sample(sorted(scope.ranges), min(names, len(scope.ranges)))
        terms = tuple(sorted((n, self.rng.choice(coefficients)) for n in chosen))
        return _Lin(terms, self.rng.randint(*constants))

    def affine_text(self, lin: _Lin) -> str:
        """``lin`` as index text, in one of several equal spellings."""
        rng = self.rng
        g = lin.content()
        if g > 1 and lin.terms and rng.random() < 0.2:  # 2 * (i + 1)
            inner = self.affine_text(_Lin(tuple((n, c // g) for n, c in lin.terms), lin.const // g))
            return f"{g} * ({inner})" if rng.random() < 0.5 else f"({inner}) * {g}"
        pieces = [(c, n) for n, c in lin.terms]
        if lin.const or not pieces:
            pieces.append((lin.const, None))
        rng.shuffle(pieces)
        out = ""
        for k, (c, name) in enumerate(pieces):
            magnitude = abs(c) if k else c
            if name is None:
                text = str(magnitude)
            elif magnitude in (1, -1):
                text = name if magnitude == 1 else "-" + name
            else:
                text = f"{magnitude} * {name}" if rng.random() < 0.7 else f"{name} * {magnitude}"
            out += text if not k else (" - " if c < 0 else " + ") + text
        return out

    def index(self, scope: _Scope) -> tuple[str, int]:
        """An index text and the largest value it takes (the smallest is 0 or more)."""
        if scope.divisions and self.rng.random() < 0.5:
            q, m = self.rng.choice(scope.divisions)
            text = self.affine_text(q)
            if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", text):
                text = f"({text})"
            return f"{text} / {m}", q.interval(scope.ranges)[1] // m
        lin = self.lin(scope, self.rng.choice([0, 1, 1, 1, 2]))
        low, high = lin.interval(scope.ranges)
        return self.affine_text(lin.plus(-low)), high - low

    def separator(self) -> str:
        return self.rng.choice(["; ", "; ", ", ", ";"])

    def element(self, scope: _Scope) -> str:
        name = self.argument()
        texts = []
        for dim in range(len(self.sizes[name])):
            text, high = self.index(scope)
            texts.append(text)
            self.sizes[name][dim] = max(self.sizes[name][dim], high + 1)
        return f"{name}[{self.separator().join(texts)}]"

    # --- sums and conditions -------------------------------------------------------------------------

    def bound_item(self, scope: _Scope, lower: bool) -> tuple[str, int, int]:
        """One bound: its text (with ceil/floor where it divides) and the range of its value."""
        rng = self.rng
        lin = self.lin(scope, rng.choice([0, 0, 1, 1, 2]), coefficients=(-1, 1, 1, 2), constants=(-1, 3))
        low, high = lin.interval(scope.ranges)
        text = self.affine_text(lin)
        if rng.random() < 0.25:
            d = rng.choice([2, 3])
            rounding = math.ceil if lower else math.floor
            text = f"{'ceil' if lower else 'floor'}(({text}) / {d})"
            low, high = rounding(low / d), rounding(high / d)
        return text, low, high

    def bound(self, scope: _Scope, lower: bool) -> tuple[str, int, int]:
        items = [self.bound_item(scope, lower) for _ in range(self.rng.choice([1, 1, 1, 2, MAX_BOUNDS]))]
        if len(items) == 1:
            text, low, high = items[0]
        else:
            pick = max if lower else min
            text = f"{'max' if lower else 'min'} [{self.separator().join(t for t, _, _ in items)}]"
            low, high = pick(i[1] for i in items), pick(i[2] for i in items)
        # one token stands bare; max [..], ceil(..) may, anything else is parenthesised
        bare = re.fullmatch(r"\d+|[A-Za-z][A-Za-z0-9_]*", text) or \
            (re.match(r"(max|min|ceil|floor)\b", text) and self.rng.random() < 0.3)
        return (text if bare else f"({text})"), low, high

    def sum(self, scope: _Scope, depth: int, positive: bool) -> tuple[str, int]:
        name = self.pick(SUM_INDICES, SUM_INDICES_RARE, avoid=set(scope.ranges) | {self.output})
        for _ in range(30):
            lower, lo_low, lo_high = self.bound(scope, lower=True)
            upper, up_low, up_high = self.bound(scope, lower=False)
            # not empty everywhere (positive: nowhere), and short: the reference evaluator loops
            if lo_low <= up_high and up_high - lo_low < MAX_SUM_TERMS and (not positive or lo_high <= up_low):
                break
        else:
            high = self.rng.randint(0, 3)
            lower, upper, lo_low, up_high = "0", str(high), 0, high
        inner = _Scope({**scope.ranges, name: (lo_low, up_high)}, scope.divisions, scope.sums + 1)
        body = self.expression(inner, depth + 1, positive)[0]
        # max and min reductions range like sums; where a positive value is needed their range is never empty
        op = self.rng.choice(["sum", "sum", "sum", "max", "min"])
        return f"{op}{{{name}}}_{lower}^{upper} ({body})", PREFIX

    def atom(self, scope: _Scope, then: list) -> str:
        """A condition; a ``%`` one offers its division to the then-branch (appended to ``then``)."""
        rng = self.rng
        relation = rng.choice(["=", ">=", "<=", "%", "%"])
        lhs = self.lin(scope, rng.choice([1, 1, 2]), constants=(0, 0))
        low, high = lhs.interval(scope.ranges)
        if relation != "%":
            # a constant inside (or just outside) the reachable range: true somewhere, everywhere or nowhere
            rhs = self.lin(scope, rng.choice([0, 0, 0, 1]), constants=(low - 1, high + 1))
            return f"{self.affine_text(lhs)} {relation} {self.affine_text(rhs)}"
        q = lhs.plus(-low)  # q >= 0, so q / m is an index
        m = rng.choice([2, 3, 4])
        r = rng.randrange(m)
        text = self.affine_text(q.plus(r))
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", text):
            text = f"({text})"
        # q / m reduces to another numerator unless gcd(q, m) = 1, and then needs another condition
        if math.gcd(q.content(), m) == 1:
            then.append((q, m))
        return f"{text} % {m} = {r}"

    def condition(self, scope: _Scope, depth: int, positive: bool) -> tuple[str, int]:
        divisions: list = []
        atoms = " and ".join(self.atom(scope, divisions) for _ in range(self.rng.choice([1, 1, 2, 3])))
        then_scope = _Scope(scope.ranges, scope.divisions + tuple(divisions), scope.sums)
        then = self.expression(then_scope, depth + 1, positive)[0]
        otherwise = "0" if not positive and self.rng.random() < 0.3 else self.expression(scope, depth + 1, positive)[0]
        return f"if {{{atoms}}} then ({then}) else ({otherwise})", PREFIX

    def selection(self, scope: _Scope, depth: int, positive: bool) -> tuple[str, int]:
        """A condition on values, ``if {a > b} then (..) else (..)``, or ``max (a, b)`` / ``min (a, b)``."""
        rng, sub = self.rng, self.expression
        left, right = sub(scope, depth + 1, positive)[0], sub(scope, depth + 1, positive)[0]
        if rng.random() < 0.4:
            return f"{rng.choice(['max', 'min'])} ({left}{self.separator()}{right})", ATOM
        then, otherwise = sub(scope, depth + 1, positive)[0], sub(scope, depth + 1, positive)[0]
        return f"if {{{left} {rng.choice(['>', '>=', '<', '<='])} {right}}} then ({then}) else ({otherwise})", PREFIX

    # --- scalar expressions ----------------------------------------------------------------------------

    def wrap(self, piece: tuple[str, int], minimum: int) -> str:
        text, precedence = piece
        return f"({text})" if precedence < minimum or self.rng.random() < 0.05 else text

    def expression(self, scope: _Scope, depth: int, positive: bool) -> tuple[str, int]:
        """A value expression; ``positive``: > 0 for arguments in [0.5, 1.5]."""
        rng = self.rng
        if depth >= MAX_DEPTH or rng.random() < 0.1 + 0.15 * depth:
            return self.leaf(scope, positive)
        kinds = ["function", "function", "+", "+", "*", "*", "/", "**", "**", "if", "if", "select"]
        if scope.sums < MAX_NESTED_SUMS:
            kinds += ["sum", "sum"]
        if not positive:
            kinds += ["neg", "-", "-"]
        kind = rng.choice(kinds)
        unsafe = not positive and rng.random() < 0.03  # now and then a NaN or an infinity
        sub = self.expression
        structured = {"sum": self.sum, "if": self.condition, "select": self.selection}
        if kind in structured:
            return structured[kind](scope, depth, positive)
        if kind == "function":
            return self.function(scope, depth, positive, unsafe)
        if kind == "neg":
            return f"-{rng.choice(['', ' '])}{self.wrap(sub(scope, depth + 1, False), UNARY)}", UNARY
        if kind in ("+", "-"):
            left, right = sub(scope, depth + 1, positive), sub(scope, depth + 1, positive)
            return f"{self.wrap(left, ADD)} {kind} {self.wrap(right, MUL)}", ADD
        if kind == "*" or kind == "/":
            left = sub(scope, depth + 1, positive)
            right = sub(scope, depth + 1, positive or (kind == "/" and not unsafe))
            return f"{self.wrap(left, MUL)} {kind} {self.wrap(right, UNARY)}", MUL
        return self.power(scope, depth, positive, unsafe)

    def leaf(self, scope: _Scope, positive: bool) -> tuple[str, int]:
        """An element or a number."""
        rng = self.rng
        if rng.random() < 0.75:
            return self.element(scope), ATOM
        return rng.choice(POSITIVE_NUMBERS + ([] if positive else ["0", "0.0"])), ATOM

    def function(self, scope: _Scope, depth: int, positive: bool, unsafe: bool) -> tuple[str, int]:
        rng = self.rng
        name = rng.choice(POSITIVE_FUNCTIONS if positive else FUNCTIONS)
        # log and sqrt see a positive argument, and so do the others where the value must be positive
        argument = self.expression(scope, depth + 1, positive=(name in POSITIVE_DOMAIN or positive) and not unsafe)
        if name in ("asin", "acos"):  # their domain is [-1, 1]
            argument = (f"tanh ({argument[0]})", ATOM)
        return f"{name}{rng.choice([' ', ''])}({argument[0]})", ATOM

    def power(self, scope: _Scope, depth: int, positive: bool, unsafe: bool) -> tuple[str, int]:
        """An int exponent takes any base, anything else a positive one."""
        rng, sub = self.rng, self.expression
        choice = rng.random()
        if choice < 0.4 and not positive:
            base, exponent = sub(scope, depth + 1, False), (rng.choice(INT_EXPONENTS), ATOM)
        elif choice < 0.8:
            base = sub(scope, depth + 1, not unsafe)
            exponent = (rng.choice(INT_EXPONENTS + NEGATIVE_EXPONENTS + FLOAT_EXPONENTS), ATOM)
        else:  # x ** y: a small exponent, so the value stays finite
            base, exponent = sub(scope, depth + 1, True), (self.element(scope), ATOM)
        return f"{self.wrap(base, ATOM)} ** {self.wrap(exponent, UNARY)}", POWER

    # --- cases ---------------------------------------------------------------------------------------

    def valid(self) -> Case:
        rng = self.rng
        self.output = rng.choice(OUTPUTS)
        self.sizes: dict[str, list[int]] = {}
        rank = rng.choice([0, 1, 1, 2, 2, 3])
        indices = []
        while len(indices) < rank:
            name = self.pick(OUTPUT_INDICES, OUTPUT_INDICES_RARE, avoid=set(indices))
            indices.append(name)
        sizes = [rng.choice([1, 1, 2, 3, 4]) for _ in indices]
        positive = rng.random() < 0.5
        body = self.expression(_Scope({n: (0, s - 1) for n, s in zip(indices, sizes)}), 0, positive)[0]
        text = f"{self.output}[{self.separator().join(indices)}] = {body}"
        if rng.random() < 0.15:  # no spaces around operators and brackets
            text = re.sub(r" ?([-+*/%^=()\[\]{};,<>]+) ?", r"\1", text)  # not "_": "i_ and" must stay apart
        if rng.random() < 0.1:
            spaces = [m.start() for m in re.finditer(" ", text)]
            if spaces:
                at = rng.choice(spaces)
                text = text[:at] + rng.choice(["\n", "\t", "  "]) + text[at + 1:]
        shapes = {self.output: tuple(sizes), **{n: tuple(s) for n, s in self.sizes.items()}}
        derivable = "d" + self.output not in shapes
        return Case("grammar", text, shapes, valid=True, positive=positive, derivable=derivable)

    def mutated(self) -> Case:
        base = self.valid()
        text, shapes, caret = base.text, dict(base.shapes), True
        for _ in range(self.rng.choice([1, 1, 1, 2, 3])):
            text = self.rng.choice(_MUTATIONS)(self.rng, text)
        if self.rng.random() < 0.05:
            name = self.rng.choice(sorted(shapes))
            shapes[name] = self.rng.choice([(), (0,), (-1,), (2.5,), (True,), (10 ** 20,), (2 ** 63,),
                                            (2 ** 40, 2 ** 40), tuple(shapes[name]) + (2,), "3", None])
            caret = False
        return Case("mutated", text, shapes, caret=caret)


# --- mutations: text -> text ----------------------------------------------------------------------------

_TOKEN = re.compile(r"\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+|[A-Za-z][A-Za-z0-9_]*|\*\*|>=|<=|\S")
_CHARACTERS = list("()[]{};,_^%=<>+-*/.e0123456789ikx ") + ["\n", "\t", "**", ">=", "١", "５", "é", "²", "\u00a0"]
_TOKENS = ["sum", "if", "then", "else", "and", "max", "min", "ceil", "floor", "exp", "log", "sinh", "cosh", "sqrt",
           "erf", "abs", "round", "(", ")", "[", "]", "{", "}", ";", ",", "_", "^", "%", "=", ">=", ">", "<", "**", "-",
           "/", "x[i]", "x[]", "f", "i",
           "k", "0", "2", "0.5", "1e3"]
# numbers beyond int64, float64 and Python's int conversion limit, and at int64's edges
EXTREME_NUMBERS = ["1" + "0" * 40, "1e400", "1e-400", "9" * 5000, "1" + "0" * 400 + ".0", "9223372036854775807",
                   "9223372036854775808", "4611686018427387904", "1e308", "0" * 30 + "1"]
NON_ASCII_DIGITS = [0x0660, 0xFF10, 0x0966]  # the zeros of Arabic-Indic, fullwidth and Devanagari digits


def _tokens(text: str) -> list[re.Match]:
    return list(_TOKEN.finditer(text)) or [re.match("", text)]


def _delete_char(rng, text):
    at = rng.randrange(max(len(text), 1))
    return text[:at] + text[at + 1:]


def _insert_char(rng, text):
    at = rng.randrange(len(text) + 1)
    return text[:at] + rng.choice(_CHARACTERS) + text[at:]


def _swap_chars(rng, text):
    if len(text) < 2:
        return text
    at = rng.randrange(len(text) - 1)
    return text[:at] + text[at + 1] + text[at] + text[at + 2:]


def _delete_token(rng, text):
    token = rng.choice(_tokens(text))
    return text[:token.start()] + text[token.end():]


def _duplicate_token(rng, text):
    token = rng.choice(_tokens(text))
    return text[:token.end()] + " " + token.group() + text[token.end():]


def _replace_token(rng, text):
    token = rng.choice(_tokens(text))
    return text[:token.start()] + rng.choice(_TOKENS) + text[token.end():]


def _swap_tokens(rng, text):
    tokens = _tokens(text)
    if len(tokens) < 2:
        return text
    a, b = sorted(rng.sample(tokens, 2), key=lambda t: t.start())
    return (text[:a.start()] + b.group() + text[a.end():b.start()] + a.group() + text[b.end():])


def _extreme_number(rng, text):
    numbers = [t for t in _tokens(text) if t.group()[:1].isdigit()]
    token = rng.choice(numbers or _tokens(text))
    return text[:token.start()] + rng.choice(EXTREME_NUMBERS) + text[token.end():]


# the parser's integer limit (MAX_INTEGER = 2**53) and float64's edges, where a text may still be valid
EDGE_NUMBERS = ["0", "1", "0.0", "1e308", "1e-308", "5e-324", "9007199254740991", "9007199254740992",
                "4503599627370496", "123456789", "1e-5"]
_SWAPS = [["+", "-", "*", "/", "**"], [">=", "<=", "="], ["exp", "log", "sin", "cos", "sinh", "cosh", "tanh", "sqrt"],
          ["max", "min"], ["ceil", "floor"], [";", ","]]


def _swap_operator(rng, text):
    """An operator, relation or function for another of its kind: the text often stays well formed."""
    tokens = [t for t in _tokens(text) if any(t.group() in kind for kind in _SWAPS)]
    if not tokens:
        return text
    token = rng.choice(tokens)
    kind = next(kind for kind in _SWAPS if token.group() in kind)
    return text[:token.start()] + rng.choice(kind) + text[token.end():]


def _edge_number(rng, text):
    numbers = [t for t in _tokens(text) if t.group()[:1].isdigit()]
    if not numbers:
        return text
    token = rng.choice(numbers)
    return text[:token.start()] + rng.choice(EDGE_NUMBERS) + text[token.end():]


def _non_ascii_digit(rng, text):
    digits = [k for k, ch in enumerate(text) if ch in "0123456789"]
    if not digits:
        return _insert_char(rng, text)
    at = rng.choice(digits)
    return text[:at] + chr(rng.choice(NON_ASCII_DIGITS) + int(text[at])) + text[at + 1:]


def _truncate(rng, text):
    return text[:rng.randrange(len(text) + 1)]


_MUTATIONS = [_delete_char, _delete_char, _insert_char, _insert_char, _swap_chars, _delete_token, _duplicate_token,
              _replace_token, _replace_token, _swap_tokens, _extreme_number, _non_ascii_digit, _truncate,
              _swap_operator, _swap_operator, _swap_operator, _edge_number, _edge_number]


# --- extreme cases ------------------------------------------------------------------------------------------

def _nested(n: int) -> dict[str, tuple[str, dict]]:
    """Every construct nested or chained ``n`` times."""
    scalar, vector = {"f": (), "x": ()}, {"f": (2,), "x": (2,)}
    sums = "".join(f"sum{{k{d}}}_0^0 (" for d in range(n))
    return {
        "parentheses": ("f[] = " + "(" * n + "x[]" + ")" * n, scalar),
        "minus signs": ("f[] = " + "-" * n + "x[]", scalar),
        "negations": ("f[] = " + "-(" * n + "x[]" + ")" * n, scalar),
        "sum of terms": ("f[] = " + " + ".join(["x[]"] * n), scalar),
        "product": ("f[] = " + " * ".join(["x[]"] * n), scalar),
        "power tower": ("f[] = " + " ** ".join(["x[]"] * n), scalar),
        "functions": ("f[] = " + "sin (" * n + "x[]" + ")" * n, scalar),
        "sums": (f"f[] = {sums}x[k{n - 1}]" + ")" * n, {"f": (), "x": (1,)}),
        "ifs": ("f[i] = " + "if {i >= 0} then (" * n + "x[i]" + ") else (0)" * n, vector),
        "conditions": ("f[i] = if {" + " and ".join(["i >= 0"] * n) + "} then (x[i]) else (0)", vector),
        "max list": ("f[] = sum{k}_(max [" + "; ".join(["0"] * n) + "])^1 (x[k])", {"f": (), "x": (2,)}),
        "index terms": ("f[i] = x[" + " + ".join(["i"] * n) + "]", {"f": (1,), "x": (1,)}),
        "index parentheses": ("f[i] = x[" + "(" * n + "i" + ")" * n + "]", vector),
        "index minus signs": ("f[i] = x[" + "-" * n + "i]", {"f": (1,), "x": (1,)}),
    }


_BIG = "1" + "0" * 23
_NUMBERS = [
    ("f[] = 1e400 * x[]", {"f": (), "x": ()}),
    ("f[] = 1" + "0" * 400 + ".0 * x[]", {"f": (), "x": ()}),
    ("f[] = 1e-400 + x[]", {"f": (), "x": ()}),
    ("f[] = 1" + "0" * 40 + " * x[]", {"f": (), "x": ()}),
    ("f[] = " + "9" * 5000 + " * x[]", {"f": (), "x": ()}),
    ("f[] = x[] ** " + "9" * 5000, {"f": (), "x": ()}),
    ("f[i] = x[i + " + _BIG + " - " + _BIG + "]", {"f": (2,), "x": (2,)}),
    ("f[i] = x[" + _BIG + " * i]", {"f": (1,), "x": (1,)}),
    ("f[i] = x[9223372036854775807 * i]", {"f": (1,), "x": (1,)}),
    ("f[i] = if {i % " + _BIG + " = 0} then (x[i]) else (0)", {"f": (2,), "x": (2,)}),
    ("f[i] = if {i % 9223372036854775808 = 0} then (x[i]) else (0)", {"f": (2,), "x": (2,)}),
    ("f[i] = if {i >= " + _BIG + "} then (x[i]) else (1)", {"f": (2,), "x": (2,)}),
    ("f[i] = sum{k}_0^1" + "0" * 41 + " (x[i])", {"f": (2,), "x": (2,)}),
    ("f[i] = sum{k}_0^100000000000000000000 (x[i])", {"f": (2,), "x": (2,)}),
    ("f[i] = sum{k}_0^9223372036854775807 (x[i])", {"f": (2,), "x": (2,)}),
    ("f[i] = sum{k}_(-9223372036854775807)^0 (x[i])", {"f": (2,), "x": (2,)}),
    ("f[i] = sum{k}_(" + _BIG + ")^(" + _BIG + ") (x[k - " + _BIG + "])", {"f": (2,), "x": (2,)}),
    ("f[] = ١٢", {"f": ()}),
    ("f[i] = x[i] * ٣", {"f": (2,), "x": (2,)}),
    ("f[i] = x[١]", {"f": (2,), "x": (2,)}),
    ("f[] = ５ * x[]", {"f": (), "x": ()}),
    ("f[i] = if {i % 2 = ٠} then (x[i]) else (0)", {"f": (2,), "x": (2,)}),
]
# no array of these sizes can be allocated: a run fails at once instead of filling the memory
_SHAPES = [
    ("f[i] = x[i]", {"f": (10 ** 20,), "x": (10 ** 20,)}),
    ("f[i] = x[i]", {"f": (2 ** 63,), "x": (2 ** 63,)}),
    ("f[i] = x[i]", {"f": (2 ** 40,), "x": (2 ** 40,)}),
    ("f[i; j] = x[i] * x[j]", {"f": (2 ** 40, 2 ** 40), "x": (2 ** 40,)}),
]


def extreme_cases() -> list[Case]:
    """Fixed texts: every construct nested 10 to 5000 deep (and around each limit the parser states),
    huge and non-ASCII numbers, huge shapes."""
    depths = {10, 100, 200, 501, 1000, 5000}
    for limit in PARSER_LIMITS.values():
        if 0 < limit <= 5000:
            depths |= {limit - 1, limit, limit + 1}
    cases = [Case(f"{family} x{n}", text, shapes)
             for n in sorted(d for d in depths if d > 0) for family, (text, shapes) in _nested(n).items()]
    cases += [Case("number", text, shapes) for text, shapes in _NUMBERS]
    cases += [Case("shape", text, shapes, caret=False) for text, shapes in _SHAPES]
    return cases

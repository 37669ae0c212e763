"""Simplifying constructors for expressions (beyond the report, whose output keeps ``** (2 - 1)``).

The derivation builds every derivative node through these functions, so
constants fold (exactly, for integers), neutral and absorbing elements vanish
(``x * 1``, ``0 + x``, ``x ** 1``, ``0 * x``), double negation cancels, and
conditions that always or never hold are decided. The result reads like
something a person wrote.
"""

from __future__ import annotations

import math
from fractions import Fraction

from .evaluate import upper_bound
from .expr import (Affine, Atom, Binary, Element, Expr, If, Number, Select, Sum, Unary, _fold, postorder, rebuild,
                   substitute, with_children)
from .limits import MAX_INTEGER
from .ops import COMPARISONS


def number(value) -> Number:
    if isinstance(value, float) and value.is_integer() and abs(value) < MAX_INTEGER:
        value = int(value)
    return Number(value)


# The bits of the largest integer power folded into a constant: past MAX_INTEGER it would not read back anyway.
_MAX_BITS = math.log2(MAX_INTEGER)


def _folded(value, op: str, a: Expr, b: Expr) -> Expr:
    """``value`` as a constant where the notation can write it (finite, integers below MAX_INTEGER), else
    ``a op b`` unfolded: a folded ``inf`` or a 20-digit integer would not read back."""
    if isinstance(value, float) and not math.isfinite(value) or isinstance(value, int) and abs(value) >= MAX_INTEGER:
        return Binary(op, a, b)
    return number(value)


def _count(node: Sum) -> int:
    """How many terms a sum with constant bounds has."""
    low = max(math.ceil(a.offset) for a in node.lower)
    high = min(math.floor(a.offset) for a in node.upper)
    return max(high - low + 1, 0)


def value_of(e: Expr):
    return e.value if isinstance(e, Number) else None


ZERO, ONE = Number(0), Number(1)


def neg(a: Expr) -> Expr:
    if isinstance(a, Number):
        return number(-a.value)
    if isinstance(a, Unary) and a.op == "neg":
        return a.arg
    return Unary("neg", a)


def add(a: Expr, b: Expr) -> Expr:
    x, y = value_of(a), value_of(b)
    if x is not None and y is not None:
        return _folded(x + y, "+", a, b)
    if x == 0:
        return b
    if y == 0:
        return a
    if isinstance(b, Unary) and b.op == "neg":
        return sub(a, b.arg)
    return Binary("+", a, b)


def sub(a: Expr, b: Expr) -> Expr:
    x, y = value_of(a), value_of(b)
    if x is not None and y is not None:
        return _folded(x - y, "-", a, b)
    if y == 0:
        return a
    if x == 0:
        return neg(b)
    if isinstance(b, Unary) and b.op == "neg":
        return add(a, b.arg)
    return Binary("-", a, b)


def _gate(e: Expr) -> If | None:
    """``e`` if it is ``if {c} then (t) else (0)``: a factor that zeroes the whole product outside ``c``."""
    return e if isinstance(e, If) and e.otherwise == ZERO else None


def peel_gates(node: Expr) -> tuple[tuple[tuple[tuple[Atom, ...], bool], ...], Expr]:
    """``node``'s outer gates and what they gate: ``((condition, holds), ...)``, outermost first, for each
    ``if {condition} then (...) else (0)`` (``holds``) or ``if {condition} then (0) else (...)`` around it. The
    derivation keeps an occurrence's gates outermost (:func:`mul`): outside them its element is not read."""
    gates = []
    while isinstance(node, If) and ZERO in (node.then, node.otherwise):
        holds = node.otherwise == ZERO
        gates.append((node.condition, holds))
        node = node.then if holds else node.otherwise
    return tuple(gates), node


def mul(a: Expr, b: Expr) -> Expr:
    x, y = value_of(a), value_of(b)
    if x is not None and y is not None:
        return _folded(x * y, "*", a, b)
    if x == 0 or y == 0:
        return ZERO
    gated = _gated_product(a, b)
    return gated if gated is not None else _plain_product(a, b, x, y)


def _gated_product(a: Expr, b: Expr) -> Expr | None:
    """``a * b`` where a factor is an ``if`` or a select with a zero branch: the condition around the product;
    None where neither is."""
    # The condition guards the whole product, so that no factor reads where it does not hold
    # (the derivative of "if {i >= 1} then (x[i] * y[i - 1])" must not read y[-1] at i = 0).
    if _gate(a):
        return if_(a.condition, mul(a.then, b), ZERO)
    if _gate(b):
        return if_(b.condition, mul(a, b.then), ZERO)
    # if {c} then (0) else (e) gates the product where c fails: no factor may read where c holds
    if isinstance(a, If) and a.then == ZERO:
        return if_(a.condition, ZERO, mul(a.otherwise, b))
    if isinstance(b, If) and b.then == ZERO:
        return if_(b.condition, ZERO, mul(a, b.otherwise))
    # a select with a zero branch (ReLU's and a max reduction's derivatives) takes the other factor into its
    # branches: an adjoint of inf then gives 0 where the select gives 0, not inf * 0
    for select_, other, first in ((a, b, True), (b, a, False)):
        if isinstance(select_, Select) and ZERO in (select_.then, select_.otherwise):
            branches = [mul(t, other) if first else mul(other, t) for t in (select_.then, select_.otherwise)]
            return select(select_.op, select_.left, select_.right, *branches)
    return None


def _plain_product(a: Expr, b: Expr, x, y) -> Expr:
    """``a * b`` without gates: units and signs folded, a constant factor first (``x`` and ``y`` their values)."""
    if x == 1:
        return b
    if y == 1:
        return a
    if x == -1:
        return neg(b)
    if y == -1:
        return neg(a)
    if isinstance(a, Unary) and a.op == "neg":
        return neg(mul(a.arg, b))
    if isinstance(b, Unary) and b.op == "neg":
        return neg(mul(a, b.arg))
    if y is not None:  # constants first: 2 * x, as people write it
        return Binary("*", b, a)
    return Binary("*", a, b)


def div(a: Expr, b: Expr) -> Expr:
    x, y = value_of(a), value_of(b)
    if y == 1:
        return a
    if _gate(a):
        return if_(a.condition, div(a.then, b), ZERO)
    if x == 0 and y != 0:
        return ZERO
    if x is not None and y is not None and y != 0:
        if isinstance(x, int) and isinstance(y, int) and x % y:
            return Binary("/", a, b)  # keep 1 / 3 exact
        return _folded(x // y if isinstance(x, int) and isinstance(y, int) else x / y, "/", a, b)
    if isinstance(a, Unary) and a.op == "neg":
        return neg(div(a.arg, b))
    return Binary("/", a, b)


def power(a: Expr, b: Expr) -> Expr:
    x, y = value_of(a), value_of(b)
    if y == 1:
        return a
    if y == 0:
        return ONE
    # folded only where the power is small: 2 ** (2 ** 52) would never finish
    if isinstance(x, int) and isinstance(y, int) and y > 0 and (abs(x) < 2 or y * math.log2(abs(x)) < _MAX_BITS):
        return _folded(x**y, "**", a, b)
    return Binary("**", a, b)


def unary(op: str, a: Expr) -> Expr:
    if op == "neg":
        return neg(a)
    x = value_of(a)
    if x is not None and op == "exp" and x == 0:
        return ONE
    if x is not None and op == "log" and x == 1:
        return ZERO
    return Unary(op, a)



def select(op: str, left: Expr, right: Expr, then: Expr, otherwise: Expr) -> Expr:
    """``if {left op right} then (then) else (otherwise)``, decided where both sides are numbers or both
    branches are equal."""
    if then == otherwise:
        return then
    x, y = value_of(left), value_of(right)
    if x is not None and y is not None:
        return then if _COMPARE[op](x, y) else otherwise
    # An index condition around the only non-zero branch goes around the whole select, whichever of its branches
    # is 0: the compared values may read elements that exist only where it holds (if {n % 2 = 0} then (if
    # {x[n / 2] > 0} ...) in the forward; under an else of the forward the adjoint is if {c} then (0) else (...)).
    for gated, other in ((then, otherwise), (otherwise, then)):
        if other == ZERO and isinstance(gated, If) and ZERO in (gated.then, gated.otherwise):
            def inner(branch: Expr, gated=gated) -> Expr:
                return select(op, left, right, *((branch, ZERO) if gated is then else (ZERO, branch)))

            return if_(gated.condition, inner(gated.then), inner(gated.otherwise))
    return Select(op, left, right, then, otherwise)


_COMPARE = {">": lambda x, y: x > y, ">=": lambda x, y: x >= y, "<": lambda x, y: x < y, "<=": lambda x, y: x <= y}
assert set(_COMPARE) == set(COMPARISONS)


def first_extremum(node: Sum, relation: str) -> Expr:
    """``d node / d body`` of a max (``relation`` ``">="``) or min (``"<="``) reduction at its liberated
    index ``k``: 1 where the body at ``k`` *reaches* the extremum ``M`` (the reduction itself) and no earlier
    index ``k' < k`` does (the first extremal element takes the whole adjoint, as PyTorch's max pooling and
    ``max(dim)`` do), else 0::

        if {reaches(body(k)) >= 1} then (if {sum{k_before}_lower^(min [k - 1; upper]) (reaches(body(k_before))) <= 0}
        then (1) else (0)) else (0)
        reaches(v) = if {v >= M} then (1) else (if {v >= v} then (0) else (1))

    A term reaches ``M`` where it compares ``>=`` to it, or where it is NaN (a NaN term makes the reduction NaN,
    as numpy's ``maximum`` does, and the first NaN takes the adjoint, as in PyTorch); only NaN fails
    ``v >= v``. The earlier terms are *counted*, not compared by their own max: over an empty range that max
    would be ``-inf``, which a reduction of ``-inf`` terms (a fully masked pooling window) does not exceed.
    """
    used = {name for part in postorder(node) for name in _names(part)}
    earlier, n = f"{node.index}_before", 1
    while earlier in used:
        earlier, n = f"{node.index}_before_{n}", n + 1

    def reaches(value: Expr) -> Expr:  # 1 or 0
        return select(relation, value, node, ONE, select(relation, value, value, ZERO, ONE))

    # the reduction's own upper bound too: redundant, but it stays constant where k becomes an output's affine
    # (a pooling window's gradient), and keeps a loop over a whole grid (numpy's kernels) to the window
    before = Sum(earlier, node.lower, (Affine.index(node.index) - 1, *node.upper),
                 reaches(substitute(node.body, {node.index: Affine.index(earlier)})))
    return select(">=", reaches(node.body), ONE, select("<=", before, ZERO, ONE, ZERO), ZERO)


def _names(node: Expr) -> set[str]:
    """The tensor and index names written in ``node`` itself (not its children)."""
    if isinstance(node, Element):
        return {node.name, *(name for a in node.indices for name in a.names)}
    if isinstance(node, Sum):
        return {node.index, *(name for a in node.lower + node.upper for name in a.names)}
    if isinstance(node, If):
        return {name for atom in node.condition for name in atom.affine.names}
    return set()


def atom_truth(atom: Atom, ranges: dict | None = None) -> bool | None:
    """True or False where ``atom`` holds for every or for no index values in the box ``ranges``
    (name -> (least, greatest)), None where that depends on the values or on a name outside the box.

    Without ``ranges`` only atoms without index names are decided. The value
    compared is ``floor(numerator / denominator)``, as :meth:`Atom.holds`
    evaluates it; it is monotone in the numerator, so its extremes on the box
    are those of the numerator's, at the box's corners.
    """
    ranges = ranges or {}
    affine = atom.affine
    if not set(affine.names) <= set(ranges):
        return None
    low, high = (math.floor(bound) for bound in affine.interval(ranges))
    if atom.inequality:
        return True if low >= 0 else False if high < 0 else None
    if low == high:
        return low % atom.modulus == 0 if atom.modulus else low == 0
    if not atom.modulus and (low > 0 or high < 0):
        return False
    return None


def if_(condition, then: Expr, otherwise: Expr) -> Expr:
    """``if {condition} then (then) else (otherwise)`` with decided atoms removed; nested
    conditions with a zero ``else`` merge into one (``if {a} then (if {b} then (x) else (0)) else (0)``
    is ``if {a and b} then (x) else (0)``)."""
    if otherwise == ZERO and _gate(then):
        condition, then = tuple(condition) + then.condition, then.then
    kept = []
    for atom in dict.fromkeys(condition):  # drop repeated atoms, keep their order
        truth = atom_truth(atom)
        if truth is False:
            return otherwise
        if truth is None:
            kept.append(atom)
    if not kept or then == otherwise:
        return then
    return If(tuple(kept), then, otherwise)


def _factors(node: Expr) -> tuple[bool, list[Expr]]:
    """``node`` as ``(negated, factors)`` of a product, looking through ``*`` and unary minus."""
    negated, factors, pending = False, [], [node]
    while pending:  # a stack, left factor on top: products of hundreds of factors are deep trees
        current = pending.pop()
        if isinstance(current, Unary) and current.op == "neg":
            negated = not negated
            pending.append(current.arg)
        elif isinstance(current, Binary) and current.op == "*":
            pending += [current.right, current.left]
        else:
            factors.append(current)
    return negated, factors


def _product(factors: list[Expr]) -> Expr:
    """The product of ``factors``, the numbers first and folded into one.

    So the same factors give the same tree however they were grouped
    (``(2 * a) * b`` and ``a * (b * 2)`` both give ``2 * a * b``), which makes
    :func:`hoist_invariants` idempotent: a second pass finds the factors of
    the first and rebuilds the same product.
    """
    out = ONE
    for factor in sorted(factors, key=lambda f: not isinstance(f, Number)):  # stable: the others keep their order
        out = mul(out, factor)
    return out


def _mentions(node: Expr, index: str) -> bool:
    """Whether ``index`` appears in ``node``: its free use, or a sum binding it again (then kept inside,
    which is only less hoisting). Not a recursion: factors can be deep trees."""
    for part in postorder(node):
        if isinstance(part, Element):
            affines = part.indices
        elif isinstance(part, Sum):
            affines = part.lower + part.upper + (Affine.index(part.index),)
        elif isinstance(part, If):
            affines = tuple(atom.affine for atom in part.condition)
        else:
            continue
        if any(index in a.names for a in affines):
            return True
    return False


_OPERATORS = {"+": add, "-": sub, "*": mul, "/": div, "**": power}


def hoist_invariants(node: Expr, ranges: dict | None = None) -> Expr:
    """Move factors and conditions that do not depend on a sum's index out of that sum.

    ``sum_k c * x[k]`` becomes ``c * sum_k x[k]`` and ``sum_k if {b = 0} then
    (x[k]) else (0)`` becomes ``if {b = 0} then (sum_k x[k]) else (0)``:
    exact in real arithmetic, and the loop then does only the work that varies
    (the derivatives of sec. 6 multiply every summand by the same ``c[i; i]``).
    Factors leave only a sum that is never empty while the free indices range over the box ``ranges``
    (name -> (least, greatest)) and the enclosing sums' indices over their bounds (:func:`never_empty`):
    an empty sum evaluates no summand, and a factor read outside it may read outside its tensor (the
    sums of Algorithm 4 are empty exactly where the gradient element gets nothing, ``F b <= 0`` of eq. 34).
    Idempotent: hoisting the result again changes nothing.
    """
    ranges = ranges or {}

    def enter(current: Expr, sums: tuple) -> tuple[None, tuple]:
        return None, (*sums, current) if isinstance(current, Sum) else sums

    return _fold(node, (), enter, lambda current, sums, children: _hoisted(current, children, sums, ranges))


def never_empty(node: Sum, sums: tuple, ranges: dict) -> bool:
    """Whether ``node``'s range holds an index value wherever the enclosing ``sums`` (outermost first) have
    their indices in range and the other indices lie in the box ``ranges``: for every lower bound ``l`` and
    upper bound ``u``, ``floor(u) >= ceil(l)``: ``u >= l`` where either is an integer (no denominator), else
    ``u - l >= (q - 1) / q + (p - 1) / p`` for their denominators ``q`` and ``p``. The least ``u - l`` is
    bounded as in :func:`~tensoradbook.lang.evaluate.upper_bound`; False where a name is in neither."""
    for low in node.lower:
        for high in node.upper:
            p, q = low.denominator, high.denominator
            rounding = 0 if 1 in (p, q) else 2 - Fraction(1, p) - Fraction(1, q)
            try:
                if -upper_bound(low - high, sums, ranges) < rounding:
                    return False
            except KeyError:  # a name in neither: its range is unknown
                return False
    return True


def gates_as_bounds(node: Expr) -> Expr:
    """Sums whose body is ``if {c} then (x) else (0)`` with atoms ``a * k + b >= 0`` in the sum's index ``k``
    take those atoms as bounds (``k >= ceil(-b / a)`` for ``a > 0``, ``k <= floor(-b / a)`` for ``a < 0``), as
    Fourier-Motzkin turns conditions into bounds (eqs. 22-26), and the atoms free of ``k`` gate the whole sum:
    the same terms in the same order, but the loop no longer visits the zeros (a padded convolution's
    borders) and has no branch inside."""
    return rebuild(node, _gated_bounds)


def _gated_bounds(node: Expr, children: list[Expr]) -> Expr:
    node = with_children(node, children)
    if not (isinstance(node, Sum) and node.op == "sum" and isinstance(node.body, If) and node.body.otherwise == ZERO):
        return node
    lower, upper, kept, outside = list(node.lower), list(node.upper), [], []
    for atom in node.body.condition:
        c = atom.affine.coefficient(node.index)
        if c == 0:
            outside.append(atom)
        elif not atom.inequality:
            kept.append(atom)
        else:
            bound, is_lower = atom_as_bound(atom, node.index)
            (lower if is_lower else upper).append(bound)
    if len(kept) == len(node.body.condition):
        return node
    tightened = node.renewed(lower=tuple(dict.fromkeys(lower)), upper=tuple(dict.fromkeys(upper)),
                             body=if_(tuple(kept), node.body.then, ZERO))
    return if_(tuple(outside), tightened, ZERO)


def atom_as_bound(atom: Atom, name: str) -> tuple[Affine, bool]:
    """An inequality ``c * name + r >= 0`` (``c`` not 0) as a bound on ``name``: ``-r / c`` and whether it is a
    lower bound (``c > 0``: ``name >= ceil(-r / c)``) or an upper one (``c < 0``: ``name <= floor(-r / c)``)."""
    c = atom.affine.coefficient(name)
    return (Affine.of({name: c}) - atom.affine).scale(1 / c), c > 0


def decided_on(node: Expr, ranges: dict) -> Expr:
    """``node`` with the conditions of its ``if``s decided on the box ``ranges`` (name -> (least, greatest)): an
    atom that holds for every index value there goes, a condition with an atom that holds for none gives its
    ``else`` branch (:func:`atom_truth`). A divisibility atom on one index (``dx_0 % 2 = 0``) first narrows that
    index's range to the values it admits, and stays: it guards the division it makes exact. An ``if`` where
    nothing is decided stays as written.

    The one box decision of the package: the derivation decides each contribution on the gradient's box
    (Algorithm 4), the code generator a kernel's body on its output's box."""

    def step(current: Expr, children: list[Expr]) -> Expr:
        current = with_children(current, children)
        return _decided(current, ranges) if isinstance(current, If) else current

    return rebuild(node, step)


def _decided(node: If, box: dict) -> Expr:
    """``node`` with its condition decided on ``box``, its branches decided already."""
    identities = {atom for atom in node.condition if _holds_for_every_integer(atom)}
    narrowing = [atom for atom in node.condition if atom not in identities and _narrows(atom, box)]
    ranges = dict(box)
    for atom in narrowing:
        narrowed = _narrowed(atom, ranges)
        if narrowed is None:
            return node.otherwise
        ranges[atom.affine.names[0]] = narrowed
    kept = []
    for atom in node.condition:  # the narrowing atoms on the whole box: they hold on their ranges
        if atom in identities:
            continue
        truth = atom_truth(atom, box if atom in narrowing else ranges)
        if truth is False:
            return node.otherwise
        if truth is None or atom.modulus:  # a divisibility atom guards the division it makes exact: it stays
            kept.append(atom)
    if len(kept) == len(node.condition):
        return node
    return if_(tuple(kept), node.then, node.otherwise)


def _holds_for_every_integer(atom: Atom) -> bool:
    """A divisibility atom true for every integer (``2 * b % 2 = 0``, a guard substituted; ``0 % 4 = 0``): it
    guards no division."""
    affine = atom.affine
    return bool(atom.modulus) and affine.denominator == 1 and all(
        c % atom.modulus == 0 for c in (affine.constant, *(c for _, c in affine.terms)))


def _narrows(atom: Atom, box: dict) -> bool:
    """Whether ``atom`` is a divisibility atom on one index of ``box``."""
    affine = atom.affine
    return bool(atom.modulus) and affine.denominator == 1 and len(affine.terms) == 1 and affine.names[0] in box


def _narrowed(atom: Atom, ranges: dict) -> tuple[int, int] | None:
    """The range of the index of ``c v + c0 = 0 (mod m)`` narrowed to the values that satisfy it, None where none
    does: they are ``v = v0 (mod m / g)``, ``g = gcd(c, m)``, where ``g`` divides ``c0``."""
    ((name, c),) = atom.affine.terms
    low, high = ranges[name]
    g = math.gcd(c, atom.modulus)
    if atom.affine.constant % g:
        return None
    step = atom.modulus // g
    v0 = (-atom.affine.constant // g) * pow(c // g, -1, step) % step if step > 1 else 0
    first, last = low + (v0 - low) % step, high - (high - v0) % step
    return (first, last) if first <= last else None


def _hoisted(node: Expr, children: list[Expr], sums: tuple, ranges: dict) -> Expr:
    """``node`` with its invariants hoisted, given its children hoisted already; ``sums`` enclose it."""
    unchanged = all(new is old for new, old in zip(children, node.children()))
    if unchanged and not (isinstance(node, Sum) and node.op == "sum"):
        # nothing moved below: the node stays as written. Folding it again would take its gates as Kronecker
        # deltas, (if {c} then (a) else (0)) * m as 0 where c fails, though m = inf makes it nan there (an empty
        # min in the forward's comparison, recomputed by the gradient: the branch taken changed)
        return node
    if isinstance(node, Unary):
        return unary(node.op, children[0])
    if isinstance(node, Binary):
        build = _OPERATORS.get(node.op)
        return build(*children) if build else Binary(node.op, *children)
    if isinstance(node, If):
        return if_(node.condition, *children)
    if isinstance(node, Select):
        return select(node.op, *children)
    if not isinstance(node, Sum):
        return node
    if node.op != "sum":  # max_k (c * x[k]) is not c * max_k x[k] for c < 0: nothing moves out
        return node.renewed(body=children[0])
    return _hoisted_sum(node, children[0], sums, ranges)


def _hoisted_sum(node: Sum, body: Expr, sums: tuple, ranges: dict) -> Expr:
    """The sum ``node`` over ``body`` (hoisted already) with the factors and gates free of its index outside it."""
    negated, factors = _factors(body)
    # A factor "if {c} then (x) else (0)" with c free of the sum's index gates the whole sum.
    gates = []
    for k, factor in enumerate(factors):
        if (isinstance(factor, If) and factor.otherwise == ZERO
                and not any(node.index in atom.affine.names for atom in factor.condition)):
            gates += factor.condition
            factors[k] = factor.then
    if gates:
        inner = _hoisted_sum(node, _product(factors), sums, ranges)
        return if_(tuple(gates), neg(inner) if negated else inner, ZERO)
    if not never_empty(node, sums, ranges):  # nothing moves out: see hoist_invariants
        return node.renewed(body=body)
    varies = [_mentions(f, node.index) for f in factors]
    outside = [f for f, v in zip(factors, varies) if not v]
    inside = [f for f, v in zip(factors, varies) if v]
    if inside and not _mentions(_product(inside), node.index):
        # the varying factors fold to a constant together (a gate decided: if {0 >= 0} then (0) else (x[k])):
        # equal terms, as a second pass would find them
        outside, inside = [*outside, _product(inside)], []
    if inside:
        summed = node.renewed(body=_product(inside))
    elif all(a.is_constant for a in node.lower + node.upper) and _count(node) < MAX_INTEGER:
        summed = number(_count(node))  # n equal terms: n times one
    else:  # equal terms, but how many depends on other indices (or past what an integer literal may be)
        summed = node.renewed(body=_product(outside))
        outside = []
    out = _product([*outside, summed])
    return neg(out) if negated else out

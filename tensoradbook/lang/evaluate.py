"""The reference evaluator (report sec. 5): numpy over the whole output grid, one exact loop per sum index.

Every other way of computing a function (its derivatives, the generated kernels of sec. 6, finite
differences) is checked against it. It walks the tree with a stack of operands rather than recursion
(only a sum's body is a call of its own), applies numpy's function of each operation of the table
(:data:`tensoradbook.lang.ops.OPERATIONS`, spelled here: the kernels' spellings are code generation's),
and estimates its work before it starts
(:func:`work`), so that a huge sum is refused in milliseconds rather than run for minutes.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .expr import Affine, Atom, Binary, Element, Expr, ExpressionError, If, Number, Select, Sum, Unary, _fold
from .ops import COMPARISONS, OPERATIONS, REDUCTIONS, numpy_function

# Element-terms (output elements times sum ranges) the reference evaluator may visit: numpy over the grid
# visits this many in seconds for small bodies, and a test's or a widget's check must not take minutes.
MAX_WORK = 10**8
# One evaluation of a sum's body costs at least this many element-terms: the evaluator's overhead per
# call, a few hundred elements' worth, dominates on small outputs with long sums.
_CALL_ELEMENTS = 256



def sum_range(lower: tuple[Affine, ...], upper: tuple[Affine, ...], intervals: dict) -> tuple[int, int]:
    """An interval around the values a sum index with bounds ``lower`` .. ``upper`` takes while the indices
    in them range over ``intervals``; empty (least > greatest) if the sum is empty everywhere."""
    return (max(math.ceil(a.interval(intervals)[0]) for a in lower),
            min(math.floor(a.interval(intervals)[1]) for a in upper))


# upper_bound substitutes every combination of bounds; nested sums with several bounds each (derivatives'
# max/min lists) multiply them, so past this many candidates a candidate keeps its sum index.
ABOVE_CANDIDATES = 64


def upper_bound(affine: Affine, sums: tuple, intervals: dict) -> Fraction:
    """An upper bound of ``affine`` where each of ``sums`` (outermost first; anything with ``index``,
    ``lower`` and ``upper``, as :class:`~tensoradbook.lang.expr.Sum`) has its index in its range, often its
    maximum.

    From the innermost sum out, each sum index is replaced by its upper bound
    (its lower bound where its coefficient is negative); with several bounds,
    each gives an upper bound and the least is kept. What is left, sum indices
    kept past :data:`ABOVE_CANDIDATES` included, ranges over the box.
    """
    candidates = [affine]
    for frame in reversed(sums):
        widened = []
        for candidate in candidates:
            c = candidate.coefficient(frame.index)
            bounds = frame.upper if c > 0 else frame.lower
            if c and len(candidates) * len(bounds) <= ABOVE_CANDIDATES:
                widened += [candidate.substitute({frame.index: bound}) for bound in bounds]
            else:
                widened.append(candidate)
        candidates = widened
    return min(candidate.interval(intervals)[1] for candidate in candidates)


def range_length(node: Sum, sums: tuple, intervals: dict) -> int:
    """An upper bound on the values ``node``'s index takes at one element, where the enclosing ``sums`` have
    their indices in range: the box's interval (:func:`sum_range`) or, for some pair of a lower bound ``l``
    and an upper bound ``u``, ``floor(u - l) + 1`` (``floor(u) - ceil(l) <= floor(u - l)``), with the
    enclosing indices substituted by their bounds (:func:`upper_bound`). A max pooling's gradient reads
    one window per element, ``ceil((b - 1) / 2) .. floor(b / 2)``, where the box says 32."""
    low, high = sum_range(node.lower, node.upper, intervals)
    length = high - low + 1
    pairs = [(lower, upper) for lower in node.lower for upper in node.upper][:ABOVE_CANDIDATES]
    for lower, upper in pairs:
        length = min(length, math.floor(upper_bound(upper - lower, sums, intervals)) + 1)
    return max(length, 0)


def bound_value(affines: tuple[Affine, ...], env: dict, lower: bool):
    """``max(ceil(...))`` of a lower bound or ``min(floor(...))`` of an upper bound."""
    values = []
    for a in affines:
        numerator = a.numerator.evaluate(env)
        # ceil(n / d) = -floor(-n / d)
        values.append(-((-numerator) // a.denominator) if lower else numerator // a.denominator)
    pick = np.maximum if lower else np.minimum
    out = values[0]
    for v in values[1:]:
        out = pick(out, v)
    return out


# numpy's ufunc of each operation, comparison and reduction (the one that folds its terms) is the one of the same
# name, but for these.
_UFUNC_NAMES = {"neg": "negative", "+": "add", "-": "subtract", "*": "multiply", "/": "divide", "**": "power",
                "round": "rint", "max": "maximum", "min": "minimum", "sum": "add",
                ">": "greater", ">=": "greater_equal", "<": "less", "<=": "less_equal"}
_NUMPY = {name: numpy_function(_UFUNC_NAMES.get(name, name)) for name in (*OPERATIONS, *COMPARISONS, *REDUCTIONS)}


def _clipped(index, size: int):
    """Indices clipped into range: lanes outside a sum's range or a condition read a valid element,
    and their value is masked out afterwards."""
    if isinstance(index, (int, np.integer)):
        return min(max(int(index), 0), size - 1)
    return np.minimum(np.maximum(index, 0), size - 1)  # np.clip costs several times more on small arrays


def _evaluate(root: Expr, env: dict, args: dict, grid_shape: tuple, active=True) -> np.ndarray:
    """The value of ``root`` over the grid, with a stack of operands instead of recursion (only a sum's
    body is a call of its own, so the recursion is as deep as the sums are nested). ``active`` marks the
    elements where every enclosing sum's index is in its range; elsewhere the value is masked out."""
    operands: list = []
    pending: list = [root]
    while pending:
        node = pending.pop()
        kind = type(node)
        if kind is tuple:  # (node,): its children's values are on top of the operands
            node = node[0]
            if type(node) is Unary:
                operands[-1] = _NUMPY[node.op](operands[-1])
            elif type(node) is Select:
                otherwise, then, right = operands.pop(), operands.pop(), operands.pop()
                operands[-1] = np.where(_NUMPY[node.op](operands[-1], right), then, otherwise)
            else:
                second = operands.pop()
                if type(node) is Binary:
                    operands[-1] = _NUMPY[node.op](operands[-1], second)
                else:
                    operands[-1] = np.where(_holds(node.condition, env, grid_shape), operands[-1], second)
        elif kind is Number:
            operands.append(np.float64(node.value))
        elif kind is Element:
            array = args[node.name]
            index = tuple(_clipped(a.evaluate(env), n) for a, n in zip(node.indices, array.shape))
            operands.append(array[index] if index else array[()])
        elif kind is Sum:
            operands.append(_sum_value(node, env, args, grid_shape, active))
        elif kind in (Unary, Binary, If, Select):
            pending.append((node,))
            pending.extend(reversed(node.children()))
        else:
            raise TypeError(f"not an expression node: {kind.__name__}")
    return operands[0]


def _holds(condition: tuple[Atom, ...], env: dict, grid_shape: tuple) -> np.ndarray:
    mask = np.ones(grid_shape, dtype=bool)
    for atom in condition:
        mask = mask & atom.holds(env)
    return mask


def _sum_value(node: Sum, env: dict, args: dict, grid_shape: tuple, active) -> np.ndarray:
    """The reduction over each element's own range: the t-th pass gives the index ``low + t`` per element, so
    a sum runs as many passes as its longest range at an active element (one window of a pooling's gradient,
    2 values), not as many as its index takes over the whole grid (32)."""
    low = bound_value(node.lower, env, lower=True)
    lengths = np.where(active, bound_value(node.upper, env, lower=False) - low + 1, 0)
    reduction = REDUCTIONS[node.op]
    combine = _NUMPY[node.op]
    total = np.full(grid_shape, reduction.identity)
    if total.size == 0:
        return total
    for t in range(int(np.max(lengths))):
        inner = dict(env)
        inner[node.index] = low + t
        inside = t < lengths
        value = _evaluate(node.body, inner, args, grid_shape, inside)
        total = combine(total, np.where(inside, value, reduction.identity))
    return total


def _terms_per_element(fn, branch_taken: bool = False, at_center: bool = False, own_ranges: bool = False) -> int:
    """Per element of ``fn``'s output, an upper bound on the sums' iterations: each sum's range over the output
    box times one plus the iterations of the sums in its body (nested sums multiply). With ``branch_taken``,
    a comparison's select counts its cheaper branch alone, as a kernel runs only the branch taken where a
    branch loops (the loop of a max's gradient runs at the extremal element alone): an estimate, not a bound.
    With ``at_center``, each range is taken at the center of the box and of the enclosing sums' ranges rather
    than over all of them: a typical element's count, where bounds vary with the element (the Fourier-Motzkin
    bounds of a strided convolution's gradient, 2 or 3 of 30 values, not 30). With ``own_ranges``, each sum
    counts the longest range it has at one element (:func:`range_length`), as the reference evaluator runs it."""

    def centered(low, high):
        middle = (low + high) // 2
        return (middle, middle) if at_center else (low, high)

    def enter(node, context):
        if not node.children():
            return 0, None
        if isinstance(node, Sum):
            intervals, sums = context
            low, high = sum_range(node.lower, node.upper, intervals)
            return (0, None) if low > high else (None, ({**intervals, node.index: centered(low, high)},
                                                        sums + (node,)))
        return None, context

    def leave(node, context, children):  # how many times the evaluator runs sums' bodies
        if isinstance(node, Sum):
            intervals, sums = context
            if own_ranges:
                return range_length(node, sums, intervals) * (1 + children[0])
            low, high = sum_range(node.lower, node.upper, intervals)
            return (high - low + 1) * (1 + children[0])
        if branch_taken and isinstance(node, Select):
            left, right, then, otherwise = children
            return left + right + min(then, otherwise)
        return sum(children)

    box = {name: centered(0, n - 1) for name, n in zip(fn.indices, fn.shapes[fn.name])}
    return _fold(fn.body, (box, ()), enter, leave)


def work(fn) -> int:
    """An upper bound on the element-terms :func:`evaluate` visits for ``fn``: the output's elements, plus,
    per sum, the passes it runs (its longest range at one element, :func:`range_length`, times the passes of
    the enclosing sums) times the output's elements (at least 256: the overhead of a call). The evaluator
    runs a sum's body over the whole output grid once per pass, both branches of every if and select."""
    size = math.prod(fn.shapes[fn.name])
    return size + max(size, _CALL_ELEMENTS) * _terms_per_element(fn, own_ranges=True)


def element_terms(fn) -> int:
    """The work of computing ``fn`` element by element, as one thread per element does it (a kernel): every
    element counts 1 plus the iterations of the sums (and max / min reductions) inside it, bounded as in
    :func:`work` but for the branches a kernel skips, with no minimum per call."""
    return math.prod(fn.shapes[fn.name]) * (1 + _terms_per_element(fn, branch_taken=True))


def typical_terms(fn) -> int:
    """:func:`element_terms` with each sum's range taken at the center of the output's box (and of the enclosing
    sums' ranges): what code generation plans by (threads, BLAS). Equal where the bounds are constant; where they
    vary with the element, a typical element's count rather than the box's bound."""
    return math.prod(fn.shapes[fn.name]) * (1 + _terms_per_element(fn, branch_taken=True, at_center=True))


def evaluate(fn, args: dict) -> np.ndarray:
    """The reference value of ``fn``'s whole output as a float64 array of the output's shape.

    Refused where :func:`work` is above :data:`MAX_WORK`: numpy over the
    whole grid per sum index value would run for minutes.
    """
    if fn.work > MAX_WORK:
        raise ExpressionError(
            f"{fn.name}: the reference evaluator would visit up to {fn.work:.3g} element-terms (the "
            f"output's elements times its sums' ranges), more than MAX_WORK = {MAX_WORK:.0e}; use smaller "
            "shapes or sum bounds, or a compiled kernel: fn.compile('numba')")
    shape = tuple(fn.shapes[fn.name])
    arrays = fn.argument_arrays(args)
    grid = np.indices(shape, sparse=True) if shape else ()
    env = dict(zip(fn.indices, grid))
    with np.errstate(all="ignore"):  # masked-out lanes may overflow or divide by zero harmlessly
        value = _evaluate(fn.body, env, arrays, shape)
    return np.array(np.broadcast_to(value, shape), dtype=np.float64)

"""The reference evaluator (report sec. 5): numpy over the whole output grid, one exact loop per sum index.

Every other way of computing a function (its derivatives, the generated kernels of sec. 6, finite
differences) is checked against it. It walks the tree with a stack of operands rather than recursion
(only a sum's body is a call of its own), applies each operation's numpy function from the operation
table (:data:`tensoradbook.lang.ops.OPERATIONS`), and estimates its work before it starts
(:func:`work`), so that a huge sum is refused in milliseconds rather than run for minutes.
"""

from __future__ import annotations

import math

import numpy as np

from .expr import Affine, Atom, Binary, Element, Expr, ExpressionError, If, Number, Select, Sum, Unary, _fold
from .ops import COMPARISONS, OPERATIONS, REDUCTIONS, numpy_function

# Element-terms (output elements times sum ranges) the reference evaluator may visit: numpy over the grid
# runs 10**7 to 10**8 of them a second for small bodies, so this is seconds, not minutes.
MAX_WORK = 10**8
# One evaluation of a sum's body costs at least this many element-terms: the evaluator's overhead per
# call (7 us for x[i], whose elements cost 9 ns each) dominates on small outputs with long sums.
_CALL_ELEMENTS = 256



def sum_range(lower: tuple[Affine, ...], upper: tuple[Affine, ...], intervals: dict) -> tuple[int, int]:
    """An interval around the values a sum index with bounds ``lower`` .. ``upper`` takes while the indices
    in them range over ``intervals``; empty (least > greatest) if the sum is empty everywhere."""
    return (max(math.ceil(a.interval(intervals)[0]) for a in lower),
            min(math.floor(a.interval(intervals)[1]) for a in upper))


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


_NUMPY = {name: numpy_function(row.numpy) for name, row in (*OPERATIONS.items(), *COMPARISONS.items())}


def _clipped(index, size: int):
    """Indices clipped into range: lanes outside a sum's range or a condition read a valid element,
    and their value is masked out afterwards."""
    if isinstance(index, (int, np.integer)):
        return min(max(int(index), 0), size - 1)
    return np.minimum(np.maximum(index, 0), size - 1)  # np.clip costs several times more on small arrays


def _evaluate(root: Expr, env: dict, args: dict, grid_shape: tuple) -> np.ndarray:
    """The value of ``root`` over the grid, with a stack of operands instead of recursion (only a sum's
    body is a call of its own, so the recursion is as deep as the sums are nested)."""
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
            operands.append(_sum_value(node, env, args, grid_shape))
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


def _sum_value(node: Sum, env: dict, args: dict, grid_shape: tuple) -> np.ndarray:
    low = np.broadcast_to(bound_value(node.lower, env, lower=True), grid_shape)
    high = np.broadcast_to(bound_value(node.upper, env, lower=False), grid_shape)
    reduction = REDUCTIONS[node.op]
    combine = numpy_function(reduction.numpy)
    total = np.full(grid_shape, reduction.identity)
    if low.size == 0 or high.size == 0:
        return total
    for k in range(int(low.min()), int(high.max()) + 1):
        inner = dict(env)
        inner[node.index] = k
        value = _evaluate(node.body, inner, args, grid_shape)
        total = combine(total, np.where((low <= k) & (k <= high), value, reduction.identity))
    return total


def _terms_per_element(fn, branch_taken: bool = False, at_center: bool = False) -> int:
    """Per element of ``fn``'s output, an upper bound on the sums' iterations: each sum's range over the output
    box times one plus the iterations of the sums in its body (nested sums multiply). With ``branch_taken``,
    a comparison's select counts its cheaper branch alone, as a kernel runs only the branch taken where a
    branch loops (the loop of a max's gradient runs at the extremal element alone): an estimate, not a bound.
    With ``at_center``, each range is taken at the center of the box and of the enclosing sums' ranges rather
    than over all of them: a typical element's count, where bounds vary with the element (the Fourier-Motzkin
    bounds of a strided convolution's gradient, 2 or 3 of 30 values, not 30)."""

    def centered(low, high):
        middle = (low + high) // 2
        return (middle, middle) if at_center else (low, high)

    def enter(node, intervals):
        if not node.children():
            return 0, None
        if isinstance(node, Sum):
            low, high = sum_range(node.lower, node.upper, intervals)
            return (0, None) if low > high else (None, {**intervals, node.index: centered(low, high)})
        return None, intervals

    def leave(node, intervals, children):  # how many times the evaluator runs sums' bodies
        if isinstance(node, Sum):
            low, high = sum_range(node.lower, node.upper, intervals)
            return (high - low + 1) * (1 + children[0])
        if branch_taken and isinstance(node, Select):
            left, right, then, otherwise = children
            return left + right + min(then, otherwise)
        return sum(children)

    box = {name: centered(0, n - 1) for name, n in zip(fn.indices, fn.shapes[fn.name])}
    return _fold(fn.body, box, enter, leave)


def work(fn) -> int:
    """An upper bound on the element-terms :func:`evaluate` visits for ``fn``: the output's elements, plus,
    per sum, the lengths of its range and of the enclosing sums' ranges over the output box times the
    output's elements (at least 256: the overhead of a call). The evaluator runs a sum's body over
    the whole output grid for every value its index takes anywhere."""
    size = math.prod(fn.shapes[fn.name])
    return size + max(size, _CALL_ELEMENTS) * _terms_per_element(fn)


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

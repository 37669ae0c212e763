"""Chapters 01, 02, 03 and 05: derivatives of element-wise functions.

Chapter 01 (introduction, report sec. 1) and 05 (sec. 5):
:func:`check_derivative`, :func:`check_term_count`, :func:`check_index_matrix`.
Chapter 02 (reverse accumulation, sec. 2): :func:`check_adjoint`, :func:`check_scalar_gradient`.
Chapter 03 (tensor-valued functions, sec. 3): :func:`check_vec_index`,
:func:`check_jacobian_memory`, :func:`check_jacobian`.

These checks compare with the core's derivation (:func:`tensoradbook.ad.derive`,
:func:`tensoradbook.ad.reverse.reverse_accumulate`) numerically on random
inputs, or with brute-force enumeration and numpy, so any correct way of
writing an answer passes.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..ad.derive import derive
from ..ad.gradcheck import random_arguments
from ..ad.reverse import local_partials, reverse_accumulate
from ..lang.evaluate import bound_value
from ..lang.expr import Element, If, Number, Sum
from ..lang.function import Function
from ..lang.printer import expr_text
from .answers import parse_answer, read_function, read_int_matrix, read_int_triple, vector_text
from .checking import ATOL, RTOL, Wrong, close, pending, verdict
from .feedback import CheckResult, element_problems, index_text, number_text

__all__ = [
    "check_derivative",
    "check_term_count",
    "check_index_matrix",
    "check_adjoint",
    "check_scalar_gradient",
    "check_vec_index",
    "check_jacobian_memory",
    "check_jacobian",
]

#: The most characters of a derivative or an adjoint these checks read (the longest right answer is a few hundred).
ANSWER_TEXT_LIMIT = 4_000
# A scalar gradient worked by hand is rounded to a few digits, also where it is near 0: it passes within this.
_BY_HAND_ATOL = 1e-4
# The Jacobian's entries are of order 1 at the exercises' points: a difference below this is rounding.
_JACOBIAN_ATOL = 1e-8


def _scalar_shapes(text: str) -> dict:
    return {name: () for name in re.findall(r"([A-Za-z][A-Za-z0-9_]*)\s*\[\s*\]", text)}


def check_derivative(fn, argument: str, answer, shapes=None, trials: int = 3, seed: int = 0) -> CheckResult:
    """Exercise: write the gradient ``dx`` of ``sum(df * f)`` element-wise, in the report's notation.

    ``fn`` is a function (or its text with ``shapes``), ``argument`` the name
    of the argument ``x``. The answer is text such as
    ``"dx[i] = df[i] * cos (x[i])"`` (for ``f[i] = sin (x[i])``): any index
    names, any equivalent form. It is parsed (a mistake shows the parser's caret message,
    e.g. a sum range that leaves the shape of ``df``) and evaluated on random
    inputs and random ``df`` against the core's derivative (Algorithm 4); the
    first elements that differ are named. The gradient is called ``d`` and the
    argument's name (``dx``), or what the core calls it when that name is taken
    (the gradient of a first derivative ``dx`` with respect to ``x`` is ``dx_1``).
    """
    fn = read_function(fn, shapes)
    if argument not in fn.arguments:
        raise ValueError(f"{argument!r} is not an argument of {fn.name}; it has {fn.arguments}")
    grads = derive(fn)
    truth_fn = grads[argument]
    core_name, adjoint = truth_fn.name, grads.adjoint_name
    natural = "d" + argument
    gradient = natural if natural == core_name or natural not in truth_fn.arguments else core_name
    accepted = dict.fromkeys([gradient, core_name])
    answer_shapes = dict(truth_fn.shapes)
    answer_shapes.update({n: truth_fn.shapes[core_name] for n in accepted})
    name = f"{gradient}, the derivative of {fn.name} with respect to {argument}"
    if answer is None:
        sizes = ", ".join(f"{k}: {v}" for k, v in truth_fn.shapes.items() if k not in accepted)
        return pending(name, f"Your answer is text like \"{gradient}[...] = ...\" using {adjoint} "
                              f"and the arguments (shapes {sizes}).")
    try:
        mine = parse_answer(answer, answer_shapes, "derivative", ANSWER_TEXT_LIMIT)
    except Wrong as err:
        return err.result(name)
    if mine.name not in accepted:
        return CheckResult(name, False, [f"your left side defines {mine.name!r}; the gradient is called "
                                         f"{gradient!r} (write {gradient}[...] = ...)"])
    unknown = [a for a in mine.arguments if a not in truth_fn.shapes or a in accepted]
    if unknown:  # pragma: no cover -- the parser rejects names without a shape
        return CheckResult(name, False, [f"your expression uses {unknown[0]!r}, which is not available"])
    rng = np.random.default_rng(seed)
    problems = []
    for _ in range(trials):
        values = _trial_values(fn, adjoint, mine, truth_fn, rng)
        right = truth_fn.evaluate(values)
        yours = mine.evaluate(values)
        agree = close(yours, right)
        if agree.all():
            continue
        problems += element_problems(gradient, yours, right, agree, ATOL,
                                      lambda b: f"no element of {fn.name} reads {argument}{index_text(b)}",
                                      "a Kronecker delta / condition is missing")
        break
    return verdict(name, problems, note=f"Your expression agrees with the core's derivative on {trials} random inputs.")


def _trial_values(fn, adjoint: str, mine, truth_fn, rng) -> dict:
    """Random arguments of ``fn``, a random adjoint, and positive values for what either gradient reads besides."""
    values = dict(random_arguments(fn, rng))
    values[adjoint] = rng.standard_normal(fn.shapes[fn.name])
    for extra in [*mine.arguments, *truth_fn.arguments]:  # e.g. df of a second derivative
        if extra not in values:
            values[extra] = rng.uniform(0.5, 1.5, truth_fn.shapes[extra])
    return values


def _element_points(fn, argument: str, beta: tuple) -> list:
    """Brute force: every (occurrence, extended index) at which ``fn`` reads ``argument[beta]``."""
    hits = set()

    def visit(node, env, scope):
        if isinstance(node, Element):
            if node.name == argument and tuple(int(a.evaluate(env)) for a in node.indices) == beta:
                hits.add((node, scope, tuple(sorted(env.items()))))
            return
        if isinstance(node, Sum):
            low = int(bound_value(node.lower, env, lower=True))
            high = int(bound_value(node.upper, env, lower=False))
            for k in range(low, high + 1):
                inner = dict(env)
                inner[node.index] = k
                visit(node.body, inner, scope + (node.index,))
            return
        if isinstance(node, If):
            visit(node.then if all(atom.holds(env) for atom in node.condition) else node.otherwise, env, scope)
            return
        for child in node.children():
            visit(child, env, scope)

    for point in np.ndindex(*fn.shapes[fn.name]):
        visit(fn.body, dict(zip(fn.indices, (int(v) for v in point))), ())
    return sorted(hits, key=lambda h: h[2])


def check_term_count(fn, argument: str, beta, answer, shapes=None) -> CheckResult:
    """Exercise: how many terms does the gradient element ``dx[beta]`` add up?

    That is the number of extended indices ``alpha`` (output index and sum
    indices, sec. 5.2) in range at which the function reads ``x[beta]``: the
    size of the set Gamma of eq. 39 (summed over the occurrences of x). Counted
    by brute force over every element of the output and every sum.
    """
    fn = read_function(fn, shapes)
    if argument not in fn.arguments:
        raise ValueError(f"{argument!r} is not an argument of {fn.name}; it has {fn.arguments}")
    beta = tuple(int(v) for v in (beta if hasattr(beta, "__iter__") else [beta]))
    name = f"number of terms of d{argument}{index_text(beta)}"
    if answer is None:
        return pending(name, "Your answer is a non-negative integer.")
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        return CheckResult(name, False, [f"the answer must be an integer count, got {answer!r}"])
    hits = _element_points(fn, argument, beta)
    count = len(hits)
    if int(answer) == count:
        return CheckResult(name, True, note=f"Indeed, {fn.name} reads {argument}{index_text(beta)} "
                                            f"at {count} extended ind{'ex' if count == 1 else 'ices'}.")
    # The same words for every wrong count: "too many" / "too few" would make repeated tries a binary search.
    return CheckResult(name, False, [
        f"{int(answer)} is not the number of extended indices (output index and sum indices) at which {fn.name} "
        f"reads {argument}{index_text(beta)}",
        f"hint: write the extended index alpha (the indices of {fn.name}, then the sums' indices), solve "
        f"{argument}'s index expressions = {index_text(beta)} for it, and count the solutions inside every range "
        f"(the shape of {fn.name} and the sums' bounds, both ends included); an index that {argument} does not read "
        f"runs over its whole range (the set Gamma of eq. 39)"])


def check_index_matrix(fn, argument: str, answer, shapes=None, occurrence: int = 0) -> CheckResult:
    """Exercise: the index matrix ``A`` of an argument's occurrence ``x[A alpha + a]`` (eq. 35, sec. 5.2).

    Its columns belong to the extended index ``alpha``: the output indices,
    then the sum indices from the outermost sum inwards; one row per index of
    the argument. Compared with the matrix Algorithm 4 uses.
    """
    fn = read_function(fn, shapes)
    parts = derive(fn).contributions.get(argument)
    if not parts:
        raise ValueError(f"{argument!r} is not an argument of {fn.name} with a non-zero derivative")
    part = parts[occurrence]
    element = expr_text(part.element)
    alpha = ", ".join(part.alpha)
    name = f"index matrix of {element} over alpha = ({alpha})"
    A = part.index_matrix
    if answer is None:
        return pending(name, f"Your answer is an integer matrix with {A.shape[0]} row(s) (one per index of "
                              f"{argument}) and {A.shape[1]} columns ({alpha}).")
    try:
        mine = read_int_matrix(answer, "A")
    except Wrong as err:
        return err.result(name)
    if mine.ndim == 1 or mine.shape != A.shape:
        got = "x".join(str(n) for n in mine.shape)
        return CheckResult(name, False, [f"A must be {A.shape[0]}x{A.shape[1]}: one row per index of {argument}, "
                                         f"one column per entry of alpha = ({alpha}); yours is {got}"])
    if (mine == A).all():
        return CheckResult(name, True, note="" if not any(part.offset) else
                           f"(The constant offset a = {vector_text(part.offset)} is not part of A.)")
    # One message for any wrong matrix: naming the wrong rows would let a few tries fix it row by row.
    coefficients = [f"c_{n}" for n in range(len(part.alpha))]
    written = " + ".join(f"{c} {a}" for c, a in zip(coefficients, part.alpha))
    return CheckResult(name, False, [f"that is not the index matrix of {element}: row r of A holds the coefficients "
                                     f"of alpha's entries ({alpha}) in index r of {argument}, so that A alpha + a "
                                     f"gives {argument}'s indices: an index {written} + a_r has the row "
                                     f"[{', '.join(coefficients)}], and the constant a_r is not part of A"])


def _consumer_parts(root, node):
    """``[(parent, contribution, local partial)]`` for each edge into ``node`` in the sweep with seed 1 (eq. 1)."""
    sweep = reverse_accumulate(root, Number(1))
    found = any(step.node == node for step in sweep.steps)
    parts = []
    for step in sweep.steps:
        partials = dict(local_partials(step.node)) if not hasattr(step.node, "condition") else {}
        for child, contribution in step.contributions:
            if child == node:
                parts.append((step.node, contribution, partials.get(child)))
    adjoint = next((step.adjoint for step in sweep.steps if step.node == node), None)
    return found, adjoint, parts


def _scalar_value(expr, shapes, values) -> float:
    return float(Function("v", (), expr, {**shapes, "v": ()}).evaluate(values))


def check_adjoint(fn, node, answer, shapes=None, points: int = 3, seed: int = 0) -> CheckResult:
    """Exercise: the adjoint ``df/d node`` of a part of a scalar function (eqs. 1-2).

    ``fn`` is a scalar function such as ``"f[] = sin (x[] * y[]) * x[]"``,
    ``node`` the text of one of its parts (``"x[] * y[]"``). The answer is an
    expression in the arguments (text, or a number). It is compared on random
    points with the core's reverse sweep seeded with ``df/df = 1`` (eq. 1).
    Typical slips get their own message: only the local derivative
    ``d parent / d node``, or only one of several consumers (eq. 2 sums them).
    """
    text = fn if isinstance(fn, str) else str(fn)
    shapes = dict(shapes) if shapes is not None else _scalar_shapes(text)
    fn = read_function(fn, shapes)
    shapes = dict(fn.shapes)
    node_fn = read_function(f"{fn.name}[] = {node}" if isinstance(node, str) else node, shapes)
    found, adjoint, parts = _consumer_parts(fn.body, node_fn.body)
    if not found:
        raise ValueError(f"{node!r} is not a part of {fn}")
    node_text = expr_text(node_fn.body)
    name = f"adjoint of the part {node_text} of {fn.name}"
    if answer is None:
        return pending(name, f"Your answer is an expression in {', '.join(fn.arguments)} (text), "
                              f"e.g. \"cos ({fn.arguments[0]}[])\", or a number.")
    if isinstance(answer, (int, float, np.integer, np.floating)) and not isinstance(answer, bool):
        answer = repr(float(answer))
    try:
        mine = parse_answer(f"{fn.name}[] = {answer}" if isinstance(answer, str) else answer, shapes, "adjoint",
                            ANSWER_TEXT_LIMIT)
    except Wrong as err:
        return err.result(name)
    rng = np.random.default_rng(seed)
    for _ in range(points):
        values = {a: rng.uniform(0.5, 1.5) for a in fn.arguments}
        right = _scalar_value(adjoint, shapes, values)
        yours = float(mine.evaluate(values))
        if np.isclose(yours, right, rtol=RTOL, atol=ATOL):
            continue
        at = ", ".join(f"{k} = {number_text(v)}" for k, v in values.items())
        problems = [f"at {at} your adjoint is {number_text(yours)}, the right value is {number_text(right)}"]
        for parent, contribution, partial in parts:
            parent_text = expr_text(parent)
            if len(parts) > 1 and np.isclose(yours, _scalar_value(contribution, shapes, values), rtol=RTOL):
                problems.append(f"that is only the path through the consumer {parent_text}; the part is used "
                                f"by {len(parts)} consumers and eq. 2 sums over all of them")
                break
            if partial is not None and np.isclose(yours, _scalar_value(partial, shapes, values), rtol=RTOL) \
                    and not np.isclose(yours, _scalar_value(contribution, shapes, values), rtol=RTOL):
                problems.append(f"that is the local derivative d({parent_text})/d({node_text}) only; "
                                f"multiply it by the adjoint of {parent_text} (eq. 2)")
                break
        return CheckResult(name, False, problems)
    return CheckResult(name, True, note=f"Your expression agrees with the reverse sweep at {points} random points.")


def check_scalar_gradient(fn, point: dict, answer, shapes=None, rtol: float = 1e-3) -> CheckResult:
    """Exercise: the numbers ``df/dx`` for every argument of a scalar function at a point (eq. 3).

    The answer is a dict ``{"x": value, ...}`` (values to about 4 digits are
    fine). Compared with the core's derivative (tested against finite
    differences in the test suite).
    """
    text = fn if isinstance(fn, str) else str(fn)
    shapes = dict(shapes) if shapes is not None else _scalar_shapes(text)
    fn = read_function(fn, shapes)
    at = ", ".join(f"{k} = {number_text(v)}" for k, v in point.items())
    name = f"gradient of {fn.name} at {at}"
    if answer is None:
        return pending(name, "Your answer is a dict {" + ", ".join(f'"{a}": ...' for a in fn.arguments) + "}.")
    if not isinstance(answer, dict):
        return CheckResult(name, False, [f"the answer must be a dict like {{'{fn.arguments[0]}': 1.23, ...}}, "
                                         f"got {type(answer).__name__}"])
    grads = derive(fn)
    values = {k: float(v) for k, v in point.items()}
    args = {k: np.float64(v) for k, v in values.items()}
    exact = {a: float(v) for a, v in grads.evaluate(args, np.float64(1.0)).items()}
    problems = []
    missing = [a for a in fn.arguments if a not in answer]
    if missing:
        problems.append(f"give a value for every argument; missing: {', '.join(missing)}")
    extra = [a for a in answer if a not in fn.arguments]
    if extra:
        problems.append(f"{', '.join(map(str, extra))} is not an argument of {fn.name}")
    for a in fn.arguments:
        if a not in answer:
            continue
        try:
            yours = float(answer[a])
        except (TypeError, ValueError):
            problems.append(f"df/d{a} must be a number, got {answer[a]!r}")
            continue
        if np.isclose(yours, exact[a], rtol=rtol, atol=_BY_HAND_ATOL):
            continue
        message = f"df/d{a} = {number_text(yours)} is not right"
        _, _, parts = _consumer_parts(fn.body, Element(a, ()))
        values_parts = [_scalar_value(contribution, fn.shapes, args) for _, contribution, _ in parts]
        if len(parts) > 1 and any(np.isclose(yours, v, rtol=rtol, atol=_BY_HAND_ATOL) for v in values_parts):
            message += (f": it is the path through one consumer only; {a} is used by {len(parts)} parts "
                        f"and eq. 3 adds all their contributions")
        problems.append(message)
    return verdict(name, problems)


#: The shapes on which :func:`check_vec_index` tries a function answer besides the exercise's own: one to five
#: dimensions, sizes of 1 included, so that a function right only for the exercise's number of dimensions, or for
#: its element, fails here as it would on the hidden tests.
VEC_SHAPES = ((6,), (4, 3), (3, 1, 2, 2), (2, 3, 1, 2, 2))


def _vec_function_problems(shape, index, function) -> list[str]:
    """What is wrong with ``function(shape, index)`` as the vec position, on every element of ``shape`` (the
    exercise's element first) and of :data:`VEC_SHAPES`: the first wrong call, and how many calls are wrong."""
    calls = [(shape, index)] + [(s, i) for s in (shape, *VEC_SHAPES) for i in np.ndindex(*s)
                                if (s, i) != (shape, index)]
    problems, wrong = [], 0
    for s, i in calls:
        i = tuple(int(v) for v in i)
        call = f"vec_index({s}, {i})"
        try:
            value = function(s, i)
        except Exception as err:  # the student's code: any error, with the call it happened at
            problems = problems or [f"{call} raised {type(err).__name__}: {err}"]
            wrong += 1
            continue
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            problems = problems or [f"{call} returned {value!r}, not an integer position"]
            wrong += 1
            continue
        right = int(np.ravel_multi_index(i, s, order="F"))
        if int(value) == right:
            continue
        wrong += 1
        if problems:
            continue
        if int(value) == int(np.ravel_multi_index(i, s, order="C")):
            problems = [f"{call} = {int(value)} is the row-major (C order) position of A{index_text(i)}; vec stacks "
                        f"the columns, so the FIRST index runs fastest (eq. 4)"]
        else:
            problems = [f"{call} = {int(value)} is not the position of A{index_text(i)} in vec A for A of shape {s}"]
    if problems:
        problems.append(f"wrong on {wrong} of {len(calls)} calls (every element of A of shape {shape} and of "
                        f"tensors of {len(VEC_SHAPES)} other shapes, with 1 to {max(len(s) for s in VEC_SHAPES)} "
                        f"dimensions): "
                        f"the function must work for any shape, counting from 0 (eq. 4 counts from 1)")
    return problems


def check_vec_index(shape, index, answer) -> CheckResult:
    """Exercise: the position of ``A[index]`` in ``vec A`` (eq. 4), zero-based; or a function
    ``vec_index(shape, index)`` that returns it for any shape.

    vec stacks the columns: the first index runs fastest. A number is compared with numpy's
    ``ravel_multi_index(..., order="F")`` and with a brute-force walk; an index whose row-major (C order)
    position is the same (the first and the last element, for instance) is refused with a ValueError: there the
    row-major answer would pass. A function is called on every element of ``shape`` and of the tensors of
    :data:`VEC_SHAPES` (one to five dimensions), as the hidden tests of the assignment call it on others.
    """
    shape = tuple(int(n) for n in shape)
    index = tuple(int(i) for i in index)
    if len(index) != len(shape) or any(not 0 <= i < n for i, n in zip(index, shape)):
        raise ValueError(f"{index_text(index)} is not an index of an array of shape {shape}")
    if callable(answer):
        name = f"vec_index(shape, index) on A of shape {shape} and on tensors of other shapes"
        return verdict(name, _vec_function_problems(shape, index, answer))
    if int(np.ravel_multi_index(index, shape, order="F")) == int(np.ravel_multi_index(index, shape, order="C")):
        raise ValueError(f"A{index_text(index)} has the same position in vec A (column-major) and in row-major "
                         f"order, so the exercise cannot tell the two apart: pick another index")
    name = f"vec index of A{index_text(index)} for A of shape {shape}"
    if answer is None:
        return pending(name, "Your answer is one integer (zero-based).")
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        return CheckResult(name, False, [f"the answer must be an integer position, got {answer!r}"])
    right = int(np.ravel_multi_index(index, shape, order="F"))
    walk = [tuple(reversed(p)) for p in np.ndindex(*reversed(shape))]  # first index fastest
    if walk.index(index) != right:  # pragma: no cover -- numpy and the walk agree
        raise AssertionError("vec order inconsistent")
    answer = int(answer)
    if answer == right:
        return CheckResult(name, True)
    if not 0 <= answer < len(walk):
        return CheckResult(name, False, [f"vec A has positions 0 to {len(walk) - 1}; {answer} is outside"])
    if answer == int(np.ravel_multi_index(index, shape, order="C")):
        # the row-major position is a mistake whatever the right answer is: naming it gives nothing away
        return CheckResult(name, False, ["that is the row-major (C order) position; vec stacks columns, so the FIRST "
                                         "index runs fastest (eq. 4)"])
    # Which element a wrong position holds, or "off by one", would let a few tries read the answer off.
    return CheckResult(name, False, [f"{answer} is not the position of A{index_text(index)} in vec A",
                                     "hint: vec stacks the columns, so the first index runs fastest: the position "
                                     "is sum_d i_d s_d with the strides s_0 = 1, s_d = N_0 ... N_(d-1) (eq. 4), "
                                     "counted from 0 here (eq. 4 counts from 1)"])


def check_jacobian_memory(out_shape, in_shape, answer, itemsize: int = 8) -> CheckResult:
    """Exercise: rows, columns and bytes of the explicit Jacobian ``d vec F / d vec X`` (eq. 6).

    One row per element of the output, one column per element of the input
    (eq. 5), ``itemsize`` bytes per entry (8 for float64). The answer is the
    triple ``(rows, columns, bytes)``.
    """
    out_shape, in_shape = tuple(int(n) for n in out_shape), tuple(int(n) for n in in_shape)
    rows, cols = math.prod(out_shape), math.prod(in_shape)
    size = rows * cols * itemsize
    name = f"explicit Jacobian of F: {in_shape} -> {out_shape}"
    if answer is None:
        return pending(name, f"Your answer is a triple (rows, columns, bytes) for {itemsize}-byte entries.")
    try:
        r, c, b = read_int_triple(answer, "rows, columns, bytes")
    except Wrong as err:
        return err.result(name)
    problems = []
    if (r, c) == (cols, rows) and rows != cols:
        problems.append("rows and columns are swapped: d vec F / d vec X has one row per element of F "
                        "and one column per element of X, eq. 5")
    else:
        if r != rows:
            problems.append(f"rows = {r}: the Jacobian has one row per element of vec F, and F has shape {out_shape}")
        if c != cols:
            problems.append(f"columns = {c}: the Jacobian has one column per element of vec X, and X has "
                            f"shape {in_shape}")
    if b != size:
        if b == rows * cols:
            problems.append(f"bytes = {b} is the number of entries; each takes {itemsize} bytes")
        elif r * c * itemsize == b:
            problems.append(f"bytes = {b} follows from your rows and columns, which are not right")
        else:
            problems.append(f"bytes = {b} is not rows * columns * {itemsize}")
    return verdict(name, problems,
                   note=f"That is {size / 2**20:.4g} MiB.")


def check_jacobian(fn, argument: str, args: dict, answer, shapes=None) -> CheckResult:
    """Exercise: the explicit Jacobian ``d vec f / d vec x`` at ``args`` as a matrix (eqs. 4-6).

    Rows follow ``vec f`` and columns ``vec x`` (column-major, the first index
    fastest). Each row is the core's gradient with ``df`` a unit tensor
    (sec. 5.3: substitute ``df_alpha = prod delta``).
    """
    fn = read_function(fn, shapes)
    out_shape, in_shape = tuple(fn.shapes[fn.name]), tuple(fn.shapes[argument])
    rows, cols = math.prod(out_shape), math.prod(in_shape)
    name = f"Jacobian d vec {fn.name} / d vec {argument} ({rows}x{cols})"
    if answer is None:
        return pending(name, f"Your answer is a {rows}x{cols} matrix (nested lists or a numpy array).")
    try:
        mine = np.array(answer, dtype=float)
    except (TypeError, ValueError):
        return CheckResult(name, False, ["the answer must be a matrix of numbers"])
    grads = derive(fn)
    J = np.zeros((rows, cols))
    for r in range(rows):
        df = np.zeros(rows)
        df[r] = 1.0
        J[r] = grads.evaluate(args, df.reshape(out_shape, order="F"))[argument].reshape(-1, order="F")
    if mine.shape != J.shape:
        if mine.shape == J.T.shape:
            return CheckResult(name, False, [f"your matrix is {mine.shape[0]}x{mine.shape[1]}: that is the "
                                             f"transpose; a Jacobian has one row per element of {fn.name} (eq. 5)"])
        return CheckResult(name, False, [f"the Jacobian must be {rows}x{cols} (elements of {fn.name} x elements "
                                         f"of {argument}), yours has shape {mine.shape}"])
    agree = np.isclose(mine, J, rtol=RTOL, atol=_JACOBIAN_ATOL)
    if agree.all():
        return CheckResult(name, True)
    perm_out = np.array([np.ravel_multi_index(np.unravel_index(k, out_shape, order="C"), out_shape, order="F")
                         for k in range(rows)], dtype=int)
    perm_in = np.array([np.ravel_multi_index(np.unravel_index(k, in_shape, order="C"), in_shape, order="F")
                        for k in range(cols)], dtype=int)
    if np.allclose(mine, J[np.ix_(perm_out, perm_in)], rtol=RTOL, atol=_JACOBIAN_ATOL):
        return CheckResult(name, False, ["your rows and columns are in row-major (C) order; vec stacks columns, so "
                                         "the first index runs fastest (eq. 4)"])
    # No entry is named, nor how many differ: either would let a few tries fix the matrix entry by entry.
    return CheckResult(name, False, [f"that is not d vec {fn.name} / d vec {argument} at the given point: entry "
                                     f"[r, c] is the derivative of element r of vec {fn.name} with respect to "
                                     f"element c of vec {argument}; find the two elements by counting down the "
                                     f"columns (the first index fastest, eq. 4) and differentiate that element of "
                                     f"{fn.name}'s definition with respect to that element of {argument} at the "
                                     f"point"])

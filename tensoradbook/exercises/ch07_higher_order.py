"""Chapter 07: second derivatives (report sec. 5.3).

:func:`check_second_derivative`, :func:`check_hessian_vector_product`,
:func:`check_hessian_pattern`.

The oracle is the loss ``L = sum(df * f)`` alone: mixed second central
differences of L, Richardson-extrapolated (:func:`_second_difference`). These
checks never use the core's derivatives, so they also test the derivation.
"""

from __future__ import annotations

import re

import numpy as np

from ..ad.finite_differences import mixed_central, richardson
from ..ad.gradcheck import numeric_gradient, random_arguments
from .answers import parse_answer, read_array, read_function
from .checking import Wrong, pending, verdict
from .feedback import CheckResult, element_problems, index_text, number_text

__all__ = ["check_second_derivative", "check_hessian_vector_product", "check_hessian_pattern"]


#: The most characters of a second derivative these checks read (the longest right answer is a few hundred).
ANSWER_TEXT_LIMIT = 4_000
_FD_STEP = 1e-3     # central differences at h and h / 2: truncation ~h**4, round-off ~eps |L| / h**2
_FD_RTOL = 1e-5     # an answer passes within this of the largest element ...
_FD_ATOL = 1e-6     # ... plus this times sum |df * f| (the scale of L's round-off)
_PATTERN_ZERO = 1e-7  # a Hessian entry below this times sum |df * f| counts as zero
_FACTOR_RTOL = 1e-4  # a constant factor off is seen through the differences' error, well above _FD_RTOL
_NEAR = 1e-2         # within this of H v's largest element (not _FD_RTOL): a finite-difference H v, not a wrong one


def _loss_terms(fn, values: dict, df) -> tuple[float, float]:
    """``L = sum(df * f)`` and ``sum |df * f|`` (the scale of its round-off) at ``values``."""
    terms = df * fn.evaluate(values)
    return float(np.sum(terms)), float(np.sum(np.abs(terms)))


def _second_difference(fn, values: dict, df, first: str, v, second: str, beta: tuple,
                       step: float = _FD_STEP) -> float:
    """``e_beta^T H v``: ``d/ds d/dt L(first + t v, second + s e_beta)`` at 0, by finite differences.

    The four-point central difference at ``h`` and ``h / 2``, combined by
    Richardson extrapolation; ``first`` and ``second`` may be the same argument.
    """
    base_first = np.asarray(values[first], dtype=np.float64)

    def loss(t, s):
        shifted = dict(values)
        shifted[first] = base_first + t * v
        moved = np.array(shifted[second], dtype=np.float64)
        moved[beta] += s
        shifted[second] = moved
        return _loss_terms(fn, shifted, df)[0]

    return richardson(lambda h: mixed_central(loss, h), step)


def _second_differences(fn, values: dict, df, first: str, v, second: str) -> np.ndarray:
    """The whole vector ``H v`` block ``d/d second <v, dL/d first>``, element by element (shape of ``second``)."""
    shape = tuple(fn.shapes[second])
    out = np.zeros(shape)
    for beta in np.ndindex(*shape):
        out[beta] = _second_difference(fn, values, df, first, v, second, beta)
    return out


def _hv_tolerance(right: np.ndarray, scale: float) -> float:
    return _FD_RTOL * float(np.abs(right).max(initial=0.0)) + _FD_ATOL * scale


def _checked_pair(fn, first: str, second: str) -> None:
    for name in (first, second):
        if name not in fn.arguments:
            raise ValueError(f"{name!r} is not an argument of {fn.name}; it has {fn.arguments}")


def _checked_free(fn, *names: str) -> None:
    """Refuses a function with an argument named like the adjoint or the direction the answer reads."""
    for taken in names:
        if taken in fn.shapes:
            raise ValueError(f"{fn.name} has an argument called {taken!r}, the name of the adjoint")


def _left_side(answer, result: str, answer_shapes: dict) -> tuple[str | None, bool]:
    """The name the answer's text defines (None where it is no text ``name[...] = ...``), and whether it is the
    fresh name the core derives ``result`` under when that is taken (dx_1 for the gradient of dx with respect to
    x): the same gradient."""
    left = re.match(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*\[", answer) if isinstance(answer, str) else None
    if left is None:
        return None, False
    defined = left.group(1)
    return defined, re.fullmatch(rf"{re.escape(result)}_\d+", defined) is not None and defined not in answer_shapes


def check_second_derivative(fn, first: str, second: str, answer, shapes=None, trials: int = 2,
                            seed: int = 0) -> CheckResult:
    """Exercise: write a second derivative element-wise, in the report's notation (sec. 5.3).

    The first derivative ``d<first>`` (the gradient of ``L = sum(df * f)``
    with respect to ``first``) is itself an element-wise function. Derived
    once more with the incoming adjoint ``dd<first>`` (a direction ``v``
    shaped like ``first``), its gradient with respect to ``second`` is
    ``d<second>[beta] = sum_gamma d^2 L / d second_beta d first_gamma * v_gamma``:
    a Hessian-vector product (``first == second``) or a mixed second
    derivative. The answer is text in the report's notation, ``"dx[b] = ..."``
    reading ``df``, ``dd<first>`` and the arguments: any index names, any
    equivalent form. It is evaluated on random inputs, ``df`` and ``v`` and compared with
    mixed second differences of ``L`` itself (not with the core's derivative).
    """
    fn = read_function(fn, shapes)
    _checked_pair(fn, first, second)
    adjoint, direction, result = "d" + fn.name, "dd" + first, "d" + second
    _checked_free(fn, adjoint, direction)
    answer_shapes = dict(fn.shapes)
    answer_shapes.update({adjoint: tuple(fn.shapes[fn.name]), direction: tuple(fn.shapes[first]),
                          result: tuple(fn.shapes[second])})
    what = "the Hessian-vector product" if first == second else "the mixed second derivative"
    name = f"{result} = d/d{second} sum({direction} * d{first}), {what} of sum({adjoint} * {fn.name})"
    if answer is None:
        sizes = ", ".join(f"{k}: {v}" for k, v in answer_shapes.items() if k != result)
        return pending(name, f"Your answer is text like \"{result}[...] = ...\" using {direction} (the direction v), "
                              f"{adjoint} and the arguments (shapes {sizes}).")
    defined, fresh = _left_side(answer, result, answer_shapes)
    if defined and defined != result and not fresh:
        return CheckResult(name, False, [f"your left side defines {defined!r}; the gradient with respect to "
                                         f"{second} is called {result!r} (write {result}[...] = ...)"])
    accepted = {result} | ({defined} if fresh else set())
    answer_shapes.update({n: tuple(fn.shapes[second]) for n in accepted})
    try:
        mine = parse_answer(answer, answer_shapes, "second derivative", ANSWER_TEXT_LIMIT)
    except Wrong as err:
        return err.result(name)
    if mine.name not in accepted:  # pragma: no cover -- caught from the text above
        return CheckResult(name, False, [f"your left side defines {mine.name!r}; the gradient with respect to "
                                         f"{second} is called {result!r} (write {result}[...] = ...)"])
    rng = np.random.default_rng(seed)
    problems = []
    for _ in range(trials):
        args = random_arguments(fn, rng)
        df = rng.standard_normal(fn.shapes[fn.name])
        v = rng.standard_normal(fn.shapes[first])
        values = dict(args)
        values.update({adjoint: df, direction: v})
        yours = mine.evaluate(values)
        right = _second_differences(fn, args, df, first, v, second)
        tolerance = _hv_tolerance(right, _loss_terms(fn, args, df)[1])
        close = np.abs(yours - right) <= tolerance
        if close.all():
            continue
        problems += element_problems(
            result, yours, right, close, tolerance,
            lambda b: f"L's derivative with respect to {second}{index_text(b)} does not change along v",
            "a condition is missing or a sum range is too wide", ratio_rtol=_FACTOR_RTOL)
        for n, kind in ((direction, "v"), (adjoint, "df")):
            if n not in mine.arguments:
                problems.append(f"your expression does not read {n}, yet {what} is linear in {kind}: "
                                f"every term carries one factor of {n}")
        break
    return verdict(name, problems,
                   note=f"Your expression agrees with second differences of "
                        f"sum({adjoint} * {fn.name}) on {trials} random inputs.")


def check_hessian_vector_product(fn, argument: str, args: dict, df, v, answer, shapes=None,
                                 wrt: str | None = None) -> CheckResult:
    """Exercise: compute ``H v`` for ``L = sum(df * f)`` at ``args`` (numbers, not a formula).

    ``H`` is the Hessian of ``L`` with respect to ``argument``, ``v`` a
    direction shaped like ``argument``; with ``wrt`` another argument ``y``,
    the answer is the mixed block ``d/dy <v, dL/d argument>`` instead. The
    answer is an array (shaped like ``wrt``), computed any way, e.g. with the
    derived second-order functions. It is compared with mixed second
    differences of ``L`` itself, element by element.
    """
    fn = read_function(fn, shapes)
    wrt = argument if wrt is None else wrt
    _checked_pair(fn, argument, wrt)
    arrays = fn.argument_arrays(args)
    df = np.asarray(df, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    if df.shape != tuple(fn.shapes[fn.name]):
        raise ValueError(f"df has shape {df.shape}, {fn.name} has {tuple(fn.shapes[fn.name])}")
    if v.shape != tuple(fn.shapes[argument]):
        raise ValueError(f"v has shape {v.shape}, {argument} has {tuple(fn.shapes[argument])}")
    shape = tuple(fn.shapes[wrt])
    if wrt == argument:
        name = f"H v: the Hessian of sum(d{fn.name} * {fn.name}) with respect to {argument}, times v"
    else:
        name = f"d/d{wrt} <v, dL/d{argument}>: the mixed second derivative of sum(d{fn.name} * {fn.name}), times v"
    if answer is None:
        return pending(name, f"Your answer is an array of shape {shape}: derive d{argument} once more and evaluate "
                              f"its gradient with respect to {wrt} with the adjoint dd{argument} = v.")
    try:
        mine = read_array(answer)
    except Wrong as err:
        return err.result(name)
    if mine.shape != shape:
        problems = [f"the answer must have the shape of {wrt}, {shape}; yours has {mine.shape}"]
        if mine.shape == tuple(fn.shapes[fn.name]):
            problems.append(f"that is the shape of {fn.name}: the second-order gradient with respect to "
                            f"d{fn.name} is J v (the derivative of {fn.name} along v), not H v")
        return CheckResult(name, False, problems)
    if not np.all(np.isfinite(mine)):
        return CheckResult(name, False, ["your answer contains nan or inf"])
    right = _second_differences(fn, arrays, df, argument, v, wrt)
    tolerance = _hv_tolerance(right, _loss_terms(fn, arrays, df)[1])
    if np.all(np.abs(mine - right) <= tolerance):
        return CheckResult(name, True, note=f"It agrees with second differences of sum(d{fn.name} * {fn.name}) "
                                            f"to within {_FD_RTOL:g} of its largest element.")
    return verdict(name, _hessian_vector_problems(fn, arrays, df, argument, wrt, mine, right, tolerance))


def _hessian_vector_problems(fn, arrays, df, argument: str, wrt: str, mine, right, tolerance) -> list[str]:
    """What ``mine`` is instead of H v (``right``, to within ``tolerance``): the sign or a factor 2 off, the gradient
    itself, a finite-difference H v, or else its first wrong element."""
    problems = []
    difference = np.abs(mine - right)
    size = float(np.abs(right).max(initial=0.0))

    def like(candidate) -> bool:
        return bool(np.all(np.abs(mine - candidate) <= tolerance))

    if like(-right):
        problems.append("your answer is -H v: the sign is off")
    elif size and like(2 * right):
        problems.append("your answer is 2 H v: a factor 2 too large")
    elif size and like(right / 2):
        problems.append("your answer is H v / 2: a factor 2 too small")
    elif like(numeric_gradient(fn, arrays, wrt, df)):
        problems.append(f"that is the gradient dL/d{wrt} itself; H v is the gradient of <v, dL/d{argument}>: "
                        f"derive d{argument} once more, with the adjoint dd{argument} = v")
    elif size and np.abs(mine - right).max() <= _NEAR * size:
        # how close is not said: a distance would guide repeated tries towards H v
        problems.append(f"close to H v, but not within {_FD_RTOL:g} of its largest element: a "
                        f"finite-difference approximation? The derived second-order functions give H v up to "
                        f"rounding.")
    else:
        wrong = np.argwhere(difference > tolerance)
        idx = tuple(int(k) for k in wrong[0])
        problems.append(f"element {index_text(idx)} is {number_text(mine[idx])}, which is not right: derive "
                        f"d{argument} once more and evaluate its gradient with respect to {wrt} with the adjoint "
                        f"dd{argument} = v")
        if len(wrong) > 1:
            problems.append(f"{len(wrong)} of {right.size} elements differ")
    return problems


def _index_answer(value, shape: tuple, what: str) -> tuple[int, ...]:
    """One index of an array of ``shape`` (an int for a vector), or a Wrong."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        value = (value,)
    try:
        index = tuple(value)
    except TypeError:
        raise Wrong(f"{what} {value!r} is not an index") from None
    if len(index) != len(shape) or any(isinstance(k, bool) or not isinstance(k, (int, np.integer)) for k in index):
        raise Wrong(f"{what} {value!r} is not an index of {len(shape)} integer(s)")
    index = tuple(int(k) for k in index)
    if any(not 0 <= k < n for k, n in zip(index, shape)):
        raise Wrong(f"{what} {index_text(index)} is outside the shape {shape}")
    return index


def _hessian_row(fn, argument: str, beta: tuple, points: int, seed: int) -> set[tuple[int, ...]]:
    """The ``gamma`` where row ``beta`` of the Hessian of ``L`` is non-zero at any of ``points`` random points, by
    second differences of ``L``."""
    shape = tuple(fn.shapes[argument])
    rng = np.random.default_rng(seed)
    row = np.zeros(shape)
    for _ in range(points):
        args = random_arguments(fn, rng)
        df = rng.standard_normal(fn.shapes[fn.name])
        scale = _loss_terms(fn, args, df)[1]
        for gamma in np.ndindex(*shape):
            unit = np.zeros(shape)
            unit[gamma] = 1.0
            value = abs(_second_difference(fn, args, df, argument, unit, argument, beta))
            if value > _PATTERN_ZERO * scale:
                row[gamma] = max(row[gamma], value)
    return {tuple(int(k) for k in gamma) for gamma in np.ndindex(*shape) if row[gamma]}


def check_hessian_pattern(fn, argument: str, beta, answer, shapes=None, points: int = 2,
                          seed: int = 0) -> CheckResult:
    """Exercise: which ``v_gamma`` does ``(H v)_beta`` read, i.e. where is row ``beta`` of the Hessian non-zero?

    ``H`` is the Hessian of ``L = sum(df * f)`` with respect to ``argument``.
    ``H[beta, gamma]`` is non-zero where some element of ``f`` (with its sum
    terms) depends on both ``x[beta]`` and ``x[gamma]`` jointly (for
    ``gamma == beta``: non-linearly). The answer is a collection of indices
    ``gamma`` (ints for a vector, tuples otherwise), or just their number. The
    row is measured by second differences of ``L`` at random points: an entry
    counts as non-zero if it is at any of them.
    """
    fn = read_function(fn, shapes)
    _checked_pair(fn, argument, argument)
    shape = tuple(fn.shapes[argument])
    try:
        beta = _index_answer(beta, shape, "beta")
    except Wrong as err:
        raise ValueError(str(err)) from None
    entry = "H[" + "; ".join([str(k) for k in beta] + ["gamma"]) + "]"
    name = f"non-zero entries of row {index_text(beta)} of the Hessian of sum(d{fn.name} * {fn.name}) " \
           f"with respect to {argument}"
    if answer is None:
        return pending(name, f"Your answer is a list of the indices gamma of {argument} with "
                              f"{entry} != 0 ({'ints' if len(shape) == 1 else 'tuples'}), "
                              f"or their number.")
    truth = _hessian_row(fn, argument, beta, points, seed)
    here = f"{argument}{index_text(beta)}"
    how = (f"{entry} != 0 where some term of L reads {here} and {argument}[gamma] inside one non-linear factor; "
           f"list, for every output element (and sum term) that reads {here}, the elements of {argument} it reads "
           f"in the same non-linear factor ({here} itself counts when it appears non-linearly)")
    if isinstance(answer, (int, np.integer)) and not isinstance(answer, bool):
        count = int(answer)
        if count == len(truth):
            return CheckResult(name, True, note=f"Indeed: gamma in {_indices_text(truth)}.")
        # The same words for every wrong count: "too many" / "too few" would make repeated tries a binary search.
        return CheckResult(name, False, [f"{count} is not the number of non-zero entries of row {index_text(beta)}",
                                         f"hint: {how}"])
    try:
        mine, problems = _listed_indices(answer, shape)
    except Wrong as err:
        return err.result(name)
    if problems:
        return CheckResult(name, False, problems)
    repeated = sorted({g for g in mine if mine.count(g) > 1})
    if repeated:
        return CheckResult(name, False, [f"you list {_indices_text(repeated)} more than once"])
    if set(mine) != truth:
        # One message for every wrong list: naming a gamma that is in or out would answer it element by element.
        return CheckResult(name, False, [f"that is not the set of gamma with {entry} != 0", f"hint: {how}"])
    count = len(truth)
    return CheckResult(name, True, note=f"That is the whole row: {count} non-zero entr{'y' if count == 1 else 'ies'}; "
                                        f"second differences of L vanish everywhere else.")


def _listed_indices(answer, shape: tuple) -> tuple[list, list[str]]:
    """The indices gamma the answer lists, and what is wrong with any of them; Wrong where it lists nothing."""
    if isinstance(answer, (str, bytes)):
        raise Wrong(f"the answer must be a list of indices or a count, got {answer!r}")
    try:
        items = list(answer.tolist() if hasattr(answer, "tolist") else answer)
    except TypeError:
        raise Wrong(f"the answer must be a list of indices or a count, got {answer!r}") from None
    mine, problems = [], []
    for item in items:
        try:
            mine.append(_index_answer(item, shape, "gamma ="))
        except Wrong as err:
            problems.append(str(err))
    return mine, problems


def _indices_text(indices) -> str:
    indices = sorted(indices)
    if not indices:
        return "{}"
    if all(len(g) == 1 for g in indices):
        return "{" + ", ".join(str(g[0]) for g in indices) + "}"
    return "{" + ", ".join(index_text(g) for g in indices) + "}"

"""Chapter 10: tensor programs (report sec. 2, eqs. 1-3 and sec. 3, eqs. 7-8, at the tensor level; Algorithm 4,
sec. 5, for each definition) and data-dependent operations.

:func:`check_intermediate_adjoint` takes the adjoint of an intermediate tensor written in the report's
notation and compares it with central differences of the program's value in which only that tensor is
moved and every definition below it is evaluated again: the oracle never calls the core's reverse sweep.
:func:`check_pooling_gradient` takes the gradient of a 2 x 2 max pooling computed by hand and compares it
with a brute-force routing written here with numpy (each window's adjoint to its first maximal element in
row-major order, PyTorch's convention). :func:`check_softmax_program` takes a softmax written as a program
and checks its values against numpy, its gradient against finite differences, and the work its kernels
do: :func:`element_terms` counts it.
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..ad.derive import derive
from ..ad.finite_differences import central, richardson
from ..ad.gradcheck import check_gradients, random_arguments
from ..lang.evaluate import element_terms
from ..lang.expr import ExpressionError
from ..lang.function import Function
from ..lang.parser import parse
from ..lang.program import Program, definitions_of
from .answers import parse_answer, read_array
from .checking import Wrong, pending, verdict
from .feedback import CheckResult, element_problems, index_text, number_text

__all__ = ["check_intermediate_adjoint", "check_pooling_gradient", "check_softmax_program", "element_terms"]

_FD_STEP = 1e-3     # central differences at h and h / 2, Richardson-extrapolated: error ~h**4
_FD_RTOL = 1e-6     # an answer passes within this of the largest element of the adjoint ...
_FD_ATOL = 1e-8     # ... plus this (round-off of the differences)
_EXACT = 1e-12      # max pooling moves adjoints without arithmetic: a right dx equals a routing up to this
# The softmax of a right program is the formula's up to a few roundings (relative; absolute for the exponentially
# small entries).
_SOFTMAX_RTOL, _SOFTMAX_ATOL = 1e-10, 1e-14


#: The most characters of an adjoint these checks read (the longest right answer is a few hundred).
ANSWER_TEXT_LIMIT = 4_000

# --- the adjoint of an intermediate: eq. 2 (eq. 8) at the tensor level --------------------------------------

def _program(program, shapes) -> Program:
    if isinstance(program, Program):
        return program
    parsed = parse(program, shapes or {})
    if not isinstance(parsed, Program):
        raise ValueError("the exercise needs a program of several definitions")
    return parsed


def _output_with(program: Program, values: dict, name: str, replaced, readers: frozenset) -> np.ndarray:
    """The program's value when the definitions in ``readers`` read ``replaced`` for ``name`` (the others its
    forward value): every definition below ``name`` is evaluated again from ``values``."""
    known = dict(values)
    below = False
    for definition in program.definitions:
        if definition.name == name:
            below = True
            continue
        if below:
            view = {**known, name: replaced} if definition.name in readers else known
            known[definition.name] = definition.evaluate(view)
    return known[program.name]


def _numeric_adjoint(program: Program, values: dict, name: str, df, readers: frozenset) -> np.ndarray:
    """``d sum(df * last) / d name`` through the definitions in ``readers`` only, by central differences."""
    base = np.asarray(values[name], dtype=np.float64)
    out = np.zeros_like(base)
    for beta in np.ndindex(*base.shape):
        def loss(t, beta=beta):
            moved = base.copy()
            moved[beta] += t
            return float(np.sum(df * _output_with(program, values, name, moved, readers)))

        out[beta] = richardson(lambda h, loss=loss: central(loss, h), _FD_STEP)
    return out


def _checked_free(program, names) -> None:
    """Refuses a program with a tensor named like an adjoint the answer reads."""
    for taken in names:
        if taken in program.shapes:
            raise ValueError(f"the program has a tensor called {taken!r}, the name of an adjoint")


def _adjoint_problems(program, values: dict, name: str, df, yours, right, close, tolerance: float) -> list[str]:
    """Why ``yours``, the student's adjoint of ``name``, differs from ``right`` (central differences) at ``values``:
    the part one consumer alone passes back, or the elements that differ."""
    consumers = program.consumers(name)
    seed_name, result = "d" + program.name, "d" + name
    for reader in consumers if len(consumers) > 1 else ():
        part = _numeric_adjoint(program, values, name, df, frozenset({reader}))
        if np.all(np.abs(yours - part) <= tolerance):
            others = [c for c in consumers if c != reader]
            return [f"your {result} is what {reader} alone passes back to {name}; {name} is also read "
                    f"by {', '.join(others)}: its adjoint is the sum over all its consumers (eq. 2)"]
    problems = element_problems(
        result, yours, right, close, tolerance,
        lambda b: f"sum({seed_name} * {program.name}) does not change with {name}{index_text(b)}",
        "a condition is missing or a sum range is too wide")
    if len(consumers) > 1:
        problems.append(f"{name} is read by {len(consumers)} definitions ({', '.join(consumers)}): one "
                        f"term per consumer, each its adjoint times what Algorithm 4 gives for its reads")
    return problems


def check_intermediate_adjoint(program, name: str, answer, shapes=None, trials: int = 2,
                               seed: int = 0) -> CheckResult:
    """Exercise: write the adjoint of the intermediate ``name`` of a program, in the report's notation.

    The adjoint of ``name`` is the gradient of ``sum(d<last> * <last>)`` with respect to ``name``'s value:
    by eq. 2 (eq. 8 for tensors) the sum over the definitions that read ``name`` of what each of them
    passes back. The answer is text such as ``"dh[i] = ..."``: it may read the inputs, every definition's
    forward value, the seed ``d<last>`` and the adjoints ``d<D>`` of the intermediates defined below
    ``name``. It is evaluated on random inputs and compared with central differences of the program's
    value in which ``name`` alone is moved (the definitions below it evaluated again), not with the core's
    reverse sweep.
    """
    program = _program(program, shapes)
    defined = [d.name for d in program.definitions]
    if name not in program.intermediates:
        raise ValueError(f"{name!r} is not an intermediate of the program (its intermediates: "
                         f"{', '.join(program.intermediates)})")
    later = defined[defined.index(name) + 1:]
    seed_name, result = "d" + program.name, "d" + name
    adjoint_names = {"d" + d: d for d in later[:-1]}  # the adjoints complete before name's
    _checked_free(program, (seed_name, result, *adjoint_names))
    answer_shapes = dict(program.shapes)
    answer_shapes.update({seed_name: tuple(program.shapes[program.name]), result: tuple(program.shapes[name])})
    answer_shapes.update({adjoint: tuple(program.shapes[d]) for adjoint, d in adjoint_names.items()})
    consumers = program.consumers(name)
    exercise = f"{result}, the adjoint of the intermediate {name} (seeded by {seed_name})"
    if answer is None:
        readable = ", ".join([*program.arguments, *defined, seed_name, *adjoint_names])
        return pending(exercise, f'Your answer is text like "{result}[...] = ..." in the report\'s notation; it may '
                                  f"read {readable}.")
    left = re.match(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*\[", answer) if isinstance(answer, str) else None
    if left and left.group(1) != result:
        return CheckResult(exercise, False, [f"your left side defines {left.group(1)!r}; the adjoint of {name} is "
                                             f"called {result!r} (write {result}[...] = ...)"])
    try:
        mine = parse_answer(answer, answer_shapes, "adjoint", ANSWER_TEXT_LIMIT)
    except Wrong as err:
        return err.result(exercise)
    if mine.name != result:  # pragma: no cover -- caught from the text above
        return CheckResult(exercise, False, [f"your left side defines {mine.name!r}; the adjoint of {name} is "
                                             f"called {result!r} (write {result}[...] = ...)"])
    rng = np.random.default_rng(seed)
    problems: list[str] = []
    for _ in range(trials):
        args = random_arguments(program, rng)
        values = dict(args)
        values.update(program.values(args))
        df = rng.standard_normal(program.shapes[program.name])
        values[seed_name] = df
        everyone = frozenset(consumers)
        for adjoint, d in adjoint_names.items():
            values[adjoint] = _numeric_adjoint(program, values, d, df, frozenset(program.consumers(d)))
        right = _numeric_adjoint(program, values, name, df, everyone)
        yours = mine.evaluate(values)
        tolerance = _FD_RTOL * float(np.abs(right).max(initial=0.0)) + _FD_ATOL
        close = np.abs(yours - right) <= tolerance
        if close.all():
            continue
        problems += _adjoint_problems(program, values, name, df, yours, right, close, tolerance)
        break
    return verdict(exercise, problems,
                   note=f"It agrees with central differences of sum({seed_name} * "
                        f"{program.name}) in {name} on {trials} random inputs: the sum "
                        f"over {len(consumers)} consumer(s), as eq. 2 says.")


# --- max pooling: the adjoint routed to the first maximal element -----------------------------------------------

def _routed(x: np.ndarray, df: np.ndarray, pick) -> np.ndarray:
    """Brute force: each 2 x 2 window's adjoint ``df[u, v]`` given out by ``pick(window) -> weights``."""
    out = np.zeros_like(x)
    for u in range(df.shape[0]):
        for v in range(df.shape[1]):
            window = x[2 * u:2 * u + 2, 2 * v:2 * v + 2]
            out[2 * u:2 * u + 2, 2 * v:2 * v + 2] += df[u, v] * pick(window)
    return out


def _one_at(flat: int) -> np.ndarray:
    weights = np.zeros(4)
    weights[flat] = 1.0
    return weights.reshape(2, 2)


_CONVENTIONS = {  # how a window's adjoint might be given out: the right one first
    "first": lambda w: _one_at(int(np.argmax(w))),  # row-major: the order of max{r} (max{s} ...)
    "last": lambda w: _one_at(3 - int(np.argmax(w.ravel()[::-1]))),
    "column-major": lambda w: _one_at(int(np.ravel_multi_index(np.unravel_index(np.argmax(w.T), (2, 2))[::-1],
                                                                (2, 2)))),
    "split": lambda w: (w == w.max()) / np.count_nonzero(w == w.max()),
    "every": lambda w: (w == w.max()).astype(float),
}


def check_pooling_gradient(x, df, answer) -> CheckResult:
    """Exercise: the gradient of 2 x 2 max pooling (stride 2) of ``x``, for the adjoint ``df``, by hand.

    ``m[u; v] = max{r}_0^1 (max{s}_0^1 (x[2 * u + r; 2 * v + s]))``: each window's adjoint goes, whole, to its
    first maximal element in row-major order (the order of the nested reductions; PyTorch's max pooling and
    ``np.argmax`` do the same). The answer is an array shaped like ``x``; it is compared with that routing
    done by brute force here. A wrong answer is matched against the usual other conventions (the adjoint
    split among ties, the last maximum, column-major order), else told which rules it breaks (each window's
    adjoint passed back once, whole, to a maximal element, the first of a tie), never where.
    """
    x = np.asarray(x, dtype=np.float64)
    df = np.asarray(df, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] % 2 or x.shape[1] % 2 or df.shape != (x.shape[0] // 2, x.shape[1] // 2):
        raise ValueError(f"x must be a matrix of even sizes and df of half its sizes; got {x.shape} and {df.shape}")
    exercise = f"the gradient dx of 2 x 2 max pooling of a {x.shape[0]} x {x.shape[1]} x"
    if answer is None:
        return pending(exercise, f"Your answer is an array of shape {x.shape}, like x.")
    try:
        mine = read_array(answer)
    except Wrong as err:
        return err.result(exercise)
    if mine.shape != x.shape:
        return CheckResult(exercise, False, [f"dx has the shape of x, {x.shape}; yours has {mine.shape}"])
    routings = {name: _routed(x, df, pick) for name, pick in _CONVENTIONS.items()}
    if np.allclose(mine, routings["first"], rtol=_EXACT, atol=_EXACT):
        ties = sum(np.count_nonzero(w == w.max()) > 1 for w in
                   (x[2 * u:2 * u + 2, 2 * v:2 * v + 2] for u in range(df.shape[0]) for v in range(df.shape[1])))
        return CheckResult(exercise, True, note=f"Each window's adjoint went whole to its first maximal element; "
                                                f"{ties} of the {df.size} windows had a tie.")
    hints = {
        "last": "where a window has a tie you gave the adjoint to its last maximal element; the convention gives it "
                "to the first, in row-major order",
        "column-major": "you took the first maximal element going down the columns; the nested reductions max{r} "
                        "(max{s} ...) go along the rows first (row-major), as np.argmax does",
        "split": "you split the adjoint among tied elements; the convention (PyTorch's max pooling) gives all of it "
                 "to one of them, the first maximal element in row-major order",
        "every": "every tied element got the window's whole adjoint: the pooling would then pass back more than it "
                 "received; only one element, the first maximal one, gets it",
    }
    for name, hint in hints.items():
        if not np.allclose(routings[name], routings["first"]) and np.allclose(mine, routings[name], atol=_EXACT):
            return CheckResult(exercise, False, [hint])
    if np.allclose(mine, _routed(x, np.ones_like(df), _CONVENTIONS["first"]), atol=_EXACT):
        return CheckResult(exercise, False, ["the right elements, but each must receive its window's adjoint "
                                             "dm[u; v], not 1"])
    return CheckResult(exercise, False, _rule_problems(mine, x, df))


def _rule_problems(mine: np.ndarray, x: np.ndarray, df: np.ndarray) -> list[str]:
    """The rules a right dx obeys, tested on yours alone (its windows against x and df): no element is named and
    nothing is counted, so repeated tries cannot locate the right answer element by element."""
    problems = []
    windows = [(mine[2 * u:2 * u + 2, 2 * v:2 * v + 2], x[2 * u:2 * u + 2, 2 * v:2 * v + 2], df[u, v])
               for u in range(df.shape[0]) for v in range(df.shape[1])]
    nonzero = [np.abs(mine_w) > _EXACT for mine_w, _, _ in windows]
    if any(not math.isclose(float(mine_w.sum()), float(d), rel_tol=_EXACT, abs_tol=_EXACT) for mine_w, _, d in windows):
        problems.append("in some window your dx does not add up to that window's adjoint dm[u; v]: each window passes "
                        "its adjoint back exactly once, and the windows do not overlap")
    if any(np.count_nonzero(used) > 1 for used in nonzero):
        problems.append("in some window more than one element of your dx is non-zero: a window's adjoint goes, whole, "
                        "to one element")
    if any((used & (x_w < x_w.max())).any() for used, (_, x_w, _) in zip(nonzero, windows)):
        problems.append("in some window your dx is non-zero at an element that is not a maximum of that window of x: "
                        "only the element the max picked gets the adjoint")
    if not problems:  # each window's adjoint went whole to a maximal element: a tie was broken the wrong way
        problems.append("where a window of x has a tie, the adjoint goes to its first maximal element in row-major "
                        "order (the order of the nested reductions max{r} (max{s} ...), as np.argmax and PyTorch "
                        "do)")
    return problems


# --- a softmax whose kernels do linear work ----------------------------------------------------------------------

def _softmax_answer(answer, n: int):
    if isinstance(answer, (Program, Function)):
        return answer
    try:
        text, shapes = answer
    except (TypeError, ValueError):
        raise Wrong("the answer is a program, tab.parse(text, shapes), or the pair (text, shapes)") from None
    try:
        return parse(text, shapes)
    except ExpressionError as err:
        indented = "\n".join("    " + line for line in str(err).splitlines())
        raise Wrong(f"your program cannot be read:\n{indented}") from None


def check_softmax_program(answer, n: int = 64, budget: int = 16) -> CheckResult:
    """Exercise: write ``s = softmax(x)`` for ``x`` of shape ``(n,)`` as a program whose kernels do linear work.

    Written as one or two definitions, the denominator ``sum{k} (exp (x[k]))`` is evaluated again in every
    element of ``s`` and of the adjoints: ``n**2`` terms. The answer is a program (``tab.parse(text, shapes)``,
    or the pair ``(text, shapes)``) with the one input ``x`` and the last definition ``s[i]``. It must equal
    numpy's softmax on random inputs, its derived gradient must pass the finite-difference check, and its
    forward definitions and simplified backward pass together may visit at most ``budget * n``
    :func:`element_terms`.
    """
    exercise = f"softmax of {n} values as a program whose kernels do linear work (at most {budget} * {n} terms)"
    if answer is None:
        return pending(exercise, f'Your answer is tab.parse(text, shapes): definitions one per line, the input '
                                  f'x of shape ({n},), the last one s[i] of shape ({n},), every intermediate\'s '
                                  f'shape given (a scalar has shape ()).')
    try:
        program = _softmax_answer(answer, n)
    except Wrong as err:
        return err.result(exercise)
    problems = []
    if program.name != "s" or tuple(program.shapes[program.name]) != (n,):
        problems.append(f"the last definition must be s[i] of shape ({n},); yours is {program.name} of shape "
                        f"{tuple(program.shapes[program.name])}")
    if program.arguments != ("x",) or tuple(program.shapes["x"]) != (n,):
        problems.append(f"the program must read exactly one input, x of shape ({n},); yours reads "
                        f"{', '.join(program.arguments) or 'none'}")
    if problems:
        return CheckResult(exercise, False, problems)
    rng = np.random.default_rng(10)
    x = 2 * rng.standard_normal(n)
    expected = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    value = program.evaluate({"x": x})
    if not np.allclose(value, expected, rtol=_SOFTMAX_RTOL, atol=_SOFTMAX_ATOL):
        k = int(np.argmax(np.abs(value - expected)))
        if np.allclose(value * expected.sum() / max(value.sum(), np.finfo(float).tiny), expected, rtol=_SOFTMAX_RTOL):
            problems.append("your s is proportional to the softmax but does not add up to 1: divide by the sum of "
                            "the exponentials")
        else:
            problems.append(f"s[{k}] is {number_text(value[k])}, the softmax of the random x is "
                            f"{number_text(expected[k])} there")
        return CheckResult(exercise, False, problems)
    errors = check_gradients(program, {"x": x}, seed=11)
    if max(errors.values()) > _FD_RTOL:  # pragma: no cover -- the derived gradient of a right value is right
        return CheckResult(exercise, False, [f"the gradient fails the finite-difference check: {errors}"])
    grads = derive(program).simplified
    forward = definitions_of(program)
    terms = {f.name: element_terms(f) for f in (*forward, *grads.backward)}
    total = sum(terms.values())
    if total <= budget * n:
        return CheckResult(exercise, True, note=f"Forward and backward together visit {total} element-terms "
                                                f"({total / n:.1f} per input element): every sum over all {n} "
                                                f"elements is computed once.")
    worst = max(terms, key=terms.get)
    tensor = next(f for f in (*forward, *grads.backward) if f.name == worst)
    size = math.prod(tuple(tensor.shapes[tensor.name]))
    pass_ = "forward" if any(f.name == worst for f in forward) else "backward"
    problems.append(f"the kernels visit {total} element-terms, more than {budget} * {n} = {budget * n}: it grows "
                    f"like n**2")
    problems.append(f"the largest part is {worst} ({pass_} pass): {terms[worst]} terms over its {size} element(s), "
                    f"{terms[worst] // max(size, 1)} each. A sum that does not depend on an element's index is "
                    f"evaluated again in every element: give it a definition of its own, so it is computed once")
    return CheckResult(exercise, False, problems)

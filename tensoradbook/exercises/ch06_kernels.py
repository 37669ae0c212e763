"""Chapter 06: kernels (report sec. 6; gather, eq. 47, against scatter, eq. 40).

:func:`check_gradient_element` runs the student's Python code for one
gradient element (what one thread of a gather kernel computes) on random
inputs against the core's derivative and finite differences;
:func:`check_scatter_races` and :func:`check_max_contention` are about the
scatter kernel of eq. 40 (who writes which gradient element), and
:func:`check_gather_bounds` about the loops of a gather kernel. The last
three enumerate every read of the argument by brute force.
"""

from __future__ import annotations

import contextlib
import inspect
import math

import numpy as np

from ..ad.derive import derive
from ..ad.gradcheck import random_arguments
from ..lang.evaluate import bound_value
from ..lang.expr import Element, ExpressionError, If, Sum, walk
from ..lang.parser import parse
from ..lang.printer import bound_text, expr_text
from .answers import read_function, read_range
from .checking import ATOL, Problems, Wrong, close, pending, require_callable, verdict
from .feedback import CheckResult, element_problems, index_text

__all__ = ["check_gradient_element", "check_scatter_races", "check_max_contention", "check_gather_bounds"]

# A loop that visits more values than this at one element is taken as unbounded and stopped: the exercises'
# tensors have a few dozen elements a side.
_MAX_LOOP_VALUES = 10_000
# The finite-difference test of a right kernel: central differences at h and h / 2, Richardson-extrapolated (error
# ~h**4, round-off ~eps / h), agree with <dx, v> to within these (relative, absolute near 0).
_FD_STEP = 1e-3
_FD_RTOL, _FD_ATOL = 1e-6, 1e-8


class _Guarded(np.ndarray):
    """A read-only array whose integer indexing refuses indices outside the shape.

    numpy wraps ``x[-1]`` around to the last element without a word; a kernel
    on a GPU reads whatever lies before the array. Both hide wrong loop bounds,
    so the checks hand the student's code these instead.
    """

    def __new__(cls, array, label: str):
        out = np.array(array, dtype=np.float64).view(cls)
        out.label = label
        out.flags.writeable = False
        return out

    def __array_finalize__(self, obj):
        self.label = getattr(obj, "label", "the array")

    def __getitem__(self, key):
        parts = key if isinstance(key, tuple) else (key,)
        if parts and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in parts):
            for v, n in zip(parts, self.shape):
                if not 0 <= int(v) < n:
                    raise IndexError(f"it reads {self.label}{index_text(parts)}, outside the shape "
                                     f"{tuple(self.shape)} of {self.label} (numpy would wrap a negative index "
                                     f"around silently, a GPU would read foreign memory)")
        out = super().__getitem__(key)
        return out.view(np.ndarray) if isinstance(out, np.ndarray) else out


def _reads(fn, argument: str):
    """Brute force: every read of ``argument`` by ``fn`` as ``(occurrence, beta, env)``.

    ``env`` maps the output indices and the indices of the sums around the
    read to their values: the extended index alpha of sec. 5.2. Each sum
    index takes every value in its range; conditions are decided per point.
    """
    out = []

    def visit(node, env):
        if isinstance(node, Element):
            if node.name == argument:
                beta = tuple(int(a.evaluate(env)) for a in node.indices)
                out.append((node, beta, dict(env)))
            return
        if isinstance(node, Sum):
            low = int(bound_value(node.lower, env, lower=True))
            high = int(bound_value(node.upper, env, lower=False))
            for k in range(low, high + 1):
                visit(node.body, {**env, node.index: k})
            return
        if isinstance(node, If):
            visit(node.then if all(atom.holds(env) for atom in node.condition) else node.otherwise, env)
            return
        for child in node.children():
            visit(child, env)

    for point in np.ndindex(*fn.shapes[fn.name]):
        visit(fn.body, dict(zip(fn.indices, (int(v) for v in point))))
    return out


def _checked_argument(fn, argument: str) -> None:
    if argument not in fn.arguments:
        raise ValueError(f"{argument!r} is not an argument of {fn.name}; it has {fn.arguments}")


def _gradient_by_elements(answer, pass_names: list[str], arrays: dict, shape: tuple, gradient: str):
    """The student's element function evaluated at every gradient index, or a Wrong naming the first failure."""
    out = np.zeros(shape)
    for beta in np.ndindex(*shape):
        try:
            value = answer(*(int(v) for v in beta), **{p: arrays[p] for p in pass_names})
        except IndexError as err:
            raise Wrong(f"your function fails at {gradient}{index_text(beta)}: {err}") from None
        except Exception as err:  # the student's code: report any error with the element it happened at
            raise Wrong(f"your function raised {type(err).__name__} at {gradient}{index_text(beta)}: "
                         f"{err}") from None
        try:
            out[beta] = float(value)
        except (TypeError, ValueError):
            raise Wrong(f"at {gradient}{index_text(beta)} your function returned {value!r}, "
                         f"not a number") from None
    return out


def _array_parameters(answer, indices: int, available: list[str], gradient: str, adjoint: str,
                      output: str) -> list[str]:
    """The names of the arrays the student's element function takes after its ``indices`` index parameters; a
    Wrong where its parameters cannot be read, are not all named, are too few, name no array it may read, or
    leave out the adjoint."""
    try:
        params = list(inspect.signature(answer).parameters.values())
    except (TypeError, ValueError):
        raise Wrong("cannot read the parameters of your function; define it with def") from None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise Wrong("name every parameter: no *args or **kwargs")
    if len(params) < indices:
        raise Wrong(f"{gradient} has {indices} ind{'ex' if indices == 1 else 'ices'}, so your function must take "
                    f"{indices} index parameter(s) first; it has {len(params)} parameter(s)")
    pass_names = [p.name for p in params[indices:]]
    unknown = [p for p in pass_names if p not in available]
    if unknown:
        raise Wrong(f"parameter {unknown[0]!r} is not an array your kernel can read: after the {indices} index "
                    f"parameter(s) come arrays by name, any of {', '.join(available)}")
    if adjoint not in pass_names:
        raise Wrong(f"your function does not read {adjoint}: {gradient} is the gradient of sum({adjoint} * "
                    f"{output}), which is linear in {adjoint}; take {adjoint} as a parameter and use it")
    return pass_names


def _read_extent(fn, argument: str) -> list[int]:
    """One more than the largest index ``fn`` reads in each dimension of ``argument``."""
    extent = [0] * len(fn.shapes[argument])
    for _, beta, _ in _reads(fn, argument):
        extent = [max(e, b + 1) for e, b in zip(extent, beta)]
    return extent


def _resized(fn, sizes: tuple):
    """``fn`` with the result of shape ``sizes`` and every argument as large as it then reads (plus what it had
    beyond its reads), sums unchanged; None where the text does not allow it."""
    text = str(fn)
    roomy = 4 * max(n for shape in fn.shapes.values() for n in (*shape, *sizes))  # reads of a few sizes further
    try:
        wide = parse(text, {**{a: (roomy,) * len(fn.shapes[a]) for a in fn.arguments}, fn.name: sizes})
        shapes = {fn.name: sizes}
        for a in fn.arguments:
            spare = [n - e for n, e in zip(fn.shapes[a], _read_extent(fn, a))]
            shapes[a] = tuple(max(1, e + extra) for e, extra in zip(_read_extent(wide, a), spare))
        return parse(text, shapes)
    except ExpressionError:
        return None


def other_sizes(fn) -> list:
    """The same function at other sizes, on which :func:`check_gradient_element` runs a kernel body after the
    exercise's own: every size doubled with the constant sum bounds
    (:meth:`~tensoradbook.lang.function.Function.scaled`); the result's sizes, alone, larger than any other size and
    different from each other; and the result's sizes all 1. So a body that types a size, or computes it from a
    size that happens to be equal in the exercise, fails here as it would on the hidden tests, which run it on other
    shapes."""
    out_shape = tuple(fn.shapes[fn.name])
    found = []
    with contextlib.suppress(ExpressionError):  # the text reads outside its arguments at twice the size
        doubled = fn.scaled(2)
        found.append(parse(str(doubled), doubled.shapes))
    if out_shape:
        largest = max(n for shape in fn.shapes.values() for n in shape)
        for sizes in (tuple(largest + 1 + d for d in range(len(out_shape))), (1,) * len(out_shape)):
            if sizes != out_shape and (variant := _resized(fn, sizes)) is not None:
                found.append(variant)
    return found


def _sizes_text(fn) -> str:
    return ", ".join(f"{name}: {tuple(shape)}" for name, shape in fn.shapes.items() if shape)


def _kernel_problems(fn, grads, argument: str, answer, pass_names: list[str], values: dict, plain: bool,
                     gradient: str):
    """The student's element function at every element of the gradient, against the core's derivative at
    ``values`` (the arguments, the adjoint and the forward result); the problems (none if right) and its gradient."""
    arrays = {k: (np.array(v, dtype=np.float64) if plain else _Guarded(v, k)) for k, v in values.items()}
    yours = _gradient_by_elements(answer, pass_names, arrays, tuple(fn.shapes[argument]), gradient)
    right = grads.evaluate({a: values[a] for a in fn.arguments}, values[grads.adjoint_name])[argument]
    agree = close(yours, right)
    if agree.all():
        return [], yours
    return element_problems(gradient, yours, right, agree, ATOL,
                            lambda b: f"{fn.name} never reads {argument}{index_text(b)}",
                            "a condition is missing, or a loop runs too far"), yours


def _random_values(fn, adjoint: str, rng) -> dict:
    args = random_arguments(fn, rng)
    return {**args, adjoint: rng.standard_normal(fn.shapes[fn.name]), fn.name: fn.evaluate(args)}


def check_gradient_element(fn, argument: str, answer, shapes=None, trials: int = 3, seed: int = 0) -> CheckResult:
    """Exercise: the Python code one thread of a gather kernel runs, for one element ``dx[beta]``.

    The answer is a function whose first parameters are the indices of the gradient element (one per index of
    ``x``) and whose further parameters are arrays by name: any of the arguments of ``fn``, the adjoint ``df`` and
    the forward result ``f``, e.g. for ``f[i] = x[i] * y[i]``::

        def dx_element(i, y, df):
            return df[i] * y[i]

    It is run for every element on ``trials`` random inputs and random ``df`` and compared with the core's
    derivative (Algorithm 4, the reference evaluator); then once on the same function at other sizes
    (:func:`other_sizes`), so a body must read the sizes from its arrays' shapes, never type them. A right answer
    is also confirmed by a finite-difference dot-product test, which does not use the core. The arrays it gets are
    read-only and refuse indices outside their shape (numpy would wrap ``x[-1]`` around silently).
    """
    fn = read_function(fn, shapes)
    _checked_argument(fn, argument)
    grads = derive(fn)
    gradient, adjoint = "d" + argument, grads.adjoint_name
    shape = tuple(fn.shapes[argument])
    index_names = list(grads[argument].indices)
    available = list(fn.arguments) + [adjoint, fn.name]
    name = f"one element of {gradient}, the gradient of {fn.name} with respect to {argument}"
    if answer is None:
        example = ", ".join(index_names + ["...", adjoint])
        return pending(name, f"Your answer is a Python function like def {gradient}_element({example}): "
                              f"{len(shape)} index parameter(s) first, then any of the arrays "
                              f"{', '.join(available)} by name; it returns the number {gradient}[...]. It must work "
                              f"for any sizes: it is run on this function with other sizes too.")
    try:
        require_callable(answer, f"a function returning one element of {gradient}")
        pass_names = _array_parameters(answer, len(shape), available, gradient, adjoint, fn.name)
    except Wrong as err:
        return err.result(name)
    plain = hasattr(answer, "py_func")  # a numba function: it cannot take the guarded array type
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        values = _random_values(fn, adjoint, rng)
        try:
            problems, yours = _kernel_problems(fn, grads, argument, answer, pass_names, values, plain, gradient)
        except Wrong as err:
            return err.result(name)
        if problems:
            return CheckResult(name, False, problems)
    for other in other_sizes(fn):
        where = f"with other sizes ({_sizes_text(other)})"
        try:
            problems, _ = _kernel_problems(other, derive(other), argument, answer, pass_names,
                                           _random_values(other, adjoint, rng), plain, gradient)
        except Wrong as err:
            problems = [str(err)]
        if problems:
            return CheckResult(name, False, [f"{where}: {problems[0]}", *problems[1:],
                                             "right at the exercise's sizes only: a kernel body reads the sizes from "
                                             "its arrays' shapes (x.shape[0]), never types them"])
    _confirm_by_finite_differences(fn, argument, values, adjoint, yours, rng.standard_normal(shape))
    return CheckResult(name, True, note=f"Your kernel agrees with the core's derivative on {trials} random inputs "
                                        f"and at {len(other_sizes(fn))} other sizes, and with finite differences "
                                        f"(relative error below {_FD_RTOL:g}).")


def _confirm_by_finite_differences(fn, argument: str, values: dict, adjoint: str, yours, direction) -> None:
    """The defining property, without the core: <dx, v> = d/dt sum(df * f(x + t v)) at t = 0, for ``yours`` (the
    gradient that agreed with the core's at ``values``) along ``direction``."""
    args, df = {a: values[a] for a in fn.arguments}, values[adjoint]
    shifted = []
    for h in (_FD_STEP, _FD_STEP / 2):
        sides = []
        for sign in (1, -1):
            moved = dict(args)
            moved[argument] = args[argument] + sign * h * direction
            sides.append(float(np.sum(df * fn.evaluate(moved))))
        shifted.append((sides[0] - sides[1]) / (2 * h))
    numeric = (4 * shifted[1] - shifted[0]) / 3
    exact = float(np.sum(yours * direction))
    error = abs(numeric - exact) / max(abs(numeric), abs(exact), np.finfo(float).tiny)
    if error > _FD_RTOL and abs(numeric - exact) > _FD_ATOL:  # pragma: no cover -- would be a bug in the core
        raise AssertionError(f"the core's derivative fails the finite-difference test (error {error:.2g})")


def _thread_of(fn, env: dict, threads: str) -> tuple:
    return tuple(env[i] for i in fn.indices) if threads == "output" else tuple(sorted(env.items()))


def _thread_text(fn, thread: tuple, threads: str) -> str:
    if threads == "output":
        return f"{fn.name}{index_text(thread)}"
    return "(" + ", ".join(f"{k} = {v}" for k, v in thread) + ")"


def _writers(fn, argument: str, threads: str) -> tuple[dict, dict]:
    """Per gradient element: the threads of the scatter kernel that add into it, and the number of adds."""
    if threads not in ("output", "extended"):
        raise ValueError(f"threads must be 'output' (one thread per element of the result, as the core's "
                         f"scatter kernels) or 'extended' (one per extended index), not {threads!r}")
    writers, adds = {}, {}
    for _, beta, env in _reads(fn, argument):
        writers.setdefault(beta, set()).add(_thread_of(fn, env, threads))
        adds[beta] = adds.get(beta, 0) + 1
    return writers, adds


def _gradient_indices(answer, shape: tuple, gradient: str) -> set:
    """A set of gradient indices from a set/list of tuples (ints for one index) or a boolean mask."""
    if isinstance(answer, np.ndarray) and answer.dtype == bool:
        if answer.shape != shape:
            raise Wrong(f"a mask must have the shape {shape} of {gradient}, yours has {answer.shape}")
        return {tuple(int(v) for v in idx) for idx in np.argwhere(answer)}
    if isinstance(answer, (str, bytes, dict)) or not hasattr(answer, "__iter__"):
        raise Wrong(f"the answer must be a set of indices of {gradient} (tuples, or integers for one index), "
                     f"got {answer!r}")
    out = set()
    for item in answer:
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            item = (item,)
        try:
            index = tuple(item)
        except TypeError:
            raise Wrong(f"{item!r} is not an index of {gradient}") from None
        if len(index) != len(shape) or any(isinstance(v, bool) or not isinstance(v, (int, np.integer))
                                           for v in index):
            raise Wrong(f"{item!r} is not an index of {gradient}: it needs {len(shape)} integer(s)")
        index = tuple(int(v) for v in index)
        if any(not 0 <= v < n for v, n in zip(index, shape)):
            raise Wrong(f"{gradient}{index_text(index)} is not an element: {gradient} has shape {shape}")
        out.add(index)
    return out


def _threads_list(fn, threads_set, threads: str, limit: int = 3) -> str:
    ordered = sorted(threads_set)
    text = ", ".join(_thread_text(fn, t, threads) for t in ordered[:limit])
    return text + (f" and {len(ordered) - limit} more" if len(ordered) > limit else "")


def check_scatter_races(fn, argument: str, answer, shapes=None, threads: str = "output") -> CheckResult:
    """Exercise: which elements of ``dx`` do two or more threads of the scatter kernel add into?

    The scatter kernel of eq. 40 runs one thread per element of the result
    (``threads="output"``, like the core's ``"cuda-scatter"`` target; the
    sums run serially inside the thread) or one per extended index
    (``threads="extended"``, the sums' indices too), and each thread adds
    into ``dx`` at every index at which it reads ``x``. An element written
    by two threads is a race: without ``atomic.add`` an update can be lost.
    The answer is a set of indices of ``x`` (tuples; plain integers for a
    vector), or a boolean mask of ``x``'s shape. Checked by enumerating every
    read by brute force.
    """
    fn = read_function(fn, shapes)
    _checked_argument(fn, argument)
    gradient, shape = "d" + argument, tuple(fn.shapes[argument])
    per = "element of " + fn.name if threads == "output" else "extended index"
    name = f"races in the scatter kernel of {gradient} (one thread per {per})"
    writers, _ = _writers(fn, argument, threads)
    if answer is None:
        return pending(name, f"Your answer is a set of indices of {gradient}, e.g. "
                              f"{'{(0, 1), (2, 2)}' if len(shape) > 1 else '{0, 3}'}; set() if there are none.")
    try:
        claimed = _gradient_indices(answer, shape, gradient)
    except Wrong as err:
        return err.result(name)
    races = {beta for beta, who in writers.items() if len(who) > 1}
    if claimed != races:
        # One message for every wrong set: naming an element that does or does not race would answer the
        # exercise element by element over a few tries.
        return CheckResult(name, False, [
            f"that is not the set of elements of {gradient} that two or more threads write",
            f"hint: with one thread per {per}, list for each thread the elements of {argument} it reads; the "
            f"reads inside one thread's loop over a sum come one after another and do not race, so an element of "
            f"{gradient} races when two or more different threads read it"])
    if not races:
        note = "Indeed no element is written by two threads: this scatter kernel needs no atomics."
    else:
        top = max(sorted(races), key=lambda b: len(writers[b]))
        note = (f"{len(races)} of {math.prod(shape)} elements race; the most contended, "
                f"{gradient}{index_text(top)}, gets adds from {len(writers[top])} threads.")
    return CheckResult(name, True, note=note)


def check_max_contention(fn, argument: str, answer, shapes=None, threads: str = "output") -> CheckResult:
    """Exercise: at most how many threads of the scatter kernel add into one element of ``dx``?

    With ``atomic.add`` these adds are serialised, so the most contended
    element bounds the kernel's speed (the report's footnote 4). Threads as
    in :func:`check_scatter_races`; adds of one thread (its sum loop) count
    once. Checked by brute-force enumeration.
    """
    fn = read_function(fn, shapes)
    _checked_argument(fn, argument)
    gradient = "d" + argument
    per = "element of " + fn.name if threads == "output" else "extended index"
    name = f"largest number of threads adding into one element of {gradient} (one thread per {per})"
    writers, adds = _writers(fn, argument, threads)
    if answer is None:
        return pending(name, "Your answer is a non-negative integer.")
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer)):
        return CheckResult(name, False, [f"the answer must be an integer count, got {answer!r}"])
    answer = int(answer)
    counts = {beta: len(who) for beta, who in writers.items()}
    most = max(counts.values(), default=0)
    top = min(b for b, c in counts.items() if c == most) if counts else None
    if answer == most:
        note = (f"{gradient}{index_text(top)} gets adds from {most} threads: "
                f"{_threads_list(fn, writers[top], threads)}." if top is not None else "")
        return CheckResult(name, True, note=note)
    if answer in adds.values() and answer not in counts.values():
        # a count of adds that no element's count of threads equals: the mistake shows whatever the right answer is
        beta = min(b for b, n in adds.items() if n == answer)
        return CheckResult(name, False, [f"{answer} is the number of adds into {gradient}{index_text(beta)}, not of "
                                         f"threads: the adds of one thread (its loop over a sum) come one after "
                                         f"another and do not race"])
    # "too low" / "too high" would turn repeated tries into a binary search for the maximum
    return CheckResult(name, False, [f"{answer} is not the largest number of threads that add into one element of "
                                     f"{gradient}: for each element of {argument}, count the threads that read it "
                                     f"(each thread once, however often its loop reads it) and take the largest "
                                     f"count"])


def _loops_text(gradient_fn) -> str:
    """The sums of a derived gradient as loops: ``dd_z1 from max [dd_0 - 2; 0] to min [dd_0; 4]``."""
    loops = [f"{node.index} from {bound_text(node.lower, True, standalone=True)} to "
             f"{bound_text(node.upper, False, standalone=True)}"
             for node in walk(gradient_fn.body) if isinstance(node, Sum)]
    return "; ".join(loops) if loops else "no loop"


def _loop_problems(answer, truth: dict, gradient: str, index: str, element: str, argument: str,
                   alpha: str) -> list[str]:
    """Where the student's loop bounds ``answer`` visit values of ``index`` that no read of ``argument`` at an
    element of ``gradient`` has (``truth``: element -> value -> a witness), or miss some: the first few, then the
    counts; a Wrong where the function fails or its loop is unbounded."""
    problems, extra_count, missing_count = Problems(), 0, 0
    for beta in truth:
        at = f"{gradient}{index_text(beta)}"
        try:
            result = answer(*(int(v) for v in beta))
        except Exception as err:  # the student's code: say where it failed
            raise Wrong(f"your function raised {type(err).__name__} at {at}: {err}") from None
        visited = result if isinstance(result, range) else read_range(result, f"your function at {at}")
        if len(visited) > _MAX_LOOP_VALUES:
            raise Wrong(f"at {at} your loop visits {len(visited)} values: are the bounds finite?")
        visited = set(visited)
        extra = sorted(visited - truth[beta].keys())
        missing = sorted(truth[beta].keys() - visited)
        extra_count += len(extra)
        missing_count += len(missing)
        if extra:
            problems.add(f"at {at} your loop visits {index} = {extra[0]}, but no in-range ({alpha}) with "
                         f"{index} = {extra[0]} has {element} = {argument}{index_text(beta)}")
        if missing and not problems.full:
            witness = ", ".join(f"{k} = {v}" for k, v in truth[beta][missing[0]].items())
            problems.add(f"at {at} your loop misses {index} = {missing[0]}: {witness} reads "
                         f"{argument}{index_text(beta)}")
    if problems:
        counts = [text for count, text in ((extra_count, f"{extra_count} value(s) too many"),
                                           (missing_count, f"{missing_count} missing")) if count]
        problems.append("in all, over every element of " + gradient + ": " + " and ".join(counts))
    return problems


def check_gather_bounds(fn, argument: str, index: str, answer, shapes=None) -> CheckResult:
    """Exercise: the bounds of the loop over ``index`` in the gather kernel of ``dx[beta]``.

    ``index`` is an index of the extended index alpha (an output index of
    ``fn`` or one of its sum indices) that ``x``'s indices do not fix. For a
    gradient element ``beta`` the kernel must visit exactly the values of
    ``index`` at which some in-range alpha reads ``x[beta]`` (the projection
    of Sigma(beta), eqs. 42-45). The answer is a function of the gradient
    indices returning ``(low, high)``, both inclusive (or a ``range``, for a
    step). Checked for every ``beta`` against brute-force enumeration; any
    way of writing the bounds passes.
    """
    fn = read_function(fn, shapes)
    _checked_argument(fn, argument)
    sums = [node.index for node in walk(fn.body) if isinstance(node, Sum)]
    if index not in fn.indices and index not in sums:
        raise ValueError(f"{index!r} is neither an output index {fn.indices} nor a sum index {tuple(sums)} "
                         f"of {fn.name}")
    reads = _reads(fn, argument)
    elements = sorted({expr_text(node) for node, _, _ in reads})
    if len(elements) > 1:
        raise ValueError(f"{argument} occurs {len(elements)} times in {fn.name} ({', '.join(elements)}): "
                         f"its gather kernel has one loop nest per occurrence; pick a function with one")
    if sums.count(index) > 1:
        raise ValueError(f"{fn.name} has several sums over {index!r}")
    gradient, shape = "d" + argument, tuple(fn.shapes[argument])
    beta_names = list(derive(fn)[argument].indices)
    name = f"bounds of the loop over {index} in the gather kernel of {gradient}"
    if answer is None:
        return pending(name, f"Your answer is a function of {', '.join(beta_names)} returning (low, high) for "
                              f"{index}, both ends inclusive, e.g. lambda {', '.join(beta_names)}: (0, 3).")
    try:
        require_callable(answer, f"a function of the index of {gradient} returning (low, high)")
    except Wrong as err:
        return err.result(name)
    truth: dict[tuple, dict] = {beta: {} for beta in np.ndindex(*shape)}
    for _, beta, env in reads:
        truth[beta].setdefault(env[index], env)  # value of the loop index -> a witness alpha
    element = elements[0] if elements else f"{argument}[...]"
    alpha = ", ".join(reads[0][2] if reads else fn.indices)
    try:
        problems = _loop_problems(answer, truth, gradient, index, element, argument, alpha)
    except Wrong as err:
        return err.result(name)
    if problems:
        return verdict(name, problems)
    loops = _loops_text(derive(fn).simplified[argument])
    return CheckResult(name, True, note=f"Your loop visits exactly the right values for all {len(truth)} elements. "
                                        f"For comparison, the core's {gradient} sums over: {loops}.")

"""Chapter 12's checks, the parts they share (:mod:`.ch12_build` has the chapter's story): the library's answers
switched off while the student's function runs (:func:`library_off`), the battery of functions every check tries
(:data:`FUNCTIONS`), and the reading of the student's answers (texts of reads, integer rows and vectors).
"""

from __future__ import annotations

import contextlib
import functools
import sys
from fractions import Fraction

import numpy as np

from ..lang.evaluate import sum_range
from ..lang.expr import Affine, Atom, Element, ExpressionError, Expr, If, Sum, postorder
from ..lang.function import Function
from ..lang.names import all_names, fresh_name
from ..lang.parser import parse
from ..lang.printer import atom_text
from ..lang.simplify import atom_truth
from .answers import read_function
from .checking import Wrong, close, require_callable, type_name
from .policy import covers, defined_in, outside_code
from .feedback import CheckResult


# --- the library's answers, switched off while the student's function runs ---------------------------------------

class LibraryOff(RuntimeError):
    """Raised by a part of the library that a chapter 12 check switches off while it runs the student's function."""

    def __init__(self, name: str, why: str):
        self.name, self.why = name, why
        super().__init__(f"{name} is switched off while the check runs your function: {why}")


#: What the checks switch off, by qualified name (a module: every function and class it defines), and why.
ANSWERING = (
    (("tensoradbook.ad.derive", "tensoradbook.ad.program", "tensoradbook.ad.contribution",
      "tensoradbook.ad.kernel_form"), "it is Algorithm 4, which exercises 5 and 6 have you write"),
    (("tensoradbook.ad.reverse.reverse_accumulate", "tensoradbook.ad.reverse.ReverseSweep"),
     "it is the reverse sweep, which exercise 2 has you write (local_partials, the operations' rules, stays)"),
    (("tensoradbook.integer.smith.integer_inverse", "tensoradbook.integer.smith.IntegerInverse",
      "tensoradbook.integer.smith.IntegerSolutions", "tensoradbook.integer.smith.Solvability"),
     "it is the integer solve, which exercise 3 has you write from the Smith normal form (smith_normal_form stays)"),
    (("tensoradbook.integer.fourier_motzkin", "tensoradbook.integer.geometry.loop_bounds",
      "tensoradbook.integer.geometry.polygon_vertices", "tensoradbook.integer.geometry.solutions_in_view",
      "tensoradbook.integer.geometry.hidden_entries", "tensoradbook.integer.geometry._solution_family"),
     "it is Fourier-Motzkin elimination (Algorithm 3), which exercise 4 has you write"),
    (("tensoradbook.ad.finite_differences", "tensoradbook.ad.gradcheck.numeric_gradient",
      "tensoradbook.ad.gradcheck.directional_derivatives", "tensoradbook.ad.gradcheck.check_gradients"),
     "finite differences are not your engine's exact gradient"),
    (("tensoradbook.exercises",), "the checks and their helpers grade answers; they do not give them"),
)
#: Never switched off: the policy module, and the parts of this module that switch the others off and back on.
_KEPT = ("tensoradbook.exercises.policy", "tensoradbook.exercises.ch12_support.library_off",
         "tensoradbook.exercises.ch12_support._switched_off", "tensoradbook.exercises.ch12_support._guarded",
         "tensoradbook.exercises.ch12_support._allowed", "tensoradbook.exercises.ch12_support._targets",
         "tensoradbook.exercises.ch12_support._owners")


def _targets() -> dict[int, tuple[object, str, str]]:
    """id -> (function or class, qualified name, why) for everything :data:`ANSWERING` names, in the modules
    loaded now."""
    found = {}
    for names, why in ANSWERING:
        for entry in names:
            for module_name, module in list(sys.modules.items()):
                if module is None or not module_name.startswith("tensoradbook") or \
                        not (covers(module_name, entry) or covers(entry, module_name)):
                    continue
                for attribute, value in list(vars(module).items()):
                    qualified = f"{module_name}.{attribute}"
                    if defined_in(value, module_name) and covers(entry, qualified) and \
                            not any(covers(kept, qualified) for kept in _KEPT):
                        found.setdefault(id(value), (value, qualified, why))
    return found


def _allowed(frame, entry) -> bool:
    """Whether a call whose caller is ``frame`` may reach a switched-off part: the library's and Python's frames
    are passed through up to ``entry`` (the check's frame that called the student's function); the first other
    frame is the student's code, which may reach it only through the language layer (the parser's own range checks
    solve index equations with the integer inverse and Fourier-Motzkin)."""
    through_language = False
    while frame is not None and frame is not entry:
        module = frame.f_globals.get("__name__") or ""
        if module.startswith("tensoradbook.lang."):
            through_language = True
        elif not (module.startswith("tensoradbook.") or outside_code(frame.f_code.co_filename)):
            return through_language
        frame = frame.f_back
    return True


def _guarded(original, name: str, why: str, entry):
    if isinstance(original, type):
        inherited = original.__init__

        def __init__(self, *args, **kwargs):
            if not _allowed(sys._getframe(1), entry):
                raise LibraryOff(name, why)
            inherited(self, *args, **kwargs)

        return __init__

    @functools.wraps(original)
    def guarded(*args, **kwargs):
        if not _allowed(sys._getframe(1), entry):
            raise LibraryOff(name, why)
        return original(*args, **kwargs)

    del guarded.__wrapped__  # the original stays out of reach
    return guarded


def _owners():
    """The modules whose names may hold a switched-off function: the package's, and every module that is not
    Python's or an installed package's (the notebook's ``__main__``, a student's own modules)."""
    for name, module in list(sys.modules.items()):
        if module is None:
            continue
        path = getattr(module, "__file__", None)
        if name == "__main__" or name.startswith("tensoradbook") or (path and not outside_code(path)):
            yield module


@contextlib.contextmanager
def library_off():
    """Switch off, for the block, the parts of the library that answer this chapter's exercises (:data:`ANSWERING`):
    every name in the package, the notebook and the student's modules that holds one of its functions gets a
    guard, and its classes a guarded ``__init__``; a call from the student's code raises :class:`LibraryOff`. Put
    back as it was when the block ends, however it ends."""
    entry = sys._getframe(2)  # the check's frame that runs the block (contextmanager's __enter__ is between)
    patches = []
    try:
        targets = _targets()
        replacement = {}
        for key, (value, name, why) in targets.items():
            if isinstance(value, type):
                if name.startswith("tensoradbook.exercises."):
                    continue  # the checks' verdict and error types: harmless, and the checks make them
                patches.append((value, "__init__", vars(value).get("__init__", _MISSING)))
                value.__init__ = _guarded(value, name, why, entry)
            else:
                replacement[key] = _guarded(value, name, why, entry)
        for module in _owners():
            for attribute, value in list(vars(module).items()):
                if id(value) in replacement and targets[id(value)][0] is value:
                    patches.append((module, attribute, value))
                    setattr(module, attribute, replacement[id(value)])
        yield
    finally:
        for owner, attribute, original in reversed(patches):
            if original is _MISSING:
                delattr(owner, attribute)
            else:
                setattr(owner, attribute, original)


_MISSING = object()


def call_answer(answer, what: str, *args):
    """``answer(*args)`` with the library's answers switched off, or a Wrong saying that it is not a function, what
    it raised, or which switched-off part it called."""
    require_callable(answer, f"your function {what} (its name, without calling it)")
    try:
        with library_off():
            result = answer(*args)
    except LibraryOff as error:
        raise Wrong(f"your {what} calls {error.name}, which is switched off while the check runs your function: "
                    f"{error.why}") from None
    except Exception as error:  # the student's code: say what it raised, and on what
        if type(error).__name__ == "LibraryPolicyError":  # the assignment's policy (tensoradbook.exercises.policy)
            raise Wrong(f"your {what} uses what this assignment keeps out of answers: {error}") from None
        raise Wrong(f"your {what} raised {type(error).__name__}: {error}") from None
    if result is NotImplemented or type_name(result) == "NotImplementedType":
        raise Wrong(f"your {what} returns NotImplemented, the chapter's placeholder: write its body")
    return result


# --- the battery of functions -------------------------------------------------------------------------------------

#: The report's section 6 example.
SECTION6 = ("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
            {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)})

#: The functions exercises 1, 2 and 5 try by default, each with what it tests. Every feature the course's hidden
#: tests try on other functions is here.
FUNCTIONS = (
    SECTION6,  # sums liberated, the cokernel's condition (c[i; i]), two kernel directions (d[i + k])
    ("f[] = sin (x[] * y[]) * x[]", {"f": (), "x": (), "y": ()}),  # a read written twice: eq. 2 adds the paths
    ("f[i] = x[i] / (4 + y[i] - x[i])", {"f": (4,), "x": (4,), "y": (4,)}),  # a quotient and a difference
    ("f[i] = x[i] * x[i + 1]", {"f": (3,), "x": (5,)}),  # offsets; an empty kernel: eq. 34's conditions alone
    ("f[i] = x[2 * i] ** 2 * w[]", {"f": (3,), "x": (6,), "w": ()}),  # I (beta - a) integral; a scalar argument
    ("f[i] = sum{k}_0^3 (x[2 * i + k])", {"f": (4,), "x": (10,)}),  # a stride: bounds with a denominator
    ("f[i; j] = sum{k}_0^4 (x[i; k] * y[k; j])", {"f": (3, 4), "x": (3, 5), "y": (5, 4)}),  # a matrix product
    ("f[i] = exp (sum{k}_0^i (x[i - k] * y[k]))", {"f": (4,), "x": (4,), "y": (4,)}),  # a bound that moves with i
    ("f[i] = sum{k}_(max [0; i - 2])^(min [3; floor(i / 2)]) (x[i + k] * x[k])", {"f": (6,), "x": (9,)}),  # max, min
    ("f[i] = sum{p}_0^2 (sum{q}_0^1 (if {i + p >= 1 and i + p <= 4} then (w[p; q] * x[i + p - 1; q]) else (0)))",
     {"f": (4,), "w": (3, 2), "x": (4, 2)}),  # zero padding: an index condition around the terms; nested sums
    ("f[i] = if {i >= 2} then (x[i] * y[i]) else (y[i] - x[i])", {"f": (4,), "x": (4,), "y": (4,)}),  # both branches
    ("f[i] = if {x[i] > 0} then (x[i] * y[i]) else (0.01 * x[i])", {"f": (4,), "x": (4,), "y": (4,)}),  # a select
    ("f[i] = max{r}_0^1 (x[2 * i + r])", {"f": (3,), "x": (6,)}),  # max pooling: a max reduction
    ("f[i; j] = x[i] * y[j]", {"f": (30, 40), "x": (30,), "y": (40,)}),  # a large box: eq. 40 would sum all of it
)


def functions_tried(functions) -> list[Function]:
    """The functions a check tries: :data:`FUNCTIONS`, or the ones given (Functions or (text, shapes) pairs)."""
    given = FUNCTIONS if functions is None else functions
    if isinstance(given, (Function, str)) or (isinstance(given, tuple) and len(given) == 2 and isinstance(given[0], str)
                                              and isinstance(given[1], dict)):
        given = [given]
    out = []
    for fn in given:
        fn = fn if isinstance(fn, Function) else read_function(*fn) if isinstance(fn, tuple) else read_function(fn, {})
        _scope_error(fn)
        out.append(fn)
    return out


def _shown(fn: Function) -> str:
    return str(fn)


def first_failure(name: str, tried: list[Function], problems_of) -> CheckResult | None:
    """The verdict on the first function of ``tried`` whose ``problems_of`` are not empty (a Wrong counts as one),
    naming that function; None where every one passes."""
    for fn in tried:
        try:
            problems = problems_of(fn)
        except Wrong as err:
            problems = [str(err)]
        if problems:
            return CheckResult(name, False, [f"for {_shown(fn)}: {problems[0]}"] + problems[1:])
    return None


def close_to(got, right) -> np.ndarray:
    """Where ``got`` equals ``right`` to rounding, relative to the largest element of ``right`` alone (no floor of
    1): the values of sec. 6 are near 1e-8 (``exp`` of minus a sum of five terms), so an absolute tolerance would
    pass anything."""
    return close(got, right, floor=0.0)


def random_inputs(fn, rng) -> dict:
    """Random inputs of either sign, 0.5 to 1.5 in size: both branches of a select are taken, no pole is near."""
    return {name: rng.uniform(0.5, 1.5, fn.shapes[name]) * rng.choice([-1.0, 1.0], fn.shapes[name])
            for name in fn.arguments}


# --- reading the student's answers --------------------------------------------------------------------------------

def answer_text(value, what: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Expr):
        raise Wrong(f"{what} is an expression node ({type(value).__name__}); return its text, "
                    f"expr_text(node): nodes cannot be graded")
    raise Wrong(f"{what} must be text in the report's notation, got {type_name(value)}")


def _scope_error(fn: Function) -> None:
    """ValueError unless every sum of ``fn`` has an index of its own, apart from the output indices and the
    tensors' names, and starts at 0 or above: the checks name the liberated indices by the sums' indices and
    read the student's texts in the box of the indices' values."""
    names = [node.index for node in postorder(fn.body) if isinstance(node, Sum)]
    if len(set(names)) != len(names) or set(names) & set(fn.indices) or (set(names) | set(fn.indices)) & set(fn.shapes):
        raise ValueError(f"{fn.name}: the exercise needs each sum with an index of its own, and index names "
                         f"apart from the tensors' names (tensoradbook.lang.names.apart)")
    if any(low < 0 for low, _ in sum_intervals(fn, all_sums(fn)).values()):
        raise ValueError(f"{fn.name}: the exercise needs sums whose indices start at 0 or above")


def all_sums(fn: Function) -> list[Sum]:
    """The sums of ``fn``, each after the sums around it."""
    return [node for node in postorder(fn.body) if isinstance(node, Sum)][::-1]


def sum_intervals(fn: Function, scope) -> dict:
    """Each index of ``fn.indices`` and of the sums ``scope`` (outermost first) with the values it takes."""
    intervals = {name: (0, n - 1) for name, n in zip(fn.indices, fn.shapes[fn.name])}
    for s in scope:
        intervals[s.index] = sum_range(s.lower, s.upper, intervals)
    return intervals


def read_scopes(fn: Function) -> list[tuple[Element, tuple[Sum, ...]]]:
    """Every read of ``fn`` (each occurrence) with the sums around it, outermost first, by a walk of the tree."""
    found, waiting = [], [(fn.body, ())]
    while waiting:
        node, scope = waiting.pop()
        if isinstance(node, Element):
            found.append((node, scope))
            continue
        inner = scope + (node,) if isinstance(node, Sum) else scope
        waiting.extend((child, inner) for child in reversed(node.children()))
    return found


def conditions_of(scope, box: dict) -> tuple[Atom, ...]:
    """The bounds of the sums ``scope`` as conditions, those that hold on all of ``box`` left out."""
    atoms = []
    for s in scope:
        index = Affine.index(s.index)
        atoms += [Atom(index.scale(low.denominator) - low.numerator, 0, inequality=True) for low in s.lower]
        atoms += [Atom(high.numerator - index.scale(high.denominator), 0, inequality=True) for high in s.upper]
    return tuple(atom for atom in atoms if atom_truth(atom, box) is not True)


def _contexts(fn: Function) -> list[tuple[Atom, ...]]:
    """The index conditions in force at the reads of ``fn``: none, and for each read the conditions of the ifs whose
    then-branch holds it (a read inside an else-branch is read in the box, or where another read's hold)."""
    found, waiting = {(): None}, [(fn.body, ())]
    while waiting:
        node, condition = waiting.pop()
        if isinstance(node, Element):
            found.setdefault(condition, None)
        elif isinstance(node, If):
            waiting += [(node.then, condition + node.condition), (node.otherwise, condition)]
        else:
            waiting += [(child, condition) for child in node.children()]
    return list(found)


def read_of(text, fn: Function, names, what: str) -> Element:
    """The student's text of a read as an :class:`Element` of ``fn`` (read in the box of ``names``, within the
    sums' bounds and, where the read needs them, the conditions of the ifs around it)."""
    text = answer_text(text, what)
    sums = all_sums(fn)
    intervals = sum_intervals(fn, sums)
    box = [max(1, intervals[n][1] + 1) for n in names]
    holder = fresh_name("r", all_names(fn))
    first_error = None
    for extra in _contexts(fn):
        # within the sums' own bounds, which the box of each index's values may exceed (sum{k}_0^i reads x[i - k])
        condition = tuple(dict.fromkeys(conditions_of(sums, intervals) + extra))
        body = f"if {{{' and '.join(map(atom_text, condition))}}} then ({text}) else (0)" if condition else text
        try:
            read = parse(f"{holder}[{'; '.join(names)}] = {body}", {**fn.shapes, holder: tuple(box)}).body
        except ExpressionError as error:
            first_error = first_error or error
            continue
        read = read.then if condition and isinstance(read, If) else read
        if not isinstance(read, Element) or read.name not in fn.arguments:
            raise Wrong(f"{what} {text!r} is not a read of an argument of {fn.name} (a name with its indices, "
                        f"as expr_text prints an Element)")
        return read
    raise Wrong(f"{what} {text!r} cannot be read as a read of {fn.name}: {str(first_error).splitlines()[0]}")


def _integer(value) -> bool:
    return not isinstance(value, bool) and (isinstance(value, (int, np.integer)) or
                                            isinstance(value, Fraction) and value.denominator == 1)


def integer_rows(value, columns: int, what: str) -> list[list[int]]:
    """``value`` as a list of rows of ``columns`` integers, or a Wrong saying what it is not."""
    if isinstance(value, np.ndarray) and value.dtype == object:
        raise Wrong(f"{what} is a numpy array of Python objects, which cannot be graded; return nested lists: "
                    f"{what}.tolist()")
    rows = value.tolist() if isinstance(value, np.ndarray) else value
    if isinstance(rows, (str, bytes, dict)) or not hasattr(rows, "__iter__"):
        raise Wrong(f"{what} must be a list of rows, got {type_name(value)}")
    out = []
    for row in rows:
        if isinstance(row, (str, bytes, dict)) or not hasattr(row, "__iter__"):
            raise Wrong(f"{what} must be a list of rows (lists of integers), got a row {row!r}")
        entries = list(row)
        if len(entries) != columns or not all(_integer(v) for v in entries):
            raise Wrong(f"each row of {what} must hold {columns} integers, one per entry of alpha; got {row!r}")
        out.append([int(v) for v in entries])
    return out


def integer_vector(value, length: int | None, what: str) -> list[int]:
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise Wrong(f"{what} must be a list of integers, got {type_name(value)}")
    entries = list(value)
    if (length is not None and len(entries) != length) or not all(_integer(v) for v in entries):
        raise Wrong(f"{what} must be a list of {length if length is not None else 'some'} integers, got {value!r}")
    return [int(v) for v in entries]



"""Chapter 12: build the engine yourself (report secs. 2, 4.1, 4.2, 5 and 6), one check per piece of it.

The student writes an automatic differentiation engine for element-wise tensor functions from the expression tree
and integer matrices up, each piece used by the next, and each check calls the student's function on data and
judges what it returns against independent truth:

* :func:`check_reads`: ``reads(fn)``, every read ``x[A alpha + a]`` of the tree with its extended index ``alpha``
  (sec. 5.2), its index matrix ``A`` and offset ``a`` (eq. 35) and the box ``R alpha >= r`` of the output's shape
  (eq. 42) and the sums' ranges (eq. 52), Algorithm 4's line 4; the box is judged by the integer points it holds;
* :func:`check_adjoints`: ``adjoints(fn)``, reverse accumulation (sec. 2, eqs. 1-3) over the tree from the seed
  ``df[indices]``, sums liberated (sec. 5.2), index conditions and value selects; every adjoint is evaluated on
  random inputs against the core's sweep;
* :func:`check_index_solve`: ``index_solve(A)``, the pseudo-inverse, kernel and cokernel of an index matrix from
  its Smith normal form (sec. 4.1), judged by the properties that make them right, exactly;
* :func:`check_box_solutions`: ``eliminate(M)``, Fourier-Motzkin elimination (sec. 4.2, Algorithm 3) of
  ``M z >= b`` with ``b`` symbolic: the loops it gives must visit exactly the integer points, for many ``b``, and
  its conditions on ``b`` (eq. 34) must hold exactly where there are some;
* :func:`check_algorithm4`: ``gradient(fn, argument)``, Algorithm 4 assembled from the pieces, evaluated on random
  inputs against :func:`tensoradbook.derive`, and refused where its sums run over the whole box (eq. 40) instead
  of the solutions (eq. 45); given a program (chapter 11's network), ``backprop(program, values)``, the gradient of
  its scalar value with respect to every input, against the exact gradient and central differences.

Each check runs a battery of cases by default (:data:`FUNCTIONS`, :data:`INDEX_MATRICES`, :data:`SYSTEMS`) that
holds every feature the hidden tests of the course try on other cases: a read written twice, sums whose bounds
move, max and min bounds, a bound with a denominator, index conditions and value selects, a max reduction, the
cokernel's condition, the integrality of ``I (beta - a)`` (which the report's eq. 46 drops), the conditions of
eq. 34 on reads whose kernel is empty, strides, a scalar argument. So a student whose function passes the visible
check passes the hidden ones, unless it was written for the visible cases.

While a check runs the student's function, the library's answers to this chapter are switched off
(:func:`library_off`): :func:`tensoradbook.derive` and Algorithm 4's parts, the reverse sweep, the integer inverse,
Fourier-Motzkin elimination, finite differences, and every check and helper of :mod:`tensoradbook.exercises`; a
call from the student's code raises :class:`LibraryOff`, which the verdict names. The parser may still use them
for its own range checks. The checks' own truth is computed outside, before or after the call.

The answers are functions that return data (text in the report's notation, numbers, nested lists), so that the
sandboxed grader can call them across its wire (``classroom/wire.py``). No feedback prints a right value; wrong
values of the student's are named with a hint.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import re
import sys
from collections import Counter
from fractions import Fraction

import numpy as np
import sympy

from ..ad.derive import derive, extended_domain
from ..ad.reverse import reverse_accumulate
from ..integer.fourier_motzkin import fourier_motzkin
from ..integer.matrix import as_rational_matrix
from ..integer.smith import integer_inverse
from ..lang.evaluate import sum_range
from ..lang.expr import Affine, Atom, Element, ExpressionError, Expr, If, Number, Sum, postorder
from ..lang.function import Function
from ..lang.names import all_names, fresh_name
from ..lang.parser import parse
from ..lang.printer import atom_text, expr_text
from ..lang.program import Program
from ..lang.simplify import ZERO, atom_truth
from ..lang.tokens import TOKEN
from .answers import read_function
from .checking import ATOL, RTOL, Wrong, close, pending, require_callable, type_name, verdict
from .policy import covers, defined_in, outside_code
from .feedback import CheckResult, element_problems, index_text, number_text

__all__ = ["FUNCTIONS", "INDEX_MATRICES", "SYSTEMS", "LibraryOff", "check_adjoints", "check_algorithm4",
           "check_box_solutions", "check_index_solve", "check_reads", "library_off"]


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
_KEPT = ("tensoradbook.exercises.policy", "tensoradbook.exercises.ch12_build.library_off",
         "tensoradbook.exercises.ch12_build._switched_off", "tensoradbook.exercises.ch12_build._guarded",
         "tensoradbook.exercises.ch12_build._allowed", "tensoradbook.exercises.ch12_build._targets",
         "tensoradbook.exercises.ch12_build._owners")


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


def _call(answer, what: str, *args):
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


def _functions(functions) -> list[Function]:
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


def _first_failure(name: str, tried: list[Function], problems_of) -> CheckResult | None:
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


def _inputs(fn, rng) -> dict:
    """Random inputs of either sign, 0.5 to 1.5 in size: both branches of a select are taken, no pole is near."""
    return {name: rng.uniform(0.5, 1.5, fn.shapes[name]) * rng.choice([-1.0, 1.0], fn.shapes[name])
            for name in fn.arguments}


# --- reading the student's answers --------------------------------------------------------------------------------

def _text(value, what: str) -> str:
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
    if any(low < 0 for low, _ in _intervals(fn, _all_sums(fn)).values()):
        raise ValueError(f"{fn.name}: the exercise needs sums whose indices start at 0 or above")


def _all_sums(fn: Function) -> list[Sum]:
    """The sums of ``fn``, each after the sums around it."""
    return [node for node in postorder(fn.body) if isinstance(node, Sum)][::-1]


def _intervals(fn: Function, scope) -> dict:
    """Each index of ``fn.indices`` and of the sums ``scope`` (outermost first) with the values it takes."""
    intervals = {name: (0, n - 1) for name, n in zip(fn.indices, fn.shapes[fn.name])}
    for s in scope:
        intervals[s.index] = sum_range(s.lower, s.upper, intervals)
    return intervals


def _scopes(fn: Function) -> list[tuple[Element, tuple[Sum, ...]]]:
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


def _conditions_of(scope, box: dict) -> tuple[Atom, ...]:
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


def _read_of(text, fn: Function, names, what: str) -> Element:
    """The student's text of a read as an :class:`Element` of ``fn`` (read in the box of ``names``, within the
    sums' bounds and, where the read needs them, the conditions of the ifs around it)."""
    text = _text(text, what)
    sums = _all_sums(fn)
    intervals = _intervals(fn, sums)
    box = [max(1, intervals[n][1] + 1) for n in names]
    holder = fresh_name("r", all_names(fn))
    first_error = None
    for extra in _contexts(fn):
        # within the sums' own bounds, which the box of each index's values may exceed (sum{k}_0^i reads x[i - k])
        condition = tuple(dict.fromkeys(_conditions_of(sums, intervals) + extra))
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


def _integer_rows(value, columns: int, what: str) -> list[list[int]]:
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


def _integer_vector(value, length: int | None, what: str) -> list[int]:
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise Wrong(f"{what} must be a list of integers, got {type_name(value)}")
    entries = list(value)
    if (length is not None and len(entries) != length) or not all(_integer(v) for v in entries):
        raise Wrong(f"{what} must be a list of {length if length is not None else 'some'} integers, got {value!r}")
    return [int(v) for v in entries]


# --- exercise 1: the reads, their index matrices and their box ----------------------------------------------------

def _read_entries(listed, fn: Function, names) -> list[tuple]:
    """The student's list as ``(read, alpha, A, a, R, r)`` with the read an Element of ``fn``; or a Wrong."""
    if isinstance(listed, (str, bytes, dict)) or not hasattr(listed, "__iter__"):
        raise Wrong(f"reads(fn) must return a list, one entry per read, got {type_name(listed)}")
    entries = []
    for item in listed:
        if isinstance(item, (str, bytes, dict)) or not hasattr(item, "__iter__") or len(list(item)) != 6:
            raise Wrong(f"each entry must be a tuple (text of the read, alpha, A, a, R, r), got {item!r}")
        text, alpha, A, a, R, r = item
        if isinstance(alpha, str) or not hasattr(alpha, "__iter__") or not all(isinstance(n, str) for n in alpha):
            raise Wrong(f"the alpha of {text!r} must be a tuple of index names (text), got {alpha!r}")
        alpha = tuple(alpha)
        read = _read_of(text, fn, names, "the read")
        A = _integer_rows(A, len(alpha), f"the A of {expr_text(read)}")
        a = _integer_vector(a, len(read.indices), f"the offset a of {expr_text(read)}")
        if len(A) != len(read.indices):
            raise Wrong(f"the A of {expr_text(read)} has {len(A)} rows; it has one per index of the read "
                        f"({len(read.indices)})")
        R = _integer_rows(R, len(alpha), f"the R of {expr_text(read)}")
        r = _integer_vector(r, len(R), f"the r of {expr_text(read)} (one entry per row of R)")
        entries.append((read, alpha, A, a, R, r))
    return entries


def _box_points(fn: Function, scope, alpha) -> tuple[list[tuple[int, ...]], set]:
    """The points of the box around the extended domain (2 more on each side) and the set of those inside it."""
    intervals = _intervals(fn, scope)
    R, r = extended_domain(fn, scope)[1:]
    ranges = [range(intervals[n][0] - 2, intervals[n][1] + 3) for n in alpha]
    points = list(itertools.product(*ranges))
    inside = {p for p in points if all(sum(c * v for c, v in zip(row, p)) >= b for row, b in zip(R, r))}
    return points, inside


def _geometry_problems(fn: Function, element: Element, scope, alpha, A, a, R, r) -> list[str]:
    read = expr_text(element)
    right_alpha = tuple(fn.indices) + tuple(s.index for s in scope)
    if tuple(alpha) != right_alpha:
        hint = ("the right names, but in another order: the output's indices first, then the sums' from the "
                "outermost in" if sorted(alpha) == sorted(right_alpha) else
                "alpha is the output's indices, then the index of every sum around the read, outermost first "
                "(sec. 5.2: Algorithm 4 liberates the sums)")
        return [f"the alpha of {read}, {tuple(alpha)}, is not its extended index: {hint}"]
    for row, (coefficients, constant, index) in enumerate(zip(A, a, element.indices)):
        if any(c != index.coefficient(n) for c, n in zip(coefficients, alpha)):
            return [f"row {row} of the A of {read} is not index {row} of the read: row r of A holds the "
                    f"coefficients of the names of alpha in index r (eq. 35, x[A alpha + a])"]
        if constant != index.constant:
            return [f"entry {row} of the offset a of {read} is not the constant of index {row} of the read"]
    points, inside = _box_points(fn, scope, alpha)
    for p in points:
        yours = all(sum(c * v for c, v in zip(row, p)) >= b for row, b in zip(R, r))
        if yours and p not in inside:
            return [f"your box R alpha >= r of {read} holds alpha = {p}, where no element of {fn.name} reads it: "
                    f"a bound is missing or too wide (a row for each end of each output index, eq. 42; one for "
                    f"every term of each sum's lower and upper bounds, eq. 52; a bound n / d rounds inwards, "
                    f"d k >= n)"]
        if not yours and p in inside:
            return [f"your box R alpha >= r of {read} leaves out alpha = {p}, which {fn.name} reads: a row is "
                    f"too narrow (an output index runs from 0 to its size - 1; a sum from the largest of its lower "
                    f"bounds to the smallest of its upper ones)"]
    return []


def _reads_problems(fn: Function, answer) -> list[str]:
    truth = Counter((element, tuple(fn.indices) + tuple(s.index for s in scope)) for element, scope in _scopes(fn))
    scopes = {element: scope for element, scope in _scopes(fn)}
    names = list(fn.indices) + [s.index for s in _all_sums(fn)]
    entries = _read_entries(_call(answer, "reads(fn)", fn), fn, names)
    yours = Counter((read, tuple(alpha)) for read, alpha, *_ in entries)
    for (read, alpha), count in yours.items():
        if read not in scopes:
            return [f"{fn.name} does not read {expr_text(read)}"]
        if (read, alpha) not in truth:
            continue  # the alpha is judged below
        if count > truth[read, alpha]:
            return [f"you list {expr_text(read)} more often than {fn.name} reads it: one entry per occurrence"]
    for read, alpha, A, a, R, r in entries:
        problems = _geometry_problems(fn, read, scopes[read], alpha, A, a, R, r)
        if problems:
            return problems
    if any(count > yours[key] for key, count in truth.items()):
        return ["your list misses reads: visit every child of every node (node.children()), the body of each sum, "
                "both branches of each if and the compared values of a select; a read written twice is listed "
                "twice"]
    return []


def check_reads(answer, functions=None) -> CheckResult:
    """Exercise 1: ``reads(fn)``, every read of the tree with its extended index, index matrix and box.

    The answer is a function of a :class:`~tensoradbook.Function` returning a list with one entry per occurrence of
    an :class:`~tensoradbook.lang.expr.Element` in ``fn.body`` (a read written twice is two entries), each a tuple
    ``(text of the read, alpha, A, a, R, r)``: ``alpha`` the extended index (the output's indices, then the indices
    of the sums around the read, outermost first: sec. 5.2), ``A`` and ``a`` the read's index matrix and offset
    (``x[A alpha + a]``, nested lists of ints) and ``R``, ``r`` the box ``R alpha >= r`` of the output's shape
    (eq. 42) and the sums' ranges (eq. 52), Algorithm 4's line 4. Any box with the same integer points passes.
    Tried on every function of ``functions`` (default :data:`FUNCTIONS`).
    """
    name = "reads(fn): every read with its extended index, index matrix and box"
    if answer is None:
        return pending(name, "Your answer is your function reads(fn), which returns a list of tuples (text of a "
                             "read, alpha, A, a, R, r), one per read.")
    tried = _functions(functions)
    failed = _first_failure(name, tried, lambda fn: _reads_problems(fn, answer))
    if failed is not None:
        return failed
    return CheckResult(name, True, note=f"Every read of all {len(tried)} functions, with its extended index, index "
                                        f"matrix and box (Algorithm 4, line 4).")


# --- exercise 2: reverse accumulation ------------------------------------------------------------------------------

def _reduction_headers(tokens: list) -> list[tuple[int, int, int]]:
    """``(position of the index, first and last position of the body)`` of each ``sum{k}`` / ``max{k}`` /
    ``min{k}`` among ``tokens`` (the non-space tokens as (kind, text) pairs); malformed ones are skipped."""
    def closing(i: int, opening: str, closer: str) -> int:
        depth = 0
        for j in range(i, len(tokens)):
            depth += (tokens[j][1] == opening) - (tokens[j][1] == closer)
            if depth == 0:
                return j
        return -1

    def after_bound(i: int) -> int:
        if i >= len(tokens):
            return -1
        kind, text = tokens[i]
        if text == "(":
            end = closing(i, "(", ")")
        elif text in ("max", "min") and i + 1 < len(tokens) and tokens[i + 1][1] == "[":
            end = closing(i + 1, "[", "]")
        elif text in ("ceil", "floor") and i + 1 < len(tokens) and tokens[i + 1][1] == "(":
            end = closing(i + 1, "(", ")")
        else:
            end = i if kind in ("name", "number") else -1
            if text == "-" and i + 1 < len(tokens) and tokens[i + 1][0] in ("name", "number"):
                end = i + 1
        return end + 1 if end >= 0 else -1

    headers = []
    for i, (_, text) in enumerate(tokens[:-5]):
        if text not in ("sum", "max", "min") or [t for _, t in tokens[i + 1:i + 5:2]] != ["{", "}"] \
                or tokens[i + 4][1] != "_":
            continue
        upper = after_bound(i + 5)
        if upper < 0 or upper >= len(tokens) or tokens[upper][1] != "^":
            continue
        body = after_bound(upper + 1)
        if body < 0 or body >= len(tokens) or tokens[body][1] != "(":
            continue
        end = closing(body, "(", ")")
        if end > 0:
            headers.append((i + 2, body, end))
    return headers


def _bound_apart(text: str, liberated, used: set) -> str:
    """``text`` with each sum over a liberated index renamed inside the sum.

    The adjoint of a read inside ``sum{k}`` depends on the liberated ``k`` (sec. 5.2) and may contain that very
    sum (``exp (-sum{k}_0^4 (...))`` in sec. 6); the parser refuses a sum index that shadows an index of the
    function, so the check reads ``sum{k_1}_0^4 (... k_1 ...)`` instead, which means the same. Text the
    tokens do not cover (a stray character) is left as it is, for the parser to point at.
    """
    matches = [m for m in TOKEN.finditer(text)]
    if sum(m.end() - m.start() for m in matches) != len(text):
        return text
    spans = [(m.start(), m.end()) for m in matches if m.lastgroup != "space"]
    tokens = [(m.lastgroup, m.group()) for m in matches if m.lastgroup != "space"]
    renamed = {}
    for where, first, last in _reduction_headers(tokens):
        index = tokens[where][1]
        if index not in liberated:
            continue
        fresh = fresh_name(index, used)
        renamed[where] = fresh
        renamed.update({j: fresh for j in range(first, last + 1) if tokens[j] == ("name", index)})
    for j in sorted(renamed, reverse=True):
        start, end = spans[j]
        text = text[:start] + renamed[j] + text[end:]
    return text


def _adjoint_reference(fn: Function, seed: Element):
    """Per read (the Element, one scope each): the sums around it, its adjoint, and the contributions of
    its consumers (eq. 2) and its adjoint for the seed 1, for the hints."""
    reads: dict = {}
    for element, scope in _scopes(fn):
        if reads.setdefault(element, scope) != scope:
            raise ValueError(f"{fn.name} reads {expr_text(element)} inside different sums: the exercise keys "
                             "the adjoints by the read alone")
    sweep = reverse_accumulate(fn.body, seed)
    unseeded = reverse_accumulate(fn.body, Number(1))
    adjoints = {occ.element: occ.adjoint for occ in sweep.occurrences}
    bare = {occ.element: occ.adjoint for occ in unseeded.occurrences}
    paths: dict = {}
    for step in sweep.steps:
        for child, contribution in step.contributions:
            if isinstance(child, Element):
                paths.setdefault(child, []).append(contribution)
    return {element: (scope, adjoints.get(element, ZERO), bare.get(element, ZERO), paths.get(element, []))
            for element, scope in reads.items()}


def _values_of(expr: Expr, alpha, shapes: dict, holder: str, box, values: dict, condition) -> np.ndarray:
    body = If(condition, expr, ZERO) if condition else expr
    return Function(holder, tuple(alpha), body, {**shapes, holder: tuple(box)}).evaluate(values)


def _close(got, right) -> np.ndarray:
    """Where ``got`` equals ``right`` to rounding, relative to the largest element of ``right`` alone (no floor of
    1): the values of sec. 6 are near 1e-8 (``exp`` of minus a sum of five terms), so an absolute tolerance would
    pass anything."""
    return close(got, right, floor=0.0)


def _constant_factor(got, right) -> float | None:
    """The one factor between ``got`` and ``right`` where ``right`` is not 0, if there is one (and ``got`` is 0
    where ``right`` is)."""
    got, right = np.asarray(got), np.asarray(right)
    nonzero = np.abs(right) > ATOL * float(np.abs(right).max(initial=0))
    if not nonzero.any() or np.abs(got[~nonzero]).max(initial=0) > ATOL * float(np.abs(right).max()):
        return None
    ratio = got[nonzero] / right[nonzero]
    return float(ratio[0]) if np.allclose(ratio, ratio[0], rtol=RTOL) else None


def _where(alpha, point) -> str:
    return ", ".join(f"{n} = {int(v)}" for n, v in zip(alpha, point)) or "the only element"


def _read_adjoints(given, fn: Function, names) -> dict:
    """The student's adjoints: read (an Element of ``fn``) -> the text of its adjoint; or a Wrong."""
    if not isinstance(given, dict):
        raise Wrong(f"adjoints(fn) must return a dict from the text of each read to the text of its "
                    f"adjoint, got {type_name(given)}")
    yours = {}
    for key, value in given.items():
        read = _read_of(key, fn, names, "the key")
        if read in yours:
            raise Wrong(f"two keys name the read {expr_text(read)}: give each read one entry, the sum of "
                        f"its paths (eq. 2)")
        yours[read] = _text(value, f"the adjoint of {expr_text(read)}")
    return yours


def _adjoint_problems(fn: Function, answer, trials: int, seed: int) -> list[str]:
    used = all_names(fn)
    adjoint_name = fresh_name("d" + fn.name, used)
    seed_element = Element(adjoint_name, tuple(Affine.index(i) for i in fn.indices))
    reference = _adjoint_reference(fn, seed_element)
    names = list(fn.indices) + [s.index for s in _all_sums(fn)]
    shapes_all = {**fn.shapes, adjoint_name: tuple(fn.shapes[fn.name])}
    holder = fresh_name("v", used)
    yours = _read_adjoints(_call(answer, "adjoints(fn)", fn), fn, names)
    problems = [f"no adjoint for the read {expr_text(e)}: every leaf of the tree gets one"
                for e, (_, adjoint, _, _) in reference.items() if e not in yours and adjoint != ZERO]
    rng = np.random.default_rng(seed)
    points = []
    for _ in range(trials):
        values = _inputs(fn, rng)
        values[adjoint_name] = rng.standard_normal(fn.shapes[fn.name])
        points.append(values)
    for element, text in yours.items():
        scope, adjoint, bare, paths = reference[element]
        read = expr_text(element)
        alpha = list(fn.indices) + [s.index for s in scope]
        box = _intervals(fn, scope)
        sizes = [box[n][1] + 1 for n in alpha]
        condition = _conditions_of(scope, box)
        wrapped = _bound_apart(text, {s.index for s in scope}, set(used) | set(alpha))
        if condition:
            wrapped = f"if {{{' and '.join(map(atom_text, condition))}}} then ({wrapped}) else (0)"
        try:
            mine = parse(f"{holder}[{'; '.join(alpha)}] = {wrapped}", {**shapes_all, holder: tuple(sizes)})
        except ExpressionError as error:
            indented = "\n".join("    " + line for line in str(error).splitlines())
            problems.append(f"your adjoint of {read} cannot be read (in the indices {', '.join(alpha) or 'none'}):"
                            f"\n{indented}")
            continue
        for values in points:
            right = _values_of(adjoint, alpha, shapes_all, holder, sizes, values, condition)
            got = mine.evaluate(values)
            agree = _close(got, right)
            if agree.all():
                continue
            point = tuple(np.argwhere(~agree)[0]) if np.ndim(right) else ()
            message = (f"the adjoint of {read} is not right: at {_where(alpha, point)} yours is "
                       f"{number_text(got[point])}")

            def same(expr, values=values):
                return _close(got, _values_of(expr, alpha, shapes_all, holder, sizes, values, condition)).all()

            if bare != ZERO and same(bare):
                message += (f": it leaves out the seed; the sweep starts with the adjoint "
                            f"{expr_text(seed_element)} at the root, not 1 (eq. 38)")
            elif len(paths) > 1 and any(same(path) for path in paths):
                message += (f": that is one path only; {fn.name} reads {read} {len(paths)} times and eq. 2 adds "
                            f"the adjoints of all its consumers")
            elif _close(got, -right).all():
                message += ": the sign is off (the local derivative of neg and of the right side of - is -1)"
            elif (factor := _constant_factor(got, right)) is not None:
                message += (f": every value is {number_text(factor)} times the right one, so a constant factor is "
                            f"off (a local derivative such as that of ** or *, or a path counted twice)")
            elif _close(np.where(np.abs(right) > 0, got, 0), right).all():
                message += (": it is right where the read gets an adjoint, but not 0 elsewhere: an if passes its "
                            "adjoint to the branch it takes, under its condition (to the other under the "
                            "condition's failure), and a select to the branch its comparison picks")
            else:
                message += (": check the local derivatives on the path from the root (eq. 1), that a sum "
                            "passes its adjoint to its body unchanged (sec. 5.2), and that an if or a select "
                            "passes it only to the branch taken")
            problems.append(message)
            break
    return problems


def check_adjoints(answer, functions=None, trials: int = 2, seed: int = 0) -> CheckResult:
    """Exercise 2: ``adjoints(fn)``, reverse accumulation (sec. 2, eqs. 1-3) over the expression tree of ``fn``.

    The answer is a function of a :class:`~tensoradbook.Function` returning a dict from the text of each read
    (``"d[i + k]"``) to the text of its adjoint: the sum over its consumers (eq. 2) of the consumer's adjoint
    times the local derivative (eq. 1), starting from the seed ``df[i; j]`` (``d`` and the function's name,
    indexed by its output indices: the adjoint of eqs. 36-38) at the root. A sum passes its adjoint to its
    body unchanged, and the sum's index becomes free (sec. 5.2), so an adjoint is a function of the extended
    index; an ``if`` on indices passes it to the branch taken, under its condition, and a select on values to the
    branch its comparison picks (the compared values get nothing). A read written twice gets one entry, the sum of
    both paths; a read whose adjoint is 0 may be left out. Each adjoint is evaluated at every extended index on
    ``trials`` random inputs of either sign against the core's sweep, for every function of ``functions`` (default
    :data:`FUNCTIONS`). Typical slips get their own hint: the seed left out, one path of two, a sign, a branch.
    """
    name = "adjoints(fn): reverse accumulation over the tree"
    if answer is None:
        return pending(name, "Your answer is your function adjoints(fn), which returns a dict from the text of "
                             "each read to the text of its adjoint (the seed is d<name>[<output indices>]).")
    tried = _functions(functions)
    failed = _first_failure(name, tried, lambda fn: _adjoint_problems(fn, answer, trials, seed))
    if failed is not None:
        return failed
    return verdict(name, [], note=f"Your adjoints agree with the reverse sweep on all {len(tried)} functions, on "
                                  f"{trials} random inputs, at every extended index.")

# --- exercise 3: the index solve ---------------------------------------------------------------------------------

#: The index matrices of exercise 3: the reads of sec. 6 over alpha = (i, j, k), a[i; k], b[j; k], c[i; i] and
#: d[i + k]; figs. 3 and 4; invariant factors above 1 (2 i + 4 j + 6 k, a diagonal, chapter 04a's [[6, 4], [4, 6]],
#: [[2, 4], [6, 8]]); 4 i + j; a unimodular matrix; gcd 1 without a unit entry (6 i + 10 j + 15 k, 3 i + 5 j + 7 k);
#: a zero row; rows that depend on each other; and a scalar argument read over (i, j) (no rows).
INDEX_MATRICES = (
    [[1, 0, 0], [0, 0, 1]], [[0, 1, 0], [0, 0, 1]], [[1, 0, 0], [1, 0, 0]], [[1, 0, 1]],
    [[1, -2]], [[1, -2, -2]], [[2, 4, 6]], [[2, 0], [0, 3]], [[6, 4], [4, 6]], [[2, 4], [6, 8]], [[4, 1]],
    [[1, 1, 0], [0, 1, 1]], [[2, 1], [1, 1]], [[6, 10, 15]], [[3, 5, 7]], [[0, 0, 0]], [[1, 2, 3], [2, 4, 6]],
    np.zeros((0, 2), dtype=np.int64),
)


def _exact(value, what: str, integer: bool = False) -> sympy.Matrix:
    if isinstance(value, np.ndarray) and value.dtype == object:
        raise Wrong(f"{what} is a numpy array of Python objects, which cannot be graded; return nested "
                     f"lists: {what}.tolist()")
    try:
        M = as_rational_matrix(value, what)
    except ValueError as err:
        hint = " (use fractions.Fraction for an exact fraction)" if "float" in str(err) else ""
        raise Wrong(f"{err}{hint}") from None
    if integer and any(isinstance(v, Fraction) and v.denominator != 1 for v in M.flat):
        raise Wrong(f"{what} must be an integer matrix (a lattice basis has integer columns)")
    return sympy.Matrix(M.shape[0], M.shape[1], [sympy.Rational(v.numerator, v.denominator)
                                                  if isinstance(v, Fraction) else v for v in M.flat])


def _index_solve_problems(A: np.ndarray, triple) -> list[str]:
    """What is wrong with ``(I, K, C)`` for the integer matrix ``A`` (N x M, rank R); empty when nothing is."""
    N, M = A.shape
    exact = sympy.Matrix(N, M, [int(v) for v in A.flat])
    R = exact.rank()
    if not isinstance(triple, (tuple, list)) or len(triple) != 3:
        return [f"index_solve(A) must return a triple (I, K, C), got {type_name(triple)}"]
    I, K, C = (_exact(v, w, integer=(w == "K")) for v, w in zip(triple, ("I", "K", "C")))
    if N == 0 and not I:  # a list of no rows cannot say that I is M x 0
        I = sympy.zeros(M, 0)
    if I.shape != (M, N):
        return [f"I is {I.shape[0]}x{I.shape[1]}, but it maps beta ({N} entries) to alpha ({M} entries), so it "
                f"has {M} rows and {N} columns"]
    problems = []
    if exact * I * exact != exact:
        problems.append("A I A is not A: I is not a pseudo-inverse of A (eqs. 18-19: solve S alpha' = U b for the "
                        "rows that S does not zero, and go back from alpha' to alpha)")
    elif any(not v.is_integer for v in I * exact):
        problems.append("A I A = A, but I A is not an integer matrix: I is a pseudo-inverse, not the one of the "
                        "Smith normal form, and for some beta with integer solutions I beta is fractional (eq. 17 "
                        "would wrongly find none); build it from the unimodular U and V (eq. 18)")
    problems += _kernel_problems(A, exact, K, M - R)
    if C.shape[0] and C.shape[1] != N:
        problems.append(f"C has {C.shape[1]} columns; it acts on beta, which has {N} entries")
    elif C.shape[0] != N - R:
        problems.append(f"C has {C.shape[0]} rows, but there are N - R conditions C beta = 0 (eq. 16), N the "
                        f"entries of beta and R the rank (the non-zero entries of S)")
    elif C.shape[0] and any(C * exact):
        problems.append("C A is not 0: a row of C does not vanish on the image of A, so C beta = 0 fails for "
                        "some beta that has solutions (eq. 16: which rows of S alpha' = U b ask something of b alone?)")
    elif C.shape[0] and C.rank() != N - R:
        problems.append("the rows of C are linearly dependent: C beta = 0 then lets through beta that have no "
                        "solution")
    return problems


def _kernel_problems(A: np.ndarray, exact: sympy.Matrix, K: sympy.Matrix, dimension: int) -> list[str]:
    """What is wrong with ``K`` as a basis of the lattice ``{alpha integer: A alpha = 0}`` of ``dimension``."""
    M = A.shape[1]
    if not K.shape[1]:
        return [] if dimension == 0 else [
            "K has no columns, but A alpha = 0 has solutions other than 0: which entries of alpha' does "
            "S alpha' = 0 leave free?"]
    if K.shape[0] != M:
        return [f"K has {K.shape[0]} rows; its columns are solutions alpha of A alpha = 0, with {M} entries"]
    image = exact * K
    for column in range(K.shape[1]):
        if any(image[:, column]):
            return [f"column {column} of K is not in the kernel: A K[:, {column}] = {tuple(image[:, column])}"]
    if K.shape[1] != dimension:
        return [f"K has {K.shape[1]} columns, but the kernel has dimension M - R (M entries of alpha, R the rank: "
                f"the non-zero entries of S)"]
    # any basis of the kernel lattice is V[:, R:] W with W unimodular (the core's coordinates W, exactly)
    W = integer_inverse(A.astype(object)).kernel_coordinates(np.array(K.tolist(), dtype=object).reshape(K.shape))
    index = abs(int(sympy.Matrix(W.tolist()).det()))
    if index == 0:
        return ["the columns of K are linearly dependent"]
    if index != 1:
        return [f"the columns of K span only a sublattice of index {index} of the integer kernel: some integer "
                f"solutions of A alpha = 0 are not integer combinations of them (take the columns of the "
                f"unimodular V, not a rational basis)"]
    return []


def check_index_solve(answer, matrices=None) -> CheckResult:
    """Exercise 3: ``index_solve(A)``, the integer pseudo-inverse, kernel and cokernel of ``A`` (sec. 4.1).

    The answer is a function of an integer matrix ``A`` (N x M; it gets a numpy integer array) returning
    ``(I, K, C)`` as nested lists of ints and Fractions, worked out from the Smith normal form ``S = U A V``
    (eq. 12; :func:`tensoradbook.smith_normal_form`, called once). Any right triple passes, judged by what makes
    it right: ``A I A = A`` with ``I A`` integral (so
    ``I beta`` is integral exactly where an integer solution exists, eq. 17), ``K`` a basis of the lattice of
    integer solutions of ``A alpha = 0``, and ``C`` with N - R independent rows and ``C A = 0`` (so
    ``C beta = 0`` exactly on the image). Tried on each of ``matrices`` (default :data:`INDEX_MATRICES`).
    """
    name = "index_solve(A): the pseudo-inverse I, kernel K and cokernel C"
    if answer is None:
        return pending(name, "Your answer is your function index_solve(A), which returns (I, K, C) as nested "
                              "lists (Fractions where needed).")
    matrices = INDEX_MATRICES if matrices is None else matrices
    for matrix in matrices:
        A = np.array(matrix, dtype=np.int64)
        shown = f"A = {A.tolist()}" if A.shape[0] else f"A with no rows and {A.shape[1]} columns (a scalar argument)"
        try:
            problems = _index_solve_problems(A, _call(answer, "index_solve(A)", A))
        except Wrong as err:
            problems = [str(err)]
        if problems:
            return CheckResult(name, False, [f"for {shown}: {problems[0]}"] + problems[1:])
    return CheckResult(name, True, note=f"Right for all {len(matrices)} matrices: A I A = A with I A integral, K a "
                                        f"lattice basis of the kernel, C the conditions of the image.")


# --- exercise 4: the solutions in the box -------------------------------------------------------------------


# --- exercise 4: Fourier-Motzkin elimination ----------------------------------------------------------------------

#: The systems ``M z >= b`` of exercise 4, each from the loops of a gradient sum (``M = R K``, eq. 42-44): the read
#: d[i + k] of sec. 6; c[i; i], whose box has rows without z (eq. 34 must carry them); fig. 4's A = (1 -2 -2); a
#: stride (x[2 i + k]: coefficients 2, bounds with a denominator); an empty kernel (x[i]: no variable at all, every
#: row a condition); a padded convolution x[n; i + p; j + q] (three variables, rows without z); i + j + k; a sum
#: whose bound moves (sum{k}_0^i); and three variables bound together with coefficients 2 and 3.
SYSTEMS = (
    [[0, -1], [0, 1], [1, 0], [-1, 0], [0, 1], [0, -1]],
    [[0, 0], [0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]],
    [[2, 2], [-2, -2], [1, 0], [-1, 0], [0, 1], [0, -1]],
    [[1], [-1], [-2], [2]],
    [[], []],
    [[0, 0, 0], [0, 0, 0], [1, 0, 0], [-1, 0, 0], [0, -1, 0], [0, 1, 0], [0, 0, -1], [0, 0, 1], [0, 1, 0],
     [0, -1, 0], [0, 0, 1], [0, 0, -1]],
    [[-1, -1], [1, 1], [1, 0], [-1, 0], [0, 1], [0, -1]],
    [[1], [-1], [1], [-1], [0]],
    [[1, 0, 0], [0, 1, 0], [0, 0, 1], [-1, -1, -2], [2, -1, 0], [-1, 3, -1]],
)
#: Right sides tried per system: random integers (feasible and not) in this range, inclusive.
RIGHT_SIDES, RIGHT_SIDE_RANGE = 40, (-6, 2)


def _right_sides(rows: int, seed: int = 0) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    low, high = RIGHT_SIDE_RANGE
    return [[int(v) for v in rng.integers(low, high + 1, rows)] for _ in range(RIGHT_SIDES)]


def _rational(value) -> Fraction | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, np.integer)):
        return Fraction(int(value))
    if isinstance(value, Fraction):
        return value
    return None


def _rows(value, length: int, what: str) -> list[list[Fraction]]:
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise Wrong(f"{what} is a numpy array of Python objects, which cannot be graded; return nested lists: "
                        f"{what}.tolist()")
        value = value.tolist()
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise Wrong(f"{what} must be a list of rows, got {type_name(value)}")
    out = []
    for row in value:
        if isinstance(row, (str, bytes, dict)) or not hasattr(row, "__iter__"):
            raise Wrong(f"{what} must be a list of rows (lists of numbers), got a row {row!r}")
        entries = [_rational(v) for v in row]
        if len(entries) != length or any(v is None for v in entries):
            hint = " (use fractions.Fraction for an exact fraction)" if any(isinstance(v, float) for v in row) else ""
            raise Wrong(f"each row of {what} must hold {length} integers or Fractions, got {row!r}{hint}")
        out.append(entries)
    return out


def _elimination(result, N: int, kappa: int) -> tuple[list, list]:
    """The student's ``(bounds, F)`` read and checked for form; or a Wrong."""
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        raise Wrong(f"eliminate(M) must return a pair (bounds, F), got {type_name(result)}")
    bounds, F = result
    if isinstance(bounds, (str, bytes, dict)) or not hasattr(bounds, "__iter__"):
        raise Wrong(f"bounds must be a list with one pair (lower, upper) per variable, got {type_name(bounds)}")
    bounds = list(bounds)
    if len(bounds) != kappa:
        raise Wrong(f"bounds has {len(bounds)} entries, but M z >= b has {kappa} variables z_0 .. z_{kappa - 1}: "
                    f"one pair (lower, upper) per variable, z_0 first")
    read = []
    for k, pair in enumerate(bounds):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise Wrong(f"bounds[{k}] must be a pair (lower, upper) of lists of rows, got {type_name(pair)}"
                        f"{f' of {len(pair)}' if isinstance(pair, (tuple, list)) else ''}")
        sides = [_rows(side, N + kappa, f"bounds[{k}][{n}]") for n, side in enumerate(pair)]
        for side, word in zip(sides, ("lower", "upper")):
            if not side:
                raise Wrong(f"z_{k} has no {word} bound: every variable of these systems is bounded on both "
                            f"sides (a row whose coefficient of z_k is positive bounds it below, negative above)")
            if any(row[N + j] for row in side for j in range(k + 1)):
                raise Wrong(f"one of the {word} bounds of z_{k} names z_{k} or a variable before it: the bounds of "
                            f"z_k may name only b and the later variables z_(k+1) .. z_(kappa-1), which the loops "
                            f"outside it have fixed (z_(kappa-1) is the outermost loop)")
        read.append(tuple(sides))
    return read, _rows(F, N, "F")


def _bound_value(row, b, z, N) -> Fraction:
    return sum((c * v for c, v in zip(row[:N], b)), Fraction(0)) + sum((c * v for c, v in zip(row[N:], z)), Fraction(0))


def _loop_points(bounds, F, b, kappa: int, budget: int) -> list[tuple[int, ...]] | None:
    """The points the loops visit for the right side ``b`` (none where a row of F says ``F b > 0``), or None past
    ``budget`` iterations."""
    N = len(b)
    if any(sum(f * v for f, v in zip(row, b)) > 0 for row in F):
        return []
    points, steps = [], 0
    z = [0] * kappa

    def loop(k: int) -> bool:
        nonlocal steps
        if k < 0:
            points.append(tuple(z))
            return True
        lower, upper = bounds[k]
        low = max(math.ceil(_bound_value(row, b, z, N)) for row in lower)
        high = min(math.floor(_bound_value(row, b, z, N)) for row in upper)
        for value in range(low, high + 1):
            steps += 1
            if steps > budget:
                return False
            z[k] = value
            if not loop(k - 1):
                return False
        z[k] = 0
        return True

    return points if loop(kappa - 1) else None


def _system_problems(M: list, answer, seed: int) -> list[str]:
    N, kappa = len(M), (len(M[0]) if M else 0)
    matrix = np.array(M, dtype=object).reshape(N, kappa)
    truth_system = fourier_motzkin(matrix)
    bs = _right_sides(N, seed)
    truths = [sorted(truth_system.integer_points(b)) for b in bs]
    bounds, F = _elimination(_call(answer, "eliminate(M)", [list(row) for row in M]), N, kappa)
    for b, truth in zip(bs, truths):
        points = _loop_points(bounds, F, b, kappa, budget=50 * (len(truth) + 20))
        if points is None:
            return [f"for b = {b} your loops run far longer than M z >= b has points: a bound is too loose"]
        if len(set(points)) != len(points):
            return [f"for b = {b} your loops visit a point twice"]
        outside = [p for p in points if p not in set(truth)]
        if outside:
            p = outside[0]
            failed = next(n for n, row in enumerate(M) if sum(c * v for c, v in zip(row, p)) < b[n])
            if not any(M[failed]):
                return [f"for b = {b} M z >= b has no solution (row {failed} has no z and asks 0 >= {b[failed]}), "
                        f"but your loops visit z = {p}: that row is a condition on b alone, which F must carry "
                        f"(eq. 34: what is left when every variable is eliminated)"]
            return [f"for b = {b} your loops visit z = {p}, which fails row {failed} of M z >= b: a bound is too "
                    f"loose (a row bounds z_k by itself divided by its coefficient; an upper bound rounds down, a "
                    f"lower one up) or F lets through a b without solutions"]
        if len(points) < len(truth):
            if not points and truth and any(sum(f * v for f, v in zip(row, b)) > 0 for row in F):
                return [f"for b = {b} your F rules out b (F b <= 0 fails), but M z >= b has integer solutions: a "
                        f"row of F is not a consequence of M z >= b"]
            return [f"for b = {b} your loops miss integer points of M z >= b: a bound is too tight (each pair of "
                    f"a lower and an upper bound of z_k gives a row of the next system; the rows without z_k go on "
                    f"unchanged)"]
    return []


def check_box_solutions(answer, systems=None, seed: int = 0) -> CheckResult:
    """Exercise 4: ``eliminate(M)``, Fourier-Motzkin elimination (sec. 4.2, Algorithm 3) of ``M z >= b``, ``b``
    symbolic: the loops of eq. 45 over the solutions in the box, and the conditions on ``b`` of eq. 34.

    The answer is a function of ``M`` (a list of N rows of kappa integers; kappa may be 0) returning ``(bounds, F)``:
    ``bounds[k] = (lower, upper)`` for ``z_k``, each a list of rows ``w`` of N + kappa numbers (ints or Fractions)
    meaning the bound ``w[:N] . b + w[N:] . z``, which names only the later variables (the entries for ``z_0`` ..
    ``z_k`` are 0); ``z_k`` runs from the ceiling of the largest lower bound to the floor of the smallest upper
    one, ``z_(kappa-1)`` outermost (eq. 45). ``F``: rows of N numbers, the conditions ``F b <= 0`` (eq. 34). For
    each system of ``systems`` (default :data:`SYSTEMS`) and :data:`RIGHT_SIDES` integer right sides (drawn with
    ``seed``), the points
    the loops visit (none where ``F b <= 0`` fails) must be exactly the integer solutions, each once; the check
    walks the loops itself and stops them when they run far longer than there are points.
    """
    name = "eliminate(M): Fourier-Motzkin loops over the solutions of M z >= b"
    if answer is None:
        return pending(name, "Your answer is your function eliminate(M), which returns (bounds, F): a pair (lower "
                             "rows, upper rows) per variable, and the rows of F b <= 0.")
    systems = SYSTEMS if systems is None else systems
    for M in systems:
        M = [list(row) for row in M]
        try:
            problems = _system_problems(M, answer, seed)
        except Wrong as err:
            problems = [str(err)]
        if problems:
            return CheckResult(name, False, [f"for M = {M}: {problems[0]}"] + problems[1:])
    return CheckResult(name, True, note=f"Your loops visit exactly the integer solutions of all {len(systems)} "
                                        f"systems, each for {RIGHT_SIDES} right sides b.")


# --- exercise 5: Algorithm 4; exercise 6: a program ---------------------------------------------------------------

class _TooMany(Exception):
    pass


def _terms(fn: Function, budget: int) -> int | None:
    """How many sum terms evaluating ``fn`` at every element of its output visits: an index condition's branch that
    is not taken is not visited, both branches of a select are. None past ``budget``."""
    count = 0

    def visit(node: Expr, env: dict) -> None:
        nonlocal count
        if isinstance(node, Sum):
            low = max(-((-a.numerator.evaluate(env)) // a.denominator) for a in node.lower)
            high = min(a.numerator.evaluate(env) // a.denominator for a in node.upper)
            for value in range(low, high + 1):
                count += 1
                if count > budget:
                    raise _TooMany
                visit(node.body, {**env, node.index: value})
        elif isinstance(node, If):
            visit(node.then if all(atom.holds(env) for atom in node.condition) else node.otherwise, env)
        else:
            for child in node.children():
                visit(child, env)

    try:
        for beta in itertools.product(*(range(n) for n in fn.shapes[fn.name])):
            visit(fn.body, dict(zip(fn.indices, beta)))
    except _TooMany:
        return None
    return count


#: A gradient may visit this many times the sum terms of the library's (plus :data:`TERMS_SLACK`): its loops may
#: differ (a loop of one term the library substitutes, a condition inside a sum), but not run over the whole box.
TERMS_FACTOR, TERMS_SLACK = 4, 100


def _gradient_problems(label: str, argument: str, fn_name: str, yours: np.ndarray, right: np.ndarray) -> list[str]:
    """What is wrong where ``yours`` differs from ``right``, the most telling first; never a right value."""
    zero_atol = ATOL * max(float(np.abs(right).max(initial=0)), np.finfo(float).tiny)
    return element_problems(
        label, yours, right, _close(yours, right), zero_atol,
        lambda b: f"no element of {fn_name} reads {argument}{index_text(b)}",
        "a condition is missing: C (beta - a) = 0 (eq. 16), I (beta - a) integral (eq. 41, which the report's "
        "eq. 46 drops), or a row of eq. 34 on beta alone",
        hint="check the substitution alpha = I (beta - a) + K z into the read's adjoint (eq. 47) and the bounds "
             "of the sums over z (eq. 45)")


def _function_problems(fn: Function, answer, trials: int, seed: int) -> list[str]:
    grads = derive(fn)
    rng = np.random.default_rng(seed)
    points = []
    for _ in range(trials):
        values = _inputs(fn, rng)
        values[grads.adjoint_name] = rng.standard_normal(fn.shapes[fn.name])
        points.append(values)
    for argument in fn.arguments:
        truth = grads[argument]
        gradient = "d" + argument
        accepted = dict.fromkeys([gradient, truth.name])
        answer_shapes = {**truth.shapes, **{n: tuple(fn.shapes[argument]) for n in accepted}}
        result = _call(answer, f"gradient(fn, {argument!r})", fn, argument)
        if isinstance(result, Function):
            result = str(result)
        text = _text(result, f"gradient(fn, {argument!r})'s result")
        defined = re.match(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*\[", text)
        if defined and defined.group(1) not in accepted:
            raise Wrong(f"your gradient of {argument} defines {defined.group(1)!r}; call it {gradient!r} "
                        f"({gradient}[...] = ...)")
        try:
            mine = parse(text, answer_shapes)
        except ExpressionError as error:
            indented = "\n".join("    " + line for line in str(error).splitlines())
            if "leaves" in str(error) and grads.adjoint_name in str(error).split("leaves")[0]:
                return [f"your gradient {gradient} cannot be read: it reads {grads.adjoint_name} outside its "
                        f"shape where no alpha of the box reads {argument}[beta] (a condition of eq. 34 on beta "
                        f"alone is missing, or a bound of a sum over z):\n{indented}"]
            if "is not an integer" in str(error):
                return [f"your gradient {gradient} cannot be read: it divides an index where the division is not "
                        f"exact, at beta that no integer alpha reads (the condition that I (beta - a) is integral "
                        f"is missing: eq. 41 has it, the report's eq. 46 drops it):\n{indented}"]
            return [f"your gradient {gradient} cannot be read:\n{indented}"]
        if not isinstance(mine, Function):
            raise Wrong("your gradient must be one definition, \"name[indices] = expression\"")
        limit = TERMS_FACTOR * _terms(truth, 10**9) + TERMS_SLACK
        if _terms(mine, limit) is None:
            return [f"your {gradient} visits more than {TERMS_FACTOR} times as many sum terms as Algorithm 4 "
                    f"needs: its sums run over every alpha of the box and test each one (eq. 40), where Algorithm 4 "
                    f"loops over the solutions of A alpha + a = beta alone (eqs. 41-45)"]
        for values in points:
            right = truth.evaluate(values)
            yours = mine.evaluate(values)
            if not _close(yours, right).all():
                return _gradient_problems(gradient, argument, fn.name, yours, right)
    return []


def _program_problems(program: Program, answer, seed: int) -> tuple[list[str], int]:
    """What is wrong with ``backprop(program, values)``; and at how many entries central differences agreed."""
    rng = np.random.default_rng(seed)
    values = {name: rng.standard_normal(program.shapes[name]) for name in program.arguments}
    right = derive(program).evaluate(values, 1.0)
    result = _call(answer, "backprop(program, values)", program, {k: v.copy() for k, v in values.items()})
    if not isinstance(result, dict):
        raise Wrong(f"backprop(program, values) must return a dict from each input's name to its gradient (an "
                    f"array of the input's shape), got {type_name(result)}")
    output, yours = program.name, {}
    for name in program.arguments:
        if name not in result:
            return [f"no gradient for the input {name}: every input of the program gets one (d{output} / d{name})"], 0
        try:
            got = np.asarray(result[name], dtype=float)
        except (TypeError, ValueError):
            return [f"the gradient of {name} must be an array of numbers, got {type_name(result[name])}"], 0
        if got.shape != tuple(program.shapes[name]):
            return [f"the gradient of {name} has shape {got.shape}; {name} has shape {tuple(program.shapes[name])}"], 0
        yours[name] = got
        scale = max(float(np.abs(right[name]).max(initial=0)), np.finfo(float).tiny)
        if not np.allclose(got, right[name], rtol=1e-9, atol=1e-12 * scale):
            problems = element_problems(
                "d" + name, got, right[name], np.isclose(got, right[name], rtol=1e-9, atol=1e-12 * scale),
                1e-12 * scale, lambda b, name=name: f"{output} does not depend on {name}{index_text(b)}",
                "something flows where nothing should",
                hint=f"follow {name} to {output}: the gradient of each definition that reads it (your exercise 5), "
                     f"the adjoint of each definition the sum of what its readers pass back (eq. 2), and the seed "
                     f"d{output} = 1")
            return [f"the gradient of {output} with respect to {name} is not exact: {problems[0]}"] + problems[1:], 0
    # the exact gradient agrees with central differences: a few entries of each input, the student's values
    checked = 0
    for name in program.arguments:
        for flat in rng.choice(int(np.prod(program.shapes[name], dtype=int)), size=2, replace=False):
            index = np.unravel_index(int(flat), program.shapes[name])
            moved = []
            for step in (1e-6, -1e-6):
                shifted = {k: v.copy() for k, v in values.items()}
                shifted[name][index] += step
                moved.append(float(program.evaluate(shifted)))
            numeric = (moved[0] - moved[1]) / 2e-6
            if abs(numeric - float(yours[name][index])) > 1e-5 * max(1.0, abs(numeric)):
                return [f"the gradient of {name} at {index_text(index)} disagrees with central differences "
                        f"(yours is {number_text(float(yours[name][index]))})"], checked
            checked += 1
    return [], checked


def check_algorithm4(answer, functions=None, trials: int = 3, seed: int = 0) -> CheckResult:
    """Exercise 5: ``gradient(fn, argument)``, Algorithm 4 (sec. 5) built from the pieces of exercises 1-4; exercise
    6, given a program: ``backprop(program, values)``.

    For a function the answer is a function of a :class:`~tensoradbook.Function` and an argument's name returning
    the gradient ``dx`` of ``sum(df * f)`` as text in the report's notation, ``"dx[...] = ..."`` (or a Function):
    for each read ``x[A alpha + a]`` (line 3: its adjoint, by reverse accumulation; line 4: the box
    ``R alpha >= r``; lines 5-7: I, K, C; lines 8-9: Fourier-Motzkin on ``R K z >= r - R I (beta - a)``), the sums
    over ``z`` of the adjoint at ``alpha = I (beta - a) + K z`` under the conditions ``C (beta - a) = 0``,
    ``I (beta - a)`` integral (eq. 41; the report's eq. 46 drops it, and with it Algorithm 4's line 10) and those
    of eq. 34 on ``beta`` alone. Any way of writing it passes: it is parsed and evaluated at every element on
    ``trials`` random inputs and random ``df`` against :func:`tensoradbook.derive`, for every argument of every
    function of ``functions`` (default :data:`FUNCTIONS`); it is refused where its sums visit many times the terms
    of Algorithm 4's (the whole box of eq. 40).

    For a :class:`~tensoradbook.Program` (chapter 11's network), the answer is a function of the program and a dict
    of input values returning the gradient of the program's scalar value with respect to every input (a dict of
    arrays): reverse accumulation across the definitions with the student's gradient for each. It must equal the
    exact gradient to rounding, and agree with central differences at a few entries of every input.
    """
    programs = isinstance(functions, Program) or (isinstance(functions, (list, tuple)) and functions and
                                                  all(isinstance(p, Program) for p in functions))
    name = ("backprop(program, values): the gradient of a program by your engine" if programs else
            "gradient(fn, argument): Algorithm 4")
    if answer is None:
        return pending(name, "Your answer is your function backprop(program, values), which returns a dict from "
                             "each input's name to its gradient." if programs else
                       "Your answer is your function gradient(fn, argument), which returns the text "
                       "\"d<argument>[...] = ...\" (the adjoint of fn is d<name of fn>).")
    if programs:
        tried = [functions] if isinstance(functions, Program) else list(functions)
        checked = 0
        for program in tried:
            try:
                problems, n = _program_problems(program, answer, seed)
            except Wrong as err:
                problems, n = [str(err)], 0
            if problems:
                return CheckResult(name, False, [f"for the program ending in {program.name}: {problems[0]}"] +
                                   problems[1:])
            checked += n
        return CheckResult(name, True, note=f"Your engine's gradient of every input equals the exact one to rounding, "
                                            f"and central differences agree at {checked} entries.")
    tried = _functions(functions)
    failed = _first_failure(name, tried, lambda fn: _function_problems(fn, answer, trials, seed))
    if failed is not None:
        return failed
    return CheckResult(name, True, note=f"Your gradients agree with tab.derive at every element of every argument of "
                                        f"all {len(tried)} functions, on {trials} random inputs.")

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

import functools
import itertools
from collections import Counter

import numpy as np

from ..ad.derive import extended_domain
from ..ad.reverse import reverse_accumulate
from ..lang.expr import Affine, Element, ExpressionError, Expr, If, Number
from ..lang.function import Function
from ..lang.names import all_names, fresh_name
from ..lang.parser import parse
from ..lang.printer import atom_text, expr_text
from ..lang.simplify import ZERO
from ..lang.tokens import TOKEN
from .checking import ATOL, RTOL, Wrong, pending, type_name, verdict
from .feedback import CheckResult, number_text

from .ch12_solve import INDEX_MATRICES, SYSTEMS, check_algorithm4, check_box_solutions, check_index_solve
from .ch12_support import (
    FUNCTIONS,
    LibraryOff,
    all_sums,
    answer_text,
    call_answer,
    close_to,
    conditions_of,
    first_failure,
    functions_tried,
    integer_rows,
    integer_vector,
    library_off,
    random_inputs,
    read_of,
    read_scopes,
    sum_intervals,
)

__all__ = ["FUNCTIONS", "INDEX_MATRICES", "SYSTEMS", "LibraryOff", "check_adjoints", "check_algorithm4",
           "check_box_solutions", "check_index_solve", "check_reads", "library_off"]


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
        read = read_of(text, fn, names, "the read")
        A = integer_rows(A, len(alpha), f"the A of {expr_text(read)}")
        a = integer_vector(a, len(read.indices), f"the offset a of {expr_text(read)}")
        if len(A) != len(read.indices):
            raise Wrong(f"the A of {expr_text(read)} has {len(A)} rows; it has one per index of the read "
                        f"({len(read.indices)})")
        R = integer_rows(R, len(alpha), f"the R of {expr_text(read)}")
        r = integer_vector(r, len(R), f"the r of {expr_text(read)} (one entry per row of R)")
        entries.append((read, alpha, A, a, R, r))
    return entries


def _box_points(fn: Function, scope, alpha) -> tuple[list[tuple[int, ...]], set]:
    """The points of the box around the extended domain (2 more on each side) and the set of those inside it."""
    intervals = sum_intervals(fn, scope)
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
    truth = Counter((element, tuple(fn.indices) + tuple(s.index for s in scope)) for element, scope in read_scopes(fn))
    scopes = {element: scope for element, scope in read_scopes(fn)}
    names = list(fn.indices) + [s.index for s in all_sums(fn)]
    entries = _read_entries(call_answer(answer, "reads(fn)", fn), fn, names)
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
    tried = functions_tried(functions)
    failed = first_failure(name, tried, lambda fn: _reads_problems(fn, answer))
    if failed is not None:
        return failed
    return CheckResult(name, True, note=f"Every read of all {len(tried)} functions, with its extended index, index "
                                        f"matrix and box (Algorithm 4, line 4).")


# --- exercise 2: reverse accumulation ------------------------------------------------------------------------------

def _closing(tokens: list, i: int, opening: str, closer: str) -> int:
    """The position of the bracket that closes the one at ``i``, or -1."""
    depth = 0
    for j in range(i, len(tokens)):
        depth += (tokens[j][1] == opening) - (tokens[j][1] == closer)
        if depth == 0:
            return j
    return -1


def _after_bound(tokens: list, i: int) -> int:
    """The position after the sum bound that starts at ``i``, or -1 where none does."""
    if i >= len(tokens):
        return -1
    kind, text = tokens[i]
    if text == "(":
        end = _closing(tokens, i, "(", ")")
    elif text in ("max", "min") and i + 1 < len(tokens) and tokens[i + 1][1] == "[":
        end = _closing(tokens, i + 1, "[", "]")
    elif text in ("ceil", "floor") and i + 1 < len(tokens) and tokens[i + 1][1] == "(":
        end = _closing(tokens, i + 1, "(", ")")
    else:
        end = i if kind in ("name", "number") else -1
        if text == "-" and i + 1 < len(tokens) and tokens[i + 1][0] in ("name", "number"):
            end = i + 1
    return end + 1 if end >= 0 else -1


def _reduction_headers(tokens: list) -> list[tuple[int, int, int]]:
    """``(position of the index, first and last position of the body)`` of each ``sum{k}`` / ``max{k}`` /
    ``min{k}`` among ``tokens`` (the non-space tokens as (kind, text) pairs); malformed ones are skipped."""
    headers = []
    for i, (_, text) in enumerate(tokens[:-5]):
        if text not in ("sum", "max", "min") or [t for _, t in tokens[i + 1:i + 5:2]] != ["{", "}"] \
                or tokens[i + 4][1] != "_":
            continue
        upper = _after_bound(tokens, i + 5)
        if upper < 0 or upper >= len(tokens) or tokens[upper][1] != "^":
            continue
        body = _after_bound(tokens, upper + 1)
        if body < 0 or body >= len(tokens) or tokens[body][1] != "(":
            continue
        end = _closing(tokens, body, "(", ")")
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
    for element, scope in read_scopes(fn):
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
        read = read_of(key, fn, names, "the key")
        if read in yours:
            raise Wrong(f"two keys name the read {expr_text(read)}: give each read one entry, the sum of "
                        f"its paths (eq. 2)")
        yours[read] = answer_text(value, f"the adjoint of {expr_text(read)}")
    return yours


def _adjoint_problems(fn: Function, answer, trials: int, seed: int) -> list[str]:
    used = all_names(fn)
    adjoint_name = fresh_name("d" + fn.name, used)
    seed_element = Element(adjoint_name, tuple(Affine.index(i) for i in fn.indices))
    reference = _adjoint_reference(fn, seed_element)
    names = list(fn.indices) + [s.index for s in all_sums(fn)]
    shapes_all = {**fn.shapes, adjoint_name: tuple(fn.shapes[fn.name])}
    holder = fresh_name("v", used)
    yours = _read_adjoints(call_answer(answer, "adjoints(fn)", fn), fn, names)
    problems = [f"no adjoint for the read {expr_text(e)}: every leaf of the tree gets one"
                for e, (_, adjoint, _, _) in reference.items() if e not in yours and adjoint != ZERO]
    rng = np.random.default_rng(seed)
    points = []
    for _ in range(trials):
        values = random_inputs(fn, rng)
        values[adjoint_name] = rng.standard_normal(fn.shapes[fn.name])
        points.append(values)
    for element, text in yours.items():
        scope, adjoint, bare, paths = reference[element]
        read = expr_text(element)
        alpha = list(fn.indices) + [s.index for s in scope]
        box = sum_intervals(fn, scope)
        sizes = [box[n][1] + 1 for n in alpha]
        condition = conditions_of(scope, box)
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
            agree = close_to(got, right)
            if agree.all():
                continue
            point = tuple(np.argwhere(~agree)[0]) if np.ndim(right) else ()
            message = (f"the adjoint of {read} is not right: at {_where(alpha, point)} yours is "
                       f"{number_text(got[point])}")
            values_of = functools.partial(_values_of, alpha=alpha, shapes=shapes_all, holder=holder, box=sizes,
                                          values=values, condition=condition)
            problems.append(message + _slip(fn, read, got, right, bare, paths, seed_element, values_of))
            break
    return problems


def _slip(fn: Function, read: str, got, right, bare, paths, seed_element, values_of) -> str:
    """The end of the message on a wrong adjoint ``got`` of ``read`` (``right`` the core's): the typical slip it
    matches, else where to look; ``values_of(expr)`` evaluates an adjoint at the same point."""
    def same(expr):
        return close_to(got, values_of(expr)).all()

    if bare != ZERO and same(bare):
        return (f": it leaves out the seed; the sweep starts with the adjoint "
                f"{expr_text(seed_element)} at the root, not 1 (eq. 38)")
    if len(paths) > 1 and any(same(path) for path in paths):
        return (f": that is one path only; {fn.name} reads {read} {len(paths)} times and eq. 2 adds "
                f"the adjoints of all its consumers")
    if close_to(got, -right).all():
        return ": the sign is off (the local derivative of neg and of the right side of - is -1)"
    if (factor := _constant_factor(got, right)) is not None:
        return (f": every value is {number_text(factor)} times the right one, so a constant factor is "
                f"off (a local derivative such as that of ** or *, or a path counted twice)")
    if close_to(np.where(np.abs(right) > 0, got, 0), right).all():
        return (": it is right where the read gets an adjoint, but not 0 elsewhere: an if passes its "
                "adjoint to the branch it takes, under its condition (to the other under the "
                "condition's failure), and a select to the branch its comparison picks")
    return (": check the local derivatives on the path from the root (eq. 1), that a sum "
            "passes its adjoint to its body unchanged (sec. 5.2), and that an if or a select "
            "passes it only to the branch taken")


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
    tried = functions_tried(functions)
    failed = first_failure(name, tried, lambda fn: _adjoint_problems(fn, answer, trials, seed))
    if failed is not None:
        return failed
    return verdict(name, [], note=f"Your adjoints agree with the reverse sweep on all {len(tried)} functions, on "
                                  f"{trials} random inputs, at every extended index.")


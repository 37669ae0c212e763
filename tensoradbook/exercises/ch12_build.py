"""Chapter 12: build the core yourself (report secs. 2, 4, 5 and 6), one check per piece.

The student writes, in the spirit of micrograd, the pieces of Algorithm 4 as Python functions, and each check
calls the student's function on data and judges what it returns:

* :func:`check_reads`: ``reads(fn)``, every argument read of the expression tree with the indices of the sums
  around it (the extended index of sec. 5.2); compared with a walk of the tree here.
* :func:`check_adjoints`: ``adjoints(fn)``, reverse accumulation (sec. 2, eqs. 1-3) from the seed
  ``df[indices]``, the sums liberated (sec. 5.2); every adjoint is evaluated on random inputs against the
  core's sweep (:func:`tensoradbook.ad.reverse.reverse_accumulate`).
* :func:`check_index_solve`: ``index_solve(A)``, the pseudo-inverse, kernel and cokernel of the Smith normal
  form (sec. 4.1, eqs. 16-19), judged by the properties that make them right (``A I A = A`` with ``I A``
  integral, ``K`` a basis of the kernel lattice, ``C`` spanning the conditions of the image), exactly.
* :func:`check_box_solutions`: ``solutions_in_box(A, a, box, beta)``, the set ``Gamma(beta)`` of eqs. 39
  and 41-45 for numbers; compared with brute-force enumeration of the box.
* :func:`check_algorithm4`: ``gradient(fn, argument)``, Algorithm 4 assembled from the pieces; its text is
  evaluated on random inputs against :func:`tensoradbook.derive`.

The answers are functions that return data (text in the report's notation, numbers, nested lists), so that
the sandboxed grader can call them across its wire (``classroom/wire.py``): expression nodes and numpy arrays
of Python objects do not cross, and the checks refuse them in the notebook too, saying how to return them.
No feedback prints a right value; wrong values of the student's are named with a hint.

Two helpers of the chapter are plumbing rather than the report's ideas, and the student may use them:
:func:`index_matrix` (the ``A`` and ``a`` of a read ``x[A alpha + a]``, eq. 35) and :func:`kernel_loops` (the
matrices of Fourier-Motzkin turned into the sum bounds of eq. 45 and the conditions of eq. 34).
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from fractions import Fraction

import numpy as np
import sympy

from ..ad.derive import derive
from ..ad.gradcheck import random_arguments
from ..ad.reverse import reverse_accumulate
from ..integer.fourier_motzkin import FourierMotzkin
from ..integer.smith import integer_inverse
from ..integer.matrix import as_rational_matrix
from ..lang.evaluate import sum_range
from ..lang.expr import Affine, Atom, Element, ExpressionError, Expr, If, Number, Sum, postorder
from ..lang.function import Function
from ..lang.names import all_names, fresh_name
from ..lang.parser import parse
from ..lang.printer import atom_text, expr_text
from ..lang.simplify import ZERO, atom_truth
from ..lang.tokens import TOKEN
from .answers import read_function
from .checking import ATOL, RTOL, Problems, Wrong, close, pending, require_callable, type_name, verdict
from .feedback import CheckResult, element_problems, index_text, number_text

__all__ = ["check_reads", "check_adjoints", "check_index_solve", "check_box_solutions", "check_algorithm4",
           "index_matrix", "kernel_loops"]


# --- the chapter's helpers ----------------------------------------------------------------------------------

def index_matrix(element: Element, alpha) -> tuple[np.ndarray, list[int]]:
    """``(A, a)`` of a read ``x[A alpha + a]`` (eq. 35): row ``r`` of ``A`` holds the coefficients of the names
    ``alpha`` in index ``r`` of the read, ``a`` the constants. ``A`` keeps its shape when it has no rows (a
    scalar argument), which a list of rows would lose."""
    alpha = list(alpha)
    if any(not index.is_integral for index in element.indices):
        raise ValueError(f"{expr_text(element)} divides an index: Algorithm 4 reads it where A alpha + a = d beta")
    A = np.zeros((len(element.indices), len(alpha)), dtype=object)
    for r, index in enumerate(element.indices):
        for c, name in enumerate(alpha):
            A[r, c] = int(index.coefficient(name))
    return A, [int(index.constant) for index in element.indices]


def kernel_loops(system: FourierMotzkin, rhs, z_names) -> tuple[list[tuple[tuple[Affine, ...], tuple[Affine, ...]]],
                                                                  list[Atom]]:
    """The sums over ``z`` of eq. 45 and the conditions of eq. 34, for ``(R K) z >= rhs`` with symbolic ``rhs``.

    ``system`` is Fourier-Motzkin of ``R K`` (:func:`tensoradbook.fourier_motzkin`), ``rhs`` one
    :class:`~tensoradbook.lang.expr.Affine` per row (``r - R I (beta - a)`` in the names of ``beta``),
    ``z_names`` the names of ``z_0 .. z_(kappa-1)``. Returns ``bounds``, where ``bounds[k]`` is the pair
    ``(lower, upper)`` of tuples of affines in ``beta`` and the later ``z``: the ``max`` of the lower terms and
    the ``min`` of the upper ones, exactly what :class:`~tensoradbook.lang.expr.Sum` takes (it rounds a
    fractional bound inwards, the ceiling and floor of eq. 45); and the conditions ``F rhs <= 0`` (eq. 34)
    on rows that no ``z`` reaches (a combination of rows only empties a sum, which gives 0 anyway).
    """
    z_names = list(z_names)

    def combined(row) -> Affine:
        value = Affine.constant_value(0)
        for coefficient, b in zip(row, rhs):
            value = value + b.scale(coefficient)
        return value

    def side(M, Mhat, k):
        return tuple(combined(row) + Affine.of(dict(zip(z_names[k + 1:], hat)))
                     for row, hat in zip(M.tolist(), Mhat.tolist()))

    bounds = [(side(system.L[k], system.Lhat[k], k), side(system.H[k], system.Hhat[k], k))
              for k in range(system.n_vars)]
    conditions = [Atom(-combined(row), 0, inequality=True) for row in system.F.tolist()
                  if sum(1 for c in row if c) == 1]
    return bounds, conditions


# --- reading and calling the student's functions ------------------------------------------------------------

def _call(answer, what: str, *args):
    """``answer(*args)``, or a Wrong saying that it is not a function or what it raised."""
    require_callable(answer, f"your function {what} (its name, without calling it)")
    try:
        result = answer(*args)
    except Exception as error:  # the student's code: say what it raised, and on what
        raise Wrong(f"your {what} raised {type(error).__name__}: {error}") from None
    if result is NotImplemented or type_name(result) == "NotImplementedType":
        raise Wrong(f"your {what} returns NotImplemented, the chapter's placeholder: write its body")
    return result


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


def _read_of(text, fn: Function, names, what: str) -> Element:
    """The student's text of a read as an :class:`Element` of ``fn`` (read in the box of ``names``)."""
    text = _text(text, what)
    sums = _all_sums(fn)
    intervals = _intervals(fn, sums)
    box = [max(1, intervals[n][1] + 1) for n in names]
    holder = fresh_name("r", all_names(fn))
    # within the sums' own bounds, which the box of each index's values may exceed (sum{k}_0^i reads x[i - k])
    condition = _conditions_of(sums, intervals)
    body = f"if {{{' and '.join(map(atom_text, condition))}}} then ({text}) else (0)" if condition else text
    try:
        read = parse(f"{holder}[{'; '.join(names)}] = {body}", {**fn.shapes, holder: tuple(box)}).body
        read = read.then if condition and isinstance(read, If) else read
    except ExpressionError as error:
        raise Wrong(f"{what} {text!r} cannot be read as a read of {fn.name}: {str(error).splitlines()[0]}") from None
    if not isinstance(read, Element) or read.name not in fn.arguments:
        raise Wrong(f"{what} {text!r} is not a read of an argument of {fn.name} (a name with its indices, "
                     f"as expr_text prints an Element)")
    return read


# --- exercise 1: the tree --------------------------------------------------------------------------------

def check_reads(fn, answer, shapes=None) -> CheckResult:
    """Exercise: ``reads(fn)``, every argument read of the tree with the indices of the sums around it.

    The answer is a function of a :class:`~tensoradbook.Function` returning a list of pairs
    ``(text of the read, tuple of sum indices, outermost first)``, one pair per occurrence of an
    :class:`~tensoradbook.lang.expr.Element` in ``fn.body`` (a read written twice is two pairs): the leaves of
    the tree and the extended index ``alpha = (outputs, sums)`` each is read at (sec. 5.2, eq. 52). The texts
    may be formatted any way the parser reads; the order of the pairs does not matter.
    """
    fn = read_function(fn, shapes)
    _scope_error(fn)
    name = f"reads(fn) for {fn.name}[{'; '.join(fn.indices)}] = ..."
    if answer is None:
        return pending(name, "Your answer is your function reads(fn), which returns a list of pairs "
                              "(text of a read, tuple of the indices of the sums around it).")
    truth = Counter((element, tuple(s.index for s in scope)) for element, scope in _scopes(fn))
    names = list(fn.indices) + [s.index for s in _all_sums(fn)]
    try:
        listed = _call(answer, "reads(fn)", fn)
        if isinstance(listed, (str, bytes, dict)) or not hasattr(listed, "__iter__"):
            raise Wrong(f"reads(fn) must return a list of pairs, got {type_name(listed)}")
        yours = Counter()
        for item in listed:
            if not isinstance(item, (tuple, list)) or len(item) != 2:
                raise Wrong(f"each entry must be a pair (text of a read, tuple of sum indices), got {item!r}")
            text, scope = item
            if isinstance(scope, str) or not hasattr(scope, "__iter__") or \
                    not all(isinstance(s, str) for s in scope):
                raise Wrong(f"the scope of {text!r} must be a tuple of sum indices (text), got {scope!r}")
            yours[_read_of(text, fn, names, "the read"), tuple(scope)] += 1
    except Wrong as err:
        return err.result(name)
    if yours == truth:
        return CheckResult(name, True, note=f"Every read of {fn.name} with its liberated sums (sec. 5.2).")
    problems = []
    true_scopes = {element: scope for element, scope in truth}
    for (element, scope), count in yours.items():
        read = expr_text(element)
        if element not in true_scopes:
            problems.append(f"{fn.name} does not read {read}")
        elif (element, scope) not in truth:
            right = true_scopes[element]
            hint = ("the right indices, but the outermost sum comes first" if sorted(scope) == sorted(right)
                    else "list the index of every Sum whose body holds the read (descend into node.body), "
                         "and only those")
            problems.append(f"the sums you give around {read}, {tuple(scope)}, are not the ones around it: {hint}")
        elif count > truth[element, scope]:
            problems.append(f"you list {read} more often than {fn.name} reads it: one pair per occurrence")
    if any(count > yours[key] for key, count in truth.items()) and not problems:
        problems.append("your list misses reads: visit every child of every node (node.children()), the body "
                        "of each Sum and both operands of each Binary; a read written twice is listed twice")
    return CheckResult(name, False, problems)


# --- exercise 2: reverse accumulation ------------------------------------------------------------------------

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
            end = i if kind in ("number", "name") else -1
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


def _conditions_of(scope, box: dict) -> tuple[Atom, ...]:
    """The bounds of the sums ``scope`` as conditions, those that hold on all of ``box`` left out."""
    atoms = []
    for s in scope:
        index = Affine.index(s.index)
        atoms += [Atom(index.scale(low.denominator) - low.numerator, 0, inequality=True) for low in s.lower]
        atoms += [Atom(high.numerator - index.scale(high.denominator), 0, inequality=True) for high in s.upper]
    return tuple(atom for atom in atoms if atom_truth(atom, box) is not True)


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


def check_adjoints(fn, answer, shapes=None, trials: int = 2, seed: int = 0) -> CheckResult:
    """Exercise: ``adjoints(fn)``, reverse accumulation (sec. 2, eqs. 1-3) over the expression tree of ``fn``.

    The answer is a function of a :class:`~tensoradbook.Function` returning a dict from the text of each read
    (``"d[i + k]"``) to the text of its adjoint: the sum over its consumers (eq. 2) of the consumer's adjoint
    times the local derivative (eq. 1), starting from the seed ``df[i; j]`` (``d`` and the function's name,
    indexed by its output indices: the adjoint of eqs. 36-38) at the root. A sum passes its adjoint to its
    body unchanged, and the sum's index becomes free (sec. 5.2), so an adjoint is a function of the extended
    index. A read written twice gets one entry, the sum of both paths. Each adjoint is evaluated at every
    extended index on ``trials`` random inputs against the core's sweep; a read whose adjoint is 0 may be left
    out. Typical slips get their own hint: the seed left out, one path of two, a sign.
    """
    fn = read_function(fn, shapes)
    _scope_error(fn)
    used = all_names(fn)
    adjoint_name = fresh_name("d" + fn.name, used)
    seed_element = Element(adjoint_name, tuple(Affine.index(i) for i in fn.indices))
    name = f"adjoints(fn) for {fn.name}[{'; '.join(fn.indices)}] = ..."
    if answer is None:
        return pending(name, f"Your answer is your function adjoints(fn), which returns a dict from the text of "
                              f"each read to the text of its adjoint (the seed is {expr_text(seed_element)}).")
    reference = _adjoint_reference(fn, seed_element)
    names = list(fn.indices) + [s.index for s in _all_sums(fn)]
    shapes_all = {**fn.shapes, adjoint_name: tuple(fn.shapes[fn.name])}
    holder = fresh_name("v", used)
    try:
        yours = _read_adjoints(_call(answer, "adjoints(fn)", fn), fn, names)
    except Wrong as err:
        return err.result(name)
    problems = [f"no adjoint for the read {expr_text(e)}: every leaf of the tree gets one"
                for e, (_, adjoint, _, _) in reference.items() if e not in yours and adjoint != ZERO]
    rng = np.random.default_rng(seed)
    points = []
    for _ in range(trials):
        values = random_arguments(fn, rng)
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
                message += (f": every value is {number_text(factor)} times the right one, so a constant factor is off "
                            f"(a local derivative such as that of ** or *, or a path counted twice)")
            else:
                message += (": check the local derivatives on the path from the root (eq. 1) and that a sum "
                            "passes its adjoint to its body unchanged (sec. 5.2)")
            problems.append(message)
            break
    return verdict(name, problems,
                   note=f"Your adjoints agree with the reverse sweep on {trials} random "
                        f"inputs, at every extended index.")


# --- exercise 3: the index solve ---------------------------------------------------------------------------

#: The index matrices of chapter 12's exercise 3: the reads of sec. 6 over alpha = (i, j, k), a[i; k], b[j; k],
#: c[i; i] and d[i + k]; figs. 3 and 4; invariant factors above 1 (2 i + 4 j + 6 k, a diagonal, chapter 04a's
#: [[6, 4], [4, 6]]); 4 i + j; a unimodular matrix; and a scalar argument read over (i, j) (no rows).
INDEX_MATRICES = (
    [[1, 0, 0], [0, 0, 1]], [[0, 1, 0], [0, 0, 1]], [[1, 0, 0], [1, 0, 0]], [[1, 0, 1]],
    [[1, -2]], [[1, -2, -2]], [[2, 4, 6]], [[2, 0], [0, 3]], [[6, 4], [4, 6]], [[4, 1]],
    [[1, 1, 0], [0, 1, 1]], [[2, 1], [1, 1]], np.zeros((0, 2), dtype=np.int64),
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
                f"has {M} rows and {N} columns: I = V S^+ U with S^+ as in eq. 19"]
    problems = []
    if exact * I * exact != exact:
        problems.append("A I A is not A: I is not a pseudo-inverse of A (eq. 18: I = V S^+ U, in that order, "
                        "with S^+ = diag(1/s_1, ..., 1/s_R, 0, ...) of eq. 19)")
    elif any(not v.is_integer for v in I * exact):
        problems.append("A I A = A, but I A is not an integer matrix: I is a pseudo-inverse, not the one of the "
                        "Smith normal form, and for some beta with integer solutions I beta is fractional (eq. 17 "
                        "would wrongly find none); build I = V S^+ U (eq. 18)")
    problems += _kernel_problems(A, exact, K, M - R)
    if C.shape[0] and C.shape[1] != N:
        problems.append(f"C has {C.shape[1]} columns; it acts on beta, which has {N} entries")
    elif C.shape[0] != N - R:
        problems.append(f"C has {C.shape[0]} rows, but there are N - R conditions C beta = 0 (eq. 16), N the "
                        f"entries of beta and R the rank: C is the last N - R rows of U")
    elif C.shape[0] and any(C * exact):
        problems.append("C A is not 0: a row of C does not vanish on the image of A, so C beta = 0 fails for "
                        "some beta that has solutions (eq. 16: C is the last N - R rows of U)")
    elif C.shape[0] and C.rank() != N - R:
        problems.append("the rows of C are linearly dependent: C beta = 0 then lets through beta that have no "
                        "solution")
    return problems


def _kernel_problems(A: np.ndarray, exact: sympy.Matrix, K: sympy.Matrix, dimension: int) -> list[str]:
    """What is wrong with ``K`` as a basis of the lattice ``{alpha integer: A alpha = 0}`` of ``dimension``."""
    M = A.shape[1]
    if not K.shape[1]:
        return [] if dimension == 0 else [
            "K has no columns, but A alpha = 0 has solutions other than 0: K is the last M - R columns of V "
            "(R the rank, the number of non-zero entries of S)"]
    if K.shape[0] != M:
        return [f"K has {K.shape[0]} rows; its columns are solutions alpha of A alpha = 0, with {M} entries"]
    image = exact * K
    for column in range(K.shape[1]):
        if any(image[:, column]):
            return [f"column {column} of K is not in the kernel: A K[:, {column}] = {tuple(image[:, column])}"]
    if K.shape[1] != dimension:
        return [f"K has {K.shape[1]} columns, but the kernel has dimension M - R (M entries of alpha, R the rank: "
                f"the non-zero entries of S): K is the last M - R columns of V"]
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
    """Exercise: ``index_solve(A)``, the integer pseudo-inverse, kernel and cokernel of ``A`` (sec. 4.1).

    The answer is a function of an integer matrix ``A`` (N x M; it gets a numpy integer array) returning
    ``(I, K, C)`` as nested lists of ints and Fractions: with the Smith normal form ``S = U A V`` of rank R
    (eq. 12), ``I = V S^+ U`` (eqs. 18-19), ``K`` the last M - R columns of V and ``C`` the last N - R rows of
    U (eq. 16). Any right triple passes, judged by what makes it right: ``A I A = A`` with ``I A`` integral (so
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

#: The cases of chapter 12's exercise 4: ``(A, a, box, beta)``. The reads d[i + k] and c[i; i] of sec. 6 over
#: the box of (i, j, k); fig. 4's index with chapter 04b's box; 2 i + 4 j + 6 k (no integer solution at an odd
#: beta); an offset (x[2 i + k + 1]); 4 i + j; a box that does not start at 0.
BOX_CASES = (
    ([[1, 0, 1]], [0], [(0, 2), (0, 3), (0, 4)], [2]),
    ([[1, 0, 1]], [0], [(0, 2), (0, 3), (0, 4)], [6]),
    ([[1, 0, 1]], [0], [(0, 2), (0, 3), (0, 4)], [7]),
    ([[1, 0, 0], [1, 0, 0]], [0, 0], [(0, 2), (0, 3), (0, 4)], [2, 2]),
    ([[1, 0, 0], [1, 0, 0]], [0, 0], [(0, 2), (0, 3), (0, 4)], [1, 2]),
    ([[1, -2, -2]], [0], [(0, 6), (0, 3), (0, 3)], [1]),
    ([[2, 4, 6]], [0], [(0, 3), (0, 3), (0, 3)], [3]),
    ([[2, 4, 6]], [0], [(0, 3), (0, 3), (0, 3)], [8]),
    ([[2, 1]], [1], [(0, 3), (0, 3)], [6]),
    ([[4, 1]], [0], [(0, 2), (0, 3)], [9]),
    ([[1, 1]], [0], [(1, 4), (2, 5)], [6]),
)


def _box_problems(A, offset, box, beta, listed) -> list[str]:
    M = len(box)
    if isinstance(listed, (str, bytes, dict)) or not hasattr(listed, "__iter__"):
        return [f"solutions_in_box must return a list of index tuples alpha, got {type_name(listed)}"]
    mine = []
    for alpha in listed:
        if isinstance(alpha, (str, bytes)) or not hasattr(alpha, "__iter__"):
            return [f"each solution must be a tuple of {M} integers (alpha), got {alpha!r}"]
        entries = list(alpha)
        if len(entries) != M or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) and
                                    not (isinstance(v, Fraction) and v.denominator == 1) for v in entries):
            return [f"each solution must be a tuple of {M} integers (alpha), got {alpha!r}"]
        mine.append(tuple(int(v) for v in entries))
    problems = Problems()
    repeated = [alpha for alpha, n in Counter(mine).items() if n > 1]
    if repeated:
        problems.append(f"you list alpha = {repeated[0]} more than once: each z gives one alpha")
    for alpha in dict.fromkeys(mine):
        outside = [(n, v, box[n]) for n, v in enumerate(alpha) if not box[n][0] <= v <= box[n][1]]
        reads = tuple(sum(int(c) * v for c, v in zip(row, alpha)) + o for row, o in zip(A, offset))
        if outside:
            n, v, (low, high) = outside[0]
            problems.add(f"alpha = {alpha} lies outside the box (entry {n} is {v}, outside {low}..{high}): "
                            f"the bounds of z (eq. 45) let it through; round lower bounds up, upper bounds down")
        elif reads != tuple(beta):
            problems.add(f"alpha = {alpha} reads x{index_text(reads)}, not x{index_text(beta)}: is it "
                            f"I (beta - a) + K z, with the offset a subtracted from beta first?")
        if problems.full:
            break
    truth = {alpha for alpha in itertools.product(*(range(low, high + 1) for low, high in box))
             if tuple(sum(int(c) * v for c, v in zip(row, alpha)) + o for row, o in zip(A, offset)) == tuple(beta)}
    if not problems and not truth <= set(mine):
        problems.append("your list misses solutions in the box: the loops over z must reach every integer point "
                        "of eq. 45 (z_(kappa-1) outermost, each between the max of its lower and the min of its "
                        "upper bounds), and a beta with C (beta - a) = 0 and I (beta - a) integral has solutions")
    return problems


def check_box_solutions(answer, cases=None) -> CheckResult:
    """Exercise: ``solutions_in_box(A, a, box, beta)``, every ``alpha`` in the box with ``A alpha + a = beta``.

    That is the set ``Gamma(beta)`` of eq. 39 for one read ``x[A alpha + a]``, which the report finds without
    testing every alpha (eqs. 41-45): no solution unless ``C (beta - a) = 0`` and ``I (beta - a)`` is integral,
    else ``alpha = I (beta - a) + K z`` for the integer ``z`` with ``low <= alpha <= high``, i.e.
    ``K z >= low - p`` and ``-K z >= p - high`` (eqs. 43-44), which Fourier-Motzkin turns into loops (eq. 45).
    The answer is the function; it gets ``A`` as a numpy integer array, ``a`` and ``beta`` as lists and ``box``
    as a list of ``(low, high)`` pairs (inclusive), and returns a list of index tuples in any order. Compared
    with brute-force enumeration of the box on each of ``cases`` (default :data:`BOX_CASES`).
    """
    name = "solutions_in_box(A, a, box, beta): the alpha that read x[beta]"
    if answer is None:
        return pending(name, "Your answer is your function solutions_in_box(A, a, box, beta), which returns a "
                              "list of tuples alpha.")
    cases = BOX_CASES if cases is None else cases
    for A, offset, box, beta in cases:
        matrix = np.asarray(A, dtype=np.int64).reshape(len(A), len(box))
        shown = f"A = {matrix.tolist()}, a = {list(offset)}, box = {[tuple(b) for b in box]}, beta = {list(beta)}"
        try:
            problems = _box_problems(matrix.tolist(), list(offset), [tuple(b) for b in box], list(beta),
                                     _call(answer, "solutions_in_box(A, a, box, beta)", matrix, list(offset),
                                           [tuple(b) for b in box], list(beta)))
        except Wrong as err:
            problems = [str(err)]
        if problems:
            return CheckResult(name, False, [f"for {shown}: {problems[0]}"] + problems[1:])
    return CheckResult(name, True, note=f"Right on all {len(cases)} cases, against brute force over each box.")


# --- exercise 5: Algorithm 4 ---------------------------------------------------------------------------------

def _gradient_problems(label: str, argument: str, fn_name: str, yours: np.ndarray, right: np.ndarray) -> list[str]:
    """What is wrong where ``yours`` differs from ``right``, the most telling first; never a right value."""
    zero_atol = ATOL * max(float(np.abs(right).max(initial=0)), np.finfo(float).tiny)
    return element_problems(
        label, yours, right, _close(yours, right), zero_atol,
        lambda b: f"no element of {fn_name} reads {argument}{index_text(b)}",
        "a condition (C (beta - a) = 0, eq. 16; I (beta - a) integral, eq. 17; eq. 34) or a bound of the sums "
        "over z (eq. 45) is missing",
        hint="check the substitution alpha = I (beta - a) + K z into each read's adjoint (eq. 47)")


def check_algorithm4(fn, argument: str, answer, shapes=None, trials: int = 3, seed: int = 0) -> CheckResult:
    """Exercise: ``gradient(fn, argument)``, Algorithm 4 (sec. 5) built from the pieces of exercises 1-4.

    The answer is a function of a :class:`~tensoradbook.Function` and an argument's name returning the gradient
    ``dx`` of ``sum(df * f)`` as text in the report's notation, ``"dd[b] = ..."`` (or a Function): for each
    read ``x[A alpha + a]`` (line 3: its adjoint, by reverse accumulation; line 4: the box ``R alpha >= r``;
    lines 5-7: I, K, C; lines 8-9: Fourier-Motzkin on ``R K z >= r - R I (beta - a)``), the sums over ``z``
    of the adjoint at ``alpha = I (beta - a) + K z`` under the conditions ``C (beta - a) = 0`` and
    ``I (beta - a)`` integral (line 10, eq. 47). Any way of writing it passes: it is parsed and evaluated at
    every element on ``trials`` random inputs and random ``df`` against :func:`tensoradbook.derive`.
    """
    fn = read_function(fn, shapes)
    if argument not in fn.arguments:
        raise ValueError(f"{argument!r} is not an argument of {fn.name}; it has {fn.arguments}")
    grads = derive(fn)
    truth = grads[argument]
    gradient, adjoint = "d" + argument, grads.adjoint_name
    accepted = dict.fromkeys([gradient, truth.name])
    answer_shapes = {**truth.shapes, **{n: tuple(fn.shapes[argument]) for n in accepted}}
    name = f"gradient(fn, {argument!r}): d{argument} by Algorithm 4"
    if answer is None:
        return pending(name, f"Your answer is your function gradient(fn, argument), which returns the text "
                              f"\"{gradient}[...] = ...\" (the adjoint of {fn.name} is {adjoint}).")
    try:
        result = _call(answer, "gradient(fn, argument)", fn, argument)
        if isinstance(result, Function):
            result = str(result)
        text = _text(result, "gradient(fn, argument)'s result")
        defined = re.match(r"\s*([A-Za-z][A-Za-z0-9_]*)\s*\[", text)
        if defined and defined.group(1) not in accepted:
            raise Wrong(f"your gradient defines {defined.group(1)!r}; call it {gradient!r} ({gradient}[...] = ...)")
        try:
            mine = parse(text, answer_shapes)
        except ExpressionError as error:
            indented = "\n".join("    " + line for line in str(error).splitlines())
            raise Wrong(f"your gradient cannot be read:\n{indented}") from None
        if not isinstance(mine, Function):
            raise Wrong("your gradient must be one definition, \"name[indices] = expression\"")
    except Wrong as err:
        return err.result(name)
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        values = random_arguments(fn, rng)
        values[adjoint] = rng.standard_normal(fn.shapes[fn.name])
        right = truth.evaluate(values)
        yours = mine.evaluate(values)
        if not _close(yours, right).all():
            return CheckResult(name, False, _gradient_problems(gradient, argument, fn.name, yours, right))
    return CheckResult(name, True, note=f"Your gradient agrees with tab.derive at every element on {trials} random "
                                        f"inputs.")

"""Per-assignment library policy: the parts of tensoradbook that a graded answer of an assignment may not use.

The library answers many exercises outright: :func:`tensoradbook.derive` prints the derivative an exercise asks
for, :func:`tensoradbook.smith_normal_form` the Smith decomposition, :func:`tensoradbook.chaining.optimize` the
cheapest schedule, and the checks' own helpers (or a loop over a check, where the answers are few) find the rest.
:data:`POLICIES` says, per assignment (the nbgrader assignment id, a chapter's stem), what its graded answers may
not use, by qualified name: a module or package (everything it defines), a function or class, or a method
(``module.Class.method``). Every assignment forbids the checks (:mod:`tensoradbook.exercises`, :data:`CHECKS`);
the rest is chosen from the assignment's exercises: what computes an answer is out, what the exercise text tells
students to use stays in (:data:`ALLOWED` makes the exceptions inside a forbidden module). Each group of names says
why (:class:`Group`); the error a student gets names the function, the assignment and that reason.

It is enforced twice:

* in the student's own kernel, as a courtesy, so that a student sees the error before submitting: the setup cell
  of every assignment (``classroom/source.py``) calls :func:`enforce`, which puts a guard in front of every
  forbidden function and class, wherever the package re-exports it. The guard lets the library and the checks
  call it (a test cell's check still runs) and refuses a call that comes from the student's code, directly or
  through the library, with :class:`LibraryPolicyError`. Nothing outside a notebook's kernel changes (the grader
  runs the same setup cell in its own process: there :func:`enforce` does nothing);
* for real when graded: the answers run in a sandbox that sees a copy of the package in which every forbidden
  function, class and method is a stub with the same name and signature, the original code gone
  (``classroom/library_policy.py`` writes it), and every function of :mod:`tensoradbook.exercises` is such a
  stub (the test cells run in the grader, with the real checks). A student's code in the sandbox cannot undo
  that: what it would need is not there.

Every refused call first raises the audit event :data:`AUDIT_EVENT` ``(qualified name, assignment)``: the
sandbox's worker records it, and the grading report has a row for it. :data:`WATCHED` names what an assignment
allows but the instructor may want to see used (the policy copy raises :data:`USE_EVENT` for each call).

Standard library only: ``classroom/library_policy.py`` reads this file without importing the package.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import sysconfig
import types
from typing import NamedTuple, NoReturn

#: The audit event of a refused call: ``sys.audit(AUDIT_EVENT, qualified_name, stem)``.
AUDIT_EVENT = "tensoradbook.library_policy"
#: The audit event of a call of a :data:`WATCHED` name in the policy copy (allowed, reported).
USE_EVENT = "tensoradbook.library_use"
#: The stem a sandbox's policy copy was written for (``classroom/library_policy.py`` sets it in the copy, where
#: :func:`enforce` has nothing left to do); ``None`` in the package itself.
SANDBOX_STEM: str | None = None
#: Never forbidden: this module (the setup cells import :func:`enforce` from it).
EXEMPT = ("tensoradbook.exercises.policy",)
#: The package folder whose modules the qualified names name.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class LibraryPolicyError(Exception):
    """A graded answer of this assignment may not use this part of the library."""

    def __init__(self, name: str, stem: str):
        self.name, self.stem = name, stem
        super().__init__(explain(name, stem))

    def __reduce__(self):
        return type(self), (self.name, self.stem)


class Group(NamedTuple):
    """Names that go together, and why an assignment that forbids them does (the error message's last words)."""

    why: str
    names: tuple[str, ...]


CHECKS = Group(
    "the checks and their helpers grade answers, they do not give them (graded, the tests run in the grader)",
    ("tensoradbook.exercises",))
"""Always: every check and every helper of the checks (a helper finds what a check compares with; a loop over a
check finds an answer where the answers are few). In the student's kernel the ``check_*`` functions stay, since
the test cells call them there; when graded the sandbox has stubs only."""

DERIVATION = Group(
    "Algorithm 4 computes the derivatives, index matrices, loop bounds and terms that this assignment asks you "
    "to work out",
    ("tensoradbook.ad.derive", "tensoradbook.ad.program", "tensoradbook.ad.contribution",
     "tensoradbook.ad.kernel_form"))
"""Algorithm 4 and its parts: :func:`~tensoradbook.derive` (and :class:`~tensoradbook.Gradients`,
:class:`~tensoradbook.ProgramGradients`) prints the derivative of a derivation exercise, its contributions hold
the index matrices and the bounds of every gradient sum; without the parts a student could call them as
:func:`derive` does."""

REVERSE_SWEEP = Group(
    "the reverse sweep computes the adjoints that this assignment asks you to work out",
    ("tensoradbook.ad.reverse",))
"""Reverse accumulation (sec. 2): :func:`~tensoradbook.ad.reverse.reverse_accumulate` gives the adjoint of every
node and read, :func:`~tensoradbook.ad.reverse.local_partials` each node's local partials."""

NUMERIC = Group(
    "finite differences compute the numbers (gradients, Jacobians, Hessian entries) that this assignment asks "
    "you to compute by hand",
    ("tensoradbook.ad.finite_differences", "tensoradbook.ad.gradcheck.numeric_gradient",
     "tensoradbook.ad.gradcheck.directional_derivatives", "tensoradbook.ad.gradcheck.check_gradients"))
"""Numeric derivatives: an exercise that asks for numbers (a gradient at a point, a Jacobian, ``J^-1 ydot``) is
answered by them to the checks' tolerance. :func:`~tensoradbook.ad.gradcheck.random_arguments` stays."""

INTEGER_SOLUTIONS = Group(
    "the integer solve lists the solutions of an index equation and counts the terms that this assignment asks "
    "you to find",
    ("tensoradbook.integer.smith.integer_inverse", "tensoradbook.integer.smith.IntegerInverse",
     "tensoradbook.integer.smith.IntegerSolutions", "tensoradbook.integer.smith.Solvability",
     "tensoradbook.integer.fourier_motzkin.BoxedSolutions",
     "tensoradbook.integer.fourier_motzkin._kernel_system", "tensoradbook.integer.geometry.solutions_in_view",
     "tensoradbook.integer.geometry.hidden_entries", "tensoradbook.integer.geometry._solution_family"))
"""The solutions of ``A alpha + a = beta`` (the particular solution, the kernel, the cokernel test) and their
enumeration in a box: the terms of a gradient sum, counted or listed."""

SMITH = Group(
    "Algorithms 1-2 (the extended Euclidean algorithm, the Smith normal form) are what this assignment asks you to "
    "carry out",
    ("tensoradbook.integer.smith",))
"""Chapter 04a: Bezout by hand and by your own code ("without calling the library"), the Smith decomposition, the
integer kernel and the solvability of index equations; everything of :mod:`tensoradbook.integer.smith`."""

FOURIER_MOTZKIN = Group(
    "Fourier-Motzkin elimination (Algorithm 3) and the loop bounds drawn from it are what this assignment asks you "
    "to work out",
    ("tensoradbook.integer.fourier_motzkin", "tensoradbook.integer.geometry.loop_bounds",
     "tensoradbook.integer.geometry.polygon_vertices", "tensoradbook.integer.geometry.AffineBound"))
"""Chapter 04b: loop bounds of a polygon, the points of ``Sigma(beta)`` and the redundant rows (which the
elimination prunes)."""

INVERSE_SWEEPS = Group(
    "the (inverse) sweeps, Newton's method and the greedy lump order compute what this assignment asks you to do "
    "by hand",
    ("tensoradbook.inverse.sweeps", "tensoradbook.inverse.root_finding", "tensoradbook.inverse.lumps",
     "tensoradbook.inverse.engine._evaluate", "tensoradbook.inverse.engine._blocks",
     "tensoradbook.inverse.engine._solve", "tensoradbook.inverse.engine._scratch",
     "tensoradbook.inverse.engine._run", "tensoradbook.inverse.engine.run", "tensoradbook.inverse.engine._forward",
     "tensoradbook.inverse.engine.forward", "tensoradbook.inverse.engine._record",
     "tensoradbook.inverse.engine.record", "tensoradbook.inverse.engine._backward",
     "tensoradbook.inverse.engine.backward", "tensoradbook.inverse.engine._logdet",
     "tensoradbook.inverse.engine.logdet", "tensoradbook.inverse.engine.greedy_order"))
"""Chapter 08: :func:`~tensoradbook.inverse.reverse_inverse` and :func:`~tensoradbook.inverse.forward_inverse`
are exercises 2 and 3, :func:`~tensoradbook.inverse.newton` exercise 4, the Jacobian and the engines' sweeps
compute all three. Tracing a program (:func:`~tensoradbook.inverse.trace`), its vertices and lump sizes stay: the
exercises give them."""

CHAINING = Group(
    "the dynamic programmes, the schedules' costs and the baselines compute the optima and costs that this "
    "assignment asks you to work out (eqs. 3.7-3.8)",
    ("tensoradbook.chaining.optimize", "tensoradbook.chaining.table", "tensoradbook.chaining.bounded",
     "tensoradbook.chaining.schedules", "tensoradbook.chaining.plan", "tensoradbook.chaining.programs"))
"""Chapters 09a and 09b: :func:`~tensoradbook.chaining.optimize` (any tape bound, any rule), the schedules of two
factors with their costs, the tables' cells and the baselines are the answers; :class:`~tensoradbook.chaining.Chain`
stays (the setup builds one)."""

_GROUPS: dict[str, tuple[Group, ...]] = {
    "01_introduction": (CHECKS, DERIVATION, REVERSE_SWEEP, INTEGER_SOLUTIONS),
    "02_reverse_accumulation": (CHECKS, DERIVATION, REVERSE_SWEEP, NUMERIC),
    "03_tensor_functions": (CHECKS, DERIVATION, REVERSE_SWEEP, NUMERIC),
    "04a_integer_equations": (CHECKS, SMITH, INTEGER_SOLUTIONS),
    "04b_fourier_motzkin": (CHECKS, FOURIER_MOTZKIN, INTEGER_SOLUTIONS, DERIVATION),
    "05_elementwise_derivatives": (CHECKS, DERIVATION, REVERSE_SWEEP, INTEGER_SOLUTIONS),
    "06a_kernels": (CHECKS, DERIVATION, REVERSE_SWEEP, NUMERIC),
    "06b_gather_scatter": (CHECKS, DERIVATION, REVERSE_SWEEP),
    # exercise 3 is "derive, derive again, evaluate": derive stays (WATCHED), numbers by finite differences do not
    "07_higher_order": (CHECKS, NUMERIC),
    "08_inverse_accumulation": (CHECKS, INVERSE_SWEEPS, NUMERIC),
    "09a_jacobian_chaining": (CHECKS, CHAINING),
    "09b_tape_bounds": (CHECKS, CHAINING),
    "10_tensor_programs": (CHECKS, DERIVATION, REVERSE_SWEEP, NUMERIC),
    # the layers are written in the notation; nothing of the library writes them
    "11_capstone_cnn": (CHECKS,),
    # build the engine yourself: the reads and their box, the sweep, the index solve, Fourier-Motzkin, Algorithm 4 and a
    # program's gradient are the exercises (exercise 6's answer is exact: no finite differences either)
    "12_build_it_yourself": (CHECKS, DERIVATION, REVERSE_SWEEP, INTEGER_SOLUTIONS, FOURIER_MOTZKIN, NUMERIC),
}

#: Assignment -> the qualified names its graded answers may not use (modules and packages: all they define).
POLICIES: dict[str, tuple[str, ...]] = {stem: tuple(name for group in groups for name in group.names)
                                        for stem, groups in _GROUPS.items()}

#: Assignment -> what stays allowed inside a forbidden module: what the setup cell or the exercise text gives.
ALLOWED: dict[str, tuple[str, ...]] = {
    # the operations' local derivative rules stay given (exercise 2's sweep calls them); the Smith normal form
    # (tensoradbook.integer.smith.smith_normal_form) is not forbidden at all: exercise 3 calls it once per matrix
    "12_build_it_yourself": ("tensoradbook.ad.reverse.local_partials",),
}

#: Assignment -> allowed names whose every call the policy copy reports (:data:`USE_EVENT`): exercise 3 of chapter
#: 07 is computed with derive, which exercises 1 and 2 ask you to do by hand.
WATCHED: dict[str, tuple[str, ...]] = {
    "07_higher_order": ("tensoradbook.ad.derive.derive",),
}


#: What the expression language itself calls: the integer algebra, in which the parser solves index conditions by the
#: Smith normal form and bounds sums by Fourier-Motzkin elimination (``lang.scope``, ``integer.geometry``). Where an
#: assignment forbids parts of it, they still run for the library (a caller in the package, outside the exercises), so
#: that ``parse`` reads every function; a student's own call is refused as any other. tests/test_library_policy.py
#: checks that every forbidden name a module of the package imports is covered here.
PLUMBING = ("tensoradbook.integer",)


def plumbing(name: str) -> bool:
    """Whether ``name`` (a function, a class or a method of one) is :data:`PLUMBING`."""
    return any(covers(entry, name) for entry in PLUMBING)


def library_caller(frame) -> bool:
    """Whether the code that called (``frame``, Python's own and installed packages' frames passed through) is the
    library's, not the exercises' and not a student's: what :data:`PLUMBING` runs for."""
    while frame is not None and outside_code(frame.f_code.co_filename):
        frame = frame.f_back
    module = (frame.f_globals.get("__name__") or "") if frame is not None else ""
    return module.startswith("tensoradbook.") and not module.startswith(_CHECKS_PACKAGE)


def covers(entry: str, name: str) -> bool:
    """Whether a policy entry (a module, a function, a class) covers a qualified name."""
    return name == entry or name.startswith(entry + ".")


def _policy(stem: str) -> tuple[str, ...]:
    try:
        return POLICIES[stem]
    except KeyError:
        raise ValueError(f"no library policy for assignment {stem!r}; the assignments are "
                         f"{', '.join(POLICIES)}") from None


def forbidden(stem: str, name: str) -> bool:
    """Whether assignment ``stem`` forbids the qualified ``name`` in graded answers."""
    if any(covers(entry, name) for entry in EXEMPT + ALLOWED.get(stem, ())):
        return False
    return any(covers(entry, name) for entry in _policy(stem))


def reason(stem: str, name: str) -> str:
    """Why assignment ``stem`` forbids ``name``: the reason of the first group that covers it."""
    for group in _GROUPS.get(stem, ()):
        if any(covers(entry, name) for entry in group.names):
            return group.why
    return "it would give an answer away"


def explain(name: str, stem: str) -> str:
    """The message of :class:`LibraryPolicyError`."""
    short = name.rsplit(".", 1)[-1]
    return (f"{short} ({name}) is not allowed in graded answers of assignment {stem}: {reason(stem, name)}. "
            "This assignment's library policy (tensoradbook.exercises.policy) keeps what would give an answer "
            "away out of graded answers, in this notebook and when graded; work it out as the exercise asks.")


def refuse(name: str, stem: str) -> NoReturn:
    """Report the call (audit event :data:`AUDIT_EVENT`) and refuse it."""
    sys.audit(AUDIT_EVENT, name, stem)
    raise LibraryPolicyError(name, stem)


# --- where the names live ---------------------------------------------------------------------------------------

def module_file(module: str, root: str = ROOT) -> str | None:
    """The file of a module of the package tree at ``root`` (a package's ``__init__.py``), or None."""
    parts = module.split(".")
    if parts[0] != os.path.basename(root):
        return None
    base = os.path.join(root, *parts[1:])
    for path in (os.path.join(base, "__init__.py"), base + ".py"):
        if os.path.isfile(path):
            return path
    return None


def modules(root: str = ROOT) -> list[str]:
    """Every module of the package tree at ``root``, by name, sorted."""
    top = os.path.basename(root)
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if d != "__pycache__")
        package = [top] + os.path.relpath(folder, root).split(os.sep)
        package = [part for part in package if part != "."]
        for file in sorted(files):
            if file.endswith(".py"):
                found.append(".".join(package if file == "__init__.py" else package + [file[:-3]]))
    return sorted(found)


def locate(name: str, root: str = ROOT) -> tuple[str, tuple[str, ...]]:
    """``(module, attribute path)`` of a qualified name: the longest prefix that is a module of the tree."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        module = ".".join(parts[:k])
        if module_file(module, root) is not None:
            return module, tuple(parts[k:])
    raise ValueError(f"{name} is not in the package at {root}")


def affected(stem: str, root: str = ROOT) -> list[str]:
    """The modules in which assignment ``stem`` forbids something (or all of it)."""
    entries = _policy(stem)
    homes = {locate(entry, root)[0] for entry in entries}
    return [m for m in modules(root) if not any(covers(e, m) for e in EXEMPT)
            and (m in homes or any(covers(entry, m) for entry in entries))]


# --- in the student's kernel: guards in front of the forbidden names ------------------------------------------

_PASS_THROUGH = tuple(sorted({os.path.realpath(p) + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib")
                              if (p := sysconfig.get_paths().get(key))}))
_CHECKS_PACKAGE = "tensoradbook.exercises."


def _called_by_a_check(frame) -> bool:
    """Whether the nearest caller that is neither the library (nor Python's, nor a third party's code) is a check.

    The library's frames and those of the standard library and installed packages are passed through: the
    student's code that calls an allowed function which calls a forbidden one is refused as the policy copy
    refuses it."""
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if module.startswith(_CHECKS_PACKAGE) and module not in EXEMPT:
            return True
        library = module == "tensoradbook" or module.startswith("tensoradbook.")
        if not library and (module == "__main__" or not outside_code(frame.f_code.co_filename)):
            return False
        frame = frame.f_back
    return False


@functools.lru_cache(maxsize=4096)
def outside_code(filename: str) -> bool:
    """Python's own code, an installed package's or code Python wrote: passed through when deciding who called."""
    # "<string>": code Python writes and runs for a module (a dataclass's __init__), or a student's exec: its caller
    # is the one that counts
    return filename.startswith("<frozen") or filename == "<string>" or \
        os.path.realpath(filename).startswith(_PASS_THROUGH)


class _Patch(NamedTuple):
    owner: object
    attribute: str
    original: object  # _MISSING where the owner did not have it


_MISSING = object()
_PATCHES: list[_Patch] = []
_ENFORCED: list[str] = []


def _allowed_here(frame, name: str) -> bool:
    return _called_by_a_check(frame) or (plumbing(name) and library_caller(frame))


def _guard_function(original, name: str, stem: str):
    @functools.wraps(original, updated=())
    def guarded(*args, **kwargs):
        if not _allowed_here(sys._getframe(1), name):
            refuse(name, stem)
        return original(*args, **kwargs)

    del guarded.__wrapped__
    if hasattr(original, "py_func"):  # a Numba function: its Python version is called too
        guarded.py_func = _guard_function(original.py_func, name, stem)
    return guarded


def _guard_class(cls: type, name: str, stem: str) -> None:
    inherited = cls.__init__

    def __init__(self, *args, **kwargs):
        if not _allowed_here(sys._getframe(1), name):
            refuse(name, stem)
        if inherited is object.__init__:
            inherited(self)
        else:
            inherited(self, *args, **kwargs)

    _set(cls, "__init__", __init__)


def _set(owner, attribute: str, value) -> None:
    _PATCHES.append(_Patch(owner, attribute, vars(owner).get(attribute, _MISSING)))
    setattr(owner, attribute, value)


def defined_in(value, module: str) -> bool:
    """Whether a module's attribute is a class or function (a Numba or cached one too) that it defines."""
    if not (isinstance(value, (type, types.FunctionType, functools._lru_cache_wrapper)) or hasattr(value, "py_func")):
        return False
    home = getattr(value, "__module__", None) or getattr(getattr(value, "py_func", None), "__module__", None)
    return home == module


def _guard_method(cls: type, attribute: str, name: str, stem: str) -> None:
    static = vars(cls).get(attribute)
    if isinstance(static, (staticmethod, classmethod)):
        _set(cls, attribute, type(static)(_guard_function(static.__func__, name, stem)))
    elif isinstance(static, property):
        _set(cls, attribute, property(_guard_function(static.fget, name, stem), static.fset, static.fdel))
    elif callable(static):
        _set(cls, attribute, _guard_function(static, name, stem))


def _guards(stem: str) -> dict[int, tuple[object, object]]:
    """id(original) -> (original, guarded function) for every forbidden function; classes are guarded in place."""
    replaced: dict[int, tuple[object, object]] = {}
    for module_name in affected(stem):
        module = importlib.import_module(module_name)
        for attribute, value in list(vars(module).items()):
            name = f"{module_name}.{attribute}"
            if not defined_in(value, module_name) or id(value) in replaced:
                continue
            if isinstance(value, type):
                _guard_class_parts(value, name, stem)
            elif forbidden(stem, name) and not _live_check(name):
                replaced[id(value)] = (value, _guard_function(value, name, stem))
    return replaced


def _live_check(name: str) -> bool:
    """The checks the test cells call in the student's kernel: they stay there."""
    return name.startswith(_CHECKS_PACKAGE) and name.rsplit(".", 1)[-1].startswith("check_")


def _guard_class_parts(cls: type, name: str, stem: str) -> None:
    if name.startswith(_CHECKS_PACKAGE):  # the checks' result and error types: harmless, and the checks make them
        return
    if forbidden(stem, name):
        _guard_class(cls, name, stem)
        return
    for attribute in list(vars(cls)):
        if any(entry == f"{name}.{attribute}" for entry in _policy(stem)) and forbidden(stem, f"{name}.{attribute}"):
            _guard_method(cls, attribute, f"{name}.{attribute}", stem)


def enforce(stem: str, *, anywhere: bool = False) -> bool:
    """Assignment ``stem``'s policy in this kernel: a guard in front of every forbidden function (wherever the
    package re-exports it, and in ``__main__``) and class; idempotent, and a later call for another assignment
    replaces it. Returns whether guards are in place.

    Only in a notebook's kernel (IPython) unless ``anywhere``: the grader runs the setup cells in its own process,
    where the checks need the library whole; and never in the sandbox's policy copy, which has nothing to guard."""
    _policy(stem)
    if SANDBOX_STEM is not None or not (anywhere or _in_a_kernel()):
        return False
    lift()
    replaced = _guards(stem)
    owners = [m for n, m in list(sys.modules.items()) if m is not None and (
        n == "__main__" or n == "tensoradbook" or n.startswith("tensoradbook."))]
    for owner in owners:
        for attribute, value in list(vars(owner).items()):
            if id(value) in replaced and replaced[id(value)][0] is value:
                _set(owner, attribute, replaced[id(value)][1])
    _ENFORCED.append(stem)
    if not anywhere:
        print(summary(stem))
    return True


def lift() -> None:
    """Undo :func:`enforce`: every guarded name gets its original back."""
    while _PATCHES:
        owner, attribute, original = _PATCHES.pop()
        if original is _MISSING:
            delattr(owner, attribute)
        else:
            setattr(owner, attribute, original)
    _ENFORCED.clear()


def _in_a_kernel() -> bool:
    ipython = sys.modules.get("IPython")
    return ipython is not None and getattr(ipython, "get_ipython", lambda: None)() is not None


def summary(stem: str) -> str:
    """What the setup cell prints: the assignment's policy in a few lines."""
    lines = [f"Library policy of {stem}: graded answers may not use"]
    for group in _GROUPS[stem]:
        names = ", ".join(n.removeprefix("tensoradbook.") for n in group.names)
        lines.append(f"  {names}: {group.why}")
    allowed = ", ".join(n.removeprefix("tensoradbook.") for n in ALLOWED.get(stem, ()))
    if allowed:
        lines.append(f"  (allowed: {allowed})")
    return "\n".join(lines)


__all__ = ["ALLOWED", "AUDIT_EVENT", "CHECKS", "EXEMPT", "PLUMBING", "POLICIES", "USE_EVENT", "WATCHED", "Group",
           "LibraryPolicyError", "covers", "enforce", "explain", "forbidden", "library_caller", "lift", "locate",
           "modules", "plumbing", "reason", "refuse", "summary", "outside_code", "defined_in"]

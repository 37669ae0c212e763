"""The assignments as an instructor writes them: one file per chapter, ``course/exercises/<chapter>.py``.

Each file is the instructor's side of a chapter's exercises, in plain Python that runs top to bottom and that ruff
lints: the setup, then per exercise the data it gives, each part's answer (the instructor's solution), its test
(the chapter's check call on the answer) and any hidden tests. Cells are marked as in the percent format of
Jupyter's editors, ``# %% <kind> <exercise>[<part>] [points=N]``::

    \"\"\"Chapter 01: the introduction\"\"\"          the title (the docstring's first line)

    # %% setup                                    the setup cell: imports, shared data
    # %% text 4                                   an exercise the chapter does not set: its text, as # lines
    # %% given 3                                  the data an exercise gives (a read-only cell)
    # %% answer 3a                                the solution; the student's cell starts as `answer_3a = None`
    # %% test 3a points=2                         statements ending with the check call on the answer
    # %% hidden 3a                                more checks that only the autograder runs
    # %% note 1                                   a sentence after the exercise's points, as # lines

The prompt and the check call stay in the chapter (``notebooks/<chapter>.ipynb``); a part's test names the same
check call, with the answer's name in place of the chapter's ``None``. An answer cell that starts with its own stub
writes nbgrader's solution region itself (``### BEGIN SOLUTION`` ... ``### END SOLUTION``).

The files live in ``course/``, which the class server locks away from the students (classroom/hub.py), outside every
package: they are read as text, never imported, so Python leaves no compiled copy of them anywhere. Everything
that needs an exercise reads it here: the nbgrader sources (classroom/source.py), the grading through them, and the
static site's solution toggles (classroom/solutions.py).
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

from classroom.paths import EXERCISES
from tensoradbook import exercises

#: The cells of prose, written as ``#`` lines: the field of :class:`Exercise` each sets.
_PROSE = {"text": "text", "note": "extra"}
_MARKER = re.compile(r"^# %% ?(.*)$", re.M)
_HEADER = re.compile(r"(?P<kind>setup|text|note|given|answer|test|hidden)(?: (?P<number>\d+)(?P<label>[a-z]?))?"
                     r"(?: points=(?P<points>\d+))?$")


class AuthoringError(ValueError):
    """An exercise file that cannot be read, with the file and line named."""


@dataclass(frozen=True)
class Part:
    """One check call of an exercise: the answer cell and the graded test cell that checks it.

    ``answer`` is the name the check call passes as its answer, ``call`` that call as the file writes it and
    ``prelude`` the test's statements before it; ``solution`` the instructor's code that sets the answer (cut from
    the release by nbgrader); ``stub`` what the student's answer cell starts with (default ``<answer> = None``);
    ``hidden`` more checks that only the autograder runs.
    """

    answer: str
    call: str
    solution: str
    points: int = 1
    label: str = ""
    stub: str = ""
    hidden: str = ""
    prelude: str = ""

    def call_on(self, name: str) -> str:
        """The check call with ``name`` in place of the answer (e.g. a chapter's placeholder)."""
        tree = ast.parse(self.call, mode="eval")
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == self.answer:
                node.id = name
        return ast.unparse(tree)


@dataclass(frozen=True)
class Exercise:
    """An exercise: its text (read from the chapter unless ``text`` is given: an exercise of the assignment alone),
    the data it needs (``given``, a read-only code cell), its parts and a ``note`` after its points."""

    number: int
    parts: tuple[Part, ...]
    given: str = ""
    text: str = ""
    extra: str = ""

    @property
    def points(self) -> int:
        return sum(p.points for p in self.parts)


@dataclass(frozen=True)
class Assignment:
    """One chapter's assignment; ``stem`` is the chapter's file stem and the nbgrader assignment id."""

    stem: str
    title: str
    setup: str
    exercises: tuple[Exercise, ...]

    @property
    def points(self) -> int:
        return sum(e.points for e in self.exercises)


def _cells(path: Path, text: str) -> tuple[str, list[tuple[re.Match, str, int]]]:
    """The file's docstring and its cells: (the parsed header, the cell's code without trailing blank lines,
    the header's line number)."""
    markers = list(_MARKER.finditer(text))
    if not markers:
        raise AuthoringError(f"{path}: no cells (lines '# %% setup', '# %% answer 1', ...)")
    doc = ast.get_docstring(ast.parse(text[:markers[0].start()], str(path))) or ""
    cells = []
    for marker, end in zip(markers, [*(m.start() for m in markers[1:]), len(text)]):
        line = text.count("\n", 0, marker.start()) + 1
        header = _HEADER.match(marker.group(1).strip())
        if header is None:
            raise AuthoringError(f"{path}:{line}: '{marker.group(0)}' is no cell header of the forms the module "
                                 "classroom.assignments describes")
        cells.append((header, text[marker.end() + 1:end].rstrip("\n"), line))
    return doc, cells


def _comment_text(code: str) -> str:
    """Markdown written as ``#`` lines."""
    return "\n".join(re.sub(r"^# ?", "", line) for line in code.splitlines())


def _test(code: str, where: str) -> tuple[str, str, str]:
    """A test cell's statements before its check call, the call as written, and the answer's name."""
    body = ast.parse(code).body
    last = body[-1] if body else None
    if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and isinstance(last.value.func, ast.Name)
            and last.value.func.id.startswith("check_")):
        raise AuthoringError(f"{where}: a test ends with the check call, e.g. check_bezout(391, 299, answer_1)")
    prelude = "\n".join(code.splitlines()[:last.lineno - 1]).rstrip("\n")
    return prelude, ast.get_source_segment(code, last.value), answer_name(last.value, where)


def _arguments(call: ast.Call) -> dict[str, ast.expr]:
    """A check call's arguments by parameter name."""
    signature = inspect.signature(getattr(exercises, call.func.id))
    return signature.bind(*call.args, **{k.arg: k.value for k in call.keywords}).arguments


def answer_name(call: ast.Call, where: str = "") -> str:
    """The name a check call passes as its ``answer`` argument."""
    answer = _arguments(call).get("answer")
    if not isinstance(answer, ast.Name):
        raise AuthoringError(f"{where}: {call.func.id}'s answer is no name (an answer cell's variable or function)")
    return answer.id


def check_calls(code: str) -> list[ast.Call]:
    """The calls of ``check_*`` functions in a piece of code."""
    return [node for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name) and node.func.id.startswith("check_")]


def normalized_call(call: ast.Call) -> str:
    """A check call as text, every argument by name and the ``answer`` replaced by ``ANSWER``: a chapter's
    placeholder ``None`` (or ``my_hv``) and an assignment's answer compare equal."""
    arguments = _arguments(call)
    arguments["answer"] = ast.Name("ANSWER")
    return f"{call.func.id}({', '.join(f'{k}={ast.unparse(v)}' for k, v in arguments.items())})"


def _answer(code: str, where: str) -> tuple[str, str]:
    """The stub and the solution of an answer cell (the stub empty where it is the default)."""
    if "### BEGIN SOLUTION" not in code:
        return "", code
    region = re.fullmatch(r"(.*?)\n### BEGIN SOLUTION\n(.*?)\n### END SOLUTION", code, re.S)
    if region is None:
        raise AuthoringError(f"{where}: a stub, then the solution between '### BEGIN SOLUTION' and "
                             "'### END SOLUTION' lines, and nothing after them")
    return region.group(1), region.group(2)


def read(path: Path) -> Assignment:
    """One chapter's assignment from its file."""
    doc, cells = _cells(path, path.read_text(encoding="utf-8"))
    setup, exercises = "", {}
    for header, code, line in cells:
        kind, where = header["kind"], f"{path}:{line}"
        if kind == "setup":
            setup = code
            continue
        if header["number"] is None:
            raise AuthoringError(f"{where}: a '{kind}' cell names its exercise, e.g. '# %% {kind} 1'")
        exercise = exercises.setdefault(int(header["number"]), {"given": "", "text": "", "extra": "", "parts": {}})
        if kind == "given":
            exercise["given"] = code
        elif kind in _PROSE:
            exercise[_PROSE[kind]] = _comment_text(code)
        else:
            exercise["parts"].setdefault(header["label"], {})[kind] = (code, where, header["points"])
    if exercises and not setup:
        raise AuthoringError(f"{path}: no '# %% setup' cell")
    return Assignment(path.stem, doc.splitlines()[0] if doc else path.stem, setup,
                      tuple(_exercise(n, found) for n, found in exercises.items()))


def _exercise(number: int, found: dict) -> Exercise:
    parts = []
    for label, cells in found["parts"].items():
        if "answer" not in cells or "test" not in cells:
            where = next(iter(cells.values()))[1]
            raise AuthoringError(f"{where}: exercise {number}{label} needs an answer cell and a test cell")
        test, where, points = cells["test"]
        prelude, call, name = _test(test, where)
        stub, solution = _answer(*cells["answer"][:2])
        parts.append(Part(name, call, solution, points=int(points or 1), label=label, stub=stub,
                          hidden=cells.get("hidden", ("",))[0], prelude=prelude))
    return Exercise(number, tuple(parts), given=found["given"], text=found["text"],
                    extra=" ".join(found["extra"].splitlines()))


def read_all(folder: Path = EXERCISES) -> tuple[Assignment, ...]:
    """Every chapter's assignment, in the chapters' order."""
    return tuple(read(path) for path in sorted(folder.glob("*.py")))


#: Every assignment of the course, and each by its chapter's stem.
ASSIGNMENTS: tuple[Assignment, ...] = read_all()
BY_STEM = {a.stem: a for a in ASSIGNMENTS}

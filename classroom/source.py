"""The nbgrader source of every assignment, ``course/source/<chapter>/<chapter>.ipynb``, built from two homes.

The chapter (``notebooks/<chapter>.ipynb``) gives each exercise's prompt, read from its "Exercises" section, so an
assignment says what its chapter says; the chapter's exercise file (``course/exercises/<chapter>.py``,
:mod:`classroom.assignments`) gives the setup, the data, the solutions, the tests and the points. Every answer cell
assigns an answer variable (``answer_1 = None`` in the release) and every graded cell calls the chapter's check
function on it, prints the verdict and asserts it: the student sees the check's own words ("U is not unimodular:
det U = 2"), never the expected value. The generated notebooks are saved without outputs and committed
(``python -m classroom.course build-source``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from classroom.assignments import ASSIGNMENTS, Assignment, Part
from classroom.deadlines import load, with_due
from classroom.paths import COURSE, NOTEBOOKS

ASSERT_MESSAGE = "not right yet: see the feedback above"


# --- the chapters' exercise sections ----------------------------------------------------------------------

def exercise_cells(chapter: Path) -> list[dict]:
    """The cells of a chapter's "Exercises" section: from its heading to the next level-2 heading."""
    cells = json.loads(chapter.read_text())["cells"]
    start = None
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown" and re.search(r"^##\s+Exercises\s*$", "".join(cell["source"]), re.M):
            start = i
    if start is None:
        return []
    # the heading may close a cell of the chapter's last section: keep what follows it
    first = dict(cells[start])
    text = "".join(first["source"])
    first["source"] = text[re.search(r"^##\s+Exercises\s*$", text, re.M).start():]
    section = [first]
    for cell in cells[start + 1:]:
        if cell["cell_type"] == "markdown" and re.match(r"##\s", "".join(cell["source"])):
            break
        section.append(cell)
    return section


def exercise_texts(chapter: Path) -> tuple[str, dict[int, str]]:
    """The section's introduction (what comes before Exercise 1) and each exercise's text, by number."""
    markdown = "\n\n".join("".join(c["source"]) for c in exercise_cells(chapter) if c["cell_type"] == "markdown")
    markdown = re.sub(r"^##\s+Exercises\s*$", "", markdown, count=1, flags=re.M)
    pieces = re.split(r"(?=^\*\*Exercise \d+\b)", markdown, flags=re.M)
    intro, texts = pieces[0].strip(), {}
    for piece in pieces[1:]:
        number = int(re.match(r"\*\*Exercise (\d+)", piece).group(1))
        texts[number] = piece.strip()
    return intro, texts


# --- the source notebooks -----------------------------------------------------------------------------------

def _cell(cell_type: str, source: str, grade_id: str, *, grade=False, solution=False, locked=True,
          points=None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
            "task": False}
    if points is not None:
        meta["points"] = points
    cell = {"cell_type": cell_type, "metadata": {"nbgrader": meta}, "source": source}
    if cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def answer_source(part: Part) -> str:
    """The answer cell: the placeholder, then the solution, which nbgrader replaces by the code stub.

    ``make lint`` checks course/source/ too: a function of the solution that the placeholder ``None`` names is
    marked as meant to redefine it (F811). The release never shows the solution.
    """
    stub = part.stub or f"{part.answer} = None"
    solution = re.sub(rf"^(def {part.answer}\(.*:)$", r"\1  # noqa: F811", part.solution, flags=re.M)
    return f"{stub}\n### BEGIN SOLUTION\n{solution}\n### END SOLUTION"


def test_source(part: Part) -> str:
    """The graded cell: the test's own statements, the chapter's check on the answer, the verdict printed, then
    asserted, then the hidden tests."""
    lines = [part.prelude] if part.prelude else []
    lines += [f"result = {part.call}", "print(result)", f'assert result, "{ASSERT_MESSAGE}"']
    if part.hidden:
        lines += ["### BEGIN HIDDEN TESTS", part.hidden, "### END HIDDEN TESTS"]
    return "\n".join(lines)


def setup_source(assignment: Assignment) -> str:
    """The setup cell: the assignment's setup, with its library policy (tensoradbook/exercises/policy.py) put in
    place in the student's kernel, so that what graded answers may not use fails there before it fails in grading
    (where the sandbox has a copy of the library without it, classroom/library_policy.py)."""
    return ("from tensoradbook.exercises.policy import enforce  # what graded answers may not use of the library\n"
            f'{assignment.setup}\n\nenforce("{assignment.stem}")')


def source_notebook(assignment: Assignment, due: str = "") -> dict:
    """The instructor's notebook of one assignment, in nbgrader's cell metadata (schema 3); ``due``: its deadline's
    line for the header (classroom/deadlines.py)."""
    intro, texts = exercise_texts(NOTEBOOKS / f"{assignment.stem}.ipynb")
    n = len(assignment.exercises)
    header = "\n".join([
        f"# {assignment.title}: exercises",
        "",
        f"The exercises at the end of `notebooks/{assignment.stem}.ipynb`, as an assignment: {n} exercises, "
        f"**{assignment.points} points** in all.",
        "",
        "* Run the setup cell first, then each exercise's cells from top to bottom.",
        "* Write your answer in the cell that starts with `answer_... = None` (or the function named there), "
        "replacing `None`; leave the other cells as they are (they are read-only).",
        "* The test cell after each answer runs the chapter's check function and prints what is right or wrong, "
        "with a hint; it counts the points shown next to the exercise. Some tests run more checks when graded.",
        "* Before you submit: Kernel > Restart Kernel and Run All Cells, or the **Validate** button.",
        "* The setup cell prints what of the library your answers may not use here (what would give an answer away); "
        "using it raises an error, in this notebook and when graded.",
    ] + (["", intro] if intro else []))
    cells = [_cell("markdown", with_due(header, due), "header"), _cell("code", setup_source(assignment), "setup")]
    for ex in assignment.exercises:
        text = ex.text or texts[ex.number]
        text += f"\n\n*({ex.points} point{'s' if ex.points != 1 else ''})*"
        if ex.extra:
            text += f" {ex.extra}"
        tag = f"ex{ex.number}"
        cells.append(_cell("markdown", text, f"{tag}_text"))
        if ex.given:
            cells.append(_cell("code", ex.given, f"{tag}_given"))
        for part in ex.parts:
            pid = f"{tag}{part.label}"
            cells.append(_cell("code", answer_source(part), f"{pid}_answer", solution=True, locked=False))
            cells.append(_cell("code", test_source(part), f"{pid}_test", grade=True, points=part.points))
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python", "pygments_lexer": "ipython3"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _with_ids(nb: dict, stem: str) -> dict:
    # nbformat 4.5 wants a cell id; stable ids keep the committed notebooks' diffs small
    for i, cell in enumerate(nb["cells"]):
        cell["id"] = f"{stem.split('_')[0]}-{i:02d}"
        cell["source"] = cell["source"].splitlines(keepends=True)
        # jupyter's own key order
        ordered = {k: cell[k] for k in ("cell_type", "execution_count", "id", "metadata", "outputs", "source")
                   if k in cell}
        cell.clear()
        cell.update(ordered)
    return nb


def build_source(course: Path = COURSE) -> list[Path]:
    """Write ``course/source/<stem>/<stem>.ipynb`` for every assignment, with the deadlines of the course's
    deadlines.toml; returns the paths."""
    written, deadlines = [], load(course)
    for assignment in ASSIGNMENTS:
        path = course / "source" / assignment.stem / f"{assignment.stem}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        deadline = deadlines.get(assignment.stem)
        nb = _with_ids(source_notebook(assignment, deadline.shown if deadline else ""), assignment.stem)
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        written.append(path)
    return written


"""The static edition's solutions (classroom/solutions.py): one per exercise, from course/exercises, collapsed.

Every check call of every chapter's Exercises section gets the instructor's solution of the matching assignment
part, read from ``course/exercises/``, the home the course's sources are built from too (so the course and the site
cannot disagree), as a closed ``<details>`` block that the site's exporter renders; the chapters never change.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from classroom import assignments, source
from classroom import mathjax, paths, site
from classroom.solutions import solutions, with_solutions

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("assignment", assignments.ASSIGNMENTS, ids=lambda a: a.stem)
def test_every_exercise_of_the_chapter_gets_its_solution(assignment):
    path = REPO / "notebooks" / f"{assignment.stem}.ipynb"
    chapter_calls = [assignments.normalized_call(call) for cell in source.exercise_cells(path)
                     if cell["cell_type"] == "code" for call in assignments.check_calls("".join(cell["source"]))]
    known = solutions(assignment.stem)
    assert sorted(known) == sorted(chapter_calls)
    nb = nbformat.read(path, as_version=4)
    before = len(nb.cells)
    blocks = [c.source for c in with_solutions(nb, assignment.stem).cells if "site-solution" in c.source]
    assert len(nb.cells) - before == len(blocks) > 0
    for part in (p for ex in assignment.exercises if not ex.text for p in ex.parts):
        solution = part.solution.replace("  # noqa: E731", "")
        assert any(solution in block for block in blocks), (assignment.stem, part.answer)
    assert all(block.startswith('<details class="site-solution">') for block in blocks)  # closed until clicked
    assert "site-solution" not in path.read_text(encoding="utf-8")


def test_the_site_renders_the_solution_collapsed():
    nb = with_solutions(nbformat.read(REPO / "notebooks" / "04a_integer_equations.ipynb", as_version=4),
                        "04a_integer_equations")
    page, _ = site.make_exporter().from_notebook_node(nb, resources={"metadata": {"name": "04a"}, "site": {
        "assets": paths.ASSETS_URL, "mathjax_config": mathjax.MATHJAX_CONFIG, "icon_fonts": "", "binder_url": "",
        "prev": None, "next": None}})
    assert page.count('<details class="site-solution">') == 5
    assert "<details open" not in page

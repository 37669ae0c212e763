"""Solutions for self-study readers of the static edition, hidden by default, read from ``course/exercises/``.

The instructor's solution of each exercise lives in the chapter's exercise file (:mod:`classroom.assignments`).
:func:`with_solutions` puts it under the chapter's own exercise cell as a collapsed "Show a solution" block; the
exercise cell and the part are matched by their check call (:func:`classroom.assignments.normalized_call`). An
exercise that only the assignment sets (its text in the file) has no cell in the chapter and no block. Only the
static site (``classroom/site.py``) calls this: the notebooks, the releases and the feedback never carry a solution.
"""

from __future__ import annotations

import re

from nbformat.v4 import new_markdown_cell

from classroom.assignments import BY_STEM, check_calls, normalized_call

# what tells ruff a solution means it (a lambda bound to a name), not for a reader
_NOQA = re.compile(r"  # noqa: \w+$", re.M)


def solutions(stem: str) -> dict[str, str]:
    """A chapter's solutions by check call: the normalized call -> the solution's code."""
    assignment = BY_STEM.get(stem)
    if assignment is None:
        return {}
    return {normalized_call(check_calls(part.call)[0]): _NOQA.sub("", part.solution)
            for exercise in assignment.exercises if not exercise.text for part in exercise.parts}


def with_solutions(nb, stem: str):
    """``nb`` (a chapter, changed in place and returned) with a collapsed solution after each exercise cell."""
    known = solutions(stem)
    if not known:
        return nb
    cells, in_exercises = [], False
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type == "markdown" and re.search(r"^##\s", cell.source, re.M):
            in_exercises = bool(re.search(r"^##\s+Exercises\s*$", cell.source, re.M))
        if cell.cell_type != "code" or not in_exercises:
            continue
        shown = [known[key] for call in check_calls(cell.source) if (key := normalized_call(call)) in known]
        if shown:
            code = "\n".join(shown)
            cells.append(new_markdown_cell(
                f'<details class="site-solution"><summary>Show a solution</summary>\n\n'
                f"```python\n{code}\n```\n\n</details>"))
    nb.cells = cells
    return nb

"""Solutions for self-study readers of the static edition, hidden by default, built from ``course/source/``.

The instructor's solution of each exercise lives in the assignment's source notebook, between nbgrader's
``### BEGIN SOLUTION`` / ``### END SOLUTION`` markers. :func:`with_solutions` puts it under the chapter's own
exercise cell as a collapsed "Show a solution" block; the exercise cell and the assignment's test are matched
by their check call (:func:`classroom.course.normalized_call`), as the course's table is. Only the static site
(``classroom/site.py``) calls this: the notebooks, the releases and the feedback never carry a solution.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from nbformat.v4 import new_markdown_cell

from . import course as cc

_SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)\n?### END SOLUTION", re.S)


def solutions(stem: str, course: Path = cc.COURSE) -> dict[str, str]:
    """A chapter's solutions by check call: the normalized call -> the solution's code."""
    path = course / "source" / stem / f"{stem}.ipynb"
    if stem not in cc.BY_STEM or not path.exists():
        return {}
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    code = {c["metadata"].get("nbgrader", {}).get("grade_id"): "".join(c["source"]) for c in cells}
    found = {}
    for exercise in cc.BY_STEM[stem].exercises:
        for part in exercise.parts:
            match = _SOLUTION.search(code.get(f"ex{exercise.number}{part.label}_answer", ""))
            if "{answer}" in part.call and match:
                call = cc.check_calls(part.call.format(answer=part.answer))[0]
                found[cc.normalized_call(call)] = match.group(1).replace("  # noqa: F811", "").replace(
                    "  # noqa: E731", "")
    return found


def with_solutions(nb, stem: str, course: Path = cc.COURSE):
    """``nb`` (a chapter, changed in place and returned) with a collapsed solution after each exercise cell."""
    known = solutions(stem, course)
    if not known:
        return nb
    cells, in_exercises = [], False
    for cell in nb.cells:
        cells.append(cell)
        if cell.cell_type == "markdown" and re.search(r"^##\s", cell.source, re.M):
            in_exercises = bool(re.search(r"^##\s+Exercises\s*$", cell.source, re.M))
        if cell.cell_type != "code" or not in_exercises:
            continue
        shown = [known[key] for call in cc.check_calls(cell.source) if (key := cc.normalized_call(call)) in known]
        if shown:
            code = "\n".join(shown)
            cells.append(new_markdown_cell(
                f'<details class="site-solution"><summary>Show a solution</summary>\n\n'
                f"```python\n{code}\n```\n\n</details>"))
    nb.cells = cells
    return nb

"""The book as one edition: measured figures come from code, chapters name chapters that exist, times add up.

* No markdown cell of a chapter types a measured figure (a duration, a speed ratio, a percentage, a memory
  size): such a sentence is rendered by a code cell from a value computed in the chapter or read from the
  results of the last build (``notebooks/bookdata.py``). The allow-list holds figures that are not
  measurements of ours, each with its source (a paper, or the structure of an expression).
* No prose cites the project's tracker ("issue 14"): a reader of the book has no such thing.
* Every "chapter NN" a chapter mentions exists, and no chapter calls itself the last on the report.
* The start page's table of estimated times has every chapter, and each chapter's own estimate is the one
  :func:`bookdata.estimated_minutes` computes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]*.ipynb"))

MEASURED = re.compile(
    r"(?<![\w.^$])\d+(?:\.\d+)?"
    r"(?:\s*(?:ms|µs|us|ns|s|seconds?|minutes?|hours?)\b"   # durations
    r"|x(?=[\s,;:.)])"                                        # ratios: 0.09x
    r"|\s*times (?:faster|slower|as fast|the faster|the time|slower than)"  # ratios in words
    r"|\s*%"                                                  # shares
    r"|\s*(?:[KMG]i?B)\b)")                                   # memory

# (chapter stem, the figure as written): where it comes from. Not measurements of this book.
ALLOWED = {
    ("06b_gather_scatter", "32 times"): "the report's footnote 4 (slow-downs from atomic contention)",
    ("09b_tape_bounds", "64%"): "Naumann sec. 6: the OpenFOAM chain's optimum against the homogeneous modes",
    ("09b_tape_bounds", "4%"): "Naumann sec. 6: the same optimum against the best of the bounded ones",
}


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _markdown(path: Path) -> list[tuple[int, str]]:
    return [(i, "".join(c["source"])) for i, c in enumerate(_cells(path)) if c["cell_type"] == "markdown"]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_measured_figure_is_typed(path):
    typed = []
    for index, text in _markdown(path):
        text = re.sub(r"\$[^$]*\$", "", text)  # formulas are not figures
        for match in MEASURED.finditer(text):
            figure = match.group(0).strip()
            if not any(stem == path.stem and figure.startswith(allowed) for stem, allowed in ALLOWED):
                typed.append(f"cell {index}: {text[max(0, match.start() - 60):match.end() + 20]!r}")
    assert not typed, "measured figures typed in markdown (render them from code, notebooks/bookdata.py):\n" + \
        "\n".join(typed)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_prose_cites_the_tracker(path):
    for index, cell in enumerate(_cells(path)):
        texts = ["".join(cell["source"])] if cell["cell_type"] == "markdown" else [
            "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
            for o in cell.get("outputs", [])]
        for text in texts:
            assert not re.search(r"\bissue \d+", text), f"{path.stem} cell {index}: {text[:300]!r}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapters_named_exist(path):
    stems = {p.stem.split("_")[0] for p in CHAPTERS}
    for index, text in _markdown(path):
        assert "last chapter on the report" not in text, f"{path.stem} cell {index}"
        for number in re.findall(r"\b[Cc]hapters? (\d\d[ab]?)\b", text):
            assert number in stems, f"{path.stem} cell {index} names chapter {number}, which does not exist"


def test_the_start_page_times_every_chapter():
    sys.path.insert(0, str(NOTEBOOKS))
    import bookdata

    start = _cells(NOTEBOOKS / "00_start_here.ipynb")
    table = next("".join(o.get("text", "")) for c in start if c["cell_type"] == "code"
                 and "estimated_minutes" in "".join(c["source"]) for o in c["outputs"])
    for stem in bookdata.chapters():
        assert stem in table, f"the start page's table leaves out {stem}"
        total = bookdata.estimated_minutes(stem)["total"]
        assert re.search(rf"^{stem}\s.*\s{total}\s*$", table, re.M), (stem, total, table)
        chapter = _cells(NOTEBOOKS / f"{stem}.ipynb")
        shown = "".join("".join(o.get("data", {}).get("text/markdown", "")) for c in chapter
                        if c["cell_type"] == "code" and "estimated_time(" in "".join(c["source"]) for o in c["outputs"])
        assert f"About **{total} minutes**" in shown, (stem, shown)

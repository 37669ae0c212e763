"""The book as one edition: measured figures come from code, chapters name chapters that exist, times add up.

* No markdown cell of a chapter types a measured figure (a duration, a speed ratio, a percentage, a memory
  size, a share or a ratio in words: "two thirds of its time", "twice as fast", "hundreds of times slower"):
  such a sentence is rendered by a code cell from a value computed in the chapter or read from the results of
  the last build (``notebooks/bookdata.py``). The allow-list holds figures that are not measurements of ours,
  each with its source (a paper, or the structure of an expression).
* Nor does the text a code cell prints: in the literal part of every string and f-string of a code cell (and of
  ``notebooks/bookdata.py``, whose helpers write the chapters' sentences), a measured figure is an interpolated
  value, ``f"{seconds * 1e3:.0f} ms"``, never typed, ``"took 7 ms"``; format specifications (``:.1%``) are
  not text. And no figure in a code cell's printed output (its stream and ``text/markdown`` outputs) is typed
  anywhere in that cell's source, however the string was put together.
* No prose cites the project's tracker (an issue's number): a reader of the book has no such thing; the
  pattern is tests/test_habits.py's, which checks the code.
* Every "chapter NN" a chapter mentions exists, and no chapter calls itself the last on the report.
* The start page's table of estimated times has every chapter, and each chapter's own estimate is the one
  :func:`bookdata.estimated_minutes` computes.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import pytest

from test_habits import TRACKER

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]*.ipynb"))

MEASURED = re.compile(
    r"(?<![\w.^$])\d+(?:\.\d+)?"
    r"(?:\s*(?:ms|µs|us|ns|s|seconds?|minutes?|hours?)\b"   # durations
    r"|x(?=[\s,;:.)])"                                        # ratios: 0.09x
    r"|\s*times (?:faster|slower|as fast|the faster|the time|slower than)"  # ratios in words
    r"|\s*%"                                                  # shares
    r"|\s*(?:[KMG]i?B)\b)"                                     # memory
    # shares and ratios in words: "two thirds of its time", "a third of a millisecond", "twice as fast"
    r"|(?i:\b(?:half|(?:a|one|two) thirds?|(?:a|one|three) quarters?|(?:a|one) (?:fifth|tenth))"
    r" of (?:(?:a|an|its|the|their|our|each|every) )?(?:[\w-]+ )?"
    r"(?:time|run time|cost|work|(?:milli|micro|nano)?seconds?|minutes?|memory)\b"
    r"|\bhalf (?:the|its|their) (?:time|run time|cost|memory)\b"
    r"|\b(?:twice|thrice|half|(?:two|three|four|five|six|seven|eight|nine|ten|a hundred|a thousand) times)"
    r" (?:as (?:fast|slow|long|much)|faster|slower|longer)\b"
    r"|\b(?:tens|dozens|hundreds|thousands|millions) of times (?:faster|slower|more|less|as)\b"
    r"|\bfactor of (?:about |up to |nearly |almost )?\d[\d.,]*)")

# (chapter stem, the figure as written): where it comes from. Not measurements of this book.
ALLOWED = {
    ("01_introduction", "factor of 32"): "the report's footnote 4 (slow-downs from atomic contention)",
    ("06b_gather_scatter", "32 times"): "the report's footnote 4 (slow-downs from atomic contention)",
    ("09b_tape_bounds", "64%"): "Naumann sec. 6: the OpenFOAM chain's optimum against the homogeneous modes",
    ("09b_tape_bounds", "4%"): "Naumann sec. 6: the same optimum against the best of the bounded ones",
}


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _markdown(path: Path) -> list[tuple[int, str]]:
    return [(i, "".join(c["source"])) for i, c in enumerate(_cells(path)) if c["cell_type"] == "markdown"]


def _code(path: Path) -> list[tuple[int, dict]]:
    return [(i, c) for i, c in enumerate(_cells(path)) if c["cell_type"] == "code"]


#: Where an f-string interpolates a value: no figure's digit, and no word of one.
FIELD = "\N{WHITE SQUARE}"


def _literal_texts(source: str) -> list[str]:
    """The literal text of every string and f-string in Python ``source`` (a code cell's, IPython's ``%`` and
    ``!`` lines left out), docstrings excepted, and of every ``print`` call's arguments joined as it joins them:
    each interpolated value is :data:`FIELD` unless it is a number typed in the code (``f"{4} ms"``,
    ``print("took", 7, "ms")``), and a format specification (``:.1%``) is not text. Implicitly joined literals
    (``"a" f"b"``) are one text, so a sentence keeps its context."""
    source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    tree = ast.parse(source)

    def text(node) -> str:
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float)):
            return str(node.value)
        if isinstance(node, ast.JoinedStr):
            return "".join(text(value) for value in node.values)
        if isinstance(node, ast.FormattedValue) and node.format_spec is None:
            return text(node.value)
        return FIELD

    inside = set()  # parts of an f-string, format specs and docstrings: not text of their own, or not printed
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            inside.add(id(node.body[0].value))
        elif isinstance(node, ast.JoinedStr):
            inside.update(id(value) for value in node.values if isinstance(value, ast.Constant))
        elif isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            inside.update(id(part) for part in ast.walk(node.format_spec))
    texts = [text(node) for node in ast.walk(tree) if id(node) not in inside and (
        isinstance(node, ast.JoinedStr) or isinstance(node, ast.Constant) and isinstance(node.value, str))]
    texts += [" ".join(text(argument) for argument in node.args) for node in ast.walk(tree)
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"]
    return texts


def _printed(cell: dict) -> str:
    """What a code cell printed: its stream outputs and its ``text/markdown`` ones (:func:`bookdata.prose`)."""
    return "".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
                   for o in cell.get("outputs", []))


def _figures(stem: str, text: str) -> list[re.Match]:
    """The measured figures in ``text`` (outside ``$...$`` formulas) that the allow-list does not hold."""
    text = re.sub(r"\$[^$]*\$", lambda formula: " " * len(formula.group(0)), text)  # formulas are not figures
    return [match for match in MEASURED.finditer(text)
            if not any(stem == allowed_stem and match.group(0).strip().startswith(allowed)
                       for allowed_stem, allowed in ALLOWED)]


def _context(where: str, match: re.Match) -> str:
    text = match.string
    return f"{where}: {text[max(0, match.start() - 60):match.end() + 20]!r}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_measured_figure_is_typed(path):
    typed = [_context(f"cell {index}", match) for index, text in _markdown(path)
             for match in _figures(path.stem, text)]
    assert not typed, "measured figures typed in markdown (render them from code, notebooks/bookdata.py):\n" + \
        "\n".join(typed)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_measured_figure_is_typed_in_what_code_prints(path):
    typed = []
    for index, cell in _code(path):
        source = "".join(cell["source"])
        typed += [_context(f"cell {index}, a string in its code", match) for text in _literal_texts(source)
                  for match in _figures(path.stem, text)]
        # a figure printed as it stands in the cell's source was typed there, however the string was put together
        typed += [_context(f"cell {index}, its output", match) for match in _figures(path.stem, _printed(cell))
                  if match.group(0).strip() in source]
    assert not typed, ("measured figures typed in a code cell's text (interpolate them from a record, "
                       "bookdata.results, or from a value the chapter computed):\n" + "\n".join(dict.fromkeys(typed)))


def test_no_measured_figure_is_typed_in_bookdata():
    texts = _literal_texts((NOTEBOOKS / "bookdata.py").read_text(encoding="utf-8"))
    typed = [_context("notebooks/bookdata.py", match) for text in texts for match in _figures("bookdata", text)]
    assert not typed, "measured figures typed in bookdata's sentences:\n" + "\n".join(typed)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_prose_cites_the_tracker(path):
    for index, cell in enumerate(_cells(path)):
        texts = ["".join(cell["source"])] if cell["cell_type"] == "markdown" else [
            "".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
            for o in cell.get("outputs", [])]
        for text in texts:
            assert not TRACKER.search(text), f"{path.stem} cell {index}: {text[:300]!r}"


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

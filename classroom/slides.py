"""Slide metadata for the chapters, so that each chapter is a talk (``make slides CHAPTER=...``).

``python -m classroom.slides`` writes each cell's ``metadata.slideshow.slide_type`` from its place in the
chapter, by one rule (:func:`slide_types`), and nothing else; ``--check`` only says which chapters differ:

* a ``#`` or ``##`` heading starts a slide, a ``###`` heading a subslide (reveal.js's vertical slides);
* other prose after code starts a subslide too;
* a cell that would take the slide it continues past :data:`BUDGET_PX` starts a subslide, its height estimated
  from its text and stored outputs (:func:`estimated_height`) with each block counted at most
  :data:`FRAME_PX`: on the screen (``classroom/voila_slides``) a slide is 1280 x 720 pixels, and the tallest
  code and outputs of a fuller one scroll or shrink in frames, so a long listing stays with the words that
  introduce it, while prose that runs past the bottom goes on on a next slide, cut after a sentence, and a formula
  wider than the slide is scaled to its width (both as the slides are drawn, from what the browser measures);
* a code cell that shows a widget comes in as a fragment, after the words that introduce it;
* code cells that only import, assign or define (no output) are speaker notes: they still run, the hall does not
  read them, the speaker view (S) shows them;
* everything else continues the slide it is on (``-``).
"""

from __future__ import annotations

import argparse
import base64
import math
import re
import struct
import sys
from pathlib import Path

import nbformat

from classroom.paths import NOTEBOOKS, WIDGET_VIEW_MIME


#: A slide's height for its cells: 720 pixels less the slide's padding and some slack for the estimate.
BUDGET_PX = 620
#: The most one block (prose, code, an output) is counted at: the height a long one is framed to, about.
FRAME_PX = 380
# The slides' type (tensoradbook-slides.css): prose 24 px on 32 px lines, code 18 px on 24, output text 17 on 22,
# in 1200 pixels of width.
PROSE_LINE, PROSE_CHARS, CODE_LINE, CODE_CHARS, TEXT_LINE, TEXT_CHARS = 32, 95, 24, 105, 22, 110
HEADING_PX = {1: 60, 2: 52, 3: 46}
WIDTH_PX = 1200


def _shows_widget(cell) -> bool:
    return any(WIDGET_VIEW_MIME in output.get("data", {}) for output in cell.get("outputs", []))


def _setup_only(cell) -> bool:
    """No output, and every top-level line imports, assigns or defines (a def or class body is indented)."""
    top = [line for line in cell.source.splitlines()
           if line.strip() and not line[0].isspace() and not line.startswith(("#", ")", "]", "}"))]
    return not cell.get("outputs") and bool(top) and all(
        re.match(r"(import |from \S+ import |def |class |@|%)", line) or re.match(r"[A-Za-z_][\w, ]*= ", line)
        for line in top)


def _lines(text: str, chars: int) -> int:
    return sum(max(1, math.ceil(len(line) / chars)) for line in text.splitlines())


def _png_height(data: str) -> int:
    """The height a stored PNG is shown at: its own, or less where it is wider than the slide."""
    width, height = struct.unpack(">II", base64.b64decode(data[:64])[16:24])
    return round(height * min(1, WIDTH_PX / width))


def _prose_height(markdown: str) -> int:
    height = 0
    for block in re.split(r"\n\s*\n", markdown.strip()):
        heading = re.match(r"(#+) ", block)
        if heading:
            height += HEADING_PX.get(len(heading.group(1)), HEADING_PX[3])
        else:
            height += _lines(block, PROSE_CHARS) * PROSE_LINE + 10 * (1 + block.count("$$"))
    return height


def _output_height(output) -> int:
    data = output.get("data", {})
    if "image/png" in data:  # a figure, or a widget's picture of itself, under its controls
        return _png_height(data["image/png"]) + (60 if WIDGET_VIEW_MIME in data else 0)
    if "text/html" in data:
        html = "".join(data["text/html"])
        return 30 + 30 * html.count("<tr") if "<tr" in html else _prose_height(html)
    if "text/markdown" in data:
        return _prose_height("".join(data["text/markdown"]))
    if "text/latex" in data:
        return 50
    text = output.get("text") or "".join(data.get("text/plain", ""))
    return _lines(text, TEXT_CHARS) * TEXT_LINE + 10


def estimated_height(cell) -> int:
    """About how tall ``cell`` is on a slide, each block counted at most :data:`FRAME_PX`."""
    if cell.cell_type == "markdown":
        return min(FRAME_PX, _prose_height(cell.source))
    code = min(FRAME_PX, _lines(cell.source, CODE_CHARS) * CODE_LINE + 16)
    return code + sum(min(FRAME_PX, _output_height(o)) for o in cell.get("outputs", []))


def slide_types(notebook) -> list[str]:
    """The slide type of every cell of ``notebook``, by the rule of this module's docstring."""
    types, after_code, height, holds = [], False, 0, False
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            heading = re.match(r"(#+) ", cell.source.lstrip())
            if index == 0 or (heading and len(heading.group(1)) <= 2):
                kind = "slide"
            elif heading or after_code:
                kind = "subslide"
            else:
                kind = "-"
            after_code = False
        elif cell.cell_type == "code":
            kind = "fragment" if _shows_widget(cell) else "notes" if _setup_only(cell) else "-"
            after_code = kind != "notes" or after_code
        else:
            kind = "skip"
        if kind in ("slide", "subslide", "-", "fragment"):
            cell_height = estimated_height(cell)
            if kind in ("-", "fragment") and holds and height + cell_height > BUDGET_PX:
                kind = "subslide"
            if kind in ("slide", "subslide"):
                height, holds = 0, False
            height += cell_height
            # a heading alone holds nothing yet: what it heads stays with it
            holds = holds or not (cell.cell_type == "markdown" and re.fullmatch(r"#+ [^\n]*", cell.source.strip()))
        types.append(kind)
    return types


def apply(path: Path, write: bool = True) -> bool:
    """Set the slide types of one chapter; True if they changed (or, with ``write=False``, would change)."""
    notebook = nbformat.read(path, as_version=4)
    changed = False
    for cell, kind in zip(notebook.cells, slide_types(notebook)):
        if cell.metadata.get("slideshow", {}).get("slide_type") != kind:
            cell.metadata["slideshow"] = {"slide_type": kind}
            changed = True
    if changed and write:
        nbformat.write(notebook, path)
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m classroom.slides", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report chapters whose slide types differ")
    args = parser.parse_args(argv)
    stale = [p.name for p in sorted(NOTEBOOKS.glob("*.ipynb")) if apply(p, write=not args.check)]
    verb = "differ" if args.check else "updated"
    print(f"{verb}: {', '.join(stale)}" if stale else "every chapter's slide types are up to date")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())

"""Slide metadata for the chapters, so that each chapter is a talk (``make slides CHAPTER=...``).

``python -m classroom.slides`` writes each cell's ``metadata.slideshow.slide_type`` from its place in the
chapter, by one rule (:func:`slide_types`), and nothing else; ``--check`` only says which chapters differ:

* a ``#`` or ``##`` heading starts a slide, a ``###`` heading a subslide (reveal.js's vertical slides);
* other prose after code starts a subslide too, so that no slide outgrows the screen;
* a code cell that shows a widget comes in as a fragment, after the words that introduce it;
* code cells that only import, assign or define (no output) are skipped: they still run, the hall does not read them;
* everything else continues the slide it is on (``-``).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = REPO / "notebooks"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def _shows_widget(cell) -> bool:
    return any(WIDGET_MIME in output.get("data", {}) for output in cell.get("outputs", []))


def _setup_only(cell) -> bool:
    """No output, and every top-level line imports, assigns or defines (a def or class body is indented)."""
    top = [line for line in cell.source.splitlines()
           if line.strip() and not line[0].isspace() and not line.startswith(("#", ")", "]", "}"))]
    return not cell.get("outputs") and bool(top) and all(
        re.match(r"(import |from \S+ import |def |class |@|%)", line) or re.match(r"[A-Za-z_][\w, ]*= ", line)
        for line in top)


def slide_types(notebook) -> list[str]:
    """The slide type of every cell of ``notebook``, by the rule of this module's docstring."""
    types, after_code = [], False
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
            kind = "fragment" if _shows_widget(cell) else "skip" if _setup_only(cell) else "-"
            after_code = kind != "skip" or after_code
        else:
            kind = "skip"
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
    stale = [p.name for p in sorted(NOTEBOOK_DIR.glob("*.ipynb")) if apply(p, write=not args.check)]
    verb = "differ" if args.check else "updated"
    print(f"{verb}: {', '.join(stale)}" if stale else "every chapter's slide types are up to date")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())

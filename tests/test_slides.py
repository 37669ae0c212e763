"""Every chapter is a talk: its slide metadata follows classroom.slides' rule, with several slides each."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from classroom import paths, slides

CHAPTERS = sorted(paths.NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_slide_metadata_follows_the_rule(path: Path):
    notebook = nbformat.read(path, as_version=4)
    stored = [cell.metadata.get("slideshow", {}).get("slide_type") for cell in notebook.cells]
    assert stored == slides.slide_types(notebook), (
        f"{path.name}: slide metadata out of date: run `python -m classroom.slides`")
    assert stored[0] == "slide" and stored.count("slide") >= 2, f"{path.name} is not a talk of several slides"


def test_rule_on_a_small_notebook():
    v4 = nbformat.v4
    notebook = v4.new_notebook(cells=[
        v4.new_markdown_cell("# Title"),
        v4.new_code_cell("import numpy as np\n\ndef show(x):\n    print(x)"),
        v4.new_markdown_cell("Words before a widget."),
        v4.new_code_cell("Widget()", outputs=[v4.new_output(
            "display_data", data={"application/vnd.jupyter.widget-view+json": {"model_id": "m"}})]),
        v4.new_markdown_cell("Prose after code."),
        v4.new_markdown_cell("### A subsection"),
        v4.new_markdown_cell("## A section"),
        v4.new_code_cell("x = 1\nx", outputs=[v4.new_output("execute_result", data={"text/plain": "1"})]),
    ])
    assert slides.slide_types(notebook) == ["slide", "notes", "-", "fragment", "subslide", "subslide", "slide", "-"]


def test_a_cell_that_would_overfill_its_slide_starts_a_subslide():
    v4 = nbformat.v4
    listing = "\n".join(f"line {k}" for k in range(40))  # 40 lines of output: framed, counted at FRAME_PX
    notebook = v4.new_notebook(cells=[
        v4.new_markdown_cell("## A section"),
        v4.new_code_cell("print(listing)", outputs=[v4.new_output("stream", name="stdout", text=listing)]),
        v4.new_code_cell("print(listing)", outputs=[v4.new_output("stream", name="stdout", text=listing)]),
    ])
    assert slides.estimated_height(notebook.cells[1]) <= slides.FRAME_PX + 40
    # the heading keeps the first listing; the second would take the slide past BUDGET_PX
    assert slides.slide_types(notebook) == ["slide", "-", "subslide"]

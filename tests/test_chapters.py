"""The structure every chapter promises, and links that lead somewhere.

The project's rule: every chapter (notebooks 01-12) has objectives, an estimated time, a summary, links and
exercises, each under its own markdown heading; objectives and estimated time come before the chapter's first
code cell, the links come after the exercises and lead to the previous and the next chapter. Every relative
link in a markdown cell of any notebook must point to a file that exists (the lecture halls are offline, so the
book links only to its own files).
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
ALL = sorted(p for p in NOTEBOOKS.glob("*.ipynb") if not p.name.startswith("."))
CHAPTERS = [p for p in ALL if re.match(r"(0[1-9]|1[0-9])[a-z]?_", p.name)]
REQUIRED = ("Objectives", "Estimated time", "Summary", "Links", "Exercises")

HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HTML_LINK = re.compile(r"""(?:href|src)\s*=\s*["']([^"']+)["']""")


def _read(path: Path):
    return nbformat.read(path, as_version=4)


def _headings(cell) -> list[str]:
    text = FENCE.sub("", cell.source)
    return [m.group(1) for line in text.splitlines() if (m := HEADING.match(line))]


def _links(source: str) -> list[str]:
    text = CODE_SPAN.sub("", FENCE.sub("", source))
    return [m.group(1) for m in LINK.finditer(text)] + HTML_LINK.findall(text)


def _first_index(cells, heading: str) -> int | None:
    for k, cell in enumerate(cells):
        if cell.cell_type == "markdown" and any(h.lower() == heading.lower() for h in _headings(cell)):
            return k
    return None


def test_the_chapters_are_there():
    numbers = {re.match(r"(\d\d)", p.name).group(1) for p in CHAPTERS}
    assert numbers == {f"{k:02}" for k in range(1, 13)}, sorted(p.name for p in CHAPTERS)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_has_every_section(path):
    cells = _read(path).cells
    missing = [h for h in REQUIRED if _first_index(cells, h) is None]
    assert not missing, f"{path.name} has no markdown heading {missing}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_objectives_and_time_come_first_links_last(path):
    cells = _read(path).cells
    first_code = next((k for k, c in enumerate(cells) if c.cell_type == "code"), len(cells))
    for heading in ("Objectives", "Estimated time"):
        k = _first_index(cells, heading)
        assert k is not None and k < first_code, f"{path.name}: '{heading}' must come before the first code cell"
    links, exercises = _first_index(cells, "Links"), _first_index(cells, "Exercises")
    assert links is not None and exercises is not None and links > exercises, (
        f"{path.name}: the Links come after the Exercises")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_links_lead_to_the_neighbouring_chapters(path):
    cells = _read(path).cells
    targets = {urlsplit(t).path for t in _links(cells[_first_index(cells, "Links")].source)}
    k = ALL.index(path)
    neighbours = [ALL[k - 1].name] + ([ALL[k + 1].name] if k + 1 < len(ALL) else [])
    missing = [name for name in neighbours if name not in targets]
    assert not missing, f"{path.name}: the Links cell does not link to {missing}"


def test_start_page_gives_a_reading_time():
    cells = _read(NOTEBOOKS / "00_start_here.ipynb").cells
    assert any(c.cell_type == "markdown" and "estimated time" in c.source.lower() for c in cells)


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_relative_links_point_to_existing_files(path):
    broken = []
    for k, cell in enumerate(_read(path).cells):
        if cell.cell_type != "markdown":
            continue
        for target in _links(cell.source):
            parts = urlsplit(target)
            if parts.scheme or parts.netloc or not parts.path:  # external URLs, mailto:, #anchors
                continue
            if not (path.parent / unquote(parts.path)).exists():
                broken.append(f"cell {k}: {target}")
    assert not broken, f"{path.name}: links to missing files:\n" + "\n".join(broken)

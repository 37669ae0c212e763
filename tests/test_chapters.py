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


# --- the map of the book: one table of prerequisites, the chapters' "Before you start" lines, the picture ---

BEFORE = re.compile(r"^\*\*Before you start:\*\*(.*?)(?:\n\s*\n|\Z)", re.S | re.M)
MAP = NOTEBOOKS / "figures" / "book_map.svg"


def _table() -> dict[str, tuple[str, ...]]:
    import sys

    sys.path.insert(0, str(NOTEBOOKS))
    import bookdata

    return bookdata.PREREQUISITES


def _number(path: Path) -> str:
    return re.match(r"(\d\d[a-z]?)_", path.name).group(1)


def test_the_prerequisite_table_names_every_chapter_once_and_has_no_cycle():
    table = _table()
    assert sorted(table) == sorted(_number(p) for p in CHAPTERS), "one entry per chapter, no other"
    order = [_number(p) for p in CHAPTERS]
    for chapter, needs in table.items():
        assert len(set(needs)) == len(needs), f"{chapter} names a prerequisite twice"
        unknown = [n for n in needs if n not in table]
        assert not unknown, f"{chapter} needs chapters that do not exist: {unknown}"
        # in reading order every prerequisite comes first, which also rules out a cycle
        later = [n for n in needs if order.index(n) >= order.index(chapter)]
        assert not later, f"{chapter} needs {later}, which come after it in the book"


def _before_you_start(cells) -> tuple[int, str] | None:
    for k, cell in enumerate(cells):
        if cell.cell_type == "markdown" and (m := BEFORE.search(cell.source)):
            return k, m.group(1)
    return None


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_before_you_start_names_the_table_s_prerequisites(path):
    cells = _read(path).cells
    found = _before_you_start(cells)
    assert found is not None, f"{path.name} has no paragraph starting '**Before you start:**'"
    k, text = found
    named = set(re.findall(r"\b(\d\d[ab]?)\b", re.sub(r"\]\([^)]*\)", "]", text)))
    expected = set(_table()[_number(path)])
    assert named == expected, (f"{path.name} cell {k}: 'Before you start' names chapters {sorted(named)}, "
                               f"notebooks/bookdata.py PREREQUISITES says {sorted(expected)}")
    # it belongs to the chapter's opening: with the Objectives and the Estimated time, before the first section
    opening = [_first_index(cells, "Objectives"), _first_index(cells, "Estimated time")]
    first_section = next((j for j, c in enumerate(cells) if j > max(opening) and c.cell_type == "markdown"
                          and _headings(c)), len(cells))
    assert min(opening) <= k < first_section, (
        f"{path.name}: 'Before you start' (cell {k}) belongs next to the Objectives, before the first section")


def test_the_book_map_is_drawn_from_the_table():
    import sys

    sys.path.insert(0, str(NOTEBOOKS.parent / "benchmarks"))
    import book_map
    import bookdata

    svg = MAP.read_text(encoding="utf-8")
    assert f"digest {bookdata.prerequisites_digest()}" in svg, (
        "notebooks/figures/book_map.svg was drawn from another table: run .venv/bin/python benchmarks/book_map.py")
    assert set(re.findall(r'<g id="node-([0-9a-z]+)"', svg)) == set(bookdata.PREREQUISITES)
    drawn = set(re.findall(r'<g id="edge-([0-9a-z]+)-([0-9a-z]+)"', svg))
    assert drawn == book_map.transitive_reduction(bookdata.PREREQUISITES)


def test_the_start_page_shows_the_map_and_the_prerequisites():
    cells = _read(NOTEBOOKS / "00_start_here.ipynb").cells
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    assert "## Before you start" in text, "the start page states the book's prerequisites"
    import sys

    sys.path.insert(0, str(NOTEBOOKS))
    import bookdata

    shown = [o.get("data", {}).get("image/svg+xml", "") for c in cells
             if c.cell_type == "code" and "book_map.svg" in c.source for o in c.outputs]
    assert any(f"digest {bookdata.prerequisites_digest()}" in svg for svg in shown), (
        "the start page shows notebooks/figures/book_map.svg as drawn from the table now: execute "
        "00_start_here.ipynb again")

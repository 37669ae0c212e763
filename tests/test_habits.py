"""Habits of the code that a review forgets: checked here, so that they do not slip again.

* No code, test or benchmark cites the project's tracker: a reader of the source has no such thing, and a
  comment says why in words. (The chapters' prose is tests/test_book.py's concern, with the same pattern.)
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the word and a number, in any case (an upstream project's "nbval issue #" and number is a citation a reader can
#: follow)
TRACKER = re.compile(r"\bissue \d+", re.IGNORECASE)
#: the code, its tests and benchmarks (the notebooks: tests/test_book.py)
CODE = ["tensoradbook", "widgets", "tests", "benchmarks", "classroom", "hub", "demos"]
CODE_SUFFIXES = {".py", ".toml", ".cfg", ".yaml", ".yml", ".sh"}


def code_files() -> list[Path]:
    files = [ROOT / "Makefile", ROOT / "pyproject.toml"]
    for folder in CODE:
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in CODE_SUFFIXES and "__pycache__" not in p.parts]
    return sorted(files)


def test_no_code_cites_the_tracker():
    hits = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
            for path in code_files()
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if TRACKER.search(line)]
    assert not hits, "tracker numbers; say why in words:\n" + "\n".join(hits)


def test_the_tracker_check_sees_the_code():
    names = {p.relative_to(ROOT).as_posix() for p in code_files()}
    assert {"tests/test_habits.py", "tensoradbook/lang/parser.py", "widgets/base.py", "benchmarks/capstone.py"} <= names
    number = "23"  # not typed after the word, or this file would cite the tracker
    assert TRACKER.search(f"as Issue {number} said") and not TRACKER.search(f"nbval issue #{number}")

"""The book's figures from code: the chapters import this to quote measured numbers, never to type them.

A chapter that states a measured figure (a time, a speed ratio, a memory size) computes it in a cell above or
reads it here from ``benchmarks/results/<name>.json``, the files the last ``make book`` wrote in one build, and
renders its sentence with :func:`prose`. The estimated times of the chapters (:func:`estimated_minutes`) come
from the chapters themselves: their words at a reading pace, their run time in that build
(``benchmarks/results/book.json``) and a fixed time per exercise. ``tests/test_book.py`` checks that no markdown
cell types a measured number.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path

from IPython.display import Markdown

NOTEBOOKS = Path(__file__).resolve().parent


def _results_folder() -> Path:
    # beside the chapters in the repository; for a copy of the chapters elsewhere, beside the installed package
    import tensoradbook

    beside = NOTEBOOKS.parent / "benchmarks" / "results"
    installed = Path(tensoradbook.__file__).resolve().parents[1] / "benchmarks" / "results"
    return beside if beside.is_dir() or not installed.is_dir() else installed


RESULTS = _results_folder()
#: Words a minute of technical prose with formulas: an assumption (about half a novel's pace), not measured.
READING_PACE = 120
#: Minutes a student spends on one exercise, trying and reading the feedback: an assumption, not measured.
EXERCISE_MINUTES = 10


def results(name: str) -> dict:
    """The results file ``benchmarks/results/<name>.json`` of the last build."""
    return json.loads((RESULTS / f"{name}.json").read_text())


def prose(text: str) -> Markdown:
    """A paragraph with computed figures in it, rendered as the chapter's own text."""
    return Markdown(text)


def ms(seconds: float) -> str:
    """A duration in milliseconds: three significant figures, whole milliseconds from 100 up."""
    milliseconds = seconds * 1e3
    return f"{milliseconds:,.0f} ms" if milliseconds >= 100 else f"{milliseconds:.3g} ms"


def ratio(ours: float, theirs: float) -> str:
    """How many times ``ours`` takes ``theirs``: "1.34x"."""
    return f"{ours / theirs:.2g}x"


def load_text(record: dict) -> str:
    """The machine and load a results file was measured on, in words."""
    machine, load = record.get("machine", {}), record.get("load_average", {})
    where = f"{machine.get('cpus', '?')} cores ({machine.get('cpu', 'unknown CPU')})"

    def one_minute(value):  # some benchmarks record the 1, 5 and 15 minute averages
        return value[0] if isinstance(value, list) else value

    if "before" in load:
        where += f", load average {one_minute(load['before']):.1f} before"
        if "after" in load:
            where += f" and {one_minute(load['after']):.1f} after"
    return where


def _chapter(stem: str) -> dict:
    return json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text(encoding="utf-8"))


def _words(nb: dict) -> int:
    text = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return len(re.findall(r"\w+", re.sub(r"\$[^$]*\$", " formula ", text)))


def exercise_count(nb: dict) -> int:
    """How many exercises a chapter sets (its "**Exercise N" paragraphs)."""
    text = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return len(set(re.findall(r"\*\*Exercise (\d+)", text)))


def estimated_minutes(stem: str) -> dict:
    """A chapter's estimated time in minutes: ``reading`` (its words at :data:`READING_PACE`, rounded up to 5
    minutes), ``running`` (its run time in the last build, rounded up to a minute), ``exercises`` and ``total``."""
    nb = _chapter(stem)
    build = results("book") if (RESULTS / "book.json").exists() else {}
    seconds = build.get("chapters", {}).get(stem, {}).get("run_s", 0.0)
    times = {"reading": 5 * math.ceil(_words(nb) / READING_PACE / 5), "running": math.ceil(seconds / 60),
             "exercises": EXERCISE_MINUTES * exercise_count(nb)}
    times["total"] = sum(times.values())
    return times


def estimated_time(stem: str) -> Markdown:
    """The "Estimated time" paragraph of chapter ``stem``."""
    t = estimated_minutes(stem)
    exercises = exercise_count(_chapter(stem))
    running = f"{t['running']} minute{'s' if t['running'] != 1 else ''}"
    return prose(f"About **{t['total']} minutes**: {t['reading']} to read, {running} for the cells to run "
                 f"(measured in the last build of the book), {t['exercises']} for the {exercises} exercises "
                 f"(about {EXERCISE_MINUTES} minutes each).")


def chapters() -> list[str]:
    """The chapters' stems, in order (the start page excluded)."""
    return sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]*.ipynb") if not p.stem.startswith("00"))


def build_stamp() -> str:
    """When and where the last ``make book`` ran: date, machine, load and versions."""
    build = results("book")
    versions = ", ".join(f"{k} {v}" for k, v in build["versions"].items())
    return (f"This edition was built on {build['date']} on {load_text(build)}; {versions}.")


#: The map of the book: each chapter (by its number) and the chapters to have read before it. Every chapter's
#: "Before you start" line names exactly these (``tests/test_chapters.py``), and ``benchmarks/book_map.py`` draws
#: the dependency graph from this table alone (``notebooks/figures/book_map.svg``). A prerequisite is a chapter
#: whose ideas or tools this one uses directly; one already implied by another may still be named, and the
#: picture leaves out an arrow that a longer path already implies.
PREREQUISITES: dict[str, tuple[str, ...]] = {
    "01": (),
    "02": ("01",),
    "03": ("02",),
    "04a": ("01",),
    "04b": ("04a",),
    "05": ("02", "03", "04a", "04b"),
    "06a": ("05",),
    "06b": ("06a",),
    "07": ("05", "06a"),
    "08": ("02", "03"),
    "09a": ("02", "03"),
    "09b": ("09a",),
    "10": ("02", "05", "06a"),
    "11": ("06b", "10"),
    "12": ("02", "04a", "04b", "05"),
}


def prerequisites_digest() -> str:
    """A digest of :data:`PREREQUISITES`: the book map stores it, so a stale picture is detected."""
    canonical = json.dumps({k: list(v) for k, v in sorted(PREREQUISITES.items())}, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]

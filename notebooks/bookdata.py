"""The book's figures from code: the chapters import this to quote measured numbers, never to type them.

A chapter that states a measured figure (a time, a speed ratio, a memory size) computes it in a cell above or
reads it here from ``benchmarks/results/<name>.json``, the files the last ``make book`` wrote in one build, and
renders its sentence with :func:`prose`. The estimated times of the chapters (:func:`estimated_minutes`) come
from the chapters themselves: their words at a reading pace, their run time in that build
(``benchmarks/results/book.json``) and each exercise's minutes as its author states them in the exercise's own
metadata (:func:`exercise_minutes`). ``tests/test_book.py`` checks that no markdown cell types a measured number.
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
#: The key of an exercise's metadata, on the markdown cell that sets it: ``{"tensoradbook": {"exercise": N,
#: "minutes": M}}``, M the minutes its author estimates a student takes (reading it, working it out, reading the
#: check's feedback and trying again).
METADATA_KEY = "tensoradbook"


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


def exercise_minutes(nb: dict, stem: str = "the chapter") -> dict[int, int]:
    """Each exercise's minutes, by number, as its author states them in the metadata of the markdown cell that
    sets it (:data:`METADATA_KEY`). There is no default: an exercise without its minutes, metadata on a cell that
    sets another exercise or none, a cell that sets two, and minutes that are not a positive whole number are
    errors (ValueError)."""
    minutes: dict[int, int] = {}
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        numbers = [int(n) for n in re.findall(r"^\*\*Exercise (\d+)\b", "".join(cell["source"]), re.M)]
        stated = cell.get("metadata", {}).get(METADATA_KEY)
        if not numbers and not stated:
            continue
        if len(numbers) != 1:
            raise ValueError(f"{stem}, cell {index}: one exercise per markdown cell, this one sets {numbers or 'none'}"
                             f"{' but states minutes' if stated else ''}")
        if not stated or "minutes" not in stated:
            raise ValueError(f"{stem}, exercise {numbers[0]} (cell {index}) states no minutes: add "
                             f'"{METADATA_KEY}": {{"exercise": {numbers[0]}, "minutes": ...}} to its metadata')
        if stated.get("exercise") != numbers[0]:
            raise ValueError(f"{stem}, cell {index}: its metadata is exercise {stated.get('exercise')}'s, "
                             f"the cell sets exercise {numbers[0]}")
        value = stated["minutes"]
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{stem}, exercise {numbers[0]}: minutes {value!r} is not a positive whole number")
        minutes[numbers[0]] = value
    return dict(sorted(minutes.items()))


def estimated_minutes(stem: str) -> dict:
    """A chapter's estimated time in minutes: ``reading`` (its words at :data:`READING_PACE`, rounded up to 5
    minutes), ``running`` (its run time in the last build, rounded up to a minute), ``exercises`` (the sum of
    :func:`exercise_minutes`) and ``total``."""
    nb = _chapter(stem)
    build = results("book") if (RESULTS / "book.json").exists() else {}
    seconds = build.get("chapters", {}).get(stem, {}).get("run_s", 0.0)
    times = {"reading": 5 * math.ceil(_words(nb) / READING_PACE / 5), "running": math.ceil(seconds / 60),
             "exercises": sum(exercise_minutes(nb, stem).values())}
    times["total"] = sum(times.values())
    return times


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def estimated_time(stem: str) -> Markdown:
    """The "Estimated time" paragraph of chapter ``stem``."""
    t = estimated_minutes(stem)
    minutes = list(exercise_minutes(_chapter(stem), stem).values())
    running = f"{t['running']} minute{'s' if t['running'] != 1 else ''}"
    exercises = "the exercise" if len(minutes) == 1 else f"the {len(minutes)} exercises"
    return prose(f"About **{t['total']} minutes**: {t['reading']} to read, {running} for the cells to run "
                 f"(measured in the last build of the book), {t['exercises']} for {exercises} "
                 f"({_and([str(m) for m in minutes])} minutes, as their author estimates them).")


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

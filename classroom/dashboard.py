"""The class dashboard: one offline HTML page of how the class did, after ``make grade`` (``make dashboard``).

It shows, for the lecturer:

* each assignment's spread of scores (a strip plot of every submission's score, after any late penalty) and a
  table of submitted, late and missing counts, mean and median;
* each exercise's spread (full marks, part marks, none: autograded tests score all or nothing) per assignment;
* the exercises most students miss (share of the submitters below full marks), across the course;
* the students who may be stuck: who misses assignments others submitted, or averages below half the points;
* late submissions (against nbgrader's due date and each student's extension, with the penalty nbgrader gave;
  "no deadline set" where the assignment has none) and missing ones (students of the roster without a submission);
* the grading report's tampering rows (flagged answer cells, refused reads, forged replies, refused or suspicious
  submissions at collect) as a plot and a table, and a count of its other rows.

What it reads: the scores, due dates, extensions, timestamps and penalties from nbgrader's gradebook
(``<course>/gradebook.db``, through :class:`nbgrader.api.Gradebook`, on a snapshot so that the instructor's
gradebook is never written to); the report from ``<course>/grading_report.csv`` (classroom/autograde.py); the roster
from ``--roster`` (a CSV with a ``username`` or ``id`` column, e.g. hub/students.csv), on the class server from its
student list, and always the gradebook's students. The page is one file: plots as PNG data URIs, no script, no
request leaves it. Every string a student can choose (ids, names, the report's details) is escaped.

``python -m classroom.dashboard [--course DIR] [--out FILE] [--roster CSV]``; by default the course of
``make grade`` (the class server's once ``make hub`` set it up) and ``<course>/dashboard.html``.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import csv
import html
import io
import re
import sqlite3
import statistics
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import matplotlib
from matplotlib.figure import Figure
from nbgrader.api import Gradebook

from classroom.exchange import REFUSED, SUSPICIOUS
from classroom.paths import COURSE

#: The grading report's kinds that say a student (or their code) went for the grading itself
#: (classroom/grading.py's events, classroom/exchange.py's collect).
TAMPERING_KINDS = ("tampering", "flagged", "refused", SUSPICIOUS, REFUSED)
#: Below this mean share of the points (over what they submitted) a student is listed as perhaps stuck.
STUCK_SHARE = 0.5
#: How many exercises the "most missed" plot shows.
MOST_MISSED = 15
#: A report detail longer than this is cut in the table (the report keeps it whole).
DETAIL_CHARS = 600
#: The plots' pixels per inch; they show at 100 per inch, so they stay sharp on a high-density screen.
DPI = 150
FULL, PART, NONE = "#4477aa", "#ddcc77", "#cc6677"
ON_TIME, LATE, UNDATED, MISSING = "#4477aa", "#ee7733", "#88ccee", "#bbbbbb"
PLOT_STYLE = {
    "font.size": 13, "axes.titlesize": 14, "axes.labelsize": 13, "xtick.labelsize": 12, "ytick.labelsize": 12,
    "legend.fontsize": 12, "axes.spines.top": False, "axes.spines.right": False,
    # an id or a report row such as "$\\x$" is text to show, not mathtext to parse (or to fail on)
    "text.parse_math": False,
}


@dataclass
class Submission:
    student: str
    timestamp: datetime | None
    due: datetime | None  # the assignment's due date with the student's extension
    seconds_late: float
    penalty: float
    score: float  # after the penalty, as grades.csv has it


@dataclass
class Exercise:
    """A graded cell of an assignment and the scores of those who submitted it."""

    assignment: str
    name: str
    max_score: float
    scores: list[float] = field(default_factory=list)

    @property
    def missed(self) -> int:
        return sum(score < self.max_score - 1e-9 for score in self.scores)

    @property
    def spread(self) -> tuple[int, int, int]:
        """How many scored full marks, part of them, none."""
        full = len(self.scores) - self.missed
        none = sum(score <= 1e-9 for score in self.scores) if self.max_score > 0 else 0
        return full, self.missed - none, none


@dataclass
class Assignment:
    name: str
    duedate: datetime | None
    max_score: float
    exercises: list[Exercise]
    submissions: list[Submission]
    missing: list[str]

    @property
    def late(self) -> list[Submission]:
        return [s for s in self.submissions if s.seconds_late > 0]


@dataclass
class ClassView:
    """Everything the page shows; ``assignments`` is None without a gradebook, ``report`` None without a report."""

    course: Path
    students: list[str]
    assignments: list[Assignment] | None
    report: list[dict] | None


def _natural(text: str) -> list:
    """Sort key that puts ex2 before ex10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)]


def _exercise_name(notebook: str, cell: str, several: bool) -> str:
    # the course's test cells are ex<N><part>_test; the exercise is what a lecturer calls it
    name = cell.removesuffix("_test")
    return f"{notebook}: {name}" if several else name


def _submission(submitted) -> Submission:
    duedate = submitted.assignment.duedate
    due = duedate + (submitted.extension or timedelta()) if duedate is not None else None
    late = max(0.0, (submitted.timestamp - due).total_seconds()) if due and submitted.timestamp else 0.0
    penalty = submitted.late_submission_penalty or 0.0
    return Submission(submitted.student_id, submitted.timestamp, due, late, penalty,
                      max(0.0, (submitted.score or 0.0) - penalty))


def _assignment(gradebook, assignment, students: list[str]) -> Assignment:
    several = len(assignment.notebooks) > 1
    exercises = {(notebook.name, cell.name): Exercise(assignment.name, _exercise_name(notebook.name, cell.name,
                                                                                     several), cell.max_score)
                 for notebook in assignment.notebooks for cell in [*notebook.grade_cells, *notebook.task_cells]}
    submissions = []
    for submitted in gradebook.assignment_submissions(assignment.name):
        if submitted.timestamp is None:  # an extension granted (make extend), nothing handed in yet
            continue
        submissions.append(_submission(submitted))
        for notebook in submitted.notebooks:
            for grade in notebook.grades:
                exercises[notebook.notebook.name, grade.name].scores.append(grade.score or 0.0)
    who = {s.student for s in submissions}
    return Assignment(assignment.name, assignment.duedate, assignment.max_score or 0.0,
                      sorted(exercises.values(), key=lambda e: _natural(e.name)),
                      sorted(submissions, key=lambda s: s.student), [s for s in students if s not in who])


def read_gradebook(path: Path, roster: list[str]) -> tuple[list[str], list[Assignment]]:
    """The students (the roster and the gradebook's) and every assignment of nbgrader's gradebook at ``path``."""
    with tempfile.TemporaryDirectory() as folder:
        # a consistent snapshot, read only: opening a Gradebook writes (its tables, a course row), and grading may
        # be writing to the instructor's at this moment
        copy = Path(folder) / "gradebook.db"
        with contextlib.closing(sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)) as source, \
                contextlib.closing(sqlite3.connect(copy)) as target:
            source.backup(target)
        with Gradebook(f"sqlite:///{copy}") as gradebook:
            students = sorted(set(roster) | {s.id for s in gradebook.students}, key=_natural)
            assignments = [_assignment(gradebook, a, students) for a in gradebook.assignments]
    return students, sorted(assignments, key=lambda a: _natural(a.name))


def read_roster(path: Path) -> list[str]:
    """The student ids of a CSV with a ``username`` (hub/students.csv) or ``id`` (``nbgrader db student import``)
    column."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    column = next((c for c in ("username", "id") if rows and c in rows[0]), None)
    if rows and column is None:
        raise ValueError(f"{path}: no 'username' or 'id' column")
    return [row[column].strip() for row in rows if (row[column] or "").strip()]


def read_report(path: Path) -> list[dict] | None:
    if not path.exists():
        return None
    with open(path, newline="") as f:
        return [{k: row.get(k) or "" for k in ("assignment", "student", "cell", "kind", "detail")}
                for row in csv.DictReader(f)]


def read_class(course: Path, roster: Iterable[str] = ()) -> ClassView:
    gradebook = course / "gradebook.db"
    students, assignments = read_gradebook(gradebook, list(roster)) if gradebook.exists() else (
        sorted(roster, key=_natural), None)
    return ClassView(course, students, assignments, read_report(course / "grading_report.csv"))


# -- the plots: each a function of the data, returning an <img> with the PNG inline


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _image(figure: Figure, alt: str) -> str:
    buffer = io.BytesIO()
    # no Software stamp: it names matplotlib's web site, and the page names no address
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    data = buffer.getvalue()
    width = int.from_bytes(data[16:20], "big") * 100 // DPI  # the PNG header's width, shown at 100 per inch
    return (f'<img class="plot" width="{width}" alt="{_e(alt)}" '
            f'src="data:image/png;base64,{base64.b64encode(data).decode()}">')


def _short(text: str, length: int = 40) -> str:
    return text if len(text) <= length else text[:length - 1] + "…"


def _percent_axis(axes) -> None:
    axes.set_xlim(0, 1)
    axes.set_xticks([0, 0.25, 0.5, 0.75, 1], ["0%", "25%", "50%", "75%", "100%"])


def _stacked_bars(rows: list[str], series: list[tuple[str, str, list[float]]], xlabel: str, title: str,
                  counts: list[list[int]]) -> Figure:
    """Horizontal stacked bars, one row each (the first on top), ``series`` as (label, colour, values), each
    segment with its count (per series, per row) where it is wide enough to hold it."""
    figure = Figure(figsize=(9.5, 1.5 + 0.42 * len(rows)), layout="constrained")
    axes = figure.subplots()
    left = [0.0] * len(rows)
    y = list(range(len(rows)))[::-1]
    widest = max(1e-9, *(sum(values[i] for _, _, values in series) for i in range(len(rows))))
    for (label, colour, values), numbers in zip(series, counts, strict=True):
        bars = axes.barh(y, values, left=left, color=colour, label=label, height=0.7)
        # a count where its digits fit in the segment
        axes.bar_label(bars, labels=[str(n) if n and width >= 0.02 * len(str(n)) * widest else ""
                                     for n, width in zip(numbers, values, strict=True)],
                       label_type="center", fontsize=11)
        left = [a + b for a, b in zip(left, values, strict=True)]
    axes.set_yticks(y, [_short(r) for r in rows])
    axes.set_xlabel(xlabel)
    axes.set_title(title, loc="left")
    figure.legend(loc="outside lower center", ncols=len(series), frameon=False)
    return figure


def _stacked(values: list[float], row: int) -> list[float]:
    """Where each value's dot goes on its row: equal values side by side across the row (a dot plot), so that
    every dot shows and a column's height is its count; the same data draws the same page."""
    groups = Counter(round(v, 1) for v in values)
    step = min(0.14, 0.8 / max(1, max(groups.values(), default=1) - 1))
    placed: Counter = Counter()
    ys = []
    for value in values:
        key = round(value, 1)
        ys.append(row + (placed[key] - (groups[key] - 1) / 2) * step)
        placed[key] += 1
    return ys


def plot_assignment_scores(assignments: list[Assignment]) -> str:
    """Every submission's score in % of the assignment's points, one row per assignment, the median marked."""
    figure = Figure(figsize=(9.5, 1.0 + 0.6 * len(assignments)), layout="constrained")
    axes = figure.subplots()
    for row, assignment in enumerate(reversed(assignments)):
        scores = [100 * s.score / assignment.max_score if assignment.max_score else 0.0
                  for s in assignment.submissions]
        axes.scatter(scores, _stacked(scores, row), s=40, color=FULL, alpha=0.8, edgecolors="white",
                     linewidths=0.5, zorder=3, clip_on=False)
        median = statistics.median(scores)
        # behind the dots, longer than their columns: the median shows without hiding a count
        axes.plot([median, median], [row - 0.48, row + 0.48], color="#222222", linewidth=2, zorder=2)
    axes.set_yticks(range(len(assignments)), [_short(a.name) for a in reversed(assignments)])
    axes.set_xlim(-4, 104)
    axes.set_ylim(-0.6, len(assignments) - 0.4)
    axes.set_xlabel("score: % of the assignment's points, after late penalties")
    axes.grid(axis="x", alpha=0.3)
    return _image(figure, "Dot plot of every submission's score per assignment")


def plot_exercises(assignment: Assignment) -> str:
    counts = [list(column) for column in zip(*(e.spread for e in assignment.exercises), strict=True)]
    n = max(1, len(assignment.submissions))
    series = [(label, colour, [c / n for c in column])
              for (label, colour), column in zip((("full marks", FULL), ("part marks", PART), ("no marks", NONE)),
                                                 counts, strict=True)]
    figure = _stacked_bars([f"{e.name} ({e.max_score:g} pt)" for e in assignment.exercises], series,
                           f"share of the {len(assignment.submissions)} submission(s)",
                           f"{assignment.name}: marks per exercise", counts)
    _percent_axis(figure.axes[0])
    return _image(figure, f"Share of full, part and no marks per exercise of {assignment.name}")


def plot_most_missed(exercises: list[Exercise]) -> str:
    shares = [e.missed / len(e.scores) for e in exercises]
    figure = Figure(figsize=(9.5, 1.2 + 0.42 * len(exercises)), layout="constrained")
    axes = figure.subplots()
    y = list(range(len(exercises)))[::-1]
    bars = axes.barh(y, shares, color=NONE, height=0.7)
    axes.bar_label(bars, labels=[f" {e.missed}/{len(e.scores)}" for e in exercises], fontsize=11)
    axes.set_yticks(y, [_short(f"{e.assignment} · {e.name}", 48) for e in exercises])
    _percent_axis(axes)
    axes.set_xlim(0, 1.12)
    axes.set_xlabel("share of the submitters below full marks")
    return _image(figure, "Bar chart of the exercises with the largest share of students below full marks")


def plot_submission_status(assignments: list[Assignment]) -> str:
    on_time = [len(a.submissions) - len(a.late) if a.duedate else 0 for a in assignments]
    undated = [0 if a.duedate else len(a.submissions) for a in assignments]
    late = [len(a.late) for a in assignments]
    missing = [len(a.missing) for a in assignments]
    columns = [on_time, late, undated, missing]
    labels = (("on time", ON_TIME), ("late", LATE), ("submitted, no deadline set", UNDATED), ("missing", MISSING))
    series = [(label, colour, [float(n) for n in column]) for (label, colour), column in zip(labels, columns,
                                                                                          strict=True)]
    kept = [i for i, column in enumerate(columns) if any(column)]  # no legend entry for what nobody is
    figure = _stacked_bars([a.name for a in assignments], [series[i] for i in kept], "students",
                           "Submissions per assignment", [columns[i] for i in kept])
    figure.axes[0].xaxis.get_major_locator().set_params(integer=True)
    return _image(figure, "Stacked bars of on-time, late and missing submissions per assignment")


def plot_tampering(rows: list[dict]) -> str:
    by_kind = Counter(r["kind"] for r in rows)
    assignments = sorted({r["assignment"] for r in rows}, key=_natural)
    kinds = [kind for kind, _ in by_kind.most_common()]
    colours = ["#cc3311", "#ee7733", "#009988", "#33bbee", "#aa3377", "#bbbbbb"]
    counts = [[sum(r["kind"] == kind and r["assignment"] == a for r in rows) for a in assignments] for kind in kinds]
    series = [(_short(kind, 30), colours[i % len(colours)], [float(n) for n in counts[i]])
              for i, kind in enumerate(kinds)]
    figure = _stacked_bars(assignments, series, "rows of the grading report", "Tampering rows per assignment",
                           counts)
    figure.axes[0].xaxis.get_major_locator().set_params(integer=True)
    return _image(figure, "Stacked bars of the grading report's tampering rows per assignment and kind")


# -- the page


def _when(moment: datetime | None) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else "—"


def _table(header: list[str], rows: list[list[str]], numeric: tuple[int, ...] = ()) -> str:
    """A table of already escaped cells; the columns in ``numeric`` right-aligned."""
    def cells(tag: str, row: list[str]) -> str:
        return "".join(f'<{tag}{" class=num" if i in numeric else ""}>{c}</{tag}>' for i, c in enumerate(row))

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    return f"<table><thead><tr>{cells('th', header)}</tr></thead><tbody>{body}</tbody></table>"


def _empty(message: str) -> str:
    return f'<p class="empty">{message}</p>'


def _duration(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86400)
    return (f"{days} d " if days else "") + f"{rest // 3600} h {rest % 3600 // 60:02d} min"


def _overview_rows(assignments: list[Assignment]) -> list[list[str]]:
    rows = []
    for a in assignments:
        scores = sorted(s.score for s in a.submissions)
        mean = f"{sum(scores) / len(scores):.1f}" if scores else "—"
        median = f"{statistics.median(scores):.1f}" if scores else "—"
        due = _e(_when(a.duedate)) if a.duedate else '<span class="muted">no deadline set</span>'
        late = str(len(a.late)) if a.duedate else "—"
        rows.append([_e(a.name), due, str(len(a.submissions)), late, str(len(a.missing)) if a.submissions else "—",
                     mean, median, f"{a.max_score:g}"])
    return rows


def section_scores(view: ClassView) -> str:
    head = "<h2 id=scores>Scores per assignment</h2>"
    if view.assignments is None:
        return head + _empty(f"No gradebook yet at {_e(view.course / 'gradebook.db')}: run <code>make assignments"
                             "</code>, collect the submissions and run <code>make grade</code>.")
    if not view.assignments:
        return head + _empty("The gradebook has no assignments yet: run <code>make assignments</code>.")
    table = _table(["Assignment", "Deadline", "Submitted", "Late", "Missing", "Mean", "Median", "Points"],
                   _overview_rows(view.assignments), numeric=(2, 3, 4, 5, 6, 7))
    submitted = [a for a in view.assignments if a.submissions]
    if not submitted:
        return head + _empty("No submissions yet: nothing is graded.") + table
    return (head + plot_assignment_scores(submitted)
            + '<p class="caption">One dot per submission; the black bar is the median.</p>' + table)


def section_exercises(view: ClassView) -> str:
    head = "<h2 id=exercises>Marks per exercise</h2>"
    if not view.assignments:
        return head + _empty("No assignments in the gradebook yet.")
    parts, nobody = [], []
    for a in view.assignments:
        if not a.submissions:
            nobody.append(_e(a.name))
        elif not a.exercises:
            parts.append(_empty(f"{_e(a.name)}: no graded cells in the gradebook."))
        else:
            parts.append(plot_exercises(a))
    if nobody:
        parts.append(_empty("Nobody has submitted yet: " + ", ".join(nobody) + "."))
    return head + "".join(parts)


def section_missed(view: ClassView) -> str:
    head = "<h2 id=missed>Exercises most students miss</h2>"
    exercises = [e for a in view.assignments or [] for e in a.exercises if e.scores]
    missed = sorted((e for e in exercises if e.missed),
                    key=lambda e: (-e.missed / len(e.scores), -len(e.scores), _natural(e.assignment),
                                   _natural(e.name)))[:MOST_MISSED]
    if not exercises:
        return head + _empty("No graded submissions yet.")
    if not missed:
        return head + _empty("Every submission has full marks on every exercise.")
    top = missed[0]
    lead = (f'<p class="lead">Most missed: <strong>{_e(top.assignment)} · {_e(top.name)}</strong>, '
            f"{top.missed} of {len(top.scores)} submitters below full marks.</p>")
    return head + lead + plot_most_missed(missed)


def _stuck(view: ClassView) -> list[tuple[str, int, int, float | None]]:
    """(student, submitted, missing, mean share of the points over what they submitted) of each student who misses
    an assignment others submitted or averages below :data:`STUCK_SHARE`, those missing most first, then the
    lowest."""
    started = [a for a in view.assignments or [] if a.submissions]
    rows = []
    for student in view.students:
        shares = [s.score / a.max_score for a in started if a.max_score for s in a.submissions
                  if s.student == student]
        missing = sum(student in a.missing for a in started)
        mean = statistics.mean(shares) if shares else None
        if missing or (mean is not None and mean < STUCK_SHARE):
            rows.append((student, len(shares), missing, mean))
    return sorted(rows, key=lambda r: (-r[2], -1 if r[3] is None else r[3], _natural(r[0])))


def section_stuck(view: ClassView) -> str:
    head = "<h2 id=stuck>Students who may be stuck</h2>"
    if not any(a.submissions for a in view.assignments or []):
        return head + _empty("No submissions yet.")
    rows = [[_e(student), str(submitted), str(missing), "—" if mean is None else f"{100 * mean:.0f}%"]
            for student, submitted, missing, mean in _stuck(view)]
    if not rows:
        return head + _empty(f"Every student submitted every assignment anyone submitted, averaging at least "
                             f"{100 * STUCK_SHARE:.0f}% of the points.")
    return (head + f"<p>Who misses an assignment that others submitted, or averages below {100 * STUCK_SHARE:.0f}% "
            "of the points over what they submitted; most missing first, then the lowest.</p>"
            + _table(["Student", "Submitted", "Missing", "Mean score"], rows, numeric=(1, 2, 3)))


def _late_table(assignments: list[Assignment]) -> str:
    late = [(a, s) for a in assignments for s in a.late]
    if not any(a.duedate for a in assignments):
        return _empty("None can be late: no assignment submitted so far has a deadline.")
    if not late:
        return _empty("No late submissions.")
    rows = [[_e(a.name), _e(s.student), _e(_when(s.timestamp)), _e(_when(s.due)), _e(_duration(s.seconds_late)),
             f"{s.penalty:g}"] for a, s in late]
    return _table(["Assignment", "Student", "Submitted", "Due (with extension)", "Late by", "Penalty"], rows,
                  numeric=(5,))


def _missing_list(assignments: list[Assignment]) -> str:
    items = [f"<li><strong>{_e(a.name)}</strong> ({len(a.missing)}): {', '.join(_e(s) for s in a.missing)}</li>"
             for a in assignments if a.submissions and a.missing]
    return f'<ul class="missing">{"".join(items)}</ul>' if items else _empty(
        "No missing submissions: everyone on the roster submitted every assignment anyone submitted.")


def section_submissions(view: ClassView) -> str:
    head = "<h2 id=submissions>Late and missing submissions</h2>"
    started = [a for a in view.assignments or [] if a.submissions]
    if not started:
        return head + _empty("No submissions yet.")
    undated = [_e(a.name) for a in started if not a.duedate]
    note = _empty("No deadline set (nothing can be late) for: " + ", ".join(undated)
                  + '. Set one in the course folder with <code>nbgrader db assignment add NAME --duedate="2027-01-15 '
                  '23:59 UTC"</code>.') if undated else ""
    waiting = [_e(a.name) for a in view.assignments if not a.submissions]
    unsubmitted = _empty("Not yet submitted by anyone (not counted as missing): " + ", ".join(waiting) + ".") \
        if waiting else ""
    return (head + plot_submission_status(started) + note + "<h3>Late</h3>" + _late_table(started)
            + "<h3>Missing</h3>" + _missing_list(started) + unsubmitted)


def section_report(view: ClassView) -> str:
    head = "<h2 id=tampering>Tampering in the grading report</h2>"
    if view.report is None:
        return head + _empty(f"No grading report yet at {_e(view.course / 'grading_report.csv')} "
                             "(<code>make grade</code> writes it).")
    flagged = [r for r in view.report if r["kind"] in TAMPERING_KINDS]
    others = Counter(r["kind"] for r in view.report if r["kind"] not in TAMPERING_KINDS)
    parts = [head]
    if flagged:
        rows = [[_e(r["assignment"]), _e(r["student"]), _e(r["cell"]), _e(r["kind"]), _e(_short(r["detail"],
                                                                                           DETAIL_CHARS))]
                for r in sorted(flagged, key=lambda r: (_natural(r["assignment"]), _natural(r["student"])))]
        parts += [plot_tampering(flagged), _table(["Assignment", "Student", "Cell", "Kind", "Detail"], rows)]
    else:
        parts.append(_empty("No tampering rows in the report."))
    if others:
        parts += ["<h3>The report's other rows</h3>",
                  _table(["Kind", "Rows"], [[_e(k), str(n)] for k, n in others.most_common()], numeric=(1,))]
    return "".join(parts)


STYLE = """
body { font: 16px/1.5 system-ui, sans-serif; color: #222; max-width: 1000px; margin: 0 auto; padding: 1rem 1.5rem; }
h1 { font-size: 1.7rem; margin-bottom: 0.2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ccc; }
nav a { margin-right: 1rem; } .muted, .stamp { color: #666; } .empty { color: #555; font-style: italic; }
.lead { font-size: 1.1rem; } .caption { color: #555; margin-top: -0.6rem; }
img.plot { display: block; max-width: 100%; height: auto; margin: 1rem 0; }
table { border-collapse: collapse; margin: 0.8rem 0; font-size: 0.95rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
td { overflow-wrap: anywhere; } th { background: #f3f3f3; } .num { text-align: right; } code { white-space: nowrap; }
.summary { display: flex; gap: 1.5rem; flex-wrap: wrap; padding: 0; list-style: none; }
.summary li { background: #f3f6fa; padding: 0.5rem 0.9rem; border-radius: 6px; }
.summary strong { display: block; font-size: 1.5rem; }
"""


def _summary(view: ClassView) -> str:
    assignments = view.assignments or []
    figures = [("students", len(view.students)), ("assignments", len(assignments)),
               ("submissions", sum(len(a.submissions) for a in assignments)),
               ("late", sum(len(a.late) for a in assignments)),
               ("missing", sum(len(a.missing) for a in assignments if a.submissions)),
               ("tampering rows", sum(r["kind"] in TAMPERING_KINDS for r in view.report or []))]
    return '<ul class="summary">' + "".join(f"<li><strong>{n}</strong>{label}</li>" for label, n in figures) + "</ul>"


def render(view: ClassView, now: datetime | None = None) -> str:
    """The dashboard's HTML for ``view``."""
    now = now or datetime.now(UTC)
    with matplotlib.rc_context(PLOT_STYLE):
        sections = [section(view) for section in (section_scores, section_exercises, section_missed, section_stuck,
                                                  section_submissions, section_report)]
    nav = "".join(f'<a href="#{anchor}">{label}</a>' for anchor, label in (
        ("scores", "Scores"), ("exercises", "Exercises"), ("missed", "Most missed"), ("stuck", "Who is stuck"),
        ("submissions", "Late and missing"), ("tampering", "Tampering")))
    return ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<title>Class dashboard: {_e(view.course.name)}</title><style>{STYLE}</style></head><body>"
            f"<h1>Class dashboard</h1><p class=stamp>{_e(view.course)}: as graded on {_e(_when(now))}</p>"
            f"{_summary(view)}<nav>{nav}</nav>{''.join(sections)}</body></html>\n")


def build(course: Path = COURSE, out: Path | None = None, roster: Iterable[str] = ()) -> Path:
    """Write the dashboard of ``course`` to ``out`` (default ``<course>/dashboard.html``); returns its path."""
    out = out or course / "dashboard.html"
    out.write_text(render(read_class(course, roster)), encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m classroom.dashboard", description=__doc__.split("\n\n")[0])
    parser.add_argument("--course", type=Path, default=None,
                        help="the course folder (default: the class server's course when `make hub` set it up, else "
                             "course/ of the repository)")
    parser.add_argument("--out", type=Path, default=None, help="the page to write (default: <course>/dashboard.html)")
    parser.add_argument("--roster", type=Path, default=None,
                        help="a CSV of the class with a 'username' or 'id' column, so that students who submitted "
                             "nothing count as missing (default on the class server: its student list)")
    args = parser.parse_args(argv)
    # here, not at the top: course_hub imports the whole library, and the page itself needs none of it
    from classroom import course_hub

    settings = course_hub.hub_course() if args.course is None else None
    course = (args.course or (settings.course if settings else COURSE)).resolve()
    roster_csv = args.roster or (settings.students_csv if settings else None)
    try:
        roster = read_roster(roster_csv) if roster_csv else []
    except (OSError, ValueError) as error:
        print(f"error: the roster: {error}", file=sys.stderr)
        return 1
    print(f"wrote {build(course, args.out, roster)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

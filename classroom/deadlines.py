"""Deadlines, hard cut-offs, late penalties and extensions, on nbgrader's own mechanisms.

Where they live: ``course/deadlines.toml`` (:func:`deadlines_file`), one table per assignment with its due date
and optional hard cut-off as TOML date-times with a UTC offset, and the late penalty rule; the local course and
the class server's (whose course directory has no copy: the repository's file is read, as its exercise files are)
read the same file. What each part uses of nbgrader:

* the due date: the gradebook's ``Assignment.duedate`` (:func:`record`, at ``make assignments`` and before each
  autograde), which nbgrader's autograde compares with each submission's ``timestamp.txt``;
* the penalty: :class:`LatePenalty`, the ``LateSubmissionPlugin`` that course/nbgrader_config.py gives nbgrader's
  ``AssignLatePenalties`` (a share of the notebook's score per day or part of a day late), so grades.csv, the
  Formgrader and the feedback show it as nbgrader's late penalty;
* an extension: the gradebook's ``SubmittedAssignment.extension`` (:func:`extend`, ``make extend``), which
  nbgrader adds to the due date for that student, and the collect to the cut-off;
* the cut-off: the class server's collect (:mod:`classroom.exchange`) refuses an entry that arrived after it
  (:func:`cutoffs`); submissions handed over by hand are the instructor's to judge;
* the students see the due date and cut-off in the header of the released notebook (:func:`stamp_sources`).
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Unicode

from classroom.assignments import BY_STEM
from classroom.paths import COURSE

FILE = "deadlines.toml"
#: The header line of a release that states its deadline (:func:`with_due`).
DUE_PREFIX = "**Due:**"
_KEYS = {"due", "cutoff", "penalty_per_day"}


class DeadlineError(ValueError):
    """A deadlines file, student or chapter that cannot be used; the message says what to change."""


@dataclass(frozen=True)
class Deadline:
    """One assignment's: due date and cut-off in UTC without a zone (as nbgrader's gradebook keeps times), the
    share of the score taken per day late."""

    due: datetime
    cutoff: datetime | None
    penalty_per_day: float
    shown: str  # the dates as the lecturer wrote them, for the students


def deadlines_file(course: Path) -> Path:
    """The course folder's ``deadlines.toml`` where it has one (a copy of the course, the tests'), else the
    repository's ``course/deadlines.toml`` (the class server's course directory)."""
    own = course / FILE
    return own if own.exists() else COURSE / FILE


def _utc(value, where: str) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise DeadlineError(f"{where}: {value!r} is no date-time with a UTC offset, e.g. 2026-12-15T23:59:00+01:00")
    return value.astimezone(UTC).replace(tzinfo=None)


def _penalty(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise DeadlineError(f"{where}: penalty_per_day is a share of the score, from 0 to 1 (1: zero when late)")
    return float(value)


def load(course: Path = COURSE) -> dict[str, Deadline]:
    """Every assignment's deadline, by chapter stem; :class:`DeadlineError` for a file that cannot be meant."""
    path = deadlines_file(course)
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise DeadlineError(f"{path}: {error}") from None
    default = _penalty(data.pop("penalty_per_day", 0.0), str(path))
    found = {}
    for stem, table in data.items():
        where = f"{path} [{stem}]"
        if stem not in BY_STEM or not isinstance(table, dict):
            raise DeadlineError(f"{where}: no chapter of that name (one of {', '.join(BY_STEM)})")
        if "due" not in table or set(table) - _KEYS:
            raise DeadlineError(f"{where}: 'due' and optionally 'cutoff' and 'penalty_per_day', nothing else")
        due, cutoff = _utc(table["due"], where), _utc(table["cutoff"], where) if "cutoff" in table else None
        if cutoff is not None and cutoff < due:
            raise DeadlineError(f"{where}: the cut-off is before the due date")
        shown = f"{DUE_PREFIX} {table['due'].isoformat(' ', 'minutes')}" + (
            f"; submissions after {table['cutoff'].isoformat(' ', 'minutes')} are not accepted" if cutoff else "")
        found[stem] = Deadline(due, cutoff, _penalty(table.get("penalty_per_day", default), where), shown)
    return found


def _db_url(course: Path) -> str:
    return f"sqlite:///{course / 'gradebook.db'}"


def record(course: Path, stems: list[str] | None = None) -> None:
    """The due dates of ``stems`` (every assignment of the gradebook) into the gradebook, nbgrader's
    ``Assignment.duedate``; an assignment taken out of deadlines.toml has none again."""
    found = load(course)
    with Gradebook(_db_url(course)) as gradebook:
        for assignment in gradebook.assignments:
            if stems is None or assignment.name in stems:
                deadline = found.get(assignment.name)
                assignment.duedate = deadline.due if deadline else None
        gradebook.db.commit()


def with_due(header: str, line: str) -> str:
    """A release's header with its due line (after the first paragraph) replaced by ``line`` (none if empty)."""
    paragraphs = [p for p in header.split("\n\n") if not p.startswith(DUE_PREFIX)]
    return "\n\n".join(paragraphs[:2] + ([line] if line else []) + paragraphs[2:])


def stamp_sources(course: Path) -> None:
    """Each source notebook's header states its assignment's deadline as deadlines.toml has it now, so that the
    release shows it (written only where it changed)."""
    found = load(course)
    for stem in BY_STEM:
        path = course / "source" / stem / f"{stem}.ipynb"
        if not path.exists():
            continue
        nb = json.loads(path.read_text())
        header = nb["cells"][0]
        text = "".join(header["source"])
        stamped = with_due(text, found[stem].shown if stem in found else "")
        if stamped != text:
            header["source"] = stamped.splitlines(keepends=True)
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def extend(course: Path, student: str, stem: str, until: datetime, known: list[str]) -> str:
    """Give ``student`` until ``until`` (aware) for ``stem``: nbgrader's extension on their submission (made, empty,
    where they have none yet), beside the due date it extends; ``known`` are the students who may have one. Returns
    what was done; :class:`DeadlineError` for an unknown student or chapter, or one without a due date."""
    deadline = load(course).get(stem)
    if stem not in BY_STEM:
        raise DeadlineError(f"no chapter {stem!r} (one of {', '.join(BY_STEM)})")
    if deadline is None:
        raise DeadlineError(f"{stem} has no due date in {deadlines_file(course)}: an extension needs one")
    if student not in known:
        raise DeadlineError(f"{student!r} is not a student of this course (known: {', '.join(known) or 'none'})")
    when = _utc(until, "UNTIL")
    if when <= deadline.due:
        raise DeadlineError(f"{until.isoformat()} is not after {stem}'s due date ({deadline.shown})")
    if not (course / "gradebook.db").exists():
        raise DeadlineError(f"{course} has no gradebook yet: run `make assignments` first")
    with Gradebook(_db_url(course)) as gradebook:
        try:
            gradebook.find_assignment(stem).duedate = deadline.due  # nbgrader adds the extension to it
        except MissingEntry:
            raise DeadlineError(f"{stem} is not in the gradebook yet: run `make assignments` first") from None
        gradebook.update_or_create_student(student)
        submission = gradebook.update_or_create_submission(stem, student)
        submission.extension = when - deadline.due
        gradebook.db.commit()
    return f"{student} has until {until.isoformat()} for {stem} (an extension of {when - deadline.due})"


def known_students(course: Path) -> list[str]:
    """The local course's students: the gradebook's and those with a folder in submitted/."""
    names = {p.name for p in (course / "submitted").glob("*/") if p.is_dir()}
    if (course / "gradebook.db").exists():
        with Gradebook(_db_url(course)) as gradebook:
            names |= {s.id for s in gradebook.students}
    return sorted(names)


def cutoffs(course: Path) -> dict[tuple[str, str], datetime]:
    """Each (assignment, student)'s hard cut-off with their extension, and (assignment, "") the cut-off for
    everyone else: what the collect refuses after."""
    found = {(stem, ""): d.cutoff for stem, d in load(course).items() if d.cutoff is not None}
    if found and (course / "gradebook.db").exists():
        with Gradebook(_db_url(course)) as gradebook:
            for stem, _ in list(found):
                found.update({(stem, s.student_id): found[stem, ""] + s.extension
                              for s in gradebook.assignment_submissions(stem) if s.extension})
    return found


class LatePenalty(LateSubmissionPlugin):
    """nbgrader's late penalty by deadlines.toml: the assignment's ``penalty_per_day`` of the notebook's score for
    each day or part of a day after the due date (with the student's extension), at most the whole score."""

    course = Unicode(str(COURSE), help="the course folder whose deadlines.toml sets the rule").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        deadline = load(Path(self.course)).get(self.parent.assignment_id)
        if deadline is None or total_seconds_late <= 0:
            return None
        days = math.ceil(total_seconds_late / 86400)
        return score * min(1.0, deadline.penalty_per_day * days)

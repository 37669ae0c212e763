"""The gradebook for a learning management system: nbgrader's grades.csv as Canvas's and Moodle's CSV imports."""

from __future__ import annotations

import contextlib
import csv
import sqlite3
from pathlib import Path

from classroom.assignments import ASSIGNMENTS


def _canvas_name(row: dict) -> str:
    return ", ".join(n for n in (row["last_name"], row["first_name"]) if n) or row["student_id"]


def export_lms(grades: Path, folder: Path) -> list[Path]:
    """grades.csv as gradebook imports for an LMS, one column per assignment that has a submission (a student
    who did not submit it has an empty cell, not 0, so the import leaves that grade alone):

    * ``canvas.csv``: Canvas's gradebook columns, Student, ID, SIS User ID, SIS Login ID, Section, then one per
      assignment, and the "Points Possible" row. The student is matched on SIS Login ID, nbgrader's student id
      (the class server's login); ID is the gradebook's lms_user_id where one was set. An assignment column has
      no Canvas id in parentheses (nbgrader knows none): Canvas makes a new column a new assignment;
    * ``moodle.csv``: for Moodle's "Import grades from CSV": Username and Email address (map either to the user
      on import), First name, Last name, then one column per assignment (map each to its grade item)."""
    with open(grades, newline="") as f:
        rows = list(csv.DictReader(f))
    titles = {a.stem: a.title for a in ASSIGNMENTS}
    submitted = [r for r in rows if r["timestamp"]]
    columns = sorted({r["assignment"] for r in submitted})
    points = {r["assignment"]: r["max_score"] for r in rows}
    students: dict[str, dict] = {}
    for row in rows:
        students.setdefault(row["student_id"], {"row": row, "scores": {}})
    for row in submitted:
        students[row["student_id"]]["scores"][row["assignment"]] = row["score"]
    lms_ids = _lms_user_ids(grades.parent)
    folder.mkdir(parents=True, exist_ok=True)
    names = [titles.get(a, a) for a in columns]
    canvas, moodle = folder / "canvas.csv", folder / "moodle.csv"
    with open(canvas, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *names])
        writer.writerow(["Points Possible", "", "", "", "", *(points[a] for a in columns)])
        for sid, entry in sorted(students.items()):
            writer.writerow([_canvas_name(entry["row"]), lms_ids.get(sid, ""), "", sid, "",
                             *(entry["scores"].get(a, "") for a in columns)])
    with open(moodle, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["Username", "Email address", "First name", "Last name", *names])
        for sid, entry in sorted(students.items()):
            row = entry["row"]
            writer.writerow([sid, row["email"], row["first_name"], row["last_name"],
                             *(entry["scores"].get(a, "") for a in columns)])
    return [canvas, moodle]


def _lms_user_ids(course: Path) -> dict[str, str]:
    """student id -> the LMS's user id the gradebook holds (``nbgrader db student add --lms-user-id``), if any."""
    db = course / "gradebook.db"
    if not db.exists():
        return {}
    with contextlib.closing(sqlite3.connect(db)) as connection:
        try:
            return {sid: lms for sid, lms in connection.execute("select id, lms_user_id from student") if lms}
        except sqlite3.OperationalError:  # a gradebook older than the column
            return {}



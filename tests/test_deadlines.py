"""Deadlines, cut-offs, late penalties and extensions (classroom/deadlines.py, course/deadlines.toml).

* The settings: date-times need a UTC offset, chapters must exist, a cut-off comes after its due date; the rule of
  :class:`~classroom.deadlines.LatePenalty` (a share per day or part of one, at most the score); a header's due line.
* A scripted term for chapter 04a in a copy of course/: released with a due date and cut-off (the release's header
  says them, the gradebook has nbgrader's due date); alice submits on time, bob a day and an hour late, carol late
  but within the extension ``python -m classroom.course extend`` gave her (unknown students and chapters refused),
  dave nothing. ``grade``: nbgrader's own late penalty takes bob's two days' worth in grades.csv, nobody else's;
  dave is missing; the dashboard says the same.
* The class server's collect after the cut-off (as root, the entry owned by the user ``nobody``): an entry whose
  name and timestamp.txt say it came before the cut-off but which arrived now is refused with a message that says
  so; the student's extension beyond now lets it in (reported as suspicious all the same: its name's time is
  days before its files').
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
from nbgrader.preprocessors import AssignLatePenalties
from test_course import ALICE, CYCLE, RUNTIME_DIRS, _answer, _env

from classroom import course as course_cli
from classroom import dashboard, deadlines, exchange
from classroom.hub import Student

REPO = Path(__file__).resolve().parents[1]
TERM = f"""
penalty_per_day = 0.1

[{CYCLE}]
due = 2026-12-01T12:00:00+01:00
cutoff = 2026-12-03T12:00:00+01:00
penalty_per_day = 0.25
"""
#: Each student's submission time (UTC) and answers; dave hands in nothing.
SUBMITTED = {"alice": ("2026-12-01 10:00:00", ALICE), "bob": ("2026-12-02 12:00:00", ALICE),
             "carol": ("2026-12-04 10:00:00", ALICE)}


def _course(tmp: Path, text: str) -> Path:
    course = tmp / "course"
    course.mkdir(parents=True, exist_ok=True)
    (course / "deadlines.toml").write_text(text)
    return course


@pytest.mark.parametrize("text, says", [
    (f"[{CYCLE}]\ndue = 2026-12-01T12:00:00\n", "UTC offset"),
    ("[99_no_chapter]\ndue = 2026-12-01T12:00:00Z\n", "no chapter"),
    (f"[{CYCLE}]\ndue = 2026-12-01T12:00:00Z\ncutoff = 2026-11-30T12:00:00Z\n", "before the due date"),
    (f"[{CYCLE}]\ndue = 2026-12-01T12:00:00Z\npenalty_per_day = 2\n", "from 0 to 1"),
    (f"[{CYCLE}]\ndue = 2026-12-01T12:00:00Z\nlate = 1\n", "nothing else"),
])
def test_settings_that_cannot_be_meant_are_refused(tmp_path, text, says):
    with pytest.raises(deadlines.DeadlineError, match=says):
        deadlines.load(_course(tmp_path, text))


def test_the_settings_in_utc_and_the_rule(tmp_path):
    found = deadlines.load(_course(tmp_path, TERM))[CYCLE]
    assert found.due == datetime(2026, 12, 1, 11) and found.cutoff == datetime(2026, 12, 3, 11)
    assert found.shown.startswith("**Due:** 2026-12-01 12:00+01:00; submissions after 2026-12-03 12:00+01:00")
    assigner = AssignLatePenalties()
    assigner.assignment_id = CYCLE  # as nbgrader's preprocess sets it before it makes the plugin
    plugin = deadlines.LatePenalty(course=str(tmp_path / "course"), parent=assigner)
    assert plugin.late_submission_penalty("bob", 8.0, 0) is None
    assert plugin.late_submission_penalty("bob", 8.0, 60) == 2.0  # part of a day counts as a day
    assert plugin.late_submission_penalty("bob", 8.0, 86400 + 1) == 4.0
    assert plugin.late_submission_penalty("bob", 8.0, 30 * 86400) == 8.0
    header = "# Title\n\nThe exercises.\n\n* Run the setup cell."
    dated = deadlines.with_due(header, found.shown)
    assert dated == f"# Title\n\nThe exercises.\n\n{found.shown}\n\n* Run the setup cell."
    assert deadlines.with_due(dated, "") == header


def test_extend_says_what_it_needs(tmp_path, capsys):
    course = _course(tmp_path, TERM)
    for missing in (["--student", "carol"], ["--student", "carol", "--until", "2026-12-20T23:59"]):
        with pytest.raises(SystemExit):
            course_cli.main(["extend", CYCLE, *missing, "--course", str(course)])
    assert "has no UTC offset" in capsys.readouterr().err
    (course / "submitted" / "carol").mkdir(parents=True)
    assert course_cli.main(["extend", CYCLE, "--student", "carol", "--until", "2026-12-20T23:59+01:00",
                            "--course", str(course)]) == 1
    assert "no gradebook yet: run `make assignments` first" in capsys.readouterr().err
    plan = subprocess.run(["make", "-n", "-o", ".venv/.installed", "extend", "STUDENT=carol", f"CHAPTER={CYCLE}",
                           "UNTIL=2026-12-20T23:59+01:00"], cwd=REPO, capture_output=True, text=True, timeout=60,
                          check=True).stdout
    assert f'-m classroom.course extend {CYCLE} --student "carol" --until "2026-12-20T23:59+01:00"' in plan


# --- the scripted term ----------------------------------------------------------------------------------------

def _run(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "classroom.course", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    """A copy of course/ with the term's deadlines.toml, released, the submissions in submitted/ as the collect
    lays them out, carol's extension given, then graded: (course, env)."""
    tmp = tmp_path_factory.mktemp("term")
    course = tmp / "course"
    shutil.copytree(REPO / "course", course, ignore=shutil.ignore_patterns(*RUNTIME_DIRS, "__pycache__"))
    (course / "deadlines.toml").write_text(TERM)
    (tmp / "exchange").mkdir()
    env = _env(tmp)
    done = _run(env, "assignments", "--course", str(course))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    release = course / "release" / CYCLE / f"{CYCLE}.ipynb"
    for student, (when, answers) in SUBMITTED.items():
        folder = course / "submitted" / student / CYCLE
        folder.mkdir(parents=True)
        nb = json.loads(release.read_text())
        for grade_id, source in answers.items():
            _answer(nb, grade_id, source)
        (folder / f"{CYCLE}.ipynb").write_text(json.dumps(nb))
        (folder / "timestamp.txt").write_text(f"{when}.000000 UTC")
    subprocess.run([sys.executable, "-m", "nbgrader", "db", "student", "add", "dave"], cwd=course, env=env,
                   check=True, capture_output=True, timeout=300)
    extensions = {(who, chapter): _run(env, "extend", chapter, "--student", who, "--until", "2026-12-05T12:00+01:00",
                            "--course", str(course))
                  for who, chapter in (("carol", CYCLE), ("mallory", CYCLE), ("carol", "99_no_chapter"))}
    graded = _run(env, "grade", "--course", str(course))
    assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-8000:]
    return course, extensions


def test_the_release_and_the_gradebook_carry_the_deadline(term):
    course, _ = term
    release = json.loads((course / "release" / CYCLE / f"{CYCLE}.ipynb").read_text())
    header = "".join(release["cells"][0]["source"])
    assert "**Due:** 2026-12-01 12:00+01:00; submissions after 2026-12-03 12:00+01:00 are not accepted" in header
    with open(course / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == CYCLE}
    assert {r["duedate"] for r in rows.values()} == {"2026-12-01 11:00:00"}


def test_extensions_are_recorded_and_strangers_refused(term):
    _, extensions = term
    carol = extensions["carol", CYCLE]
    assert carol.returncode == 0 and "carol has until 2026-12-05T12:00:00+01:00" in carol.stdout, carol.stderr
    assert extensions["mallory", CYCLE].returncode == 1
    assert "'mallory' is not a student of this course" in extensions["mallory", CYCLE].stderr
    assert extensions["carol", "99_no_chapter"].returncode == 1
    assert "no chapter '99_no_chapter'" in extensions["carol", "99_no_chapter"].stderr


def test_late_penalties_are_nbgraders_own(term):
    course, _ = term
    with open(course / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == CYCLE}
    # bob: 25 hours late, two days at 0.25 of his 7 points; carol's extension keeps her on time; dave is missing
    assert {s: (float(r["raw_score"]), float(r["late_submission_penalty"]), float(r["score"]))
            for s, r in rows.items()} == {"alice": (7.0, 0.0, 7.0), "bob": (7.0, 3.5, 3.5),
                                          "carol": (7.0, 0.0, 7.0), "dave": (0.0, 0.0, 0.0)}
    assert rows["dave"]["timestamp"] in ("", "None")
    view = dashboard.read_class(course, ["alice", "bob", "carol", "dave"])
    (assignment,) = [a for a in view.assignments if a.name == CYCLE]
    assert [s.student for s in assignment.late] == ["bob"] and assignment.missing == ["dave"]


# --- the cut-off at the class server's collect --------------------------------------------------------------------

def test_the_collect_refuses_what_arrived_after_the_cut_off(term, tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("needs root: the entry belongs to the user nobody, as a student's belongs to them")
    course, _ = term
    nobody = 65534
    settings = SimpleNamespace(students=lambda: [Student("nobody", "", "", "")], exchange=tmp_path / "exchange",
                               course_id="tensoradbook", course=course, instructors=("instructor",))
    inbound = tmp_path / "exchange" / "tensoradbook" / "inbound"
    stamp = "2026-12-02 10:00:00.000000 UTC"  # before the cut-off, as the student wrote it
    entry = inbound / f"nobody+{CYCLE}+{stamp}+1a2b3c"
    entry.mkdir(parents=True)
    shutil.copy(course / "release" / CYCLE / f"{CYCLE}.ipynb", entry)
    (entry / "timestamp.txt").write_text(stamp)
    for path in (entry, *entry.iterdir()):
        os.chown(path, nobody, nobody)
    monkeypatch.setattr(exchange.os, "geteuid", lambda: 1000)  # the collect runs as the instructor
    rows = exchange.collect(settings, [CYCLE], cutoffs=deadlines.cutoffs(course))
    assert [r["kind"] for r in rows] == [exchange.REFUSED]
    assert "after the hard cut-off of 2026-12-03 11:00:00 UTC" in rows[0]["detail"]
    assert "no longer accepted" in rows[0]["detail"] and not (course / "submitted" / "nobody").exists()

    later = datetime.now(UTC) + timedelta(days=1)
    deadlines.extend(course, "nobody", CYCLE, later, ["nobody"])
    rows = exchange.collect(settings, [CYCLE], cutoffs=deadlines.cutoffs(course))
    assert [r["kind"] for r in rows] == [exchange.SUSPICIOUS]  # collected, its name's time still reported as odd
    assert (course / "submitted" / "nobody" / CYCLE / f"{CYCLE}.ipynb").exists()

"""Grading the submitted: each submission new or changed since its last grading, read first on a clock, autograded
by nbgrader in the sandbox (classroom/grading.py), fed back, exported to grades.csv and the LMS's imports, with a
report of what happened (``python -m classroom.course grade``)."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import stat
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path

import nbformat
from nbgrader.nbgraderformat import MetadataValidator

from classroom.assignments import BY_STEM
from classroom.deadlines import record
from classroom.grading import CheckTimeout, SandboxedExecute, on_a_clock
from classroom.lms import export_lms
from classroom.nbgrader_cli import excluding, nbgrader, nbgrader_command
from classroom.paths import COURSE
from classroom.sandbox import isolation_available


def submissions(course: Path = COURSE) -> dict[str, list[str]]:
    """The submitted assignments: assignment id -> students with a notebook in submitted/<student>/<id>/."""
    found: dict[str, list[str]] = {}
    for folder in sorted((course / "submitted").glob("*/*/")):
        if any(folder.glob("*.ipynb")):
            found.setdefault(folder.name, []).append(folder.parent.name)
    return found


REPORT_FIELDS = ("assignment", "student", "cell", "kind", "detail")
#: course/grading_state.json: assignment -> student -> the digest of the submission as last graded.
GRADING_STATE = "grading_state.json"
#: A submitted notebook larger than this is not graded: an answer is text, a flood is not.
MAX_NOTEBOOK_BYTES = 32 * 2 ** 20
#: Seconds and bytes for reading one submission before grading (:func:`screen`).
SCREEN_SECONDS, SCREEN_MEMORY = 60, 2 * 2 ** 30
#: Seconds one submission may take in autograde beyond its own bound (``SandboxedExecute.submission_timeout``):
#: nbgrader's start, the sandbox's start, the feedback's files.
SUBMISSION_OVERHEAD = 180
#: Seconds between two looks at how many submissions the running autogrades have finished.
POLL_S = 0.5
#: Seconds after which the progress line is written again even if no submission finished (a log, not a terminal).
HEARTBEAT_S = 30


def grading_workers() -> int:
    """How many nbgrader autogrades run at once: one per CPU this process may use (``GRADING_WORKERS=N`` to
    choose). Each grades its share of the submissions one after another, every answer in a sandbox of its own."""
    return max(1, int(os.environ.get("GRADING_WORKERS") or len(os.sched_getaffinity(0))))


class Progress:
    """One line per change for a class's grading: submissions graded out of all, a bar, and the time left at the
    pace so far (written again every :data:`HEARTBEAT_S` while nothing finishes, so a long submission shows life)."""

    WIDTH = 24

    def __init__(self, label: str, total: int, stream=sys.stderr, clock=time.monotonic):
        self.label, self.total, self.stream, self.clock = label, total, stream, clock
        self.start = self.written = clock()
        self.done = -1

    def update(self, done: int) -> None:
        now = self.clock()
        if done == self.done and now - self.written < HEARTBEAT_S:
            return
        self.done, self.written = done, now
        filled = self.WIDTH * done // max(self.total, 1)
        bar = "#" * filled + "." * (self.WIDTH - filled)
        if done == self.total:
            left = "done"
        elif done:
            left = f"about {_minutes((now - self.start) / done * (self.total - done))} left"
        else:
            left = "timing the first"
        print(f"{self.label}: [{bar}] {done}/{self.total} graded, {left}", file=self.stream, flush=True)


def _minutes(seconds: float) -> str:
    minutes, seconds = divmod(round(seconds), 60)
    return f"{minutes} min {seconds:02d} s" if minutes else f"{seconds} s"


def _read_submission(folder: str) -> dict:
    """Why nbgrader could not grade the notebooks in ``folder`` (``{"why": None}`` where it can): each a regular
    file within :data:`MAX_NOTEBOOK_BYTES`, a valid notebook, and nbgrader's cell metadata of the schema this
    nbgrader reads (another ``schema_version`` makes nbgrader's autograde end the whole run, not only this one)."""

    for path in sorted(Path(folder).glob("*.ipynb")):
        status = os.lstat(path)
        if not stat.S_ISREG(status.st_mode):
            return {"why": f"{path.name} is not a plain file"}
        if status.st_size > MAX_NOTEBOOK_BYTES:
            return {"why": f"{path.name} is {status.st_size / 2 ** 20:.0f} MiB, over the limit of "
                           f"{MAX_NOTEBOOK_BYTES / 2 ** 20:.0f} MiB"}
        try:
            nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
            nbformat.validate(nb)
            MetadataValidator().validate_nb(nb)
        except Exception as error:  # noqa: BLE001 -- whatever is wrong with it, it is this submission's
            return {"why": f"{path.name} cannot be graded: {type(error).__name__}: {str(error)[:300]}"}
    return {"why": None}


def screen(folder: Path) -> str | None:
    """Why the submission in ``folder`` cannot be graded, or None; read in a child on a clock
    (:func:`classroom.grading.on_a_clock`), so that no notebook, however large or strange, stops the grading."""
    try:
        return on_a_clock(lambda: _read_submission(str(folder)), SCREEN_SECONDS, SCREEN_MEMORY)["why"]
    except CheckTimeout:
        return f"reading it took more than {SCREEN_SECONDS} s or {SCREEN_MEMORY / 2 ** 30:g} GiB"


def submission_bound() -> float:
    """Seconds one submission may take in autograde, all included: nbgrader runs a class within N times this."""
    trait = SandboxedExecute.class_traits()
    return max(trait["submission_timeout"].default_value, trait["notebook_timeout"].default_value) \
        + SUBMISSION_OVERHEAD


def _graded_since(course: Path, assignment_id: str, student: str, start: float) -> bool:
    notebooks = list((course / "autograded" / student / assignment_id).glob("*.ipynb"))
    return bool(notebooks) and all(nb.stat().st_mtime >= start for nb in notebooks)


def _stamp(folder: Path) -> None:
    """nbgrader takes the submission time (grades.csv's timestamp, late penalties) from timestamp.txt, which
    ``nbgrader submit`` writes; a submission copied into submitted/ by hand has none: its newest notebook's
    modification time stands in."""
    stamp = folder / "timestamp.txt"
    if not stamp.exists():
        newest = max(nb.stat().st_mtime for nb in folder.glob("*.ipynb"))
        stamp.write_text(datetime.fromtimestamp(newest, UTC).strftime("%Y-%m-%d %H:%M:%S.%f %Z"))


def submission_digest(course: Path, assignment_id: str, student: str) -> str:
    """What a grade depends on: the submitted files (timestamp.txt included) and the assignment's source (its
    tests); a change to either makes the submission new to :func:`grade`."""
    digest = hashlib.sha256()
    for folder in (course / "submitted" / student / assignment_id, course / "source" / assignment_id):
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts):
            digest.update(f"{path.relative_to(folder)}\0{path.stat().st_size}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def grade(course: Path = COURSE, only: str | None = None, force: bool = False, extra_rows=()) -> int:
    """Autograde the submissions that are new or changed since their last grading (every one with ``force``;
    of the assignment ``only``, if given), write their feedback, export the gradebook to ``course/grades.csv``
    and ``course/export/`` (:func:`export_lms`) and the grading report to ``course/grading_report.csv`` (with
    ``extra_rows``, e.g. the submissions the class server's collect refused).

    Every submission is graded alone and always finishes: one that cannot be read (:func:`screen`: any size, any
    metadata) is left out before nbgrader starts; nbgrader's run over the rest is bounded (:func:`submission_bound`
    a submission), and where it fails or runs past its bound, each submission it did not finish is graded again in
    a run of its own. A submission that cannot be graded is listed in the report with the reason and tried again
    next time; the others are graded, fed back and exported all the same. Returns 1 when answers cannot be
    isolated here (:func:`classroom.sandbox.isolation_available`), or there was something to grade and none of
    it could be.
    """
    refused = isolation_available()
    if refused:
        print(f"error: grading refused: {refused}", file=sys.stderr)
        return 1
    found = submissions(course)
    if only is not None:
        found = {only: found[only]} if only in found else {}
    if not found:
        print(f"Nothing to grade: no notebooks in {course / 'submitted'}/<student>/"
              f"{only or '<assignment>'}/.")
        return 0
    state_path = course / GRADING_STATE
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    rows, graded, tried = list(extra_rows), [], 0
    for assignment_id, students in found.items():
        todo, digests = _to_grade(course, assignment_id, students, state.setdefault(assignment_id, {}), force)
        tried += len(todo)
        if todo:
            done = _grade_assignment(course, assignment_id, students, todo, rows)
            known = state[assignment_id]
            known.update({s: digests[s] for s in done})
            for s in set(todo) - set(done):
                known.pop(s, None)
            graded += [(assignment_id, s) for s in done]
    state_path.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    grades = course / "grades.csv"
    exported = nbgrader("export", f"--to={grades}", course=course, check=False).returncode == 0
    if exported:
        export_lms(grades, course / "export")
    # the report covers every graded submission, this run's and the earlier ones still current
    current = [(a, s) for a, students in found.items() for s in students if s in state.get(a, {})]
    failed = _report(course, rows + _sandbox_events(course, current), len(graded))
    if tried and not graded:
        print(f"error: no submission could be graded: nbgrader autograde failed on all {failed} of them "
              f"(see its log above).", file=sys.stderr)
        return 1
    if not exported:
        print(f"error: the grades could not be exported to {grades} (see nbgrader's log above).", file=sys.stderr)
        return 1
    print(f"Feedback is in {course / 'feedback'}/<student>/<assignment>/ and the grades are in {grades} "
          f"(for Canvas and Moodle: {course / 'export'}/).")
    return 0


def _to_grade(course: Path, assignment_id: str, students: list[str], known: dict,
              force: bool) -> tuple[list[str], dict[str, str]]:
    """Which of an assignment's submissions to grade (new, changed, never graded, or all with ``force``), and
    every submission's digest."""
    for student in students:
        _stamp(course / "submitted" / student / assignment_id)
    digests = {s: submission_digest(course, assignment_id, s) for s in students}
    todo = [s for s in students
            if force or known.get(s) != digests[s] or not _graded_since(course, assignment_id, s, 0)]
    print(f"{assignment_id}: {len(students)} submission(s), {len(todo)} to grade"
          + (f" ({', '.join(todo)})" if todo else ": none new or changed since graded (FORCE=1 regrades)"))
    return todo, digests


def _grade_assignment(course: Path, assignment_id: str, students: list[str], todo: list[str],
                      rows: list[dict]) -> list[str]:
    """Autograde the submissions ``todo`` of one assignment and write their feedback; returns those graded, and
    adds a report row to ``rows`` for each that could not be."""
    if assignment_id in BY_STEM and not ((course / "gradebook.db").exists()
                                         and (course / "release" / assignment_id).is_dir()):
        # autograde needs the assignment and its tests in the gradebook: `make assignments` was not run here
        nbgrader("generate_assignment", assignment_id, "--force", course=course, check=False)
    if (course / "gradebook.db").exists():  # the due date as deadlines.toml has it now, for the late penalty
        record(course, [assignment_id])
    unreadable = {s: why for s in todo if (why := screen(course / "submitted" / s / assignment_id))}
    rows += [{"assignment": assignment_id, "student": s, "cell": "", "kind": "not graded", "detail": why}
             for s, why in unreadable.items()]
    readable = [s for s in todo if s not in unreadable]
    # --force regrades what is in autograded/ already; the exclusion keeps nbgrader to the new submissions
    start = time.time() - 1  # file times have a coarse clock on some file systems
    if readable:
        bound = submission_bound()
        finished = _autograde_in_parallel(course, assignment_id, students, readable, start)
        unfinished = [s for s in readable if not _graded_since(course, assignment_id, s, start)]
        if not finished and len(unfinished) > 1:  # one of them ended its run: each alone, then
            for s in unfinished:
                nbgrader("autograde", assignment_id, "--create", "--force", *excluding(students, [s]),
                         course=course, check=False, timeout=bound)
    done = [s for s in readable if _graded_since(course, assignment_id, s, start)]
    rows += [{"assignment": assignment_id, "student": s, "cell": "", "kind": "not graded",
              "detail": "nbgrader autograde failed on this submission (its log above says why)"}
             for s in readable if s not in done]
    if done:
        nbgrader("generate_feedback", assignment_id, "--force", *excluding(students, done), course=course,
                 check=False)
    return done


def _autograde_in_parallel(course: Path, assignment_id: str, students: list[str], readable: list[str],
                           start: float) -> bool:
    """nbgrader's autograde over ``readable``, split among :func:`grading_workers` runs at once (each bounded by
    :func:`submission_bound` a submission), with a :class:`Progress` line meanwhile; each run's own output after
    it ends, so that runs do not interleave. Whether every run ended well."""
    workers = grading_workers()
    shares = [share for share in (readable[k::workers] for k in range(workers)) if share]
    progress = Progress(assignment_id, len(readable))
    print(f"$ nbgrader autograde {assignment_id}: {len(readable)} submission(s) in {len(shares)} run(s) at once",
          flush=True)
    with ExitStack() as logs:
        runs = []
        for share in shares:
            cmd, env = nbgrader_command("autograde", assignment_id, "--create", "--force",
                                        *excluding(students, share))
            out, err = (logs.enter_context(tempfile.TemporaryFile("w+")) for _ in range(2))
            process = subprocess.Popen(cmd, cwd=course, env=env, stdout=out, stderr=err, text=True)
            runs.append((process, time.monotonic() + len(share) * submission_bound(), out, err))
        while any(process.poll() is None for process, *_ in runs):
            progress.update(sum(_graded_since(course, assignment_id, s, start) for s in readable))
            for process, deadline, *_ in runs:
                if process.poll() is None and time.monotonic() > deadline:
                    process.kill()
                    print("error: an nbgrader autograde ran past its bound and was stopped", file=sys.stderr)
            time.sleep(POLL_S)
        progress.update(sum(_graded_since(course, assignment_id, s, start) for s in readable))
        for _, _, out, err in runs:
            for log, stream in ((out, sys.stdout), (err, sys.stderr)):
                log.seek(0)
                stream.write(log.read())
    return all(process.returncode == 0 for process, *_ in runs)


def _report(course: Path, rows: list[dict], graded: int) -> int:
    """Write course/grading_report.csv and say what it holds; returns how many submissions could not be graded."""
    report = course / "grading_report.csv"
    with open(report, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=REPORT_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    failed = [r for r in rows if r["kind"] == "not graded"]
    flagged = sorted({(r["assignment"], r["student"]) for r in rows if r["kind"] != "not graded"})
    print(f"Graded {graded} submission(s); {len(failed)} could not be graded; {len(flagged)} with events "
          f"(timeouts, exits, flags) in {report}.")
    for row in failed:
        print(f"  not graded: {row['student']} / {row['assignment']}: {row['detail']}")
    return len(failed)


def _sandbox_events(course: Path, graded: list[tuple[str, str]]) -> list[dict]:
    """The report rows of what happened while grading (classroom/grading.py writes one JSON per notebook)."""
    rows, isolations = [], set()
    for assignment_id, student in graded:
        path = course / "grading_reports" / assignment_id / f"{student}.json"
        if not path.exists():
            continue
        report = json.loads(path.read_text())
        isolations.add(report.get("isolation") or "none")
        rows += [{"assignment": assignment_id, "student": student, **{k: e.get(k, "") for k in REPORT_FIELDS[2:]}}
                 for e in report.get("events", [])]
    for isolation in sorted(isolations):
        if not isolation.startswith("bubblewrap"):
            print(f"warning: answers ran with isolation '{isolation}' only (bubblewrap is missing or does not "
                  "work here): a determined student could read the course folder. apt install bubblewrap.",
                  file=sys.stderr)
    return rows



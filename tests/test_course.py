"""The nbgrader coursework (classroom/course.py and its modules, course/): right answers pass, releases hide them,
grading works.

* Every instructor solution passes its own check, hidden tests included (run in-process: seconds, not a
  kernel per chapter), and the exercise table covers every check call of the chapters' Exercises sections.
* The committed source notebooks are what ``python -m classroom.course build-source`` writes.
* After ``nbgrader generate_assignment`` (into a temporary copy of course/) no release contains a solution
  line, a hidden test or the BEGIN/END markers, and every untouched release notebook runs without error.
* The whole cycle for chapter 04a with a temporary exchange: release, fetch (a student folder), scripted
  submissions (some answers right, some wrong, one untouched), submit, collect, then ``python -m
  classroom.course grade`` (autograde, feedback, export): the scores in grades.csv are exactly the points of
  the right answers, and the feedback shows the check function's own words but not the expected value.
* What the instructor's desk needs: no checksum warning for an untouched cell with hidden tests, feedback whose
  math is typeset (SVG, no CDN) and whose hidden tests are a note (their verdict kept), grades with submission
  times, Canvas and Moodle CSV; grading again grades only a changed or new submission (of one chapter).

Real nbgrader throughout (``sys.executable -m nbgrader``), in tmp folders; nothing under course/ is touched.
"""

from __future__ import annotations

import contextlib
import csv
import html
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from classroom import assignments, course, nbgrader_cli, paths
from classroom import source as sources

REPO = Path(__file__).resolve().parents[1]
CYCLE = "04a_integer_equations"
RUNTIME_DIRS = ("release", "submitted", "autograded", "feedback", "gradebook.db", "grades.csv", ".ipynb_checkpoints",
                "exchange", "export", "grading_state.json")


def _sources(nb_path: Path) -> list[tuple[dict, str]]:
    nb = json.loads(nb_path.read_text())
    return [(c, "".join(c["source"])) for c in nb["cells"]]


def _run_cells(nb_path: Path, untouched: bool = False) -> dict:
    """Run a notebook's code cells in one namespace, in this process; returns the namespace. ``untouched``:
    a release as fetched, whose graded cells must fail by their assertion (no answer yet) and nothing else."""
    namespace: dict = {}
    for cell, source in _sources(nb_path):
        if cell["cell_type"] != "code":
            continue
        meta = cell["metadata"].get("nbgrader", {})
        grade_id = meta.get("grade_id", "?")
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(source, f"{nb_path.name}:{grade_id}", "exec"), namespace)
            assert not (untouched and meta.get("grade")), f"{nb_path.name}, {grade_id} passes without an answer"
        except AssertionError as error:
            if not (untouched and meta.get("grade")):
                raise
            assert "no answer yet" in str(error) + out.getvalue(), f"{grade_id}: {error}\n{out.getvalue()}"
        except Exception as error:
            pytest.fail(f"{nb_path.name}, cell {grade_id}: {type(error).__name__}: {error}\n{out.getvalue()[-2000:]}")
    return namespace


def _env(tmp: Path) -> dict:
    env = nbgrader_cli.nbgrader_env()
    env.update(JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config"), JUPYTER_DATA_DIR=str(tmp / "jupyter-data"),
               JUPYTER_RUNTIME_DIR=str(tmp / "jupyter-runtime"), **{paths.EXCHANGE_ENV: str(tmp / "exchange")})
    return env


def _nbgrader(*args, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


# --- the table and the solutions ---------------------------------------------------------------------------

@pytest.mark.parametrize("assignment", assignments.ASSIGNMENTS, ids=lambda a: a.stem)
def test_solutions_pass_their_checks(assignment):
    """Setup, data, solution and test cells (hidden tests too) of the source notebook run without error."""
    _run_cells(REPO / "course" / "source" / assignment.stem / f"{assignment.stem}.ipynb")


def test_table_covers_every_check_call_of_the_chapters():
    chapters = {p.stem: p for p in sorted((REPO / "notebooks").glob("*.ipynb"))}
    with_exercises = {stem for stem, p in chapters.items() if sources.exercise_cells(p)}
    assert with_exercises == set(assignments.BY_STEM), "one assignment per chapter with an Exercises section"
    for stem, assignment in assignments.BY_STEM.items():
        in_chapter = sorted(assignments.normalized_call(call) for cell in sources.exercise_cells(chapters[stem])
                            if cell["cell_type"] == "code" for call in assignments.check_calls("".join(cell["source"])))
        in_table = sorted(assignments.normalized_call(assignments.check_calls(part.call)[0])
                          for ex in assignment.exercises if not ex.text for part in ex.parts)
        assert in_table == in_chapter, stem
        _, texts = sources.exercise_texts(chapters[stem])
        numbers = [ex.number for ex in assignment.exercises if not ex.text]
        assert numbers == sorted(texts), f"{stem}: exercises {sorted(texts)} in the chapter, {numbers} in the table"


def _bookdata():
    sys.path.insert(0, str(REPO / "notebooks"))
    import bookdata

    return bookdata


@pytest.mark.parametrize("stem", sorted(assignments.BY_STEM), ids=str)
def test_every_exercise_states_its_minutes(stem):
    """Every exercise of every chapter states the minutes its author estimates, in the metadata of the markdown cell
    that sets it ({"tensoradbook": {"exercise": N, "minutes": M}}); the chapter's estimated time adds them up."""
    bookdata = _bookdata()
    nb = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())
    minutes = bookdata.exercise_minutes(nb, stem)
    _, texts = sources.exercise_texts(REPO / "notebooks" / f"{stem}.ipynb")
    assert sorted(minutes) == sorted(texts) == list(range(1, len(texts) + 1)), stem
    assert all(1 <= m <= 120 for m in minutes.values()), minutes
    assert bookdata.estimated_minutes(stem)["exercises"] == sum(minutes.values())


def test_an_exercise_without_its_minutes_is_an_error():
    """No default: the flat 10 minutes per exercise are gone, and an exercise whose metadata lacks its minutes (or
    whose metadata names another exercise) stops the estimate with the chapter and the exercise named."""
    bookdata = _bookdata()
    assert not hasattr(bookdata, "EXERCISE_MINUTES")
    nb = json.loads((REPO / "notebooks" / "02_reverse_accumulation.ipynb").read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "markdown" and "**Exercise 2" in "".join(c["source"]))
    del cell["metadata"]["tensoradbook"]
    with pytest.raises(ValueError, match=r"02_reverse_accumulation, exercise 2 \(cell \d+\) states no minutes"):
        bookdata.exercise_minutes(nb, "02_reverse_accumulation")
    cell["metadata"]["tensoradbook"] = {"exercise": 3, "minutes": 7}
    with pytest.raises(ValueError, match="exercise 3's, the cell sets exercise 2"):
        bookdata.exercise_minutes(nb, "02_reverse_accumulation")
    cell["metadata"]["tensoradbook"] = {"exercise": 2, "minutes": 0}
    with pytest.raises(ValueError, match="not a positive whole number"):
        bookdata.exercise_minutes(nb, "02_reverse_accumulation")


def test_committed_sources_are_up_to_date(tmp_path):
    sources.build_source(tmp_path)
    for assignment in assignments.ASSIGNMENTS:
        rel = Path("source") / assignment.stem / f"{assignment.stem}.ipynb"
        committed = REPO / "course" / rel
        assert committed.exists(), f"{committed} is missing: run python -m classroom.course build-source"
        assert committed.read_text() == (tmp_path / rel).read_text(), \
            f"{committed} is out of date: run python -m classroom.course build-source"


def test_source_metadata_is_nbgrader_schema_3():
    for assignment in assignments.ASSIGNMENTS:
        ids = []
        for cell, source in _sources(REPO / "course" / "source" / assignment.stem / f"{assignment.stem}.ipynb"):
            meta = cell["metadata"]["nbgrader"]
            assert meta["schema_version"] == 3 and meta["task"] is False
            ids.append(meta["grade_id"])
            if meta["solution"]:
                assert not meta["locked"] and not meta["grade"] and "### BEGIN SOLUTION" in source
                assert re.match(r"\w+ = None\b", source), "a release's answer cell still assigns None"
            else:
                assert meta["locked"]
            if meta["grade"]:
                assert meta["points"] > 0 and "assert result" in source
            assert not cell.get("outputs")
        assert len(ids) == len(set(ids)), assignment.stem


def test_grade_with_nothing_submitted(tmp_path, capsys):
    (tmp_path / "nbgrader_config.py").write_text("")
    assert course.main(["grade", "--course", str(tmp_path)]) == 0
    assert "Nothing to grade" in capsys.readouterr().out


# --- releases and the cycle --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A temporary copy of course/ after ``python -m classroom.course assignments``: (tmp, course dir, env)."""
    tmp = tmp_path_factory.mktemp("course")
    course = tmp / "course"
    shutil.copytree(REPO / "course", course, ignore=shutil.ignore_patterns(*RUNTIME_DIRS, "__pycache__"))
    (tmp / "exchange").mkdir()
    env = _env(tmp)
    proc = subprocess.run([sys.executable, "-m", "classroom.course", "assignments", "--course", str(course)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    assert "Releases are in" in proc.stdout
    return tmp, course, env


def _marked_lines(source: str) -> list[str]:
    """The lines between BEGIN/END SOLUTION and BEGIN/END HIDDEN TESTS markers."""
    found, inside = [], False
    for line in source.splitlines():
        if re.search(r"### BEGIN (SOLUTION|HIDDEN TESTS)", line):
            inside = True
        elif re.search(r"### END (SOLUTION|HIDDEN TESTS)", line):
            inside = False
        elif inside and line.strip():
            found.append(line.strip())
    return found


def test_releases_hide_solutions_and_hidden_tests(released):
    _, course, _ = released
    for assignment in assignments.ASSIGNMENTS:
        name = f"{assignment.stem}.ipynb"
        release = course / "release" / assignment.stem / name
        assert release.exists()
        released_text = "\n".join(source for _, source in _sources(release))
        secret = [line for _, source in _sources(course / "source" / assignment.stem / name)
                  for line in _marked_lines(source)]
        assert secret
        for line in secret:
            assert line not in released_text, f"{assignment.stem} release shows {line!r}"
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
            assert marker not in release.read_text()
        # the release starts untouched: every answer cell still assigns None and runs
        namespace = _run_cells(release, untouched=True)
        assert all(namespace[p.answer] is None for ex in assignment.exercises for p in ex.parts)


def _answer(nb: dict, grade_id: str, source: str) -> None:
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == grade_id:
            cell["source"] = source
            return
    raise KeyError(grade_id)


WRONG_SMITH = "([[2, 0], [0, 10]], [[1, 0], [0, 1]], [[1, 0], [0, 1]])"
ALICE = {  # right: 1, 3, 4a, 5 (1 + 2 + 1 + 3 points); wrong: 2, 4b
    "ex1_answer": "answer_1 = (23, -3, 4)",
    "ex2_answer": f"answer_2 = {WRONG_SMITH}",
    "ex3_answer": "answer_3 = [[-5, -14], [3, 7], [0, 1]]",
    "ex4a_answer": "answer_4a = NO_SOLUTION",
    "ex4b_answer": "answer_4b = ([3, 0, 5], [[1], [1], [1]])",
    "ex5_answer": ("def bezout(a, b):\n    if b == 0:\n        return a, 1, 0\n"
                   "    g, x, y = bezout(b, a % b)\n    return g, y, x - (a // b) * y"),
}
# written for the visible check's own pairs (check_bezout tries a dozen besides (240, 46)): the one way left to pass
# the visible test and fail the hidden ones (tests/test_check_agreement.py)
VISIBLE_PAIRS = "[(240, 46), (84, 0), (0, 35), (0, 1), (36, 120), (9, 9), (1, 5), (13, 52), (52, 13), (1001, 221), " \
    "(35, 64), (2 ** 19 - 1, 2 ** 17 - 1), (2 ** 61 - 1, 2 ** 31 - 1)]"
BOB = {  # right: 1 (1 point); a bezout that passes the visible test but not the hidden ones; the rest untouched
    "ex1_answer": "answer_1 = (23, -3, 4)",
    "ex5_answer": (f"def bezout(a, b):\n    if (a, b) not in {VISIBLE_PAIRS}:\n        return 2, -9, 47\n"
                   "    x0, y0, x1, y1 = 1, 0, 0, 1\n    while b:\n        q, r = divmod(a, b)\n        a, b = b, r\n"
                   "        x0, y0, x1, y1 = x1, y1, x0 - q * x1, y0 - q * y1\n    return a, x0, y0"),
}
EXPECTED = {"alice": 7.0, "bob": 1.0, "carol": 0.0}


def test_bob_writes_for_exactly_the_visible_pairs():
    from tensoradbook.exercises.ch04a_integer_equations import BEZOUT_PAIRS

    assert eval(VISIBLE_PAIRS) == [(240, 46), *BEZOUT_PAIRS]  # noqa: S307 -- a literal of this file


def test_full_cycle_with_exchange(released):
    tmp, course, env = released
    _nbgrader("release_assignment", CYCLE, "--force", cwd=course, env=env)
    student_opts = ["--course=tensoradbook", f"--Exchange.root={tmp / 'exchange'}", f"--Exchange.cache={tmp / 'cache'}"]
    fetched = tmp / "students" / "fetched"
    fetched.mkdir(parents=True)
    _nbgrader("fetch_assignment", CYCLE, *student_opts, cwd=fetched, env=env)
    assert (fetched / CYCLE / f"{CYCLE}.ipynb").exists()
    for student, answers in (("alice", ALICE), ("bob", BOB), ("carol", {})):
        # each student works on a copy of the one fetched release (a fetch per student costs an nbgrader start)
        home = tmp / "students" / student
        shutil.copytree(fetched, home)
        path = home / CYCLE / f"{CYCLE}.ipynb"
        nb = json.loads(path.read_text())
        for grade_id, source in answers.items():
            _answer(nb, grade_id, source)
        path.write_text(json.dumps(nb))
        _nbgrader("submit", CYCLE, f"--student={student}", *student_opts, cwd=home, env=env)
    _nbgrader("collect", CYCLE, cwd=course, env=env)
    assert sorted(p.name for p in (course / "submitted").iterdir()) == sorted(EXPECTED)

    proc = _grade(course, env)
    log = proc.stdout[-3000:] + proc.stderr[-8000:]
    assert "grades are in" in proc.stdout
    assert "Traceback" not in proc.stderr, log
    assert "has changed" not in proc.stdout + proc.stderr, log  # the untouched ex5_test (hidden tests) included

    with open(course / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == CYCLE}
    assert {s: float(r["score"]) for s, r in rows.items()} == EXPECTED
    assert {float(r["max_score"]) for r in rows.values()} == {float(assignments.BY_STEM[CYCLE].points)}
    for student in EXPECTED:  # autograded, untouched release included
        assert (course / "autograded" / student / CYCLE / f"{CYCLE}.ipynb").exists()

    from tensoradbook.exercises import check_smith

    verdict = check_smith([[6, 4], [4, 6]], eval(WRONG_SMITH))
    assert not verdict and verdict.problems
    feedback = (course / "feedback" / "alice" / CYCLE / f"{CYCLE}.html").read_text()
    for problem in verdict.problems:  # the check function's own words, as the student sees them
        assert html.escape(problem, quote=False) in feedback or problem in feedback, problem
    assert "not right yet: see the feedback above" in feedback
    for solution in ("(23, -3, 4)", "[[-1, 1], [-3, 2]]", "[[0, -1], [1, -1]]", "[3, 0, 5], [[1], [-1], [1]]",
                     "(2, 10)"):
        assert solution not in feedback.replace("answer_1 = (23, -3, 4)", ""), solution
    bob = (course / "feedback" / "bob" / CYCLE / f"{CYCLE}.html").read_text()
    assert "bezout(391, 299)" in bob  # the hidden test's message on Bob's hard-coded answer
    assert "classroom/grading.py" not in bob  # the traceback starts at the test cell, not in the grader
    # the hidden tests themselves are a note: the assignment can be given again
    hidden = assignments.BY_STEM[CYCLE].exercises[4].parts[0].hidden
    assert "(1071, 462)" in hidden and "(1071, 462)" not in bob and "hidden tests: not shown" in bob
    # the math typeset at grading time, offline: no CDN, no raw TeX
    assert "cdnjs" not in feedback and "<script" not in feedback and "<svg" in feedback
    assert r"\gcd(391, 299)" not in feedback and r"\begin{pmatrix}" not in feedback

    times = {r["student_id"]: r["timestamp"] for r in rows.values()}
    assert all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", t) for t in times.values()), times
    title = assignments.BY_STEM[CYCLE].title
    with open(course / "export" / "canvas.csv") as f:
        canvas = list(csv.reader(f))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", title]
    assert canvas[1] == ["Points Possible", "", "", "", "", "11.0"]
    assert {r[3]: float(r[5]) for r in canvas[2:]} == EXPECTED
    with open(course / "export" / "moodle.csv") as f:
        moodle = list(csv.DictReader(f))
    assert {r["Username"]: float(r[title]) for r in moodle} == EXPECTED


def _grade(course: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "classroom.course", "grade", *args, "--course", str(course)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-8000:]
    return proc


def test_grading_again_grades_only_what_is_new(released):
    _, course, env = released
    if not (course / "autograded").is_dir():
        pytest.skip("needs the submissions graded by test_full_cycle_with_exchange")
    autograded = {s: (course / "autograded" / s / CYCLE / f"{CYCLE}.ipynb").stat().st_mtime for s in EXPECTED}
    proc = _grade(course, env)
    assert f"{CYCLE}: 3 submission(s), 0 to grade" in proc.stdout and "Graded 0 submission(s)" in proc.stdout
    # Bob changes an answer; Dave's submission is copied in by hand (no timestamp.txt)
    path = course / "submitted" / "bob" / CYCLE / f"{CYCLE}.ipynb"
    nb = json.loads(path.read_text())
    _answer(nb, "ex3_answer", "answer_3 = [[-5, -14], [3, 7], [0, 1]]")
    path.write_text(json.dumps(nb))
    dave = course / "submitted" / "dave" / CYCLE
    shutil.copytree(course / "submitted" / "carol" / CYCLE, dave, ignore=shutil.ignore_patterns("timestamp.txt"))
    proc = _grade(course, env, CYCLE)
    assert f"{CYCLE}: 4 submission(s), 2 to grade (bob, dave)" in proc.stdout, proc.stdout[-3000:]
    for student in ("alice", "carol"):
        assert (course / "autograded" / student / CYCLE / f"{CYCLE}.ipynb").stat().st_mtime == autograded[student]
    with open(course / "grades.csv") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f) if r["assignment"] == CYCLE}
    assert {s: float(r["score"]) for s, r in rows.items()} == {**EXPECTED, "bob": 3.0, "dave": 0.0}
    assert rows["dave"]["timestamp"], "a submission without timestamp.txt has its notebook's time"


def test_make_grade_passes_chapter_and_force():
    plan = subprocess.run(["make", "-n", "-o", ".venv/.installed", "grade", f"CHAPTER={CYCLE}", "FORCE=1"],
                          cwd=REPO, capture_output=True, text=True, timeout=60, check=True).stdout
    assert f"-m classroom.course grade {CYCLE} --force" in plan

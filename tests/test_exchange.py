"""nbgrader's exchange on the class server (classroom/exchange.py, classroom.course_hub.hub_grade), tried as students
and an instructor would try it.

One course for the module, set up as ``make hub`` sets it up (``hub.setup``, without starting JupyterHub: the
students submit with ``nbgrader submit`` itself, as their servers' Assignments tab does): an instructor and four
students (users ``taxins01``, ``taxst01``..., removed afterwards). The instructor's ``nbgrader_config.py`` carries a
line that leaves a file named after the uid that ran it. Root runs ``python -m classroom.course assignments --hub``
(without ``-B``, as the reviewer did), the students submit, then the attacks, each as its student:

* st01 submits a blank notebook in st02's name, once with a time in 2099 and once with the time of now (later than
  st02's own), and one of its own with a time in 2099;
* st03 hands in a link to the instructor's source notebook (after an honest submission), and a submission only it
  can read;
* st04 hands in a link to st02's submitted notebook, a link to st02's whole submission, a notebook with a second
  hard link, and earlier a blank submission made by hand without ``submission_secret.txt``;
* st03 makes an entry in the name of an id that is not on the class list.

Root's ``grade --hub``: each of them is refused and reported, st02 keeps its own 6/6, every grade is what the
student's own latest honest submission deserves, the feedback of all but st04's (which has no secret) goes back
without a traceback, and nothing ran as root (the planted line ran as the instructor only). Then root's hand-over
(``_give_to_instructors``) and ``make hub``'s set-up again, with links an instructor planted in the course folder and
in the course's exchange folder: nothing outside is chowned or written. And the compiled copies of the course table
are never world-readable.

Needs root (it creates Unix users): skipped with the reason otherwise, failed instead when CI=true. The helpers'
refusals are tested without root too.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import py_compile
import shutil
import stat
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from importlib.util import cache_from_source
from pathlib import Path

import pytest

from classroom import assignments, course_hub
from classroom import exchange, hub
from tests.browser_support import IN_CI
from tests.hub_support import one_class_at_a_time, passable, run_as, write_settings

REPO = Path(__file__).resolve().parents[1]
PREFIX = "tax"
CHAPTER = "02_reverse_accumulation"
ASSIGNMENT = assignments.BY_STEM[CHAPTER]
PARTS = [(f"ex{e.number}{p.label}_answer", p) for e in ASSIGNMENT.exercises for p in e.parts]
PLANTED = ('\nimport os as _os\nopen(_os.path.join(HERE, "ran-as-%d" % _os.getuid()), "a").close()  '
           '# planted by tests/test_exchange.py\n')
MAKE_ENTRY = r"""
import json, os, sys
folder, spec = sys.argv[1], json.loads(sys.argv[2])
os.mkdir(folder)
for name, (kind, value) in spec.items():
    path = os.path.join(folder, name)
    if kind == "text":
        with open(path, "w") as f:
            f.write(value)
    elif kind == "link":
        os.symlink(value, path)
    else:
        os.link(value, path)
os.chmod(folder, 0o777)
"""


def _require_root():
    if os.geteuid() != 0:
        why = "the exchange tests create Unix users and submit as them: they need root"
        if IN_CI:
            pytest.fail(f"CI=true and {why}", pytrace=False)
        pytest.skip(why)


def stamp(when: datetime | None = None) -> str:
    """A time as nbgrader submit writes it."""
    return (when or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M:%S.%f %Z")


def answered(release: dict, right: set[str]) -> dict:
    """The released notebook with the solution in the answer cells of ``right`` and a wrong answer in the rest."""
    nb = json.loads(json.dumps(release))
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in dict(PARTS):
            part = dict(PARTS)[grade_id]
            cell["source"] = part.solution if grade_id in right else f"{part.answer} = 'wrong'"
    return nb


def points(right: set[str]) -> float:
    return float(sum(p.points for grade_id, p in PARTS if grade_id in right))


class Course:
    def __init__(self, root: Path, settings):
        self.root, self.settings = root, settings
        self.names = [s.username for s in settings.students()]
        self.instructor = settings.instructors[0]
        self.inbound = settings.exchange / settings.course_id / "inbound"
        self.release: dict = {}
        self.right: dict[str, set[str]] = {}

    def as_root(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        """``python -m classroom.course <args> --hub`` as root, as the Makefile's recipe would (without -B)."""
        return subprocess.run([sys.executable, "-m", "classroom.course", *args, "--hub", "--settings",
                               str(self.settings.path)], cwd=REPO, capture_output=True, text=True, timeout=timeout)

    def submit(self, name: str, nb: dict) -> str:
        """``nbgrader submit`` as the student, of ``nb`` as the chapter's notebook; the entry's name."""
        user = pwd.getpwnam(name)
        folder = Path(user.pw_dir) / CHAPTER
        folder.mkdir(exist_ok=True)
        (folder / f"{CHAPTER}.ipynb").write_text(json.dumps(nb))
        for path in (folder, folder / f"{CHAPTER}.ipynb"):
            os.chown(path, user.pw_uid, user.pw_gid)
        before = set(os.listdir(self.inbound))
        proc = run_as(name, sys.executable, "-m", "nbgrader", "submit", CHAPTER, "--course",
                      self.settings.course_id, f"--Exchange.root={self.settings.exchange}", timeout=300)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        (new,) = set(os.listdir(self.inbound)) - before
        return new

    def entry(self, owner: str, claimed: str, when: str, suffix: str, spec: dict) -> str:
        """An entry made by hand by the student ``owner``, in the name of ``claimed``."""
        name = f"{claimed}+{CHAPTER}+{when}+{suffix}"
        proc = run_as(owner, sys.executable, "-c", MAKE_ENTRY, str(self.inbound / name), json.dumps(spec))
        assert proc.returncode == 0, proc.stderr
        return name


@pytest.fixture(scope="module")
def graded():
    """The course, its submissions and attacks, graded by root: (course, grade's output, the entries' names)."""
    _require_root()
    with one_class_at_a_time():  # not beside tests/test_hub.py's class (a test worker beside this one)
        yield from _graded()


def _graded():
    # a world-readable compiled copy of classroom/course.py, as a root run without -B left when it held the solutions
    source = REPO / "classroom" / "course.py"
    py_compile.compile(str(source), cfile=cache_from_source(str(source)), doraise=True)
    os.chmod(cache_from_source(str(source)), 0o644)
    root = Path(tempfile.mkdtemp(prefix=f"tensoradbook-{PREFIX}-"))
    root.chmod(0o755)
    settings = hub.load_settings(write_settings(root, PREFIX, 4))
    try:
        with passable():
            hub.setup(settings, warm=False)
            config = settings.course / "nbgrader_config.py"
            text = config.read_text()
            marker = "\n# the class server (make hub):"
            config.write_text(text.replace(marker, PLANTED + marker))  # as the instructor would: theirs stays theirs
            k = Course(root, settings)
            proc = k.as_root("assignments", CHAPTER)
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
            k.release = json.loads((settings.exchange / settings.course_id / "outbound" / CHAPTER
                                    / f"{CHAPTER}.ipynb").read_text())
            st01, st02, st03, st04 = k.names
            all_right = {g for g, _ in PARTS}
            k.right = {st01: all_right, st02: all_right, st03: {PARTS[0][0]}, st04: set()}
            names = {}
            blank = json.dumps(k.release)
            # st04: a blank submission made by hand, without submission_secret.txt, before the others
            early = stamp(datetime(2024, 1, 1, tzinfo=UTC))
            names["no secret"] = k.entry(st04, st04, early, "nosecret", {
                f"{CHAPTER}.ipynb": ["text", blank], "timestamp.txt": ["text", early]})
            for name in (st01, st02, st03):
                names[name] = k.submit(name, answered(k.release, k.right[name]))
            theirs = k.inbound / names[st02]
            future = stamp(datetime(2099, 1, 1, tzinfo=UTC))
            for label, owner, claimed, when in [("forged 2099", st01, st02, future),
                                                ("forged now", st01, st02, stamp()), ("future", st01, st01, future),
                                                ("not listed", st03, f"{PREFIX}aaa", stamp())]:
                names[label] = k.entry(owner, claimed, when, label.replace(" ", ""), {
                    f"{CHAPTER}.ipynb": ["text", blank], "timestamp.txt": ["text", when],
                    "submission_secret.txt": ["text", "0" * 128]})
            now = stamp()
            names["link to source"] = k.entry(st03, st03, now, "source", {
                f"{CHAPTER}.ipynb": ["link", str(settings.course / "source" / CHAPTER / f"{CHAPTER}.ipynb")],
                "timestamp.txt": ["text", now]})
            names["unreadable"] = k.entry(st03, st03, now, "unreadable", {
                f"{CHAPTER}.ipynb": ["text", blank], "timestamp.txt": ["text", now]})
            assert run_as(st03, "chmod", "700", str(k.inbound / names["unreadable"])).returncode == 0
            names["link to another's"] = k.entry(st04, st04, now, "another", {
                f"{CHAPTER}.ipynb": ["link", str(theirs / f"{CHAPTER}.ipynb")], "timestamp.txt": ["text", now]})
            names["hard link 1"] = k.entry(st04, st04, now, "hard1", {
                f"{CHAPTER}.ipynb": ["text", blank], "timestamp.txt": ["text", now]})
            names["hard link 2"] = k.entry(st04, st04, now, "hard2", {
                f"{CHAPTER}.ipynb": ["hardlink", str(k.inbound / names["hard link 1"] / f"{CHAPTER}.ipynb")],
                "timestamp.txt": ["text", now]})
            whole = f"{st04}+{CHAPTER}+{now}+whole"
            proc = run_as(st04, "ln", "-s", str(theirs), str(k.inbound / whole))
            assert proc.returncode == 0, proc.stderr
            names["linked folder"] = whole
            proc = k.as_root("grade", CHAPTER)
            yield k, proc, names
    finally:
        hub.remove_users(settings)
        shutil.rmtree(root, ignore_errors=True)


def _report(k: Course) -> list[dict]:
    with open(k.settings.course / "grading_report.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_only_what_the_student_owns_is_collected(graded):
    k, proc, names = graded
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "Traceback" not in out, out[-4000:]
    with open(k.settings.course / "grades.csv", newline="") as f:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(f) if row["timestamp"]}
    # st02 keeps its own 6/6 whatever st01 submitted in its name; st03 is graded on its honest submission, not
    # on the instructor's solution; st04 on its only submission that is its own (blank)
    st01, st02, st03, st04 = k.names
    assert scores == {st01: points(k.right[st01]), st02: points(k.right[st02]), st03: points(k.right[st03]),
                      st04: 0.0}, out[-4000:]
    assert points(k.right[st02]) == ASSIGNMENT.points == 6
    assert f"{PREFIX}aaa" not in os.listdir(k.settings.course / "submitted")
    refused = {r["detail"].split(": ")[0]: r for r in _report(k) if r["kind"] == exchange.REFUSED}
    expected = {"forged 2099": "not by the student it names", "forged now": "not by the student it names",
                "future": "in the future", "not listed": "not on the class list", "link to source": "is a link",
                "unreadable": "cannot be read",
                "link to another's": "is a link", "hard link 1": "hard links", "hard link 2": "hard links",
                "linked folder": "link"}
    for label, why in expected.items():
        assert names[label] in refused, (label, sorted(refused), out[-4000:])
        assert why in refused[names[label]]["detail"], (label, refused[names[label]])
        assert f"refused {names[label]!r}" in out
    assert refused[names["forged 2099"]]["student"] == st02 and "taxst01" in refused[names["forged 2099"]]["detail"]
    assert {r["detail"].split(": ")[0] for r in _report(k) if r["kind"] == exchange.REFUSED} == set(refused)
    assert len(refused) == len(expected)
    # the honest ones went through untouched; st04's blank one, dated 2024 by hand, is graded and flagged
    for name in (st01, st02, st03):
        assert names[name] not in refused
    suspicious = [r for r in _report(k) if r["kind"] == exchange.SUSPICIOUS]
    assert [(r["student"], r["detail"].split(": ")[0]) for r in suspicious] == [(st04, names["no secret"])]


def test_feedback_goes_back_without_a_traceback(graded):
    from nbgrader.utils import notebook_hash

    k, proc, names = graded
    st01, st02, st03, st04 = k.names
    released = {p.name for p in (k.settings.exchange / k.settings.course_id / "feedback").iterdir()}
    for name in (st01, st02, st03):
        secret = (k.settings.course / "submitted" / name / CHAPTER / "submission_secret.txt").read_text()
        assert f"{notebook_hash(secret=secret, notebook_id=CHAPTER)}.html" in released, name
    assert len(released) == 3
    assert (k.settings.course / "feedback" / st04 / CHAPTER / f"{CHAPTER}.html").exists()
    unreleased = [r for r in _report(k) if r["kind"] == "feedback not released"]
    assert [(r["student"], r["assignment"]) for r in unreleased] == [(st04, CHAPTER)]
    assert "Traceback" not in proc.stdout + proc.stderr


def test_root_runs_nothing_of_the_instructors(graded):
    k, proc, _ = graded
    ran = sorted(p.name for p in k.settings.course.glob("ran-as-*"))
    instructor = pwd.getpwnam(k.instructor).pw_uid
    # the planted line ran (nbgrader loads the course's config), and as the instructor only, never as root
    assert ran == [f"ran-as-{instructor}"], ran
    # what the steps wrote in the course folder is the instructor's, no file of root's left in it
    owners = {p.lstat().st_uid for p in [k.settings.course, *k.settings.course.rglob("*")]}
    assert owners == {instructor}, owners


def test_compiled_course_table_is_not_world_readable(graded):
    k, _, _ = graded
    compiled = hub.compiled_solutions()
    assert any(p.name.startswith("course.") for p in compiled)
    for path in compiled:
        assert not path.stat().st_mode & 0o007, f"{path} is {path.stat().st_mode & 0o777:o}"
    assert "PYTHONDONTWRITEBYTECODE=1 $(VPY) -B -m classroom.course grade" in (REPO / "Makefile").read_text()


def test_root_never_follows_an_instructors_link(graded):
    k, _, _ = graded
    s = k.settings
    instructor = pwd.getpwnam(k.instructor)
    victim = Path(tempfile.mkdtemp(prefix="tensoradbook-victim-"))
    try:
        (victim / "inside").mkdir()
        secret = victim / "secret"
        secret.write_text("root's\n")
        secret.chmod(0o600)
        before = {p: (p.stat().st_uid, p.stat().st_gid, p.stat().st_mode) for p in (victim, victim / "inside", secret)}

        def untouched():
            assert {p: (p.stat().st_uid, p.stat().st_gid, p.stat().st_mode) for p in before} == before
            assert secret.read_text() == "root's\n"

        def as_instructor(code: str, *args: str):
            proc = run_as(k.instructor, sys.executable, "-c", code, *args)
            assert proc.returncode == 0, proc.stderr

        # links an instructor plants in the course folder, and a file of root's with a second hard link (where
        # fs.protected_hardlinks is off an instructor can make one), beside a file root left there
        as_instructor("import os, sys; os.symlink(sys.argv[1], sys.argv[2]); os.symlink(sys.argv[1], sys.argv[3])",
                      str(victim), str(s.course / "planted"), str(s.course / "feedback" / "planted"))
        os.link(secret, s.course / "hardlinked")
        (s.course / "left-by-root").write_text("")
        course_hub._give_to_instructors(s)
        hub._chown_tree(s.course, instructor.pw_uid, instructor.pw_gid)
        untouched()
        assert (s.course / "left-by-root").stat().st_uid == instructor.pw_uid
        # the course's folder in the exchange is the instructor's: its feedback folder swapped for a link
        feedback = s.exchange / s.course_id / "feedback"
        as_instructor("import os, sys; os.rename(sys.argv[1], sys.argv[1] + '.real'); os.symlink(sys.argv[2], "
                      "sys.argv[1])", str(feedback), str(victim))
        try:
            course_hub._give_to_instructors(s)
            with pytest.raises(exchange.UnsafePath):
                hub.setup_exchange(s)
            untouched()
        finally:
            feedback.unlink()
            os.rename(f"{feedback}.real", feedback)
        # the course's nbgrader_config.py swapped for a link to a file of root's: make hub's set-up rewrites it
        config = s.course / "nbgrader_config.py"
        as_instructor("import os, sys; os.rename(sys.argv[1], sys.argv[1] + '.real'); os.symlink(sys.argv[2], "
                      "sys.argv[1])", str(config), str(secret))
        hub.setup_course(s)
        untouched()
        assert stat.S_ISREG(config.lstat().st_mode) and config.stat().st_uid == instructor.pw_uid
        assert f"c.CourseDirectory.course_id = {s.course_id!r}" in config.read_text()
    finally:
        shutil.rmtree(victim, ignore_errors=True)


# --- without root ---------------------------------------------------------------------------------------------------

def test_names_and_links_are_refused(tmp_path):
    entry = exchange.parse_name("st01+02_reverse_accumulation+2024-05-01 12:34:56.123456 UTC+AbC_d-12")
    assert (entry.student, entry.assignment, entry.when) == ("st01", "02_reverse_accumulation",
                                                             datetime(2024, 5, 1, 12, 34, 56, 123456))
    for bad in ("st01+02+2024-05-01 12:34:56 UTC", "st01+02+yesterday+x", "a+b+c+d+e", "st01++2024-05-01+x"):
        with pytest.raises(exchange.Refused):
            exchange.parse_name(bad)
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "twice").hardlink_to(tmp_path / "real" / "file")
    if os.stat(tmp_path).st_uid != 0:  # a link in a folder of someone's other than root: never followed
        with pytest.raises(exchange.UnsafePath):
            os.close(exchange.open_folder(tmp_path / "link"))
    os.close(exchange.open_folder(tmp_path / "real"))
    left = exchange.chown_tree(tmp_path, -1, -1)
    assert sorted(Path(p).name for p in left) == ["file", "link", "twice"]
    fd = exchange.open_folder(tmp_path)
    try:
        (tmp_path / "target").write_text("kept")
        os.symlink(tmp_path / "target", tmp_path / "name")
        exchange.replace_file(fd, "name", b"new", 0o644)
        assert (tmp_path / "target").read_text() == "kept" and not (tmp_path / "name").is_symlink()
        assert exchange.read_file(fd, "name") == b"new"
        os.symlink(tmp_path / "target", tmp_path / "other")
        assert exchange.read_file(fd, "other") is None
    finally:
        os.close(fd)

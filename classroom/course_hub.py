"""The coursework on the class server (``make hub``, classroom/hub.py): assignments released into its exchange,
submissions collected from it and graded, feedback released, every step as the course's instructor."""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

from classroom import exchange, hub
from classroom.assignments import ASSIGNMENTS
from classroom.autograde import grade
from classroom.deadlines import cutoffs
from classroom.nbgrader_cli import excluding, generate_assignments, nbgrader
from classroom.paths import EXCHANGE_ENV, REPO


# Root runs `make assignments` and `make grade` on the class server, yet every step on the course runs as its (first)
# instructor: generating, collecting, autograding and releasing execute what the instructors write (the course
# folder's nbgrader_config.py, which nbgrader always loads from the course's root, and the setup and test cells of
# the source notebooks, which the grader itself runs, classroom/grading.py), so run as root any of them would make
# an instructor root. Root only hands back what older versions left as root's (`_give_to_instructors`, never
# through a link) and starts `python -B -m classroom.course ... --hub` again as the instructor (`_as_instructor`),
# with a clean environment and the repository's classroom/. The answers still run in bubblewrap
# (classroom/sandbox.py), in a user namespace of the instructor's, the course folder, the exchange, the homes and
# the repository hidden; where bubblewrap cannot run so, grading is refused (hub/README.md).

#: The variable with which whoever starts the grading accepts answers behind the audit hook alone
#: (classroom.sandbox.WEAK_SANDBOX_ENV), passed on to the instructor's process when root has it set.
_WEAK_SANDBOX_ENV = "TENSORADBOOK_WEAK_SANDBOX"


def _hub_options(settings) -> list[str]:
    return [f"--CourseDirectory.course_id={settings.course_id}", f"--Exchange.root={settings.exchange}"]


def _give_to_instructors(settings) -> None:
    """What older versions, which generated and graded as root, left as root's in the course directory and in the
    course's folders of the exchange goes to the instructors, who now do all of it: root's folders and plain files
    only, each on a descriptor opened without following links, never a file with another hard link
    (:func:`classroom.exchange.chown_tree`); a link in the way of a top folder leaves that folder alone."""

    if os.geteuid() != 0:
        return
    uid, gid = pwd.getpwnam(settings.instructors[0]).pw_uid, grp.getgrnam(settings.staff_group).gr_gid
    course_exchange = settings.exchange / settings.course_id
    for top in (settings.course, course_exchange / "outbound", course_exchange / "feedback"):
        try:
            exchange.chown_tree(top, uid, gid, only_uid=0)
        except FileNotFoundError:
            continue
        except OSError as error:  # UnsafePath: a link where a folder belongs
            print(f"warning: {top} was not handed to the instructors: {error}", file=sys.stderr)


def _as_instructor(settings, command: str, only: str | None, force: bool = False, more: tuple[str, ...] = ()) -> int:
    """``python -B -m classroom.course <command> [only] --hub`` as the course's first instructor (setpriv, their
    groups), from the repository, in an environment of its own: the instructor's HOME, this Python's bin folder
    first on PATH, the repository alone on PYTHONPATH, the instructors' Jupyter configuration of the class server
    (``<jupyter>/instructor``: the course, the exchange, group sharing). Returns its exit status."""

    entry = pwd.getpwnam(settings.instructors[0])
    if entry.pw_uid == 0:
        raise SystemExit(f"error: the instructor {entry.pw_name} is root: name an ordinary user in {settings.path}")
    # the instructor reads the exercise files through the staff group; a git pull since make hub rewrote them as root's
    # and readable by all: locked away again, for the staff group
    hub.hide_solutions(settings)
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
           "HOME": entry.pw_dir, "USER": entry.pw_name, "LOGNAME": entry.pw_name,
           "LANG": os.environ.get("LANG", "C.UTF-8"), "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1",
           "JUPYTER_CONFIG_PATH": str(settings.jupyter / "instructor"), hub.SETTINGS_ENV: str(settings.path),
           EXCHANGE_ENV: str(settings.exchange)}
    env.update({k: os.environ[k] for k in (_WEAK_SANDBOX_ENV, "TERM") if k in os.environ})
    setpriv = shutil.which("setpriv", path="/usr/bin:/bin") or "setpriv"  # not from whatever root's PATH has first
    cmd = [setpriv, f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups",
           sys.executable, "-B", "-m", "classroom.course", command, *([only] if only else []), "--hub",
           "--settings", str(settings.path), *(["--force"] if force else []), *more]
    print(f"As the instructor {entry.pw_name} (root runs nothing of the course's):", flush=True)
    return subprocess.run(cmd, cwd=REPO, env=env).returncode


def hub_course(settings_path: Path | None = None):
    """The hub's settings, when its course directory is set up (``make hub`` ran), else None."""
    settings = hub.load_settings(settings_path)
    return settings if (settings.course / "nbgrader_config.py").exists() else None


def hub_assignments(settings, only: str | None = None) -> None:
    """Generate every assignment (or ``only`` one) in the hub's course directory and release it into the
    exchange, as the instructor (run as root, it starts itself again as the instructor: :func:`_as_instructor`)."""
    if os.geteuid() == 0:
        _give_to_instructors(settings)
        status = _as_instructor(settings, "assignments", only)
        if status:
            raise SystemExit(status)
        return
    os.environ[EXCHANGE_ENV] = str(settings.exchange)
    stems = [only] if only else [a.stem for a in ASSIGNMENTS]
    generate_assignments(settings.course, only)
    for stem in stems:
        nbgrader("release_assignment", stem, "--force", *_hub_options(settings), course=settings.course)
    print(f"Released {len(stems)} assignment(s) into {settings.exchange / settings.course_id / 'outbound'}: "
          "students fetch them in their Assignments tab.")


def _unreleasable(course: Path, stems: list[str]) -> list[dict]:
    """Report rows for the submissions whose feedback cannot go back through the exchange: those without the
    ``submission_secret.txt`` that ``nbgrader submit`` writes (put into submitted/ by hand), which names the
    feedback's file in the exchange."""
    return [{"assignment": folder.name, "student": folder.parent.name, "cell": "", "kind": "feedback not released",
             "detail": "no submission_secret.txt (not collected from the exchange): its feedback stays in "
                       f"{course / 'feedback'}/, for the instructor to hand over"}
            for stem in stems for folder in sorted((course / "submitted").glob(f"*/{stem}/"))
            if any(folder.glob("*.ipynb")) and not (folder / "submission_secret.txt").is_file()]


def _release_feedback(settings, stems: list[str]) -> None:
    """nbgrader's release_feedback of every assignment with feedback, leaving out the students whose feedback has
    no ``timestamp.txt`` or ``submission_secret.txt`` (nbgrader would stop at the first of them with a traceback,
    and release nobody's after it)."""
    for stem in stems:
        folders = sorted((settings.course / "feedback").glob(f"*/{stem}/"))
        names = [f.parent.name for f in folders]
        ready = [f.parent.name for f in folders
                 if all((f / n).is_file() for n in ("timestamp.txt", "submission_secret.txt"))]
        for name in names:
            if name not in ready:
                print(f"feedback not released: {name} / {stem}: no submission_secret.txt", flush=True)
        if ready:
            done = nbgrader("release_feedback", stem, *_hub_options(settings), *excluding(names, ready),
                            course=settings.course, check=False)
            if done.returncode != 0:
                print(f"warning: nbgrader release_feedback {stem} failed (its log above says why)", file=sys.stderr)


def hub_grade(settings, only: str | None = None, force: bool = False) -> int:
    """Collect the submissions from the exchange (:func:`classroom.exchange.collect`: only what the student whose
    id it carries owns, no links, ids from the class list), autograde them (:func:`grade`, the refused entries in
    its report), release the feedback; as the instructor (run as root, it starts itself again as the instructor:
    :func:`_as_instructor`)."""
    if os.geteuid() == 0:
        _give_to_instructors(settings)
        return _as_instructor(settings, "grade", only, force)
    os.environ[EXCHANGE_ENV] = str(settings.exchange)
    stems = [only] if only else [a.stem for a in ASSIGNMENTS]
    rows = exchange.collect(settings, stems, cutoffs=cutoffs(settings.course))
    rows += _unreleasable(settings.course, stems)
    status = grade(settings.course, only, force=force, extra_rows=rows)
    _release_feedback(settings, stems)
    return status


def hub_extend(settings, args, extend) -> int:
    """``extend(course, args, students)`` on the hub's course for a student of its class list, as the instructor
    (run as root, it starts itself again as the instructor: :func:`_as_instructor`)."""
    if os.geteuid() == 0:
        return _as_instructor(settings, "extend", args.assignment,
                              more=("--student", args.student, "--until", args.until.isoformat()))
    return extend(settings.course, args, [s.username for s in settings.students()])

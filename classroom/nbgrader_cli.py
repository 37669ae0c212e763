"""Running nbgrader: ``sys.executable -m nbgrader`` in a course folder, with this interpreter's tools first on PATH,
as another Unix user when asked, on a clock."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

from classroom.assignments import ASSIGNMENTS
from classroom.deadlines import record, stamp_sources
from classroom.paths import COURSE, REPO


def nbgrader_env() -> dict:
    """The environment for nbgrader: this interpreter's bin folder first on PATH (nbgrader runs alembic), the
    repository on PYTHONPATH (course/nbgrader_config.py imports classroom.grading)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO), env.get("PYTHONPATH", "")] if p)
    return env


def nbgrader_command(*args: str, user: str | None = None) -> tuple[list[str], dict]:
    """The command line and environment of ``nbgrader <args>``; as the Unix ``user`` when given and run as root
    (nbgrader's exchange accepts releases only from the course's owner)."""
    cmd = [sys.executable, "-m", "nbgrader", *args]
    env = nbgrader_env()
    if user and os.geteuid() == 0:
        entry = pwd.getpwnam(user)
        cmd = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups", *cmd]
        env.update(HOME=entry.pw_dir, USER=user, LOGNAME=user)
    return cmd, env


def nbgrader(*args: str, course: Path = COURSE, check: bool = True, user: str | None = None,
             timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run ``nbgrader <args>`` inside ``course`` (which holds nbgrader_config.py), output passed through, as
    :func:`nbgrader_command` says. Past ``timeout`` seconds it is stopped and counts as failed (return code -9)."""
    cmd, env = nbgrader_command(*args, user=user)
    print("$", "nbgrader", " ".join(args), flush=True)
    try:
        return subprocess.run(cmd, cwd=course, env=env, check=check, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"error: nbgrader {args[0]} ran past its bound of {timeout:.0f} s and was stopped", file=sys.stderr)
        return subprocess.CompletedProcess(cmd, -9)



def excluding(students: list[str], chosen: list[str]) -> list[str]:
    """nbgrader's option that leaves out the ``students`` not ``chosen`` (it has none to name several)."""
    rest = [s for s in students if s not in chosen]
    return [f"--CourseDirectory.student_id_exclude={','.join(rest)}"] if rest else []


def generate_assignments(course: Path = COURSE, only: str | None = None) -> None:
    """The student version of every assignment (or ``only`` one) in ``course/release/``, its header and the
    gradebook's due date as deadlines.toml says; gradebook entries are created."""
    stamp_sources(course)
    # one nbgrader process for all of them: "*" is a glob over source/ (starting nbgrader takes seconds)
    nbgrader("generate_assignment", only or "*", "--force", course=course)
    record(course)
    print(f"Releases are in {course / 'release'}/<assignment>/ "
          f"({only or ', '.join(a.stem for a in ASSIGNMENTS)}).")

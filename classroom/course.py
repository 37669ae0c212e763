"""Coursework on nbgrader, one assignment per chapter: the command line of ``make assignments`` and ``make grade``.

Where the coursework lives and which module does what:

* ``course/exercises/<chapter>.py``: the one home of each chapter's exercises on the instructor's side (setup,
  data, solutions, tests, points), read by :mod:`classroom.assignments`; the chapter keeps the prompts and the
  check calls;
* ``python -m classroom.course build-source`` writes ``course/source/<chapter>/<chapter>.ipynb`` from both
  (:mod:`classroom.source`), saved without outputs and committed;
* ``python -m classroom.course assignments`` runs ``nbgrader generate_assignment`` for every chapter (student
  versions in ``course/release/``, gradebook entries in ``course/gradebook.db``; :mod:`classroom.nbgrader_cli`);
* ``python -m classroom.course grade [<chapter>] [--force]`` autogrades the submissions in
  ``course/submitted/<student>/<chapter>/`` that are new or changed since their last grading
  (:mod:`classroom.autograde`, the sandbox in :mod:`classroom.grading`), writes their feedback HTML and exports the
  scores to ``course/grades.csv`` and, for Canvas and Moodle, to ``course/export/`` (:mod:`classroom.lms`);
* ``python -m classroom.course extend <chapter> --student S --until T`` gives one student until ``T`` for one
  assignment: nbgrader's extension in the gradebook (``make extend``); the due dates, cut-offs and late penalty rule
  are ``course/deadlines.toml``'s (:mod:`classroom.deadlines`);
* on the class server (``make hub``; ``--hub``, or by default once its course directory exists), ``assignments``
  also releases every assignment into nbgrader's exchange and ``grade`` first collects the submissions from it and
  afterwards releases the feedback, all in the hub's course directory (:mod:`classroom.course_hub`).

Run from the repository root (the Makefile's ``make assignments`` and ``make grade`` do).
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from classroom import course_hub
from classroom.autograde import grade
from classroom.deadlines import DeadlineError, extend, known_students
from classroom.nbgrader_cli import generate_assignments
from classroom.paths import COURSE
from classroom.source import build_source


def _until(text: str) -> datetime:
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text!r} has no UTC offset (e.g. 2026-12-20T23:59+01:00)")
    return when


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m classroom.course", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["build-source", "assignments", "grade", "extend"])
    parser.add_argument("assignment", nargs="?",
                        help="only this assignment (e.g. 04a_integer_equations): grade, and on the class server also "
                             "assignments; extend: the one extended")
    parser.add_argument("--course", type=Path, default=None,
                        help="the course folder with nbgrader_config.py (default: the class server's course when "
                             "`make hub` set it up, else course/ of the repository)")
    parser.add_argument("--force", action="store_true",
                        help="grade: every submission again, not only those new or changed since their grading")
    parser.add_argument("--student", help="extend: the student's id")
    parser.add_argument("--until", type=_until, help="extend: the new due date, ISO 8601 with its UTC offset")
    parser.add_argument("--hub", action="store_true",
                        help="the class server's course (hub/course.toml): release into its exchange, collect from it")
    parser.add_argument("--settings", type=Path, default=None, help="--hub: another settings file than hub/course.toml")
    return parser


def _extend(course: Path, args, known: list[str]) -> int:
    try:
        print(extend(course, args.student, args.assignment, args.until, known))
    except DeadlineError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def _on_hub(settings, args) -> int:
    print(f"The class server's course ({settings.path}): {settings.course}, exchange {settings.exchange}")
    if args.command == "assignments":
        course_hub.hub_assignments(settings, args.assignment)
        return 0
    if args.command == "extend":
        return course_hub.hub_extend(settings, args, _extend)
    return course_hub.hub_grade(settings, args.assignment, force=args.force)


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "extend" and not (args.assignment and args.student and args.until):
        parser.error("extend needs the chapter, --student and --until")
    if args.command != "build-source" and args.course is None:
        settings = course_hub.hub_course(args.settings)
        if args.hub and settings is None:
            print("error: the class server's course directory is not set up: run `make hub` first (as root).",
                  file=sys.stderr)
            return 1
        if settings is not None:
            return _on_hub(settings, args)
    course = (args.course or COURSE).resolve()
    if args.command == "build-source":
        for path in build_source(course):
            print("wrote", path.relative_to(course.parent) if course.parent in path.parents else path)
        return 0
    if args.command == "assignments":
        generate_assignments(course)
        return 0
    if args.command == "extend":
        return _extend(course, args, known_students(course))
    return grade(course, args.assignment, force=args.force)


if __name__ == "__main__":
    sys.exit(main())

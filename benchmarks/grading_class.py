"""A class's grading, hostile submissions included: how long ``make grade`` takes against the bound it states.

A temporary copy of the course, chapter 01 released, ``--students`` submissions (40 by default): the honest ones
alternate between a full and a partial answer, and ``--hostile`` of them (5) each try one attack on the grader in
turn: a cell that never ends, the worker rewired to answer the checks' names, a notebook whose nbgrader metadata
has another schema (which ended nbgrader's whole run before), a 300 kB answer text for the grader to parse, a
process exit in every answer cell. ``python -m classroom.course grade`` grades them all; printed and recorded:
the wall time, the bound (students x :func:`classroom.course.submission_bound`), how many were graded and the
scores, with the machine and its load. Run:
``python benchmarks/grading_class.py [--json benchmarks/results/grading_class.json]``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from classroom import autograde, nbgrader_cli, paths  # noqa: E402

CHAPTER = "01_introduction"
RIGHT = {"ex1_answer": 'answer_1 = "dx[j] = sum{i}_0^1 (df[i; j] * 3 * x[j] ** 2)"',
         "ex2_answer": 'answer_2 = "dx[i; j] = if {j = 2} then (df[i]) else (0)"',
         "ex3a_answer": "answer_3a = 3", "ex3b_answer": "answer_3b = 1"}
PARTIAL = {"ex3a_answer": "answer_3a = 3", "ex3b_answer": "answer_3b = 2"}
REWIRE = ("import gc, wire\n"
          "worker = next(o for o in gc.get_objects() if type(o).__name__ == 'Worker')\n"
          "asked = worker.get\n"
          "def forged(request):\n"
          "    reply = asked(request)\n"
          "    reply['values']['check_derivative'] = wire.encode(lambda *a, **k: True, worker.callables)\n"
          "    return reply\n"
          "worker.get = forged\n")
HOSTILE = {
    "hangs": {grade_id: "while True:\n    pass" for grade_id in RIGHT},
    "rewires": {"ex1_answer": REWIRE},
    "new_schema": None,  # the notebook's metadata, below
    "long_text": {"ex1_answer": 'answer_1 = "dx[j] = " + " + ".join(["3 * x[j] ** 2 * df[0; j]"] * 12_000)'},
    "exits": {grade_id: "import os\nos._exit(1)" for grade_id in RIGHT},
}


def _answered(release: dict, cells: dict | None) -> dict:
    nb = json.loads(json.dumps(release))
    if cells is None:
        nb["cells"].append({"cell_type": "markdown", "source": "notes", "metadata": {"nbgrader": {
            "schema_version": 4, "grade": False, "grade_id": "mine", "locked": False, "solution": False,
            "task": False}}})
        return nb
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in cells:
            cell["source"] = cells[grade_id]
    return nb


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--hostile", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    kinds = list(HOSTILE)
    with tempfile.TemporaryDirectory(prefix="tensoradbook-class-") as tmp:
        tmp = Path(tmp)
        course = tmp / "course"
        shutil.copytree(REPO / "course", course, ignore=shutil.ignore_patterns(
            "release", "submitted", "autograded", "feedback", "gradebook.db", "grades.csv", "exchange", "export",
            "grading_state.json", "grading_report*", "grading_reports", "__pycache__", ".ipynb_checkpoints"))
        env = nbgrader_cli.nbgrader_env()
        env.update(JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_DATA_DIR=str(tmp / "data"),
                   JUPYTER_RUNTIME_DIR=str(tmp / "runtime"), **{paths.EXCHANGE_ENV: str(tmp / "exchange")})
        subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", CHAPTER, "--force"], cwd=course,
                       env=env, check=True, capture_output=True)
        release = json.loads((course / "release" / CHAPTER / f"{CHAPTER}.ipynb").read_text())
        hostile = {}
        for number in range(args.students):
            student = f"s{number:03d}"
            if number < args.hostile:
                kind = kinds[number % len(kinds)]
                hostile[student] = kind
                cells = HOSTILE[kind]
            else:
                cells = RIGHT if number % 2 else PARTIAL
            folder = course / "submitted" / student / CHAPTER
            folder.mkdir(parents=True)
            (folder / f"{CHAPTER}.ipynb").write_text(json.dumps(_answered(release, cells)))
        load_before = os.getloadavg()[0]
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "classroom.course", "grade", CHAPTER, "--course", str(course)],
                              cwd=REPO, env=env, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        with open(course / "grades.csv") as f:
            scores = {r["student_id"]: float(r["score"]) for r in csv.DictReader(f) if r["assignment"] == CHAPTER}
        with open(course / "grading_report.csv") as f:
            report = list(csv.DictReader(f))
    bound = args.students * autograde.submission_bound()
    honest = [s for s in scores if s not in hostile]
    record = {
        "students": args.students, "hostile": hostile, "seconds": round(seconds, 1), "bound_seconds": bound,
        "exit_status": proc.returncode, "graded": len(scores),
        "honest_scores": sorted({scores[s] for s in honest}),
        "hostile_scores": {s: scores.get(s) for s in hostile},
        "report_rows": {kind: sum(r["kind"] == kind for r in report) for kind in sorted({r["kind"] for r in report})},
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor() or platform.machine(),
                    "load_average": {"before": load_before, "after": os.getloadavg()[0]}},
    }
    print(f"{args.students} submissions ({args.hostile} hostile: {', '.join(hostile.values())}): graded in "
          f"{seconds:.0f} s (bound {bound:.0f} s), exit status {proc.returncode}; {len(scores)} in grades.csv; "
          f"honest scores {record['honest_scores']}, hostile {record['hostile_scores']}; "
          f"report rows {record['report_rows']}; load average {load_before:.1f} before")
    if proc.returncode:
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())

"""Grading that answer cells cannot fake, and that finishes (classroom/grading.py, sandbox.py, wire.py).

* The wire: answers cross as data and come back equal (NaN, -0.0, sets, ranges, arrays, functions as
  handles); anything else is refused with a WireError, never unpickled or evaluated.
* The sandbox: the student's process cannot see the course folder or the repository, has no network and
  no privileges (as root it runs as nobody), and its exits, hangs, floods and memory bombs are contained.
* The whole of ``make grade`` (real nbgrader) on chapter 01 with one honest student and one student per
  trick: each trick scores 0 for the exercises it did not solve, the rest are graded, fed back and
  exported, and the grading report names what happened; a submission nbgrader cannot read is listed as
  not graded while the others are graded, and only when nothing can be graded does grading fail.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from classroom import assignments, autograde
from classroom import sandbox, wire
from classroom.grading import bound_names, tampering
from tests.test_course import RUNTIME_DIRS, _answer, _env, _nbgrader

REPO = Path(__file__).resolve().parents[1]
CHAPTER = "01_introduction"


# --- the wire ---------------------------------------------------------------------------------------------

def _round_trip(value, call=None):
    callables: list = []
    return wire.decode(json.loads(json.dumps(wire.encode(value, callables))), call), callables


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


answers = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20)
    | st.fractions(),
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
    | st.dictionaries(st.text(max_size=5) | st.integers(), inner, max_size=4),
    max_leaves=20)


@given(answers)
def test_answers_cross_as_equal_data(value):
    back, callables = _round_trip(value)
    assert _same(value, back) and not callables


def test_special_answers_cross():
    array = np.array([[1.0, -0.0], [np.nan, -np.inf]])
    value = ({2, 6}, range(3, 9, 2), Fraction(-3, 4), array, np.int64(7), np.float32(0.5), "no solution")
    back, _ = _round_trip(value)
    assert back[:3] == ({2, 6}, range(3, 9, 2), Fraction(-3, 4))
    np.testing.assert_array_equal(back[3], array)
    assert np.signbit(back[3][0, 1]) and back[4:] == (7, 0.5, "no solution")
    assert type(back[4]) is int


def test_functions_cross_as_handles_with_their_signature():
    import inspect

    def dy_element(k, j, x, df=None):
        return k + j

    calls = []
    back, callables = _round_trip((dy_element,), lambda handle, args, kwargs: calls.append((handle, args)) or 5)
    assert callables == [dy_element] and isinstance(back[0], wire.RemoteFunction)
    assert list(inspect.signature(back[0]).parameters) == ["k", "j", "x", "df"]
    assert back[0](1, 2) == 5 and calls == [(0, (1, 2))]


@pytest.mark.parametrize("data, why", [
    ({"t": "pickle", "v": "gASV"}, "unknown answer type"),
    ({"t": "ndarray", "dtype": "|O", "shape": [1], "data": ""}, "is not an answer"),
    ({"t": "dict", "v": [[[1], 2]]}, "malformed dict"),
    ({"t": "callable", "id": 0}, "none can be called"),
    ({"t": "range", "v": [0, 1, 0]}, "malformed range"),
])
def test_what_is_not_data_is_refused(data, why):
    with pytest.raises(wire.WireError, match=why):
        wire.decode(data)


def test_messages_past_the_limits_are_refused():
    read, write = os.pipe()
    os.write(write, (wire.MAX_MESSAGE + 1).to_bytes(8, "big"))
    with pytest.raises(wire.WireError, match="over the limit"):
        wire.receive(read)
    huge = b"1" * 5000  # past Python's digit limit: not an answer, not a hang
    os.write(write, len(huge).to_bytes(8, "big") + huge)
    with pytest.raises(wire.WireError, match="not a valid message"):
        wire.receive(read)
    os.close(write)
    with pytest.raises(EOFError):
        wire.receive(read)
    os.close(read)


# --- what is flagged ----------------------------------------------------------------------------------------

def test_tampering_is_named_and_answers_are_not():
    setup = bound_names("from tensoradbook.exercises import check_derivative, check_term_count\nshift = (1, 2)")
    assert setup == {"check_derivative", "check_term_count", "shift"}
    assert tampering('answer_1 = "dx[j] = 3 * x[j] ** 2"', setup) == []
    assert tampering("def bezout(a, b):\n    return a, 1, 0", setup) == []
    assert "redefines check_derivative, which an instructor's cell defines" in tampering(
        "check_derivative = check_term_count = lambda *a, **k: True", setup)
    assert "assigns the attribute .__bool__" in tampering(
        "import tensoradbook.exercises.feedback as fb; fb.CheckResult.__bool__ = lambda s: True", setup)
    assert "installs an input transformer" in tampering(
        "get_ipython().input_transformers_post.append(lambda l: ['pass\\n'])", setup)
    assert "calls os._exit()" in tampering("import os; os._exit(1)", setup)
    assert "opens a file" in tampering("text = open('../source/x.ipynb').read()", setup)
    assert "imports tensoradbook.exercises.ch05_derivatives" in tampering(
        "import tensoradbook.exercises.ch05_derivatives as m", setup)


def test_a_function_s_own_names_are_not_the_notebook_s():
    """The instructor's hidden test of chapter 04a binds ``a`` and ``b`` (``for a, b in pairs``); a student's
    ``bezout`` whose loop rebinds its own ``a`` and ``b`` touches none of the notebook's names. What does rebind
    them (at the top, in a ``for``, or inside a function that declares them ``global``) is still named."""
    hidden = bound_names("pairs = [(391, 299)]\nfor a, b in pairs:\n    result = check_bezout(a, b, bezout)")
    assert {"a", "b", "pairs", "result"} <= hidden
    answer = ("def bezout(a, b):\n    x0, y0, x1, y1 = 1, 0, 0, 1\n    while b:\n        q, r = divmod(a, b)\n"
              "        a, b = b, r\n        x0, y0, x1, y1 = x1, y1, x0 - q * x1, y0 - q * y1\n    return a, x0, y0")
    assert tampering(answer, hidden) == []
    assert tampering("squares = [pairs for pairs in range(3)]\nclass K:\n    result = 1", hidden) == []
    assert tampering("def f():\n    def result():\n        pass\n    return result", hidden) == []
    rebound = "redefines pairs, which an instructor's cell defines"
    assert rebound in tampering("pairs = []", hidden)
    assert rebound in tampering("for pairs in [[]]:\n    pass", hidden)
    assert rebound in tampering("def f():\n    global pairs\n    pairs = []", hidden)
    assert "redefines result, which an instructor's cell defines" in tampering("def result():\n    pass", hidden)
    assert rebound in tampering("[(pairs := [])  for _ in range(1)]", hidden)
    assert tampering("def f():\n    return [(pairs := []) for _ in range(1)]", hidden) == []
    setup = bound_names("from tensoradbook.exercises import check_bezout")
    assert tampering("from tensoradbook.exercises import check_bezout", setup) == []
    assert "redefines check_bezout, which an instructor's cell defines" in tampering(
        "from operator import truth as check_bezout", setup)


# --- the sandbox --------------------------------------------------------------------------------------------

needs_bwrap = pytest.mark.skipif(not sandbox.bwrap_works() and os.environ.get("CI") != "true",
                                 reason="bubblewrap is not installed (apt install bubblewrap); CI installs it")


@pytest.fixture
def student(tmp_path):
    course = tmp_path / "course"
    (course / "source").mkdir(parents=True)
    (course / "source" / "solutions.txt").write_text("answer_1 = 42")
    process = sandbox.AnswerProcess([course], timeout=20, memory=4 * 2 ** 30)
    yield process, course
    process.close()


@needs_bwrap
def test_the_student_sees_neither_the_course_nor_the_repository(student):
    process, course = student
    assert process.isolation.startswith("bubblewrap")
    for path in (course / "source" / "solutions.txt", REPO / "classroom" / "course.py",
                 REPO / "course" / "nbgrader_config.py", REPO / "tests" / "test_course.py"):
        reply = process.run(f"print(open({str(path)!r}).read())", "peek")
        assert reply["error"]["ename"] in ("PermissionError", "FileNotFoundError"), (path, reply)
        assert "42" not in reply["stdout"]
    reply = process.run("import os\nprint(os.path.exists('/root/.ssh'), sorted(os.listdir('/tmp')))", "look")
    assert reply["error"] is None and reply["stdout"].startswith("False"), reply
    reply = process.run("import tensoradbook as tab\nprint(tab.parse('f[i] = x[i]', {'f': (2,), 'x': (2,)}))", "lib")
    assert reply["stdout"] == "f[i] = x[i]\n", reply  # what answers need is there


@needs_bwrap
def test_the_student_has_no_network_no_processes_and_no_privileges(student):
    process, _ = student
    reply = process.run("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=5)", "net")
    assert reply["error"]["ename"] in ("PermissionError", "OSError"), reply
    reply = process.run("import subprocess\nsubprocess.run(['id'])", "spawn")
    assert reply["error"]["ename"] == "PermissionError" and reply["flags"], reply
    reply = process.run("import os\nprint(os.getuid())", "uid")
    if os.getuid() == 0:
        assert reply["stdout"].strip() != "0", "graded as root, the student's code must not be root"


def test_exits_hangs_floods_and_memory_are_contained(tmp_path):
    process = sandbox.AnswerProcess([tmp_path], timeout=5, memory=4 * 2 ** 30)
    try:
        reply = process.run("for _ in range(200_000):\n    print('flood ' * 100)", "flood")
        assert reply["error"] is None and reply["dropped"] > 10 ** 8 and len(reply["stdout"]) <= 20_000
        reply = process.run("import sys\nsys.exit(3)", "exit")
        assert reply["error"]["ename"] == "SystemExit"
        reply = process.run("x = bytearray(64 * 2 ** 30)", "memory")
        assert reply["error"]["ename"] == "MemoryError"
        assert process.run("answer = 1", "alive")["error"] is None
        with pytest.raises(sandbox.AnswerTimeout):
            process.run("while True:\n    pass", "hang")
    finally:
        process.close()
    process = sandbox.AnswerProcess([tmp_path], timeout=5)
    with pytest.raises(sandbox.AnswerProcessDied, match="exit status 1"):
        process.run("import os\nos._exit(1)", "exit")


# --- make grade on chapter 01: one honest student, one student per trick -------------------------------------

RIGHT_3A = "answer_3a = 3"
REWIRE = ("import gc, wire\n"
          "worker = next(o for o in gc.get_objects() if type(o).__name__ == 'Worker')\n"
          "asked = worker.get\n"
          "def forged(request):\n"
          "    reply = asked(request)\n"
          "    for name in ('check_derivative', 'check_term_count', 'print', 'shift'):\n"
          "        reply['values'][name] = wire.encode(lambda *a, **k: True, worker.callables)\n"
          "    return reply\n"
          "worker.get = forged\n")
TRICKS = {  # student -> (answer cells, the points they still earn honestly)
    "honest": ({"ex1_answer": 'answer_1 = "dx[j] = sum{i}_0^1 (df[i; j] * 3 * x[j] ** 2)"',
                "ex2_answer": 'answer_2 = "dx[i; j] = if {j = 2} then (df[i]) else (0)"',
                "ex3a_answer": RIGHT_3A, "ex3b_answer": "answer_3b = 1"}, 6),
    "patches_checks": ({"ex1_answer": "check_derivative = check_term_count = lambda *a, **k: True",
                        "ex3a_answer": RIGHT_3A}, 1),
    "patches_verdict": ({"ex1_answer": "import tensoradbook.exercises.feedback as fb\n"
                                       "fb.CheckResult.__bool__ = lambda s: True",
                         "ex3a_answer": RIGHT_3A}, 1),
    "transforms_input": ({"ex1_answer": "get_ipython().input_transformers_post.append(lambda l: ['pass\\n'])",
                          "ex3a_answer": RIGHT_3A}, 0),  # their own later cells become `pass` too
    "reads_source": ({"ex1_answer": (
        "import glob, json\n"
        "for path in glob.glob('../../../source/*/*.ipynb') + glob.glob('{course}/source/*/*.ipynb'):\n"
        "    for cell in json.load(open(path))['cells']:\n"
        "        text = ''.join(cell['source'])\n"
        "        if 'BEGIN SOLUTION' in text:\n"
        "            exec(text.split('### BEGIN SOLUTION')[1].split('### END SOLUTION')[0])"),
        "ex3a_answer": RIGHT_3A}, 1),
    "exits": ({"ex1_answer": "import os\nos._exit(1)", "ex3a_answer": RIGHT_3A}, 1),
    "floods": ({"ex1_answer": "print('x' * 100_000_000)", "ex3a_answer": RIGHT_3A}, 1),
    "hangs": ({"ex1_answer": "while True:\n    pass", "ex3a_answer": RIGHT_3A}, 1),
    "fakes_equality": ({"ex1_answer": "class Anything(str):\n    def __eq__(self, other):\n        return True\n"
                                      "answer_1 = Anything('x')\nanswer_2 = type('A', (), {'__eq__': "
                                      "lambda s, o: True})()",
                        "ex3a_answer": RIGHT_3A}, 1),
    # code that reaches the worker's own objects and adds the checks' names (and a builtin) to every reply, bound to
    # a function of its own: the grader takes only what it asked for, so the reply is refused as tampering
    "rewires_the_worker": ({"ex1_answer": "", "ex3a_answer": REWIRE + RIGHT_3A}, 0),
    # a derivative of 300 kB: refused by the check's stated length before it is parsed, the rest counts
    "long_answer": ({"ex1_answer": 'answer_1 = "dx[j] = " + " + ".join(["3 * x[j] ** 2 * df[0; j]"] * 12_000)',
                     "ex3a_answer": RIGHT_3A}, 1),
    # the library's derivation answers exercise 1: the assignment's policy copy refuses it, and it is reported
    "calls_derive": ({"ex1_answer": "import tensoradbook as tab\nanswer_1 = str(tab.derive(tab.parse("
                                    "'f[i; j] = x[j] ** 3', {'f': (2, 4), 'x': (4,)}))['x'])",
                      "ex3a_answer": RIGHT_3A}, 1),
    "patches_builtins": ({"ex1_answer": "import builtins\nbuiltins.print = lambda *a, **k: None\n"
                                        "builtins.AssertionError = type('Never', (Exception,), {})\n"
                                        "import sys\nsys.modules['tensoradbook.exercises'].check_derivative = "
                                        "lambda *a, **k: True",
                          "ex3a_answer": RIGHT_3A}, 1),
}


def _test_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]


def _unmark_tests(nb: dict) -> None:
    for cell in _test_cells(nb):
        cell["metadata"]["nbgrader"].update(grade=False, locked=False, solution=True)


def _rewire_from_a_new_cell(nb: dict) -> None:
    """Every answer cell left blank, the worker rewired from a code cell of the student's own."""
    nb["cells"].insert(2, {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                           "source": REWIRE})


def _new_schema(nb: dict) -> None:
    """A markdown cell whose nbgrader metadata has another schema: nbgrader's autograde ends the whole run on it."""
    nb["cells"].append({"cell_type": "markdown", "metadata": {"nbgrader": {
        "schema_version": 4, "grade": False, "grade_id": "mine", "locked": False, "solution": False, "task": False}},
        "source": "my notes"})


NOTEBOOK_TRICKS = {  # student -> what they do to the notebook itself; each scores 0
    "rewires_from_a_new_cell": _rewire_from_a_new_cell,
    "deletes_tests": lambda nb: nb.update(cells=[c for c in nb["cells"] if c not in _test_cells(nb)]),
    "empties_tests": lambda nb: [c.update(source="pass") for c in _test_cells(nb)],
    "unmarks_tests": _unmark_tests,  # nbgrader refuses the changed metadata: not graded, and listed
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A temporary course with chapter 01 released, one submission per student of TRICKS and one that
    nbgrader cannot read, graded by ``python -m classroom.course grade``: (course, process, scores)."""
    tmp = tmp_path_factory.mktemp("grading")
    course = tmp / "course"
    shutil.copytree(REPO / "course", course, ignore=shutil.ignore_patterns(*RUNTIME_DIRS, "grading_report*",
                                                                          "__pycache__"))
    with open(course / "nbgrader_config.py", "a") as config:
        config.write("\nc.SandboxedExecute.timeout = 10\nc.SandboxedExecute.memory = 4 * 2 ** 30\n")
    (tmp / "exchange").mkdir()
    env = _env(tmp)
    _nbgrader("generate_assignment", CHAPTER, "--force", cwd=course, env=env)
    release = json.loads((course / "release" / CHAPTER / f"{CHAPTER}.ipynb").read_text())
    for student, (cells, _) in TRICKS.items():
        nb = json.loads(json.dumps(release))
        for grade_id, source in cells.items():
            _answer(nb, grade_id, source.replace("{course}", str(course)))
        folder = course / "submitted" / student / CHAPTER
        folder.mkdir(parents=True)
        (folder / f"{CHAPTER}.ipynb").write_text(json.dumps(nb))
    for student, trick in NOTEBOOK_TRICKS.items():
        nb = json.loads(json.dumps(release))
        trick(nb)
        folder = course / "submitted" / student / CHAPTER
        folder.mkdir(parents=True)
        (folder / f"{CHAPTER}.ipynb").write_text(json.dumps(nb))
    broken = course / "submitted" / "unreadable" / CHAPTER
    broken.mkdir(parents=True)
    (broken / f"{CHAPTER}.ipynb").write_text('{"cells": [')
    newer = json.loads(json.dumps(release))
    _new_schema(newer)
    (course / "submitted" / "new_schema" / CHAPTER).mkdir(parents=True)
    (course / "submitted" / "new_schema" / CHAPTER / f"{CHAPTER}.ipynb").write_text(json.dumps(newer))
    proc = subprocess.run([sys.executable, "-m", "classroom.course", "grade", CHAPTER, "--course", str(course)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=1200)
    with open(course / "grades.csv") as f:
        scores = {r["student_id"]: float(r["score"]) for r in csv.DictReader(f) if r["assignment"] == CHAPTER}
    return course, proc, scores


def test_every_trick_scores_only_what_was_solved(graded):
    course, proc, scores = graded
    log = proc.stdout[-4000:] + proc.stderr[-6000:]
    assert proc.returncode == 0, log
    for student, (_, points) in TRICKS.items():
        assert scores.get(student) == points, (student, scores, log)
        assert (course / "feedback" / student / CHAPTER / f"{CHAPTER}.html").exists(), student
    for student in NOTEBOOK_TRICKS:
        assert scores.get(student) == 0, (student, scores, log)
    # a test cell a student really changed is still reported (course/nbgrader_config.py's OverwriteReleasedCells
    # is silent only about the hidden tests the release left out)
    assert "Attribute 'checksum' for cell ex1_test has changed!" in proc.stderr, log


def test_the_report_names_what_happened(graded):
    course, proc, _ = graded
    with open(course / "grading_report.csv") as f:
        rows = list(csv.DictReader(f))
    events = {(r["student"], r["kind"]) for r in rows}
    assert {("unreadable", "not graded"), ("unmarks_tests", "not graded"), ("new_schema", "not graded")} <= events
    assert "not graded: unreadable" in proc.stdout
    assert "SchemaTooNewError" in " ".join(r["detail"] for r in rows if r["student"] == "new_schema"), rows
    assert {("rewires_the_worker", "tampering"), ("rewires_from_a_new_cell", "tampering")} <= events, rows
    refused = " ".join(r["detail"] for r in rows if r["student"] == "calls_derive" and r["kind"] == "refused")
    assert "which this assignment's answers may not use" in refused and "derive" in refused, rows
    assert {("exits", "exited"), ("hangs", "timeout"), ("floods", "output")} <= events, rows
    flagged = {r["student"] for r in rows if r["kind"] == "flagged"}
    assert {"patches_checks", "patches_verdict", "transforms_input", "reads_source", "exits",
            "patches_builtins"} <= flagged, rows
    assert "honest" not in {r["student"] for r in rows}
    details = " ".join(r["detail"] for r in rows if r["student"] == "patches_checks")
    assert "redefines check_derivative" in details
    assert "the feedback above" in (course / "feedback" / "patches_checks" / CHAPTER / f"{CHAPTER}.html").read_text()


def test_grading_fails_only_when_nothing_can_be_graded(graded, tmp_path):
    course, _, _ = graded
    lonely = tmp_path / "course"
    shutil.copytree(course, lonely, ignore=shutil.ignore_patterns("submitted", "autograded", "feedback",
                                                                   "grading_report*", "grades.csv"))
    broken = lonely / "submitted" / "unreadable" / CHAPTER
    broken.mkdir(parents=True)
    (broken / f"{CHAPTER}.ipynb").write_text('{"cells": [')
    proc = subprocess.run([sys.executable, "-m", "classroom.course", "grade", "--course", str(lonely)],
                          cwd=REPO, env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("error: no submission could be graded"), proc.stderr
    assert autograde.grade(lonely / "missing") == 0  # nothing submitted is not a failure


# --- every chapter through the sandboxed grader --------------------------------------------------------------

def _grade_source(stem: str, keep_solutions: bool) -> list[tuple[str, list]]:
    """Grade chapter ``stem``'s source notebook with :class:`NotebookGrader` (the instructor's locked cells
    trusted, as the gradebook holds them, the answers under the assignment's library policy): with the solutions,
    or with every answer cell left at None."""
    import nbformat

    from classroom.grading import NotebookGrader

    nb = nbformat.read(REPO / "course" / "source" / stem / f"{stem}.ipynb", as_version=4)
    trusted = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("locked"):
            trusted[meta["grade_id"]] = cell.source
        elif meta.get("solution") and not keep_solutions:
            cell.source = cell.source.split("### BEGIN SOLUTION")[0]
    NotebookGrader(trusted, [REPO / "course"], timeout=120, memory=8 * 2 ** 30, assignment=stem).grade(nb)
    return [(c.metadata["nbgrader"]["grade_id"], c.outputs) for c in nb.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]


@pytest.mark.parametrize("assignment", assignments.ASSIGNMENTS, ids=lambda a: a.stem)
def test_solutions_score_and_placeholders_do_not_through_the_sandbox(assignment):
    for grade_id, outputs in _grade_source(assignment.stem, keep_solutions=True):
        errors = [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"]
        assert not errors, (assignment.stem, grade_id, outputs)
    for grade_id, outputs in _grade_source(assignment.stem, keep_solutions=False):
        assert any(o.output_type == "error" for o in outputs), (assignment.stem, grade_id, outputs)
        said = "".join(o.get("text", "") + o.get("evalue", "") for o in outputs)
        assert "no answer yet" in said, (assignment.stem, grade_id, outputs)


def test_a_function_that_hangs_when_checked_costs_that_test_and_no_more():
    from nbformat.v4 import new_code_cell, new_notebook

    from classroom.grading import NotebookGrader

    def cell(source, grade_id, **meta):
        return new_code_cell(source, metadata={"nbgrader": {"grade_id": grade_id, "locked": True, **meta}})

    nb = new_notebook(cells=[
        cell("def check(f):\n    try:\n        return f(2) == 4\n    except Exception:\n        return False", "setup"),
        cell("def twice(x):\n    while True:\n        pass", "a_answer", locked=False, solution=True),
        cell("assert check(twice)", "a_test", grade=True, points=1),
        cell("def square(x):\n    return x * x", "b_answer", locked=False, solution=True),
        cell("assert check(square)", "b_test", grade=True, points=1),
    ])
    trusted = {c.metadata.nbgrader.grade_id: c.source for c in nb.cells if c.metadata.nbgrader.get("locked")}
    grader = NotebookGrader(trusted, [], timeout=5, memory=4 * 2 ** 30)
    grader.grade(nb)
    outputs = {c.metadata.nbgrader.grade_id: c.outputs for c in nb.cells}
    assert [o.ename for o in outputs["a_test"] if o.output_type == "error"] == ["AnswerTimeout"]
    assert not [o for o in outputs["b_test"] if o.output_type == "error"], outputs["b_test"]
    assert [e["kind"] for e in grader.events] == ["stopped"], grader.events


def test_the_whole_submission_has_a_time_budget(tmp_path):
    from nbformat.v4 import new_code_cell, new_notebook

    from classroom.grading import NotebookGrader

    nb = new_notebook(cells=[new_code_cell(f"import time\ntime.sleep(3)\nanswer_{i} = {i}",
                                           metadata={"nbgrader": {"grade_id": f"c{i}", "solution": True}})
                             for i in range(5)])
    grader = NotebookGrader({}, [tmp_path], timeout=60, memory=4 * 2 ** 30, notebook_timeout=5)
    grader.grade(nb)
    said = [" ".join(o.get("evalue", "") + "".join(o.get("traceback", [])) for o in c.outputs) for c in nb.cells]
    assert "spent" in said[-1], said


FORGE = """
import os, struct
def forge(data):  # into every descriptor the worker may answer on: the grader must not trust what arrives
    for fd in range(3, 64):
        try:
            os.write(fd, data)
        except OSError:
            pass
def frame(body):
    return struct.pack(">Q", len(body)) + body
"""


@pytest.mark.parametrize("forged, why", [
    ("forge(struct.pack('>Q', 10 ** 6))", "a header whose message never comes"),
    ("forge(frame(b'{\"values\": 5}'))", "a reply of the wrong shape"),
    ("forge(frame(b'{\"error\": null, \"flags\": []}'))", "a reply to the next request, ahead of time"),
    ("forge(frame(b'{\"values\": {\"answer_1\": {\"t\": \"pkl\"}}}'))", "a value that is no answer"),
])
def test_a_forged_answer_costs_the_forger_and_grading_finishes(forged, why):
    from nbformat.v4 import new_code_cell, new_notebook

    from classroom.grading import NotebookGrader

    def cell(source, grade_id, **meta):
        return new_code_cell(source, metadata={"nbgrader": {"grade_id": grade_id, **meta}})

    nb = new_notebook(cells=[
        cell("def check(answer):\n    return answer == 42", "setup", locked=True),
        cell(FORGE + "\n" + forged + "\nanswer_1 = 41", "a_answer", solution=True),
        cell("assert check(answer_1)", "a_test", grade=True, locked=True, points=1),
        cell("answer_2 = 42", "b_answer", solution=True),
        cell("assert check(answer_2)", "b_test", grade=True, locked=True, points=1),
    ])
    trusted = {c.metadata.nbgrader.grade_id: c.source for c in nb.cells if c.metadata.nbgrader.get("locked")}
    NotebookGrader(trusted, [], timeout=5, memory=4 * 2 ** 30).grade(nb)
    errors = {c.metadata.nbgrader.grade_id: [o for o in c.outputs if o.output_type == "error"] for c in nb.cells}
    assert errors["a_test"], (why, nb.cells[2].outputs)  # 41 or nothing: never a pass
    assert not errors["b_test"], (why, nb.cells[4].outputs)  # the honest answer after it still counts


def _grade_cells(cells: list[tuple[str, str, dict]], **options) -> tuple[dict, list[dict]]:
    """Grade a notebook of (source, grade id, nbgrader metadata) cells with :class:`NotebookGrader`, the locked
    ones trusted: each cell's error names and the grader's events."""
    from nbformat.v4 import new_code_cell, new_notebook

    from classroom.grading import NotebookGrader

    nb = new_notebook(cells=[new_code_cell(source, metadata={"nbgrader": {"grade_id": grade_id, **meta}})
                             for source, grade_id, meta in cells])
    trusted = {c.metadata.nbgrader.grade_id: c.source for c in nb.cells if c.metadata.nbgrader.get("locked")}
    grader = NotebookGrader(trusted, [], **{"timeout": 10, "memory": 4 * 2 ** 30, **options})
    grader.grade(nb)
    return {c.metadata.nbgrader.grade_id: [o.ename for o in c.outputs if o.output_type == "error"]
            + [o.name for o in c.outputs if o.output_type == "stream" and o.name == "stderr"]
            for c in nb.cells}, grader.events


SETUP = {"locked": True}
ANSWER = {"solution": True}
TEST = {"grade": True, "locked": True, "points": 1}


def test_a_reply_with_names_not_asked_for_is_tampering_and_replaces_nothing():
    errors, events = _grade_cells([
        ("def check(answer):\n    return answer == 42", "setup", SETUP),
        ("answer_1 = 41\n" + REWIRE.replace("'check_derivative', 'check_term_count'", "'check'"), "a_answer", ANSWER),
        ("assert check(answer_1)", "a_test", TEST),
    ])
    assert errors["a_test"] == ["AnswerTampering"], errors
    tampering = [e for e in events if e["kind"] == "tampering"]
    assert tampering and "'check'" in tampering[0]["detail"] and "'print'" in tampering[0]["detail"], events


def test_a_check_past_its_clock_or_memory_costs_that_test_and_no_more():
    errors, events = _grade_cells([
        ("def check(n):\n    while n:\n        pass\n    return True\n\n"
         "def check_size(n):\n    return len([0] * n) == n", "setup", SETUP),
        ("forever = 1\nhuge = 10 ** 11\nfine = 0", "answers", ANSWER),
        ("assert check(forever)", "a_test", TEST),
        ("assert check_size(huge)", "b_test", TEST),
        ("assert check(fine)", "c_test", TEST),
    ], check_timeout=3, check_memory=2 ** 30)
    assert errors["a_test"] == ["CheckTimeout"], errors
    assert errors["b_test"] in (["MemoryError"], ["CheckTimeout"]), errors
    assert errors["c_test"] == [], errors
    assert [e["cell"] for e in events if e["kind"] == "check stopped"][:1] == ["a_test"], events


def test_what_a_check_warns_goes_to_the_report_and_costs_no_points():
    check = ("import sys, warnings\n\ndef check(a):\n    warnings.warn('noisy')\n"
             "    print('to stderr', file=sys.stderr)\n    return a == 1")
    errors, events = _grade_cells([
        (check, "setup", SETUP), ("one = 1", "answers", ANSWER),
        ("assert check(one)", "a_test", TEST), ("assert check(one)", "b_test", TEST),
    ])
    assert errors["a_test"] == errors["b_test"] == [], errors  # no stderr in the cell: nbgrader would score it 0
    warned = [e["cell"] for e in events if e["kind"] == "warning"]
    assert warned.count("a_test") == warned.count("b_test") == 2, events  # the warning each time, not once


def test_the_report_names_what_of_the_library_an_answer_used():
    _, events = _grade_cells([
        ("import tensoradbook as tab", "setup", SETUP),
        ("import tensoradbook.integer.smith as smith\nanswer = tab.parse('f[i] = x[i]', {'f': (2,), 'x': (2,)})",
         "answers", ANSWER),
        ("from tensoradbook import integer_inverse as inverse\nimport json\nother = 2", "more", ANSWER),
        ("print(smith.smith_normal_form)", "last", ANSWER)])
    used = {e["cell"]: e["detail"] for e in events if e["kind"] == "library"}
    assert used == {"answers": "uses tensoradbook.integer.smith, tensoradbook.parse",
                    "more": "uses tensoradbook.integer_inverse",
                    "last": "uses tensoradbook.integer.smith.smith_normal_form"}, events


def test_without_bubblewrap_grading_is_refused_rather_than_weaker(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)
    monkeypatch.delenv(sandbox.WEAK_SANDBOX_ENV, raising=False)
    why = sandbox.isolation_available()
    assert why and "bubblewrap" in why
    if os.getuid() == 0:
        assert "root" in why
        monkeypatch.setenv(sandbox.WEAK_SANDBOX_ENV, "1")  # no weaker form as root, whatever is set
        assert sandbox.isolation_available()
    with pytest.raises(sandbox.SandboxUnavailable):
        sandbox.AnswerProcess([tmp_path])
    (tmp_path / "submitted" / "someone" / CHAPTER).mkdir(parents=True)
    (tmp_path / "submitted" / "someone" / CHAPTER / f"{CHAPTER}.ipynb").write_text("{}")
    assert autograde.grade(tmp_path) == 1


def test_a_submission_that_cannot_be_read_is_named_before_grading(tmp_path):
    release = json.loads((REPO / "course" / "source" / CHAPTER / f"{CHAPTER}.ipynb").read_text())

    def submission(name: str, write) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        write(folder / f"{CHAPTER}.ipynb")
        return folder

    fine = submission("fine", lambda path: path.write_text(json.dumps(release)))
    assert autograde.screen(fine) is None
    newer = json.loads(json.dumps(release))
    _new_schema(newer)
    schema = submission("schema", lambda path: path.write_text(json.dumps(newer)))
    assert "SchemaTooNewError" in autograde.screen(schema)
    assert "plain file" in autograde.screen(submission("link", lambda path: path.symlink_to(fine / f"{CHAPTER}.ipynb")))
    huge = submission("huge", lambda path: path.write_bytes(b""))
    os.truncate(huge / f"{CHAPTER}.ipynb", autograde.MAX_NOTEBOOK_BYTES + 1)
    assert "over the limit" in autograde.screen(huge)
    deep = submission("deep", lambda path: path.write_text("[" * 100_000 + "]" * 100_000))
    assert "cannot be graded" in autograde.screen(deep)

"""Autograding that answer cells cannot fake: the checks run in the grader, the answers in a sandbox.

nbgrader's own autograde runs the whole submission, tests included, in one kernel the student's code
controls: an answer cell can redefine the checks, patch ``CheckResult.__bool__``, turn every later cell
into ``pass`` with an input transformer, or read the instructor's source notebook. Here
(:class:`SandboxedExecute`, which replaces nbgrader's ``Execute`` in ``course/nbgrader_config.py``):

* cells are told apart by the gradebook, not by the submission: a cell is the instructor's (setup, given
  data, tests) only if the gradebook holds it, locked, with the same text (nbgrader has already written
  the gradebook's text back over it); every other code cell is the student's;
* the student's cells run in :class:`classroom.sandbox.AnswerProcess` (bubblewrap: no course folder, no
  exchange, no network; as ``nobody`` when graded as root), the instructor's setup and data cells there too,
  so that answers can use them;
* the test cells run in the grader, on the setup and data computed here, with the answers they name
  fetched from the student's process as data (:mod:`classroom.wire`); a function the student wrote is
  called there with data and answers with data. Only the names a test reads are asked for and taken, never
  one that an instructor's cell binds or a builtin; the test runs in a copy of the instructor's namespace
  with the real builtins, so nothing the student's process sends can replace a check (a reply with more is
  tampering: :class:`classroom.sandbox.AnswerTampering`);
* everything that reads student data in the grader (the decoding of the answers, the checks) runs in a child
  of the grader (:func:`on_a_clock`) with a wall clock (``check_timeout``) and a memory allowance
  (``check_memory``): a check that an answer makes run for hours or fill the memory costs that test, and the
  student's process is started afresh for the next. What a check warns or writes to stderr goes to the report,
  not into the cell (nbgrader scores a test cell with stderr 0, and Python shows each warning once per process,
  so grading order would decide who loses the points);
* a cell that hangs (``timeout``), exits, crashes or exhausts memory costs what depends on it: its process
  is replaced by a new one that re-runs the cells before it (not the one that failed), and the report
  says what happened. Output past :data:`classroom.answer_worker.OUTPUT_LIMIT` characters a cell is cut;
* what looks like tampering is flagged for the instructor, not punished: redefining a name of the setup
  (``check_...``), assigning attributes, ``get_ipython``, exits, ``open``, imports of ``ctypes``,
  ``subprocess`` or ``importlib``, and what the sandbox's audit hook refused (opening a hidden path,
  starting a process).

Each notebook's events go to ``<report_directory>/<assignment>/<student>.json``;
``python -m classroom.course grade`` gathers them into ``course/grading_report.csv``.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import ctypes
import io
import json
import os
import re
import resource
import select
import signal
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import nbformat
from nbformat.v4 import new_output
from traitlets import Float, Integer, List, Unicode

from . import wire
from .assets import MissingAsset
from .mathjax import typeset_math
from .sandbox import AnswerProcess, AnswerProcessDied, AnswerTampering, AnswerTimeout

#: Names whose use in an answer cell is reported to the instructor (they are rarely part of an answer).
SUSPICIOUS_NAMES = {
    "get_ipython": "uses get_ipython()", "exit": "calls exit()", "quit": "calls quit()",
    "_exit": "calls os._exit()", "__import__": "calls __import__", "exec": "calls exec()",
    "eval": "calls eval()", "compile": "calls compile()", "globals": "reads globals()",
    "open": "opens a file", "setattr": "calls setattr()", "__builtins__": "touches __builtins__",
    "modules": "touches sys.modules", "input_transformers_post": "installs an input transformer",
    "input_transformers_cleanup": "installs an input transformer",
}
SUSPICIOUS_MODULES = ("ctypes", "subprocess", "importlib", "builtins", "signal", "socket", "gc", "inspect")
#: What the trusted cells may print into the notebook.
TRUSTED_OUTPUT_LIMIT = 100_000


#: What opens a scope of its own: a name bound inside one is not the notebook's (unless declared ``global``); a
#: comprehension's own too, but for an assignment expression (``:=``), which binds in the scope around it.
_FUNCTION_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def global_bindings(tree: ast.AST) -> set[int]:
    """The ``id`` of every node of ``tree`` that binds a name of the notebook's namespace: a stored name, an import
    or a ``def`` / ``class`` at the top, an assignment expression in a comprehension there, or inside a function a
    stored name it declares ``global``. A function's own variables (``a, b = b, r`` in a student's ``bezout``) are
    its own, whatever names the instructor's cells use."""
    found: set[int] = set()

    def binds(child: ast.AST, local: bool, declared: set[str]) -> bool:
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            return not local  # the name binds where the statement stands
        return isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store) and (not local or child.id in declared)

    def visit(node: ast.AST, local: bool, declared: set[str], walrus_local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if binds(child, local, declared):
                found.add(id(child))
            if isinstance(child, ast.NamedExpr) and not walrus_local:
                found.add(id(child.target))
            if isinstance(child, _FUNCTION_SCOPES):
                inner = {name for g in ast.walk(child) if isinstance(g, ast.Global) for name in g.names}
                visit(child, True, inner, True)
            else:
                visit(child, local or isinstance(child, _COMPREHENSIONS), declared, walrus_local)

    visit(tree, False, set(), False)
    return found


def _import_bindings(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The names an import binds, but for the check functions imported again as the setup imports them."""
    if isinstance(node, ast.ImportFrom) and node.module == "tensoradbook.exercises":
        return [a.asname for a in node.names if a.asname and a.asname != a.name]
    return [(a.asname or a.name).split(".")[0] for a in node.names]


def tampering(source: str, defined_by_instructor: set[str]) -> list[str]:
    """What in an answer cell looks like tampering with grading, in words (empty if nothing)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    rebinding = global_bindings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Name, ast.Attribute)):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if isinstance(node.ctx, ast.Store) and isinstance(node, ast.Attribute):
                found.append(f"assigns the attribute .{name}")
            elif id(node) in rebinding and name in defined_by_instructor:
                found.append(f"redefines {name}, which an instructor's cell defines")
            elif name in SUSPICIOUS_NAMES:
                found.append(SUSPICIOUS_NAMES[name])
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and id(node) in rebinding \
                and node.name in defined_by_instructor:
            found.append(f"redefines {node.name}, which an instructor's cell defines")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if id(node) in rebinding:
                found += [f"redefines {name}, which an instructor's cell defines" for name in _import_bindings(node)
                          if name in defined_by_instructor]
            found += _suspicious_imports(node)
    return list(dict.fromkeys(found))


def _suspicious_imports(node: ast.Import | ast.ImportFrom) -> list[str]:
    """An import of a module that reaches the interpreter's machinery, or of the grader's own exercise modules."""
    modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    found = [f"imports {m}" for m in modules if m.split(".")[0] in SUSPICIOUS_MODULES
             or (isinstance(node, ast.Import) and m.startswith("tensoradbook.exercises"))]
    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tensoradbook.exercises"):
        found += [f"imports {a.name} from {node.module}" for a in node.names
                  if not a.name.startswith("check_") and a.name != "NO_SOLUTION"]
    return found


def library_uses(source: str, aliases: dict[str, str]) -> list[str]:
    """What of tensoradbook a cell names: its imports (``import tensoradbook.integer.smith``, ``from tensoradbook
    import derive``) and the attributes it reads of a name bound to the library (``tab.derive``, where ``aliases``
    maps ``tab`` to ``tensoradbook``; the cell's own imports are added to ``aliases``), for the report. What the
    assignment does not allow is refused in the sandbox itself (the library policy); this says what was used."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    used = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "tensoradbook":
                    used.append(alias.name)
                    aliases[alias.asname or alias.name.split(".")[0]] = alias.asname and alias.name or "tensoradbook"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "tensoradbook":
            for alias in node.names:
                used.append(f"{node.module}.{alias.name}")
                aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            used.append(f"{aliases[node.value.id]}.{node.attr}")
    return list(dict.fromkeys(used))


def _names(source: str, bound: bool) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store if bound else ast.Load):
            names.add(node.id)
        elif bound and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif bound and isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif bound and isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def free_names(source: str) -> list[str]:
    """The names a cell reads (a test cell: the answers it checks among them)."""
    return sorted(_names(source, bound=False))


def bound_names(source: str) -> set[str]:
    """The names a cell binds: assignments, imports, definitions, parameters."""
    return _names(source, bound=True)


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class CheckTimeout(BaseException):
    """A check on a student's answer ran past its clock (or its child of the grader died)."""


def _memory_in_use() -> int:
    """This process's address space in bytes (a check's allowance comes on top of what the grader holds)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def on_a_clock(work, timeout: float, memory: int) -> dict:
    """``work()`` (a dict of JSON data) in a child of this process, under a wall clock of ``timeout`` seconds and
    ``memory`` bytes of address space on top of what this process holds; raises :class:`CheckTimeout` when the
    clock runs out or the child dies without an answer. The child shares the grader's state as it was (a fork),
    so the checks see the namespace the setup built, and nothing it does changes the grader's."""
    limit = _memory_in_use() + memory
    read_end, write_end = os.pipe()
    grader = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the grader's code
        status = 1
        try:
            os.close(read_end)
            # it dies with the grader: a grader stopped at its bound leaves no check running
            ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            if os.getppid() != grader:
                os._exit(1)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            wire.send(write_end, work())
            status = 0
        except BaseException:  # noqa: BLE001 -- whatever happens here, the grader goes on without it
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    deadline, chunks = time.monotonic() + timeout, []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                raise CheckTimeout(f"the check on your answer ran past its clock of {timeout:g} s")
            chunk = os.read(read_end, 2 ** 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    data = b"".join(chunks)
    try:
        if len(data) != wire.HEADER_SIZE + wire.body_size(data[:wire.HEADER_SIZE]):
            raise wire.WireError("cut off")
        return wire.parse(data[wire.HEADER_SIZE:])
    except Exception as error:  # a WireError, or a header cut short
        raise CheckTimeout(f"the check on your answer ended without a verdict (over its memory allowance of "
                           f"{memory / 2 ** 30:g} GiB, or a crash: {type(error).__name__})") from None


def _stream(name: str, text: str) -> dict:
    return new_output("stream", name=name, text=text)


def _error(ename: str, evalue: str, traceback_lines: list[str]) -> dict:
    return new_output("error", ename=ename, evalue=evalue, traceback=traceback_lines)


class NotebookGrader:
    """Grades one notebook (an nbformat node, changed in place): see the module docstring.

    ``trusted``: grade id -> source of every locked cell of the gradebook's version of this notebook.
    ``hidden``: folders the student's code must not see. ``events``: what happened, for the report.
    """

    def __init__(self, trusted: dict[str, str], hidden: list[Path], timeout: float, memory: int,
                 notebook_timeout: float = float("inf"), check_timeout: float = 300.0,
                 check_memory: int = 4 * 2 ** 30, submission_timeout: float = float("inf"),
                 assignment: str | None = None):
        self.trusted, self.hidden, self.timeout, self.memory = trusted, hidden, timeout, memory
        self.check_timeout, self.check_memory, self.assignment = check_timeout, check_memory, assignment
        # however the time is spread over cells and calls, the student's code gets this much in all
        self.deadline = time.monotonic() + notebook_timeout
        # and the whole submission, the checks included, this much: a class's grading has a bound
        self.submission_deadline = time.monotonic() + submission_timeout
        self.namespace: dict = {}
        self.instructors = {name for source in trusted.values() for name in bound_names(source)}
        self.library: dict[str, str] = {}  # names bound to the library -> what of it (for library_uses)
        for source in trusted.values():
            library_uses(source, self.library)
        self.ran: list[tuple[str, str]] = []  # the cells the student's process has run to the end
        self.events: list[dict] = []
        self.student: AnswerProcess | None = None
        self.isolation = ""

    def _event(self, cell: str, kind: str, detail: str) -> None:
        self.events.append({"cell": cell, "kind": kind, "detail": detail})

    def _student_process(self) -> AnswerProcess | None:
        """The student's process, started (again) if needed, with the cells that ran before re-run."""
        if self.student is not None:
            return self.student
        if time.monotonic() >= self.deadline:
            return None
        try:
            self.student = AnswerProcess(self.hidden, timeout=self.timeout, memory=self.memory,
                                         deadline=self.deadline, assignment=self.assignment)
            self.isolation = self.student.isolation
            for code, name in self.ran:
                self.student.run(code, name)
        except (AnswerProcessDied, AnswerTimeout) as error:
            self._event("", "sandbox", f"the student's process could not be (re)started: {error}")
            self._drop_student()
        return self.student

    def _drop_student(self) -> None:
        if self.student is not None:
            self.student.close()
        self.student = None

    def grade(self, nb) -> None:
        execution_count = 0
        try:
            for cell in nb.cells:
                if cell.cell_type != "code":
                    continue
                execution_count += 1
                cell.execution_count = execution_count
                cell.outputs = []
                meta = cell.metadata.get("nbgrader", {})
                grade_id = meta.get("grade_id", f"cell {execution_count}")
                mine = self.trusted.get(grade_id) == cell.source and not meta.get("solution", False)
                if mine and meta.get("grade", False):
                    self._run_test(cell, grade_id)
                elif mine:
                    self._run_trusted(cell, grade_id)
                    self._run_student(cell, grade_id, show=False)
                else:
                    for flag in tampering(cell.source, self.instructors):
                        self._event(grade_id, "flagged", flag)
                    self._run_student(cell, grade_id, show=True)
        finally:
            self._drop_student()

    def _run_trusted(self, cell, grade_id: str, namespace: dict | None = None, test: bool = False) -> None:
        """Run an instructor's cell here; a test cell (``test``) in ``namespace``, with what it warns or writes to
        stderr sent to the report rather than into the cell (where nbgrader would score it 0)."""
        out, err, error_output = io.StringIO(), io.StringIO(), None
        with warnings.catch_warnings(record=True) as warned:
            if test:  # every test sees its own warnings, whoever was graded before
                warnings.simplefilter("always")
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    exec(compile(cell.source, f"<{grade_id}>", "exec"), self.namespace if namespace is None
                         else namespace)
            except (AnswerProcessDied, AnswerTimeout) as error:
                self._drop_student()
                kind = "tampering" if isinstance(error, AnswerTampering) else "stopped"
                self._event(grade_id, kind, f"calling the answer: {error}")
                error_output = _error(type(error).__name__, str(error), [
                    f"{type(error).__name__}: your code {error} while this test ran it; this test scores 0"])
            except Exception as error:
                # from the test cell down: the grader's own frame would show the students where it runs
                lines = traceback.format_exception(type(error), error, error.__traceback__.tb_next)
                error_output = _error(type(error).__name__, str(error), ["".join(lines[:1] + lines[1:][-3:])])
        noise = [f"{w.category.__name__}: {w.message}\n" for w in warned]
        if test:
            for line in noise + ([err.getvalue()] if err.getvalue() else []):
                self._event(grade_id, "warning", f"the check wrote (kept out of the cell): {line.strip()[:500]}")
            err = io.StringIO()
        else:
            err.write("".join(noise))
        for name, buffer in (("stdout", out), ("stderr", err)):
            if buffer.getvalue():
                cell.outputs.append(_stream(name, buffer.getvalue()[:TRUSTED_OUTPUT_LIMIT]))
        if error_output is not None:
            cell.outputs.append(error_output)

    def _run_test(self, cell, grade_id: str) -> None:
        """A test cell in a child of the grader on a clock (:func:`on_a_clock`), with the answers it reads."""
        # only what the test reads and no instructor's name (a check, the data), builtin or dunder: the answers
        wanted = [n for n in free_names(cell.source) if n not in self.namespace and n not in self.instructors
                  and n not in bound_names(cell.source) and not hasattr(builtins, n) and not n.startswith("__")]
        left = self.submission_deadline - time.monotonic()
        if left <= 0:
            self._event(grade_id, "timeout", "not run: the time for the whole submission is spent")
            cell.outputs.append(_error("GradingError", "not run", [
                "GradingError: this test was not run: the time for the whole submission is spent"]))
            return
        student = self._student_process() if wanted else None
        events_before = len(self.events)

        def work() -> dict:
            answers, flags = {}, []
            try:
                if student is not None:
                    answers = student.get(wanted, flags)
            except (AnswerProcessDied, AnswerTimeout) as error:
                student.close()
                kind = "tampering" if isinstance(error, AnswerTampering) else "stopped"
                self._event(grade_id, kind, f"reading the answers: {error}")
                cell.outputs.append(_error(type(error).__name__, str(error), [
                    f"{type(error).__name__}: your code {error} when this test read your answers; this test "
                    "scores 0"]))
            else:
                # the instructor's names win over any answer, and the builtins are the grader's own
                namespace = {**answers, **self.namespace, "__builtins__": builtins}
                self._run_trusted(cell, grade_id, namespace, test=True)
            # what the sandbox refused while the answers were read and the student's functions called
            self.events += [{"cell": grade_id, "kind": "refused", "detail": flag} for flag in flags]
            return {"outputs": cell.outputs, "events": self.events[events_before:],
                    "student": student.state() if student is not None else None}

        try:
            result = on_a_clock(work, min(self.check_timeout, left), self.check_memory)
        except CheckTimeout as error:
            self._drop_student()  # it may have been in the middle of an answer: its channel is not to be trusted
            self._event(grade_id, "check stopped", str(error))
            cell.outputs.append(_error("CheckTimeout", str(error), [
                f"CheckTimeout: {error}; this test scores 0"]))
            return
        if result["student"] is not None and self.student is student:
            student.resume(result["student"])
            if student.closed:
                self._drop_student()
        self.events += result["events"]
        cell.outputs = [nbformat.from_dict(output) for output in result["outputs"]]

    def _run_student(self, cell, grade_id: str, show: bool) -> None:
        student = self._student_process()
        if student is None:
            if show:
                why = ("the time for the whole submission is spent" if time.monotonic() >= self.deadline
                       else "the sandbox could not be started (see the report)")
                cell.outputs.append(_error("GradingError", "not run", [f"GradingError: this cell was not run: {why}"]))
            return
        try:
            reply = student.run(cell.source, grade_id)
        except (AnswerProcessDied, AnswerTimeout) as error:
            self._drop_student()
            kind = "timeout" if isinstance(error, AnswerTimeout) else "exited"
            self._event(grade_id, kind, str(error))
            if show:
                cell.outputs.append(_error(type(error).__name__, str(error), [
                    f"{type(error).__name__}: this cell {error}. The cells after it ran in a new kernel "
                    "without it."]))
            return
        self.ran.append((cell.source, grade_id))
        self._report_reply(cell, grade_id, reply, show)
        if show:
            cell.outputs += _reply_outputs(reply)

    def _report_reply(self, cell, grade_id: str, reply: dict, show: bool) -> None:
        """The report's events of a cell the sandbox ran: refused uses, the library it used (an answer cell),
        output past the limit."""
        for flag in reply.get("flags", []):
            self._event(grade_id, "refused", flag)
        if show:
            used = library_uses(cell.source, self.library)
            if used:
                self._event(grade_id, "library", "uses " + ", ".join(used[:20]))
        if reply.get("dropped"):
            self._event(grade_id, "output", f"printed {reply['dropped']} characters past the limit (not kept)")


def _reply_outputs(reply: dict) -> list:
    """The outputs of a cell the sandbox ran: what it printed (and how much more was not kept), its error."""
    outputs = []
    for name in ("stdout", "stderr"):
        text = reply.get(name, "")
        if name == "stdout" and reply.get("dropped"):
            text += f"\n[... {reply['dropped']} more characters of output not kept]\n"
        if text:
            outputs.append(_stream(name, text))
    error = reply.get("error")
    if error:
        outputs.append(_error(error["ename"], error["evalue"], error["traceback"]))
    return outputs


def trusted_sources(db_url: str, notebook: str, assignment: str) -> dict[str, str]:
    """grade id -> source of the locked cells (setup, data, tests) the gradebook holds for a notebook."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gradebook:
        cells = gradebook.find_notebook(notebook, assignment).source_cells
        return {cell.name: cell.source for cell in cells if cell.locked}


try:  # the preprocessors exist where nbgrader is installed (the lab extra); the grader above does not need them
    from nbconvert.exporters import HTMLExporter
    from nbformat.v4 import new_code_cell
    from nbgrader.api import MissingEntry
    from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor, OverwriteCells
except ImportError:  # pragma: no cover
    NbGraderPreprocessor = None

if NbGraderPreprocessor is not None:
    class SandboxedExecute(NbGraderPreprocessor):
        """nbgrader's ``Execute`` for autograde, with :class:`NotebookGrader` (see the module docstring)."""

        timeout = Float(120.0, help="Seconds a cell, or one call of a student's function, may take.").tag(
            config=True)
        notebook_timeout = Float(600.0, help="Seconds the student's code may take in all, per notebook.").tag(
            config=True)
        check_timeout = Float(120.0, help="Seconds one test cell may take in the grader, the calls of the "
                                          "student's functions included.").tag(config=True)
        check_memory = Integer(4 * 2 ** 30, help="Bytes of memory one test cell may take in the grader, on top of "
                                                 "what the grader holds.").tag(config=True)
        submission_timeout = Float(900.0, help="Seconds one notebook may take in all, the student's code and the "
                                               "checks: a class of N grades within N times this.").tag(config=True)
        memory = Integer(8 * 2 ** 30, help="Bytes of address space for the student's process.").tag(config=True)
        hidden = List(Unicode(), help="Folders the student's code must not see (besides the course folder, "
                                      "which is the working directory of autograde).").tag(config=True)
        report_directory = Unicode("", help="Where each notebook's grading events go as JSON.").tag(config=True)

        def preprocess(self, nb, resources):
            info = resources["nbgrader"]
            trusted = trusted_sources(info["db_url"], info["notebook"], info["assignment"])
            hidden = [Path(p) for p in [os.getcwd(), *self.hidden]]
            grader = NotebookGrader(trusted, hidden, self.timeout, self.memory, self.notebook_timeout,
                                    check_timeout=self.check_timeout, check_memory=self.check_memory,
                                    submission_timeout=max(self.submission_timeout, self.notebook_timeout),
                                    assignment=info["assignment"])
            grader.grade(nb)
            if self.report_directory:
                path = Path(self.report_directory) / info["assignment"] / f"{info['student']}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps({"student": info["student"], "assignment": info["assignment"],
                                            "notebook": info["notebook"], "isolation": grader.isolation,
                                            "events": grader.events}, indent=1))
            for event in grader.events:
                self.log.warning("%s %s: %s", info["student"], event["cell"], event["detail"])
            return nb, resources

    class OverwriteReleasedCells(OverwriteCells):
        """nbgrader's ``OverwriteCells`` without its false alarm on hidden tests.

        The gradebook keeps a test cell as the source has it, hidden tests included, and its checksum; the release
        has the cell as ``ClearHiddenTests`` left it. So nbgrader warned "Attribute 'checksum' for cell ex5_test
        has changed!" for every submission, an untouched one included, before writing the gradebook's text back.
        A locked cell that is exactly the gradebook's text with the hidden tests cut is the release's: it gets the
        gradebook's text back first, and only a real change (a student's edit of a locked cell) still warns.
        """

        def preprocess(self, nb, resources):
            self.release = ClearHiddenTests(parent=self)  # what generate_assignment cut
            return super().preprocess(nb, resources)

        def preprocess_cell(self, cell, resources, cell_index):
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id is not None and cell.metadata.nbgrader.get("locked"):
                try:
                    kept = self.gradebook.find_source_cell(grade_id, self.notebook_id, self.assignment_id)
                except MissingEntry:
                    kept = None
                if kept is not None and kept.locked:
                    released = new_code_cell(kept.source)
                    self.release._remove_hidden_test_region(released)
                    if cell.source == released.source:
                        cell.source = kept.source
            return super().preprocess_cell(cell, resources, cell_index)

    class HideHiddenTests(ClearHiddenTests):
        """For the feedback: a test cell's hidden tests become a one-line note, their outputs (the verdict) stay, so
        that the feedback gives away no more than the release and an assignment can be given again."""

        note = Unicode("# ... more checks ran here when graded (hidden tests: not shown)",
                       help="What stands in the feedback for a cell's hidden tests.").tag(config=True)

        def preprocess_cell(self, cell, resources, cell_index):
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
                lines, inside = [], False
                for line in cell.source.split("\n"):
                    if self.begin_test_delimeter in line:
                        inside = True
                        lines.append(line[:len(line) - len(line.lstrip())] + self.note)
                    elif self.end_test_delimeter in line:
                        inside = False
                    elif not inside:
                        lines.append(line)
                cell.source = "\n".join(lines)
            return cell, resources

    class TypesetFeedback(HTMLExporter):
        """nbgrader's feedback page with its math typeset into SVG, as the static site's (classroom/mathjax.py, MathJax
        3 from npm in node), and without the CDN MathJax that nbgrader's feedback template loads: the page shows its
        formulas offline and from file://, whoever made it (make grade, the Formgrader's Generate Feedback). Without
        node or the fetched MathJax (``make install``) the page keeps its TeX and the CDN, with a warning."""

        def from_notebook_node(self, nb, resources=None, **kw):
            page, resources = super().from_notebook_node(nb, resources, **kw)
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "feedback.html"
                path.write_text(re.sub(r"<script[^>]*mathjax[^>]*>.*?</script>", "", page, flags=re.S | re.I))
                try:
                    typeset_math([path])
                except (SystemExit, MissingAsset) as error:
                    self.log.warning("the feedback's math is left to MathJax from its CDN: %s", error)
                    return page, resources
                return path.read_text(), resources


"""Where a submission's code runs while it is graded: a separate process in a bubblewrap sandbox.

:class:`AnswerProcess` starts ``answer_worker.py`` and talks to it with :mod:`classroom.wire` (data only,
never pickles). The sandbox, when ``bwrap`` (Debian's ``bubblewrap``) works on this machine:

* the file system is the machine's, read-only, with these hidden behind empty in-memory folders: the course
  folder (sources with solutions, the gradebook, every student's submission), the nbgrader exchange, the
  repository (``course/exercises/`` holds every solution), ``/home``, ``/root``, the grader's home and
  ``/tmp``. Only what the answers need to run comes back into view, read-only: the Python installation and
  virtual environment, and the ``tensoradbook`` and ``widgets`` packages;
* no network, its own process, IPC and host-name namespaces, killed with its parent, a new session (so it
  cannot type into the grader's terminal);
* run as root (CI, a class server), the worker becomes ``nobody`` before any cell runs, so it has no
  privileges and cannot read anything that is not world-readable even where a path was missed;
* limits per process: memory (``RLIMIT_AS``), CPU seconds, file size, no core dumps.

Why bubblewrap rather than only a separate user: a separate user still sees every world-readable file,
and a repository checkout (with ``course/exercises/``) and the course folder usually are; bubblewrap hides
them whatever their modes, needs no set-up by the instructor, and works without root.

Without a working ``bwrap`` (a container without user namespaces, the Kubernetes form) grading is refused
(:class:`SandboxUnavailable`, with how to get bubblewrap working), never silently weaker: as root there is
no weaker form at all (the answers would run as root behind an audit hook, which paths relative to a
directory descriptor, sqlite or a fork primitive get past). An instructor who grades as an ordinary user may
accept the weaker form, the worker as a plain process of their own user behind the audit hook alone, by
setting ``TENSORADBOOK_WEAK_SANDBOX=1``; the grading report then says so for every submission
(:attr:`AnswerProcess.isolation`).

What the grader takes from the student's process is what it asked for and nothing else
(:meth:`AnswerProcess.get`): a reply that names a value not asked for, or is not in the shape of an answer,
ends the process and is reported as tampering (:class:`AnswerTampering`).
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import functools
import os
import pwd
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from classroom import wire
from classroom.library_policy import sandbox_package
from classroom.paths import REPO

WORKER = Path(__file__).resolve().parent / "answer_worker.py"
#: Where the worker's two files are mounted inside the sandbox (nothing else of ``classroom`` is).
INSIDE = "/tmp/.tensoradbook-grading"


# Not Exceptions: a check that catches what a student's function raises ("your function raised ...") must not
# catch these; the test stops, scores 0, and the grader starts a new process.
class AnswerTimeout(BaseException):
    """The student's code did not answer within the time allowed."""


class AnswerProcessDied(BaseException):
    """The student's process ended (an exit, a crash, the memory limit)."""


class AnswerTampering(AnswerProcessDied):
    """The student's process sent what no honest worker sends (a value not asked for, a forged reply): it is
    ended, and the grading report names it as tampering."""


class SandboxUnavailable(RuntimeError):
    """Answers cannot be isolated here (no working bubblewrap): grading is refused rather than weaker."""


#: Set to 1 by an instructor grading as an ordinary user who accepts answers behind the audit hook alone.
WEAK_SANDBOX_ENV = "TENSORADBOOK_WEAK_SANDBOX"


def isolation_available() -> str | None:
    """None where answers can be isolated here, else why not and how to fix it (a sentence for the instructor)."""
    if bwrap_works():
        return None
    how = ("install bubblewrap (apt install bubblewrap) and allow unprivileged user namespaces "
           "(sysctl kernel.unprivileged_userns_clone=1; in a container: run it with user namespaces or "
           "--security-opt seccomp=unconfined, on Kubernetes a pod with hostUsers: false)")
    if os.getuid() == 0:
        return (f"grading as root needs a working bubblewrap sandbox, and none works here: {how}. Without it "
                "the students' code would run as root.")
    if os.environ.get(WEAK_SANDBOX_ENV) == "1":
        return None
    return (f"no working bubblewrap sandbox here: {how}; or, grading as an ordinary user, accept answers behind "
            f"Python's audit hook alone (not a security boundary) with {WEAK_SANDBOX_ENV}=1.")


@functools.cache
def bwrap_works() -> bool:
    """Whether bubblewrap is installed and can build our sandbox here (not in every container)."""
    if shutil.which("bwrap") is None:
        return False
    try:
        probe = subprocess.run(_bwrap_prefix([]) + [sys.executable, "-c", "pass"], capture_output=True,
                               timeout=60)
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def _ancestors_under(path: Path, hidden: list[Path]) -> list[Path]:
    """The folders between the innermost hidden folder above ``path`` and ``path``: created in the sandbox
    (0755) so that a path brought back into view can be reached."""
    tops = [h for h in hidden if h == path or h in path.parents]
    if not tops:
        return []
    top = max(tops, key=lambda h: len(h.parts))
    return [p for p in reversed(path.parents) if top in p.parents]


def _shown() -> list[Path]:
    """What the answers need, brought back into view: Python, the environment, the two packages."""
    return sorted({Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                               REPO / "tensoradbook", REPO / "widgets") if Path(p).exists()},
                  key=lambda p: len(p.parts))


@functools.cache
def _policy_copies() -> Path:
    """This grader's folder of the library's policy copies (one per assignment), removed when it exits."""
    folder = Path(tempfile.mkdtemp(prefix="tensoradbook-policy-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def policy_package(assignment: str | None) -> Path | None:
    """The copy of ``tensoradbook/`` that ``assignment``'s answers see (what the assignment does not allow is not
    in it: :func:`classroom.library_policy.sandbox_package`), or None for no assignment (the whole library)."""
    if assignment is None:
        return None
    return sandbox_package(assignment, _policy_copies())


def _bwrap_prefix(hidden: list[Path], library: Path | None = None) -> list[str]:
    hidden = sorted({Path(p).resolve() for p in hidden + [Path("/home"), Path("/root"), Path("/tmp"), REPO,
                                                           Path.home()]}, key=lambda p: len(p.parts))
    hidden = [p for p in hidden if p.is_dir() and p != Path("/")]
    shown = _shown()
    args = ["bwrap", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"]
    for path in hidden:
        # /tmp stays writable for everyone, as on any machine (the worker writes its kernel cache there)
        args += ["--perms", "1777" if path == Path("/tmp") else "0755", "--tmpfs", str(path)]
    for path in shown:
        for folder in _ancestors_under(path, hidden):
            args += ["--perms", "0755", "--dir", str(folder)]
        # the package is the assignment's policy copy where there is one: the forbidden code is not there to read
        args += ["--ro-bind", str(library if library is not None and path == REPO / "tensoradbook" else path),
                 str(path)]
    args += ["--perms", "0755", "--dir", INSIDE,
             "--ro-bind", str(WORKER), f"{INSIDE}/answer_worker.py",
             "--ro-bind", str(Path(wire.__file__).resolve()), f"{INSIDE}/wire.py",
             "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--die-with-parent",
             "--new-session", "--chdir", "/tmp", "--setenv", "HOME", "/tmp"]
    if os.getuid() == 0:  # the worker drops to nobody itself; bubblewrap drops every other capability
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:  # an unprivileged bubblewrap needs its own user namespace
        args += ["--unshare-user"]
    return args


def _nobody() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


class AnswerProcess:
    """One student's sandboxed process: :meth:`run` a cell, :meth:`get` values, call their functions.

    ``hidden``: the folders the student's code must not see (the course folder, the exchange). ``assignment``:
    whose library policy applies (:mod:`tensoradbook.exercises.policy`): the sandbox sees the policy's copy of
    the package, in which what the assignment does not allow raises a clear error and is reported.
    ``timeout``: seconds for one cell or one call of the student's function; ``deadline`` (a
    ``time.monotonic()`` value): when the whole submission's time is spent, however many calls it takes.
    ``memory``: bytes of address space. Every method raises :class:`AnswerTimeout` or
    :class:`AnswerProcessDied` when the student's code hangs or ends the process; the process is then gone
    and a new one must be started.
    """

    def __init__(self, hidden: list[Path], timeout: float = 120.0, memory: int = 8 * 2 ** 30,
                 cpu_seconds: int = 1800, deadline: float = float("inf"), assignment: str | None = None):
        refused = isolation_available()
        if refused:
            raise SandboxUnavailable(refused)
        self.timeout, self.deadline = timeout, deadline
        self._pending = b""  # bytes read from the channel past the last whole answer
        self._sequence = 0  # of the last request: its answer must say the same
        self._scratch: Path | None = None  # the working folder of a worker outside bubblewrap
        self._owner = os.getpid()  # a grader's child (a check on a clock) shares the channel, not the process
        self.closed = False
        self.isolation = "bubblewrap" if bwrap_works() else "process, behind the audit hook alone"
        hidden = [Path(p) for p in hidden]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
               "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg", "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
        worker_args = [a for p in hidden + [REPO] for a in ("--hide", str(p))]
        worker_args += [a for p in _shown() for a in ("--show", str(p))]
        if self.isolation == "bubblewrap":
            uid, gid = _nobody()
            if os.getuid() == 0:
                worker_args += ["--uid", str(uid), "--gid", str(gid)]
                self.isolation = "bubblewrap, as nobody"
            env.update(TENSORADBOOK_CACHE="/tmp/kernels", NUMBA_CACHE_DIR="/tmp/numba", HOME="/tmp")
            command = _bwrap_prefix(hidden, policy_package(assignment)) + [
                sys.executable, f"{INSIDE}/answer_worker.py", *worker_args]
            cwd = None
        else:  # the audit hook only: the grading report says so
            self._scratch = Path(os.path.realpath(tempfile.mkdtemp(prefix="tensoradbook-answers-")))
            env.update(TENSORADBOOK_CACHE=str(self._scratch / "kernels"), HOME=str(self._scratch),
                       NUMBA_CACHE_DIR=str(self._scratch / "numba"))
            library = policy_package(assignment)
            if library is not None:  # found before the installed package (the source stays readable: weak mode)
                env["PYTHONPATH"] = str(library.parent)
            command = [sys.executable, str(WORKER), *worker_args]
            cwd = self._scratch

        def limits():
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds))
            resource.setrlimit(resource.RLIMIT_FSIZE, (2 ** 28, 2 ** 28))
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

        # what the worker says before it is ready (a failed start) is kept; later it writes nothing there
        with tempfile.TemporaryFile() as startup_errors:
            self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            stderr=startup_errors, env=env, cwd=cwd, preexec_fn=limits,
                                            start_new_session=True)
            self._to, self._from = self.process.stdin.fileno(), self.process.stdout.fileno()
            try:
                self._receive(max(timeout, 120.0))
            except (AnswerProcessDied, AnswerTimeout):
                startup_errors.seek(0)
                why = startup_errors.read().decode(errors="replace").strip().splitlines()[-3:]
                raise AnswerProcessDied(f"the sandboxed process did not start ({self.isolation}): "
                                        + " / ".join(why)) from None

    def _receive(self, timeout: float, sequence: int | None = None) -> dict:
        deadline = time.monotonic() + timeout
        try:
            size = wire.body_size(self._read(wire.HEADER_SIZE, deadline, timeout))
            reply = self._checked(wire.parse(self._read(size, deadline, timeout)))
            if reply.get("seq") != sequence:  # a reply a cell wrote ahead of the real one, or that real one late
                raise wire.WireError("a reply out of turn")
            return reply
        except wire.WireError as error:  # the student's code wrote into the channel: no answer to trust
            self.close()
            raise AnswerTampering(f"sent something that is not an answer ({error})") from None

    def _read(self, size: int, deadline: float, timeout: float) -> bytes:
        """``size`` bytes of the channel by the deadline: a message announced and never finished is a hang."""
        while len(self._pending) < size:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from], [], [], left)[0]:
                self.close()
                raise AnswerTimeout(f"no answer within {timeout:g} s")
            chunk = os.read(self._from, 2 ** 20)
            if not chunk:
                status = self.close()
                raise AnswerProcessDied(f"the process ended (exit status {status})")
            self._pending += chunk
        data, self._pending = self._pending[:size], self._pending[size:]
        return data

    @staticmethod
    def _checked(reply: dict) -> dict:
        """A reply in the shape the worker sends, or a WireError: the grader indexes it without fear."""
        texts = ("stdout", "stderr")
        error = reply.get("error")

        def strings(key: str) -> bool:
            return isinstance(reply.get(key, []), list) and all(isinstance(item, str) for item in reply.get(key, []))

        if not (all(isinstance(reply.get(k, ""), str) for k in texts)
                and isinstance(reply.get("dropped", 0), int)
                and strings("flags")
                and isinstance(reply.get("values", {}), dict)
                and (error is None or (isinstance(error, dict) and isinstance(error.get("ename"), str)
                                       and isinstance(error.get("evalue"), str)
                                       and isinstance(error.get("traceback"), list)
                                       and all(isinstance(t, str) for t in error["traceback"])))):
            raise wire.WireError("a reply of the wrong shape")
        return reply

    def request(self, message: dict) -> dict:
        """Send one request and wait (at most ``timeout`` seconds, and not past the deadline) for its answer."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.close()
            raise AnswerTimeout("the time for the whole submission is spent")
        self._sequence += 1
        try:
            wire.send(self._to, {**message, "seq": self._sequence})
        except OSError:
            status = self.close()
            raise AnswerProcessDied(f"the process ended (exit status {status})") from None
        return self._receive(min(self.timeout, left), self._sequence)

    def run(self, code: str, name: str) -> dict:
        """Run a cell; the answer has ``error`` (None or ename/evalue/traceback), ``stdout``, ``stderr``,
        ``dropped`` (characters of output not kept) and ``flags``."""
        return self.request({"op": "run", "code": code, "name": name})

    def get(self, names: list[str], flags: list[str]) -> dict:
        """The values of those of ``names`` the student's process defines, decoded (functions as
        :class:`wire.RemoteFunction`); the audit flags raised meanwhile are appended to ``flags``.

        Only the names asked for are taken: a reply with any other (a check's name, a builtin, the given data,
        put there by code that reached the worker's own objects) is tampering, and nothing of it is used."""
        answer = self.request({"op": "get", "names": names})
        flags += answer.get("flags", [])
        extra = sorted(set(answer.get("values", {})) - set(names))
        if extra:
            self.close()
            raise AnswerTampering("answered with values that were not asked for: "
                                  + ", ".join(repr(name[:40]) for name in extra[:5]))

        def call(handle, args, kwargs):
            reply = self.request({"op": "call", "id": handle, "args": wire.encode(list(args), []),
                                  "kwargs": wire.encode(dict(kwargs), [])})
            flags.extend(reply.get("flags", []))
            if reply.get("error"):
                raise student_exception(reply["error"])
            return wire.decode(reply["value"], call)

        values = {}
        for name, data in answer.get("values", {}).items():
            try:
                values[name] = wire.decode(data, call)
            except wire.WireError as error:  # a forged value: an answer the checks refuse by its type
                values[name] = wire.UnsupportedAnswer(f"unreadable ({error})")
        return values

    def state(self) -> dict:
        """Where the conversation stands, for the grader's child that ran a check to hand back: the last request's
        number, the bytes read past the last answer, and whether the process is still to be trusted."""
        return {"sequence": self._sequence, "pending": base64.b64encode(self._pending).decode(),
                "alive": not self.closed}

    def resume(self, state: dict) -> None:
        """Take up the conversation where the grader's child left it (:meth:`state`); closed if it ended it."""
        self._sequence, self._pending = int(state["sequence"]), base64.b64decode(state["pending"])
        if not state["alive"]:
            self.close()

    def close(self) -> int | None:
        """Stop the process (and everything it started); its exit status (None where a child of the grader
        closes it: only the grader, which started it, can reap it)."""
        self.closed = True
        if os.getpid() != self._owner:  # a forked check: its poll() would see no child and say "ended"
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            return None
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
        status = self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(OSError):
                stream.close()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
        return status


def student_exception(error: dict) -> Exception:
    """The student's exception, rebuilt as a built-in exception type of the same name where there is one
    (checks catch e.g. ``ZeroDivisionError``), else ``RuntimeError``; never the student's own class."""
    import builtins

    kind = getattr(builtins, str(error.get("ename", "")), None)
    if not (isinstance(kind, type) and issubclass(kind, Exception)) or kind in (SystemExit, KeyboardInterrupt):
        kind = RuntimeError
    try:
        return kind(str(error.get("evalue", "")))
    except Exception:
        return RuntimeError(str(error.get("evalue", "")))

"""The student's side of grading: runs a submission's cells in a sandbox and answers with data only.

Started by :mod:`classroom.sandbox` (inside bubblewrap where it is available), with ``wire.py`` beside it and
nothing else of ``classroom``. It reads requests from its stdin and answers on its stdout (then points both,
and stderr, at /dev/null, so what the cells print cannot mix with the answers):

* ``{"op": "run", "code": ...}`` runs a cell in one IPython shell (magics work) and answers ``{"error": ...}``
  (or ``null``) with what the cell printed, cut at :data:`OUTPUT_LIMIT`;
* ``{"op": "get", "names": [...]}`` answers the values of those names, encoded by :func:`wire.encode`;
* ``{"op": "call", "id": n, "args": ..., "kwargs": ...}`` calls a function sent earlier as handle ``n``.

Every answer repeats its request's ``seq``, so that the grader can tell an answer forged by a cell (written into
the channel ahead of the real one) from the real one: the one out of turn ends the process.

Every answer carries ``flags``: what the audit hook refused since the last answer (opening a hidden path,
starting a process), for the instructor's grading report. Run as root inside the sandbox it first becomes
the unprivileged user named by ``--uid``/``--gid``, before any cell runs.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import traceback

import wire

#: What a cell may print into its answer: the rest is counted, not kept.
OUTPUT_LIMIT = 20_000


class CappedText(io.TextIOBase):
    """A text stream that keeps the first ``limit`` characters and counts the rest."""

    def __init__(self, limit: int = OUTPUT_LIMIT):
        self.limit, self.parts, self.kept, self.dropped = limit, [], 0, 0

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        text = str(text)
        room = max(0, self.limit - self.kept)
        self.parts.append(text[:room])
        self.kept += min(room, len(text))
        self.dropped += max(0, len(text) - room)
        return len(text)

    def take(self) -> tuple[str, int]:
        text, dropped = "".join(self.parts), self.dropped
        self.parts, self.kept, self.dropped = [], 0, 0
        return text, dropped


class Guard:
    """The audit hook: refuses to open anything under the hidden paths or to start a process, and
    remembers each refusal as a flag. A second line behind the sandbox, which hides those paths already
    (an audit hook alone is not a security boundary: Python's documentation says so)."""

    REFUSED_EVENTS = ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                      "os.forkpty", "pty.spawn", "socket.connect", "socket.bind", "os.kill", "os.killpg",
                      "signal.pthread_kill", "sqlite3.connect")
    #: raised by the library's stand-ins for what an assignment does not allow (tensoradbook/exercises/policy.py),
    #: and by what it allows but watches
    POLICY_EVENT, USE_EVENT = "tensoradbook.library_policy", "tensoradbook.library_use"

    def __init__(self, hidden: list[str], shown: list[str]):
        # the innermost folder that holds a path decides: the course inside a shown folder stays hidden
        self.rules = sorted([(os.path.realpath(p), True) for p in hidden] +
                            [(os.path.realpath(p), False) for p in shown], key=lambda rule: -len(rule[0]))
        self.flags: list[str] = []

    def _hidden(self, path) -> bool:
        if isinstance(path, int):
            return False
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        for folder, hidden in self.rules:
            if real == folder or real.startswith(folder.rstrip("/") + "/"):
                return hidden
        return False

    def __call__(self, event: str, args: tuple) -> None:
        if event == "open" and args and self._hidden(args[0]):
            self._refuse(f"tried to open {os.fsdecode(args[0])!r}, which grading hides")
        elif event.startswith(self.REFUSED_EVENTS):
            self._refuse(f"tried to {event} (no processes, signals, databases or network while grading)")
        elif event == self.POLICY_EVENT and args:  # the stand-in raises its own error, which the student sees
            self._flag(f"used {str(args[0])[:200]}, which this assignment's answers may not use")
        elif event == self.USE_EVENT and args:
            self._flag(f"used {str(args[0])[:200]} (allowed, and watched by this assignment's policy)")

    def _flag(self, flag: str) -> None:
        if len(self.flags) < 20:
            self.flags.append(flag)

    def _refuse(self, flag: str) -> None:
        self._flag(flag)
        raise PermissionError(f"not while grading: {flag}")

    def take(self) -> list[str]:
        flags, self.flags = self.flags, []
        return flags


def _error(error: BaseException) -> dict:
    lines = traceback.format_exception(type(error), error, error.__traceback__)
    # the worker's own frames say nothing to a student: keep the lines from the first cell frame on
    cell_lines = [i for i, line in enumerate(lines) if '"<ipython-input-' in line]
    if cell_lines:
        lines = lines[:1] + lines[cell_lines[0]:]
    text = "".join(lines)
    return {"ename": type(error).__name__, "evalue": str(error)[:2000],
            "traceback": [text[-OUTPUT_LIMIT:]]}


class Worker:
    def __init__(self, guard: Guard):
        from IPython.core.interactiveshell import InteractiveShell

        self.guard = guard
        self.shell = InteractiveShell.instance(history_length=0)
        self.shell.history_manager.enabled = False
        self.shell.showtraceback = lambda *args, **kwargs: None  # errors are answered, not printed
        self.callables: list = []
        self.stdout, self.stderr = CappedText(), CappedText()

    def run(self, request: dict) -> dict:
        sys.stdout, sys.stderr = self.stdout, self.stderr
        try:
            result = self.shell.run_cell(str(request["code"]), store_history=False,
                                         cell_id=str(request.get("name", "cell")))
            error = result.error_before_exec or result.error_in_exec
        except BaseException as caught:  # SystemExit and KeyboardInterrupt included: the cell ends, we go on
            error = caught
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        return {"error": _error(error) if error is not None else None}

    def get(self, request: dict) -> dict:
        values = {}
        for name in request["names"]:
            if name in self.shell.user_ns:
                try:
                    values[name] = wire.encode(self.shell.user_ns[name], self.callables)
                except Exception as error:  # the answer cannot cross as data: say why, in the answer
                    values[name] = {"t": "unsupported", "type": f"{type(error).__name__}: {error}"[:200]}
        return {"values": values}

    def call(self, request: dict) -> dict:
        function = self.callables[int(request["id"])]
        args = wire.decode(request["args"])
        kwargs = wire.decode(request["kwargs"])
        sys.stdout, sys.stderr = self.stdout, self.stderr
        try:
            return {"value": wire.encode(function(*args, **kwargs), self.callables)}
        except BaseException as error:
            return {"error": _error(error)}
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__

    def answer(self, request: dict) -> dict:
        reply = getattr(self, request["op"])(request)
        out, out_dropped = self.stdout.take()
        err, err_dropped = self.stderr.take()
        reply.update(stdout=out, stderr=err, dropped=out_dropped + err_dropped, flags=self.guard.take())
        return reply


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uid", type=int)
    parser.add_argument("--gid", type=int)
    parser.add_argument("--hide", action="append", default=[])
    parser.add_argument("--show", action="append", default=[])
    args = parser.parse_args()
    if os.getuid() == 0 and args.uid is not None:
        os.setgroups([])
        os.setgid(args.gid)
        os.setuid(args.uid)
    # the requests come on stdin and the answers go out on stdout: keep private copies of both, and point
    # the standard descriptors at /dev/null so nothing a cell writes lands in the channel by accident
    requests, answers = os.dup(0), os.dup(1)
    guard = Guard(args.hide, args.show)
    worker = Worker(guard)  # a failure here still reaches the grader on stderr
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    sys.addaudithook(guard)
    wire.send(answers, {"ready": True, "uid": os.getuid()})
    while True:
        try:
            request = wire.receive(requests)
        except EOFError:
            return 0
        try:
            reply = worker.answer(request)
        except Exception as error:  # a malformed request, or an answer that cannot be encoded
            reply = {"error": _error(error), "stdout": "", "stderr": "", "dropped": 0, "flags": guard.take()}
        wire.send(answers, {**reply, "seq": request.get("seq")})  # the grader matches replies to requests


if __name__ == "__main__":
    sys.exit(main())

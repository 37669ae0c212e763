"""What ``make demo`` and ``make slides`` say in the lecturer's terminal (classroom.voila_serve): the address once
it answers, and Voila started without the warnings of options in a form traitlets deprecates or of unsigned
notebooks."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

import nbformat
import pytest
from nbformat.sign import NotebookNotary

from classroom import demo as demos
from classroom import voila_room, voila_serve
from tests.alarm import time_limit
from tests.browser_support import free_port

# A server that answers after a while: it says when it has answered the first request, before the answer leaves.
SLOW_SERVER = """
import http.server, sys, time
time.sleep(1)
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print("answered", flush=True)
        self.send_response(404)
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
server.handle_request()
"""


def test_options_are_in_the_form_traitlets_reads(monkeypatch):
    """A list or a dict given as JSON on the command line makes traitlets 5 print a DeprecationWarning."""
    monkeypatch.setattr(voila_serve.deck, "build", lambda *args: [])  # the speaker view's deck is not measured here
    room = voila_room.room_options(8, 1, voila_room.CULL_IDLE_MINUTES, demos.DEFAULT_SCALE)
    for options in (room, voila_serve.slides_options("06a_kernels")):
        command = voila_serve.voila_command(demos.DEMO_DIR, "127.0.0.1", 8866, options)
        json_values = [option for option in command if re.match(r"--[\w.]+=[\[{]", option)]
        assert not json_values, f"options traitlets deprecates: {json_values}"


def test_the_address_is_printed_once_it_answers(capfd):
    port = free_port()
    code = voila_serve.run([sys.executable, "-c", SLOW_SERVER, str(port)], f"http://127.0.0.1:{port}/", "open it now")
    assert code == 0
    assert capfd.readouterr().out.split() == ["answered", "open", "it", "now"]


def test_a_server_that_never_answers_prints_no_address(capfd):
    code = voila_serve.run([sys.executable, "-c", "raise SystemExit(3)"], f"http://127.0.0.1:{free_port()}/", "open")
    assert code == 3
    assert "open" not in capfd.readouterr().out


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["kill", "terminal closed"])
def test_a_kill_or_a_closed_terminal_stops_voila_too(tmp_path, signum):
    """``make demo`` killed, or its terminal closed, stops the server it started: no Voila and no kernels left
    running with no one to stop them."""
    pid_file = tmp_path / "server.pid"
    server = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    runner = ("import sys; from classroom import voila_serve; "
              f"sys.exit(voila_serve.run([sys.executable, '-c', {server!r}], 'http://127.0.0.1:{free_port()}/', 'x'))")
    with subprocess.Popen([sys.executable, "-c", runner], cwd=voila_serve.REPO) as serving, time_limit(60):
        while not pid_file.exists() or not pid_file.read_text():
            time.sleep(0.1)
        server_pid = int(pid_file.read_text())
        serving.send_signal(signum)
        serving.wait()
        while _alive(server_pid):
            time.sleep(0.1)
    assert not _alive(server_pid)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, waited for by no one yet, counts as stopped)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_served_notebooks_are_signed_as_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    copies = []
    for demo in sorted(demos.DEMO_DIR.glob("*.ipynb"))[:2]:
        copies.append(tmp_path / demo.name)
        copies[-1].write_bytes(demo.read_bytes())
    notary = NotebookNotary()
    assert not any(notary.check_signature(nbformat.read(p, as_version=4)) for p in copies)
    voila_serve.trust(copies)
    assert all(NotebookNotary().check_signature(nbformat.read(p, as_version=4)) for p in copies)

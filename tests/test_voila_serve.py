"""What ``make demo`` and ``make slides`` say in the lecturer's terminal (classroom.voila_serve): the address once
it answers, and Voila started without the warnings of options in a form traitlets deprecates or of unsigned
notebooks."""

from __future__ import annotations

import re
import sys

import nbformat
from nbformat.sign import NotebookNotary

from classroom import demo as demos
from classroom import voila_room, voila_serve
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

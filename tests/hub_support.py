"""A class on the hub, driven over HTTP as its students drive it (tests/test_hub.py, benchmarks/hub.py).

:func:`running_hub` writes settings for a throw-away class (users ``<prefix>st01``..., free loopback ports, its own
exchange, course, configuration and state under one folder), runs ``python -m classroom.hub serve`` as root and
removes the users, their processes and the folder afterwards. :class:`Student` logs in through the login form,
starts its server, and uses nbgrader's Assignments endpoints and a kernel over the server's websocket, all through
the hub's proxy with the student's own token.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import requests
import websocket

from classroom import hub
from tests.browser_support import free_port

REPO = Path(__file__).resolve().parents[1]
PASSWORD_SUFFIX = "-Secret!42"


def password(name: str) -> str:
    return name + PASSWORD_SUFFIX


def write_settings(root: Path, prefix: str, n_students: int, *, kernel_cpu_seconds: int = 3600,
                   memory: str = "1G", cull_idle_seconds: int = 3600, shared_cache: Path | None = None) -> Path:
    """A class's course.toml and students.csv in ``root``; returns the settings' path."""
    students = [f"{prefix}st{i:02d}" for i in range(1, n_students + 1)]
    with open(root / "students.csv", "w") as f:
        f.write("username,first_name,last_name,email\n")
        for i, name in enumerate(students, 1):
            f.write(f"{name},Student,Number {i},{name}@example.org\n")
    cache = shared_cache or root / "kernel-cache"
    # a block of ports below the ephemeral range that is free now (another class may be running beside)
    user_ports = next(base for base in range(20000, 32000 - n_students, 500)
                      if all(_port_free(base + i) for i in range(n_students + 1)))
    text = f"""
[course]
id = "{prefix}course"
instructors = ["{prefix}ins01"]
students = "students.csv"
[server]
ip = "127.0.0.1"
port = {free_port()}
hub_port = {free_port()}
proxy_api_port = {free_port()}
user_ports = {user_ports}
authenticator = "native"
[paths]
exchange = "{root / 'exchange'}"
course = "{root / 'course'}"
kernel_cache = "{cache}"
jupyter = "{root / 'jupyter'}"
state = "{root / 'state'}"
[limits]
memory = "{memory}"
kernel_cpu_seconds = {kernel_cpu_seconds}
processes = 256
cull_idle_seconds = {cull_idle_seconds}
threads = 1
"""
    path = root / "course.toml"
    path.write_text(text)
    return path


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def user_pids(names: set[str]) -> list[int]:
    """The processes running as one of these users (the class's servers and kernels)."""
    uids = set()
    for name in names:
        with contextlib.suppress(KeyError):
            uids.add(pwd.getpwnam(name).pw_uid)
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid in uids:
                    pids.append(int(entry.name))
    return pids


def kill_pids(pids) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class Hub:
    """A running hub: its settings, its URL, its process (``python -m classroom.hub serve``)."""

    def __init__(self, settings_path: Path, log_path: Path):
        self.settings_path, self.log_path = settings_path, log_path
        self.settings = hub.load_settings(settings_path)
        self.url = f"http://127.0.0.1:{self.settings.port}"
        self.proc: subprocess.Popen | None = None

    def start(self, *, warm_only: list[str] | None = None, start_s: float = 180) -> None:
        """Start (``warm_only``: warm the shared kernel cache for these stems first, which can take minutes)."""
        env = dict(os.environ, PYTHONPATH=str(REPO), **{hub.SETTINGS_ENV: str(self.settings_path)})
        cmd = [sys.executable, "-m", "classroom.hub", "serve", "--settings", str(self.settings_path)]
        cmd += ["--warm-only", *warm_only] if warm_only else ["--no-warm"]
        if warm_only:
            start_s += 1800
        log = open(self.log_path, "a")  # noqa: SIM115 -- the hub's log, kept while it runs
        self.proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + start_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the hub exited with {self.proc.returncode}:\n{self.log()}")
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{self.url}/hub/health", timeout=2).status_code == 200:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"the hub did not answer within {start_s:.0f} s:\n{self.log()}")

    def stop(self) -> None:
        """Stop the hub (and its proxy): the users' servers keep running (cleanup_servers = False)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        pid_file = self.settings.state / "jupyterhub-proxy.pid"
        if pid_file.exists():  # the proxy outlives the hub on purpose (cleanup_proxy = False)
            with contextlib.suppress(ValueError, ProcessLookupError):
                os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            pid_file.unlink()

    def log(self, tail: int = 6000) -> str:
        return self.log_path.read_text(errors="replace")[-tail:] if self.log_path.exists() else ""


#: One class of these tests at a time on the machine (tests/test_hub.py, tests/test_exchange.py, benchmarks/hub.py).
CLASS_LOCK = Path(tempfile.gettempdir()) / "tensoradbook-hub-classes.lock"
_held = {"depth": 0, "fd": -1}


@contextlib.contextmanager
def one_class_at_a_time():
    """Wait until no other process runs a class, then hold the machine's class lock (an flock; again in the same
    process, a no-op). Two classes at once undo each other: each gives the repository's solutions to its own staff
    group (hub.hide_solutions), so the other's instructor can no longer read course/exercises/, and each opens the
    folders above this Python only while it runs (:func:`passable`); test workers (pytest-xdist) would run them at
    once."""
    import fcntl

    if _held["depth"] == 0:
        fd = os.open(CLASS_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        _held["fd"] = fd
    _held["depth"] += 1
    try:
        yield
    finally:
        _held["depth"] -= 1
        if _held["depth"] == 0:
            os.close(_held["fd"])  # and the lock with it
            _held["fd"] = -1


@contextlib.contextmanager
def passable():
    """Let other users through the folders above this Python (a pyenv under /root, 0700) while the class runs:
    o+x only (enter, not list), the modes restored after. ``make hub`` itself refuses and says so instead."""
    closed = hub.unreachable(hub.runtime_paths())
    modes = {p: p.stat().st_mode & 0o7777 for p in closed}
    try:
        for p, mode in modes.items():
            p.chmod(mode | 0o001)
        yield
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


@contextlib.contextmanager
def running_hub(prefix: str, n_students: int, *, keep_root: bool = False, warm_only: list[str] | None = None,
                **options):
    """A hub for a throw-away class of ``n_students``; users, processes and files removed afterwards."""
    with one_class_at_a_time():
        root = Path(tempfile.mkdtemp(prefix=f"tensoradbook-{prefix}-"))
        root.chmod(0o755)  # the users reach the exchange and the configuration below it
        settings_path = write_settings(root, prefix, n_students, **options)
        the_hub = Hub(settings_path, root / "hub.log")
        # users of this name a run that was killed left behind (their homes hold a fetched assignment): gone first
        remove_class_users(the_hub.settings)
        try:
            with passable():
                the_hub.start(warm_only=warm_only)
                yield the_hub
        finally:
            the_hub.stop()
            remove_class_users(the_hub.settings)
            if not keep_root:
                shutil.rmtree(root, ignore_errors=True)


def remove_class_users(settings: hub.HubSettings) -> None:
    """The class's users and homes removed, their processes (servers, then kernels they were starting) killed
    first: ``userdel`` refuses a user who still runs one."""
    names = set(settings.usernames())
    for _ in range(3):
        kill_pids(user_pids(names))
        time.sleep(0.5)
    hub.remove_users(settings)
    left = [name for name in names if _exists(name)]
    assert not left, f"userdel left these users of the class: {left}"


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


class Student:
    """One user of the hub, over HTTP: the login form, the hub's REST API, their server through the proxy."""

    def __init__(self, hub_url: str, name: str, secret: str | None = None):
        self.hub_url, self.name = hub_url, name
        self.secret = secret or password(name)
        self.session = requests.Session()
        self.token: str | None = None

    @property
    def server_url(self) -> str:
        return f"{self.hub_url}/user/{self.name}"

    def _xsrf(self) -> str:
        return self.session.cookies.get("_xsrf", path="/hub/") or self.session.cookies.get("_xsrf") or ""

    def login(self, secret: str | None = None) -> bool:
        """The login form, as a browser posts it; True when the hub let us in."""
        self.session.get(f"{self.hub_url}/hub/login", timeout=60)
        r = self.session.post(f"{self.hub_url}/hub/login?next=", timeout=120, allow_redirects=False,
                              data={"username": self.name, "password": secret or self.secret, "_xsrf": self._xsrf()})
        return r.status_code == 302 and "/hub/login" not in r.headers.get("Location", "/hub/login")

    def hub_api(self, method: str, path: str, **kwargs) -> requests.Response:
        headers = kwargs.pop("headers", {})
        if self.token:
            headers["Authorization"] = f"token {self.token}"
        else:
            headers["X-XSRFToken"] = self._xsrf()
        return self.session.request(method, f"{self.hub_url}/hub/api{path}", headers=headers, timeout=120, **kwargs)

    def make_token(self) -> str:
        r = self.hub_api("POST", f"/users/{self.name}/tokens", json={"note": "test", "expires_in": 7200})
        r.raise_for_status()
        self.token = r.json()["token"]
        return self.token

    def start_server(self, timeout: float = 300) -> None:
        r = self.hub_api("POST", f"/users/{self.name}/server")
        if r.status_code not in (201, 202, 400):  # 400: already running
            raise RuntimeError(f"{self.name}: starting the server: {r.status_code} {r.text[:300]}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            model = self.hub_api("GET", f"/users/{self.name}").json()
            server = model.get("servers", {}).get("", {})
            if server.get("ready"):
                break
            time.sleep(0.5)
        # and through the proxy, as the student's requests will go (the route is added after the spawn)
        while time.monotonic() < deadline:
            with contextlib.suppress(requests.RequestException):
                if self.api("GET", "/api/status", timeout=30).status_code == 200:
                    return
            time.sleep(0.5)
        raise RuntimeError(f"{self.name}: the server was not ready within {timeout:.0f} s")

    def api(self, method: str, path: str, **kwargs) -> requests.Response:
        """A request to this student's own server through the proxy, with the student's token."""
        headers = {"Authorization": f"token {self.token}", **kwargs.pop("headers", {})}
        return requests.request(method, f"{self.server_url}{path}", headers=headers,
                                timeout=kwargs.pop("timeout", 300), **kwargs)

    # nbgrader's Assignments tab, as its front-end calls it
    def list_assignments(self, course_id: str) -> list[dict]:
        r = self.api("GET", "/assignments", params={"course_id": course_id})
        r.raise_for_status()
        body = r.json()
        if not body.get("success"):
            raise RuntimeError(f"{self.name}: assignment list: {body}")
        return body["value"]

    def fetch(self, course_id: str, assignment: str) -> None:
        r = self.api("POST", "/assignments/fetch", data={"course_id": course_id, "assignment_id": assignment})
        r.raise_for_status()
        if not r.json().get("success"):
            raise RuntimeError(f"{self.name}: fetch: {r.json()}")

    def submit(self, course_id: str, assignment: str) -> None:
        r = self.api("POST", "/assignments/submit", data={"course_id": course_id, "assignment_id": assignment})
        r.raise_for_status()
        if not r.json().get("success"):
            raise RuntimeError(f"{self.name}: submit: {r.json()}")

    def read_notebook(self, path: str) -> dict:
        r = self.api("GET", f"/api/contents/{path}", params={"content": 1})
        r.raise_for_status()
        return r.json()["content"]

    def write_notebook(self, path: str, nb: dict) -> None:
        self.api("PUT", f"/api/contents/{path}", json={"type": "notebook", "format": "json",
                                                        "content": nb}).raise_for_status()

    def kernel(self) -> Kernel:
        r = self.api("POST", "/api/kernels", json={"name": "python3"})
        r.raise_for_status()
        return Kernel(self, r.json()["id"])


class Kernel:
    """A kernel of a student's server over its websocket (the messages JupyterLab sends), a connection per request:
    the server closes a websocket that does not answer its pings, which an idle client here would not."""

    def __init__(self, student: Student, kernel_id: str):
        self.student, self.id = student, kernel_id
        self.ws_url = re.sub(r"^http", "ws", student.server_url) + f"/api/kernels/{kernel_id}/channels"
        self.session = uuid.uuid4().hex

    def _connect(self, timeout: float) -> websocket.WebSocket:
        return websocket.create_connection(self.ws_url, header=[f"Authorization: token {self.student.token}"],
                                           timeout=timeout)

    def _send(self, ws: websocket.WebSocket, code: str) -> str:
        msg_id = uuid.uuid4().hex
        ws.send(json.dumps({
            "header": {"msg_id": msg_id, "username": self.student.name, "session": self.session,
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        return msg_id

    def start(self, code: str) -> None:
        """Send ``code`` and do not wait for it (an endless loop)."""
        ws = self._connect(60)
        try:
            self._send(ws, code)
        finally:
            ws.close()

    def execute(self, code: str, timeout: float = 300) -> dict:
        """Run ``code``; returns {"status", "stdout", "error"} once the kernel is idle again."""
        ws = self._connect(timeout)
        try:
            msg_id = self._send(ws, code)
            result = {"status": None, "stdout": "", "error": ""}
            idle = False
            deadline = time.monotonic() + timeout
            while not (idle and result["status"]):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.student.name}: no reply within {timeout:.0f} s to {code[:60]!r}")
                raw = ws.recv()
                if not raw:
                    raise ConnectionError(f"{self.student.name}: the kernel's websocket closed (the kernel died?)")
                if isinstance(raw, bytes):  # a message with binary buffers (a widget's comm): not one of ours
                    continue
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind = msg["header"]["msg_type"]
                if kind == "stream":
                    result["stdout"] += msg["content"].get("text", "")
                elif kind == "error":
                    result["error"] = f"{msg['content']['ename']}: {msg['content']['evalue']}"
                elif kind == "status" and msg["content"]["execution_state"] == "idle":
                    idle = True
                elif kind == "execute_reply":
                    result["status"] = msg["content"]["status"]
            return result
        finally:
            ws.close()

    def close(self) -> None:
        with contextlib.suppress(requests.RequestException):
            self.student.api("DELETE", f"/api/kernels/{self.id}", timeout=30)


def run_as(user: str, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """A command as ``user`` (setpriv, no login shell): what a student could try from a terminal."""
    entry = pwd.getpwnam(user)
    return subprocess.run(["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups",
                           "--reset-env", *cmd], capture_output=True, text=True, timeout=timeout,
                          cwd=entry.pw_dir)

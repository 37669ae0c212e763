"""The class server: JupyterHub with nbgrader's multi-user exchange, one Unix user per student (``make hub``).

Everything a lecturer sets is in ``hub/course.toml`` (:func:`load_settings`); ``hub/jupyterhub_config.py`` reads it
through this module. ``python -m classroom.hub serve`` (``make hub``), as root:

* creates the instructors and the students of the CSV as Unix users with private homes (0700), the instructors
  in one group (``<course id>-staff``);
* lays out nbgrader's exchange with the modes nbgrader itself gives it (root 0777 plus the sticky bit, so no one
  removes another's folder; ``<course>/outbound`` 0755; ``<course>/inbound`` 2733: students write into it but cannot
  list or read it, each submission in a folder named with a random suffix; ``<course>/feedback`` 0711, files named
  by a hash of the submission);
* copies ``course/`` (sources, ``nbgrader_config.py``) to the course directory, owned by the instructors, 0700;
* writes the user servers' Jupyter configuration per role (``paths.jupyter``): students get the Assignments tab
  and Validate but no formgrader or "create assignment" (and none of the server extensions they never use);
  instructors get the formgrader in their own server (not as a hub service, whose proxying is what 404s in
  nbgrader's tracker), rooted in the course directory; both get a ``python3`` kernel that runs under a CPU-time
  limit;
* warms the shared kernel cache (``python -m classroom.warm_cache``) so that no student compiles a kernel;
* then starts JupyterHub, its database, cookie secret and passwords in ``paths.state`` (root, 0700).

``python -m classroom.hub setup`` does all but the last; ``remove-users`` removes the CSV's users again;
``start-servers``, with the hub running, starts every student's server ahead of a lecture (:func:`start_servers`).
"""

from __future__ import annotations

import argparse
import csv
import grp
import importlib.util
import json
import os
import pwd
import re
import resource
import secrets
import shutil
import stat
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from classroom import exchange
from classroom.paths import REPO

HUB = REPO / "hub"
DEFAULT_SETTINGS = HUB / "course.toml"
#: The environment variable that names another settings file (the tests and the benchmark use their own).
SETTINGS_ENV = "TENSORADBOOK_HUB_SETTINGS"
#: configurable-http-proxy, fetched from the npm registry at install time into the environment (never global).
PROXY_VERSION = "5.3.0"
PROXY_PREFIX = Path(sys.prefix) / "share" / "tensoradbook" / "configurable-http-proxy"
PROXY = PROXY_PREFIX / "node_modules" / ".bin" / "configurable-http-proxy"
AUTHENTICATORS = ("native", "dummy-testing-only", "oauth", "lti13")
USERNAME = re.compile(r"^[a-z_][a-z0-9_-]{0,30}$")
_UNITS = {"": 1, "K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}
#: The server extensions a student's server does not load: nbgrader's instructor side, and what a student never
#: opens but every server start paid for in imports (the language-server proxy, with no language server installed
#: for the students; Voila's /voila pages, the demos being ``make demo``'s; MathJax 2 for nbgrader's formgrader).
STUDENT_SERVER_EXTENSIONS_OFF = ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list",
                                 "jupyter_lsp", "voila.server_extension", "jupyter_server_mathjax")


def parse_bytes(text: str) -> int:
    """``"1G"`` -> 1073741824 (K, M, G, T are powers of 1024; a plain number is bytes)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", str(text), re.IGNORECASE)
    if not match:
        raise ValueError(f"not an amount of memory: {text!r} (e.g. 1G, 512M)")
    return int(float(match.group(1)) * _UNITS[match.group(2).upper()])


@dataclass(frozen=True)
class Student:
    username: str
    first_name: str
    last_name: str
    email: str


@dataclass(frozen=True)
class HubSettings:
    """``hub/course.toml``, checked, with paths made absolute."""

    path: Path
    course_id: str
    instructors: tuple[str, ...]
    students_csv: Path
    ip: str
    port: int
    hub_port: int
    proxy_api_port: int
    user_ports: int
    authenticator: str
    exchange: Path
    course: Path
    kernel_cache: Path
    jupyter: Path
    state: Path
    memory: str
    memory_bytes: int
    kernel_cpu_seconds: int
    processes: int
    cull_idle_seconds: int
    threads: int

    @property
    def staff_group(self) -> str:
        return f"{self.course_id}-staff"[:32]

    def students(self) -> list[Student]:
        with open(self.students_csv, newline="") as f:
            rows = list(csv.DictReader(f))
        students = [Student(r["username"].strip(), (r.get("first_name") or "").strip(),
                            (r.get("last_name") or "").strip(), (r.get("email") or "").strip()) for r in rows]
        for s in students:
            if not USERNAME.match(s.username):
                raise ValueError(f"{self.students_csv}: {s.username!r} is not a Unix user name (lower-case letters, "
                                 "digits, _ and -, at most 31)")
        clash = {s.username for s in students} & set(self.instructors)
        if clash:
            raise ValueError(f"{sorted(clash)} are both students and instructors")
        return students

    def usernames(self) -> list[str]:
        return list(self.instructors) + [s.username for s in self.students()]

    def role(self, username: str) -> str:
        return "instructor" if username in self.instructors else "student"


def load_settings(path: str | os.PathLike | None = None) -> HubSettings:
    """Read the settings: ``path``, else ``$TENSORADBOOK_HUB_SETTINGS``, else ``hub/course.toml``."""
    path = Path(path or os.environ.get(SETTINGS_ENV) or DEFAULT_SETTINGS).resolve()
    with open(path, "rb") as f:
        data = tomllib.load(f)
    course, server, paths, limits = (data.get(k, {}) for k in ("course", "server", "paths", "limits"))

    def where(value: str) -> Path:
        return (path.parent / value).resolve()

    settings = HubSettings(
        path=path,
        course_id=course.get("id", "tensoradbook"),
        instructors=tuple(course.get("instructors", ["instructor"])),
        students_csv=where(course.get("students", "students.csv")),
        ip=server.get("ip", "127.0.0.1"),
        port=int(server.get("port", 8000)),
        hub_port=int(server.get("hub_port", 8081)),
        proxy_api_port=int(server.get("proxy_api_port", 8001)),
        user_ports=int(server.get("user_ports", 20000)),
        authenticator=server.get("authenticator", "native"),
        exchange=where(paths.get("exchange", "/srv/tensoradbook/exchange")),
        course=where(paths.get("course", "/srv/tensoradbook/course")),
        kernel_cache=where(paths.get("kernel_cache", "/srv/tensoradbook/kernel-cache")),
        jupyter=where(paths.get("jupyter", "/srv/tensoradbook/jupyter")),
        state=where(paths.get("state", "/var/lib/tensoradbook-hub")),
        memory=str(limits.get("memory", "1G")),
        memory_bytes=parse_bytes(limits.get("memory", "1G")),
        kernel_cpu_seconds=int(limits.get("kernel_cpu_seconds", 3600)),
        processes=int(limits.get("processes", 256)),
        cull_idle_seconds=int(limits.get("cull_idle_seconds", 3600)),
        threads=int(limits.get("threads", 1)),
    )
    if settings.authenticator not in AUTHENTICATORS:
        raise ValueError(f"{path}: server.authenticator is {settings.authenticator!r}, not one of {AUTHENTICATORS}")
    for name in settings.instructors:
        if not USERNAME.match(name):
            raise ValueError(f"{path}: instructor {name!r} is not a Unix user name")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", settings.course_id):
        raise ValueError(f"{path}: course.id {settings.course_id!r}: letters, digits, _ and - only")
    return settings


# --- what each user server gets ---------------------------------------------------------------------------

def thread_environment(threads: int) -> dict[str, str]:
    """One thread per student by default: on a shared machine, N students each starting a pool of all cores'
    threads only fight over the cores (and each idle pool costs memory). Numba's ``workqueue`` layer is its own,
    needs neither TBB nor an OpenMP runtime in the process, and is all a single thread needs."""
    n = str(threads)
    return {"NUMBA_NUM_THREADS": n, "NUMBA_THREADING_LAYER": "workqueue", "OMP_NUM_THREADS": n,
            "OPENBLAS_NUM_THREADS": n, "MKL_NUM_THREADS": n, "NUMEXPR_NUM_THREADS": n,
            # glibc gives each thread a malloc arena of 64 MB of address space; the memory limit counts it
            "MALLOC_ARENA_MAX": "2"}


def user_environment(settings: HubSettings, username: str) -> dict[str, str]:
    """The environment of ``username``'s server (and so of its kernels)."""
    role = settings.role(username)
    env = thread_environment(settings.threads)
    env.update({
        "TENSORADBOOK_SHARED_CACHE": str(settings.kernel_cache),
        # the course's nbgrader_config.py and the kernels' limits wrapper import classroom/ from the repository
        "PYTHONPATH": str(REPO),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
        "JUPYTER_CONFIG_PATH": str(settings.jupyter / role),
        "JUPYTER_PATH": str(settings.jupyter / "share"),
        "TENSORADBOOK_EXCHANGE": str(settings.exchange),
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    })
    return env


def user_port(settings: HubSettings, username: str) -> int:
    """The loopback port of a user's server: ``server.user_ports`` plus the user's place in the class, below the
    kernel's ephemeral ports, where no kernel's or client's socket takes it between JupyterHub's pick and the
    server's bind (a random pick for forty servers and their kernels at once collided: a student routed to another's
    server, a kernel that could not bind); 0 (JupyterHub picks one at random) where that port is taken."""
    import socket

    port = settings.user_ports + settings.usernames().index(username)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return 0
    return port


def notebook_dir(settings: HubSettings, username: str) -> str:
    """Students start in their home; instructors in the course directory (the formgrader wants the course
    inside the server's root)."""
    return str(settings.course) if settings.role(username) == "instructor" else pwd.getpwnam(username).pw_dir


def apply_server_limits(settings: HubSettings) -> None:
    """Hard limits for a user server and everything it starts, set as root before the switch to the user (so the
    user cannot raise them): memory per process (RLIMIT_DATA: heap and private mappings, what a process really
    fills; the address space would also count shared libraries and reservations) and processes per user."""
    resource.setrlimit(resource.RLIMIT_DATA, (settings.memory_bytes, settings.memory_bytes))
    resource.setrlimit(resource.RLIMIT_NPROC, (settings.processes, settings.processes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def kernel_main(argv: list[str]) -> None:
    """``python -m classroom.hub kernel --cpu-seconds N -- <ipykernel args>``: the hub's python3 kernel, an
    ipykernel under a CPU-time limit (SIGXCPU at N seconds, killed at N + 5): a cell that loops forever is
    stopped, the student restarts the kernel, the others never noticed more than its share of a core."""
    parser = argparse.ArgumentParser(prog="python -m classroom.hub kernel")
    parser.add_argument("--cpu-seconds", type=int, required=True)
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    rest = args.rest[1:] if args.rest[:1] == ["--"] else args.rest
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = args.cpu_seconds if hard == resource.RLIM_INFINITY else min(args.cpu_seconds, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5 if hard == resource.RLIM_INFINITY else hard))
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *rest])


# --- setting up the machine (root) -----------------------------------------------------------------------

def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise SystemExit(
            f"error: {what} needs root: it creates the course's Unix users (useradd), the exchange and the course "
            "directory with their owners and modes, and JupyterHub's LocalProcessSpawner switches to each user. "
            "Run it as root (sudo make hub), on a machine (or VM, container) that is the class server.")


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def ensure_group(name: str) -> int:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        _run("groupadd", name)
        return grp.getgrnam(name).gr_gid


def ensure_user(name: str, comment: str = "", groups: tuple[str, ...] = ()) -> pwd.struct_passwd:
    """A Unix user with a home only they can read (0700), no password (they log in through the hub)."""
    try:
        user = pwd.getpwnam(name)
    except KeyError:
        _run("useradd", "--create-home", "--shell", "/bin/bash", "--comment", comment[:60] or name,
             *(("--groups", ",".join(groups)) if groups else ()), name)
        user = pwd.getpwnam(name)
    for group in groups:
        if name not in grp.getgrnam(group).gr_mem:
            _run("usermod", "--append", "--groups", group, name)
    home = Path(user.pw_dir)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, user.pw_uid, user.pw_gid)
    home.chmod(0o700)
    return user


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    """The tree to ``uid``:``gid``, inside folders the instructors can change: never through a link, never a file
    with another hard link (:func:`classroom.exchange.chown_tree`)."""
    exchange.chown_tree(path, uid, gid)


def _mkdir(path: Path, mode: int, uid: int = 0, gid: int = 0) -> None:
    """The folder, its owner and its mode (past the umask), set on the folder itself: a link that an instructor
    put in its place (the course's folder in the exchange is theirs) is refused, never followed."""
    exchange.ensure_folder(path, mode, uid, gid)


def setup_exchange(settings: HubSettings) -> None:
    """nbgrader's exchange as nbgrader's release lays it out, made before the first release so a student who
    fetches early is told "no assignments" rather than "the exchange does not exist"."""
    staff = grp.getgrnam(settings.staff_group).gr_gid
    owner = pwd.getpwnam(settings.instructors[0]).pw_uid
    shared = len(settings.instructors) > 1
    for parent in reversed(settings.exchange.parents):
        if not parent.exists():
            _mkdir(parent, 0o755)
    _mkdir(settings.exchange, 0o1777)
    course = settings.exchange / settings.course_id
    _mkdir(course, 0o2775 if shared else 0o755, owner, staff)
    _mkdir(course / "outbound", 0o2775 if shared else 0o755, owner, staff)
    _mkdir(course / "inbound", 0o2773 if shared else 0o2733, owner, staff)
    _mkdir(course / "feedback", 0o2771 if shared else 0o711, owner, staff)  # files named by a hash, not listed


def setup_course(settings: HubSettings) -> None:
    """The instructors' copy of course/: only the instructors reach it (0700; 2770 for several, by group).

    The folder is the instructors' once made: root writes into it only on a descriptor of the folder, a new file
    renamed over the old one (never written through a link an instructor put there), and hands over what it made
    without following links (:mod:`classroom.exchange`)."""
    user = pwd.getpwnam(settings.instructors[0])
    staff = grp.getgrnam(settings.staff_group).gr_gid
    shared = len(settings.instructors) > 1
    target = settings.course
    folder = exchange.open_folder(target, create=0o700)
    try:
        # the formgrader reads this file last: it must name this course's id and exchange (rewritten at every setup)
        marker = "\n# the class server (make hub):"
        old = exchange.read_file(folder, "nbgrader_config.py")
        text = (old.decode("utf-8", errors="replace") if old is not None
                else (REPO / "course" / "nbgrader_config.py").read_text()).split(marker)[0]
        exchange.replace_file(folder, "nbgrader_config.py", (
            f"{text}{marker} this course's id and exchange, from {settings.path}\n"
            f"c.CourseDirectory.course_id = {settings.course_id!r}\n"
            f"c.Exchange.root = {str(settings.exchange)!r}\n").encode(), 0o664 if shared else 0o644,
            user.pw_uid, staff)
        exchange.copy_tree(REPO / "course" / "source", folder, "source", user.pw_uid, staff)  # once
        os.fchmod(folder, 0o2770 if shared else 0o700)
    finally:
        os.close(folder)
    _chown_tree(target, user.pw_uid, staff)
    for parent in target.parents:
        if not parent.stat().st_mode & 0o001 and parent.stat().st_uid == 0 and parent != Path("/"):
            parent.chmod(parent.stat().st_mode | 0o011)  # the instructors must reach it (not list it)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o644)


def setup_jupyter(settings: HubSettings) -> None:
    """The user servers' configuration, per role (``JUPYTER_CONFIG_PATH``), and the hub's python3 kernel
    (``JUPYTER_PATH``): read-only to the users, nothing in the machine-wide /etc/jupyter."""
    root = settings.jupyter
    nbgrader_common = (f"c.CourseDirectory.course_id = {settings.course_id!r}\n"
                       f"c.Exchange.root = {str(settings.exchange)!r}\n")
    kernel_culling = {"MappingKernelManager": {"cull_idle_timeout": settings.cull_idle_seconds,
                                               "cull_interval": 60, "cull_connected": False},
                      # kernels on Unix sockets in the user's private runtime folder, not on TCP ports: forty
                      # servers each picking free ports for their kernels at once picked the same one (a kernel
                      # sent another's messages, "Invalid Signature", and died)
                      "KernelManager": {"transport": "ipc"}}
    quiet_lab = {"LabApp": {"news_url": None, "check_for_updates_class": "jupyterlab.NeverCheckForUpdate"}}
    no_news = json.dumps({"@jupyterlab/apputils-extension:notification": {"fetchNews": "false",
                                                                          "checkForUpdates": False}}, indent=1)
    # students: the Assignments tab and Validate; no formgrader, course list or "create assignment"
    _write(root / "student" / "nbgrader_config.py", "# written by `make hub` (classroom/hub.py)\n" + nbgrader_common)
    _write(root / "student" / "jupyter_server_config.json", json.dumps({
        "ServerApp": {"jpserver_extensions": {name: False for name in STUDENT_SERVER_EXTENSIONS_OFF}},
        **kernel_culling, **quiet_lab}, indent=1))
    for role in ("student", "instructor"):  # no "would you like news?" on a server without a network
        _write(root / role / "labconfig" / "default_setting_overrides.json", no_news)
    _write(root / "student" / "labconfig" / "page_config.json", json.dumps({"disabledExtensions": {
        "@jupyter/nbgrader:formgrader": True, "@jupyter/nbgrader:create-assignment": True,
        "@jupyter/nbgrader:course-list": True}}, indent=1))
    # instructors: the formgrader in their own server, on the course directory
    _write(root / "instructor" / "nbgrader_config.py", "# written by `make hub` (classroom/hub.py)\n"
           + nbgrader_common + f"c.CourseDirectory.root = {str(settings.course)!r}\n"
           + f"c.CourseDirectory.groupshared = {len(settings.instructors) > 1}\n")
    _write(root / "instructor" / "jupyter_server_config.json", json.dumps({**kernel_culling, **quiet_lab}, indent=1))
    kernel = {"argv": [sys.executable, "-m", "classroom.hub", "kernel", "--cpu-seconds",
                       str(settings.kernel_cpu_seconds), "--", "-f", "{connection_file}"],
              "display_name": "Python 3 (ipykernel)", "language": "python", "metadata": {"debugger": True}}
    _write(root / "share" / "kernels" / "python3" / "kernel.json", json.dumps(kernel, indent=1))
    for path in [root, *root.rglob("*")]:
        if path.is_dir():
            path.chmod(0o755)


def install_proxy(npm: str = "npm") -> Path | None:
    """configurable-http-proxy into the environment (``npm install --prefix``), once per version."""
    if importlib.util.find_spec("jupyterhub") is None:
        print("classroom.hub: jupyterhub is not installed (the hub extra): no proxy fetched")
        return None
    stamp = PROXY_PREFIX / ".version"
    if PROXY.exists() and stamp.exists() and stamp.read_text() == PROXY_VERSION:
        return PROXY
    if shutil.which(npm) is None:
        raise SystemExit("error: npm is needed once, at install time, to fetch configurable-http-proxy (JupyterHub's "
                         "proxy): apt-get install -y npm")
    PROXY_PREFIX.mkdir(parents=True, exist_ok=True)
    subprocess.run([npm, "install", "--silent", "--no-fund", "--no-audit", "--prefix", str(PROXY_PREFIX),
                    f"configurable-http-proxy@{PROXY_VERSION}"], check=True, stdout=subprocess.DEVNULL)
    stamp.write_text(PROXY_VERSION)
    return PROXY


def warm_cache(settings: HubSettings, only: list[str] | None = None) -> None:
    """The shared kernel cache: every chapter's and demo's kernels (or those of ``only``, file stems) compiled
    once (classroom/warm_cache.py; a second run with nothing changed does nothing)."""
    if importlib.util.find_spec("classroom.warm_cache") is None:
        print("note: classroom/warm_cache.py is not there yet: the shared kernel cache is not warmed, "
              "students compile their own kernels")
        settings.kernel_cache.mkdir(parents=True, exist_ok=True)
        settings.kernel_cache.chmod(0o755)
        return
    subprocess.run([sys.executable, "-m", "classroom.warm_cache", "--into", str(settings.kernel_cache),
                    *(["--only", *only] if only else [])], check=True, cwd=REPO)


def unreachable(paths: list[Path]) -> list[Path]:
    """The folders above ``paths`` that other users cannot enter (no o+x): the students' servers run this
    environment's Python and import the repository, as the students."""
    found = []
    for path in paths:
        for folder in [*reversed(Path(os.path.realpath(path)).parents), Path(os.path.realpath(path))]:
            if folder.is_dir() and not folder.stat().st_mode & stat.S_IXOTH and folder not in found:
                found.append(folder)
    return found


def runtime_paths() -> list[Path]:
    """What every user server runs: the interpreter (its real place: a venv links to it), the environment, the
    repository."""
    return [Path(os.path.realpath(sys.executable)).parent, Path(sys.prefix), REPO]


#: What in the repository holds the solutions: the course (its exercise files and sources), the tests that run them,
#: the static site's solution toggles and git's history of all of them. The students' servers import the repository,
#: so it stays readable; these parts are for the instructors (the staff group) and root only.
SOLUTIONS = ("course", "tests", ".git", "site", "work")


def compiled_solutions() -> list[Path]:
    """The compiled copies of ``classroom/course.py`` that Python may have left in ``classroom/__pycache__``: before
    the exercise files (course/exercises/, read as text and never compiled), that module held every solution and
    hidden test, and a class server set up then may keep such a copy, as readable as the source was."""
    return sorted((REPO / "classroom" / "__pycache__").glob("course.*.pyc"))


def hide_solutions(settings: HubSettings) -> list[Path]:
    """Give :data:`SOLUTIONS` and their compiled copies (:func:`compiled_solutions`) to the staff group and take
    every permission of other users and the group's writing off them: a folder that others cannot enter hides all
    below it, and nothing root runs is the instructors' to change. Python writes a later compiled copy with its
    source's mode, so it stays hidden too (and ``make assignments`` and ``make grade`` write none: ``-B``)."""
    gid = grp.getgrnam(settings.staff_group).gr_gid
    hidden = []
    for path in [*(REPO / name for name in SOLUTIONS), *compiled_solutions()]:
        if path.exists() and not path.is_symlink():
            os.chown(path, -1, gid, follow_symlinks=False)
            path.chmod(path.stat().st_mode & ~0o027)
            hidden.append(path)
    return hidden


def setup(settings: HubSettings, *, warm: bool = True, warm_only: list[str] | None = None) -> None:
    require_root("setting up the class server")
    closed = unreachable(runtime_paths())
    if closed:
        raise SystemExit(
            "error: the students' servers run as the students, but they cannot enter "
            + ", ".join(f"{p} (mode {p.stat().st_mode & 0o7777:o})" for p in closed)
            + f", on the way to this Python ({os.path.realpath(sys.executable)}), its environment or the repository. "
            "Install Python and the repository where every user can read them (e.g. under /opt or /usr/local), or "
            "let others through without listing: chmod o+x " + " ".join(str(p) for p in closed))
    ensure_group(settings.staff_group)
    for name in settings.instructors:
        ensure_user(name, f"{settings.course_id} instructor", groups=(settings.staff_group,))
    students = settings.students()
    for s in students:
        ensure_user(s.username, f"{s.first_name} {s.last_name}".strip())
    hide_solutions(settings)
    setup_exchange(settings)
    setup_course(settings)
    setup_jupyter(settings)
    _mkdir(settings.state, 0o700)
    if warm:
        warm_cache(settings, warm_only)
    elif not settings.kernel_cache.exists():
        _mkdir(settings.kernel_cache, 0o755)
    print(f"{len(settings.instructors)} instructor(s), {len(students)} student(s); exchange {settings.exchange}, "
          f"course {settings.course}, kernel cache {settings.kernel_cache}, hub state {settings.state}")


def remove_users(settings: HubSettings) -> None:
    """Remove the CSV's students and the instructors (their homes too): the end of a test or a course."""
    require_root("removing the course's users")
    for name in [s.username for s in settings.students()] + list(settings.instructors):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        subprocess.run(["userdel", "--remove", name], check=False, stderr=subprocess.DEVNULL)
    subprocess.run(["groupdel", settings.staff_group], check=False, stderr=subprocess.DEVNULL)


def secret_file(settings: HubSettings, name: str, nbytes: int = 32) -> str:
    """A secret kept in the state directory (the proxy's token: a restarted hub finds its proxy again)."""
    path = settings.state / name
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(nbytes))
    if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SystemExit(f"error: {path} is readable by others than root: chmod 600 it (and renew it)")
    return path.read_text().strip()


#: The hub's service that starts the students' servers before a lecture (``start-servers``), and its rights.
STARTER = "class-starter"
STARTER_SCOPES = ["servers", "read:users"]


def _hub_api(settings: HubSettings, method: str, path: str) -> tuple[int, dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{settings.hub_port}/hub/api{path}", method=method,
                                     headers={"Authorization": f"token {secret_file(settings, 'starter_token')}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, {}


def start_servers(settings: HubSettings, names: list[str], *, at_once: int, timeout: float = 600) -> None:
    """Start these users' servers through JupyterHub's REST API, ``at_once`` starting together (the machine's cores:
    more only queue for them), each batch until every server answers: run before a lecture, a student who logs in
    finds their server running and pays for a kernel alone. The servers wait for them as idle servers do, until
    the culler's ``limits.cull_idle_seconds``."""
    for first in range(0, len(names), at_once):
        batch = names[first:first + at_once]
        for name in batch:
            status, _ = _hub_api(settings, "POST", f"/users/{name}/server")
            if status not in (201, 202, 400):  # 400: already running
                raise RuntimeError(f"starting {name}'s server: HTTP {status} (is the hub running?)")
        deadline = time.monotonic() + timeout
        waiting = set(batch)
        while waiting:
            if time.monotonic() > deadline:
                raise RuntimeError(f"servers not ready within {timeout:.0f} s: {sorted(waiting)}")
            time.sleep(0.5)
            waiting = {n for n in waiting if not _hub_api(settings, "GET", f"/users/{n}")[1]
                       .get("servers", {}).get("", {}).get("ready")}
        print(f"{first + len(batch)}/{len(names)} servers running", flush=True)


def jupyterhub_command(settings: HubSettings) -> list[str]:
    return [str(Path(sys.executable).parent / "jupyterhub"), "-f", str(HUB / "jupyterhub_config.py")]


def serve(settings: HubSettings, *, warm: bool = True, warm_only: list[str] | None = None) -> None:
    """Set up, then replace this process by JupyterHub (in the state directory, with these settings)."""
    setup(settings, warm=warm, warm_only=warm_only)
    if not PROXY.exists():
        install_proxy()
    os.environ[SETTINGS_ENV] = str(settings.path)
    os.chdir(settings.state)
    print(f"JupyterHub on http://{settings.ip}:{settings.port}/ (Ctrl-C to stop; students' servers keep running "
          "and are found again at the next start)", flush=True)
    command = jupyterhub_command(settings)
    os.execv(command[0], command)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["kernel"]:
        kernel_main(argv[1:])
        return 0
    parser = argparse.ArgumentParser(prog="python -m classroom.hub", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["serve", "setup", "remove-users", "install-proxy", "settings",
                                            "start-servers"])
    parser.add_argument("--settings", type=Path, default=None,
                        help=f"the settings file (default: ${SETTINGS_ENV} or hub/course.toml)")
    parser.add_argument("--no-warm", action="store_true", help="do not warm the shared kernel cache")
    parser.add_argument("--warm-only", nargs="+", metavar="STEM", help="warm these chapters or demos only")
    parser.add_argument("--at-once", type=int, default=os.cpu_count(), help="start-servers: how many start together")
    parser.add_argument("--users", nargs="+", metavar="NAME", help="start-servers: these (default: every student)")
    args = parser.parse_args(argv)
    if args.command == "install-proxy":
        install_proxy()
        return 0
    settings = load_settings(args.settings)
    if args.command == "settings":
        print(json.dumps({k: str(v) for k, v in settings.__dict__.items()}, indent=1))
    elif args.command == "setup":
        setup(settings, warm=not args.no_warm, warm_only=args.warm_only)
    elif args.command == "start-servers":
        start_servers(settings, args.users or [s.username for s in settings.students()], at_once=args.at_once)
    elif args.command == "remove-users":
        remove_users(settings)
    else:
        serve(settings, warm=not args.no_warm, warm_only=args.warm_only)
    return 0


if __name__ == "__main__":
    sys.exit(main())

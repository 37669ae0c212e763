"""The class server (``make hub``, classroom/hub.py, hub/): a real JupyterHub, real Unix users, a real browser.

One hub for the module (tests/hub_support.running_hub): an instructor and :data:`N_STUDENTS` students (users
``tabst01``..., removed afterwards), the 04a assignment released into the exchange by ``python -m classroom.course
assignments --hub`` (what ``make assignments`` runs on the class server). Each test asks for the logins, servers
and submissions it reads (:func:`_ready`), whichever ran before it:

* a class: every student logs in through the login form, starts a server, fetches the assignment (one student in
  JupyterLab's Assignments tab with chromium, the others through the same endpoints), runs its cells in a kernel,
  answers (some right, some wrong, one blank) and submits; ``classroom.course grade --hub`` collects, autogrades
  and exports, and every grade is exactly the points of the right answers;
* isolation, each tried and refused: another's home, another's submission in the exchange, the instructor's
  sources and gradebook, a login with another's password, a student's server without the hub's auth, a listening
  socket beyond loopback;
* survival: a kernel that loops forever is stopped by its CPU limit and one that fills memory by the memory limit
  while the others keep working; the hub restarted finds the servers and the submissions again; and, on a class of
  one of its own, the idle culler stops a server left idle.

The settings, the user servers' environment and configuration, and the "needs root" message are tested without
root too.

Needs root (it creates Unix users): skipped with the reason otherwise, failed instead when CI=true. Generous hang
timeouts, no duration asserted.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
import websocket

from classroom import assignments
from classroom import hub
from tests.browser_support import IN_CI, chromium, offline_context
from tests.hub_support import Student, password, run_as, running_hub

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = REPO / "screenshots"
PREFIX = "tab"
#: at least 20 (the issue); HUB_TEST_STUDENTS=3 for a quick look while changing the hub
N_STUDENTS = int(os.environ.get("HUB_TEST_STUDENTS", "20"))
CHAPTER = "04a_integer_equations"
NOTEBOOK = f"{CHAPTER}/{CHAPTER}.ipynb"
#: CPU seconds per kernel in this class: a kernel of the class needs a few, the endless loop is stopped soon
KERNEL_CPU_SECONDS = 40
WORKERS = 6  # students acting at once: enough to overlap, few enough for 2 cores


def _require_root():
    if os.geteuid() != 0:
        why = "the hub tests create Unix users and run JupyterHub's LocalProcessSpawner: they need root"
        if IN_CI:
            pytest.fail(f"CI=true and {why}", pytrace=False)
        pytest.skip(why)


@pytest.fixture(scope="module")
def klass():
    _require_root()
    with running_hub(PREFIX, N_STUDENTS, kernel_cpu_seconds=KERNEL_CPU_SECONDS) as the_hub:
        s = the_hub.settings
        proc = subprocess.run([sys.executable, "-m", "classroom.course", "assignments", CHAPTER, "--hub",
                                  "--settings", str(s.path)], cwd=REPO, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        yield the_hub


def _students(the_hub) -> list[str]:
    return [st.username for st in the_hub.settings.students()]


def _ready(the_hub, name: str, *, submitted: bool = False) -> Student:
    """``name`` logged in (the first login sets the password), with a token and a running server, and where asked
    the chapter fetched and submitted (once: a submission of the class's run counts)."""
    student = Student(the_hub.url, name)
    assert student.login(), f"{name} could not log in"
    student.make_token()
    student.start_server()
    if submitted:
        course_id = the_hub.settings.course_id
        status = {a["assignment_id"]: a["status"] for a in student.list_assignments(course_id)}.get(CHAPTER)
        if status == "released":
            student.fetch(course_id, CHAPTER)
        if status != "submitted":
            student.submit(course_id, CHAPTER)
    return student


# --- the answers: right, wrong or blank per part, and the points they deserve ----------------------------

ASSIGNMENT = assignments.BY_STEM[CHAPTER]
PARTS = [(f"ex{e.number}{p.label}_answer", p) for e in ASSIGNMENT.exercises for p in e.parts]


def plan(i: int, n: int) -> dict[str, str]:
    """Student i's answer per part: "right", "wrong" or "blank" (the last student submits the release as is)."""
    if i == n - 1:
        return {grade_id: "blank" for grade_id, _ in PARTS}
    return {grade_id: ("wrong" if (i + k) % 3 == 0 else "right") for k, (grade_id, _) in enumerate(PARTS)}


def answer_cell(part, kind: str) -> str:
    if kind == "right":
        return part.solution
    if f"def {part.answer}(" in part.solution:  # a function the student writes
        return f"def {part.answer}(*args):\n    return (1, 0, 0)"
    return f"{part.answer} = (1, 2, 3)"


def deserved(choices: dict[str, str]) -> int:
    return sum(p.points for grade_id, p in PARTS if choices[grade_id] == "right")


def answer(nb: dict, choices: dict[str, str]) -> dict:
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in choices and choices[grade_id] != "blank":
            part = dict(PARTS)[grade_id]
            cell["source"] = answer_cell(part, choices[grade_id])
    return nb


def work(the_hub, name: str, choices: dict[str, str], *, fetched: bool = False) -> dict:
    """One student's session over HTTP: log in, start, fetch, run every cell, answer, submit."""
    student = Student(the_hub.url, name)
    assert student.login(), f"{name} could not log in"
    student.make_token()
    student.start_server()
    course_id = the_hub.settings.course_id
    if not fetched:
        listed = {a["assignment_id"]: a["status"] for a in student.list_assignments(course_id)}
        assert listed.get(CHAPTER) == "released", listed
        student.fetch(course_id, CHAPTER)
    nb = answer(student.read_notebook(NOTEBOOK), choices)
    kernel = student.kernel()
    outcomes = []
    try:
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
                outcomes.append(kernel.execute(source)["status"])
    finally:
        kernel.close()
    student.write_notebook(NOTEBOOK, nb)
    student.submit(course_id, CHAPTER)
    return {"name": name, "outcomes": outcomes}


def fetch_in_browser(the_hub, name: str) -> None:
    """The Assignments tab in JupyterLab: log in on the hub's page (the first login sets the password), open
    Nbgrader > Assignment List, fetch the chapter; the notebook is then in the student's home."""
    with chromium() as browser:
        context = offline_context(browser, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(f"{the_hub.url}/hub/login", timeout=120_000)
        page.fill("input[name=username]", name)
        page.fill("input[name=password]", password(name))
        page.click("input[type=submit], button[type=submit]")
        # the hub spawns the server and sends the browser on to JupyterLab
        page.wait_for_url(f"**/user/{name}/lab**", timeout=300_000)
        page.wait_for_selector(".jp-LabShell", timeout=180_000)
        page.get_by_text("Nbgrader", exact=True).first.click(timeout=60_000)
        page.get_by_text("Assignment List", exact=True).first.click(timeout=60_000)
        row = page.locator("#released_assignments_list .list_item, .jp-Nbgrader-released .list_item, "
                           f"div.list_item:has-text('{CHAPTER}')").filter(has_text=CHAPTER).first
        row.wait_for(state="visible", timeout=120_000)
        SCREENSHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "hub-assignments.png"))
        row.get_by_role("button", name="Fetch").click(timeout=60_000)
        page.locator(f"#fetched_assignments_list :text('{CHAPTER}'), "
                     f"div.list_item:has-text('{CHAPTER}') :text('Submit')").first.wait_for(timeout=120_000)
        assert not context.blocked, context.blocked
        context.close()


def test_class_end_to_end(klass):
    names = _students(klass)
    plans = {name: plan(i, len(names)) for i, name in enumerate(names)}
    fetch_in_browser(klass, names[0])
    assert Path(os.path.expanduser(f"~{names[0]}"), NOTEBOOK).exists()
    with ThreadPoolExecutor(WORKERS) as pool:
        done = list(pool.map(lambda n: work(klass, n, plans[n], fetched=(n == names[0])), names))
    for result in done:
        # the setup cell always runs; a wrong or blank answer fails its test cell, and execution stops there
        assert result["outcomes"][0] == "ok", result
    submitted = [p for p in (klass.settings.exchange / klass.settings.course_id / "inbound").iterdir()]
    assert {p.name.split("+")[0] for p in submitted} == set(names)

    # the instructor: their server has the formgrader on the course
    instructor = Student(klass.url, klass.settings.instructors[0])
    assert instructor.login()
    instructor.make_token()
    instructor.start_server()
    r = instructor.api("GET", "/formgrader/api/assignments")
    assert r.status_code == 200 and CHAPTER in r.text, (r.status_code, r.text[:500])
    # make grade on the class server: collect, autograde, feedback, export
    proc = subprocess.run([sys.executable, "-m", "classroom.course", "grade", CHAPTER, "--hub",
                              "--settings", str(klass.settings.path)], cwd=REPO, capture_output=True, text=True,
                             timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(klass.settings.course / "grades.csv", newline="") as f:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(f)
                  if row["assignment"] == CHAPTER}
    assert scores == {name: float(deserved(plans[name])) for name in names}
    assert scores[names[-1]] == 0.0 and max(scores.values()) < ASSIGNMENT.points + 0.5
    # the feedback went back through the exchange, owned by the instructor, and the course stays private
    assert any((klass.settings.exchange / klass.settings.course_id / "feedback").iterdir())
    assert klass.settings.course.stat().st_mode & 0o077 == 0
    # the formgrader, which reads the course's own nbgrader_config.py last, works on this course's exchange
    config = (klass.settings.course / "nbgrader_config.py").read_text()
    assert f"c.CourseDirectory.course_id = {klass.settings.course_id!r}" in config


# --- isolation ---------------------------------------------------------------------------------------------

def _refused(user: str, *cmd: str) -> str:
    proc = run_as(user, *cmd)
    assert proc.returncode != 0, f"{user} could run {cmd}: {proc.stdout[:300]}"
    return proc.stderr


def test_students_cannot_read_each_other(klass):
    a, b = _students(klass)[:2]
    _ready(klass, b, submitted=True)
    home_b = os.path.expanduser(f"~{b}")
    assert "Permission denied" in _refused(a, "ls", home_b)
    assert "Permission denied" in _refused(a, "cat", f"{home_b}/{NOTEBOOK}")
    # the exchange's inbound: written into, never listed; a submission's folder carries a random suffix
    inbound = klass.settings.exchange / klass.settings.course_id / "inbound"
    assert "Permission denied" in _refused(a, "ls", str(inbound))
    theirs = next(p for p in inbound.iterdir() if p.name.startswith(f"{b}+"))
    guessed = "+".join(theirs.name.split("+")[:3]) + "+"
    _refused(a, "cat", str(inbound / guessed / f"{CHAPTER}.ipynb"))
    # nbgrader's own cache of a submission is in the student's private home
    assert oct(Path(home_b).stat().st_mode & 0o777) == oct(0o700)


def test_students_cannot_read_the_course(klass):
    student = _students(klass)[0]
    course = klass.settings.course
    assert (course / "source" / NOTEBOOK).exists() and (course / "gradebook.db").exists()
    assert "Permission denied" in _refused(student, "cat", str(course / "source" / NOTEBOOK))
    assert "Permission denied" in _refused(student, "cat", str(course / "gradebook.db"))
    assert "Permission denied" in _refused(student, "ls", str(course))
    # nor the repository's copies of the solutions, though their servers import the repository
    for name in ("course/exercises/04a_integer_equations.py", "course/source", "tests/test_solutions.py", ".git/HEAD"):
        if (hub.REPO / name).exists():
            assert "Permission denied" in _refused(student, "cat", str(hub.REPO / name))
    assert run_as(student, "cat", str(hub.REPO / "tensoradbook" / "__init__.py")).returncode == 0
    # nor through their server: it runs as them
    other = Student(klass.url, student)
    assert other.login()
    other.make_token()
    r = other.api("GET", f"/api/contents{course}/source")
    assert r.status_code in (403, 404), r.status_code


def test_no_login_as_another(klass):
    a, b = _students(klass)[:2]
    assert Student(klass.url, b).login()  # b's password set (a first login would set any)
    assert not Student(klass.url, b).login(secret=password(a))
    assert not Student(klass.url, "root").login(secret=password(a))
    assert not Student(klass.url, "nosuchstudent").login(secret=password(a))


def test_servers_need_the_hubs_auth(klass):
    a, b = _students(klass)[:2]
    _ready(klass, b)
    alice = _ready(klass, a)
    # b's server through the proxy with a's token: refused
    r = alice.api("GET", "/api/status")
    assert r.status_code == 200
    import requests

    r = requests.get(f"{klass.url}/user/{b}/api/contents", headers={"Authorization": f"token {alice.token}"},
                     timeout=60, allow_redirects=False)
    assert r.status_code in (302, 403, 404), r.status_code
    # b's server directly on its loopback port, without a token: refused
    routes = requests.get(f"http://127.0.0.1:{klass.settings.proxy_api_port}/api/routes", timeout=30, headers={
        "Authorization": f"token {(klass.settings.state / 'proxy_auth_token').read_text().strip()}"}).json()
    target = routes[f"/user/{b}"]["target"]
    for path in ("/api/contents", "/api/kernels", "/lab"):
        r = requests.get(f"{target}/user/{b}{path}", timeout=60, allow_redirects=False)
        assert r.status_code in (302, 403), (path, r.status_code)
        assert "location" not in r.headers or "/hub/" in r.headers["location"]


def test_nothing_listens_beyond_loopback(klass):
    names = set(klass.settings.usernames())
    ours = {p.pid for p in psutil.process_iter(["username"]) if p.info["username"] in names}
    hub_proc = psutil.Process(klass.proc.pid)
    ours |= {hub_proc.pid, *(c.pid for c in hub_proc.children(recursive=True))}
    proxy_pid = klass.settings.state / "jupyterhub-proxy.pid"
    if proxy_pid.exists():
        ours.add(int(proxy_pid.read_text()))
    listening = [c for c in psutil.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN and c.pid in ours]
    assert listening, "found no listening socket of the hub at all"
    assert all(c.laddr.ip in ("127.0.0.1", "::1") for c in listening), listening


# --- survival ------------------------------------------------------------------------------------------------

def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_endless_loop_and_memory_hog_are_stopped(klass):
    looper, hog, bystander = _students(klass)[-3:]
    sessions = {}
    for name in (looper, hog, bystander):
        s = Student(klass.url, name)
        assert s.login()
        s.make_token()
        s.start_server()
        sessions[name] = s
    loop_kernel = sessions[looper].kernel()
    hog_kernel = sessions[hog].kernel()
    calm = sessions[bystander].kernel()
    try:
        # memory: one allocation past the limit is refused, and the kernel lives on
        result = hog_kernel.execute("block = bytearray(2 * 2 ** 30)", 300)
        assert result["status"] == "error" and "MemoryError" in result["error"], result
        assert hog_kernel.execute("print('still here')", 120)["stdout"].strip() == "still here"
        # filled step by step, the kernel stops at the limit: a MemoryError, or (when another of its threads
        # meets the limit first) the kernel dies and its server starts a new one
        hog_pid = int(hog_kernel.execute("import os\nprint(os.getpid())", 120)["stdout"])
        try:
            result = hog_kernel.execute("chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 2 ** 20))", 300)
            assert result["status"] == "error" and "MemoryError" in result["error"], result
        except (ConnectionError, websocket.WebSocketException):
            pass
        if _running(hog_pid):
            assert psutil.Process(hog_pid).memory_info().rss < klass.settings.memory_bytes + 2 ** 28
        fresh = sessions[hog].kernel()
        try:
            assert fresh.execute("print('a new kernel')", 300)["stdout"].strip() == "a new kernel"
        finally:
            fresh.close()
        # CPU: the endless loop is killed at the kernel's CPU limit (its process gone); the others answer meanwhile
        pid = int(loop_kernel.execute("import os\nprint(os.getpid())", 120)["stdout"])
        loop_kernel.start("while True:\n    pass")
        assert calm.execute("print(6 * 7)", 120)["stdout"].strip() == "42"
        deadline = time.monotonic() + KERNEL_CPU_SECONDS * 4 + 240
        while _running(pid):
            assert time.monotonic() < deadline, f"the endless loop (pid {pid}) still runs"
            time.sleep(1)
        assert calm.execute("print(6 * 7)", 120)["stdout"].strip() == "42"
        # the student's server lives on (and restarts the kernel)
        assert sessions[looper].api("GET", "/api/status", timeout=60).status_code == 200
    finally:
        for k in (loop_kernel, hog_kernel, calm):
            k.close()


def test_the_culler_runs_as_a_service(klass):
    instructor = Student(klass.url, klass.settings.instructors[0])
    assert instructor.login()
    instructor.make_token()
    services = instructor.hub_api("GET", "/services").json()
    assert "idle-culler" in services, services
    hub_proc = psutil.Process(klass.proc.pid)
    assert any("jupyterhub_idle_culler" in " ".join(c.cmdline()) for c in hub_proc.children(recursive=True))


def test_hub_restart_keeps_servers_and_submissions(klass):
    name = _students(klass)[1]
    s = _ready(klass, name, submitted=True)
    before = s.api("GET", "/api/status").json()["started"]
    inbound = klass.settings.exchange / klass.settings.course_id / "inbound"
    submissions = sorted(p.name for p in inbound.iterdir())
    klass.stop()
    klass.start()
    assert sorted(p.name for p in inbound.iterdir()) == submissions
    # the same server (started at the same time) behind the new hub, the student's token still good
    model = s.hub_api("GET", f"/users/{name}").json()
    assert model["servers"][""]["ready"], model
    assert s.api("GET", "/api/status").json()["started"] == before
    listed = {a["assignment_id"]: a["status"] for a in s.list_assignments(klass.settings.course_id)}
    assert listed.get(CHAPTER) == "submitted", listed


def test_servers_started_before_the_lecture(klass):
    """``python -m classroom.hub start-servers``: the server is running when the student logs in."""
    name = _students(klass)[-1]
    s = Student(klass.url, name)
    assert s.login()
    s.make_token()
    s.hub_api("DELETE", f"/users/{name}/server")
    deadline = time.monotonic() + 300
    while s.hub_api("GET", f"/users/{name}").json()["servers"] and time.monotonic() < deadline:
        time.sleep(1)
    proc = subprocess.run([sys.executable, "-m", "classroom.hub", "start-servers", "--settings",
                           str(klass.settings.path), "--users", name], cwd=REPO, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    # the student asked for nothing: their server answers at once
    assert s.hub_api("GET", f"/users/{name}").json()["servers"][""]["ready"]
    assert s.api("GET", "/api/status").status_code == 200


# --- without root: the settings and what make hub writes ------------------------------------------------------

def test_settings_of_the_repository_load():
    from classroom import hub

    s = hub.load_settings(REPO / "hub" / "course.toml")
    assert s.ip == "127.0.0.1" and s.authenticator == "native" and s.memory_bytes == 2 ** 30
    assert s.students_csv == REPO / "hub" / "students.csv" and s.students()
    assert s.exchange.is_absolute() and s.state.is_absolute()
    assert hub.parse_bytes("512M") == 512 * 2 ** 20 and hub.parse_bytes("1.5G") == 3 * 2 ** 29
    with pytest.raises(ValueError):
        hub.parse_bytes("lots")


def loaded_extensions(config: Path) -> set[str]:
    """The server extensions a user server with this configuration folder loads (jupyter_server's own reading)."""
    code = ("import json\nfrom jupyter_server.serverapp import ServerApp\n"
            "app = ServerApp()\n"
            "app.initialize(argv=['--port=0'], find_extensions=True, new_httpserver=False)\n"
            "print(json.dumps([n for n, p in app.extension_manager.extensions.items() if p.enabled]))")
    proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, JUPYTER_CONFIG_PATH=str(config)),
                          capture_output=True, text=True, timeout=300, cwd=config)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_user_environment_and_configuration(tmp_path):
    from classroom import hub

    toml = (REPO / "hub" / "course.toml").read_text().replace('"/srv/tensoradbook/jupyter"',
                                                                  f'"{tmp_path / "jupyter"}"')
    (tmp_path / "course.toml").write_text(toml)
    (tmp_path / "students.csv").write_text("username,first_name,last_name,email\nst1,A,B,c@d\n")
    s = hub.load_settings(tmp_path / "course.toml")
    env = hub.user_environment(s, "st1")
    assert env["NUMBA_NUM_THREADS"] == env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == "1"
    assert env["TENSORADBOOK_SHARED_CACHE"] == str(s.kernel_cache)
    assert env["JUPYTER_CONFIG_PATH"].endswith("student")
    assert hub.user_environment(s, "instructor")["JUPYTER_CONFIG_PATH"].endswith("instructor")
    hub.setup_jupyter(s)
    server = json.loads((s.jupyter / "student" / "jupyter_server_config.json").read_text())
    assert server["ServerApp"]["jpserver_extensions"]["nbgrader.server_extensions.formgrader"] is False
    assert loaded_extensions(s.jupyter / "student") == {
        "jupyterlab", "notebook", "notebook_shim", "jupyter_server_terminals",
        "nbgrader.server_extensions.assignment_list", "nbgrader.server_extensions.validate_assignment"}
    assert "nbgrader.server_extensions.formgrader" in loaded_extensions(s.jupyter / "instructor")
    lab = json.loads((s.jupyter / "student" / "labconfig" / "page_config.json").read_text())
    assert lab["disabledExtensions"]["@jupyter/nbgrader:formgrader"] is True
    instructor = (s.jupyter / "instructor" / "nbgrader_config.py").read_text()
    assert f"c.CourseDirectory.root = {str(s.course)!r}" in instructor
    kernel = json.loads((s.jupyter / "share" / "kernels" / "python3" / "kernel.json").read_text())
    assert kernel["argv"][2:5] == ["classroom.hub", "kernel", "--cpu-seconds"]


def test_make_hub_says_it_needs_root(monkeypatch):
    from classroom import hub

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit) as stop:
        hub.setup(hub.load_settings(REPO / "hub" / "course.toml"))
    assert "needs root" in str(stop.value) and "useradd" in str(stop.value)


def test_the_culler_stops_an_idle_server():
    """A class of one whose culling time is 30 s: the server left idle is stopped by the culler, not by anyone."""
    _require_root()
    with running_hub("tac", 1, cull_idle_seconds=30) as small:
        name = small.settings.students()[0].username
        student = Student(small.url, name)
        assert student.login()
        student.make_token()
        student.start_server()
        deadline = time.monotonic() + 300
        while student.hub_api("GET", f"/users/{name}").json().get("servers", {}).get(""):
            assert time.monotonic() < deadline, "the idle server was not culled\n" + small.log()
            time.sleep(2)
        assert "idle-culler" in small.log() and "Culling server" in small.log(), small.log()

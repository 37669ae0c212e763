"""The class server's figures (``make hub``): a real JupyterHub with real Unix users on this machine, as root.

One hub for a throw-away class of ``--students`` (default 40) students (tests/hub_support.running_hub: users
``tbnst01``..., free loopback ports, the shared kernel cache warmed for the demo first, everything removed after).
Then waves of 10, 20 and 40 students starting at once; each student, in a thread of its own:

* logs in through the login form, starts its server (``spawn``: from the POST until the server answers through
  the proxy);
* opens a kernel, builds the demo's widget (``--demo``, default ``06_gradient_lab``: GradientLab, whose first Run
  needs the sec. 6 example's Numba kernels) and does its first interaction (``classroom.demo.interact``);
* ``login_to_interaction``: from the login to the end of that interaction; ``interaction``: the click alone;
* ``compiled``: the Numba compilations in that kernel (``numba:compile`` events, which fire only where no cache
  had the machine code): the goal is none;
* ``steps``: the path step by step (login, spawn, kernel start, imports, building and drawing the widget, the
  interaction), each with its wall time and the CPU time (``/proc/<pid>/stat``: robust to other load) of the hub
  (with its proxy and services), the student's server and their kernel; ``cpu_s_per_student``: the server's and
  the kernel's, and a share of the hub's over the wave.

``--started`` starts each wave's servers first (``python -m classroom.hub start-servers``, as a lecturer does before
the lecture; ``started_before``: its wall time and CPU), so the wave pays for the login and the kernel alone.

After each wave, with every server and kernel alive: resident and proportional memory (RSS, PSS) of each student's
server and kernel. Between waves every server is stopped, so each wave spawns afresh. Printed, and with ``--json``
recorded with the machine and its load. Goals: one student alone under 3 s and 1.5 CPU-s from login to the first
interaction, 10 at once under 10 s and 40 under 30 s at p95 on 2 CPUs, no compilation, at most 250 MB
proportional per student; and the largest class whose every interaction is under 3 s.
Run as root: ``.venv/bin/python benchmarks/hub.py --json benchmarks/results/hub.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from benchmarks.gradients import machine  # noqa: E402
from classroom import demo as demos  # noqa: E402
from tests.hub_support import Student, running_hub, user_pids  # noqa: E402

PREFIX = "tbn"
TIMEOUT_S = 1200
COUNT_COMPILES = """
from numba.core import event as _event
_compiled = []
class _Count(_event.Listener):
    def on_start(self, ev):
        _compiled.append(getattr(ev.data.get("dispatcher"), "__qualname__", None)
                         or getattr(getattr(ev.data.get("dispatcher"), "py_func", None), "__qualname__", "?"))
    def on_end(self, ev):
        pass
_event.register("numba:compile", _Count())
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
#: printed by the kernel after each step: its own CPU time since its start (the wrapper's exec keeps the process)
KERNEL_CPU = "import os as _os; print(sum(_os.times()[:2]))"


def cpu_s(pid: int) -> float:
    """The CPU time (user + system) a process has used so far; 0 where it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def hub_cpu_s(hub_pid: int) -> float:
    """The hub's CPU time so far: JupyterHub, its proxy and its services (root's processes of its session)."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[3]) == hub_pid and entry.stat().st_uid == 0:
                    total += (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
            except OSError:
                continue
    return total


def server_pid(name: str) -> int | None:
    for pid in user_pids({name}):
        try:
            if b"jupyterhub-singleuser" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except OSError:
            continue
    return None


class Steps:
    """One student's path, step by step: wall time and the CPU time of the hub, the student's server and kernel.
    A server started before the student came (``--started``) counts from the student's login."""

    def __init__(self, hub_pid: int, name: str):
        self.hub_pid, self.server, self.rows = hub_pid, server_pid(name), {}
        self.last = (time.perf_counter(), hub_cpu_s(hub_pid), cpu_s(self.server) if self.server else 0.0, 0.0)

    def mark(self, step: str, kernel_cpu: float | None = None) -> None:
        now = (time.perf_counter(), hub_cpu_s(self.hub_pid), cpu_s(self.server) if self.server else 0.0,
               self.last[3] if kernel_cpu is None else kernel_cpu)
        self.rows[step] = {key: round(b - a, 3) for key, a, b in zip(
            ("wall_s", "hub_cpu_s", "server_cpu_s", "kernel_cpu_s"), self.last, now, strict=True)}
        self.last = now


def run_step(kernel, steps: Steps, step: str, code: str) -> None:
    result = kernel.execute(f"{code}\n{KERNEL_CPU}", TIMEOUT_S)
    if result["status"] != "ok":
        raise RuntimeError(f"{kernel.student.name}: {step}: {result['error']}")
    steps.mark(step, float(result["stdout"].split()[-1]))


def one_student(url: str, name: str, demo: demos.Demo, start_gate: threading.Event, hub_pid: int) -> dict:
    start_gate.wait()
    t0 = time.perf_counter()
    steps = Steps(hub_pid, name)
    student = Student(url, name)
    if not student.login():
        raise RuntimeError(f"{name} could not log in")
    student.make_token()
    steps.mark("login")
    student.start_server(timeout=TIMEOUT_S)
    steps.server = steps.server or server_pid(name)
    if steps.server is None:
        raise RuntimeError(f"{name}: no jupyterhub-singleuser process")
    steps.mark("spawn")
    kernel = student.kernel()
    try:
        run_step(kernel, steps, "kernel_start", "pass")
        run_step(kernel, steps, "imports", f"{COUNT_COMPILES}\nfrom tensoradbook.widgets import {demo.widget}\n"
                 "from classroom.demo import interact")
        run_step(kernel, steps, "widget", f"demo = {demo.make}\n"
                 "demo._repr_mimebundle_() if hasattr(demo, '_repr_mimebundle_') else None")
        run_step(kernel, steps, "interaction", f"interact(demo, {demo.interaction!r})")
        t_end = time.perf_counter()
        compiled = json.loads(kernel.execute("import json; print(json.dumps(_compiled))", 120)["stdout"])
    except BaseException:
        kernel.close()
        raise
    return {"name": name, "spawn_s": steps.rows["spawn"]["wall_s"],
            "interaction_s": steps.rows["interaction"]["wall_s"], "login_to_interaction_s": t_end - t0,
            "steps": steps.rows, "compiled": compiled, "kernel": kernel, "student": student}


def _memory_mib(pid: int) -> tuple[float, float]:
    """(RSS, PSS) of one process in MiB (PSS shares the pages used by several processes among them)."""
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("Rss", "Pss"):
                values[key] = int(rest.split()[0]) / 1024
    return values["Rss"], values["Pss"]


def memory(names: list[str]) -> dict:
    servers, kernels = [], []
    for pid in user_pids(set(names)):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            figures = _memory_mib(pid)
        except OSError:
            continue
        if "jupyterhub-singleuser" in cmdline:
            servers.append(figures)
        elif "ipykernel" in cmdline or "classroom.hub kernel" in cmdline:
            kernels.append(figures)

    def summary(rows):
        return {"count": len(rows), "rss_median_mib": statistics.median(r[0] for r in rows) if rows else None,
                "pss_median_mib": statistics.median(r[1] for r in rows) if rows else None,
                "rss_max_mib": max((r[0] for r in rows), default=None)}

    return {"server": summary(servers), "kernel": summary(kernels)}


def breakdown(rows: list[dict], hub_cpu: float) -> dict:
    """The median student's steps, and the CPU time each student cost from login to the first interaction: their
    server's and kernel's, and their share of the hub's (each step's hub figure is exact for one student alone;
    students at once share the hub, so the total takes the wave's hub time divided among them)."""
    steps = {step: {key: statistics.median(r["steps"][step][key] for r in rows) for key in rows[0]["steps"][step]}
             for step in rows[0]["steps"]}
    own = [sum(v["server_cpu_s"] + v["kernel_cpu_s"] for v in r["steps"].values()) for r in rows]
    per_student = [o + hub_cpu / len(rows) for o in own]
    return {"steps": steps, "cpu_s_per_student": {"median": statistics.median(per_student), "max": max(per_student)},
            "hub_cpu_s": hub_cpu}


def wave(url: str, names: list[str], demo: demos.Demo, hub_pid: int) -> dict:
    load = os.getloadavg()
    hub_before = hub_cpu_s(hub_pid)
    gate = threading.Event()
    results: dict[str, dict] = {}
    errors: list[str] = []

    def run(name):
        try:
            results[name] = one_student(url, name, demo, gate, hub_pid)
        except Exception as e:  # a failed student is a figure too
            errors.append(f"{name}: {e}")

    threads = [threading.Thread(target=run, args=(n,)) for n in names]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(TIMEOUT_S + 600)
    rows = list(results.values())
    hub_cpu = hub_cpu_s(hub_pid) - hub_before
    mem = memory(names)
    for row in rows:
        row.pop("kernel").close()
    for row in rows:  # every server stopped: the next wave spawns afresh
        row.pop("student").hub_api("DELETE", f"/users/{row['name']}/server")
    deadline = time.monotonic() + 300
    while user_pids(set(names)) and time.monotonic() < deadline:
        time.sleep(1)
    out = {"students": len(names), "completed": len(rows), "errors": errors, "memory": mem,
           "load_average_before": load}
    if not rows:
        raise RuntimeError("no student got through:\n" + "\n".join(errors))
    out.update(breakdown(rows, hub_cpu))
    for key in ("spawn_s", "login_to_interaction_s", "interaction_s"):
        values = [r[key] for r in rows]
        out[key] = {"median": statistics.median(values), "p95": percentile(values, 95), "max": max(values)}
    out["students_who_compiled"] = sorted(r["name"] for r in rows if r["compiled"])
    out["compiled"] = sorted({c for r in rows for c in r["compiled"]})
    return out


def start_ahead(the_hub, names: list[str]) -> dict:
    """``start-servers`` for ``names``: its wall time, and the CPU time of the hub and of the servers it started."""
    t, hub_before = time.perf_counter(), hub_cpu_s(the_hub.proc.pid)
    subprocess.run([sys.executable, "-m", "classroom.hub", "start-servers", "--settings",
                    str(the_hub.settings_path), "--users", *names], check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    servers = [cpu_s(pid) for pid in (server_pid(n) for n in names) if pid]
    return {"wall_s": time.perf_counter() - t, "hub_cpu_s": hub_cpu_s(the_hub.proc.pid) - hub_before,
            "server_cpu_s_median": statistics.median(servers)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--waves", type=int, nargs="+", default=[10, 20, 40])
    parser.add_argument("--demo", default="06_gradient_lab", help="the demo whose first interaction is timed")
    parser.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    parser.add_argument("--started", action="store_true",
                        help="start each wave's servers before it (python -m classroom.hub start-servers), as a "
                             "lecturer does before the lecture: the wave pays for login and kernel only")
    options = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("benchmarks/hub.py creates Unix users and runs JupyterHub's LocalProcessSpawner: run as root")
    demo = next(d for d in demos.DEMOS if d.stem == options.demo)
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} on {os.cpu_count()} CPUs; demo {demo.stem} ({demo.widget}, "
          f"{demo.interaction})")
    t = time.perf_counter()
    waves = {}
    with running_hub(PREFIX, options.students, warm_only=[demo.stem]) as the_hub:
        print(f"hub up, cache warmed for {demo.stem}: {time.perf_counter() - t:.0f} s")
        names = [s.username for s in the_hub.settings.students()]
        for n in options.waves:
            before = start_ahead(the_hub, names[:n]) if options.started else None
            figures = wave(the_hub.url, names[:n], demo, the_hub.proc.pid)
            figures["started_before"] = before
            waves[str(n)] = figures
            print(f"{n:3d} students at once: spawn median {figures['spawn_s']['median']:.1f} s, "
                  f"p95 {figures['spawn_s']['p95']:.1f} s; login to interaction median "
                  f"{figures['login_to_interaction_s']['median']:.1f} s, "
                  f"p95 {figures['login_to_interaction_s']['p95']:.1f} s; "
                  f"interaction median {figures['interaction_s']['median']:.2f} s, max "
                  f"{figures['interaction_s']['max']:.2f} s; {figures['completed']}/{n} done; "
                  f"compiled: {len(figures['students_who_compiled'])} students {figures['compiled'][:5]}")
            print(f"     memory per server: RSS {figures['memory']['server']['rss_median_mib']:.0f} MiB, "
                  f"PSS {figures['memory']['server']['pss_median_mib']:.0f} MiB; per kernel: RSS "
                  f"{figures['memory']['kernel']['rss_median_mib']:.0f} MiB, PSS "
                  f"{figures['memory']['kernel']['pss_median_mib']:.0f} MiB")
            print(f"     CPU per student {figures['cpu_s_per_student']['median']:.2f} s (load "
                  f"{figures['load_average_before'][0]:.2f}); median step: wall s, CPU s of hub / server / kernel")
            for step, v in figures["steps"].items():
                print(f"       {step:12s} {v['wall_s']:6.2f}  {v['hub_cpu_s']:5.2f} {v['server_cpu_s']:5.2f} "
                      f"{v['kernel_cpu_s']:5.2f}")
            if figures["errors"]:
                print("     errors:", *figures["errors"][:5], sep="\n       ")
    under_3 = [int(n) for n, f in waves.items() if f["completed"] == f["students"] and f["interaction_s"]["max"] < 3]
    largest = max(under_3, default=0)
    print("largest class measured with every first interaction under 3 s:", largest or f"none of {options.waves}")
    load_after = os.getloadavg()
    if options.json:
        with open(options.json, "w") as out:
            json.dump({"machine": machine(), "memory_gib": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
                       / 2 ** 30, "demo": demo.stem, "waves": waves,
                       "largest_class_every_interaction_under_3_s": largest,
                       "load_average": {"before": load_before, "after": load_after}}, out, indent=1)


if __name__ == "__main__":
    main()

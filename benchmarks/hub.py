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
  had the machine code): the goal is none.

After each wave, with every server and kernel alive: resident and proportional memory (RSS, PSS) of each student's
server and kernel. Between waves every server is stopped, so each wave spawns afresh. Printed, and with ``--json``
recorded with the machine and its load. Goals: 40 students at p95 under 10 s login to interaction, no
compilation, under 300 MB per student; and the largest class whose every interaction is under 3 s.
Run as root: ``.venv/bin/python benchmarks/hub.py --json benchmarks/results/hub.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
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


def one_student(url: str, name: str, demo: demos.Demo, start_gate: threading.Event) -> dict:
    start_gate.wait()
    t0 = time.perf_counter()
    student = Student(url, name)
    if not student.login():
        raise RuntimeError(f"{name} could not log in")
    student.make_token()
    t_spawn = time.perf_counter()
    student.start_server(timeout=TIMEOUT_S)
    spawn = time.perf_counter() - t_spawn
    kernel = student.kernel()
    try:
        for code in (COUNT_COMPILES,
                     f"from tensoradbook.widgets import {demo.widget}\ndemo = {demo.make}\n"
                     "demo._repr_mimebundle_() if hasattr(demo, '_repr_mimebundle_') else None\n"
                     "from classroom.demo import interact"):
            result = kernel.execute(code, TIMEOUT_S)
            if result["status"] != "ok":
                raise RuntimeError(f"{name}: {result['error']}")
        t_click = time.perf_counter()
        result = kernel.execute(f"interact(demo, {demo.interaction!r})", TIMEOUT_S)
        t_end = time.perf_counter()
        if result["status"] != "ok":
            raise RuntimeError(f"{name}: {result['error']}")
        compiled = json.loads(kernel.execute("import json; print(json.dumps(_compiled))", 120)["stdout"])
    except BaseException:
        kernel.close()
        raise
    return {"name": name, "spawn_s": spawn, "interaction_s": t_end - t_click,
            "login_to_interaction_s": t_end - t0, "compiled": compiled, "kernel": kernel, "student": student}


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


def wave(url: str, names: list[str], demo: demos.Demo) -> dict:
    gate = threading.Event()
    results: dict[str, dict] = {}
    errors: list[str] = []

    def run(name):
        try:
            results[name] = one_student(url, name, demo, gate)
        except Exception as e:  # a failed student is a figure too
            errors.append(f"{name}: {e}")

    threads = [threading.Thread(target=run, args=(n,)) for n in names]
    for t in threads:
        t.start()
    gate.set()
    for t in threads:
        t.join(TIMEOUT_S + 600)
    rows = list(results.values())
    mem = memory(names)
    for row in rows:
        row.pop("kernel").close()
    for row in rows:  # every server stopped: the next wave spawns afresh
        row.pop("student").hub_api("DELETE", f"/users/{row['name']}/server")
    deadline = time.monotonic() + 300
    while user_pids(set(names)) and time.monotonic() < deadline:
        time.sleep(1)
    out = {"students": len(names), "completed": len(rows), "errors": errors, "memory": mem}
    if not rows:
        raise RuntimeError("no student got through:\n" + "\n".join(errors))
    for key in ("spawn_s", "login_to_interaction_s", "interaction_s"):
        values = [r[key] for r in rows]
        out[key] = {"median": statistics.median(values), "p95": percentile(values, 95), "max": max(values)}
    out["students_who_compiled"] = sorted(r["name"] for r in rows if r["compiled"])
    out["compiled"] = sorted({c for r in rows for c in r["compiled"]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--waves", type=int, nargs="+", default=[10, 20, 40])
    parser.add_argument("--demo", default="06_gradient_lab", help="the demo whose first interaction is timed")
    parser.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
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
            figures = wave(the_hub.url, names[:n], demo)
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

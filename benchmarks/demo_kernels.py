"""Warm starts and memory of the lecture demos (``make demo``), one fresh kernel per demo, as Voila runs them.

For each demo of ``classroom.demo.DEMOS`` a new IPython kernel (jupyter_client, the venv's python3 kernel, the
presentation scale in its environment) runs the demo's cell and then its first interaction (a step, a run, a
slider move: ``classroom.demo.interact``). Printed and recorded per demo:

* ``render``: seconds for the demo's cell in the fresh kernel (imports, the widget made and drawn);
* ``first interaction``: seconds for the first interaction after it (the goal: under 2 s, with Numba's disk
  cache warm, which ``make demo`` sees to by running ``classroom.demo warm`` first; so does this script);
* ``kernel RSS``: the kernel's resident memory after both, in MiB (what each demo costs a class server).

The warm-up runs first and its seconds are printed too (a cold cache compiles there, not in the demos). Every
demo is measured twice in one run: on the machine as it is, and with every CPU busy in another process (a
shared class server), each figure with its ratio to the quiet one.
Run: ``.venv/bin/python benchmarks/demo_kernels.py [--json benchmarks/results/demo_kernels.json]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

from jupyter_client.manager import start_new_kernel

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.gradients import machine  # noqa: E402
from classroom import demo as demos  # noqa: E402

TIMEOUT_S = 300


def _run(client, code: str) -> float:
    """Seconds to execute ``code`` in the kernel; raises with the kernel's traceback on an error."""
    start = time.perf_counter()
    reply = client.execute_interactive(code, timeout=TIMEOUT_S, output_hook=lambda msg: None)
    seconds = time.perf_counter() - start
    if reply["content"]["status"] != "ok":
        raise RuntimeError("\n".join(reply["content"].get("traceback", [])))
    return seconds


def _rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def _spin() -> None:
    while True:
        pass


def busy_cpus() -> list[multiprocessing.Process]:
    """One CPU-bound process per CPU, as other users of a shared server would be (stop with ``terminate``)."""
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(os.cpu_count() or 1)]
    for spinner in spinners:
        spinner.start()
    return spinners


def measure(demo: demos.Demo, scale: str) -> dict:
    env = dict(os.environ, **{demos.SCALE_ENV: scale})
    manager, client = start_new_kernel(kernel_name="python3", env=env)
    try:
        render = _run(client, f"from tensoradbook.widgets import {demo.widget}\ndemo = {demo.make}\n"
                              f"demo._repr_mimebundle_() if hasattr(demo, '_repr_mimebundle_') else None")
        _run(client, "from classroom.demo import interact")  # the page's code, not the interaction
        interaction = _run(client, f"interact(demo, {demo.interaction!r})")
        rss = _rss_mib(manager.provisioner.process.pid)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return {"render_s": render, "first_interaction_s": interaction, "kernel_rss_mib": rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    parser.add_argument("--scale", default=demos.DEFAULT_SCALE)
    options = parser.parse_args()
    os.environ[demos.SCALE_ENV] = options.scale
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(demos.REPO), os.environ.get("PYTHONPATH")]))
    load_before = os.getloadavg()[0]
    print(f"load average before: {load_before:.2f} on {os.cpu_count()} CPUs")
    warm = demos.warm()
    print(f"warm-up (this process, every demo once): {sum(warm.values()):.1f} s")
    runs = {}
    for load in ("quiet", "busy"):
        spinners = busy_cpus() if load == "busy" else []
        try:
            print(f"\n{load}: {len(spinners)} CPU-bound processes beside the kernels")
            print(f"{'demo':26s} {'render':>8s} {'first interaction':>18s} {'kernel RSS':>11s}")
            rows = {}
            for demo in demos.DEMOS:
                rows[demo.stem] = figures = measure(demo, options.scale)
                print(f"{demo.stem:26s} {figures['render_s']:7.2f}s {figures['first_interaction_s']:17.2f}s "
                      f"{figures['kernel_rss_mib']:8.0f} MiB")
        finally:
            for spinner in spinners:
                spinner.terminate()
        interactions = [r["first_interaction_s"] for r in rows.values()]
        memory = [r["kernel_rss_mib"] for r in rows.values()]
        summary = {"first_interaction_max_s": max(interactions),
                   "first_interaction_median_s": statistics.median(interactions),
                   "kernel_rss_median_mib": statistics.median(memory), "kernel_rss_max_mib": max(memory)}
        print(f"first interaction: median {summary['first_interaction_median_s']:.2f} s, "
              f"max {summary['first_interaction_max_s']:.2f} s (goal: under 2 s)")
        print(f"memory per demo kernel: median {summary['kernel_rss_median_mib']:.0f} MiB, "
              f"max {summary['kernel_rss_max_mib']:.0f} MiB")
        runs[load] = {"demos": rows, "summary": summary}
    slowdown = {stem: runs["busy"]["demos"][stem]["first_interaction_s"] / runs["quiet"]["demos"][stem][
        "first_interaction_s"] for stem in runs["quiet"]["demos"]}
    print(f"busy / quiet, first interaction: median {statistics.median(slowdown.values()):.1f}x, "
          f"max {max(slowdown.values()):.1f}x")
    load_after = os.getloadavg()[0]
    print(f"load average after: {load_after:.2f}")
    if options.json:
        with open(options.json, "w") as out:
            json.dump({"machine": machine(), "scale": options.scale, "warm_up_s": warm, "runs": runs,
                       "busy_over_quiet_first_interaction": slowdown,
                       "load_average": {"before": load_before, "after": load_after}}, out, indent=1)


if __name__ == "__main__":
    main()

"""Compile time against program size: programs of N definitions derived and compiled from an empty kernel cache.

The program is a chain of element-wise layers over vectors of 64, each reading the one before, the input and a
weight of its own: ``h1[i] = tanh (x[i] * w1[i])``, ``hk[i] = tanh (h{k-1}[i] * wk[i] + x[i])``. Its gradients
with respect to every weight and the input have about two kernels per definition. Each N runs in a fresh process
(this file with ``--worker N TARGET``) on a new, empty cache directory (``TENSORADBOOK_CACHE``) and reports its
stages: ``derive`` (the program's gradients), ``compile`` (the generated modules written and imported, and every
kernel compiled: for ``numba`` by Numba, for ``numpy`` nothing beyond Python's bytecode), ``first call``, the kernels
in the modules, and the process's peak resident memory. The first call's gradients are checked against the
reference evaluator (rtol 1e-9). The goal: a 200-definition program compiles for Numba in under 60 s.
Other processes inflate the times; the machine and the load average before and after are printed and recorded.

Run: ``.venv/bin/python benchmarks/compile_time.py [--sizes 10 25 50 100 200] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WIDTH = 64  # the vectors' length, by default: small kernels, serial (PARALLEL_WORK); --width for parallel ones
GOAL_DEFINITIONS, GOAL_S = 200, 60.0
TARGETS = ("numba", "numpy")
RTOL = 1e-9


def chain(definitions: int, width: int = WIDTH) -> tuple[str, dict]:
    """The text and shapes of the chain of ``definitions`` layers over vectors of ``width``."""
    lines = ["h1[i] = tanh (x[i] * w1[i])"]
    lines += [f"h{k}[i] = tanh (h{k - 1}[i] * w{k}[i] + x[i])" for k in range(2, definitions + 1)]
    shapes = {"x": (width,)}
    for k in range(1, definitions + 1):
        shapes[f"h{k}"] = shapes[f"w{k}"] = (width,)
    return "\n".join(lines), shapes


def worker(definitions: int, target: str, width: int) -> None:
    import tensoradbook as tab

    stages = {}
    start = time.perf_counter()
    program = tab.parse(*chain(definitions, width))
    grads = tab.derive(program)
    stages["derive_s"] = time.perf_counter() - start
    start = time.perf_counter()
    compiled = grads.compile(target)
    stages["compile_s"] = time.perf_counter() - start
    rng = np.random.default_rng(0)
    args = {name: rng.uniform(-1, 1, program.shapes[name]) for name in program.arguments}
    df = rng.uniform(-1, 1, (width,))
    start = time.perf_counter()
    got = compiled(args, df)
    stages["first_call_s"] = time.perf_counter() - start
    expected = grads.evaluate(args, df)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=RTOL, atol=RTOL, err_msg=name)
    # the tensors' kernels, not the fused functions that call them (codegen.fusion)
    stages["kernels"] = len(re.findall(r"^def (?!_fused_)\w+_kernel\(", compiled.source, re.MULTILINE))
    stages["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(stages))


def run(definitions: int, target: str, width: int, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "TENSORADBOOK_CACHE": cache}
        start = time.perf_counter()
        try:
            out = subprocess.run([sys.executable, __file__, "--worker", str(definitions), target, str(width)], env=env,
                                 capture_output=True, text=True, check=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"stopped_after_s": timeout}
        stages = json.loads(out.stdout.strip().splitlines()[-1])
        stages["process_s"] = time.perf_counter() - start
        return stages


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--worker", nargs=3, metavar=("N", "TARGET", "WIDTH"), help=argparse.SUPPRESS)
    parser.add_argument("--width", type=int, default=WIDTH, help="the vectors' length")
    parser.add_argument("--sizes", nargs="*", type=int, default=[10, 25, 50, 100, GOAL_DEFINITIONS])
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before a run is stopped")
    parser.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    options = parser.parse_args(argv)
    if options.worker:
        return worker(int(options.worker[0]), options.worker[1], int(options.worker[2]))
    from benchmarks.gradients import machine

    load_before = os.getloadavg()
    print(f"{__doc__.splitlines()[0]}\nload average before: {load_before[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'definitions':>11} {'target':>6} {'kernels':>7} {'derive s':>9} {'compile s':>10} {'s/kernel':>9} "
          f"{'first call s':>12} {'peak MiB':>9}")
    results = {}
    for definitions in options.sizes:
        for target in TARGETS:
            row = results.setdefault(str(definitions), {})[target] = run(definitions, target, options.width,
                                                                         options.timeout)
            if "stopped_after_s" in row:
                print(f"{definitions:>11} {target:>6}  stopped after {row['stopped_after_s']:.0f} s")
                continue
            print(f"{definitions:>11} {target:>6} {row['kernels']:>7} {row['derive_s']:9.2f} {row['compile_s']:10.2f} "
                  f"{row['compile_s'] / max(row['kernels'], 1):9.3f} {row['first_call_s']:12.3f} "
                  f"{row['peak_rss_mib']:9.0f}")
    load_after = os.getloadavg()
    goal = results.get(str(GOAL_DEFINITIONS), {}).get("numba", {})
    total = goal.get("derive_s", 0) + goal.get("compile_s", float("inf"))
    verdict = {"value": total if goal and "compile_s" in goal else None, "goal": GOAL_S,
               "met": bool(goal) and total <= GOAL_S}
    print(f"goal: {GOAL_DEFINITIONS} definitions derived and compiled for numba in at most {GOAL_S:.0f} s: "
          f"{'not measured' if verdict['value'] is None else f'{total:.1f} s'}, "
          f"{'met' if verdict['met'] else 'NOT met'}")
    print(f"load average after: {load_after[0]:.2f}")
    if options.json:
        with open(options.json, "w", encoding="utf-8") as out:
            json.dump({"machine": machine(), "load_average": {"before": load_before, "after": load_after},
                       "width": options.width, "results": results, "goal": verdict}, out, indent=2)
            out.write("\n")


if __name__ == "__main__":
    main()

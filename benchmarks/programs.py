"""The softmax of two nested padded convolutions as a program and as one expression: derived, compiled, run.

The goal: the program of three definitions derives, compiles and runs cold in under 10 s and
warm in under 1 s, where the same network as one expression took minutes.

The network: ``X`` 1x2x5x5 and ``W1``, ``W2`` 2x2x3x3; ``h`` is ``X`` convolved with ``W1`` (3x3, zero padding by
index conditions, ``if {i + p - 1 >= 0 and ...} then (...) else (0)``), ``y`` is ``h`` convolved with ``W2``, and
``s`` the softmax over all of ``y``'s elements. Each phase runs in a fresh Python process (this file with
``--worker``), on the numba target, and reports its stages: ``import`` (the interpreter's start and
``import tensoradbook``), ``parse``, ``derive`` (the program's gradients and the simplified form the kernels
run), ``compile`` (the generated module written and imported, and numba compiles every kernel, or loads it
from its disk cache), ``first call`` (the forward pass and all gradients run once) and ``process``, the whole
process from its start:

* cold: a new, empty cache directory (``TENSORADBOOK_CACHE``), so every kernel compiles;
* warm: a second process on that cache; then the median of repeated calls ``grad(args, df)`` in it, on
  numba's threads and on one (the tensors are tiny, and on a busy machine each parallel kernel waits for a
  descheduled thread);
* one expression: :meth:`Program.inlined` (every read of ``h`` and ``y`` replaced by its expression, as a
  single-expression language must), derived and compiled the same way in a fresh cache, then the median of
  repeated calls; stopped after ``--timeout`` seconds (60 by default; the one expression took minutes). Its nine
  nested sums are beyond the parser's ``MAX_NESTED_SUMS``, so it is built from the program's nodes rather
  than read from text.

The cold run's gradients, and the one expression's where it finishes, are checked against the program's
by the reference evaluator (rtol 1e-9), after the timed stages. Goals: cold under 10 s, warm under 1 s
(judged on the whole process, and on the work after the imports). Other processes inflate the times; the
machine and its load average before and after are printed and recorded.

Run: ``.venv/bin/python benchmarks/programs.py [--json benchmarks/results/programs.json] [--timeout 60]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZE = 5  # X is 1 x 2 x SIZE x SIZE
REPEATS = 20
COLD_GOAL_S, WARM_GOAL_S = 10.0, 1.0
RTOL = 1e-9


def convolution(out: str, image: str, weights: str) -> str:
    """``out = image`` convolved with 2x2x3x3 ``weights``, zero-padded to keep the size."""
    last = SIZE - 1
    inside = f"i + p - 1 >= 0 and i + p - 1 <= {last} and j + q - 1 >= 0 and j + q - 1 <= {last}"
    return (f"{out}[b; c; i; j] = sum{{d}}_0^1 (sum{{p}}_0^2 (sum{{q}}_0^2 (if {{{inside}}} then "
            f"({weights}[c; d; p; q] * {image}[b; d; i + p - 1; j + q - 1]) else (0))))")


TEXT = "\n".join([
    convolution("h", "X", "W1"),
    convolution("y", "h", "W2"),
    f"s[b; c; i; j] = exp (y[b; c; i; j]) / sum{{e}}_0^1 (sum{{u}}_0^{SIZE - 1} (sum{{v}}_0^{SIZE - 1} "
    f"(exp (y[b; e; u; v]))))",
])
SHAPES = {"X": (1, 2, SIZE, SIZE), "W1": (2, 2, 3, 3), "W2": (2, 2, 3, 3), "h": (1, 2, SIZE, SIZE),
          "y": (1, 2, SIZE, SIZE), "s": (1, 2, SIZE, SIZE)}


def data(seed: int = 0):
    """Inputs scaled so that the softmax does not saturate, and an adjoint ``ds``."""
    rng = np.random.default_rng(seed)
    args = {name: rng.uniform(-0.3, 0.3, SHAPES[name]) for name in ("X", "W1", "W2")}
    return args, rng.standard_normal(SHAPES["s"])


def worker(kind: str, repeats: int) -> None:
    """One phase in this process; prints one JSON line per stage as it ends, so a stopped run still tells."""
    def report(stage: str, seconds: float, **extra) -> None:
        print(json.dumps({"stage": stage, "seconds": seconds, **extra}), flush=True)

    def timed(stage: str, call, **extra):
        start = time.perf_counter()
        value = call()
        report(stage, time.perf_counter() - start, **{key: count(value) for key, count in extra.items()})
        return value

    import tensoradbook as tab

    report("import", since_start())
    program = timed("parse", lambda: tab.parse(TEXT, SHAPES))
    subject = program.inlined() if kind == "inlined" else program
    grads = timed("derive", lambda: tab.derive(subject).simplified)
    grad = timed("compile", lambda: grads.compile("numba"), kernels=lambda grad: grad.source.count("@numba.njit"))
    args, df = data()
    got = timed("first call", lambda: grad(args, df))
    report("process", since_start())
    if kind != "warm":  # against the program's gradients by the reference evaluator, untimed
        expected = tab.derive(program).evaluate(args, df)
        report("checked", 0.0, max_relative_error=_relative_error(got, expected))
    if kind != "cold":  # what each call costs once compiled: the one expression recomputes h and y in its sums
        import numba

        # numba's threads, then one: on a busy machine every parallel kernel waits for a descheduled thread
        for threads, stage in ((numba.get_num_threads(), "repeated call"), (1, "repeated call, 1 thread")):
            numba.set_num_threads(threads)
            times = []
            for _ in range(repeats):
                start = time.perf_counter()
                grad(args, df)
                times.append(time.perf_counter() - start)
            report(stage, statistics.median(times), calls=repeats, threads=threads)


def start_worker(work) -> None:
    """Time one start of this process: the interpreter, ``import tensoradbook``, then ``work()`` (derive, compile,
    one call); the stages as one JSON line on stdout, for :func:`timed_start`."""
    started = since_start()
    import tensoradbook  # noqa: F401 -- the import is a stage of its own

    imported = since_start()
    work()
    finished = since_start()
    print(json.dumps({"import_s": imported, "after_imports_s": finished - imported, "process_s": finished,
                      "interpreter_s": started}))


def timed_start(script: str, cache: str) -> dict:
    """``script --start-worker`` in a fresh process on the kernel cache directory ``cache``: its stages."""
    env = {**os.environ, "TENSORADBOOK_CACHE": cache}
    out = subprocess.run([sys.executable, script, "--start-worker"], env=env, capture_output=True, text=True,
                         check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def since_start() -> float:
    """Seconds since this process started (Linux: its start time in /proc/self/stat, in clock ticks)."""
    with open("/proc/self/stat") as stat:
        start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
    with open("/proc/uptime") as uptime:
        return float(uptime.read().split()[0]) - start_ticks / os.sysconf("SC_CLK_TCK")


def _relative_error(got: dict, expected: dict) -> float:
    return max(float(np.max(np.abs(got[name] - expected[name])) / max(np.max(np.abs(expected[name])), 1e-300))
               for name in expected)


def phase(kind: str, cache: str, timeout: float, repeats: int = REPEATS) -> dict:
    """Runs ``--worker kind`` in a fresh process on ``cache``; its stages, and whether it was stopped."""
    env = {**os.environ, "TENSORADBOOK_CACHE": cache}
    command = [sys.executable, __file__, "--worker", kind, "--repeats", str(repeats)]
    start = time.perf_counter()
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        try:
            out, err = process.communicate(timeout=timeout)
            stopped = False
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            stopped = True
    stages = {}
    for line in out.splitlines():
        record = json.loads(line)
        stages[record.pop("stage")] = record
    if not stopped and process.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{err[-3000:]}")
    return {"stages": stages, "stopped_after_s": timeout if stopped else None,
            "wall_s": time.perf_counter() - start}


def _line(label: str, result: dict) -> str:
    stages = result["stages"]
    parts = [f"{name} {record['seconds']:.2f} s" for name, record in stages.items()
             if name not in ("process", "checked") and not name.startswith("repeated")]
    text = f"{label:<16}" + ", ".join(parts)
    if "compile" in stages:
        text += f" ({stages['compile']['kernels']} kernels)"
    if "process" in stages:
        text += f"; whole process {stages['process']['seconds']:.2f} s"
    if result["stopped_after_s"] is not None:
        text += f"; STOPPED after {result['stopped_after_s']:g} s (did not finish)"
    return text


def _repeated(result: dict) -> str:
    series = [record for name, record in result["stages"].items() if name.startswith("repeated")]
    if not series:
        return f"{'':<16}repeated calls: not reached"
    return f"{'':<16}repeated calls (median of {REPEATS}): " + ", ".join(
        f"{record['seconds'] * 1e3:.2f} ms on {record['threads']} thread{'s' if record['threads'] > 1 else ''}"
        for record in series)


def _after_imports(result: dict) -> float | None:
    stages = result["stages"]
    if "process" not in stages:
        return None
    return stages["process"]["seconds"] - stages["import"]["seconds"]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds after which the one-expression run is stopped (default 60)")
    parser.add_argument("--worker", choices=("cold", "warm", "inlined"), help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, default=REPEATS, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.worker:
        worker(options.worker, options.repeats)
        return

    from benchmarks.gradients import machine

    print(__doc__.splitlines()[0])
    print(f"X {SHAPES['X']}, W1 and W2 {SHAPES['W1']}; numba target, {os.cpu_count()} CPUs")
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} on {os.cpu_count()} CPUs (other processes inflate the times)")
    with tempfile.TemporaryDirectory() as program_cache, tempfile.TemporaryDirectory() as inlined_cache:
        cold = phase("cold", program_cache, timeout=600)
        warm = phase("warm", program_cache, timeout=600)
        inlined = phase("inlined", inlined_cache, timeout=options.timeout)
    load_after = os.getloadavg()
    error = cold["stages"]["checked"]["max_relative_error"]
    if error > RTOL:
        raise SystemExit(f"the compiled gradients differ from the reference evaluator: {error:.1e}")
    print(f"checked against the reference evaluator: largest relative error {error:.1e}")
    print(_line("cold", cold))
    print(_line("warm", warm))
    print(_repeated(warm))
    print(_line("one expression", inlined))
    if "checked" in inlined["stages"]:
        print(f"{'':<16}checked against the program's: largest relative error "
              f"{inlined['stages']['checked']['max_relative_error']:.1e}")
    print(_repeated(inlined))
    goals = {
        "cold_process_s": cold["stages"]["process"]["seconds"],
        "cold_after_imports_s": _after_imports(cold),
        "warm_process_s": warm["stages"]["process"]["seconds"],
        "warm_after_imports_s": _after_imports(warm),
    }
    met = {name: value < (COLD_GOAL_S if name.startswith("cold") else WARM_GOAL_S) for name, value in goals.items()}
    for name, value in goals.items():
        goal = COLD_GOAL_S if name.startswith("cold") else WARM_GOAL_S
        print(f"goal {name.replace('_s', '').replace('_', ' ')} < {goal:g} s: {value:.2f} s, "
              f"{'met' if met[name] else 'NOT met'}")
    print(f"load average after: {load_after[0]:.2f}")
    if options.json:
        with open(options.json, "w") as out:
            json.dump({"machine": machine(), "load_average": {"before": load_before[0], "after": load_after[0]},
                       "network": {"text": TEXT, "shapes": SHAPES}, "target": "numba", "repeats": REPEATS,
                       "one_expression_timeout_s": options.timeout,
                       "cold": cold, "warm": warm, "one_expression": inlined,
                       "goals": {"cold_s": COLD_GOAL_S, "warm_s": WARM_GOAL_S, "figures": goals, "met": met}},
                      out, indent=2)


if __name__ == "__main__":
    main()

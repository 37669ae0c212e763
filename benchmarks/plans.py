"""How each module shares the CPUs between its kernels and its BLAS products: every candidate plan timed, beside the
plan the module measured and chose itself, and PyTorch CPU in the same process.

A generated Numba module's entry point tries, on its first calls, its kernels on every thread and on one beside
BLAS's threads (:func:`tensoradbook.codegen.threads.candidate_plans`) and keeps the faster
(:class:`~tensoradbook.codegen.threads.MeasuredPlan`). This script checks that the choice holds for every module,
not one workload: for each of benchmarks/workloads.py's workloads at its SMALL and LARGE sizes, and the small
convolution of chapter 10's size (16 filters 5 x 5 over one 64 x 64 image, where threaded kernels beside threaded
BLAS stalled on the scheduler's tick), it times forward plus gradients

* as a user gets it: the compiled object, called until it has chosen (its ``plans``);
* on each candidate plan, forced (:func:`~tensoradbook.codegen.threads.forced`), and on the chosen one, in turn
  (:func:`interleaved_ms`), with PyTorch among them;

and prints, per module, each plan's median, the chosen plan, the chosen time over the best plan's, and PyTorch's
median where it runs the module. Goal: the chosen time within 1.1x of the best plan's for every module (a choice
among medians of three on a noisy machine can only be that close), and the small convolution at most 1.0x
PyTorch. ``--json PATH`` records the figures with the machine and its load (benchmarks/results/plans.json).
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.gradients import machine, options_of, set_up, wall_times  # noqa: E402
from benchmarks.workloads import WORKLOADS, derived, limit_numpy_blas  # noqa: E402

REPEATS = 9  # rounds: each round times every plan, the chosen one and PyTorch, IN_A_ROW calls each
IN_A_ROW = 3
CHOSEN_GOAL = 1.1  # the chosen plan's median over the best forced plan's
CONVOLUTION = ("f[o; i; j] = sum{p}_0^4 (sum{q}_0^4 (w[o; p; q] * x[i + p; j + q]))",
               {"f": (16, 60, 60), "w": (16, 5, 5), "x": (64, 64)})


def convolution_module(torch_available: bool):
    """The small convolution: its gradients compiled, its inputs, and PyTorch's forward plus gradients."""
    import tensoradbook as tab

    fn = tab.parse(*CONVOLUTION)
    rng = np.random.default_rng(0)
    args = {"w": rng.standard_normal((16, 5, 5)), "x": rng.standard_normal((64, 64))}
    df = rng.standard_normal((16, 60, 60))
    peer = None
    if torch_available:
        import torch

        w, x, cotangent = (torch.from_numpy(a) for a in (args["w"], args["x"], df))

        def peer():
            leaves = w.detach().requires_grad_(), x.detach().requires_grad_()
            out = torch.nn.functional.conv2d(leaves[1][None, None], leaves[0][:, None])[0]
            return torch.autograd.grad(out, leaves, cotangent)

    return "small convolution (chapter 10)", lambda: tab.derive(fn).compile("numba"), args, df, peer


def workload_modules(sizes, torch_available: bool):
    for workload in WORKLOADS:
        for size in sizes:
            case = workload.make(workload.sizes[size])
            peer = case.peers["torch"]().full if torch_available and "torch" in case.peers else None
            yield (f"{workload.key} {size}", lambda case=case: derived(case).compile("numba"), case.args, case.df,
                   peer)


def interleaved_ms(calls: dict, rounds: int) -> dict:
    """Each of ``calls`` (name -> (context, call)) timed in turn, :data:`IN_A_ROW` calls in a row per round, for
    ``rounds`` rounds: the median over rounds of each round's median, in ms. Taken in turn, the machine's drift
    (another process, the clock's frequency) falls on all of them alike, and so does following a plan whose
    threads still spin."""
    times: dict = {name: [] for name in calls}
    names = list(calls)
    for round_ in range(rounds):  # each round starts one further on: each follows every other as often
        for name in names[round_ % len(names):] + names[:round_ % len(names)]:
            context, call = calls[name]
            with context():
                times[name].append(statistics.median(wall_times(call, IN_A_ROW)))
    return {name: statistics.median(seconds) * 1e3 for name, seconds in times.items()}


def measure(label, compile_module, args, df, peer, repeats: int, threads: int) -> dict:
    from tensoradbook.codegen.threads import candidate_plans, forced, planning_calls

    user = compile_module()  # a user's object: it plans on its own calls
    for _ in range(planning_calls()):
        got = user(args, df)
    planned = user.plans["gradients"]  # empty where every call ran on one thread: other processes kept the CPUs
    chosen = planned.get(threads) or next(iter(planned.values()), (1, 1))
    calls = {plan: (lambda plan=plan: forced(plan), lambda: user(args, df)) for plan in candidate_plans(threads)}
    calls["chosen"] = (contextlib.nullcontext, lambda: user(args, df))
    if peer is not None:
        calls["torch"] = (contextlib.nullcontext, peer)
    for plan in candidate_plans(threads):
        with forced(plan):
            other = user(args, df)
        for name in got:
            assert np.array_equal(got[name].view(np.int64), other[name].view(np.int64)), f"{label}: d{name} bits"
    ms = interleaved_ms(calls, repeats)
    forced_ms = {plan: ms[plan] for plan in candidate_plans(threads)}
    record = {"plans_ms": {f"{k} kernels, {b} BLAS": t for (k, b), t in forced_ms.items()},
              "chosen": f"{chosen[0]} kernels, {chosen[1]} BLAS" + ("" if planned else " (CPUs busy)"),
              "chosen_ms": ms["chosen"], "chosen_over_best": ms["chosen"] / min(forced_ms.values()),
              "torch_ms": ms.get("torch")}
    record["ours_over_torch"] = ms["chosen"] / record["torch_ms"] if record["torch_ms"] else None
    cells = "  ".join(f"{t:8.3f}" for t in forced_ms.values())
    torch_cell = f"{record['torch_ms']:8.3f}" if record["torch_ms"] else "       -"
    print(f"{label:34s} {cells}  {record['chosen']:>20s} {ms['chosen']:8.3f} {record['chosen_over_best']:6.2f}x"
          f" {torch_cell}")
    return record


def main(argv=None):
    options = options_of(argv, __doc__.splitlines()[0], "only the SMALL sizes and the convolution, three rounds")
    from tensoradbook.codegen.threads import candidate_plans

    thread_note, available, _ = set_up(__doc__.splitlines()[0], options.threads,
                                       lambda: "; " + limit_numpy_blas(options.threads))
    torch_available = available.get("torch") is None
    repeats = 3 if options.quick else REPEATS
    sizes = ("SMALL",) if options.quick else ("SMALL", "LARGE")
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} on {os.cpu_count()} CPUs; medians of {repeats} rounds, ms")
    heads = "  ".join(f"{k}k,{b}b".rjust(8) for k, b in candidate_plans(options.threads))
    print(f"{'module (fwd + grads)':34s} {heads}  {'chosen':>20s} {'ms':>8s} {'/best':>7s} {'torch':>8s}")
    modules = [convolution_module(torch_available), *workload_modules(sizes, torch_available)]
    records = {label: measure(label, make, args, df, peer, repeats, options.threads)
               for label, make, args, df, peer in modules}
    load_after = os.getloadavg()
    worst = max(records.items(), key=lambda item: item[1]["chosen_over_best"])
    convolution = records[modules[0][0]]
    print(f"load average after: {load_after[0]:.2f}")
    ratio = worst[1]["chosen_over_best"]
    print(f"goal: chosen within {CHOSEN_GOAL}x of the best plan for every module: worst {worst[0]} {ratio:.2f}x "
          f"({'met' if ratio <= CHOSEN_GOAL else 'NOT met'})")
    if convolution["ours_over_torch"] is not None:
        print(f"goal: the small convolution at most 1.0x PyTorch: {convolution['ours_over_torch']:.2f}x")
    if options.json:
        with open(options.json, "w", encoding="utf-8") as out:
            json.dump({"machine": machine(), "threads": options.threads, "thread_control": thread_note,
                       "repeats": repeats, "load_average": {"before": load_before, "after": load_after},
                       "modules": records}, out, indent=1)
            out.write("\n")


if __name__ == "__main__":
    main()

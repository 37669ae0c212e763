"""Latency of one typical interaction per widget (the goal is under 100 ms each).

Prints ``<WidgetName> <median milliseconds>`` per widget, the median over
REPEATS interactions, each timed alone:

* SmithStepper: one step forward through Algorithm 1 on the default 3 x 3 matrix;
* KernelLattice: one beta change in the 3-D example of report fig. 4
  (``A = [[1, -2, -2]]``, shape 8 x 6 x 6: the slower, 3-D picture);
* PolytopeView: one beta change in the same example (a 2-D kernel, fig. 4b);
* GraphView: one step forward through the reverse sweep of the report's
  sec. 6 example (14 nodes, the largest picture);
* ProgramGraph: one step forward through the sweep of chapter 11's network (7 definitions, 13 tensors),
  each step drawn afresh (a new view when the sweep ends);
* DerivationExplorer: one switch of preset, cycling through the presets, each
  derived and checked afresh (its caches emptied first);
* GradientLab: one Run of the sec. 6 example at its own (small) sizes on the
  "numba" target, kernels already compiled (a first Run, untimed, compiles
  them or loads them from Numba's disk cache): the kernels timed (median of
  up to 25 calls each), the reference evaluator, the dot-product test and the
  per-element central differences done afresh (their caches emptied first),
  and the heatmap (its axes and colour bar kept from the first Run, as for
  any Run after the first of a function).
* TwoFactorExplorer: one move of the |E1| slider (sec. 3, case 1), through
  distinct values;
* ChainTable: one click on a cell of the sec. 6 (OpenFOAM) table, exact rule
  under the bound 198,887 (Pareto fronts), cycling through the cells;
* ScheduleView: one change of the tape bound on the sec. 6 chain that changes
  the schedule, each tree drawn afresh (its picture cache emptied first; the
  boxes' pixels, kept from schedule to schedule as in use, stay);
* MemoryBudget: one move of the tape-bound slider on the sec. 6 chain.
* StepInverse: one move of the a slider through distinct values, across a = 0
  (the four sweeps on the step, the flow graphs of Fig. 1 and the a -> 0 plot);
* RegisterMachine: one switch of sweep mode on the Fig. 2 program (exp/sin
  preset), cycling through the four modes: the sweep run and shown afresh;
* NewtonDemo: one move of an x0 slider on the circle-and-line system: both
  Newton iterations afresh and the convergence plot;
* LumpExplorer: one change of order on the two-chains program (Fig. 4),
  alternating program and greedy order: cut, blocks, check and bars afresh.

The beta changes walk through distinct values, so every one is computed and
drawn afresh. Every widget is measured in one run on the machine as it is, then in the three busy settings of a
shared class server (benchmarks/workloads.py): one and two CPU-bound processes per CPU beside, and twenty
processes doing the same interaction at once. Run:
``python benchmarks/widget_latency.py [--json benchmarks/results/widget_latency.json]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tensoradbook.exercises.ch11_capstone import network
from tensoradbook.widgets import DerivationExplorer, GradientLab, GraphView, KernelLattice, PolytopeView, SmithStepper
from tensoradbook.widgets import ProgramGraph
from tensoradbook.widgets import explorer as explorer_module
from tensoradbook.widgets import gradient_lab as gradient_lab_module
from tensoradbook.widgets.explorer import PRESETS, SECTION_6
from tensoradbook.widgets import ChainTable, MemoryBudget, ScheduleView, TwoFactorExplorer
from tensoradbook.widgets import chaining as chaining_widgets
from tensoradbook.widgets import LumpExplorer, NewtonDemo, RegisterMachine, StepInverse
from tensoradbook.widgets.inverse import FIG2_PRESETS, MODE_NAMES

REPEATS = 20
FIG4 = ([[1, -2, -2]], (8, 6, 6))


def median_ms(prepare, act) -> float:
    """Median wall time of ``act(k)`` over REPEATS runs; ``prepare(k)`` runs untimed before each."""
    times = []
    for k in range(REPEATS):
        prepare(k)
        start = time.perf_counter()
        act(k)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def step_forward() -> float:
    stepper = SmithStepper()

    def rewind_at_end(_):
        if stepper.step == stepper.n_steps - 1:
            stepper.step = 0

    return median_ms(rewind_at_end, lambda _: stepper.forward())


def beta_change(widget_class) -> float:
    widget = widget_class(*FIG4)
    low, high = widget.beta_range[0]
    values = [low + k % (high - low + 1) for k in range(REPEATS)]
    return median_ms(lambda _: None, lambda k: widget.set_beta((values[k],)))


def graph_step() -> float:
    view = GraphView(*PRESETS[SECTION_6])

    def fresh_at_end(_):  # a new view, so no step is shown from the pictures already drawn
        nonlocal view
        if view.step == view.n_steps - 1:
            view = GraphView(*PRESETS[SECTION_6])

    return median_ms(fresh_at_end, lambda _: view.forward())


def program_step() -> float:
    capstone = network(batch=32, filters=16)
    view = ProgramGraph(*capstone)

    def fresh_at_end(_):
        nonlocal view
        if view.step == view.n_steps - 1:
            view = ProgramGraph(*capstone)

    return median_ms(fresh_at_end, lambda _: view.forward())


def preset_switch() -> float:
    explorer = DerivationExplorer(preset=SECTION_6)
    names = list(PRESETS)

    def forget(_):  # the explorer keeps each function's derivation and check: start cold
        explorer_module._derivation.cache_clear()
        explorer_module._check.cache_clear()

    return median_ms(forget, lambda k: explorer.set_preset(names[(k + 1) % len(names)]))


def gradient_run() -> float:
    lab = GradientLab(preset=SECTION_6, target="numba")
    if not lab.run():  # untimed: compiles the kernels, or loads them from Numba's disk cache
        raise RuntimeError(lab.error)

    def forget(_):  # the kernels stay compiled; the reference values and central differences are done afresh
        gradient_lab_module._reference.cache_clear()
        gradient_lab_module._numeric.cache_clear()

    return median_ms(forget, lambda _: lab.run())


def two_factor_slider() -> float:
    explorer = TwoFactorExplorer()
    return median_ms(lambda _: None, lambda k: explorer.set_sizes(e1=101 + k))


def chain_cell_click() -> float:
    table = ChainTable(preset=chaining_widgets.SECTION_6, rule="exact", memory=198887)
    cells = list(table.cells.values())
    return median_ms(lambda _: None, lambda k: cells[k % len(cells)].click())


def schedule_bound_change() -> float:
    view = ScheduleView(preset=chaining_widgets.SECTION_6)
    bounds = [284888, 198887, 123607, 102517, 78171]  # just below each corner of the exact staircase

    def forget(_):  # the view keeps each schedule's picture: draw afresh
        view._pictures.clear()

    return median_ms(forget, lambda k: view.set_memory(bounds[k % len(bounds)]))


def memory_slider() -> float:
    budget = MemoryBudget(preset=chaining_widgets.SECTION_6)
    return median_ms(lambda _: None, lambda k: budget.set_memory(10000 * k + 1))


def step_inverse_slider() -> float:
    widget = StepInverse()
    return median_ms(lambda _: None, lambda k: widget.set_partials(round(-1 + 0.1 * k, 2), widget.b))


def register_mode_switch() -> float:
    machine = RegisterMachine(preset=list(FIG2_PRESETS)[1])
    modes = list(MODE_NAMES)
    return median_ms(lambda _: None, lambda k: setattr(machine, "mode", modes[(k + 1) % len(modes)]))


def newton_start_slider() -> float:
    demo = NewtonDemo()
    return median_ms(lambda _: None, lambda k: demo.set_start([0.5 + 0.1 * k, 0.5]))


def lump_order_change() -> float:
    explorer = LumpExplorer()
    return median_ms(lambda _: None, lambda k: explorer.set_order("greedy" if k % 2 == 0 else "program"))


def class_medians(widgets) -> dict[str, float]:
    """:data:`~benchmarks.workloads.CLASS_SIZE` fresh processes (spawned), each timing every widget's interaction,
    all of them at once per widget (a barrier before each): the median over the processes' medians, per widget."""
    import multiprocessing

    from benchmarks.workloads import CLASS_SIZE, CLASS_TIMEOUT_S

    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(CLASS_SIZE), context.Queue()
    students = [context.Process(target=_student, args=(barrier, results)) for _ in range(CLASS_SIZE)]
    for student in students:
        student.start()
    medians: dict[str, list[float]] = {name: [] for name, _ in widgets}
    for _ in range(CLASS_SIZE * len(widgets)):
        name, median = results.get(timeout=CLASS_TIMEOUT_S)
        medians[name].append(median)
    for student in students:
        student.join()
    return {name: statistics.median(values) for name, values in medians.items()}


def _student(barrier, results) -> None:
    """One process of :func:`class_medians`: each widget measured once untimed (its first drawing), then timed
    when every process is ready."""
    for name, measure in WIDGETS:
        measure()
        barrier.wait()
        results.put((name, measure()))


def main(argv=None) -> None:
    """Each widget's median on the machine as it is, then in each busy setting of a shared class server
    (:data:`benchmarks.workloads.BUSY_SETTINGS`: one and two CPU-bound processes per CPU beside this one, and a
    class of processes doing the same interaction at once), and the ratios; ``--json PATH`` also records them
    with the machine and its load."""
    import argparse
    import json
    import os

    from benchmarks.gradients import machine
    from benchmarks.workloads import BUSY_SETTINGS, CLASS_SIZE, SPINNERS_PER_CPU, spinning

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    options = parser.parse_args(argv)
    load_before = os.getloadavg()
    quiet = {name: measure() for name, measure in WIDGETS}
    busy, processes = {}, {}
    for setting in BUSY_SETTINGS:
        if setting == "class":
            busy[setting], processes[setting] = class_medians(WIDGETS), CLASS_SIZE
            continue
        with spinning(SPINNERS_PER_CPU[setting], os.sched_getaffinity(0)) as spinners:
            busy[setting] = {name: measure() for name, measure in WIDGETS}
            processes[setting] = len(spinners)
    load_after = os.getloadavg()
    print(f"median ms per interaction, quiet (load average {load_before[0]:.2f} before, {load_after[0]:.2f} after), "
          "then busy / quiet in each setting: " + "; ".join(f"{setting}: {BUSY_SETTINGS[setting]}"
                                                           for setting in BUSY_SETTINGS))
    for name, _ in WIDGETS:
        ratios = "  ".join(f"{setting} {busy[setting][name]:.1f} ({busy[setting][name] / max(quiet[name], 1e-9):.1f}x)"
                           for setting in BUSY_SETTINGS)
        print(f"{name} {quiet[name]:.1f}  {ratios}")
    if options.json:
        with open(options.json, "w") as out:
            json.dump({"machine": machine(), "load_average_before": load_before, "load_average_after": load_after,
                       "quiet_ms": quiet,
                       "busy_settings": {setting: {"what": BUSY_SETTINGS[setting], "processes": processes[setting],
                                                   "ms": busy[setting]} for setting in BUSY_SETTINGS}},
                      out, indent=1)


WIDGETS = (("SmithStepper", step_forward),
           ("KernelLattice", lambda: beta_change(KernelLattice)),
           ("PolytopeView", lambda: beta_change(PolytopeView)),
           ("GraphView", graph_step),
           ("ProgramGraph", program_step),
           ("DerivationExplorer", preset_switch),
           ("GradientLab", gradient_run),
           ("TwoFactorExplorer", two_factor_slider),
           ("ChainTable", chain_cell_click),
           ("ScheduleView", schedule_bound_change),
           ("MemoryBudget", memory_slider),
           ("StepInverse", step_inverse_slider),
           ("RegisterMachine", register_mode_switch),
           ("NewtonDemo", newton_start_slider),
           ("LumpExplorer", lump_order_change))


if __name__ == "__main__":
    main()

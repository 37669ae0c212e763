"""Latency of one typical interaction per widget (the goal is under 100 ms each).

Prints ``<WidgetName> <median milliseconds>`` per widget, the median over
REPEATS interactions, each timed alone:

* SmithStepper: one step forward through Algorithm 1 on the default 3 x 3 matrix;
* KernelLattice: one beta change in the 3-D example of report fig. 4
  (``A = [[1, -2, -2]]``, shape 8 x 6 x 6: the slower, 3-D picture);
* PolytopeView: one beta change in the same example (a 2-D kernel, fig. 4b);
* GraphView: one step forward through the reverse sweep of the report's
  sec. 6 example (14 nodes, the largest picture);
* DerivationExplorer: one switch of preset, cycling through the presets, each
  derived and checked afresh (its caches emptied first);
* GradientLab: one Run of the sec. 6 example at its own (small) sizes on the
  "numba" target, kernels already compiled (a first Run, untimed, compiles
  them or loads them from Numba's disk cache): the kernels timed (median of
  up to 25 calls each), the reference evaluator, the dot-product test and the
  per-element central differences done afresh (their caches emptied first),
  and the heatmap (its axes and colour bar kept from the first Run, as for
  any Run after the first of a function).

The beta changes walk through distinct values, so every one is computed and
drawn afresh. Run: ``python benchmarks/widget_latency.py``.
"""

from __future__ import annotations

import statistics
import time

from tensoradbook.widgets import DerivationExplorer, GradientLab, GraphView, KernelLattice, PolytopeView, SmithStepper
from tensoradbook.widgets import explorer as explorer_module
from tensoradbook.widgets import gradient_lab as gradient_lab_module
from tensoradbook.widgets.explorer import PRESETS, SECTION_6

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


def main() -> None:
    for name, measure in (("SmithStepper", step_forward),
                          ("KernelLattice", lambda: beta_change(KernelLattice)),
                          ("PolytopeView", lambda: beta_change(PolytopeView)),
                          ("GraphView", graph_step),
                          ("DerivationExplorer", preset_switch),
                          ("GradientLab", gradient_run)):
        print(f"{name} {measure():.1f}")


if __name__ == "__main__":
    main()

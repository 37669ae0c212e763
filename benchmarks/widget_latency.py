"""Latency of one typical interaction per widget (the goal is under 100 ms each).

Prints ``<WidgetName> <median milliseconds>`` per widget, the median over
REPEATS interactions, each timed alone:

* SmithStepper: one step forward through Algorithm 1 on the default 3 x 3 matrix;
* KernelLattice: one beta change in the 3-D example of report fig. 4
  (``A = [[1, -2, -2]]``, shape 8 x 6 x 6: the slower, 3-D picture);
* PolytopeView: one beta change in the same example (a 2-D kernel, fig. 4b).

The beta changes walk through distinct values, so every one is computed and
drawn afresh. Run: ``python benchmarks/widget_latency.py``.
"""

from __future__ import annotations

import statistics
import time

from tensoradbook.widgets import KernelLattice, PolytopeView, SmithStepper

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


def main() -> None:
    for name, measure in (("SmithStepper", step_forward),
                          ("KernelLattice", lambda: beta_change(KernelLattice)),
                          ("PolytopeView", lambda: beta_change(PolytopeView))):
        print(f"{name} {measure():.1f}")


if __name__ == "__main__":
    main()

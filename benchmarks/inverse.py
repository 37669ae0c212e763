"""Inverse accumulation figures: the inverse sweeps cost what the plain ones cost (Pearlmutter & Siskind, sec. 2).

For random constant-width programs of T steps on n registers (each step
``x[r] = x[r] * c + d * tanh(x[s])``), the compiled sweeps of
tensoradbook.inverse: forward (J xdot), forward inverse (J^-T xbar, no tape),
reverse (J^T ybar) and reverse inverse (J^-1 ydot, with a tape), the ratios
forward inverse / forward and reverse inverse / reverse (the paper predicts a
flat ratio near 1), the tape, and the alternative: J from n forward sweeps,
then numpy.linalg.solve, O(nT + n^3). Where that would take over a minute it
is estimated from one sweep and a solve at a smaller size (marked ~).

Run: .venv/bin/python benchmarks/inverse.py
"""

import time

import numpy as np

from tensoradbook import inverse as ia

SIZES = [(10, 10**4), (100, 10**4), (100, 10**5), (1000, 10**6), (10**4, 10**6)]
BASELINE_BUDGET_S = 60.0


def best_seconds(functions, rounds=7):
    """The fastest of ``rounds`` runs of each function, the functions taking turns (fair on a busy machine)."""
    best = {name: float("inf") for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            start = time.perf_counter()
            function()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def random_program(n, steps, seed=0):
    rng = np.random.default_rng(seed)
    registers = rng.integers(0, n, steps).tolist()
    sources = ((np.array(registers) + rng.integers(1, max(n, 2), steps)) % n).tolist()
    scales = (1 + 0.01 * rng.random(steps)).tolist()
    weights = (0.1 * rng.standard_normal(steps)).tolist()

    def step(x):
        for r, s, c, d in zip(registers, sources, scales, weights):
            x[r] = x[r] * c + d * ia.tanh(x[s])
    return ia.trace(step, n)


def solve_seconds(n):
    """numpy.linalg.solve on a dense n x n system: measured, or scaled by n^3 from n = 2000."""
    rng = np.random.default_rng(0)
    size = min(n, 2000)
    A, b = rng.standard_normal((size, size)) + size * np.eye(size), rng.standard_normal(size)
    seconds = best_seconds({"solve": lambda: np.linalg.solve(A, b)}, 3)["solve"]
    return seconds * (n / size) ** 3, size < n


def main():
    warm = random_program(3, 10)
    for mode in ("jvp", "vjp", "forward_inverse", "reverse_inverse"):   # compile once, outside the timings
        getattr(ia, mode)(warm, np.ones(3), np.ones(3), engine="numba")
    print("Compiled sweeps (numba, one thread) on random constant-width programs; best of 7 (short programs: 31)\n"
          "interleaved runs, ms")
    print(f"{'n':>6} {'steps':>8} {'trace s':>8} {'fwd':>8} {'fwd inv':>8} {'ratio':>6} {'rev':>8} {'rev inv':>8} "
          f"{'ratio':>6} {'tape MB':>8} {'J + solve s':>12} {'/ rev inv':>10}")
    for n, steps in SIZES:
        start = time.perf_counter()
        prog = random_program(n, steps)
        traced = time.perf_counter() - start
        rng = np.random.default_rng(1)
        x, v = rng.standard_normal(n), rng.standard_normal(n)
        t = best_seconds({mode: lambda mode=mode: getattr(ia, mode)(prog, x, v, engine="numba")
                          for mode in ("jvp", "forward_inverse", "vjp", "reverse_inverse")},
                         rounds=7 if steps >= 10**6 else 31)
        # The answers agree: J (J^-1 v) = v.
        assert np.allclose(ia.jvp(prog, x, ia.reverse_inverse(prog, x, v)), v)
        solve, scaled = solve_seconds(n)
        baseline = n * t["jvp"] + solve
        if baseline < BASELINE_BUDGET_S and not scaled:
            eye = np.eye(n)
            start = time.perf_counter()
            J = np.column_stack([ia.jvp(prog, x, eye[i], engine="numba") for i in range(n)])
            answer = np.linalg.solve(J, v)
            baseline = time.perf_counter() - start
            assert np.allclose(answer, ia.reverse_inverse(prog, x, v))
            shown = f"{baseline:12.3f}"
        else:
            shown = f"~{baseline:11.0f}"
        print(f"{n:6d} {steps:8d} {traced:8.1f} {1e3 * t['jvp']:8.1f} {1e3 * t['forward_inverse']:8.1f} "
              f"{t['forward_inverse'] / t['jvp']:6.2f} {1e3 * t['vjp']:8.1f} {1e3 * t['reverse_inverse']:8.1f} "
              f"{t['reverse_inverse'] / t['vjp']:6.2f} {prog.tape_bytes / 1e6:8.1f} {shown} "
              f"{baseline / t['reverse_inverse']:10.0f}")
    print("The forward inverse sweep keeps no tape (0 MB); the reverse sweeps keep A and B of every step.")


if __name__ == "__main__":
    main()

"""Integer algebra figures: Smith normal form against sympy, Fourier-Motzkin rows with and without pruning.

Run: .venv/bin/python benchmarks/intlinalg.py
"""

import itertools
import random
import statistics
import time

import sympy
from sympy.matrices.normalforms import smith_normal_decomp

import tensoradbook as tab


def median_seconds(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def smith_figures(seed=0):
    rng = random.Random(seed)
    print("Smith normal form of random integer matrices (entries in [-9, 9]), median of 9 matrices")
    print(f"{'size':>6} {'tensoradbook ms':>16} {'sympy ms':>10} {'ratio':>7} {'ops':>5} {'max digits U,V':>15}")
    for n in (8, 16):
        ours, theirs, ops, digits = [], [], [], []
        for _ in range(9):
            rows = [[rng.randint(-9, 9) for _ in range(n)] for _ in range(n)]
            matrix = sympy.Matrix(rows)
            ours.append(median_seconds(lambda: tab.smith_normal_form(rows), 3))
            theirs.append(median_seconds(lambda: smith_normal_decomp(matrix), 3))
            result = tab.smith_normal_form(rows)
            expected, _, _ = smith_normal_decomp(matrix)
            assert sympy.Matrix(result.S.tolist()) == expected
            ops.append(len(result.operations))
            digits.append(max(len(str(abs(v))) for v in itertools.chain(result.U.flat, result.V.flat)))
        mine, sympys = statistics.median(ours), statistics.median(theirs)
        print(f"{n}x{n:<4} {1e3 * mine:16.2f} {1e3 * sympys:10.2f} {mine / sympys:7.2f} "
              f"{statistics.median(ops):5.0f} {statistics.median(digits):15.0f}")


def report_example_systems():
    """Sigma(beta) systems of the section 6 example, alpha = (i, j, k) over shape (3, 4, 5)."""
    shape = (3, 4, 5)
    occurrences = {
        "a[i; k]": [[1, 0, 0], [0, 0, 1]],
        "b[j; k]": [[0, 1, 0], [0, 0, 1]],
        "c[i; i]": [[1, 0, 0], [1, 0, 0]],
        "d[i + k]": [[1, 0, 1]],
    }
    for name, A in occurrences.items():
        inv = tab.integer_inverse(A)
        beta = [1] * len(A)
        yield name, inv.solve(beta).within(shape).constraint_matrix
    # Larger index expressions: x[a0 + ... + a5; a1 + 2 a2 + ... + 5 a5] over a 4^6 box,
    # and the 3-D octahedron |x| + |y| + |z| <= 3.
    A = [[1] * 6, list(range(6))]
    yield "x[sum a; sum k a_k] (6-D)", tab.integer_inverse(A).solve([6, 10]).within((4,) * 6).constraint_matrix
    yield "octahedron (3-D)", [list(signs) for signs in itertools.product([1, -1], repeat=3)]


def fourier_motzkin_figures():
    print()
    print("Fourier-Motzkin on systems from index expressions: rows kept after each elimination")
    print(f"{'system':<28} {'rows in':>7}  {'report (no pruning)':<24} {'pruned':<20} {'ms pruned':>9}")
    for name, matrix in report_example_systems():
        matrix = [list(row) for row in (matrix.tolist() if hasattr(matrix, "tolist") else matrix)]
        full = tab.fourier_motzkin(matrix, prune=False)
        pruned = tab.fourier_motzkin(matrix)
        seconds = median_seconds(lambda: tab.fourier_motzkin(matrix), 5)
        print(f"{name:<28} {len(matrix):>7}  {str([s.kept for s in full.steps]):<24} "
              f"{str([s.kept for s in pruned.steps]):<20} {1e3 * seconds:9.2f}")


if __name__ == "__main__":
    smith_figures()
    fourier_motzkin_figures()

"""Time to derive gradients (Algorithm 4): the report's section 6 example (goal: under 50 ms) and larger functions.

Run: .venv/bin/python benchmarks/derive.py
"""

import statistics
import time

import tensoradbook as tab

CASES = [
    ("section 6 example",
     "f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
     {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}),
    ("matrix product",
     "f[i; j] = sum{k}_0^63 (a[i; k] * b[k; j])",
     {"f": (32, 48), "a": (32, 64), "b": (64, 48)}),
    ("2-D convolution, 3 channels",
     "f[n; c; y; x] = sum{ci}_0^2 (sum{ky}_0^2 (sum{kx}_0^2 (img[n; ci; y + ky; x + kx] * w[c; ci; ky; kx])))",
     {"f": (2, 4, 8, 8), "img": (2, 3, 10, 10), "w": (4, 3, 3, 3)}),
    ("strided and diagonal",
     "f[i; j] = tanh (x[2 * i + j] * y[i; i] + sqrt (z[10 * i + j]))",
     {"f": (4, 2), "x": (9,), "y": (4, 4), "z": (40,)}),
]


def median_ms(function, repeats=7):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


if __name__ == "__main__":
    print(f"{'function':<30} {'parse ms':>9} {'derive ms':>10} {'2nd order ms':>13} {'max rel. error':>15}")
    for name, text, shapes in CASES:
        fn = tab.parse(text, shapes)
        grads = tab.derive(fn)
        first = next(iter(grads.values()))
        errors = tab.check_gradients(fn, grads=grads)
        print(f"{name:<30} {median_ms(lambda: tab.parse(text, shapes)):9.2f} "
              f"{median_ms(lambda: tab.derive(fn)):10.2f} {median_ms(lambda: tab.derive(first), 3):13.2f} "
              f"{max(errors.values()):15.1e}")

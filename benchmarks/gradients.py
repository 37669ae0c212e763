"""Forward plus all gradients of the report's section 6 example: our numba kernels against PyTorch and JAX.

The function is ``f[i; j] = exp(-sum_k ((a[i; k] + b[j; k])**2 * c[i; i] + d[i + k]**3))`` with
``f`` I x J, ``a`` I x K, ``b`` J x K, ``c`` I x I and ``d`` of length I + K - 1, at a few sizes
(the section 6 size is f 256 x 256 with a sum over 64). Every implementation computes ``f`` and
the vector-Jacobian product with a cotangent ``df`` for all four arguments (the gradients of
``sum(df * f)``), in float64:

* ours: ``fn.compile("numba")`` for f alone; ``grads.compile("numba")``, one gather kernel per
  gradient, for f plus gradients: ``grad(args, df)`` computes f itself (its kernels read it) but
  returns only the gradients, so that one call is what is timed; and the same with our serial
  scatter baseline ``"numba-scatter"`` (eq. 40) in place of the gather kernels;
* PyTorch CPU autograd: the formula written with broadcasting (``a[:, None, :] + b[None, :, :]``,
  the diagonal of ``c``, ``d`` gathered at ``i + k`` by an index tensor), then
  ``torch.autograd.grad``; its forward alone runs under ``torch.no_grad()``;
* JAX on the CPU: the same formula in ``jax.numpy``; ``jax.jit`` of ``jax.vjp`` returning f and
  the four gradients, and ``jax.jit`` of the formula for the forward alone.

The peers are the optional extra ``bench``; one that does not import is reported skipped.

Before timing, every implementation's f and gradients are checked against ours
(``np.allclose``, rtol 1e-9, atol 1e-12 times the largest magnitude) and, at the smallest size,
ours against the slow reference evaluator (``fn.evaluate``, ``grads.evaluate``); any mismatch
aborts the run.

Times are medians of three to seven calls (``time.perf_counter``; fewer than seven once a series
has taken two seconds) after warm-up calls that compile and let our modules choose their plans
(:func:`warm_up`). Other processes on the machine inflate
them; the load average before and after the run is printed. Printed per size: the forward alone,
forward plus all gradients, the cheap-gradient ratio (forward plus gradients over forward alone;
goal for ours: at most 4), ours over each (goal: at most 0.5 against the faster peer), the peak
extra memory of one forward-plus-gradients call (goal for ours: no more than the inputs and
outputs), and the largest relative difference from ours.

Threads: the process is confined to N CPUs with ``sched_setaffinity`` before numba, PyTorch or
JAX start a thread, and numba and PyTorch are told to use N threads. JAX (XLA's CPU client) has no
thread-count option: the often quoted ``XLA_FLAGS="... intra_op_parallelism_threads=N"`` is not an
XLA flag (a bare word in XLA_FLAGS is silently ignored; with dashes XLA aborts on an unknown flag),
and ``--xla_cpu_multi_thread_eigen`` is only on/off. XLA sizes its pool from the affinity mask
(jax-ml/jax#1539), so the mask is what limits JAX to N CPUs; its thread count is its own.

Peak extra memory: the kernel's high-water mark of resident memory (``VmHWM`` in
``/proc/self/status``) is reset to the current resident size (writing ``5`` to
``/proc/self/clear_refs``, Linux >= 4.0) just before the call and read just after; the printed
figure is that peak minus the resident size before the call, so it includes the outputs (f and
the gradients) and every temporary, whatever allocated it (numpy, numba, PyTorch, XLA). Freed heap
memory is first handed back to the system (``malloc_trim``) so that reusing it counts. The kernel
counts resident pages in per-CPU batches, so a figure is exact only to a few hundred KiB; small
sizes sit at that noise floor. No sampling thread is involved, so nothing is missed between
samples and a kernel that holds the GIL cannot hide its peak.

Run: ``.venv/bin/python benchmarks/gradients.py [--threads N] [--quick] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable

import numpy as np

# (I, J, K): f is I x J and the sum runs over K. The middle one is the section 6 size.
SIZES = [(64, 64, 16), (256, 256, 64), (512, 512, 128)]
QUICK_SIZES = [(8, 6, 4)]
REPEATS = 7  # calls per median, fewer (never under MIN_REPEATS) once a series has taken BUDGET_S
MIN_REPEATS = 3
BUDGET_S = 2.0  # so that the slow peers at the largest size keep the whole run near two minutes
RTOL = 1e-9
ATOL_SCALE = 1e-12  # atol = ATOL_SCALE * the largest magnitude of the value checked
GRADIENTS = ("a", "b", "c", "d")
MIB = 2.0**20
# The kernel counts resident pages in per-CPU batches (and in whole pages): below this, the peak
# extra memory cannot tell whether it stays within the inputs and outputs.
MEMORY_RESOLUTION = 512 * 1024

# The goals of the issue.
PEER_RATIO_GOAL = 0.5  # ours / the faster peer, forward plus gradients
CHEAP_GRADIENT_GOAL = 4.0  # ours: forward plus gradients / forward alone


def example(size, seed=0):
    """The function, its gradients, arguments and a cotangent at ``size = (I, J, K)``."""
    import tensoradbook as tab

    I, J, K = size
    text = f"f[i; j] = exp (-sum{{k}}_0^{K - 1} (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))"
    fn = tab.parse(text, {"f": (I, J), "a": (I, K), "b": (J, K), "c": (I, I), "d": (I + K - 1,)})
    rng = np.random.default_rng(seed)
    # Scaled so that the sum stays of order one and f neither underflows nor overflows at any K.
    args = {
        "a": rng.uniform(-0.5, 0.5, (I, K)),
        "b": rng.uniform(-0.5, 0.5, (J, K)),
        "c": rng.uniform(0.5, 1.5, (I, I)) / K,
        "d": rng.uniform(-0.5, 0.5, I + K - 1),
    }
    df = rng.uniform(-1.0, 1.0, (I, J))
    return fn, tab.derive(fn), args, df


class Implementation:
    """What is timed: ``forward()`` computes f, ``full()`` f and all four gradients.

    ``result()`` gives ``(f, {"a": da, ...})`` as numpy arrays for the checks; the timed calls
    return whatever the library returns (and have finished computing it).
    """

    def __init__(self, name, label, forward, full, result):
        self.name, self.label = name, label
        self.forward, self.full, self.result = forward, full, result


def ours(fn, grads, args, df, target="numba"):
    """Our kernels: the forward compiled for numba, the gradients for ``target``.

    ``grad(args, df)`` computes f itself (its kernels read it) but returns only the gradients, so
    that one call is what is timed as forward plus gradients; f for the check comes from ``fwd``.
    """
    forward = fn.compile("numba")
    gradients = grads.compile(target)
    name = "ours" if target == "numba" else f"ours-{target.split('-')[-1]}"
    return Implementation(name, f"ours ({target})", lambda: forward(args), lambda: gradients(args, df),
                          lambda: (forward(args), gradients(args, df)))


def torch_impl(args, df):
    """PyTorch autograd on the CPU, the formula written the way a user would with broadcasting."""
    import torch

    I, K = args["a"].shape
    tensors = {name: torch.from_numpy(value) for name, value in args.items()}
    cotangent = torch.from_numpy(df)
    index = torch.arange(I)[:, None] + torch.arange(K)[None, :]  # d[i + k] as an I x K gather

    def f_of(a, b, c, d):
        terms = (a[:, None, :] + b[None, :, :]) ** 2 * torch.diagonal(c)[:, None, None] + d[index][:, None, :] ** 3
        return torch.exp(-terms.sum(dim=-1))

    def forward():
        with torch.no_grad():
            return f_of(*(tensors[name] for name in GRADIENTS))

    def full():
        leaves = [tensors[name].detach().requires_grad_() for name in GRADIENTS]
        f = f_of(*leaves)
        gradients = torch.autograd.grad(f, leaves, cotangent)
        return f.detach(), dict(zip(GRADIENTS, gradients))

    def result():
        f, gradients = full()
        return f.numpy(), {name: value.numpy() for name, value in gradients.items()}

    return Implementation("torch", f"PyTorch {torch.__version__} autograd", forward, full, result)


def jax_impl(args, df):
    """JAX on the CPU: ``jit`` of the formula, and ``jit`` of ``vjp`` giving f and the gradients."""
    import jax
    import jax.numpy as jnp

    I, K = args["a"].shape
    inputs = [jax.device_put(args[name]) for name in GRADIENTS]
    cotangent = jax.device_put(df)
    index = jnp.arange(I)[:, None] + jnp.arange(K)[None, :]

    def f_of(a, b, c, d):
        terms = (a[:, None, :] + b[None, :, :]) ** 2 * jnp.diagonal(c)[:, None, None] + d[index][:, None, :] ** 3
        return jnp.exp(-terms.sum(axis=-1))

    def f_and_vjp(a, b, c, d, df):
        f, pullback = jax.vjp(f_of, a, b, c, d)
        return f, dict(zip(GRADIENTS, pullback(df)))

    forward_jit, full_jit = jax.jit(f_of), jax.jit(f_and_vjp)

    def full():
        return jax.block_until_ready(full_jit(*inputs, cotangent))

    def result():
        f, gradients = full()
        return np.asarray(f), {name: np.asarray(value) for name, value in gradients.items()}

    return Implementation("jax", f"JAX {jax.__version__} jit(vjp)",
                          lambda: forward_jit(*inputs).block_until_ready(), full, result)


def peers(args, df, available):
    """The peers that imported (``available`` maps a name to its import error or None)."""
    makers = {"torch": torch_impl, "jax": jax_impl}
    return [makers[name](args, df) for name, error in available.items() if error is None]


def max_error(result, expected):
    """The largest error of ``(f, gradients)`` against ``expected``, relative to each value's magnitude."""
    pairs = [(result[0], expected[0])] + [(result[1][name], expected[1][name]) for name in GRADIENTS]
    return max(float(np.max(np.abs(x - y))) / max(float(np.max(np.abs(y))), np.finfo(float).tiny)
               for x, y in pairs)


def check(label, result, expected, against):
    """Abort unless every array of ``result`` is allclose to ``expected``; return the largest error."""
    values = [("f", result[0], expected[0])] + [(f"d{n}", result[1][n], expected[1][n]) for n in GRADIENTS]
    for what, value, reference in values:
        value = np.asarray(value)
        atol = ATOL_SCALE * float(np.max(np.abs(reference)))
        if value.shape != reference.shape or not np.allclose(value, reference, rtol=RTOL, atol=atol):
            worst = np.max(np.abs(value - reference)) if value.shape == reference.shape else "shape"
            sys.exit(f"MISMATCH: {label} gives a different {what} than {against} "
                     f"(shape {value.shape} vs {reference.shape}, largest difference {worst}); not timing.")
    return max_error(result, expected)


def warm_up(contender) -> None:
    """Calls of ``contender``'s forward pass and full step until our modules have chosen how they share the CPUs
    (:func:`~tensoradbook.codegen.threads.planning_calls`): the calls timed after are the chosen plan's."""
    from tensoradbook.codegen.threads import planning_calls

    for _ in range(planning_calls()):
        contender.forward()
        contender.full()


def wall_times(call, repeats):
    """Wall times of up to ``repeats`` calls of ``call()``: at least MIN_REPEATS, then until BUDGET_S."""
    times = []
    while len(times) < min(repeats, MIN_REPEATS) or (len(times) < repeats and sum(times) < BUDGET_S):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def _malloc_trim():
    """Hand freed heap memory back to the system (glibc), so that reusing it shows up as resident."""
    name = ctypes.util.find_library("c")
    if name:
        libc = ctypes.CDLL(name)
        if hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)


def _status_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"no {field} in /proc/self/status")


def peak_memory_unavailable():
    """Why peak memory cannot be measured here, or None when it can."""
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        _status_kib("VmHWM")
    except OSError as error:
        return f"resetting the resident high-water mark failed ({error})"
    return None


def peak_memory(call):
    """Bytes of resident memory at the peak of one ``call()`` above the resident size just before it."""
    gc.collect()
    _malloc_trim()
    with open("/proc/self/clear_refs", "w") as clear_refs:
        clear_refs.write("5")  # the high-water mark becomes the current resident size
    before = _status_kib("VmRSS")
    result = call()
    peak = _status_kib("VmHWM")
    del result
    return 1024 * (peak - before)


def nbytes(*arrays):
    return sum(np.asarray(array).nbytes for array in arrays)


def measure(size, available, repeats, memory, against_reference):
    """Check, time and measure every implementation at ``size``; the figures as a dict."""
    fn, grads, args, df = example(size)
    mine = ours(fn, grads, args, df)
    expected = mine.result()  # ours() compiled the kernels (or loaded them from numba's cache)
    record = {"size": {"I": size[0], "J": size[1], "K": size[2]}, "implementations": {}}
    if against_reference:  # the reference evaluator is slow: only at the smallest size
        reference = (fn.evaluate(args), grads.evaluate(args, df))
        record["ours_vs_reference_error"] = check("ours", expected, reference, "the reference evaluator")
    record["inputs_outputs_bytes"] = nbytes(df, expected[0], *args.values(), *expected[1].values())

    contenders = [mine, ours(fn, grads, args, df, "numba-scatter")] + peers(args, df, available)
    for contender in contenders:
        figures = {"label": contender.label}
        result = contender.result()  # compiles
        warm_up(contender)
        figures["max_error_vs_ours"] = check(contender.label, result, expected, "ours")
        figures["checked"] = True
        for what, call in (("forward", contender.forward), ("full", contender.full)):
            times = wall_times(call, repeats)
            figures[f"{what}_s"], figures[f"{what}_min_s"] = statistics.median(times), min(times)
            figures[f"{what}_calls"] = len(times)
        figures["peak_extra_bytes"] = peak_memory(contender.full) if memory is None else None
        record["implementations"][contender.name] = figures
    for name, error in available.items():
        if error is not None:
            record["implementations"][name] = {"skipped": error}
    return record


def print_size(record, threads):
    """One fixed-width table for one size."""
    size, rows = record["size"], record["implementations"]
    in_out = record["inputs_outputs_bytes"]
    print(f"\nf {size['I']} x {size['J']}, sum over {size['K']}   ({threads} thread{'s' * (threads > 1)}; "
          f"inputs + outputs {in_out / MIB:.2f} MiB)")
    if "ours_vs_reference_error" in record:
        print(f"  ours matches the reference evaluator (largest relative error "
              f"{record['ours_vs_reference_error']:.1e})")
    print(f"  {'implementation':<30} {'forward ms':>11} {'fwd+grads ms':>13} {'(f+g)/fwd':>10} "
          f"{'ours/this':>10} {'peak extra MiB':>15} {'extra/(in+out)':>15} {'max rel. err':>13}")
    mine = rows["ours"]["full_s"]
    for row in rows.values():
        if "skipped" in row:
            continue
        peak = row["peak_extra_bytes"]
        peak_text = ("n/a", "n/a") if peak is None else (f"{peak / MIB:.2f}", f"{peak / in_out:.2f}")
        print(f"  {row['label']:<30} {1e3 * row['forward_s']:11.3f} {1e3 * row['full_s']:13.3f} "
              f"{row['full_s'] / row['forward_s']:10.2f} {mine / row['full_s']:10.2f} "
              f"{peak_text[0]:>15} {peak_text[1]:>15} {row['max_error_vs_ours']:13.1e}")


def goals(records):
    """Per size: the issue's goals for ours, met or not (None where the peers were all skipped)."""
    verdicts = []
    for record in records:
        rows = record["implementations"]
        mine = rows["ours"]
        timed_peers = [rows[name]["full_s"] for name in ("torch", "jax") if "full_s" in rows.get(name, {})]
        peak, in_out = mine["peak_extra_bytes"], record["inputs_outputs_bytes"]
        speed = mine["full_s"] / min(timed_peers) if timed_peers else None
        cheap = mine["full_s"] / mine["forward_s"]
        memory = None if peak is None else peak / in_out
        verdicts.append({
            "size": record["size"],
            "ours_over_faster_peer": speed,
            "cheap_gradient_ratio": cheap,
            "peak_extra_over_inputs_outputs": memory,
            "gather_over_scatter": mine["full_s"] / rows["ours-scatter"]["full_s"],
            # None: not measured, or (memory) inputs and outputs too small for the high-water mark to tell
            "met": {
                "speed": None if speed is None else speed <= PEER_RATIO_GOAL,
                "cheap_gradient": cheap <= CHEAP_GRADIENT_GOAL,
                "memory": None if memory is None or in_out < MEMORY_RESOLUTION else memory <= 1.0,
            },
        })
    return verdicts


def print_summary(verdicts):
    def judged(value, met):
        if value is None:
            return "n/a"
        return f"{value:6.2f} {'met' if met else 'NOT met' if met is not None else '(noise)':>7}"

    print(f"\nGoals for ours (forward + all gradients)\n  {'size (I x J, K)':<18} "
          f"{'vs faster peer <= 0.5':>22} {'(f+g)/fwd <= 4':>16} {'extra mem <= in+out':>20} "
          f"{'gather/scatter':>15}")
    for verdict in verdicts:
        size = verdict["size"]
        met = verdict["met"]
        label = f"{size['I']} x {size['J']}, {size['K']}"
        print(f"  {label:<18} {judged(verdict['ours_over_faster_peer'], met['speed']):>22} "
              f"{judged(verdict['cheap_gradient_ratio'], met['cheap_gradient']):>16} "
              f"{judged(verdict['peak_extra_over_inputs_outputs'], met['memory']):>20} "
              f"{verdict['gather_over_scatter']:15.2f}")
    print(f"  (noise): inputs and outputs under {MEMORY_RESOLUTION // 1024} KiB, within the resolution "
          f"of the resident high-water mark")


def confine(threads):
    """Confine this process to ``threads`` CPUs; the note on how each library is held to them."""
    allowed = sorted(os.sched_getaffinity(0))
    if not 1 <= threads <= len(allowed):
        sys.exit(f"--threads must be between 1 and {len(allowed)} (the CPUs this process may use)")
    os.sched_setaffinity(0, allowed[:threads])
    return (f"process confined to CPUs {allowed[:threads]}; numba and PyTorch set to {threads} threads; "
            f"JAX has no thread-count setting: XLA sizes its pool from the CPU mask, so it uses at most "
            f"{threads} CPUs but not necessarily {threads} threads")


def import_peers(threads):
    """Import the optional peers: ``{name: None or why it is skipped}``."""
    available = {}
    try:
        import torch

        torch.set_num_threads(threads)
        available["torch"] = None
    except Exception as error:  # not installed, or a broken build: either way the run goes on without it
        available["torch"] = f"PyTorch not importable ({type(error).__name__}: {error}); install the 'bench' extra"
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")
        available["jax"] = None
    except Exception as error:
        available["jax"] = f"JAX not importable ({type(error).__name__}: {error}); install the 'bench' extra"
    return available


def machine() -> dict:
    """What the figures were measured on: CPU model, CPUs, Python and library versions."""
    import platform
    from pathlib import Path

    import numba

    cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
                 platform.processor())
    return {"cpu": model, "cpus": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "numba": numba.__version__}


def options_of(argv, description: str, quick: str) -> argparse.Namespace:
    """The options every peer benchmark takes: ``--threads N``, ``--quick`` (what ``quick`` says) and ``--json``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)),
                        help="threads (and CPUs) for every implementation (default: all this process may use)")
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--json", metavar="PATH", help="also write the figures to PATH as JSON")
    return parser.parse_args(argv)


def set_up(title: str, threads: int, more: Callable[[], str] = lambda: "") -> tuple[str, dict, str | None]:
    """Confine this process to ``threads`` CPUs before any library starts a thread pool, set numba's threads,
    import the peers; print ``title``, the versions, how the threads are held (and ``more()``) and the peers
    skipped. Returns that note, the peers (:func:`import_peers`) and why peak memory is unavailable (None where
    it is not)."""
    thread_note = confine(threads)
    # The peers first: where Numba's OpenMP threads start before PyTorch loads, PyTorch's kernels ran 3 to 7
    # times slower in this process (a convolution's gradients 20 ms against 2.8 ms), ours no faster.
    available = import_peers(threads)
    import numba

    numba.set_num_threads(threads)
    print(title)
    thread_note += more()
    print(f"numpy {np.__version__}, numba {numba.__version__}; {thread_note}")
    for name, error in available.items():
        if error is not None:
            print(f"{name}: skipped: {error}")
    return thread_note, available, peak_memory_unavailable()


def main(argv=None):
    options = options_of(argv, __doc__.splitlines()[0], "one tiny size, one repeat (for the tests)")
    thread_note, available, memory = set_up(__doc__.splitlines()[0], options.threads)
    sizes, repeats = (QUICK_SIZES, 1) if options.quick else (SIZES, REPEATS)
    print("peak extra memory: " + ("unavailable: " + memory if memory else
                                   "kernel resident high-water mark (VmHWM) reset before the call; "
                                   f"resolution a few hundred KiB (judged from {MEMORY_RESOLUTION // 1024} KiB "
                                   "of inputs and outputs)"))
    if repeats == 1:
        print("times: one call after the warm-up calls (compiling, and our modules choosing their plans)")
    else:
        print(f"times: median of {MIN_REPEATS} to {repeats} calls (fewer once a series has taken "
              f"{BUDGET_S:g} s) after the warm-up calls (compiling, and our modules choosing their plans)")
    print("ours: forward plus gradients is one grad(args, df) call, which computes f but returns only the gradients")
    load_before = os.getloadavg()[0]
    print(f"load average before: {load_before:.2f} on {os.cpu_count()} CPUs (other processes inflate the times)")

    records = [measure(size, available, repeats, memory, against_reference=index == 0)
               for index, size in enumerate(sizes)]
    for record in records:
        print_size(record, options.threads)
    verdicts = goals(records)
    print_summary(verdicts)
    load_after = os.getloadavg()[0]
    print(f"load average after: {load_after:.2f}")

    if options.json:
        with open(options.json, "w") as out:
            json.dump({"machine": machine(), "threads": options.threads, "thread_control": thread_note,
                       "repeats": repeats,
                       "load_average": {"before": load_before, "after": load_after},
                       "memory_method": memory or "VmHWM reset via /proc/self/clear_refs",
                       "skipped": {name: error for name, error in available.items() if error},
                       "sizes": records, "goals": verdicts}, out, indent=2)


if __name__ == "__main__":
    main()

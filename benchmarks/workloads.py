"""Eight workloads, forward and forward plus gradients: our numba kernels against PyTorch and JAX, quiet and busy.

Each workload is measured at a SMALL size, where a call's fixed overheads dominate, and a LARGE one, a
realistic training size at which PyTorch's CPU kernels run on BLAS (matrix products, float64 convolutions
as im2col plus GEMM):

1. the report's section 6 example ``f[i; j] = exp(-sum_k ((a[i; k] + b[j; k])**2 * c[i; i] + d[i + k]**3))``
   (:func:`benchmarks.gradients.example`, its PyTorch and JAX versions from that file too); LARGE is the
   section 6 size, f 256 x 256 with a sum over 64;
2. a matrix product ``f[i; j] = sum_k a[i; k] * b[k; j]``, LARGE 384 x 384 x 384;
3. a multi-channel 2-D convolution, padded to keep the image's size by index conditions
   (``if {i + p >= 2 and ...} then (...) else (0)``): LARGE 8 images of 3 channels 64 x 64, 16 filters 5 x 5;
4. the same convolution with stride 2 and no padding (``x[n; c; 2 * i + p; 2 * j + q]``), LARGE as in 3;
5. a dense layer with softplus ``y[i; j] = log(1 + exp(sum_k w[j; k] * x[i; k] + b[j]))``, LARGE 256 rows,
   128 inputs, 256 outputs;
6. layer normalization as a program of three definitions (the rows' mean, their variance, the normalized
   output with a scale and a shift), LARGE 2048 rows of 512;
7. attention, ``softmax(q k^T / sqrt(D)) v``, as a program of five definitions (the scores, their row
   maxima, the shifted exponentials, the row sums, the output), LARGE 512 positions of 64;
8. one training step of chapter 11's capstone network (``network(batch=32, filters=16)``: padded 3 x 3
   convolution, ReLU, 2 x 2 max pooling, dense layer, log-softmax, mean negative log-likelihood), the
   gradients with respect to the weights only (the images and labels are data), as
   ``benchmarks/capstone.py`` trains it.

Every implementation computes the workload's output and the vector-Jacobian product with one cotangent
``df`` (the gradients of ``sum(df * output)``) with respect to every input (in 8 the weights), in float64:

* ours: ``subject.compile("numba")`` for the output alone; ``tab.derive(subject).compile("numba")`` for
  the output plus gradients, one ``grad(args, df)`` call, which runs the forward kernels (a program's keep
  every definition's value) but returns only the gradients;
* PyTorch CPU autograd: the workload written as a PyTorch user would (``@``, ``conv2d``, ``layer_norm``,
  ``softmax``, ``max_pool2d`` ...), then ``torch.autograd.grad`` with the same cotangent; its forward alone
  runs under ``torch.no_grad()``;
* JAX on the CPU: the same in ``jax.numpy`` / ``jax.lax``; ``jax.jit`` of ``jax.vjp`` returning the output
  and the gradients, and ``jax.jit`` of the function for the forward alone;
* at the matrix product also numpy's own ``a @ b`` for the forward and its two products
  ``df @ b.T``, ``a.T @ df`` for the gradients: the BLAS limit.

The peers are the optional extra ``bench``; one that does not import is reported skipped.

Before timing, every implementation's output and gradients are checked against ours (``np.allclose``,
rtol 1e-9, atol 1e-12 times the largest magnitude) and, at the SMALL size, ours against the slow reference
evaluator (``subject.evaluate``, ``gradients.evaluate``); any mismatch aborts the run.

Times are medians of three to 21 calls (``time.perf_counter``; fewer than 21 once a series has taken two
seconds: seven gave medians that moved by half between runs) after warm-up calls that compile and plan (numba's kernels
load from the disk cache after the first run). Then every series is timed again, :data:`BUSY_REPEATS` calls
each, in three busy settings of a shared class server (:data:`BUSY_SETTINGS`): every CPU busy with one
CPU-bound process (:func:`benchmarks.demo_kernels.busy_cpus`); twice as many CPU-bound processes as CPUs; and
:data:`CLASS_SIZE` fresh processes that each build the workload, warm up and then call it at the same moment
(forward plus gradients only; every process's calls pooled). Each busy median over the quiet one is printed,
and the busy goal is judged by the worst setting. Other processes on the machine inflate the times: the load
average before and after is printed and recorded. A parallel kernel (PyTorch's, OpenBLAS's, ours once)
whose threads another process has descheduled waits for them, up to a scheduler tick (4 ms here) per kernel and
product; ours now run on the CPUs the other processes leave free, one thread on a busy machine
(:mod:`tensoradbook.codegen.threads`); ``--threads 1`` shows the work alone.

No implementation can stay within 2x of its quiet time where the machine's CPUs are shared by more runnable threads
than that: a call that kept ``T`` threads busy quietly gets, shared fairly with ``S`` other runnable threads on ``C``
CPUs, ``C T / (S + T)`` CPUs, so it takes ``(S + T) / C`` times as long. In a class the others do the same work as
the call: ``N`` processes share the ``C`` CPUs, each gets ``C / N`` of them for the ``T`` CPUs' work, and takes
``N T / C`` times as long, whatever threads each runs. That fair share (:func:`fair_share`) is printed and recorded
beside each setting's ratios: 2 with one process per CPU beside, 3 with two, 20 for a class of 20 on 2 CPUs.

The peers are imported first. Importing PyTorch raises glibc's thresholds for returning freed memory to the
system, so that the arrays a call allocates and frees are reused by the next; our compiled modules raise them
themselves as the first one loads (:func:`tensoradbook.codegen.scratch.keep_freed_memory`): in a process without
PyTorch, before they did, each fresh array of megabytes cost a page fault per page (layer normalization's
gradients took 13 ms instead of 1.1 ms, attention's 10.6 ms instead of 3.9 ms).

Peak extra memory of one forward-plus-gradients call: the resident high-water mark above the resident size
before the call (:func:`benchmarks.gradients.peak_memory`; it includes the outputs and every temporary,
whatever allocated it), printed beside the bytes of the inputs, the cotangent, the output and the gradients.
Small sizes sit at the noise floor of a few hundred KiB.

Goals, judged at the LARGE size for ours, forward plus gradients: at most 1.0x the faster peer
on every workload, at most 0.5x where the peers' adjoint is a scatter (1 and 4); the matrix product within
1.5x of numpy's; at most 3x the forward alone; in every busy setting no workload more than 2x slower.

Threads: as :mod:`benchmarks.gradients` (``confine``): the process is confined to N CPUs before any library
starts a thread, numba and PyTorch use N threads, JAX sizes its pool from the CPU mask, and numpy's BLAS is
held to N threads with ``threadpoolctl`` where it is installed. The spinners of the busy pass may run on
every CPU.

Run: ``.venv/bin/python benchmarks/workloads.py [--threads N] [--quick] [--json PATH]``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks import gradients as report_example  # noqa: E402
from benchmarks.gradients import (  # noqa: E402
    Implementation,
    confine,
    import_peers,
    machine,
    options_of,
    set_up,
    nbytes,
    peak_memory,
    wall_times,
    warm_up,
)

REPEATS = 21       # calls per quiet median, fewer (never under three) once a series has taken two seconds
BUSY_REPEATS = 11  # calls per median with every CPU busy: a descheduled thread costs a call tens of ms
RTOL = 1e-9
ATOL_SCALE = 1e-12  # atol = ATOL_SCALE * the largest magnitude of the value checked
MIB = 2.0**20
PEERS = ("torch", "jax")

# The goals for ours at the LARGE size.
PEER_RATIO_GOAL = 1.0          # forward plus gradients / the faster peer's
SCATTER_PEER_RATIO_GOAL = 0.5  # the same where the peers' adjoint is a scatter
BLAS_RATIO_GOAL = 1.5          # the matrix product / numpy's
CHEAP_GRADIENT_GOAL = 3.0      # forward plus gradients / forward alone
BUSY_GOAL = 2.0                # forward plus gradients in each busy setting / quiet
CLASS_SIZE = 20                # processes calling the same workload at once: a class clicking Run together
# The busy settings, each timed after the quiet pass: CPU-bound processes beside this one (per CPU), or a class.
BUSY_SETTINGS = {
    "cores": "one CPU-bound process per CPU beside",
    "oversubscribed": "two CPU-bound processes per CPU beside",
    "class": f"{CLASS_SIZE} processes calling the same workload at once",
}
SPINNERS_PER_CPU = {"cores": 1, "oversubscribed": 2}
COLD_START_GOAL_S = 3.0        # the report's example at its LARGE size derived and compiled, an empty kernel cache


@dataclass
class Case:
    """One workload at one size: our subject (a Function or a Program), its inputs and cotangent, the
    inputs to differentiate, and makers of the peers' :class:`Implementation` (called after ours)."""

    label: str
    subject: object
    args: dict
    df: np.ndarray
    wrt: tuple
    peers: dict
    blas: Callable | None = None  # numpy's matrix product, at the matrix product only


@dataclass
class Workload:
    key: str
    title: str
    make: Callable[[tuple], Case]
    sizes: dict  # "SMALL" / "LARGE" -> the argument of make
    scatter_adjoint: bool = False    # the peers' adjoint is a scatter: the stricter speed goal


def parsed_case(label, text, shapes, args, df, torch_formula, jax_formula, wrt=None) -> Case:
    """A case from our text and the peers' formulas, each taking its library and a dict of the inputs."""
    import tensoradbook as tab

    subject = tab.parse(text, shapes)
    wrt = tuple(wrt or subject.arguments)
    peers = {"torch": lambda: torch_peer(torch_formula, args, df, wrt),
             "jax": lambda: jax_peer(jax_formula, args, df, wrt)}
    return Case(label, subject, args, df, wrt, peers)


def uniform(rng, shapes, names, low=-1.0, high=1.0) -> dict:
    return {name: rng.uniform(low, high, shapes[name]) for name in names}


# --- the workloads -----------------------------------------------------------------------------------------


def report_example_case(size) -> Case:
    fn, _, args, df = report_example.example(size)
    I, J, K = size
    peers = {"torch": lambda: report_example.torch_impl(args, df), "jax": lambda: report_example.jax_impl(args, df)}
    return Case(f"f {I} x {J}, sum over {K}", fn, args, df, tuple(fn.arguments), peers)


def matmul_case(n) -> Case:
    text = f"f[i; j] = sum{{k}}_0^{n - 1} (a[i; k] * b[k; j])"
    shapes = {"f": (n, n), "a": (n, n), "b": (n, n)}
    rng = np.random.default_rng(0)
    args = uniform(rng, shapes, ("a", "b"))
    df = rng.uniform(-1, 1, (n, n))
    case = parsed_case(f"{n} x {n} x {n}", text, shapes, args, df,
                       lambda torch, x: x["a"] @ x["b"], lambda jax, x: x["a"] @ x["b"])
    case.blas = lambda: numpy_matmul(args, df)
    return case


def limit_numpy_blas(threads) -> str:
    """numpy's BLAS held to ``threads`` threads; how, as a note. OpenBLAS sized its pool when numpy was imported,
    before the process was confined: with more threads than CPUs every product waits for descheduled threads."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # scikit-learn brings it; without it numpy keeps its pool
        return "numpy's BLAS threads not limited (threadpoolctl not installed)"
    threadpool_limits(limits=threads, user_api="blas")
    return f"numpy's BLAS set to {threads} threads (threadpoolctl)"


def numpy_matmul(args, df) -> Implementation:
    """numpy's ``a @ b`` and the two products of its gradients: what BLAS alone takes."""
    a, b = args["a"], args["b"]

    def full():
        return a @ b, {"a": df @ b.T, "b": a.T @ df}

    return Implementation("numpy", f"numpy {np.__version__} matmul", lambda: a @ b, full, full)


def convolution_shapes(size, stride):
    images, channels, side, filters, width = size
    out = side if stride == 1 else (side - width) // stride + 1
    return {"y": (images, filters, out, out), "w": (filters, channels, width, width),
            "x": (images, channels, side, side)}


def convolution_data(shapes):
    rng = np.random.default_rng(0)
    return uniform(rng, shapes, ("w", "x")), rng.uniform(-1, 1, shapes["y"])


def convolution_case(size) -> Case:
    """Padded by ``width // 2`` zeros on every side, as index conditions: the output keeps the image's size."""
    images, channels, side, filters, width = size
    pad = width // 2
    inside = f"i + p >= {pad} and i + p <= {side - 1 + pad} and j + q >= {pad} and j + q <= {side - 1 + pad}"
    text = (f"y[n; f; i; j] = sum{{c}}_0^{channels - 1} (sum{{p}}_0^{width - 1} (sum{{q}}_0^{width - 1} (if "
            f"{{{inside}}} then (w[f; c; p; q] * x[n; c; i + p - {pad}; j + q - {pad}]) else (0))))")
    shapes = convolution_shapes(size, 1)
    args, df = convolution_data(shapes)

    def torch_formula(torch, x):
        return torch.nn.functional.conv2d(x["x"], x["w"], padding=pad)

    def jax_formula(jax, x):
        return jax.lax.conv_general_dilated(x["x"], x["w"], (1, 1), ((pad, pad), (pad, pad)))

    label = f"{images} x {channels} x {side} x {side}, {filters} x {width} x {width}"
    return parsed_case(label, text, shapes, args, df, torch_formula, jax_formula)


def strided_convolution_case(size) -> Case:
    images, channels, side, filters, width = size
    text = (f"y[n; f; i; j] = sum{{c}}_0^{channels - 1} (sum{{p}}_0^{width - 1} (sum{{q}}_0^{width - 1} "
            f"(w[f; c; p; q] * x[n; c; 2 * i + p; 2 * j + q])))")
    shapes = convolution_shapes(size, 2)
    args, df = convolution_data(shapes)

    def torch_formula(torch, x):
        return torch.nn.functional.conv2d(x["x"], x["w"], stride=2)

    def jax_formula(jax, x):
        return jax.lax.conv_general_dilated(x["x"], x["w"], (2, 2), "VALID")

    label = f"{images} x {channels} x {side} x {side}, {filters} x {width} x {width}"
    return parsed_case(label, text, shapes, args, df, torch_formula, jax_formula)


def dense_case(size) -> Case:
    rows, inputs, outputs = size
    text = f"y[i; j] = log (1 + exp (sum{{k}}_0^{inputs - 1} (w[j; k] * x[i; k]) + b[j]))"
    shapes = {"y": (rows, outputs), "w": (outputs, inputs), "x": (rows, inputs), "b": (outputs,)}
    rng = np.random.default_rng(0)
    args = uniform(rng, shapes, ("w", "x", "b"))
    args["w"] /= np.sqrt(inputs)  # the pre-activations of order one: PyTorch's softplus is linear above 20
    df = rng.uniform(-1, 1, shapes["y"])

    def torch_formula(torch, x):
        return torch.nn.functional.softplus(x["x"] @ x["w"].T + x["b"])

    def jax_formula(jax, x):
        return jax.nn.softplus(x["x"] @ x["w"].T + x["b"])

    return parsed_case(f"{rows} x {inputs} -> {outputs}", text, shapes, args, df, torch_formula, jax_formula)


EPSILON = 1e-5  # layer normalization's, PyTorch's default


def layer_norm_case(size) -> Case:
    rows, width = size
    text = "\n".join([
        f"mu[n] = sum{{k}}_0^{width - 1} (x[n; k]) / {width}",
        f"v[n] = sum{{k}}_0^{width - 1} ((x[n; k] - mu[n]) ** 2) / {width}",
        f"y[n; k] = (x[n; k] - mu[n]) / sqrt (v[n] + {EPSILON}) * g[k] + h[k]",
    ])
    shapes = {"x": (rows, width), "mu": (rows,), "v": (rows,), "y": (rows, width), "g": (width,), "h": (width,)}
    rng = np.random.default_rng(0)
    args = uniform(rng, shapes, ("x", "g", "h"))
    df = rng.uniform(-1, 1, shapes["y"])

    def torch_formula(torch, x):
        return torch.nn.functional.layer_norm(x["x"], (width,), x["g"], x["h"], eps=EPSILON)

    def jax_formula(jax, x):
        centred = x["x"] - x["x"].mean(axis=1, keepdims=True)
        variance = (centred**2).mean(axis=1, keepdims=True)
        return centred / jax.numpy.sqrt(variance + EPSILON) * x["g"] + x["h"]

    return parsed_case(f"{rows} x {width}", text, shapes, args, df, torch_formula, jax_formula)


def attention_case(size) -> Case:
    """One head; ``width`` a square, so that the scale ``1 / sqrt(width)`` is exact in the text."""
    positions, width = size
    scale = 1 / width**0.5
    last = positions - 1
    text = "\n".join([
        f"s[i; j] = sum{{d}}_0^{width - 1} (q[i; d] * k[j; d]) * {scale!r}",
        f"m[i] = max{{j}}_0^{last} (s[i; j])",
        "e[i; j] = exp (s[i; j] - m[i])",
        f"r[i] = sum{{j}}_0^{last} (e[i; j])",
        f"o[i; d] = sum{{j}}_0^{last} (e[i; j] * v[j; d]) / r[i]",
    ])
    square, vector, rows = (positions, positions), (positions,), (positions, width)
    shapes = {"q": rows, "k": rows, "v": rows, "s": square, "m": vector, "e": square, "r": vector, "o": rows}
    rng = np.random.default_rng(0)
    args = uniform(rng, shapes, ("q", "k", "v"))
    df = rng.uniform(-1, 1, rows)

    def torch_formula(torch, x):
        return torch.softmax(x["q"] @ x["k"].T * scale, dim=1) @ x["v"]

    def jax_formula(jax, x):
        return jax.nn.softmax(x["q"] @ x["k"].T * scale, axis=1) @ x["v"]

    return parsed_case(f"{positions} positions x {width}", text, shapes, args, df, torch_formula, jax_formula)


CAPSTONE_WEIGHTS = ("W", "b", "V", "d")


def capstone_case(size) -> Case:
    from tensoradbook.exercises.ch11_capstone import network

    batch, filters = size
    text, shapes = network(batch=batch, filters=filters)
    rng = np.random.default_rng(0)
    # He-scaled weights as benchmarks/capstone.py draws them, small random biases, pixels in [0, 1]
    args = {"W": rng.standard_normal((filters, 3, 3)) * np.sqrt(2 / 9), "b": rng.uniform(-0.1, 0.1, filters),
            "V": rng.standard_normal((10, filters, 4, 4)) * np.sqrt(1 / (filters * 16)),
            "d": rng.uniform(-0.1, 0.1, 10), "X": rng.uniform(0, 1, (batch, 8, 8)),
            "T": np.eye(10)[rng.integers(0, 10, batch)]}
    df = np.array(1.0)  # the loss is a scalar: its gradients themselves

    def torch_formula(torch, x):
        functional = torch.nn.functional
        h = functional.conv2d(x["X"][:, None], x["W"][:, None], x["b"], padding=1)
        pooled = functional.max_pool2d(torch.relu(h), 2)
        z = pooled.flatten(1) @ x["V"].flatten(1).T + x["d"]
        return -(x["T"] * torch.log_softmax(z, dim=1)).sum() / batch

    def jax_formula(jax, x):
        h = jax.lax.conv_general_dilated(x["X"][:, None], x["W"][:, None], (1, 1), ((1, 1), (1, 1)))
        activation = jax.nn.relu(h + x["b"][None, :, None, None])
        pooled = jax.lax.reduce_window(activation, -np.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        z = pooled.reshape(batch, -1) @ x["V"].reshape(10, -1).T + x["d"]
        return -(x["T"] * jax.nn.log_softmax(z, axis=1)).sum() / batch

    return parsed_case(f"batch {batch}, {filters} filters", text, shapes, args, df, torch_formula, jax_formula,
                       wrt=CAPSTONE_WEIGHTS)


WORKLOADS = (
    Workload("example", "the report's example (sec. 6)", report_example_case,
             {"SMALL": (16, 16, 8), "LARGE": (256, 256, 64)}, scatter_adjoint=True),
    Workload("matmul", "matrix product", matmul_case, {"SMALL": 16, "LARGE": 384}),
    Workload("convolution", "2-D convolution, padded (images x channels x side^2, filters)", convolution_case,
             {"SMALL": (1, 2, 12, 4, 3), "LARGE": (8, 3, 64, 16, 5)}),
    Workload("strided", "2-D convolution, stride 2, unpadded", strided_convolution_case,
             {"SMALL": (1, 2, 12, 4, 3), "LARGE": (8, 3, 64, 16, 5)}, scatter_adjoint=True),
    Workload("dense", "dense layer with softplus (rows x inputs -> outputs)", dense_case,
             {"SMALL": (8, 16, 8), "LARGE": (256, 128, 256)}),
    Workload("layer_norm", "layer normalization, 3 definitions (rows x width)", layer_norm_case,
             {"SMALL": (8, 16), "LARGE": (2048, 512)}),
    Workload("attention", "attention softmax(q k^T / sqrt(D)) v, 5 definitions", attention_case,
             {"SMALL": (8, 4), "LARGE": (512, 64)}),
    Workload("capstone", "capstone network, one training step (gradients wrt the weights)", capstone_case,
             {"SMALL": (4, 4), "LARGE": (32, 16)}),
)


# --- the implementations -------------------------------------------------------------------------------------


def derived(case: Case):
    """The subject's gradients with respect to ``case.wrt``."""
    import tensoradbook as tab

    # A function's gradients are all its arguments'; a program's may be a part (the capstone's weights).
    wrt = None if case.wrt == tuple(case.subject.arguments) else list(case.wrt)
    return tab.derive(case.subject, wrt=wrt)


def ours(case: Case) -> Implementation:
    """Our numba kernels: the subject's for the output alone, its gradients' for the output plus gradients."""
    forward = case.subject.compile("numba")
    gradient = derived(case).compile("numba")
    args, df = case.args, case.df
    return Implementation("ours", "ours (numba)", lambda: forward(args), lambda: gradient(args, df),
                          lambda: (forward(args), gradient(args, df)))


def torch_peer(formula, args, df, wrt) -> Implementation:
    """PyTorch autograd on the CPU; ``formula(torch, tensors)`` is the workload's output."""
    import torch

    tensors = {name: torch.from_numpy(value) for name, value in args.items()}
    cotangent = torch.from_numpy(np.asarray(df))

    def forward():
        with torch.no_grad():
            return formula(torch, tensors)

    def full():
        leaves = {name: tensors[name].detach().requires_grad_() for name in wrt}
        out = formula(torch, {**tensors, **leaves})
        gradients = torch.autograd.grad(out, list(leaves.values()), cotangent)
        return out.detach(), dict(zip(wrt, gradients))

    def result():
        out, gradients = full()
        return out.numpy(), {name: value.numpy() for name, value in gradients.items()}

    return Implementation("torch", f"PyTorch {torch.__version__} autograd", forward, full, result)


def jax_peer(formula, args, df, wrt) -> Implementation:
    """JAX on the CPU: ``jit`` of ``formula(jax, arrays)``, and ``jit`` of its ``vjp`` in the inputs ``wrt``."""
    import jax

    arrays = {name: jax.device_put(value) for name, value in args.items()}
    leaves = {name: arrays[name] for name in wrt}
    data = {name: value for name, value in arrays.items() if name not in wrt}
    cotangent = jax.device_put(df)

    def output(leaves, data):
        return formula(jax, {**data, **leaves})

    def output_and_vjp(leaves, data, cotangent):
        out, pullback = jax.vjp(lambda leaves: output(leaves, data), leaves)
        (gradients,) = pullback(cotangent)
        return out, gradients

    forward_jit, full_jit = jax.jit(output), jax.jit(output_and_vjp)

    def full():
        return jax.block_until_ready(full_jit(leaves, data, cotangent))

    def result():
        out, gradients = full()
        return np.asarray(out), {name: np.asarray(value) for name, value in gradients.items()}

    return Implementation("jax", f"JAX {jax.__version__} jit(vjp)",
                          lambda: forward_jit(leaves, data).block_until_ready(), full, result)


# --- checking, timing, memory ----------------------------------------------------------------------------------


def compared(result, expected, wrt):
    """``(what, value, reference)`` for the output and each gradient."""
    return [("the output", result[0], expected[0])] + [(f"d{name}", result[1][name], expected[1][name])
                                                       for name in wrt]


def check(label, result, expected, wrt, against) -> float:
    """Abort unless every array of ``result`` is allclose to ``expected``; the largest relative error."""
    errors = []
    for what, value, reference in compared(result, expected, wrt):
        value, reference = np.asarray(value), np.asarray(reference)
        magnitude = float(np.max(np.abs(reference)))
        if value.shape != reference.shape or not np.allclose(value, reference, rtol=RTOL,
                                                             atol=ATOL_SCALE * magnitude):
            worst = np.max(np.abs(value - reference)) if value.shape == reference.shape else "shape"
            sys.exit(f"MISMATCH: {label} gives a different {what} than {against} "
                     f"(shape {value.shape} vs {reference.shape}, largest difference {worst}); not timing.")
        errors.append(float(np.max(np.abs(value - reference))) / max(magnitude, np.finfo(float).tiny))
    return max(errors)


def series(call, repeats) -> dict:
    times = wall_times(call, repeats)
    return {"median_s": statistics.median(times), "min_s": min(times), "calls": len(times)}


def measure(case: Case, key: str, size: str, available, repeats, memory, against_reference):
    """Check, time and measure every implementation of ``case``: its record and the implementations, which
    the busy pass times again."""
    mine = ours(case)
    expected = mine.result()  # ours() compiled the kernels (or loaded them from numba's cache)
    record = {"label": case.label, "text": str(case.subject), "wrt": list(case.wrt), "implementations": {},
              "workload": key, "size": size}
    if against_reference:  # the reference evaluator is slow: only at the SMALL size
        reference = (case.subject.evaluate(case.args), derived(case).evaluate(case.args, case.df))
        record["ours_vs_reference_error"] = check("ours", expected, reference, case.wrt, "the reference evaluator")
    record["inputs_outputs_bytes"] = nbytes(case.df, expected[0], *case.args.values(), *expected[1].values())

    contenders = [mine] + [case.peers[name]() for name in PEERS if available[name] is None]
    if case.blas is not None:
        contenders.append(case.blas())
    for contender in contenders:
        result = contender.result()  # compiles
        warm_up(contender)
        record["implementations"][contender.name] = {
            "label": contender.label,
            "max_error_vs_ours": check(contender.label, result, expected, case.wrt, "ours"),
            "forward": series(contender.forward, repeats),
            "full": series(contender.full, repeats),
            "peak_extra_bytes": peak_memory(contender.full) if memory is None else None,
        }
    for name in PEERS:
        if available[name] is not None:
            record["implementations"][name] = {"skipped": available[name]}
    return record, contenders


def busy_pass(measured, repeats, cpus, threads, settings=tuple(BUSY_SETTINGS)) -> dict:
    """Every series again in each busy setting; adds ``busy[setting]`` (``forward`` and ``full`` series; a class
    only ``full``, every process's calls pooled) to the records. Returns how many processes each setting ran."""
    counts = {}
    for setting in settings:
        if setting == "class":
            for record, contenders in measured:
                if record["size"] != CLASS_AT_SIZE:
                    continue
                names = [contender.name for contender in contenders]
                for name, full in class_series(record, names, threads, repeats).items():
                    record["implementations"][name].setdefault("busy", {})["class"] = {"full": full}
            counts[setting] = CLASS_SIZE
            continue
        with spinning(SPINNERS_PER_CPU[setting], cpus) as spinners:
            for record, contenders in measured:
                for contender in contenders:
                    figures = record["implementations"][contender.name]
                    figures.setdefault("busy", {})[setting] = {"forward": series(contender.forward, repeats),
                                                               "full": series(contender.full, repeats)}
            counts[setting] = len(spinners)
    return counts


@contextmanager
def spinning(per_cpu: int, cpus):
    """``per_cpu`` CPU-bound processes per CPU, allowed on every CPU of ``cpus``, while the block runs."""
    from benchmarks.demo_kernels import busy_cpus

    # The spinners are forked from this process, which JAX (multithreaded) warns against; they run only a
    # Python loop and touch no library's state, so the warning does not apply.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called")
        spinners = [spinner for _ in range(per_cpu) for spinner in busy_cpus()]
    try:
        for spinner in spinners:
            os.sched_setaffinity(spinner.pid, cpus)  # not only the CPUs this process is confined to
        yield spinners
    finally:
        for spinner in spinners:
            spinner.terminate()
        for spinner in spinners:
            spinner.join()


def class_series(record, names: list[str], threads: int, repeats: int) -> dict[str, dict]:
    """:data:`CLASS_SIZE` fresh processes (spawned: no library's threads forked) each build the workload; then, for
    each implementation of ``names`` in turn, each warms it up, waits for the others and times ``repeats``
    forward-plus-gradients calls: the calls of all pooled per implementation, as a class's students see them."""
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(CLASS_SIZE), context.Queue()
    workers = [context.Process(target=_class_worker, args=(record["workload"], record["size"], names, threads,
                                                           repeats, barrier, results))
               for _ in range(CLASS_SIZE)]
    for worker in workers:
        worker.start()
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(CLASS_SIZE * len(names)):
        name, calls = results.get(timeout=CLASS_TIMEOUT_S)
        times[name] += calls
    for worker in workers:
        worker.join()
    return {name: {"median_s": statistics.median(calls), "min_s": min(calls), "calls": len(calls)}
            for name, calls in times.items()}


CLASS_AT_SIZE = "LARGE"  # a class at the judged size only: twenty processes per workload take minutes to start
CLASS_TIMEOUT_S = 1800  # one process's warm-up and calls, among CLASS_SIZE on the machine's CPUs


def _class_worker(key, size, names, threads, repeats, barrier, results):
    """One student of :func:`class_series`: held to ``threads`` as the measuring process is."""
    confine(threads)
    if set(names) & set(PEERS):
        import_peers(threads)
    import numba

    numba.set_num_threads(threads)
    limit_numpy_blas(threads)
    workload = next(w for w in WORKLOADS if w.key == key)
    case = workload.make(workload.sizes[size])
    for name in names:
        contender = implementation(case, name)
        warm_up(contender)  # Numba loads the kernels the measuring process compiled and plans, JAX compiles
        barrier.wait()
        results.put((name, wall_times(contender.full, repeats)))
        del contender


def implementation(case: Case, name: str) -> Implementation:
    """The contender called ``name`` for ``case``: ours, a peer, or numpy's matrix product."""
    if name == "ours":
        return ours(case)
    return case.blas() if name == "numpy" else case.peers[name]()


# --- the figures ---------------------------------------------------------------------------------------------


def figures_of(record) -> dict:
    """The printed and judged figures of one size, ``None`` where a peer was skipped."""
    rows = record["implementations"]
    timed = {name: row for name, row in rows.items() if "full" in row}

    def each(what):
        return {name: timed[name][what]["median_s"] if name in timed else None for name in ("ours",) + PEERS}

    mine = timed["ours"]
    peer_full = [timed[name]["full"]["median_s"] for name in PEERS if name in timed]
    figures = {
        "forward_s": each("forward"),
        "full_s": each("full"),
        "ours_over_faster_peer": mine["full"]["median_s"] / min(peer_full) if peer_full else None,
        "cheap_gradient_ratio": mine["full"]["median_s"] / mine["forward"]["median_s"],
        "peak_extra_bytes": {name: timed[name]["peak_extra_bytes"] if name in timed else None
                             for name in ("ours",) + PEERS},
        "inputs_outputs_bytes": record["inputs_outputs_bytes"],
        "busy_over_quiet": {setting: {name: timed[name]["busy"][setting]["full"]["median_s"]
                                      / timed[name]["full"]["median_s"]
                                      if name in timed and setting in timed[name].get("busy", {}) else None
                                      for name in ("ours",) + PEERS}
                            for setting in BUSY_SETTINGS},
    }
    if "numpy" in timed:
        figures["ours_over_numpy"] = {what: mine[what]["median_s"] / timed["numpy"][what]["median_s"]
                                      for what in ("forward", "full")}
    return figures


def _ms(seconds):
    return "-" if seconds is None else f"{1e3 * seconds:.3f}"


def _ratio(value):
    return "-" if value is None else f"{value:.2f}"


def _mib(value):
    return "n/a" if value is None else f"{value / MIB:.2f}"


def print_workload(number, workload, sizes):
    """One table per workload, one row per size."""
    print(f"\n{number}. {workload.title}")
    print(f"  {'size':<8} {'shape':<34} {'forward ms ours / torch / jax':>30}  {'fwd+grads ms ours / torch / jax':>32}"
          f"  {'ours/faster':>11} {'(f+g)/fwd':>9}  {'peak extra MiB ours / torch / jax':>33} {'in+out MiB':>10}"
          + "".join(f"  {setting + ' ours / torch / jax':>29}" for setting in BUSY_SETTINGS))
    for size, record in sizes.items():
        figures = figures_of(record)
        forward = " / ".join(_ms(figures["forward_s"][name]) for name in ("ours",) + PEERS)
        full = " / ".join(_ms(figures["full_s"][name]) for name in ("ours",) + PEERS)
        peak = " / ".join(_mib(figures["peak_extra_bytes"][name]) for name in ("ours",) + PEERS)
        busy = "".join(f"  {' / '.join(_ratio(ratios[name]) for name in ('ours',) + PEERS):>29}"
                       for ratios in figures["busy_over_quiet"].values())
        print(f"  {size:<8} {record['label']:<34} {forward:>30}  {full:>32}  "
              f"{_ratio(figures['ours_over_faster_peer']):>11} {figures['cheap_gradient_ratio']:9.2f}  "
              f"{peak:>33} {_mib(figures['inputs_outputs_bytes']):>10}{busy}")
    for size, record in sizes.items():
        notes = []
        if "ours_vs_reference_error" in record:
            notes.append(f"ours equal to the reference evaluator (largest relative error "
                         f"{record['ours_vs_reference_error']:.1e})")
        notes += [f"{name} {row['max_error_vs_ours']:.1e} from ours" for name, row in record["implementations"].items()
                  if name != "ours" and "max_error_vs_ours" in row]
        print(f"  {size}: " + "; ".join(notes))
        numpy_row = record["implementations"].get("numpy")
        if numpy_row:
            ratio = figures_of(record)["ours_over_numpy"]
            print(f"  {size}: numpy matmul (the BLAS limit): forward {_ms(numpy_row['forward']['median_s'])} ms, "
                  f"fwd+grads {_ms(numpy_row['full']['median_s'])} ms; ours / numpy: forward "
                  f"{ratio['forward']:.2f}, fwd+grads {ratio['full']:.2f}")


def fair_share(setting: str, threads: int, cpus: int) -> float:
    """The busy over quiet time of a call that kept ``threads`` of ``cpus`` CPUs busy quietly, where the setting's
    other runnable threads share the CPUs fairly with it: one thread per CPU-bound process beside, or, in a class,
    processes that each do the same call (each gets ``cpus / CLASS_SIZE`` CPUs, whatever its threads)."""
    if setting == "class":
        return max(1.0, CLASS_SIZE * threads / cpus)
    return max(1.0, (SPINNERS_PER_CPU[setting] * cpus + threads) / cpus)


def goals(results, judged_size, threads: int, cpus: int):
    """The issue's goals for ours at ``judged_size``: per workload its figure and whether it is met."""
    verdicts = {"speed": {}, "blas": {}, "cheap_gradient": {}, "busy": {}}
    for workload in WORKLOADS:
        figures = figures_of(results[workload.key][judged_size])
        limit = SCATTER_PEER_RATIO_GOAL if workload.scatter_adjoint else PEER_RATIO_GOAL
        speed = figures["ours_over_faster_peer"]
        verdicts["speed"][workload.key] = {"value": speed, "goal": limit,
                                           "met": None if speed is None else speed <= limit}
        cheap = figures["cheap_gradient_ratio"]
        verdicts["cheap_gradient"][workload.key] = {"value": cheap, "goal": CHEAP_GRADIENT_GOAL,
                                                    "met": cheap <= CHEAP_GRADIENT_GOAL}
        # judged by the worst setting measured; each setting's figure beside it
        measured = {setting: ratios["ours"] for setting, ratios in figures["busy_over_quiet"].items()
                    if ratios["ours"] is not None}
        worst = max(measured.values())
        verdicts["busy"][workload.key] = {"value": worst, "goal": BUSY_GOAL, "met": worst <= BUSY_GOAL,
                                          "settings": measured,
                                          "fair_share": {setting: fair_share(setting, threads, cpus)
                                                         for setting in measured}}
        if "ours_over_numpy" in figures:
            for what, ratio in figures["ours_over_numpy"].items():
                verdicts["blas"][f"{workload.key} {what}"] = {"value": ratio, "goal": BLAS_RATIO_GOAL,
                                                              "met": ratio <= BLAS_RATIO_GOAL}
    return verdicts


GOAL_TITLES = {
    "speed": f"fwd+grads at most {PEER_RATIO_GOAL:.1f}x the faster peer ({SCATTER_PEER_RATIO_GOAL:.1f}x where the "
             f"peers' adjoint is a scatter)",
    "blas": f"matrix product within {BLAS_RATIO_GOAL:.1f}x of numpy's matmul (forward, fwd+grads)",
    "cheap_gradient": f"fwd+grads at most {CHEAP_GRADIENT_GOAL:.1f}x the forward",
    "busy": f"in each busy setting ({'; '.join(BUSY_SETTINGS.values())}), fwd+grads at most {BUSY_GOAL:.1f}x "
            "slower than quiet",
    "cold_start": f"the report's example derived and compiled, from an empty kernel cache, in at most "
                  f"{COLD_START_GOAL_S:.0f} s after imports (the capstone's: benchmarks/capstone.py)",
}


def print_goals(verdicts, judged_size):
    print(f"\nGoals for ours, judged at the {judged_size} size")
    for goal, rows in verdicts.items():
        judged = [row["met"] for row in rows.values() if row["met"] is not None]
        overall = "n/a (no peer)" if not judged else "met" if all(judged) else "NOT met"
        print(f"  {GOAL_TITLES[goal]}: {overall}")
        for name, row in rows.items():
            verdict = "n/a" if row["met"] is None else "met" if row["met"] else "NOT met"
            settings = "".join(f", {setting} {_ratio(value)} (fair share {row['fair_share'][setting]:.1f})"
                               for setting, value in row.get("settings", {}).items())
            print(f"    {name:<20} {_ratio(row['value']):>6}  (goal <= {row['goal']:.1f})  {verdict}{settings}")


def example_start() -> None:
    """The report's example at its LARGE size parsed, derived, compiled for numba and called once."""
    workload = WORKLOADS[0]
    case = workload.make(workload.sizes["LARGE"])
    derived(case).compile("numba")(case.args, case.df)


def cold_start() -> dict:
    """Starts of :func:`example_start` in fresh processes: on an empty kernel cache, then on the one it filled."""
    from benchmarks.programs import timed_start

    with tempfile.TemporaryDirectory() as cache:
        return {"cold": timed_start(__file__, cache), "warm": timed_start(__file__, cache)}


def main(argv=None):
    if argv is None and "--start-worker" in sys.argv[1:]:
        from benchmarks.programs import start_worker

        return start_worker(example_start)
    options = options_of(argv, __doc__.splitlines()[0], "only the SMALL sizes, one call per median (a smoke run)")
    starts = None if options.quick else cold_start()  # first, while no thread of this process runs

    every_cpu = os.sched_getaffinity(0)
    thread_note, available, memory = set_up(__doc__.splitlines()[0], options.threads,
                                            lambda: "; " + limit_numpy_blas(options.threads))
    sizes = ("SMALL",) if options.quick else ("SMALL", "LARGE")
    repeats, busy_repeats = (1, 1) if options.quick else (REPEATS, BUSY_REPEATS)
    print("peak extra memory: " + ("unavailable: " + memory if memory else
                                   "kernel resident high-water mark (VmHWM) reset before one fwd+grads call; "
                                   "resolution a few hundred KiB"))
    print(f"times: median of {min(repeats, report_example.MIN_REPEATS)} to {repeats} calls after the warm-up calls; "
          f"busy: {busy_repeats} calls with one CPU-bound process per CPU beside")
    load_before = os.getloadavg()
    print(f"load average before: {load_before[0]:.2f} on {os.cpu_count()} CPUs (other processes inflate the times)")

    measured, results = [], {}
    for workload in WORKLOADS:
        results[workload.key] = {}
        for size in sizes:
            record, contenders = measure(workload.make(workload.sizes[size]), workload.key, size, available, repeats,
                                         memory, against_reference=size == "SMALL")
            results[workload.key][size] = record
            measured.append((record, contenders))
    processes = busy_pass(measured, busy_repeats, every_cpu, options.threads,
                          settings=("cores",) if options.quick else tuple(BUSY_SETTINGS))
    del measured  # the implementations hold every workload's arrays

    for number, workload in enumerate(WORKLOADS, 1):
        print_workload(number, workload, results[workload.key])
    for setting, count in processes.items():
        print(f"\n  {setting}/quiet: fwd+grads {BUSY_SETTINGS[setting]} ({count} processes), over quiet")
    judged_size = sizes[-1]
    verdicts = goals(results, judged_size, options.threads, len(every_cpu))
    if starts is not None:
        for label, start in starts.items():
            print(f"  the report's example, {label} start: whole process {start['process_s']:.2f} s, after "
                  f"importing tensoradbook {start['after_imports_s']:.2f} s (derive, compile, one call)")
        cold = starts["cold"]["after_imports_s"]
        verdicts["cold_start"] = {"example": {"value": cold, "goal": COLD_START_GOAL_S,
                                              "met": cold <= COLD_START_GOAL_S}}
    print_goals(verdicts, judged_size if not options.quick else f"{judged_size} (--quick: not the goals' LARGE)")
    load_after = os.getloadavg()
    print(f"load average after: {load_after[0]:.2f}")

    if options.json:
        with open(options.json, "w", encoding="utf-8") as out:
            json.dump({"machine": machine(), "threads": options.threads, "thread_control": thread_note,
                       "repeats": repeats, "busy_repeats": busy_repeats,
                       "busy_settings": {setting: {"what": BUSY_SETTINGS[setting], "processes": count}
                                         for setting, count in processes.items()},
                       "load_average": {"before": load_before, "after": load_after},
                       "memory_method": memory or "VmHWM reset via /proc/self/clear_refs",
                       "skipped": {name: error for name, error in available.items() if error},
                       "starts": starts,
                       "workloads": {workload.key: {"title": workload.title,
                                                    "scatter_adjoint": workload.scatter_adjoint,
                                                    "sizes": {size: {**record, "figures": figures_of(record)}
                                                              for size, record in results[workload.key].items()}}
                                     for workload in WORKLOADS},
                       "goals": {"judged_at": judged_size, "titles": GOAL_TITLES, "verdicts": verdicts}},
                      out, indent=2)
            out.write("\n")


if __name__ == "__main__":
    main()

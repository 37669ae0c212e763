"""Differential tests of the generated kernels across every planning threshold.

Functions and programs from tests/differential.py, with shapes on both sides of each threshold of
:mod:`tensoradbook.codegen.thresholds`, are compiled for every CPU target (``numpy``, ``numba``, and the
scatter baseline ``numba-scatter`` for the gradients; ``DIFFERENTIAL_CUDA=1`` adds ``cuda`` and ``cuda-scatter`` on a
GPU). Every compiled forward and gradient must equal the reference
evaluator's on inputs holding NaN, +-inf, -0.0 and ties: the same NaNs, the same infinities, finite values to
rounding (sums may add in another order), and, where the function has no reduction to reorder, the same signs of
zeros. The gradients' reference is the evaluator over the form the kernels compute (``grads.simplified``: a factor
that does not depend on a sum's index multiplies the whole sum, as reverse accumulation multiplies an accumulated
adjoint by a local derivative); the report's form (``grads.evaluate``) multiplies inside the sum, which differs
where an inf meets a 0 (inf * 0 is NaN): it is the scatter kernels' reference, which add each occurrence's
contribution, and is compared with the gather kernels at finite inputs. The numba modules are called twice, so
the second call runs on the scratch arrays the first left, and on one thread and on every CPU (the fallback of a
busy machine, :mod:`tensoradbook.codegen.threads`) they give the same bits. Each
smooth function's compiled gradients agree with finite differences of the reference at ordinary inputs. Every
tensor of both forms reads back through the parser, whose exact range check finds any read leaving its tensor
where it is evaluated: numba does not check, and such a read is a wrong value or a crash.

Which side of every threshold each planned function fell on is recorded (:func:`~tensoradbook.codegen.thresholds.
traced`); :func:`test_every_threshold_is_crossed` fails while a side of one is never reached, and
:func:`test_every_planning_branch_is_reached` while a branch of the code generator's planning is not (line and
branch coverage over ``codegen/``, measured while the cases' modules are written).

Under CI (``CI=true``) the cases come from a fixed seed and :data:`CI_CASES` of them run, and every case a run has
ever found is in :data:`FOUND`. ``DIFFERENTIAL_SECONDS=3600`` (``make fuzz``) draws new cases from a random seed
for that long instead and prints every failure with its text and shapes, to be added to :data:`FOUND`.
"""

from __future__ import annotations

import ast
import json
import math
import os
import random
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import tensoradbook as tab
from tensoradbook import codegen
from tensoradbook.ad.gradcheck import directional_derivatives
from tensoradbook.codegen.thresholds import THRESHOLDS, traced
from tensoradbook.codegen.threads import forced, usable_cpus
from tensoradbook.lang.evaluate import MAX_WORK
from tensoradbook.lang.expr import ExpressionError, Sum, postorder
from tensoradbook.lang.program import definitions_of
from conftest import IN_CI
from differential import FAMILIES, Draw, Generator, ordinary_inputs, special_inputs

CI_SEED = 22
SECONDS = float(os.environ.get("DIFFERENTIAL_SECONDS") or 0)
SEED = int(os.environ.get("DIFFERENTIAL_SEED") or (CI_SEED if IN_CI or not SECONDS else
                                                    random.SystemRandom().randrange(10 ** 9)))
CI_CASES = 44
# The targets compared: the CPU's; DIFFERENTIAL_CUDA=1 adds the CUDA targets (on a GPU; the simulator is too slow)
GATHER_TARGETS = ("numpy", "numba") + (("cuda",) if os.environ.get("DIFFERENTIAL_CUDA") else ())
SCATTER_TARGETS = ("numba-scatter",) + (("cuda-scatter",) if os.environ.get("DIFFERENTIAL_CUDA") else ())
RTOL, ATOL = 1e-9, 1e-9
FD_TOLERANCE = 1e-5

# Every case an earlier run found, fixed since: (family, text, shapes).
FOUND = [
    # the lanes' sums whose bounds read the last index and whose body does not (a prefix sum, 8 lanes)
    Draw("banded", "f[i] = sum{k}_0^i (x[k])", {"f": (8,), "x": (8,)}),
    Draw("banded", "f[i; j] = sum{k}_0^j (x[i; k] * 2)", {"f": (3, 8), "x": (3, 8)}),
    Draw("banded", "f[i] = max{k}_0^i (x[k])", {"f": (9,), "x": (9,)}, smooth=False),
    Draw("banded", "f[i] = sum{k}_(2 * i)^(2 * i + 1) (x[k])", {"f": (8,), "x": (16,)}),
    Draw("banded", "f[i] = sum{k}_(ceil(i / 2))^(floor((i + 8) / 2)) (x[k])", {"f": (12,), "x": (10,)}),
    # numba's max and min of two values dropped NaN, and max (-0.0, 0.0) gave -0.0
    Draw("selects", "f[i] = max (x[i], y[i])", {"f": (2,), "x": (2,), "y": (2,)}, smooth=False),
    Draw("selects", "f[i] = min (x[i], y[i])", {"f": (9,), "x": (9,), "y": (9,)}, smooth=False),
    # max and min reductions skipped NaN; a reduction of -inf lost its adjoint
    Draw("strided", "f[i] = max{k}_0^2 (x[i; k])", {"f": (1,), "x": (1, 3)}, smooth=False),
    Draw("strided", "f[i] = min{k}_0^2 (x[i; k])", {"f": (9,), "x": (9, 3)}, smooth=False),
    # a padded convolution on the BLAS path: the padding's zeros times an inf weight
    Draw("convolution", "y[n; f; i; j] = sum{c}_0^2 (sum{p}_0^4 (sum{q}_0^4 (if {i + p - 2 >= 0 and 13 - i - p >= 0 "
         "and j + q - 2 >= 0 and 13 - j - q >= 0} then (w[f; c; p; q] * x[n; c; i + p - 2; j + q - 2]) else (0))))",
         {"y": (2, 8, 12, 12), "w": (8, 3, 5, 5), "x": (2, 3, 12, 12)}),
    # w[3 * dw_0] hoisted out of a sum over the outputs reading it, empty from dw_0 = 2 on: read at w[6]
    Draw("banded", "f[n] = sum{s}_0^(floor(n / 3)) (w[s] * (1 * 10) ** w[2 - 2 * s] * (3 * (10 / w[3 * s])))",
         {"f": (4,), "w": (4,)}),
    # a min reduction's adjoint computes each term again and compares it with f: numba's reassoc regrouped the
    # product in one kernel and not in the other, and the minimal term lost its adjoint
    Draw("banded", "f[n] = min{s}_0^(floor((n) / 3)) (w[s] * (1 * 10) ** w[2 - 2 * s] * (3 * (10 / w[3 * s])))",
         {"f": (4,), "w": (4,)}, smooth=False),
    # the sum's body derived from its adjoint's tensor dg_u without the if around the sum: b[db_z0 / 2] read at an
    # odd db_z0, b[db_z0 - 1] at db_z0 = 0 (and the scatter kernel wrote db[i - 1] at i = 0)
    Draw("gated", "g[p; i] = log (if {i % 2 = 0} then (sum{u}_0^0 (erf (b[i / 2]) * b[-2 * u])) else "
         "(exp (sqrt (2))))", {"g": (3, 3), "b": (2,)}),
    Draw("gated", "g[p; i] = log (if {i >= 1} then (sum{u}_0^0 (erf (b[i - 1]) * b[-2 * u])) else (exp (sqrt (2))))",
         {"g": (3, 3), "b": (2,)}),
]


# Cases that reach planning branches and threshold sides for certain, whatever the random draws reach: each is
# checked as the drawn ones are.
CONV = "sum{c}_0^2 (sum{p}_0^2 (sum{q}_0^2 (%s)))"
COVERING = [
    Draw("broadcast", "f[i] = erf (x[i])", {"f": (5,), "x": (5,)}),  # numpy's target has no erf of its own
    # a product the backward pass reads again from the forward pass where the caller gives it (ReadKept)
    Draw("contraction", "y[i; j] = exp (sum{k}_0^47 (x[i; k] * w[j; k])) * b[j]",
         {"y": (48, 48), "x": (48, 48), "w": (48, 48), "b": (48,)}),
    Draw("broadcast", "f[i; j] = exp (x[i; j] * w[])", {"f": (128, 128), "x": (128, 128), "w": ()}),
    # a small product beside a parallel sum of exponentials (parallel=True beside BLAS)
    Draw("contraction", "f[i; j] = sum{k}_0^63 (a[i; k] * b[k; j]) * sum{m}_0^15 (exp (a[i; m] - b[m; j]))",
         {"f": (64, 64), "a": (64, 64), "b": (64, 64)}),
    # a larger product beside a kernel of exponentials large enough to share
    Draw("contraction", "y[i; j] = exp (sum{k}_0^31 (x[i; k] * w[j; k])) * b[j]",
         {"y": (256, 256), "x": (256, 32), "w": (256, 32), "b": (256,)}),
    Draw("contraction", "f[i; j] = sum{k}_0^15 (a[k; i] * b[k; j])", {"f": (256, 64), "a": (16, 256), "b": (16, 64)}),
    Draw("contraction", "f[j; i] = sum{k}_0^15 (a[i; k] * b[k; j])", {"f": (64, 256), "a": (256, 16), "b": (16, 64)}),
    Draw("contraction", "f[n; i; j] = sum{k}_0^15 (a[n; k; i] * b[n; k; j])",
         {"f": (4, 64, 64), "a": (4, 16, 64), "b": (4, 16, 64)}),
    Draw("contraction", "f[i; j] = sum{k}_0^15 (a[i; k + 1] * b[k; j])",
         {"f": (256, 64), "a": (256, 17), "b": (16, 64)}),
    Draw("strided", "f[i; j] = sum{k}_0^7 (if {(j + k) % 2 = 0} then (w[k] * x[i; (j + k) / 2]) else (0))",
         {"f": (256, 64), "w": (8,), "x": (256, 36)}),
    # a convolution plus a bias (split off, gathered), one filter (GATHER_SHARE below, INNER_SHARE exceeded),
    # a gate stricter than the border (no padding), channels last
    Draw("convolution", "y[n; f; i; j] = tanh ((" + CONV % "w[f; c; p; q] * x[n; c; i + p; j + q]" + ") + b[f])",
         {"y": (4, 4, 22, 22), "w": (4, 3, 3, 3), "x": (4, 3, 24, 24), "b": (4,)}),
    Draw("convolution", "y[n; f; i; j] = " + CONV % "w[f; c; p; q] * x[n; c; i + p; j + q]",
         {"y": (4, 1, 46, 46), "w": (1, 3, 3, 3), "x": (4, 3, 48, 48)}),
    Draw("convolution", "y[n; f; i; j] = " + CONV % ("if {i + p - 2 >= 0 and 24 - i - p >= 0 and j + q - 1 >= 0 and "
                                                     "24 - j - q >= 0} then (w[f; c; p; q] * x[n; c; i + p - 1; "
                                                     "j + q - 1]) else (0)"),
         {"y": (4, 4, 24, 24), "w": (4, 3, 3, 3), "x": (4, 3, 24, 24)}),
    Draw("convolution", "y[n; f; i; j] = " + CONV % "w[f; p; q; c] * x[n; i + p; j + q; c]",
         {"y": (4, 8, 22, 22), "w": (8, 3, 3, 3), "x": (4, 24, 24, 3)}),
    # the filters' indices apart in the output: the gather's summed indices first
    Draw("convolution", "y[f; n; g; i] = sum{c}_0^2 (sum{p}_0^2 (w[f; g; c; p] * x[n; c; i + p]))",
         {"y": (4, 4, 4, 128), "w": (4, 4, 3, 3), "x": (4, 3, 130)}),
    # the product's free indices interleaved in the output: it lands transposed
    Draw("contraction", "f[i; j; l] = sum{k}_0^15 (a[i; l; k] * b[k; j])",
         {"f": (32, 16, 8), "a": (32, 8, 16), "b": (16, 16)}),
    # batched over x's n and z, but w's free indices land in the output in the other order: no batched product
    Draw("contraction", "f[n; g; h; z] = sum{k}_0^7 (x[n; k; z] * w[h; g; k])",
         {"f": (4, 8, 8, 64), "x": (4, 8, 64), "w": (8, 8, 8)}),
    # channels, window and output all 3 wide: the filter gradient's gather matches the forward's only after the
    # renaming's search tries and drops an index of the same extent
    Draw("convolution", "y[n; f; i; j] = " + CONV % "w[f; c; p; q] * x[n; c; i + p; j + q]",
         {"y": (17, 16, 3, 3), "w": (16, 3, 3, 3), "x": (17, 3, 5, 5)}),
    # u read at dimensions of 128 and of 130 (u <= i < 128 keeps both reads in range): no inner contraction
    Draw("contraction", "f[i] = sum{u}_0^i (sum{k}_0^15 (a[u; k] * b[k; u]))",
         {"f": (128,), "a": (128, 16), "b": (16, 130)}),
    # an output index no factor reads: a broadcast, no product
    Draw("contraction", "f[i; j] = sum{k}_0^255 (a[i; k] * b[k])", {"f": (64, 64), "a": (64, 256), "b": (256,)}),
    # a sum inside the body that keeps no output index: nothing split off
    Draw("contraction", "f[i; j] = a[i; j] * sum{k}_0^255 (b[k] * c[k])",
         {"f": (64, 64), "a": (64, 64), "b": (256,), "c": (256,)}),
    # a transposed read: no numpy over views
    Draw("broadcast", "f[i; j] = exp (x[j; i])", {"f": (128, 128), "x": (128, 128)}),
    # a tensor named as the module's numpy: renamed in the generated code
    Draw("broadcast", "f[i] = sin (np[i])", {"f": (5,), "np": (5,)}),
]


@pytest.fixture(scope="module", autouse=True)
def kernel_cache(tmp_path_factory):
    """The generated modules go to a temporary directory, not the user's cache."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TENSORADBOOK_CACHE", str(tmp_path_factory.mktemp("kernels")))
        yield


class Record:
    """What the run saw: the sides of the thresholds, the families, the cases and the failures, and the cases whose
    modules this process wrote (xdist runs the others elsewhere)."""

    def __init__(self):
        self.sides: Counter = Counter()
        self.families: Counter = Counter()
        self.cases = 0
        self.failures: list[str] = []
        self.written: set[str] = set()


RECORD = Record()


def _coverage():
    """Line and branch coverage over codegen/, started and stopped around writing the cases' modules."""
    import coverage

    return coverage.Coverage(branch=True, include=[os.path.join(os.path.dirname(codegen.__file__), "*.py")],
                             data_file=None)


COVERAGE = _coverage()


def assert_same(got, expected, what: str, signed_zeros: bool):
    """The same NaNs and infinities, finite values to rounding, and (``signed_zeros``) the signs of zeros."""
    got, expected = np.asarray(got, dtype=np.float64), np.asarray(expected)
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(got), nan), f"{what}: NaN at {np.argwhere(np.isnan(got) != nan)[:5].tolist()}"
    infinite = np.isinf(expected)
    assert np.array_equal(got[infinite], expected[infinite]) and not np.isinf(got[~infinite]).any(), \
        f"{what}: infinities differ at {np.argwhere(np.isinf(got) != infinite)[:5].tolist()}"
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=RTOL, atol=ATOL, err_msg=what)
    if signed_zeros:
        zero = expected == 0
        assert np.array_equal(np.signbit(got[zero]), np.signbit(expected[zero])), f"{what}: the sign of a zero"


def _reduces(subject) -> bool:
    return any(isinstance(node, Sum) for fn in definitions_of(subject) for node in postorder(fn.body))


def write_sources(draw: Draw, fn, grads) -> None:
    """Every target's modules, written under coverage and with the thresholds traced (the compiled callables write
    them again, from the cache)."""
    RECORD.written.add(repr((draw.text, draw.shapes)))
    COVERAGE.start()
    try:
        with traced() as sides:
            for target in codegen.GATHER_TARGETS:
                codegen.function_source(fn, target)
            for target in codegen.TARGETS:
                grads.source(target)
    finally:
        COVERAGE.stop()
    RECORD.sides.update(sides)


def compare_targets(fn, grads, rng, gather: tuple, scatter: tuple) -> None:
    """The ``gather`` targets' forward and gradients, and the ``scatter`` targets' gradients, against the reference
    evaluator on two sets of special inputs (the second with specials in ``df`` too)."""
    output = fn.shapes[definitions_of(fn)[-1].name]
    inputs = [special_inputs(fn, rng), special_inputs(fn, rng, share=0.3)]
    signed = not _reduces(fn)
    for target in gather:
        forward, gradients = fn.compile(target), grads.compile(target)
        for k, args in enumerate(inputs):
            df = np.round(rng.uniform(-2, 2, size=output) * 4) / 4
            if k:
                df.flat[:: 7] = rng.choice([np.inf, -np.inf, np.nan, -0.0], size=df.flat[:: 7].size)
            assert_same(forward(args), fn.evaluate(args), f"{target} forward, inputs {k}", signed)
            expected = grads.simplified.evaluate(args, df)
            for name, value in gradients(args, df).items():
                assert_same(value, expected[name], f"{target} d{name}, inputs {k}", False)
            if target == "numba":
                same_bits_on_any_threads(forward, gradients, args, df)
    # the scatter kernels add each occurrence's contribution, as the report's form multiplies inside its sums
    args, df = inputs[0], np.round(rng.uniform(-2, 2, size=output) * 4) / 4
    expected = grads.evaluate(args, df)
    for target in scatter:
        for name, value in grads.compile(target)(args, df).items():
            assert_same(value, expected[name], f"{target} d{name}", False)


def same_bits_on_any_threads(forward, gradients, args, df) -> None:
    """Numba's modules give the same bits on one thread (the fallback on a busy machine, :mod:`.threads`) as on
    every CPU: the threads share out whole elements, and these shapes' products are OpenBLAS's own on one thread.
    A module's plans change Numba's threads alone (:func:`~tensoradbook.codegen.threads.candidate_plans`)."""
    runs = []
    for threads in (1, usable_cpus()):
        with forced((threads, threads)):
            runs.append((forward(args), gradients(args, df)))
    (one, one_grads), (every, every_grads) = runs
    assert np.array_equal(one.view(np.int64), every.view(np.int64)), "forward: other bits on one thread"
    for name in one_grads:
        assert np.array_equal(one_grads[name].view(np.int64), every_grads[name].view(np.int64)), \
            f"d{name}: other bits on one thread"


def check(draw: Draw, seed: int) -> None:
    """Every CPU target's forward and gradients against the reference on special inputs (numba twice, the second
    time on other inputs and the scratch arrays of the first), and against finite differences where smooth."""
    fn = tab.parse(draw.text, draw.shapes)
    grads = tab.derive(fn)
    for tensor in (*grads.backward, *grads.simplified.backward):
        tab.parse(str(tensor), tensor.shapes)  # raises where a read leaves its tensor's shape
    write_sources(draw, fn, grads)
    rng = np.random.default_rng(seed)
    compare_targets(fn, grads, rng, GATHER_TARGETS, SCATTER_TARGETS)
    output = fn.shapes[definitions_of(fn)[-1].name]
    ordinary, df = ordinary_inputs(fn, rng), rng.standard_normal(output)
    report = grads.evaluate(ordinary, df)  # the report's form, not simplified: equal where the values are finite
    for name, value in grads.compile("numba")(ordinary, df).items():
        np.testing.assert_allclose(value, report[name], rtol=1e-9, atol=1e-9, err_msg=f"d{name} at finite inputs")
    if draw.smooth:
        for name, (numeric, ours) in directional_derivatives(fn, ordinary, grads=grads.compile("numba"),
                                                             seed=seed).items():
            assert abs(numeric - ours) <= FD_TOLERANCE * max(1.0, abs(numeric)), \
                f"d{name}: finite differences {numeric!r}, compiled gradient {ours!r}"


def within_reference(draw: Draw) -> bool:
    """Whether the reference evaluator computes the case's function and gradients (it refuses more than MAX_WORK,
    saying so: a min reduction's gradient over long windows counts the earlier terms per window, quadratic)."""
    try:
        fn = tab.parse(draw.text, draw.shapes)
        grads = tab.derive(fn)
    except ExpressionError:
        return True  # a refusal is a failure of its own, which run() reports
    tensors = (*definitions_of(fn), *grads.backward, *grads.simplified.backward)
    return max(tensor.work for tensor in tensors) <= MAX_WORK


def counted(draw: Draw) -> Draw:
    RECORD.cases += 1
    RECORD.families[draw.family] += 1
    return draw


def run(draw: Draw, seed: int) -> None:
    """:func:`check`, a failure kept in :data:`RECORD` with its case rather than raised."""
    try:
        check(counted(draw), seed)
    except Exception as error:  # every failure is reported with its case, after all cases ran
        RECORD.failures.append(f"{type(error).__name__}: {str(error)[:600]}\n    Draw({draw.family!r}, "
                               f"{draw.text!r}, {draw.shapes!r}, smooth={draw.smooth})  # seed {seed}")


@pytest.mark.parametrize("draw", FOUND, ids=[f"found{k}" for k in range(len(FOUND))])
def test_found_cases(draw):
    """Every case a run found: each target equals the reference."""
    check(counted(draw), seed=0)


@pytest.mark.parametrize("draw", [d for d in FOUND if math.prod(d.shapes[d.text.split("[")[0]]) <= 64],
                         ids=lambda draw: draw.text[:40])
def test_found_cases_on_cuda(draw):
    """The small cases found on the CUDA targets too (the simulator where there is no GPU, tests/conftest.py)."""
    from tensoradbook.codegen import cuda_problem

    if cuda_problem():
        pytest.skip(cuda_problem())
    fn = tab.parse(draw.text, draw.shapes)
    compare_targets(fn, tab.derive(fn), np.random.default_rng(0), ("cuda",), ("cuda-scatter",))


@pytest.mark.parametrize("draw", COVERING, ids=[f"covering{k}" for k in range(len(COVERING))])
def test_covering_cases(draw):
    """The cases that reach planning branches for certain: each target equals the reference."""
    check(counted(draw), seed=1)


def drawn_cases():
    """The drawn cases and their seeds: :data:`CI_CASES` of them from :data:`SEED`, or ``DIFFERENTIAL_SECONDS`` of
    them."""
    rng = random.Random(SEED)
    generator = Generator(rng)
    deadline = time.monotonic() + SECONDS
    count = 0
    while count < CI_CASES if not SECONDS else time.monotonic() < deadline:
        draw = generator.draw(FAMILIES[count % len(FAMILIES)])  # every family in turn
        while not within_reference(draw):
            draw = generator.draw(draw.family)
        yield draw, rng.randrange(2 ** 32)
        count += 1


def write_every_case() -> None:
    """The modules of the fixed cases and of the CI's draws that this process did not write, where xdist ran them in
    another (``-n 2`` without ``--dist loadfile``): coverage and the thresholds' sides are then the whole module's.
    Random draws for ``DIFFERENTIAL_SECONDS`` are not drawn again."""
    cases = [*FOUND, *COVERING, *(draw for draw, _ in (drawn_cases() if not SECONDS else ()))]
    for draw in cases:
        if repr((draw.text, draw.shapes)) not in RECORD.written:
            fn = tab.parse(draw.text, draw.shapes)
            write_sources(draw, fn, tab.derive(fn))


def test_drawn_cases():
    """:data:`CI_CASES` drawn cases (or ``DIFFERENTIAL_SECONDS`` of them, from a random seed), every failure reported
    with its case."""
    count = 0
    for draw, seed in drawn_cases():
        run(draw, seed)
        count += 1
    print(f"\ndifferential: seed {SEED}, {RECORD.cases} cases, families {dict(RECORD.families)}")
    print("threshold sides (below, reached):")
    for threshold in THRESHOLDS:
        below, reached = RECORD.sides[threshold.name, False], RECORD.sides[threshold.name, True]
        print(f"  {threshold.name:14} {below:6} {reached:6}   {threshold.compares}")
    assert not RECORD.failures, f"{len(RECORD.failures)} of {count} cases failed (seed {SEED}):\n" + \
        "\n".join(RECORD.failures)


def test_every_threshold_is_crossed():
    """Both sides of every planning threshold were reached by the cases above."""
    write_every_case()
    missing = [f"{t.name} {'reached' if side else 'below'}" for t in THRESHOLDS for side in (False, True)
               if not RECORD.sides[t.name, side]]
    assert not missing, f"sides of thresholds no case reached: {missing}"


# The code generator's planning: the modules that write a generated module's source.
PLANNING = {"module.py", "contraction.py", "printer.py", "targets.py", "thresholds.py", "kernel_ir.py", "render.py",
            "values.py", "sharing.py", "spellings.py", "fusion.py"}
# Planning code no differential case reaches, each with its reason: (file, function).
UNREACHED = {
    ("targets.py", "check_available"): "runs when a module compiles, not while it is written",
    ("targets.py", "cuda_problem"): "runs when a module compiles, not while it is written",
    ("targets.py", "to_device"): "runs when a module is called",
    ("targets.py", "to_host"): "runs when a module is called",
    ("targets.py", "element_loop"): "the base class's NotImplementedError: every target has its own",
    ("targets.py", "scratch"): "only the numba target plans BLAS, with scratch arrays: the base's None is a default",
    ("targets.py", "scatter_loop"): "a gather target's NotImplementedError (tests/test_codegen_structure.py)",
    ("targets.py", "accumulate"): "a gather target's NotImplementedError (tests/test_codegen_structure.py)",
    ("targets.py", "target_named"): "an unknown target's ValueError (tests/test_kernels.py)",
    ("thresholds.py", "__init__"): "runs when the module is imported, before coverage starts",
    ("printer.py", "write"): "the TypeError for a node that is not an expression: no parsed function has one",
    ("spellings.py", "taken"): "builds the spelling tables when the module is imported, before coverage starts",
    ("spellings.py", "_operators"): "builds the spelling tables when the module is imported",
    ("spellings.py", "_one_at_a_time"): "builds the spelling tables when the module is imported",
    ("spellings.py", "_numpy_call"): "builds the spelling tables when the module is imported",
    ("spellings.py", "_parsed"): "parses the spelling tables when the module is imported",
    ("spellings.py", "spelled"): "the KeyError for an operation without a spelling (tests/test_spellings.py)",
}


def _function_bodies(source: str) -> dict[int, str]:
    """Line -> the innermost function whose body holds it; lines outside every function body (imports, ``def``
    lines, class attributes) run when the module is imported, before coverage starts, and are left out."""
    lines = {}
    for node in ast.walk(ast.parse(source)):  # outer functions come before the functions inside them
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for number in range(node.body[0].lineno, node.end_lineno + 1):
                lines[number] = node.name
    return lines


def test_every_planning_branch_is_reached(tmp_path):
    """Line and branch coverage over the code generator's planning (codegen/ but for the compiled callables, the
    disk cache and the CUDA-only parts), measured while the cases above wrote their modules: every line and
    branch is reached, or listed in :data:`UNREACHED` with its reason. The uncovered ones are reported."""
    write_every_case()
    report = tmp_path / "coverage.json"
    COVERAGE.json_report(outfile=str(report))
    files = json.loads(report.read_text())["files"]
    uncovered = []
    for path, data in sorted(files.items()):
        name = os.path.basename(path)
        if name not in PLANNING:
            continue
        missing = set(data["missing_lines"]) | {arc[0] for arc in data.get("missing_branches", [])}
        source = Path(path).read_text()
        functions, lines = _function_bodies(source), source.splitlines()
        for number in sorted(missing):
            function = functions.get(number)
            if function and (name, function) not in UNREACHED:
                uncovered.append(f"{name}:{number} in {function}: {lines[number - 1].strip()}")
    assert not uncovered, f"{len(uncovered)} planning lines or branches no differential case reached:\n" + \
        "\n".join(uncovered)


@pytest.mark.parametrize("pooled", [False, True])
def test_max_and_min_reductions_route_as_pytorch(pooled):
    """The developer's guide's rule for reductions (docs/developer.md), against PyTorch as the oracle on rows with
    ties, NaN and all -inf (every target's kernels equal the reference, above): ``torch.max(dim)`` /
    ``torch.min(dim)`` and ``max_pool2d`` send each adjoint to the first element reaching the extremum, a NaN where
    there is one."""
    from test_frameworks import require

    torch = require("torch")
    rows = np.array([[0.0, 2.0, 2.0, 1.0], [1.0, 1.0, 1.0, 1.0], [-np.inf] * 4, [1.0, np.nan, 3.0, np.nan],
                     [np.inf, 2.0, np.inf, -np.inf], [-0.0, 0.0, -0.0, 0.0]])
    df = np.arange(1.0, 7.0)
    for op in ("max", "min") if not pooled else ("max",):
        if pooled:  # 2 x 2 windows, stride 2, over rows of 4 read as a 6 x 4 image
            fn = tab.parse("m[u; v] = max{r}_0^1 (max{s}_0^1 (x[2 * u + r; 2 * v + s]))", {"m": (3, 2), "x": (6, 4)})
            grid = df.reshape(3, 2)
        else:
            fn = tab.parse(f"f[i] = {op}{{k}}_0^3 (x[i; k])", {"f": (6,), "x": (6, 4)})
            grid = df
        x = torch.tensor(rows, requires_grad=True)
        value = torch.nn.functional.max_pool2d(x[None, None], 2)[0, 0] if pooled else getattr(x, op)(dim=1).values
        (value * torch.tensor(grid)).sum().backward()
        np.testing.assert_array_equal(fn.evaluate({"x": rows}), value.detach().numpy())
        np.testing.assert_array_equal(tab.derive(fn).evaluate({"x": rows}, grid)["x"], x.grad.numpy())

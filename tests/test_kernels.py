"""Generated kernels (tensoradbook.codegen): every target equals the reference evaluator.

The oracle is :meth:`Function.evaluate` and :meth:`Gradients.evaluate` of the
report's form (the derivation as printed), which share no code with the
generator; the gradients themselves are checked by finite differences in
test_derive.py. CUDA runs on the simulator here (tests/conftest.py); the PTX
test compiles every CUDA kernel for a real GPU in a process without it.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook import codegen
from tensoradbook.codegen import printer
from tensoradbook.codegen.kernel_ir import Assign
from tensoradbook.codegen.render import Renderer
from tensoradbook.codegen.targets import KERNEL_TARGETS
from tensoradbook.lang.expr import Affine, Binary, Element, ExpressionError, Number, Sum, Unary, postorder
from tensoradbook.lang.ops import OPERATIONS
from tensoradbook.lang.evaluate import MAX_WORK
from tensoradbook.ad.gradcheck import random_arguments
from tensoradbook.lang.printer import expr_text
from tensoradbook.lang.simplify import hoist_invariants
from corpus import PATTERNS, conditional_functions, moderate_arguments, random_functions, renamed_functions

from ptx_support import ptx_probe
from test_codegen_structure import brackets

REPO = Path(__file__).resolve().parents[1]
SECTION_6 = ("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
             {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)})
CORPUS = [SECTION_6] + [(text, shapes) for text, shapes, _ in PATTERNS] + [
    ("f[] = sum{k}_0^3 (x[k] * y[])", {"f": (), "x": (4,), "y": ()}),        # 0-d output and argument
    ("f[i] = np[i] * range[i] + max_[i]", {"f": (3,), "np": (3,), "range": (3,), "max_": (3,)}),  # clashing names
    ("f[i; j] = sum{k}_(i)^(i + j) (x[k] / (1 + y[j; k - i] ** 2))", {"f": (3, 3), "x": (5,), "y": (3, 3)}),
    # conditions that never hold on the box keep their else (dw = df, not 0)
    ("f[i] = if {i >= 1} then (1) else (w[])", {"f": (1,), "w": ()}),
    ("f[] = sum{k}_0^0 (if {k >= 1} then (2) else (w[]))", {"f": (), "w": ()}),
    # float exponents 2.0 and 3.0 (written as products) failed on every target
    ("f[i] = x[i] ** 2.0 + x[i] ** 3.0", {"f": (3,), "x": (3,)}),
    # a gradient that is 0 everywhere reads nothing, its scatter adjoint reads df (KeyError)
    ("f[i] = if {i >= 5} then (x[i]) else (1)", {"f": (3,), "x": (3,)}),
    # user names that are the derivation's or the generated code's own
    ("f[i] = dx[i] * x[i]", {"f": (3,), "x": (3,), "dx": (3,)}),
    ("dx[x] = exp (x[x]) * df[x] + np[x] * np_[x] * THREADS[x] + a_b[x] * a__b[x]",
     {"dx": (3,), "x": (3,), "df": (3,), "np": (3,), "np_": (3,), "THREADS": (3,), "a_b": (3,), "a__b": (3,)}),
    # max pooling of a ReLU (rows of lanes), a clipped minimum, a select on a reduction
    ("f[u; v] = max{r}_0^1 (max{s}_0^1 (if {x[2 * u + r; 2 * v + s] > 1} then (x[2 * u + r; 2 * v + s]) "
     "else (0.1 * x[2 * u + r; 2 * v + s])))", {"f": (2, 3), "x": (4, 6)}),
    ("f[i] = min (max (x[i] - 1, -0.2), 0.3) * abs (y[i] - 1) + if {min{k}_0^i (y[k]) <= x[i]} then (erf (y[i])) "
     "else (round (x[i] * 3) + sign (x[i] - 1))", {"f": (4,), "x": (4,), "y": (4,)}),
    # selects whose branches loop run only the branch taken: per element, and per row of lanes
    ("f[i; j] = if {x[i; j] > 0} then (sum{k}_0^2 (y[i; k] * x[k; j])) else (y[i; j])",
     {"f": (3, 4), "x": (3, 4), "y": (3, 4)}),
    ("f[i; j] = if {y[i; 0] > 0} then (sum{k}_0^2 (x[k; j] * y[k; i])) else (x[i; j] ** 2)",
     {"f": (3, 4), "x": (3, 4), "y": (3, 4)}),
]
RTOL, ATOL = 1e-10, 1e-13


def _data(fn, seed=0):
    rng = np.random.default_rng(seed)
    return random_arguments(fn, rng), rng.standard_normal(fn.shapes[fn.name])


def assert_matches_reference(fn, grads, target, seed=0):
    args, df = _data(fn, seed)
    if target in codegen.GATHER_TARGETS:
        np.testing.assert_allclose(fn.compile(target)(args), fn.evaluate(args), rtol=RTOL, atol=ATOL)
    compiled = grads.compile(target)
    expected = grads.evaluate(args, df)
    got = compiled(args, df)
    assert set(got) == set(expected)
    for name in expected:
        assert got[name].shape == expected[name].shape
        np.testing.assert_allclose(got[name], expected[name], rtol=RTOL, atol=ATOL, err_msg=f"{target}: d{name}")
    np.testing.assert_allclose(compiled.forward(args), fn.evaluate(args), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("target", codegen.TARGETS)
@pytest.mark.parametrize("text, shapes", CORPUS, ids=[text for text, _ in CORPUS])
def test_every_target_equals_the_reference(text, shapes, target):
    fn = tab.parse(text, shapes)
    assert_matches_reference(fn, tab.derive(fn), target)


def every_operation() -> tuple[str, dict]:
    """One function that uses every row of the operation table, written from the table itself: a row
    added there is compiled and differentiated on every target by the test below."""
    terms = []
    for k, row in enumerate(OPERATIONS.values()):
        x, y = f"x[i; {k}]", f"y[i; {k}]"
        if row.arity == 1:
            # inputs are in [0.5, 1.5]: asin and acos (whose domain is [-1, 1]) see them shifted into [-0.5, 0.5]
            argument = f"{x} - 1" if row.name in ("asin", "acos") else x
            terms.append(f"{row.name} ({argument})" if row.is_function else f"-{x}")
        else:
            terms.append(f"{row.name} ({x}, {y})" if row.is_function else f"({x} {row.name} {y})")
    n = len(OPERATIONS)
    return "f[i] = " + " + ".join(terms), {"f": (3,), "x": (3, n), "y": (3, n)}


@pytest.mark.parametrize("target", codegen.TARGETS)
def test_every_operation_compiles_on_every_target(target):
    text, shapes = every_operation()
    fn = tab.parse(text, shapes)
    assert {node.op for node in postorder(fn.body) if isinstance(node, (Unary, Binary))} == set(OPERATIONS)
    assert_matches_reference(fn, tab.derive(fn), target)  # inputs in [0.5, 1.5]: every row's domain


# Constants whose arithmetic overflows or divides by zero: the reference gives inf and nan as numpy does,
# and so must the kernels (the numpy target computed them in Python floats, which raise; found by the
# grammar fuzzer). The CUDA simulator runs Python's floats, so only a real GPU would agree there.
@pytest.mark.parametrize("target", ["numpy", "numba", "numba-scatter"])
@pytest.mark.parametrize("text, shapes", [
    ("f[j] = 1e308 ** 7.25", {"f": (1,)}),
    ("f[p; j] = (exp((x[3 * p] / 0) ** 3) ** -0.5) ** 2", {"f": (1, 2), "x": (1,)}),
    ("f[i] = 1 / x[i] + 2.0 / 0", {"f": (2,), "x": (2,)}),
    # no argument: the scatter loop had no body (IndentationError), found by the grammar fuzzer
    ("F2[] = sum{t}_(-1)^(min [-1, floor((0) / 3)]) (10)", {"F2": ()}),
])
def test_constant_arithmetic_and_constant_functions_match_the_reference(text, shapes, target):
    fn = tab.parse(text, shapes)
    with np.errstate(all="ignore"):
        assert_matches_reference(fn, tab.derive(fn), target)


@pytest.mark.parametrize("target", ["numba", "numba-scatter"])
def test_second_order_kernels(target):
    """A derivative is an element-wise function again (sec. 5.3): its gradients compile the same way."""
    fn = tab.parse(*SECTION_6)
    da = tab.derive(fn)["a"]
    assert_matches_reference(da, tab.derive(da), target, seed=1)


@settings(max_examples=60, deadline=None)
@given(random_functions())
def test_random_functions_numpy_target(fn):
    assert_matches_reference(fn, tab.derive(fn), "numpy")


@settings(max_examples=6, deadline=None)  # each example compiles a handful of Numba kernels
@given(random_functions(), st.sampled_from(["numba", "numba-scatter"]))
def test_random_functions_numba_targets(fn, target):
    assert_matches_reference(fn, tab.derive(fn), target)


@settings(max_examples=60, deadline=None)
@given(st.one_of(conditional_functions(), renamed_functions()))
def test_conditions_and_made_up_names_numpy_target(fn):
    """Conditions decided on the box, and users' names that the derivation or the code makes up too."""
    assert_matches_reference(fn, tab.derive(fn), "numpy")


@settings(max_examples=4, deadline=None)  # each example compiles a handful of Numba kernels
@given(st.one_of(conditional_functions(), renamed_functions()), st.sampled_from(["numba", "numba-scatter"]))
def test_conditions_and_made_up_names_numba_targets(fn, target):
    assert_matches_reference(fn, tab.derive(fn), target)


@settings(max_examples=150, deadline=None)
@given(random_functions())
# found by this test: hoisting regrouped the product of 2 * (df * ...) * x[0] on a second pass
@example(tab.parse("f[i; j] = sum{k0}_0^i (sqrt (1 + x[0] ** 2))", {"f": (3, 2), "x": (1,)}))
def test_simplified_gradients_equal_the_reports(fn):
    """Reading f and the outer sums' adjoints, hoisting and reordering loops change nothing but the cost."""
    grads = tab.derive(fn)
    # the report's form can be too much work for the reference evaluator, which then refuses it
    assume(all(g.work <= MAX_WORK for g in grads.values()))
    args, df = moderate_arguments(fn), np.random.default_rng(1).standard_normal(fn.shapes["f"])
    expected, got = grads.evaluate(args, df), grads.simplified.evaluate(args, df)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-11, atol=1e-13)


@settings(max_examples=150, deadline=None)
@given(st.one_of(random_functions(), conditional_functions()))
@example(tab.parse("f[i] = sum{k}_0^4 (if {i + k - 2 >= 0 and 3 - i - k >= 0 and i >= 1 and i <= 3} then "
                   "(x[i + k - 2]) else (0))", {"f": (4,), "x": (4,)}))
def test_kernel_bodies_equal_the_functions_on_their_box(fn):
    """What a kernel computes (codegen.module.kernel_body: conditions decided on the
    output's box gone, sums' gates as their bounds) has the function's values and its gradients'."""
    grads = tab.derive(fn)
    args, df = moderate_arguments(fn), np.random.default_rng(1).standard_normal(fn.shapes["f"])
    for g in [fn, *grads.values()]:
        assume(g.work <= MAX_WORK)
        kernel = tab.Function(g.name, g.indices, codegen.module.kernel_body(g), g.shapes)
        values = {**args, grads.adjoint_name: df}
        np.testing.assert_allclose(kernel.evaluate(values), g.evaluate(values), rtol=1e-12, atol=1e-14,
                                   err_msg=expr_text(kernel.body))


@settings(max_examples=300, deadline=None)
@given(st.one_of(random_functions(), conditional_functions()))
@example(tab.parse("f[i; j] = sum{k0}_0^i (sqrt (1 + x[0] ** 2))", {"f": (3, 2), "x": (1,)}))
def test_hoisting_is_idempotent(fn):
    """On bodies, on the report's gradients (nested sums whose bounds are other sums' indices) and on
    the simplified gradients, which derive hoisted already (a second pass once regrouped them)."""
    grads = tab.derive(fn)
    for body in [fn.body, *(g.body for g in grads.values())]:
        once = hoist_invariants(body)
        assert hoist_invariants(once) == once, expr_text(once)
    for g in grads.simplified.values():
        assert hoist_invariants(g.body) == g.body, expr_text(g.body)


def test_hoisting_walks_deep_trees_without_recursion():
    """Derivatives of functions at the parser's depth limit are deeper than the limit."""
    x = Element("x", (Affine.index("k"),))
    chain = x
    for _ in range(3 * sys.getrecursionlimit()):
        chain = Binary("+", Unary("neg", chain), x)
    hoisted = hoist_invariants(Sum("k", (Affine.constant_value(0),), (Affine.constant_value(2),),
                                   Binary("*", Element("y", ()), chain)))
    assert isinstance(hoisted, Binary) and hoisted.left == Element("y", ()) and isinstance(hoisted.right, Sum)


@pytest.mark.parametrize("vector", [False, True], ids=["scalar", "numpy"])
def test_generated_code_stays_flat_for_long_chains(vector):

    """A chain of 200 additions was one expression with 200 nested brackets: Python refuses it.
    The writer walks the chain from a stack and moves deep parts into temporaries."""
    n = 3 * sys.getrecursionlimit()
    chain = Element("x", ())
    for k in range(n):
        chain = Binary("+", Unary("sin", chain), Number(k))
    writer = (printer.VectorPrinter if vector else printer.ScalarPrinter)({"x": ()}, {"x"})
    writer.share(chain)
    result = writer.value(chain)
    source = "\n".join(Renderer(KERNEL_TARGETS["numpy" if vector else "numba"]).lines(
        [*writer.statements, Assign("_result", result)]))
    assert max(map(brackets, source.splitlines())) <= codegen.thresholds.MAX_NESTING.value + 5
    namespace = {"math": math, "np": np, "x": np.array(0.5) if vector else np.array([0.5])}
    exec(compile(source, "<generated>", "exec"), namespace)
    expected = 0.5
    for k in range(n):
        expected = math.sin(expected) + k
    assert namespace["_result"] == pytest.approx(expected, rel=1e-12)


def _at_the_limits():
    """The deepest functions the parser accepts, at MAX_DEPTH and MAX_NESTED_SUMS, and whether
    to check their second derivatives here too: not the product of exps, whose report-form second
    derivative the reference evaluator takes ~15 s for, nor the nested sums, ~20 s in Fourier-Motzkin."""
    from tensoradbook.lang.limits import MAX_DEPTH, MAX_NESTED_SUMS as S

    n = MAX_DEPTH - 2  # f[] = and the outermost node take levels of their own
    scalar = {"f": (), "x": ()}
    return [
        pytest.param("f[] = " + " + ".join(["x[]"] * n), scalar, True, id="plus"),
        pytest.param("f[] = " + "-" * n + "x[]", scalar, True, id="minus"),
        pytest.param("f[] = " + "sin (" * n + "x[]" + ")" * n, scalar, True, id="sin"),  # derivative twice as deep
        pytest.param("f[i] = " + " * ".join(f"exp (x[i] * y[{k % 3}])" for k in range(n)),
                     {"f": (3,), "x": (3,), "y": (3,)}, False, id="exp-product"),
        pytest.param("f[i] = " + "".join(f"sum{{k{j}}}_0^{'i' if j == 0 else f'k{j - 1}'} (" for j in range(S))
                     + f"x[k{S - 1}] * y[i]" + ")" * S, {"f": (3,), "x": (3,), "y": (3,)}, False,
                     id="sums-nested-bounds"),
        pytest.param("f[i] = " + "".join(f"sum{{k{j}}}_0^1 (" for j in range(S)) + "x[i + "
                     + " + ".join(f"k{j}" for j in range(S)) + "] ** 2" + ")" * S, {"f": (3,), "x": (3 + S,)}, False,
                     id="sums-one-index"),
    ]


@pytest.mark.parametrize("text, shapes, second", _at_the_limits())
def test_functions_at_the_parser_limits_derive_print_and_compile(text, shapes, second):
    """No RecursionError, no generated line that Python refuses, the reference's values."""
    fn = tab.parse(text, shapes)
    grads = tab.derive(fn)
    first = grads[fn.arguments[0]]
    for function, derived in [(fn, grads)] + ([(first, tab.derive(first))] if second else []):
        assert str(derived)
        for target in codegen.TARGETS:  # every module is Python that compiles
            compile(derived.source(target), "<generated>", "exec")
        assert_matches_reference(function, derived, "numpy")


def test_simplified_section_6_reads_the_forward_result_once():
    simplified = tab.derive(*SECTION_6).simplified
    assert simplified.reads_forward and simplified.simplified is simplified
    assert list(simplified.intermediates) == ["df_k"]
    assert str(simplified.intermediates["df_k"]) == "df_k[i; j] = -(df[i; j] * f[i; j])"
    for g in simplified.functions.values():
        assert "exp" not in str(g) and "df_k[" in str(g)
    # c[i; i] and the 2 of (a + b) ** 2 do not depend on j: they leave the sum
    assert str(simplified["a"]).startswith("da[da_0; da_1] = 2 * c[da_0; da_0] * sum{da_z0}")
    # dc: the inner loop runs over k (a[i; k], b[j; k] contiguous), df_k[i; j] leaves it
    assert "(df_k[dc_0; dc_z1] * sum{dc_z0}_0^4 ((a[dc_0; dc_z0] + b[dc_z1; dc_z0]) ** 2))" in str(simplified["c"])


def test_hoisting_moves_only_what_does_not_vary():
    fn = tab.parse("f[i] = sum{k}_0^3 (2 * x[i] * y[k] * if {i = 0} then (y[k]) else (0))",
                   {"f": (2,), "x": (2,), "y": (4,)})
    assert expr_text(hoist_invariants(fn.body)) == "if {i = 0} then (2 * x[i] * sum{k}_0^3 (y[k] * y[k])) else (0)"


@pytest.mark.parametrize("text, size, hoisted", [
    ("f[i] = sum{k}_i^3 (x[i] * y[k])", 4, True),
    ("f[i] = sum{k}_i^3 (x[i] * y[k])", 6, False),  # empty for i = 4, 5, where x[i] may not exist
    ("f[i] = sum{k}_(max [0; i - 2])^i (x[i] * y[k])", 6, True),  # each lower bound below each upper one
    # the inner sum's bounds are the outer's index: a <= i at every term of the outer sum
    ("f[i] = sum{a}_0^i (sum{k}_a^i (x[i] * y[k]))", 4, True),
])
def test_hoisting_leaves_a_sum_that_may_be_empty_whole(text, size, hoisted):
    """A factor leaves a sum only where the sum has a term at every point of the box: evaluated
    outside an empty sum it reads where nothing was read, w[6] of a w of 4 in the gradient below."""
    fn = tab.parse(text, {"f": (size,), "x": (size,), "y": (max(size, 4),)})
    body = hoist_invariants(fn.body, {"i": (0, size - 1)})
    assert expr_text(body).startswith("x[i] * sum{") == hoisted, expr_text(body)
    assert hoist_invariants(body, {"i": (0, size - 1)}) == body
    grads = tab.derive("f[n] = sum{s}_0^(floor(n / 3)) (w[s] * w[3 * s])", {"f": (4,), "w": (4,)})
    assert str(grads.simplified["w"]) == ("dw[dw_0] = sum{dw_z0}_(3 * dw_0)^3 (df[dw_z0] * w[3 * dw_0]) + "
                                          "if {dw_0 % 3 = 0} then (w[dw_0 / 3] * sum{dw_z0}_dw_0^3 "
                                          "(df[dw_z0])) else (0)")


def test_scatter_kernels_write_only_where_the_occurrence_is_read():
    """The scatter kernel adds x[i - 1]'s adjoint into dx[i - 1] under the occurrence's gate: at i = 0 the
    element does not exist (numba would write before the array)."""
    grads = tab.derive("f[i] = if {i >= 1} then (x[i - 1] * 2) else (0)", {"f": (3,), "x": (3,)})
    assert "if i - 1 >= 0:\n            dx[np.uint64(i - 1)] += " in grads.source("numba-scatter")
    assert "if i - 1 >= 0:\n            cuda.atomic.add(dx, i - 1, " in grads.source("cuda-scatter")


def test_kernels_comparing_computed_values_do_not_regroup_them():
    """A min reduction's adjoint compares each term, computed again, with f: the forward's and the gradient's
    kernels compile without reassoc, which may regroup a product in one and not the other. A
    kernel comparing nothing keeps it."""
    grads = tab.derive("f[n] = min{s}_0^n (w[s] * 10 ** w[3 - s] * (3 * (10 / w[s])))", {"f": (4,), "w": (4,)})
    for target in ("numba", "numba-scatter"):
        source = grads.source(target)
        assert source.count("@numba.njit(") == 2 and "fastmath" not in source, target
    assert 'fastmath={"reassoc"}' in tab.derive(*SECTION_6).source("numba")


def test_source_shows_loops_bounds_and_no_atomics():
    grads = tab.derive(*SECTION_6)
    numba_source = grads.source("numba")
    assert "for _element in range(" in numba_source and "atomic" not in numba_source  # small: serial loops
    assert "for dd_z1 in range(max(dd_0 - 2, 0), min(dd_0, 4) + 1):" in numba_source
    assert "if -dc_0 + dc_1 == 0:" in numba_source
    cuda_source = grads.source("cuda")
    assert "cuda.grid(1)" in cuda_source and "atomic" not in cuda_source
    assert cuda_source.count("cuda.atomic.add(") == 0
    assert grads.source("cuda-scatter").count("cuda.atomic.add(") == 4  # one per occurrence
    assert "df_k_kernel" in numba_source  # the outer sum's adjoint, computed once
    with pytest.raises(ValueError, match="unknown target 'gpu'"):
        grads.source("gpu")
    with pytest.raises(ValueError, match="unknown target 'numba-scatter'"):
        grads.function.compile("numba-scatter")


def test_kernels_run_in_parallel_only_where_the_work_pays(monkeypatch):
    """Small kernels loop serially (a parallel launch would cost more than their work), large ones on Numba's
    threads; a kernel with one iteration never does. Serial or parallel, every element is summed in the same
    order by one thread: the same bits."""
    grads = tab.derive(*SECTION_6)
    kernels = {block.split("(")[0]: block for block in grads.source("numba").split("def ")[1:]}
    assert not any("parallel=True" in text for text in kernels.values())
    big = tab.derive(tab.parse("f[i; j] = sum{k}_0^63 ((a[i; k] - b[j; k]) ** 2) + c[]",
                               {"f": (64, 64), "a": (64, 64), "b": (64, 64), "c": ()}))
    source = big.source("numba")
    assert source.count("parallel=True") == 3 and "numba.prange(" in source  # f, da and db: 64**3 terms each
    assert "@numba.njit(cache=True" in source  # dc, one element: serial
    args = random_arguments(big.function, np.random.default_rng(3))
    df = np.random.default_rng(4).standard_normal((64, 64))
    parallel = big.compile("numba")(args, df)
    monkeypatch.setattr(codegen.thresholds.PARALLEL_WORK, "value", math.inf)
    serial = big.compile("numba")
    assert "parallel=True" not in serial.source
    for name, value in serial(args, df).items():
        assert np.array_equal(value, parallel[name]), name


def test_a_single_row_runs_in_parallel_blocks_of_lanes(monkeypatch):
    """A column sum (a bias's gradient) is one row of lanes reading the rows of ``x`` contiguously; with work
    that pays for threads it is cut into blocks of 64 lanes (the last one partial), each a ``prange``
    iteration. Every element adds its terms in the same order: the same bits as on one thread."""
    fn = tab.parse("db[j] = sum{i}_0^299 (x[i; j] * y[i; j] ** 2)", {"db": (300,), "x": (300, 300), "y": (300, 300)})
    source = fn.kernel_source("numba")
    assert "numba.prange(5)" in source and "_stop = min(_first + 64, 300)" in source
    assert "for j in range(_first, _stop):" in source
    args = random_arguments(fn, np.random.default_rng(5))
    blocked = fn.compile("numba")(args)
    np.testing.assert_allclose(blocked, fn.evaluate(args), rtol=RTOL, atol=ATOL)
    monkeypatch.setattr(codegen.thresholds.PARALLEL_WORK, "value", math.inf)
    serial = fn.compile("numba")
    assert "prange" not in serial.source and "for j in range(300):" in serial.source
    assert np.array_equal(serial(args), blocked)


def test_cpu_kernels_run_rows_where_the_last_index_reads_contiguously():
    """Section 6's example summing over 10: da[i; k] sums over j reading b[j; k], a row of k is contiguous, so
    the row is the inner loop. f sums over k reading b[j; k] contiguously already, and its rows of 4 are too
    short to vectorise; dc's rows are too, and dd reads more contiguously along its sums."""
    text = SECTION_6[0].replace("sum{k}_0^4", "sum{k}_0^9")
    shapes = {"f": (3, 4), "a": (3, 10), "b": (4, 10), "c": (3, 3), "d": (12,)}
    source = tab.derive(text, shapes).source("numba")
    kernels_text = {block.split("(")[0]: block for block in source.split("def ")[1:]}
    assert "for da_1 in range(10):" in kernels_text["da_kernel"]
    assert "for db_1 in range(10):" in kernels_text["db_kernel"]
    assert "for _element in range(3):" in kernels_text["da_kernel"]   # one row per iteration
    for name in ("f_kernel", "dc_kernel", "dd_kernel"):
        assert "np.empty" not in kernels_text[name], name
    assert "np.uint64(" in kernels_text["f_kernel"] and "np.uint64(" not in kernels_text["da_kernel"]


def test_sums_gated_on_the_last_index_run_each_term_on_the_lanes_it_is_in_range_for():
    """A padded convolution's row: the border conditions on the lane index j become each term's range of
    lanes (no branch in the lane loop), the ones on i bound the loop of p; its gradient's bounds on the lane
    index likewise. Both equal the reference evaluator."""
    text = ("y[i; j] = sum{p}_0^2 (sum{q}_0^2 (if {i + p - 1 >= 0 and 10 - i - p >= 0 and j + q - 1 >= 0 and "
            "10 - j - q >= 0} then (w[p; q] * x[i + p - 1; j + q - 1]) else (0)))")
    fn = tab.parse(text, {"y": (10, 10), "w": (3, 3), "x": (10, 10)})
    grads = tab.derive(fn)
    source = grads.source("numba")
    kernels_text = {block.split("(")[0]: block for block in source.split("def ")[1:]}
    assert "for p in range(max(0, -i + 1), min(2, -i + 10) + 1):" in kernels_text["y_kernel"]  # gates_as_bounds
    assert "for j in range(max(0, -q + 1), min(10, -q + 10 + 1)):" in kernels_text["y_kernel"]
    assert "for dx_1 in range(max(0, dx_z0 - 1), min(10, dx_z0 + 8 + 1)):" in kernels_text["dx_kernel"]
    assert_matches_reference(fn, grads, "numba")
    # one row in parallel blocks of lanes (see above): each term's lanes are cut to its block too
    row = tab.parse("y[j] = sum{i}_0^299 (sum{q}_0^4 (if {j + q - 2 >= 0 and 301 - j - q >= 0} then "
                    "(w[i; q] * x[i; j + q - 2]) else (0)))", {"y": (300,), "w": (300, 5), "x": (300, 300)})
    assert "for j in range(max(_first, -q + 2), min(_stop, -q + 301 + 1)):" in row.kernel_source("numba")
    args = random_arguments(row, np.random.default_rng(7))
    np.testing.assert_allclose(row.compile("numba")(args), row.evaluate(args), rtol=1e-12)


def test_a_maximum_scans_its_earlier_terms_only_at_its_extremal_elements():
    """The gradient of a max reduction goes to its first extremal element (``first_extremum``): the scan of
    the earlier terms runs inside the branch where the term reaches the maximum, so the kernel stays linear
    in the reduction's length. Ties (every term equal) take the scan everywhere and still route right."""
    fn = tab.parse("m[i] = max{j}_0^7 (s[i; j])", {"m": (3,), "s": (3, 8)})
    grads = tab.derive(fn)
    kernel = grads.source("numba").split("def ds_kernel")[1].split("\ndef ")[0]
    branch, scan = kernel.index("if s["), kernel.index("for j_before in range(")
    assert branch < scan
    rows = [np.linspace(-1, 1, 8), np.full(8, 0.5), np.array([0, 3, 1, 3, 2, 3, 0, 0.0])]
    s, df = np.array(rows), np.array([1.0, 2.0, 3.0])
    expected = np.zeros_like(s)
    expected[np.arange(3), np.argmax(s, axis=1)] = df
    for target in codegen.TARGETS:
        np.testing.assert_array_equal(grads.compile(target)({"s": s}, df)["s"], expected, err_msg=target)


def test_sums_equal_but_for_their_index_names_are_computed_once():
    """Derivations name the indices of copies of one reduction apart (max{s} and max{s_1}); the kernels compute
    such sums once. Nested sums keep their indices apart: x[i; k, l] and x[i; l, k] are not merged."""
    fn = tab.parse("f[i] = sum{k}_0^3 (x[i; k]) * sum{l}_0^3 (x[i; l]) + sum{k}_0^3 (sum{l}_0^3 (x[i; k] * y[k; l]))"
                   " - sum{l}_0^3 (sum{k}_0^3 (x[i; l] * y[l; k])) + sum{k}_0^3 (sum{l}_0^3 (x[i; l] * y[k; l]))",
                   {"f": (3,), "x": (3, 4), "y": (4, 4)})
    source = fn.kernel_source("numba")
    assert source.count("in range(0, 3 + 1):") == 5, source  # 1 for the first two sums, 2 + 2 for the nested
    args = random_arguments(fn, np.random.default_rng(6))
    np.testing.assert_allclose(fn.compile("numba")(args), fn.evaluate(args), rtol=RTOL, atol=ATOL)


def test_generated_modules_are_real_files(tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORADBOOK_CACHE", str(tmp_path))
    fn = tab.parse("f[i] = x[i] * 3", {"f": (4,), "x": (4,)})
    compiled = fn.compile("numpy")
    path = Path(compiled.path)
    assert path.parent == tmp_path and path.read_text() == compiled.source == fn.kernel_source("numpy")
    assert fn.compile("numpy").module is compiled.module  # loaded once per process


CACHE_PROBE = """
import json, sys
import numpy as np
import tensoradbook as tab
fn = tab.parse("f[i; j] = sum{k}_0^2 (x[i; k] * y[k; j] ** 2)", {"f": (2, 2), "x": (2, 3), "y": (3, 2)})
grad = tab.derive(fn).compile("numba")
grad({"x": np.ones((2, 3)), "y": np.ones((3, 2))}, np.ones((2, 2)))
stats = [k.stats for k in vars(grad.module).values() if hasattr(k, "stats")]
print(json.dumps({"hits": sum(len(s.cache_hits) for s in stats), "misses": sum(len(s.cache_misses) for s in stats)}))
"""


def test_numba_reuses_its_disk_cache_in_a_new_process(tmp_path):
    env = dict(os.environ, TENSORADBOOK_CACHE=str(tmp_path))
    runs = [json.loads(subprocess.run([sys.executable, "-c", CACHE_PROBE], env=env, capture_output=True,
                                      text=True, check=True, cwd=REPO).stdout.splitlines()[-1])
            for _ in range(2)]
    assert runs[0]["misses"] > 0 and runs[0]["hits"] == 0   # compiled and saved
    assert runs[1]["misses"] == 0 and runs[1]["hits"] > 0    # loaded, not compiled again


HELPER_PROBE = """
import json, os
import numpy as np
import tensoradbook as tab
from tensoradbook.codegen import compile as compiled_code
compiled_code.HELPER_KERNELS = 2
os.getloadavg = lambda: (0.0, 0.0, 0.0)  # an idle machine: the helper runs
fn = tab.parse("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
               {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)})
grads = tab.derive(fn)
grad = grads.compile("numba")
kernels = {name: getattr(grad.module, name) for name in grad.module.KERNEL_ARRAYS}
typed = all(len(k.signatures) == 1 for k in kernels.values())  # before any call
hits = sum(len(k.stats.cache_hits) for k in kernels.values())
rng = np.random.default_rng(0)
args = {name: rng.standard_normal(fn.shapes[name]) for name in fn.arguments}
df = rng.standard_normal((3, 4))
ours, expected = grad(args, df), grads.evaluate(args, df)
same = all(np.allclose(ours[name], expected[name], rtol=1e-10, atol=1e-13) for name in expected)
print(json.dumps({"kernels": len(kernels), "typed": typed, "hits": hits, "same": same,
                  "signatures": sum(len(k.signatures) for k in kernels.values())}))
"""


def test_a_helper_process_compiles_half_the_kernels_of_a_cold_start(tmp_path):
    """codegen.compile.precompile: every kernel typed when the module loads, every second one of those not in
    the disk cache compiled by a helper process meanwhile, which this process then loads from the cache
    (its hits); the first call brings no new compilation, and the values are the reference's."""
    env = dict(os.environ, TENSORADBOOK_CACHE=str(tmp_path), NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", HELPER_PROBE], env=env, capture_output=True, text=True,
                         check=True, cwd=REPO).stdout.splitlines()[-1]
    run = json.loads(out)
    assert run["typed"] and run["same"] and run["signatures"] == run["kernels"] >= 2  # serial ones fused (fusion.py)
    assert run["hits"] == run["kernels"] // 2


def test_bad_arguments_are_reported():
    fn = tab.parse(*SECTION_6)
    grad = tab.derive(fn).compile("numpy")
    args, df = _data(fn)
    with pytest.raises(ExpressionError, match="argument 'a' has shape \\(5, 3\\), expected \\(3, 5\\)"):
        grad({**args, "a": np.ones((5, 3))}, df)
    with pytest.raises(ExpressionError, match="no value given for argument 'd'"):
        grad({k: v for k, v in args.items() if k != "d"}, df)
    with pytest.raises(ExpressionError, match="adjoint 'df' has shape \\(4, 3\\), expected \\(3, 4\\)"):
        grad(args, df.T)


BAD_INPUTS = [  # (arguments, adjoint, what the message must say)
    ({"x": np.ones(2) + 1j, "y": 2.0}, None, "argument 'x' is complex"),  # the imaginary part was dropped
    ({"x": [1.0, 2.0], "y": 1j}, None, "argument 'y' is complex"),
    ({"x": np.array([1.0, 1j], dtype=object), "y": 2.0}, None, "argument 'x' is complex"),
    ({"x": [[1.0], [2.0, 3.0]], "y": 2.0}, None, "argument 'x' is not a rectangular array"),
    ({"x": ["a", "b"], "y": 2.0}, None, "argument 'x' is not an array of real numbers"),
    ({"x": [1.0, None], "y": 2.0}, None, "argument 'x' is not an array of real numbers"),  # was nan
    ({"x": [1.0, 10**400], "y": 2.0}, None, "argument 'x' holds a number too large for float64"),
    ([np.ones(2), 2.0], None, "expected a dict from argument names to arrays \\(x, y\\), got list"),
    ({"x": np.ones(2), "y": 2.0}, np.ones(2) * 1j, "the adjoint 'df' is complex"),
    ({"x": np.ones(2), "y": 2.0}, [[1.0], [2.0, 3.0]], "the adjoint 'df' is not a rectangular array"),
    ({"x": np.ones(2), "y": 2.0}, "ab", "the adjoint 'df' is not an array of real numbers"),
]


@pytest.mark.parametrize("target", ["reference", *codegen.TARGETS])
def test_inputs_that_are_not_real_arrays_are_refused_by_name(target):
    fn = tab.parse("f[i] = x[i] * y[]", {"f": (2,), "x": (2,), "y": ()})
    grads = tab.derive(fn)
    if target == "reference":
        forward, gradients = fn.evaluate, grads.evaluate
    else:
        gradients = grads.compile(target)
        forward = fn.compile(target) if target in codegen.GATHER_TARGETS else gradients.forward
    for args, df, message in BAD_INPUTS:
        if df is None:
            with pytest.raises(ExpressionError, match=message):
                forward(args)
        with pytest.raises(ExpressionError, match=message):
            gradients(args, np.ones(2) if df is None else df)


def test_cuda_without_a_gpu_or_simulator_says_what_to_do():
    probe = ("import tensoradbook as tab\n"
             "fn = tab.parse('f[i] = x[i]', {'f': (2,), 'x': (2,)})\n"
             "try:\n    fn.compile('cuda')\nexcept RuntimeError as e:\n    print(e)\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if os.path.exists("/proc/driver/nvidia/version"):
        pytest.skip("a GPU is present: the cuda target works without the simulator")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, cwd=REPO)
    assert "NUMBA_ENABLE_CUDASIM=1" in out.stdout, out.stderr


PTX_PROBE = """  # after ptx_support.PREAMBLE
counts = {}
for text, shapes in json.loads(sys.argv[1]):
    fn = tab.parse(text, shapes)
    grads = tab.derive(fn)
    second = tab.derive(grads[fn.arguments[0]])
    ptx = {**codegen.compile_ptx(fn), **codegen.compile_ptx(grads, "cuda")}
    ptx.update({"scatter": codegen.compile_ptx(grads, "cuda-scatter")["scatter"]})
    ptx.update({"second " + k: v for k, v in codegen.compile_ptx(second, "cuda").items()})
    assert all(".visible .entry" in p for p in ptx.values()), text
    counts[text] = len(ptx)
print(json.dumps({"compiled": counts}))
"""


def test_every_cuda_kernel_compiles_to_ptx(tmp_path):
    """NVVM types and compiles each kernel for a real GPU: what the simulator (plain Python) never checks."""
    corpus = [(text, {k: list(v) for k, v in shapes.items()}) for text, shapes in CORPUS
              if "x[2 * i; j]" not in text]  # its second derivative divides an index: refused (test_derive)
    result = ptx_probe(PTX_PROBE, json.dumps(corpus), timeout=900)
    assert set(result["compiled"]) == {text for text, _ in corpus}
    assert all(n >= 4 for n in result["compiled"].values())


# --- element-wise bodies with exp, log, tanh, ...: numpy's vector math over views ------------------------------

BROADCAST_FUNCTIONS = sorted(codegen.KERNEL_TARGETS["numba"].numpy_faster)


@st.composite
def broadcast_bodies(draw):
    """An element-wise body over f[i; j; l] with reads at plain indices in order (x[i; j; l], y[j], z[i; l], a
    scalar s[]), each through a function numpy evaluates faster than Numba (or sqrt, abs), joined by operators.
    The reads lie in [0.5, 1.5] and every function sees half of one, in [0.25, 0.75]: inside every domain and
    away from every zero, so a last bit's difference between numpy's functions and the kernels' stays one."""
    reads = st.sampled_from(["x[i; j; l]", "y[j]", "z[i; l]", "s[]", "y[l]"])
    functions = st.sampled_from(BROADCAST_FUNCTIONS + ["sqrt", "abs"])
    terms = draw(st.lists(st.tuples(functions, reads), min_size=1, max_size=4))
    terms[0] = (draw(st.sampled_from(BROADCAST_FUNCTIONS)), terms[0][1])
    body = " ".join(f"{draw(st.sampled_from(['+', '-', '*', '/'])) + ' ' if k else ''}{name} (0.5 * {read})"
                    for k, (name, read) in enumerate(terms))
    return f"f[i; j; l] = {body} + x[i; j; l]"


BROADCAST_SHAPES = {"f": (3, 4, 4), "x": (3, 4, 4), "y": (4,), "z": (3, 4), "s": ()}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(broadcast_bodies(), st.integers(0, 2**32 - 1))
@example("f[i; j; l] = log (x[i; j; l] - y[j]) + exp (z[i; l] * s[]) / tanh (y[l])", 0)  # nan where x < y
def test_element_wise_bodies_with_vector_math_run_as_numpy_over_views(monkeypatch, text, seed):
    """The numba target runs such a body as numpy over broadcast views (no Numba kernel), with the reference
    evaluator's values, nan and inf where it has them; the gradients' element-wise kernels too."""
    monkeypatch.setattr(codegen.thresholds.VECTOR_WORK, "value", 0)
    fn = tab.parse(text, BROADCAST_SHAPES)
    compiled = fn.compile("numba")
    assert "numpy's vector math" in compiled.source and "f_kernel" not in compiled.module.KERNEL_ARRAYS
    rng = np.random.default_rng(seed)
    args = {name: rng.uniform(0.5, 1.5, BROADCAST_SHAPES[name]) for name in fn.arguments}
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(compiled(args), fn.evaluate(args), rtol=1e-12, atol=1e-12, equal_nan=True)
    grads = tab.derive(fn)
    df = rng.standard_normal(BROADCAST_SHAPES["f"])
    with np.errstate(all="ignore"):
        ours, expected = grads.compile("numba")(args, df), grads.evaluate(args, df)
        for name in expected:
            np.testing.assert_allclose(ours[name], expected[name], rtol=1e-11, atol=1e-11, equal_nan=True,
                                       err_msg=name)


@pytest.mark.parametrize("text, shapes", [
    ("f[i; j] = exp (x[j; i])", {"f": (3, 4), "x": (4, 3)}),                          # a transposed read
    ("f[i; j] = exp (x[i; j + 1])", {"f": (3, 4), "x": (3, 5)}),                      # an offset
    ("f[i; j] = exp (x[i; 0])", {"f": (3, 4), "x": (3, 4)}),                          # a constant index
    ("f[i; j] = exp (x[i; j]) + sum{k}_0^2 (x[i; k])", {"f": (3, 4), "x": (3, 4)}),   # a sum
    ("f[i; j] = if {x[i; j] > 0} then (exp (x[i; j])) else (0)", {"f": (3, 4), "x": (3, 4)}),  # a select
    ("f[i; j] = sqrt (x[i; j]) * x[i; j]", {"f": (3, 4), "x": (3, 4)}),               # vector math in Numba
])
def test_other_bodies_stay_numba_kernels(monkeypatch, text, shapes):
    monkeypatch.setattr(codegen.thresholds.VECTOR_WORK, "value", 0)
    fn = tab.parse(text, shapes)
    compiled = fn.compile("numba")
    assert "numpy's vector math" not in compiled.source and "f_kernel" in compiled.module.KERNEL_ARRAYS
    args = random_arguments(fn, np.random.default_rng(5))
    np.testing.assert_allclose(compiled(args), fn.evaluate(args), rtol=1e-12, atol=1e-12)


def test_small_bodies_stay_numba_kernels():
    """Below VECTOR_WORK elements numpy's calls cost more than a kernel's loop."""
    fn = tab.parse("f[i; j] = exp (x[i; j])", {"f": (3, 4), "x": (3, 4)})
    assert "numpy's vector math" not in fn.compile("numba").source
    big = tab.parse("f[i; j] = exp (x[i; j])", {"f": (128, 128), "x": (128, 128)})
    assert "numpy's vector math" in big.compile("numba").source


@pytest.mark.parametrize("target", ["numpy", "numba", "numba-scatter"])
def test_kernels_past_the_work_limit_are_refused_when_they_compile(target):
    """A sum of 10**15 terms parses (its bound is below MAX_INTEGER) but would run for days: compiling it, or its
    gradients, is refused with MAX_KERNEL_WORK, before any code is written."""
    from tensoradbook.lang.limits import MAX_KERNEL_WORK

    fn = tab.parse("f[i] = sum{k}_0^1000000000000000 (x[0] * 2)", {"f": (4,), "x": (1,)})
    with pytest.raises(ExpressionError, match="MAX_KERNEL_WORK") as refused:
        if target in codegen.GATHER_TARGETS:
            fn.compile(target)
        else:
            tab.derive(fn).compile(target)
    assert f"{MAX_KERNEL_WORK:.0e}" in str(refused.value)
    small = tab.parse("f[i] = sum{k}_0^999 (x[0] * 2)", {"f": (4,), "x": (1,)})
    np.testing.assert_allclose(small.compile("numpy")({"x": np.array([0.5])}), np.full(4, 1000.0))


def test_a_min_of_powers_reaches_its_extremum_in_the_same_bits_on_numpy():
    """Found by test_fuzz (FUZZ_SEED=992486399): on numpy scalars ``**`` is libm's pow, on arrays numpy's
    vectorised loop, which differ in the last bit for about 1 input in 20 on AVX-512. The min's adjoint recomputes
    its terms, on scalars where the forward had arrays, missed the forward's minimum and gave the adjoint to no
    term. The numpy target now prints ``np.power``, one loop for both shapes."""
    text = ("F2[j;i] = min{t}_(-1 + i + j)^(min [j;-1 + i]) ((a[0] / a[1 + 3 * i + t] / x[i;2 * (j + 3 - i)]) "
            "** x[t + 1, 1 + t] - x[8 - i * 2 + 2 * t;2 + 3 * j + t * 2])")
    shapes = {"F2": (3, 4), "a": (13,), "x": (13, 13)}
    grads = tab.derive(tab.parse(text, shapes))
    kernels = grads.compile("numpy")
    code = "\n".join(line for line in kernels.source.splitlines() if not line.lstrip().startswith("#"))
    assert "np.power(" in code and " ** " not in code
    for seed in range(60):  # 12 of the first 200 seeds failed before
        rng = np.random.default_rng(seed)
        args = {name: rng.uniform(0.5, 2.0, shapes[name]) for name in ("a", "x")}
        df = rng.standard_normal((3, 4))
        reference = grads.evaluate(args, df)
        ours = kernels(args, df)
        for name in reference:
            np.testing.assert_allclose(ours[name], reference[name], rtol=1e-9, atol=1e-12, err_msg=f"seed {seed}")

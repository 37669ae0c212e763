"""Plain contractions go to BLAS (tensoradbook.codegen.contraction): which definitions are recognized, and that
the numba target's tensordot or einsum gives what the reference evaluator gives, for random contractions and
their derived gradients (which Algorithm 4 gives as contractions again)."""

import gc
import threading
import weakref

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook import codegen
from tensoradbook.codegen.contraction import LETTERS, Contraction, contraction_of, gathered_contraction
from tensoradbook.codegen.scratch import Scratch

BLAS = "# a plain contraction: BLAS"  # the generated module's comment on each tensordot or einsum


def parse(text, shapes):
    return tab.parse(text, shapes)


def contraction(subscripts, operands, scale, sizes):
    """The contraction einsum's ``subscripts`` write (letters from ``a``, ``sizes`` in their order)."""
    inputs, output = subscripts.split("->")
    terms = tuple(tuple(LETTERS.index(letter) for letter in term) for term in inputs.split(","))
    return Contraction(terms, tuple(LETTERS.index(letter) for letter in output), operands, scale, sizes)


@pytest.fixture
def blas_for_all(monkeypatch):
    """Every plain contraction to BLAS, however small (the tests' tensors are tiny); the same for every
    example hypothesis draws."""
    monkeypatch.setattr(codegen.thresholds.BLAS_WORK, "value", 0)


@pytest.mark.parametrize("text, shapes, subscripts, scale", [
    ("f[i; j] = sum{k}_0^4 (a[i; k] * b[k; j])", {"f": (3, 4), "a": (3, 5), "b": (5, 4)}, "ab,bc->ac", 1),
    ("f[i; j] = sum{k}_0^4 (a[i; k] * b[j; k])", {"f": (3, 4), "a": (3, 5), "b": (4, 5)}, "ab,cb->ac", 1),
    ("f[i] = sum{k}_0^4 (sum{l}_0^1 (2 * a[i; k; l] * b[l; k] * 0.5))",
     {"f": (3,), "a": (3, 5, 2), "b": (2, 5)}, "abc,cb->a", 1.0),
    ("f[c] = sum{n}_0^1 (sum{i}_0^2 (h[n; c; i]))", {"f": (4,), "h": (2, 4, 3)}, "abc->b", 1),
    ("f[i; j] = sum{k}_0^2 (3 * a[i; k] * a[j; k] * w[k])", {"f": (2, 2), "a": (2, 3), "w": (3,)}, "ab,cb,b->ac", 3),
])
def test_contractions_are_recognized(text, shapes, subscripts, scale):
    found = contraction_of(parse(text, shapes))
    assert found is not None and found.subscripts == subscripts and found.scale == scale


def test_a_contractions_axes_are_numbers_and_einsums_letters_are_written_from_them():
    found = contraction_of(parse("f[j; i] = sum{k}_0^4 (a[i; k] * b[k; j])", {"f": (4, 3), "a": (3, 5), "b": (5, 4)}))
    assert found.terms == ((0, 1), (1, 2)) and found.output == (2, 0) and found.sizes == (3, 5, 4)
    assert found.subscripts == "ab,bc->ca" and found.operands == ("a", "b")


def test_no_gather_where_the_product_would_still_need_a_broadcast(blas_for_all):
    """Found by test_random_contractions_equal_the_reference: ``dx0``'s factor ``x1[i; k; 0; 0]`` gathered leaves
    the output index ``j`` read by no factor, so the rest is no plain contraction, and the gradient is a kernel."""
    fn = parse("f[i; j; l] = sum{k}_0^0 (sum{m}_0^0 (x0[i; i; j] * x1[i; l; k; m]))",
               {"x0": (1, 1, 4), "x1": (1, 4, 1, 1), "f": (1, 4, 4)})
    grads = tab.derive(fn)
    assert gathered_contraction(grads.functions["x0"], set(), [], {}) is None
    rng = np.random.default_rng(1)
    args = {name: rng.standard_normal(fn.shapes[name]) for name in ("x0", "x1")}
    df = rng.standard_normal(fn.shapes["f"])
    ours, expected = grads.compile("numba")(args, df), grads.evaluate(args, df)
    for name in expected:
        np.testing.assert_allclose(ours[name], expected[name], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("subscripts, call", [
    ("ab,bc->ac", "(x.reshape(-1, 3) @ y.reshape(3, -1)).reshape((2, 4))"),
    ("ab,cb->ca", "(y.reshape(-1, 3) @ x.reshape(-1, 3).T).reshape((4, 2))"),   # swapped: row-major as it comes
    ("abc,cb->a", "(x.reshape(-1, 12) @ y.transpose((1, 0)).reshape(12, -1)).reshape((2,))"),  # y copied
    ("ab,ac->bc", "(x.reshape(2, -1).T @ y.reshape(2, -1)).reshape((3, 4))"),
    ("ab,bc->ca", "(y.reshape(3, -1).T @ x.reshape(-1, 3).T).reshape((4, 2))"),
    ("abcd,bcdefg->eafg", None),         # a convolution's filters [a] before its images [e]: copied into the order
    ("ab,cb->ac", "(x.reshape(-1, 3) @ y.reshape(-1, 3).T).reshape((2, 4))"),
    ("abc,cd->bad", "np.einsum"),                            # an index summed within one operand
    ("ab,ab->a", "np.einsum"),                               # a batch index: not one product
    ("ab,bc,cd->ad", "np.einsum"),
])
def test_contractions_are_written_as_row_major_blas_products(subscripts, call):
    rng = np.random.default_rng(0)
    inputs, output = subscripts.split("->")
    letters = sorted(set(subscripts) - set(",->"))
    sizes = dict(zip(letters, (2, 3, 4, 5, 3, 2, 3)))
    arrays = [rng.standard_normal([sizes[letter] for letter in term]) for term in inputs.split(",")]
    names = ["x", "y", "z"][:len(arrays)]
    code = contraction(subscripts, tuple(names), 2, tuple(sizes.values())).code(names)
    assert (call or "np.ascontiguousarray(") in code and "einsum" not in code or call == "np.einsum"
    value = eval(code, {"np": np, "x": arrays[0], "y": arrays[1], "z": arrays[-1]})
    assert value.flags["C_CONTIGUOUS"]
    if call and call != "np.einsum":  # the product itself: views of the operands, no copies of them
        assert "ascontiguousarray" not in code
    np.testing.assert_allclose(value, 2 * np.einsum(subscripts, *arrays), rtol=1e-13)


@pytest.mark.parametrize("text, shapes", [
    ("f[i; j] = sum{k}_0^3 (a[i; k] * b[k; j])", {"f": (3, 4), "a": (3, 5), "b": (5, 4)}),   # part of k's range
    ("f[i] = sum{k}_0^2 (x[2 * i + k])", {"f": (3,), "x": (7,)}),                               # a stride
    ("f[i; j] = sum{k}_0^4 (exp (a[i; k]) * b[k; j])", {"f": (3, 4), "a": (3, 5), "b": (5, 4)}),  # a function
    ("f[i; j] = a[i; j] * b[i; j]", {"f": (3, 4), "a": (3, 4), "b": (3, 4)}),                   # no sum: a kernel
    ("f[i; j] = sum{k}_0^4 (a[i; k])", {"f": (3, 4), "a": (3, 5)}),                             # j read by nothing
    ("f[] = sum{k}_0^4 (a[k] * b[k])", {"f": (), "a": (5,), "b": (5,)}),                        # a scalar
    ("f[i] = sum{k}_0^4 (a[i] * b[k] * s[])", {"f": (3,), "a": (3,), "b": (5,), "s": ()}),      # reads a scalar
    ("f[i] = max{k}_0^4 (a[i; k] * b[k])", {"f": (3,), "a": (3, 5), "b": (5,)}),                # a max
    ("f[i] = sum{k}_0^4 (if {i = k} then (a[i; k]) else (0))", {"f": (3,), "a": (3, 5)}),       # a condition
])
def test_other_definitions_stay_kernels(text, shapes, blas_for_all):
    fn = parse(text, shapes)
    assert contraction_of(fn) is None
    source = fn.compile("numba").source
    assert BLAS not in source and "f_kernel" in source


@st.composite
def contractions(draw):
    """A random contraction: 1 to 3 operands over up to 3 output and 2 summed indices, each operand reading
    1 to 3 of them (every index read by some operand), extents 1 to 4, and sometimes a constant factor."""
    outputs = ["i", "j", "l"][:draw(st.integers(0, 3))]
    summed = ["k", "m"][:draw(st.integers(1, 2))]
    indices = outputs + summed
    extents = {name: draw(st.integers(1, 4)) for name in indices}
    count = draw(st.integers(1, 3))
    reads = [draw(st.lists(st.sampled_from(indices), min_size=1, max_size=3)) for _ in range(count)]
    missing = [name for name in indices if not any(name in r for r in reads)]
    reads[-1] = reads[-1] + missing
    shapes = {f"x{n}": tuple(extents[name] for name in r) for n, r in enumerate(reads)}
    product = " * ".join(f"x{n}[{'; '.join(r)}]" for n, r in enumerate(reads))
    if draw(st.booleans()):
        product = f"{draw(st.sampled_from(['2', '0.5', '-3']))} * {product}"
    body = product
    for name in reversed(summed):
        body = f"sum{{{name}}}_0^{extents[name] - 1} ({body})"
    shapes["f"] = tuple(extents[name] for name in outputs)
    return f"f[{'; '.join(outputs)}] = {body}", shapes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contractions(), st.integers(0, 2**32 - 1))
def test_random_contractions_equal_the_reference(blas_for_all, case, seed):
    text, shapes = case
    fn = parse(text, shapes)
    if shapes["f"]:
        assert contraction_of(fn) is not None, text
        assert BLAS in fn.compile("numba").source
    rng = np.random.default_rng(seed)
    args = {name: rng.standard_normal(fn.shapes[name]) for name in fn.arguments}
    np.testing.assert_allclose(fn.compile("numba")(args), fn.evaluate(args), rtol=1e-12, atol=1e-12)
    grads = tab.derive(fn)
    df = rng.standard_normal(fn.shapes[fn.name])
    ours, expected = grads.compile("numba")(args, df), grads.evaluate(args, df)
    for name in expected:
        np.testing.assert_allclose(ours[name], expected[name], rtol=1e-12, atol=1e-12, err_msg=name)


def test_a_matrix_product_and_its_gradients_are_blas_calls(blas_for_all):
    fn = parse("f[i; j] = sum{k}_0^4 (a[i; k] * b[k; j])", {"f": (3, 4), "a": (3, 5), "b": (5, 4)})
    source = tab.derive(fn).source("numba")
    assert source.count("  # a plain contraction: BLAS") == 4 and "_kernel" not in source  # f twice, da, db
    assert BLAS not in tab.derive(fn).source("numba-scatter")  # the baseline stays loops
    program = parse("h[i; j] = sum{k}_0^4 (a[i; k] * b[k; j])\ng[i; j] = exp (h[i; j])",
                    {"h": (3, 4), "g": (3, 4), "a": (3, 5), "b": (5, 4)})
    grads = tab.derive(program)
    assert "def h_kernel" not in grads.source("numba") and "def g_kernel" in grads.source("numba")
    rng = np.random.default_rng(1)
    args = {name: rng.standard_normal(program.shapes[name]) for name in program.arguments}
    df = rng.standard_normal((3, 4))
    ours, expected = grads.compile("numba")(args, df), grads.evaluate(args, df)
    for name in expected:
        np.testing.assert_allclose(ours[name], expected[name], rtol=1e-12, atol=1e-12)


def test_contractions_inside_a_definition_are_split_off(blas_for_all):
    """A contraction inside a larger expression becomes a tensor of its own, computed by BLAS first and read by
    the element-wise kernel; the values are the reference evaluator's."""
    dense = parse("y[i; j] = log (1 + exp (sum{k}_0^4 (w[j; k] * x[i; k]) + b[j]))",
                  {"y": (3, 4), "w": (4, 5), "x": (3, 5), "b": (4,)})
    source = dense.compile("numba").source
    # into a scratch array, kept from call to call: it never leaves the module
    assert "y_c = np.matmul(x.reshape(-1, 5), w.reshape(-1, 5).T, out=_scratch.array('y_c', (3, 4)))" in source
    assert "def y_kernel(y_c, b, _out)" in source
    grads = tab.derive(dense)
    rng = np.random.default_rng(2)
    args = {name: rng.standard_normal(dense.shapes[name]) for name in dense.arguments}
    df = rng.standard_normal((3, 4))
    np.testing.assert_allclose(dense.compile("numba")(args), dense.evaluate(args), rtol=1e-12)
    compiled = grads.compile("numba")
    # the backward pass reads the forward's x w^T again: kept from the forward pass, or computed anew where
    # the caller brings the forward values
    kept = "if y_c is not None:\n            dy_k_c = y_c\n        else:\n            dy_k_c = np.matmul(x.reshape("
    assert kept in compiled.source
    expected = grads.evaluate(args, df)
    for ours in (compiled(args, df), compiled(args, df, compiled.values(args))):
        for name in expected:
            np.testing.assert_allclose(ours[name], expected[name], rtol=1e-12, atol=1e-12, err_msg=name)


def test_small_contractions_and_modules_of_mostly_parallel_loops_keep_kernels():
    """A small contraction costs less in a kernel than numpy's call. Where the module's parallel kernels do more
    work than its contractions, no BLAS: its spinning threads and Numba's would wait for each other's cores;
    where the contractions do more, BLAS computes them beside the kernels, which keep their parallel loops: how the
    two share the threads is measured at run time (tests/test_threads.py)."""
    small = parse("f[i; j] = sum{k}_0^4 (a[i; k] * b[k; j])", {"f": (3, 4), "a": (3, 5), "b": (5, 4)})
    assert BLAS not in tab.derive(small).source("numba")
    large = parse("f[i; j] = sum{k}_0^63 (a[i; k] * b[k; j])", {"f": (64, 64), "a": (64, 64), "b": (64, 64)})
    assert tab.derive(large).source("numba").count(BLAS) == 4
    shapes = {"f": (64, 64), "a": (64, 64), "b": (64, 64), "p": (64, 32), "q": (64, 32)}
    mostly_loops = parse("f[i; j] = sum{k}_0^63 ((a[i; k] - b[j; k]) ** 2) + sum{m}_0^31 (p[i; m] * q[j; m])", shapes)
    source = mostly_loops.compile("numba").source
    assert "parallel=True" in source and BLAS not in source
    mostly_products = parse("f[i; j] = sum{k}_0^63 (exp (a[i; k] - b[j; k])) + sum{k}_0^63 (sum{m}_0^31 "
                            "(a[i; k] * b[j; k] * p[i; m] * q[j; m]))", shapes)
    source = mostly_products.compile("numba").source
    assert BLAS in source and "parallel=True" in source
    # a product of 64 * 64 * 64 element-terms beside a parallel loop of exponentials
    small_products = parse("f[i; j] = sum{k}_0^63 (a[i; k] * b[k; j]) * sum{m}_0^15 (exp (a[i; m] - b[m; j]))",
                           {"f": (64, 64), "a": (64, 64), "b": (64, 64)})
    for source in (small_products.compile("numba").source, tab.derive(small_products).source("numba")):
        assert BLAS in source and "parallel=True" in source
    # its values, on special inputs too, are the differential tests' (a covering case)


def test_a_bias_reads_the_adjoint_its_layer_keeps():
    """db of a dense layer sums dy_k, the adjoint of the layer's sum, rather than evaluating the sums again."""
    dense = parse("y[i; j] = log (1 + exp (sum{k}_0^4 (w[j; k] * x[i; k]) + b[j]))",
                  {"y": (3, 4), "w": (4, 5), "x": (3, 5), "b": (4,)})
    simplified = tab.derive(dense).simplified
    (kept,) = simplified.intermediates
    assert str(simplified["b"]) == f"db[db_0] = sum{{db_z0}}_0^2 ({kept}[db_z0; db_0])"
    errors = tab.check_gradients(dense)
    assert max(errors.values()) < 1e-8, errors


# --- gathered operands and contractions over fresh indices (convolutions) ------------------------------------

STRIDED = ("y[n; f; i; j] = sum{c}_0^1 (sum{p}_0^2 (sum{q}_0^2 (w[f; c; p; q] * x[n; c; 2 * i + p; 2 * j + q])))",
           {"y": (2, 3, 3, 4), "w": (3, 2, 3, 3), "x": (2, 2, 7, 9)})


@pytest.fixture
def every_rewrite(blas_for_all, monkeypatch):
    """Every gather and every inner contraction made, however little they save on the tests' tiny tensors."""
    monkeypatch.setattr(codegen.thresholds.GATHER_SHARE, "value", 0)
    monkeypatch.setattr(codegen.thresholds.INNER_SHARE, "value", 10**9)


def assert_kernels_equal_the_reference(fn, seed):
    rng = np.random.default_rng(seed)
    args = {name: rng.standard_normal(fn.shapes[name]) for name in fn.arguments}
    np.testing.assert_allclose(fn.compile("numba")(args), fn.evaluate(args), rtol=1e-12, atol=1e-12)
    grads = tab.derive(fn)
    df = rng.standard_normal(fn.shapes[fn.name])
    compiled, expected = grads.compile("numba"), grads.evaluate(args, df)
    for ours in (compiled(args, df), compiled(args, df, compiled.values(args))):
        for name in expected:
            np.testing.assert_allclose(ours[name], expected[name], rtol=1e-12, atol=1e-12, err_msg=name)
    return compiled.source


def test_a_strided_convolution_is_a_gather_and_products(every_rewrite):
    """The forward pass gathers x as y_g[n; c; p; q; i; j] (im2col) and multiplies the filters by it, image by
    image; the filter gradient reads the same gather, kept from the forward pass (or gathered again where the
    caller brings the forward values); the image gradient sums over the Fourier-Motzkin bounds a product of dy
    and w that BLAS computes first."""
    fn = parse(*STRIDED)
    source = fn.compile("numba").source
    assert "def y_g_kernel(x, _out):" in source and "_out[n, c, p, q, i, j] = x[" in source
    assert "y = np.matmul(w.reshape(-1, 18), y_g.reshape(2, 18, 12))" in source and "y_g = _scratch.array(" in source
    source = assert_kernels_equal_the_reference(fn, 0)
    assert "if y_g is None:" in source and source.count("def y_g_kernel") == 1 and "_g_kernel(dy" not in source
    assert ".sum(axis=0)" in source  # dw: per image a product, then their sum
    assert "dx_p = np.matmul(" in source and "def dx_kernel(dx_p, _out)" in source


def test_a_padded_convolution_gathers_from_a_padded_copy(every_rewrite):
    """The gate that keeps a padded convolution's reads inside x becomes a copy of x with zeros around it, from
    which the gather reads without a gate; the filter gradient reads the forward pass's copy and gather again."""
    fn = parse("y[n; f; i; j] = sum{c}_0^1 (sum{p}_0^2 (sum{q}_0^2 (if {i + p - 1 >= 0 and 4 - i - p >= 0 and "
               "j + q - 1 >= 0 and 5 - j - q >= 0} then (w[f; c; p; q] * x[n; c; i + p - 1; j + q - 1]) else (0))))",
               {"y": (2, 3, 4, 5), "w": (3, 2, 3, 3), "x": (2, 2, 4, 5)})
    source = assert_kernels_equal_the_reference(fn, 5)
    assert "x_pad = _scratch.array('x_pad', (2, 2, 6, 7))" in source and "y_g_kernel(x_pad, y_g)" in source
    assert "if x_pad is None:" in source and source.count("def x_pad_kernel") == 1


@pytest.mark.parametrize("text, shapes", [
    STRIDED,
    ("f[i; j] = sum{k}_0^4 (a[i; k + 1] * b[k; j])", {"f": (3, 4), "a": (3, 6), "b": (5, 4)}),   # an offset
    ("f[i] = sum{k}_0^2 (sum{c}_0^1 (w[c; k] * x[c; 2 * i + k] * 2))", {"f": (3,), "w": (2, 3), "x": (2, 7)}),
    ("f[i; j] = sum{k}_0^2 (x[i + k; j] * w[k])", {"f": (4, 3), "x": (6, 3), "w": (3,)}),
    # a padded convolution plus a bias: the sum split off, its factor gathered from a padded copy
    ("f[i; c] = log (1 + exp (sum{k}_0^2 (if {i + k - 1 >= 0 and 4 - i - k >= 0} then (w[c; k] * x[i + k - 1]) "
     "else (0)) + b[c]))", {"f": (4, 2), "w": (2, 3), "x": (4,), "b": (2,)}),
])
def test_gathers_give_the_reference_values(every_rewrite, text, shapes):
    fn = parse(text, shapes)
    assert "_g_kernel" in fn.compile("numba").source
    assert_kernels_equal_the_reference(fn, 1)


def test_a_sum_inside_fourier_motzkin_bounds_becomes_a_contraction_of_its_own(every_rewrite):
    """The sum over k commutes out of the bounds of u: a contraction of three factors over the indices the kernel
    reads it at (``a - u`` a fresh one), which the kernel then sums over u."""
    fn = parse("f[i; j; a] = sum{u}_(max [0; a - 2])^(min [3; a]) (sum{k}_0^4 (x[i; k; u] * w[k; a - u] * s[k; j]))",
               {"f": (2, 3, 6), "x": (2, 5, 4), "w": (5, 3), "s": (5, 3)})
    source = fn.compile("numba").source
    assert "f_p = np.ascontiguousarray(np.einsum(" in source and "def f_kernel(f_p, _out)" in source
    assert_kernels_equal_the_reference(fn, 6)


@pytest.mark.parametrize("text, shapes", [
    # a gate that is not the reads' range: a padded copy would not say it
    ("f[i] = sum{k}_0^2 (if {i - k >= 0} then (w[k] * x[i + k]) else (0))", {"f": (4,), "w": (3,), "x": (6,)}),
    ("f[i] = sum{k}_0^2 (x[2 * i + k])", {"f": (3,), "x": (7,)}),                  # nothing to multiply it by
    ("f[i] = sum{k}_0^2 (x[i + k] * x[i + k + 1])", {"f": (3,), "x": (7,)}),        # two gathered factors
])
def test_other_affine_reads_stay_in_kernels(every_rewrite, text, shapes):
    fn = parse(text, shapes)
    assert "_g_kernel" not in fn.compile("numba").source
    assert_kernels_equal_the_reference(fn, 2)


@st.composite
def convolutions(draw):
    """A 1-D or 2-D convolution with random strides, dilations, offsets and extents, the factors and the sums in
    random orders; every read inside x, or, padded, gated by the conditions that keep it inside."""
    dims = draw(st.integers(1, 2))
    images, filters, channels = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
    out, taps, reads, x_shape, gates = [], [], [], [images, channels], []
    for d in range(dims):
        o, k = draw(st.integers(1, 3)), draw(st.integers(1, 3))
        stride, dilation, offset = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(-2, 2))
        out.append(o)
        taps.append(k)
        read = f"{stride} * i{d} + {dilation} * p{d} + {offset}"
        reads.append(read)
        reach = stride * (o - 1) + dilation * (k - 1) + offset  # the largest index read
        size = max(1, reach + 1 + draw(st.integers(-2, 2)))
        x_shape.append(size)
        gates += [f"{read} >= 0"] if offset < 0 else []
        gates += [f"{size - 1} - ({read}) >= 0"] if reach > size - 1 else []
    factors = [f"w[f; c; {'; '.join(f'p{d}' for d in range(dims))}]", f"x[n; c; {'; '.join(reads)}]"]
    body = " * ".join(draw(st.permutations(factors)))
    if gates:
        body = f"if {{{' and '.join(gates)}}} then ({body}) else (0)"
    sums = [("c", channels)] + [(f"p{d}", taps[d]) for d in range(dims)]
    for name, extent in draw(st.permutations(sums)):
        body = f"sum{{{name}}}_0^{extent - 1} ({body})"
    shapes = {"y": (images, filters, *out), "w": (filters, channels, *taps), "x": tuple(x_shape)}
    return f"y[n; f; {'; '.join(f'i{d}' for d in range(dims))}] = {body}", shapes


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(convolutions(), st.integers(0, 2**32 - 1))
def test_random_convolutions_equal_the_reference(every_rewrite, case, seed):
    fn = parse(*case)
    assert "_g_kernel" in fn.compile("numba").source, case[0]
    assert_kernels_equal_the_reference(fn, seed)


def test_scratch_arrays_are_kept_per_thread_and_name():
    scratch = Scratch()
    first = scratch.array("g", (2, 3))
    assert scratch.array("g", (2, 3)) is first
    gone = weakref.ref(first)
    del first
    other = scratch.array("g", (3, 2))  # another shape replaces the name's array: one per name, never more
    assert other.shape == (3, 2) and gone() is None and scratch.array("g", (3, 2)) is other
    first = scratch.array("g", (2, 3))
    elsewhere = []
    thread = threading.Thread(target=lambda: elsewhere.append(scratch.array("g", (2, 3))))
    thread.start()
    thread.join()
    assert elsewhere[0] is not first and elsewhere[0].shape == (2, 3)


def _scratch_arrays(module) -> list:
    """Weak references to the scratch arrays ``module`` keeps in this thread."""
    return [weakref.ref(array) for array in module._scratch._local.__dict__.values()]


def test_scratch_arrays_are_freed_with_the_last_compiled_object_of_their_module(every_rewrite):
    fn = parse(*STRIDED)
    grads = tab.derive(fn)
    first, second = grads.compile("numba"), grads.compile("numba")
    assert first.module is second.module and "_scratch" in first.source
    rng = np.random.default_rng(5)
    args = {name: rng.standard_normal(fn.shapes[name]) for name in fn.arguments}
    df = rng.standard_normal(fn.shapes["y"])
    expected = first(args, df)
    arrays = _scratch_arrays(first.module)
    assert arrays and all(array() is not None for array in arrays)
    del first
    gc.collect()
    assert all(array() is not None for array in arrays), "freed while another compiled object holds the module"
    module = second.module
    del second
    gc.collect()
    assert all(array() is None for array in arrays)
    again = grads.compile("numba")  # the module stays loaded; its arrays come back at the next call
    assert again.module is module
    for name, value in again(args, df).items():
        np.testing.assert_array_equal(value, expected[name])


def test_threads_calling_one_module_get_their_own_values(every_rewrite):
    """The gather is a scratch array per thread: threads running one module at once never read each other's."""
    fn = parse(*STRIDED)
    compiled, grads = fn.compile("numba"), tab.derive(fn)
    compiled_grads = grads.compile("numba")
    rng = np.random.default_rng(3)
    cases = [({name: rng.standard_normal(fn.shapes[name]) for name in fn.arguments},
              rng.standard_normal(fn.shapes[fn.name])) for _ in range(4)]
    expected = [(fn.evaluate(args), grads.evaluate(args, df)) for args, df in cases]
    failures = []

    def run(k):
        args, df = cases[k]
        for _ in range(25):
            value, gradients = compiled(args), compiled_grads(args, df)
            if not np.allclose(value, expected[k][0], rtol=1e-12, atol=1e-12) or not all(
                    np.allclose(gradients[name], expected[k][1][name], rtol=1e-12, atol=1e-12) for name in gradients):
                failures.append(k)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures


@pytest.mark.parametrize("subscripts, call", [
    ("abcd,eb->aecd", "np.matmul(y.reshape(-1, 3), x.reshape(2, 3, 20))"),      # per image, the filters times x
    ("abcd,be->aecd", "np.matmul(y.reshape(3, -1).T, x.reshape(2, 3, 20))"),
    ("abcd,aecd->be", ".transpose(0, 2, 1)).sum(axis=0)"),                    # per image, then the sum over them
    ("aecd,abcd->be", ".transpose(0, 2, 1)).sum(axis=0)"),
])
def test_products_batched_over_leading_indices(subscripts, call):
    rng = np.random.default_rng(4)
    inputs, output = subscripts.split("->")
    sizes = dict(zip("abcde", (2, 3, 4, 5, 6)))
    arrays = [rng.standard_normal([sizes[letter] for letter in term]) for term in inputs.split(",")]
    code = contraction(subscripts, ("x", "y"), 1, tuple(sizes.values())).code(["x", "y"])
    assert call in code and "einsum" not in code and "ascontiguousarray" not in code
    value = eval(code, {"np": np, "x": arrays[0], "y": arrays[1]})
    assert value.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(value, np.einsum(subscripts, *arrays), rtol=1e-13)

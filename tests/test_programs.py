"""Programs of several definitions: parsing with line-numbered carets, evaluation, and
reverse accumulation across the definitions (report sec. 2, eqs. 1-3, at the tensor level).

Oracles: numpy written out by hand for the values; for the gradients, finite differences
(:func:`tensoradbook.check_gradients`) and the same program inlined into one expression derived by
Algorithm 4 alone (:meth:`Program.inlined`, :func:`tensoradbook.derive`), which shares no code with the
sweep of :mod:`tensoradbook.ad.program`; for the kernels, the reference evaluator, on every target.
"""

import functools
import json
import re

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook import codegen
from tensoradbook.__main__ import main
from tensoradbook.ad.gradcheck import directional_derivatives
from tensoradbook.lang.expr import ExpressionError

from ptx_support import ptx_probe

RTOL, ATOL = 1e-12, 1e-14

SOFTMAX = """# softmax in three steps, shifted by the mean
m[] = sum{k}_0^3 (x[k]) / 4
e[i] = exp (x[i] - m[])
s[i] = e[i] / sum{k}_0^3 (e[k])"""
SOFTMAX_SHAPES = {"x": (4,), "m": (), "e": (4,), "s": (4,)}

# the numerically stable softmax, then a select on values whose condition continues on the next line
STABLE = """m[] = max{k}_0^3 (x[k])
e[i] = exp (x[i] - m[])
s[i] = e[i] / sum{k}_0^3 (e[k])
r[i] = if {s[i] - 0.25
    > 0} then (s[i]) else (0.5 * s[i])"""
STABLE_SHAPES = {"x": (4,), "m": (), "e": (4,), "s": (4,), "r": (4,)}

DENSE = """h[n; j] = tanh (sum{k}_0^2 (x[n; k] * W1[k; j]) + b1[j])
y[n; c] = sum{j}_0^3 (h[n; j] * W2[j; c]) + b2[c]
L[] = sum{n}_0^1 (sum{c}_0^1 ((y[n; c] - t[n; c]) ** 2))"""
DENSE_SHAPES = {"x": (2, 3), "W1": (3, 4), "b1": (4,), "h": (2, 4), "W2": (4, 2), "b2": (2,), "y": (2, 2),
                "t": (2, 2), "L": ()}


def conv(out: str, image: str, weights: str, n: int) -> str:
    """A 3x3 convolution of two channels, padded by zeros through index conditions (same size out)."""
    return (f"{out}[b; c; i; j] = sum{{d}}_0^1 (sum{{p}}_0^2 (sum{{q}}_0^2 (if {{i + p - 1 >= 0 and i + p - 1 <= "
            f"{n - 1} and j + q - 1 >= 0 and j + q - 1 <= {n - 1}}} then ({weights}[c; d; p; q] * "
            f"{image}[b; d; i + p - 1; j + q - 1]) else (0))))")


N = 3
CONVOLUTIONS = "\n".join([
    conv("h", "X", "W1", N), conv("y", "h", "W2", N),
    f"s[b; c; i; j] = exp (y[b; c; i; j]) / sum{{e}}_0^1 (sum{{u}}_0^{N - 1} (sum{{v}}_0^{N - 1} "
    f"(exp (y[b; e; u; v]))))"])
CONVOLUTIONS_SHAPES = {"X": (1, 2, N, N), "W1": (2, 2, 3, 3), "h": (1, 2, N, N), "W2": (2, 2, 3, 3),
                       "y": (1, 2, N, N), "s": (1, 2, N, N)}

# For the kernels: a padded shift, a strided read, a scalar intermediate, an intermediate (h) read by two
# definitions, an input (x) read by two, and a sum whose adjoint the simplified form keeps as a tensor.
KERNELS = """h[i; j] = if {i + j - 1 >= 0} then (x[i + j - 1] * w[j]) else (w[j])
m[] = sum{i}_0^2 (sum{j}_0^1 (h[i; j])) / 6
s[i] = exp (h[i; 0] * h[i; 1] - m[] * sum{k}_0^1 (x[2 * k + 1]))"""
KERNELS_SHAPES = {"x": (4,), "w": (2,), "h": (3, 2), "m": (), "s": (3,)}


def arguments(program, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return {name: scale * rng.uniform(-1, 1, program.shapes[name]) for name in program.arguments}


def adjoint(program, seed=1):
    return np.random.default_rng(seed).standard_normal(program.shapes[program.name])


# --- parsing ---------------------------------------------------------------------------------------------------


def test_one_definition_is_a_function_as_before():
    text = "f[i] = x[i] * 2"
    fn = tab.parse(text, {"f": (3,), "x": (3,)})
    assert isinstance(fn, tab.Function) and fn.source == text
    commented = tab.parse("# doubled\n\nf[i] = x[i] * 2\n", {"f": (3,), "x": (3,)})
    assert isinstance(commented, tab.Function) and commented == fn
    # an expression may still continue on the next lines, even from its name alone
    assert tab.parse("f[i]\n  = x[i] *\n  2", {"f": (3,), "x": (3,)}) == fn


def test_a_program_and_its_parts():
    program = tab.parse(SOFTMAX, SOFTMAX_SHAPES)
    assert isinstance(program, tab.Program) and program.source == SOFTMAX
    assert (program.name, program.indices, program.arguments, program.intermediates) == ("s", ("i",), ("x",),
                                                                                         ("m", "e"))
    assert program.output is program.definitions[-1] and [d.name for d in program.definitions] == ["m", "e", "s"]
    assert program.shapes == SOFTMAX_SHAPES and program.work == sum(d.work for d in program.definitions)
    assert str(program).splitlines()[1] == "e[i] = exp (x[i] - m[])"
    assert tab.parse(str(program), program.shapes) == program
    latex = program._repr_latex_()
    assert r"\begin{aligned}" in latex and latex.count("&=") == 3


def test_a_definition_may_span_lines_and_comments_interleave():
    text = "a[i] = x[i] +\n   x[i] ** 2\n# the square of a\nb[i] = a[i] *\n\n  a[i]"
    program = tab.parse(text, {"x": (3,), "a": (3,), "b": (3,)})
    assert [str(d) for d in program.definitions] == ["a[i] = x[i] + x[i] ** 2", "b[i] = a[i] * a[i]"]


def caret(message):
    """(source line, caret column, caret width) of an error message."""
    lines = message.split("\n")
    source, marks = lines[-2][2:], lines[-1][2:]
    column = len(marks) - len(marks.lstrip())
    return source, column, len(marks.strip())


S = {"x": (3,), "y": (3, 3), "a": (3,), "b": (3,), "c": ()}

ERRORS = [
    # text, first line of the message, the line shown, the text the carets are under
    ("a[i] = x[i]\nb[i] = a[i]\na[i] = y[i; i]", "line 3: 'a' is defined twice: first on line 1", 3, "a"),
    ("a[i] = b[i]\nb[i] = x[i]", "line 1: 'b' is defined below, on line 2: a definition reads the inputs and the "
     "definitions above it", 1, "b"),
    ("a[i] = b[i]\nb[i] = a[i]", "line 1: 'b' is defined below, on line 2", 1, "b"),  # a cycle
    ("b[i] = x[i] * a[i]\nc[] = sum{k}_0^2 (b[k])\na[i] = x[i]", "line 1: 'a' is defined below, on line 3", 1,
     "a"),  # an input of b's, defined later
    ("a[i] = x[i]\nb[i] = a[i] + b[i]", "line 2: the output 'b' cannot appear in its own definition", 2, "b[i]"),
    ("a[i] = x[i]\nd[i] = a[i]", "line 2: no shape given for the output 'd' (1 index)", 2, "d[i]"),
    ("a[i] = x[i]\nb[i] = a[i; i]", "line 2: the argument 'a' has shape (3,) but 2 indices", 2, "a[i; i]"),
    ("a[i] = x[i]\nb[i] = a[i + 1]", "line 2: a[i + 1] leaves a's shape (3,) at i = 2: index 3 > 2", 2, "i + 1"),
    ("a[i] = x[i]\nb[i] = a[i] +\n  expp(a[i])", "line 3: unknown function 'expp'", 3, "expp"),
    ("# comment\n\na[i] = x[i]\n\nb[i] = q[i]", "line 5: no shape given for the argument 'q'", 5, "q[i]"),
    ("a[i] = x[i]\nc[] = sum{k}_0^2 (a[k]\nb[i] = a[i]", "line 3: expected ')', found 'b'", 3, "b"),
]


@pytest.mark.parametrize("text, first, line, marked", ERRORS)
def test_errors_name_the_line_and_point_at_it(text, first, line, marked):
    with pytest.raises(ExpressionError) as info:
        tab.parse(text, S)
    message = str(info.value)
    assert message.split("\n")[0].startswith(first)
    source, column, width = caret(message)
    assert source == text.split("\n")[line - 1]
    assert source[column:column + width] == marked


def test_programs_built_from_functions_are_checked():
    a, b = tab.parse("a[i] = x[i]", S), tab.parse("b[i] = a[i]", S)
    assert tab.Program((a, b), S).arguments == ("x",)
    with pytest.raises(ExpressionError, match="reads 'a', defined by definition 2"):
        tab.Program((b, a), S)
    with pytest.raises(ExpressionError, match="'a' is defined twice"):
        tab.Program((a, a), S)
    with pytest.raises(ExpressionError, match="non-empty tuple of Functions"):
        tab.Program((), S)


# --- values: numpy written out by hand -----------------------------------------------------------------------


def dense_reference(args):
    h = np.tanh(args["x"] @ args["W1"] + args["b1"])
    y = h @ args["W2"] + args["b2"]
    return {"h": h, "y": y, "L": np.sum((y - args["t"]) ** 2)}


def convolutions_reference(args):
    def convolve(image, weights):
        padded = np.pad(image, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros(image.shape)
        for p in range(3):
            for q in range(3):
                out += np.einsum("cd,bdij->bcij", weights[:, :, p, q], padded[:, :, p:p + N, q:q + N])
        return out

    h = convolve(args["X"], args["W1"])
    y = convolve(h, args["W2"])
    return {"h": h, "y": y, "s": np.exp(y) / np.exp(y).sum()}


def test_softmax_in_three_definitions():
    program = tab.parse(SOFTMAX, SOFTMAX_SHAPES)
    x = arguments(program)["x"]
    expected = np.exp(x - x.mean()) / np.exp(x - x.mean()).sum()
    np.testing.assert_allclose(program.evaluate({"x": x}), expected, rtol=RTOL)
    values = program.values({"x": x})
    assert list(values) == ["m", "e", "s"] and values["m"].shape == ()
    np.testing.assert_allclose(values["e"], np.exp(x - x.mean()), rtol=RTOL)


def test_stable_softmax_and_a_select_on_values():
    program = tab.parse(STABLE, STABLE_SHAPES)
    assert len(program.definitions) == 4
    x = arguments(program)["x"]
    s = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
    np.testing.assert_allclose(program.evaluate({"x": x}), np.where(s > 0.25, s, 0.5 * s), rtol=RTOL)


@pytest.mark.parametrize("text, shapes, reference", [(DENSE, DENSE_SHAPES, dense_reference),
                                                      (CONVOLUTIONS, CONVOLUTIONS_SHAPES, convolutions_reference)],
                         ids=["dense", "convolutions"])
def test_networks_equal_numpy(text, shapes, reference):
    program = tab.parse(text, shapes)
    args = arguments(program, scale=0.5)
    values, expected = program.values(args), reference(args)
    for name in expected:
        np.testing.assert_allclose(values[name], expected[name], rtol=1e-12, atol=1e-14, err_msg=name)


# --- gradients ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, shapes", [(SOFTMAX, SOFTMAX_SHAPES), (STABLE, STABLE_SHAPES), (DENSE, DENSE_SHAPES),
                                          (CONVOLUTIONS, CONVOLUTIONS_SHAPES), (KERNELS, KERNELS_SHAPES)],
                         ids=["softmax", "stable", "dense", "convolutions", "kernels"])
def test_gradients_agree_with_finite_differences(text, shapes):
    program = tab.parse(text, shapes)
    grads = tab.derive(program)
    assert list(grads) == list(program.arguments)
    # small inputs: the softmax of the convolutions does not saturate
    errors = tab.check_gradients(program, arguments(program, scale=0.3), grads=grads)
    assert max(errors.values()) < 1e-7, errors
    args, df = arguments(program, seed=2), adjoint(program)
    expected, simplified = grads.evaluate(args, df), grads.simplified.evaluate(args, df)
    for name in program.arguments:
        np.testing.assert_allclose(simplified[name], expected[name], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("text, shapes", [(SOFTMAX, SOFTMAX_SHAPES), (STABLE, STABLE_SHAPES), (DENSE, DENSE_SHAPES),
                                          (KERNELS, KERNELS_SHAPES)], ids=["softmax", "stable", "dense", "kernels"])
def test_gradients_equal_those_of_the_inlined_expression(text, shapes):
    program = tab.parse(text, shapes)
    inlined = program.inlined()
    assert isinstance(inlined, tab.Function) and inlined.name == program.name
    assert tab.parse(str(inlined), inlined.shapes) == inlined  # one expression a user could have written
    args, df = arguments(program), adjoint(program)
    np.testing.assert_allclose(inlined.evaluate(args), program.evaluate(args), rtol=1e-12)
    expected, got = tab.derive(inlined).evaluate(args, df), tab.derive(program).evaluate(args, df)
    for name in program.arguments:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-10, atol=1e-12, err_msg=name)


def test_the_sweep_visits_definitions_backwards_and_sums_over_consumers():
    program = tab.parse(KERNELS, KERNELS_SHAPES)
    grads = tab.derive(program)
    assert [step.definition.name for step in grads.steps] == ["s", "m", "h"]
    assert grads.adjoint_name == "ds" and [step.adjoint for step in grads.steps] == ["ds", "dm", "dh"]
    assert dict(grads.steps[0].gradients) == dict(tab.derive(program.output))  # Algorithm 4 of the last one
    assert set(grads.steps[0].gradients) == {"h", "m", "x"}
    # h is read by m and s, x by h and s: their adjoint and gradient are sums of two contributions
    adjoint_h = str(grads.adjoints["h"])
    assert adjoint_h.startswith("dh[dh_0; dh_1] = ") and adjoint_h.endswith(" + dm[] * (1 / 6)")
    assert " + " in str(grads["x"])
    assert grads["x"].name == "dx" and grads.function is program
    assert str(grads).splitlines()[0].startswith("dm[] = ")
    assert grads._repr_latex_().startswith("$$") and r" \\ " in grads._repr_latex_()


def test_gradients_with_respect_to_some_inputs_only():
    text = "a[i] = exp (x[i])\nb[i] = y[i] * 2\nc[i] = a[i] * z[i]"  # b is read by nothing
    program = tab.parse(text, {"x": (3,), "y": (3,), "z": (3,), "a": (3,), "b": (3,), "c": (3,)})
    assert program.arguments == ("x", "y", "z")
    args, df = arguments(program), adjoint(program)
    full = tab.derive(program)
    assert [step.definition.name for step in full.steps] == ["c", "a"]  # b leads nowhere
    np.testing.assert_array_equal(full.evaluate(args, df)["y"], np.zeros(3))
    only_z = tab.derive(program, wrt=["z"])
    assert list(only_z) == ["z"] and [step.definition.name for step in only_z.steps] == ["c"]
    assert set(only_z.steps[0].gradients) == {"z"}  # not the gradient with respect to a
    np.testing.assert_allclose(only_z.evaluate(args, df)["z"], df * np.exp(args["x"]), rtol=RTOL)
    nothing = tab.derive(program, wrt="y")
    assert nothing.steps == () and nothing.adjoint_name == "dc"
    np.testing.assert_array_equal(nothing.compile("numpy")(args, df)["y"], np.zeros(3))
    with pytest.raises(ExpressionError, match="'a' is not an input of the program"):
        tab.derive(program, wrt=["a"])
    with pytest.raises(ExpressionError, match="wrt names inputs of a program"):
        tab.derive(program.output, wrt=["a"])


def test_names_the_sweep_makes_clash_with_nothing():
    # dm, m_1 and s_k are the user's, so m's adjoint, m_1's and s's outer sum's must be named otherwise;
    # dx is an input, so x's gradient is dx_1
    text = """m[i] = x[i] * dx[i]
dm[i] = m[i] + x[i]
m_1[i] = exp (dm[i]) * m[i]
s_k[i] = m_1[i] * 2
s[i] = sum{k}_0^2 (s_k[k] * m[i]) + dx[i]"""
    program = tab.parse(text, dict.fromkeys(["x", "dx", "m", "dm", "m_1", "s_k", "s"], (3,)))
    grads = tab.derive(program)
    made = [tensor.name for tensor in grads.simplified.backward]
    assert len(set(made)) == len(made) and not set(made) & set(program.shapes), made
    assert grads["x"].name == "dx_1"
    args, df = arguments(program), adjoint(program)
    expected = tab.derive(program.inlined()).evaluate(args, df)
    got = grads.simplified.compile("numpy")(args, df)
    for name in program.arguments:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-10, err_msg=name)


def test_directional_derivatives_of_a_program():
    program = tab.parse(DENSE, DENSE_SHAPES)
    for numeric, exact in directional_derivatives(program, arguments(program), seed=3).values():
        assert abs(numeric - exact) <= 1e-8 * max(1.0, abs(exact))


# --- kernels: every target equals the reference evaluator ----------------------------------------------------------


@functools.cache
def kernels_program():
    program = tab.parse(KERNELS, KERNELS_SHAPES)
    return program, tab.derive(program)


@functools.cache
def compiled(target):
    return kernels_program()[1].compile(target)


@pytest.mark.parametrize("target", codegen.TARGETS)
def test_every_target_equals_the_reference(target):
    program, grads = kernels_program()
    args, df = arguments(program), adjoint(program)
    gradients = compiled(target)
    expected = grads.evaluate(args, df)
    got = gradients(args, df)
    assert set(got) == set(expected)
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=RTOL, atol=ATOL, err_msg=f"{target}: d{name}")
    np.testing.assert_allclose(gradients.forward(args), program.evaluate(args), rtol=RTOL, atol=ATOL)
    values = gradients.values(args)  # the forward pass kept, then the backward pass alone
    for name, value in program.values(args).items():
        np.testing.assert_allclose(values[name], value, rtol=RTOL, atol=ATOL)
    kept = gradients(args, df, values)
    for name in expected:
        np.testing.assert_allclose(kept[name], expected[name], rtol=RTOL, atol=ATOL)
    if target in codegen.GATHER_TARGETS:
        np.testing.assert_allclose(program.compile(target)(args), program.evaluate(args), rtol=RTOL, atol=ATOL)


def test_the_kernels_read_the_kept_forward_values():
    program, grads = kernels_program()
    source = grads.source("numba")
    # the backward pass launches no forward kernel: it reads h, m, e and s, computed once
    backward = source[source.index("def _backward("):]
    assert source.startswith("def _backward(x, w, h, m, s, ds):", source.index("def _backward("))
    assert not re.search(r"\b[hms]_kernel\(", backward)
    # the report's form recomputes s = exp (...) in h's adjoint, the kernels' form reads s
    assert "exp" in str(grads.adjoints["h"]) and "exp" not in str(grads.simplified.adjoints["h"])
    args, df = arguments(program), adjoint(program)
    with pytest.raises(ExpressionError, match="no forward value given for 'm'"):
        compiled("numpy")(args, df, {"h": np.zeros((3, 2))})
    with pytest.raises(ExpressionError, match=r"the forward value has shape \(2,\), expected \(3,\)"):
        compiled("numpy")(args, df, {**program.values(args), "s": np.zeros(2)})


def test_a_functions_gradients_read_a_given_forward_value():
    fn = tab.parse("f[i] = exp (x[i] * y[i])", {"f": (3,), "x": (3,), "y": (3,)})
    gradients = tab.derive(fn).compile("numpy")
    args, df = arguments(fn), adjoint(fn)
    values = gradients.values(args)
    assert list(values) == ["f"]
    expected = gradients(args, df)
    # a forward value that is not f's shows that it is read, not recomputed
    doubled = gradients(args, df, {"f": 2 * values["f"]})
    np.testing.assert_allclose(doubled["x"], 2 * expected["x"], rtol=RTOL)


PTX_PROBE = """  # after ptx_support.PREAMBLE
program = tab.parse(sys.argv[1], json.loads(sys.argv[2]))
grads = tab.derive(program)
ptx = {**codegen.compile_ptx(program), **codegen.compile_ptx(grads, "cuda")}
ptx.update({"scatter " + k: v for k, v in codegen.compile_ptx(grads, "cuda-scatter").items()})
print(json.dumps({name: ".visible .entry" in text for name, text in ptx.items()}))
"""


def test_every_cuda_kernel_of_a_program_compiles_to_ptx():
    result = ptx_probe(PTX_PROBE, KERNELS, json.dumps(KERNELS_SHAPES))
    # 3 forward kernels, 2 outer sums' adjoints, 2 adjoints, 2 gradients; 3 scatter kernels (and the rest again)
    assert all(result.values()) and len(result) >= 3 + 2 + 2 + 2 + 3, result


# --- random programs (hypothesis) --------------------------------------------------------------------------------

RANDOM_SHAPES = {"x": (4,), "y": (3,), "d0": (3,), "d1": (3,), "d2": (3,)}


@st.composite
def programs(draw):
    """2-3 definitions ``d0[i] = ...`` over x (4,), y (3,) and the definitions above: element-wise operations,
    sums over k in 0..1 with shifted and strided reads, any tensor read by several definitions."""

    def read(names, in_sum):
        name = draw(st.sampled_from(names))
        if name == "x":
            options = ["i", "i + 1", "3 - i"] + (["2 * k + 1", "k + 2", "i + k"] if in_sum else [])
        else:
            options = ["i", "2 - i"] + (["k", "2 * k", "k + 1"] if in_sum else [])
        return f"{name}[{draw(st.sampled_from(options))}]"

    def expression(names, in_sum, depth):
        kind = draw(st.sampled_from(["read"] if depth == 2 else ["read", "+", "*", "-", "unary", "sum"]))
        if kind == "read" or (kind == "sum" and in_sum):
            return read(names, in_sum)
        if kind == "unary":
            return f"{draw(st.sampled_from(['exp', 'tanh', 'sin']))} ({expression(names, in_sum, depth + 1)})"
        if kind == "sum":
            return f"sum{{k}}_0^1 ({expression(names, True, depth + 1)})"
        return f"({expression(names, in_sum, depth + 1)} {kind} {expression(names, in_sum, depth + 1)})"

    lines = []
    for k in range(draw(st.integers(2, 3))):
        names = ["x", "y"] + [f"d{j}" for j in range(k)]
        body = expression(names, False, 0)
        if k and "d" not in body:  # read the definition above, so the program is a chain at least
            body = f"d{k - 1}[i] * {body}"
        lines.append(f"d{k}[i] = {body}")
    return "\n".join(lines)


@settings(max_examples=15, deadline=None)
@given(programs())
@example("d0[i] = exp (x[i + 1])\nd1[i] = sum{k}_0^1 (d0[2 * k] * y[k + 1]) + d0[2 - i] * d0[i]")
@example("d0[i] = y[i]\nd1[i] = d0[i] * x[i]\nd2[i] = d1[i] * (d0[2 - i] - sum{k}_0^1 (x[2 * k + 1]))")
def test_random_programs_agree_with_their_inlined_expression(text):
    program = tab.parse(text, RANDOM_SHAPES)
    assert tab.parse(str(program), program.shapes) == program
    inlined = program.inlined()
    args, df = arguments(program), adjoint(program)
    np.testing.assert_allclose(program.evaluate(args), inlined.evaluate(args), rtol=1e-12, atol=1e-14)
    grads = tab.derive(program)
    got, simplified = grads.evaluate(args, df), grads.simplified.evaluate(args, df)
    compiled_numpy = grads.compile("numpy")(args, df)
    expected = tab.derive(inlined).evaluate(args, df)
    for name in program.arguments:
        wanted = expected.get(name, np.zeros(program.shapes[name]))  # read only by a definition s never reads
        for value in (got[name], simplified[name], compiled_numpy[name]):
            np.testing.assert_allclose(value, wanted, rtol=1e-10, atol=1e-12, err_msg=name)


# --- the command line --------------------------------------------------------------------------------------------


def shape_options(shapes):
    return [f"--shape={name}={'x'.join(map(str, shape))}" for name, shape in shapes.items()]


def run(capsys, *argv):
    code = main(["derive", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_the_command_line_reads_a_program_from_a_file(capsys, tmp_path):
    path = tmp_path / "softmax.txt"
    path.write_text(SOFTMAX)
    code, out, err = run(capsys, "--file", str(path), *shape_options(SOFTMAX_SHAPES), "--check")
    assert code == 0 and err == ""
    assert out.startswith("de[de_0] = ") and "dx[dx_0] = " in out
    assert float(out.splitlines()[-1].split()[2]) < 1e-8
    code, text_out, _ = run(capsys, SOFTMAX, *shape_options(SOFTMAX_SHAPES), "--check")
    assert code == 0 and text_out == out
    code, out, _ = run(capsys, SOFTMAX, *shape_options(SOFTMAX_SHAPES), "--simplified")
    assert code == 0 and out.startswith("ds_k[i] = ")
    code, out, _ = run(capsys, SOFTMAX, *shape_options(SOFTMAX_SHAPES), "--latex")
    assert code == 0 and out.startswith("$$")
    code, out, _ = run(capsys, SOFTMAX, *shape_options(SOFTMAX_SHAPES), "--kernel", "numba-scatter")
    assert code == 0 and "def _scatter0(" in out and "def _backward(x, m, e, s, ds):" in out


@pytest.mark.parametrize("argv, message", [
    (["a[i] = x[i]\na[i] = x[i]", "--shape=x=3", "--shape=a=3"], "error: line 2: 'a' is defined twice"),
    (["--shape=x=3"], "error: give the function as TEXT or --file PATH (one of them)"),
    (["a[i] = x[i]", "--file", "p.txt", "--shape=x=3"], "error: give the function as TEXT or --file PATH"),
    (["--file", "/nonexistent/p.txt", "--shape=x=3"], "error: --file '/nonexistent/p.txt': No such file"),
])
def test_the_command_line_refuses_bad_programs(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.startswith(message)
    if "line 2" in message:
        assert err.splitlines()[-1].strip() == "^"

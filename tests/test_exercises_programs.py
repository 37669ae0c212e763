"""The check functions of chapters 10 (tensor programs) and 11 (the capstone network): right answers in several
forms pass, typical wrong answers fail with a message that says what is wrong and does not give the answer away,
and None says "no answer yet". The checks' oracles (central differences of a program with one intermediate moved,
a brute-force routing of max pooling, numpy layers) are themselves compared with the core and with numpy here."""

import numpy as np
import pytest

import tensoradbook as tab
from tensoradbook.exercises import ch10_programs as ch10
from tensoradbook.exercises import ch11_capstone as ch11
from feedback import hides, messages

TWO_CONSUMERS = ("h[i] = x[i] * y[i]\na[i] = exp (h[i])\nL[] = sum{i}_0^3 (a[i] * h[i])",
                 {"x": (4,), "y": (4,), "h": (4,), "a": (4,), "L": ()})
CHAIN = ("u[i] = sin (x[i + 1]) * w[i]\nv[] = sum{i}_0^2 (u[i] ** 2)\nf[i] = u[i] * v[] + x[i]",
         {"x": (4,), "w": (3,), "u": (3,), "v": (), "f": (3,)})
POOL_X = np.array([[1, 3, 2, 2], [3, 0, 2, 1], [0, 0, 5, 4], [0, 0, 4, 5.0]])
POOL_DF = np.array([[1, 2], [3, 4.0]])
N = 64


def softmax(lines, shapes):
    return tab.parse("\n".join(lines), {"x": (N,), "s": (N,), **shapes})


@pytest.mark.parametrize("call", [
    lambda: ch10.check_intermediate_adjoint(TWO_CONSUMERS[0], "h", None, shapes=TWO_CONSUMERS[1]),
    lambda: ch10.check_pooling_gradient(POOL_X, POOL_DF, None),
    lambda: ch10.check_softmax_program(None, n=N),
    lambda: ch11.check_layer("average pooling", None),
    lambda: ch11.check_layer("leaky relu", None),
    lambda: ch11.check_layer("second convolution", None),
])
def test_none_is_no_answer_yet(call):
    result = call()
    assert not result.ok and result.pending
    assert "no answer yet" in str(result)


# --- chapter 10: the adjoint of an intermediate ----------------------------------------------------------------

def test_the_oracle_agrees_with_the_core():
    """Central differences with one intermediate moved equal the adjoint the core's sweep computes."""
    for text, shapes, name in [(*TWO_CONSUMERS, "h"), (*CHAIN, "u"), (*CHAIN, "v")]:
        program = tab.parse(text, shapes)
        rng = np.random.default_rng(0)
        args = tab.ad.gradcheck.random_arguments(program, rng)
        df = rng.standard_normal(program.shapes[program.name])
        values = {**args, **program.values(args)}
        everyone = frozenset(program.consumers(name))
        numeric = ch10._numeric_adjoint(program, values, name, df, everyone)
        grads = tab.derive(program)
        sweep = {**values, grads.adjoint_name: df}
        for tensor in grads.backward:
            sweep[tensor.name] = tensor.evaluate(sweep)
        np.testing.assert_allclose(numeric, sweep[grads.adjoints[name].name], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("answer", [
    "dh[i] = dL[] * (a[i] + h[i] * a[i])",
    "dh[i] = da[i] * a[i] + dL[] * a[i]",          # the consumers' adjoint, as the sweep writes it
    "dh[b] = dL[] * exp (x[b] * y[b]) * (1 + x[b] * y[b])",
])
def test_right_adjoints_pass(answer):
    result = ch10.check_intermediate_adjoint(TWO_CONSUMERS[0], "h", answer, shapes=TWO_CONSUMERS[1])
    assert result.ok, str(result)
    assert "2 consumer(s)" in result.note


def test_an_adjoint_through_a_scalar_intermediate():
    right = "du[i] = df[i] * v[] + dv[] * 2 * u[i]"
    assert ch10.check_intermediate_adjoint(CHAIN[0], "u", right, shapes=CHAIN[1]).ok
    assert ch10.check_intermediate_adjoint(CHAIN[0], "v", "dv[] = sum{i}_0^2 (df[i] * u[i])", shapes=CHAIN[1]).ok


@pytest.mark.parametrize("answer, consumer", [("dh[i] = dL[] * h[i] * a[i]", "a"), ("dh[i] = dL[] * a[i]", "L")])
def test_one_consumer_only_is_named(answer, consumer):
    result = ch10.check_intermediate_adjoint(TWO_CONSUMERS[0], "h", answer, shapes=TWO_CONSUMERS[1])
    assert not result.ok
    assert f"what {consumer} alone passes back" in messages(result) and "eq. 2" in messages(result)


def test_wrong_adjoints_say_what_is_wrong():
    check = lambda answer: ch10.check_intermediate_adjoint(TWO_CONSUMERS[0], "h", answer,  # noqa: E731
                                                           shapes=TWO_CONSUMERS[1])
    doubled = check("dh[i] = 2 * dL[] * (a[i] + h[i] * a[i])")
    assert "2 times the right value" in messages(doubled)
    assert "cannot be read" in messages(check("dh[i] = dL[] * (a[i]"))
    assert "the adjoint of h is called 'dh'" in messages(check("dx[i] = dL[] * a[i]"))
    other = check("dh[i] = dL[] * a[i] * x[i]")
    assert not other.ok and "read by 2 definitions (a, L)" in messages(other)


def test_names_that_clash_are_refused():
    with pytest.raises(ValueError, match="not an intermediate"):
        ch10.check_intermediate_adjoint(TWO_CONSUMERS[0], "x", None, shapes=TWO_CONSUMERS[1])
    with pytest.raises(ValueError, match="the name of an adjoint"):
        ch10.check_intermediate_adjoint("dh[i] = x[i] * 2\nh[i] = dh[i] + 1\nL[] = sum{i}_0^1 (h[i])", "h", None,
                                        shapes={"x": (2,), "dh": (2,), "h": (2,), "L": ()})


# --- chapter 10: max pooling's gradient --------------------------------------------------------------------------

def brute_force_pooling(x, df):
    """Independent of the check: np.unravel_index over each window, the first maximum in row-major order."""
    out = np.zeros_like(x)
    for u in range(df.shape[0]):
        for v in range(df.shape[1]):
            r, s = np.unravel_index(np.argmax(x[2 * u:2 * u + 2, 2 * v:2 * v + 2]), (2, 2))
            out[2 * u + r, 2 * v + s] += df[u, v]
    return out


def test_the_pooling_oracle_is_the_cores_convention():
    core = tab.derive(tab.parse("m[u; v] = max{r}_0^1 (max{s}_0^1 (x[2 * u + r; 2 * v + s]))",
                                {"m": (2, 2), "x": (4, 4)})).evaluate({"x": POOL_X}, POOL_DF)["x"]
    np.testing.assert_array_equal(core, brute_force_pooling(POOL_X, POOL_DF))
    assert ch10.check_pooling_gradient(POOL_X, POOL_DF, core).ok
    assert ch10.check_pooling_gradient(POOL_X, POOL_DF, core.tolist()).ok


@pytest.mark.parametrize("convention, phrase", [
    ("last", "last maximal element"), ("column-major", "going down the columns"),
    ("split", "split the adjoint among tied elements"), ("every", "every tied element got"),
])
def test_other_conventions_are_recognised(convention, phrase):
    answer = ch10._routed(POOL_X, POOL_DF, ch10._CONVENTIONS[convention])
    result = ch10.check_pooling_gradient(POOL_X, POOL_DF, answer)
    assert phrase in messages(result)
    assert hides(result)


def test_pooling_mistakes_point_at_a_window_without_the_value():
    right = brute_force_pooling(POOL_X, POOL_DF)
    unscaled = brute_force_pooling(POOL_X, np.ones((2, 2)))
    assert "not 1" in messages(ch10.check_pooling_gradient(POOL_X, POOL_DF, unscaled))
    wrong = right.copy()
    wrong[0, 1], wrong[0, 0] = 0.0, POOL_DF[0, 0]
    result = ch10.check_pooling_gradient(POOL_X, POOL_DF, wrong)
    assert "not a maximum of that window" in messages(result) and "window [" not in messages(result)
    assert "shape" in messages(ch10.check_pooling_gradient(POOL_X, POOL_DF, np.zeros((2, 2))))
    assert "does not add up" in messages(ch10.check_pooling_gradient(POOL_X, POOL_DF, 2 * right))
    # the rules a wrong dx breaks, never where: the same mistake in another window draws the same words
    elsewhere = right.copy()
    elsewhere[2, 3], elsewhere[2, 2] = elsewhere[2, 2], 0.0  # x[2; 3] = 4 is not the maximum 5 of its window
    assert messages(ch10.check_pooling_gradient(POOL_X, POOL_DF, elsewhere)) == messages(result)


# --- chapter 10: a softmax program of linear work ------------------------------------------------------------

def test_element_terms_count_sums_per_element():
    fn = tab.parse("f[i] = x[i] * sum{k}_0^7 (x[k])", {"f": (8,), "x": (8,)})
    assert ch10.element_terms(fn) == 8 * (1 + 8)
    nested = tab.parse("f[i; j] = sum{k}_0^2 (sum{l}_0^k (x[i; l] * x[j; k]))", {"f": (2, 2), "x": (2, 3)})
    assert ch10.element_terms(nested) == 4 * (1 + 3 * (1 + 3))  # the inner range over the whole box: 0..2
    assert ch10.element_terms(tab.parse("f[] = x[]", {"f": (), "x": ()})) == 1


@pytest.mark.parametrize("answer", [
    softmax(["e[i] = exp (x[i])", "z[] = sum{k}_0^63 (e[k])", "s[i] = e[i] / z[]"], {"e": (N,), "z": ()}),
    softmax(["z[] = sum{k}_0^63 (exp (x[k]))", "s[i] = exp (x[i]) / z[]"], {"z": ()}),
    softmax(["m[] = sum{k}_0^63 (x[k]) / 64", "e[i] = exp (x[i] - m[])", "z[] = sum{k}_0^63 (e[k])",
             "s[i] = e[i] / z[]"], {"m": (), "e": (N,), "z": ()}),
    ("z[] = sum{k}_0^63 (exp (x[k]))\ns[i] = exp (x[i]) / z[]", {"x": (N,), "z": (), "s": (N,)}),
])
def test_linear_softmax_programs_pass(answer):
    result = ch10.check_softmax_program(answer, n=N)
    assert result.ok, str(result)


def test_quadratic_softmax_programs_are_explained():
    one = ch10.check_softmax_program(softmax(["s[i] = exp (x[i]) / sum{k}_0^63 (exp (x[k]))"], {}), n=N)
    assert not one.ok and "grows like n**2" in messages(one) and "a definition of its own" in messages(one)
    shifted = softmax(["m[] = max{k}_0^63 (x[k])", "e[i] = exp (x[i] - m[])", "z[] = sum{k}_0^63 (e[k])",
                       "s[i] = e[i] / z[]"], {"m": (), "e": (N,), "z": ()})
    assert ch10.check_softmax_program(shifted, n=N).ok  # the max's gradient scans only at the maximum
    inline_max = softmax(["e[i] = exp (x[i] - max{k}_0^63 (x[k]))", "z[] = sum{k}_0^63 (e[k])", "s[i] = e[i] / z[]"],
                         {"e": (N,), "z": ()})
    result = ch10.check_softmax_program(inline_max, n=N)
    assert not result.ok and "grows like n**2" in messages(result) and "a definition of its own" in messages(result)


def test_wrong_softmax_programs():
    assert "does not add up to 1" in messages(ch10.check_softmax_program(softmax(["s[i] = exp (x[i])"], {}), n=N))
    renamed = tab.parse("p[i] = exp (x[i])", {"x": (N,), "p": (N,)})
    assert "must be s[i]" in messages(ch10.check_softmax_program(renamed, n=N))
    two_inputs = tab.parse("s[i] = exp (x[i]) * y[]", {"x": (N,), "y": (), "s": (N,)})
    assert "exactly one input" in messages(ch10.check_softmax_program(two_inputs, n=N))
    assert "cannot be read" in messages(ch10.check_softmax_program(("s[i] = exp (x[i]", {"x": (N,), "s": (N,)})))
    assert "the pair (text, shapes)" in messages(ch10.check_softmax_program("s[i] = x[i]", n=N))


# --- chapter 11: layers that change the network -----------------------------------------------------------------

def test_the_checks_network_is_the_chapters_and_equals_numpy():
    text, shapes = ch11.network()
    program = tab.parse(text, shapes)
    assert program.arguments == ("W", "X", "b", "V", "d", "T") and program.name == "L"
    rng = np.random.default_rng(1)
    args = {name: rng.standard_normal(shapes[name]) for name in program.arguments}
    args["T"] = np.eye(10)[[2, 5]]
    h = ch11._conv(args["X"][:, None], args["W"][:, None], args["b"])
    m = np.maximum(h, 0).reshape(2, 2, 4, 2, 4, 2).max(axis=(3, 5))
    z = m.reshape(2, -1) @ args["V"].reshape(10, -1).T + args["d"]
    logp = z - z.max(1, keepdims=True) - np.log(np.exp(z - z.max(1, keepdims=True)).sum(1, keepdims=True))
    np.testing.assert_allclose(program.evaluate(args), -np.mean(logp[[0, 1], [2, 5]]), rtol=1e-12)


RIGHT_LAYERS = [
    ("average pooling", "m[n; c; u; v] = sum{r}_0^1 (sum{s}_0^1 (a[n; c; 2 * u + r; 2 * v + s])) / 4"),
    ("average pooling", "m[n; c; u; v] = (a[n; c; 2 * u; 2 * v] + a[n; c; 2 * u + 1; 2 * v] + a[n; c; 2 * u; 2 * v + 1]"
                        " + a[n; c; 2 * u + 1; 2 * v + 1]) * 0.25"),
    ("leaky relu", "a[n; c; i; j] = if {h[n; c; i; j] > 0} then (h[n; c; i; j]) else (0.01 * h[n; c; i; j])"),
    ("leaky relu", "a[n; c; i; j] = max (0.01 * h[n; c; i; j], h[n; c; i; j])"),
    ("second convolution", "g[n; e; i; j] = sum{c}_0^1 (sum{p}_0^2 (sum{q}_0^2 (if {i + p >= 1 and i + p <= 8 and "
                           "j + q >= 1 and j + q <= 8} then (W2[e; c; p; q] * a[n; c; i + p - 1; j + q - 1]) "
                           "else (0)))) + b2[e]"),
]


@pytest.mark.parametrize("layer, answer", RIGHT_LAYERS)
def test_right_layers_pass_with_their_gradients_checked(layer, answer):
    result = ch11.check_layer(layer, answer)
    assert result.ok, str(result)
    assert "tab.check_gradients" in result.note


@pytest.mark.parametrize("layer, answer, phrase", [
    ("average pooling", "m[n; c; u; v] = sum{r}_0^1 (sum{s}_0^1 (a[n; c; 2 * u + r; 2 * v + s]))",
     "divides the window's sum"),
    ("average pooling", "m[n; c; u; v] = sum{r}_0^1 (sum{s}_0^1 (a[n; c; u + r; v + s])) / 4", "rows 2u, 2u + 1"),
    ("average pooling", "m[n; c; u; v] = sum{r}_0^1 (sum{s}_0^1 (h[n; c; 2 * u + r; 2 * v + s])) / 4",
     "it reads only a"),
    ("leaky relu", "a[n; c; i; j] = max (h[n; c; i; j], 0.01 * h[n; c; i; j])", "0 belongs to the negative side"),
    ("leaky relu", "a[n; c; i; j] = if {h[n; c; i; j] >= 0} then (h[n; c; i; j]) else (0.01 * h[n; c; i; j])",
     "Which branch"),
    ("leaky relu", "a[n; c; i; j] = if {h[n; c; i; j] > 0} then (h[n; c; i; j]) else (0)", "below 0"),
    ("second convolution", "g[n; e; i; j] = sum{c}_0^1 (sum{p}_0^2 (sum{q}_0^2 (if {i + p >= 1 and i + p <= 7 and "
                           "j + q >= 1 and j + q <= 8} then (W2[e; c; p; q] * a[n; c; i + p - 1; j + q - 1]) "
                           "else (0)))) + b2[e]", "padding conditions"),
    ("second convolution", "g[n; e; i; j] = sum{p}_0^2 (sum{q}_0^2 (if {i + p >= 1 and i + p <= 8 and j + q >= 1 and "
                           "j + q <= 8} then (W2[e; 0; p; q] * a[n; 0; i + p - 1; j + q - 1]) else (0))) + b2[e]",
     "sums over every input channel"),
    ("second convolution", "g[n; e; i] = a[n; e; i; i]", "cannot be read"),
    ("leaky relu", "q[n; c; i; j] = h[n; c; i; j]", "cannot be read"),
])
def test_wrong_layers_say_what_is_wrong(layer, answer, phrase):
    result = ch11.check_layer(layer, answer)
    assert not result.ok and phrase in messages(result), str(result)


def test_layer_answers_must_be_text_and_layers_known():
    assert "must be text" in messages(ch11.check_layer("leaky relu", 0.01))
    with pytest.raises(ValueError, match="layer is one of"):
        ch11.check_layer("dropout", None)

"""tensoradbook.torch and tensoradbook.jax: our kernels as a differentiable PyTorch / JAX operation.

Each function below is checked against the frameworks' own gradient checks (``torch.autograd.gradcheck``,
``jax.test_util.check_grads``) and against the same computation written directly in torch and in
jax.numpy: equal values and equal gradients (the frameworks' autodiff of the direct code). Then the
uses: a training loop with ``torch.optim.SGD`` and ``jax.jit`` / ``jax.grad`` / ``jax.vmap``.

PyTorch and JAX come with the ``models`` extra; without them these tests are skipped, saying so, except
under CI=true (.ci/run installs the extra), where they fail. Shapes are tiny and the wrapped functions
are shared per module, so kernels compile (or load from the disk cache) once.
"""

from __future__ import annotations

import copy
import importlib
import re

import numpy as np
import pytest
from conftest import IN_CI
from numpy.testing import assert_allclose

import tensoradbook as tab

HOW_TO_INSTALL = "install the models extra: pip install -e '.[models]'"
RTOL, ATOL = 1e-10, 1e-12


def require(module: str):
    """``module`` imported, or a skip naming the extra (a failure under CI=true, where it must be there)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        message = f"{module} is not importable ({error}); {HOW_TO_INSTALL}"
    if IN_CI:
        pytest.fail(f"CI=true and {message}", pytrace=False)
    pytest.skip(message)


# --- the functions and their direct implementations ---------------------------------------------
# Each direct implementation takes the inputs in the function's argument order and `xp`, the array
# module (torch or jax.numpy: the operations used are spelled alike in both).

def report(xp, a, b, c, d):
    i_plus_k = xp.arange(3)[:, None] + xp.arange(5)[None, :]
    terms = (a[:, None, :] + b[None, :, :]) ** 2 * xp.diagonal(c)[:, None, None] + d[i_plus_k][:, None, :] ** 3
    return xp.exp(-terms.sum(-1))


def strided(xp, x, y):
    return x[2 * xp.arange(3)[:, None] + xp.arange(3)[None, :]] ** 2 * y[None, :]


def scalar(xp, w, u):
    return (xp.tanh(w * u) ** 2).sum()


def twice(xp, x):
    return x[:3, None] * x[None, :3] + xp.sin(x[xp.arange(3)[:, None] + xp.arange(3)[None, :]])


def layers(xp, x, w, v):
    h = xp.tanh(x @ w)
    return (h * v[None, :] + h ** 2).sum(-1)


CASES = {
    # the report's sec. 6 example, summing over k = 0..4
    "report": ("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
               {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (7,)}, report),
    # a stride of 2, and elements of x read by two (i, j): their gradients add up
    "strided": ("g[i; j] = x[2 * i + j] ** 2 * y[j]", {"g": (3, 3), "x": (7,), "y": (3,)}, strided),
    # a scalar output and a scalar argument
    "scalar": ("s[] = sum{i}_0^3 (sum{j}_0^2 (tanh (w[i; j] * u[]) ** 2))", {"s": (), "w": (4, 3), "u": ()}, scalar),
    # one argument read three times
    "twice": ("h[i; j] = x[i] * x[j] + sin (x[i + j])", {"h": (3, 3), "x": (5,)}, twice),
}
if hasattr(tab, "Program"):  # tensor programs: the same duck type as a Function
    # two definitions; the intermediate h is read twice
    CASES["program"] = ("h[n; j] = tanh (sum{k}_0^2 (x[n; k] * w[k; j]))\n"
                        "o[n] = sum{j}_0^3 (h[n; j] * v[j] + h[n; j] ** 2)",
                        {"x": (4, 3), "w": (3, 4), "h": (4, 4), "v": (4,), "o": (4,)}, layers)


@pytest.fixture(scope="module")
def subjects():
    return {name: tab.parse(text, shapes) for name, (text, shapes, _) in CASES.items()}


def inputs(fn, seed: int = 0) -> list[np.ndarray]:
    """Random float64 inputs in argument order, small enough that exp and the cubes stay tame."""
    rng = np.random.default_rng(seed)
    return [rng.uniform(-0.7, 0.7, fn.shapes[name]) for name in fn.arguments]


def adjoint(fn, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=fn.shapes[fn.name])


# --- PyTorch ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def torch():
    return require("torch")


@pytest.fixture(scope="module")
def tabt(torch):
    return require("tensoradbook.torch")


@pytest.fixture(scope="module")
def torch_fns(tabt, subjects):
    return {name: tabt.function(fn) for name, fn in subjects.items()}


@pytest.mark.parametrize("case", CASES)
def test_torch_passes_gradcheck(torch, torch_fns, subjects, case):
    tensors = [torch.tensor(x, requires_grad=True) for x in inputs(subjects[case])]
    assert torch.autograd.gradcheck(torch_fns[case], tensors)


@pytest.mark.parametrize("case", CASES)
def test_torch_equals_the_direct_computation_and_its_autograd(torch, torch_fns, subjects, case):
    fn, direct = subjects[case], CASES[case][2]
    ours = [torch.tensor(x, requires_grad=True) for x in inputs(fn)]
    theirs = [torch.tensor(x, requires_grad=True) for x in inputs(fn)]
    out, expected = torch_fns[case](*ours), direct(torch, *theirs)
    assert out.dtype == torch.float64 and out.shape == fn.shapes[fn.name]
    assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=RTOL, atol=ATOL)
    df = torch.from_numpy(adjoint(fn))
    for name, got, want in zip(fn.arguments, torch.autograd.grad(out, ours, df),
                               torch.autograd.grad(expected, theirs, df)):
        assert_allclose(got.numpy(), want.numpy(), rtol=RTOL, atol=ATOL, err_msg=f"gradient of {name}")


def test_torch_with_the_numpy_target(torch, tabt, subjects):
    fn = subjects["report"]
    f = tabt.function(fn, target="numpy")
    tensors = [torch.tensor(x, requires_grad=True) for x in inputs(fn)]
    assert torch.autograd.gradcheck(f, tensors)
    assert_allclose(f(*tensors).detach().numpy(), report(torch, *tensors).detach().numpy(), rtol=RTOL, atol=ATOL)


def test_torch_inputs_by_name_and_constants(torch, torch_fns, subjects):
    fn, f = subjects["report"], torch_fns["report"]
    a, b, c, d = (torch.tensor(x) for x in inputs(fn))
    positional = f(a, b, c, d)
    assert torch.equal(f(a, b, d=d, c=c), positional)
    assert torch.equal(f(a=a, b=b, c=c, d=d), positional)
    # numpy arrays are constants: only the tensor that asks for it gets a gradient
    a.requires_grad_(True)
    out = f(a, b.numpy(), c.numpy(), d.numpy())
    assert out.requires_grad and torch.equal(out.detach(), positional)


def test_torch_float32_stays_float32(torch, torch_fns, subjects):
    fn, f = subjects["report"], torch_fns["report"]
    single = [torch.tensor(x, dtype=torch.float32, requires_grad=True) for x in inputs(fn)]
    double = [torch.tensor(x, requires_grad=True) for x in inputs(fn)]
    out32, out64 = f(*single), f(*double)
    assert out32.dtype == torch.float32
    out32.sum().backward()
    out64.sum().backward()
    for t32, t64 in zip(single, double):
        assert t32.grad.dtype == torch.float32
        assert_allclose(t32.grad.numpy(), t64.grad.numpy(), rtol=1e-5, atol=1e-6)
    # mixed: promoted to float64, and each gradient in its input's dtype
    mixed = f(single[0], *double[1:])
    assert mixed.dtype == torch.float64


def test_torch_refuses_what_it_cannot_do(torch, torch_fns, subjects):
    fn, f = subjects["report"], torch_fns["report"]
    a, b, c, d = (torch.tensor(x, requires_grad=True) for x in inputs(fn))
    with pytest.raises(ValueError, match=r"argument 'd' has shape \(6,\), expected \(7,\)"):
        f(a, b, c, d[:6])
    with pytest.raises(TypeError, match="missing argument d"):
        f(a, b, c)
    with pytest.raises(TypeError, match="twice"):
        f(a, b, c, d, a=a)
    with pytest.raises(TypeError, match="no argument 'e'"):
        f(a, b, c, d, e=a)
    (da,) = torch.autograd.grad(f(a, b, c, d).sum(), a, create_graph=False)
    assert da.shape == a.shape
    (da,) = torch.autograd.grad(f(a, b, c, d).sum(), a, create_graph=True)  # as torch.func.grad takes them
    with pytest.raises(RuntimeError, match="tensoradbook.torch: f cannot be differentiated twice"):
        torch.autograd.grad(da.sum(), a)
    with pytest.raises(TypeError, match="tab.parse"):
        type(f)("f[i] = x[i]")
    with pytest.raises(ValueError, match="unknown target 'gpu'"):
        type(f)(fn, target="gpu")


def test_torch_training_loop_follows_plain_torch(torch, tabt):
    """A linear layer with tanh written in our notation, trained by SGD on a squared loss: the loss
    falls, and every step equals the same model written in torch."""
    layer = tab.parse("y[n] = tanh (sum{k}_0^2 (X[n; k] * w[k]) + b[])", {"y": (8,), "X": (8, 3), "w": (3,), "b": ()})
    rng = np.random.default_rng(2)
    X = torch.from_numpy(rng.normal(size=(8, 3)))
    target = torch.tanh(X @ torch.tensor([0.5, -1.0, 0.25], dtype=torch.float64) + 0.1)

    class Model(torch.nn.Module):
        def __init__(self, ours: bool):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
            self.b = torch.nn.Parameter(torch.zeros((), dtype=torch.float64))
            # the numpy target: the numba kernels are the gradcheck tests' concern, and compile for seconds
            self.layer = tabt.function(layer, target="numpy") if ours else None

        def forward(self, X):
            return self.layer(X, self.w, self.b) if self.layer else torch.tanh(X @ self.w + self.b)

    def train(model, steps=25):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        losses = []
        for _ in range(steps):
            optimizer.zero_grad()
            loss = ((model(X) - target) ** 2).mean()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses

    ours, plain = Model(True), Model(False)
    assert "TorchFunction(y(X, w, b) -> (8,), target='numpy')" in repr(ours)
    losses = train(ours)
    assert losses[-1] < 0.05 * losses[0]
    assert_allclose(losses, train(plain), rtol=RTOL)
    assert_allclose(ours.w.detach().numpy(), plain.w.detach().numpy(), rtol=RTOL)
    # a copy of the model (compiled kernels are not copied: it compiles again, from the caches)
    twin = copy.deepcopy(ours)
    assert torch.equal(twin(X), ours(X))


def test_torch_func_grad_jacrev_and_vmap_equal_the_direct_computation(torch, torch_fns, subjects):
    """torch.func once refused the operation (its setup_context message); a vmap runs the kernels once per
    batch element, also inside vmap(grad), the per-sample gradients."""
    fn, f = subjects["report"], torch_fns["report"]
    args = [torch.tensor(x) for x in inputs(fn)]
    weights = torch.from_numpy(adjoint(fn))

    def loss(g):
        return lambda *xs: (weights * g(*xs) ** 2).sum()

    argnums = tuple(range(len(args)))
    ours = torch.func.grad(loss(f), argnums=argnums)(*args)
    theirs = torch.func.grad(loss(lambda *xs: report(torch, *xs)), argnums=argnums)(*args)
    for got, want in zip(ours, theirs):
        assert_allclose(got.numpy(), want.numpy(), rtol=RTOL, atol=ATOL)
    assert_allclose(torch.func.jacrev(lambda a: f(a, *args[1:]))(args[0]).numpy(),
                    torch.func.jacrev(lambda a: report(torch, a, *args[1:]))(args[0]).numpy(), rtol=RTOL, atol=ATOL)
    batch = torch.stack([args[0], 0.5 * args[0], -args[0]])
    assert_allclose(torch.func.vmap(lambda a: f(a, *args[1:]))(batch).numpy(),
                    torch.func.vmap(lambda a: report(torch, a, *args[1:]))(batch).numpy(), rtol=RTOL, atol=ATOL)
    per_sample = torch.func.vmap(torch.func.grad(lambda a: loss(f)(a, *args[1:])))(batch)
    expected = torch.func.vmap(torch.func.grad(lambda a: loss(lambda *xs: report(torch, *xs))(a, *args[1:])))(batch)
    assert_allclose(per_sample.numpy(), expected.numpy(), rtol=RTOL, atol=ATOL)
    assert torch.func.vmap(lambda a: f(a, *args[1:]))(batch[:0]).shape == (0, *fn.shapes[fn.name])


TORCH_BEYOND_FIRST_ORDER = {
    "grad of grad": ("differentiated twice", lambda torch, g, x: torch.func.grad(
        lambda y: torch.func.grad(lambda z: g(z).sum())(y).sum())(x)),
    "hessian": ("differentiated in forward mode", lambda torch, g, x: torch.func.hessian(lambda y: g(y).sum())(x)),
    "jvp": ("differentiated in forward mode", lambda torch, g, x: torch.func.jvp(g, (x,), (x,))),
    "jacfwd": ("differentiated in forward mode", lambda torch, g, x: torch.func.jacfwd(g)(x)),
}


@pytest.mark.parametrize("transform", TORCH_BEYOND_FIRST_ORDER)
def test_torch_beyond_first_order_reverse_mode_is_refused_naming_the_limit(torch, torch_fns, subjects, transform):
    fn, f = subjects["twice"], torch_fns["twice"]
    asked, run = TORCH_BEYOND_FIRST_ORDER[transform]
    with pytest.raises(RuntimeError) as info:
        run(torch, f, torch.tensor(inputs(fn)[0]))
    message = str(info.value)
    assert message.startswith(f"tensoradbook.torch: h cannot be {asked}")
    assert "first-order reverse mode only" in message and "tensoradbook.torch.function(tab.derive(fn)['x'])" in message
    assert "docs/developer.md" in message


def test_torch_a_wrapped_gradient_gives_second_derivatives(torch, tabt, subjects):
    """What the refusal suggests: the gradient, a function of the notation, wrapped and differentiated in turn
    equals torch's double backward of the direct computation."""
    fn = subjects["twice"]
    dx = tabt.function(tab.derive(fn)["x"], target="numpy")
    ours, theirs = (torch.tensor(inputs(fn)[0], requires_grad=True) for _ in range(2))
    df, v = torch.from_numpy(adjoint(fn)), torch.from_numpy(adjoint(fn, seed=2)[0, :])
    (expected,) = torch.autograd.grad(twice(torch, theirs), theirs, df, create_graph=True)
    gradient = dx(dh=df, x=ours)
    assert_allclose(gradient.detach().numpy(), expected.detach().numpy(), rtol=RTOL, atol=ATOL)
    v = torch.cat([v, v[:2]])
    assert_allclose(torch.autograd.grad((gradient * v).sum(), ours)[0].numpy(),
                    torch.autograd.grad((expected * v).sum(), theirs)[0].numpy(), rtol=RTOL, atol=ATOL)


# --- JAX ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def jax():
    jax = require("jax")
    # float64 arrays for the whole module, then JAX's setting as it was
    was = bool(jax.config.jax_enable_x64)
    jax.config.update("jax_enable_x64", True)
    yield jax
    jax.config.update("jax_enable_x64", was)


@pytest.fixture(scope="module")
def jnp(jax):
    return require("jax.numpy")


@pytest.fixture(scope="module")
def tabj(jax):
    return require("tensoradbook.jax")


@pytest.fixture(scope="module")
def jax_fns(tabj, subjects):
    return {name: tabj.function(fn) for name, fn in subjects.items()}


@pytest.mark.parametrize("case", CASES)
def test_jax_passes_check_grads(jax, jnp, jax_fns, subjects, case):
    from jax.test_util import check_grads

    check_grads(jax_fns[case], [jnp.asarray(x) for x in inputs(subjects[case])], order=1, modes=["rev"])


@pytest.mark.parametrize("case", CASES)
def test_jax_equals_the_direct_computation_and_its_vjp(jax, jnp, jax_fns, subjects, case):
    fn, direct = subjects[case], CASES[case][2]
    args = [jnp.asarray(x) for x in inputs(fn)]
    out, pullback = jax.vjp(jax_fns[case], *args)
    expected, expected_pullback = jax.vjp(lambda *xs: direct(jnp, *xs), *args)
    assert out.dtype == jnp.float64 and out.shape == fn.shapes[fn.name]
    assert_allclose(np.asarray(out), np.asarray(expected), rtol=RTOL, atol=ATOL)
    df = jnp.asarray(adjoint(fn))
    for name, got, want in zip(fn.arguments, pullback(df), expected_pullback(df)):
        assert_allclose(np.asarray(got), np.asarray(want), rtol=RTOL, atol=ATOL, err_msg=f"gradient of {name}")


def test_jax_under_jit_grad_and_vmap(jax, jnp, jax_fns, subjects):
    fn, f = subjects["report"], jax_fns["report"]
    args = [jnp.asarray(x) for x in inputs(fn)]
    weights = jnp.asarray(adjoint(fn))
    assert_allclose(np.asarray(jax.jit(f)(*args)), np.asarray(report(jnp, *args)), rtol=RTOL, atol=ATOL)

    def loss(f):
        return lambda a, b, c, d: jnp.sum(weights * f(a, b, c, d) ** 2)

    argnums = tuple(range(len(args)))
    ours = jax.jit(jax.grad(loss(f), argnums=argnums))(*args)
    theirs = jax.grad(loss(lambda *xs: report(jnp, *xs)), argnums=argnums)(*args)
    for got, want in zip(ours, theirs):
        assert_allclose(np.asarray(got), np.asarray(want), rtol=RTOL, atol=ATOL)
    # a batch of a's: the kernels run once per element
    batch = jnp.stack([args[0], 0.5 * args[0]])
    batched = jax.jit(jax.vmap(lambda a: f(a, *args[1:])))(batch)
    assert_allclose(np.asarray(batched[1]), np.asarray(report(jnp, batch[1], *args[1:])), rtol=RTOL, atol=ATOL)


def test_jax_with_the_numpy_target_and_by_name(jax, jnp, tabj, subjects):
    from jax.test_util import check_grads

    fn = subjects["strided"]
    f = tabj.function(fn, target="numpy")
    x, y = (jnp.asarray(v) for v in inputs(fn))
    check_grads(f, [x, y], order=1, modes=["rev"])
    assert_allclose(np.asarray(f(y=y, x=x)), np.asarray(strided(jnp, x, y)), rtol=RTOL, atol=ATOL)
    with pytest.raises(ValueError, match=r"argument 'y' has shape \(2,\), expected \(3,\)"):
        f(x, y[:2])


def test_jax_float32_without_x64(jax, jnp, jax_fns, subjects):
    """Without jax_enable_x64 there are no float64 arrays: outputs and gradients are float32."""
    fn, f = subjects["twice"], jax_fns["twice"]
    (x,) = inputs(fn)
    jax.config.update("jax_enable_x64", False)
    try:
        out, pullback = jax.vjp(f, jnp.asarray(x))
        (dx,) = pullback(jnp.ones(fn.shapes[fn.name], jnp.float32))
        assert out.dtype == jnp.float32 and dx.dtype == jnp.float32
    finally:
        jax.config.update("jax_enable_x64", True)
    assert_allclose(np.asarray(out), twice(np, x), rtol=1e-6, atol=1e-6)
    # integers promote to the default float
    assert f(jnp.arange(5)).dtype == jnp.float64


def test_jax_takes_lists_tuples_and_numbers_as_the_torch_bridge_does(jax, jnp, torch, jax_fns, torch_fns, subjects):
    """The JAX bridge once refused a list the torch bridge took ("Cannot determine dtype")."""
    fn = subjects["scalar"]
    w, u = inputs(fn)
    expected = np.asarray(jax_fns["scalar"](jnp.asarray(w), jnp.asarray(u)))
    as_lists = (w.tolist(), float(u))
    as_tuples = (tuple(map(tuple, w.tolist())), u.item())
    for args in (as_lists, as_tuples):
        assert_allclose(np.asarray(jax_fns["scalar"](*args)), expected, rtol=RTOL, atol=ATOL)
        assert_allclose(torch_fns["scalar"](*args).numpy(), expected, rtol=RTOL, atol=ATOL)
    # a list among differentiated inputs is a constant
    grad_u = jax.grad(lambda u: jax_fns["scalar"](as_lists[0], u))(jnp.asarray(u))
    assert_allclose(np.asarray(grad_u), np.asarray(jax.grad(lambda u: scalar(jnp, jnp.asarray(w), u))(u)),
                    rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("bridge", ["jax", "torch"])
@pytest.mark.parametrize("value, message", [
    ([[1.0, 2.0, 3.0]] * 3 + [[1.0, 2.0]], "argument 'w' is a list but not one of numbers in the shape of an array"),
    ([["a"] * 3] * 4, "argument 'w' is a list of <U1 values, not of real numbers"),
    ([[1j] * 3] * 4, "argument 'w' is a list of complex128 values, not of real numbers"),
])
def test_lists_that_are_not_arrays_of_numbers_are_refused_alike(jax_fns, torch_fns, bridge, value, message):
    f = (jax_fns if bridge == "jax" else torch_fns)["scalar"]
    with pytest.raises(TypeError, match=re.escape(f"s: {message}")):
        f(value, 1.0)


JAX_BEYOND_FIRST_ORDER = {
    "grad of grad": ("differentiated twice", lambda jax, g, x: jax.grad(
        lambda y: jax.grad(lambda z: g(z).sum())(y).sum())(x)),
    "grad of grad under jit": ("differentiated twice", lambda jax, g, x: jax.jit(jax.grad(
        lambda y: jax.grad(lambda z: g(z).sum())(y).sum()))(x)),
    "hessian": ("differentiated twice", lambda jax, g, x: jax.hessian(lambda y: g(y).sum())(x)),
    "jvp of grad": ("differentiated twice", lambda jax, g, x: jax.jvp(jax.grad(lambda y: g(y).sum()), (x,), (x,))),
    "jvp": ("differentiated in forward mode", lambda jax, g, x: jax.jvp(g, (x,), (x,))),
    "jacfwd": ("differentiated in forward mode", lambda jax, g, x: jax.jacfwd(g)(x)),
}


@pytest.mark.parametrize("transform", JAX_BEYOND_FIRST_ORDER)
def test_jax_beyond_first_order_reverse_mode_is_refused_naming_the_limit(jax, jnp, jax_fns, subjects, transform):
    """A grad of a grad once met "Pure callbacks do not support JVP", naming neither tensoradbook nor the
    limit. (Forward mode inside jax.jit is refused by JAX itself when it compiles: see tensoradbook.jax.)"""
    fn, f = subjects["twice"], jax_fns["twice"]
    asked, run = JAX_BEYOND_FIRST_ORDER[transform]
    with pytest.raises(TypeError) as info:
        run(jax, f, jnp.asarray(inputs(fn)[0]))
    message = str(info.value)
    assert message.startswith(f"tensoradbook.jax: h cannot be {asked}")
    assert "first-order reverse mode only" in message and "tensoradbook.jax.function(tab.derive(fn)['x'])" in message
    assert "docs/developer.md" in message


def test_jax_a_wrapped_gradient_gives_second_derivatives(jax, jnp, tabj, subjects):
    """What the refusal suggests: the gradient wrapped in turn; its gradient equals JAX's second derivative
    of the direct computation (jacrev works too)."""
    fn = subjects["twice"]
    dx = tabj.function(tab.derive(fn)["x"], target="numpy")
    x, df, v = jnp.asarray(inputs(fn)[0]), jnp.asarray(adjoint(fn)), jnp.asarray(adjoint(fn, seed=2)[0, :])
    v = jnp.concatenate([v, v[:2]])

    def expected(x):
        return jax.vjp(lambda y: twice(jnp, y), x)[1](df)[0]

    assert_allclose(np.asarray(dx(dh=df, x=x)), np.asarray(expected(x)), rtol=RTOL, atol=ATOL)
    assert_allclose(np.asarray(jax.grad(lambda y: jnp.sum(dx(dh=df, x=y) * v))(x)),
                    np.asarray(jax.grad(lambda y: jnp.sum(expected(y) * v))(x)), rtol=RTOL, atol=ATOL)
    assert_allclose(np.asarray(jax.jacrev(lambda y: dx(dh=df, x=y))(x)), np.asarray(jax.jacfwd(expected)(x)),
                    rtol=RTOL, atol=ATOL)

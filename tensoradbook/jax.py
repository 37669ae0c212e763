"""A tensoradbook function as a differentiable JAX operation: a ``jax.custom_vjp`` whose forward and
backward call our kernels through ``jax.pure_callback``.

::

    import jax
    jax.config.update("jax_enable_x64", True)   # float64 arrays; see "Numbers" below
    import tensoradbook as tab
    import tensoradbook.jax as tabj

    fn = tab.parse("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
                   {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (7,)})
    f = tabj.function(fn)                       # kernels compile on first use
    loss = lambda a, b, c, d: f(a, b, c, d).sum()
    jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(a, b, c, d)

The subject is a :class:`~tensoradbook.Function` (``tab.parse(text, shapes)``) or a program of several
definitions: anything :mod:`tensoradbook.bridge` accepts. Needs JAX (``pip install -e '.[models]'``);
``import tensoradbook`` never imports this module. It works under ``jax.jit``, ``jax.grad`` /
``jax.vjp`` / ``jax.jacrev`` and ``jax.vmap`` (the kernels then run once per batch element): first-order
reverse mode. Forward mode (``jax.jvp``, ``jax.jacfwd``) and second derivatives (a grad of a grad,
``jax.hessian``) raise a TypeError naming this limit; only forward mode inside ``jax.jit`` meets JAX's own
"can't apply forward-mode autodiff (jvp) to a custom_vjp function", when it compiles. A gradient is a
function of the notation again: ``tensoradbook.jax.function(tab.derive(fn)["x"])`` (inputs: the
output's adjoint, ``df`` of an output ``f``, and ``fn``'s) is differentiable in turn, with second
derivatives from :func:`tensoradbook.derive`.

Inputs are arrays, numbers, or lists and tuples of numbers (numpy arrays to JAX, as to the torch bridge).

Numbers: the kernels compute in float64 on the host. The output takes JAX's promoted dtype of the
inputs (python numbers weakly typed, integer inputs promoted to the default float). This module
does not change JAX's configuration: enable ``jax_enable_x64`` (``jax.config.update("jax_enable_x64",
True)`` at start-up, or ``JAX_ENABLE_X64=1``) for float64 arrays; without it JAX holds no float64
arrays at all, so inputs, outputs and gradients are float32, computed in float64 and rounded once.
"""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np

from .bridge import Kernels, RunsKernels, first_order_only

__all__ = ["JaxFunction", "function"]

# Under jax.vmap the kernels, which take unbatched arrays, run once per batch element. Older JAX
# releases have no vmap_method (and do that by default).
_CALLBACK_OPTIONS = {"vmap_method": "sequential"} if "vmap_method" in inspect.signature(
    jax.pure_callback).parameters else {}


def function(subject, target: str = "numba") -> JaxFunction:
    """``subject`` as a differentiable JAX operation whose forward and backward run its kernels for
    ``target`` (``"numba"``, ``"numpy"``, ``"cuda"``, ...): ``f(*arrays)`` -> an array of the output's shape."""
    return JaxFunction(subject, target)


def _custom_vjp(kernels: Kernels):
    """``apply(xs)``: a ``custom_vjp`` of the tuple of inputs ``xs``, all of one floating dtype."""

    def host_forward(*arrays):
        return kernels.forward(arrays).astype(arrays[0].dtype if arrays else _default_float())

    def host_gradients(*arrays):
        *inputs, df = arrays
        return tuple(g.astype(x.dtype) for g, x in zip(kernels.gradients(inputs, df), inputs))

    # The callbacks as operations whose forward-mode rule raises naming the limit: a grad of a grad
    # differentiates both the forward and the backward below, and met "Pure callbacks do not support JVP".
    @jax.custom_jvp
    def call(xs):
        dtype = xs[0].dtype if xs else _default_float()
        result = jax.ShapeDtypeStruct(kernels.output_shape, dtype)
        return jax.pure_callback(host_forward, result, *xs, **_CALLBACK_OPTIONS)

    @jax.custom_jvp
    def gradients(xs, df):
        results = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in xs)
        return tuple(jax.pure_callback(host_gradients, results, *xs, df, **_CALLBACK_OPTIONS))

    def differentiated_twice(primals, tangents):
        raise _only_reverse_mode(kernels, "differentiated twice (a grad of a grad, jax.hessian)")

    call.defjvp(differentiated_twice)
    gradients.defjvp(differentiated_twice)

    @jax.custom_vjp
    def apply(xs):
        return call(xs)

    def forward(xs):
        return call(xs), xs  # the inputs are the residuals: the gradient kernels recompute the rest

    def backward(xs, df):
        return (gradients(xs, df.astype(xs[0].dtype) if xs else df),)

    apply.defvjp(forward, backward)
    return apply


def _only_reverse_mode(kernels: Kernels, what: str) -> TypeError:
    return TypeError(first_order_only(kernels, "tensoradbook.jax", what, "jax.grad, vjp, jacrev, jit and vmap"))


def _default_float():
    """JAX's default floating dtype: float64 with ``jax_enable_x64``, else float32."""
    return jax.dtypes.canonicalize_dtype(np.float64)


class JaxFunction(RunsKernels):
    """A tensoradbook subject as a differentiable JAX function: ``f(*inputs, **named_inputs)``.

    Inputs come in ``subject.arguments`` order (:attr:`arguments`), by position or by name, each of
    its declared shape; the result is a JAX array of :attr:`shape` in the inputs' promoted floating
    dtype (see the module's docstring). The kernels are compiled on the first call (the forward) and
    the first backward (the gradients), then kept; under ``jax.jit`` that happens when the compiled
    computation first runs, not when it is traced.
    """

    def __init__(self, subject, target: str = "numba"):
        self.kernels = Kernels(subject, target)
        self._apply = _custom_vjp(self.kernels)

    def __call__(self, *args, **kwargs) -> jax.Array:
        """The subject's output at the given inputs (by position in :attr:`arguments` order, or by name)."""
        values = self.kernels.bind(args, kwargs)
        if any(jnp.iscomplexobj(v) for v in values):
            raise TypeError(f"{self.subject.name}: complex inputs are not supported (the kernels compute "
                            "with real numbers)")
        # `float` (weakly typed) makes integer-only inputs the default float and changes no float dtype.
        dtype = jnp.result_type(*values, float)
        try:
            return self._apply(tuple(jnp.asarray(v, dtype=dtype) for v in values))
        except TypeError as error:
            # JAX's own refusal of forward mode through a custom_vjp, which names neither the function nor the limit
            if "forward-mode autodiff" in str(error):
                raise _only_reverse_mode(self.kernels, "differentiated in forward mode (jax.jvp, jacfwd, "
                                         "hessian)") from error
            raise

    def __repr__(self) -> str:
        return (f"JaxFunction({self.subject.name}({', '.join(self.arguments)}) -> {self.shape}, "
                f"target={self.target!r})")

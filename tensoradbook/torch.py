"""A tensoradbook function as a differentiable PyTorch operation: forward and backward run our kernels.

::

    import tensoradbook as tab
    import tensoradbook.torch as tabt

    fn = tab.parse("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
                   {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (7,)})
    f = tabt.function(fn)                 # a torch.nn.Module; kernels compile on first use
    out = f(a, b, c, d)                   # or f(a, b, d=d, c=c): inputs in fn.arguments order
    out.sum().backward()                  # a.grad etc. from the gradient kernels (tab.derive(fn))

The subject is a :class:`~tensoradbook.Function` (``tab.parse(text, shapes)``) or a program of several
definitions: anything :mod:`tensoradbook.bridge` accepts. Needs PyTorch (``pip install -e '.[models]'``);
``import tensoradbook`` never imports this module.

Numbers: the kernels compute in float64 on the host. The output takes the promoted dtype of the
floating tensor inputs (float64 when there are none) and the inputs' device; a float32 model gets
float32 outputs and gradients, computed in float64 and rounded once at the end. Values that are not
tensors (numbers, numpy arrays, lists and tuples of numbers) are constants, never differentiated.
Tensors on a GPU are copied to the host and back (the ``"cuda"`` target copies them to the GPU again
inside). Backward runs the gradient kernels once per call (they recompute the forward themselves).

Transforms: first-order reverse mode, also under ``torch.func`` (``grad``, ``vjp``, ``jacrev``, and
``vmap``, which runs the kernels once per batch element). Forward mode (``torch.func.jvp``, ``jacfwd``,
``hessian``) and differentiating a gradient (``create_graph=True`` then a backward through the
gradient, ``grad`` of ``grad``) raise a RuntimeError naming this limit. A gradient is a function of the
notation again: ``tensoradbook.torch.function(tab.derive(fn)["x"])`` (inputs: the output's adjoint,
``df`` of an output ``f``, and ``fn``'s) is differentiable in turn, with second derivatives from
:func:`tensoradbook.derive`.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from .bridge import Kernels, RunsKernels, first_order_only

__all__ = ["TorchFunction", "function"]


def function(subject, target: str = "numba") -> TorchFunction:
    """``subject`` as a differentiable PyTorch operation whose forward and backward run its kernels for
    ``target`` (``"numba"``, ``"numpy"``, ``"cuda"``, ...): ``f(*tensors)`` -> a tensor of the output's shape."""
    return TorchFunction(subject, target)


def _host(tensor: torch.Tensor) -> np.ndarray:
    """A tensor's values as a float64 numpy array on the host (a copy where the dtype or device differs)."""
    return tensor.detach().to("cpu", torch.float64).contiguous().numpy()


def _per_element(function, batch_size: int, in_dims, shapes, *args) -> tuple[torch.Tensor, ...]:
    """The results of ``function.apply(*args)`` for each element of a vmap batch, each stacked along a new first
    dimension: the ``vmap`` rule of an autograd.Function in torch.func, as the kernels take unbatched arrays.
    ``shapes`` are the results' shapes, for an empty batch."""
    like = next(a for a in args if isinstance(a, torch.Tensor))
    stacks = [[] for _ in shapes]
    for k in range(batch_size):
        results = function.apply(*(a if d is None else a.select(d, k) for a, d in zip(args, in_dims)))
        for stack, result in zip(stacks, results if isinstance(results, tuple) else (results,)):
            stack.append(result)
    return tuple(torch.stack(stack) if stack else like.new_empty((0, *shape)) for stack, shape in zip(stacks, shapes))


def _only_reverse_mode(kernels: Kernels, what: str) -> RuntimeError:
    return RuntimeError(first_order_only(kernels, "tensoradbook.torch", what, "backward, torch.autograd.grad, "
                                         "torch.func.grad, vjp, jacrev and vmap"))


class _Kernel(torch.autograd.Function):
    """The autograd node: inputs already cast to one floating dtype on one device. ``forward`` and
    ``setup_context`` apart, with a ``vmap`` rule, so that torch.func's transforms take it too."""

    @staticmethod
    def forward(kernels: Kernels, *tensors: torch.Tensor) -> torch.Tensor:
        out = torch.from_numpy(kernels.forward([_host(t) for t in tensors]))
        like = tensors[0] if tensors else None
        return out if like is None else out.to(like.device, like.dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        kernels, *tensors = inputs
        ctx.kernels = kernels
        ctx.save_for_backward(*tensors)  # saved, so an in-place change before backward is an error

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        tensors = ctx.saved_tensors
        wanted = ctx.needs_input_grad[1:]
        if not any(wanted):
            return (None,) * (1 + len(tensors))
        # An operation of its own, so that differentiating the gradients (create_graph=True, torch.func.grad
        # of torch.func.grad) raises there, not later with the kernels' results taken as constants.
        grads = _Gradients.apply(ctx.kernels, grad_output, *tensors)
        return (None, *(g if need else None for g, need in zip(grads, wanted)))

    @staticmethod
    def vmap(info, in_dims, kernels: Kernels, *tensors):
        (out,) = _per_element(_Kernel, info.batch_size, in_dims, [kernels.output_shape], kernels, *tensors)
        return out, 0

    @staticmethod
    def jvp(ctx, *tangents):
        raise _only_reverse_mode(ctx.kernels, "differentiated in forward mode (torch.func.jvp, jacfwd, hessian)")


class _Gradients(torch.autograd.Function):
    """The gradient kernels as an operation: each input's gradient, in its dtype and on its device."""

    @staticmethod
    def forward(kernels: Kernels, grad_output: torch.Tensor, *tensors: torch.Tensor):
        grads = kernels.gradients([_host(t) for t in tensors], _host(grad_output))
        return tuple(torch.from_numpy(g).to(t.device, t.dtype) for g, t in zip(grads, tensors))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.kernels = inputs[0]

    @staticmethod
    def backward(ctx, *grad_grads):
        raise _only_reverse_mode(ctx.kernels, "differentiated twice (create_graph=True, a grad of a grad)")

    @staticmethod
    def vmap(info, in_dims, kernels: Kernels, grad_output, *tensors):
        shapes = [kernels.shapes[name] for name in kernels.arguments]
        grads = _per_element(_Gradients, info.batch_size, in_dims, shapes, kernels, grad_output, *tensors)
        return grads, (0,) * len(grads)

    @staticmethod
    def jvp(ctx, *tangents):
        raise _only_reverse_mode(ctx.kernels, "differentiated twice (a jvp or jacfwd of a gradient)")


class TorchFunction(RunsKernels, torch.nn.Module):
    """A tensoradbook subject as a ``torch.nn.Module`` without parameters: ``f(*inputs, **named_inputs)``.

    Inputs come in ``subject.arguments`` order (:attr:`arguments`), by position or by name, each of
    its declared shape; the result is a tensor of :attr:`shape` on the inputs' device in their promoted
    floating dtype (see the module's docstring), differentiable with respect to every input tensor that
    requires grad. The kernels are compiled on the first call (the forward) and the first backward
    (the gradients), then kept; a module built on the same subject and target again reuses the same
    compiled modules from memory or the disk cache.
    """

    def __init__(self, subject, target: str = "numba"):
        super().__init__()
        self.kernels = Kernels(subject, target)

    def forward(self, *args, **kwargs) -> torch.Tensor:
        """The subject's output at the given inputs (by position in :attr:`arguments` order, or by name)."""
        values = self.kernels.bind(args, kwargs)
        tensors = [v for v in values if isinstance(v, torch.Tensor)]
        if any(t.is_complex() for t in tensors):
            raise TypeError(f"{self.subject.name}: complex tensors are not supported (the kernels compute "
                            "with real numbers)")
        devices = {t.device for t in tensors}
        if len(devices) > 1:
            raise ValueError(f"{self.subject.name}: inputs on different devices {sorted(map(str, devices))}")
        device = devices.pop() if devices else torch.device("cpu")
        floating = [t.dtype for t in tensors if t.is_floating_point()]
        dtype = functools.reduce(torch.promote_types, floating) if floating else torch.float64
        # One dtype for all inputs: the casts are differentiable, so each gradient comes back in its
        # input's own dtype through autograd; non-tensors become constants of that dtype.
        inputs = [v.to(dtype) if isinstance(v, torch.Tensor) else torch.as_tensor(np.asarray(v), device=device)
                  .to(dtype) for v in values]
        return _Kernel.apply(self.kernels, *inputs)

    def extra_repr(self) -> str:
        return f"{self.subject.name}({', '.join(self.arguments)}) -> {self.shape}, target={self.target!r}"

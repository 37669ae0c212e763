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
tensors (numbers, numpy arrays) are constants, never differentiated. Tensors on a GPU are copied to
the host and back (the ``"cuda"`` target copies them to the GPU again inside). Backward runs the
gradient kernels once per call (they recompute the forward themselves); double backward is not
supported: a backward with ``create_graph=True`` through the operation raises a RuntimeError.
"""

from __future__ import annotations

import functools

import numpy as np
import torch

from .bridge import Kernels, RunsKernels

__all__ = ["TorchFunction", "function"]


def function(subject, target: str = "numba") -> TorchFunction:
    """``subject`` as a differentiable PyTorch operation whose forward and backward run its kernels for
    ``target`` (``"numba"``, ``"numpy"``, ``"cuda"``, ...): ``f(*tensors)`` -> a tensor of the output's shape."""
    return TorchFunction(subject, target)


def _host(tensor: torch.Tensor) -> np.ndarray:
    """A tensor's values as a float64 numpy array on the host (a copy where the dtype or device differs)."""
    return tensor.detach().to("cpu", torch.float64).contiguous().numpy()


class _Kernel(torch.autograd.Function):
    """The autograd node: inputs already cast to one floating dtype on one device."""

    @staticmethod
    def forward(ctx, kernels: Kernels, *tensors: torch.Tensor) -> torch.Tensor:
        ctx.kernels = kernels
        ctx.save_for_backward(*tensors)  # saved, so an in-place change before backward is an error
        out = torch.from_numpy(kernels.forward([_host(t) for t in tensors]))
        like = tensors[0] if tensors else None
        return out if like is None else out.to(like.device, like.dtype)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        if torch.is_grad_enabled():  # create_graph=True: the kernels' results would be taken as constants
            raise RuntimeError(f"tensoradbook.torch: {ctx.kernels.subject.name} cannot be differentiated twice "
                               "(create_graph=True): its gradients come from compiled kernels, not torch "
                               "operations; derive a gradient function and wrap it to go further")
        tensors = ctx.saved_tensors
        wanted = ctx.needs_input_grad[1:]
        if not any(wanted):
            return (None,) * (1 + len(tensors))
        grads = ctx.kernels.gradients([_host(t) for t in tensors], _host(grad_output))
        return (None, *(torch.from_numpy(g).to(t.device, t.dtype) if need else None
                        for g, t, need in zip(grads, tensors, wanted)))


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

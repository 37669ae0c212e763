"""The host side that :mod:`tensoradbook.torch` and :mod:`tensoradbook.jax` share: a subject's kernels,
compiled once on first use, called on float64 numpy arrays, and the binding of a call's arguments.

A subject is anything with the duck type of :class:`~tensoradbook.Function`: ``.name``, ``.arguments``
(the input names in order), ``.shapes`` (name -> shape, the output's under ``.name``),
``.compile(target)`` giving ``fwd(args) -> ndarray``, and :func:`tensoradbook.derive` of it giving
gradients whose ``.compile(target)`` is ``grad(args, df) -> {input name: ndarray}``. This module
imports numpy and the core only: the frameworks are the two modules' business.
"""

from __future__ import annotations

import threading

import numpy as np

from . import derive
from .codegen.targets import GATHER_TARGETS, TARGETS, target_named

# Numba's default "workqueue" threading layer aborts the process when two threads run parallel
# kernels at once (JAX calls host callbacks from its own threads), so kernel calls take turns.
_RUNNING = threading.Lock()


def _sequence_as_array(function: str, argument: str, value):
    """``value`` as a numpy array where it is a list or a tuple, else itself: torch.as_tensor reads nested
    sequences of numbers but jax.numpy refuses them, and both bridges take them alike."""
    if not isinstance(value, (list, tuple)):
        return value
    try:
        array = np.asarray(value)
    except (TypeError, ValueError, RuntimeError) as error:  # ragged, or holding tensors or traced values
        raise TypeError(f"{function}: argument {argument!r} is a {type(value).__name__} but not one of numbers "
                        f"in the shape of an array ({' '.join(str(error).split())}); pass an array or a tensor "
                        "(torch.stack, jnp.stack)") from None
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{function}: argument {argument!r} is a {type(value).__name__} of {array.dtype} values, "
                        "not of real numbers")
    return array


def _writable(array) -> np.ndarray:
    """``array`` as a C-contiguous, writable float64 array (itself where it is one)."""
    return np.require(np.asarray(array, dtype=np.float64), np.float64, ["C", "W"])


def first_order_only(kernels: Kernels, bridge: str, what: str, supported: str) -> str:
    """The message of a bridge asked for what its kernels cannot give: ``what`` was asked (forward mode, a
    derivative of the gradient), ``supported`` names the transforms it does take."""
    example = kernels.arguments[0] if kernels.arguments else "x"
    return (f"{bridge}: {kernels.subject.name} cannot be {what}: the operation runs compiled kernels, so it "
            f"supports first-order reverse mode only ({supported}). To differentiate a function's gradient, wrap "
            f"it: {bridge}.function(tab.derive(fn)[{example!r}]), whose inputs are the output's adjoint and fn's, "
            "is differentiated with tensoradbook's second derivatives (docs/developer.md, 'In PyTorch and JAX')")


class Kernels:
    """The forward and gradient kernels of ``subject`` for ``target``, each compiled on first use and kept.

    :meth:`forward` and :meth:`gradients` take the inputs as arrays in ``subject.arguments`` order and
    compute in float64; :meth:`bind` orders a call's positional and keyword arguments. A copy or a
    pickle keeps the subject and the target, not the compiled code: it compiles again (from the disk
    cache) on its first call.
    """

    def __init__(self, subject, target: str = "numba"):
        missing = [a for a in ("name", "arguments", "shapes", "compile") if not hasattr(subject, a)]
        if isinstance(subject, str) or missing:
            raise TypeError(f"expected a tensoradbook Function (tab.parse(text, shapes)) or Program, got "
                            f"{type(subject).__name__}" + (f" (it has no {', '.join(missing)})" if missing else ""))
        if not isinstance(target, str):
            raise TypeError(f"target must be a kernel target's name such as 'numba', got {target!r}")
        target_named(target, TARGETS)  # an unknown name fails here, not at the first call
        self.subject, self.target = subject, target
        self.arguments = tuple(subject.arguments)
        self.shapes = {name: tuple(subject.shapes[name]) for name in (*self.arguments, subject.name)}
        self.output_shape = self.shapes[subject.name]
        self._forward = self._gradients = None
        self._compiling = threading.Lock()

    def __repr__(self) -> str:
        return f"Kernels({self.subject.name}({', '.join(self.arguments)}), target={self.target!r})"

    # Compiled modules do not pickle or deep-copy: a copy (copy.deepcopy of a torch model, say) compiles again.
    def __getstate__(self) -> dict:
        return {"subject": self.subject, "target": self.target}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["subject"], state["target"])

    def _compiled_forward(self):
        if self.target not in GATHER_TARGETS:
            # The scatter baselines (eq. 40) compile no forward kernel of their own: their gradient
            # module's forward is the one.
            return self._compiled_gradients().forward
        with self._compiling:
            if self._forward is None:
                self._forward = self.subject.compile(self.target)
            return self._forward

    def _compiled_gradients(self):
        with self._compiling:
            if self._gradients is None:
                self._gradients = derive(self.subject).compile(self.target)
            return self._gradients

    def _values(self, arrays) -> dict[str, np.ndarray]:
        # Writable float64 arrays: Numba compiles a kernel again for read-only ones (JAX hands its
        # callbacks read-only views), which would double the compile time for nothing.
        return {name: _writable(a) for name, a in zip(self.arguments, arrays)}

    def forward(self, arrays) -> np.ndarray:
        """The output, a float64 array of the output's shape, from the inputs in argument order."""
        fwd = self._compiled_forward()
        with _RUNNING:
            out = fwd(self._values(arrays))
        # a fresh, writable array: torch.from_numpy warns on read-only memory
        return np.require(out, np.float64, ["C", "W"]).reshape(self.output_shape)

    def gradients(self, arrays, df) -> tuple[np.ndarray, ...]:
        """The gradient of ``sum(df * output)`` with respect to each input, float64, in argument order."""
        grad = self._compiled_gradients()
        with _RUNNING:
            out = grad(self._values(arrays), _writable(df))
        return tuple(np.require(out[name], np.float64, ["C", "W"]).reshape(self.shapes[name])
                     for name in self.arguments)

    def bind(self, args: tuple, kwargs: dict) -> list:
        """The values of a call ``f(*args, **kwargs)`` in argument order, each of its declared shape.

        Positional values fill ``subject.arguments`` from the left and keywords name the rest; a
        list or a tuple of numbers becomes a numpy array, a constant to either framework. A missing,
        unknown or repeated argument is a TypeError and a wrong shape a ValueError, raised here,
        before any framework traces or records the call.
        """
        name, names = self.subject.name, self.arguments
        if len(args) > len(names):
            raise TypeError(f"{name} takes {len(names)} arguments ({', '.join(names)}), got {len(args)}")
        values = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"{name} has no argument {key!r} (its arguments: {', '.join(names)})")
            if key in values:
                raise TypeError(f"{name} got argument {key!r} twice (by position and by keyword)")
            values[key] = value
        missing = [n for n in names if n not in values]
        if missing:
            raise TypeError(f"{name} is missing argument{'s' * (len(missing) > 1)} {', '.join(missing)} "
                            f"(its arguments, in order: {', '.join(names)})")
        for n in names:
            values[n] = _sequence_as_array(name, n, values[n])
            shape = tuple(np.shape(values[n]))
            if shape != self.shapes[n]:
                raise ValueError(f"{name}: argument {n!r} has shape {shape}, expected {self.shapes[n]}")
        return [values[n] for n in names]


class RunsKernels:
    """What :class:`tensoradbook.torch.TorchFunction` and :class:`tensoradbook.jax.JaxFunction` tell of the
    :class:`Kernels` they run (``self.kernels``)."""

    kernels: Kernels

    @property
    def subject(self):
        """The function or program this runs."""
        return self.kernels.subject

    @property
    def target(self) -> str:
        """The kernel target, as given to ``subject.compile``."""
        return self.kernels.target

    @property
    def arguments(self) -> tuple[str, ...]:
        """The input names, in the order the inputs are passed."""
        return self.kernels.arguments

    @property
    def shape(self) -> tuple[int, ...]:
        """The output's shape."""
        return self.kernels.output_shape

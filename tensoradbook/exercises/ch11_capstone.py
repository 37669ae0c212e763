"""Chapter 11: the capstone, a convolutional network written as a program and trained with its derived kernels.

:func:`check_layer` takes one definition that changes the chapter's network (average pooling instead of max
pooling, a leaky ReLU instead of the ReLU, a second bank of filters) and checks it three ways: its values
against numpy written out here (on random inputs with ties and zeros where they matter), its derivative at
the kink against PyTorch's convention, and the gradients of the whole changed network with
:func:`tensoradbook.check_gradients` (finite differences), on a small batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable

import numpy as np

from ..ad.derive import derive
from ..ad.gradcheck import check_gradients
from ..lang.expr import ExpressionError
from ..lang.function import Function
from ..lang.parser import parse
from .checking import Wrong, pending
from .feedback import CheckResult, index_text, number_text

__all__ = ["check_layer", "network"]

BATCH, FILTERS, SECOND = 2, 2, 3  # the checks' network: small, so that the reference evaluator is quick
SLOPE = 0.01                        # the leaky ReLU's slope for negative inputs (PyTorch's default)

# A right layer is numpy's reference computed in another order: equal up to a few roundings (relative, and absolute
# near 0); a constant factor off shows as one ratio, equal to about this.
_VALUE_RTOL, _VALUE_ATOL = 1e-10, 1e-12
_FACTOR_RTOL = 1e-9
# tab.check_gradients' finite differences agree with a derived gradient to about this (relative) away from a kink.
_GRADIENT_RTOL = 1e-6
# At h = 0 the derivative is slope * da, one product: exact up to a rounding.
_KINK_RTOL, _KINK_ATOL = 1e-12, 1e-15
_PAD = "i + p >= 1 and i + p <= 8 and j + q >= 1 and j + q <= 8"
LINES = {
    "convolution": "h[n; c; i; j] = sum{{p}}_0^2 (sum{{q}}_0^2 (if {{" + _PAD + "}} then "
                   "(W[c; p; q] * X[n; i + p - 1; j + q - 1]) else (0))) + b[c]",
    "relu": "a[n; c; i; j] = if {{h[n; c; i; j] > 0}} then (h[n; c; i; j]) else (0)",
    "max pooling": "m[n; c; u; v] = max{{r}}_0^1 (max{{s}}_0^1 ({pooled}[n; c; 2 * u + r; 2 * v + s]))",
    "dense": "z[n; k] = sum{{c}}_0^{last} (sum{{u}}_0^3 (sum{{v}}_0^3 (V[k; c; u; v] * m[n; c; u; v]))) + d[k]",
    "shift": "zmax[n] = max{{k}}_0^9 (z[n; k])",
    "log-sum-exp": "lse[n] = zmax[n] + log (sum{{k}}_0^9 (exp (z[n; k] - zmax[n])))",
    "loss": "L[] = -sum{{n}}_0^{batch_last} (sum{{k}}_0^9 (T[n; k] * (z[n; k] - lse[n]))) / {batch}",
    "relu 2": "a2[n; e; i; j] = if {{g[n; e; i; j] > 0}} then (g[n; e; i; j]) else (0)",
}


def network(batch: int = BATCH, filters: int = FILTERS, replace: dict | None = None,
            second: int | None = None) -> tuple[str, dict]:
    """The chapter's network as ``(text, shapes)``: convolution, ReLU, 2 x 2 max pooling, dense layer,
    log-softmax, mean negative log-likelihood. ``replace`` maps a line's name (``"relu"``, ``"max pooling"``) to
    the definition that takes its place; ``second`` inserts a second convolution ``g`` with that many filters,
    read through a ReLU ``a2`` (``replace["second convolution"]`` is ``g``'s definition)."""
    replace = replace or {}
    channels = second if second else filters
    names = ["convolution", "relu"] + (["second convolution", "relu 2"] if second else []) + \
        ["max pooling", "dense", "shift", "log-sum-exp", "loss"]
    lines = []
    for name in names:
        if name in replace:
            lines.append(replace[name])
        else:
            lines.append(LINES[name].format(pooled="a2" if second else "a", last=channels - 1,
                                            batch_last=batch - 1, batch=batch))
    shapes = {"X": (batch, 8, 8), "W": (filters, 3, 3), "b": (filters,), "h": (batch, filters, 8, 8),
              "a": (batch, filters, 8, 8), "m": (batch, channels, 4, 4), "V": (10, channels, 4, 4), "d": (10,),
              "z": (batch, 10), "zmax": (batch,), "lse": (batch,), "T": (batch, 10), "L": ()}
    if second:
        shapes.update({"W2": (second, filters, 3, 3), "b2": (second,), "g": (batch, second, 8, 8),
                       "a2": (batch, second, 8, 8)})
    return "\n".join(lines), shapes


def _conv(image: np.ndarray, weights: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """The network's padded 3 x 3 convolution in numpy (the reference the check compares a layer with)."""
    padded = np.pad(image, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((image.shape[0], weights.shape[0], 8, 8))
    for p in range(3):
        for q in range(3):
            out += np.einsum("ec,ncij->neij", weights[:, :, p, q], padded[:, :, p:p + 8, q:q + 8])
    return out + bias[None, :, None, None]


@dataclass(frozen=True)
class _Layer:
    output: str
    reads: tuple[str, ...]
    what: str
    reference: Callable[[dict], np.ndarray]
    inputs: Callable[[np.random.Generator], dict]
    replaces: str


def _kinked(rng) -> np.ndarray:
    """Pre-activations with exact zeros and both signs."""
    h = rng.standard_normal((BATCH, FILTERS, 8, 8))
    h[rng.random(h.shape) < 0.2] = 0.0
    return h


def _tied(rng) -> np.ndarray:
    """Activations in steps of 1 (ties within windows) that are not all equal."""
    return rng.integers(0, 4, (BATCH, FILTERS, 8, 8)).astype(float)


LAYERS = {
    "average pooling": _Layer(
        "m", ("a",), "m[n; c; u; v], the mean of each 2 x 2 window of a (stride 2)",
        lambda v: v["a"].reshape(BATCH, FILTERS, 4, 2, 4, 2).mean(axis=(3, 5)),
        lambda rng: {"a": rng.standard_normal((BATCH, FILTERS, 8, 8))}, "max pooling"),
    "leaky relu": _Layer(
        "a", ("h",), f"a[n; c; i; j], the leaky ReLU of h with slope {SLOPE} below 0",
        lambda v: np.where(v["h"] > 0, v["h"], SLOPE * v["h"]),
        lambda rng: {"h": _kinked(rng)}, "relu"),
    "second convolution": _Layer(
        "g", ("a", "W2", "b2"), f"g[n; e; i; j], a second padded 3 x 3 convolution of a: {SECOND} filters "
                                f"W2[e; c; p; q] over its {FILTERS} channels, plus b2[e]",
        lambda v: _conv(v["a"], v["W2"], v["b2"]),
        lambda rng: {"a": rng.standard_normal((BATCH, FILTERS, 8, 8)),
                     "W2": rng.standard_normal((SECOND, FILTERS, 3, 3)), "b2": rng.standard_normal(SECOND)},
        "second convolution"),
}


def _network_of(layer: str, text: str) -> tuple[str, dict]:
    spec = LAYERS[layer]
    second = SECOND if layer == "second convolution" else None
    return network(replace={spec.replaces: text}, second=second)


def check_layer(layer: str, answer) -> CheckResult:
    """Exercise: one definition that changes the chapter's network, in the report's notation.

    ``layer`` is ``"average pooling"`` (``m[n; c; u; v]`` from ``a``), ``"leaky relu"`` (``a[n; c; i; j]`` from
    ``h``, slope 0.01 below 0 and, as PyTorch's ``leaky_relu``, at 0) or ``"second convolution"`` (``g[n; e; i; j]``
    from ``a``, ``W2`` and ``b2``, padded like the first). The answer is the definition's text. Its values are
    compared with numpy on random inputs; a leaky ReLU's derivative is compared at 0 too; and the changed
    network's gradients are checked by finite differences (:func:`tensoradbook.check_gradients`).
    """
    if layer not in LAYERS:
        raise ValueError(f"layer is one of {', '.join(LAYERS)}; got {layer!r}")
    spec = LAYERS[layer]
    exercise = f"{layer}: {spec.what}"
    if answer is None:
        return pending(exercise, f'Your answer is one definition, text like "{spec.output}[...] = ...", reading '
                                  f"{', '.join(spec.reads)}.")
    if not isinstance(answer, str):
        return CheckResult(exercise, False, [f"the answer must be text in the report's notation, got "
                                             f"{type(answer).__name__}"])
    text, shapes = _network_of(layer, answer.strip())
    try:
        fn = _read_definition(answer, shapes, spec)
    except Wrong as err:
        return err.result(exercise)
    rng = np.random.default_rng(11)
    inputs = spec.inputs(rng)
    yours, right = fn.evaluate(inputs), spec.reference(inputs)
    close = np.isclose(yours, right, rtol=_VALUE_RTOL, atol=_VALUE_ATOL)
    if not close.all():
        return CheckResult(exercise, False, _value_problems(layer, spec, inputs, yours, right, close))
    if layer == "leaky relu":
        problems = _kink_problems(fn, inputs)
        if problems:
            return CheckResult(exercise, False, problems)
    program = parse(text, shapes)
    weights = [name for name in program.arguments if name not in ("X", "T")]
    args = {name: np.random.default_rng(12).uniform(-1, 1, shapes[name]) for name in program.arguments}
    args["T"] = np.eye(10)[[3, 7]]
    errors = check_gradients(program, args, seed=13)
    worst = max(errors[name] for name in weights)
    if worst > _GRADIENT_RTOL:  # pragma: no cover -- values right and gradients derived: only a kink crossed by chance
        return CheckResult(exercise, False, [f"the network's gradients disagree with finite differences "
                                             f"(largest relative error {worst:.1g})"])
    return CheckResult(exercise, True, note=f"Equal to numpy on random inputs; in the changed network "
                                            f"tab.check_gradients gives a largest relative error of "
                                            f"{worst:.0e} for {', '.join(weights)}.")


def _read_definition(answer: str, shapes: dict, spec: _Layer) -> Function:
    """The student's definition of ``spec.output``; Wrong where it cannot be read, defines something else or
    reads what the layer does not."""
    try:
        fn = parse(answer, shapes)
    except ExpressionError as err:
        indented = "\n".join("    " + line for line in str(err).splitlines())
        raise Wrong(f"your definition cannot be read:\n{indented}") from None
    if not isinstance(fn, Function) or fn.name != spec.output:
        name = fn.name if isinstance(fn, Function) else "several definitions"
        raise Wrong(f"your answer defines {name}; the exercise asks for one definition of "
                    f"{spec.output} (write {spec.output}[...] = ...)")
    wrong_reads = [name for name in fn.arguments if name not in spec.reads]
    if wrong_reads:
        raise Wrong(f"your {spec.output} reads {', '.join(wrong_reads)}; it reads only {', '.join(spec.reads)}")
    return fn


def _value_problems(layer: str, spec: _Layer, inputs: dict, yours, right, close) -> list[str]:
    wrong = [tuple(int(k) for k in b) for b in np.argwhere(~close)]
    first = wrong[0]
    problems = []
    nonzero = np.abs(right) > _VALUE_ATOL
    ratio = yours[nonzero] / right[nonzero]
    if ratio.size and np.allclose(ratio, ratio[0], rtol=_FACTOR_RTOL):
        problems.append(f"every value is {number_text(ratio[0])} times the right one: a constant factor is off")
        if layer == "average pooling" and np.isclose(ratio[0], 4):
            problems.append("a mean divides the window's sum by its number of elements")
    elif layer == "average pooling":
        problems.append(f"{spec.output}{index_text(first)} is {number_text(yours[first])}, the mean of its window is "
                        f"{number_text(right[first])} (on random inputs): window [u; v] covers rows 2u, 2u + 1 and "
                        f"columns 2v, 2v + 1")
    elif layer == "leaky relu":
        h = inputs["h"][first]
        side = "above" if h > 0 else "below" if h < 0 else "at"
        problems.append(f"{spec.output}{index_text(first)} is {number_text(yours[first])} for h = {number_text(h)} "
                        f"({side} 0); the leaky ReLU is h above 0 and {SLOPE} h below")
    else:
        problems.append(f"{spec.output}{index_text(first)} is {number_text(yours[first])}, numpy's padded convolution "
                        f"gives {number_text(right[first])} (on random inputs): output channel e sums over every input "
                        f"channel c of a, and the bias b2[e] is added once")
        near = [b for b in wrong if b[2] in (0, 1, 6, 7) or b[3] in (0, 1, 6, 7)]
        if len(near) == len(wrong):
            problems.append("only elements near the border differ: check the padding conditions (the image's "
                            "rows and columns are 0 .. 7)")
    if len(wrong) > 1:
        problems.append(f"{len(wrong)} of {right.size} values differ")
    return problems


def _kink_problems(fn: Function, inputs: dict) -> list[str]:
    """The derivative at h = 0 against PyTorch's leaky_relu, which passes ``slope * da`` there."""
    h = inputs["h"]
    da = np.random.default_rng(14).standard_normal(h.shape)
    dh = derive(fn).evaluate(inputs, da)["h"]
    right = np.where(h > 0, da, SLOPE * da)
    at_zero = (h == 0) & ~np.isclose(dh, right, rtol=_KINK_RTOL, atol=_KINK_ATOL)
    if not at_zero.any():
        return []
    b = tuple(int(k) for k in np.argwhere(at_zero)[0])
    factor = dh[b] / da[b]
    return [f"at h{index_text(b)} = 0 your definition passes {number_text(factor)} times the adjoint back; PyTorch's "
            f"leaky_relu passes {SLOPE} times it (0 belongs to the negative side). Which branch does your "
            f"definition take at 0 (a tie in max (u, v) goes to the first operand)?"]

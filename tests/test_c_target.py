"""A new target is spellings and nothing else: the numba target's plan of a module, rendered as plain C.

The plan (:func:`~tensoradbook.codegen.module.function_module`, :func:`~tensoradbook.codegen.module.gradients_module`)
is made once, for the numba target: its rows of lanes, per-lane arrays, lane-gated sums, branches, fused kernels
and temporaries. :class:`CTarget` answers the renderer's questions in C (loop headers, blocks, declarations, the
element loop) and :class:`CValues` spells the values (C's ``math.h`` for the operations, flat subscripts, floor
division); nothing else is written for it. The kernels compile with ``cc`` and run on the plan's own launches; their
values are the reference evaluator's, and the gradients the numpy target's.
"""

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tensoradbook as tab
from tensoradbook.ad.gradcheck import random_arguments
from tensoradbook.codegen.kernel_ir import (Allocate, Assign, Block, ElementLoop, Entry, FusedKernel, Kernel, Launch,
                                            Line, Statements)
from tensoradbook.codegen.module import function_module, gradients_module
from tensoradbook.codegen.render import Renderer
from tensoradbook.codegen.spellings import ACCUMULATE, SCALAR
from tensoradbook.codegen.targets import KERNEL_TARGETS, Target
from tensoradbook.codegen.values import ScalarValues

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")


def _taken(strict: str) -> str:
    """numpy's maximum (``>``) or minimum: a NaN operand gives NaN, of two equal operands the second."""
    return f"(({{0}} {strict} {{1}} || {{0}} != {{0}}) ? {{0}} : {{1}})"


#: C's spelling of every operation: math.h's function of the same name, else as listed
C_SPELLINGS = {**{op: template.replace("math.", "") for op, template in SCALAR.items()},
               "**": "pow({0}, {1})", "max": _taken(">"), "min": _taken("<"), "floor": "floor({0})",
               "ceil": "ceil({0})", "round": "nearbyint({0})",
               "sign": "({0} > 0 ? 1.0 : ({0} < 0 ? -1.0 : fabs({0})))"}
C_FOLDS = {**ACCUMULATE, "max": _taken(">"), "min": _taken("<")}

PRELUDE = """#include <math.h>
static long lmax(long a, long b) { return a > b ? a : b; }
static long lmin(long a, long b) { return a < b ? a : b; }
static long fdiv(long a, long b) { long q = a / b; return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q; }
"""


def flat(indices, shape) -> str:
    """The row-major offset of ``indices`` (codes) in an array of ``shape``."""
    strides = [int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape))]
    return " + ".join(f"({index}) * {stride}" for index, stride in zip(indices, strides)) or "0"


class CValues(ScalarValues):
    spellings = C_SPELLINGS
    folds = C_FOLDS
    maximum, minimum = "lmax", "lmin"
    infinity = "INFINITY"

    def division(self, text: str, denominator: int, floor: bool) -> str:
        return f"fdiv({text}, {denominator})" if floor else f"-fdiv(-({text}), {denominator})"

    def element(self, name: str, indices: list[str], shape: tuple) -> str:
        return f"{name}[{flat(indices, shape)}]"

    def _Choose(self, value) -> str:
        return f"({self.text(value.condition)} ? {self.text(value.then)} : {self.text(value.otherwise)})"

    def conjunction(self, parts: list[str]) -> str:
        return " && ".join(f"({part})" for part in parts)


def assigned(nodes) -> set[str]:
    """The scalar temporaries the statements ``nodes`` assign (C declares them first)."""
    names = set()
    for node in nodes:
        if isinstance(node, Assign) and node.lanes is None:
            names.add(node.name)
        for inner in ("body", "orelse"):
            names |= assigned(getattr(node, inner, None) or ())
    return names


class CTarget(Target):
    """Plain C: a function per kernel over flat ``double`` arrays, one element at a time."""

    name = "c"
    label = "C (a proof of the representation)"
    values = CValues
    empty_block = ()
    block_end = ("}",)
    else_header = "else {"

    def statement(self, text: str) -> str:
        return text + ";"

    def comment(self, text: str) -> str:
        return f"// {text}"

    def if_header(self, condition: str) -> str:
        return f"if ({condition}) {{"

    def negation(self, condition: str) -> str:
        return f"!({condition})"

    def kernel_header(self, name: str, params: tuple[str, ...]) -> str:
        return f"void {name}({', '.join('double *' + param for param in params)}) {{"

    def kernel_prologue(self, kernel: Kernel) -> tuple:
        names = sorted(assigned(kernel.body))
        return (Line(f"double {', '.join(names)};"),) if names else ()

    def unflatten(self, node) -> tuple:
        number = f"(_flat / {node.blocks})" if node.blocks > 1 else "_flat"
        strides = [int(np.prod(node.shape[k + 1:], dtype=np.int64)) for k in range(len(node.shape))]
        return tuple(Line(f"long {name} = {number} / {stride} % {n};")
                     for name, stride, n in zip(node.names, strides, node.shape))

    def row_block(self, node) -> tuple:
        return (Line(f"long _first = _flat % {node.blocks} * {node.width};"),
                Line(f"long _stop = lmin(_first + {node.width}, {node.extent});"))

    def fill(self, name: str, width: int, value: str) -> str:
        return f"for (long _k = 0; _k < {width}; _k++) {name}[_k] = {value};"

    def range_loop(self, index: str, low: str, high: str) -> str:
        return f"for (long {index} = {low}; {index} <= {high}; {index}++) {{"

    def lane_loop(self, lane: str, width: int, first: str | None, stop: str | None) -> str:
        return f"for (long {lane} = {first or 0}; {lane} < {stop or width}; {lane}++) {{"

    def declaration(self, name: str, width: int) -> str:
        return f"double {name}[{width}];"

    def output_element(self, indices: tuple[str, ...], shape: tuple[int, ...]) -> str:
        return flat(indices, shape)

    def element_loop(self, loop: ElementLoop) -> tuple:
        return (Block(f"for (long _flat = 0; _flat < {loop.count}; _flat++) {{", (*loop.unflatten, *loop.body)),)


def compiled(module, tmp_path: Path) -> ctypes.CDLL:
    """The plan's kernels rendered as C, compiled as a shared library."""
    renderer = Renderer(CTarget())
    kernels = [kernel for kernel in module.kernels if isinstance(kernel, (Kernel, FusedKernel))]
    assert len(kernels) == len(module.kernels)  # every kernel compiled (no numpy over views here)
    source = PRELUDE + "\n".join(line for kernel in kernels for line in renderer.lines([kernel]) + [""])
    (tmp_path / "kernels.c").write_text(source)
    subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", str(tmp_path / "kernels.so"), str(tmp_path / "kernels.c"),
                    "-lm"], check=True, capture_output=True)
    return ctypes.CDLL(str(tmp_path / "kernels.so"))


def run(module, entry: str, library: ctypes.CDLL, arrays: dict) -> dict:
    """The entry point ``entry`` of the plan, its allocations and launches run on the compiled C kernels."""
    (node,) = [e for e in module.entries if isinstance(e, Entry) and e.name == entry]
    target = KERNEL_TARGETS["numba"]
    for step in node.body:
        if isinstance(step, Allocate):
            arrays[step.name] = np.zeros(target.stored_shape(step.shape))
        else:
            assert isinstance(step, Launch), step  # no BLAS product in these small plans
            getattr(library, step.kernel)(*(arrays[name].ctypes.data_as(ctypes.c_void_p) for name in step.args))
    return arrays


#: sums (rows of lanes, lane-gated at a padded border), conditions, max reductions, selects, strided reads (their
#: gradients divide indices)
SUBJECTS = [
    ("f[i; j] = sum{k}_0^5 (x[i; k] * y[j; k]) + exp (x[i; j])", {"f": (3, 10), "x": (3, 10), "y": (10, 6)}),
    ("f[n; j] = sum{q}_0^2 (if {j + q - 1 >= 0 and 10 - j - q >= 0} then (x[n; j + q - 1] * w[q]) else (0))",
     {"f": (2, 10), "x": (2, 10), "w": (3,)}),
    ("f[i] = max{k}_0^6 (x[i; k] * 2.0 - y[k])", {"f": (5,), "x": (5, 7), "y": (7,)}),
    ("f[i; j] = if {(i + j) % 2 = 0} then (sin (x[i; j])) else (x[i; j] ** 2)", {"f": (4, 3), "x": (4, 3)}),
    ("f[i] = x[2 * i + 1] * max (x[2 * i], y[i]) + if {x[2 * i] > 1} then (x[i]) else (-y[i])",
     {"f": (6,), "x": (12,), "y": (6,)}),
]


@pytest.mark.parametrize("text, shapes", SUBJECTS, ids=range(len(SUBJECTS)))
def test_the_numba_plan_rendered_as_c_computes_the_function(text, shapes, tmp_path):
    fn = tab.parse(text, shapes)
    module = function_module(fn, KERNEL_TARGETS["numba"])
    args = random_arguments(fn, np.random.default_rng(3))
    arrays = run(module, "forward", compiled(module, tmp_path), {name: np.ascontiguousarray(a, dtype=np.float64)
                                                                  for name, a in args.items()})
    np.testing.assert_allclose(arrays[fn.name].reshape(fn.evaluate(args).shape), fn.evaluate(args), rtol=1e-12)


@pytest.mark.parametrize("text, shapes", SUBJECTS, ids=range(len(SUBJECTS)))
def test_the_numba_gradient_plan_rendered_as_c_computes_the_gradients(text, shapes, tmp_path):
    fn = tab.parse(text, shapes)
    grads = tab.derive(fn)
    module = gradients_module(grads.simplified, KERNEL_TARGETS["numba"])
    library = compiled(module, tmp_path)
    rng = np.random.default_rng(5)
    args = {name: np.ascontiguousarray(a, dtype=np.float64) for name, a in random_arguments(fn, rng).items()}
    df = rng.normal(size=fn.shapes[fn.name])
    arrays = run(module, "_values", library, dict(args))
    backward = next(e for e in module.entries if isinstance(e, Entry) and e.name == "_backward")
    arrays[backward.params[len(fn.arguments) + 1]] = np.ascontiguousarray(df)  # after the arguments and f: df
    arrays = run(module, "_backward", library, arrays)
    expected = grads.compile("numpy")(args, df)
    for name, out in backward.returns.outputs:
        np.testing.assert_allclose(arrays[out].reshape(expected[name].shape), expected[name], rtol=1e-10, atol=1e-12)


def test_the_c_target_spells_what_the_plan_holds():
    """The plan holds no code: the same Statements rendered for numba and for C differ in every spelling."""
    fn = tab.parse(*SUBJECTS[1])
    (kernel,) = function_module(fn, KERNEL_TARGETS["numba"]).kernels
    (statements,) = kernel.body[0].body
    assert isinstance(statements, Statements) and statements.lanes
    python = "\n".join(Renderer(KERNEL_TARGETS["numba"]).lines([kernel]))
    c = "\n".join(Renderer(CTarget()).lines([kernel]))
    assert "for j in range(" in python and "for (long j = " in c
    assert "np.empty(10)" in python and "[10];" in c

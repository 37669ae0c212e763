"""Serial kernels launched in a row compiled as one fused function (tensoradbook.codegen.fusion): which
runs are fused, and that the fused modules compute the reference evaluator's values with the same bits as the
kernels launched one by one."""

from __future__ import annotations

import numpy as np
import pytest

import tensoradbook as tab
from differential import special_inputs
from tensoradbook.codegen import fusion
from tensoradbook.codegen import kernel_ir as ir
from tensoradbook.codegen.module import gradients_module
from tensoradbook.codegen.targets import KERNEL_TARGETS
from tensoradbook.codegen.thresholds import FUSED_KERNELS


def chain(definitions: int, width: int = 8):
    lines = ["h1[i] = tanh (x[i] * w1[i])"]
    lines += [f"h{k}[i] = tanh (h{k - 1}[i] * w{k}[i] + x[i])" for k in range(2, definitions + 1)]
    shapes = {"x": (width,), **{f"{t}{k}": (width,) for k in range(1, definitions + 1) for t in "hw"}}
    return tab.parse("\n".join(lines), shapes)


def fused_kernels(module: ir.Module) -> list[ir.FusedKernel]:
    return [kernel for kernel in module.kernels if isinstance(kernel, ir.FusedKernel)]


def data(program, seed=0):
    rng = np.random.default_rng(seed)
    return ({name: rng.uniform(-1, 1, program.shapes[name]) for name in program.arguments},
            rng.uniform(-1, 1, program.shapes[program.name]))


def test_a_long_run_is_cut_into_parts_of_about_equal_size(monkeypatch):
    monkeypatch.setattr(fusion, "MAX_FUSED", 4)
    module = gradients_module(tab.derive(chain(9)).simplified, KERNEL_TARGETS["numba"])
    sizes = sorted(len(kernel.calls) for kernel in fused_kernels(module))
    assert sizes and max(sizes) <= 4 and min(sizes) >= 2, sizes
    inlined = {call[0] for kernel in fused_kernels(module) for call in kernel.calls}
    table = dict(module.table.rows)
    assert all(name in table for name in (k.name for k in fused_kernels(module)))
    assert not inlined & set(table), "an inlined kernel is typed on its own, though nothing launches it alone"


def test_a_single_launch_and_the_numpy_target_are_not_fused():
    one = tab.parse("f[i] = exp (x[i])", {"f": (8,), "x": (8,)})
    assert not fused_kernels(gradients_module(tab.derive(one).simplified, KERNEL_TARGETS["numba"]))
    assert not fused_kernels(gradients_module(tab.derive(chain(3)).simplified, KERNEL_TARGETS["numpy"]))


def test_a_kernel_called_with_too_many_arrays_runs_alone():
    module = gradients_module(tab.derive(chain(fusion.MAX_CALL_ARGUMENTS)).simplified, KERNEL_TARGETS["numba"])
    called = {call[0] for kernel in fused_kernels(module) for call in kernel.calls}
    wide = [k for k in module.kernels if isinstance(k, ir.Kernel) and len(k.params) > fusion.MAX_CALL_ARGUMENTS]
    assert wide and not {k.name for k in wide} & called
    assert all(not k.inlined for k in wide)


def test_kernels_that_round_differently_are_not_fused_together():
    module = gradients_module(tab.derive(chain(6)).simplified, KERNEL_TARGETS["numba"])
    kernels = {k.name: k for k in module.kernels if isinstance(k, ir.Kernel)}
    for fused in fused_kernels(module):
        assert {kernels[name].exact for name, _ in fused.calls} == {fused.exact}


@pytest.mark.parametrize("definitions", [2, 5, 40])  # 40: runs past MAX_FUSED, cut into parts
@pytest.mark.parametrize("special", [False, True])
def test_fused_modules_give_the_reference_values_with_the_bits_of_unfused_ones(definitions, special, monkeypatch):
    """On ordinary inputs, and on inputs holding NaN, +-inf, -0.0 and ties (tests/differential.py's)."""
    program = chain(definitions)
    grads = tab.derive(program)
    args, df = data(program)
    if special:
        args = special_inputs(program, np.random.default_rng(definitions), share=0.2)
    fused = grads.compile("numba")
    assert "_fused_1_kernel" in fused.source
    expected = grads.simplified.evaluate(args, df)  # the form the kernels compute (test_differential.py says why)
    got = fused(args, df)
    monkeypatch.setattr(FUSED_KERNELS, "value", 10**9)
    unfused = tab.derive(program).compile("numba")
    assert "_fused_" not in unfused.source
    alone = unfused(args, df)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=name)
        assert np.array_equal(got[name].view(np.int64), alone[name].view(np.int64)), name

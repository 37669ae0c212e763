"""Drive GradientLab (report sec. 6: the generated gradient kernels) from Python and check what it shows
against the core: the kernels' results, the dot-product test, the per-element finite differences.

Numba compiles each new function (and size) once, a few seconds, then reads its disk cache; the tests
reuse the presets at their own sizes so that every kernel is compiled once per process at most.
"""

import html

import numba
import numpy as np
import pytest

import tensoradbook as tab
from tensoradbook.codegen import targets as kernel_targets
from tensoradbook.ad.gradcheck import numeric_gradient, random_arguments
from tensoradbook.widgets import GradientLab
from tensoradbook.widgets import gradient_lab as lab_module
from tensoradbook.widgets.explorer import PRESETS, SECTION_6, TOLERANCE
from tensoradbook.widgets.gradient_lab import (HEATMAP_LIMIT, STEPS, error_heatmap, fitting_scales, scaled)

PNG = b"\x89PNG\r\n\x1a\n"
SIMULATOR = bool(numba.config.ENABLE_CUDASIM)  # set by the environment; never forced here
TARGETS = ["numpy", "numba"] + (["cuda"] if SIMULATOR else [])


@pytest.fixture(scope="module")
def lab():
    return GradientLab(target="numpy")


def core_run(text, shapes, target, seed=0):
    """What the lab should find, computed with the core directly."""
    fn = tab.parse(text, shapes)
    grads = tab.derive(fn)
    rng = np.random.default_rng(seed)
    args = random_arguments(fn, rng)
    df = rng.standard_normal(fn.shapes[fn.name])
    kernel = grads.compile(target)(args, df)
    return fn, grads, args, df, kernel


# -- sizes ------------------------------------------------------------------------------------

def test_scaling_the_section_6_example():
    text, shapes = PRESETS[SECTION_6]
    big_text, big_shapes = scaled(text, shapes, 4)
    small = tab.parse(text, shapes)
    assert "sum{k}_0^19" in big_text and big_text.replace("sum{k}_0^19", "sum{k}_0^4") == str(small)
    assert big_shapes == {"f": (12, 16), "a": (12, 20), "b": (16, 20), "c": (12, 12), "d": (32,)}
    fn = tab.parse(big_text, big_shapes)  # d[i + k] still reads inside d: 11 + 19 < 32
    assert fn == small.scaled(4)
    assert scaled(text, shapes, 1) == (text, shapes)
    # constant bounds l..u become s l .. s (u + 1) - 1; bounds naming an index follow the indices
    assert scaled("f[i] = sum{k}_(-1)^2 (x[i + k + 1])", {"f": (2,), "x": (5,)}, 2) == (
        "f[i] = sum{k}_(-2)^5 (x[i + k + 1])", {"f": (4,), "x": (10,)})
    assert scaled("f[i] = sum{k}_0^i (x[k])", {"f": (2,), "x": (2,)}, 3)[0] == "f[i] = sum{k}_0^i (x[k])"


def test_only_fitting_scales_are_offered():
    assert fitting_scales(*PRESETS[SECTION_6]) == ((1, 2, 4, 8, 16), "")
    fits, message = fitting_scales(*PRESETS["x[10 * s + t]"])
    assert fits == (1,) and message.startswith("×2: x[10 * s + t] leaves x's shape (60,)")
    assert fitting_scales("f[] = x[] * y[]", {"f": (), "x": (), "y": ()}) == ((1,), "")  # scalars: nothing to scale
    with pytest.raises(tab.ExpressionError):
        fitting_scales("f[i] = x[i] *", {"f": (3,), "x": (3,)})


def test_scale_control(lab):
    lab.set_preset(SECTION_6)
    assert lab.scales == (1, 2, 4, 8, 16) and lab.scale == 1
    lab.scale = 2
    assert lab.scale == 2 and lab.scale_menu.value == 2 and lab.error == ""
    assert lab.shapes == {"f": (6, 8), "a": (6, 10), "b": (8, 10), "c": (6, 6), "d": (16,)}
    assert "sum{k}_0^9" in str(lab.function) and lab.gradient_elements == 60 + 80 + 36 + 16
    assert "f=6x8, a=6x10, b=8x10, c=6x6, d=16" in lab.sizes.value and "sum{k}_0^9" in lab.sizes.value
    assert lab.shapes_entry.value == "f=3x4, a=3x5, b=4x5, c=3x3, d=8"  # the entry keeps the typed sizes
    lab.set_preset("matrix product")  # fits at x2 too: the scale stays
    assert lab.scale == 2 and lab.shapes["a"] == (4, 8)
    lab.set_preset("x[10 * s + t]")  # does not: back to x1, and the reason is shown
    assert lab.scale == 1 and lab.scales == (1,)
    assert "Larger scales do not fit" in lab.sizes.value and "leaves x" in html.unescape(lab.sizes.value)
    assert not lab.set_scale(4)
    assert "scale ×4 does not fit this function" in lab.error and "^" in lab.error
    assert lab.scale == 1 and lab.shapes == PRESETS["x[10 * s + t]"][1]
    assert lab.set_preset(SECTION_6) and lab.error == ""
    assert not lab.set_scale(3) and "choose one of ×1, ×2" in lab.error
    lab.scale = 1


# -- runs -----------------------------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_runs_and_checks(lab, name, target):
    assert lab.set_preset(name) and lab.set_target(target)
    assert lab.run(), lab.error
    result = lab.result
    assert lab.error == "" and result.target == target and result.ok
    fn, grads, args, df, kernel = core_run(*PRESETS[name], target)
    reference = grads.evaluate(args, df)
    for argument in fn.arguments:
        size = max(1.0, float(np.max(np.abs(reference[argument]))))
        assert result.errors[argument] <= 1e-9 * size
        assert result.errors[argument] == pytest.approx(float(np.max(np.abs(kernel[argument] - reference[argument]))),
                                                        abs=1e-15 * size)
        assert result.dot_errors[argument] < TOLERANCE
    assert result.forward_error <= 1e-9 * max(1.0, float(np.max(np.abs(fn.evaluate(args)))))
    assert set(result.timings) == {"forward", "gradients", "reference", "compile"}
    assert all(result.timings[k] > 0 for k in ("forward", "gradients", "reference"))
    assert 1 <= result.runs["forward"] <= lab_module.MAX_RUNS
    shown = lab.results.value
    assert "forward kernel alone" in shown and "forward + gradients" in shown and "✗" not in shown
    assert shown.count("✓") == 2 * len(fn.arguments) + 1
    assert lab.progress.value == len(STEPS) and lab.progress.bar_style == "success"
    assert lab.status.startswith("done in") and result.path.endswith(".py")


def test_scatter_baseline_runs():
    lab = GradientLab(preset=SECTION_6, target="numba-scatter")
    assert lab.run() and lab.result.ok and "def scatter(" in lab.source


@pytest.mark.skipif(not SIMULATOR, reason="the CUDA simulator is not active in this process")
def test_cuda_scatter_on_the_simulator():
    lab = GradientLab(preset=SECTION_6, target="cuda-scatter")
    assert lab.target_note == "" and "cuda-scatter" in lab.targets
    assert lab.run() and lab.result.ok and "cuda.atomic.add" in lab.source


def test_the_kernels_are_checked_not_the_reference(lab, monkeypatch):
    """The dot-product test and the per-element differences see what the kernels compute."""
    lab.set_preset("shifted window x[i + 2]")
    lab.set_target("numpy")
    real = lab_module._compiled(*lab._key, "numpy")

    class Wrong:
        path = real.path

        def forward(self, args):
            return real.forward(args)

        def __call__(self, args, df):
            return {name: 1.01 * value for name, value in real(args, df).items()}

        evaluate = __call__  # what check_gradients calls

    monkeypatch.setattr(lab_module, "_compiled", lambda *key: Wrong())
    assert lab.run()
    result = lab.result
    assert not result.ok and result.dot_errors["x"] > 1e-3 and result.errors["x"] > 1e-3
    assert float(np.max(result.element_errors["x"])) > 1e-3
    assert "✗" in lab.results.value and lab.progress.bar_style == "warning"


def test_per_element_errors_and_heatmap_for_small_sizes(lab):
    lab.set_preset(SECTION_6)
    lab.set_target("numpy")
    lab.scale = 1
    assert lab.gradient_elements == 15 + 20 + 9 + 8 <= HEATMAP_LIMIT
    assert lab.run()
    result = lab.result
    assert lab.steps_done == list(STEPS)
    assert result.report_form and "reference: the gradients as derived" in lab.results.value
    fn, grads, args, df, kernel = core_run(*PRESETS[SECTION_6], "numpy")
    forward = fn.compile("numpy")  # the differences are of the target's forward kernel
    for name in fn.arguments:
        numeric = numeric_gradient(fn, args, name, df, forward=forward)
        np.testing.assert_allclose(result.element_errors[name], np.abs(kernel[name] - numeric), rtol=1e-12, atol=0)
        assert np.allclose(numeric, numeric_gradient(fn, args, name, df), rtol=1e-6, atol=1e-12)
        assert float(np.max(result.element_errors[name])) < 1e-6 * max(1.0, result.scale[name])
    assert lab.heatmap.startswith(PNG) and bytes(lab.image.value) == lab.heatmap
    assert lab.image.layout.display is None and "Central differences" in lab.image_note.value
    assert "max |kernel − central diff.|" in lab.results.value
    lab.scale = 4  # 736 gradient elements: no per-element differences, no heatmap
    assert lab.gradient_elements > HEATMAP_LIMIT
    assert lab.run() and lab.result.ok
    assert lab.result.element_errors is None and lab.heatmap is None
    # the report's form recomputes f in every summand (seconds here): the kernels' form is the reference
    assert not lab.result.report_form and "Gradients.simplified" in lab.results.value
    assert "per element" not in lab.steps_done and lab.steps_done == list(STEPS[:-1])
    assert lab.image.layout.display == "none" and f"up to {HEATMAP_LIMIT}" in lab.image_note.value
    assert "central diff." not in lab.results.value
    lab.scale = 1


def test_heatmap_draws_any_rank():
    errors = {"s": np.array(3e-12), "v": np.linspace(0, 1e-10, 30), "m": np.full((4, 5), 1e-11),
              "t": np.full((2, 3, 4), 2e-11)}
    png = error_heatmap(errors, "any rank", {name: 1.0 for name in errors})
    assert png.startswith(PNG)
    assert error_heatmap({"z": np.zeros((3, 3))}).startswith(PNG)  # all exact: still a scale to draw on


def test_progress_is_shown_step_by_step(lab):
    lab.set_preset("diagonal x[i; i]")
    lab.set_target("numpy")
    lab_module._WARM.discard((*lab._key, "numpy"))  # as if never run: the compile step has work to do
    shown = []
    lab.status_line.observe(lambda change: shown.append(change["new"]), names="value")
    values = []
    lab.progress.observe(lambda change: values.append(change["new"]), names="value")
    try:
        assert lab.run()
    finally:
        lab.status_line.unobserve_all()
        lab.progress.unobserve_all()
    steps = [s for s in shown if "step " in s]
    assert [f"step {k + 1} of {len(STEPS)}" in s for k, s in enumerate(steps)] == [True] * len(STEPS)
    assert "compiling the numpy kernels" in steps[2]
    assert values == list(range(1, len(STEPS))) + [len(STEPS)]
    assert lab.result.timings["compile"] is not None and "compile and first call" in lab.results.value
    assert lab.run() and lab.result.timings["compile"] is None  # now warm
    assert "already compiled" in lab.results.value


def test_changes_forget_the_last_run(lab):
    lab.set_preset("matrix product")
    lab.set_target("numpy")
    assert lab.run() and lab.result is not None
    lab.set_target("numba")
    assert lab.result is None and lab.heatmap is None and lab.results.value == ""
    assert lab.progress.value == 0 and "press Run" in lab.status


def test_a_vacuous_check_is_flagged(lab):
    assert lab.set_function("f[i] = exp (-(x[i] * 2000))", "f=4, x=4")  # exp underflows to 0
    lab.set_target("numpy")
    assert lab.run() and lab.result.vacuous
    assert "cannot tell a right gradient from a wrong one" in lab.results.value


# -- errors ----------------------------------------------------------------------------------

def test_bad_input_is_shown_inline_and_the_lab_keeps_working(lab):
    lab.set_preset("matrix product")
    lab.set_target("numpy")
    good = (lab.function, lab.shapes)
    assert not lab.set_function("c[i; j] = a[i; k] *", "c=2x3, a=2x4")
    assert "^" in lab.error and "c[i; j] = a[i; k] *" in lab.error and "<pre" in lab.errors.value
    assert (lab.function, lab.shapes) == good
    assert not lab.set_function("f[i] = x[i]", "f=3, x=4q")
    assert "cannot read 'x=4q'" in lab.error
    assert not lab.set_function("f[i] = x[i + 2]", "f=3, x=4")  # reads past x
    assert "leaves x's shape" in lab.error
    assert not lab.set_function("f[i] = x[i]", "f=3x2, x=3")
    assert lab.error and lab.function == good[0]
    assert not lab.set_preset("no such preset") and "no preset" in lab.error
    assert not lab.set_target("fortran") and "unknown target" in lab.error and lab.target == "numpy"
    assert lab.run() and lab.result.ok  # the last good function still runs
    assert lab.set_function("f[i] = sin (x[i]) * x[i]", "f=3, x=3") and lab.error == ""
    assert lab.preset_menu.value is None  # not a preset
    assert lab.run() and lab.result.ok


def test_typing_into_the_entries(lab):
    lab.shapes_entry.value = "f=4, x=6"
    lab.function_entry.value = "f[i] = tanh (x[i + 2])"
    assert lab.error == "" and lab.shapes == {"f": (4,), "x": (6,)}
    lab.function_entry.value = "f[i] = tanh (x[i + 2]"
    assert "^" in lab.error and str(lab.function) == "f[i] = tanh (x[i + 2])"
    lab.preset_menu.value = "diagonal x[i; i]"
    assert lab.error == "" and lab.function_entry.value == PRESETS["diagonal x[i; i]"][0]
    lab.scale_menu.value = 2
    assert lab.scale == 2 and lab.shapes == {"f": (8,), "x": (8, 8)}
    lab.target_menu.value = "numpy"
    assert lab.target == "numpy"
    lab.scale = 1


def test_an_exception_from_the_generated_code_is_shown(lab, monkeypatch):
    lab.set_preset("shifted window x[i + 2]")
    lab.set_target("numpy")

    class Broken:
        path = "broken.py"

        def forward(self, args):
            raise FloatingPointError("overflow in the kernel")

        __call__ = forward

    monkeypatch.setattr(lab_module, "_compiled", lambda *key: Broken())
    assert not lab.run()
    assert "FloatingPointError: overflow in the kernel" in lab.error and "failed" in lab.error
    assert lab.result is None and lab.progress.bar_style == "danger"
    assert not lab.run_button.disabled
    monkeypatch.undo()
    assert lab.run() and lab.error == "" and lab.result.ok  # works again


@pytest.fixture
def no_cuda(monkeypatch):
    """No GPU and no simulator: the real situation where there is neither, imitated where there is one."""
    if lab_module.cuda_problem():
        return lab_module.cuda_problem()
    message = ("target 'cuda' needs an NVIDIA GPU, or the CUDA simulator: set the environment variable "
               "NUMBA_ENABLE_CUDASIM=1 before numba is first imported")

    monkeypatch.setattr(kernel_targets, "cuda_problem", lambda: message)
    monkeypatch.setattr(lab_module, "cuda_problem", lambda: message)
    monkeypatch.setattr(lab_module, "_compiled", lab_module._compiled.__wrapped__)  # no cached CUDA modules
    return message


def test_missing_cuda_is_explained_and_the_other_targets_work(no_cuda):
    lab = GradientLab(preset=SECTION_6, target="numpy")
    assert lab.targets == ("numpy", "numba", "numba-scatter")
    labels = dict((value, label) for label, value in lab.target_menu.options)
    assert "needs a GPU" in labels["cuda"] and "needs a GPU" in labels["cuda-scatter"]
    lab.target = "cuda"
    assert lab.target == "cuda" and no_cuda in lab.target_note and "NUMBA_ENABLE_CUDASIM=1" in lab.target_note
    assert "numpy, numba, numba-scatter" in lab.target_note and lab.run_button.disabled
    lab.show_source = True  # the CUDA module can still be read
    assert "@cuda.jit" in lab.source and html.escape("cuda.grid(1)") in lab.source_view.value
    assert not lab.run()
    assert "RuntimeError" in lab.error and "needs an NVIDIA GPU" in lab.error
    assert "Choose one of numpy, numba, numba-scatter" in lab.error and lab.result is None
    lab.target = "numpy"
    assert lab.target_note == "" and not lab.run_button.disabled
    assert lab.run() and lab.error == "" and lab.result.ok


# -- source ------------------------------------------------------------------------------------

def test_the_source_view_shows_the_generated_module(lab):
    lab.set_preset(SECTION_6)
    lab.set_target("numba")
    lab.show_source = False
    assert lab.source_view.value == "" or lab.show_source is False
    lab.show_source = True
    assert lab.source_box.selected_index == 0 and lab.show_source
    text, shapes = PRESETS[SECTION_6]
    expected = tab.derive(tab.parse(text, shapes)).source("numba")
    assert lab.source == expected and html.escape(expected) in lab.source_view.value
    assert "@numba.njit" in lab.source_view.value and "def gradients(" in lab.source_view.value
    assert "numba" in lab.source_box.get_title(0)
    lab.set_target("numpy")  # the open view follows the target
    assert html.escape(tab.derive(tab.parse(text, shapes)).source("numpy")) in lab.source_view.value
    assert "numpy" in lab.source_box.get_title(0)
    lab.scale = 2  # and the size: sizes are baked into the generated code
    assert "@numba.njit" not in lab.source_view.value and "_GRID = (6, 8)" in lab.source_view.value
    lab.scale = 1
    lab.show_source = False


def test_construction_errors():
    with pytest.raises(ValueError, match="unknown target"):
        GradientLab(target="fortran")
    with pytest.raises(ValueError, match="does not fit"):
        GradientLab(preset="x[10 * s + t]", scale=2)
    with pytest.raises(ValueError):
        GradientLab("f[i] = x[i", {"f": (3,), "x": (3,)})


def test_the_dot_product_test_holds_at_larger_sizes():
    """At x8 the sec. 6 example's gradients pass check_gradients (a unit direction: the step means the
    same at every size). A wrong gradient fails (test_the_kernels_are_checked_not_the_reference)."""
    lab = GradientLab(preset=SECTION_6, scale=8, target="numpy")
    assert lab.run() and lab.result.ok, lab.results.value
    assert max(lab.result.dot_errors.values()) < TOLERANCE
    assert not lab.result.report_form

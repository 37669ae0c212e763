"""GradientLab: the generated gradient kernels (report sec. 6) run and checked against finite differences.

Pick a preset or type a function with its shapes, a size (a scale factor)
and a target of :mod:`tensoradbook.codegen`, and press Run. The lab derives
the gradients (Algorithm 4), generates and compiles the target's module,
times the forward kernel alone and forward plus gradients (median of a few
runs), and checks the kernels' output three ways:

* against the reference evaluator (:meth:`tensoradbook.Gradients.evaluate`):
  the largest absolute difference per argument;
* against finite differences by the dot-product test
  (:func:`tensoradbook.check_gradients`, run on the kernels' gradients);
* for small sizes, element by element against central differences
  (:func:`tensoradbook.ad.gradcheck.numeric_gradient`), drawn as a heatmap.

The generated module of the chosen target can be shown: it is what chapter 6
teaches (one thread per gradient element, no atomics).

A scale ``s`` multiplies every size by ``s`` and stretches every sum with
constant bounds ``l .. u`` to ``s l .. s (u + 1) - 1``: the sec. 6 example
``I x J x K`` becomes ``sI x sJ x sK``, with ``d`` of ``s (I + K)``. Only the
scales at which the parser finds every read inside its argument are offered
(``x[10 * s + t]`` needs more than a scaled ``x``); the shapes box sets any
other size.

Text of several lines is a program: the lab runs its forward kernels, one per definition, and
the gradients of reverse accumulation across them (``tab.derive(program).compile(target)``) and checks
them the same three ways, per input. A program runs at the sizes typed (the core scales single functions).
"""

from __future__ import annotations

import html
import math
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import ipywidgets as W
import numpy as np

import tensoradbook as tab
from tensoradbook import codegen
from tensoradbook.integer.matrix import shown
from tensoradbook.ad.gradcheck import numeric_gradient, random_arguments

from .base import CodeMessageBox, MessageBox, WidgetBase
from ._common import (css_width, choose, function_entries, read_shapes, shapes_text,
                      shows_errors)
from .error_heatmap import error_heatmap, heatmap_width, shape_text
from .explorer import PRESETS, SECTION_6, TOLERANCE, PresetChoice, function_text

SCALES = (1, 2, 4, 8, 16)
# Gradient elements up to which the per-element central differences (and the heatmap) are done, and the
# kernels are compared with the gradients as derive returns them (the report's form, sec. 6), whose sums
# recompute the forward expression in every summand: 0.3 s for the sec. 6 example at x2, 3 s at x4, 16 s
# at x8. Above it they are compared with Gradients.simplified evaluated (the kernels' form, reading f).
HEATMAP_LIMIT = 400
REFERENCE_TOLERANCE = 1e-9  # kernel vs reference evaluator, relative to the largest reference value
STEPS = ("derive", "generate", "compile", "run", "check", "per element")
# Timing: each measured call is repeated at least MIN_RUNS and at most MAX_RUNS times, until TIME_BUDGET
# seconds are spent; the median is shown.
MIN_RUNS, MAX_RUNS, TIME_BUDGET = 3, 25, 0.05
MESSAGE_CHARS = 3000  # compiler errors can be very long; the start says what went wrong


# -- sizes ------------------------------------------------------------------------------------

def scaled(text: str, shapes: dict, factor: int) -> tuple[str, dict]:
    """``text`` and ``shapes`` at ``factor`` times the size (:meth:`tensoradbook.Function.scaled`), as the
    text and shapes the lab's caches are keyed by; raises ExpressionError if ``text`` is wrong or a program."""
    if factor == 1:
        return text, dict(shapes)
    fn = tab.parse(text, read_shapes(shapes))
    if isinstance(fn, tab.Program):
        raise tab.ExpressionError("a program of several definitions runs at the sizes typed")
    big = fn.scaled(factor)
    return str(big), big.shapes


def _shape_key(shapes: dict) -> tuple:
    return tuple((name, tuple(int(n) for n in shape)) for name, shape in shapes.items())


@lru_cache(maxsize=64)
def _misfit(text: str, shapes: tuple, factor: int) -> str:
    """"" if ``text`` at ``factor`` times the size parses and its tensors stay within MAX_ELEMENTS, else
    why not (a few ms)."""
    try:
        text, shapes = scaled(text, dict(shapes), factor)
        tab.parse(text, read_shapes(shapes))
    except ValueError as exc:  # the parser's ExpressionError (a program cannot scale), or a tensor too large
        return str(exc)
    return ""


def fitting_scales(text: str, shapes: dict) -> tuple[tuple[int, ...], str]:
    """The scales of :data:`SCALES` that ``text`` fits at and change its sizes, and the parser's message
    for the first that does not fit ("" if all do). Raises ExpressionError if ``text`` itself is wrong."""
    key = _shape_key(dict(shapes))
    fn = tab.parse(text, dict(key))  # raises on bad input
    fits, message = [1], ""
    for factor in SCALES[1:]:
        if isinstance(fn, tab.Function) and fn.scaled(factor) == fn:
            break  # scalars only: every scale is the same function
        problem = _misfit(text, key, factor)
        if problem:
            message = message or f"×{factor}: {problem}"
        else:
            fits.append(factor)
    return tuple(fits), message


# -- caches: the core's work, done once per function ------------------------------------------

@lru_cache(maxsize=32)
def _derivation(text: str, shapes: tuple) -> tuple[tab.Function | tab.Program, tab.Gradients | tab.ProgramGradients]:
    fn = tab.parse(text, dict(shapes))
    return fn, tab.derive(fn)


@lru_cache(maxsize=64)
def _compiled(text: str, shapes: tuple, target: str):
    """The compiled gradients (the module imported and, for Numba, every kernel compiled or loaded from its disk
    cache; the simulator's CUDA kernels compile at their first call)."""
    return _derivation(text, shapes)[1].compile(target)


_WARM: set[tuple] = set()  # (text, shapes, target) whose kernels have run once in this process


def _warmed(text: str, shapes: tuple, target: str, args: dict, df: np.ndarray):
    """The compiled gradients, each kernel called once: Numba compiles or loads a kernel at its first call."""
    compiled = _compiled(text, shapes, target)
    compiled.forward(args)
    compiled(args, df)
    _WARM.add((text, shapes, target))
    return compiled


@lru_cache(maxsize=64)
def _source(text: str, shapes: tuple, target: str) -> str:
    return _derivation(text, shapes)[1].source(target)


def _inputs(fn: tab.Function | tab.Program, seed: int) -> tuple[dict, np.ndarray]:
    """Random arguments in [0.5, 1.5] (away from the poles of log, sqrt and division) and adjoint."""
    rng = np.random.default_rng(seed)
    args = random_arguments(fn, rng)
    return args, rng.standard_normal(fn.shapes[fn.name])


@lru_cache(maxsize=16)
def _reference(text: str, shapes: tuple, seed: int, report_form: bool
               ) -> tuple[np.ndarray, dict[str, np.ndarray], float]:
    """``f`` and the gradients by the reference evaluator (numpy), and the seconds that took: the same
    for every target, so computed once per function. ``report_form``: the gradients as :func:`derive`
    returns them (slow: sums recompute the forward expression), else :attr:`Gradients.simplified`."""
    fn, grads = _derivation(text, shapes)
    args, df = _inputs(fn, seed)
    start = time.perf_counter()
    f, gradients = fn.evaluate(args), (grads if report_form else grads.simplified).evaluate(args, df)
    return f, gradients, time.perf_counter() - start


@lru_cache(maxsize=16)
def _numeric(text: str, shapes: tuple, seed: int, target: str) -> dict[str, np.ndarray]:
    """Per argument, the gradient by central differences, one element at a time (small sizes only).

    The differences are of the target's own forward kernel (itself compared with the reference
    evaluator), ~100 times faster than the reference; on the CUDA simulator, of the reference.
    """
    fn = _derivation(text, shapes)[0]
    args, df = _inputs(fn, seed)
    forward = None if codegen.KERNEL_TARGETS[target].on_gpu else _compiled(text, shapes, target).forward
    return {name: numeric_gradient(fn, args, name, df, forward=forward) for name in fn.arguments}


#: Where the NVIDIA driver shows itself on Linux (a machine, a GPU container; WSL's GPU is /dev/dxg).
NVIDIA_DRIVER = (Path("/proc/driver/nvidia"), Path("/dev/dxg"))


@lru_cache(maxsize=1)
def cuda_problem() -> str:
    """Why the CUDA targets cannot run in this process ("" if they can): asked once, it costs ~1 s (importing
    numba-cuda), except on a Linux machine with no NVIDIA driver and no simulator, where the answer is known
    without it (every widget's first draw on a CPU-only class server paid that second)."""
    if sys.platform == "linux" and not cuda_simulated() and not any(p.exists() for p in NVIDIA_DRIVER):
        return ("target 'cuda' needs an NVIDIA GPU (this machine has no NVIDIA driver), or the CUDA simulator: set "
                "the environment variable NUMBA_ENABLE_CUDASIM=1 before numba is first imported")
    return codegen.cuda_problem()


def cuda_simulated() -> bool:
    from numba import config

    return bool(config.ENABLE_CUDASIM)


# -- results --------------------------------------------------------------------------------

@dataclass
class LabResult:
    """What one run measured. Errors are absolute differences unless said otherwise; times in seconds."""

    target: str
    text: str                        # the function run (at the chosen scale)
    shapes: dict                     # its shapes
    forward_error: float             # max |kernel f - reference f|
    errors: dict                     # argument -> max |kernel gradient - reference evaluator|
    dot_errors: dict                 # argument -> relative error of the dot-product test on the kernels
    element_errors: dict | None      # argument -> |kernel - central differences| per element; small sizes only
    timings: dict                    # "forward", "gradients" (forward + gradients), "reference"; "compile"
    runs: dict                       # how many runs each median of "forward" and "gradients" is over
    scale: dict = field(default_factory=dict)  # argument -> max |reference gradient| (what errors compare to)
    forward_scale: float = 1.0       # max |reference f|
    report_form: bool = True         # reference: the gradients as derived (else Gradients.simplified)
    path: str = ""                   # the generated module's file

    @property
    def vacuous(self) -> bool:
        """Every gradient exactly zero (e.g. ``exp`` underflows): the checks cannot tell right from wrong."""
        return all(value == 0 for value in self.scale.values())

    @property
    def matches_reference(self) -> bool:
        """``f`` and every gradient within REFERENCE_TOLERANCE of the reference (relative to its size, or 1)."""
        return (self.forward_error <= REFERENCE_TOLERANCE * max(1.0, self.forward_scale)
                and all(self.errors[name] <= REFERENCE_TOLERANCE * max(1.0, self.scale[name]) for name in self.errors))

    @property
    def ok(self) -> bool:
        return self.matches_reference and all(error <= TOLERANCE for error in self.dot_errors.values())


def _seconds(t: float | None) -> str:
    if t is None:
        return "—"
    if t < 1e-3:
        return f"{t * 1e6:.0f} µs"
    if t < 1:
        return f"{t * 1e3:.1f} ms"
    return f"{t:.2f} s"


def _median_time(call) -> tuple[float, int]:
    """Median seconds of ``call()`` over MIN_RUNS .. MAX_RUNS runs (fewer once TIME_BUDGET is spent,
    at least one)."""
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < MAX_RUNS:
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
        spent = time.perf_counter() - start
        if (len(times) >= MIN_RUNS and spent > TIME_BUDGET) or spent > 20 * TIME_BUDGET:
            break
    return statistics.median(times), len(times)


def _mark(good: bool) -> str:
    return ('<span style="color:#1a7f37;font-weight:600">✓</span>' if good else
            '<span style="color:#b00020;font-weight:600">✗</span>')


_TABLE = 'style="border-collapse:collapse;font-size:1em;margin:0.3em 0 0.6em 0"'
_CELL = 'style="padding:0.15em 0.75em;border-bottom:1px solid #ddd;text-align:{}"'


def _table(header: list[str], rows: list[list[str]], caption: str) -> str:
    def cells(items, tag):
        return "".join(f"<{tag} {_CELL.format('left' if k == 0 else 'right')}>{item}</{tag}>"
                       for k, item in enumerate(items))

    body = "".join(f"<tr>{cells(row, 'td')}</tr>" for row in rows)
    return (f"<table {_TABLE}><caption style='text-align:left;font-weight:600;caption-side:top'>{caption}"
            f"</caption><tr>{cells(header, 'th')}</tr>{body}</table>")


def result_html(result: LabResult, function_name: str) -> str:
    """The checks and the timings of a run as two small HTML tables."""
    small = result.element_errors is not None
    header = ["", "shape", "max |kernel − reference|", "dot-product test (rel.)"]
    if small:
        header.append("max |kernel − central diff.|")
    f_good = result.forward_error <= REFERENCE_TOLERANCE * max(1.0, result.forward_scale)
    rows = [[f"<code>{html.escape(function_name)}</code> (forward)", shape_text(result.shapes[function_name]),
             f"{result.forward_error:.1e} {_mark(f_good)}", "—"] + (["—"] if small else [])]
    for name, error in result.errors.items():
        good = error <= REFERENCE_TOLERANCE * max(1.0, result.scale[name])
        dot = result.dot_errors[name]
        row = [f"<code>d{html.escape(name)}</code>", shape_text(result.shapes[name]), f"{error:.1e} {_mark(good)}",
               f"{dot:.1e} {_mark(dot <= TOLERANCE)}"]
        if small:
            row.append(f"{float(np.max(result.element_errors[name], initial=0.0)):.1e}")
        rows.append(row)
    form = ("reference: the gradients as derived (sec. 6)" if result.report_form else
            f"reference: Gradients.simplified, as the derived form is slow above {HEATMAP_LIMIT} elements")
    checks = _table(header, rows, f"Checks of the {html.escape(result.target)} kernels <small style='font-weight:"
                                  f"400'>(random inputs in [0.5, 1.5]; {html.escape(form)})</small>")
    t = result.timings
    ratio = t["gradients"] / t["forward"] if t["forward"] > 0 else float("nan")
    device = ""
    if codegen.KERNEL_TARGETS[result.target].on_gpu:
        device = (" (on the CUDA simulator: Python threads, not GPU timings)" if cuda_simulated() else
                  " (with the copies to and from the device)")
    rows = [["forward kernel alone", _seconds(t["forward"]), str(result.runs["forward"])],
            ["forward + gradients", _seconds(t["gradients"]), str(result.runs["gradients"])],
            ["… as a multiple of the forward", f"{ratio:.1f}×", ""],
            [f"reference evaluator (numpy, {'report' if result.report_form else 'kernel'} form)",
             _seconds(t["reference"]), "once per function"],
            ["compile and first call" if t.get("compile") is not None else "compile: already compiled",
             _seconds(t.get("compile")), "1" if t.get("compile") is not None else ""]]
    timings = _table(["", "median", "runs"], rows, f"Timings{device}")
    notes = []
    if result.vacuous:
        notes.append("Every gradient is exactly 0 at these inputs (e.g. <code>exp</code> underflows at this size): "
                     "the checks cannot tell a right gradient from a wrong one here; try a smaller scale.")
    note = "".join(f'<p style="color:#8a5300;font-weight:600">{n}</p>' for n in notes)
    return note + checks + timings


# -- the widget ---------------------------------------------------------------------------------

class GradientLab(WidgetBase, PresetChoice, W.VBox):
    """The generated gradient kernels of a function, run, timed and checked against finite differences.

    Python API: ``set_function(text, shapes) -> bool`` (shapes a dict or
    typed like ``f=3x4, d=8``; text of several lines is a program, checked
    per input), ``set_preset(name)``, ``presets``, ``scale``
    and ``target`` (read/write; ``set_scale``/``set_target`` return False
    with an inline error), ``scales`` (the scales that fit), ``targets``
    (those that can run here), ``target_note`` (why the chosen one cannot,
    "" if it can), ``run() -> bool``, ``result`` (a :class:`LabResult` after
    a run, None before one and after any change), ``heatmap`` (its PNG, small
    sizes only), ``error`` ("" if none), ``status`` (the progress line),
    ``steps_done`` and ``step_seconds`` (the steps of the last run, in order,
    and their times), ``source`` (the generated module of the target),
    ``show_source`` (read/write), and at the chosen scale ``function``,
    ``gradients``, ``shapes`` and ``gradient_elements``. ``seed`` picks the
    random inputs.
    """

    errors_box = CodeMessageBox  # bad input: function, shapes, scale, preset, target

    def __init__(self, text: str | None = None, shapes=None, preset: str | None = None, scale: int = 1,
                 target: str = "numba", seed: int = 0):
        super().__init__()
        if target not in codegen.TARGETS:
            raise ValueError(f"unknown target {target!r}: choose one of {', '.join(codegen.TARGETS)}")
        self.seed = seed
        self._base = self._key = None  # (text, shapes) as typed, and at the chosen scale
        self._scale = 1
        self._result: LabResult | None = None
        self._heatmap: bytes | None = None
        self.steps_done: list[str] = []
        self.step_seconds: dict[str, float] = {}  # step -> seconds it took in the last run
        self._step_started = 0.0
        self._cuda_problem = cuda_problem()

        self.preset_menu = self.preset_dropdown(PRESETS, "20em")
        self.scale_menu = W.Dropdown(options=[("×1", 1)], value=1, description="scale:",
                                      style={"description_width": "3em"}, layout=W.Layout(width="8em"))
        self.on_user_change(self.scale_menu, self.set_scale)
        self.target_menu = W.Dropdown(options=[(self._target_label(t), t) for t in codegen.TARGETS], value=target,
                                  description="target:", style={"description_width": "3.5em"},
                                  layout=W.Layout(width="25em"))
        self.on_user_change(self.target_menu, self.set_target)
        self.run_button = W.Button(description="Run", button_style="primary", icon="play",
                                    tooltip="Compile and run the gradient kernels, then check them")
        self.run_button.on_click(lambda _: self.run())

        self.function_entry, self.shapes_entry, apply = function_entries(
            lambda: self._showing or self._apply(), self._apply, "Use this function and these shapes",
            widths=("52em", "40em"))

        self._run_error = CodeMessageBox()  # what stopped the last run
        self._misfit = ""
        self._target_note = MessageBox(color="#8a5300")
        self.sizes = W.HTML()
        self.progress = W.IntProgress(min=0, max=len(STEPS), value=0, layout=W.Layout(width="16em"))
        self.status_line = W.HTML()
        self.results = W.HTML()
        self.image = W.Image(format="png", layout=W.Layout(display="none"))
        self.image_note = W.HTML()
        self.source_view = W.HTML()
        self.source_box = W.Accordion(children=[self.source_view], selected_index=None)
        self.source_box.observe(lambda _: self._show_source(), names="selected_index")

        self.children = [W.HBox([self.preset_menu, self.scale_menu, self.target_menu, self.run_button]),
                         self.function_entry, W.HBox([self.shapes_entry, apply]), self.errors,
                         self.sizes, self._target_note, W.HBox([self.progress, self.status_line]), self._run_error,
                         self.results, self.image, self.image_note, self.source_box]
        if text is None:
            if (preset or SECTION_6) not in PRESETS:
                raise ValueError(f"no preset {preset!r}; choose one of: {', '.join(PRESETS)}")
            text, shapes = PRESETS[preset or SECTION_6]
        if not self.set_function(text, shapes if shapes is not None else {}):
            raise ValueError(self.error)
        if scale != 1 and not self.set_scale(scale):
            raise ValueError(self.error)
        self.set_target(target)

    # -- Python API ---------------------------------------------------------
    @property
    def presets(self) -> dict:
        return dict(PRESETS)

    @property
    def targets(self) -> tuple[str, ...]:
        """The targets that can run here (the CUDA ones need a GPU or the simulator)."""
        return tuple(t for t in codegen.TARGETS if not (codegen.KERNEL_TARGETS[t].on_gpu and self._cuda_problem))

    @property
    def function(self) -> tab.Function | tab.Program:
        return _derivation(*self._key)[0]

    @property
    def gradients(self) -> tab.Gradients | tab.ProgramGradients:
        return _derivation(*self._key)[1]

    @property
    def shapes(self) -> dict:
        """The shapes run: those typed, times the scale."""
        return dict(self._key[1])

    @property
    def result(self) -> LabResult | None:
        return self._result

    @property
    def heatmap(self) -> bytes | None:
        """The PNG of the last run's per-element errors (None for large sizes or before a run)."""
        return self._heatmap

    @property
    def error(self) -> str:
        """The current error messages ("" if none): bad input, then what stopped the last run."""
        return "\n".join(text for text in (self.errors.text, self._run_error.text) if text)

    @property
    def target_note(self) -> str:
        """Why the chosen target cannot run here ("" if it can)."""
        return self._target_note.text

    @property
    def status(self) -> str:
        return re.sub(r"<[^>]+>", "", html.unescape(self.status_line.value))

    @property
    def scales(self) -> tuple[int, ...]:
        return tuple(value for _, value in self.scale_menu.options)

    @property
    def scale(self) -> int:
        return self._scale

    @scale.setter
    def scale(self, factor: int) -> None:
        self.set_scale(factor)

    @property
    def target(self) -> str:
        return self.target_menu.value

    @target.setter
    def target(self, name: str) -> None:
        self.set_target(name)

    @property
    def source(self) -> str:
        """The generated module of the chosen target for the function at the chosen scale."""
        return _source(*self._key, self.target)

    @property
    def show_source(self) -> bool:
        return self.source_box.selected_index == 0

    @show_source.setter
    @shows_errors
    def show_source(self, value: bool) -> None:
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"show_source must be True or False, got {shown(value)}")
        self.source_box.selected_index = 0 if value else None

    @property
    def gradient_elements(self) -> int:
        """How many gradient elements the function at the chosen scale has (all arguments together)."""
        fn = self.function
        return sum(math.prod(fn.shapes[name]) for name in fn.arguments)

    @shows_errors
    def set_function(self, text: str, shapes) -> bool:
        """Use ``text`` with ``shapes`` (a dict or its typed form) at the current scale if it fits there
        (else at ×1). On bad input the message (with its caret line) is shown inline, the last good
        function stays and the call returns False."""
        shapes = read_shapes(shapes)
        base = (function_text(text), _shape_key(shapes))
        fits, misfit = fitting_scales(*base)
        scale = self._scale if self._scale in fits else 1
        key = self._scaled_key(base, scale)
        _derivation(*key)
        self._base, self._scale, self._key = base, scale, key
        preset = next((name for name, (t, s) in PRESETS.items() if t == text and s == shapes), None)
        with self.showing():
            self.function_entry.value = text
            self.shapes_entry.value = shapes_text(shapes)
            self.preset_menu.value = preset
            self.scale_menu.options = [(f"×{f}", f) for f in fits]
            self.scale_menu.value = scale
            self._misfit = misfit
        self._changed()
        return True

    @shows_errors
    def set_scale(self, factor: int) -> bool:
        """Run the function at ``factor`` times its typed sizes (see :func:`scaled`)."""
        fits, _ = fitting_scales(*self._base)
        if isinstance(factor, bool) or not isinstance(factor, (int, np.integer)) or factor not in fits:
            with self.showing():
                self.scale_menu.value = self._scale  # the menu shows the scale still in use
            if factor in SCALES:
                problem = _misfit(*self._base, factor) or "it does not change the sizes (scalars only)"
                raise ValueError(f"scale ×{factor} does not fit this function: {problem}")
            raise ValueError(f"scale ×{shown(factor)}: choose one of {', '.join(f'×{f}' for f in fits)}")
        key = self._scaled_key(self._base, factor)
        _derivation(*key)
        self._scale, self._key = factor, key
        with self.showing():
            self.scale_menu.value = factor
        self._changed()
        return True

    @shows_errors
    def set_target(self, name: str) -> bool:
        """Choose the target; a CUDA one without a GPU (or the simulator) is explained inline (the
        source view still shows its code) and its Run reports the core's error."""
        choose(name, codegen.TARGETS, "unknown target")
        with self.showing():
            self.target_menu.value = name
        unavailable = codegen.KERNEL_TARGETS[name].on_gpu and self._cuda_problem
        self._target_note.show(f"{self._cuda_problem}. Here you can run {', '.join(self.targets)}; the source "
                               "view below still shows the CUDA module." if unavailable else "")
        self.run_button.disabled = bool(unavailable)
        self._changed()
        return True

    def run(self) -> bool:
        """Derive, generate, compile (first time only), run and time the kernels, then check them.

        Shows each step in the progress bar; on an error (a missing GPU, an
        exception from the generated code) shows it inline and returns False.
        """
        self._clear_results()
        self._run_error.show("")
        self.steps_done, self.step_seconds = [], {}
        key, target = self._key, self.target
        self.run_button.disabled = True
        self.progress.bar_style = "info"
        started = time.perf_counter()
        step = STEPS[0]
        try:
            step = self._step("derive", "deriving the gradients (Algorithm 4) and their kernel form")
            fn, grads = _derivation(*key)
            grads.simplified  # noqa: B018 -- cached; what the kernels run
            step = self._step("generate", f"generating the {target} module")
            _source(*key, target)
            args, df = _inputs(fn, self.seed)
            compile_time = None
            if (*key, target) not in _WARM:
                compiling = codegen.KERNEL_TARGETS[target].compiling  # what the wait is, where the target says
                step = self._step("compile", f"compiling the {target} kernels"
                                  + (f" ({compiling})" if compiling else "") + " …")
                t = time.perf_counter()
                compiled = _warmed(*key, target, args, df)
                compile_time = time.perf_counter() - t
            else:
                compiled = _compiled(*key, target)
                step = self._step("compile", f"{target} kernels already compiled")
            step = self._step("run", "timing the kernels")
            forward_time, forward_runs = _median_time(lambda: compiled.forward(args))
            gradients_time, gradients_runs = _median_time(lambda: compiled(args, df))
            f_kernel, g_kernel = compiled.forward(args), compiled(args, df)
            step = self._step("check", "comparing with the reference evaluator and finite differences")
            report_form = self.gradient_elements <= HEATMAP_LIMIT
            f_reference, g_reference, reference_time = _reference(*key, self.seed, report_form)
            # check_gradients on the compiled kernels: what is checked is what the kernels compute
            dot_errors = {name: float(e) for name, e in
                          tab.check_gradients(fn, args, grads=compiled, seed=self.seed).items()}
            element_errors = None
            if self.gradient_elements <= HEATMAP_LIMIT:
                step = self._step("per element", "central differences element by element")
                numeric = _numeric(*key, self.seed, target)
                element_errors = {name: np.abs(g_kernel[name] - numeric[name]) for name in fn.arguments}
        except Exception as exc:  # noqa: BLE001 -- whatever the generated code raises is shown, not raised
            self._fail(step, target, exc)
            return False
        finally:
            self.run_button.disabled = bool(codegen.KERNEL_TARGETS[target].on_gpu and self._cuda_problem)

        scale = {name: float(np.max(np.abs(g_reference[name]), initial=0.0)) for name in fn.arguments}
        self._result = LabResult(
            target=target, text=key[0], shapes=dict(key[1]),
            forward_error=float(np.max(np.abs(f_kernel - f_reference), initial=0.0)),
            errors={name: float(np.max(np.abs(g_kernel[name] - g_reference[name]), initial=0.0))
                    for name in fn.arguments},
            dot_errors=dot_errors, element_errors=element_errors,
            timings={"forward": forward_time, "gradients": gradients_time, "reference": reference_time,
                     "compile": compile_time},
            runs={"forward": forward_runs, "gradients": gradients_runs}, scale=scale,
            forward_scale=float(np.max(np.abs(f_reference), initial=0.0)), path=compiled.path,
            report_form=report_form)
        self.results.value = result_html(self._result, fn.name)
        if element_errors is not None:
            self._heatmap = error_heatmap(element_errors, "|kernel − central differences| per element",
                                          self._result.scale)
            self.image.value = self._heatmap
            self.image.layout.display = None
            self.image.layout.width = css_width(heatmap_width(len(element_errors)))
            self.image_note.value = (f"<small>The {html.escape(target)} kernels' gradients against central "
                                      "differences, element by element. "
                                      "Central differences with step 1e-6 are themselves only good to about "
                                      "10⁻¹⁰: errors at that level mean the kernel and the differences agree. "
                                      "Exact zeros are drawn at the bottom of the scale.</small>")
        else:
            self.image_note.value = (f"<small>{self.gradient_elements} gradient elements: the per-element "
                                      f"check and its heatmap are drawn up to {HEATMAP_LIMIT}.</small>")
        self.progress.value = len(STEPS)
        self.progress.bar_style = "success" if self._result.ok else "warning"
        self._end_step()  # the last step includes drawing its results
        total = time.perf_counter() - started
        steps = ", ".join(f"{name} {_seconds(t)}" for name, t in self.step_seconds.items())
        self.status_line.value = (f"<span style='margin-left:8px'>done in {_seconds(total)} ({steps}) · module "
                              f"<code style='font-size:0.85em'>{html.escape(str(compiled.path))}</code></span>")
        return True

    def prepare(self) -> GradientLab:
        """Compile the current kernels now (or load them from the disk cache), so that the first Run only runs
        and checks them: a demo server's preheated kernel does this before anyone opens the page. Returns
        the widget."""
        key, target = self._key, self.target
        if not (codegen.KERNEL_TARGETS[target].on_gpu and self._cuda_problem):
            _warmed(*key, target, *_inputs(_derivation(*key)[0], self.seed))
        return self

    # -- display --------------------------------------------------------------
    def _target_label(self, target: str) -> str:
        label = codegen.KERNEL_TARGETS[target].label
        if codegen.KERNEL_TARGETS[target].on_gpu:
            if self._cuda_problem:
                label += " — needs a GPU"
            elif cuda_simulated():
                label += " — simulator, slow"
        return label

    @staticmethod
    def _scaled_key(base: tuple, factor: int) -> tuple:
        text, shapes = scaled(base[0], dict(base[1]), factor)
        return text, _shape_key(read_shapes(shapes))  # scaled sizes, too, stay within the limit

    def _apply(self) -> None:
        self.set_function(self.function_entry.value, self.shapes_entry.value)

    def _changed(self) -> None:
        """The function, scale or target changed: show the sizes, forget the last run's results."""
        fn = self.function
        text, shapes = self._key
        sizes = shapes_text(dict(shapes))
        scaled_text = (f"<br>at ×{self._scale}: <code>{html.escape(text)}</code>"
                       if self._scale != 1 and text != self._base[0] else "")
        misfit = ""
        if self._misfit:
            first = self._misfit.splitlines()[0]
            misfit = (f"<br>Larger scales do not fit this function ({html.escape(first)}): type shapes for "
                      "other sizes.")
        n = self.gradient_elements
        detail = ("with the per-element check and heatmap" if n <= HEATMAP_LIMIT else
                  f"more than {HEATMAP_LIMIT}: no per-element check")
        inputs = "input" if isinstance(fn, tab.Program) else "argument"
        program = (f"a program of {len(fn.definitions)} definitions, reverse accumulation across them; "
                   if isinstance(fn, tab.Program) else "")
        self.sizes.value = (f"<small>Sizes run: <code>{html.escape(sizes)}</code>{scaled_text}<br>{program}{n} "
                             f"gradient elements over {len(fn.arguments)} {inputs}{'s' * (len(fn.arguments) != 1)}, "
                             f"{detail}{misfit}</small>")
        self._clear_results()
        self._run_error.show("")
        self.progress.value = 0
        self.progress.bar_style = ""
        self.status_line.value = "<span style='margin-left:8px'>press Run to compile, run and check the kernels</span>"
        self._show_source()

    def _clear_results(self) -> None:
        self._result = self._heatmap = None
        self.results.value = self.image_note.value = ""
        self.image.layout.display = "none"

    def _show_source(self) -> None:
        target = self.target
        self.source_box.set_title(0, f"generated {target} module (what the kernels run)")
        if not self.show_source:
            return
        try:
            source = self.source
        except Exception as exc:  # noqa: BLE001 -- a generator failure is shown in place of the code
            self.source_view.value = (f'<pre style="color:#b00020">{html.escape(type(exc).__name__)}: '
                                       f"{html.escape(str(exc))}</pre>")
            return
        self.source_view.value = ('<pre style="font-size:0.92em;line-height:1.35;max-height:32em;overflow:auto;'
                                   f'white-space:pre;margin:0">{html.escape(source)}</pre>')

    def _step(self, name: str, text: str) -> str:
        self._end_step()
        self._step_started = time.perf_counter()
        index = STEPS.index(name)
        self.progress.value = index
        self.status_line.value = (f"<span style='margin-left:8px'>step {index + 1} of {len(STEPS)}: "
                              f"{html.escape(text)}</span>")
        self.steps_done.append(name)
        return name

    def _end_step(self) -> None:
        """Book the time since the current step began to it (in ``step_seconds``)."""
        if self.steps_done and self.steps_done[-1] not in self.step_seconds:
            self.step_seconds[self.steps_done[-1]] = time.perf_counter() - self._step_started

    def _fail(self, step: str, target: str, exc: Exception) -> None:
        message = f"{step} ({target}) failed: {type(exc).__name__}: {exc}"
        if isinstance(exc, RuntimeError) and codegen.KERNEL_TARGETS[target].on_gpu and self._cuda_problem:
            message += f"\nChoose one of {', '.join(self.targets)} to run here."
        if len(message) > MESSAGE_CHARS:
            message = message[:MESSAGE_CHARS] + "\n…"
        self._run_error.show(message)
        self._end_step()
        self.progress.bar_style = "danger"
        self.status_line.value = f"<span style='margin-left:8px'>stopped at step {STEPS.index(step) + 1}: {step}</span>"

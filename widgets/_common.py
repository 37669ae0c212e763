"""Pieces the widgets share: the inline message box, the guard that keeps bad input inline, plots
rendered to PNG, beta sliders.

Figures are drawn with matplotlib's Agg canvas directly (no pyplot), so the
widgets leave no global figure state behind and work without a display.

Every public setter and every callback of a control goes through
:func:`shows_errors`: whatever the input, nothing is raised; the widget shows
why the input cannot be used in its error box, keeps its last good state and
the call returns False.
"""

from __future__ import annotations

import os

import ast
import functools
import io
import math
import re
from collections.abc import Iterable, Mapping

import ipywidgets as W
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator
from PIL import Image as PILImage
from traitlets import TraitError

from tensoradbook import IntegerSolutions, integer_inverse
from tensoradbook.integer.matrix import as_exact_vector, as_int, as_int_matrix, matvec, shown
from tensoradbook.integer.geometry import image_range

from .base import MessageBox, WidgetBase

# 6 x 4.5 inches at 80 dpi (480 x 360 pixels) keeps a redraw plus PNG encoding
# well inside the 100 ms an interaction may take.
FIGSIZE = (6.0, 4.5)
DPI = 80
#: The scale for a lecture hall (``set_scale(PRESENTATION_SCALE)``): a 6-inch figure is 960 pixels wide, fits a
#: 1280-pixel screen, and its 9-point labels are 20 pixels high.
PRESENTATION_SCALE = 2.0
_SCALE_ENV = "TENSORADBOOK_WIDGET_SCALE"


def _scale_from_environment() -> float:
    text = os.environ.get(_SCALE_ENV, "").strip()
    try:
        return _checked_scale(float(text)) if text else 1.0
    except ValueError as err:
        raise ValueError(f"{_SCALE_ENV}={text!r}: {err}") from None


def _checked_scale(scale: float) -> float:
    if not 0.5 <= scale <= 4:
        raise ValueError(f"the widget scale must lie between 0.5 and 4, not {scale}")
    return float(scale)


_scale = _scale_from_environment()


def set_scale(scale: float = PRESENTATION_SCALE) -> float:
    """Draw every widget made from now on ``scale`` times larger: the figure in pixels, its dpi and so its
    fonts, together (1: the book's size; :data:`PRESENTATION_SCALE` for a lecture hall; the environment
    variable ``TENSORADBOOK_WIDGET_SCALE`` sets it for a whole server). Returns the scale it replaced."""
    global _scale
    previous, _scale = _scale, _checked_scale(float(scale))
    return previous


def get_scale() -> float:
    """The scale widgets made now are drawn at (see :func:`set_scale`)."""
    return _scale


def figure_dpi(base: float = DPI) -> float:
    """The dpi a figure drawn at ``base`` dpi at scale 1 has at the current scale."""
    return base * _scale


#: The largest picture, (width, height) in pixels, that a 1280 x 800 screen shows whole beside the page's margins:
#: a figure larger at the current scale is drawn at a lower dpi (see :func:`fitting_dpi`).
MAX_PICTURE_PX = (1200, 780)


def fitting_dpi(size: tuple[float, float], dpi: float) -> float:
    """``dpi``, lowered where a figure ``size`` inches large would be larger than :data:`MAX_PICTURE_PX`."""
    return min(dpi, MAX_PICTURE_PX[0] / size[0], MAX_PICTURE_PX[1] / size[1])


def css_width(inches: float, base: float = DPI, dpi: float | None = None) -> str:
    """The CSS width that shows a figure ``inches`` wide pixel for pixel at the current scale (or at its own
    ``dpi``, one from :func:`fitting_dpi`)."""
    return f"{int(inches * (figure_dpi(base) if dpi is None else dpi))}px"
# Axes on the left (figure fractions: left, bottom, width, height); the legend
# goes to the right of them, anchored to the figure, so it never covers points
# and stays put when equal aspect makes the axes narrower.
AXES_RECT = {None: (0.11, 0.12, 0.52, 0.78), "3d": (0.0, 0.02, 0.66, 0.94)}
LEGEND = dict(loc="upper left", fontsize=9, framealpha=0.9)


# What bad input can raise in a setter: ValueError (the widgets' and the core's checks, the parser's
# ExpressionError), TypeError and ArithmeticError (a value of the wrong kind or size that reached numpy
# or matplotlib), RecursionError (a deeply nested expression), TraitError (a value a control cannot hold).
INPUT_ERRORS = (ValueError, TypeError, ArithmeticError, RecursionError, TraitError)
# JavaScript numbers hold integers exactly up to 2**53: larger values would be shown wrong by a slider.
MAX_SLIDER_INT = 2**53 - 1


def error_text(exc: BaseException) -> str:
    """The message shown for ``exc``: a ValueError of the checks is a sentence already; anything else
    says that the input could not be used and what went wrong."""
    if isinstance(exc, ValueError) and str(exc):
        return str(exc)
    return f"this input cannot be used: {type(exc).__name__}: {exc}"


def move_sliders(sliders, values) -> None:
    """Move each slider to its value, widening its range where the value lies outside it."""
    for slider, value in zip(sliders, values):
        slider.min, slider.max = min(slider.min, value), max(slider.max, value)
        slider.value = value


def shows_errors(method):
    """Make a widget's setter or callback safe for any input.

    An error of :data:`INPUT_ERRORS` is shown in the widget's ``errors`` box
    and the call returns False; a call that returns anything else clears the
    box. The wrapped methods check their input before they change the
    widget's state, so a refused input leaves the last good one shown.
    """
    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        try:
            result = method(self, *args, **kwargs)
        except INPUT_ERRORS as exc:
            self.errors.show(error_text(exc))
            return False
        if result is not False:
            self.errors.show("")
        return result
    return guarded


def choose(name, options, refusal: str) -> str:
    """``name`` checked to be one of ``options`` (names, or a dict keyed by them); the error starts
    with ``refusal`` ("no preset", "unknown target", ...)."""
    if not isinstance(name, str) or name not in options:
        raise ValueError(f"{refusal} {shown(name)}; choose one of: {', '.join(options)}")
    return name


def subscript(k: int) -> str:
    """``k`` in Unicode subscript digits: plain text lays out much faster than mathtext."""
    return "".join(chr(0x2080 + int(d)) for d in str(k))


def vector_text(values) -> str:
    """``(3)`` or ``(1, -2)``: a tuple without Python's trailing comma."""
    return "(" + ", ".join(str(v) for v in values) + ")"


def parse_matrix(text: str, what: str = "A"):
    """Read a matrix typed as ``2 4 4; -6 6 12`` (rows by ``;`` or newlines) or ``[[2, 4], [6, 8]]``.

    Returns nested lists of ints; raises ValueError saying what is wrong.
    """
    text = text.strip()
    if not text:
        raise ValueError(f"{what} is empty: type rows like  2 4 4; -6 6 12")
    if text.startswith("["):
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise ValueError(f"cannot read {text!r} as a list of rows like [[2, 4], [6, 8]]") from None
    lines = [line.strip() for line in re.split(r"[;\n]", text)]
    while lines and not lines[-1]:  # a trailing ';' ends the last row
        lines.pop()
    rows = []
    for i, line in enumerate(lines):
        if not line:
            raise ValueError(f"{what}: row {i} is empty")
        tokens = re.split(r"[,\s]+", line.strip(","))
        for j, token in enumerate(tokens):
            if not re.fullmatch(r"[+-]?[0-9]+", token):  # ASCII: int() would also read '١٢'
                raise ValueError(f"{what}: row {i}, entry {j} is {token!r}, not an integer")
        rows.append([int(token) for token in tokens])
    return rows


def matrix_text(A) -> str:
    """The typed form ``2 4 4; -6 6 12`` of a matrix, as :func:`parse_matrix` reads it."""
    return "; ".join(" ".join(str(v) for v in row) for row in A.tolist())


class SliderSteps:
    """``step`` (clamped to ``0 .. n_steps - 1``), ``forward()`` and ``back()`` for a widget whose
    ``slider`` shows the step, whose ``n_steps`` says how many there are and whose ``errors`` box
    says why a step is refused."""

    @property
    def step(self) -> int:
        return self.slider.value

    @step.setter
    @shows_errors
    def step(self, value: int) -> None:
        self.slider.value = max(0, min(self.n_steps - 1, as_int(value, "step")))

    def forward(self) -> None:
        self.step = self.step + 1

    def back(self) -> None:
        self.step = self.step - 1

    def make_step_controls(self, tips: dict[str, str]) -> None:
        """``buttons`` First, Back, Forward and Last (``tips``: label -> tooltip) and the step ``slider``;
        either shows the step with the widget's ``_show``."""
        self.buttons = {}
        for label, tip in tips.items():
            button = W.Button(description=label, tooltip=tip, layout=W.Layout(width="6em"))
            button.on_click(lambda _, label=label: self.jump(label))
            self.buttons[label] = button
        self.slider = W.IntSlider(min=0, max=0, description="step", continuous_update=True)
        self.slider.observe(lambda _: self._show(), names="value")

    def jump(self, label: str) -> None:
        """What the step button ``label`` does."""
        self.step = {"First": 0, "Back": self.step - 1, "Forward": self.step + 1, "Last": self.n_steps - 1}[label]

    def enable_step_buttons(self) -> None:
        """Grey out the buttons that would not move: First and Back at the start, Forward and Last at the end."""
        at_start, at_end = self.step == 0, self.step == self.n_steps - 1
        for label, disabled in (("First", at_start), ("Back", at_start), ("Forward", at_end), ("Last", at_end)):
            self.buttons[label].disabled = disabled


class Plot:
    """A matplotlib figure (Agg canvas, no pyplot) with one axes, rendered to PNG bytes.

    Laying out the legend's text is a large share of a redraw, and the legend
    sits outside the axes, so each distinct legend is drawn once, its pixels
    are kept, and later frames are drawn without it and get those pixels pasted
    back (matplotlib's blitting API): this keeps an interaction well inside
    100 ms.
    """

    def __init__(self, projection: str | None = None):
        self.fig = Figure(figsize=FIGSIZE, dpi=figure_dpi())
        self.canvas = FigureCanvasAgg(self.fig)
        left, _, width, _ = rect = AXES_RECT[projection]
        self.ax = self.fig.add_axes(rect, projection=projection)
        self._legend_anchor = (left + width + 0.02, 0.9)
        axes = [self.ax.xaxis, self.ax.yaxis] + ([self.ax.zaxis] if projection == "3d" else [])
        for axis in axes:  # indices are integers; few ticks keep the redraw quick
            axis.set_major_locator(MaxNLocator(nbins=7, integer=True))
        self.ax.tick_params(labelsize=9)
        self._legends: dict[tuple[str, ...], object] = {}

    def png(self, handles, labels) -> bytes:
        """Draw the figure with this legend and return it as PNG bytes."""
        key = tuple(labels)
        if key not in self._legends:
            legend = self.fig.legend(handles, labels, bbox_to_anchor=self._legend_anchor, **LEGEND)
            self.canvas.draw()
            self._legends[key] = self.canvas.copy_from_bbox(legend.get_window_extent().padded(2))
            legend.remove()
        self.canvas.draw()
        self.canvas.restore_region(self._legends[key])
        image = PILImage.frombuffer("RGBA", self.canvas.get_width_height(), self.canvas.buffer_rgba(),
                                    "raw", "RGBA", 0, 1).convert("RGB")
        buffer = io.BytesIO()
        # Fast zlib level: the plots are flat colours, so the files stay small (~30 kB) anyway.
        image.save(buffer, format="png", compress_level=1)
        return buffer.getvalue()


def check_shape(shape, n_cols: int, what: str) -> tuple[int, ...]:
    """The index box's shape as a tuple of positive ints, one per column of A."""
    values = as_exact_vector(shape, n_cols, f"{what}: shape")
    for k, n in enumerate(values):
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"{what}: shape entry {k} is {n}; sizes must be positive integers")
    return tuple(values)


class BetaExplorer(WidgetBase, W.VBox):
    """Base of the widgets that explore ``A alpha = beta`` over a box (report sec. 5.1).

    Holds ``A``, the box ``0 <= alpha < shape``, the integer inverse (eqs.
    16-19), the kernel basis in use (the Smith normal form's unless the student
    types another, see :meth:`set_kernel`), one IntSlider per entry of ``beta``
    spanning the image of the box, the error and status lines and the picture.
    Subclasses build their view, then call :meth:`_start`, and redraw in
    :meth:`_update` whenever ``beta`` or the kernel basis changes. A view whose
    work grows with the box sets ``MAX_BOX_POINTS``: larger boxes are refused.
    """

    MAX_BOX_POINTS: int | None = None

    def __init__(self, A, shape, what: str, kernel=None):
        super().__init__()
        self._what = what
        self._A = as_int_matrix(A, f"{what}: A")
        if self._A.shape[0] == 0 or self._A.shape[1] == 0:
            raise ValueError(f"{what}: A is {self._A.shape[0]} x {self._A.shape[1]}; it needs rows and columns")
        self.shape = check_shape(shape, self._A.shape[1], what)
        points = math.prod(self.shape)
        if self.MAX_BOX_POINTS is not None and points > self.MAX_BOX_POINTS:
            raise ValueError(f"{what} draws every point of the box: {' x '.join(shown(n) for n in self.shape)} "
                             f"has {shown(points)} points, at most {self.MAX_BOX_POINTS:,} can be drawn (e.g. "
                             "100 x 100 or 21 x 21 x 21)")
        self._inverse = integer_inverse(self._A)
        self._kernel = self._inverse.kernel if kernel is None else self._drawable_basis(kernel)
        self._beta: tuple[int, ...] = ()
        self.status_line = MessageBox(color="black")
        self.image = W.Image(format="png", layout=W.Layout(width=css_width(FIGSIZE[0])))
        self._ranges = image_range(self._A, self.shape)
        self.sliders = [W.IntSlider(min=lo, max=hi, value=lo, description=f"β{subscript(k)}",
                                     continuous_update=True, style={"description_width": "2em"})
                         for k, (lo, hi) in enumerate(self._ranges)]
        for slider in self.sliders:
            slider.observe(self._on_slider, names="value")
        self._slider_box = W.HBox(self.sliders)
        # Any lattice basis K W (W unimodular) of the kernel gives the same alphas, other z (figs. 3-4).
        self.kernel_entry = W.Text(value=matrix_text(self._kernel), description="K =", continuous_update=False,
                                    style={"description_width": "2em"}, layout=W.Layout(width="22em"))
        # The text box reports on Enter or when it loses focus (continuous_update=False).
        self.kernel_entry.observe(lambda change: self._filling_kernel or self.set_kernel(change["new"]),
                                   names="value")
        self._filling_kernel = False  # set while the entry shows a basis set from Python
        apply = W.Button(description="Use this kernel basis", layout=W.Layout(width="auto"))
        apply.on_click(lambda _: self.set_kernel(self.kernel_entry.value))
        self.kernel_box = W.HBox([self.kernel_entry, apply])

    def _start(self, beta) -> None:
        """Show the initial beta: the one given, else ``A`` times the box's middle (which has solutions)."""
        if beta is None:
            beta = matvec(self._A, [n // 2 for n in self.shape])
        if not self.set_beta(beta):
            raise ValueError(self.error)

    @property
    def beta(self) -> tuple[int, ...]:
        return self._beta

    @beta.setter
    def beta(self, value) -> None:
        self.set_beta(value)

    @property
    def beta_range(self) -> list[tuple[int, int]]:
        """Per entry of beta, ``(min, max)`` of ``A alpha`` over the box: the sliders' ranges."""
        return list(self._ranges)

    @property
    def status(self) -> str:
        """What the current beta gives, in plain words."""
        return self.status_line.text

    @shows_errors
    def set_beta(self, beta) -> bool:
        """Show ``beta``; on bad input show the error inline, keep the old beta and return False."""
        values = as_exact_vector(beta, self._A.shape[0], f"{self._what}: beta")
        for k, (v, (lo, hi)) in enumerate(zip(values, self._ranges)):
            if not isinstance(v, int):
                raise ValueError(f"{self._what}: beta entry {k} is {v}, not an integer")
            if abs(v) > MAX_SLIDER_INT:
                raise ValueError(f"{self._what}: beta entry {k} is {shown(v)}; the sliders hold integers up to "
                                 f"2**53 - 1 in size (A alpha takes {lo} .. {hi} over the box)")
        with self.showing():
            # A beta outside the box's image has no solution in it, but may be asked for.
            move_sliders(self.sliders, values)
        self._beta = tuple(values)
        self._update()
        return True

    @property
    def kernel(self):
        """The kernel basis K in use (columns), an object array of ints."""
        return self._kernel

    @shows_errors
    def set_kernel(self, K) -> bool:
        """Use another lattice basis of the kernel, typed (``2 2; 1 0; 0 1``) or as a matrix.

        The core checks it (``A K = 0`` and a unimodular change of basis); bad
        input is shown inline, the old basis kept, and False returned.
        """
        try:
            basis = self._drawable_basis(parse_matrix(K, "K") if isinstance(K, str) else K)
        except ValueError as exc:
            raise ValueError(f"{self._what}: {exc}") from None
        self._kernel = basis
        self._filling_kernel = True
        self.kernel_entry.value = matrix_text(basis)
        self._filling_kernel = False
        self._update()
        return True

    def _drawable_basis(self, K):
        """``K`` checked by the core, and small enough to draw: the pictures place its columns as floats."""
        basis = self._inverse.lattice_basis(K)
        largest = max((abs(int(v)) for v in basis.flat), default=0)
        if largest > MAX_SLIDER_INT:
            raise ValueError(f"the basis has an entry of size {shown(largest)}; the pictures draw entries up to "
                             "2**53 - 1 in size exactly (a smaller basis K W gives the same lattice)")
        return basis

    def _on_slider(self, change) -> None:
        if not self._showing:
            self.set_beta([slider.value for slider in self.sliders])

    def _update(self) -> None:
        raise NotImplementedError

    def _solve(self):
        """``(BoxedSolutions, None)`` for the current beta, or ``(None, reason)`` (eqs. 16-17, 42)."""
        solutions = self._inverse.solve(self._beta)
        if solutions is None:
            return None, self._inverse.solvability(self._beta).reason
        return IntegerSolutions(solutions.particular, self._kernel).within(self.shape), None


def parse_shapes(text: str) -> dict[str, tuple[int, ...]]:
    """Read shapes typed as ``f=3x4, a=3x5, d=8`` (``x=()`` for a scalar) into ``{"f": (3, 4), ...}``.

    Raises ValueError saying which item is wrong; the parser checks the sizes against the function.
    """
    shapes: dict[str, tuple[int, ...]] = {}
    for item in (part.strip() for part in re.split(r"[,;\n]", text)):
        if not item:
            continue
        match = re.fullmatch(r"([A-Za-z_]\w*)\s*=\s*(\(\s*\)|\d+(?:\s*[x×*]\s*\d+)*)", item, re.ASCII)
        if match is None:
            raise ValueError(f"shapes: cannot read {item!r}; write NAME=3x4 (or NAME=() for a scalar), "
                             "separated by commas")
        name, sizes = match.groups()
        if name in shapes:
            raise ValueError(f"shapes: {name} is given twice")
        shapes[name] = () if sizes.startswith("(") else tuple(int(n) for n in re.split(r"\s*[x×*]\s*", sizes))
    return shapes


# Elements of one tensor that the function widgets evaluate (the check's random inputs, the kernels'
# arrays): 80 MB of float64. Larger shapes are refused, as their arrays may not fit in memory.
MAX_ELEMENTS = 10**7


def read_shapes(shapes) -> dict[str, tuple[int, ...]]:
    """Shapes typed (see :func:`parse_shapes`) or given as a dict ``name -> sizes``, checked: sizes are
    positive integers and no tensor has more than :data:`MAX_ELEMENTS` elements."""
    if isinstance(shapes, str):
        shapes = parse_shapes(shapes)
    elif not isinstance(shapes, Mapping):
        raise ValueError(f"shapes must be a dict like {{'f': (3, 4)}} or text like f=3x4, got {shown(shapes)}")
    checked: dict[str, tuple[int, ...]] = {}
    for name, shape in shapes.items():
        if not isinstance(name, str):
            raise ValueError(f"shapes: the name {shown(name)} is not text")
        if isinstance(shape, (str, bytes)) or not isinstance(shape, Iterable):
            raise ValueError(f"shapes: {name} is {shown(shape)}; give its sizes like (3, 4), or () for a scalar")
        sizes = tuple(as_int(n, f"shapes: a size of {name}", minimum=1) for n in shape)
        if math.prod(sizes) > MAX_ELEMENTS:
            raise ValueError(f"shapes: {name} has {shown(math.prod(sizes))} elements; these views evaluate the "
                             f"function, so a tensor may have at most {MAX_ELEMENTS:,}")
        checked[name] = sizes
    return checked


def function_entries(on_edit, on_apply, apply_tooltip: str, widths=("48em", "36em"), label: str = "f:"):
    """The boxes for a function's (or a program's) text and its shapes, and an Apply button.

    Both boxes call ``on_edit()`` when they lose focus (``continuous_update=False``), the shapes box
    also on Enter; in the text box Enter starts a new line, as a program has one definition per line,
    and the box grows to show every line. The button calls ``on_apply()``.
    """
    function = W.Textarea(description=label, rows=1, continuous_update=False, layout=W.Layout(width=widths[0]))
    function.observe(lambda change: setattr(function, "rows", max(1, change["new"].count("\n") + 1)), names="value")
    shapes = W.Text(description="shapes:", placeholder="f=3x4, a=3x5, d=8   (x=() for a scalar)",
                    continuous_update=False, layout=W.Layout(width=widths[1]))
    for entry in (function, shapes):
        entry.observe(lambda _: on_edit(), names="value")
    apply = W.Button(description="Apply", tooltip=apply_tooltip)
    apply.on_click(lambda _: on_apply())
    return function, shapes, apply


def shapes_text(shapes) -> str:
    """The typed form ``f=3x4, d=8, s=()`` of a shapes dict, as :func:`parse_shapes` reads it."""
    return ", ".join(f"{name}={'x'.join(str(n) for n in shape) or '()'}" for name, shape in shapes.items())


def canvas_png(canvas: FigureCanvasAgg) -> bytes:
    """The canvas's pixels as they stand (no redraw, so blitted artists stay) as PNG bytes."""
    image = PILImage.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(),
                                "raw", "RGBA", 0, 1).convert("RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="png", compress_level=1)  # fast zlib level: the pictures are flat colours
    return buffer.getvalue()


_LEGEND_PIXELS: dict[tuple, object] = {}


def legend_pixels(entries, dpi: int, **options):
    """The pixels (an RGBA array) of a legend with these ``(handle, label)`` entries, drawn once.

    Laying out a legend's text costs tens of milliseconds; a picture whose
    size changes with its content cannot reuse a legend's place the way
    :class:`Plot` does, but it can paste these pixels with ``Figure.figimage``.
    """
    import numpy as np

    key = (tuple(label for _, label in entries), dpi, tuple(sorted(options.items())))
    if key not in _LEGEND_PIXELS:
        figure = Figure(figsize=(10, 2), dpi=dpi)
        canvas = FigureCanvasAgg(figure)
        legend = figure.legend(*zip(*entries), loc="center", **options)
        canvas.draw()
        box = legend.get_window_extent().padded(2)
        pixels = np.asarray(canvas.buffer_rgba())
        height = pixels.shape[0]  # window coordinates count from the bottom, array rows from the top
        _LEGEND_PIXELS[key] = pixels[int(height - box.y1):int(height - box.y0), int(box.x0):int(box.x1)].copy()
    return _LEGEND_PIXELS[key]

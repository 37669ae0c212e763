"""Widgets for inverse accumulation mode (Pearlmutter & Siskind, arXiv 2411.18786).

* :class:`StepInverse` -- one binary step ``x1 <- h(x1, x2)`` through its
  partials ``a`` and ``b``: the step Jacobian ``J = [[a, b], [0, 1]]`` (eq.
  2.5aa), ``J^T``, ``J^-1 = [[1/a, -b/a], [0, 1]]`` (eq. 2.6f) and ``J^-T``,
  their sparsity, the four flow graphs of Fig. 1, and what happens as ``a``
  approaches 0 (sec. 2: a step is invertible iff ``a != 0``).
* :class:`RegisterMachine` -- the program of Fig. 2 (``r1 <- p(r1, r2); r3 <-
  q(r1, r3)``) swept in each of the four modes (eqs. 2.3a/b, 2.4a/b) one step
  at a time, with the registers, the derivative registers and the tape.
* :class:`LumpExplorer` -- a program with temporaries cut into lumps along a
  topological order of its vertices (sec. 3, Fig. 4): live values per cut,
  the lumps and their blocks ``A``, ``B`` (eqs. 2.6g/h).
* :class:`NewtonDemo` -- Newton's method for ``F(x) = 0`` with one
  reverse-inverse sweep per iteration (sec. 1) against Newton with a
  finite-difference Jacobian, with a convergence plot.

The sweeps, lumps and Newton iterations come from :mod:`tensoradbook.inverse`;
the widgets draw them. Two things are computed here: the closed forms of eq.
2.6f along the ``a`` axis (the curves of the ``a -> 0`` plot, whose markers
are the core's values), and the baseline :func:`tensoradbook.inverse.finite_difference_newton`.
"""

from __future__ import annotations

import html
import math
import numbers as _numbers  # numbers() below formats vectors
import re

import ipywidgets as W
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Patch, Rectangle
from matplotlib.ticker import MaxNLocator, NullLocator

from tensoradbook import inverse as ia
from tensoradbook.integer.matrix import as_int, shown
from tensoradbook.inverse import examples

from ._common import DPI, FIGSIZE, MessageBox, SliderSteps, canvas_png, choose, move_sliders, shows_errors

BLUE, BLUE_FILL = "#1f5fa8", "#dbe9f6"
ORANGE = "#e07b00"
RED = "#c0262d"
GREY = "#9a9a9a"
_TABLE = "style='border-collapse:collapse;font-family:monospace;font-size:13px'"
_CELL = "style='padding:2px 10px;border-bottom:1px solid #ddd;text-align:right'"


def number(value: float) -> str:
    """A number in at most 4 significant digits, ``-0`` shown as ``0``."""
    if not math.isfinite(value):
        return str(value)
    text = f"{value:.4g}"
    return "0" if text == "-0" else text


def numbers(values) -> str:
    return "(" + ", ".join(number(float(v)) for v in values) + ")"


# A number as typed: ASCII digits (float() would also read '١٢', '1_0' and 'nan').
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def parse_vector(text, n: int, what: str) -> np.ndarray:
    """``n`` numbers typed as ``2, 3, 5`` (or spaces), or given as a sequence; ValueError says what is wrong."""
    if isinstance(text, str):
        tokens = [t for t in re.split(r"[,;\s()\[\]]+", text) if t]
        values = []
        for k, token in enumerate(tokens):
            if not _NUMBER.fullmatch(token):
                raise ValueError(f"{what}: entry {k} is {token!r}, not a number")
            values.append(float(token))
    else:
        try:
            values = [float(v) for v in text]
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"{what}: expected {n} finite numbers, got {shown(text)}") from None
    if len(values) != n:
        raise ValueError(f"{what}: expected {n} numbers (one per register), got {len(values)}")
    bad = [k for k, v in enumerate(values) if not math.isfinite(v)]
    if bad:
        raise ValueError(f"{what}: entry {bad[0]} is {values[bad[0]]}, not a finite number")
    return np.array(values)


def blit_png(canvas: FigureCanvasAgg, background, artists) -> bytes:
    """Restore ``background``, draw ``artists`` on it once (they are removed again) and return the PNG.

    The static parts of a picture (axes, nodes, legend) are drawn once and kept
    as pixels (matplotlib's blitting): an interaction redraws only what changed,
    well inside 100 ms.
    """
    canvas.restore_region(background)
    for artist in artists:
        (artist.axes or canvas.figure).draw_artist(artist)
        artist.remove()
    return canvas_png(canvas)


# ----------------------------------------------------------------------------------------------
# StepInverse: one binary step and the four flow graphs of Fig. 1.

#: The five panels of Fig. 1: title, node labels (inputs at the bottom, outputs on top), whether the
#: flow goes up (from the bottom row) and the edges (from, to, which label) between the rows.
_FIG1 = (
    ("(a) primal step", ("x₁", "x₂"), ("y₁", "y₂"), True, ((0, 0, "f"), (1, 0, "f"), (1, 1, ""))),
    ("(b) forward  ẏ = J ẋ", ("ẋ₁", "ẋ₂"), ("ẏ₁", "ẏ₂"), True, ((0, 0, "a"), (1, 0, "b"), (1, 1, ""))),
    ("(c) reverse  x̄ = Jᵀ ȳ", ("x̄₁", "x̄₂"), ("ȳ₁", "ȳ₂"), False, ((0, 0, "a"), (0, 1, "b"), (1, 1, ""))),
    ("(d) fwd inverse  ȳ* = J⁻ᵀ x̄*", ("x̄*₁", "x̄*₂"), ("ȳ*₁", "ȳ*₂"), True,
     ((0, 0, "1/a"), (0, 1, "−b/a"), (1, 1, ""))),
    ("(e) rev inverse  ẋ* = J⁻¹ ẏ*", ("ẋ*₁", "ẋ*₂"), ("ẏ*₁", "ẏ*₂"), False,
     ((0, 0, "1/a"), (1, 0, "−b/a"), (1, 1, ""))),
)
_PANEL_WIDTH, _FIG1_HEIGHT, FIG1_DPI = 2.3, 3.1, 72
_FIG1_X, _FIG1_Y = (-0.9, 1.45), (-0.35, 1.35)  # data limits of a panel; nodes sit at x = 0, 1 and y = 0, 1

#: What the a -> 0 plot shows: curve label, style.
_LIMIT_CURVES = (("|J⁻¹₁₁| = 1/|a|", "#1f77b4", "-"), ("|J⁻¹₁₂| = |b/a|", "#2ca02c", "--"),
                 ("cond₂ J", "#d62728", "-"))
_LIMIT_RANGE, _LIMIT_FLOOR, _LIMIT_CEILING = 2.0, 1e-2, 1e4
# Partials up to 1e100 in size, and a = 0 or |a| >= 1e-100: then 1/a, b/a and cond J stay finite.
PARTIAL_LIMIT = 1e100


def _partial(value, name: str) -> float:
    """A partial checked to be a number at most :data:`PARTIAL_LIMIT` in size; ``a`` is 0 or at least
    ``1 / PARTIAL_LIMIT`` in size."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, _numbers.Real):
        raise ValueError(f"{name} must be a number, got {shown(value)}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {shown(value)}")
    if abs(number) > PARTIAL_LIMIT or (name == "a" and 0 < abs(number) < 1 / PARTIAL_LIMIT):
        smallest = " (a may also be 0)" if name == "a" else ""
        raise ValueError(f"{name} is {shown(value)}; this view takes partials between 1e-100 and 1e100 in size"
                         f"{smallest}, so that 1/a and b/a stay finite")
    return number


def _linear_step(a: float, b: float):
    """The step ``x[0] = a x[0] + b x[1]``: its partials are ``a`` and ``b`` at every point."""
    def step(x):
        x[0] = a * x[0] + b * x[1]
    return step


def _columns(sweep, program, x, n: int) -> np.ndarray:
    """The matrix whose column ``i`` is ``sweep(program, x, e_i)``."""
    eye = np.eye(n)
    return np.column_stack([sweep(program, x, eye[i]) for i in range(n)])


def _matrix_latex(name: str, matrix, pattern) -> str:
    """``name = (matrix)`` in LaTeX; entries outside the structural ``pattern`` are grey."""
    rows = []
    for i, row in enumerate(matrix):
        cells = [number(float(v)) if pattern[i][j] else r"\color{#aaa}{0}" for j, v in enumerate(row)]
        rows.append(" & ".join(cells))
    return name + r" = \begin{pmatrix}" + r" \\ ".join(rows) + r"\end{pmatrix}"


class StepInverse(W.VBox):
    """One binary step ``x1 <- h(x1, x2)`` through its partials ``a = dh/dx1``, ``b = dh/dx2`` (Fig. 1).

    The matrices are computed by the core's four sweeps on the step
    ``x[0] = a x[0] + b x[1]`` (whose partials are ``a`` and ``b``), column by
    column on unit vectors.

    Python API: ``a``, ``b`` (read/write), ``set_partials(a, b)`` (False, with
    the message shown, on bad input), ``matrices`` (``"J"``, ``"J^T"``,
    ``"J^-1"``, ``"J^-T"`` -> 2 x 2 arrays; the inverses are None when ``a =
    0``), ``condition`` (``cond_2 J``, inf when singular), ``error`` (bad
    input) and ``status`` (what the step does now, in words).
    """

    def __init__(self, a: float = 1.5, b: float = 1.0):
        super().__init__()
        self._a = self._b = None
        self._matrices: dict = {}
        self._errors = MessageBox()
        self._status = MessageBox(color="black")
        self._sliders = {}
        for name, (low, high, step) in (("a", (-_LIMIT_RANGE, _LIMIT_RANGE, 0.01)), ("b", (-2.0, 2.0, 0.05))):
            slider = W.FloatSlider(min=low, max=high, step=step, value=0.0, description=name,
                                   readout_format=".2f", continuous_update=True,
                                   style={"description_width": "1.5em"}, layout=W.Layout(width="26em"))
            slider.observe(self._on_slider, names="value")
            self._sliders[name] = slider
        self._quiet = False  # set while both sliders move for one set_partials
        self._latex = W.HTMLMath()
        self._graphs = W.Image(format="png", layout=W.Layout(width=f"{int(5 * _PANEL_WIDTH * FIG1_DPI)}px"))
        self._limit = W.Image(format="png", layout=W.Layout(width=f"{int(6.0 * 80)}px"))
        self._start_graphs()
        self._start_limit_plot()
        self.children = [W.HBox(list(self._sliders.values())), self._errors, self._status, self._latex,
                         self._graphs, self._limit]
        if not self.set_partials(a, b):
            raise ValueError(self.error)

    # -- Python API ---------------------------------------------------------------------------
    @property
    def a(self) -> float:
        return self._a

    @a.setter
    def a(self, value) -> None:
        self.set_partials(value, self._b)

    @property
    def b(self) -> float:
        return self._b

    @b.setter
    def b(self, value) -> None:
        self.set_partials(self._a, value)

    @property
    def matrices(self) -> dict:
        return dict(self._matrices)

    @property
    def condition(self) -> float:
        return float(np.linalg.cond(self._matrices["J"])) if self._matrices["J^-1"] is not None else math.inf

    @property
    def error(self) -> str:
        return self._errors.text

    @property
    def status(self) -> str:
        return self._status.text

    @shows_errors
    def set_partials(self, a, b) -> bool:
        """Show the step with partials ``a`` and ``b``; on bad input show why, keep the old step, return False."""
        values = [_partial(a, "a"), _partial(b, "b")]
        self._a, self._b = values
        self._quiet = True
        try:
            move_sliders([self._sliders["a"], self._sliders["b"]], values)
        finally:
            self._quiet = False
        self._update()
        return True

    # -- computing (the core) and drawing -------------------------------------------------------
    def _on_slider(self, _) -> None:
        if not self._quiet:
            self.set_partials(self._sliders["a"].value, self._sliders["b"].value)

    def _update(self) -> None:
        a, b = self._a, self._b
        program = ia.trace(_linear_step(a, b), n=2)
        x = np.ones(2)  # the step is linear: its Jacobian is the same everywhere
        matrices = {"J": ia.jacobian(program, x), "J^T": _columns(ia.vjp, program, x, 2)}
        try:
            matrices["J^-1"] = _columns(ia.reverse_inverse, program, x, 2)
            matrices["J^-T"] = _columns(ia.forward_inverse, program, x, 2)
            singular = None
        except ValueError as exc:  # a = 0: the core names the step and its zero diagonal partial
            matrices["J^-1"] = matrices["J^-T"] = None
            singular = str(exc)
        self._matrices = matrices
        self._status.show(self._describe(singular))
        self._latex.value = self._matrices_html(singular)
        self._graphs.value = self._draw_graphs()
        self._limit.value = self._draw_limit()

    def _describe(self, singular) -> str:
        a = self._a
        if singular is not None:
            return (f"a = 0: det J = a = 0, so the step is not invertible and neither inverse mode can pass it "
                    f"(the core says: {singular}). x₁ is lost: y₁ = b x₂ depends on x₂ alone.")
        inverse = self._matrices["J^-1"]
        return (f"det J = a = {number(a)}. J⁻¹ keeps the sparsity of J, with 1/a = {number(inverse[0, 0])} and "
                f"−b/a = {number(inverse[0, 1])} where J has a and b; cond₂ J = {number(self.condition)}. "
                f"As a → 0 both grow like 1/a: the inverse sweeps divide by a.")

    def _matrices_html(self, singular) -> str:
        upper, lower = ((1, 1), (0, 1)), ((1, 0), (1, 1))  # structural non-zeros of J, J^-1 and of J^T, J^-T
        parts = [_matrix_latex(r"J", self._matrices["J"], upper),
                 _matrix_latex(r"J^{\mathsf{T}}", self._matrices["J^T"], lower)]
        if singular is None:
            parts += [_matrix_latex(r"J^{-1}", self._matrices["J^-1"], upper),
                      _matrix_latex(r"J^{-\mathsf{T}}", self._matrices["J^-T"], lower)]
        else:
            parts += [r"J^{-1},\ J^{-\mathsf{T}}\ \text{do not exist } (a = 0)"]
        return ("$$" + r" \qquad ".join(parts) + "$$"
                "<div>Sparsity: J and J⁻¹ are non-zero only on the diagonal and at (1, 2); Jᵀ and J⁻ᵀ only on "
                "the diagonal and at (2, 1). The inverse has the pattern of the matrix itself (eq. 2.6f), so "
                "an inverse sweep does the same arithmetic as a forward or reverse one.</div>")

    # Fig. 1: nodes, arrows and titles are drawn once; an interaction draws the edge labels.
    def _start_graphs(self) -> None:
        self._fig1 = Figure(figsize=(5 * _PANEL_WIDTH, _FIG1_HEIGHT), dpi=FIG1_DPI)
        self._fig1_canvas = FigureCanvasAgg(self._fig1)
        self._fig1_axes = []
        for k, (title, bottom, top, up, edges) in enumerate(_FIG1):
            ax = self._fig1.add_axes((k / 5 + 0.005, 0.1, 0.19, 0.78))
            ax.set_xlim(*_FIG1_X)
            ax.set_ylim(*_FIG1_Y)
            ax.set_axis_off()
            # a plain text, not set_title: placing a title measures the (hidden) tick labels, which is slow
            ax.text(0.5, 1.02, title, transform=ax.transAxes, ha="center", va="bottom", fontsize=10.5)
            fan_in = [sum(1 for e in edges if e[1] == j) > 1 for j in range(2)]
            for i, j, _ in edges:
                start, end = ((i, 0), (j, 1)) if up else ((i, 1), (j, 0))
                ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=13, shrinkA=15,
                                             shrinkB=15, color=BLUE, linewidth=1.4))
            for row, labels in ((0, bottom), (1, top)):
                for column, label in enumerate(labels):
                    adds = fan_in[column] and row == (1 if up else 0)
                    ax.text(column, row, label, ha="center", va="center", fontsize=11, zorder=3,
                            bbox=dict(boxstyle="circle,pad=0.25", facecolor=BLUE_FILL,
                                      edgecolor=ORANGE if adds else BLUE, linewidth=2.6 if adds else 1.2))
            self._fig1_axes.append(ax)
        self._fig1.text(0.5, 0.03, "orange ring: fan-in, where the sweep adds;  unlabelled edges carry 1",
                        ha="center", fontsize=10, color="0.3")
        self._fig1_canvas.draw()
        self._fig1_background = self._fig1_canvas.copy_from_bbox(self._fig1.bbox)

    def _draw_graphs(self) -> bytes:
        a, b = self._a, self._b
        values = {"a": a, "b": b}
        if a != 0:
            values.update({"1/a": 1 / a, "−b/a": -b / a})
        artists = []
        for ax, (_, _, _, _, edges) in zip(self._fig1_axes, _FIG1):
            for i, j, symbol in edges:
                if not symbol or symbol == "f":
                    continue
                # A vertical edge's label to its left, the diagonal's on it, in two lines to stay narrow.
                text = f"{symbol}{' ' if i == j else chr(10)}= {number(values[symbol])}" if symbol in values else symbol
                x, align = (i - 0.07, "right") if i == j else (0.5, "center")
                artists.append(ax.text(x, 0.5, text, ha=align, va="center", fontsize=9.5, zorder=4,
                                       bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none",
                                                 alpha=0.9)))
        if a == 0:
            for ax in self._fig1_axes[3:]:
                artists.append(ax.add_patch(Rectangle((_FIG1_X[0], _FIG1_Y[0]), _FIG1_X[1] - _FIG1_X[0],
                                                      _FIG1_Y[1] - _FIG1_Y[0], facecolor="white", alpha=0.75,
                                                      edgecolor="none", zorder=5)))
                artists.append(ax.text(0.5, 0.5, "a = 0:\nno inverse", ha="center", va="center", fontsize=12,
                                       color=RED, fontweight="bold", zorder=6))
        return blit_png(self._fig1_canvas, self._fig1_background, artists)

    # What happens as a -> 0: the entries of J^-1 and the condition number against a.
    def _start_limit_plot(self) -> None:
        self._limit_fig = Figure(figsize=(6.0, 3.4), dpi=80)
        self._limit_canvas = FigureCanvasAgg(self._limit_fig)
        ax = self._limit_ax = self._limit_fig.add_axes((0.11, 0.15, 0.55, 0.74))
        ax.set_xlim(-_LIMIT_RANGE, _LIMIT_RANGE)
        ax.set_ylim(_LIMIT_FLOOR, _LIMIT_CEILING)
        ax.set_yscale("log")
        ax.yaxis.set_minor_locator(NullLocator())  # minor ticks of a log axis are slow to draw
        ax.set_xlabel("diagonal partial a", fontsize=10)
        ax.set_ylabel("size", fontsize=10)
        ax.set_title("as a → 0, J⁻¹ blows up", fontsize=11)
        ax.tick_params(labelsize=9)
        ax.grid(True, which="major", alpha=0.3)
        handles = [Line2D([], [], color=color, linestyle=style, linewidth=1.8) for _, color, style in _LIMIT_CURVES]
        handles.append(Line2D([], [], color="0.3", linestyle=":", linewidth=1.2))
        self._limit_fig.legend(handles, [label for label, _, _ in _LIMIT_CURVES] + ["current a"],
                               loc="upper left", bbox_to_anchor=(0.68, 0.89), fontsize=9, framealpha=0.9)
        self._limit_canvas.draw()
        self._limit_background = self._limit_canvas.copy_from_bbox(self._limit_fig.bbox)
        self._grid = np.linspace(-_LIMIT_RANGE, _LIMIT_RANGE, 400)  # even: a = 0 is not on it

    def _draw_limit(self) -> bytes:
        ax, a, b, grid = self._limit_ax, self._a, self._b, self._grid
        # The closed forms of eq. 2.6f along the axis; the markers are the core's values at this a.
        stack = np.zeros((len(grid), 2, 2))
        stack[:, 0, 0], stack[:, 0, 1], stack[:, 1, 1] = grid, b, 1.0
        curves = (1 / np.abs(grid), np.abs(b / grid), np.linalg.cond(stack))
        artists = [ax.axvline(a, color="0.3", linestyle=":", linewidth=1.2)]
        inverse = self._matrices["J^-1"]
        here = (None if inverse is None else
                (abs(inverse[0, 0]), abs(inverse[0, 1]), self.condition))
        for k, ((_, color, style), curve) in enumerate(zip(_LIMIT_CURVES, curves)):
            artists += ax.plot(grid, np.clip(curve, _LIMIT_FLOOR / 2, _LIMIT_CEILING * 2), color=color,
                               linestyle=style, linewidth=1.8)
            if here is not None and _LIMIT_FLOOR <= here[k] <= _LIMIT_CEILING:
                artists += ax.plot([a], [here[k]], "o", color=color, markersize=6, markeredgecolor="black")
        return blit_png(self._limit_canvas, self._limit_background, artists)


# ----------------------------------------------------------------------------------------------
# RegisterMachine: the program of Fig. 2, swept in each mode one step at a time.


#: The program of Fig. 2 with the two choices of p and q worked out in the notes, and their points.
FIG2_PRESETS = {
    "p = x₁x₂, q = z₁x₃": (examples.fig2_products, (2.0, 3.0, 5.0)),
    "p = exp x₁ + x₂², q = sin z₁ + x₃³": (examples.fig2_transcendental, (0.0, 1.0, 1.0)),
}

#: Per mode: its label, the seed's and the result's symbols, and the product it computes.
MODE_NAMES = {
    "jvp": ("forward", "ẋ", "ẏ", "J ẋ"),
    "vjp": ("reverse", "ȳ", "x̄", "Jᵀ ȳ"),
    "forward_inverse": ("forward inverse", "x̄*", "ȳ*", "J⁻ᵀ x̄*"),
    "reverse_inverse": ("reverse inverse", "ẏ*", "ẋ*", "J⁻¹ ẏ*"),
}
_REVERSE_MODES = ("vjp", "reverse_inverse")


def _registers(slots) -> str:
    return ", ".join(f"x[{s}]" for s in slots)


def _factor(value: float) -> str:
    """A number as a factor of a product: negative ones in parentheses."""
    return f"({number(value)})" if value < 0 else number(value)


def _operation(mode: str, written, read, A, B, before: np.ndarray, after: np.ndarray) -> str:
    """What one scalar step of one sweep does to the derivative registers ``v``: the rule, then the numbers."""
    r, a, b = written[0], float(A[0, 0]), [float(v) for v in B[0]]
    if mode == "jvp":
        rule = f"v[{r}] ← a·v[{r}]" + "".join(f" + b·v[{s}]" for s in read)
        values = f"{_factor(a)}·{_factor(before[r])}" + "".join(f" + {_factor(bi)}·{_factor(before[s])}"
                                                                for bi, s in zip(b, read))
        return f"{rule} = {values} = {number(after[r])}"
    if mode == "vjp":
        parts = [f"v[{s}] += b·v[{r}]: {number(before[s])} + {_factor(bi)}·{_factor(before[r])} = {number(after[s])}"
                 for bi, s in zip(b, read)]
        parts.append(f"v[{r}] ← a·v[{r}] = {_factor(a)}·{_factor(before[r])} = {number(after[r])}")
        return ";  ".join(parts)
    if mode == "forward_inverse":
        u = after[r]
        parts = [f"u = v[{r}] / a = {number(before[r])} / {_factor(a)} = {number(u)}", f"v[{r}] ← u"]
        parts += [f"v[{s}] −= b·u: {number(before[s])} − {_factor(bi)}·{_factor(u)} = {number(after[s])}"
                  for bi, s in zip(b, read)]
        return ";  ".join(parts)
    rule = f"v[{r}] ← (v[{r}]" + "".join(f" − b·v[{s}]" for s in read) + ") / a"
    values = f"({number(before[r])}" + "".join(f" − {_factor(bi)}·{_factor(before[s])}" for bi, s in zip(b, read))
    return f"{rule} = {values}) / {_factor(a)} = {number(after[r])}"


class RegisterMachine(SliderSteps, W.VBox):
    """A register program swept in one of the four modes, one step at a time (Fig. 2, eqs. 2.3-2.4).

    Forward sweeps (``"jvp"``, ``"forward_inverse"``) run with the primal, step
    by step, and keep no tape. Reverse sweeps (``"vjp"``, ``"reverse_inverse"``)
    first run the primal, pushing each step's partials ``a``, ``b`` on the
    tape, then pop them in reverse order. The program is Fig. 2's ``r1 <- p(r1,
    r2); r3 <- q(r1, r3)`` on three registers, for two choices of ``p`` and
    ``q``: scalar steps (constant width), so every tape entry is an ``a`` and a ``b``.

    Python API: ``mode`` (read/write, one of :data:`MODE_NAMES`), ``preset``
    (read/write, a key of :data:`FIG2_PRESETS`), ``x`` and ``seed`` (arrays;
    ``set_point(x)``, ``set_seed(seed)`` take text like ``"2, 3, 5"`` or
    numbers and return False, showing why, on bad input), ``step`` (clamped),
    ``n_steps``, ``forward()``, ``back()``, ``sweep`` (the core's
    :class:`~tensoradbook.inverse.Sweep`), ``state`` (what the current step
    shows: ``phase``, ``lump``, ``primal``, ``derivative``, ``tape`` entries
    held), ``result``, ``check`` (the result against numpy on the Jacobian
    of ``n`` forward sweeps) and ``error``.
    """

    def __init__(self, preset: str = next(iter(FIG2_PRESETS)), mode: str = "reverse_inverse", seed=(1.0, 1.0, 1.0),
                 x=None):
        super().__init__()
        self._program = self._sweep = self._x = self._seed = None
        self._preset = self._mode = None
        self._timeline: list[tuple[str, int | None]] = []
        self._errors = MessageBox()
        self._preset_menu = W.Dropdown(options=list(FIG2_PRESETS), description="p, q:",
                                       style={"description_width": "3em"}, layout=W.Layout(width="24em"))
        self._mode_buttons = W.ToggleButtons(options=[(MODE_NAMES[m][0], m) for m in MODE_NAMES],
                                             style={"button_width": "9.5em"})
        self._entries = {}
        for name, label in (("x", "x ="), ("seed", "seed =")):
            entry = W.Text(description=label, continuous_update=False, layout=W.Layout(width="17em"),
                           style={"description_width": "4.5em"})
            entry.observe(lambda change, name=name: self._filling or self._typed(name, change["new"]),
                          names="value")
            self._entries[name] = entry
        self._filling = False  # set while the entries show values set from Python
        self._buttons = {}
        for label, tip in (("First", "start"), ("Back", "previous step"), ("Forward", "next step"),
                           ("Last", "the result")):
            button = W.Button(description=label, tooltip=tip, layout=W.Layout(width="6em"))
            button.on_click(lambda _, label=label: self._jump(label))
            self._buttons[label] = button
        self._slider = W.IntSlider(min=0, max=0, description="step", continuous_update=True)
        self._slider.observe(lambda _: self._show(), names="value")
        self._listing = W.HTML()
        self._heading = W.HTML()
        self._tables = W.HTML()
        self._summary = W.HTML()
        self.children = [W.HBox([self._preset_menu, self._entries["x"], self._entries["seed"]]),
                         self._mode_buttons, self._errors, self._listing,
                         W.HBox([*self._buttons.values(), self._slider]), self._heading, self._tables,
                         self._summary]
        self._preset_menu.observe(lambda change: self._filling or self.set_preset(change["new"]), names="value")
        self._mode_buttons.observe(lambda change: self._filling or self._set_mode(change["new"]), names="value")
        if not (self._set_mode(mode) and self.set_preset(preset, x) and self.set_seed(seed)):
            raise ValueError(self.error)

    # -- Python API ---------------------------------------------------------------------------
    @property
    def preset(self) -> str:
        return self._preset

    @preset.setter
    def preset(self, name: str) -> None:
        self.set_preset(name)

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        self._set_mode(value)

    @property
    def program(self):
        return self._program

    @property
    def x(self) -> np.ndarray:
        return self._x.copy()

    @property
    def seed(self) -> np.ndarray:
        return self._seed.copy()

    @property
    def sweep(self):
        return self._sweep

    @property
    def result(self) -> np.ndarray:
        return self._sweep.result

    @property
    def n_steps(self) -> int:
        return len(self._timeline)

    @property
    def error(self) -> str:
        return self._errors.text

    @property
    def state(self) -> dict:
        """What step ``step`` shows: the phase (``"start"``, ``"primal"`` pushing the tape, ``"seed"``,
        ``"sweep"``), the lump it ran (None for start and seed), the registers, the derivative registers
        (None while a reverse sweep's primal runs) and how many tape entries are held."""
        phase, lump = self._timeline[self.step]
        done = [p for p, _ in self._timeline[1:self.step + 1]]
        values, states = self._sweep.tape.values, self._sweep.states
        if self._mode not in _REVERSE_MODES:  # the primal and the derivative step in tandem
            return dict(phase=phase, lump=lump, primal=values[len(done)], derivative=states[len(done)], tape=0)
        pushed, popped = done.count("primal"), done.count("sweep")
        return dict(phase=phase, lump=lump, primal=values[pushed],
                    derivative=states[popped] if "seed" in done else None, tape=pushed - popped)

    @property
    def check(self) -> tuple[np.ndarray, bool]:
        """The product computed with numpy from the Jacobian of ``n`` forward sweeps, and whether the sweep
        agrees with it (relative 1e-9)."""
        J = ia.jacobian(self._program, self._x)
        mode, seed = self._mode, self._seed
        expected = {"jvp": lambda: J @ seed, "vjp": lambda: J.T @ seed,
                    "forward_inverse": lambda: np.linalg.solve(J.T, seed),
                    "reverse_inverse": lambda: np.linalg.solve(J, seed)}[mode]()
        scale = 1 + float(np.abs(expected).max())
        return expected, bool(np.abs(self.result - expected).max() <= 1e-9 * scale)

    @shows_errors
    def set_preset(self, name: str, x=None) -> bool:
        """Trace the Fig. 2 program with this choice of p and q, at its point (or ``x``)."""
        function, point = FIG2_PRESETS[choose(name, FIG2_PRESETS, "unknown program")]
        program = ia.trace(function, n=len(point))
        seed = self._seed if self._seed is not None and len(self._seed) == program.n else np.ones(program.n)
        self._recompute(parse_vector(point if x is None else x, program.n, "x"), seed, program=program)
        self._preset = name
        self._fill(self._preset_menu, name)
        return True

    @shows_errors
    def set_point(self, x) -> bool:
        """Run the sweep at the point ``x`` (text like ``"2, 3, 5"`` or numbers)."""
        return self._recompute(parse_vector(x, self._program.n, "x"), self._seed)

    @shows_errors
    def set_seed(self, seed) -> bool:
        """Run the sweep from this seed (``ẋ``, ``ȳ``, ``x̄*`` or ``ẏ*`` for the mode)."""
        return self._recompute(self._x, parse_vector(seed, self._program.n, "seed"))

    # -- callbacks ------------------------------------------------------------------------------
    def _fill(self, widget, value) -> None:
        self._filling = True
        try:
            widget.value = value
        finally:
            self._filling = False

    def _typed(self, name: str, text: str) -> None:
        (self.set_point if name == "x" else self.set_seed)(text)

    def _jump(self, label: str) -> None:
        self.step = {"First": 0, "Back": self.step - 1, "Forward": self.step + 1, "Last": self.n_steps - 1}[label]

    @shows_errors
    def _set_mode(self, mode: str) -> bool:
        try:
            choose(mode, MODE_NAMES, "unknown mode")
            if self._program is None:  # the constructor: the preset comes next
                self._mode = mode
            else:
                self._recompute(self._x, self._seed, mode=mode)
        finally:
            if self._mode is not None:  # the buttons show the mode in use, also after a refused one
                self._fill(self._mode_buttons, self._mode)
        return True

    def _recompute(self, x: np.ndarray, seed: np.ndarray, program=None, mode=None) -> bool:
        """Sweep ``program`` in ``mode`` (default: the current ones) from ``x`` and ``seed`` and show it.

        Raises ValueError, changing nothing, at a singular step (the core names it) or where the values
        overflow.
        """
        program = self._program if program is None else program
        mode = self._mode if mode is None else mode
        sweep = ia.sweep(program, x, seed, mode)
        tape = sweep.tape
        if not all(np.all(np.isfinite(values)) for values in (sweep.states, tape.values, *tape.A, *tape.B)):
            raise ValueError(f"at x = {numbers(x)} with seed {numbers(seed)} the values overflow (inf or nan): "
                             "choose a smaller point or seed")
        self._program, self._mode, self._x, self._seed, self._sweep = program, mode, x, seed, sweep
        self._fill(self._entries["x"], ", ".join(number(v) for v in x))
        self._fill(self._entries["seed"], ", ".join(number(v) for v in seed))
        T = len(self._program)
        if self._mode in _REVERSE_MODES:
            self._timeline = ([("start", None)] + [("primal", j) for j in range(T)] + [("seed", None)]
                              + [("sweep", j) for j in sweep.lumps])
        else:
            self._timeline = [("start", None)] + [("sweep", j) for j in sweep.lumps]
        with self._slider.hold_trait_notifications():
            self._slider.max = self.n_steps - 1
            self._slider.value = 0
        self._show()
        return True

    # -- drawing --------------------------------------------------------------------------------
    def _show(self) -> None:
        state, last = self.state, self.n_steps - 1
        for label, disabled in (("First", self.step == 0), ("Back", self.step == 0),
                                ("Forward", self.step == last), ("Last", self.step == last)):
            self._buttons[label].disabled = disabled
        lump = None if state["lump"] is None else self._program.lump(state["lump"])
        self._listing.value = self._program_html(lump)
        self._heading.value = self._heading_html(state, lump)
        self._tables.value = self._registers_html(state, lump) + self._tape_html(state)
        self._summary.value = self._summary_html() if self.step == last else ""

    def _program_html(self, lump) -> str:
        current = set(lump.steps) if lump is not None else set()
        lines = "".join(
            f"<div style='{'background:#ffe8c2;' if step.index in current else ''}font-family:monospace'>"
            f"{html.escape(str(step))}</div>" for step in self._program.steps)
        return f"<div style='margin:4px 0'><b>Program</b> ({self._program.n} registers):{lines}</div>"

    def _heading_html(self, state, lump) -> str:
        name, seed_symbol, result_symbol, product = MODE_NAMES[self._mode]
        phase, k, last = state["phase"], self.step, self.n_steps - 1
        head = f"<b>{name} sweep, {product}: step {k} of {last}</b> &mdash; "
        if phase == "start":
            if self._mode in _REVERSE_MODES:
                return head + ("the registers hold x. First the primal runs forward and pushes each step's "
                               "partials a, b on the tape; the seed enters at the end.")
            return head + (f"the registers hold x, the derivative registers the seed {seed_symbol}. Each step "
                           f"updates both at once: no tape.")
        if phase == "seed":
            return head + (f"the primal is done (the registers hold y = f(x)); the derivative registers get the "
                           f"seed {seed_symbol}, and the sweep pops the tape from the last step back.")
        j = state["lump"]
        if phase == "primal":
            return head + (f"{html.escape(lump.describe())} runs; its partials go on the tape "
                           f"({_registers(lump.written)} is overwritten, so they cannot be recomputed later).")
        position = self._sweep.lumps.index(j)
        before, after = self._sweep.states[position], self._sweep.states[position + 1]
        A, B = self._sweep.tape.A[j], self._sweep.tape.B[j]
        return (head + f"{html.escape(lump.describe())}: <code>"
                + html.escape(_operation(self._mode, lump.written, lump.read, A, B, before, after))
                + "</code>")

    def _registers_html(self, state, lump) -> str:
        written = set() if lump is None else set(lump.written)
        read = set() if lump is None else set(lump.read)
        symbol = MODE_NAMES[self._mode][1] + " → " + MODE_NAMES[self._mode][2]
        rows = []
        for r in range(self._program.n):
            colour = "#ffe8c2" if r in written else "#e4eef9" if r in read else "white"
            derivative = "—" if state["derivative"] is None else number(state["derivative"][r])
            rows.append(f"<tr style='background:{colour}'><td {_CELL}>x[{r}]</td>"
                        f"<td {_CELL}>{number(state['primal'][r])}</td><td {_CELL}>{derivative}</td></tr>")
        return (f"<table {_TABLE}><tr><th {_CELL}>register</th><th {_CELL}>primal value</th>"
                f"<th {_CELL}>derivative v ({symbol})</th></tr>{''.join(rows)}</table>"
                "<div style='font-size:12px;color:#555'>orange: written by this step; blue: read by it</div>")

    def _tape_html(self, state) -> str:
        if self._mode not in _REVERSE_MODES:
            return ("<p><b>Tape:</b> none. A forward sweep uses each step's partials as soon as the primal "
                    "computes them.</p>")
        tape, held = self._sweep.tape, state["tape"]
        if not held:
            return "<p><b>Tape:</b> empty.</p>"
        entries = []
        for j in range(held):
            A, B, lump = tape.A[j], tape.B[j], self._program.lump(j)
            partials = f"a = {number(A[0, 0])}" + "".join(f", b = {number(b)} (for x[{s}])"
                                                           for b, s in zip(B[0], lump.read))
            entries.append(f"<li><code>{html.escape(lump.describe())}: {html.escape(partials)}</code></li>")
        top = " (top of the stack last)" if held > 1 else ""
        return (f"<p><b>Tape</b>{top}: {held} entr{'y' if held == 1 else 'ies'}, "
                f"{sum(tape.A[j].nbytes + tape.B[j].nbytes for j in range(held))} bytes</p><ul>{''.join(entries)}</ul>")

    def _summary_html(self) -> str:
        _, seed_symbol, result_symbol, product = MODE_NAMES[self._mode]
        expected, agrees = self.check
        verdict = "agrees" if agrees else "DISAGREES (a bug)"
        solve = {"jvp": "J @ seed", "vjp": "J.T @ seed", "forward_inverse": "numpy.linalg.solve(J.T, seed)",
                 "reverse_inverse": "numpy.linalg.solve(J, seed)"}[self._mode]
        return (f"<p><b>Result:</b> {result_symbol} = {product} = {numbers(self.result)}, "
                f"with {seed_symbol} = {numbers(self._seed)}. It {verdict} with {solve} = {numbers(expected)}, "
                f"J built from {self._program.n} forward sweeps. Tape kept: {self._sweep.tape_bytes} bytes.</p>")


# ----------------------------------------------------------------------------------------------
# LumpExplorer: a program with temporaries, cut into lumps along a chosen order (sec. 3, Fig. 4).


#: Programs with temporaries, with the point at which the lumps' blocks are shown.
LUMP_PRESETS = {
    "two chains (Fig. 4)": (examples.two_chains, (0.5, 0.3)),
    "shared temporary": (examples.shared_temporary, (0.5, 0.8, 1.5)),
    "dense mat-vec (counter-example)": (examples.dense_matvec, (1.0, 1.0, 1.0)),
    "Fig. 2 (constant width)": (examples.fig2_transcendental, (0.0, 1.0, 1.0)),
}
_LUMP_COLOURS = ("#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc", "#fdd0a2", "#c7e9c0")


def _order(order):
    """An order as the core takes it: "program", "greedy" or vertex names (text is split at spaces and commas)."""
    if isinstance(order, str) and order not in ("program", "greedy"):
        return [name for name in re.split(r"[,\s]+", order) if name]
    return order


class LumpExplorer(W.VBox):
    """Cut a program with temporaries into lumps along a topological order of its vertices (sec. 3, Fig. 4).

    A vertex is a value the program makes: ``s3`` the value step 3 writes,
    ``t1`` a temporary two vertices read. After each vertex of the order some
    values are live (still needed, or results); wherever exactly ``n`` are,
    the program can be cut, and each piece is a lump: a step with ``l``
    outputs and Jacobian ``[[A, B], [0, I]]`` (eq. 2.6g), inverted as a block
    (eq. 2.6h). The order decides how large the lumps are.

    Python API: ``preset`` (read/write, a key of :data:`LUMP_PRESETS`),
    ``program`` (the core's :class:`~tensoradbook.inverse.Program` cut along
    the current order), ``order`` (vertex names; set with ``set_order(order)``,
    ``"program"``, ``"greedy"``, a list of names or text like ``"t1 s1 s3"``),
    ``move(vertex, offset)`` (earlier by ``offset < 0``), ``check`` (whether
    the lumped reverse-inverse sweep agrees with numpy), ``error``; the
    methods return False, showing why, when the core refuses an order.
    """

    def __init__(self, preset: str = next(iter(LUMP_PRESETS)), order="program"):
        super().__init__()
        self._program = self._preset = None
        self._errors = MessageBox()
        self._preset_menu = W.Dropdown(options=list(LUMP_PRESETS), description="program:",
                                       style={"description_width": "5.5em"}, layout=W.Layout(width="27em"))
        self._preset_menu.observe(lambda change: self._filling or self.set_preset(change["new"]), names="value")
        self._order_buttons = []
        for label, order_name in (("program order", "program"), ("greedy order", "greedy")):
            button = W.Button(description=label, layout=W.Layout(width="9em"),
                              tooltip="the order the values were computed" if order_name == "program" else
                              "always the ready vertex that leaves the fewest values live")
            button.on_click(lambda _, order_name=order_name: self.set_order(order_name))
            self._order_buttons.append(button)
        self._entry = W.Text(description="order:", continuous_update=False, layout=W.Layout(width="30em"),
                             style={"description_width": "3.5em"})
        self._entry.observe(lambda change: self._filling or self.set_order(change["new"]), names="value")
        self._vertex_menu = W.Dropdown(description="vertex:", layout=W.Layout(width="12em"),
                                       style={"description_width": "4.5em"})
        self._move_buttons = []
        for label, offset in (("◀ earlier", -1), ("later ▶", 1)):
            button = W.Button(description=label, layout=W.Layout(width="7em"))
            button.on_click(lambda _, offset=offset: self.move(self._vertex_menu.value, offset))
            self._move_buttons.append(button)
        self._filling = False  # set while the controls show values set from Python
        self._figure = Figure(figsize=FIGSIZE, dpi=DPI)
        self._canvas = FigureCanvasAgg(self._figure)
        self._ax = self._figure.add_axes((0.11, 0.16, 0.52, 0.74))
        self._figure.legend([Patch(facecolor=_LUMP_COLOURS[0], edgecolor=GREY),
                             Patch(facecolor="white", edgecolor="black", linewidth=2.2),
                             Line2D([], [], color=RED, linestyle="--")],
                            ["live values, by lump", "a cut: exactly n live", "n registers"],
                            loc="upper left", bbox_to_anchor=(0.65, 0.9), fontsize=9, framealpha=0.9)
        self._backgrounds: dict = {}  # (preset, height) -> pixels of the empty axes
        self._tops: dict = {}         # preset -> the height its axes have (grows, never shrinks)
        self._image = W.Image(format="png", layout=W.Layout(width=f"{int(FIGSIZE[0] * DPI)}px"))
        self._listing = W.HTML()
        self._table = W.HTML()
        self._summary = W.HTML()
        self.children = [W.HBox([self._preset_menu, *self._order_buttons]),
                         W.HBox([self._entry, self._vertex_menu, *self._move_buttons]), self._errors,
                         self._image, self._summary, self._table, self._listing]
        if not self.set_preset(preset, order):
            raise ValueError(self.error)

    # -- Python API ---------------------------------------------------------------------------
    @property
    def preset(self) -> str:
        return self._preset

    @preset.setter
    def preset(self, name: str) -> None:
        self.set_preset(name)

    @property
    def program(self):
        return self._program

    @property
    def order(self) -> tuple[str, ...]:
        return self._program.order

    @order.setter
    def order(self, value) -> None:
        self.set_order(value)

    @property
    def error(self) -> str:
        return self._errors.text

    @property
    def x(self) -> np.ndarray:
        return np.array(LUMP_PRESETS[self._preset][1])

    @property
    def check(self) -> bool:
        """Whether ``J^-1 v`` by the lumped reverse-inverse sweep (``v`` all ones) agrees with
        ``numpy.linalg.solve`` on the Jacobian of ``n`` forward sweeps (relative 1e-9)."""
        v = np.ones(self._program.n)
        mine = ia.reverse_inverse(self._program, self.x, v)
        expected = np.linalg.solve(ia.jacobian(self._program, self.x), v)
        return bool(np.abs(mine - expected).max() <= 1e-9 * (1 + np.abs(expected).max()))

    @shows_errors
    def set_preset(self, name: str, order="program") -> bool:
        """Trace this program and cut it along ``order``."""
        function, point = LUMP_PRESETS[choose(name, LUMP_PRESETS, "unknown program")]
        program = ia.trace(function, n=len(point), order=_order(order))
        self._preset = name
        self._fill(self._preset_menu, name)
        self._fill(self._vertex_menu, None, options=program.vertices)
        self._cut(program)
        return True

    @shows_errors
    def set_order(self, order) -> bool:
        """Cut along ``order``: ``"program"``, ``"greedy"``, vertex names, or their text (spaces or commas)."""
        # The core refuses an order naming a vertex that comes too early, an unknown one or none at all.
        self._cut(self._program.reorder(_order(order)))
        return True

    @shows_errors
    def move(self, vertex: str, offset: int) -> bool:
        """Move ``vertex`` ``offset`` places later (earlier if negative) in the order, if that stays topological."""
        order = list(self.order)
        if not isinstance(vertex, str) or vertex not in order:
            raise ValueError(f"{shown(vertex)} is not a vertex of this program (its vertices: {', '.join(order)})")
        i = order.index(vertex)
        j = max(0, min(len(order) - 1, i + as_int(offset, "offset")))
        order.insert(j, order.pop(i))
        return self.set_order(order)

    # -- drawing --------------------------------------------------------------------------------
    def _cut(self, program) -> None:
        self._program = program
        self._fill(self._entry, " ".join(program.order))
        self._show()

    def _fill(self, widget, value, options=None) -> None:
        self._filling = True
        try:
            if options is not None:
                widget.options = options
            widget.value = value if value is not None or options is None else options[0]
        finally:
            self._filling = False

    def _show(self) -> None:
        program = self._program
        tape = ia.partials(program, self.x)
        self._image.value = self._draw()
        sizes = program.lump_sizes
        self._summary.value = (
            f"<p><b>{len(sizes)} lump{'s' if len(sizes) != 1 else ''}</b> of sizes l = "
            f"{', '.join(map(str, sizes))} along this order (largest {max(sizes)} of n = {program.n}). "
            f"J⁻¹ (1, …, 1) by the lumped reverse-inverse sweep "
            f"{'agrees' if self.check else 'DISAGREES (a bug)'} with numpy.linalg.solve; "
            f"log |det J| = Σ log |det A| = {number(tape.logdet)}; tape {program.tape_bytes} bytes.</p>")
        rows = []
        for lump, A, B in zip(program.lumps, tape.A, tape.B):
            colour = _LUMP_COLOURS[lump.index % len(_LUMP_COLOURS)]
            cells = (lump.index, " ".join(lump.vertices), ", ".join(map(str, lump.steps)) or "—",
                     _registers(lump.written), _registers(lump.read) or "—", lump.size,
                     lump.size + len(lump.read), np.array2string(A, precision=3, suppress_small=True),
                     np.array2string(B, precision=3, suppress_small=True) if B.size else "—")
            # white-space: pre keeps the rows of a block on their own lines
            rows.append(f"<tr style='background:{colour};white-space:pre'>"
                        + "".join(f"<td {_CELL}>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
        heads = ("lump", "vertices", "steps", "writes", "also reads", "l", "k", "A (l × l)", "B")
        self._table.value = (f"<table {_TABLE}><tr>" + "".join(f"<th {_CELL}>{h}</th>" for h in heads) + "</tr>"
                             + "".join(rows) + f"</table><div style='font-size:12px;color:#555'>blocks at x = "
                             f"{numbers(self.x)}</div>")
        lines = "".join(f"<div style='font-family:monospace'>{html.escape(str(step))}"
                        f"{'' if step.lump is None else f'   (lump {step.lump})'}</div>" for step in program.steps)
        self._listing.value = f"<div style='margin-top:6px'><b>Program</b> ({program.n} registers):{lines}</div>"

    # The axes, legend and the n line are drawn once per program and height and kept as pixels; an order
    # change draws only the bars, the lump labels and the vertex names (blitting).
    def _background(self):
        program = self._program
        top = max(int(program.live.max()) + 2, self._tops.get(self._preset, 0))
        key = (self._preset, top)
        if key not in self._backgrounds:
            self._tops[self._preset] = top
            ax, positions = self._ax, len(program.vertices) + 1
            ax.clear()
            ax.set_xlim(-0.6, positions - 0.4)
            ax.set_ylim(0, top)
            ax.set_xticks([])
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
            ax.tick_params(labelsize=9)
            ax.axhline(program.n, color=RED, linestyle="--", linewidth=1.2)
            ax.set_xlabel("after vertex (in the chosen order)", fontsize=10, labelpad=18)
            ax.set_ylabel("live values", fontsize=10)
            ax.set_title(f"{self._preset}: cut where {program.n} are live", fontsize=11)
            self._canvas.draw()
            self._backgrounds[key] = self._canvas.copy_from_bbox(self._figure.bbox)
        return self._backgrounds[key], top

    def _draw(self) -> bytes:
        program, ax = self._program, self._ax
        background, top = self._background()
        live = [program.n] + [int(v) for v in program.live]
        cuts = {int(c) for c in program.cuts}
        colours = ["white"] + [_LUMP_COLOURS[lump.index % len(_LUMP_COLOURS)]
                               for lump in program.lumps for _ in lump.vertices]
        artists = list(ax.bar(range(len(live)), live, width=0.7, color=colours,
                              edgecolor=["black" if p in cuts else GREY for p in range(len(live))],
                              linewidth=[2.2 if p in cuts else 0.8 for p in range(len(live))]))
        below = ax.get_xaxis_transform()  # x in data, y in axes fractions: names just under the axis
        for position, name in enumerate(["x"] + list(program.order)):
            artists.append(ax.text(position, -0.02, name, transform=below, ha="center", va="top", fontsize=9))
        for lump in program.lumps:
            middle = (lump.cut - len(lump.vertices) + 1 + lump.cut) / 2
            artists.append(ax.text(middle, top - 0.6, f"lump {lump.index}\nl = {lump.size}", ha="center",
                                   va="center", fontsize=9))
        return blit_png(self._canvas, background, artists)


# ----------------------------------------------------------------------------------------------
# NewtonDemo: Newton's method with the reverse-inverse sweep against finite differences.


#: Systems F(x) = 0 as register programs, with a starting point.
NEWTON_PRESETS = {
    "circle ∩ line: u² + v² = 4, u = v": (examples.circle_and_line, (1.0, 0.5)),
    "Fig. 2 program = (6, 3, 30)": (examples.fig2_target, (1.0, 1.0, 1.0)),
    "Kepler: E − 0.9 sin E = 1": (examples.kepler, (3.5,)),
    "x² + 1 = 0 (no real root)": (examples.no_real_root, (0.5,)),
}
NEWTON_TOL, NEWTON_MAX_ITER = 1e-12, 30


def _difference_step(value) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, _numbers.Real) or not 0 < value < 1:
        raise ValueError(f"h must be a number between 0 and 1 (exclusive), got {shown(value)}")
    return float(value)
_NEWTON_FLOOR, _NEWTON_CEILING = 1e-17, 1e6


class NewtonDemo(W.VBox):
    """Newton's method for ``F(x) = 0`` with ``x <- x - J^-1 F(x)``: ``J^-1 F(x)`` by one reverse-inverse sweep
    (:func:`tensoradbook.inverse.newton`), against Newton with a finite-difference Jacobian.

    Exact ``J^-1 F`` gives quadratic convergence near a simple root; a
    forward difference with step ``h`` has error ``O(h)`` in ``J``, so that
    Newton converges only linearly (large ``h``) or stalls at round-off
    (tiny ``h``).

    Python API: ``preset`` (read/write, a key of :data:`NEWTON_PRESETS`),
    ``x0`` (``set_start(x0)``), ``h`` (read/write: the difference step),
    ``inverse`` and ``finite_differences`` (the two
    :class:`~tensoradbook.inverse.NewtonResult`), ``error`` (bad input) and
    ``status`` (both outcomes in words).
    """

    def __init__(self, preset: str = next(iter(NEWTON_PRESETS)), x0=None, h: float = 1e-3):
        super().__init__()
        h = _difference_step(h)
        self._program = self._preset = self._x0 = None
        self._inverse = self._differences = None
        self._errors = MessageBox()
        self._status = W.HTML()
        self._preset_menu = W.Dropdown(options=list(NEWTON_PRESETS), description="F(x) = 0:",
                                       style={"description_width": "5em"}, layout=W.Layout(width="30em"))
        self._preset_menu.observe(lambda change: self._filling or self.set_preset(change["new"]), names="value")
        self._h_slider = W.FloatLogSlider(value=h, base=10, min=-12, max=-1, step=0.5, description="FD step h",
                                          readout_format=".0e", style={"description_width": "5em"},
                                          layout=W.Layout(width="28em"))
        self._h_slider.observe(lambda change: self._filling or self._set_h(change["new"]), names="value")
        self._h = h
        self._slider_box = W.HBox()
        self._sliders: list[W.FloatSlider] = []
        self._filling = False  # set while controls show values set from Python
        self._figure = Figure(figsize=(6.0, 3.8), dpi=DPI)
        self._canvas = FigureCanvasAgg(self._figure)
        self._ax = self._figure.add_axes((0.12, 0.14, 0.5, 0.76))
        self._start_plot()
        self._image = W.Image(format="png", layout=W.Layout(width=f"{int(6.0 * DPI)}px"))
        self._table = W.HTML()
        self.children = [W.HBox([self._preset_menu, self._h_slider]), self._slider_box, self._errors,
                         self._status, self._image, self._table]
        if not self.set_preset(preset, x0):
            raise ValueError(self.error)

    # -- Python API ---------------------------------------------------------------------------
    @property
    def preset(self) -> str:
        return self._preset

    @preset.setter
    def preset(self, name: str) -> None:
        self.set_preset(name)

    @property
    def x0(self) -> np.ndarray:
        return self._x0.copy()

    @property
    def h(self) -> float:
        return self._h

    @h.setter
    def h(self, value: float) -> None:
        self._set_h(value)

    @property
    def inverse(self) -> ia.NewtonResult:
        return self._inverse

    @property
    def finite_differences(self) -> ia.NewtonResult:
        return self._differences

    @property
    def error(self) -> str:
        return self._errors.text

    @property
    def status(self) -> str:
        return "\n".join(f"{name}: {result.message}" for name, result in
                         (("reverse inverse", self._inverse), (f"finite differences (h = {self._h:.0e})",
                                                               self._differences)))

    @shows_errors
    def set_preset(self, name: str, x0=None) -> bool:
        """Solve this system, from its starting point (or ``x0``)."""
        function, start = NEWTON_PRESETS[choose(name, NEWTON_PRESETS, "unknown system")]
        program = ia.trace(function, n=len(start))
        x0 = parse_vector(start if x0 is None else x0, program.n, "x0")
        self._program, self._preset = program, name
        self._filling = True
        try:
            self._preset_menu.value = name
            self._sliders = [W.FloatSlider(min=min(-4.0, v), max=max(4.0, v), step=0.05, value=v,
                                           description=f"x₀[{k}]", continuous_update=False, readout_format=".2f",
                                           style={"description_width": "3.5em"}) for k, v in enumerate(x0)]
            for slider in self._sliders:
                slider.observe(lambda _: self._filling or self.set_start([s.value for s in self._sliders]),
                               names="value")
            self._slider_box.children = self._sliders
        finally:
            self._filling = False
        self._start_at(x0)
        return True

    @shows_errors
    def set_start(self, x0) -> bool:
        """Run both methods from ``x0`` (text like ``"1, 0.5"`` or numbers)."""
        self._start_at(parse_vector(x0, self._program.n, "x0"))
        return True

    # -- computing (the core) and drawing -------------------------------------------------------
    def _start_at(self, start: np.ndarray) -> None:
        self._x0 = start
        self._filling = True
        try:
            move_sliders(self._sliders, start)
        finally:
            self._filling = False
        self._solve()

    @shows_errors
    def _set_h(self, value) -> bool:
        self._h = _difference_step(value)
        self._filling = True
        try:
            self._h_slider.value = self._h
        finally:
            self._filling = False
        self._solve()
        return True

    def _solve(self) -> None:
        self._inverse = ia.newton(self._program, self._x0, tol=NEWTON_TOL, max_iter=NEWTON_MAX_ITER,
                                  raise_on_failure=False)
        self._differences = ia.finite_difference_newton(self._program, self._x0, self._h, tol=NEWTON_TOL,
                                                        max_iter=NEWTON_MAX_ITER)
        self._status.value = "".join(f"<div><b>{html.escape(line.split(': ', 1)[0])}:</b> "
                                     f"{html.escape(line.split(': ', 1)[1])}</div>" for line in self.status.split("\n"))
        self._image.value = self._draw()
        self._table.value = self._iterates_html()

    def _start_plot(self) -> None:
        ax = self._ax
        ax.set_yscale("log")
        ax.set_xlim(-0.5, NEWTON_MAX_ITER + 0.5)
        ax.set_ylim(_NEWTON_FLOOR, _NEWTON_CEILING)
        ax.yaxis.set_minor_locator(NullLocator())  # 23 decades of minor ticks take most of a second to draw
        ax.xaxis.set_major_locator(MaxNLocator(nbins=7, integer=True))
        ax.tick_params(labelsize=9)
        ax.grid(True, which="major", alpha=0.3)
        ax.axhline(NEWTON_TOL, color="0.4", linestyle=":", linewidth=1.2)
        ax.set_xlabel("iteration k", fontsize=10)
        ax.set_ylabel("|F(xₖ)|", fontsize=10)
        ax.set_title("Newton's method: convergence", fontsize=11)
        self._figure.legend([Line2D([], [], color=BLUE, marker="o"), Line2D([], [], color=ORANGE, marker="s"),
                             Line2D([], [], color="0.4", linestyle=":")],
                            ["reverse inverse\n(exact J⁻¹F)", "finite-difference J", f"tolerance {NEWTON_TOL:g}"],
                            loc="upper left", bbox_to_anchor=(0.64, 0.9), fontsize=9, framealpha=0.9)
        self._canvas.draw()
        self._background = self._canvas.copy_from_bbox(self._figure.bbox)

    def _draw(self) -> bytes:
        artists = []
        for result, colour, marker in ((self._differences, ORANGE, "s"), (self._inverse, BLUE, "o")):
            residuals = np.clip(result.residuals, _NEWTON_FLOOR, _NEWTON_CEILING)  # 0 and overflow stay in view
            artists += self._ax.plot(np.arange(len(residuals)), residuals, color=colour, marker=marker,
                                     markersize=5, linewidth=1.5)
            if not result.converged:
                artists.append(self._ax.plot([len(residuals) - 1], [residuals[-1]], marker="x", color=RED,
                                             markersize=12, markeredgewidth=2.5)[0])
        return blit_png(self._canvas, self._background, artists)

    def _iterates_html(self) -> str:
        rows = []
        for k in range(max(len(self._inverse.iterates), len(self._differences.iterates))):
            cells = [str(k)]
            for result in (self._inverse, self._differences):
                if k < len(result.iterates):
                    cells += [numbers(result.iterates[k]), f"{result.residuals[k]:.2e}"]
                else:
                    cells += ["", ""]
            rows.append("<tr>" + "".join(f"<td {_CELL}>{c}</td>" for c in cells) + "</tr>")
        heads = ("k", "xₖ, reverse inverse", "|F|", "xₖ, finite differences", "|F|")
        return (f"<details><summary>iterates</summary><table {_TABLE}><tr>"
                + "".join(f"<th {_CELL}>{h}</th>" for h in heads) + "</tr>" + "".join(rows) + "</table></details>")

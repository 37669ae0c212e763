"""StepInverse: one binary step through its partials ``a`` and ``b`` (Pearlmutter & Siskind, sec. 2):
J, J^T, J^-1, J^-T, their sparsity and the four flow graphs of Fig. 1, and what happens as a -> 0.
"""

from __future__ import annotations

import math
import numbers as _numbers
import ipywidgets as W
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Rectangle
from matplotlib.ticker import NullLocator
from tensoradbook import inverse as ia
from tensoradbook.integer.matrix import shown
from ..base import MessageBox, WidgetBase
from .._common import css_width, figure_dpi, fitting_dpi, move_sliders, shows_errors

from ..style import BLUE, BLUE_FILL, ORANGE, RED
from .shared import blit_png, number


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
_MAX_WIDTH_PX = 1200  # the five graphs in one row only where it fits a 1280-pixel screen at the current scale


def _fig1_grid() -> tuple[int, int]:
    """Columns and rows of Fig. 1's five graphs: one row, or three and two at a presentation scale."""
    return (5, 1) if 5 * _PANEL_WIDTH * figure_dpi(FIG1_DPI) <= _MAX_WIDTH_PX else (3, 2)


def _fig1_size() -> tuple[tuple[float, float], float]:
    """Fig. 1's size in inches and its dpi (two rows at a presentation scale are drawn smaller to fit a screen)."""
    cols, rows = _fig1_grid()
    size = (cols * _PANEL_WIDTH, rows * _FIG1_HEIGHT)
    return size, fitting_dpi(size, figure_dpi(FIG1_DPI))
_LIMIT_SIZE = (6.0, 3.4)
# data limits of a panel: nodes sit at x = 0, 1 and y = 0, 1, with room for "1/a = 0.6667" left of x = 0
_FIG1_X, _FIG1_Y = (-1.05, 1.45), (-0.35, 1.35)

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


class StepInverse(WidgetBase, W.VBox):
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
        self.matrix_view: dict = {}
        self._status = MessageBox(color="black")
        self.sliders = {}
        for name, (low, high, step) in (("a", (-_LIMIT_RANGE, _LIMIT_RANGE, 0.01)), ("b", (-2.0, 2.0, 0.05))):
            slider = W.FloatSlider(min=low, max=high, step=step, value=0.0, description=name,
                                   readout_format=".2f", continuous_update=True,
                                   style={"description_width": "1.5em"}, layout=W.Layout(width="26em"))
            slider.observe(self._on_slider, names="value")
            self.sliders[name] = slider
        self.latex = W.HTMLMath()
        self.graphs = W.Image(format="png", layout=W.Layout(width=css_width(_fig1_size()[0][0], dpi=_fig1_size()[1])))
        self.limit = W.Image(format="png", layout=W.Layout(width=css_width(_LIMIT_SIZE[0])))
        self._start_graphs()
        self._start_limit_plot()
        self.children = [W.HBox(list(self.sliders.values())), self.errors, self._status, self.latex,
                         self.graphs, self.limit]
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
        return dict(self.matrix_view)

    @property
    def condition(self) -> float:
        return float(np.linalg.cond(self.matrix_view["J"])) if self.matrix_view["J^-1"] is not None else math.inf

    @property
    def status(self) -> str:
        return self._status.text

    @shows_errors
    def set_partials(self, a, b) -> bool:
        """Show the step with partials ``a`` and ``b``; on bad input show why, keep the old step, return False."""
        values = [_partial(a, "a"), _partial(b, "b")]
        self._a, self._b = values
        with self.showing():
            move_sliders([self.sliders["a"], self.sliders["b"]], values)
        self._update()
        return True

    # -- computing (the core) and drawing -------------------------------------------------------
    def _on_slider(self, _) -> None:
        if not self._showing:
            self.set_partials(self.sliders["a"].value, self.sliders["b"].value)

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
        self.matrix_view = matrices
        self._status.show(self._describe(singular))
        self.latex.value = self._matrices_html(singular)
        self.graphs.value = self._draw_graphs()
        self.limit.value = self._draw_limit()

    def _describe(self, singular) -> str:
        a = self._a
        if singular is not None:
            return (f"a = 0: det J = a = 0, so the step is not invertible and neither inverse mode can pass it "
                    f"(the core says: {singular}). x₁ is lost: y₁ = b x₂ depends on x₂ alone.")
        inverse = self.matrix_view["J^-1"]
        return (f"det J = a = {number(a)}. J⁻¹ keeps the sparsity of J, with 1/a = {number(inverse[0, 0])} and "
                f"−b/a = {number(inverse[0, 1])} where J has a and b; cond₂ J = {number(self.condition)}. "
                f"As a → 0 both grow like 1/a: the inverse sweeps divide by a.")

    def _matrices_html(self, singular) -> str:
        upper, lower = ((1, 1), (0, 1)), ((1, 0), (1, 1))  # structural non-zeros of J, J^-1 and of J^T, J^-T
        parts = [_matrix_latex(r"J", self.matrix_view["J"], upper),
                 _matrix_latex(r"J^{\mathsf{T}}", self.matrix_view["J^T"], lower)]
        if singular is None:
            parts += [_matrix_latex(r"J^{-1}", self.matrix_view["J^-1"], upper),
                      _matrix_latex(r"J^{-\mathsf{T}}", self.matrix_view["J^-T"], lower)]
        else:
            parts += [r"J^{-1},\ J^{-\mathsf{T}}\ \text{do not exist } (a = 0)"]
        return ("$$" + r" \qquad ".join(parts) + "$$"
                "<div>Sparsity: J and J⁻¹ are non-zero only on the diagonal and at (1, 2); Jᵀ and J⁻ᵀ only on "
                "the diagonal and at (2, 1). The inverse has the pattern of the matrix itself (eq. 2.6f), so "
                "an inverse sweep does the same arithmetic as a forward or reverse one.</div>")

    # Fig. 1: nodes, arrows and titles are drawn once; an interaction draws the edge labels.
    def _start_graphs(self) -> None:
        cols, rows = _fig1_grid()
        size, dpi = _fig1_size()
        self._fig1 = Figure(figsize=size, dpi=dpi)
        self._fig1_canvas = FigureCanvasAgg(self._fig1)
        self._fig1_axes = []
        for k, (title, bottom, top, up, edges) in enumerate(_FIG1):
            row, col = divmod(k, cols)
            ax = self._fig1.add_axes((col / cols + 0.005, (rows - 1 - row + 0.1) / rows, 0.95 / cols, 0.78 / rows))
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
        self._fig1.text(0.5, 0.03 / rows, "orange ring: fan-in, where the sweep adds;  unlabelled edges carry 1",
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
        self._limit_fig = Figure(figsize=_LIMIT_SIZE, dpi=figure_dpi())
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
        inverse = self.matrix_view["J^-1"]
        here = (None if inverse is None else
                (abs(inverse[0, 0]), abs(inverse[0, 1]), self.condition))
        for k, ((_, color, style), curve) in enumerate(zip(_LIMIT_CURVES, curves)):
            artists += ax.plot(grid, np.clip(curve, _LIMIT_FLOOR / 2, _LIMIT_CEILING * 2), color=color,
                               linestyle=style, linewidth=1.8)
            if here is not None and _LIMIT_FLOOR <= here[k] <= _LIMIT_CEILING:
                artists += ax.plot([a], [here[k]], "o", color=color, markersize=6, markeredgecolor="black")
        return blit_png(self._limit_canvas, self._limit_background, artists)

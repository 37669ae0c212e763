"""NewtonDemo: Newton's method with one reverse-inverse sweep per iteration (sec. 6) against the
finite-difference baseline, with a convergence plot.
"""

from __future__ import annotations

import html
import numbers as _numbers
import ipywidgets as W
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator, NullLocator
from tensoradbook import inverse as ia
from tensoradbook.integer.matrix import shown
from tensoradbook.inverse import examples
from ..base import NamedPreset, WidgetBase
from .._common import css_width, figure_dpi, choose, move_sliders, shows_errors

from ..style import BLUE, ORANGE, RED
from .shared import _CELL, _TABLE, blit_png, numbers, parse_vector


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


class NewtonDemo(WidgetBase, NamedPreset, W.VBox):
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
        self._status = W.HTML()
        self.preset_menu = W.Dropdown(options=list(NEWTON_PRESETS), description="F(x) = 0:",
                                       style={"description_width": "5em"}, layout=W.Layout(width="30em"))
        self.on_user_change(self.preset_menu, self.set_preset)
        self._h_slider = W.FloatLogSlider(value=h, base=10, min=-12, max=-1, step=0.5, description="FD step h",
                                          readout_format=".0e", style={"description_width": "5em"},
                                          layout=W.Layout(width="28em"))
        self.on_user_change(self._h_slider, self._set_h)
        self._h = h
        self._slider_box = W.HBox()
        self.sliders: list[W.FloatSlider] = []
        self._figure = Figure(figsize=(6.0, 3.8), dpi=figure_dpi())
        self._canvas = FigureCanvasAgg(self._figure)
        self._ax = self._figure.add_axes((0.12, 0.14, 0.5, 0.76))
        self._start_plot()
        self.image = W.Image(format="png", layout=W.Layout(width=css_width(6.0)))
        self.table = W.HTML()
        self.children = [W.HBox([self.preset_menu, self._h_slider]), self._slider_box, self.errors,
                         self._status, self.image, self.table]
        if not self.set_preset(preset, x0):
            raise ValueError(self.error)

    # -- Python API ---------------------------------------------------------------------------
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
        with self.showing():
            self.preset_menu.value = name
            self.sliders = [W.FloatSlider(min=min(-4.0, v), max=max(4.0, v), step=0.05, value=v,
                                           description=f"x₀[{k}]", continuous_update=False, readout_format=".2f",
                                           style={"description_width": "3.5em"}) for k, v in enumerate(x0)]
            for slider in self.sliders:
                slider.observe(lambda _: self._showing or self.set_start([s.value for s in self.sliders]),
                               names="value")
            self._slider_box.children = self.sliders
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
        with self.showing():
            move_sliders(self.sliders, start)
        self._solve()

    @shows_errors
    def _set_h(self, value) -> bool:
        self._h = _difference_step(value)
        with self.showing():
            self._h_slider.value = self._h
        self._solve()
        return True

    def _solve(self) -> None:
        self._inverse = ia.newton(self._program, self._x0, tol=NEWTON_TOL, max_iter=NEWTON_MAX_ITER,
                                  raise_on_failure=False)
        self._differences = ia.finite_difference_newton(self._program, self._x0, self._h, tol=NEWTON_TOL,
                                                        max_iter=NEWTON_MAX_ITER)
        self._status.value = "".join(f"<div><b>{html.escape(line.split(': ', 1)[0])}:</b> "
                                     f"{html.escape(line.split(': ', 1)[1])}</div>" for line in self.status.split("\n"))
        self.image.value = self._draw()
        self.table.value = self._iterates_html()

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

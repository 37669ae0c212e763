"""PolytopeView: ``Sigma(beta)`` in ``alpha``-space and ``z``-space, and its Fourier-Motzkin loop bounds
(report sec. 5.1, figs. 3 and 4).

``Sigma(beta)`` (eq. 42) holds the kernel coordinates ``z`` whose index
``alpha = I beta + K z`` lies in the box. Written as ``K z >= -I beta`` and
``-K z >= I beta - (shape - 1)`` (eqs. 43-44) it is eliminated by
Fourier-Motzkin (Algorithm 3) into the nested loop bounds of eq. 45.

For a 1-D or 2-D kernel the picture has two panels, as the report's figures:

* left, ``alpha``-space (fig. 3, fig. 4a): the index box (red), the solutions
  ``alpha = I beta + K z`` of ``A alpha = beta`` (the line through ``I beta``
  along ``K`` for a 1-D kernel, with its ends ``l`` and ``h`` in the box), the
  image of ``Sigma(beta)`` over the reals (shaded) and its integer points.
  With more than two entries of ``alpha`` the panel shows two of them (the
  first pair on which ``alpha`` is one to one with ``z``); the others follow
  from them, and for a 2-D kernel their box limits are drawn as dashed lines;
* right, ``z``-space (fig. 3, fig. 4b): ``Sigma(beta)`` itself, a segment or a
  polygon, drawn with ``z_1`` (the outer loop) across and ``z_0`` (the inner
  loop) up, so the bounds of ``z_0`` are lines over ``z_1`` and the range of
  ``z_1`` is bounded by vertical lines; the "FM step" slider draws the
  constraints (step 0) or the bounds found by each elimination.

Larger kernels (and a trivial one) are shown as text only.
"""

from __future__ import annotations

import html
from fractions import Fraction
from itertools import product

import ipywidgets as W
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Polygon
from matplotlib.ticker import MaxNLocator

from tensoradbook.integer.matrix import matvec
from tensoradbook.integer.geometry import (drawn_entries, hidden_entries, loop_bounds, polygon_vertices,
                                           solutions_in_view)

from ._common import BetaExplorer, css_width, Plot, SliderSteps, canvas_png, subscript, vector_text
from .style import KERNEL

_REGION = dict(facecolor="#9ecae1", edgecolor="#3182bd", alpha=0.5, linewidth=1.5)
_POINTS = dict(color="#08306b", zorder=5)
_OUTSIDE = dict(facecolors="white", edgecolors="#08306b", linewidths=0.9, zorder=4)  # solutions outside the box
_BOX = dict(color="#d62728", linewidth=1.5, zorder=2)  # the index box, red as in fig. 4a
_GRID = dict(s=9, color="0.78", zorder=1)  # the integer points of the box
_PARTICULAR = dict(marker="*", markersize=14, color="#d62728", markeredgecolor="black", linestyle="none",
                   zorder=6)
_HIDDEN = dict(color="#d62728", linestyle=":", linewidth=1.2)  # box limits of an entry of alpha not drawn

_LINES = {  # what each kind of line shows, and how
    "constraint": (dict(color="0.45", linestyle="--", linewidth=1), "constraints (eqs. 43-44)"),
    "lower": (dict(color="#1f77b4", linewidth=1.6), "lower bounds of z₀"),
    "upper": (dict(color="#ff7f0e", linewidth=1.6), "upper bounds of z₀"),
    "outer": (dict(color="#2ca02c", linewidth=1.6, linestyle="-."), "range of z₁"),
}


def affine_text(constant, coefficients, names) -> str:
    """``4 - z_1`` style text for ``constant + coefficients . names``."""
    text = str(constant) if constant or not any(coefficients) else ""
    for c, name in zip(coefficients, names):
        if not c:
            continue
        term = name if abs(c) == 1 else f"{abs(c)} {name}"
        if text:
            text += (" - " if c < 0 else " + ") + term
        else:
            text = ("-" if c < 0 else "") + term
    return text


def bound_text(name: str, lower, upper, later_names) -> str:
    """``max(-1, -z_1) <= z_0 <= min(1, 4 - z_1)`` for the terms of :func:`loop_bounds`."""

    def term(t):
        if t.integral:  # the rounding moves into the constant (geometry.AffineBound)
            return affine_text(t.rounded_constant, t.coefficients, later_names)
        return f"{'ceil' if t.lower else 'floor'}({affine_text(t.constant, t.coefficients, later_names)})"

    def side(terms, pick, infinite):
        texts = [term(t) for t in terms]
        if not texts:
            return infinite
        return texts[0] if len(texts) == 1 else f"{pick}({', '.join(texts)})"

    return f"{side(lower, 'max', '-inf')} <= {name} <= {side(upper, 'min', 'inf')}"


class _AlphaPlot(Plot):
    """The alpha-space panel: a :class:`~tensoradbook.widgets._common.Plot` whose background (the box,
    its integer points, the axes, ticks and labels: all that stays while beta moves) is drawn once per
    pair of entries shown and kept as pixels; a frame restores them and draws only beta's own artists on
    top (matplotlib's blitting), then pastes the legend's pixels, as :class:`Plot` does. A frame's
    artists stay in the axes (each with a gid saying what it shows) until :meth:`clear_frame`."""

    SIZE = (6.0, 4.75)  # inches: the axes across the whole width, the legend below them; 760 pixels high at scale 2
    LEGEND = dict(loc="lower center", bbox_to_anchor=(0.5, 0.005), ncol=2, fontsize=9, framealpha=0.9)

    def __init__(self):
        super().__init__()
        self.fig.set_size_inches(*self.SIZE)
        self.ax.set_position((0.1, 0.34, 0.86, 0.54))
        self._background = None
        self._legend_pixels: dict[tuple[str, ...], object] = {}
        self._frame_artists = []

    def clear_frame(self) -> None:
        """Remove the last frame's artists (before drawing the next frame or a new background)."""
        for artist in self._frame_artists:
            artist.remove()
        self._frame_artists = []

    def set_background(self) -> None:
        """Call after changing the static artists or the limits: draw them and keep the pixels."""
        self.canvas.draw()
        self._background = self.canvas.copy_from_bbox(self.fig.bbox)

    def frame(self, artists, handles, labels) -> bytes:
        """The background, ``artists`` drawn over it, the legend: PNG bytes."""
        key = tuple(labels)
        if key not in self._legend_pixels:
            legend = self.fig.legend(handles, labels, **self.LEGEND)
            self.canvas.draw()
            self._legend_pixels[key] = self.canvas.copy_from_bbox(legend.get_window_extent().padded(2))
            legend.remove()
        self.canvas.restore_region(self._background)
        for artist in artists:
            self.ax.draw_artist(artist)
        self._frame_artists = list(artists)
        self.canvas.restore_region(self._legend_pixels[key])
        return canvas_png(self.canvas)


class PolytopeView(SliderSteps, BetaExplorer):
    """``Sigma(beta)`` in alpha-space and z-space, and the steps of Fourier-Motzkin elimination on it.

    Python API: ``beta`` / ``set_beta(beta)`` (or the sliders),
    ``set_kernel(K)``, ``step`` (0 = the constraints, k = after eliminating
    ``z_0 .. z_{k-1}``; clamped), ``n_steps``, ``forward()``, ``back()``,
    ``points`` (the integer ``z`` in ``Sigma(beta)``), ``alphas`` (their
    indices ``alpha = I beta + K z``, in the same order), ``drawn_entries``
    (the two entries of alpha the alpha-space panel shows, or None without a
    picture), ``panels`` (the matplotlib axes of the two pictures, ``{"alpha":
    ..., "z": ...}``; empty without a picture), ``bounds_text`` (one line per
    variable, outermost first), ``status`` and ``error``. The pictures are the
    PNGs of ``alpha_image`` (left) and ``z_image`` (right).
    """

    # The alpha-space panel draws the box's integer points (of the two entries shown) and Sigma(beta)'s
    # points are all enumerated: 100 x 100 or 21 x 21 x 21 build in well under a second, 1000 x 1000
    # takes seconds and a 10000 x 10000 box took minutes. The same limit as KernelLattice's, so a box
    # one of the two views takes the other takes too.
    MAX_BOX_POINTS = 10_000

    def __init__(self, A, shape, beta=None, kernel=None):
        super().__init__(A, shape, "PolytopeView", kernel)
        self._kappa = self._inverse.kernel.shape[1]
        self._names = [f"z_{k}" for k in range(self._kappa)]
        self._boxed, self._reason, self._points, self._bounds, self._vertices = None, None, [], [], []
        self._alphas: list[tuple[int, ...]] = []
        self._alpha_plot, self._pair = None, None
        self._alpha_image = W.Image(format="png", layout=W.Layout(width=css_width(_AlphaPlot.SIZE[0])))
        self.slider = W.IntSlider(min=0, max=self._kappa, description="FM step",
                                   style={"description_width": "5em"})
        self.slider.observe(lambda _: self._show_step(), names="value")
        self.step_text = W.HTML()
        self.table = W.HTML()
        if self._kappa in (1, 2):
            self._build_figure()
        else:  # no picture for a point or for more than two dimensions: the text says it all
            self.image.layout.display = self._alpha_image.layout.display = "none"
        # the two pictures side by side where they fit, one below the other where not (a presentation scale)
        self.pictures = W.HBox([self._alpha_image, self.image], layout=W.Layout(flex_flow="row wrap"))
        self.children = [self._slider_box, self.kernel_box, self.errors, self.status_line, self.slider,
                         self.step_text, self.pictures, self.table]
        self._start(beta)

    # -- Python API ---------------------------------------------------------
    @property
    def n_steps(self) -> int:
        """Number of FM steps shown: the constraints plus one per eliminated variable."""
        return self._kappa + 1

    @property
    def points(self) -> list[tuple[int, ...]]:
        return list(self._points)

    @property
    def alphas(self) -> list[tuple[int, ...]]:
        """The indices ``alpha = I beta + K z`` of the points of Sigma(beta), in the same order."""
        return list(self._alphas)

    @property
    def drawn_entries(self) -> tuple[int, int] | None:
        """The entries ``(a, b)`` of alpha drawn across and up in the alpha-space panel; None without a picture."""
        return self._pair

    @property
    def panels(self) -> dict:
        """The axes of the two pictures, ``{"alpha": ..., "z": ...}``; empty for a kernel of dimension 0 or
        more than 2, which is shown as text."""
        return {"alpha": self._alpha_plot.ax, "z": self._ax} if self._alpha_plot is not None else {}

    @property
    def alpha_image(self) -> bytes:
        """The PNG of the alpha-space picture (b"" without a picture)."""
        return bytes(self._alpha_image.value)

    @property
    def z_image(self) -> bytes:
        """The PNG of the z-space picture (b"" without a picture)."""
        return bytes(self.image.value)

    @property
    def bounds_text(self) -> list[str]:
        """The loop bounds of eq. 45, outermost variable first; [] when beta has no solution."""
        return [bound_text(self._names[k], lower, upper, self._names[k + 1:])
                for k, (lower, upper) in reversed(list(enumerate(self._bounds)))]

    # -- state for one beta -------------------------------------------------
    def _update(self) -> None:
        self._boxed, self._reason = self._solve()
        boxed = self._boxed
        self._points = boxed.points() if boxed is not None else []
        self._alphas = [boxed.solutions.point(z) for z in self._points] if boxed is not None else []
        self._bounds = loop_bounds(boxed.system, boxed.rhs) if boxed is not None else []
        self._vertices = (polygon_vertices(boxed.constraint_matrix, boxed.rhs, boxed.system)
                          if boxed is not None and self._kappa == 2 else [])
        self.status_line.show(self._describe())
        self.table.value = self._table_html()
        self._draw_alpha()  # alpha-space changes with beta and the kernel basis, not with the step
        self._show_step()

    def _describe(self) -> str:
        head = f"beta = {vector_text(self._beta)}: "
        if self._boxed is None:
            return head + f"{self._reason}; Sigma(beta) is empty."
        p = self._boxed.solutions.particular
        if self._kappa == 0:
            where = "inside" if self._points else "outside"
            return head + (f"the kernel is trivial, so alpha = I beta = {p} is the only solution; "
                           f"it lies {where} the box.")
        if not self._points:
            real = "" if self._boxed.system.feasible(self._boxed.rhs) else " (not even a real one)"
            return head + f"I beta = {p}, but Sigma(beta) is empty: no z{real} puts I beta + K z inside the box."
        count = len(self._points)
        return head + f"Sigma(beta) has {count} integer point{'s' if count != 1 else ''} z, one per alpha in the box."

    def _table_html(self) -> str:
        if self._boxed is None:
            return ""
        lines = "<br>".join(html.escape(line) for line in self.bounds_text) or "(no loops: z is empty)"
        limit = 40
        shown = ", ".join(str(z) for z in self._points[:limit])
        more = f", ... ({len(self._points) - limit} more)" if len(self._points) > limit else ""
        return (f"<b>Loops of eq. 45, outermost first:</b><br><code>{lines}</code><br>"
                f"<b>Integer points z of Sigma(beta):</b> {html.escape(shown + more) or 'none'}")

    # -- one step of the elimination ----------------------------------------
    def _show_step(self) -> None:
        self.step_text.value = self._step_html()
        if self._kappa in (1, 2):
            self._draw()

    def _rows_text(self, A, rhs) -> str:
        return "<br>".join(html.escape(f"{affine_text(0, row, self._names)} >= {c}")
                           for row, c in zip(A.tolist(), rhs) if any(row))

    def _step_html(self) -> str:
        s, boxed = self.step, self._boxed
        if boxed is None:
            return "<i>No system to eliminate: beta has no solution.</i>"
        if self._kappa == 0:
            return "<i>The kernel is trivial: there is no variable to eliminate.</i>"
        if s == 0:
            return ("<b>Step 0</b>: the constraints K z &ge; &minus;I&beta; and &minus;K z &ge; I&beta; &minus; "
                    "(shape &minus; 1) (eqs. 43-44):<br><code>"
                    + self._rows_text(boxed.constraint_matrix, boxed.rhs) + "</code>")
        system = boxed.system
        st = system.steps[s - 1]
        k = st.variable
        lower, upper = self._bounds[k]
        text = (f"<b>Step {s}</b>: eliminate {self._names[k]} (Algorithm 3): {st.lower} rows bound it from below, "
                f"{st.upper} from above, {st.untouched} do not contain it; {st.generated} rows generated, "
                f"{st.kept} kept after pruning.<br>Bounds: <code>"
                + html.escape(bound_text(self._names[k], lower, upper, self._names[k + 1:])) + "</code>")
        if s < self._kappa:
            return text + "<br>Remaining system:<br><code>" + self._rows_text(st.A, matvec(st.B, boxed.rhs)) + "</code>"
        feasible = "holds" if system.feasible(boxed.rhs) else "fails: the region is empty"
        return text + f"<br>All variables eliminated; feasibility F b &le; 0 (eq. 34) {feasible}."

    # -- drawing --------------------------------------------------------------
    def _build_figure(self) -> None:
        self._plot = Plot()
        ax = self._ax = self._plot.ax
        if self._kappa == 2:
            ax.set_xlabel("z₁ (outer loop)", fontsize=12)
            ax.set_ylabel("z₀ (inner loop)", fontsize=12)
            self._region = ax.add_patch(Polygon([[0, 0]], closed=True, gid="z-region", **_REGION))
        else:
            ax.set_xlabel("z₀", fontsize=12)
            ax.set_yticks([])
            ax.set_ylim(-1, 1)
            (self._region,) = ax.plot([], [], color=_REGION["edgecolor"], linewidth=6, alpha=0.5,
                                      solid_capstyle="butt", gid="z-region")
        self._dots = ax.scatter([], [], s=40, gid="z-points", **_POINTS)
        self._step_artists = []
        self._alpha_plot = _AlphaPlot()

    def _draw(self) -> None:
        ax = self._ax
        for artist in self._step_artists:
            artist.remove()
        self._step_artists = []
        kinds = set()
        if self._boxed is None:
            self._region.set_visible(False)
            self._dots.set_offsets(np.empty((0, 2)))
        else:
            flip = self._kappa == 2  # z_1 across, z_0 up
            self._dots.set_offsets(np.array([(z[1], z[0]) if flip else (z[0], 0) for z in self._points],
                                            dtype=float).reshape(-1, 2))
            for kind, where, slope in self._lines():
                style = _LINES[kind][0]
                self._step_artists.append(ax.axvline(float(where), **style) if slope is None else
                                          ax.axline((0.0, float(where)), slope=float(slope), **style))
                kinds.add(kind)
            self._draw_region()
        if not self._region.get_visible():
            message = "no solution for this β" if self._boxed is None else "Σ(β) is empty"
            self._step_artists.append(ax.text(0.5, 0.5, message, transform=ax.transAxes, ha="center",
                                              fontsize=13, color="#b00020",
                                              bbox=dict(facecolor="white", edgecolor="none")))
        handles = [Patch(**_REGION), Line2D([], [], marker="o", linestyle="none", **_POINTS)]
        labels = ["Σ(β) over the reals", "integer points of Σ(β)"]
        for kind in ("constraint", "lower", "upper", "outer"):
            if kind in kinds:
                style, label = _LINES[kind]
                handles.append(Line2D([], [], **style))
                labels.append(label.replace("z₀", "z") if self._kappa == 1 else label)
        ax.set_title(f"z-space: Σ(β) for β = {vector_text(self._beta)}, FM step {self.step}", fontsize=11)
        self.image.value = self._plot.png(handles, labels)

    def _alpha_background(self) -> tuple[int, int]:
        """Set up the alpha-space axes for the pair of entries this kernel basis draws (once per pair)."""
        pair = drawn_entries(self._kernel)
        if pair == self._pair:
            return pair
        self._pair = pair
        plot = self._alpha_plot
        ax = plot.ax
        ax.cla()
        for axis in (ax.xaxis, ax.yaxis):  # as Plot sets them up: integer ticks, few of them
            axis.set_major_locator(MaxNLocator(nbins=7, integer=True))
        ax.tick_params(labelsize=9)
        a, b = pair
        high_a, high_b = self.shape[a] - 1, self.shape[b] - 1
        ax.plot([0, high_a, high_a, 0, 0], [0, 0, high_b, high_b, 0], gid="alpha-box", **_BOX)
        grid = np.array(list(product(range(high_a + 1), range(high_b + 1))), dtype=float)
        ax.scatter(grid[:, 0], grid[:, 1], gid="alpha-grid", **_GRID)
        ax.set_xlabel(f"α{subscript(a)}", fontsize=12)
        ax.set_ylabel(f"α{subscript(b)}", fontsize=12)
        # A fixed view (the box and a margin), at equal scale so the kernel directions keep their angles.
        ax.set_xlim(-1.3, high_a + 1.3)
        ax.set_ylim(-1.3, high_b + 1.3)
        ax.set_aspect("equal", adjustable="box")
        ax.set_anchor("S")  # a flat box sits on the legend, its title with it
        plot.set_background()
        return pair

    def _solution_line(self, ax, start, tip, at) -> list:
        """The real solutions, the line through I beta along K's one column, and on it the image of Sigma(beta)
        over the reals from l to h as in fig. 3; ``at(z)`` is the point of I beta + K z drawn."""
        artists = [ax.axline(start, tip, color=KERNEL, linestyle=":", linewidth=1.4, zorder=1, gid="alpha-line")]
        lower, upper = self._bounds[0]
        low, high = lower[0].constant, upper[0].constant
        if low <= high:
            ends = [at([low]), at([high])]
            artists += ax.plot(*zip(*ends), color=_REGION["edgecolor"], linewidth=6, alpha=0.5,
                               solid_capstyle="butt", zorder=2, gid="alpha-region")
            for (x, y), name in zip(ends, "lh"):
                artists.append(ax.annotate(name, (x, y), xytext=(7, -14 if name == "l" else 6),
                                           textcoords="offset points", fontsize=13, fontweight="bold",
                                           color=_REGION["edgecolor"], gid=f"alpha-{name}"))
        return artists

    def _draw_alpha(self) -> None:
        """The alpha-space picture for this beta: the box, the solutions and the image of Sigma(beta)."""
        if self._alpha_plot is None:
            return
        self._alpha_plot.clear_frame()
        a, b = self._alpha_background()
        ax = self._alpha_plot.ax
        artists = []
        hidden = [h for h in range(len(self.shape)) if h not in (a, b)]
        view = [ax.get_xlim(), ax.get_ylim()]
        title = f"α-space: α = Iβ + K z for β = {vector_text(self._beta)}"
        if self._boxed is None:
            artists.append(ax.text(0.5, 0.5, "no integer solution for this β", transform=ax.transAxes,
                                   ha="center", fontsize=13, color="#b00020", gid="alpha-message",
                                   bbox=dict(facecolor="white", edgecolor="none")))
        else:
            p = [int(v) for v in self._boxed.solutions.particular]
            K = [[int(v) for v in row] for row in self._kernel.tolist()]

            def at(z):  # (alpha_a, alpha_b) of I beta + K z, for real z
                return tuple(float(p[c] + sum(K[c][j] * z[j] for j in range(self._kappa))) for c in (a, b))

            start = (float(p[a]), float(p[b]))
            tips = [at([int(j == i) for j in range(self._kappa)]) for i in range(self._kappa)]
            if self._kappa == 1:
                artists += self._solution_line(ax, start, tips[0], at)
            elif self._vertices:  # the image of the polygon Sigma(beta) over the reals (fig. 4a)
                artists.append(ax.add_patch(Polygon([at([z0, z1]) for z0, z1 in self._vertices], closed=True,
                                                    gid="alpha-region", **_REGION)))
            if self._kappa == 2:
                artists += self._hidden_limits(a, b, p, K)
            outside = [at(z) for z in solutions_in_view(p, K, (a, b), view, outside=self.shape)]
            if outside:
                artists.append(ax.scatter(*np.array(outside).T, s=34, gid="alpha-outside", **_OUTSIDE))
            inside = np.array([(alpha[a], alpha[b]) for alpha in self._alphas], dtype=float).reshape(-1, 2)
            artists.append(ax.scatter(inside[:, 0], inside[:, 1], s=46, gid="alpha-points", **_POINTS))
            if all(low <= v <= high for v, (low, high) in zip(start, view)):
                artists += ax.plot(*start, gid="alpha-particular", **_PARTICULAR)
                for tip in tips:  # the columns of K as arrows from I beta (the tips may leave the view)
                    arrow = ax.annotate("", xy=tip, xytext=start, zorder=3, annotation_clip=False, gid="alpha-kernel",
                                        arrowprops=dict(arrowstyle="-|>", color=KERNEL, linewidth=2,
                                                        mutation_scale=14))
                    arrow.arrow_patch.set_clip_path(ax.patch)
                    artists.append(arrow)
            else:
                title += f"\nIβ = {vector_text(p)} lies outside this view"
        artists.append(ax.text(0.5, 1.02, title, transform=ax.transAxes, ha="center", va="bottom", fontsize=11,
                               gid="alpha-title"))
        legend = {
            "box": (Line2D([], [], **_BOX), "box 0 ≤ α < shape"),
            "line": (Line2D([], [], color=KERNEL, linestyle=":", linewidth=1.4), "α = Iβ + K z, z real"),
            "region": (Patch(**_REGION), "Σ(β) (reals) mapped to α"),
            "points": (Line2D([], [], marker="o", linestyle="none", **_POINTS), "α of the points of Σ(β)"),
            "outside": (Line2D([], [], marker="o", linestyle="none", markerfacecolor="white",
                               markeredgecolor=_POINTS["color"]), "solutions outside the box"),
            "particular": (Line2D([], [], **_PARTICULAR), "Iβ"),
            "kernel": (Line2D([], [], color=KERNEL, linewidth=2, marker=">", markevery=[1]), "columns of K"),
            "hidden": (Line2D([], [], **_HIDDEN), "box limits of " + ", ".join(f"α{subscript(h)}" for h in hidden)
                       + f" (fixed by α{subscript(a)}, α{subscript(b)})"),
        }
        # One legend per widget, whatever this beta draws: laying out a new legend costs a full redraw.
        kinds = {"box", "region", "points", "outside", "particular", "kernel"}
        kinds |= {"line"} if self._kappa == 1 else ({"hidden"} if hidden else set())
        handles, labels = zip(*(legend[kind] for kind in legend if kind in kinds))
        self._alpha_image.value = self._alpha_plot.frame(artists, handles, labels)

    def _hidden_limits(self, a, b, p, K) -> list:
        """For a 2-D kernel: the box limits ``0 <= alpha_h <= shape_h - 1`` of each entry not drawn, as
        lines in the panel (on the solutions, alpha_h is an affine function of alpha_a and alpha_b)."""
        lines = []
        for h, (c, g_a, g_b) in hidden_entries(p, K, (a, b)).items():
            for level in (0, self.shape[h] - 1):
                if g_b:
                    line = self._alpha_plot.ax.axline((0.0, float((level - c) / g_b)), slope=float(-g_a / g_b),
                                                      gid="alpha-hidden", **_HIDDEN)
                elif g_a:
                    line = self._alpha_plot.ax.axvline(float((level - c) / g_a), gid="alpha-hidden", **_HIDDEN)
                else:  # alpha_h is the same for every solution: no line
                    continue
                lines.append(line)
        return lines

    def _lines(self) -> list[tuple]:
        """The current step's lines in plot coordinates.

        ``(kind, x, None)`` is a vertical line, ``(kind, c, m)`` the line
        ``y = c + m x``. Step 0 draws every constraint of eqs. 43-44; later
        steps the bounds of ``z_0`` over ``z_1`` (``L[0] b + Lhat[0] z_1`` and
        ``H[0] b + Hhat[0] z_1``) and, once ``z_1`` is eliminated, its range.
        """
        boxed = self._boxed
        if self.step == 0:
            lines = []
            for row, c in zip(boxed.constraint_matrix.tolist(), boxed.rhs):
                a0, a1 = row[0], (row[1] if self._kappa == 2 else 0)
                if self._kappa == 1:
                    if a0:  # a0 z_0 >= c ends at the point c / a0
                        lines.append(("constraint", Fraction(c, a0), None))
                elif a0:  # a0 z_0 + a1 z_1 >= c along the line z_0 = c/a0 - (a1/a0) z_1
                    lines.append(("constraint", Fraction(c, a0), Fraction(-a1, a0)))
                elif a1:
                    lines.append(("constraint", Fraction(c, a1), None))
            return lines
        lower, upper = self._bounds[0]
        lines = [(kind, t.constant, t.coefficients[0] if self._kappa == 2 else None)
                 for kind, terms in (("lower", lower), ("upper", upper)) for t in terms]
        if self._kappa == 2 and self.step == 2:
            lines += [("outer", t.constant, None) for t in self._bounds[1][0] + self._bounds[1][1]]
        return lines

    def _draw_region(self) -> None:
        """Shade the real region and fit the view to it (keeping the last view when it is empty)."""
        ax = self._ax
        if self._kappa == 2:
            corners = [(float(z1), float(z0)) for z0, z1 in self._vertices]
        else:
            (lower, upper) = self._bounds[0]
            lo, hi = float(lower[0].constant), float(upper[0].constant)
            corners = [(lo, 0.0), (hi, 0.0)] if lo <= hi else []
        self._region.set_visible(bool(corners))
        if not corners:
            return
        xs, ys = [c[0] for c in corners], [c[1] for c in corners]
        if self._kappa == 2:
            self._region.set_xy(corners)
            ax.set_ylim(min(ys) - 1.2, max(ys) + 1.2)
        else:
            self._region.set_data(xs, ys)
        ax.set_xlim(min(xs) - 1.2, max(xs) + 1.2)

"""PolytopeView: ``Sigma(beta)`` in ``z``-space and its Fourier-Motzkin loop bounds (report sec. 5.1).

``Sigma(beta)`` (eq. 42) holds the kernel coordinates ``z`` whose index
``alpha = I beta + K z`` lies in the box. Written as ``K z >= -I beta`` and
``-K z >= I beta - (shape - 1)`` (eqs. 43-44) it is eliminated by
Fourier-Motzkin (Algorithm 3) into the nested loop bounds of eq. 45. For a 1-D
kernel the region is a segment (fig. 3), for a 2-D kernel a polygon (fig. 4b),
drawn with ``z_1`` (the outer loop) across and ``z_0`` (the inner loop) up, so
the bounds of ``z_0`` are lines over ``z_1`` and the range of ``z_1`` is
bounded by vertical lines. Larger kernels are shown as text.
"""

from __future__ import annotations

import html
from fractions import Fraction

import ipywidgets as W
import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Polygon

from tensoradbook._matrix import matvec
from tensoradbook.geometry import loop_bounds, polygon_vertices

from ._common import BetaExplorer, Plot, vector_text

_REGION = dict(facecolor="#9ecae1", edgecolor="#3182bd", alpha=0.5, linewidth=1.5)
_POINTS = dict(color="#08306b", zorder=5)
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


class PolytopeView(BetaExplorer):
    """``Sigma(beta)`` and the steps of Fourier-Motzkin elimination on it.

    Python API: ``beta`` / ``set_beta(beta)`` (or the sliders), ``step``
    (0 = the constraints, k = after eliminating ``z_0 .. z_{k-1}``; clamped),
    ``points`` (the integer ``z`` in ``Sigma(beta)``), ``bounds_text`` (one
    line per variable, outermost first), ``status`` and ``error``.
    """

    def __init__(self, A, shape, beta=None, kernel=None):
        super().__init__(A, shape, "PolytopeView", kernel)
        self._kappa = self._inverse.kernel.shape[1]
        self._names = [f"z_{k}" for k in range(self._kappa)]
        self._boxed, self._reason, self._points, self._bounds, self._vertices = None, None, [], [], []
        self._step_slider = W.IntSlider(min=0, max=self._kappa, description="FM step",
                                        style={"description_width": "5em"})
        self._step_slider.observe(lambda _: self._show_step(), names="value")
        self._step_text = W.HTML()
        self._table = W.HTML()
        if self._kappa in (1, 2):
            self._build_figure()
        else:  # no picture for a point or for more than two dimensions: the text says it all
            self._image.layout.display = "none"
        self.children = [self._slider_box, self._kernel_box, self._errors, self._status, self._step_slider,
                         self._step_text, self._image, self._table]
        self._start(beta)

    # -- Python API ---------------------------------------------------------
    @property
    def step(self) -> int:
        return self._step_slider.value

    @step.setter
    def step(self, value: int) -> None:
        self._step_slider.value = max(0, min(self._kappa, int(value)))

    @property
    def points(self) -> list[tuple[int, ...]]:
        return list(self._points)

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
        self._bounds = loop_bounds(boxed.system, boxed.rhs) if boxed is not None else []
        self._vertices = (polygon_vertices(boxed.constraint_matrix, boxed.rhs, boxed.system)
                          if boxed is not None and self._kappa == 2 else [])
        self._status.show(self._describe())
        self._table.value = self._table_html()
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
        self._step_text.value = self._step_html()
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
            self._region = ax.add_patch(Polygon([[0, 0]], closed=True, **_REGION))
        else:
            ax.set_xlabel("z₀", fontsize=12)
            ax.set_yticks([])
            ax.set_ylim(-1, 1)
            (self._region,) = ax.plot([], [], color=_REGION["edgecolor"], linewidth=6, alpha=0.5,
                                      solid_capstyle="butt")
        self._dots = ax.scatter([], [], s=40, **_POINTS)
        self._step_artists = []

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
        ax.set_title(f"Σ(β) for β = {vector_text(self._beta)}, step {self.step}",
                     fontsize=11)
        self._image.value = self._plot.png(handles, labels)

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

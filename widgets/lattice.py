"""KernelLattice: the integer solutions of ``A alpha = beta`` in ``alpha``-space (report figs. 3, 4a).

The solutions are ``alpha = I beta + K z`` (eq. 41): the particular solution
``I beta`` (eqs. 17-19) moved along the kernel directions, the columns of
``K``. Those inside the box ``0 <= alpha < shape`` are ``Sigma(beta)`` mapped
back to ``alpha`` (eq. 42); the widget draws them for 2-D and 3-D ``alpha``.
"""

from __future__ import annotations

from itertools import product

import numpy as np
from matplotlib.lines import Line2D

from ._common import BetaExplorer, Plot, subscript, vector_text
from .style import KERNEL

_SOLUTION = dict(color="#1f77b4", edgecolor="black", linewidths=0.6, zorder=6)  # above I beta when they meet
_PARTICULAR = dict(marker="*", markersize=15, color="#d62728", markeredgecolor="black", linestyle="none")


def _listing(points, limit: int = 8) -> str:
    shown = ", ".join(str(p) for p in points[:limit])
    return shown + (f", ... ({len(points) - limit} more)" if len(points) > limit else "")


class KernelLattice(BetaExplorer):
    """``alpha``-space picture of ``A alpha = beta`` for ``A`` with 2 or 3 columns.

    Python API: ``beta`` (tuple; set it with ``set_beta(beta)`` or the
    sliders), ``status`` (plain text), ``alphas`` (the solutions in the box, in
    the core's loop order) and ``error`` ("" if none).
    """

    # Every point of the box is drawn and the solutions in it listed: 100 x 100 or 21 x 21 x 21 build in
    # well under a second; a 10000 x 10000 box would not be done in minutes.
    MAX_BOX_POINTS = 10_000

    def __init__(self, A, shape, beta=None, kernel=None):
        super().__init__(A, shape, "KernelLattice", kernel)
        self._dim = self._A.shape[1]
        if self._dim not in (2, 3):
            raise ValueError(f"KernelLattice draws 2-D and 3-D index spaces: A must have 2 or 3 columns "
                             f"(one per entry of alpha), got {self._dim}")
        self._alphas: list[tuple[int, ...]] = []
        self._build_figure()
        self.children = [self._slider_box, self.kernel_box, self.errors, self.status_line, self.image]
        self._start(beta)

    @property
    def alphas(self) -> list[tuple[int, ...]]:
        return list(self._alphas)

    # -- drawing --------------------------------------------------------------
    def _build_figure(self) -> None:
        """The parts that do not depend on beta: the box, its grid points, labels, legend entries."""
        self._plot = Plot("3d" if self._dim == 3 else None)
        ax = self._ax = self._plot.ax
        grid = np.array(list(product(*(range(n) for n in self.shape)))).T
        flat = {"depthshade": False} if self._dim == 3 else {}  # 3-D shading would fade far points
        ax.scatter(*grid, s=12 if self._dim == 2 else 5, color="0.75", zorder=1, **flat)
        for edge in self._box_edges():
            ax.plot(*edge, color="#d62728", linewidth=1.2, zorder=2)
        for k, label in enumerate(("set_xlabel", "set_ylabel", "set_zlabel")[:self._dim]):
            getattr(ax, label)(f"α{subscript(k)}", fontsize=12)
        empty = [[] for _ in range(self._dim)]
        self._solutions = ax.scatter(*empty, s=46 if self._dim == 2 else 60, **_SOLUTION, **flat)
        (self._particular,) = ax.plot(*empty, **_PARTICULAR, zorder=5)
        self._line = None  # the real line through I beta along a 1-D kernel (2-D alpha only)
        self._arrows = []
        self._legend_handles = [
            Line2D([], [], marker="o", color="0.75", linestyle="none", markersize=5),
            Line2D([], [], color="#d62728"),
            Line2D([], [], marker="o", color=_SOLUTION["color"], markeredgecolor="black",
                   linestyle="none", markersize=8),
            Line2D([], [], **_PARTICULAR),
            Line2D([], [], color=KERNEL, linewidth=2, marker=">", markevery=[1]),
        ]
        self._legend_labels = ["points of the box", "box 0 ≤ α < shape", "solutions in the box", "Iβ",
                               "columns of K"]

    def _box_edges(self):
        """The edges of the box ``0 <= alpha <= shape - 1`` as coordinate lists."""
        highs = [n - 1 for n in self.shape]
        corners = list(product(*([0, h] for h in highs)))
        return [list(zip(a, b)) for a, b in product(corners, corners)
                if a < b and sum(x != y for x, y in zip(a, b)) == 1]

    def _update(self) -> None:
        boxed, reason = self._solve()
        particular = [float(v) for v in self._inverse.solvability(self._beta).particular]
        self._alphas = boxed.alphas() if boxed is not None else []
        self.status_line.show(self._describe(reason, particular))
        self._draw(particular)

    def _describe(self, reason, particular) -> str:
        if reason is not None:
            return f"beta = {vector_text(self._beta)}: {reason}."
        box = " x ".join(str(n) for n in self.shape)
        count = len(self._alphas)
        if not count:
            return (f"beta = {vector_text(self._beta)}: A alpha = beta has integer solutions (I beta = "
                    f"{tuple(int(v) for v in particular)}), but none lies in the {box} box.")
        noun = "solution lies" if count == 1 else "solutions lie"
        return f"beta = {vector_text(self._beta)}: {count} {noun} in the {box} box: {_listing(self._alphas)}."

    def _draw(self, particular) -> None:
        ax, kernel = self._ax, self._kernel.T.tolist()
        points = np.array(self._alphas, dtype=float).reshape(-1, self._dim)
        if self._dim == 3:
            # A 3-D scatter keeps its data in _offsets3d; matplotlib has no public setter for it.
            self._solutions._offsets3d = tuple(points.T)
            self._particular.set_data_3d(*([v] for v in particular))
        else:
            self._solutions.set_offsets(points)
            self._particular.set_data(*([v] for v in particular))
        for artist in self._arrows + ([self._line] if self._line is not None else []):
            artist.remove()
        tips = [[p + d for p, d in zip(particular, direction)] for direction in kernel]
        self._arrows = [self._arrow(particular, direction, tip) for direction, tip in zip(kernel, tips)]
        self._line = None
        if self._dim == 2 and len(kernel) == 1:
            self._line = ax.axline(particular, tips[0], color=KERNEL, linewidth=0.8, linestyle=":", zorder=1)
        # Keep the box, I beta and the arrow tips in view, at equal scale on every axis so the
        # kernel directions keep their true angles.
        spans = []
        for k, setter in enumerate((ax.set_xlim, ax.set_ylim, getattr(ax, "set_zlim", None))[:self._dim]):
            values = [0, self.shape[k] - 1, particular[k]] + [tip[k] for tip in tips]
            setter(min(values) - 0.7, max(values) + 0.7)
            spans.append(max(values) - min(values) + 1.4)
        if self._dim == 3:
            ax.set_box_aspect(spans)
        else:
            ax.set_aspect("equal", adjustable="box")
        ax.set_title(f"Aα = β for β = {vector_text(self._beta)}", fontsize=11)
        # Legend entries only for what is drawn (each distinct legend is cached by Plot).
        drawn = (True, True, bool(self._alphas), True, bool(kernel))
        handles, labels = zip(*(entry for entry, shown in zip(zip(self._legend_handles, self._legend_labels), drawn)
                                if shown))
        self.image.value = self._plot.png(handles, labels)

    def _arrow(self, start, direction, tip):
        """An arrow for one kernel column, from I beta to I beta + K e_j."""
        if self._dim == 3:
            return self._ax.quiver(*start, *direction, color=KERNEL, linewidth=2, arrow_length_ratio=0.25)
        return self._ax.annotate("", xy=tip, xytext=start, zorder=3,
                                 arrowprops=dict(arrowstyle="-|>", color=KERNEL, linewidth=2, mutation_scale=14))

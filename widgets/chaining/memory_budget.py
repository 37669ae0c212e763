"""MemoryBudget: the least fma against the tape bound as a staircase (sec. 4): the paper's single-value
rule against the exact optimum.
"""

from __future__ import annotations

import html
import ipywidgets as W
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator
from tensoradbook import chaining as jc
from .._common import AXES_RECT, FIGSIZE, Plot, canvas_png, css_width

from ..style import BLUE, GREEN, RED
from .shared import SECTION_4, _compact, _number
from .controls import _ChainWidget


# -- MemoryBudget -------------------------------------------------------------------------------------------

MEMORY_LEGEND = [
    (Line2D([], [], color=GREEN, linewidth=2.2), "exact optimum"),
    (Line2D([], [], color=RED, linewidth=1.8, linestyle="--"), "paper's rule"),
    (Patch(facecolor=RED, alpha=0.15), "the rule pays more"),
    (Line2D([], [], color=BLUE, linewidth=1.2, linestyle=":"), "homogeneous tangent"),
    (Line2D([], [], color=BLUE, marker="s", linestyle="none"), "homogeneous adjoint"),
    (Line2D([], [], color="black", linewidth=1), "M̄ (slider)"),
]


class MemoryBudget(_ChainWidget):
    """The least fma against the tape bound ``Mbar`` (sec. 4): the paper's rule against the exact optimum.

    The exact optimum (Pareto fronts, :func:`tensoradbook.chaining.optimize`)
    falls as a staircase as ``Mbar`` grows; the paper's single-value
    programme can stay above it (sec. 4 at ``Mbar = 55``: 120 against 64) and
    can even rise when ``Mbar`` grows. The slider moves ``Mbar``.

    Python API: ``memory`` (the bound shown), ``set_memory(M) -> bool``,
    ``exact`` (the exact optimum's core Schedule at this bound), ``paper`` (the
    paper rule's core Plan there), ``exact_steps`` ((tape, fma) of the exact
    staircase's corners, tape ascending), ``paper_steps`` ((low, high, fma,
    tape) per piece), ``set_chain(chain, memory=...)``, ``set_preset(name)``,
    ``chain``, ``error``.
    """

    MAX_Q = 8
    SHOW_MEMORY_ENTRY = False
    DEFAULT_PRESET = SECTION_4

    def __init__(self, chain=None, memory=..., preset: str | None = None):
        super().__init__()
        self._init_controls()
        self._curves: dict = {}  # chain -> (exact front, paper pieces, baselines), computed once per chain
        self._shown_chain = None
        self.slider = W.IntSlider(min=0, max=1, description="M̄", continuous_update=True,
                                   style={"description_width": "2em"}, layout=W.Layout(width="40em"))
        self.on_user_change(self.slider, self.set_memory)
        self._plot = Plot()
        _, bottom, _, height = AXES_RECT[None]
        self._title = self._plot.fig.text(0.5, bottom + height + 0.05, "", ha="center", va="center", fontsize=10)
        self.image = W.Image(format="png", layout=W.Layout(width=css_width(FIGSIZE[0])))
        self.text = W.HTML()
        self.children = [self._controls, self.errors, self.slider, self.image, self.text]
        self._start(chain, memory, "exact", preset)

    # -- Python API ---------------------------------------------------------
    @property
    def exact(self):
        front = self._curves[self.chain][0]
        return next(s for s in front if s.memory <= self.memory)  # cheapest first; tape 0 always fits

    @property
    def paper(self):
        return next(plan for low, high, plan in self._curves[self.chain][1] if low <= self.memory <= high)

    @property
    def exact_steps(self) -> list[tuple[int, int]]:
        return [(s.memory, s.fma) for s in reversed(self._curves[self.chain][0])]

    @property
    def paper_steps(self) -> list[tuple[int, int, int, int]]:
        return [(low, high, plan.fma, plan.memory) for low, high, plan in self._curves[self.chain][1]]

    # -- computing and drawing ----------------------------------------------
    def _compute(self, state: dict):
        chain = state["chain"]
        total = chain.total_edges
        # No bound is the same as all edges: no schedule's tape exceeds sum |E|.
        state["memory"] = total if state["memory"] is None else min(state["memory"], total)
        if chain not in self._curves:
            if len(self._curves) >= 16:  # a few chains are kept, so presets switch back quickly
                self._curves.pop(next(iter(self._curves)))
            front = jc.optimize(chain, total).cell(chain.q, 1).front
            self._curves[chain] = (front, jc.paper_rule_pieces(chain), jc.baselines(chain))
        return None

    def _accept(self, _) -> None:
        self.slider.max = self.chain.total_edges
        self.slider.value = self.memory

    # The curves, axes and legend change only with the chain: they are drawn once per chain and kept as
    # pixels; a move of the slider restores them and draws the marker, the two dots and the title on top
    # (matplotlib's blitting), which keeps it well inside 100 ms.
    def _show(self) -> None:
        if self._shown_chain != self.chain:
            self._draw_curves()
            self._shown_chain = self.chain
        exact, paper, bound = self.exact, self.paper, self.memory
        canvas = self._plot.canvas
        canvas.restore_region(self._background)
        self._marker.set_xdata([bound, bound])
        self._exact_dot.set_data([bound], [float(exact.fma)])
        self._paper_dot.set_data([bound], [float(paper.fma)])
        for artist in (self._marker, self._paper_dot, self._exact_dot):
            artist.set_visible(True)
            self._plot.ax.draw_artist(artist)
        self._title.set_text(f"M̄ = {_number(bound)}: exact {_number(exact.fma)} fma, "
                             f"paper's rule {_number(paper.fma)} fma")
        self._plot.fig.draw_artist(self._title)
        self.image.value = canvas_png(canvas)
        self.text.value = self._describe(exact, paper)

    def _draw_curves(self) -> None:
        chain = self.chain
        total = chain.total_edges
        front, pieces, baselines = self._curves[chain]
        ax = self._plot.ax
        ax.clear()
        exact_x = [m for m, _ in self.exact_steps] + [total]
        exact_y = [f for _, f in self.exact_steps]
        exact_y.append(exact_y[-1])
        paper_x = [low for low, _, _ in pieces] + [total]
        paper_y = [plan.fma for _, _, plan in pieces]
        paper_y.append(paper_y[-1])
        corners = sorted(set(exact_x) | set(paper_x))
        exact_at = [min(s.fma for s in front if s.memory <= x) for x in corners]
        paper_at = [next(plan.fma for low, high, plan in pieces if low <= x <= high) for x in corners]
        # Costs can exceed int64 (an int array would then hold Python objects matplotlib cannot draw): floats.
        exact_y, paper_y, exact_at, paper_at = ([float(v) for v in values] for values in
                                                (exact_y, paper_y, exact_at, paper_at))
        ax.fill_between(corners, exact_at, paper_at, step="post", color=RED, alpha=0.15, linewidth=0)
        ax.step(paper_x, paper_y, where="post", color=RED, linewidth=1.8, linestyle="--")
        ax.step(exact_x, exact_y, where="post", color=GREEN, linewidth=2.2)
        tangent, adjoint = float(baselines["tangent"].fma), float(baselines["adjoint"].fma)
        ax.axhline(tangent, color=BLUE, linewidth=1.2, linestyle=":")
        ax.plot([total], [adjoint], marker="s", color=BLUE, markersize=7, linestyle="none")
        self._marker = ax.axvline(0, color="black", linewidth=1, visible=False)
        self._exact_dot, = ax.plot([], [], marker="o", color=GREEN, markersize=7, linestyle="none", visible=False)
        self._paper_dot, = ax.plot([], [], marker="o", color=RED, markersize=6, linestyle="none",
                                   markerfacecolor="white", visible=False)
        ax.set_xlim(-0.02 * total, 1.04 * total)
        ax.set_ylim(0, 1.08 * max(tangent, adjoint, max(paper_y)))
        ax.set_xlabel("tape bound M̄ (edges)", fontsize=11)
        ax.set_ylabel("fma", fontsize=11)
        ax.grid(True, color="#dddddd", linewidth=0.6)
        ax.tick_params(labelsize=9)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(MaxNLocator(nbins=6, integer=True))
            axis.set_major_formatter(FuncFormatter(_compact))
        self._title.set_text("")  # drawn per bound, over the kept pixels
        self._plot.png(*zip(*MEMORY_LEGEND))  # the full drawing, its legend pasted from the first one
        self._background = self._plot.canvas.copy_from_bbox(self._plot.fig.bbox)

    def _describe(self, exact, paper) -> str:
        chain = self.chain
        gap = paper.fma - exact.fma
        verdict = ("The paper's rule finds the optimum here." if gap == 0 else
                   f"The paper's rule pays <b>{_number(gap)} fma more</b> (+{100 * gap / exact.fma:.0f}%): "
                   f"it keeps one solution per cell, the cheapest, even when that one's tape later blocks "
                   f"a cheaper adjoint sweep.")
        rises = [(a, b) for a, b in zip(self.paper_steps, self.paper_steps[1:]) if b[2] > a[2]]
        warning = ""
        if rises:
            a, b = rises[0]
            warning = (f"<p>Not monotone: raising M̄ from {_number(a[1])} to {_number(b[0])} makes the paper's "
                       f"rule <i>worse</i> ({_number(a[2])} → {_number(b[2])} fma).</p>")
        return (f"<p>M̄ = {_number(self.memory)}:</p><ul>"
                f"<li><span style='color:{GREEN}'><b>exact optimum</b></span> {_number(exact.fma)} fma, tape "
                f"{_number(exact.memory)}: <code>{html.escape(exact.notation(chain))}</code></li>"
                f"<li><span style='color:{RED}'><b>paper's rule</b></span> {_number(paper.fma)} fma, tape "
                f"{_number(paper.memory)}: <code>{html.escape(paper.notation)}</code></li></ul>"
                f"<p>{verdict}</p>{warning}")

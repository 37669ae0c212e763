"""TwoFactorExplorer: the eight schedules of ``F_2 o F_1`` (Naumann, sec. 3, the proof of Theorem 3.1)
as bars, the optimum highlighted, with presets for the paper's five cases.
"""

from __future__ import annotations

import html
import re
import ipywidgets as W
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from tensoradbook import chaining as jc
from tensoradbook.integer.matrix import as_int
from ..base import WidgetBase
from .._common import canvas_png, choose, css_width, figure_dpi, shows_errors

from ..style import BLUE, GREEN
from .shared import (BAR_FIGSIZE, SIZE_LABELS, SIZE_NAMES, SLIDER_MAX, TWO_FACTOR_PRESETS, _number,
                     check_size)


# -- TwoFactorExplorer ------------------------------------------------------------------------------------

class TwoFactorExplorer(WidgetBase, W.VBox):
    """The eight schedules of ``F' = F'_2 F'_1`` (sec. 3) for sizes set with sliders.

    Python API: ``set_sizes(n1=, m1=, m2=, e1=, e2=) -> bool`` (any subset;
    ``m1`` is also ``n2``, ``e1`` and ``e2`` are ``|E_1|`` and ``|E_2|``),
    ``sizes`` (dict), ``set_preset(name) -> bool``, ``presets``, ``preset``
    (the name shown, or None), ``schedules`` (letter -> core
    :class:`~tensoradbook.chaining.Schedule`, the paper's order a..h),
    ``costs`` (letter -> fma), ``best`` (the cheapest letters), ``plan`` (the
    dynamic programme's :class:`~tensoradbook.chaining.Plan`, eq. 3.7) and
    ``error`` ("" if none).
    """

    def __init__(self, preset: str | None = None, **sizes):
        super().__init__()
        self._sizes: dict[str, int] = {}
        self.preset_menu = self.preset_dropdown(TWO_FACTOR_PRESETS, "24em")
        self.sliders = {name: W.IntSlider(min=1, max=SLIDER_MAX[name], value=1, description=SIZE_LABELS[name],
                                           continuous_update=True, style={"description_width": "5em"},
                                           layout=W.Layout(width="24em"))
                         for name in SIZE_NAMES}
        for name, slider in self.sliders.items():
            slider.observe(lambda change, name=name: self._showing or self.set_sizes(**{name: change["new"]}),
                           names="value")
        self._start_figure()
        self.image = W.Image(format="png", layout=W.Layout(width=css_width(BAR_FIGSIZE[0])))
        self.summary = W.HTML()
        self.table = W.HTML()
        dimensions = W.VBox([self.sliders[name] for name in ("n1", "m1", "m2")])
        edge_counts = W.VBox([self.sliders[name] for name in ("e1", "e2")])
        self.children = [self.preset_menu, W.HBox([dimensions, edge_counts]), self.errors, self.image, self.summary,
                         self.table]
        start = dict(zip(SIZE_NAMES, TWO_FACTOR_PRESETS[preset or next(iter(TWO_FACTOR_PRESETS))]))
        if preset is not None and preset not in TWO_FACTOR_PRESETS:
            raise ValueError(f"no preset {preset!r}; choose one of: {', '.join(TWO_FACTOR_PRESETS)}")
        if not self.set_sizes(**{**start, **sizes}):
            raise ValueError(self.error)

    # -- Python API ---------------------------------------------------------
    @property
    def presets(self) -> dict:
        return dict(TWO_FACTOR_PRESETS)

    @property
    def preset(self) -> str | None:
        return self.preset_menu.value

    @property
    def sizes(self) -> dict[str, int]:
        return dict(self._sizes)

    @property
    def schedules(self) -> dict:
        return dict(self._schedules)

    @property
    def costs(self) -> dict[str, int]:
        return {letter: s.fma for letter, s in self._schedules.items()}

    @property
    def best(self) -> list[str]:
        least = min(self.costs.values())
        return [letter for letter, fma in self.costs.items() if fma == least]

    @property
    def plan(self):
        return self._plan

    @shows_errors
    def set_preset(self, name: str) -> bool:
        sizes = TWO_FACTOR_PRESETS[choose(name, TWO_FACTOR_PRESETS, "no preset")]
        return self.set_sizes(**dict(zip(SIZE_NAMES, sizes)))

    @shows_errors
    def set_sizes(self, **sizes) -> bool:
        """Change any of n1, m1, m2, e1, e2; bad input is shown inline, the old sizes stay, False returned."""
        unknown = sorted(set(sizes) - set(SIZE_NAMES))
        if unknown:
            raise ValueError(f"unknown size {unknown[0]!r}; the sizes are {', '.join(SIZE_NAMES)}")
        wanted = {**self._sizes, **sizes}
        for name in SIZE_NAMES:
            wanted[name] = check_size(as_int(wanted[name], SIZE_LABELS[name], minimum=1), SIZE_LABELS[name])
        chain = jc.Chain([(wanted["m1"], wanted["n1"], wanted["e1"]), (wanted["m2"], wanted["m1"], wanted["e2"])])
        schedules = jc.two_factor_schedules(*(wanted[name] for name in SIZE_NAMES))
        plan = jc.optimize(chain)
        self._sizes, self._chain, self._schedules, self._plan = wanted, chain, schedules, plan
        preset = next((name for name, values in TWO_FACTOR_PRESETS.items()
                       if values == tuple(wanted[n] for n in SIZE_NAMES)), None)
        with self.showing():
            for name, slider in self.sliders.items():
                slider.max = max(slider.max, wanted[name])  # typed sizes beyond the slider widen it
                slider.value = wanted[name]
            self.preset_menu.value = preset
        self._show()
        return True

    # -- drawing --------------------------------------------------------------
    # The axes, the schedules' names and the axis label never change: they are drawn once and kept as
    # pixels; an update restores them and draws only the bars, their values and the title on top
    # (matplotlib's blitting), which keeps a slider move well inside 100 ms.
    def _start_figure(self) -> None:
        self._figure = Figure(figsize=BAR_FIGSIZE, dpi=figure_dpi())
        self._canvas = FigureCanvasAgg(self._figure)
        ax = self._ax = self._figure.add_axes((0.3, 0.12, 0.66, 0.76))
        self.bars = ax.barh(range(8), [0] * 8, height=0.65)
        self._values = [ax.text(0, y, "", va="center", fontsize=10) for y in range(8)]
        self._title = self._figure.text(0.63, 0.94, "", ha="center", va="center", fontsize=11)
        ax.invert_yaxis()  # a at the top, as the paper lists them
        ax.set_yticks(range(8))
        # The generic forms (identities without their sizes) name the rows; the table below has the sized ones.
        generic = jc.two_factor_schedules(1, 1, 1, 1, 1)
        chain = jc.Chain([(1, 1, 1), (1, 1, 1)])
        labels = [f"{letter}   {re.sub(r'I[0-9]+', 'I', s.notation(chain))}" for letter, s in generic.items()]
        ax.set_yticklabels(labels, fontsize=10)
        ax.set_xticks([])  # every bar carries its value
        ax.set_xlabel("fma (fused multiply-adds); bars to scale", fontsize=11)
        for spine in ("top", "right"):
            ax.spines[spine].set_visible(False)
        self._canvas.draw()
        self._background = self._canvas.copy_from_bbox(self._figure.bbox)

    def _show(self) -> None:
        chain, costs, best = self._chain, self.costs, set(self.best)
        top = max(costs.values())
        self._ax.set_xlim(0, 1.3 * top)
        self._canvas.restore_region(self._background)
        for y, (letter, schedule) in enumerate(self._schedules.items()):
            bar, value = self.bars[y], self._values[y]
            bar.set_width(float(schedule.fma))  # beyond int64, an int is not a coordinate matplotlib takes
            bar.set_color(GREEN if letter in best else BLUE)
            value.set_position((float(schedule.fma) + 0.01 * top, y))
            value.set_text(_number(schedule.fma) + ("  ← optimum" if letter in best else ""))
            value.set_color(GREEN if letter in best else "black")
            value.set_fontweight("bold" if letter in best else "normal")
            self._ax.draw_artist(bar)
            self._ax.draw_artist(value)
        s = self._sizes
        self._title.set_text(f"n₁={s['n1']}, m₁=n₂={s['m1']}, m₂={s['m2']}, |E₁|={s['e1']}, |E₂|={s['e2']}")
        self._figure.draw_artist(self._title)
        self.image.value = canvas_png(self._canvas)
        winners = ", ".join(f"<b>{letter}</b> = <code>{html.escape(self._schedules[letter].notation(chain))}</code>"
                            for letter in self.best)
        self.summary.value = (
            f"<p>Cheapest: {winners}, <b>{_number(min(costs.values()))} fma</b>. The dynamic programme of eq. 3.7 "
            f"finds <code>{html.escape(self._plan.notation)}</code> at {_number(self._plan.fma)} fma "
            f"({'the same' if self._plan.fma == min(costs.values()) else 'NOT the same: a bug'}).</p>")
        rows = "".join(
            f"<tr><td><b>{letter}</b></td><td><code>{html.escape(schedule.notation(chain))}</code></td>"
            f"<td>{' + '.join(_number(step.cost) for step in schedule.nodes())}</td>"
            f"<td style='text-align:right'>{_number(schedule.fma)}</td>"
            f"<td style='text-align:right'>{_number(schedule.memory)}</td></tr>"
            for letter, schedule in self._schedules.items())
        self.table.value = ("<table><tr><th></th><th>schedule</th><th>steps (fma)</th><th>fma</th>"
                             "<th>tape M</th></tr>" + rows + "</table>")

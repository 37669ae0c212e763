"""Widgets for Naumann, "Matrix-Free Jacobian Chaining", drawn from :mod:`tensoradbook.chaining`.

* :class:`TwoFactorExplorer` -- sec. 3, ``q = 2``: the eight schedules of
  ``F_2 o F_1`` from the proof of Theorem 3.1 as bars, the optimum
  highlighted, with presets for the paper's five cases;
* :class:`ChainTable` -- the dynamic programme of eq. 3.7 (eq. 3.8 and the
  paper's single-value rule under a tape bound, sec. 4) filled diagonal by
  diagonal, as the reference implementation prints it (sec. 5); selecting a
  cell ``F'_{j,i}`` lists the candidates it compared;
* :class:`ScheduleView` -- the chosen schedule as a tree (tangents, adjoints,
  dense products), adjoint sweeps coloured by their tape, beside the
  homogeneous tangent, homogeneous adjoint and optimal preaccumulation
  baselines (sec. 5);
* :class:`MemoryBudget` -- the least fma against the tape bound ``Mbar`` as a
  staircase (sec. 4): the paper's single-value rule against the exact optimum
  (at ``Mbar = 55`` in sec. 4 the rule pays 120 fma where 64 suffice).

Costs, tapes and schedules all come from the core; the widgets only draw.
Notation is the core's ASCII one: ``F3dot`` the tangent of ``F_3``, ``F2bar``
the adjoint of ``F_2``, ``I4`` an identity, juxtaposed brackets a dense product.
"""

from __future__ import annotations

import html
import re

import ipywidgets as W
import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection
from matplotlib.colors import ListedColormap, Normalize
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from tensoradbook import chaining as jc
from tensoradbook.integer.matrix import as_int

from ._common import (AXES_RECT, DPI, FIGSIZE, MessageBox, Plot, SliderSteps, canvas_png, choose, shows_errors,
                      subscript)

GREEN = "#1a7f37"
BLUE, BLUE_FILL = "#1f5fa8", "#dbe9f6"
RED = "#c0262d"
GREY, GREY_FILL = "#57606a", "#eef0f2"
# Light to dark: a small tape pale yellow, a tape at the bound dark orange-red.
TAPE_RAMP = ListedColormap(colormaps["YlOrRd"](np.linspace(0.08, 0.8, 256)))

BAR_FIGSIZE = (7.0, 3.9)  # inches, at the house DPI
# Sec. 3: n1, m1 = n2, m2 and |E1| = |E2| = 100; the optimum of case k is configuration k of Theorem 3.1's proof.
TWO_FACTOR_PRESETS = {
    "sec. 3 case 1: n₁=2, m₁=4, m₂=8": (2, 4, 8, 100, 100),
    "sec. 3 case 2: n₁=4, m₁=2, m₂=32": (4, 2, 32, 100, 100),
    "sec. 3 case 3: n₁=8, m₁=4, m₂=2": (8, 4, 2, 100, 100),
    "sec. 3 case 4: n₁=32, m₁=2, m₂=4": (32, 2, 4, 100, 100),
    "sec. 3 case 5: n₁=4, m₁=2, m₂=4": (4, 2, 4, 100, 100),
}
SIZE_NAMES = ("n1", "m1", "m2", "e1", "e2")
SIZE_LABELS = {"n1": "n₁", "m1": "m₁ = n₂", "m2": "m₂", "e1": "|E₁|", "e2": "|E₂|"}
SLIDER_MAX = {"n1": 64, "m1": 64, "m2": 64, "e1": 1000, "e2": 1000}
# Sizes and edge counts the views take: sliders (JavaScript numbers) then hold every size and every tape
# bound (sum |E| <= 10 * 10**9) exactly. The core takes any size; costs, which can exceed int64, are drawn
# as floats.
MAX_NUMBER = 10**9

SECTION_4, SECTION_5, SECTION_6, NOT_MONOTONE = ("sec. 4: R⁸ → R", "sec. 5 example", "sec. 6 OpenFOAM",
                                                 "paper's rule not monotone")
# name -> (chain file, the tape bound to start with: the paper's, or where the paper's rule turns)
CHAIN_PRESETS = {
    SECTION_4: ("3\n4 8 32\n2 4 16\n1 2 8\n", 55),
    SECTION_5: ("3\n3 3 29\n1 3 14\n2 1 7\n", 50),
    SECTION_6: ("6\n1531 1531 78172\n967 1531 24346\n1011 967 21090\n751 1011 75280\n1151 751 75980\n"
                "1531 1151 10020\n", 284888),
    NOT_MONOTONE: ("3\n4 6 13\n3 4 43\n5 3 64\n", 42),
}
RULE_NAMES = {"exact": "exact (Pareto fronts)", "paper": "paper (one value per cell)",
              "local": "local (eq. 3.8 as printed)"}
UNLIMITED = "unlimited"


def _number(value: int) -> str:
    return f"{value:,}"


def _compact(value: float, _=None) -> str:
    """An axis label: 436M, 120k or 56 (the full numbers are in the text beside the plot)."""
    for threshold, unit, suffix in ((10**9, 10**9, "G"), (10**6, 10**6, "M"), (10**4, 10**3, "k")):
        if abs(value) >= threshold:
            return f"{value / unit:g}{suffix}"
    return f"{value:g}"


def check_size(value: int, what: str) -> int:
    if value > MAX_NUMBER:
        raise ValueError(f"{what} is {value:,}; these views take sizes and edge counts up to {MAX_NUMBER:,}")
    return value


def read_chain(value, max_q: int) -> jc.Chain:
    """A :class:`~tensoradbook.chaining.Chain` from a chain, its file text or ``(m, n, |E|)`` triples."""
    if isinstance(value, jc.Chain):
        chain = value
    elif isinstance(value, str):
        chain = jc.Chain.parse(value)
    else:
        chain = jc.Chain(value)
    if chain.q > max_q:
        raise ValueError(f"the chain has q = {chain.q} factors; this view shows at most {max_q}")
    for index, f in enumerate(chain, start=1):
        for value, name in ((f.m, "m"), (f.n, "n"), (f.edges, "|E|")):
            check_size(value, f"{name} of F_{index}")
    return chain


def read_memory(value) -> int | None:
    """The tape bound: None, empty text or "unlimited" for none, else a non-negative integer."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().replace(",", "").replace("_", "")
        if text.lower() in ("", UNLIMITED):
            return None
        if not re.fullmatch(r"[0-9]+", text):  # ASCII: int() would also read '١٢'
            raise ValueError(f"tape bound Mbar: {value.strip()!r} is not an integer in digits 0-9 "
                             f"(leave it empty for unlimited tape)")
        value = int(text)
    return jc.memory_bound(value)


def _sub(text) -> str:
    return f"<sub>{text}</sub>"


def own_cost(chain: jc.Chain, op: str, j: int, i: int, k: int) -> tuple[str, str]:
    """HTML: the fma of the step ``op`` on ``F'_{j,i}`` (split ``k``) itself, in the paper's symbols and in
    numbers (secs. 2-3): ``("m<sub>3</sub>·m<sub>2</sub>·n<sub>1</sub>", "2·1·3")``."""
    if op in (jc.TANGENT, jc.ADJOINT):
        f = chain.factor(j)
        size, letter = (f.n, "n") if op == jc.TANGENT else (f.m, "m")
        return f"{letter}{_sub(j)}·|E{_sub(j)}|", f"{size}·{f.edges}"
    if op == jc.MXM:
        return (f"m{_sub(j)}·m{_sub(k)}·n{_sub(i)}",
                f"{chain.factor(j).m}·{chain.factor(k).m}·{chain.factor(i).n}")
    first, last, size, letter, at = ((k + 1, j, chain.factor(i).n, "n", i) if op == jc.GXM else
                                     (i, k, chain.factor(j).m, "m", j))
    edges = f"|E{_sub(first)}|" if first == last else f"(|E{_sub(first)}|+…+|E{_sub(last)}|)"
    return f"{letter}{_sub(at)}·{edges}", f"{size}·{chain.edge_sum(first, last)}"


def step_formula(chain: jc.Chain, op: str, j: int, i: int, k: int) -> str:
    """HTML: a candidate's fma in eq. 3.7's terms: its operands' cells plus its own step."""
    operands = {jc.MXM: [(j, k + 1), (k, i)], jc.GXM: [(k, i)], jc.MXG: [(j, k + 1)]}.get(op, [])
    return " + ".join([f"fma{_sub(f'{a},{b}')}" for a, b in operands] + [own_cost(chain, op, j, i, k)[0]])


# -- TwoFactorExplorer ------------------------------------------------------------------------------------

class TwoFactorExplorer(W.VBox):
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
        self._quiet = False  # set while the controls show a state set from Python
        self._errors = MessageBox()
        self._preset = W.Dropdown(options=list(TWO_FACTOR_PRESETS), value=None, description="preset:",
                                  layout=W.Layout(width="24em"))
        self._preset.observe(lambda change: self._quiet or change["new"] is None or self.set_preset(change["new"]),
                             names="value")
        self._sliders = {name: W.IntSlider(min=1, max=SLIDER_MAX[name], value=1, description=SIZE_LABELS[name],
                                           continuous_update=True, style={"description_width": "5em"},
                                           layout=W.Layout(width="24em"))
                         for name in SIZE_NAMES}
        for name, slider in self._sliders.items():
            slider.observe(lambda change, name=name: self._quiet or self.set_sizes(**{name: change["new"]}),
                           names="value")
        self._start_figure()
        self._image = W.Image(format="png", layout=W.Layout(width=f"{int(BAR_FIGSIZE[0] * DPI)}px"))
        self._summary = W.HTML()
        self._table = W.HTML()
        dimensions = W.VBox([self._sliders[name] for name in ("n1", "m1", "m2")])
        edge_counts = W.VBox([self._sliders[name] for name in ("e1", "e2")])
        self.children = [self._preset, W.HBox([dimensions, edge_counts]), self._errors, self._image, self._summary,
                         self._table]
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
        return self._preset.value

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

    @property
    def error(self) -> str:
        return self._errors.text

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
        self._quiet = True
        try:
            for name, slider in self._sliders.items():
                slider.max = max(slider.max, wanted[name])  # typed sizes beyond the slider widen it
                slider.value = wanted[name]
            self._preset.value = preset
        finally:
            self._quiet = False
        self._show()
        return True

    # -- drawing --------------------------------------------------------------
    # The axes, the schedules' names and the axis label never change: they are drawn once and kept as
    # pixels; an update restores them and draws only the bars, their values and the title on top
    # (matplotlib's blitting), which keeps a slider move well inside 100 ms.
    def _start_figure(self) -> None:
        self._figure = Figure(figsize=BAR_FIGSIZE, dpi=DPI)
        self._canvas = FigureCanvasAgg(self._figure)
        ax = self._ax = self._figure.add_axes((0.3, 0.12, 0.66, 0.76))
        self._bars = ax.barh(range(8), [0] * 8, height=0.65)
        self._values = [ax.text(0, y, "", va="center", fontsize=10) for y in range(8)]
        self._title = self._figure.text(0.63, 0.94, "", ha="center", va="center", fontsize=11)
        ax.invert_yaxis()  # a at the top, as the paper lists them
        ax.set_yticks(range(8))
        # The generic forms (identities without their sizes) name the rows; the table below has the sized ones.
        generic = jc.two_factor_schedules(1, 1, 1, 1, 1)
        chain = jc.Chain([(1, 1, 1), (1, 1, 1)])
        ax.set_yticklabels([f"{letter}   {re.sub(r'I[0-9]+', 'I', s.notation(chain))}" for letter, s in generic.items()],
                           fontsize=10)
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
            bar, value = self._bars[y], self._values[y]
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
        self._image.value = canvas_png(self._canvas)
        winners = ", ".join(f"<b>{letter}</b> = <code>{html.escape(self._schedules[letter].notation(chain))}</code>"
                            for letter in self.best)
        self._summary.value = (
            f"<p>Cheapest: {winners}, <b>{_number(min(costs.values()))} fma</b>. The dynamic programme of eq. 3.7 "
            f"finds <code>{html.escape(self._plan.notation)}</code> at {_number(self._plan.fma)} fma "
            f"({'the same' if self._plan.fma == min(costs.values()) else 'NOT the same: a bug'}).</p>")
        rows = "".join(
            f"<tr><td><b>{letter}</b></td><td><code>{html.escape(schedule.notation(chain))}</code></td>"
            f"<td>{' + '.join(_number(step.cost) for step in schedule.nodes())}</td>"
            f"<td style='text-align:right'>{_number(schedule.fma)}</td>"
            f"<td style='text-align:right'>{_number(schedule.memory)}</td></tr>"
            for letter, schedule in self._schedules.items())
        self._table.value = ("<table><tr><th></th><th>schedule</th><th>steps (fma)</th><th>fma</th>"
                             "<th>tape M</th></tr>" + rows + "</table>")


# -- shared controls of the chain widgets ---------------------------------------------------------------

class _ChainWidget(W.VBox):
    """Preset menu, chain file entry, tape bound and rule, shared by the chain widgets.

    Subclasses set ``MAX_Q`` (the largest chain they show), ``DEFAULT_PRESET``
    and ``SHOW_MEMORY_ENTRY``, compute what they draw in :meth:`_compute`
    (raising ValueError on bad input), take it over in :meth:`_accept` and draw
    it in :meth:`_show`. Every change goes through :meth:`_configure`, which
    keeps the last good state when the new one is bad and shows why inline.
    """

    MAX_Q = 8
    SHOW_MEMORY_ENTRY = True

    def _init_controls(self) -> None:
        self._state: dict = {}
        self._quiet = False  # set while the controls show a state set from Python
        self._errors = MessageBox()
        self._preset = W.Dropdown(options=list(CHAIN_PRESETS), value=None, description="preset:",
                                  layout=W.Layout(width="22em"))
        self._preset.observe(lambda change: self._quiet or change["new"] is None or self.set_preset(change["new"]),
                             names="value")
        self._entry = W.Textarea(description="chain:", rows=4, continuous_update=False,
                                 placeholder="q, then one line 'm n |E|' per factor, F₁ first",
                                 layout=W.Layout(width="22em"))
        self._entry.observe(lambda change: self._quiet or self.set_chain(change["new"]), names="value")
        apply = W.Button(description="Apply", tooltip="Use the chain typed in the box")
        apply.on_click(lambda _: self.set_chain(self._entry.value))
        self._memory_entry = W.Text(description="M̄ =", placeholder=UNLIMITED, continuous_update=False,
                                    tooltip="tape bound Mbar; empty for unlimited", layout=W.Layout(width="14em"))
        self._memory_entry.observe(lambda change: self._quiet or self.set_memory(change["new"]), names="value")
        self._rule = W.Dropdown(options=[(label, rule) for rule, label in RULE_NAMES.items()], value="exact",
                                description="rule:", layout=W.Layout(width="24em"))
        self._rule.observe(lambda change: self._quiet or self.set_rule(change["new"]), names="value")
        settings = [self._preset] + ([self._memory_entry, self._rule] if self.SHOW_MEMORY_ENTRY else [])
        self._controls = W.VBox([W.HBox(settings), W.HBox([self._entry, apply])])

    # -- Python API ---------------------------------------------------------
    @property
    def presets(self) -> dict:
        return dict(CHAIN_PRESETS)

    @property
    def preset(self) -> str | None:
        """The preset shown, None for a chain (or bound) of one's own."""
        return self._preset.value

    @property
    def chain(self) -> jc.Chain:
        return self._state["chain"]

    @property
    def memory(self) -> int | None:
        return self._state["memory"]

    @property
    def rule(self) -> str:
        return self._state["rule"]

    @property
    def error(self) -> str:
        return self._errors.text

    def set_chain(self, chain, memory=...) -> bool:
        """Use ``chain`` (a Chain, its file text or ``(m, n, |E|)`` triples), optionally with a new tape bound."""
        return self._configure(chain=chain, **({} if memory is ... else {"memory": memory}))

    def set_memory(self, memory) -> bool:
        """The tape bound ``Mbar``: an integer, or None / "" for unlimited tape."""
        return self._configure(memory=memory)

    def set_rule(self, rule: str) -> bool:
        """"exact", "paper" or "local" (see :mod:`tensoradbook.chaining`)."""
        return self._configure(rule=rule)

    @shows_errors
    def set_preset(self, name: str) -> bool:
        text, memory = CHAIN_PRESETS[choose(name, CHAIN_PRESETS, "no preset")]
        return self._configure(chain=text, memory=memory)

    # -- state ----------------------------------------------------------------
    @shows_errors
    def _configure(self, **changes) -> bool:
        state = dict(self._state)
        if "chain" in changes:
            state["chain"] = read_chain(changes["chain"], self.MAX_Q)
        if "memory" in changes:
            state["memory"] = read_memory(changes["memory"])
        if "rule" in changes:
            state["rule"] = choose(changes["rule"], jc.RULES, "unknown rule")
        computed = self._compute(state)
        self._state = state
        preset = next((name for name, (text, memory) in CHAIN_PRESETS.items()
                       if jc.Chain.parse(text) == state["chain"]
                       and (memory == state["memory"] or not self.SHOW_MEMORY_ENTRY)), None)
        self._quiet = True
        try:
            self._entry.value = state["chain"].to_text()
            self._memory_entry.value = "" if state["memory"] is None else str(state["memory"])
            self._rule.value = state["rule"]
            self._preset.value = preset
            self._accept(computed)
        finally:
            self._quiet = False
        self._show()
        return True

    def _start(self, chain, memory, rule, preset) -> None:
        """Show the chain given (unlimited tape unless ``memory`` says otherwise), else the preset (default:
        ``DEFAULT_PRESET``) with its bound; raise ValueError on bad input."""
        if preset is not None and preset not in CHAIN_PRESETS:
            raise ValueError(f"no preset {preset!r}; choose one of: {', '.join(CHAIN_PRESETS)}")
        if chain is None:
            chain, preset_memory = CHAIN_PRESETS[preset or self.DEFAULT_PRESET]
        else:
            preset_memory = None
        self._state = {"chain": None, "memory": None, "rule": rule}
        if not self._configure(chain=chain, memory=preset_memory if memory is ... else memory, rule=rule):
            raise ValueError(self.error)

    def _compute(self, state: dict):
        """What the view draws for ``state`` (chain, memory, rule; may normalise them in place)."""
        raise NotImplementedError

    def _accept(self, computed) -> None:
        raise NotImplementedError

    def _show(self) -> None:
        raise NotImplementedError


# -- ChainTable ---------------------------------------------------------------------------------------------

CELL_STYLE = W.HTML("<style>.jc-cell {white-space: pre-line !important; height: auto !important; "
                    "line-height: 1.35 !important; padding: 4px 2px !important; font-size: 12px !important;}</style>")


class ChainTable(SliderSteps, _ChainWidget):
    """The dynamic programming table of eq. 3.7 / 3.8, filled one diagonal ``j - i`` at a time.

    Cell ``(j, i)`` holds what the programme keeps for ``F'_{j,i} = F'_j ... F'_i``
    (the reference implementation's ``F_{j,i}: OP(k); fma=...; M=...;``);
    click a filled cell to list the candidates it compared.

    Python API: ``step`` (the last filled diagonal, read/write, clamped),
    ``n_steps`` (= q), ``forward()``, ``back()``, ``select(j, i) -> bool``,
    ``selected`` ((j, i)), ``candidates`` (the core's
    :class:`~tensoradbook.chaining.Candidate` list of the selected cell),
    ``plan``, ``set_chain(chain, memory=...)``, ``set_memory(M)``,
    ``set_rule(rule)``, ``set_preset(name)``, ``chain``, ``memory``, ``rule``
    and ``error`` ("" if none).
    """

    MAX_Q = 8
    DEFAULT_PRESET = SECTION_5

    def __init__(self, chain=None, memory=..., rule: str = "paper", preset: str | None = None):
        super().__init__()
        self._init_controls()
        self._plan = None
        self._selected = (1, 1)
        self._slider = W.IntSlider(min=0, max=0, description="diagonal", continuous_update=True,
                                   tooltip="cells F'_{j,i} with j - i up to this are filled")
        self._slider.observe(lambda change: self._quiet or self._on_diagonal(), names="value")
        self._buttons = {}
        for label, tip, move in (("Back", "empty the last diagonal", -1), ("Forward", "fill the next diagonal", 1)):
            button = W.Button(description=label, tooltip=tip, layout=W.Layout(width="6em"))
            button.on_click(lambda _, move=move: setattr(self, "step", self.step + move))
            self._buttons[label] = button
        self._grid = W.GridBox()
        self._cells: dict[tuple[int, int], W.Button] = {}
        self._heading = W.HTML()
        self._candidates = W.HTML()
        self.children = [CELL_STYLE, self._controls, self._errors,
                         W.HBox([*self._buttons.values(), self._slider]), self._heading, self._grid,
                         self._candidates]
        self._start(chain, memory, rule, preset)

    # -- Python API ---------------------------------------------------------
    @property
    def plan(self):
        return self._plan

    @property
    def n_steps(self) -> int:
        return self.chain.q

    @property
    def selected(self) -> tuple[int, int]:
        return self._selected

    @property
    def candidates(self) -> tuple:
        return self._plan.candidates(*self._selected)

    @shows_errors
    def select(self, j: int, i: int) -> bool:
        """Show the candidates of cell ``(j, i)`` (1 <= i <= j <= q, already filled); False with an inline
        error otherwise."""
        q = self.chain.q
        j, i = as_int(j, "a cell's row j"), as_int(i, "a cell's column i")
        if not 1 <= i <= j <= q:
            raise ValueError(f"cell ({j}, {i}) is not in the table: it needs 1 <= i <= j <= {q}")
        if j - i > self.step:
            raise ValueError(f"F'_{{{j},{i}}} lies on diagonal {j - i}, which is not filled yet "
                             f"(filled up to {self.step}): press Forward")
        self._selected = (j, i)
        self._show()
        return True

    # -- computing and drawing ----------------------------------------------
    def _compute(self, state: dict):
        return jc.optimize(state["chain"], state["memory"], state["rule"])

    def _accept(self, plan) -> None:
        fresh = self._plan is None or plan.chain != self._plan.chain
        self._plan = plan
        q = plan.chain.q
        if fresh:  # a new chain: a new grid, filled completely, the last cell selected
            self._build_grid(q)
            self._slider.max = q - 1
            self._slider.value = q - 1
            self._selected = (q, 1)

    def _build_grid(self, q: int) -> None:
        self._cells = {}
        items = [W.HTML("<b>j \\ i</b>")] + [W.HTML(f"<b>i = {i}</b>") for i in range(1, q + 1)]
        for j in range(1, q + 1):
            items.append(W.HTML(f"<b>j = {j}</b>"))
            for i in range(1, q + 1):
                if i > j:
                    items.append(W.HTML(""))
                    continue
                button = W.Button(layout=W.Layout(width="auto", height="auto"))
                button.add_class("jc-cell")
                button.on_click(lambda _, cell=(j, i): self.select(*cell))
                self._cells[j, i] = button
                items.append(button)
        self._grid.children = items
        self._grid.layout = W.Layout(grid_template_columns=f"4em repeat({q}, minmax(7.5em, max-content))",
                                     grid_gap="4px", width="max-content")

    def _on_diagonal(self) -> None:
        # The newly filled (or last still filled) diagonal's first cell shows what that step compared.
        self._selected = (self.step + 1, 1)
        self._errors.show("")
        self._show()

    def _show(self) -> None:
        plan, q, filled = self._plan, self.chain.q, self.step
        full = filled == q - 1
        used = {(s.j, s.i) for s in plan.steps()} if full else set()
        for (j, i), button in self._cells.items():
            if j - i > filled:
                button.description, button.tooltip, button.disabled = f"F'{j},{i}\n·\n·", "not filled yet", True
                button.button_style = ""
                continue
            cell = plan.cell(j, i)
            front = f"\nfront: {len(cell.front)}" if len(cell.front) > 1 else ""
            button.description = f"{cell.label}\nfma {_number(cell.fma)}\nM {_number(cell.memory)}{front}"
            button.tooltip = cell.line()
            button.disabled = False
            button.button_style = ("info" if (j, i) == self._selected else "success" if (j, i) in used else "")
        self._buttons["Back"].disabled = filled == 0
        self._buttons["Forward"].disabled = full
        bound = "unlimited tape" if self.memory is None else f"M̄ = {_number(self.memory)}"
        if full:
            status = (f"Table full: F' = <code>{html.escape(plan.notation)}</code>, "
                      f"<b>{_number(plan.fma)} fma</b>, tape M = {_number(plan.memory)} (green: the cells it uses).")
        else:
            status = f"Filled up to diagonal {filled} of {q - 1}: cells F'<sub>j,i</sub> with j − i ≤ {filled}."
        self._heading.value = f"<p><b>{RULE_NAMES[self.rule]}</b> rule, {bound}. {status}</p>"
        self._candidates.value = self._candidate_html()

    def _candidate_html(self) -> str:
        plan, chain = self._plan, self.chain
        j, i = self._selected
        cell = plan.cell(j, i)
        candidates = plan.candidates(j, i)
        kept_fma = min(c.fma for c in candidates if c.kept)
        rows = []
        for c in candidates:
            if c.kept:
                status = "kept" if len(cell.front) == 1 else "kept (on the Pareto front)"
            elif not c.feasible:
                status = f"infeasible: tape {_number(c.memory)} > M̄"
            elif self.rule == "exact" and self.memory is not None:
                status = "dominated: a kept entry is as cheap with no more tape"
            elif c.fma == kept_fma:
                status = ("tie: the kept one needs no more tape" if self.rule == "exact" else
                          "tie: the first in the paper's order (k ascending; MxM, GxM, MxG) is kept")
            else:
                status = "costlier"
            colour = GREEN if c.kept else "#8c959f" if not c.feasible else "black"
            split = "" if j == i else str(c.k)
            rows.append(f"<tr style='color:{colour}'><td>{split}</td><td>{c.label}</td>"
                        f"<td>{step_formula(chain, c.op, j, i, c.k)}</td>"
                        f"<td style='text-align:right'>{_number(c.fma)}</td>"
                        f"<td style='text-align:right'>{_number(c.memory)}</td><td>{status}</td></tr>")
        what = (f"preaccumulation of F'<sub>{j}</sub> by tangent or adjoint (eq. 3.7, j = i)" if j == i else
                f"every split {i} ≤ k < {j} with MxM, GxM, MxG (eq. 3.7)")
        return (f"<p><b>Candidates for F'<sub>{j},{i}</sub></b>: {what}. <code>{html.escape(cell.line())}</code></p>"
                "<table><tr><th>k</th><th>op</th><th>fma =</th><th>fma</th><th>tape M</th><th></th></tr>"
                + "".join(rows) + "</table>")


# -- ScheduleView -------------------------------------------------------------------------------------------

# Tree geometry in inches (the axes' data units are inches).
COLUMN = 1.55     # width per factor
LEVEL = 1.05      # from one tree level to the next (a box has up to four 9 pt lines)
HEADER = 0.9      # room for the factors' names above the root
FOOTER = 0.75     # room for the colour bar
TREE_DPI = 80


_BOX_PIXELS: dict[tuple, np.ndarray] = {}
MAX_KEPT_BOXES = 2000  # about 30 kB each
_SCRATCH: list = []  # one transparent figure that draws the boxes, made on first use


def box_pixels(text: str, face, edge: str) -> np.ndarray:
    """RGBA pixels of one tree box (rounded frame and text), drawn once and kept.

    Laying out and rendering text is most of a tree's drawing time, and the
    same boxes (a factor's preaccumulation, a sweep) recur from schedule to
    schedule, so each distinct box is drawn once and pasted from then on.
    """
    key = (text, tuple(face) if not isinstance(face, str) else face, edge)
    if key not in _BOX_PIXELS:
        if len(_BOX_PIXELS) >= MAX_KEPT_BOXES:
            _BOX_PIXELS.clear()
        if not _SCRATCH:
            figure = Figure(figsize=(8, 1.5), dpi=TREE_DPI)
            figure.patch.set_alpha(0)
            canvas = FigureCanvasAgg(figure)
            canvas.draw()
            _SCRATCH.extend([figure, canvas, canvas.copy_from_bbox(figure.bbox)])
        figure, canvas, blank = _SCRATCH
        canvas.restore_region(blank)
        label = figure.text(0.5, 0.5, text, ha="center", va="center", fontsize=9,
                            bbox=dict(boxstyle="round,pad=0.3", facecolor=face, edgecolor=edge, linewidth=1.2))
        figure.draw_artist(label)
        extent = label.get_bbox_patch().get_window_extent().padded(1)
        label.remove()
        pixels = np.asarray(canvas.buffer_rgba())
        height = pixels.shape[0]  # window coordinates count from the bottom, array rows from the top
        _BOX_PIXELS[key] = pixels[int(height - extent.y1):int(height - extent.y0) + 1,
                                  int(extent.x0):int(extent.x1) + 1].copy()
    return _BOX_PIXELS[key]


class ScheduleView(_ChainWidget):
    """The schedule the dynamic programme chose, as a tree, beside the baselines (secs. 3-5).

    Columns are the factors, ``F_q`` on the left as in ``F'_q ... F'_1``. Each
    node ``F'_{j,i}`` spans its factors; below it are its two operands: for
    ``MxM`` two subtrees, for ``GxM`` a tangent sweep over ``F_j..F_{k+1}`` and
    a subtree, for ``MxG`` a subtree and an adjoint sweep over ``F_k..F_i``.
    Tangents are blue; adjoint sweeps (and adjoint preaccumulations) are
    coloured by the tape they record, on a scale up to all the chain's edges.

    Python API: ``plan``, ``baselines`` (name -> core Plan), ``boxes`` (what the
    tree draws: dicts with ``text``, ``kind`` ("tangent", "adjoint",
    "product", "node"), ``tape`` (None for inner nodes), ``span`` ((j, i)),
    ``level``, ``parent`` (index or None) and ``colour``),
    ``set_chain(chain, memory=...)``, ``set_memory(M)``, ``set_rule(rule)``,
    ``set_preset(name)``, ``chain``, ``memory``, ``rule``, ``error``.
    """

    MAX_Q = 10
    DEFAULT_PRESET = SECTION_5

    def __init__(self, chain=None, memory=..., rule: str = "exact", preset: str | None = None):
        super().__init__()
        self._init_controls()
        self._plan = self._baselines = None
        self._boxes: list[dict] = []
        # Per chain: the empty figure per tree depth (factor names, colour bar) as pixels, and the
        # finished picture per schedule, so that a change that keeps the schedule costs no drawing.
        self._figures: dict[int, tuple] = {}
        self._pictures: dict[str, bytes] = {}
        self._image = W.Image(format="png")
        self._baseline_table = W.HTML(layout=W.Layout(margin="0 0 0 1em"))
        self._steps = W.HTML()
        self.children = [self._controls, self._errors, W.HBox([self._image, self._baseline_table]), self._steps]
        self._start(chain, memory, rule, preset)

    @property
    def plan(self):
        return self._plan

    @property
    def baselines(self) -> dict:
        return dict(self._baselines)

    @property
    def boxes(self) -> list[dict]:
        return [dict(box) for box in self._boxes]

    def _compute(self, state: dict):
        return jc.optimize(state["chain"], state["memory"], state["rule"]), jc.baselines(state["chain"], state["memory"])

    def _accept(self, computed) -> None:
        plan, self._baselines = computed
        if self._plan is None or plan.chain != self._plan.chain:
            self._figures, self._pictures = {}, {}
        self._plan = plan

    def _show(self) -> None:
        self._boxes = self._layout()
        notation = self._plan.notation
        if notation not in self._pictures:
            self._pictures[notation] = self._draw()
        self._image.value = self._pictures[notation]
        self._baseline_table.value = self._baseline_html()
        self._steps.value = self._steps_html()

    # -- the tree ---------------------------------------------------------------
    def _layout(self) -> list[dict]:
        """One box per node and sweep: text, kind, tape, colour, factor span (j, i), level (0 = root), parent."""
        chain = self.chain
        norm = Normalize(0, chain.total_edges)
        boxes, stack = [], [(self._plan.schedule, 0, None)]

        def add(text, kind, tape, span, level, parent):
            colour = (BLUE_FILL if kind == "tangent" else TAPE_RAMP(norm(tape)) if kind == "adjoint" else
                      GREY_FILL if kind == "product" else "white")
            boxes.append(dict(text=text, kind=kind, tape=tape, span=span, level=level, parent=parent, colour=colour))
            return len(boxes) - 1

        while stack:
            node, level, parent = stack.pop()
            f = chain.factor(node.j)
            if node.op == jc.TANGENT:
                here = add(f"F{node.j}dot I{f.n}\n{_number(node.cost)} fma", "tangent", 0, (node.j, node.i),
                           level, parent)
            elif node.op == jc.ADJOINT:
                here = add(f"I{f.m} F{node.j}bar\n{_number(node.cost)} fma\ntape {_number(f.edges)}",
                           "adjoint", f.edges, (node.j, node.i), level, parent)
            else:
                product = f" + {_number(node.cost)}" if node.op == jc.MXM else ""
                here = add(f"F'{node.j},{node.i}: {node.label}{product}\nΣ {_number(node.fma)} fma",
                           "product" if node.op == jc.MXM else "node", None, (node.j, node.i), level, parent)
            if node.op == jc.GXM:  # the tangent of F_j..F_{k+1} on the n_i columns of F'_{k,i}
                names = " ".join(f"F{v}dot" for v in range(node.j, node.k, -1))
                columns = chain.factor(node.i).n
                add(f"{names}\n× {_number(columns)} column{'s' * (columns > 1)}\n{_number(node.cost)} fma",
                    "tangent", 0, (node.j, node.k + 1), level + 1, here)
            if node.op == jc.MXG:  # the adjoint of F_k..F_i on the m_j rows of F'_{j,k+1}, recording their tapes
                swept = chain.edge_sum(node.i, node.k)
                names = " ".join(f"F{v}bar" for v in range(node.k, node.i - 1, -1))
                rows = chain.factor(node.j).m
                add(f"{names}\n× {_number(rows)} row{'s' * (rows > 1)}\n{_number(node.cost)} fma\n"
                    f"tape {_number(swept)}", "adjoint", swept, (node.k, node.i), level + 1, here)
            for child in (node.left, node.right):
                if child is not None:
                    stack.append((child, level + 1, here))
        return boxes

    def _empty_figure(self, levels: int) -> tuple:
        """Figure, canvas, axes and pixels of the frame for a tree of ``levels`` levels: factor names, colour bar."""
        if levels not in self._figures:
            chain = self.chain
            q = chain.q
            width, height = max(COLUMN * q + 0.4, 5.6), HEADER + LEVEL * levels + FOOTER
            fig = Figure(figsize=(width, height), dpi=TREE_DPI)
            canvas = FigureCanvasAgg(fig)
            ax = fig.add_axes((0, 0, 1, 1))
            ax.set_axis_off()
            ax.set_xlim(0, width)
            ax.set_ylim(0, height)
            left = (width - COLUMN * q) / 2
            for v in range(1, q + 1):  # F_q on the left, as in F'_q ... F'_1
                f = chain.factor(v)
                ax.text(left + COLUMN * (q - v + 0.5), height - 0.3, f"F{subscript(v)}: {f.n}→{f.m}\n"
                        f"|E|={_number(f.edges)}", ha="center", va="center", fontsize=9, color=GREY)
            bar = fig.colorbar(ScalarMappable(norm=Normalize(0, chain.total_edges), cmap=TAPE_RAMP),
                               orientation="horizontal", cax=fig.add_axes((0.3, 0.45 / height, 0.4, 0.12 / height)))
            bar.set_label("tape of an adjoint sweep (edges)", fontsize=9)
            bar.ax.tick_params(labelsize=8)
            bar.ax.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
            bar.ax.xaxis.set_major_formatter(FuncFormatter(_compact))
            canvas.draw()
            self._figures[levels] = (fig, canvas, ax, canvas.copy_from_bbox(fig.bbox), width, height, left)
        return self._figures[levels]

    def _draw(self) -> bytes:
        q, boxes = self.chain.q, self._boxes
        fig, canvas, ax, background, width, height, left = self._empty_figure(1 + max(b["level"] for b in boxes))

        def centre(span):
            j, i = span
            return left + COLUMN * ((q - j) + (q - i + 1)) / 2

        def middle(level):
            return height - HEADER - LEVEL * (level + 0.5)

        canvas.restore_region(background)
        edges = LineCollection([((centre(boxes[box["parent"]]["span"]), middle(boxes[box["parent"]]["level"])),
                                 (centre(box["span"]), middle(box["level"]))) for box in boxes[1:]],
                               colors=GREY, linewidths=1)
        ax.add_collection(edges)
        ax.draw_artist(edges)
        edges.remove()
        frame = np.asarray(canvas.buffer_rgba())  # the canvas's own pixels: boxes are blended in place
        for box in boxes:  # over the edges: each box's pixels, centred on its place
            pixels = box_pixels(box["text"], box["colour"], {"tangent": BLUE, "adjoint": RED}.get(box["kind"], GREY))
            rows, columns = pixels.shape[:2]
            top = round(frame.shape[0] - middle(box["level"]) * TREE_DPI - rows / 2)  # array rows count from the top
            left_edge = round(centre(box["span"]) * TREE_DPI - columns / 2)
            # The part inside the frame (a very long label at the border would stick out).
            r0, c0 = max(0, -top), max(0, -left_edge)
            r1, c1 = min(rows, frame.shape[0] - top), min(columns, frame.shape[1] - left_edge)
            source = pixels[r0:r1, c0:c1]
            target = frame[top + r0:top + r1, left_edge + c0:left_edge + c1]
            alpha = source[..., 3:] / 255.0
            target[..., :3] = (source[..., :3] * alpha + target[..., :3] * (1 - alpha)).round().astype(np.uint8)
        self._image.layout.width = f"{int(width * TREE_DPI)}px"
        return canvas_png(canvas)

    def _baseline_html(self) -> str:
        plan = self._plan
        rows = [("optimum (this plan)", plan)] + [(f"homogeneous {name}" if name != "preaccumulation" else
                                                   "optimal preaccumulation", p)
                                                  for name, p in self._baselines.items()]
        body = []
        for name, p in rows:
            ok = p.feasible
            ratio = p.fma / plan.fma
            body.append(f"<tr style='color:{'black' if ok else '#8c959f'}'><td>{name}</td>"
                        f"<td style='text-align:right'>{_number(p.fma)}</td>"
                        f"<td style='text-align:right'>{_number(p.memory)}</td>"
                        f"<td style='text-align:right'>{ratio:.2f}×</td>"
                        f"<td>{'✓' if ok else '✗ tape > M̄'}</td></tr>")
        bound = "unlimited" if self.memory is None else _number(self.memory)
        return ("<p><b>Baselines</b> (sec. 5), tape bound M̄ = " + bound + "</p>"
                "<table><tr><th></th><th>fma</th><th>tape M</th><th>vs. optimum</th><th>fits</th></tr>"
                + "".join(body) + "</table>")

    def _steps_html(self) -> str:
        chain = self.chain
        items = []
        for step in self._plan.steps():
            symbols, numbers = own_cost(chain, step.op, step.j, step.i, step.k)
            items.append(f"<li><code>{html.escape(step.line())}</code> &nbsp; this step: {symbols} = {numbers} = "
                         f"{_number(step.cost)} fma</li>")
        return (f"<p>F' = <code>{html.escape(self._plan.notation)}</code>: <b>{_number(self._plan.fma)} fma</b>, "
                f"tape M = {_number(self._plan.memory)} ({RULE_NAMES[self.rule]} rule). Steps in the order they "
                f"run:</p><ol>" + "".join(items) + "</ol>")


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
        self._slider = W.IntSlider(min=0, max=1, description="M̄", continuous_update=True,
                                   style={"description_width": "2em"}, layout=W.Layout(width="40em"))
        self._slider.observe(lambda change: self._quiet or self.set_memory(change["new"]), names="value")
        self._plot = Plot()
        _, bottom, _, height = AXES_RECT[None]
        self._title = self._plot.fig.text(0.5, bottom + height + 0.05, "", ha="center", va="center", fontsize=10)
        self._image = W.Image(format="png", layout=W.Layout(width=f"{int(FIGSIZE[0] * DPI)}px"))
        self._text = W.HTML()
        self.children = [self._controls, self._errors, self._slider, self._image, self._text]
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
        self._slider.max = self.chain.total_edges
        self._slider.value = self.memory

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
        self._image.value = canvas_png(canvas)
        self._text.value = self._describe(exact, paper)

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

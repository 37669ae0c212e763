"""LumpExplorer: a program with temporaries cut into lumps along a chosen order (sec. 3, Fig. 4),
with each lump's blocks A and B (eqs. 2.6g-2.6h).
"""

from __future__ import annotations

import html
import re
import ipywidgets as W
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
from tensoradbook import inverse as ia
from tensoradbook.integer.matrix import as_int, shown
from tensoradbook.inverse import examples
from ..base import NamedPreset, WidgetBase
from .._common import FIGSIZE, css_width, figure_dpi, choose, shows_errors

from ..style import GREY_EDGE, RED
from .shared import _CELL, _TABLE, blit_png, number, numbers
from .register_machine import _registers


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


class LumpExplorer(WidgetBase, NamedPreset, W.VBox):
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
        self.preset_menu = W.Dropdown(options=list(LUMP_PRESETS), description="program:",
                                       style={"description_width": "5.5em"}, layout=W.Layout(width="27em"))
        self.on_user_change(self.preset_menu, self.set_preset)
        self._order_buttons = []
        for label, order_name in (("program order", "program"), ("greedy order", "greedy")):
            button = W.Button(description=label, layout=W.Layout(width="9em"),
                              tooltip="the order the values were computed" if order_name == "program" else
                              "always the ready vertex that leaves the fewest values live")
            button.on_click(lambda _, order_name=order_name: self.set_order(order_name))
            self._order_buttons.append(button)
        self.entry = W.Text(description="order:", continuous_update=False, layout=W.Layout(width="30em"),
                             style={"description_width": "3.5em"})
        self.on_user_change(self.entry, self.set_order)
        self._vertex_menu = W.Dropdown(description="vertex:", layout=W.Layout(width="12em"),
                                       style={"description_width": "4.5em"})
        self._move_buttons = []
        for label, offset in (("◀ earlier", -1), ("later ▶", 1)):
            button = W.Button(description=label, layout=W.Layout(width="7em"))
            button.on_click(lambda _, offset=offset: self.move(self._vertex_menu.value, offset))
            self._move_buttons.append(button)
        self._figure = Figure(figsize=FIGSIZE, dpi=figure_dpi())
        self._canvas = FigureCanvasAgg(self._figure)
        self._ax = self._figure.add_axes((0.11, 0.16, 0.52, 0.74))
        self._figure.legend([Patch(facecolor=_LUMP_COLOURS[0], edgecolor=GREY_EDGE),
                             Patch(facecolor="white", edgecolor="black", linewidth=2.2),
                             Line2D([], [], color=RED, linestyle="--")],
                            ["live values, by lump", "a cut: exactly n live", "n registers"],
                            loc="upper left", bbox_to_anchor=(0.65, 0.9), fontsize=9, framealpha=0.9)
        self._backgrounds: dict = {}  # (preset, height) -> pixels of the empty axes
        self._tops: dict = {}         # preset -> the height its axes have (grows, never shrinks)
        self.image = W.Image(format="png", layout=W.Layout(width=css_width(FIGSIZE[0])))
        self._listing = W.HTML()
        self.table = W.HTML()
        self.summary = W.HTML()
        self.children = [W.HBox([self.preset_menu, *self._order_buttons]),
                         W.HBox([self.entry, self._vertex_menu, *self._move_buttons]), self.errors,
                         self.image, self.summary, self.table, self._listing]
        if not self.set_preset(preset, order):
            raise ValueError(self.error)

    # -- Python API ---------------------------------------------------------------------------
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
        self._fill(self.preset_menu, name)
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
        self._fill(self.entry, " ".join(program.order))
        self._show()

    def _fill(self, widget, value, options=None) -> None:
        with self.showing():
            if options is not None:
                widget.options = options
            widget.value = value if value is not None or options is None else options[0]

    def _show(self) -> None:
        program = self._program
        tape = ia.partials(program, self.x)
        self.image.value = self._draw()
        sizes = program.lump_sizes
        self.summary.value = (
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
        self.table.value = (f"<table {_TABLE}><tr>" + "".join(f"<th {_CELL}>{h}</th>" for h in heads) + "</tr>"
                             + "".join(rows) + f"</table><div style='font-size:0.92em;color:#555'>blocks at x = "
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
                              edgecolor=["black" if p in cuts else GREY_EDGE for p in range(len(live))],
                              linewidth=[2.2 if p in cuts else 0.8 for p in range(len(live))]))
        below = ax.get_xaxis_transform()  # x in data, y in axes fractions: names just under the axis
        for position, name in enumerate(["x"] + list(program.order)):
            artists.append(ax.text(position, -0.02, name, transform=below, ha="center", va="top", fontsize=9))
        for lump in program.lumps:
            middle = (lump.cut - len(lump.vertices) + 1 + lump.cut) / 2
            artists.append(ax.text(middle, top - 0.6, f"lump {lump.index}\nl = {lump.size}", ha="center",
                                   va="center", fontsize=9))
        return blit_png(self._canvas, background, artists)

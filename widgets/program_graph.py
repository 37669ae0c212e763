"""ProgramGraph: a program of several definitions as a graph of tensors, and reverse accumulation across it
(report sec. 2, eqs. 1-3, applied to tensors).

GraphView draws the sweep of eqs. 1-3 inside one expression, node by node. A program lifts the same sweep one
level up: its nodes are tensors (the inputs, the intermediates, the output) and there is an edge from a
tensor to each definition that reads it. :func:`tensoradbook.derive` visits the definitions from the last up
(:attr:`tensoradbook.ProgramGradients.steps`); at each step one definition's adjoint is complete and, by
Algorithm 4 (sec. 5), it sends the gradient of ``sum(dD * D)`` back along each edge to the tensor it reads.
A tensor read by several definitions collects one contribution per consumer, and its adjoint is their sum
(eq. 2), complete once its last consumer has sent. The widget shows that sweep step by step: step 0 is the
program, one step per definition of the sweep, and a last step with every input's gradient.

The core does every computation (parse, derive); the widget lays the graph out once per program, draws the
parts that do not change once, and keeps each step's picture and text, so a step costs only its drawing.
"""

from __future__ import annotations

from functools import cached_property, lru_cache

import ipywidgets as W
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch, Patch
from matplotlib.path import Path as MplPath

import tensoradbook as tab

from .base import CodeMessageBox, WidgetBase
from ._common import (SliderSteps, canvas_png, figure_dpi, fitting_dpi, function_entries,
                      legend_pixels, read_shapes, shapes_text, shows_errors)
from ._program import Sweep, as_program, formula_html
from .explorer import function_text
from .graph import CHAR, DELTA_OFFSET, DPI, LAYER, MARGIN, PAD, cut, default_shapes, layered_layout
from .style import (BLUE, BLUE_FILL, CURRENT, GREY_UNREACHED, GREY_UNREACHED_FILL, INPUT_FILL, INPUT_GREEN, OUTPUT_FILL,
                    RED, RED_FILL)

DEFAULT = ("m[] = max{k}_0^3 (x[k])\n"
           "e[i] = exp (x[i] - m[])\n"
           "s[i] = e[i] / sum{k}_0^3 (e[k])")
DEFAULT_SHAPES = {"x": (4,), "m": (), "e": (4,), "s": (4,)}
MAX_TENSORS = 24  # beyond this the picture is unreadable; the explorer lists the definitions instead

VIA = 0.3          # the slot of an edge passing a layer (a dummy node of the layout)
HALF = 0.2         # half a box's height: where edges meet it
SIDE = 0.09        # a contribution runs back this far to the right of its edge
BOTTOM = 0.95      # room for the legend (three rows)
TOP = 0.85         # from the top row's centre to the top: room for the title
BOX = "round,pad=0.3"
_LEGEND = [
    (Patch(facecolor=INPUT_FILL, edgecolor=INPUT_GREEN), "input"),
    (Patch(facecolor=BLUE_FILL, edgecolor=BLUE), "intermediate"),
    (Patch(facecolor=OUTPUT_FILL, edgecolor=BLUE), "output"),
    (Line2D([], [], color=BLUE), "is read by"),
    (Line2D([], [], color=RED, linestyle="--"), "contribution (Alg. 4)"),
    (Patch(facecolor=RED_FILL, edgecolor=RED), "adjoint, complete"),
    (Patch(facecolor="white", edgecolor=RED, linestyle="--"), "adjoint, partial sum"),
    (Patch(facecolor="white", edgecolor=CURRENT, linewidth=2.5), "this step's definition"),
]


def shape_label(shape) -> str:
    return "×".join(str(n) for n in shape) or "scalar"


class TensorGraph(Sweep):
    """A program's :class:`~widgets._program.Sweep` and where each tensor is drawn."""

    @classmethod
    def of(cls, program: tab.Program, grads: tab.ProgramGradients | None = None) -> TensorGraph:
        n = len(program.arguments) + len(program.definitions)
        if n > MAX_TENSORS:
            raise tab.ExpressionError(f"the program has {n} tensors; at most {MAX_TENSORS} fit in a readable picture")
        return super().of(program, grads)

    def label(self, name: str) -> str:
        return f"{name} : {shape_label(self.program.shapes[name])}"

    def adjoint_label(self, name: str, received: int) -> str:
        """What ``name``'s adjoint box says once ``received`` of its consumers have sent their contribution."""
        if name == self.program.name:
            return f"{self.adjoint_names[name]} seed"
        if not self.senders[name]:
            return f"{self.adjoint_names[name]} = 0"
        return f"{self.adjoint_names[name]} {received}/{len(self.senders[name])}"

    def box_width(self, name: str) -> float:
        return CHAR * len(self.label(name)) + PAD

    def adjoint_width(self, name: str) -> float:
        widest = max((self.adjoint_label(name, n) for n in range(len(self.senders[name]) + 1)), key=len)
        return CHAR * len(widest) + PAD

    def adjoint_at(self, name: str) -> tuple[float, float]:
        x, y = self.position[name]
        return x + self.box_width(name) / 2 + DELTA_OFFSET + self.adjoint_width(name) / 2, y

    @property
    def position(self) -> dict:
        """Tensor -> the centre (x, y) of its box, in inches."""
        return self._layout[0]

    @property
    def routes(self) -> dict:
        """``(tensor, definition)`` -> the points its edge passes from the top of the tensor's box to the bottom
        of the definition's, tensor first."""
        return self._layout[1]

    @property
    def size(self) -> tuple[float, float]:
        """The figure's (width, height) in inches."""
        return self._layout[2]

    @cached_property
    def _layout(self) -> tuple[dict, dict, tuple]:
        """Layers by longest path from the inputs (:func:`~widgets.graph.layered_layout`); an edge that passes
        layers gets a narrow slot in each, so that it bends around the boxes instead of crossing them."""
        layer = dict.fromkeys(self.program.arguments, 0)
        for d, names in self.reads.items():
            layer[d] = 1 + max((layer[n] for n in names), default=-1)
        keys, children, vias = [], {}, {}
        for d in reversed(self.reads):  # every node after all its parents: the definitions from the last
            keys.append(d)
            children[d] = []
            for name in dict.fromkeys(self.reads[d]):
                above = d
                chain = [("via", name, d, level) for level in range(layer[d] - 1, layer[name], -1)]
                for via in chain:
                    children[above].append(via)
                    keys.append(via)
                    children[via] = []
                    above = via
                children[above].append(name)
                vias[(name, d)] = chain[::-1]
        keys += self.program.arguments
        children.update({name: [] for name in self.program.arguments})

        def width(key):
            return VIA if isinstance(key, tuple) else (self.box_width(key) + DELTA_OFFSET
                                                        + (self.adjoint_width(key) if key in self.adjoint_names else 0))

        left, layer = layered_layout(keys, children, width)
        low = min(left.values())
        high = max(left[key] + width(key) for key in keys)
        size = (max(high - low + 2 * MARGIN, 6.5), LAYER * max(layer.values()) + BOTTOM + 0.45 + TOP)
        shift = MARGIN - low + (size[0] - 2 * MARGIN - (high - low)) / 2
        centre = {key: (left[key] + shift + (VIA if isinstance(key, tuple) else self.box_width(key)) / 2,
                        BOTTOM + 0.45 + LAYER * layer[key]) for key in keys}
        # The edges leaving a box's top (entering its bottom) are spread along it, ordered by where they go
        # (come from), so that each arrow can be followed to its own end.
        ends = {}
        for name, d in vias:
            ends.setdefault((name, "top"), []).append(((centre[vias[(name, d)][0]] if vias[(name, d)] else
                                                        centre[d])[0], (name, d)))
            ends.setdefault((d, "bottom"), []).append(((centre[vias[(name, d)][-1]] if vias[(name, d)] else
                                                        centre[name])[0], (name, d)))
        port = {}
        for (name, side), edges in ends.items():
            spread = min(self.box_width(name) - 0.2, 0.25 * (len(edges) - 1))
            for j, (_, edge) in enumerate(sorted(edges)):
                dx = spread * (j / (len(edges) - 1) - 0.5) if len(edges) > 1 else 0.0
                x, y = centre[name]
                port[(edge, side)] = (x + dx, y + (HALF if side == "top" else -HALF))
        routes = {edge: [port[(edge, "top")], *(centre[via] for via in chain), port[(edge, "bottom")]]
                  for edge, chain in vias.items()}
        position = {key: at for key, at in centre.items() if not isinstance(key, tuple)}
        return position, routes, size


@lru_cache(maxsize=32)
def _parsed(text: str, shapes: tuple) -> tab.Program:
    return as_program(tab.parse(text, dict(shapes)))


@lru_cache(maxsize=32)
def _graph(program: tab.Program) -> TensorGraph:
    return TensorGraph.of(program)


def _arrow(points, color: str, style: str, width: float = 1.2) -> FancyArrowPatch:
    """An arrow along ``points`` (a polyline), its head at the last."""
    codes = [MplPath.MOVETO] + [MplPath.LINETO] * (len(points) - 1)
    return FancyArrowPatch(path=MplPath(points, codes), arrowstyle="-|>,head_length=0.35,head_width=0.18",
                           mutation_scale=20, color=color, linestyle=style, linewidth=width, zorder=1)


class ProgramGraph(WidgetBase, SliderSteps, W.VBox):
    """A program as a graph of tensors and reverse accumulation across it, definition by definition.

    Python API: ``set_program(program, shapes=None) -> bool`` (text of one
    definition per line with its shapes, a dict or typed like ``x=4, m=()``,
    scalars for every name by default; or a :class:`~tensoradbook.Program` or
    Function), ``step`` (read/write, clamped: 0 is the program, then one step
    per definition of the sweep, and last every input's gradient), ``n_steps``,
    ``forward()``, ``back()``, ``program``, ``gradients`` (the
    :class:`~tensoradbook.ProgramGradients`), ``graph`` (the
    :class:`TensorGraph`), ``current`` (the sweep's
    :class:`~tensoradbook.ad.program.Step` of this step, None at the first and
    last), ``received`` (tensor -> the definitions whose contributions it has
    so far), ``formulas`` (the text of this step's formulas), ``title`` and
    ``error`` ("" if none).
    """

    errors_box = CodeMessageBox

    def __init__(self, program=DEFAULT, shapes=None):
        super().__init__()
        self._graph: TensorGraph | None = None
        self.program_entry, self.shapes_entry, apply = function_entries(
            lambda: self._showing or self._apply(), self._apply, "Draw this program's graph", label="program:")
        self.make_step_controls({"First": "the program", "Back": "previous definition of the sweep",
                                 "Forward": "next definition of the sweep", "Last": "every input's gradient"})
        self.image = W.Image(format="png")
        self.text = W.HTMLMath()
        self._figure = self._canvas = self._ax = self._background = None
        self._pictures: dict[int, bytes] = {}  # step -> PNG of the program shown
        self._texts: dict[int, str] = {}       # step -> its HTML
        self.children = [self.program_entry, W.HBox([self.shapes_entry, apply]), self.errors,
                         W.HBox([*self.buttons.values(), self.slider]), self.image, self.text]
        if shapes is None and isinstance(program, str) and program == DEFAULT:
            shapes = DEFAULT_SHAPES
        if not self.set_program(program, shapes):
            raise ValueError(self.error)

    # -- Python API ---------------------------------------------------------
    @property
    def graph(self) -> TensorGraph:
        return self._graph

    @property
    def program(self) -> tab.Program:
        return self._graph.program

    @property
    def gradients(self) -> tab.ProgramGradients:
        return self._graph.gradients

    @property
    def n_steps(self) -> int:
        """The program, one step per definition of the sweep, and the inputs' gradients."""
        return len(self.gradients.steps) + 2

    @property
    def current(self):
        return self.gradients.steps[self.step - 1] if 0 < self.step < self.n_steps - 1 else None

    @property
    def received(self) -> dict[str, tuple[str, ...]]:
        """Tensor -> the definitions that have sent it their contribution by this step (only tensors that
        have one; the output's adjoint is the seed, given from step 1)."""
        return self._received(self.step)

    def _received(self, k: int) -> dict[str, tuple[str, ...]]:
        sent = [step.definition.name for step in self.gradients.steps[:k]]
        return {name: tuple(d for d in senders if d in sent) for name, senders in self._graph.senders.items()
                if any(d in sent for d in senders)}

    @property
    def formulas(self) -> list[str]:
        """The text of what this step shows: the program, the definition's adjoint and its contributions,
        or the inputs' gradients."""
        grads, k = self.gradients, self.step
        if k == 0:
            return [str(d) for d in self.program.definitions]
        if k == self.n_steps - 1:
            return [str(f) for f in grads.functions.values()]
        step = grads.steps[k - 1]
        adjoint = grads.adjoints.get(step.definition.name)
        return [str(f) for f in ((adjoint,) if adjoint else ()) + tuple(step.gradients.values())]

    @property
    def title(self) -> str:
        return self._title(self.step)

    def _title(self, k: int) -> str:
        program = self.program
        if k == 0:
            n, m = len(program.definitions), len(program.arguments)
            return f"the program: {n} definition{'s' * (n != 1)}, {m} input{'s' * (m != 1)}"
        if k == self.n_steps - 1:
            return f"step {k} of {k}: the inputs' gradients, summed over consumers"
        d = self.gradients.steps[k - 1].definition.name
        return f"step {k} of {self.n_steps - 1}: {self._graph.adjoint_names[d]} complete, {d} sends contributions"

    @shows_errors
    def set_program(self, program, shapes=None) -> bool:
        """Show ``program``: text of one definition per line with ``shapes`` (scalars for every name by
        default), or a Program or Function as it is (``shapes`` is then ignored).

        On bad input the message (with its caret line) is shown inline, the
        previous graph stays and the call returns False.
        """
        if isinstance(program, (tab.Program, tab.Function)):
            parsed, text = as_program(program), program.source or str(program)
        else:
            text = function_text(program)
            shapes = read_shapes(default_shapes(text) if shapes is None else shapes)
            parsed = _parsed(text, tuple(shapes.items()))
        self._graph = _graph(parsed)
        with self.showing():
            self.program_entry.value = text
            self.shapes_entry.value = shapes_text(parsed.shapes)
        self._start_figure()
        with self.slider.hold_trait_notifications():
            self.slider.max = self.n_steps - 1
            self.slider.value = 0
        self._show()
        return True

    def _apply(self) -> None:
        self.set_program(self.program_entry.value, self.shapes_entry.value)

    # -- drawing --------------------------------------------------------------
    # The boxes, the forward edges and the legend are the same at every step: drawn once per program and kept
    # as pixels; a step restores them and draws only its own artists on top (matplotlib's blitting). Each
    # step's picture and text are kept, so going back and forth costs nothing.
    def _show(self) -> None:
        self.enable_step_buttons()
        k = self.step
        if k not in self._pictures:
            self._pictures[k] = self._draw(k)
            self._texts[k] = self._describe(k)
        self.image.value = self._pictures[k]
        self.text.value = self._texts[k]

    def _start_figure(self) -> None:
        graph = self._graph
        width, height = graph.size
        dpi = fitting_dpi(graph.size, figure_dpi(DPI))
        self._figure = Figure(figsize=graph.size, dpi=dpi)
        self._canvas = FigureCanvasAgg(self._figure)
        self._ax = ax = self._figure.add_axes((0, 0, 1, 1))
        ax.set_axis_off()
        ax.set_xlim(0, width)
        ax.set_ylim(0, height)
        for points in graph.routes.values():
            ax.add_artist(_arrow(points, BLUE, "-"))
        live = set(graph.adjoint_names)
        for name in graph.tensors:
            kind = graph.kind(name)
            fill = INPUT_FILL if kind == "input" else OUTPUT_FILL if kind == "output" else BLUE_FILL
            edge = INPUT_GREEN if kind == "input" else BLUE
            if name not in live:  # the output depends on it through no input: the sweep never reaches it
                fill, edge = GREY_UNREACHED_FILL, GREY_UNREACHED
            ax.text(*graph.position[name], graph.label(name), ha="center", va="center", fontsize=10, zorder=3,
                    bbox=dict(boxstyle=BOX, facecolor=fill, edgecolor=edge, linewidth=1.2))
        legend = legend_pixels(_LEGEND, dpi, ncol=3, fontsize=9, frameon=False)
        self._figure.figimage(legend, xo=max(0, int((width * dpi - legend.shape[1]) / 2)), yo=4)
        self._canvas.draw()
        self._background = self._canvas.copy_from_bbox(self._figure.bbox)
        self._pictures, self._texts = {}, {}
        self.image.layout.width = f"{int(width * dpi)}px"  # pixel for pixel

    def _draw(self, k: int) -> bytes:
        self._canvas.restore_region(self._background)
        for artist in self._step_artists(k):
            self._ax.draw_artist(artist)
            artist.remove()
        return canvas_png(self._canvas)

    def _step_artists(self, k: int) -> list:
        """What step ``k`` adds to the program's graph, in drawing order (edges under boxes)."""
        graph, ax = self._graph, self._ax
        width, height = graph.size
        artists = [ax.text(width / 2, height - 0.3, cut(self._title(k), int(width / (1.3 * CHAR))),
                           ha="center", va="center", fontsize=11, fontweight="bold")]
        if k == 0:
            return artists
        steps = self.gradients.steps
        current = steps[k - 1].definition.name if k <= len(steps) else None
        received = self._received(k)
        final = k == len(steps) + 1
        labels = []
        for step in steps[:k]:
            d = step.definition.name
            for name in step.gradients:  # back along the edge, beside it
                points = [(x + SIDE, y) for x, y in reversed(graph.routes[(name, d)])]
                now = d == current
                artists.append(ax.add_artist(_arrow(points, RED, "--", 2.0 if now else 1.2)))
                # named where they are news: this step's contributions, and at the end the inputs' summands
                if now or final and graph.kind(name) == "input":
                    (xa, ya), (xb, yb) = points[(len(points) - 1) // 2], points[(len(points) - 1) // 2 + 1]
                    labels.append(ax.text((xa + xb) / 2, (ya + yb) / 2, f"{step.adjoint}·∂{d}/∂{name}",
                                          ha="center", va="center", fontsize=9, color=RED,
                                          bbox=dict(boxstyle="round,pad=0.15", facecolor="white",
                                                    edgecolor=CURRENT if now else "none", alpha=0.9)))
        artists += labels
        for name in graph.adjoint_names:
            got = len(received.get(name, ()))
            output = name == self.program.name
            complete = output or got == len(graph.senders[name]) and (got or final)
            if not (output or got or final):
                continue  # nothing has reached it yet
            box = dict(boxstyle="round,pad=0.25", facecolor=RED_FILL if complete else "white",
                       edgecolor=CURRENT if name == current else RED, linewidth=2.5 if name == current else 1.2,
                       linestyle="-" if complete else "--")
            artists.append(ax.text(*graph.adjoint_at(name), graph.adjoint_label(name, got), ha="center",
                                   va="center", fontsize=10, color=RED, bbox=box))
        if current:
            artists.append(ax.text(*graph.position[current], graph.label(current), ha="center", va="center",
                                   fontsize=10, bbox=dict(boxstyle=BOX, facecolor=OUTPUT_FILL if current ==
                                                          self.program.name else BLUE_FILL, edgecolor=CURRENT,
                                                          linewidth=2.5)))
        return artists

    def _describe(self, k: int) -> str:
        graph, grads = self._graph, self.gradients
        program, steps = self.program, grads.steps
        if k == 0:
            head = (f"<p><b>The program.</b> Each definition reads the inputs "
                    f"({', '.join(program.arguments) or 'none'}) and the definitions above it; an arrow goes "
                    f"from each tensor to each definition that reads it.</p>{formula_html(program)}"
                    f"<p>The sweep visits the definitions from the last up, starting from {program.name}'s "
                    f"adjoint {grads.adjoint_name}, the seed (given, shaped like {program.name}).</p>")
        elif k == len(steps) + 1:
            items = "".join(f"<li>{graph.sum_sentence(name)}{formula_html(grads.functions[name])}</li>"
                            for name in grads.functions)
            head = (f"<p><b>The gradients.</b> Every definition has sent its contributions: each input's "
                    f"gradient is their sum over the definitions that read it (eq. 3).</p><ul>{items}</ul>")
        else:
            head = f"<p><b>Step {k}:</b></p>{graph.step_html(steps[k - 1])}"
        return head + self._table(k)

    def _table(self, k: int) -> str:
        graph, received = self._graph, self._received(k)
        rows = []
        for name in graph.tensors:
            readers = [d for d, names in graph.reads.items() if name in names]
            if name not in graph.adjoint_names:
                state = "none: the output does not depend on it through an input"
            elif name == self.program.name:
                state = "the seed" if k else ""
            else:
                got, senders = received.get(name, ()), graph.senders[name]
                state = (f"{len(got)} of {len(senders)} contributions" + (f" (from {', '.join(got)})" if got else "")
                         if senders else "0: no definition the output depends on reads it")
            rows.append(f"<tr><td>{name}</td><td>{graph.kind(name)}</td><td>{shape_label(self.program.shapes[name])}"
                        f"</td><td>{', '.join(readers) or '—'}</td><td>{graph.adjoint_names.get(name, '—')}</td>"
                        f"<td>{state}</td></tr>")
        return ("<table><tr><th>tensor</th><th></th><th>shape</th><th>read by</th><th>adjoint</th>"
                "<th>known so far</th></tr>" + "".join(rows) + "</table>")

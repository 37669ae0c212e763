"""GraphView: the computational graph of a function and its reverse sweep (report sec. 2, Figs. 1 and 2).

Both of the report's figures show a function twice: its computational graph
(blue nodes) and the derivative graph that reverse accumulation builds on it
(red nodes). Fig. 1 does it for the abstract composition
``f(x) = f_1[f_2(f_3(f_4(x), f_5(x)))]``, Fig. 2 for ``f(x_1, x_2, x_3) =
sin[sin(x_1 (x_2 + x_3) + sinh(x_2 + x_3))]``. The widget draws the same two
graphs for any function. The forward nodes (arguments, constants, operations)
are drawn blue as a layered DAG, leaves at the bottom and the root on top as in
the report; equal subexpressions are one node (the expression nodes compare by
value), so a part used twice is drawn once with two parents. Stepping through
:func:`tensoradbook.ad.reverse.reverse_accumulate` adds the derivative graph: each
node ``v_j`` gets its adjoint ``Delta_j`` (red), and each red edge from
``Delta_p`` to ``Delta_j`` carries the local partial ``d v_p / d v_j``, so that
``Delta_j = sum over parents p of Delta_p * d v_p / d v_j`` (eq. 2). The title
names the report's figure when the function is one drawn there
(:data:`REPORT_FIGURES`).

Nodes are numbered ``v_1 .. v_n`` in the sweep's order (every node after all
its parents, the root first, like ``f_1`` in Fig. 1). Step ``k`` shows what is
known after the sweep has handled ``v_1 .. v_k``: their adjoints are final
(solid red), and the children they sent contributions to hold partial sums
(dashed). Inside element-wise functions, sums are liberated as in sec. 5.2: a
sum passes its adjoint to its body, and a node inside a sum is its own node.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass

import ipywidgets as W
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

import tensoradbook as tab
from tensoradbook.lang.expr import Affine, Binary, Element, Expr, If, Select, Sum, Unary
from tensoradbook.lang.printer import expr_latex, expr_text
from tensoradbook.ad.reverse import child_keys, local_partials, reverse_accumulate
from tensoradbook.lang.simplify import ZERO

from .base import CodeMessageBox, WidgetBase
from .style import BLUE, BLUE_FILL, CURRENT, RED, RED_FILL
from ._common import (SliderSteps, canvas_png, css_width, figure_dpi, fitting_dpi, legend_pixels,
                      shows_errors,
                      subscript)
from .explorer import function_text

DEFAULT = "f[] = exp (x[] * y[]) + sin (x[])"
#: The functions of the report's figures, as the widget's title names them. Fig. 1 is an abstract composition
#: ``f_1[f_2(f_3(f_4(x), f_5(x)))]``; drawn here with f_1 = exp, f_2 = sin, f_3 = a product, f_4 = cos, f_5 = tanh.
FIG1 = "f[] = exp (sin (cos (x[]) * tanh (x[])))"
FIG2 = "f[] = sin (sin (x1[] * (x2[] + x3[]) + sinh (x2[] + x3[])))"
REPORT_FIGURES = {
    FIG1: "the report's Fig. 1 (f₁ = exp, f₂ = sin, f₃ = ×, f₄ = cos, f₅ = tanh)",
    FIG2: "the report's Fig. 2",
}
MAX_NODES = 30  # beyond this the picture is unreadable; the text of the function is better

# Geometry in inches: the axes' data units are inches, so sizes in points (1/72 in) line up with them.
DPI = 72  # at scale 1 (see _common.set_scale)
CHAR = 0.085      # average width of a 10 pt character
PAD = 0.22        # box padding around a label, both sides together
GAP = 0.35        # free space between neighbouring slots in a layer
DELTA_OFFSET = 0.12  # from a node's right edge to its adjoint box
LAYER = 1.05      # from one layer to the next
MARGIN = 0.35
TOP = 0.8         # room for the title and the line naming a figure of the report
BOTTOM = 0.55     # room for the legend
LABEL_CHARS = 16  # edge labels (local partials) longer than this are cut, the text below has them whole

_FORWARD_BOX = dict(boxstyle="round,pad=0.3", facecolor=BLUE_FILL, edgecolor=BLUE, linewidth=1.2)
_LEGEND = [
    (Patch(facecolor=BLUE_FILL, edgecolor=BLUE), "part vⱼ (blue in Figs. 1, 2)"),
    (Patch(facecolor=RED_FILL, edgecolor=RED), "adjoint Δⱼ = ∂f/∂vⱼ, final (red)"),
    (Patch(facecolor="white", edgecolor=RED, linestyle="--"), "adjoint, partial sum"),
    (Line2D([], [], color=RED, linestyle="--"), "local partial ∂vₚ/∂vⱼ"),
    (Patch(facecolor="white", edgecolor=CURRENT, linewidth=2.5), "node of this step"),
]

_OPERATORS = {"*": "×", "-": "−", "/": "÷", "**": "**", "+": "+"}


@functools.lru_cache(maxsize=1)
def _figure_texts() -> dict[str, str]:
    """:data:`REPORT_FIGURES` keyed by the printed form of each function (parsed once)."""
    out = {}
    for text, label in REPORT_FIGURES.items():
        try:
            out[str(tab.parse(text, default_shapes(text)))] = label
        except tab.ExpressionError:  # pragma: no cover -- a figure the expression language cannot write
            continue
    return out


def report_figure(fn) -> str:
    """Which of the report's figures ``fn`` is (:data:`REPORT_FIGURES`), or "" for any other function."""
    return _figure_texts().get(str(fn), "")


def default_shapes(text: str) -> dict[str, tuple]:
    """Every ``name[`` in the text as a scalar: ``f[] = exp (x[] * y[])`` needs no shapes typed."""
    return {name: () for name in re.findall(r"([A-Za-z_]\w*)\s*\[", text)}


def plain(text: str) -> str:
    """Scalars without their empty brackets (``x`` for ``x[]``): pictures and labels read easier."""
    return text.replace("[]", "")


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def node_label(node: Expr) -> str:
    """What a forward node shows: the operation, or the element or number itself."""
    if isinstance(node, Unary):
        return "−" if node.op == "neg" else node.op
    if isinstance(node, Binary):
        return _OPERATORS.get(node.op, node.op)  # max (a, b), min (a, b): by name
    if isinstance(node, Sum):
        return f"{'Σ' if node.op == 'sum' else node.op} {node.index}"  # a max or min reduction by name
    if isinstance(node, (If, Select)):
        return "if"
    return cut(plain(expr_text(node)), 14)


@dataclass(frozen=True)
class SweepGraph:
    """The DAG of a function's body, the reverse sweep over it and where each node is drawn.

    ``keys[j]`` is node ``v_{j+1}`` as the sweep keys it, ``(node, scope)``;
    ``states[k]`` maps keys to the adjoints known after ``k`` steps
    (:meth:`tensoradbook.ad.reverse.ReverseSweep.states`).
    """

    function: tab.Function
    seed: Expr
    sweep: object
    keys: tuple
    children: dict        # key -> child keys, in order, each once
    partial_labels: dict  # (parent key, child key) -> short text of d parent / d child
    states: tuple
    position: dict        # key -> (x, y) in inches
    size: tuple           # figure (width, height) in inches

    @staticmethod
    def of(fn: tab.Function) -> SweepGraph:
        seed = Element("d" + fn.name, tuple(Affine.index(i) for i in fn.indices))
        sweep = reverse_accumulate(fn.body, seed)
        keys = tuple((step.node, step.scope) for step in sweep.steps)
        if len(keys) > MAX_NODES:
            raise tab.ExpressionError(f"{fn.name}: the graph has {len(keys)} nodes; at most {MAX_NODES} "
                                      "fit in a readable picture")
        children = {key: tuple(dict.fromkeys(child_keys(*key))) for key in keys}
        position, size = _layout(keys, children)
        return SweepGraph(fn, seed, sweep, keys, children, _partial_labels(keys, children), sweep.states(),
                          position, size)

    def name(self, key) -> str:
        return f"v{subscript(self.keys.index(key) + 1)}"

    def text(self, key) -> str:
        """A node's text, with the sums and max / min reductions it lies in (the same text may be two nodes)."""
        node, scope = key
        inside = f" (inside {', '.join(f'{s.op} {s.index}' for s in scope)})" if scope else ""
        return expr_text(node) + inside


def _partial_labels(keys, children) -> dict:
    """``d parent / d child`` for every edge; a partial that is an operation node of the graph is named
    (exp' = exp is ``v_j``), a leaf is written out (``y`` reads better than its name)."""
    names = {key: f"v{subscript(j + 1)}" for j, key in enumerate(keys)}
    labels = {}
    for parent in keys:
        node, scope = parent
        inner = children[parent][0][1] if children[parent] else scope
        if isinstance(node, (If, Select)):  # a Select's compared values get no adjoint: no label
            parts = [(node.then, "if"), (node.otherwise, "else")]
        else:
            parts = [(child, partial.children() and (names.get((partial, inner)) or names.get((partial, scope)))
                      or cut(plain(expr_text(partial)), LABEL_CHARS))
                     for child, partial in local_partials(node)]
        for child, label in parts:  # x * x: two partials for one edge, summed
            key = (parent, (child, inner))
            labels[key] = f"{labels[key]} + {label}" if key in labels else label
    return labels


def _width(key) -> float:
    """A slot's width: the node's box, then its adjoint box to the right."""
    return CHAR * len(node_label(key[0])) + PAD + DELTA_OFFSET + CHAR * 4 + PAD


def layered_layout(keys, children, width) -> tuple[dict, dict]:
    """The left edge (inches) and the layer of each node of a DAG drawn leaves at the bottom: ``keys`` lists
    every node after all its parents, ``children[key]`` its children, ``width(key)`` its slot's width.

    Layers by longest path from the leaves; within a layer, ordered and placed by the mean x of the
    neighbours already placed (children going up, parents going down), which keeps crossings few.
    """
    layer = {}
    for key in reversed(keys):
        layer[key] = 1 + max((layer[c] for c in children[key]), default=-1)
    parents = {key: [] for key in keys}
    for key in keys:
        for child in children[key]:
            parents[child].append(key)
    first_seen = _first_seen(keys, children, parents)
    rows = [[] for _ in range(max(layer.values()) + 1)]
    for key in sorted(keys, key=first_seen.get):
        rows[layer[key]].append(key)
    x = {}
    _place(rows[0], {key: [] for key in rows[0]}, x, first_seen, width)
    for _ in range(2):  # up from the leaves, then down from the root, then up again
        for row in rows[1:]:
            _place(row, children, x, first_seen, width)
        for row in reversed(rows[:-1]):
            _place(row, {key: [p for p in parents[key]] for key in row}, x, first_seen, width)
    for row in rows[1:]:
        _place(row, children, x, first_seen, width)
    return x, layer


def _first_seen(keys, children, parents) -> dict:
    """The nodes numbered as a depth-first walk from the roots meets them: the leaves left to right."""
    first_seen = {}
    for root in (key for key in keys if not parents[key]):
        stack = [root]
        while stack:
            key = stack.pop()
            if key not in first_seen:
                first_seen[key] = len(first_seen)
                stack.extend(reversed(children[key]))
    return first_seen


def _place(row, neighbours, x: dict, first_seen: dict, width) -> None:
    """Order ``row`` by the mean x of each node's ``neighbours`` placed already and set its nodes' x in ``x``,
    side by side, centred on where they were wanted."""
    wanted = {key: (sum(x[n] for n in neighbours[key]) / len(neighbours[key]) if neighbours[key]
                    else x.get(key, 0.0)) for key in row}
    row.sort(key=lambda key: (wanted[key], first_seen[key]))
    placed, previous = [], None
    for key in row:  # push right past the left neighbour's slot
        left = wanted[key] if previous is None else max(wanted[key], placed[-1] + width(previous) + GAP)
        placed.append(left)
        previous = key
    shift = sum(wanted.values()) / len(row) - sum(placed) / len(row)  # recentre on what was wanted
    for key, left in zip(row, placed):
        x[key] = left + shift


def _layout(keys, children) -> tuple[dict, tuple]:
    """Where each node of the sweep is drawn (:func:`layered_layout`) and the figure's size."""
    x, layer = layered_layout(keys, children, _width)
    low = min(x.values())
    high = max(x[key] + _width(key) for key in keys)
    width = max(high - low + 2 * MARGIN, 7.0)  # the legend needs about 7 inches
    height = LAYER * max(layer.values()) + TOP + BOTTOM + 0.6
    position = {key: (x[key] - low + MARGIN + (width - 2 * MARGIN - (high - low)) / 2
                      + (CHAR * len(node_label(key[0])) + PAD) / 2,
                      BOTTOM + 0.3 + LAYER * layer[key]) for key in keys}
    return position, (width, height)


def sweep_picture(text: str, step: int | None = None) -> bytes:
    """The figure :class:`GraphView` shows for ``text`` (scalars by default) at ``step`` of the reverse sweep, by
    default its last (every adjoint final), as PNG bytes, without a widget: chapter 02 draws the report's Figs. 1
    and 2 with it. :func:`~tensoradbook.widgets.set_scale` sets its size as for a widget."""
    text = function_text(text)
    picture = SweepPicture(SweepGraph.of(tab.parse(text, default_shapes(text))))
    return picture.png(picture.n_steps - 1 if step is None else step)


class SweepPicture:
    """The figure of a :class:`SweepGraph` at each step of its reverse sweep (step 0: the forward graph) as PNG
    bytes, at the scale set when it is made.

    The forward graph and the legend are the same at every step: they are drawn once and kept as pixels; a step
    restores them and draws only its own artists on top (matplotlib's blitting), which keeps a step well inside
    100 ms. Pictures already drawn are kept.
    """

    def __init__(self, graph: SweepGraph):
        self.graph = graph
        self.n_steps = len(graph.keys) + 1
        self.dpi = dpi = fitting_dpi(graph.size, figure_dpi(DPI))
        self._figure = Figure(figsize=graph.size, dpi=dpi)
        self._canvas = FigureCanvasAgg(self._figure)
        self._ax = ax = self._figure.add_axes((0, 0, 1, 1))
        ax.set_axis_off()
        ax.set_xlim(0, graph.size[0])
        ax.set_ylim(0, graph.size[1])
        for parent in graph.keys:  # forward edges: a node uses its children's values
            for child in graph.children[parent]:
                (x0, y0), (x1, y1) = graph.position[parent], graph.position[child]
                ax.plot((x0, x1), (y0, y1), color=BLUE, linewidth=1.2, zorder=1)
        for j, key in enumerate(graph.keys):
            self._node_box(key, _FORWARD_BOX)
            x, y = graph.position[key]
            ax.text(x - 0.12, y + 0.3, f"v{subscript(j + 1)}", ha="right", va="center", fontsize=9,
                    color="0.35", zorder=3)
        legend = legend_pixels(_LEGEND, dpi, ncol=3, fontsize=9, frameon=False)
        self._figure.figimage(legend, xo=max(0, int((graph.size[0] * dpi - legend.shape[1]) / 2)), yo=4)
        self._canvas.draw()
        self._background = self._canvas.copy_from_bbox(self._figure.bbox)
        self._pictures: dict[int, bytes] = {}  # step -> PNG

    def titles(self, k: int) -> tuple[str, str]:
        """The title at step ``k`` and the line under it naming the report's figure that draws this function
        ("" for a function the report does not draw)."""
        graph = self.graph
        width = graph.size[0]
        head = "forward graph" if k == 0 else f"reverse sweep, step {k} of {self.n_steps - 1}"
        title = cut(f"{head}:  {plain(str(graph.function))}", int(width / (1.3 * CHAR)))  # 11 pt bold
        figure = report_figure(graph.function)
        return title, cut(figure, int(width / (1.15 * CHAR))) if figure else ""

    def png(self, k: int) -> bytes:
        """The picture at step ``k``."""
        if k not in self._pictures:
            self._canvas.restore_region(self._background)
            artists = self._step_artists(k)
            for artist in artists:
                self._ax.draw_artist(artist)
                artist.remove()
            self._pictures[k] = canvas_png(self._canvas)
        return self._pictures[k]

    def _node_box(self, key, box):
        x, y = self.graph.position[key]
        return self._ax.text(x, y, node_label(key[0]), ha="center", va="center", fontsize=10, bbox=box,
                             zorder=3)

    def _delta_at(self, key) -> tuple[float, float]:
        x, y = self.graph.position[key]
        return x + (CHAR * len(node_label(key[0])) + PAD) / 2 + DELTA_OFFSET + (CHAR * 3 + PAD) / 2, y

    def _step_artists(self, k: int) -> list:
        """What step ``k`` adds to the forward graph, in drawing order (edges under boxes)."""
        graph, ax = self.graph, self._ax
        width, height = graph.size
        title, figure = self.titles(k)
        artists = [ax.text(width / 2, height - 0.3, title, ha="center", va="center", fontsize=11,
                           fontweight="bold")]
        if figure:  # the report draws this function: say which figure, under the title
            artists.append(ax.text(width / 2, height - 0.62, figure, ha="center", va="center", fontsize=10,
                                   fontstyle="italic", color="0.3"))
        if k == 0:
            return artists
        known, done, current = graph.states[k], set(graph.keys[:k]), graph.keys[k - 1]
        labels = []
        for parent in graph.keys[:k]:  # red edges: the contributions already sent
            for child in graph.children[parent]:
                if known.get(child, ZERO) == ZERO or (parent, child) not in graph.partial_labels:
                    continue
                (x0, y0), (x1, y1) = self._delta_at(parent), self._delta_at(child)
                artists += ax.plot((x0, x1), (y0, y1), color=RED, linestyle="--", linewidth=1.2)
                labels.append(ax.text((x0 + x1) / 2, (y0 + y1) / 2, graph.partial_labels[(parent, child)],
                                      ha="center", va="center", fontsize=9, color=RED,
                                      bbox=dict(boxstyle="round,pad=0.1", facecolor="white", edgecolor="none",
                                                alpha=0.85)))
        artists += labels
        for j, key in enumerate(graph.keys):
            if known.get(key, ZERO) == ZERO:
                continue  # not reached yet, or nothing flows to it (a constant exponent)
            final = key in done
            box = dict(boxstyle="round,pad=0.25", facecolor=RED_FILL if final else "white",
                       edgecolor=CURRENT if key == current else RED, linewidth=2.5 if key == current else 1.2,
                       linestyle="-" if final else "--")
            artists.append(ax.text(*self._delta_at(key), f"Δ{subscript(j + 1)}", ha="center", va="center",
                                   fontsize=10, color=RED, bbox=box))
        artists.append(self._node_box(current, dict(_FORWARD_BOX, edgecolor=CURRENT, linewidth=2.5)))
        return artists


class GraphView(WidgetBase, SliderSteps, W.VBox):
    """The computational graph of a function (blue) and its reverse sweep step by step, which builds the
    derivative graph (red), as in the report's Figs. 1 and 2.

    Python API: ``step`` (read/write, clamped; 0 is the forward graph, ``k``
    the state after ``k`` nodes of the sweep), ``n_steps`` (the number of
    states), ``forward()``, ``back()``, ``set_function(text, shapes=None)``
    (shapes default to scalars for every name), ``error`` ("" if none),
    ``adjoints`` (node text -> adjoint text known at this step), ``current``
    (the :class:`~tensoradbook.ad.reverse.SweepStep` of this step, None at step
    0), ``title`` (the picture's title and the line naming the report's
    figure, if the report draws this function) and ``graph`` (the
    :class:`SweepGraph`).
    """

    errors_box = CodeMessageBox

    def __init__(self, text: str = DEFAULT, shapes=None):
        super().__init__()
        self._graph: SweepGraph | None = None
        self.entry = W.Text(description="f:", placeholder="f[] = exp (x[] * y[]) + sin (x[])",
                             continuous_update=False, layout=W.Layout(width="40em"))
        # The text box reports on Enter or when it loses focus (continuous_update=False).
        self.on_user_change(self.entry, self.set_function)
        apply = W.Button(description="Apply", tooltip="Draw the graph of this function")
        apply.on_click(lambda _: self.set_function(self.entry.value))
        self.buttons = {}
        for label, tip, move in (("Back", "previous node of the sweep", -1), ("Forward", "next node", 1)):
            button = W.Button(description=label, tooltip=tip, layout=W.Layout(width="6em"))
            button.on_click(lambda _, move=move: setattr(self, "step", self.step + move))
            self.buttons[label] = button
        self.slider = W.IntSlider(min=0, max=0, description="step", continuous_update=True)
        self.slider.observe(lambda _: self._show(), names="value")
        self.image = W.Image(format="png")
        self.text = W.HTMLMath()
        self._picture: SweepPicture | None = None
        self.children = [W.HBox([self.entry, apply]), self.errors,
                         W.HBox([*self.buttons.values(), self.slider]), self.image, self.text]
        if not self.set_function(text, shapes):
            raise ValueError(self.error)

    # -- Python API ---------------------------------------------------------
    @property
    def graph(self) -> SweepGraph:
        return self._graph

    @property
    def n_steps(self) -> int:
        """Number of states: the forward graph plus one per node of the sweep."""
        return len(self._graph.keys) + 1

    @property
    def current(self):
        return self._graph.sweep.steps[self.step - 1] if self.step else None

    @property
    def adjoints(self) -> dict[str, str]:
        """Node text -> adjoint text for every node the sweep has handled (final; "0" where nothing flows,
        as to a constant exponent) or sent a contribution to (a partial sum)."""
        graph, known = self._graph, self._graph.states[self.step]
        reached = dict.fromkeys(graph.keys[:self.step]) | dict.fromkeys(known)
        return {graph.text(key): expr_text(known.get(key, ZERO)) for key in reached}

    @shows_errors
    def set_function(self, text: str, shapes=None) -> bool:
        """Parse ``text`` (scalars by default) and show its forward graph.

        On bad input the message (with its caret line) is shown inline, the
        previous graph stays and the call returns False.
        """
        text = function_text(text)
        graph = SweepGraph.of(tab.parse(text, default_shapes(text) if shapes is None else shapes))
        self._graph = graph
        with self.showing():
            self.entry.value = text
        self._picture = SweepPicture(graph)
        self.image.layout.width = css_width(graph.size[0], dpi=self._picture.dpi)
        with self.slider.hold_trait_notifications():
            self.slider.max = self.n_steps - 1
            self.slider.value = 0
        self._show()
        return True

    @property
    def title(self) -> tuple[str, str]:
        """The picture's title at this step and the line under it naming the report's figure that draws this
        function ("" for a function the report does not draw)."""
        return self._picture.titles(self.step)

    # -- drawing --------------------------------------------------------------
    def _show(self) -> None:
        self.buttons["Back"].disabled = self.step == 0
        self.buttons["Forward"].disabled = self.step == self.n_steps - 1
        self.image.value = self._picture.png(self.step)
        self.text.value = self._describe()

    def _describe(self) -> str:
        graph, k = self._graph, self.step
        names = {key: graph.name(key) for key in graph.keys}
        root = names[graph.keys[0]]
        if k == 0:
            head = (f"<p><b>Forward graph.</b> The nodes {root} … {names[graph.keys[-1]]} are numbered in the "
                    f"order the reverse sweep visits them: every node after all its parents. The sweep starts "
                    f"with the root's adjoint Δ₁ = ${expr_latex(graph.seed)}$ (the seed).</p>")
        else:
            step, key = graph.sweep.steps[k - 1], graph.keys[k - 1]
            inner = step.scope + (step.node,) if isinstance(step.node, Sum) else step.scope
            sent = "".join(f"<li>to {names[(child, inner)]} (<code>{html.escape(plain(expr_text(child)))}</code>): "
                           f"${expr_latex(contribution)}$</li>" for child, contribution in step.contributions)
            head = (f"<p><b>Step {k}:</b> {names[key]} = <code>{html.escape(plain(graph.text(key)))}</code> "
                    f"has all its parents' contributions, so its adjoint is final: "
                    f"Δ{subscript(k)} = ${expr_latex(step.adjoint)}$.</p>"
                    + (f"<p>It sends Δ{subscript(k)} times the local partial to each child:</p><ul>{sent}</ul>"
                       if sent else "<p>It is a leaf: nothing to pass on.</p>"))
        rows = "".join(
            f"<tr><td>{names[key]}</td><td><code>{html.escape(plain(graph.text(key)))}</code></td>"
            f"<td>{'final' if graph.keys.index(key) < k else 'partial'}</td><td>${expr_latex(value)}$</td></tr>"
            for key, value in graph.states[k].items() if value != ZERO)
        return (head + "<table><tr><th>node</th><th>expression</th><th></th><th>adjoint known so far</th></tr>"
                + rows + "</table>")

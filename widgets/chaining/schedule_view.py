"""ScheduleView: the chosen schedule as a tree, adjoint sweeps coloured by their tape, beside the
homogeneous tangent, homogeneous adjoint and optimal preaccumulation baselines (sec. 5).
"""

from __future__ import annotations

import html
import ipywidgets as W
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator
from tensoradbook import chaining as jc
from .._common import canvas_png, css_width, figure_dpi, fitting_dpi, subscript

from ..style import BLUE, BLUE_FILL, GREY_SCHEDULE, GREY_SCHEDULE_FILL, RED
from .shared import RULE_NAMES, SECTION_5, TAPE_RAMP, _compact, _number, own_cost
from .controls import _ChainWidget


# -- ScheduleView -------------------------------------------------------------------------------------------

# Tree geometry in inches (the axes' data units are inches).
COLUMN = 1.55     # width per factor
LEVEL = 1.05      # from one tree level to the next (a box has up to four 9 pt lines)
HEADER = 0.9      # room for the factors' names above the root
FOOTER = 0.75     # room for the colour bar
TREE_DPI = 80


_BOX_PIXELS: dict[tuple, np.ndarray] = {}
MAX_KEPT_BOXES = 2000  # about 30 kB each
_SCRATCH: dict[float, list] = {}  # per dpi, one transparent figure that draws the boxes, made on first use


def box_pixels(text: str, face, edge: str, dpi: float = TREE_DPI) -> np.ndarray:
    """RGBA pixels of one tree box (rounded frame and text), drawn once and kept.

    Laying out and rendering text is most of a tree's drawing time, and the
    same boxes (a factor's preaccumulation, a sweep) recur from schedule to
    schedule, so each distinct box is drawn once and pasted from then on.
    """
    key = (text, tuple(face) if not isinstance(face, str) else face, edge, dpi)
    if key not in _BOX_PIXELS:
        if len(_BOX_PIXELS) >= MAX_KEPT_BOXES:
            _BOX_PIXELS.clear()
        if dpi not in _SCRATCH:
            figure = Figure(figsize=(8, 1.5), dpi=dpi)
            figure.patch.set_alpha(0)
            canvas = FigureCanvasAgg(figure)
            canvas.draw()
            _SCRATCH[dpi] = [figure, canvas, canvas.copy_from_bbox(figure.bbox)]
        figure, canvas, blank = _SCRATCH[dpi]
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
        self._dpi = figure_dpi(TREE_DPI)  # the scale when made (set_scale)
        self.image = W.Image(format="png")
        self.baseline_table = W.HTML(layout=W.Layout(margin="0 0 0 1em"))
        self.steps = W.HTML()
        # side by side where they fit, the table below the tree where not (a presentation scale)
        tree_and_table = W.HBox([self.image, self.baseline_table], layout=W.Layout(flex_flow="row wrap"))
        self.children = [self._controls, self.errors, tree_and_table, self.steps]
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
        chain, memory = state["chain"], state["memory"]
        return jc.optimize(chain, memory, state["rule"]), jc.baselines(chain, memory)

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
        self.image.value = self._pictures[notation]
        self.baseline_table.value = self._baseline_html()
        self.steps.value = self._steps_html()

    # -- the tree ---------------------------------------------------------------
    def _layout(self) -> list[dict]:
        """One box per node and sweep: text, kind, tape, colour, factor span (j, i), level (0 = root), parent."""
        chain = self.chain
        norm = Normalize(0, chain.total_edges)
        boxes, stack = [], [(self._plan.schedule, 0, None)]

        def add(text, kind, tape, span, level, parent):
            colour = (BLUE_FILL if kind == "tangent" else TAPE_RAMP(norm(tape)) if kind == "adjoint" else
                      GREY_SCHEDULE_FILL if kind == "product" else "white")
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
            fig = Figure(figsize=(width, height), dpi=fitting_dpi((width, height), self._dpi))
            canvas = FigureCanvasAgg(fig)
            ax = fig.add_axes((0, 0, 1, 1))
            ax.set_axis_off()
            ax.set_xlim(0, width)
            ax.set_ylim(0, height)
            left = (width - COLUMN * q) / 2
            for v in range(1, q + 1):  # F_q on the left, as in F'_q ... F'_1
                f = chain.factor(v)
                ax.text(left + COLUMN * (q - v + 0.5), height - 0.3, f"F{subscript(v)}: {f.n}→{f.m}\n"
                        f"|E|={_number(f.edges)}", ha="center", va="center", fontsize=9, color=GREY_SCHEDULE)
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
        dpi = fig.dpi  # lower than self._dpi for a tree too tall for a screen

        def centre(span):
            j, i = span
            return left + COLUMN * ((q - j) + (q - i + 1)) / 2

        def middle(level):
            return height - HEADER - LEVEL * (level + 0.5)

        canvas.restore_region(background)
        edges = LineCollection([((centre(boxes[box["parent"]]["span"]), middle(boxes[box["parent"]]["level"])),
                                 (centre(box["span"]), middle(box["level"]))) for box in boxes[1:]],
                               colors=GREY_SCHEDULE, linewidths=1)
        ax.add_collection(edges)
        ax.draw_artist(edges)
        edges.remove()
        frame = np.asarray(canvas.buffer_rgba())  # the canvas's own pixels: boxes are blended in place
        for box in boxes:  # over the edges: each box's pixels, centred on its place
            edge = {"tangent": BLUE, "adjoint": RED}.get(box["kind"], GREY_SCHEDULE)
            pixels = box_pixels(box["text"], box["colour"], edge, dpi)
            rows, columns = pixels.shape[:2]
            top = round(frame.shape[0] - middle(box["level"]) * dpi - rows / 2)  # array rows count from the top
            left_edge = round(centre(box["span"]) * dpi - columns / 2)
            # The part inside the frame (a very long label at the border would stick out).
            r0, c0 = max(0, -top), max(0, -left_edge)
            r1, c1 = min(rows, frame.shape[0] - top), min(columns, frame.shape[1] - left_edge)
            source = pixels[r0:r1, c0:c1]
            target = frame[top + r0:top + r1, left_edge + c0:left_edge + c1]
            alpha = source[..., 3:] / 255.0
            target[..., :3] = (source[..., :3] * alpha + target[..., :3] * (1 - alpha)).round().astype(np.uint8)
        self.image.layout.width = css_width(width, dpi=dpi)
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

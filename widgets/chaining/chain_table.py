"""ChainTable: the dynamic programme of eq. 3.7 (eq. 3.8 and the paper's single-value rule under a tape
bound, sec. 4) filled diagonal by diagonal; selecting a cell lists the candidates it compared.
"""

from __future__ import annotations

import html
import ipywidgets as W
from tensoradbook import chaining as jc
from tensoradbook.integer.matrix import as_int
from .._common import (SliderSteps, shows_errors)

from ..style import GREEN, GREY_INFEASIBLE
from .shared import RULE_NAMES, SECTION_5, _number, step_formula
from .controls import _ChainWidget


# -- ChainTable ---------------------------------------------------------------------------------------------

CELL_STYLE = W.HTML("<style>.jc-cell {white-space: pre-line !important; height: auto !important; "
                    "line-height: 1.35 !important; padding: 0.3em 0.15em !important; "
                    "font-size: 0.92em !important;}</style>")


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
        self.slider = W.IntSlider(min=0, max=0, description="diagonal", continuous_update=True,
                                   tooltip="cells F'_{j,i} with j - i up to this are filled")
        self.slider.observe(lambda change: self._showing or self._on_diagonal(), names="value")
        self.buttons = {}
        for label, tip, move in (("Back", "empty the last diagonal", -1), ("Forward", "fill the next diagonal", 1)):
            button = W.Button(description=label, tooltip=tip, layout=W.Layout(width="6em"))
            button.on_click(lambda _, move=move: setattr(self, "step", self.step + move))
            self.buttons[label] = button
        self._grid = W.GridBox()
        self.cells: dict[tuple[int, int], W.Button] = {}
        self.heading = W.HTML()
        self.candidate_list = W.HTML()
        self.children = [CELL_STYLE, self._controls, self.errors,
                         W.HBox([*self.buttons.values(), self.slider]), self.heading, self._grid,
                         self.candidate_list]
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
            self.slider.max = q - 1
            self.slider.value = q - 1
            self._selected = (q, 1)

    def _build_grid(self, q: int) -> None:
        self.cells = {}
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
                self.cells[j, i] = button
                items.append(button)
        self._grid.children = items
        self._grid.layout = W.Layout(grid_template_columns=f"4em repeat({q}, minmax(7.5em, max-content))",
                                     grid_gap="4px", width="max-content")

    def _on_diagonal(self) -> None:
        # The newly filled (or last still filled) diagonal's first cell shows what that step compared.
        self._selected = (self.step + 1, 1)
        self.errors.show("")
        self._show()

    def _show(self) -> None:
        plan, q, filled = self._plan, self.chain.q, self.step
        full = filled == q - 1
        used = {(s.j, s.i) for s in plan.steps()} if full else set()
        for (j, i), button in self.cells.items():
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
        self.buttons["Back"].disabled = filled == 0
        self.buttons["Forward"].disabled = full
        bound = "unlimited tape" if self.memory is None else f"M̄ = {_number(self.memory)}"
        if full:
            status = (f"Table full: F' = <code>{html.escape(plan.notation)}</code>, "
                      f"<b>{_number(plan.fma)} fma</b>, tape M = {_number(plan.memory)} (green: the cells it uses).")
        else:
            status = f"Filled up to diagonal {filled} of {q - 1}: cells F'<sub>j,i</sub> with j − i ≤ {filled}."
        self.heading.value = f"<p><b>{RULE_NAMES[self.rule]}</b> rule, {bound}. {status}</p>"
        self.candidate_list.value = self._candidate_html()

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
            colour = GREEN if c.kept else GREY_INFEASIBLE if not c.feasible else "black"
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

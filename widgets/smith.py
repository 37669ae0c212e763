"""SmithStepper: step through Algorithm 1 (Smith normal form, report sec. 4.1).

Each step shows the state ``(S, U, V)`` after one elementary operation, with
the rows or columns it touched coloured; ``U A V = S`` (eq. 12) holds at every
step, and at the last one ``S`` is the diagonal of eqs. 10-11.
"""

from __future__ import annotations

import html

import ipywidgets as W

from tensoradbook import smith_normal_form
from tensoradbook.integer.matrix import as_int_matrix, matmul, matrix_latex

from .base import WidgetBase
from ._common import SliderSteps, matrix_text, parse_matrix, shows_errors

MAX_SIZE = 8  # rows and columns; larger matrices do not fit on screen


class SmithStepper(WidgetBase, SliderSteps, W.VBox):
    """Replay Algorithm 1 on an integer matrix, one elementary operation at a time.

    Python API: ``step`` (read/write, clamped), ``n_steps``, ``forward()``,
    ``back()``, ``set_matrix(A_or_text)``, ``result`` (the
    :class:`~tensoradbook.integer.smith.SmithNormalForm`), ``current`` (the
    :class:`~tensoradbook.integer.smith.SmithStep` shown) and ``error`` ("" if none).
    """

    def __init__(self, A=((2, 4, 4), (-6, 6, 12), (10, -4, -16))):
        super().__init__()
        self._result = None
        self.entry = W.Text(description="A =", placeholder="rows like 2 4 4; -6 6 12  or  [[2, 4], [6, 8]]",
                             continuous_update=False, layout=W.Layout(width="28em"))
        self.apply_button = W.Button(description="Apply", tooltip="Run Algorithm 1 on this matrix")
        self.apply_button.on_click(lambda _: self.set_matrix(self.entry.value))
        self.entry.observe(self._on_entry, names="value")
        self.make_step_controls({"First": "start state", "Back": "previous operation",
                                 "Forward": "next operation", "Last": "Smith normal form"})
        self.heading = W.HTML()
        self.matrix_view = W.HTMLMath()
        self.summary = W.HTML()
        self.children = [
            W.HBox([self.entry, self.apply_button]),
            self.errors,
            W.HBox([*self.buttons.values(), self.slider]),
            self.heading,
            self.matrix_view,
            self.summary,
        ]
        if not self.set_matrix(A):
            raise ValueError(self.error)

    # -- Python API ---------------------------------------------------------
    @property
    def result(self):
        return self._result

    @property
    def n_steps(self) -> int:
        """Number of states: the start plus one per operation."""
        return len(self._result.steps)

    @property
    def current(self):
        return self._result.steps[self.step]

    @shows_errors
    def set_matrix(self, A) -> bool:
        """Run Algorithm 1 on ``A`` (a matrix or its typed text) and show its first step.

        On bad input the message is shown inline, the previous matrix stays and
        the call returns False.
        """
        matrix = as_int_matrix(parse_matrix(A) if isinstance(A, str) else A, "A")
        n_rows, n_cols = matrix.shape
        if not n_rows or not n_cols:
            raise ValueError(f"A is {n_rows} x {n_cols}; it needs at least one row and one column")
        if n_rows > MAX_SIZE or n_cols > MAX_SIZE:
            raise ValueError(f"A is {n_rows} x {n_cols}; at most {MAX_SIZE} x {MAX_SIZE} fits on screen")
        result = smith_normal_form(matrix)
        self._result = result
        with self.showing():
            self.entry.value = matrix_text(result.A)
        with self.slider.hold_trait_notifications():
            self.slider.max = self.n_steps - 1
            self.slider.value = 0
        self._show()
        return True

    # -- callbacks and drawing ----------------------------------------------
    def _on_entry(self, change) -> None:
        # The text box reports on Enter or when it loses focus (continuous_update=False).
        if not self._showing:
            self.set_matrix(change["new"])

    def _show(self) -> None:
        state, last = self.current, self.n_steps - 1
        op = state.operation
        rows = op.touched if op is not None and op.axis == "rows" else ()
        cols = op.touched if op is not None and op.axis == "cols" else ()
        where = "" if state.line is None else f" &mdash; Algorithm 1, line {state.line}"
        self.heading.value = (f"<b>Step {state.index} of {last}</b>{where}<br>{html.escape(state.words)}")
        self.matrix_view.value = (
            rf"$$S = {matrix_latex(state.S, rows, cols)} \qquad U = {matrix_latex(state.U, highlight_rows=rows)}"
            rf" \qquad V = {matrix_latex(state.V, highlight_cols=cols)}$$")
        self.enable_step_buttons()
        self.summary.value = self._final_summary() if state.index == last else ""

    def _final_summary(self) -> str:
        r = self._result
        holds = bool((matmul(matmul(r.U, r.A), r.V) == r.S).all())
        check = "U A V = S holds" if holds else "U A V = S FAILS (a bug in Algorithm 1)"
        factors = ", ".join(str(f) for f in r.invariant_factors) or "none"
        return (f"<b>{check}.</b> Smith normal form reached: rank {r.rank}, "
                f"invariant factors {factors}.")

"""DerivationExplorer: Algorithm 4 (report sec. 5) for one argument, occurrence by occurrence.

For ``f[alpha] = body`` every occurrence ``x[A alpha + a]`` of the argument
``x`` adds to ``dx[beta]`` (eqs. 38-47): the Smith normal form ``S = U A V``
(sec. 4.1, eqs. 10-12) gives the integer inverse ``I``, the kernel ``K`` and
the cokernel ``C``; the occurrence contributes only where ``C (beta - a) = 0``
(eq. 16) and ``I (beta - a)`` is integral (eq. 17), and there it sums the
occurrence's adjoint over ``alpha = I (beta - a) + K z`` for ``z`` in
``Sigma(beta)`` (eq. 42), whose Fourier-Motzkin loop bounds (sec. 4.2,
Algorithm 3, eq. 45) become the ``max``/``min`` bounds of the sums. The
explorer shows these matrices and bounds as :func:`tensoradbook.ad.derive` built
them, the derivative it returns, and a finite-difference check of it.

A program of several definitions (one per line) is derived by reverse accumulation across its
definitions (sec. 2, eqs. 1-3, at the tensor level): the explorer lists the definitions and, in the sweep's
order, each one's adjoint and the gradients it sends by Algorithm 4; for an input or an intermediate it
shows the adjoint and the occurrences behind each definition's contribution to it.
"""

from __future__ import annotations

import html
from functools import lru_cache

import ipywidgets as W
import numpy as np

import tensoradbook as tab
from tensoradbook.integer.matrix import shown, matrix_latex
from tensoradbook.lang.expr import If, Sum
from tensoradbook.lang.printer import atom_text, bound_text, expr_text

from .base import CodeMessageBox, WidgetBase
from ._common import choose, function_entries, read_shapes, shapes_text, shows_errors
from ._program import Sweep, formula_html

SECTION_6 = "sec. 6 example"
PRESETS = {
    SECTION_6: ("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
                {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}),
    "matrix product": ("c[i; j] = sum{k}_0^3 (a[i; k] * b[k; j])", {"c": (2, 3), "a": (2, 4), "b": (4, 3)}),
    "strided x[2 * i; j]": ("f[i; j] = x[2 * i; j]", {"f": (3, 4), "x": (7, 4)}),
    "shifted window x[i + 2]": ("f[i] = x[i + 2]", {"f": (5,), "x": (8,)}),
    "x[10 * s + t]": ("f[s; t] = x[10 * s + t]", {"f": (3, 10), "x": (30,)}),
    "diagonal x[i; i]": ("f[i] = x[i; i]", {"f": (4,), "x": (4, 4)}),
}
TOLERANCE = 1e-6  # the dot-product test's relative error for a right gradient is around 1e-8 and below


# Deriving a function and checking it are the slow steps of a redraw: each function is done once, so
# returning to a preset or switching the argument costs only the display.
@lru_cache(maxsize=32)
def _derivation(text: str, shapes: tuple) -> tuple[tab.Function | tab.Program, tab.Gradients | tab.ProgramGradients]:
    fn = tab.parse(text, dict(shapes))
    return fn, tab.derive(fn)


@lru_cache(maxsize=32)
def _check(text: str, shapes: tuple) -> dict[str, float]:
    fn, grads = _derivation(text, shapes)
    return {name: float(error) for name, error in tab.check_gradients(fn, grads=grads).items()}


def _column(values) -> np.ndarray:
    return np.array([[v] for v in values], dtype=object).reshape(len(values), 1)


def _condition(atom) -> str:
    """An atom with the equation of the report it comes from."""
    source = ("F b <= 0, eq. 34" if atom.inequality else
              "I (beta - a) integral, eq. 17" if atom.modulus else "C (beta - a) = 0, eq. 16")
    return f"{atom_text(atom)}   ({source})"


def conditions_and_loops(contribution) -> tuple[list[str], list[str]]:
    """The conditions and the loop bounds (outermost first) of one occurrence's contribution, read off
    the expression Algorithm 4 built: its ``if`` and the sums over the kernel coordinates ``z``."""
    node, conditions, loops = contribution.expression, [], []
    if isinstance(node, If):
        conditions = [_condition(atom) for atom in node.condition]
        node = node.then
    z_names = set(contribution.bounds.names)
    while isinstance(node, Sum) and node.index in z_names:
        loops.append(f"{bound_text(node.lower, True, standalone=True)} <= {node.index} <= "
                     f"{bound_text(node.upper, False, standalone=True)}")
        node = node.body
    return conditions, loops


def function_text(text) -> str:
    """The function's text, checked to be a str (the parser says what is wrong with it)."""
    if not isinstance(text, str):
        raise ValueError(f"the function must be text like 'f[i] = x[i] ** 2', got {shown(text)}")
    return text


class PresetChoice:
    """``set_preset(name)`` for a widget with ``set_function(text, shapes)`` and an ``errors`` box."""

    @shows_errors
    def set_preset(self, name: str) -> bool:
        return self.set_function(*PRESETS[choose(name, PRESETS, "no preset")])


class DerivationExplorer(WidgetBase, PresetChoice, W.VBox):
    """Algorithm 4 on a function, one argument at a time: matrices, bounds, derivative and check.

    Python API: ``set_function(text, shapes) -> bool`` (shapes a dict or typed
    like ``f=3x4, d=8``; text of several lines is a program), ``set_preset(name)``,
    ``presets`` (name -> (text, shapes)), ``argument`` (read/write; of a program,
    an input or an intermediate), ``arguments`` (those the menu offers),
    ``function`` (a Function or Program), ``gradients`` (the
    :class:`~tensoradbook.ad.derive.Gradients` or
    :class:`~tensoradbook.ProgramGradients`), ``check`` (argument or input ->
    relative error of the dot-product test) and ``error`` ("" if none).
    """

    errors_box = CodeMessageBox

    def __init__(self, text: str | None = None, shapes=None, preset: str | None = None):
        super().__init__()
        self._key = self._fn = self._grads = None
        self.function_entry, self.shapes_entry, apply = function_entries(
            lambda: self._showing or self._apply(), self._apply, "Derive this function")
        self.preset_menu = self.preset_dropdown(PRESETS)
        self._argument = W.Dropdown(description="argument:")
        self._argument.observe(lambda _: self._showing or self._show(), names="value")
        self.check_line = W.HTML()
        self.sweep = W.HTMLMath()  # a program's definitions and its sweep; empty for a function
        self.derivative = W.HTMLMath()
        self.occurrences = W.HTMLMath()
        self.children = [W.HBox([self.preset_menu, self._argument]), self.function_entry,
                         W.HBox([self.shapes_entry, apply]), self.errors, self.sweep, self.derivative,
                         self.check_line, self.occurrences]
        if text is None:
            text, shapes = PRESETS[preset or SECTION_6]
        if not self.set_function(text, shapes if shapes is not None else {}):
            raise ValueError(self.error)

    # -- Python API ---------------------------------------------------------
    @property
    def presets(self) -> dict:
        return dict(PRESETS)

    @property
    def function(self) -> tab.Function | tab.Program:
        return self._fn

    @property
    def gradients(self) -> tab.Gradients | tab.ProgramGradients:
        return self._grads

    @property
    def arguments(self) -> tuple[str, ...]:
        """What the argument menu offers: a function's arguments; a program's inputs, then the intermediates
        the sweep gives an adjoint."""
        return tuple(self._argument.options)

    @property
    def check(self) -> dict[str, float]:
        return _check(*self._key)

    @property
    def argument(self) -> str:
        return self._argument.value

    @argument.setter
    @shows_errors
    def argument(self, name: str) -> None:
        if not isinstance(name, str) or name not in self.arguments:
            raise ValueError(f"{shown(name)} is not an argument of {self._fn.name}; "
                             f"choose one of {', '.join(self.arguments)}")
        self._argument.value = name

    @shows_errors
    def set_function(self, text: str, shapes) -> bool:
        """Derive ``text`` with ``shapes`` (a dict or its typed form) and show it.

        On bad input the message (with its caret line) is shown inline, the
        last good function stays and the call returns False.
        """
        shapes = read_shapes(shapes)
        key = (function_text(text), tuple(shapes.items()))
        fn, grads = _derivation(*key)
        _check(*key)  # run (and keep) the check now, so that a function it cannot evaluate is refused here
        sweep = Sweep.of(fn, grads) if isinstance(fn, tab.Program) else None
        self._fn, self._grads, self._key = fn, grads, key
        preset = next((name for name, (t, s) in PRESETS.items() if t == text and s == shapes), None)
        options = fn.arguments + (tuple(grads.adjoints) if sweep else ())
        with self.showing():
            self.function_entry.value = text
            self.shapes_entry.value = shapes_text(shapes)
            self.preset_menu.value = preset
            previous = self._argument.value
            self._argument.options = options
            self._argument.value = previous if previous in options else options[0]
        self.sweep.value = self._sweep_html(sweep) if sweep else ""
        self._show()
        return True

    # -- display --------------------------------------------------------------
    def _apply(self) -> None:
        self.set_function(self.function_entry.value, self.shapes_entry.value)

    def _show(self) -> None:
        name = self.argument
        if isinstance(self._grads, tab.ProgramGradients):
            self._show_tensor(name)
            return
        self.derivative.value = self._grads[name]._repr_latex_()
        self._show_check(name)
        self.occurrences.value = self._occurrences_html(self._grads.contributions[name])

    def _show_check(self, name: str) -> None:
        error = self.check[name]
        good = error <= TOLERANCE
        self.check_line.value = (f'<span style="color:{"#1a7f37" if good else "#b00020"};font-weight:600">'
                                  f"d{name}: dot-product test: relative error {error:.1e} {'✓' if good else '✗'}"
                                  "</span>")

    def _show_tensor(self, name: str) -> None:
        """A program's input or intermediate: its adjoint, the sum over the definitions that read it, and
        each one's contribution with the occurrences Algorithm 4 built it from."""
        grads = self._grads
        intermediate = name in grads.adjoints
        adjoint = grads.adjoints[name] if intermediate else grads[name]
        self.derivative.value = formula_html(adjoint)
        if intermediate:  # finite differences perturb inputs: its adjoint is checked through theirs
            self.check_line.value = (f"<span>{adjoint.name}: the adjoint of an intermediate; the dot-product test "
                                      "checks the inputs' gradients, which read it</span>")
        else:
            self._show_check(name)
        self.occurrences.value = "".join(
            f"<h3>The contribution of {step.definition.name} (adjoint {step.adjoint}) to {adjoint.name}</h3>"
            + formula_html(step.gradients[name]) + self._occurrences_html(step.gradients.contributions[name])
            for step in grads.steps if name in step.gradients)

    def _occurrences_html(self, contributions) -> str:
        return "".join(self._occurrence_html(k, c) for k, c in enumerate(contributions))

    @staticmethod
    def _sweep_html(sweep: Sweep) -> str:
        """The program's definitions and its reverse sweep, definition by definition."""
        steps = "".join(f"<h4>{k}. {step.definition.name}</h4>{sweep.step_html(step)}"
                        for k, step in enumerate(sweep.gradients.steps, 1))
        return (f"<h3>The program</h3>{formula_html(sweep.program)}<h3>Reverse accumulation over its definitions "
                "(sec. 2, eqs. 1-3), the last first</h3>" + steps)

    @staticmethod
    def _occurrence_html(k: int, c) -> str:
        snf = tab.smith_normal_form(c.index_matrix)
        alpha = ", ".join(c.alpha)
        conditions, loops = conditions_and_loops(c)

        def lines(items, empty):
            return "<br>".join(f"<code>{html.escape(item)}</code>" for item in items) or empty

        return (
            f"<h4>Occurrence {k + 1}: <code>{html.escape(expr_text(c.element))}</code> = {c.element.name}[A α + a], "
            f"α = ({html.escape(alpha)})</h4>"
            rf"<p>$$A = {matrix_latex(c.index_matrix)},\quad a = {matrix_latex(_column(c.offset))}$$</p>"
            rf"<p>Smith normal form (eq. 12): $$S = U A V = {matrix_latex(snf.S)},\quad U = {matrix_latex(snf.U)},"
            rf"\quad V = {matrix_latex(snf.V)}$$</p>"
            rf"<p>Integer inverse, kernel and cokernel (eqs. 16-19): $$I = {matrix_latex(c.pseudo_inverse)},\quad "
            rf"K = {matrix_latex(c.kernel)},\quad C = {matrix_latex(c.cokernel)}$$</p>"
            f"<p><b>Conditions:</b><br>{lines(conditions, 'none: every β has solutions')}</p>"
            f"<p><b>Loop bounds</b> (Fourier-Motzkin, eq. 45), outermost first:<br>"
            f"{lines(loops, 'none: the kernel is trivial, one α per β')}</p>")

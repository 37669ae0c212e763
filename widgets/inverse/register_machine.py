"""RegisterMachine: the program of Fig. 2 swept in each of the four modes one step at a time
(eqs. 2.3-2.4), the registers, the tape and each step's rule with its numbers.
"""

from __future__ import annotations

import html
import ipywidgets as W
import numpy as np
from tensoradbook import inverse as ia
from tensoradbook.inverse import examples
from ..base import NamedPreset, WidgetBase
from .._common import SliderSteps, choose, shows_errors

from .shared import _CELL, _TABLE, number, numbers, parse_vector


#: The program of Fig. 2 with the two choices of p and q worked out in the notes, and their points.
FIG2_PRESETS = {
    "p = x₁x₂, q = z₁x₃": (examples.fig2_products, (2.0, 3.0, 5.0)),
    "p = exp x₁ + x₂², q = sin z₁ + x₃³": (examples.fig2_transcendental, (0.0, 1.0, 1.0)),
}

#: Per mode: its label, the seed's and the result's symbols, and the product it computes.
MODE_NAMES = {
    "jvp": ("forward", "ẋ", "ẏ", "J ẋ"),
    "vjp": ("reverse", "ȳ", "x̄", "Jᵀ ȳ"),
    "forward_inverse": ("forward inverse", "x̄*", "ȳ*", "J⁻ᵀ x̄*"),
    "reverse_inverse": ("reverse inverse", "ẏ*", "ẋ*", "J⁻¹ ẏ*"),
}
_REVERSE_MODES = ("vjp", "reverse_inverse")


def _registers(slots) -> str:
    return ", ".join(f"x[{s}]" for s in slots)


def _factor(value: float) -> str:
    """A number as a factor of a product: negative ones in parentheses."""
    return f"({number(value)})" if value < 0 else number(value)


def _operation(mode: str, written, read, A, B, before: np.ndarray, after: np.ndarray) -> str:
    """What one scalar step of one sweep does to the derivative registers ``v``: the rule, then the numbers."""
    r, a, b = written[0], float(A[0, 0]), [float(v) for v in B[0]]
    if mode == "jvp":
        rule = f"v[{r}] ← a·v[{r}]" + "".join(f" + b·v[{s}]" for s in read)
        values = f"{_factor(a)}·{_factor(before[r])}" + "".join(f" + {_factor(bi)}·{_factor(before[s])}"
                                                                for bi, s in zip(b, read))
        return f"{rule} = {values} = {number(after[r])}"
    if mode == "vjp":
        parts = [f"v[{s}] += b·v[{r}]: {number(before[s])} + {_factor(bi)}·{_factor(before[r])} = {number(after[s])}"
                 for bi, s in zip(b, read)]
        parts.append(f"v[{r}] ← a·v[{r}] = {_factor(a)}·{_factor(before[r])} = {number(after[r])}")
        return ";  ".join(parts)
    if mode == "forward_inverse":
        u = after[r]
        parts = [f"u = v[{r}] / a = {number(before[r])} / {_factor(a)} = {number(u)}", f"v[{r}] ← u"]
        parts += [f"v[{s}] −= b·u: {number(before[s])} − {_factor(bi)}·{_factor(u)} = {number(after[s])}"
                  for bi, s in zip(b, read)]
        return ";  ".join(parts)
    rule = f"v[{r}] ← (v[{r}]" + "".join(f" − b·v[{s}]" for s in read) + ") / a"
    values = f"({number(before[r])}" + "".join(f" − {_factor(bi)}·{_factor(before[s])}" for bi, s in zip(b, read))
    return f"{rule} = {values}) / {_factor(a)} = {number(after[r])}"


class RegisterMachine(WidgetBase, NamedPreset, SliderSteps, W.VBox):
    """A register program swept in one of the four modes, one step at a time (Fig. 2, eqs. 2.3-2.4).

    Forward sweeps (``"jvp"``, ``"forward_inverse"``) run with the primal, step
    by step, and keep no tape. Reverse sweeps (``"vjp"``, ``"reverse_inverse"``)
    first run the primal, pushing each step's partials ``a``, ``b`` on the
    tape, then pop them in reverse order. The program is Fig. 2's ``r1 <- p(r1,
    r2); r3 <- q(r1, r3)`` on three registers, for two choices of ``p`` and
    ``q``: scalar steps (constant width), so every tape entry is an ``a`` and a ``b``.

    Python API: ``mode`` (read/write, one of :data:`MODE_NAMES`), ``preset``
    (read/write, a key of :data:`FIG2_PRESETS`), ``x`` and ``seed`` (arrays;
    ``set_point(x)``, ``set_seed(seed)`` take text like ``"2, 3, 5"`` or
    numbers and return False, showing why, on bad input), ``step`` (clamped),
    ``n_steps``, ``forward()``, ``back()``, ``sweep`` (the core's
    :class:`~tensoradbook.inverse.Sweep`), ``state`` (what the current step
    shows: ``phase``, ``lump``, ``primal``, ``derivative``, ``tape`` entries
    held), ``result``, ``check`` (the result against numpy on the Jacobian
    of ``n`` forward sweeps) and ``error``.
    """

    def __init__(self, preset: str = next(iter(FIG2_PRESETS)), mode: str = "reverse_inverse", seed=(1.0, 1.0, 1.0),
                 x=None):
        super().__init__()
        self._program = self._sweep = self._x = self._seed = None
        self._preset = self._mode = None
        self._timeline: list[tuple[str, int | None]] = []
        self.preset_menu = W.Dropdown(options=list(FIG2_PRESETS), description="p, q:",
                                       style={"description_width": "3em"}, layout=W.Layout(width="24em"))
        self._mode_buttons = W.ToggleButtons(options=[(MODE_NAMES[m][0], m) for m in MODE_NAMES],
                                             style={"button_width": "9.5em"})
        self.entries = {}
        for name, label in (("x", "x ="), ("seed", "seed =")):
            entry = W.Text(description=label, continuous_update=False, layout=W.Layout(width="17em"),
                           style={"description_width": "4.5em"})
            entry.observe(lambda change, name=name: self._showing or self._typed(name, change["new"]),
                          names="value")
            self.entries[name] = entry
        self.make_step_controls({"First": "start", "Back": "previous step", "Forward": "next step",
                                 "Last": "the result"})
        self._listing = W.HTML()
        self.heading = W.HTML()
        self.tables = W.HTML()
        self.summary = W.HTML()
        self.children = [W.HBox([self.preset_menu, self.entries["x"], self.entries["seed"]]),
                         self._mode_buttons, self.errors, self._listing,
                         W.HBox([*self.buttons.values(), self.slider]), self.heading, self.tables,
                         self.summary]
        self.on_user_change(self.preset_menu, self.set_preset)
        self.on_user_change(self._mode_buttons, self._set_mode)
        if not (self._set_mode(mode) and self.set_preset(preset, x) and self.set_seed(seed)):
            raise ValueError(self.error)

    # -- Python API ---------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        self._set_mode(value)

    @property
    def program(self):
        return self._program

    @property
    def x(self) -> np.ndarray:
        return self._x.copy()

    @property
    def seed(self) -> np.ndarray:
        return self._seed.copy()

    @property
    def sweep(self):
        return self._sweep

    @property
    def result(self) -> np.ndarray:
        return self._sweep.result

    @property
    def n_steps(self) -> int:
        return len(self._timeline)

    @property
    def state(self) -> dict:
        """What step ``step`` shows: the phase (``"start"``, ``"primal"`` pushing the tape, ``"seed"``,
        ``"sweep"``), the lump it ran (None for start and seed), the registers, the derivative registers
        (None while a reverse sweep's primal runs) and how many tape entries are held."""
        phase, lump = self._timeline[self.step]
        done = [p for p, _ in self._timeline[1:self.step + 1]]
        values, states = self._sweep.tape.values, self._sweep.states
        if self._mode not in _REVERSE_MODES:  # the primal and the derivative step in tandem
            return dict(phase=phase, lump=lump, primal=values[len(done)], derivative=states[len(done)], tape=0)
        pushed, popped = done.count("primal"), done.count("sweep")
        return dict(phase=phase, lump=lump, primal=values[pushed],
                    derivative=states[popped] if "seed" in done else None, tape=pushed - popped)

    @property
    def check(self) -> tuple[np.ndarray, bool]:
        """The product computed with numpy from the Jacobian of ``n`` forward sweeps, and whether the sweep
        agrees with it (relative 1e-9)."""
        J = ia.jacobian(self._program, self._x)
        mode, seed = self._mode, self._seed
        expected = {"jvp": lambda: J @ seed, "vjp": lambda: J.T @ seed,
                    "forward_inverse": lambda: np.linalg.solve(J.T, seed),
                    "reverse_inverse": lambda: np.linalg.solve(J, seed)}[mode]()
        scale = 1 + float(np.abs(expected).max())
        return expected, bool(np.abs(self.result - expected).max() <= 1e-9 * scale)

    @shows_errors
    def set_preset(self, name: str, x=None) -> bool:
        """Trace the Fig. 2 program with this choice of p and q, at its point (or ``x``)."""
        function, point = FIG2_PRESETS[choose(name, FIG2_PRESETS, "unknown program")]
        program = ia.trace(function, n=len(point))
        seed = self._seed if self._seed is not None and len(self._seed) == program.n else np.ones(program.n)
        self._recompute(parse_vector(point if x is None else x, program.n, "x"), seed, program=program)
        self._preset = name
        self._fill(self.preset_menu, name)
        return True

    @shows_errors
    def set_point(self, x) -> bool:
        """Run the sweep at the point ``x`` (text like ``"2, 3, 5"`` or numbers)."""
        return self._recompute(parse_vector(x, self._program.n, "x"), self._seed)

    @shows_errors
    def set_seed(self, seed) -> bool:
        """Run the sweep from this seed (``ẋ``, ``ȳ``, ``x̄*`` or ``ẏ*`` for the mode)."""
        return self._recompute(self._x, parse_vector(seed, self._program.n, "seed"))

    # -- callbacks ------------------------------------------------------------------------------
    def _fill(self, widget, value) -> None:
        with self.showing():
            widget.value = value

    def _typed(self, name: str, text: str) -> None:
        (self.set_point if name == "x" else self.set_seed)(text)

    @shows_errors
    def _set_mode(self, mode: str) -> bool:
        try:
            choose(mode, MODE_NAMES, "unknown mode")
            if self._program is None:  # the constructor: the preset comes next
                self._mode = mode
            else:
                self._recompute(self._x, self._seed, mode=mode)
        finally:
            if self._mode is not None:  # the buttons show the mode in use, also after a refused one
                self._fill(self._mode_buttons, self._mode)
        return True

    def _recompute(self, x: np.ndarray, seed: np.ndarray, program=None, mode=None) -> bool:
        """Sweep ``program`` in ``mode`` (default: the current ones) from ``x`` and ``seed`` and show it.

        Raises ValueError, changing nothing, at a singular step (the core names it) or where the values
        overflow.
        """
        program = self._program if program is None else program
        mode = self._mode if mode is None else mode
        sweep = ia.sweep(program, x, seed, mode)
        tape = sweep.tape
        if not all(np.all(np.isfinite(values)) for values in (sweep.states, tape.values, *tape.A, *tape.B)):
            raise ValueError(f"at x = {numbers(x)} with seed {numbers(seed)} the values overflow (inf or nan): "
                             "choose a smaller point or seed")
        self._program, self._mode, self._x, self._seed, self._sweep = program, mode, x, seed, sweep
        self._fill(self.entries["x"], ", ".join(number(v) for v in x))
        self._fill(self.entries["seed"], ", ".join(number(v) for v in seed))
        T = len(self._program)
        if self._mode in _REVERSE_MODES:
            self._timeline = ([("start", None)] + [("primal", j) for j in range(T)] + [("seed", None)]
                              + [("sweep", j) for j in sweep.lumps])
        else:
            self._timeline = [("start", None)] + [("sweep", j) for j in sweep.lumps]
        with self.slider.hold_trait_notifications():
            self.slider.max = self.n_steps - 1
            self.slider.value = 0
        self._show()
        return True

    # -- drawing --------------------------------------------------------------------------------
    def _show(self) -> None:
        state = self.state
        self.enable_step_buttons()
        lump = None if state["lump"] is None else self._program.lump(state["lump"])
        self._listing.value = self._program_html(lump)
        self.heading.value = self._heading_html(state, lump)
        self.tables.value = self._registers_html(state, lump) + self._tape_html(state)
        self.summary.value = self._summary_html() if self.step == self.n_steps - 1 else ""

    def _program_html(self, lump) -> str:
        current = set(lump.steps) if lump is not None else set()
        lines = "".join(
            f"<div style='{'background:#ffe8c2;' if step.index in current else ''}font-family:monospace'>"
            f"{html.escape(str(step))}</div>" for step in self._program.steps)
        return f"<div style='margin:4px 0'><b>Program</b> ({self._program.n} registers):{lines}</div>"

    def _heading_html(self, state, lump) -> str:
        name, seed_symbol, result_symbol, product = MODE_NAMES[self._mode]
        phase, k, last = state["phase"], self.step, self.n_steps - 1
        head = f"<b>{name} sweep, {product}: step {k} of {last}</b> &mdash; "
        if phase == "start":
            if self._mode in _REVERSE_MODES:
                return head + ("the registers hold x. First the primal runs forward and pushes each step's "
                               "partials a, b on the tape; the seed enters at the end.")
            return head + (f"the registers hold x, the derivative registers the seed {seed_symbol}. Each step "
                           f"updates both at once: no tape.")
        if phase == "seed":
            return head + (f"the primal is done (the registers hold y = f(x)); the derivative registers get the "
                           f"seed {seed_symbol}, and the sweep pops the tape from the last step back.")
        j = state["lump"]
        if phase == "primal":
            return head + (f"{html.escape(lump.describe())} runs; its partials go on the tape "
                           f"({_registers(lump.written)} is overwritten, so they cannot be recomputed later).")
        position = self._sweep.lumps.index(j)
        before, after = self._sweep.states[position], self._sweep.states[position + 1]
        A, B = self._sweep.tape.A[j], self._sweep.tape.B[j]
        return (head + f"{html.escape(lump.describe())}: <code>"
                + html.escape(_operation(self._mode, lump.written, lump.read, A, B, before, after))
                + "</code>")

    def _registers_html(self, state, lump) -> str:
        written = set() if lump is None else set(lump.written)
        read = set() if lump is None else set(lump.read)
        symbol = MODE_NAMES[self._mode][1] + " → " + MODE_NAMES[self._mode][2]
        rows = []
        for r in range(self._program.n):
            colour = "#ffe8c2" if r in written else "#e4eef9" if r in read else "white"
            derivative = "—" if state["derivative"] is None else number(state["derivative"][r])
            rows.append(f"<tr style='background:{colour}'><td {_CELL}>x[{r}]</td>"
                        f"<td {_CELL}>{number(state['primal'][r])}</td><td {_CELL}>{derivative}</td></tr>")
        return (f"<table {_TABLE}><tr><th {_CELL}>register</th><th {_CELL}>primal value</th>"
                f"<th {_CELL}>derivative v ({symbol})</th></tr>{''.join(rows)}</table>"
                "<div style='font-size:0.92em;color:#555'>orange: written by this step; blue: read by it</div>")

    def _tape_html(self, state) -> str:
        if self._mode not in _REVERSE_MODES:
            return ("<p><b>Tape:</b> none. A forward sweep uses each step's partials as soon as the primal "
                    "computes them.</p>")
        tape, held = self._sweep.tape, state["tape"]
        if not held:
            return "<p><b>Tape:</b> empty.</p>"
        entries = []
        for j in range(held):
            A, B, lump = tape.A[j], tape.B[j], self._program.lump(j)
            partials = f"a = {number(A[0, 0])}" + "".join(f", b = {number(b)} (for x[{s}])"
                                                           for b, s in zip(B[0], lump.read))
            entries.append(f"<li><code>{html.escape(lump.describe())}: {html.escape(partials)}</code></li>")
        top = " (top of the stack last)" if held > 1 else ""
        return (f"<p><b>Tape</b>{top}: {held} entr{'y' if held == 1 else 'ies'}, "
                f"{sum(tape.A[j].nbytes + tape.B[j].nbytes for j in range(held))} bytes</p><ul>{''.join(entries)}</ul>")

    def _summary_html(self) -> str:
        _, seed_symbol, result_symbol, product = MODE_NAMES[self._mode]
        expected, agrees = self.check
        verdict = "agrees" if agrees else "DISAGREES (a bug)"
        solve = {"jvp": "J @ seed", "vjp": "J.T @ seed", "forward_inverse": "numpy.linalg.solve(J.T, seed)",
                 "reverse_inverse": "numpy.linalg.solve(J, seed)"}[self._mode]
        return (f"<p><b>Result:</b> {result_symbol} = {product} = {numbers(self.result)}, "
                f"with {seed_symbol} = {numbers(self._seed)}. It {verdict} with {solve} = {numbers(expected)}, "
                f"J built from {self._program.n} forward sweeps. Tape kept: {self._sweep.tape_bytes} bytes.</p>")

"""The controls the chain widgets share: a preset, the chain as text, a tape bound and a rule.
"""

from __future__ import annotations

import ipywidgets as W
from tensoradbook import chaining as jc
from ..base import WidgetBase
from .._common import (choose, shows_errors)

from .shared import CHAIN_PRESETS, RULE_NAMES, UNLIMITED, read_chain, read_memory


# -- shared controls of the chain widgets ---------------------------------------------------------------

class _ChainWidget(WidgetBase, W.VBox):
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
        self.preset_menu = self.preset_dropdown(CHAIN_PRESETS, "22em")
        self.entry = W.Textarea(description="chain:", rows=4, continuous_update=False,
                                 placeholder="q, then one line 'm n |E|' per factor, F₁ first",
                                 layout=W.Layout(width="22em"))
        self.on_user_change(self.entry, self.set_chain)
        apply = W.Button(description="Apply", tooltip="Use the chain typed in the box")
        apply.on_click(lambda _: self.set_chain(self.entry.value))
        self.memory_entry = W.Text(description="M̄ =", placeholder=UNLIMITED, continuous_update=False,
                                    tooltip="tape bound Mbar; empty for unlimited", layout=W.Layout(width="14em"))
        self.on_user_change(self.memory_entry, self.set_memory)
        self._rule = W.Dropdown(options=[(label, rule) for rule, label in RULE_NAMES.items()], value="exact",
                                description="rule:", layout=W.Layout(width="24em"))
        self.on_user_change(self._rule, self.set_rule)
        settings = [self.preset_menu] + ([self.memory_entry, self._rule] if self.SHOW_MEMORY_ENTRY else [])
        self._controls = W.VBox([W.HBox(settings), W.HBox([self.entry, apply])])

    # -- Python API ---------------------------------------------------------
    @property
    def presets(self) -> dict:
        return dict(CHAIN_PRESETS)

    @property
    def preset(self) -> str | None:
        """The preset shown, None for a chain (or bound) of one's own."""
        return self.preset_menu.value

    @property
    def chain(self) -> jc.Chain:
        return self._state["chain"]

    @property
    def memory(self) -> int | None:
        return self._state["memory"]

    @property
    def rule(self) -> str:
        return self._state["rule"]

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
        with self.showing():
            self.entry.value = state["chain"].to_text()
            self.memory_entry.value = "" if state["memory"] is None else str(state["memory"])
            self._rule.value = state["rule"]
            self.preset_menu.value = preset
            self._accept(computed)
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

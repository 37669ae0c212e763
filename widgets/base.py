"""What every widget of the book shares, in one place: the re-entry guard of its controls, its preset menu and
the static picture displayed beside its live view (:mod:`widgets.picture`).

A widget shows a state set from Python (a preset, ``set_function``, a step) by writing its controls'
values, and each control's observer would then call back into the widget as if the user had typed it.
Every widget guards against that the same way::

    class MyWidget(WidgetBase, W.VBox):
        def __init__(self):
            ...
            self.on_user_change(self.entry, self.set_function)

        def set_function(self, text):
            ...
            with self.showing():            # the entry's observer stays quiet
                self.entry.value = text

A widget's controls (``entry``, ``sliders``, ``buttons``, the ``errors`` box, the ``image`` it draws...)
are public attributes: what a user sees and drives, and what tests drive and read in the same way.
The ``shows_errors`` guard of public setters, step buttons (``SliderSteps``) and plots live in
``widgets._common``.
"""

from __future__ import annotations

import html
import warnings
from contextlib import contextmanager

import ipywidgets as W

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class MessageBox(W.HTML):
    """An inline message: red for errors, hidden while empty; ``.text`` holds the plain text."""

    def __init__(self, color: str = "#b00020"):
        super().__init__()
        self._color = color
        self.text = ""

    def show(self, text: str) -> None:
        self.text = text
        self.value = (f'<div style="color:{self._color};font-weight:600">{html.escape(text)}</div>'
                      if text else "")


class CodeMessageBox(MessageBox):
    """A :class:`MessageBox` in monospace that keeps line breaks and spaces, so a parser's caret
    line still points at the right character."""

    def show(self, text: str) -> None:
        self.text = text
        self.value = (f'<pre style="color:{self._color};font-weight:600;margin:0;white-space:pre">'
                      f'{html.escape(text)}</pre>' if text else "")


class WidgetBase:
    """The re-entry guard: :meth:`showing` while controls display a state set from Python, and
    :meth:`on_user_change` for observers that must only hear the user; :meth:`preset_dropdown` for
    widgets with presets; the static picture in the widget's mime bundle; the ``errors`` box (of the kind
    ``errors_box``) and :attr:`error`, its text."""

    _showing = False  # True while the widget writes its own controls
    errors_box: type[MessageBox] = MessageBox  # a CodeMessageBox where a parser's caret must line up

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.errors = self.errors_box()

    @property
    def error(self) -> str:
        """The current error message, "" if none."""
        return self.errors.text

    def _repr_mimebundle_(self, **kwargs):
        """The live view and, beside it, a PNG of what the widget shows now, for the pages that have no kernel
        (GitHub, the static site): the front-ends that run widgets rank the view above the image."""
        data = super()._repr_mimebundle_(**kwargs)
        if data and WIDGET_VIEW in data:
            from .picture import picture_base64  # Pillow and mathtext load at the first display, not at import

            try:
                data["image/png"] = picture_base64(self)
            except Exception as exc:  # noqa: BLE001 -- a picture that fails must not cost the live widget
                warnings.warn(f"{type(self).__name__}: no static picture ({type(exc).__name__}: {exc})",
                              stacklevel=2)
        return data

    @contextmanager
    def showing(self):
        """Write controls without their observers calling back (nests: the outer block restores)."""
        previous, self._showing = self._showing, True
        try:
            yield
        finally:
            self._showing = previous

    def on_user_change(self, control, handler, names: str = "value") -> None:
        """Call ``handler(new value)`` when the user changes ``control``, not when the widget shows a state."""
        control.observe(lambda change: self._showing or handler(change["new"]), names=names)

    def preset_dropdown(self, presets, width: str | None = None) -> W.Dropdown:
        """The preset menu of a widget with ``set_preset(name)``: empty (None) until the user picks one, and
        empty again when the widget shows a state that is no preset."""
        menu = W.Dropdown(options=list(presets), value=None, description="preset:",
                          layout=W.Layout(width=width) if width else W.Layout())
        menu.observe(lambda change: self._showing or change["new"] is None or self.set_preset(change["new"]),
                     names="value")
        return menu


class NamedPreset:
    """``preset``: the name of the preset a widget shows (kept in ``_preset`` by its ``set_preset``), and
    ``widget.preset = name`` as ``set_preset(name)``."""

    @property
    def preset(self) -> str:
        return self._preset

    @preset.setter
    def preset(self, name: str) -> None:
        self.set_preset(name)

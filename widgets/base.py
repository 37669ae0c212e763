"""What every widget of the book shares, in one place: the re-entry guard of its controls.

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

from contextlib import contextmanager


class WidgetBase:
    """The re-entry guard: :meth:`showing` while controls display a state set from Python, and
    :meth:`on_user_change` for observers that must only hear the user."""

    _showing = False  # True while the widget writes its own controls

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

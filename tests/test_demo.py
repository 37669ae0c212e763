"""The lecture demos (classroom.demo): the gallery is generated from its table, every demo's first interaction
changes what it shows, and at the presentation scale every figure fits a 1280-pixel screen with axis labels at
least 20 pixels high."""

from __future__ import annotations

import ipywidgets as W
import nbformat
import pytest
from matplotlib.figure import Figure

import tensoradbook.widgets as widgets
from classroom import demo as demos

SCREEN_WIDTH = 1280
MIN_LABEL_PX = 20


def _shown(widget) -> list:
    """What a user sees of a widget: the values of its texts, pictures and controls, in page order."""
    seen, stack = [], [widget]
    while stack:
        node = stack.pop(0)
        if isinstance(node, (W.HTML, W.HTMLMath, W.Label, W.Image, W.Textarea, W.Text)):
            seen.append(node.value)
        stack[:0] = list(getattr(node, "children", ()))
    return seen


def _figures(widget) -> list[Figure]:
    """The matplotlib figures a widget draws (held by it or by its plot helpers)."""
    found, seen, stack = [], set(), [widget]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, Figure):
            found.append(node)
            continue
        if isinstance(node, (list, tuple)):
            stack.extend(node)
            continue
        if isinstance(node, dict):
            stack.extend(node.values())
            continue
        module = type(node).__module__ or ""
        if node is widget or module.startswith("tensoradbook.widgets"):
            stack.extend(vars(node).values() if hasattr(node, "__dict__") else ())
    return found


def _make(demo):
    # the expressions of classroom.demo.DEMOS, each naming its widget alone (imported at first use)
    return eval(demo.make, {demo.widget: getattr(widgets, demo.widget)})


def test_gallery_is_generated_from_the_table(tmp_path):
    written = demos.build(tmp_path)
    assert {p.name for p in written} == {p.name for p in demos.DEMO_DIR.glob("*.ipynb")}, (
        "demos/ differs from classroom.demo.DEMOS: run `python -m classroom.demo build`")
    for path in written:
        fresh, committed = nbformat.read(path, 4), nbformat.read(demos.DEMO_DIR / path.name, 4)
        assert [c.source for c in fresh.cells] == [c.source for c in committed.cells], (
            f"demos/{path.name} is stale: run `python -m classroom.demo build`")
    gallery = nbformat.read(tmp_path / "index.ipynb", 4).cells[0].source
    for demo in demos.DEMOS:
        assert f"]({demo.stem}.ipynb)" in gallery


def test_every_widget_has_a_demo():
    shown = {d.widget for d in demos.DEMOS}
    classes = {name for name in widgets.__all__ if isinstance(getattr(widgets, name), type)}
    assert shown == classes


@pytest.mark.parametrize("demo", demos.DEMOS, ids=lambda d: d.stem)
def test_first_interaction_changes_what_is_shown(demo):
    widget = _make(demo)
    before = _shown(widget)
    demos.interact(widget, demo.interaction)
    assert _shown(widget) != before, f"{demo.interaction} left {demo.widget} unchanged"


@pytest.fixture
def presentation_scale():
    previous = widgets.set_scale(widgets.PRESENTATION_SCALE)
    yield widgets.PRESENTATION_SCALE
    widgets.set_scale(previous)


@pytest.mark.parametrize("demo", demos.DEMOS, ids=lambda d: d.stem)
def test_presentation_scale_is_readable_in_a_hall(demo, presentation_scale):
    widget = _make(demo)
    demos.interact(widget, demo.interaction)  # some widgets draw (or redraw larger) only after a step
    for figure in _figures(widget):
        width_px = figure.get_figwidth() * figure.dpi
        assert width_px <= SCREEN_WIDTH - 80, f"{demo.widget}: a figure {width_px:.0f} px wide overflows 1280"
        for ax in figure.axes:
            for label in (ax.xaxis.label, ax.yaxis.label):
                if label.get_text():
                    px = label.get_fontsize() * figure.dpi / 72
                    assert px >= MIN_LABEL_PX, (
                        f"{demo.widget}: axis label {label.get_text()!r} is {px:.1f} px high at scale "
                        f"{presentation_scale}")
    for image in (n for n in _controls_of(widget) if isinstance(n, W.Image) and n.layout.width):
        assert int(image.layout.width.removesuffix("px")) <= SCREEN_WIDTH - 80


def _controls_of(widget) -> list:
    found, stack = [], [widget]
    while stack:
        node = stack.pop(0)
        found.append(node)
        stack[:0] = list(getattr(node, "children", ()))
    return found


def test_scale_refuses_nonsense():
    with pytest.raises(ValueError, match="between 0.5 and 4"):
        widgets.set_scale(0)
    assert widgets.get_scale() == 1.0


def test_gradient_lab_demo_runs_without_compiling():
    """The demo's widget is made prepared (GradientLab.prepare, run in its preheated kernel): its first Run only
    runs and checks the kernels."""
    from tensoradbook.widgets import gradient_lab

    (demo,) = [d for d in demos.DEMOS if d.widget == "GradientLab"]
    gradient_lab._WARM.clear()  # as in a fresh kernel
    widget = _make(demo)
    demos.interact(widget, demo.interaction)
    assert widget.result.timings["compile"] is None, "the demo's first Run compiled its kernels"

"""Programs of several definitions in the widgets: ProgramGraph draws a program as a graph of tensors
and steps through reverse accumulation across its definitions (report sec. 2, eqs. 1-3, at the tensor level);
DerivationExplorer and GradientLab take programs as they take functions. Driven through the public setters
and controls, and checked against what the core gives (``tab.parse``, ``tab.derive``)."""

import html
import re
from pathlib import Path

import numpy as np
import pytest

import tensoradbook as tab
from tensoradbook.ad.gradcheck import random_arguments
from tensoradbook.widgets import (PRESENTATION_SCALE, DerivationExplorer, GradientLab, GraphView, ProgramGraph,
                                  set_scale)
from tensoradbook.widgets._common import parse_shapes
from tensoradbook.widgets.explorer import TOLERANCE
from tensoradbook.widgets.program_graph import DEFAULT, DEFAULT_SHAPES, MAX_TENSORS

PNG = b"\x89PNG\r\n\x1a\n"
SCREENSHOTS = Path(__file__).resolve().parent.parent / "screenshots"
SOFTMAX, SOFTMAX_SHAPES = DEFAULT, DEFAULT_SHAPES  # m = max x, e = exp (x - m), s = e / sum e: x read twice
# a is read by b and by c: its adjoint is the sum of two contributions
SHARED = "a[i] = x[i] * y[i]\nb[i] = exp (a[i])\nc[] = sum{k}_0^2 (a[k] * b[k])"
SHARED_SHAPES = {"x": (3,), "y": (3,), "a": (3,), "b": (3,), "c": ()}
NETWORK = ("h[i] = tanh (sum{k}_0^2 (w[i; k] * x[k]))\n"
           "o[j] = sum{i}_0^3 (v[j; i] * h[i])\n"
           "l[] = sum{j}_0^1 ((o[j] - t[j]) ** 2) + sum{i}_0^3 (h[i] ** 2)")
NETWORK_SHAPES = "w=4x3, x=3, h=4, v=2x4, o=2, t=2, l=()"


def plain(value: str) -> str:
    """What an HTML widget shows, as text."""
    return html.unescape(re.sub(r"<[^>]+>", " ", value))


@pytest.fixture(scope="module")
def view():
    return ProgramGraph()


def state(view) -> tuple:
    return str(view.program), view.step, bytes(view.image.value), view.text.value


# -- ProgramGraph -------------------------------------------------------------------------------

def test_the_graph_has_a_node_per_tensor_and_an_edge_per_read(view):
    assert view.set_program(SOFTMAX, SOFTMAX_SHAPES) and view.error == ""
    graph = view.graph
    assert graph.tensors == ("x", "m", "e", "s")
    assert [graph.kind(name) for name in graph.tensors] == ["input", "intermediate", "intermediate", "output"]
    assert set(graph.edges) == {("x", "m"), ("x", "e"), ("m", "e"), ("e", "s")}
    assert view.step == 0 and view.current is None and view.received == {}
    assert view.formulas == [str(d) for d in tab.parse(SOFTMAX, SOFTMAX_SHAPES).definitions]
    assert bytes(view.image.value).startswith(PNG) and view.title == "the program: 3 definitions, 1 input"
    # each definition above what it reads; an edge that passes a layer bends around the boxes there
    y = {name: at[1] for name, at in graph.position.items()}
    assert y["x"] < y["m"] < y["e"] < y["s"]
    for name, d in graph.edges:
        for px, py in graph.routes[(name, d)][1:-1]:
            for other in graph.tensors:
                ox, oy = graph.position[other]
                assert not (abs(py - oy) < 0.2 and abs(px - ox) < graph.box_width(other) / 2), (name, d, other)


@pytest.mark.parametrize("text, shapes", [(SOFTMAX, SOFTMAX_SHAPES), (NETWORK, NETWORK_SHAPES)])
def test_boxes_do_not_overlap(view, text, shapes):
    assert view.set_program(text, shapes)
    graph = view.graph
    rows = {}
    for name in graph.tensors:  # a node's box, then its adjoint box to the right
        x, y = graph.position[name]
        right = (graph.adjoint_at(name)[0] + graph.adjoint_width(name) / 2 if name in graph.adjoint_names
                 else x + graph.box_width(name) / 2)
        rows.setdefault(y, []).append((x - graph.box_width(name) / 2, right))
    for spans in rows.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans
    assert all(0 < x < graph.size[0] and 0 < y < graph.size[1] for x, y in graph.position.values())


def test_stepping_walks_the_definitions_backwards(view):
    assert view.set_program(SOFTMAX, SOFTMAX_SHAPES)
    grads = tab.derive(tab.parse(SOFTMAX, SOFTMAX_SHAPES))
    assert view.n_steps == len(grads.steps) + 2 == 5
    shown = set()
    view.buttons["First"].click()
    for k, name in enumerate(["s", "e", "m"], 1):
        view.buttons["Forward"].click()
        assert view.step == k and view.current.definition.name == name and view.error == ""
        assert view.title.startswith(f"step {k} of 4:") and name in view.title
        step = grads.steps[k - 1]
        # the definition's contributions by Algorithm 4, after its adjoint when it is an intermediate
        expected = ([str(grads.adjoints[name])] if name in grads.adjoints else []) + [str(f) for f in
                                                                                       step.gradients.values()]
        assert view.formulas == expected
        assert f"<code>{html.escape(str(step.definition))}</code>" in view.text.value
        for target in step.gradients:
            assert step.gradients[target]._repr_latex_() in view.text.value
            assert name in view.received[target]
        shown.add((bytes(view.image.value), view.text.value))
    assert len(shown) == 3
    assert view.received == {"e": ("s",), "m": ("e",), "x": ("e", "m")}  # x: once from each consumer
    view.buttons["Back"].click()
    assert view.step == 2 and view.received["x"] == ("e",) and "1 of 2 contributions (from e)" in plain(view.text.value)
    view.slider.value = 0
    assert view.buttons["Back"].disabled and view.formulas[0].startswith("m[] = max")


def test_the_last_step_shows_every_input_gradient(view):
    assert view.set_program(NETWORK, NETWORK_SHAPES)
    program = tab.parse(NETWORK, parse_shapes(NETWORK_SHAPES))
    grads = tab.derive(program)
    view.buttons["Last"].click()
    assert view.step == view.n_steps - 1 and view.current is None
    assert view.title.endswith("the inputs' gradients, summed over consumers")
    assert view.formulas == [str(grads[name]) for name in program.arguments] and len(view.formulas) == 4
    text = plain(view.text.value)
    for name in program.arguments:
        assert grads[name]._repr_latex_() in view.text.value
        assert f"d{name} is the contribution of" in text
    assert view.buttons["Forward"].disabled and not view.buttons["Back"].disabled


def test_an_intermediate_read_by_two_definitions_shows_a_sum(view):
    assert view.set_program(SHARED, SHARED_SHAPES)
    grads = tab.derive(tab.parse(SHARED, SHARED_SHAPES))
    assert view.graph.senders["a"] == ("c", "b")
    view.step = 1  # c sends to a and b: a has one of its two contributions
    assert view.received["a"] == ("c",) and "1 of 2 contributions (from c)" in plain(view.text.value)
    partial = bytes(view.image.value)
    view.step = 3  # a's own step: its adjoint is complete, the sum over c and b
    assert view.current.definition.name == "a" and view.received["a"] == ("c", "b")
    adjoint = grads.adjoints["a"]
    assert view.formulas[0] == str(adjoint)
    parts = [step.gradients["a"] for step in grads.steps if "a" in step.gradients]
    assert len(parts) == 2 and " + " in str(adjoint)
    args = {"x": np.array([0.2, -0.4, 0.7]), "y": np.array([1.1, 0.3, -0.5])}
    values = grads.program.argument_arrays(args)
    values.update(grads.program.values(values))
    values["dc"] = np.array(1.3)
    values["db"] = grads.adjoints["b"].evaluate(values)
    assert np.allclose(adjoint.evaluate(values), sum(part.evaluate(values) for part in parts))
    text = plain(view.text.value)
    assert "da is the sum of the 2 contributions a receives, from c, b (eq. 2)" in text
    assert bytes(view.image.value) != partial


def test_a_function_or_program_object_is_drawn_too(view):
    program = tab.parse(SHARED, SHARED_SHAPES)
    assert view.set_program(program) and view.program == program
    assert view.program_entry.value == SHARED and view.shapes_entry.value == "x=3, y=3, a=3, b=3, c=()"
    fn = tab.parse("f[i] = exp (x[i]) * y[i]", {"f": (3,), "x": (3,), "y": (3,)})
    assert view.set_program(fn) and view.graph.tensors == ("x", "y", "f") and view.n_steps == 3
    view.step = 2
    assert view.formulas == [str(g) for g in tab.derive(fn).values()]
    assert view.set_program("f[] = sin (x[] * y[])") and view.graph.edges == (("x", "f"), ("y", "f"))


def test_bad_programs_are_shown_inline_and_the_widget_keeps_working(view):
    assert view.set_program(SOFTMAX, SOFTMAX_SHAPES)
    view.step = 2
    good = state(view)
    bad = [("m[] = max{k}_0^3 (x[k]\ne[i] = exp (x[i] - m[])", SOFTMAX_SHAPES, "^"),
           ("e[i] = exp (x[i] - m[])\nm[] = max{k}_0^3 (x[k])", SOFTMAX_SHAPES, "defined below, on line 2"),
           ("m[] = x[0]\nm[] = x[1]", {"x": (4,), "m": ()}, "defined twice"),
           (SOFTMAX, {"x": (4,)}, "no shape given"),
           (SOFTMAX, "x=4, m=(), e=4, s=١٢", "shapes"),
           (42, None, "text"),
           ("\n".join(f"t{k}[] = x[] + {k}" for k in range(MAX_TENSORS)), None, f"at most {MAX_TENSORS}")]
    for text, shapes, message in bad:
        assert view.set_program(text, shapes) is False
        assert message in view.error and "Traceback" not in view.error, view.error
        assert state(view) == good  # the last good program stays, at its step
        view.buttons["Forward"].click()  # the controls keep working and clear the message
        assert view.error == "" and view.step == 3
        view.step = 2
    # typed into the boxes: the error shows inline, fixing the text draws the new program
    view.shapes_entry.value = "x=3, y=3, a=3, b=3, c=()"
    assert view.error  # the old program with the new shapes: refused, shown
    view.program_entry.value = SHARED.replace("a[k] * b[k]", "a[k] * b[k")
    assert "line 3" in view.error and "^" in view.error and state(view) == good
    view.program_entry.value = SHARED
    assert view.error == "" and view.graph.tensors == ("x", "y", "a", "b", "c") and view.step == 0
    assert view.program_entry.rows == 3  # the box shows every line


def test_presentation_scale_screenshot():
    previous = set_scale(PRESENTATION_SCALE)
    try:
        view = ProgramGraph(NETWORK, NETWORK_SHAPES)
        view.step = 2  # o's step: h has both its contributions
        png = bytes(view.image.value)
        width = int.from_bytes(png[16:20], "big")
        assert width == round(view.graph.size[0] * 72 * PRESENTATION_SCALE) <= 1200  # fonts at 2x, 20 px
        assert view.image.layout.width == f"{width}px"  # shown pixel for pixel
        SCREENSHOTS.mkdir(exist_ok=True)
        (SCREENSHOTS / "program-graph.png").write_bytes(png)
        # eight inputs in a row: drawn smaller rather than past the edge of a 1280-pixel screen
        assert view.set_program("f[] = " + " + ".join(f"x{k}[]" for k in range(8)))
        assert view.graph.size[0] * 72 * PRESENTATION_SCALE > 1200
        assert int.from_bytes(bytes(view.image.value)[16:20], "big") == 1200 and view.image.layout.width == "1200px"
    finally:
        set_scale(previous)


# -- DerivationExplorer and GradientLab ----------------------------------------------------------

def test_explorer_lists_the_definitions_and_each_ones_gradients():
    explorer = DerivationExplorer(NETWORK, NETWORK_SHAPES)
    fn, grads = explorer.function, explorer.gradients
    assert isinstance(fn, tab.Program) and explorer.error == ""
    assert explorer.arguments == ("w", "x", "v", "t", "o", "h")  # the inputs, then the intermediates
    sweep = explorer.sweep.value
    assert fn._repr_latex_() in sweep
    for step in grads.steps:
        for f in step.gradients.values():
            assert f._repr_latex_() in sweep
    explorer.argument = "w"
    assert grads["w"]._repr_latex_() in explorer.derivative.value
    assert explorer.check["w"] < TOLERANCE and "✓" in explorer.check_line.value
    assert "The contribution of h (adjoint dh) to dw" in plain(explorer.occurrences.value)
    explorer.argument = "h"  # read by o and l: a contribution from each, with its occurrences
    assert grads.adjoints["h"]._repr_latex_() in explorer.derivative.value
    shown = plain(explorer.occurrences.value)
    assert "The contribution of l (adjoint dl) to dh" in shown and "The contribution of o" in shown
    assert "Occurrence 1" in shown and "intermediate" in explorer.check_line.value
    # back to a function: shown as before, no sweep
    assert explorer.set_function("f[i] = x[i + 1] ** 2", {"f": (3,), "x": (4,)})
    assert explorer.sweep.value == "" and explorer.arguments == ("x",)
    assert explorer.derivative.value == explorer.gradients["x"]._repr_latex_()
    assert not explorer.set_function(NETWORK.replace("h[i] ** 2", "g[i] ** 2"), NETWORK_SHAPES)
    assert "g" in explorer.error and explorer.arguments == ("x",)


def test_gradient_lab_runs_a_program_as_derive_evaluates_it():
    lab = GradientLab(SOFTMAX, SOFTMAX_SHAPES, target="numpy")
    assert lab.error == "" and lab.scales == (1,) and "a program of 3 definitions" in lab.sizes.value
    assert not lab.set_scale(2) and "runs at the sizes typed" in lab.error
    assert lab.run(), lab.error
    result, program = lab.result, lab.function
    assert result.ok and isinstance(program, tab.Program)
    rng = np.random.default_rng(lab.seed)  # the lab's inputs: random arguments, then the adjoint
    args = random_arguments(program, rng)
    df = rng.standard_normal(program.shapes[program.name])
    reference = tab.derive(program).evaluate(args, df)
    kernel = tab.derive(program).compile("numpy")(args, df)
    for name in program.arguments:
        assert np.allclose(kernel[name], reference[name], rtol=1e-12, atol=1e-12)
        assert result.errors[name] == pytest.approx(float(np.max(np.abs(kernel[name] - reference[name]))), abs=1e-15)
        assert result.dot_errors[name] < TOLERANCE
    assert lab.results.value.count("✓") == 2 * len(program.arguments) + 1 and "✗" not in lab.results.value
    assert result.element_errors["x"].shape == (4,)
    # typed into the lab's boxes, as a user does
    lab.shapes_entry.value = "x=3, y=3, a=3, b=3, c=()"
    lab.function_entry.value = SHARED
    assert lab.error == "" and lab.function == tab.parse(SHARED, SHARED_SHAPES) and lab.function_entry.rows == 3


# -- the data-dependent operations in every widget that draws or lists an expression ---------------

@pytest.mark.parametrize("text", ["f[i] = if {x[i] > 0} then (max (x[i], y[i])) else (max{k}_0^2 (y[k]))",
                                  "f[i] = abs (x[i]) * min (x[i], y[i])"])
def test_data_dependent_operations_are_drawn_and_derived(text):
    shapes = {"f": (3,), "x": (3,), "y": (3,)}
    graph = GraphView(text, shapes)
    for k in range(graph.n_steps):
        graph.step = k
        assert graph.error == "" and bytes(graph.image.value).startswith(PNG)
    assert {"x[i]", "y[i]"} <= set(graph.adjoints)
    explorer = DerivationExplorer(text, shapes)
    for name in explorer.arguments:
        explorer.argument = name
        assert explorer.error == "" and explorer.gradients[name]._repr_latex_() == explorer.derivative.value
    view = ProgramGraph(text + "\ng[] = sum{i}_0^2 (f[i] ** 2)", {**shapes, "g": ()})
    view.buttons["Last"].click()
    grads = tab.derive(view.program)
    assert view.error == "" and view.formulas == [str(grads["x"]), str(grads["y"])]

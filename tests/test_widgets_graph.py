"""GraphView names the report's figures only for the functions they draw (report sec. 2, Figs. 1 and 2).

Fig. 1 is the abstract composition f(x) = f1[f2(f3(f4(x), f5(x)))], Fig. 2 the function
sin[sin(x1 (x2 + x3) + sinh(x2 + x3))]; both show a computational graph (blue) and the derivative graph of
the reverse sweep (red). Driven through the public API: set_function, step, title, graph, adjoints.
Bad values of every setter and control are shown in the widget, which keeps its last good state.
"""

import math

import numpy as np
import pytest

import tensoradbook as tab
from tensoradbook.lang.limits import MAX_DEPTH
from tensoradbook.lang.printer import expr_text
from tensoradbook.widgets import GraphView
from tensoradbook.widgets.graph import DEFAULT, FIG1, FIG2, MAX_NODES, _LEGEND, default_shapes, report_figure
from test_widgets_robust import BAD, shown_error

PNG = b"\x89PNG\r\n\x1a\n"


def has_sinh() -> bool:
    try:
        tab.parse(FIG2, default_shapes(FIG2))
    except tab.ExpressionError:
        return False
    return True


def parents(graph) -> dict:
    """Node text -> the texts of the nodes that read it (its consumers)."""
    out = {}
    for parent in graph.keys:
        for child in graph.children[parent]:
            out.setdefault(expr_text(child[0]), set()).add(expr_text(parent[0]))
    return out


def test_fig1_has_the_shape_of_the_report():
    view = GraphView(FIG1)
    title, figure = view.title
    assert title.startswith("forward graph:") and "Fig. 1" in figure
    graph = view.graph
    # f1 = exp, f2 = sin, f3 = a product, f4 = cos, f5 = tanh, and x: six parts, x read by f4 and f5
    assert [expr_text(key[0]).split(" ")[0] for key in graph.keys[:2]] == ["exp", "sin"]
    assert len(graph.keys) == 6
    assert parents(graph)["x[]"] == {"cos (x[])", "tanh (x[])"}
    assert parents(graph)["cos (x[])"] == parents(graph)["tanh (x[])"] == {"cos (x[]) * tanh (x[])"}
    # The partials of f3 depend on its other argument (the report's remark on df3/df4 and df3/df5):
    labels = {(expr_text(p[0]), expr_text(c[0])): text for (p, c), text in graph.partial_labels.items()}
    product = "cos (x[]) * tanh (x[])"
    assert labels[(product, "cos (x[])")] == graph.name(next(k for k in graph.keys if expr_text(k[0]) == "tanh (x[])"))
    assert labels[(product, "tanh (x[])")] == graph.name(next(k for k in graph.keys if expr_text(k[0]) == "cos (x[])"))
    view.step = view.n_steps - 1
    assert view.title[0].startswith(f"reverse sweep, step {view.n_steps - 1} of {view.n_steps - 1}")
    assert "Fig. 1" in view.title[1]
    assert bytes(view.image.value).startswith(PNG)


@pytest.mark.skipif(not has_sinh(), reason="the expression language has no sinh yet")
def test_fig2_is_drawn_with_sinh_as_in_the_report():
    view = GraphView(FIG2)
    assert view.title[1] == "the report's Fig. 2"
    graph = view.graph
    shared = "x2[] + x3[]"
    assert parents(graph)[shared] == {"x1[] * (x2[] + x3[])", "sinh (x2[] + x3[])"}  # one node, two consumers
    labels = {(expr_text(p[0]), expr_text(c[0])): text for (p, c), text in graph.partial_labels.items()}
    assert labels[("sinh (x2[] + x3[])", shared)].startswith("cosh")
    # The final adjoints of the arguments are the derivatives: checked by central differences at a point.
    view.step = view.n_steps - 1
    fn = graph.function
    point = {"x1": 0.3, "x2": 0.7, "x3": -0.2}
    exact = {name: float(v) for name, v in tab.derive(fn).evaluate(point, 1.0).items()}
    for name in ("x1", "x2", "x3"):
        assert view.adjoints[f"{name}[]"]  # the sweep reached every argument
        plus, minus = dict(point), dict(point)
        plus[name] += 1e-6
        minus[name] -= 1e-6
        numeric = float(fn.evaluate(plus) - fn.evaluate(minus)) / 2e-6
        assert np.isclose(exact[name], numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("text", [DEFAULT, "f[] = sin (x[] ** 2) * cos (x[] ** 2)",
                                  "f[] = sin (sin (x1[] * (x2[] + x3[]) + tanh (x2[] + x3[])))"])
def test_other_functions_are_not_called_a_figure_of_the_report(text):
    view = GraphView(text)
    for step in (0, view.n_steps - 1):
        view.step = step
        assert view.title[1] == "" and "Fig." not in view.title[0]
    assert report_figure(view.graph.function) == ""


def test_typing_another_function_drops_the_figure_name():
    view = GraphView(FIG1)
    assert "Fig. 1" in view.title[1]
    assert view.set_function("f[] = exp (sin (cos (x[]) * sin (x[])))")
    assert view.title[1] == ""
    assert view.set_function(FIG1) and "Fig. 1" in view.title[1]


def test_legend_does_not_tie_the_colours_to_one_figure():
    labels = [label for _, label in _LEGEND]
    assert "part vⱼ (blue in Figs. 1, 2)" in labels
    assert not any(label.endswith(("(Fig. 1)", "(Fig. 2)")) for label in labels)


# -- bad input: shown inline, the last good state kept ---------------------------------------

VECTOR = "f[i] = x[i] * 2"
DEEP_MINUS = "f[] = " + "-" * 500 + "x[]"  # raised RecursionError out of GraphView
LONG_SUM = "f[] = " + " + ".join(["x[]"] * 501)


def balanced_sum(n: int) -> str:
    """``(x0[] + x1[]) + (x2[] + x3[])`` ... of n distinct terms: shallow, but 2 n - 1 nodes."""
    terms = [f"x{k}[]" for k in range(n)]
    while len(terms) > 1:
        terms = [f"({a} + {b})" for a, b in zip(terms[::2], terms[1::2])] + terms[len(terms) // 2 * 2:]
    return "f[] = " + terms[0]


def state(view) -> tuple:
    """What the view shows, but the text box (which keeps what was typed into it)."""
    return str(view.graph.function), view.step, bytes(view.image.value)


# setter -> (call, a good call, the names of BAD it accepts, more values it must refuse)
SETTERS = {
    "set_function(text)": (lambda view, v: view.set_function(v), lambda view: view.set_function(FIG1), set(),
                           ("garbage", "f[] = x[", "f[i] = x[i]", "f[] = (x[]", DEEP_MINUS, LONG_SUM,
                            "f[] = " + "(" * 300 + "x[]" + ")" * 300, balanced_sum(MAX_NODES))),
    "set_function(shapes)": (lambda view, v: view.set_function(VECTOR, v),
                             lambda view: view.set_function(VECTOR, {"f": (3,), "x": (3,)}), {"None"},
                             ({"x": (3,)}, {"f": (3,), "x": "a"}, {"f": (3,), "x": None}, {"f": (-1,), "x": (3,)},
                              {"f": (math.nan,), "x": (3,)}, {"f": (3,), "x": (3.5,)}, {"f": (), "x": ()})),
    "step": (lambda view, v: setattr(view, "step", v), lambda view: setattr(view, "step", 1),
             {"10**40", "2**63", "10**400", "-1", "0"}, ()),
}


@pytest.mark.parametrize("name", SETTERS)
def test_bad_values_are_shown_inline_and_a_good_one_clears_them(name):
    call, good, legal, extra = SETTERS[name]
    view = GraphView(FIG1)
    assert good(view) in (True, None) and view.error == ""
    good_state, typed = state(view), view.entry.value
    for value in [v for label, v in BAD.items() if label not in legal] + list(extra):
        assert call(view, value) in (False, None), f"{value!r:.40} was accepted"  # and nothing raised
        assert "Traceback" not in shown_error(view)
        assert state(view) == good_state and view.entry.value == typed, f"{value!r:.40} changed the view"
        assert good(view) in (True, None) and view.error == ""
        assert state(view) == good_state


@pytest.mark.parametrize("value", [10 ** 40, 2 ** 63, -1])
def test_steps_beyond_the_sweep_are_clamped(value):
    view = GraphView(FIG1)
    view.step = value
    assert view.step == min(max(value, 0), view.n_steps - 1) and view.error == ""


def test_too_deep_expressions_are_refused_with_the_limit_and_a_caret():
    view = GraphView(FIG1)
    for text in (DEEP_MINUS, LONG_SUM):
        assert not view.set_function(text)
        error = shown_error(view)
        assert f"{MAX_DEPTH} levels deep" in error and "^" in error.splitlines()[-1]
    assert not view.set_function(balanced_sum(MAX_NODES)) and f"at most {MAX_NODES}" in view.error
    assert view.set_function("f[] = " + "-" * 20 + "x[]") and view.error == ""  # 21 nodes: drawn


def test_step_none_is_shown_inline_and_the_buttons_clear_it():
    view = GraphView(FIG1)
    view.step = None
    assert "step must be an integer, got None" in shown_error(view)
    view.buttons["Forward"].click()
    assert view.step == 1 and view.error == ""
    view.buttons["Back"].click()
    assert view.step == 0


def test_typing_bad_text_into_the_box_or_applying_it():
    view = GraphView(FIG1)
    good_state = state(view)
    entry, apply = view.children[0].children
    for text in ("garbage", "١٢", "9" * 5000, "[" * 300, "", DEEP_MINUS):
        entry.value = text  # what Enter in the box does: its callback must not raise
        assert shown_error(view) and state(view) == good_state
        apply.click()
        assert shown_error(view) and state(view) == good_state
    entry.value = DEFAULT
    assert view.error == "" and view.title[0].startswith("forward graph:  f = exp (x * y) + sin (x)")


def test_nodes_inside_reductions_name_the_reduction():
    """A node's text says which sums and which max / min reductions it lies in."""
    view = GraphView()
    assert view.set_function("f[i] = max{k}_0^2 (x[i + k] * sum{q}_0^1 (y[q]))", {"f": (2,), "x": (4,), "y": (2,)})
    view.step = len(view._graph.keys)
    texts = list(view.adjoints)
    assert any(t.endswith("(inside max k)") for t in texts), texts
    assert any(t.endswith("(inside max k, sum q)") for t in texts), texts
    assert not any("sum k" in t for t in texts), texts

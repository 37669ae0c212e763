"""Drive GraphView (report sec. 2, figs. 1-2) and DerivationExplorer (sec. 5, Algorithm 4) from Python
and check what they show against the core."""

import html

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook.integer.matrix import matrix_latex
from tensoradbook.lang.expr import Affine, Element
from tensoradbook.lang.printer import expr_text
from tensoradbook.ad.reverse import reverse_accumulate
from tensoradbook.widgets import DerivationExplorer, GraphView
from tensoradbook.widgets._common import parse_shapes, shapes_text
from tensoradbook.widgets.explorer import PRESETS, SECTION_6, conditions_and_loops
from tensoradbook.widgets.graph import default_shapes

PNG = b"\x89PNG\r\n\x1a\n"
DEFAULT = "f[] = exp (x[] * y[]) + sin (x[])"
FIG2 = "f[] = sin (sin (x1[] * (x2[] + x3[]) + tanh (x2[] + x3[])))"


def core_sweep(text, shapes=None):
    fn = tab.parse(text, shapes or default_shapes(text))
    seed = Element("d" + fn.name, tuple(Affine.index(i) for i in fn.indices))
    return reverse_accumulate(fn.body, seed), seed


@pytest.fixture(scope="module")
def view():
    return GraphView()


@pytest.fixture(scope="module")
def explorer():
    return DerivationExplorer()


# -- GraphView ----------------------------------------------------------------

def test_graph_starts_with_the_forward_graph(view):
    view.set_function(DEFAULT)
    sweep, seed = core_sweep(DEFAULT)
    # x, y, x * y, exp, sin, + : six nodes, x drawn once although used twice
    assert len(view.graph.keys) == 6 == len(sweep.steps)
    assert view.n_steps == 7 and view.step == 0 and view.current is None
    assert bytes(view.image.value).startswith(PNG)
    assert view.adjoints == {expr_text(sweep.steps[0].node): "df[]"}  # only the seed is known


def test_stepping_clamps(view):
    view.set_function(DEFAULT)
    view.back()
    assert view.step == 0
    view.step = 99
    assert view.step == view.n_steps - 1
    view.forward()
    assert view.step == view.n_steps - 1
    view.step = -5
    assert view.step == 0
    assert view.buttons["Back"].disabled and not view.buttons["Forward"].disabled


@pytest.mark.parametrize("text, shapes", [(DEFAULT, None), (FIG2, None), PRESETS[SECTION_6],
                                          ("f[] = x[] * x[] + x[] / y[]", None)])
def test_each_step_shows_the_sweep(view, text, shapes):
    assert view.set_function(text, shapes)
    sweep, seed = core_sweep(text, shapes)
    view.step = 1
    root = sweep.steps[0]
    assert view.current == root and root.adjoint == seed  # the root's adjoint is the seed
    assert view.adjoints[expr_text(root.node)] == expr_text(seed)
    pictures = set()
    for k in range(1, view.n_steps):
        view.step = k
        step = sweep.steps[k - 1]
        assert view.current == step
        # a node's adjoint is final once the sweep reaches it
        assert view.adjoints[view.graph.text((step.node, step.scope))] == expr_text(step.adjoint)
        assert f"Δ{chr(0x2080 + k % 10)}" in view.text.value or k >= 10
        pictures.add(bytes(view.image.value))
    assert len(pictures) == view.n_steps - 1  # every step draws something new
    final = view.adjoints
    for step in sweep.steps:  # after the last step every node, leaves included, has the core's adjoint
        if expr_text(step.adjoint) != "0":
            assert final[view.graph.text((step.node, step.scope))] == expr_text(step.adjoint)
    leaves = {expr_text(o.element): expr_text(o.adjoint) for o in sweep.occurrences if not o.scope}
    assert all(final[name] == adjoint for name, adjoint in leaves.items())


def test_partial_adjoints_grow_into_the_final_one(view):
    view.set_function(DEFAULT)
    view.step = 3  # +, exp, x * y handled: x has heard from x * y, not yet from sin
    assert view.adjoints["x[]"] == "df[] * exp (x[] * y[]) * y[]"
    assert "partial" in view.text.value
    view.step = view.n_steps - 1
    assert view.adjoints["x[]"] == "df[] * exp (x[] * y[]) * y[] + df[] * cos (x[])"


def test_edges_carry_the_local_partials(view):
    view.set_function(DEFAULT)
    labels = {(expr_text(p[0]), expr_text(c[0])): text for (p, c), text in view.graph.partial_labels.items()}
    assert labels[("sin (x[])", "x[]")] == "cos (x)"
    assert labels[("x[] * y[]", "x[]")] == "y"
    assert labels[("exp (x[] * y[])", "x[] * y[]")] == "v₂"  # exp' = exp: the node itself
    view.set_function("f[] = x[] * x[]")
    assert list(view.graph.partial_labels.values()) == ["x + x"]  # both factors are the same node


def test_layout_has_layers_and_no_overlaps():
    view = GraphView(*PRESETS[SECTION_6])
    graph = view.graph
    for parent in graph.keys:
        for child in graph.children[parent]:  # the root on top, every edge going down
            assert graph.position[parent][1] > graph.position[child][1]
    rows = {}
    for key in graph.keys:
        rows.setdefault(graph.position[key][1], []).append(graph.position[key][0])
    for xs in rows.values():
        xs.sort()
        assert all(b - a > 1.0 for a, b in zip(xs, xs[1:]))  # a node and its adjoint box need an inch
    width, height = graph.size
    assert all(0 < x < width and 0 < y < height for x, y in graph.position.values())


def test_bad_function_keeps_the_graph(view):
    view.set_function(DEFAULT)
    view.step = 2
    before = (view.graph, view.step, bytes(view.image.value))
    assert not view.set_function("f[] = exp (x[] * ) + 1")
    assert "^" in view.error and "f[] = exp (x[] * ) + 1" in [line.strip() for line in view.error.splitlines()]
    caret = view.error.splitlines()[-1]
    assert caret.strip() == "^" and caret.index("^") == view.error.splitlines()[-2].index(")")
    assert "<pre" in view.errors.value  # monospace, so the caret stays under the right character
    assert (view.graph, view.step, bytes(view.image.value)) == before
    assert view.set_function("f[] = log (x[])") and view.error == "" and view.n_steps == 3


def test_typing_into_the_entry(view):
    view.entry.value = "f[] = tanh (a[] - b[])"
    assert view.error == "" and str(view.graph.function) == "f[] = tanh (a[] - b[])"
    view.entry.value = "f[] = tanh (a[] -"
    assert view.error and str(view.graph.function) == "f[] = tanh (a[] - b[])"


@settings(max_examples=25, deadline=None)
@given(st.recursive(st.sampled_from(["x[]", "y[]", "z[]", "2"]),
                    lambda inner: st.one_of(
                        st.tuples(inner, st.sampled_from(["+", "-", "*"]), inner).map(
                            lambda t: f"({t[0]} {t[1]} {t[2]})"),
                        st.tuples(st.sampled_from(["sin", "exp", "tanh"]), inner).map(lambda t: f"{t[0]} ({t[1]})")),
                    max_leaves=5))
def test_random_functions_end_with_the_core_adjoints(body):
    text = f"f[] = {body}"
    if "[" not in body:
        text = f"f[] = {body} + x[]"
    view = GraphView(text)
    sweep, _ = core_sweep(text)
    view.step = view.n_steps - 1
    for occurrence in sweep.occurrences:
        assert view.adjoints[expr_text(occurrence.element)] == expr_text(occurrence.adjoint)


# -- DerivationExplorer ---------------------------------------------------------

def test_shapes_text_round_trip():
    shapes = {"f": (3, 4), "d": (8,), "s": ()}
    assert parse_shapes(shapes_text(shapes)) == shapes
    assert parse_shapes("f=3x4, a = 3 x 5; d=8") == {"f": (3, 4), "a": (3, 5), "d": (8,)}
    with pytest.raises(ValueError, match="cannot read"):
        parse_shapes("f=3y4")
    with pytest.raises(ValueError, match="twice"):
        parse_shapes("f=3, f=4")


def test_section_6_example(explorer):
    assert explorer.set_preset(SECTION_6)
    assert explorer.function.arguments == ("a", "b", "c", "d")
    assert explorer.argument == "a" and explorer.preset_menu.value == SECTION_6
    assert explorer.shapes_entry.value == "f=3x4, a=3x5, b=4x5, c=3x3, d=8"
    explorer.argument = "d"
    (c,) = explorer.gradients.contributions["d"]
    assert c.index_matrix.tolist() == [[1, 0, 1]] and c.cokernel.shape[0] == 0
    shown = explorer.occurrences.value
    assert matrix_latex(c.index_matrix) in shown and r"C = \text{(empty 0}\times\text{1)}" in shown
    snf = tab.smith_normal_form(c.index_matrix)
    for matrix in (snf.S, snf.U, snf.V, c.pseudo_inverse, c.kernel):
        assert matrix_latex(matrix) in shown
    conditions, loops = conditions_and_loops(c)
    assert conditions == [] and len(loops) == c.kernel.shape[1] == 2
    assert loops[0] == "max [dd_0 - 2; 0] <= dd_z1 <= min [dd_0; 4]"
    assert html.escape(loops[0]) in shown
    assert explorer.derivative.value == explorer.gradients["d"]._repr_latex_()


@pytest.mark.parametrize("name", list(PRESETS))
def test_presets_derive_and_check(explorer, name):
    assert explorer.set_preset(name) and explorer.error == ""
    text, shapes = PRESETS[name]
    assert str(explorer.function) == str(tab.parse(text, shapes))
    assert set(explorer.check) == set(explorer.function.arguments)
    assert all(error < 1e-6 for error in explorer.check.values())
    for argument in explorer.function.arguments:
        explorer.argument = argument
        assert f"d{argument}: dot-product test: relative error" in explorer.check_line.value
        assert "✓" in explorer.check_line.value and "#1a7f37" in explorer.check_line.value
        assert str(explorer.gradients[argument]) == str(tab.derive(explorer.function)[argument])
        assert explorer.occurrences.value.count("<h4>Occurrence") == len(explorer.gradients.contributions[argument])


def test_strided_and_windowed_conditions(explorer):
    explorer.set_preset("strided x[2 * i; j]")
    (c,) = explorer.gradients.contributions["x"]
    assert c.index_matrix.tolist() == [[2, 0], [0, 1]]
    conditions, loops = conditions_and_loops(c)
    assert "dx_0 % 2 = 0   (I (beta - a) integral, eq. 17)" in conditions and loops == []
    explorer.set_preset("shifted window x[i + 2]")
    (c,) = explorer.gradients.contributions["x"]
    assert c.offset == (2,)
    assert "a = \\begin{pmatrix}2\\end{pmatrix}" in explorer.occurrences.value
    explorer.set_preset("diagonal x[i; i]")
    (c,) = explorer.gradients.contributions["x"]
    assert c.cokernel.shape[0] == 1
    conditions, loops = conditions_and_loops(c)
    assert conditions[0] == "dx_1 - dx_0 = 0   (C (beta - a) = 0, eq. 16)" and loops == []
    assert "dx_1 - dx_0 = 0" in html.unescape(explorer.occurrences.value)
    explorer.set_preset("x[10 * s + t]")
    (c,) = explorer.gradients.contributions["x"]
    assert conditions_and_loops(c)[1] == ["max [0; ceil((dx_0 - 9) / 10)] <= dx_z0 <= min [2; floor(dx_0 / 10)]"]


def test_argument_switch_and_bad_argument(explorer):
    explorer.set_preset("matrix product")
    explorer.argument = "b"
    assert "db" in explorer.check_line.value and "mathrm{db}" in explorer.derivative.value
    explorer.argument = "q"  # refused inline, like every setter's bad input
    assert "'q' is not an argument of c; choose one of a, b" in explorer.error and explorer.argument == "b"
    explorer.argument = "a"
    assert explorer.error == "" and "da" in explorer.check_line.value
    explorer.set_preset("strided x[2 * i; j]")  # "b" is gone: the first argument is shown
    assert explorer.argument == "x"


def test_bad_input_keeps_the_last_good_state(explorer):
    explorer.set_preset("matrix product")
    good = (explorer.function, explorer.argument, explorer.occurrences.value)
    assert not explorer.set_function("c[i; j] = a[i; k] *", "c=2x3, a=2x4")
    assert "^" in explorer.error and "c[i; j] = a[i; k] *" in explorer.error
    assert (explorer.function, explorer.argument, explorer.occurrences.value) == good
    assert not explorer.set_function("f[i] = x[i]", "f=3, x=4q")
    assert "cannot read 'x=4q'" in explorer.error
    assert not explorer.set_preset("no such preset") and "no preset" in explorer.error
    assert explorer.function == good[0]
    assert explorer.set_function("f[i] = x[i] * x[i]", "f=3, x=3") and explorer.error == ""
    assert explorer.preset_menu.value is None  # not one of the presets
    assert abs(explorer.check["x"]) < 1e-6


def test_typing_into_the_entries(explorer):
    explorer.shapes_entry.value = "f=3, x=5"
    explorer.function_entry.value = "f[i] = sin (x[i + 2])"
    assert explorer.error == "" and explorer.function.shapes["x"] == (5,)
    (c,) = explorer.gradients.contributions["x"]
    assert c.offset == (2,)
    explorer.preset_menu.value = "diagonal x[i; i]"
    assert explorer.function_entry.value == PRESETS["diagonal x[i; i]"][0]


def test_a_wrong_gradient_shows_red(explorer, monkeypatch):
    explorer.set_preset("shifted window x[i + 2]")
    monkeypatch.setattr(DerivationExplorer, "check", property(lambda self: {"x": 0.5}))
    explorer._show()
    assert "5.0e-01 ✗" in explorer.check_line.value and "#b00020" in explorer.check_line.value


def test_finite_differences_agree_with_the_shown_derivative(explorer):
    explorer.set_preset(SECTION_6)
    fn, grads = explorer.function, explorer.gradients
    rng = np.random.default_rng(1)
    args = {name: rng.uniform(0.5, 1.5, fn.shapes[name]) for name in fn.arguments}
    errors = tab.check_gradients(fn, args, grads=grads, seed=1)
    assert max(errors.values()) < 1e-6

"""Drive the widgets from Python and check what they show against the core and brute force."""

import html
import math
import re
from fractions import Fraction
from itertools import product

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook.integer.matrix import matrix_latex
from tensoradbook.integer.geometry import image_range
from tensoradbook.widgets import KernelLattice, PolytopeView, SmithStepper
from tensoradbook.widgets.polytope import affine_text
from tensoradbook.widgets._common import parse_matrix

FIG3 = ([[1, -2]], (7, 5))
FIG4 = ([[1, -2, -2]], (8, 6, 6))
SEC6 = ([[1, 0, 1]], (3, 4, 5))  # d[i + k] over (i, j, k)
PNG = b"\x89PNG\r\n\x1a\n"


def brute_alphas(A, shape, beta) -> set:
    """Every alpha in the box with A alpha = beta, by trying them all."""
    return {alpha for alpha in product(*(range(n) for n in shape))
            if all(sum(a * x for a, x in zip(row, alpha)) == b for row, b in zip(A, beta))}


def picture(widget) -> bytes:
    """The PNG the widget's Image shows."""
    return bytes(widget.image.value)


# -- SmithStepper -----------------------------------------------------------

def shown_matrices(stepper):
    return stepper.matrix_view.value


def test_stepper_starts_at_the_start_state_of_algorithm_1():
    s = SmithStepper()
    assert s.result.A.tolist() == [[2, 4, 4], [-6, 6, 12], [10, -4, -16]]
    assert s.n_steps == len(s.result.steps) == len(s.result.operations) + 1
    assert s.step == 0 and s.current is s.result.steps[0]
    assert s.error == ""
    assert "Step 0" in s.heading.value and html.escape(s.current.words) in s.heading.value


def test_stepper_shows_each_step_of_the_result_with_touched_lines_highlighted():
    s = SmithStepper()
    for k in range(s.n_steps):
        s.step = k
        state = s.result.steps[k]
        assert s.current is state
        op = state.operation
        rows = op.touched if op is not None and op.axis == "rows" else ()
        cols = op.touched if op is not None and op.axis == "cols" else ()
        shown = shown_matrices(s)
        assert matrix_latex(state.S, rows, cols) in shown
        assert matrix_latex(state.U, highlight_rows=rows) in shown
        assert matrix_latex(state.V, highlight_cols=cols) in shown
        if op is not None:
            assert (r"\color" in shown) and f"line {op.line}" in s.heading.value
            assert html.escape(op.words) in s.heading.value


def test_stepper_forward_back_and_clamping():
    s = SmithStepper()
    s.back()
    assert s.step == 0
    s.forward(), s.forward()
    assert s.step == 2 and s.current is s.result.steps[2]
    s.back()
    assert s.step == 1
    s.step = 10**6
    assert s.step == s.n_steps - 1
    s.forward()
    assert s.step == s.n_steps - 1
    s.step = -3
    assert s.step == 0


def test_stepper_buttons_and_slider_drive_the_same_state():
    s = SmithStepper()
    buttons = s.buttons
    assert buttons["First"].disabled and buttons["Back"].disabled and not buttons["Forward"].disabled
    buttons["Forward"].click()
    assert s.step == 1
    buttons["Last"].click()
    assert s.step == s.n_steps - 1 and buttons["Forward"].disabled and buttons["Last"].disabled
    buttons["Back"].click()
    assert s.step == s.n_steps - 2
    buttons["First"].click()
    assert s.step == 0
    s.slider.value = 3
    assert s.step == 3 and s.current is s.result.steps[3]


def test_stepper_last_step_says_the_factorization_holds_with_rank_and_factors():
    s = SmithStepper()
    assert s.summary.value == ""
    s.step = s.n_steps - 1
    summary = s.summary.value
    assert "U A V = S holds" in summary
    assert f"rank {s.result.rank}" in summary
    assert ", ".join(map(str, s.result.invariant_factors)) in summary
    assert s.result.invariant_factors == (2, 6, 12)


@pytest.mark.parametrize("text, expected", [
    ("2 4; 6 8", [[2, 4], [6, 8]]),
    ("[[2, 4], [6, 8]]", [[2, 4], [6, 8]]),
    ("1, -2\n3, 4;", [[1, -2], [3, 4]]),
    ("  +3 0 -7  ", [[3, 0, -7]]),
])
def test_parse_matrix_reads_both_notations(text, expected):
    assert parse_matrix(text) == expected


def test_stepper_set_matrix_from_text_and_from_lists():
    s = SmithStepper()
    s.step = 2
    assert s.set_matrix("2 4; 6 8") is True
    assert s.result.A.tolist() == [[2, 4], [6, 8]] and s.step == 0 and s.error == ""
    assert s.result.operations == tab.smith_normal_form([[2, 4], [6, 8]]).operations
    assert s.entry.value == "2 4; 6 8"
    assert s.set_matrix([[0, 3], [0, 0], [0, 6]])
    assert s.entry.value == "0 3; 0 0; 0 6"
    s.step = s.n_steps - 1
    assert tuple(s.result.invariant_factors) == (3,) and "rank 1" in s.summary.value


@pytest.mark.parametrize("bad, message", [
    ("", "empty"),
    ("   ", "empty"),
    ("2 x; 1 2", "row 0, entry 1 is 'x'"),
    ("2.5 1", "not an integer"),
    ("1 2; 3", "ragged"),
    ("1 2;; 3 4", "row 1 is empty"),
    ("[[1, 2], [3]]", "ragged"),
    ("[[1, 2]", "cannot read"),
    ("[[1.5, 2]]", "not an integer"),
    ("[1, 2]", "not a list"),
    ("[[]]", "1 x 0"),
    ("; ".join(["1 " * 9] * 2), "at most 8"),
    ([[1, "a"]], "not an integer"),
])
def test_stepper_bad_input_shows_an_error_and_keeps_the_matrix(bad, message):
    s = SmithStepper()
    s.step = 3
    before = s.result
    assert s.set_matrix(bad) is False
    assert message in s.error
    assert message in html.unescape(s.errors.value) and "color" in s.errors.value
    assert s.result is before and s.step == 3
    s.forward()  # still usable
    assert s.step == 4
    assert s.set_matrix("1 2; 3 4") and s.error == "" and s.errors.value == ""


def test_stepper_typing_in_the_entry_applies_on_submit_and_apply_button():
    s = SmithStepper()
    s.entry.value = "4 6"  # the text box reports its value on Enter
    assert s.result.A.tolist() == [[4, 6]]
    s.entry.value = "4 six"
    assert "six" in s.error and s.result.A.tolist() == [[4, 6]]
    s.apply_button.click()  # the same bad text via the button
    assert "six" in s.error
    s.entry.value = "[[3], [5]]"
    assert s.error == "" and s.result.A.tolist() == [[3], [5]]


def test_stepper_matrix_already_in_normal_form_has_one_step():
    s = SmithStepper([[1, 0], [0, 2]])
    assert s.n_steps == 1
    s.forward()
    assert s.step == 0 and "U A V = S holds" in s.summary.value


def test_stepper_rejects_bad_initial_matrix():
    with pytest.raises(ValueError, match="not an integer"):
        SmithStepper([[1, 0.5]])


# -- KernelLattice ----------------------------------------------------------

def test_lattice_fig3_of_the_report():
    w = KernelLattice(*FIG3, beta=(-1,))
    assert w.beta == (-1,)
    assert w.alphas == [(1, 1), (3, 2), (5, 3)]
    assert w.status.startswith("beta = (-1): 3 solutions lie in the 7 x 5 box")
    assert w.error == ""
    assert picture(w).startswith(PNG)


@pytest.mark.parametrize("A, shape", [
    FIG3, FIG4, SEC6,
    ([[1, 2], [3, -1]], (4, 4)),  # trivial kernel: one alpha per beta
    ([[2, 1, 0], [0, 1, 3]], (4, 3, 3)),  # 1-D kernel in 3-D, two entries of beta
])
def test_lattice_matches_core_and_brute_force_for_every_beta(A, shape):
    w = KernelLattice(A, shape)
    assert w.beta_range == image_range(A, shape)
    assert [(s.min, s.max) for s in w.sliders] == w.beta_range
    inverse = tab.integer_inverse(A)
    for beta in product(*(range(lo, hi + 1) for lo, hi in w.beta_range)):
        assert w.set_beta(beta)
        expected = brute_alphas(A, shape, beta)
        assert set(w.alphas) == expected and len(w.alphas) == len(expected)
        solutions = inverse.solve(beta)
        if solutions is not None:
            assert w.alphas == solutions.within(shape).alphas()
        if expected:
            assert f": {len(expected)} solution" in w.status


def test_lattice_sliders_update_beta_status_and_picture():
    w = KernelLattice(*FIG3, beta=(-1,))
    before = picture(w)
    w.sliders[0].value = 2
    assert w.beta == (2,)
    assert set(w.alphas) == brute_alphas(*FIG3, (2,))
    assert w.status.startswith("beta = (2): ")
    assert picture(w) != before


def test_lattice_no_solution_names_the_failing_condition():
    w = KernelLattice([[2, 4]], (5, 5), beta=(3,))  # 2 a + 4 b is even
    reason = tab.integer_inverse([[2, 4]]).solvability((3,)).reason
    assert w.alphas == [] and reason in w.status and "integral" in w.status
    w = KernelLattice([[1, 2], [2, 4]], (5, 5), beta=(1, 1))  # the second row is twice the first
    assert w.alphas == [] and "cokernel" in w.status
    w.set_beta((1, 2))
    assert set(w.alphas) == brute_alphas([[1, 2], [2, 4]], (5, 5), (1, 2))


def test_lattice_beta_outside_the_box_image_widens_the_slider():
    w = KernelLattice(*FIG3)
    assert w.set_beta((20,))
    assert w.beta == (20,) and w.sliders[0].max == 20
    assert w.alphas == [] and "none lies in the 7 x 5 box" in w.status


@pytest.mark.parametrize("bad, message", [
    ((1, 2), "must have 1 entries"),
    ((Fraction(1, 2),), "not an integer"),
    (("x",), "'x'"),
    (None, "vector"),
])
def test_lattice_bad_beta_keeps_the_previous_one(bad, message):
    w = KernelLattice(*FIG3, beta=(-1,))
    assert w.set_beta(bad) is False
    assert message in w.error and w.beta == (-1,) and len(w.alphas) == 3
    w.beta = (0,)  # the property setter goes through set_beta
    assert w.error == "" and w.beta == (0,)


def test_lattice_3d_fig4_and_the_section_6_index():
    w = KernelLattice(*FIG4, beta=(3,))
    assert set(w.alphas) == brute_alphas(*FIG4, (3,)) and len(w.alphas) == 6
    assert picture(w).startswith(PNG)
    w = KernelLattice(*SEC6, beta=(3,))
    # i + k = 3 with i < 3, k < 5 and any j < 4: (i, k) in {(0,3), (1,2), (2,1)}.
    assert len(w.alphas) == 12 and "12 solutions" in w.status


@pytest.mark.parametrize("A, message", [
    ([[1]], "2 or 3 columns"),
    ([[1, 2, 3, 4]], "2 or 3 columns"),
    ([[1, 0.5]], "not an integer"),
    ([], "needs rows and columns"),
])
def test_lattice_rejects_wrong_matrices(A, message):
    with pytest.raises(ValueError, match=message):
        KernelLattice(A, (3,) * (len(A[0]) if A else 2))


def test_lattice_rejects_wrong_shapes_and_initial_beta():
    with pytest.raises(ValueError, match="must have 2 entries"):
        KernelLattice([[1, 2]], (3,))
    with pytest.raises(ValueError, match="positive"):
        KernelLattice([[1, 2]], (3, 0))
    with pytest.raises(ValueError, match="must have 1 entries"):
        KernelLattice([[1, 2]], (3, 3), beta=(1, 1))


# -- PolytopeView -----------------------------------------------------------

def loops_from_text(bounds_text: list[str]) -> list[tuple]:
    """Run the nested loops that ``bounds_text`` describes; return the z in index order."""
    names = {"max": max, "min": min, "ceil": math.ceil, "floor": math.floor, "inf": math.inf}

    def value(expr, env):
        # "3/2 z_1" means 3/2 * z_1; Fractions keep the division exact.
        expr = re.sub(r"(\d) (z_\d+)", r"\1*\2", expr)
        expr = re.sub(r"(\d+)/(\d+)", r"Fraction(\1, \2)", expr)
        return eval(expr, {"Fraction": Fraction, **names}, env)

    out = []

    def loop(level, env):
        if level == len(bounds_text):
            out.append(tuple(env[f"z_{k}"] for k in range(len(bounds_text))))
            return
        low, name, high = (part.strip() for part in bounds_text[level].split("<="))
        for v in range(value(low, env), value(high, env) + 1):
            loop(level + 1, {**env, name: v})

    loop(0, {})
    return out


def brute_points(A, shape, beta, reach=25) -> set:
    solutions = tab.integer_inverse(A).solve(beta)
    kappa = solutions.kernel.shape[1]
    return {z for z in product(range(-reach, reach + 1), repeat=kappa)
            if all(0 <= a < n for a, n in zip(solutions.point(z), shape))}


def test_polytope_fig3_of_the_report():
    w = PolytopeView(*FIG3, beta=(-1,))
    assert w.points == [(1,), (2,), (3,)]
    assert w.bounds_text == ["1 <= z_0 <= 3"]  # Sigma((-1)) = {z : 1 <= z <= 3}
    assert "3 integer points" in w.status and w.error == ""
    assert picture(w).startswith(PNG)


@pytest.mark.parametrize("A, shape", [FIG3, FIG4, SEC6, ([[1, 1, 1, 1]], (2, 3, 2, 2))])
def test_polytope_points_and_bounds_match_core_and_brute_force(A, shape):
    w = PolytopeView(A, shape)
    inverse = tab.integer_inverse(A)
    kappa = inverse.kernel.shape[1]
    reach = 10 if kappa == 3 else 25
    for beta in product(*(range(lo, hi + 1) for lo, hi in w.beta_range)):
        assert w.set_beta(beta)
        solutions = inverse.solve(beta)
        if solutions is None:
            assert w.points == [] and w.bounds_text == []
            continue
        boxed = solutions.within(shape)
        assert w.points == boxed.points()
        assert set(w.points) == brute_points(A, shape, beta, reach)
        if w.points:
            assert len(w.bounds_text) == kappa
            assert loops_from_text(w.bounds_text) == w.points


def test_polytope_fig4_two_dimensional_kernel():
    w = PolytopeView(*FIG4, beta=(3,))
    assert len(w.points) == 6 and len(w.bounds_text) == 2
    outer, inner = w.bounds_text
    assert outer.split(" <= ")[1] == "z_1" and inner.split(" <= ")[1] == "z_0" and "z_1" in inner
    assert loops_from_text(w.bounds_text) == w.points


def test_polytope_step_control_walks_through_the_elimination():
    w = PolytopeView(*FIG4, beta=(3,))
    system = tab.integer_inverse(FIG4[0]).solve((3,)).within(FIG4[1]).system
    points, pictures = w.points, set()
    assert w.step == 0 and "Step 0" in w.step_text.value
    constraints = w.step_text.value.split("<code>")[1].count(" &gt;= ")
    assert constraints == sum(1 for row in system.A.tolist() if any(row))
    pictures.add(picture(w))
    for k, step in enumerate(system.steps, start=1):
        w.step = k
        text = w.step_text.value
        assert f"Step {k}" in text and f"eliminate z_{step.variable}" in text
        assert f"{step.generated} rows generated" in text and f"{step.kept} kept" in text
        assert html.escape(w.bounds_text[-1 - step.variable]) in text
        assert w.points == points
        pictures.add(picture(w))
    assert "feasibility F b &le; 0 (eq. 34) holds" in w.step_text.value
    assert len(pictures) == 3  # each step draws different lines
    w.step = 99
    assert w.step == 2
    w.step = -1
    assert w.step == 0


def test_polytope_sliders_and_no_solution_or_empty_region():
    w = PolytopeView([[2, 4]], (6, 6), beta=(4,))
    assert w.points and w.error == ""
    w.sliders[0].value = 3
    assert w.beta == (3,) and w.points == [] and w.bounds_text == []
    assert tab.integer_inverse([[2, 4]]).solvability((3,)).reason in w.status
    assert "No system" in w.step_text.value
    w = PolytopeView(*FIG3, beta=(-1,))
    w.set_beta((30,))
    assert w.points == [] and "Sigma(beta) is empty" in w.status and "not even a real one" in w.status
    w.step = 1
    assert "fails: the region is empty" in w.step_text.value


def test_polytope_trivial_and_three_dimensional_kernels_show_text():
    w = PolytopeView([[1, 2], [3, -1]], (4, 4))
    assert w.points == [()] and "only solution" in w.status and w.bounds_text == []
    assert w.image.layout.display == "none"
    w.set_beta((0, 7))  # alpha = (2, -1) is outside the box
    assert w.points == [] and "outside the box" in w.status
    w = PolytopeView([[1, 1, 1, 1]], (2, 2, 2, 2), beta=(2,))
    assert len(w.bounds_text) == 3 and w.image.layout.display == "none"
    assert len(w.points) == 6 and "6 integer points" in w.status
    assert "z_2" in w.table.value
    w.step = 3
    assert "eliminate z_2" in w.step_text.value


def test_polytope_bad_beta_keeps_the_previous_one():
    w = PolytopeView(*FIG3, beta=(-1,))
    assert not w.set_beta((1, 2)) and "must have 1 entries" in w.error
    assert w.points == [(1,), (2,), (3,)]
    with pytest.raises(ValueError, match="must have 1 entries"):
        PolytopeView(*FIG3, beta=(1, 2))


@pytest.mark.parametrize("constant, coefficients, text", [
    (4, (-1,), "4 - z_1"),
    (0, (-1,), "-z_1"),
    (Fraction(-3, 2), (Fraction(1, 2), 2), "-3/2 + 1/2 z_1 + 2 z_2"),
    (0, (0,), "0"),
    (5, (), "5"),
])
def test_affine_text(constant, coefficients, text):
    names = ["z_1", "z_2"]
    assert affine_text(constant, coefficients, names) == text


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 3).flatmap(lambda m: st.tuples(
    st.lists(st.lists(st.integers(-3, 3), min_size=m, max_size=m), min_size=1, max_size=2),
    st.lists(st.integers(1, 4), min_size=m, max_size=m))), st.data())
def test_widgets_agree_with_brute_force_on_random_index_matrices(case, data):
    A, shape = case
    beta = tuple(data.draw(st.integers(lo, hi)) for lo, hi in image_range(A, shape))
    expected = brute_alphas(A, shape, beta)
    lattice = KernelLattice(A, shape, beta)
    assert set(lattice.alphas) == expected and len(lattice.alphas) == len(expected)
    view = PolytopeView(A, shape, beta)
    solutions = tab.integer_inverse(A).solve(beta)
    assert [solutions.point(z) for z in view.points] == lattice.alphas if solutions else view.points == []


@pytest.mark.parametrize("cls", [PolytopeView, KernelLattice])
def test_choosing_another_kernel_basis(cls):
    """Another lattice basis K W changes z, never the solutions alpha; bad bases are refused inline."""
    A, shape = [[1, -2, -2]], (12, 5, 5)
    widget = cls(A, shape, beta=[3])
    before = sorted(tab.integer_inverse(A).solve([3]).within(shape).alphas())
    assert widget.set_kernel("2 0; 1 -1; 0 1") and widget.error == ""
    assert widget.kernel.tolist() == [[2, 0], [1, -1], [0, 1]]
    assert sorted(widget.alphas if cls is KernelLattice else
                  [tab.IntegerSolutions((3, 0, 0), widget.kernel).point(z) for z in widget.points]) == before
    assert not widget.set_kernel("2 0; 1 1; 2 1")  # the basis printed in the report's dump
    assert "column 0 of K is not in the kernel" in widget.error
    assert widget.kernel.tolist() == [[2, 0], [1, -1], [0, 1]]  # kept
    assert not widget.set_kernel("4 2; 2 0; 0 1") and "sublattice of index 2" in widget.error
    assert not widget.set_kernel("2 x; 1 0; 0 1") and "row 0, entry 1 is 'x'" in widget.error
    assert widget.set_beta([5]) and widget.error == ""  # still works after bad input


def test_kernel_basis_in_the_constructor():
    with pytest.raises(ValueError, match="sublattice of index 3"):
        PolytopeView([[1, -2]], (7, 5), beta=[-1], kernel=[[6], [3]])
    view = PolytopeView([[1, -2]], (7, 5), beta=[-1], kernel=[[-2], [-1]])
    assert view.points == [(-3,), (-2,), (-1,)]  # z runs the other way along the same line


def test_typing_a_kernel_basis_into_the_box():
    view = PolytopeView([[1, -2, -2]], (12, 5, 5), beta=[3])
    view.kernel_entry.value = "2 0; 1 -1; 0 1"  # what Enter in the text box does
    assert view.kernel.tolist() == [[2, 0], [1, -1], [0, 1]]
    assert view.bounds_text == ["0 <= z_1 <= 4", "max(-1, z_1) <= z_0 <= min(4, 4 + z_1)"]
    view.kernel_entry.value = "1 0; 0 1; 0 0"
    assert "column 0 of K is not in the kernel" in view.error
    assert view.kernel.tolist() == [[2, 0], [1, -1], [0, 1]]

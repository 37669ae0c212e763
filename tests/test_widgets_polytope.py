"""PolytopeView's two pictures (report figs. 3 and 4): alpha-space beside z-space, and bad input.

Driven through the public setters (set_beta, set_kernel, step); what the pictures show is read from the
axes' artists (each carries a gid saying what it is) and checked against brute force over the index box.
Bad values of every setter and control are shown in the widget, which keeps its last good state.
"""

import io
from fractions import Fraction
from itertools import product

import numpy as np
import pytest
from PIL import Image

import tensoradbook as tab
from tensoradbook.widgets import PolytopeView
from test_widgets_robust import BAD, shown_error
from alarm import time_limit

PNG = b"\x89PNG\r\n\x1a\n"
FIG3 = ([[1, -2]], (7, 5))
FIG4 = ([[1, -2, -2]], (12, 5, 5))  # the box chapter 04b chooses: 15 points at beta = 3
SEC6 = ([[1, 0, 1]], (3, 4, 5))     # d[i + k] over (i, j, k)


def brute_alphas(A, shape, beta) -> set:
    """Every alpha in the box with A alpha = beta, by enumeration."""
    A = np.array(A)
    return {alpha for alpha in product(*(range(n) for n in shape)) if tuple(A @ alpha) == tuple(beta)}


def brute_z(view, A, beta, reach=20) -> set:
    """Every integer z with I beta + K z in the box, for the kernel basis the view uses."""
    solutions = tab.integer_inverse(A).solve(beta)
    if solutions is None:
        return set()
    solutions = tab.IntegerSolutions(solutions.particular, view.kernel)
    shape = view.shape
    kappa = view.kernel.shape[1]
    return {z for z in product(range(-reach, reach + 1), repeat=kappa)
            if all(0 <= a < n for a, n in zip(solutions.point(z), shape))}


def artists(ax, gid):
    return [a for a in ax.get_children() if a.get_gid() == gid]


def offsets(ax, gid) -> set:
    found = artists(ax, gid)
    assert len(found) <= 1, gid
    return {tuple(float(v) for v in row) for row in found[0].get_offsets()} if found else set()


def size(png: bytes) -> tuple[int, int]:
    return Image.open(io.BytesIO(png)).size


@pytest.mark.parametrize("A, shape, beta", [(*FIG3, (-1,)), (*FIG4, (3,)), (*SEC6, (4,))])
def test_two_pictures_with_labelled_axes(A, shape, beta):
    view = PolytopeView(A, shape, beta=beta)
    panels = view.panels
    assert set(panels) == {"alpha", "z"}
    a, b = view.drawn_entries
    assert (panels["alpha"].get_xlabel(), panels["alpha"].get_ylabel()) == (f"α{chr(0x2080 + a)}",
                                                                            f"α{chr(0x2080 + b)}")
    if view.kernel.shape[1] == 2:
        assert (panels["z"].get_xlabel(), panels["z"].get_ylabel()) == ("z₁ (outer loop)", "z₀ (inner loop)")
    else:
        assert panels["z"].get_xlabel() == "z₀"
    for ax in panels.values():  # readable: 12 pt axis labels, tick labels of at least 9 pt
        assert all(label.get_fontsize() >= 12 for label in (ax.xaxis.label, ax.yaxis.label) if label.get_text())
        assert all(t.get_fontsize() >= 9 for t in ax.get_xticklabels() + ax.get_yticklabels())
    title = artists(panels["alpha"], "alpha-title")[0].get_text()
    assert title.startswith("α-space") and f"β = ({beta[0]})" in title
    assert panels["z"].get_title().startswith("z-space")
    # The two pictures side by side, each a PNG a reader can see whole.
    assert view.alpha_image.startswith(PNG) and view.z_image.startswith(PNG)
    assert size(view.alpha_image)[0] >= 400 and size(view.z_image)[0] >= 400


@pytest.mark.parametrize("A, shape", [FIG3, FIG4, SEC6])
def test_plotted_points_are_the_integer_points_of_the_polytope(A, shape):
    view = PolytopeView(A, shape)
    a, b = view.drawn_entries
    for beta in [(v,) for v in range(view.beta_range[0][0], view.beta_range[0][1] + 1)]:
        assert view.set_beta(beta)
        truth = brute_alphas(A, shape, beta)
        shown = offsets(view.panels["alpha"], "alpha-points")
        # alpha-space: one dot per alpha in the box (the two entries drawn tell the alphas apart)
        assert shown == {(float(alpha[a]), float(alpha[b])) for alpha in truth}
        assert len(shown) == len(truth) == len(view.alphas)
        assert set(view.alphas) == truth
        # z-space: one dot per integer point of Sigma(beta), the same number
        z_truth = brute_z(view, A, beta)
        flip = view.kernel.shape[1] == 2  # z_1 across, z_0 up
        assert offsets(view.panels["z"], "z-points") == {
            (float(z[1]), float(z[0])) if flip else (float(z[0]), 0.0) for z in z_truth}
        assert set(view.points) == z_truth


@pytest.mark.parametrize("A, shape", [FIG3, FIG4, SEC6])
def test_hollow_points_are_solutions_outside_the_box(A, shape):
    A_arr = np.array(A)
    view = PolytopeView(A, shape)
    a, b = view.drawn_entries
    hidden = [h for h in range(len(shape)) if h not in (a, b)]
    for beta in [(v,) for v in range(view.beta_range[0][0], view.beta_range[0][1] + 1, 2)]:
        view.set_beta(beta)
        for x, y in offsets(view.panels["alpha"], "alpha-outside"):
            # Rebuild the whole alpha: with one entry hidden, A alpha = beta fixes it.
            alpha = [0] * len(shape)
            alpha[a], alpha[b] = int(x), int(y)
            for h in hidden:
                rest = beta[0] - sum(A_arr[0][c] * alpha[c] for c in range(len(shape)) if c != h)
                assert rest % A_arr[0][h] == 0  # an integer solution
                alpha[h] = rest // A_arr[0][h]
            assert tuple(A_arr @ alpha) == beta
            assert not all(0 <= v < n for v, n in zip(alpha, shape))  # outside the box


def test_fig3_line_with_its_ends_l_and_h():
    view = PolytopeView(*FIG3, beta=(-1,))
    ax = view.panels["alpha"]
    # I beta = (-1, 0) and K = (2, 1): the line of fig. 3, inside the box from l = (0, 1/2) to h = (6, 7/2)
    (star,) = artists(ax, "alpha-particular")
    assert tuple(star.get_xydata()[0]) == (-1.0, 0.0)
    (line,) = artists(ax, "alpha-line")
    assert line._xy1 == (-1.0, 0.0) and line._xy2 == (1.0, 1.0)
    (segment,) = artists(ax, "alpha-region")
    assert [tuple(p) for p in segment.get_xydata()] == [(0.0, 0.5), (6.0, 3.5)]
    (l,), (h,) = artists(ax, "alpha-l"), artists(ax, "alpha-h")
    assert (l.get_text(), tuple(l.xy)) == ("l", (0.0, 0.5)) and (h.get_text(), tuple(h.xy)) == ("h", (6.0, 3.5))
    assert offsets(ax, "alpha-points") == {(1.0, 1.0), (3.0, 2.0), (5.0, 3.0)}  # the three marked points
    assert len(artists(ax, "alpha-kernel")) == 1
    (box,) = artists(ax, "alpha-box")
    assert {tuple(p) for p in box.get_xydata()} == {(0, 0), (6, 0), (6, 4), (0, 4)}


def test_fig4_region_maps_onto_the_box_and_the_hidden_entry_is_bounded():
    A, shape = FIG4
    view = PolytopeView(A, shape, beta=(3,))
    ax = view.panels["alpha"]
    assert view.drawn_entries == (0, 1)
    (region,) = artists(ax, "alpha-region")
    corners = region.get_xy()
    # Every corner of the shaded region is a real solution in the box: alpha_2 = (alpha_0 - 2 alpha_1 - 3) / 2.
    for x, y in corners:
        hidden = (x - 2 * y - 3) / 2
        assert -1e-9 <= x <= 11 + 1e-9 and -1e-9 <= y <= 4 + 1e-9 and -1e-9 <= hidden <= 4 + 1e-9
    # The box limits of alpha_2 are two dashed lines: alpha_0 - 2 alpha_1 = 3 and = 11.
    lines = artists(ax, "alpha-hidden")
    assert len(lines) == 2
    for line, level in zip(lines, (0, 4)):
        (x0, y0), slope = line._xy1, line._slope
        assert slope == 0.5 and (x0 - 2 * y0 - 3) / 2 == level
    assert len(offsets(ax, "alpha-points")) == 15
    assert len(artists(ax, "alpha-kernel")) == 2  # both columns of K, from I beta = (3, 0, 0)


def test_step_redraws_z_space_only_and_beta_both():
    view = PolytopeView(*FIG4, beta=(3,))
    alpha, z = view.alpha_image, view.z_image
    view.step = 1
    assert view.alpha_image == alpha and view.z_image != z
    view.set_beta((5,))
    assert view.alpha_image != alpha


def test_another_kernel_basis_moves_z_not_alpha():
    A, shape = FIG4
    view = PolytopeView(A, shape, beta=(3,))
    before = offsets(view.panels["alpha"], "alpha-points")
    z_before = set(view.points)
    assert view.set_kernel("2 0; 1 -1; 0 1")
    assert offsets(view.panels["alpha"], "alpha-points") == before
    assert set(view.points) != z_before and set(view.points) == brute_z(view, A, (3,))


def test_no_solution_and_empty_region():
    view = PolytopeView([[2, 4]], (6, 6), beta=(3,))
    ax = view.panels["alpha"]
    (message,) = artists(ax, "alpha-message")
    assert message.get_text() == "no integer solution for this β"
    assert not artists(ax, "alpha-points") and not artists(ax, "alpha-region")
    assert len(artists(ax, "alpha-box")) == 1  # the box is always there
    view = PolytopeView(*FIG3, beta=(30,))  # solutions, none in the box, I beta far outside the view
    ax = view.panels["alpha"]
    assert offsets(ax, "alpha-points") == set() and not artists(ax, "alpha-region")
    assert "Iβ = (30, 0) lies outside this view" in artists(ax, "alpha-title")[0].get_text()
    assert not artists(ax, "alpha-particular") and not artists(ax, "alpha-kernel")


def test_kernels_without_a_picture_have_no_panels():
    for A, shape in (([[1, 2], [3, -1]], (4, 4)), ([[1, 1, 1, 1]], (2, 2, 2, 2))):
        view = PolytopeView(A, shape)
        assert view.panels == {} and view.drawn_entries is None
        assert view.alpha_image == b"" and view.z_image == b""


def test_the_first_frame_is_not_left_behind():
    """Each frame's artists replace the previous frame's: none accumulate in the axes."""
    view = PolytopeView(*FIG4, beta=(3,))
    count = len(view.panels["alpha"].get_children())
    for beta in range(-5, 12):
        view.set_beta((beta,))
    view.set_beta((3,))
    assert len(view.panels["alpha"].get_children()) == count


# -- bad input: shown inline, the last good state kept ---------------------------------------


def state(view) -> tuple:
    return view.beta, view.kernel.tolist(), view.step, view.points, view.alpha_image, view.z_image


def assign(attribute):
    return lambda view, value: setattr(view, attribute, value)


# setter -> (call, a good call, the names of BAD it accepts, more values it must refuse)
SETTERS = {
    "set_beta": (lambda view, v: view.set_beta(v), lambda view: view.set_beta((3,)), {"-1", "0", "[1]"},
                 ((1, 2), (2 ** 53,), [Fraction(1, 2)])),
    "beta": (assign("beta"), lambda view: setattr(view, "beta", (3,)), {"-1", "0", "[1]"}, ((1, 2),)),
    "set_kernel": (lambda view, v: view.set_kernel(v), lambda view: view.set_kernel("2 0; 1 -1; 0 1"), set(),
                   ("2 0; 1 1; 2 1", "4 2; 2 0; 0 1", "2 x; 1 0; 0 1", "١ 0; 0 1; 0 0", "[[" * 300, "9" * 5000,
                    [[1], [1]], [[1.5, 0], [1, -1], [0, 1]])),
    "step": (assign("step"), lambda view: setattr(view, "step", 1), {"10**40", "2**63", "10**400", "-1", "0"}, ()),
}


@pytest.mark.parametrize("name", SETTERS)
def test_bad_values_are_shown_inline_and_a_good_one_clears_them(name):
    call, good, legal, extra = SETTERS[name]
    view = PolytopeView(*FIG4, beta=(3,))
    assert good(view) in (True, None) and view.error == ""
    good_state = state(view)
    for value in [v for label, v in BAD.items() if label not in legal] + list(extra):
        assert call(view, value) in (False, None), f"{value!r:.40} was accepted"  # and nothing raised
        assert "Traceback" not in shown_error(view)
        assert state(view) == good_state, f"{value!r:.40} changed the view"
        assert good(view) in (True, None) and view.error == ""
        assert state(view) == good_state


@pytest.mark.parametrize("value, shown", [(10 ** 40, 2), (2 ** 63, 2), (-1, 0)])
def test_steps_beyond_the_elimination_are_clamped(value, shown):
    view = PolytopeView(*FIG4, beta=(3,))
    view.step = value
    assert view.step == shown and view.error == ""


def test_step_none_is_shown_inline_and_the_buttons_of_the_steps_work():
    view = PolytopeView(*FIG4, beta=(3,))
    view.step = None
    assert "step must be an integer, got None" in shown_error(view)
    view.forward()
    assert view.step == 1 and view.error == ""
    view.forward()
    view.forward()  # past the last elimination: stays there
    assert view.step == view.n_steps - 1 == 2
    view.back()
    assert view.step == 1


def test_typing_a_bad_kernel_basis_then_moving_a_slider():
    view = PolytopeView(*FIG4, beta=(3,))
    good_state = state(view)
    entry, apply = view.kernel_box.children
    for text in ("garbage", "١٢", "9" * 5000, "[" * 300, "", "2 0; 1 1; 2 1"):
        entry.value = text  # what Enter in the box does: its callback must not raise
        assert shown_error(view) and state(view) == good_state
        apply.click()
        assert shown_error(view) and state(view) == good_state
    view.sliders[0].value = 5  # a good beta from the slider clears the error
    assert view.beta == (5,) and view.error == ""


def test_a_huge_box_is_refused_at_once():
    with time_limit(), pytest.raises(ValueError, match="10000 x 10000 has 100000000 points, at most 10,000 can be "
                                                       "drawn"):
        PolytopeView([[2, 4]], (10 ** 4, 10 ** 4))  # took 461 s before the limit
    with time_limit(), pytest.raises(ValueError, match="at most 10,000"):
        PolytopeView([[1] * 14], (2,) * 14)  # a kernel shown as text only enumerates its points too
    assert PolytopeView([[2, 4]], (100, 100)).points  # the largest square box still works


@pytest.mark.parametrize("A, shape, beta, kernel, message", [
    (None, (3, 3), None, None, "A must be a matrix"),
    ([[1, 2]], (10 ** 40, 10 ** 40), None, None, "at most 10,000 can be drawn"),
    ([[1, 2]], (0, 3), None, None, "sizes must be positive integers"),
    ([[1, 2]], None, None, None, "shape must be a vector of 2 numbers"),
    ([[1, 2]], (3, 3), (2 ** 53,), None, "the sliders hold integers up to 2\\*\\*53 - 1"),
    ([[1, 2]], (3, 3), "a", None, "beta must be a vector of 1 numbers"),
    ([[1, -2, -2]], (3, 3, 3), None, "x", "K must be a matrix"),
])
def test_bad_constructor_arguments_raise_a_value_error_saying_why(A, shape, beta, kernel, message):
    with pytest.raises(ValueError, match=message):  # as KernelLattice: a widget that cannot be shown
        PolytopeView(A, shape, beta=beta, kernel=kernel)


def test_values_beyond_int64_are_drawn_exactly():
    """I beta and a typed kernel basis may leave int64: the solutions drawn outside the box are found in
    Python ints (this beta and this basis raised OverflowError, and a basis with entries near 2**62 would
    have wrapped around silently)."""
    view = PolytopeView([[10000, 10001, 3]], (10, 10, 10))
    assert max(abs(v) for v in view._inverse.solvability((2 ** 53 - 1,)).particular) > 2 ** 63
    assert view.set_beta((2 ** 53 - 1,)) and view.error == "" and "Sigma(beta) is empty" in view.status
    view = PolytopeView(*FIG4, beta=(3,))
    alpha = view.panels["alpha"]
    inside, outside = offsets(alpha, "alpha-points"), offsets(alpha, "alpha-outside")
    # K W, W = [[1, 10**15], [0, 1]]: entries near the 2**53 - 1 the pictures draw exactly (larger are refused)
    huge = [[row[0], row[0] * 10 ** 15 + row[1]] for row in view.kernel.tolist()]
    assert max(abs(v) for row in huge for v in row) > 2 ** 50
    assert view.set_kernel(huge) and view.error == ""
    assert offsets(alpha, "alpha-points") == inside and offsets(alpha, "alpha-outside") == outside
    solutions = tab.IntegerSolutions((3, 0, 0), view.kernel)
    assert [solutions.point(z) for z in view.points] == view.alphas
    assert set(view.alphas) == brute_alphas(*FIG4, (3,)) and len(view.alphas) == 15

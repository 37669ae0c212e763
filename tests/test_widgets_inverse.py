"""Drive the inverse-accumulation widgets (Pearlmutter & Siskind) from Python and check what they show
against closed forms (eq. 2.6f), the worked numbers of the notes, numpy.linalg.solve on a
finite-difference Jacobian, and a brute-force count of live values."""

import math
from itertools import permutations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensoradbook import inverse as ia
from tensoradbook.widgets import LumpExplorer, NewtonDemo, RegisterMachine, StepInverse
from tensoradbook.widgets.inverse import (FIG2_PRESETS, LUMP_PRESETS, MODE_NAMES, NEWTON_PRESETS,
                                          NEWTON_TOL, parse_vector)

PNG = b"\x89PNG\r\n\x1a\n"
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                           HealthCheck.function_scoped_fixture])
PRODUCTS, TRANSCENDENTAL = FIG2_PRESETS


def fd_jacobian(program, x, h=1e-6):
    """Central differences of the primal run: an oracle that never touches the sweeps."""
    x = np.asarray(x, dtype=float)
    return np.column_stack([(ia.run(program, x + h * e) - ia.run(program, x - h * e)) / (2 * h)
                            for e in np.eye(program.n)])


def expected_product(mode, J, seed):
    return {"jvp": lambda: J @ seed, "vjp": lambda: J.T @ seed,
            "forward_inverse": lambda: np.linalg.solve(J.T, seed),
            "reverse_inverse": lambda: np.linalg.solve(J, seed)}[mode]()


# -- StepInverse -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def step_widget():
    return StepInverse()


partial = st.floats(-2, 2, allow_nan=False).filter(lambda v: abs(v) > 1e-3)


@SETTINGS
@given(a=partial, b=st.floats(-2, 2, allow_nan=False))
def test_step_matrices_are_the_closed_forms_of_eq_2_6(step_widget, a, b):
    assert step_widget.set_partials(a, b) and step_widget.error == ""
    m = step_widget.matrices
    J = np.array([[a, b], [0, 1]])
    np.testing.assert_allclose(m["J"], J, atol=1e-12)
    np.testing.assert_allclose(m["J^T"], J.T, atol=1e-12)
    np.testing.assert_allclose(m["J^-1"], np.linalg.inv(J), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(m["J^-T"], np.linalg.inv(J).T, rtol=1e-10, atol=1e-12)
    # the inverse keeps the sparsity of the matrix (eq. 2.6f): zero below the diagonal, like J
    assert m["J^-1"][1, 0] == 0 and m["J^-T"][0, 1] == 0
    assert step_widget.condition == pytest.approx(np.linalg.cond(J), rel=1e-9)
    assert "det J = a = " in step_widget.status


def test_step_at_a_zero_has_no_inverse_and_recovers(step_widget):
    assert step_widget.set_partials(0.0, 1.5)
    assert step_widget.matrices["J^-1"] is None and step_widget.matrices["J^-T"] is None
    assert step_widget.condition == math.inf
    assert "not invertible" in step_widget.status and "diagonal partial" in step_widget.status
    assert "do not exist" in step_widget.latex.value
    singular_picture = bytes(step_widget.graphs.value)
    assert singular_picture.startswith(PNG) and bytes(step_widget.limit.value).startswith(PNG)
    assert step_widget.set_partials(0.5, 1.5)
    np.testing.assert_allclose(step_widget.matrices["J^-1"], [[2, -3], [0, 1]])
    assert bytes(step_widget.graphs.value) != singular_picture


def test_step_as_a_approaches_zero_the_inverse_grows_like_one_over_a(step_widget):
    sizes = []
    for a in (1.0, 0.1, 0.01):
        step_widget.set_partials(a, 1.0)
        sizes.append(np.abs(step_widget.matrices["J^-1"]).max())
    assert sizes == pytest.approx([1.0, 10.0, 100.0])


def test_step_sliders_and_bad_input(step_widget):
    step_widget.set_partials(1.0, 1.0)
    step_widget.sliders["a"].value = -0.5
    assert step_widget.a == -0.5 and step_widget.matrices["J^-1"][0, 0] == pytest.approx(-2)
    step_widget.b = 2.0
    assert step_widget.sliders["b"].value == 2.0
    for bad, message in (("x", "a must be a number"), (math.nan, "finite"), (True, "a must be a number")):
        assert step_widget.set_partials(bad, 1.0) is False and message in step_widget.error
        assert step_widget.a == -0.5 and step_widget.b == 2.0
    assert step_widget.set_partials(3.0, 1.0) and step_widget.error == ""
    assert step_widget.sliders["a"].max >= 3.0  # a value outside the slider's range widens it


# -- RegisterMachine -------------------------------------------------------------------------------

@pytest.fixture
def machine():
    return RegisterMachine()


@pytest.mark.parametrize("preset, mode, seed, expected", [
    (PRODUCTS, "reverse_inverse", (1, 1, 1), (-1 / 3, 1, -2 / 3)),
    (PRODUCTS, "forward_inverse", (1, 1, 1), (-1 / 2, 1 / 3, 1 / 6)),
    (PRODUCTS, "reverse_inverse", (1, 0, 0), (1 / 3, 0, -5 / 6)),
    (PRODUCTS, "forward_inverse", (1, 0, 0), (1 / 3, -2 / 3, 0)),
    (PRODUCTS, "reverse_inverse", (0, 0, 1), (0, 0, 1 / 6)),
    (PRODUCTS, "forward_inverse", (0, 0, 1), (-5 / 6, 0, 1 / 6)),
    (TRANSCENDENTAL, "reverse_inverse", (1, 1, 1), (-1, 1, (1 - math.cos(2)) / 3)),
    (TRANSCENDENTAL, "forward_inverse", (1, 1, 1), (1 - math.cos(2) / 3, -1, 1 / 3)),
])
def test_worked_numbers_of_the_notes(machine, preset, mode, seed, expected):
    machine.preset = preset
    machine.mode = mode
    assert machine.set_seed(seed) and machine.error == ""
    np.testing.assert_allclose(machine.result, expected, atol=1e-12)
    machine.step = machine.n_steps - 1
    assert "agrees with numpy.linalg.solve" in machine.summary.value


@SETTINGS
@given(x=st.lists(st.floats(0.5, 3), min_size=3, max_size=3),
       seed=st.lists(st.floats(-2, 2), min_size=3, max_size=3),
       mode=st.sampled_from(list(MODE_NAMES)), preset=st.sampled_from(list(FIG2_PRESETS)))
def test_every_mode_agrees_with_a_finite_difference_jacobian(x, seed, mode, preset):
    machine = RegisterMachine(preset=preset, mode=mode, x=x, seed=seed)
    J = fd_jacobian(machine.program, x)
    expected = expected_product(mode, J, np.array(seed))
    np.testing.assert_allclose(machine.result, expected, rtol=1e-6, atol=1e-6 * (1 + np.abs(expected).max()))
    assert machine.check[1]


@pytest.mark.parametrize("mode", list(MODE_NAMES))
def test_stepping_through_a_sweep_shows_registers_and_tape(machine, mode):
    machine.mode = mode
    T, reverse = len(machine.program), mode in ("vjp", "reverse_inverse")
    assert machine.n_steps == (2 * T + 2 if reverse else T + 1)
    primal = ia.run(machine.program, machine.x)
    tapes, phases = [], []
    for k in range(machine.n_steps):
        machine.step = k
        state = machine.state
        phases.append(state["phase"])
        tapes.append(state["tape"])
        assert f"step {k} of {machine.n_steps - 1}" in machine.heading.value
        if reverse and state["phase"] in ("start", "primal"):
            assert state["derivative"] is None and "—" in machine.tables.value
    np.testing.assert_allclose(state["primal"], primal)
    np.testing.assert_allclose(state["derivative"], machine.result)
    if reverse:  # the primal pushes one entry per step, the sweep pops them in reverse order
        assert phases == ["start"] + ["primal"] * T + ["seed"] + ["sweep"] * T
        assert tapes == list(range(T + 1)) + list(range(T, -1, -1))
        assert machine.sweep.tape_bytes > 0
    else:
        assert phases == ["start"] + ["sweep"] * T and set(tapes) == {0}
        assert "Tape:</b> none" in machine.tables.value and machine.sweep.tape_bytes == 0


def test_each_sweep_step_shows_the_rule_with_numbers(machine):
    machine.mode = "reverse_inverse"
    machine.step = machine.n_steps - 1  # the last step undoes step 1: v[0] = (v[0] - b v[1]) / a
    assert "v[0] ← (v[0] − b·v[1]) / a = (1 − 2·1) / 3 = -0.3333" in machine.heading.value
    machine.mode = "jvp"
    machine.step = 2
    assert "v[2] ← a·v[2] + b·v[0] = 6·1 + 5·5 = 31" in machine.heading.value


def test_machine_buttons_and_bad_input(machine):
    buttons = machine.buttons
    assert buttons["First"].disabled and not buttons["Forward"].disabled
    buttons["Forward"].click()
    assert machine.step == 1
    buttons["Last"].click()
    assert machine.step == machine.n_steps - 1 and buttons["Forward"].disabled
    result = machine.result.copy()
    assert machine.set_point("1, 2") is False and "expected 3 numbers" in machine.error
    assert machine.set_seed("a, 1, 2") is False and "entry 0 is 'a'" in machine.error
    machine.preset = TRANSCENDENTAL
    assert machine.set_point("-1e9, 0, 1") is False and "diagonal partial" in machine.error
    np.testing.assert_allclose(machine.x, [0, 1, 1])  # the last good point stays
    machine.entries["seed"].value = "1, 0, 0"      # typing into the entry
    assert machine.error == "" and machine.seed.tolist() == [1, 0, 0]
    assert machine.set_preset("nonsense") is False and "unknown program" in machine.error
    assert result.shape == (3,)


@pytest.mark.parametrize("text, expected", [("2, 3, 5", [2, 3, 5]), ("(1 -2 0.5)", [1, -2, 0.5]),
                                            ([1, 2, 3], [1, 2, 3]), ("[0; 1e-3; 4]", [0, 1e-3, 4])])
def test_parse_vector(text, expected):
    assert parse_vector(text, 3, "x").tolist() == expected


# -- LumpExplorer ----------------------------------------------------------------------------------

# The two-chains program's data-flow graph by hand: vertex -> the values it reads.
TWO_CHAINS = {"t1": ("x0",), "t2": ("x1",), "s1": ("x0", "t1"), "s2": ("x1", "t2"), "s3": ("s1", "t1"),
              "s4": ("s2", "t2")}
RESULTS = {"s3", "s4"}


def brute_live(order):
    """Live values after each vertex: those made (inputs count) and still read later, or results."""
    made, counts = ["x0", "x1"], []
    for i, v in enumerate(order):
        made.append(v)
        later = {p for w in order[i + 1:] for p in TWO_CHAINS[w]}
        counts.append(sum(1 for value in made if value in later or value in RESULTS))
    return counts


def topological(order):
    seen = {"x0", "x1"}
    for v in order:
        if not set(TWO_CHAINS[v]) <= seen:
            return False
        seen.add(v)
    return True


TOPOLOGICAL_ORDERS = [order for order in permutations(TWO_CHAINS) if topological(order)]


@pytest.fixture(scope="module")
def lumps():
    return LumpExplorer()


def test_fig4_program_order_is_one_lump_greedy_two(lumps):
    assert lumps.set_order("program") and lumps.program.lump_sizes == (2,)
    assert lumps.set_order("greedy") and lumps.program.lump_sizes == (1, 1)
    assert lumps.order == ("t1", "s1", "s3", "t2", "s2", "s4")
    assert "2 lumps" in lumps.summary.value and "agrees" in lumps.summary.value
    assert bytes(lumps.image.value).startswith(PNG)


@SETTINGS
@given(order=st.sampled_from(TOPOLOGICAL_ORDERS))
def test_live_counts_and_lumps_match_brute_force(lumps, order):
    lumps.preset = "two chains (Fig. 4)"
    assert lumps.set_order(" ".join(order)) and lumps.order == order
    live = brute_live(order)
    assert list(lumps.program.live) == live
    cuts = [0] + [i + 1 for i, count in enumerate(live) if count == 2]
    assert [int(c) for c in lumps.program.cuts] == cuts
    # a lump writes as many registers as it leaves new live values
    sizes = [max(1, len({v for v in order[b:e] if v in RESULTS or any(v in TWO_CHAINS[w] for w in order[e:])}))
             for b, e in zip(cuts, cuts[1:])]
    assert list(lumps.program.lump_sizes) == sizes
    assert lumps.check
    assert lumps.entry.value == " ".join(order)


def test_moves_and_refused_orders_keep_the_last_good_one(lumps):
    lumps.preset = "two chains (Fig. 4)"
    lumps.set_order("program")
    assert lumps.move("s1", -3) is False and "s1 comes before t1" in lumps.error
    assert lumps.order == ("t1", "t2", "s1", "s2", "s3", "s4")
    assert lumps.move("t2", 1) and lumps.order == ("t1", "s1", "t2", "s2", "s3", "s4")
    assert lumps.move("t2", 1) is False and "s2 comes before t2" in lumps.error
    assert lumps.set_order("t1 s1 nonsense") is False and "'nonsense' is not a vertex" in lumps.error
    assert lumps.set_order(["t1", "s1"]) is False and "missing" in lumps.error
    assert lumps.move("zz", 1) is False and "'zz' is not a vertex" in lumps.error
    lumps.entry.value = "t1 t2 s1 s3 s2 s4"  # typing into the entry
    assert lumps.error == "" and lumps.program.lump_sizes == (2,)


@pytest.mark.parametrize("preset", list(LUMP_PRESETS))
def test_every_preset_inverts_correctly_in_both_orders(lumps, preset):
    lumps.preset = preset
    for order in ("program", "greedy"):
        assert lumps.set_order(order)
        assert lumps.check
        J = fd_jacobian(lumps.program, lumps.x)
        v = np.ones(lumps.program.n)
        np.testing.assert_allclose(ia.reverse_inverse(lumps.program, lumps.x, v), np.linalg.solve(J, v), rtol=1e-6)


def test_the_dense_matvec_needs_one_lump_of_size_n(lumps):
    lumps.preset = "dense mat-vec (counter-example)"
    for order in ("program", "greedy"):
        lumps.set_order(order)
        assert lumps.program.lump_sizes == (3,)


# -- NewtonDemo ------------------------------------------------------------------------------------

@pytest.fixture
def newton():
    return NewtonDemo()


def exact_newton(x0, steps):
    """Newton on u^2 + v^2 = 4, u = v with the Jacobian written by hand."""
    x, out = np.array(x0, dtype=float), []
    for _ in range(steps):
        out.append(x.copy())
        u, v = x
        F = np.array([u * u + v * v - 4, u - v])
        x = x - np.linalg.solve([[2 * u, 2 * v], [1, -1]], F)
    return np.array(out)


@pytest.fixture(scope="module")
def shared_newton():
    return NewtonDemo()


@SETTINGS
@given(x0=st.tuples(st.floats(0.3, 3), st.floats(-3, 3)).filter(lambda p: abs(p[0] + p[1]) > 0.3))
def test_reverse_inverse_newton_follows_exact_newton(shared_newton, x0):
    assert shared_newton.set_start(x0)
    result = shared_newton.inverse
    assert result.converged and result.residuals[-1] <= NEWTON_TOL
    u, v = result.x
    assert abs(u - v) < 1e-9 and abs(u * u + v * v - 4) < 1e-9
    steps = min(len(result.iterates), 4)
    np.testing.assert_allclose(result.iterates[:steps], exact_newton(x0, steps), rtol=1e-8, atol=1e-10)


def test_finite_differences_converge_slower_with_a_large_step(newton):
    newton.h = 1e-1
    assert newton.finite_differences.converged
    assert newton.finite_differences.iterations > newton.inverse.iterations
    rates = newton.finite_differences.residuals[1:] / newton.finite_differences.residuals[:-1]
    assert rates[-3] > 1e-3  # linear, not quadratic, near the root
    newton.h = 1e-7
    assert newton.finite_differences.iterations <= newton.inverse.iterations + 1
    assert "finite differences (h = 1e-07)" in newton.status


@pytest.mark.parametrize("preset", list(NEWTON_PRESETS))
def test_every_system(newton, preset):
    assert newton.set_preset(preset)
    function, start = NEWTON_PRESETS[preset]
    assert newton.x0.tolist() == list(start) and len(newton.sliders) == len(start)
    if "no real root" in preset:
        assert not newton.inverse.converged and "did not converge" in newton.status
    else:
        program = ia.trace(function, n=len(start))
        assert newton.inverse.converged and np.linalg.norm(ia.run(program, newton.inverse.x)) <= NEWTON_TOL
    assert bytes(newton.image.value).startswith(PNG)


def test_newton_controls_and_bad_input(newton):
    newton.sliders[0].value = 2.0
    assert newton.x0.tolist() == [2.0, 0.5] and newton.inverse.iterates[0].tolist() == [2.0, 0.5]
    assert newton.set_start("1") is False and "expected 2 numbers" in newton.error
    assert newton.x0.tolist() == [2.0, 0.5]
    newton.h = 2.0
    assert "h must be a number between 0 and 1" in newton.error and newton.h == 1e-3
    assert newton.set_preset("nope") is False and "unknown system" in newton.error
    newton.set_preset("x² + 1 = 0 (no real root)", x0=[0.0])
    assert "diagonal partial" in newton.status and not newton.inverse.converged

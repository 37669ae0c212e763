"""Every public setter and control callback of every widget in widgets/ (chapters 4a, 5, 6, 8 and 9),
driven with bad values: nothing raises, the widget shows the error in its error box, keeps
its last good state, and the next good value works and clears the error."""

import html
import math
from dataclasses import dataclass, field
from fractions import Fraction
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensoradbook.widgets import (ChainTable, DerivationExplorer, GradientLab, KernelLattice, LumpExplorer,
                                  MemoryBudget, NewtonDemo, PolytopeView, RegisterMachine, ScheduleView, SmithStepper,
                                  StepInverse, TwoFactorExplorer)
from tensoradbook import chaining as jc
from tensoradbook.widgets.chaining import CHAIN_PRESETS, SECTION_5
from alarm import time_limit

# Bad values by name; each setter below names those that are legal for it.
BAD = {
    "10**40": 10 ** 40, "2**63": 2 ** 63, "10**400": 10 ** 400, "-1": -1, "0": 0, "None": None, "'a'": "a",
    "''": "", "nan": math.nan, "inf": math.inf, "1.5": 1.5, "True": True, "[1]": [1], "{}": {},
    "object()": object(), "b'x'": b"x",
}
STEP_LEGAL = {"10**40", "2**63", "10**400", "-1", "0"}  # a step is clamped to 0 .. n_steps - 1
CHAIN_5 = CHAIN_PRESETS[SECTION_5][0]  # the sec. 5 chain file
FUNCTION, SHAPES = "f[i] = x[i] ** 2", {"f": (3,), "x": (3,)}


@dataclass
class Setter:
    call: Callable          # (widget, value) -> what the setter returns (None for a property)
    good: Callable          # widget -> a good call that returns True (or None for a property)
    legal: set = field(default_factory=set)   # names of BAD that this setter accepts
    extra: tuple = ()       # more values it must refuse

    def bad_values(self):
        return [value for name, value in BAD.items() if name not in self.legal] + list(self.extra)


def assign(attribute):
    return lambda widget, value: setattr(widget, attribute, value)


def argument_x(widget) -> None:
    assert widget.set_function(FUNCTION, SHAPES)
    widget.argument = "x"


CHAIN_SETTERS = {
    "set_chain": Setter(lambda w, v: w.set_chain(v), lambda w: w.set_chain(CHAIN_5),
                        extra=([(10 ** 30, 10 ** 30, 10 ** 30)], "1\n١٢ 3 4\n", "1\n3 3 " + "9" * 5000 + "\n",
                               [(1, 1, 1)] * 11, "2\n3 3 29\n1 4 14\n")),
    "set_memory": Setter(lambda w, v: w.set_memory(v), lambda w: w.set_memory(50),
                         legal={"10**40", "2**63", "10**400", "0", "None", "''"}, extra=("١٢", "-5", "5.0")),
    "set_rule": Setter(lambda w, v: w.set_rule(v), lambda w: w.set_rule("exact"), extra=("greedy",)),
    "set_preset": Setter(lambda w, v: w.set_preset(v), lambda w: w.set_preset("sec. 5 example"), extra=("nope",)),
}
FUNCTION_SETTERS = {
    "set_function(text)": Setter(lambda w, v: w.set_function(v, SHAPES), lambda w: w.set_function(FUNCTION, SHAPES),
                                 extra=("f[i] = x[i", "f[i] = y[i]")),
    "set_function(shapes)": Setter(lambda w, v: w.set_function(FUNCTION, v), lambda w: w.set_function(FUNCTION, SHAPES),
                                   extra=({"f": (10 ** 20,), "x": (10 ** 20,)}, {"f": (3,), "x": (3.5,)},
                                          {"f": 3, "x": 3}, "f=3, x=١٢", {"f": (0,), "x": (3,)},
                                          {"f": (5000, 5000), "x": (5000, 5000)}, "f=4, x=3")),
    "set_preset": Setter(lambda w, v: w.set_preset(v), lambda w: w.set_preset("matrix product"), extra=("nope",)),
}

# widget -> (factory, snapshot of its state, {setter: Setter})
WIDGETS = {
    "SmithStepper": (SmithStepper, lambda w: (w.result.A.tolist(), w.step), {
        "set_matrix": Setter(lambda w, v: w.set_matrix(v), lambda w: w.set_matrix("2 4 4; -6 6 12; 10 -4 -16"),
                             extra=([[1.5]], [[1, 2], [3]], [[]], "١٢ 3", [[1] * 9], "[[", "9" * 5000)),
        "step": Setter(assign("step"), lambda w: setattr(w, "step", 1), legal=STEP_LEGAL),
    }),
    "KernelLattice": (lambda: KernelLattice([[1, -2]], (7, 5), beta=(-1,)),
                      lambda w: (w.beta, w.kernel.tolist(), w.alphas), {
        "set_beta": Setter(lambda w, v: w.set_beta(v), lambda w: w.set_beta((-1,)), legal={"-1", "0", "[1]"},
                           extra=((1, 2), [Fraction(1, 2)], (2 ** 53,))),
        "beta": Setter(assign("beta"), lambda w: setattr(w, "beta", (-1,)), legal={"-1", "0", "[1]"}),
        "set_kernel": Setter(lambda w, v: w.set_kernel(v), lambda w: w.set_kernel([[2], [1]]),
                             extra=([[4], [2]], [[1], [1]], "x y", "[[" * 300)),
    }),
    "DerivationExplorer": (lambda: DerivationExplorer(preset="matrix product"),
                           lambda w: (str(w.function), w.argument), {
        **FUNCTION_SETTERS,
        "argument": Setter(assign("argument"), argument_x, extra=("q",)),
    }),
    "GradientLab": (lambda: GradientLab(preset="matrix product", target="numpy"),
                    lambda w: (w.shapes, w.function.name, w.scale, w.target), {
        **FUNCTION_SETTERS,
        "set_scale": Setter(lambda w, v: w.set_scale(v), lambda w: w.set_scale(1), extra=(3, 64)),
        "scale": Setter(assign("scale"), lambda w: setattr(w, "scale", 1)),
        "set_target": Setter(lambda w, v: w.set_target(v), lambda w: w.set_target("numpy"), extra=("fortran",)),
        "target": Setter(assign("target"), lambda w: setattr(w, "target", "numpy")),
        "show_source": Setter(assign("show_source"), lambda w: setattr(w, "show_source", False), legal={"True"},
                              extra=(np.array([True, False]),)),
    }),
    "StepInverse": (StepInverse, lambda w: (w.a, w.b), {
        "set_partials(a)": Setter(lambda w, v: w.set_partials(v, 1.0), lambda w: w.set_partials(1.5, 1.0),
                                  legal={"10**40", "2**63", "-1", "0", "1.5"}, extra=(1e-200, 1e101, -math.inf)),
        "set_partials(b)": Setter(lambda w, v: w.set_partials(1.5, v), lambda w: w.set_partials(1.5, 1.0),
                                  legal={"10**40", "2**63", "-1", "0", "1.5"}, extra=(1e101,)),
        "a": Setter(assign("a"), lambda w: setattr(w, "a", 1.5), legal={"10**40", "2**63", "-1", "0", "1.5"}),
        "b": Setter(assign("b"), lambda w: setattr(w, "b", 1.0), legal={"10**40", "2**63", "-1", "0", "1.5"}),
    }),
    "RegisterMachine": (RegisterMachine, lambda w: (w.preset, w.mode, w.x.tolist(), w.seed.tolist(), w.step), {
        "set_point": Setter(lambda w, v: w.set_point(v), lambda w: w.set_point("2, 3, 5"),
                            extra=("1e400, 1, 1", "١, 2, 3", "nan, 1, 1", [1e300, 1e300, 1e300], "1, 2")),
        "set_seed": Setter(lambda w, v: w.set_seed(v), lambda w: w.set_seed("1, 1, 1"),
                           extra=("1_0, 1, 1", [1, 2, 3, 4])),
        "set_preset": Setter(lambda w, v: w.set_preset(v), lambda w: w.set_preset("p = x₁x₂, q = z₁x₃"),
                             extra=("nope",)),
        "preset": Setter(assign("preset"), lambda w: setattr(w, "preset", "p = x₁x₂, q = z₁x₃")),
        "mode": Setter(assign("mode"), lambda w: setattr(w, "mode", "reverse_inverse"), extra=("jvp2",)),
        "step": Setter(assign("step"), lambda w: setattr(w, "step", 1), legal=STEP_LEGAL),
    }),
    "NewtonDemo": (NewtonDemo, lambda w: (w.preset, w.x0.tolist(), w.h), {
        "set_start": Setter(lambda w, v: w.set_start(v), lambda w: w.set_start("1, 0.5"),
                            extra=("1e400, 1", "1, 2, 3")),
        "set_preset": Setter(lambda w, v: w.set_preset(v),
                             lambda w: w.set_preset("circle ∩ line: u² + v² = 4, u = v"), extra=("nope",)),
        "preset": Setter(assign("preset"), lambda w: setattr(w, "preset", "circle ∩ line: u² + v² = 4, u = v")),
        "h": Setter(assign("h"), lambda w: setattr(w, "h", 1e-3), extra=(1.0, -1e-3)),
    }),
    "LumpExplorer": (LumpExplorer, lambda w: (w.preset, w.order), {
        "set_order": Setter(lambda w, v: w.set_order(v), lambda w: w.set_order("program"),
                            extra=("s1 t1 t2 s2 s3 s4", ["t1", "t1"])),
        "order": Setter(assign("order"), lambda w: setattr(w, "order", "program")),
        "move(vertex)": Setter(lambda w, v: w.move(v, 1), lambda w: w.set_order("program")),
        "move(offset)": Setter(lambda w, v: w.move("t2", v), lambda w: w.set_order("program"),
                               legal={"10**40", "2**63", "10**400", "-1", "0"}),
        "set_preset": Setter(lambda w, v: w.set_preset(v), lambda w: w.set_preset("two chains (Fig. 4)"),
                             extra=("nope",)),
    }),
    "TwoFactorExplorer": (TwoFactorExplorer, lambda w: w.sizes, {
        "set_sizes(n1)": Setter(lambda w, v: w.set_sizes(n1=v), lambda w: w.set_sizes(n1=2), extra=(10 ** 9 + 1,)),
        "set_sizes(e2)": Setter(lambda w, v: w.set_sizes(e2=v), lambda w: w.set_sizes(e2=100)),
        "set_preset": Setter(lambda w, v: w.set_preset(v), lambda w: w.set_preset("sec. 3 case 1: n₁=2, m₁=4, m₂=8"),
                             extra=("nope",)),
    }),
    "ChainTable": (ChainTable, lambda w: (w.chain, w.memory, w.rule, w.plan.notation, w.step, w.selected), {
        **CHAIN_SETTERS,
        "select(j)": Setter(lambda w, v: w.select(v, 1), lambda w: w.select(3, 1)),
        "select(i)": Setter(lambda w, v: w.select(3, v), lambda w: w.select(3, 1)),
        "step": Setter(assign("step"), lambda w: setattr(w, "step", 2), legal=STEP_LEGAL),
    }),
    "ScheduleView": (ScheduleView, lambda w: (w.chain, w.memory, w.rule, w.plan.notation), CHAIN_SETTERS),
    "MemoryBudget": (MemoryBudget, lambda w: (w.chain, w.memory, w.exact.fma, w.paper.fma),
                     {name: CHAIN_SETTERS[name] for name in ("set_chain", "set_memory", "set_preset")}),
}
CASES = [(widget, setter) for widget, (_, _, setters) in WIDGETS.items() for setter in setters]


@pytest.fixture(scope="module")
def widgets():
    """One instance of each widget, made when first asked for."""
    made = {}

    def get(name):
        if name not in made:
            made[name] = WIDGETS[name][0]()
        return made[name]
    return get


def descendants(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from descendants(child)


def shown_error(widget) -> str:
    """The error the widget shows: not empty, in its error box, and that box is part of the widget."""
    text = widget.errors.text
    assert text, "no error is shown"
    assert html.escape(text.splitlines()[0]) in widget.errors.value
    assert any(part is widget.errors for part in descendants(widget))
    return text


def apply_good(widget, setter: Setter) -> None:
    assert setter.good(widget) in (True, None)
    assert widget.errors.text == ""


def value_id(value) -> str:
    return next((name for name, bad in BAD.items() if bad is value), repr(value)[:30])


@pytest.mark.parametrize("widget_name, setter_name", CASES, ids=[f"{w}.{s}" for w, s in CASES])
def test_bad_values_are_shown_inline_and_the_widget_keeps_working(widgets, widget_name, setter_name):
    widget = widgets(widget_name)
    _, snapshot, setters = WIDGETS[widget_name]
    setter = setters[setter_name]
    apply_good(widget, setter)
    good_state = snapshot(widget)
    for value in setter.bad_values():
        result = setter.call(widget, value)  # never raises
        assert result in (False, None), f"{value_id(value)} was accepted"
        error = shown_error(widget)
        assert "Traceback" not in error
        assert snapshot(widget) == good_state, f"{value_id(value)} changed the state"
        apply_good(widget, setter)
        assert snapshot(widget) == good_state


values = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12), st.fractions(),
                   st.lists(st.integers(-3, 10), max_size=4), st.tuples(st.floats(), st.floats()),
                   st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(CASES), value=values)
def test_any_value_is_taken_or_refused_inline(widgets, case, value):
    widget_name, setter_name = case
    widget = widgets(widget_name)
    _, snapshot, setters = WIDGETS[widget_name]
    setter = setters[setter_name]
    apply_good(widget, setter)
    good_state = snapshot(widget)
    result = setter.call(widget, value)
    if result is False or widget.errors.text:  # refused: why is shown, the last good state stays
        shown_error(widget)
        assert snapshot(widget) == good_state
    apply_good(widget, setter)


BAD_TEXT = ["garbage", "١٢", "9" * 5000, "1e400", "[" * 300, "nan", "-1", "2**63", ""]
# Text boxes and what typing into them calls.
CONTROLS = [
    ("SmithStepper", lambda w: w.entry),
    ("KernelLattice", lambda w: w.kernel_entry),
    ("DerivationExplorer", lambda w: w.function_entry),
    ("DerivationExplorer", lambda w: w.shapes_entry),
    ("GradientLab", lambda w: w.function_entry),
    ("GradientLab", lambda w: w.shapes_entry),
    ("RegisterMachine", lambda w: w.entries["x"]),
    ("RegisterMachine", lambda w: w.entries["seed"]),
    ("LumpExplorer", lambda w: w.entry),
    ("ChainTable", lambda w: w.entry),
    ("ChainTable", lambda w: w.memory_entry),
    ("ScheduleView", lambda w: w.memory_entry),
    ("MemoryBudget", lambda w: w.entry),
]


@pytest.mark.parametrize("widget_name, control", CONTROLS, ids=[f"{w}-{k}" for k, (w, _) in enumerate(CONTROLS)])
def test_typing_bad_text_into_a_box_is_shown_inline(widgets, widget_name, control):
    widget = widgets(widget_name)
    _, snapshot, setters = WIDGETS[widget_name]
    apply_good(widget, next(iter(setters.values())))  # the box shows what it was last set to
    good_state = snapshot(widget)
    box = control(widget)
    typed = box.value
    for text in BAD_TEXT:
        box.value = text  # the box's callback runs: it must not raise
        if widget.errors.text:
            shown_error(widget)
            assert snapshot(widget) == good_state, text
        box.value = typed
        assert widget.errors.text == "" and snapshot(widget) == good_state


def test_sliders_and_buttons_keep_working_after_bad_input(widgets):
    lattice = widgets("KernelLattice")
    assert not lattice.set_beta(10 ** 400) and lattice.error
    lattice.sliders[0].value = 0  # a slider move is a good value: it clears the error
    assert lattice.beta == (0,) and lattice.error == ""
    table = widgets("ChainTable")
    assert table.set_chain(CHAIN_5)
    assert not table.set_memory("lots")
    table.buttons["Back"].click()
    assert table.error == "" and table.step == 1
    stepper = widgets("SmithStepper")
    stepper.step = None
    assert "step must be an integer, got None" in stepper.error
    stepper.buttons["Last"].click()
    assert stepper.step == stepper.n_steps - 1 and stepper.error == ""


# -- the reported cases ------------------------------------------------------------------------------


def test_memory_budget_refuses_a_chain_of_huge_sizes():
    budget = MemoryBudget()
    assert not budget.set_chain([(10 ** 30, 10 ** 30, 10 ** 30)])
    assert "m of F_1 is 1,000,000,000,000,000,000,000,000,000,000; these views take sizes and edge counts up to " \
           "1,000,000,000" in budget.error
    chain = jc.Chain([(10 ** 9, 10 ** 9, 10 ** 9)] * 8)  # the largest sizes: costs near 2**63
    assert budget.set_chain(chain) and budget.error == ""
    assert budget.exact.fma == jc.optimize(chain, budget.memory).fma


def test_two_factor_explorer_refuses_huge_sizes_and_draws_costs_beyond_int64():
    explorer = TwoFactorExplorer()
    assert not explorer.set_sizes(n1=10 ** 40)
    assert "n₁ is 10000000000000000000000000000000000000000; these views take sizes" in explorer.error.replace(",", "")
    # the largest sizes: the bars of the dense products stand for ~10**27 fma, beyond int64
    assert explorer.set_sizes(n1=10 ** 9, m1=10 ** 9, m2=10 ** 9) and max(explorer.costs.values()) > 2 ** 63


def test_step_inverse_refuses_a_partial_beyond_float():
    step = StepInverse()
    assert not step.set_partials(10 ** 400, 1)
    assert "a must be a finite number, got 100000000000000000...0000000000000000000" in step.error
    assert step.a == 1.5 and step.set_partials(2.0, 1) and step.error == ""


def test_schedule_view_takes_a_tape_bound_beyond_int64_as_unbounded():
    view = ScheduleView()
    assert view.set_memory("9223372036854775808") and view.error == ""
    assert view.memory == 2 ** 63 and view.plan.fma == 56 and view.plan.feasible


def test_derivation_explorer_shows_absurd_shapes_inline():
    explorer = DerivationExplorer(preset="matrix product")
    assert not explorer.set_function("f[i] = x[i]", {"f": (10 ** 20,), "x": (10 ** 20,)})
    assert explorer.error and str(explorer.function).startswith("c[i; j]")
    assert not explorer.set_function("f[i] = x[i]", "f=100000000000000000000, x=100000000000000000000")
    assert explorer.error
    assert explorer.set_function("f[i] = x[i]", {"f": (3,), "x": (3,)}) and explorer.error == ""


def test_kernel_lattice_refuses_a_huge_box_quickly():
    with time_limit(), pytest.raises(ValueError, match="10000 x 10000 has 100000000 points, at most 10,000 can be "
                                                       "drawn"):
        KernelLattice([[2, 4]], (10000, 10000))
    assert KernelLattice([[2, 4]], (100, 100)).alphas


@pytest.mark.parametrize("view", [KernelLattice, PolytopeView])
def test_a_kernel_basis_too_large_to_draw_is_refused_and_the_old_one_kept(view):
    widget = view([[1, -2, -2]], (12, 5, 5))
    good = widget.kernel.tolist()
    # K W with W unimodular is a basis of the same lattice, but 10**400 cannot be placed as a float
    huge = (np.array(good, dtype=object) @ np.array([[1, 10**400], [0, 1]], dtype=object)).tolist()
    assert widget.set_kernel(huge) is False
    assert "2**53 - 1" in shown_error(widget)
    assert widget.kernel.tolist() == good
    assert widget.set_beta((4,)) is True and widget.errors.text == ""
    with pytest.raises(ValueError, match="2\\*\\*53 - 1"):
        view([[1, -2, -2]], (12, 5, 5), kernel=huge)


@pytest.mark.parametrize("widget_name", ["SmithStepper", "RegisterMachine", "ChainTable"])
def test_step_none_on_the_steppers(widgets, widget_name):
    widget = widgets(widget_name)
    widget.step = None
    assert "step must be an integer, got None" in widget.error
    widget.step = 1
    assert widget.step == 1 and widget.error == ""


def test_function_widgets_refuse_tensors_beyond_the_element_limit():
    lab = GradientLab("f[i; j] = x[i; j] * 2", {"f": (1000, 1000), "x": (1000, 1000)}, target="numpy")
    assert lab.scales == (1, 2)  # x4 would make 16,000,000 elements per tensor
    assert "f has 16000000 elements" in lab.sizes.value
    assert not lab.set_scale(16) and "may have at most 10,000,000" in lab.error and lab.scale == 1
    explorer = DerivationExplorer(FUNCTION, SHAPES)
    assert not explorer.set_function(FUNCTION, {"f": (4000, 4000), "x": (4000, 4000)})
    assert "f has 16000000 elements" in explorer.error and explorer.function.shapes["f"] == (3,)

"""Drive the Jacobian-chaining widgets from Python and check what they show against the paper's printed
numbers (Naumann, secs. 3-6), the core and brute-force enumeration of every schedule."""

import colorsys
import html
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from matplotlib.colors import to_rgb

from tensoradbook import chaining as jc
from tensoradbook.widgets import ChainTable, MemoryBudget, ScheduleView, TwoFactorExplorer
from tensoradbook.widgets.chaining import (CHAIN_PRESETS, NOT_MONOTONE, SECTION_4, SECTION_5, SECTION_6,
                                           TWO_FACTOR_PRESETS)

PNG = b"\x89PNG\r\n\x1a\n"
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Sec. 3: (n1, m1, m2) with |E1| = |E2| = 100 -> the costs of schedules a..h as the paper prints them.
SECTION_3 = {
    (2, 4, 8): [400, 600, 1600, 1200, 864, 1264, 1064, 664],
    (4, 2, 32): [800, 600, 6400, 3400, 656, 3656, 3856, 856],
    (8, 4, 2): [1600, 1200, 400, 600, 864, 664, 1064, 1264],
    (32, 2, 4): [6400, 3400, 800, 600, 656, 856, 3856, 3656],
    (4, 2, 4): [800, 600, 800, 600, 432, 632, 832, 632],
}
# Sec. 5: what solve.exe prints for the example at Mbar = 50.
SECTION_5_TABLE = {
    (1, 1): "F_{1,1}: GxM(0); fma=87; M=0;",
    (2, 2): "F_{2,2}: MxG(0); fma=14; M=14;",
    (2, 1): "F_{2,1}: MxG(1); fma=43; M=43;",
    (3, 3): "F_{3,3}: GxM(0); fma=7; M=0;",
    (3, 2): "F_{3,2}: MxM(2); fma=27; M=14;",
    (3, 1): "F_{3,1}: MxM(2); fma=56; M=43;",
}
# Sec. 6: the cells the paper prints for the OpenFOAM chain at Mbar = 284,888.
SECTION_6_CELLS = {
    (4, 4): "F_{4,4}: MxG(0); fma=56535280; M=75280;",
    (4, 3): "F_{4,3}: MxG(3); fma=72373870; M=96370;",
    (5, 3): "F_{5,3}: GxM(4); fma=145846530; M=96370;",
    (5, 2): "F_{5,2}: MxG(2); fma=173868776; M=120716;",
    (5, 1): "F_{5,1}: MxG(1); fma=263844748; M=198888;",
    (6, 1): "F_{6,1}: GxM(5); fma=279185368; M=198888;",
}
# Sec. 4: Mbar -> (the paper's fma and M, the exact optimum's fma), the notes' table.
SECTION_4_TABLE = {56: (56, 56, 56), 55: (120, 48, 64), 47: (184, 32, 112), 31: (312, 24, 312),
                   23: (336, 16, 320), 15: (368, 8, 368), 7: (376, 0, 376)}


def picture(widget) -> bytes:
    return bytes(widget.image.value)


def plain(text: str) -> str:
    """HTML as text: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", text))


small_chains = st.integers(1, 4).flatmap(lambda q: st.lists(st.integers(1, 5), min_size=q + 1, max_size=q + 1).flatmap(
    lambda sizes: st.lists(st.integers(1, 12), min_size=q, max_size=q).map(
        lambda edges: jc.Chain([(sizes[v + 1], sizes[v], edges[v]) for v in range(q)]))))


# -- TwoFactorExplorer --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(TWO_FACTOR_PRESETS))
def test_two_factor_presets_reproduce_the_table_of_section_3(name):
    explorer = TwoFactorExplorer(preset=name)
    n1, m1, m2, e1, e2 = TWO_FACTOR_PRESETS[name]
    assert (e1, e2) == (100, 100) and explorer.preset == name and explorer.error == ""
    printed = SECTION_3[n1, m1, m2]
    assert list(explorer.costs.values()) == printed and list(explorer.costs) == list("abcdefgh")
    cheapest = min(printed)
    assert explorer.best == ["abcdefgh"[printed.index(cheapest)]]
    assert explorer.plan.fma == cheapest
    for y, bar in enumerate(explorer.bars):  # the bars are the costs, the optimum green
        assert bar.get_width() == printed[y]
        assert (to_rgb(bar.get_facecolor()) == to_rgb("#1a7f37")) == (printed[y] == cheapest)
    assert f"{cheapest:,} fma" in plain(explorer.summary.value)
    assert picture(explorer).startswith(PNG)


def test_two_factor_sliders_update_costs_picture_and_preset():
    explorer = TwoFactorExplorer()
    before = picture(explorer)
    explorer.sliders["e1"].value = 37
    assert explorer.sizes["e1"] == 37 and explorer.preset is None
    expected = jc.two_factor_schedules(2, 4, 8, 37, 100)
    assert explorer.costs == {letter: s.fma for letter, s in expected.items()}
    assert picture(explorer) != before
    explorer.set_preset(list(TWO_FACTOR_PRESETS)[4])
    assert explorer.sliders["m2"].value == 4 and explorer.best == ["e"]


@SETTINGS
@given(st.integers(1, 40), st.integers(1, 40), st.integers(1, 40), st.integers(1, 300), st.integers(1, 300))
def test_two_factor_costs_are_the_eight_schedules_of_brute_force(n1, m1, m2, e1, e2):
    explorer = TwoFactorExplorer(n1=n1, m1=m1, m2=m2, e1=e1, e2=e2)
    chain = jc.Chain([(m1, n1, e1), (m2, m1, e2)])
    every = jc.schedules(chain)  # the enumeration of all q = 2 schedules
    assert sorted(explorer.costs.values()) == sorted(s.fma for s in every)
    assert min(explorer.costs.values()) == jc.brute_force(chain).fma == explorer.plan.fma
    assert set(explorer.best) == {letter for letter, fma in explorer.costs.items() if fma == jc.brute_force(chain).fma}


def test_two_factor_bad_input_is_shown_and_the_old_sizes_stay():
    explorer = TwoFactorExplorer()
    sizes, costs = explorer.sizes, explorer.costs
    for bad, words in (({"n1": 0}, "n₁"), ({"e2": -3}, "|E₂|"), ({"m1": 2.5}, "m₁ = n₂"), ({"x": 1}, "unknown size")):
        assert not explorer.set_sizes(**bad)
        assert words in explorer.error
        assert explorer.sizes == sizes and explorer.costs == costs
    assert not explorer.set_preset("case 9")
    assert "no preset" in explorer.error
    assert explorer.set_sizes(e1=5000)  # beyond the slider: it widens
    assert explorer.error == "" and explorer.sliders["e1"].max == 5000 and explorer.sliders["e1"].value == 5000


# -- ChainTable -----------------------------------------------------------------------------------------------

def test_chain_table_reproduces_the_reference_output_of_section_5():
    table = ChainTable()  # sec. 5 example, Mbar = 50, the paper's rule
    assert table.preset == SECTION_5 and table.memory == 50 and table.rule == "paper"
    assert table.step == table.n_steps - 1 == 2 and table.selected == (3, 1)
    for (j, i), line in SECTION_5_TABLE.items():
        cell = table.plan.cell(j, i)
        assert cell.line() == line
        description = table.cells[j, i].description
        assert cell.label in description and f"fma {cell.fma:,}" in description and f"M {cell.memory:,}" in description
    assert "(F3dot I1)((I1 F2bar) F1bar)" in plain(table.heading.value)
    used = {(s.j, s.i) for s in table.plan.steps()}
    assert {cell for cell, button in table.cells.items() if button.button_style == "success"} == used - {(3, 1)}
    assert table.cells[3, 1].button_style == "info"  # selected


def test_chain_table_openfoam_cells_as_printed():
    table = ChainTable(preset=SECTION_6)
    for (j, i), line in SECTION_6_CELLS.items():
        assert table.plan.cell(j, i).line() == line
    assert (table.plan.fma, table.plan.memory) == (279185368, 198888)


def test_chain_table_fills_diagonal_by_diagonal():
    table = ChainTable()
    table.step = 0
    assert table.selected == (1, 1)
    for (j, i), button in table.cells.items():
        assert button.disabled == (j > i)
    assert table.buttons["Back"].disabled and not table.buttons["Forward"].disabled
    table.forward()
    assert table.step == 1 and table.selected == (2, 1)
    assert [cell for cell, button in table.cells.items() if not button.disabled] == \
        [cell for cell in table.cells if cell[0] - cell[1] <= 1]
    assert "Candidates for F'" in table.candidate_list.value and "2,1" in table.candidate_list.value
    table.forward(), table.forward()
    assert table.step == 2 and table.buttons["Forward"].disabled


def test_selecting_a_cell_lists_its_candidates():
    table = ChainTable()
    table.cells[2, 1].click()
    assert table.selected == (2, 1) and table.cells[2, 1].button_style == "info"
    candidates = table.plan.candidates(2, 1)
    assert table.candidates == candidates and len(candidates) == 3  # one split, MxM, GxM, MxG
    listed = plain(table.candidate_list.value)
    for c in candidates:
        assert c.label in listed and f"{c.fma:,}" in listed
    kept = [c for c in candidates if c.kept]
    assert [(c.label, c.fma, c.memory) for c in kept] == [("MxG(1)", 43, 43)]
    table.select(3, 1)  # two splits, three operations each
    assert len(table.candidates) == 6 and [c.label for c in table.candidates if c.kept] == ["MxM(2)"]
    assert "fma3,3 + fma2,1 + m3·m2·n1" in plain(table.candidate_list.value)


def test_exact_rule_lists_the_pareto_front_and_the_bound_changes_the_answer():
    table = ChainTable()
    assert table.set_memory(42)
    assert table.plan.fma == 123  # the paper's rule (sec. 5: Mbar = 42 -> 123, M = 14)
    assert table.set_rule("exact")
    assert table.plan.fma == 84 and table.plan.memory == 29  # the exact optimum under the same bound
    front = table.plan.cell(3, 1).front
    assert len(front) > 1 and "front: " in table.cells[3, 1].description
    kept = [c for c in table.candidates if c.kept]
    assert sorted((c.fma, c.memory) for c in kept) == sorted((s.fma, s.memory) for s in front)
    assert "Pareto" in plain(table.candidate_list.value)
    assert table.set_memory("")  # unlimited
    assert table.memory is None and table.plan.fma == jc.optimize(table.chain).fma


def test_chain_table_bad_input_is_shown_inline_and_the_table_keeps_working():
    table = ChainTable()
    plan = table.plan
    for call, words in ((lambda: table.set_chain("3\n3 3 29\n1 4 14\n2 1 7\n"), "line 3"),
                        (lambda: table.set_chain("2\n3 3 x\n1 3 14\n"), "line 2"),
                        (lambda: table.set_chain("9\n" + "1 1 1\n" * 9), "at most 8"),
                        (lambda: table.set_memory("lots"), "not an integer"),
                        (lambda: table.set_memory(-5), "non-negative"),
                        (lambda: table.set_rule("greedy"), "unknown rule"),
                        (lambda: table.select(4, 1), "not in the table"),
                        (lambda: table.set_preset("nope"), "no preset")):
        assert not call()
        assert words in table.error
        assert table.plan is plan
    table.step = 0
    assert not table.select(3, 1) and "not filled yet" in table.error and table.selected == (1, 1)
    assert table.set_chain("2\n4 3 10\n2 4 20\n")
    assert table.error == "" and table.chain.q == 2 and table.preset is None and table.step == 1
    assert len(table.cells) == 3 and table.selected == (2, 1)
    table.entry.value = "1\n5 2 7\n"  # typing into the box
    assert table.chain == jc.Chain([(5, 2, 7)]) and table.plan.fma == 14


# -- ScheduleView ---------------------------------------------------------------------------------------------

def luminance(colour) -> float:
    return colorsys.rgb_to_hls(*to_rgb(colour))[1]


def test_schedule_view_shows_the_section_5_optimum_and_its_baselines():
    view = ScheduleView()
    assert view.plan.notation == "(F3dot I1)((I1 F2bar) F1bar)" and view.plan.fma == 56
    assert {name: p.fma for name, p in view.baselines.items()} == {"tangent": 150, "adjoint": 100,
                                                                  "preaccumulation": 123}
    shown = plain(view.baseline_table.value)
    for number in ("56", "150", "100", "123"):
        assert number in shown
    kinds = [box["kind"] for box in view.boxes]
    assert kinds.count("adjoint") == 2 and kinds.count("tangent") == 1
    adjoint = sorted((box for box in view.boxes if box["kind"] == "adjoint"), key=lambda box: box["tape"])
    assert [box["tape"] for box in adjoint] == [14, 29]
    assert luminance(adjoint[0]["colour"]) > luminance(adjoint[1]["colour"])  # more tape, darker
    steps = plain(view.steps.value)
    assert all(step.line() in steps for step in view.plan.steps())
    assert picture(view).startswith(PNG)


def test_schedule_view_follows_the_bound_and_the_rule():
    view = ScheduleView()
    first = picture(view)
    assert view.set_memory(13)
    assert view.plan.fma == 142 and view.plan.memory == 0 and picture(view) != first
    assert all(box["kind"] != "adjoint" for box in view.boxes)
    assert "✗" in view.baseline_table.value  # homogeneous adjoint needs tape 50
    assert view.set_memory(42) and view.set_rule("paper")
    assert view.plan.fma == 123
    assert not view.set_chain("3\n1 1 1\n") and "line 1 says q = 3" in view.error and view.plan.fma == 123


@SETTINGS
@given(small_chains, st.integers(0, 30))
def test_schedule_tree_covers_every_factor_once(chain, memory):
    view = ScheduleView(chain, memory=memory)
    assert view.plan.fma == jc.optimize(chain, memory).fma
    covered = []
    for box in view.boxes:
        if box["kind"] in ("tangent", "adjoint"):  # the leaves: preaccumulations and sweeps
            j, i = box["span"]
            covered += range(i, j + 1)
        if box["kind"] == "adjoint":
            assert box["tape"] <= memory  # every sweep fits the bound
    assert sorted(covered) == list(range(1, chain.q + 1))
    root = view.boxes[0]
    assert root["span"] == (chain.q, 1) and root["parent"] is None
    assert all(view.boxes[box["parent"]]["level"] == box["level"] - 1 for box in view.boxes[1:])


# -- MemoryBudget ---------------------------------------------------------------------------------------------

def staircases_by_brute_force(chain):
    """Per bound 0..sum |E|: the least fma of every enumerated schedule whose tape fits."""
    every = jc.schedules(chain)
    return [min(s.fma for s in every if s.memory <= bound) for bound in range(chain.total_edges + 1)]


def test_memory_budget_reproduces_section_4():
    budget = MemoryBudget()
    assert budget.preset == SECTION_4 and budget.memory == 55
    for bound, (paper_fma, paper_memory, exact_fma) in SECTION_4_TABLE.items():
        assert budget.set_memory(bound)
        assert (budget.paper.fma, budget.paper.memory) == (paper_fma, paper_memory)
        assert budget.exact.fma == exact_fma
    budget.set_memory(55)
    text = plain(budget.text.value)
    assert "pays 56 fma more" in text and "((F3dot I2) F2bar) F1bar" in text
    exact = staircases_by_brute_force(budget.chain)
    for bound in range(budget.chain.total_edges + 1):
        budget.set_memory(bound)
        assert budget.exact.fma == exact[bound]
        assert budget.paper.fma == jc.optimize(budget.chain, bound, rule="paper").fma


@SETTINGS
@given(small_chains)
def test_staircases_match_brute_force_and_the_paper_rule_at_every_bound(chain):
    budget = MemoryBudget(chain)
    assert budget.memory == chain.total_edges  # no bound given: all the tape there is
    exact = staircases_by_brute_force(chain)
    pieces = jc.paper_rule_pieces(chain)
    assert pieces[0][0] == 0 and pieces[-1][1] == chain.total_edges
    assert all(a[1] + 1 == b[0] for a, b in zip(pieces, pieces[1:]))  # the pieces tile 0..sum |E|
    for bound in range(chain.total_edges + 1):
        assert min(fma for memory, fma in budget.exact_steps if memory <= bound) == exact[bound]
        paper = next(fma for low, high, fma, _ in budget.paper_steps if low <= bound <= high)
        assert paper == jc.optimize(chain, bound, rule="paper").fma


def test_memory_budget_shows_where_the_paper_rule_is_not_monotone():
    budget = MemoryBudget(preset=NOT_MONOTONE)
    assert budget.memory == 42 and budget.paper.fma == 489
    budget.slider.value = 43
    assert budget.memory == 43 and budget.paper.fma == 535 and budget.exact.fma == 489
    assert "Not monotone" in plain(budget.text.value)


def test_memory_budget_openfoam_bounds_of_section_6():
    budget = MemoryBudget(preset=SECTION_6)
    for bound, paper, exact in ((284888, 279185368, 279185368), (198887, 370959408, 298758168),
                                (102517, 436163528, 375189368)):
        assert budget.set_memory(bound)
        assert (budget.paper.fma, budget.exact.fma) == (paper, exact)


def test_memory_budget_slider_input_and_errors():
    budget = MemoryBudget()
    before = picture(budget)
    budget.slider.value = 20
    assert budget.memory == 20 and picture(budget) != before
    assert budget.set_memory(10**6) and budget.memory == budget.chain.total_edges == 56
    assert budget.set_memory(None) and budget.memory == 56
    assert not budget.set_memory(-1) and "non-negative" in budget.error and budget.memory == 56
    assert not budget.set_chain("2\n1 2 3\n") and "line 1 says q = 2" in budget.error
    assert budget.set_preset(SECTION_5) and budget.error == "" and budget.memory == CHAIN_PRESETS[SECTION_5][1]
    assert budget.slider.max == 50

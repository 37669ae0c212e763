"""The check functions of chapter 09 (tensoradbook.exercises): right answers pass in any form, typical wrong
answers fail with a message that says what is wrong, and None says "no answer yet". The checks enumerate every
schedule; here the expected values come from the paper's printed numbers and from the core's dynamic programme
(exact rule), a different algorithm."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensoradbook import chaining as jc
from tensoradbook import exercises as ex
from feedback import messages

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SECTION_4 = [(4, 8, 32), (2, 4, 16), (1, 2, 8)]
SECTION_5 = "3\n3 3 29\n1 3 14\n2 1 7\n"
# Sec. 3, |E1| = |E2| = 100: (n1, m1, m2) -> the paper's optimal letter and cost.
SECTION_3 = {(2, 4, 8): ("a", 400), (4, 2, 32): ("b", 600), (8, 4, 2): ("c", 400), (32, 2, 4): ("d", 600),
             (4, 2, 4): ("e", 432)}

chains = st.integers(1, 4).flatmap(lambda q: st.lists(st.integers(1, 6), min_size=q + 1, max_size=q + 1).flatmap(
    lambda sizes: st.lists(st.integers(1, 30), min_size=q, max_size=q).map(
        lambda edges: jc.Chain([(sizes[v + 1], sizes[v], edges[v]) for v in range(q)]))))


@pytest.mark.parametrize("call", [
    lambda: ex.check_two_factor_optimum((4, 2, 4, 100, 100), None),
    lambda: ex.check_homogeneous_costs(SECTION_5, None),
    lambda: ex.check_cell_fma(SECTION_5, 2, 1, None),
    lambda: ex.check_bounded_optimum(SECTION_4, 55, None),
    lambda: ex.check_tape_threshold(SECTION_5, None),
])
def test_none_is_no_answer_yet(call):
    result = call()
    assert not result.ok and result.pending
    assert "no answer yet" in str(result)


def test_exported():
    for name in ("check_two_factor_optimum", "check_homogeneous_costs", "check_cell_fma", "check_bounded_optimum",
                 "check_tape_threshold"):
        assert name in ex.__all__
        assert name in ex.__doc__


# --- check_two_factor_optimum ------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes", list(SECTION_3))
def test_two_factor_the_papers_optima_pass_in_every_form(sizes):
    letter, cost = SECTION_3[sizes]
    data = (*sizes, 100, 100)
    chain = jc.Chain([(sizes[1], sizes[0], 100), (sizes[2], sizes[1], 100)])
    notation = jc.two_factor_schedules(*data)[letter].notation(chain)
    for answer in (letter, letter.upper(), f"({letter})", [letter], notation, notation.replace(" ", ""),
                   cost, np.int64(cost), float(cost), f"{cost:,}"):
        result = ex.check_two_factor_optimum(data, answer)
        assert result.ok, (answer, str(result))
        assert f"{cost} fma" in result.note


def test_two_factor_wrong_answers_say_why():
    data = (4, 2, 4, 100, 100)  # case 5: e = 432 is the optimum
    result = ex.check_two_factor_optimum(data, "b")
    assert not result.ok and "schedule b = F2dot (I2 F1bar) is not a cheapest one" in messages(result)
    assert "sec. 3's table" in messages(result) and "600" not in messages(result)
    result = ex.check_two_factor_optimum(data, "h")
    assert not result.ok and "schedule h" in messages(result) and "Theorem 3.1" in messages(result)
    assert "never beats" not in messages(ex.check_two_factor_optimum(data, "c"))
    listed = ex.check_two_factor_optimum(data, ["e", "h"])
    assert not listed.ok and "not every schedule you list" in messages(listed) and "schedule h" not in str(listed)
    # a wrong cost: the same words below and above the optimum, whether or not a schedule costs that much
    costs = {n: messages(ex.check_two_factor_optimum(data, n)).replace(str(n), "N") for n in (400, 600, 433)}
    assert len(set(costs.values())) == 1 and "not the least cost" in costs[400]
    for junk, words in (("z", "neither a letter"), ([], "empty"), (-4, "negative"), (True, "whole number"),
                        (432.5, "whole number")):
        result = ex.check_two_factor_optimum(data, junk)
        assert not result.ok and words in messages(result)


@SETTINGS
@given(st.integers(1, 30), st.integers(1, 30), st.integers(1, 30), st.integers(1, 200), st.integers(1, 200))
def test_two_factor_accepts_exactly_the_cheapest_letters(n1, m1, m2, e1, e2):
    chain = jc.Chain([(m1, n1, e1), (m2, m1, e2)])
    best = jc.optimize(chain).fma  # the dynamic programme, eq. 3.7
    for letter, schedule in jc.two_factor_schedules(n1, m1, m2, e1, e2).items():
        assert ex.check_two_factor_optimum((n1, m1, m2, e1, e2), letter).ok == (schedule.fma == best)
    assert ex.check_two_factor_optimum((n1, m1, m2, e1, e2), best).ok
    assert not ex.check_two_factor_optimum((n1, m1, m2, e1, e2), best + 1).ok


# --- check_homogeneous_costs ----------------------------------------------------------------------------------


def test_homogeneous_costs_of_section_5():
    assert ex.check_homogeneous_costs(SECTION_5, (150, 100)).ok
    assert ex.check_homogeneous_costs(SECTION_5, ["150", np.int32(100)]).ok
    assert "swapped" in messages(ex.check_homogeneous_costs(SECTION_5, (100, 150)))
    # tangent with each factor's own n_i: 3*29 + 3*14 + 1*7 = 136
    result = ex.check_homogeneous_costs(SECTION_5, (136, 100))
    assert not result.ok and "each factor's own n_i" in messages(result) and "adjoint" not in messages(result)
    result = ex.check_homogeneous_costs(SECTION_5, (150, 101))
    assert not result.ok and messages(result).startswith("adjoint: 101")
    assert "pair" in messages(ex.check_homogeneous_costs(SECTION_5, 250))


@SETTINGS
@given(chains)
def test_homogeneous_costs_match_the_core_baselines(chain):
    tangent, adjoint = jc.tangent(chain).fma, jc.adjoint(chain).fma
    assert ex.check_homogeneous_costs(chain, (tangent, adjoint)).ok
    assert not ex.check_homogeneous_costs(chain, (tangent + 1, adjoint)).ok
    if tangent != adjoint:
        assert "swapped" in messages(ex.check_homogeneous_costs(chain, (adjoint, tangent)))


# --- check_cell_fma -------------------------------------------------------------------------------------------


def test_cell_fma_of_the_section_5_table():
    for (j, i), fma in {(1, 1): 87, (2, 2): 14, (2, 1): 43, (3, 3): 7, (3, 2): 27, (3, 1): 56}.items():
        result = ex.check_cell_fma(SECTION_5, j, i, fma)
        assert result.ok, str(result)
    # the best with one last step (85, MxG(1)), too little, too much: the same words, pointing at eq. 3.7
    wrong = {messages(ex.check_cell_fma(SECTION_5, 3, 1, n)).replace(str(n), "N") for n in (85, 50, 57)}
    assert len(wrong) == 1 and "eq. 3.7 takes the minimum" in wrong.pop()
    with pytest.raises(ValueError, match="not in the table"):
        ex.check_cell_fma(SECTION_5, 2, 3, 10)


@SETTINGS
@given(chains, st.data())
def test_cell_fma_agrees_with_the_dynamic_programme(chain, data):
    j = data.draw(st.integers(1, chain.q))
    i = data.draw(st.integers(1, j))
    fma = jc.optimize(chain).cell(j, i).fma
    assert ex.check_cell_fma(chain, j, i, fma).ok
    assert not ex.check_cell_fma(chain, j, i, fma + 1).ok
    assert not ex.check_cell_fma(chain, j, i, fma - 1).ok


# --- check_bounded_optimum ------------------------------------------------------------------------------------


@pytest.mark.parametrize("bound, paper, exact", [(56, 56, 56), (55, 120, 64), (47, 184, 112), (31, 312, 312),
                                                 (23, 336, 320), (15, 368, 368), (7, 376, 376)])
def test_bounded_optimum_of_section_4(bound, paper, exact):
    result = ex.check_bounded_optimum(SECTION_4, bound, exact)
    assert result.ok, str(result)
    if paper != exact:
        wrong = ex.check_bounded_optimum(SECTION_4, bound, paper)
        assert not wrong.ok and "paper's single-value rule" in messages(wrong)
        assert f"settles for {paper}" in result.note


def test_bounded_optimum_wrong_numbers_draw_the_same_words():
    # too cheap for the bound (56 needs tape 56), far too cheap, too dear: no tape named, no direction
    wrong = {messages(ex.check_bounded_optimum(SECTION_4, 55, n)).replace(str(n), "N") for n in (56, 10, 70)}
    assert len(wrong) == 1 and "Pareto front" in wrong.pop()


@SETTINGS
@given(chains, st.integers(0, 60))
def test_bounded_optimum_agrees_with_the_exact_programme(chain, bound):
    fma = jc.optimize(chain, bound).fma
    assert ex.check_bounded_optimum(chain, bound, fma).ok
    assert not ex.check_bounded_optimum(chain, bound, fma + 1).ok
    assert not ex.check_bounded_optimum(chain, bound, fma - 1).ok


# --- check_tape_threshold -------------------------------------------------------------------------------------


def test_tape_threshold_of_section_5():
    result = ex.check_tape_threshold(SECTION_5, 43)  # (I1 F2bar) F1bar records 14 + 29
    assert result.ok and "84 fma instead of 56" in result.note
    # below and above the threshold: the same words, nothing about what a smaller bound costs
    wrong = {messages(ex.check_tape_threshold(SECTION_5, n)).replace(str(n), "N") for n in (42, 50)}
    assert len(wrong) == 1 and "least tape among them" in wrong.pop()
    assert "whole number" in messages(ex.check_tape_threshold(SECTION_5, "forty"))


@SETTINGS
@given(chains)
def test_tape_threshold_is_the_corner_of_the_pareto_front(chain):
    front = jc.optimize(chain, chain.total_edges).cell(chain.q, 1).front  # exact programme, cheapest first
    threshold = front[0].memory
    assert ex.check_tape_threshold(chain, threshold).ok
    if threshold:
        assert not ex.check_tape_threshold(chain, threshold - 1).ok
    assert not ex.check_tape_threshold(chain, threshold + 1).ok


def test_exercise_chains_are_small():
    with pytest.raises(ValueError, match="at most 6 factors"):
        ex.check_tape_threshold([(1, 1, 1)] * 7, 0)

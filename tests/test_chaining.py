"""Matrix-free Jacobian chaining (Naumann, "Matrix-Free Jacobian Chaining").

Every number the paper reports (sections 1, 3-6, digested in
shared/notes/jacobian_chaining.md) is checked; the dynamic programmes are
checked against brute-force enumeration of every schedule, whose costs come
from the node formulas alone, and the vectorised table against a per-cell
recomputation of its candidates.
"""

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensoradbook import chaining as jc

SECTION_5 = jc.Chain.parse("3\n3 3 29\n1 3 14\n2 1 7\n")
SECTION_4 = jc.Chain([(4, 8, 32), (2, 4, 16), (1, 2, 8)])
OPENFOAM = jc.Chain.parse("""6
1531 1531 78172
967 1531 24346
1011 967 21090
751 1011 75280
1151 751 75980
1531 1151 10020
""")
NON_MONOTONE = jc.Chain([(4, 6, 13), (3, 4, 43), (5, 3, 64)])


@st.composite
def chains(draw, max_q=4, max_size=6, max_edges=60):
    """Random chains; one in four has |E| near 10^17, beyond int64 sums (the Python-int path)."""
    q = draw(st.integers(1, max_q))
    sizes = draw(st.lists(st.integers(1, max_size), min_size=q + 1, max_size=q + 1))
    edges = draw(st.lists(st.integers(1, max_edges), min_size=q, max_size=q))
    scale = draw(st.sampled_from([1, 1, 1, 10 ** 16]))
    return jc.Chain([(sizes[t + 1], sizes[t], e * scale) for t, e in enumerate(edges)])


@st.composite
def chains_and_bounds(draw, **kwargs):
    chain = draw(chains(**kwargs))
    return chain, draw(st.none() | st.integers(0, chain.total_edges))


def pareto(pairs):
    front = []
    for fma, memory in sorted(set(pairs)):
        if not front or memory < front[-1][1]:
            front.append((fma, memory))
    return front


def tape(schedule, rule):
    return schedule.sweep_tape if rule == "local" else schedule.memory


# --------------------------------------------------------------------------- the paper's numbers


def test_introduction_classical_bracketings():
    """Sec. 1: F'4 4x1, F'3 1x4, F'2 4x5, F'1 5x3 with preaccumulation 21, 5, 192, 84."""
    chain = jc.Chain([(5, 3, 28), (4, 5, 48), (1, 4, 5), (4, 1, 21)])
    assert [min(f.m, f.n) * f.edges for f in chain] == [84, 192, 5, 21]
    plan = jc.preaccumulation(chain)
    assert plan.fma == 349 == 21 + 5 + 192 + 84 + 1 * 4 * 5 + 1 * 5 * 3 + 4 * 1 * 3
    top = plan.schedule  # F'4 ((F'3 F'2) F'1)
    assert (top.op, top.k, top.right.op, top.right.k, top.right.left.op, top.right.left.k) == (
        jc.MXM, 3, jc.MXM, 1, jc.MXM, 2)
    cheaper = {j: jc.TANGENT if f.n <= f.m else jc.ADJOINT for j, f in enumerate(chain, start=1)}
    bracketings = sorted(s.fma for s in jc.schedules(chain)
                         if all(node.op in (jc.MXM, cheaper[node.j]) for node in s.nodes()))
    assert bracketings == [349, 386, 402, 426, 458]


SECTION_3 = [  # n1, m1 = n2, m2, then a..h and the optimum, |E1| = |E2| = 100
    ((2, 4, 8), [400, 600, 1600, 1200, 864, 1264, 1064, 664], 400),
    ((4, 2, 32), [800, 600, 6400, 3400, 656, 3656, 3856, 856], 600),
    ((8, 4, 2), [1600, 1200, 400, 600, 864, 664, 1064, 1264], 400),
    ((32, 2, 4), [6400, 3400, 800, 600, 656, 856, 3856, 3656], 600),
    ((4, 2, 4), [800, 600, 800, 600, 432, 632, 832, 632], 432),
]


@pytest.mark.parametrize("sizes, costs, optimum", SECTION_3)
def test_section_3_two_factor_table(sizes, costs, optimum):
    n1, m1, m2 = sizes
    eight = jc.two_factor_schedules(n1, m1, m2, 100, 100)
    assert list(eight) == list("abcdefgh")
    assert [s.fma for s in eight.values()] == costs
    chain = jc.Chain([(m1, n1, 100), (m2, m1, 100)])
    assert sorted(s.fma for s in jc.schedules(chain)) == sorted(costs)  # the eight are all of them
    assert jc.optimize(chain).fma == jc.optimize(chain, rule="paper").fma == min(costs) == optimum


def test_two_factor_schedules_read_as_in_the_paper():
    chain = jc.Chain([(4, 2, 100), (8, 4, 100)])
    eight = jc.two_factor_schedules(2, 4, 8, 100, 100)
    assert {letter: s.notation(chain) for letter, s in eight.items()} == {
        "a": "F2dot (F1dot I2)", "b": "F2dot (I4 F1bar)", "c": "(I8 F2bar) F1bar", "d": "(F2dot I4) F1bar",
        "e": "(F2dot I4)(I4 F1bar)", "f": "(I8 F2bar)(I4 F1bar)", "g": "(I8 F2bar)(F1dot I2)",
        "h": "(F2dot I4)(F1dot I2)"}


SECTION_4_TABLE = [  # Mbar, paper's schedule, fma, M, exact optimum (fma, M or None where not given)
    (56, "((I1 F3bar) F2bar) F1bar", 56, 56, (56, 56)),
    (55, "(I1 F3bar)((I2 F2bar) F1bar)", 120, 48, (64, 48)),
    (47, "((I1 F3bar) F2bar)(I4 F1bar)", 184, 32, (112, 40)),
    (31, "((I1 F3bar) F2bar)(F1dot I8)", 312, 24, (312, None)),
    (23, "((I1 F3bar)(I2 F2bar))(F1dot I8)", 336, 16, (320, None)),
    (15, "((I1 F3bar)(F2dot I4))(F1dot I8)", 368, 8, (368, None)),
    (7, "((F3dot I2)(F2dot I4))(F1dot I8)", 376, 0, (376, None)),
]


@pytest.mark.parametrize("bound, notation, fma, memory, exact", SECTION_4_TABLE)
def test_section_4_limited_memory(bound, notation, fma, memory, exact):
    paper = jc.optimize(SECTION_4, bound, rule="paper")
    assert (paper.notation, paper.fma, paper.memory) == (notation, fma, memory)
    optimum = jc.optimize(SECTION_4, bound)
    assert optimum.fma == exact[0] and exact[1] in (None, optimum.memory)
    truth = jc.brute_force(SECTION_4, bound)
    assert (truth.fma, truth.memory) == (optimum.fma, optimum.memory)


SECTION_5_OUTPUT = """\
G_{1}=[ 3 3 29 ]
G_{2}=[ 1 3 14 ]
G_{3}=[ 2 1 7 ]
Dynamic Programming Table:
F_{1,1}: GxM(0); fma=87; M=0;
F_{2,2}: MxG(0); fma=14; M=14;
F_{2,1}: MxG(1); fma=43; M=43;
F_{3,3}: GxM(0); fma=7; M=0;
F_{3,2}: MxM(2); fma=27; M=14;
F_{3,1}: MxM(2); fma=56; M=43;
Optimal Cost=56
Memory Requirement=43
Cost of
homogeneous tangent mode=150
homogeneous adjoint mode=100
optimal preaccumulation=108+15=123"""


def test_section_5_reference_output():
    assert jc.reference_report(SECTION_5, 50) == SECTION_5_OUTPUT
    assert jc.reference_report(SECTION_5) == SECTION_5_OUTPUT  # Mbar = 50 = sum |E| does not bind


def test_section_5_example():
    for rule in jc.RULES:
        plan = jc.optimize(SECTION_5, 50, rule)
        assert plan.notation == "(F3dot I1)((I1 F2bar) F1bar)"
        assert (plan.fma, plan.memory) == (56, 43)
    cells = {(c.j, c.i): (c.label, c.fma, c.memory) for c in jc.optimize(SECTION_5, 50, "paper").cells}
    assert cells == {(1, 1): ("GxM(0)", 87, 0), (2, 2): ("MxG(0)", 14, 14), (2, 1): ("MxG(1)", 43, 43),
                     (3, 3): ("GxM(0)", 7, 0), (3, 2): ("MxM(2)", 27, 14), (3, 1): ("MxM(2)", 56, 43)}
    base = jc.baselines(SECTION_5)
    assert (base["tangent"].fma, base["adjoint"].fma, base["preaccumulation"].fma) == (150, 100, 123)
    assert base["tangent"].fma == 3 * (29 + 14 + 7) and base["adjoint"].fma == 2 * (29 + 14 + 7)
    pre = base["preaccumulation"].fma_by_op()
    assert (pre[jc.TANGENT] + pre[jc.ADJOINT], pre[jc.MXM]) == (108, 15)
    assert not jc.adjoint(SECTION_5, 49).feasible and jc.adjoint(SECTION_5, 50).feasible


@pytest.mark.parametrize("bound, paper, exact", [(42, (123, 14), (84, 29)), (13, (142, 0), (142, 0))])
def test_section_5_smaller_bounds(bound, paper, exact):
    plan = jc.optimize(SECTION_5, bound, "paper")
    assert (plan.fma, plan.memory) == paper
    assert (jc.optimize(SECTION_5, bound).fma, jc.optimize(SECTION_5, bound).memory) == exact
    truth = jc.brute_force(SECTION_5, bound)
    assert (truth.fma, truth.memory) == exact


def test_section_6_openfoam():
    plan = jc.optimize(OPENFOAM, 284888, "paper")
    assert OPENFOAM.total_edges == 284888
    assert plan.table(all_cells=False).splitlines() == [
        "Dynamic Programming Table:",
        "F_{4,4}: MxG(0); fma=56535280; M=75280;",
        "F_{4,3}: MxG(3); fma=72373870; M=96370;",
        "F_{5,3}: GxM(4); fma=145846530; M=96370;",
        "F_{5,2}: MxG(2); fma=173868776; M=120716;",
        "F_{5,1}: MxG(1); fma=263844748; M=198888;",
        "F_{6,1}: GxM(5); fma=279185368; M=198888;",
    ]
    assert (plan.fma, plan.memory) == (279185368, 198888)
    assert plan.notation == "F6dot (((F5dot ((I751 F4bar) F3bar)) F2bar) F1bar)"
    assert jc.optimize(OPENFOAM).fma == 279185368
    report = jc.reference_report(OPENFOAM, 284888).splitlines()
    assert report[-3:] == ["homogeneous tangent mode=436163528", "homogeneous adjoint mode=436163528",
                           "optimal preaccumulation=288747224+6690070967=6978818191"]


@pytest.mark.parametrize("bound, paper, exact", [
    (198887, (370959408, 102518), 298758168),
    (102517, (436163528, 0), 375189368),
])
def test_section_6_smaller_bounds(bound, paper, exact):
    greedy = jc.optimize(OPENFOAM, bound, "paper")
    assert (greedy.fma, greedy.memory) == paper
    assert jc.optimize(OPENFOAM, bound).fma == exact == jc.brute_force(OPENFOAM, bound).fma


def test_paper_rule_is_not_monotone_in_the_bound():
    """The notes' R1 example: more tape, higher cost under the single-value programme."""
    assert jc.optimize(NON_MONOTONE, 42, "paper").fma == 489
    assert jc.optimize(NON_MONOTONE, 43, "paper").fma == 535
    for bound in (42, 43):
        assert jc.optimize(NON_MONOTONE, bound).fma == 489 == jc.brute_force(NON_MONOTONE, bound).fma


def test_schedule_counts():
    assert [jc.schedule_count(q) for q in range(1, 9)] == [2, 8, 52, 396, 3332, 29948, 281764, 2740572]
    for q in range(1, 6):
        assert len(jc.schedules(jc.Chain.random(q, seed=q))) == jc.schedule_count(q)


# --------------------------------------------------------------------------- against brute force


@settings(max_examples=150, deadline=None)
@given(chains())
def test_dynamic_programmes_match_brute_force(chain):
    every = jc.schedules(chain)
    bounds = sorted({0, chain.total_edges // 3, chain.total_edges // 2, chain.total_edges})
    for bound, rule in itertools.product([None] + bounds, ("exact", "local")):
        plan = jc.optimize(chain, bound, rule)
        feasible = [s for s in every if bound is None or tape(s, rule) <= bound]
        best = min((s.fma, s.memory) for s in feasible)
        assert plan.feasible
        assert plan.fma == best[0]
        if rule == "exact":
            assert plan.memory == best[1]
            truth = jc.brute_force(chain, bound)
            assert (truth.fma, truth.memory) == best
            pruned = jc.optimize(chain, bound, prune=True)
            assert (pruned.fma, pruned.memory) == best
    assert jc.optimize(chain, rule="paper").fma == jc.optimize(chain).fma


@settings(max_examples=60, deadline=None)
@given(chains(max_q=5, max_edges=40))
def test_exact_fronts_are_the_pareto_fronts_of_all_schedules(chain):
    bound = chain.total_edges * 2 // 3
    plan = jc.optimize(chain, bound)
    for cell in plan.cells:
        sub = jc.Chain(chain.factors[cell.i - 1: cell.j])
        expected = pareto((s.fma, s.memory) for s in jc.schedules(sub) if s.memory <= bound)
        assert [(s.fma, s.memory) for s in cell.front] == expected
        assert {(c.fma, c.memory) for c in plan.candidates(cell.j, cell.i) if c.kept} == set(expected)


@settings(max_examples=60, deadline=None)
@given(chains(max_q=10, max_size=10, max_edges=120), st.data())
def test_pruning_keeps_the_optimum_and_only_front_entries(chain, data):
    bound = data.draw(st.integers(0, chain.total_edges))
    full, pruned = jc.optimize(chain, bound, prune=False), jc.optimize(chain, bound, prune=True)
    assert (pruned.fma, pruned.memory) == (full.fma, full.memory)
    assert pruned.kept_entries <= full.kept_entries
    for cell in pruned.cells:
        whole = {(s.fma, s.memory) for s in full.cell(cell.j, cell.i).front}
        assert {(s.fma, s.memory) for s in cell.front} <= whole
        if not cell.front:  # nothing left: the table says so instead of failing
            assert cell.fma is None and cell.op is None and "pruned" in cell.line()
    assert pruned.table(all_cells=True).count("\n") == chain.q * (chain.q + 1) // 2


@settings(max_examples=100, deadline=None)
@given(chains_and_bounds(max_q=4))
def test_paper_rule_is_feasible_and_never_better_than_exact(case):
    chain, bound = case
    paper, exact, local = (jc.optimize(chain, bound, rule) for rule in ("paper", "exact", "local"))
    assert paper.feasible and exact.feasible and local.feasible
    assert local.fma <= exact.fma <= paper.fma  # the paper's tape bounds every single sweep too


@settings(max_examples=100, deadline=None)
@given(chains_and_bounds(max_q=5))
def test_preaccumulation_is_the_best_dense_bracketing(case):
    chain, bound = case
    plan = jc.preaccumulation(chain, bound)

    def allowed(node):
        if node.op == jc.MXM:
            return True
        f = chain.factor(node.j)
        adjoint_fits = bound is None or f.edges <= bound
        preferred = jc.ADJOINT if adjoint_fits and f.m * f.edges < f.n * f.edges else jc.TANGENT
        return node.op == preferred

    assert plan.fma == min(s.fma for s in jc.schedules(chain) if all(allowed(n) for n in s.nodes()))


# --------------------------------------------------------------------------- the table itself


def assert_kept_first(plan, lexicographic):
    """Every cell keeps the first least option in the order the candidates are listed."""
    for cell in plan.cells:
        candidates = plan.candidates(cell.j, cell.i)
        kept = [c for c in candidates if c.kept]
        assert len(kept) == 1 and (kept[0].label, kept[0].fma, kept[0].memory) == (cell.label, cell.fma, cell.memory)
        key = (lambda c: (c.fma, c.memory)) if lexicographic else (lambda c: c.fma)
        feasible = [c for c in candidates if c.feasible]
        assert kept[0] is min(feasible, key=key)  # min returns the first of equals
        assert cell.best.fma == cell.fma  # the tree recomputed from node formulas agrees


@settings(max_examples=60, deadline=None)
@given(chains(max_q=12, max_size=12, max_edges=300), st.data())
def test_vectorised_table_agrees_with_each_cell_recomputed(chain, data):
    bound = data.draw(st.none() | st.integers(0, chain.total_edges))
    for rule in ("paper", "local"):
        assert_kept_first(jc.optimize(chain, bound, rule), lexicographic=False)
    assert_kept_first(jc.optimize(chain), lexicographic=True)
    assert_kept_first(jc.preaccumulation(chain, bound), lexicographic=False)


# --------------------------------------------------------------------------- invariants


@settings(max_examples=100, deadline=None)
@given(chains(max_q=8, max_size=10, max_edges=100))
def test_baselines_and_the_optimum(chain):
    total = chain.total_edges
    base = jc.baselines(chain)
    assert base["tangent"].fma == chain.factor(1).n * total and base["tangent"].memory == 0
    assert base["adjoint"].fma == chain.factor(chain.q).m * total and base["adjoint"].memory == total
    best = jc.optimize(chain)
    assert all(best.fma <= plan.fma for plan in base.values())
    assert type(best.fma) is int and type(best.memory) is int
    unlimited = jc.optimize(chain, total)  # sum |E| never binds: the fronts give the same optimum
    assert (unlimited.fma, unlimited.memory) == (best.fma, best.memory)


@settings(max_examples=60, deadline=None)
@given(chains(max_q=7, max_size=8, max_edges=80))
def test_exact_optimum_does_not_increase_with_more_tape(chain):
    costs = [jc.optimize(chain, bound).fma for bound in range(0, chain.total_edges + 1,
                                                                   max(1, chain.total_edges // 40))]
    assert costs == sorted(costs, reverse=True)
    no_tape = jc.optimize(chain, 0)  # tangents and dense products only
    assert no_tape.memory == 0 and all(node.op != jc.ADJOINT and node.op != jc.MXG for node in no_tape.steps())


def test_long_random_chain():
    chain = jc.Chain.random(300, seed=7)
    plan = jc.optimize(chain)
    assert plan.schedule.fma == plan.cell(300, 1).fma == plan.fma
    assert plan.fma <= min(p.fma for p in jc.baselines(chain).values())
    assert len(plan.schedule.nodes()) <= 2 * 300 - 1
    assert plan.notation.count("dot") + plan.notation.count("bar") >= 300  # every factor is applied


@settings(max_examples=100, deadline=None)
@given(chains(max_q=6))
def test_chain_file_round_trip(chain):
    assert jc.Chain.parse(chain.to_text()) == chain


def test_random_chains_follow_the_paper_generator():
    chain = jc.Chain.random(50, seed=3)
    assert chain == jc.Chain.random(50, seed=3) and chain != jc.Chain.random(50, seed=4)
    for f in chain:
        assert 1 <= f.m <= 50 and 1 <= f.n <= 50 and f.m + f.n <= f.edges <= (f.m + f.n) ** 2


# --------------------------------------------------------------------------- output


def test_str_shows_schedule_and_table():
    text = str(jc.optimize(SECTION_5, 42))
    assert text.splitlines()[0] == "F' = (F3dot I1)((F2dot I3) F1bar)"
    assert "fma=84; M=29;" in text
    assert "F_{2,1}: MxG(1); fma=71; M=29; Pareto (fma, M): (71, 29) (110, 14) (129, 0)" in text
    long = jc.optimize(jc.Chain.random(20, seed=1))  # q > 8: only the cells the schedule uses
    assert str(long).count("F_{") == len(long.steps()) < 20 * 21 // 2
    assert "INFEASIBLE" in str(jc.adjoint(SECTION_5, 10))


def test_candidates_list_a_cell():
    plan = jc.optimize(SECTION_5, 50, "paper")
    options = plan.candidates(3, 1)
    assert [c.label for c in options] == ["MxM(1)", "GxM(1)", "MxG(1)", "MxM(2)", "GxM(2)", "MxG(2)"]
    assert [c.label for c in options if c.kept] == ["MxM(2)"]
    assert [(c.label, c.feasible) for c in jc.optimize(SECTION_5, 13, "paper").candidates(2, 2)] == [
        ("GxM(0)", True), ("MxG(0)", False)]


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("factors, message", [
    ([(3, 3, 29), (1, 4, 14)], "factor F_2: n = 4 columns, but F_1 has m = 3 rows (the chain needs n_2 = m_1)"),
    ([(0, 3, 29)], "factor F_1: m (rows) must be a positive integer, got 0"),
    ([(3, 3, 29), (1, 3, -2)], "factor F_2: |E| (edges) must be a positive integer, got -2"),
    ([(3, 2.5, 29)], "factor F_1: n (columns) must be a positive integer, got 2.5"),
    ([(3, True, 29)], "factor F_1: n (columns) must be a positive integer, got True"),
    ([(3, 3)], "factor F_1: expected (m, n, |E|), got (3, 3)"),
    ([], "a chain needs at least one factor"),
    (None, "Chain takes a sequence of (m, n, |E|) triples, F_1 first, got None"),
    (5, "Chain takes a sequence of (m, n, |E|) triples, F_1 first, got 5"),
    ("3\n3 3 29", "got '3\\n3 3 29'; Chain.parse reads a chain file's text"),
    ([(3, 3, 10 ** 400), None], "factor F_2: expected (m, n, |E|), got None"),
])
def test_bad_chains(factors, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        jc.Chain(factors)


@pytest.mark.parametrize("text, message", [
    ("", "empty chain file"),
    ("3\n3 3 29\n1 3 14\n", "line 1 says q = 3, but 2 factor line(s) follow"),
    ("2\n3 3 29\n1 3\n", "line 3: expected three integers 'm n |E|', got '1 3'"),
    ("2\n3 3 29\n1 x 14\n", "line 3: n must be an integer, got 'x'"),
    ("2\n3 3 29\n1 4 14\n", "line 3 (factor F_2): n = 4 columns, but F_1 has m = 3 rows"),
    ("two\n", "line 1: q must be an integer, got 'two'"),
    ("1 2\n", "line 1: expected the chain length q alone, got '1 2'"),
    ("0\n", "line 1: q must be at least 1, got 0"),
    ("2\n3 3 29\n\n1 3 0\n", "line 4 (factor F_2): |E| (edges) must be a positive integer, got 0"),
    # int() reads other scripts' digits and underscores; the file format is ASCII digits
    ("١\n3 3 29\n", "line 1: q must be an integer, got '١' (write it in ASCII digits 0-9)"),
    ("1\n١٢ 3 29\n", "line 2: m must be an integer, got '١٢' (write it in ASCII digits 0-9)"),
    ("1\n3 3 2_9\n", "line 2: |E| must be an integer, got '2_9'"),
    (None, "Chain.parse reads a chain file's text (a str), got None"),
    (b"1\n3 3 29\n", "Chain.parse reads a chain file's text (a str), got b'1\\n3 3 29\\n'"),
])
def test_bad_chain_files(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        jc.Chain.parse(text)


def test_signed_ascii_numbers_in_chain_files():
    assert jc.Chain.parse("+1\n +3 3 29 \n") == jc.Chain([(3, 3, 29)])


@pytest.mark.parametrize("rule", jc.RULES)
@pytest.mark.parametrize("bound", [2 ** 62, 2 ** 63, 10 ** 40])
def test_any_tape_bound_is_legal_and_beyond_sum_E_means_unbounded(rule, bound):
    """A bound of at least sum |E| (which no tape exceeds) gives the plan at sum |E|, whatever its size
    (2**63 overflowed the exact rule's int64 keys, and 2**62 silently wrapped them)."""
    for chain in (SECTION_5, OPENFOAM):
        plan = jc.optimize(chain, bound, rule)
        at_total = jc.optimize(chain, chain.total_edges, rule)
        assert (plan.notation, plan.fma, plan.memory) == (at_total.notation, at_total.fma, at_total.memory)
        assert plan.memory_bound == bound and plan.feasible
        assert plan.table(all_cells=True) == at_total.table(all_cells=True)  # every cell, fronts included
    assert jc.optimize(SECTION_5, bound, "exact", prune=True).fma == 56
    assert jc.brute_force(SECTION_5, bound).fma == 56
    assert jc.preaccumulation(SECTION_5, bound).fma == jc.preaccumulation(SECTION_5).fma
    assert "Optimal Cost=56" in jc.reference_report(SECTION_5, bound)


@pytest.mark.parametrize("call, message", [
    (lambda: SECTION_5.factor("a"), "factor index must be an integer, got 'a'"),
    (lambda: SECTION_5.factor(1.0), "factor index must be an integer, got 1.0"),
    (lambda: SECTION_5.edge_sum(None, 2), "edge_sum: first must be an integer, got None"),
    (lambda: SECTION_5.edge_sum(3, 1), r"edge_sum(3, 1) needs 1 <= first <= last + 1 <= 4"),
    (lambda: jc.schedule_count(10 ** 40), "schedule_count: q must be a positive integer up to 1000, got 1000"),
    (lambda: jc.schedule_count(2.0), "schedule_count: q must be a positive integer up to 1000, got 2.0"),
    (lambda: jc.optimize(SECTION_5).cell(1.5, 1), "cell row j must be an integer, got 1.5"),
    (lambda: jc.optimize(SECTION_5).candidates(3, None), "cell column i must be an integer, got None"),
    (lambda: jc.optimize(SECTION_5, 10, rule=["exact"]), "unknown rule ['exact']"),
    (lambda: jc.optimize(SECTION_5, 10, prune=None), "prune must be True or False, got None"),
    (lambda: jc.optimize(SECTION_5, "50"), "memory bound must be a non-negative integer or None, got '50'"),
    (lambda: jc.optimize(SECTION_5, 50.0), "memory bound must be a non-negative integer or None, got 50.0"),
    (lambda: jc.optimize(None), "Chain takes a sequence of (m, n, |E|) triples"),
    (lambda: jc.paper_rule_pieces(None), "Chain takes a sequence of (m, n, |E|) triples"),
    (lambda: jc.schedules([(3, 3)]), "factor F_1: expected (m, n, |E|), got (3, 3)"),
    (lambda: jc.Chain.random(3, seed="a"), "seed (an integer, or None for a fresh one) must be an integer, got 'a'"),
    (lambda: jc.Chain.random(3.0), "q must be a positive integer, got 3.0"),
    (lambda: jc.Schedule.make(None, jc.TANGENT, 1, 1), "Schedule.make: chain must be a Chain, got None"),
    (lambda: jc.Schedule.make(SECTION_5, jc.TANGENT, "1", 1), "Schedule.make: j must be an integer, got '1'"),
    (lambda: jc.Schedule.make(SECTION_5, jc.GXM, 2, 1, 1, right="F1"),
     "GxM(1) on F'_{2,1}: an operand must be a Schedule, got 'F1'"),
])
def test_public_arguments_are_checked(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def test_numpy_integers_are_integers():
    assert jc.Chain.random(3, seed=np.int64(2)) == jc.Chain.random(3, seed=2)
    assert jc.optimize(SECTION_5, np.int64(50)).fma == jc.optimize(SECTION_5, 50).fma
    assert jc.optimize(SECTION_5).cell(np.int64(3), np.int64(1)).fma == 56
    assert SECTION_5.factor(np.int32(1)) == SECTION_5.factor(1) and SECTION_5.edge_sum(2, 1) == 0


def test_bad_calls():
    with pytest.raises(ValueError, match="unknown rule 'greedy'"):
        jc.optimize(SECTION_5, 10, rule="greedy")
    with pytest.raises(ValueError, match="memory bound must be a non-negative integer or None, got -1"):
        jc.optimize(SECTION_5, -1)
    with pytest.raises(ValueError, match="q = 8 has 2,740,572 schedules"):
        jc.brute_force(jc.Chain.random(8))
    with pytest.raises(ValueError, match="brute force takes rule 'exact' or 'local'"):
        jc.brute_force(SECTION_5, 10, rule="paper")
    with pytest.raises(ValueError, match=r"cell \(1, 2\) is outside the table"):
        jc.optimize(SECTION_5).cell(1, 2)
    with pytest.raises(ValueError, match="has no dynamic programming table"):
        jc.tangent(SECTION_5).candidates(3, 1)
    with pytest.raises(ValueError, match="factor index 4 is outside 1..3"):
        SECTION_5.factor(4)
    with pytest.raises(ValueError, match=r"MxM\(1\) on F'_\{3,1\} needs F'_\{3,2\} as operand"):
        jc.Schedule.make(SECTION_5, jc.MXM, 3, 1, 1)
    with pytest.raises(ValueError, match=r"F'_\{4,2\} is not a subchain: need 1 <= i <= j <= 3"):
        jc.Schedule.make(SECTION_5, jc.GXM, 4, 2, 2)


@settings(max_examples=60, deadline=None)
@given(chains(max_q=5))
def test_own_cost_factors_name_what_they_multiply(chain):
    """The factors the widgets print beside each step (n_i, m_j, |E_a|+...+|E_b|) are the chain's sizes
    and edge counts they name, and multiply to the step's fma in every schedule."""
    named = {"n": lambda a: chain.factor(a).n, "m": lambda a: chain.factor(a).m,
             "E": lambda a, b: sum(chain.factor(t).edges for t in range(a, b + 1))}
    for schedule in jc.schedules(chain):
        for step in schedule.nodes():
            factors = jc.own_cost_factors(chain, step.op, step.j, step.i, step.k)
            assert all(value == named[symbol](*subscripts) for symbol, subscripts, value in factors)
            assert np.prod([value for *_, value in factors], dtype=object) == step.cost

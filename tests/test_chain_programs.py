"""The cost model run for real (Naumann, sec. 2): random elemental DAGs with counted tangents and adjoints.

Executing a schedule must give the Jacobian of the chain (oracle: dense
products of each factor's ``(I - C)^{-1}`` block, itself checked against a sum
over all paths of the DAG) with exactly the fma the model predicts.
"""

import itertools
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensoradbook import chaining as jc
from tensoradbook.chaining.programs import ChainProgram, Elemental

SECTION_5 = jc.Chain.parse("3\n3 3 29\n1 3 14\n2 1 7\n")


@st.composite
def elementals(draw, max_size=5):
    m, n = draw(st.integers(1, max_size)), draw(st.integers(1, max_size))
    edges = draw(st.integers(m, (m + n) ** 2))
    return Elemental.random(m, n, edges, np.random.default_rng(draw(st.integers(0, 2 ** 32))))


@st.composite
def chains(draw, max_q=4, max_size=5):
    q = draw(st.integers(1, max_q))
    sizes = draw(st.lists(st.integers(1, max_size), min_size=q + 1, max_size=q + 1))
    return jc.Chain([(sizes[t + 1], sizes[t], draw(st.integers(sizes[t + 1], (sizes[t] + sizes[t + 1]) ** 2)))
                     for t in range(q)])


def path_sum_jacobian(F: Elemental) -> np.ndarray:
    """Sum over every input-to-output path of the product of its partials (Baur-Strassen, by enumeration)."""
    successors = {}
    for s, t, p in zip(F.sources, F.targets, F.partials):
        successors.setdefault(int(s), []).append((int(t), p))
    J = np.zeros((F.m, F.n))

    def walk(vertex, weight, start):
        if vertex >= F.n_vertices - F.m:
            J[vertex - (F.n_vertices - F.m), start] += weight
        for target, partial in successors.get(vertex, []):
            walk(target, weight * partial, start)

    for start in range(F.n):
        walk(start, 1.0, start)
    return J


def close(a, b):
    return np.allclose(a, b, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(b).max()))


@settings(max_examples=100, deadline=None)
@given(elementals())
def test_random_dag_has_the_asked_edges(F):
    pairs = set(zip(F.sources.tolist(), F.targets.tolist()))
    assert len(pairs) == F.edges  # no repeated edge
    assert np.all(F.sources < F.targets) and np.all(np.diff(F.targets) >= 0)  # topological order
    assert np.all(F.sources < F.n_vertices - F.m)  # outputs are read by nobody
    assert set(range(F.n, F.n_vertices)) == set(F.targets.tolist())  # every non-input has a predecessor
    assert np.all(F.targets >= F.n)


@settings(max_examples=60, deadline=None)
@given(elementals(max_size=4), st.integers(1, 4), st.integers(0, 2 ** 32))
def test_tangent_and_adjoint_against_the_oracle(F, width, seed):
    J = F.jacobian()
    assert np.allclose(J, path_sum_jacobian(F))
    rng = np.random.default_rng(seed)
    X, Y = rng.standard_normal((F.n, width)), rng.standard_normal((width, F.m))
    tangent, fma = F.tangent(X)
    assert close(tangent, J @ X) and fma == width * F.edges
    adjoint, fma = F.adjoint(Y)
    assert close(adjoint, Y @ J) and fma == width * F.edges


def check_run(program, schedule, J):
    run = program.execute(schedule)
    assert close(run.jacobian, J)
    assert run.fma == schedule.fma == sum(used for _, used in run.steps)
    assert run.tape == schedule.sweep_tape <= schedule.memory


def test_every_schedule_of_the_section_5_chain():
    program = ChainProgram.random(SECTION_5, seed=5)
    J = program.jacobian()
    schedules = jc.schedules(SECTION_5)
    assert len(schedules) == 52
    for schedule in schedules:
        check_run(program, schedule, J)


@settings(max_examples=60, deadline=None)
@given(chains(max_q=3), st.integers(0, 2 ** 32))
def test_every_schedule_counts_what_the_model_says(chain, seed):
    program = ChainProgram.random(chain, seed)
    J = program.jacobian()
    for schedule in jc.schedules(chain):
        check_run(program, schedule, J)


@settings(max_examples=80, deadline=None)
@given(chains(max_q=8, max_size=6), st.integers(0, 2 ** 32), st.data())
def test_optimized_plans_run_at_their_cost(chain, seed, data):
    program = ChainProgram.random(chain, seed)
    J = program.jacobian()
    bound = data.draw(st.none() | st.integers(0, chain.total_edges))
    plans = [jc.optimize(chain, bound, rule) for rule in jc.RULES] + list(jc.baselines(chain, bound).values())
    for plan in plans:
        check_run(program, plan.schedule, J)
        if plan.rule == "local" and bound is not None:
            assert program.execute(plan).tape <= bound  # the local rule bounds what a sweep records


def test_steps_report_each_operation():
    program = ChainProgram.random(SECTION_5, seed=1)
    run = program.execute(jc.optimize(SECTION_5, 50))
    assert run.steps == (("F_{2,2}: MxG(0); fma=14; M=14;", 14), ("F_{2,1}: MxG(1); fma=43; M=43;", 29),
                         ("F_{3,3}: GxM(0); fma=7; M=0;", 7), ("F_{3,1}: MxM(2); fma=56; M=43;", 6))


def test_bad_programs():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"F_2: a DAG with m = 5 outputs needs at least 5 edges, got \|E\| = 3"):
        ChainProgram.random(jc.Chain([(2, 2, 4), (5, 2, 3)]))
    F = Elemental.random(2, 3, 6, rng)
    with pytest.raises(ValueError, match="F_1: elemental is 2x3 with 6 edges, the chain says 2x3 with 7"):
        ChainProgram(jc.Chain([(2, 3, 7)]), [F])
    with pytest.raises(ValueError, match=r"tangent of an R\^3 -> R\^2 function needs 3 rows, got \(2, 2\)"):
        F.tangent(np.eye(2))
    with pytest.raises(ValueError, match=r"adjoint of an R\^3 -> R\^2 function needs 2 columns, got \(3, 3\)"):
        F.adjoint(np.eye(3))
    program = ChainProgram.random(SECTION_5)
    part = jc.Schedule.make(SECTION_5, jc.TANGENT, 2, 2)
    with pytest.raises(ValueError, match=r"the schedule computes F'_\{2,2\}, not the whole chain F'_\{3,1\}"):
        program.execute(part)


@pytest.mark.parametrize("call, message", [
    (lambda: ChainProgram.random(None), "chain must be a Chain (tensoradbook.chaining), got None"),
    (lambda: ChainProgram.random([(2, 2, 4)]), "chain must be a Chain"),
    (lambda: ChainProgram.random(SECTION_5, seed="a"), "seed must be a non-negative integer, got 'a'"),
    (lambda: ChainProgram.random(SECTION_5, seed=1.5), "seed must be a non-negative integer, got 1.5"),
    (lambda: ChainProgram.random(SECTION_5).execute(None), "execute runs a Schedule or a Plan, got None"),
    (lambda: Elemental.random("2", 3, 6, np.random.default_rng(0)), "F: m must be a positive integer, got '2'"),
    (lambda: Elemental.random(2, 3, 6, 0), "F: rng must be a numpy.random.Generator, got 0"),
])
def test_public_arguments_are_checked(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def test_random_programs_are_reproducible():
    chain = jc.Chain.random(5, seed=2)
    a, b = ChainProgram.random(chain, seed=9), ChainProgram.random(chain, seed=9)
    for x, y in itertools.zip_longest(a.elementals, b.elementals):
        assert np.array_equal(x.partials, y.partials) and np.array_equal(x.sources, y.sources)

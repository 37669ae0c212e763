"""The threads of a Numba module's call on a quiet and a busy machine (tensoradbook.codegen.threads).

The counts are checked against the machine's own: ``/proc`` read by hand, processes that keep every CPU busy,
OpenBLAS's count asked through threadpoolctl (an independent reader of the same setting). That a module gives the
same bits on one thread as on every CPU is checked for every differential case (tests/test_differential.py) and
here for the workloads whose products go to BLAS.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import statistics
import threading
import time
from contextlib import contextmanager

import numba
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook.codegen import threads
from tensoradbook.codegen.threads import (
    TRIES,
    MeasuredPlan,
    candidate_plans,
    confirmed,
    forced,
    limited,
    pinned,
    quota_cpus,
    running_threads,
    runnable,
    threads_beside,
)


@pytest.mark.parametrize("text, cpus", [(None, math.inf), ("", math.inf), ("max 100000", math.inf),
                                        ("200000 100000", 2.0), ("150000 100000\n", 1.5), ("50000 100000", 0.5)])
def test_the_cgroup_quota_in_cpus(text, cpus):
    assert quota_cpus(text) == cpus


def test_runnable_threads_of_a_loadavg_text():
    assert runnable("0.49 2.81 3.56 3/512 12345\n") == 3


@given(others=st.integers(0, 200), machine=st.integers(1, 128), usable=st.integers(1, 128))
@example(others=0, machine=2, usable=2)
@example(others=2, machine=2, usable=2)
def test_a_call_runs_on_the_free_cpus_it_may_use_and_at_least_one(others, machine, usable):
    got = threads_beside(others, machine, usable)
    assert 1 <= got <= usable
    assert got + others <= machine or got == 1  # never more threads than free CPUs, but one
    assert threads_beside(others + 1, machine, usable) <= got  # another busy thread never adds one of ours
    if machine - others >= usable:
        assert got == usable  # every CPU it may use is free
    assert threads_beside(None, machine, usable) == usable  # no /proc: every usable CPU


@given(earlier=st.none() | st.integers(0, 200), now=st.none() | st.integers(0, 200))
@example(earlier=None, now=3)
@example(earlier=0, now=2)
def test_a_busy_cpu_is_one_both_looks_saw_busy(earlier, now):
    got = confirmed(earlier, now)
    if now is None or earlier is None:
        assert got == now  # nothing to confirm with: the look made now decides
    else:
        assert got <= now and got <= earlier  # a thread one look alone saw is not counted
        assert got in (now, earlier)
        assert confirmed(now, earlier) == got


def test_a_thread_one_look_sees_for_a_moment_does_not_cut_the_threads(monkeypatch):
    looks = iter([0, 4, 0, 4, 4, 0, 4])  # other processes' runnable threads at each look, on 4 CPUs
    monkeypatch.setattr(threads, "others_running", lambda: next(looks))
    monkeypatch.setattr(threads, "usable_cpus", lambda: 4)
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(threads, "_decided", {"at": -math.inf, "threads": 1, "others": None})
    decided = []
    for stale in (False, False, False, False, False, False, True):
        # each call a new look, made just after the one before, or (stale) long after it
        threads._decided["at"] = time.monotonic() - (threads.CONFIRM_S + 1 if stale else threads.REFRESH_S)
        decided.append(running_threads())
    # a lone busy look changes nothing; two in a row give one thread; a look with none before it decides alone
    assert decided == [4, 4, 4, 4, 1, 4, 1]


def test_the_usable_cpus_are_the_affinity_mask_within_the_quota():
    quota = quota_cpus(threads.read_text("/sys/fs/cgroup/cpu.max"))
    expected = len(os.sched_getaffinity(0))
    if quota != math.inf:
        expected = min(expected, math.ceil(quota))
    assert threads.usable_cpus() == max(1, expected)


def test_own_running_threads_counts_the_caller():
    assert threads.own_running() >= 1  # this thread is running while it reads


def _spin():
    while True:
        pass


def _threads_once_settled(expect, seconds=60.0) -> int:
    """``running_threads()`` once it equals ``expect`` or ``seconds`` have passed (a generous hang check: processes
    start slowly on a loaded machine)."""
    deadline = time.monotonic() + seconds
    while True:
        threads._decided["at"] = -math.inf  # look again now
        got = running_threads()
        if expect(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def test_a_machine_whose_cpus_other_processes_keep_busy_gets_one_thread():
    machine = os.cpu_count() or 1
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(machine)]
    for spinner in spinners:
        spinner.start()
    try:
        assert _threads_once_settled(lambda got: got == 1) == 1
    finally:
        for spinner in spinners:
            spinner.terminate()
            spinner.join()


def _blas_threads() -> int:
    from threadpoolctl import threadpool_info

    return min(info["num_threads"] for info in threadpool_info() if info["internal_api"] == "openblas")


def test_limited_holds_numba_and_blas_and_restores_them():
    pytest.importorskip("threadpoolctl")
    numba_before, blas_before = numba.get_num_threads(), _blas_threads()
    with pinned(1), limited():
        assert numba.get_num_threads() == 1
        assert _blas_threads() == 1
        with limited():  # nested: the outer block's counts are restored only when it ends
            pass
        assert _blas_threads() == 1
    assert numba.get_num_threads() == numba_before
    assert _blas_threads() == blas_before


def test_limited_holds_the_kernels_and_blas_to_counts_of_their_own():
    pytest.importorskip("threadpoolctl")
    numba_before, blas_before = numba.get_num_threads(), _blas_threads()
    with pinned(numba_before), limited(1, blas_before):
        assert (numba.get_num_threads(), _blas_threads()) == (1, blas_before)
    with pinned(1), limited(numba_before, 1):  # a count given wins over the machine's
        assert (numba.get_num_threads(), _blas_threads()) == (numba_before, 1)
    assert (numba.get_num_threads(), _blas_threads()) == (numba_before, blas_before)


def test_limited_never_raises_the_callers_counts():
    numba_before = numba.get_num_threads()
    with pinned(numba_before + 8), limited():
        assert numba.get_num_threads() == numba_before


def test_threads_calling_at_once_restore_the_blas_count():
    pytest.importorskip("threadpoolctl")
    blas_before = _blas_threads()
    fn = tab.parse("f[i; j] = sum{k}_0^63 (a[i; k] * b[k; j])", {"f": (64, 64), "a": (64, 64), "b": (64, 64)})
    compiled = fn.compile("numba")
    args = {"a": np.ones((64, 64)), "b": np.ones((64, 64))}
    errors = []

    def call():
        try:
            for _ in range(20):
                assert compiled(args)[0, 0] == 64.0
        except AssertionError as error:  # pragma: no cover - shown by the assert below
            errors.append(error)

    workers = [threading.Thread(target=call) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors
    assert _blas_threads() == blas_before


@pytest.mark.parametrize("text, shapes", [
    # a matrix product past BLAS_WORK: numpy's BLAS, threaded or not
    ("f[i; j] = sum{k}_0^95 (a[i; k] * b[k; j])", {"f": (96, 96), "a": (96, 96), "b": (96, 96)}),
    # a convolution: the gather (im2col) and its product, and a parallel gradient kernel past PARALLEL_WORK
    ("y[n; f; i; j] = sum{c}_0^2 (sum{p}_0^2 (sum{q}_0^2 (w[f; c; p; q] * x[n; c; i + p; j + q])))",
     {"y": (4, 8, 30, 30), "w": (8, 3, 3, 3), "x": (4, 3, 32, 32)}),
])
def test_the_same_bits_on_one_thread_as_on_every_cpu(text, shapes):
    fn = tab.parse(text, shapes)
    grads = tab.derive(fn).compile("numba")
    rng = np.random.default_rng(0)
    args = {name: rng.standard_normal(shapes[name]) for name in fn.arguments}
    df = rng.standard_normal(shapes[fn.name])
    runs = []
    for count in (1, threads.usable_cpus()):
        with pinned(count):
            runs.append(grads(args, df))
    for name in fn.arguments:
        assert np.array_equal(runs[0][name].view(np.int64), runs[1][name].view(np.int64)), name
        np.testing.assert_allclose(runs[0][name], tab.derive(fn).evaluate(args, df)[name], rtol=1e-9, atol=1e-9)


# --- the plan each entry point measures: kernels' and BLAS's threads -----------------------------------------

class _Timed:
    """A fake ``limited`` that records the plan of each call, and a clock that each call advances by the next of
    ``costs[plan]`` (the last one kept; 1.0 for a plan not given), or the next of ``in_turn`` whatever its plan,
    so that the choice is the test's."""

    def __init__(self, costs: dict | None = None, in_turn=()):
        self.costs = {plan: list(times) for plan, times in (costs or {}).items()}
        self.in_turn = iter(in_turn)
        self.now, self.plans, self.clock_reads = 0.0, [], 0

    def limited(self, kernels, blas):
        @contextmanager
        def block():
            self.plans.append((kernels, blas))
            yield
        return block()

    def entry(self):
        times = self.costs.get(self.plans[-1], [1.0])
        self.now += next(self.in_turn, None) or (times.pop(0) if len(times) > 1 else times[0])
        return self.plans[-1]

    def clock(self):
        self.clock_reads += 1
        return self.now


def test_candidate_plans_give_the_kernels_every_thread_or_one_and_never_change_blas():
    assert candidate_plans(1) == [(1, 1)]
    assert candidate_plans(4) == [(4, 4), (1, 4)]


def test_an_entry_point_keeps_the_plan_of_least_time(monkeypatch):
    # the kernels on one thread beside threaded BLAS is fastest but for one slow call, which spoils its first pass
    timed = _Timed({(2, 2): [5.0], (1, 2): [1.0, 100.0, 1.0]})
    assert TRIES == 2  # the costs above: (2, 2) 5, 5 | 5, 5 (5), (1, 2) 1, 100 | 1, 1 (the faster pass: 1)
    monkeypatch.setattr(threads, "limited", timed.limited)
    plan = MeasuredPlan(clock=timed.clock)
    with pinned(2):
        assert plan.run(timed.entry) == (2, 2)  # the first call, every thread, not timed
        assert timed.clock_reads == 0
        tried = [plan.run(timed.entry) for _ in range(TRIES * 4)]
        assert tried == [(2, 2)] * TRIES + [(1, 2)] * 2 * TRIES + [(2, 2)] * TRIES  # in a row, A B B A
        assert plan.chosen == {2: (1, 2)}
        assert [plan.run(timed.entry) for _ in range(5)] == [(1, 2)] * 5
        reads = timed.clock_reads
    with pinned(3):  # a count first met is planned in its turn
        assert plan.run(timed.entry) in candidate_plans(3)
        assert timed.clock_reads == reads + 2 and 3 not in plan.chosen


@given(st.lists(st.integers(1, 1000), min_size=4 * TRIES, max_size=4 * TRIES))
@example([1] * (4 * TRIES))  # a tie goes to the first candidate, every thread to both
@example([1, 2, 2, 2, 1, 1, 2, 2])
@example([30, 20, 3, 3, 3, 3, 2, 2])  # every thread slowed in its first pass by a library's spinning threads
def test_the_chosen_plan_has_the_least_time_of_its_faster_pass(costs):
    # whole microseconds: the clock's differences are exact, so a tie is one
    timed = _Timed(in_turn=[1, *costs])  # the first call's cost is never read
    plan = MeasuredPlan(clock=timed.clock)
    with pytest.MonkeyPatch.context() as monkeypatch, pinned(2):
        monkeypatch.setattr(threads, "limited", timed.limited)
        for _ in range(1 + 4 * TRIES):
            plan.run(timed.entry)
    tries = {}
    for tried, cost in zip(timed.plans[1:], costs):
        tries.setdefault(tried, []).append(cost)
    best = min(candidate_plans(2), key=lambda tried: min(statistics.median(tries[tried][:TRIES]),
                                                           statistics.median(tries[tried][TRIES:])))
    assert plan.chosen == {2: best}


def test_one_thread_and_a_forced_plan_measure_nothing(monkeypatch):
    timed = _Timed()
    monkeypatch.setattr(threads, "limited", timed.limited)
    plan = MeasuredPlan(clock=timed.clock)
    with pinned(1):
        assert [plan.run(timed.entry) for _ in range(20)] == [(1, 1)] * 20
    with pinned(2), forced((2, 1)):
        assert [plan.run(timed.entry) for _ in range(20)] == [(2, 1)] * 20
    assert timed.clock_reads == 0 and plan.chosen == {}


def test_a_compiled_module_chooses_a_plan_per_entry_point_and_keeps_its_bits():
    """A small convolution (its gather kernel, BLAS products and a gradient kernel): after its planning calls
    on two threads each entry point called has chosen one of the candidates, and every call gave the same bits."""
    fn = tab.parse("f[o; i; j] = sum{p}_0^2 (sum{q}_0^2 (w[o; p; q] * x[i + p; j + q]))",
                   {"f": (8, 30, 30), "w": (8, 3, 3), "x": (32, 32)})
    grads = tab.derive(fn).compile("numba")
    rng = np.random.default_rng(1)
    args, df = {"w": rng.standard_normal((8, 3, 3)), "x": rng.standard_normal((32, 32))}, rng.standard_normal(
        (8, 30, 30))
    with pinned(2):
        runs = [grads(args, df) for _ in range(1 + 2 * len(candidate_plans(2)) * TRIES)]
    assert set(grads.plans) == {"gradients"}
    assert grads.plans["gradients"][2] in candidate_plans(2)
    for run in runs[1:]:
        for name in run:
            assert np.array_equal(run[name].view(np.int64), runs[0][name].view(np.int64)), name


def test_python_threads_planning_at_once_each_take_a_try_and_one_plan_is_chosen():
    """Eight Python threads call one entry point while it plans: every call runs on a candidate (tries taken at
    once may give one plan more than its turn, which once ran past the end of the schedule), and a plan is chosen."""
    plan, seen, errors = MeasuredPlan(), [], []

    def entry():
        seen.append(numba.get_num_threads())
        time.sleep(0.001)

    def call():
        try:
            with pinned(2):
                for _ in range(10):
                    plan.run(entry)
        except Exception as error:  # pragma: no cover - shown by the assert below  # noqa: BLE001
            errors.append(error)

    workers = [threading.Thread(target=call) for _ in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors and len(seen) == 80
    assert plan.chosen.keys() == {2} and plan.chosen[2] in candidate_plans(2)

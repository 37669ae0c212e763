"""How many threads one call of a generated Numba module runs on: all the CPUs it may use on a quiet machine,
one where other processes keep those CPUs busy (a class server at the start of an exercise).

A parallel kernel splits its elements evenly among its threads and ends when the last thread ends; OpenBLAS
splits a matrix product the same way and its threads wait for each other yielding the CPU. When other processes
keep every CPU busy, a thread the scheduler has put aside holds up the whole call for its time slices, again at
every kernel and product: on two busy CPUs the padded convolution's gradients took 1.3 s instead of 7 ms, the
matrix product 72 ms instead of 2.8 ms (benchmarks/workloads.py records the figures). A single thread waits for
no one: busy, it runs at its share of a CPU and no slower. So :func:`running_threads` gives each call

* the CPUs this process may use (:func:`usable_cpus`: its affinity mask and its cgroup's CPU quota), less
* the CPUs that other processes' runnable threads occupy at that moment (:func:`others_running`: the kernel's
  count of runnable threads, ``/proc/loadavg``, less this process's own),

at least one; and :func:`limited` holds Numba's threads and OpenBLAS's (numpy's BLAS) to that many around the call,
never more than the caller had set, and restores them after. The count is looked at again at most every
:data:`REFRESH_S`, so that a call of a few microseconds does not pay for reading ``/proc``. A CPU counts as taken
only where two looks in a row see it taken (:func:`confirmed`): on a quiet machine about one look in 130 sees a
thread the kernel woke for a moment (measured here), and that one look put the calls of the next
:data:`REFRESH_S` on one thread (a benchmark's whole series of matrix products at half speed).

Within those threads, whether a module's Numba kernels use them all beside its BLAS products is measured, not
planned from thresholds: OpenBLAS's threads spin for a while after each product and Numba's after each parallel
kernel, so that interleaved, each may wait for the other's cores (a small convolution's gradients: 8 ms with both
threaded, 0.4 ms with the kernels on one thread beside threaded BLAS, 2 CPUs), while a module of one large kernel
wants every thread. :class:`MeasuredPlan` times each way on the calls after the first, on this machine, and keeps
the faster (as FFTW's planner and PyTorch's ``cudnn.benchmark`` do).

Numba's kernels share out whole output elements, so they give the same bits on any number of threads and in either
plan (tests/test_threads.py and every differential case check it). OpenBLAS's products do not always: their last
bits may change with OpenBLAS's thread count (:func:`candidate_plans` names shapes where they do), which is why
the plans never change it, and why a product of such a shape on a machine busy enough for the fallback to give it
one thread may differ in its last bits from the same product on a quiet machine.
"""

from __future__ import annotations

import ctypes
import math
import os
import statistics
import threading
import time
from contextlib import contextmanager
from functools import lru_cache

#: Seconds a count of the busy CPUs is used for before it is looked at again.
REFRESH_S = 0.02
#: Seconds within which an earlier look confirms the next one (:func:`confirmed`); an older look says nothing.
CONFIRM_S = 5 * REFRESH_S
#: Timed calls in a row of each candidate plan, in each of the two passes over the candidates before an entry point
#: keeps the fastest (:class:`MeasuredPlan`).
TRIES = 2

_decided = {"at": -math.inf, "threads": 1, "others": None}
_pinned: list[int] = []   # the counts set by pinned() blocks now open, innermost last
_forced: list[tuple[int, int]] = []  # the plans set by forced() blocks now open, innermost last


def read_text(path: str) -> str | None:
    """A small file's text (of /proc or /sys), or None where it cannot be read."""
    try:
        with open(path) as file:
            return file.read()
    except OSError:
        return None


def quota_cpus(cpu_max: str | None) -> float:
    """The CPUs a cgroup v2 ``cpu.max`` text (``"quota period"`` or ``"max period"``) allows; infinite if none."""
    if not cpu_max:
        return math.inf
    quota, _, period = cpu_max.partition(" ")
    if quota == "max" or not period.strip():
        return math.inf
    return int(quota) / int(period)


@lru_cache(maxsize=1)
def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask, then at most its cgroup's CPU quota, rounded up."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = quota_cpus(read_text("/sys/fs/cgroup/cpu.max"))
    return max(1, cpus if quota == math.inf else min(cpus, math.ceil(quota)))


def runnable(loadavg: str) -> int:
    """The runnable threads of the whole machine from a ``/proc/loadavg`` text (its fourth field, ``"3/512"``)."""
    return int(loadavg.split()[3].partition("/")[0])


def own_running() -> int:
    """This process's threads that are running or ready to run (state ``R`` in ``/proc/self/task/*/stat``)."""
    count = 0
    for task in os.listdir("/proc/self/task"):
        stat = read_text(f"/proc/self/task/{task}/stat")
        if stat and stat[stat.rindex(")") + 2] == "R":  # the state follows the name, which may hold spaces
            count += 1
    return count


def others_running() -> int | None:
    """Other processes' threads running or ready to run now, or None where ``/proc`` does not say."""
    loadavg = read_text("/proc/loadavg")
    if loadavg is None or not os.path.isdir("/proc/self/task"):
        return None
    return max(0, runnable(loadavg) - own_running())


def threads_beside(others: int | None, machine_cpus: int, usable: int) -> int:
    """The threads a call runs on beside ``others`` runnable threads of other processes: the machine's free CPUs,
    at most ``usable``, at least one."""
    if others is None:
        return usable
    return max(1, min(usable, machine_cpus - others))


def confirmed(earlier: int | None, now: int | None) -> int | None:
    """Other processes' runnable threads as two looks in a row see them: those both saw (the fewer), or the look
    made now alone where there was no earlier one to confirm it."""
    if earlier is None or now is None:
        return now
    return min(earlier, now)


def running_threads() -> int:
    """The threads the next call runs on (a :func:`pinned` count where one is set)."""
    if _pinned:
        return _pinned[-1]
    now = time.monotonic()
    if now - _decided["at"] >= REFRESH_S:
        others = others_running()
        earlier = _decided["others"] if now - _decided["at"] < CONFIRM_S else None
        _decided.update(at=now, others=others,
                        threads=threads_beside(confirmed(earlier, others), os.cpu_count() or 1, usable_cpus()))
    return _decided["threads"]


@contextmanager
def pinned(threads: int):
    """Every call inside the block on ``threads`` threads, whatever the machine's load (tests, benchmarks)."""
    _pinned.append(threads)
    try:
        yield
    finally:
        _pinned.pop()


@lru_cache(maxsize=1)
def openblas_libraries() -> tuple:
    """``(get, set)`` of the number of threads of each OpenBLAS loaded into this process (numpy's, scipy's),
    found by name in ``/proc/self/maps``, whatever prefix and suffix its build gave the functions."""
    mapped = (line.split(None, 5) for line in (read_text("/proc/self/maps") or "").splitlines())
    paths = sorted({fields[5] for fields in mapped if len(fields) == 6 and "openblas" in fields[5].lower()})
    found = []
    for path in paths:
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("", "scipy_"):
            for suffix in ("", "64_"):
                getter = getattr(library, f"{prefix}openblas_get_num_threads{suffix}", None)
                setter = getattr(library, f"{prefix}openblas_set_num_threads{suffix}", None)
                if getter is not None and setter is not None:
                    found.append((getter, setter))
    return tuple(found)


class _BlasHold:
    """OpenBLAS's counts held while calls are inside :func:`limited`, and restored when the last one leaves (calls
    from several Python threads share OpenBLAS's one setting)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._inside = 0
        self._before: list = []  # each OpenBLAS's setter and its count before the first call came in

    def enter(self, threads: int) -> None:
        with self._lock:
            if not self._inside:
                self._before = [(setter, getter()) for getter, setter in openblas_libraries()]
            self._inside += 1
            for setter, before in self._before:
                setter(min(before, threads))

    def leave(self) -> None:
        with self._lock:
            self._inside -= 1
            if not self._inside:
                for setter, before in self._before:
                    setter(before)


_blas = _BlasHold()


@contextmanager
def limited(kernels: int | None = None, blas: int | None = None):
    """Numba's threads (of this thread) held to ``kernels`` and OpenBLAS's to ``blas`` inside the block, each
    :func:`running_threads` where not given, and never more than the caller had set."""
    import numba

    threads = running_threads()
    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(before, kernels or threads)))
    _blas.enter(blas or threads)
    try:
        yield
    finally:
        _blas.leave()
        numba.set_num_threads(before)


def candidate_plans(threads: int) -> list[tuple[int, int]]:
    """The ways a call may share ``threads`` CPUs, ``(Numba's threads, OpenBLAS's threads)``: every thread to
    both, or the kernels on one beside threaded products. OpenBLAS's count is not a candidate: its products'
    last bits depend on it (a 16 x 900 by 900 x 75 product differs between one thread and two, and a 100 x 1000
    by 1000 x 100 between two and three, OpenBLAS 0.3.31), and a module must not change its bits as it plans."""
    if threads == 1:
        return [(1, 1)]
    return [(threads, threads), (1, threads)]


def planning_calls() -> int:
    """The calls of an entry point after which its plan on this machine's usable CPUs is chosen (a benchmark's
    warm-up): the first, then two passes of :data:`TRIES` calls of each candidate."""
    return 1 + 2 * len(candidate_plans(usable_cpus())) * TRIES


@contextmanager
def forced(plan: tuple[int, int]):
    """Every call inside the block on ``plan`` (Numba's threads, OpenBLAS's threads), measured or not (tests)."""
    _forced.append(plan)
    try:
        yield
    finally:
        _forced.pop()


def faster_pass(seconds: list[float]) -> float:
    """A plan's time from its calls, :data:`TRIES` a pass: the least of its passes' medians."""
    return min(statistics.median(seconds[first:first + TRIES]) for first in range(0, len(seconds), TRIES))


class MeasuredPlan:
    """How the calls of one entry point of a generated module share the CPUs, measured on this machine.

    The first call runs on every thread and is not timed (it types and loads what :func:`~.compile.precompile`
    did not). The next ones try the :func:`candidate_plans` of the :func:`running_threads` count in two passes,
    the second in reverse order (A, B, B, A), :data:`TRIES` calls in a row each, timed by ``clock``. A plan's
    time is its faster pass (the median of that pass's calls): the first pass may meet threads that another
    library's last call left spinning (PyTorch's or XLA's: 25 ms for a layer norm's 1.6 ms call, measured), which
    the second pass no longer does. From then on that count's calls run on the plan of the least time.
    A count is planned when it is first met, so a machine that gets busy (fewer threads) plans again; on one
    thread there is nothing to choose. Every plan computes the same bits: only Numba's threads differ.
    """

    def __init__(self, clock=time.perf_counter):
        self.clock = clock
        self.chosen: dict[int, tuple[int, int]] = {}
        self._times: dict[int, dict[tuple[int, int], list[float]]] = {}
        self._first = True
        self._lock = threading.Lock()  # Python threads calling at once: each try taken and recorded in turn

    def run(self, entry, *args):
        """``entry(*args)`` on the plan chosen for the threads of this call, or on one being tried."""
        if _forced:
            with limited(*_forced[-1]):
                return entry(*args)
        threads = running_threads()
        if self._first or threads == 1:
            self._first = False
            with limited(threads, threads):
                return entry(*args)
        with self._lock:
            chosen = self.chosen.get(threads)
            if chosen is None:
                times = self._times.setdefault(threads, {tried: [] for tried in candidate_plans(threads)})
                schedule = candidate_plans(threads) + candidate_plans(threads)[::-1]
                # calls from several Python threads may give one plan more tries than its turn: the rest go last
                plan = schedule[min(sum(len(seconds) for seconds in times.values()) // TRIES, len(schedule) - 1)]
        if chosen is not None:
            with limited(*chosen):
                return entry(*args)
        with limited(*plan):
            start = self.clock()
            result = entry(*args)
            elapsed = self.clock() - start
        with self._lock:
            times[plan].append(elapsed)
            if threads not in self.chosen and all(len(tried) >= 2 * TRIES for tried in times.values()):
                self.chosen[threads] = min(times, key=lambda tried: faster_pass(times[tried]))
                self._times.pop(threads, None)
        return result

"""The numbers at which code generation switches from one way of computing a tensor to another, each named once.

Every speed path of the generated modules (rows of lanes, parallel loops, blocks of a row, numpy over broadcast
views, BLAS products, im2col gathers, contractions split off a body, temporaries for deep expressions) is taken on
one side of a :class:`Threshold` and not on the other. The planners compare through :meth:`Threshold.reached` and
:meth:`Threshold.exceeded` alone, never against a bare number, so that :func:`traced` can record which side of
which threshold each planned function fell on: the differential tests (tests/test_differential.py) read
:data:`THRESHOLDS` to draw shapes on both sides of each, and fail while a side of one is never reached. A
threshold added here is covered the day it is added.

Every path computes the same values as the reference evaluator (:func:`tensoradbook.lang.evaluate.evaluate`),
non-finite inputs included; only the speed differs.
"""

from __future__ import annotations

from collections import Counter
from contextlib import contextmanager

_seen: list[Counter] = []  # the counters of the traced() blocks now open


class Threshold:
    """A planning threshold: its ``name``, its ``value`` (tests may set another), and what is compared against it."""

    def __init__(self, name: str, value, compares: str):
        self.name = name
        self.value = value
        self.compares = compares

    def reached(self, quantity) -> bool:
        """Whether ``quantity`` is at least the threshold (the side is recorded where :func:`traced`)."""
        return self._side(quantity >= self.value)

    def exceeded(self, quantity) -> bool:
        """Whether ``quantity`` is above the threshold (recorded as :meth:`reached` is)."""
        return self._side(quantity > self.value)

    def _side(self, above: bool) -> bool:
        for counter in _seen:
            counter[self.name, above] += 1
        return above


#: Rows of lanes (:func:`~.module.lane`): a shorter last output dimension leaves too little to vectorise, and its
#: elements run one by one.
MIN_LANES = Threshold("MIN_LANES", 8, "the output's last dimension")
#: Rows a kernel with lanes needs to share among threads; with fewer (a bias gradient is one row), each row is cut
#: into blocks of :data:`LANE_BLOCK` lanes that run in parallel (:func:`~.module._blocks`).
MIN_ROWS = Threshold("MIN_ROWS", 16, "the rows of lanes of an output")
#: Lanes per block of a row, where rows are too few: a row longer than this is several blocks.
LANE_BLOCK = Threshold("LANE_BLOCK", 64, "the lanes of a row cut into blocks")
#: Element-terms (:func:`~tensoradbook.lang.evaluate.typical_terms`) from which a Numba CPU kernel runs in parallel.
#: A parallel launch wakes every thread of Numba's pool, which costs more than a smaller kernel's whole work on one
#: core, and far more on a busy machine; below this much work the serial loop is done first. The loop and its
#: arithmetic are the same either way: so are the bits.
PARALLEL_WORK = Threshold("PARALLEL_WORK", 1 << 16, "a kernel's typical element-terms")
#: Output elements from which an element-wise body with a function of ``numpy_faster`` runs as numpy over views
#: (:func:`~.module.broadcasts`): below, numpy's fixed cost per call is more than it saves.
VECTOR_WORK = Threshold("VECTOR_WORK", 1 << 14, "the output elements of an element-wise body")
#: Element-terms from which a plain contraction goes to BLAS (a matrix product, :mod:`.contraction`): below,
#: numpy's fixed cost per call (reshapes, views, BLAS's dispatch) is more than the kernel's loop.
BLAS_WORK = Threshold("BLAS_WORK", 1 << 16, "a contraction's typical element-terms")
#: A gathered operand (:func:`~.contraction.gathered_contraction`) is made where the contraction has at least this
#: many terms per gathered element, each element then multiplied by that many others (a convolution's filters).
GATHER_SHARE = Threshold("GATHER_SHARE", 4, "a contraction's terms per element of its gather")
#: A contraction over fresh indices (:func:`~.contraction.inner_contraction`) is split off unless its terms are
#: more than this many times the kernel's: BLAS runs several times as many terms a second as a loop does.
INNER_SHARE = Threshold("INNER_SHARE", 2, "a split contraction's terms over its kernel's")
#: Brackets nested in one generated expression from which the printer stores a temporary: Python's parser stops
#: at 200 levels (a chain of 200 additions is one expression).
MAX_NESTING = Threshold("MAX_NESTING", 50, "the brackets nested in one generated expression")

#: Serial kernels launched one after another (with only their outputs' allocations between) from which they are
#: compiled as one fused function (:mod:`.fusion`): Numba's fixed cost per compiled function, paid once.
FUSED_KERNELS = Threshold("FUSED_KERNELS", 2, "the serial kernels an entry point launches in a row")

THRESHOLDS: tuple[Threshold, ...] = (MIN_LANES, MIN_ROWS, LANE_BLOCK, PARALLEL_WORK, VECTOR_WORK, BLAS_WORK,
                                     GATHER_SHARE, INNER_SHARE, MAX_NESTING, FUSED_KERNELS)


@contextmanager
def traced():
    """A :class:`~collections.Counter` of ``(threshold name, reached)`` over the plans made inside the block."""
    counter: Counter = Counter()
    _seen.append(counter)
    try:
        yield counter
    finally:
        _seen.remove(counter)

"""The check functions of chapter 06 (tensoradbook.exercises): right answers pass in any form, typical wrong
answers fail with a message that says what is wrong, and None says "no answer yet". The expected sets and ranges
are computed here by direct enumeration, independently of the checks' own brute force."""

import math

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook import exercises as ex
from tensoradbook.exercises.ch06_kernels import other_sizes
from feedback import hides, messages

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SECTION6 = ("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
            {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)})
MATMUL = ("f[i; j] = sum{k}_0^4 (x[i; k] * y[k; j])", {"f": (3, 4), "x": (3, 5), "y": (5, 4)})
SHIFT = ("f[i; j] = x[i + j] ** 2", {"f": (3, 4), "x": (6,)})
DIAGONAL = ("f[i] = x[i; i] ** 2", {"f": (3,), "x": (3, 3)})
STRIDED = ("f[i] = sum{k}_0^3 (x[2 * i + k])", {"f": (4,), "x": (10,)})
IDENTITY = ("f[i] = sin (x[i])", {"f": (5,), "x": (5,)})


@pytest.mark.parametrize("call", [
    lambda: ex.check_gradient_element(MATMUL[0], "x", None, shapes=MATMUL[1]),
    lambda: ex.check_scatter_races(SHIFT[0], "x", None, shapes=SHIFT[1]),
    lambda: ex.check_max_contention(SECTION6[0], "b", None, shapes=SECTION6[1]),
    lambda: ex.check_gather_bounds(STRIDED[0], "x", "i", None, shapes=STRIDED[1]),
])
def test_none_is_no_answer_yet(call):
    result = call()
    assert not result.ok and result.pending
    assert "no answer yet" in str(result)


def test_exported():
    for name in ("check_gradient_element", "check_scatter_races", "check_max_contention", "check_gather_bounds"):
        assert name in ex.__all__
        assert name in ex.__doc__


# --- check_gradient_element --------------------------------------------------------------------------------


def dx_loop(i, k, y, df):
    return sum(df[i, j] * y[k, j] for j in range(df.shape[1]))


def dx_numpy(i, k, df, y):  # any order of the array parameters, vectorised
    return np.dot(df[i, :], y[k, :])


def dx_numpy_row(i, k, x, y, df, f):  # takes arrays it does not need
    return float((df[i] * y[k]).sum())


@numba.njit
def dx_numba(i, k, y, df):
    total = 0.0
    for j in range(df.shape[1]):
        total += df[i, j] * y[k, j]
    return total


@pytest.mark.parametrize("answer", [dx_loop, dx_numpy, dx_numpy_row, dx_numba,
                                    lambda i, k, y, df: sum(df[i, j] * y[k, j] for j in range(len(y[k]) - 1, -1, -1))])
def test_gradient_element_right_answers(answer):
    result = ex.check_gradient_element(MATMUL[0], "x", answer, shapes=MATMUL[1])
    assert result.ok, str(result)
    assert "finite differences" in result.note


def test_gradient_element_other_argument_and_forward_result():
    def dy(k, j, x, df):
        return sum(x[i, k] * df[i, j] for i in range(x.shape[0]))

    assert ex.check_gradient_element(MATMUL[0], "y", dy, shapes=MATMUL[1])

    def dd(m, d, df, f):  # the section 6 gradient reading the forward result, as the kernels do
        n_i, n_j = df.shape
        n_k = len(d) - n_i  # d[i + k] reads n_i + n_k - 1 of the n_i + n_k elements of d (one spare)
        return 3 * d[m] ** 2 * sum(-df[m - k, j] * f[m - k, j]
                                   for k in range(max(0, m - n_i + 1), min(n_k - 1, m) + 1) for j in range(n_j))

    assert ex.check_gradient_element(SECTION6[0], "d", dd, shapes=SECTION6[1])

    def dx_diagonal(r, s, x, df):
        return 2 * df[r] * x[r, r] if r == s else 0.0

    assert ex.check_gradient_element(DIAGONAL[0], "x", dx_diagonal, shapes=DIAGONAL[1])


def test_gradient_element_messages():
    text, shapes = MATMUL
    short = ex.check_gradient_element(text, "x", lambda i, k, y, df: sum(df[i, j] * y[k, j] for j in range(3)),
                                      shapes=shapes)
    assert not short and "should be" in messages(short) and "15 of 15 elements differ" in messages(short)
    double = ex.check_gradient_element(text, "x", lambda i, k, y, df: 2 * dx_loop(i, k, y, df), shapes=shapes)
    assert "every element is 2 times the right value" in messages(double)
    wrapped = ex.check_gradient_element(text, "x", lambda i, k, y, df: sum(df[i, j] * y[k, j - 1] for j in range(4)),
                                        shapes=shapes)
    assert "reads y[0; -1], outside the shape (5, 4) of y" in messages(wrapped)
    transposed = ex.check_gradient_element(text, "x", lambda i, k, y, df: sum(df[i, j] * y[j, k] for j in range(4)),
                                           shapes=shapes)
    assert "fails at dx[0; 4]" in messages(transposed) and "outside the shape" in messages(transposed)
    no_df = ex.check_gradient_element(text, "x", lambda i, k, y: y[k, 0], shapes=shapes)
    assert "does not read df" in messages(no_df)
    unknown = ex.check_gradient_element(text, "x", lambda i, k, z, df: 0.0, shapes=shapes)
    assert "parameter 'z' is not an array" in messages(unknown)
    few = ex.check_gradient_element(text, "x", lambda i: 0.0, shapes=shapes)
    assert "2 index parameter(s)" in messages(few)
    star = ex.check_gradient_element(text, "x", lambda i, k, *arrays: 0.0, shapes=shapes)
    assert "no *args" in messages(star)
    not_callable = ex.check_gradient_element(text, "x", "dx[i; k] = 0", shapes=shapes)
    assert "must be a function" in messages(not_callable)
    not_number = ex.check_gradient_element(text, "x", lambda i, k, df: "zero", shapes=shapes)
    assert "returned 'zero', not a number" in messages(not_number)
    boom = ex.check_gradient_element(text, "x", lambda i, k, df: 1 / 0, shapes=shapes)
    assert "raised ZeroDivisionError at dx[0; 0]" in messages(boom)

    delta_missing = ex.check_gradient_element(DIAGONAL[0], "x", lambda r, s, x, df: 2 * df[r] * x[r, r],
                                              shapes=DIAGONAL[1])
    assert "dx[0; 1] must be 0" in messages(delta_missing) and "condition is missing" in messages(delta_missing)
    too_narrow = ex.check_gradient_element(
        SHIFT[0], "x", lambda m, x, df: sum(df[i, m - i] * 2 * x[m] for i in range(max(0, m - 3), min(2, m))),
        shapes=SHIFT[1])
    assert "gives 0 at dx[0], but the right value is" in messages(too_narrow)


def test_gradient_element_typed_sizes_fail_at_other_sizes():
    """A body right at the exercise's sizes only (a size typed, or computed from one that happens to be equal)
    fails, as the assignment's hidden tests fail it on other shapes; the sizes tried are the same function's."""
    text, shapes = MATMUL
    typed = ex.check_gradient_element(text, "y", lambda k, j, x, df: sum(df[i, j] * x[i, k] for i in range(3)),
                                      shapes=shapes)
    assert not typed and "with other sizes (f: (6, 8), x: (6, 10), y: (10, 8))" in messages(typed)
    assert "never types them" in messages(typed) and hides(typed, 3)
    smallest = ex.check_gradient_element(text, "y", lambda k, j, x, df: sum(df[i, j] * x[i, k]
                                                                           for i in range(min(x.shape))), shapes=shapes)
    assert not smallest and "f: (6, 7), x: (6, 5), y: (5, 7)" in messages(smallest)
    squeezed = ex.check_gradient_element(text, "y", lambda k, j, x, df: float(np.squeeze(df)[:, j] @ x[:, k]),
                                         shapes=shapes)
    assert not squeezed and "f: (1, 1), x: (1, 5), y: (5, 1)" in messages(squeezed)
    sizes = [other.shapes for other in other_sizes(tab.parse(*SECTION6))]
    assert sizes == [{"f": (6, 8), "a": (6, 10), "b": (8, 10), "c": (6, 6), "d": (16,)},
                     {"f": (9, 10), "a": (9, 5), "b": (10, 5), "c": (9, 9), "d": (14,)},
                     {"f": (1, 1), "a": (1, 5), "b": (1, 5), "c": (1, 1), "d": (6,)}]  # d keeps its spare element


def test_gradient_element_arrays_are_read_only():
    def writes(i, k, y, df):
        y[0, 0] = 0.0
        return 0.0

    result = ex.check_gradient_element(MATMUL[0], "x", writes, shapes=MATMUL[1])
    assert not result and "raised ValueError" in messages(result)


def test_gradient_element_unknown_argument():
    with pytest.raises(ValueError, match="not an argument"):
        ex.check_gradient_element(MATMUL[0], "z", None, shapes=MATMUL[1])


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 4), st.integers(1, 4), st.integers(0, 2))
def test_gradient_element_matmul_any_size(n_i, n_j, n_k, which):
    text = f"f[i; j] = sum{{k}}_0^{n_k - 1} (x[i; k] * y[k; j])"
    shapes = {"f": (n_i, n_j), "x": (n_i, n_k), "y": (n_k, n_j)}

    def right(i, k, y, df):  # dx = df y^T, by numpy: an oracle independent of the core
        return float(np.asarray(df)[i] @ np.asarray(y)[k])

    assert ex.check_gradient_element(text, "x", right, shapes=shapes)
    wrong = [lambda i, k, y, df: 1.5 * right(i, k, y, df),
             lambda i, k, y, df: right(i, k, y, df) + 0.01,
             lambda i, k, y, df: float(np.asarray(df)[i, :-1] @ np.asarray(y)[k, :-1]) if n_j > 1 else 0.0][which]
    assert not ex.check_gradient_element(text, "x", wrong, shapes=shapes)


# --- check_scatter_races and check_max_contention ----------------------------------------------------------


def enumerate_writers(index_of, ranges):
    """gradient index -> set of threads (the first len(thread) loop variables), by plain loops."""
    import itertools

    table = {}
    for point in itertools.product(*(range(n) for n in ranges)):
        table.setdefault(index_of(*point), set()).add(point[:2])
    return table


def test_races_right_answers_any_form():
    text, shapes = SHIFT
    table = enumerate_writers(lambda i, j: (i + j,), (3, 4))
    races = {m for (m,), who in table.items() if len(who) > 1}
    assert races == {1, 2, 3, 4}
    for answer in (races, sorted(races), [(m,) for m in races], tuple(np.array(sorted(races))),
                   np.isin(np.arange(6), sorted(races))):
        result = ex.check_scatter_races(text, "x", answer, shapes=shapes)
        assert result.ok, str(result)
    assert "4 of 6 elements race" in ex.check_scatter_races(text, "x", races, shapes=shapes).note


def test_races_section6():
    text, shapes = SECTION6
    assert ex.check_scatter_races(text, "c", {(0, 0), (1, 1), (2, 2)}, shapes=shapes)
    assert ex.check_scatter_races(text, "d", set(range(7)), shapes=shapes)
    assert ex.check_scatter_races(text, "b", {(j, k) for j in range(4) for k in range(5)}, shapes=shapes)
    assert ex.check_scatter_races(text, "a", {(i, k) for i in range(3) for k in range(5)}, shapes=shapes)


def test_races_none_for_a_bijection():
    result = ex.check_scatter_races(IDENTITY[0], "x", set(), shapes=IDENTITY[1])
    assert result.ok and "needs no atomics" in result.note


def test_races_messages():
    text, shapes = SHIFT
    # racing elements left out, non-racing ones listed: the same words, no element named
    missed = ex.check_scatter_races(text, "x", {1, 2}, shapes=shapes)
    single = ex.check_scatter_races(text, "x", {0, 1, 2, 3, 4}, shapes=shapes)
    assert messages(missed) == messages(single)
    assert "two or more different threads read it" in messages(missed) and "dx[" not in messages(missed)
    one_thread = ex.check_scatter_races("f[i] = sum{k}_0^2 (x[i] * y[k])", "x", {0},
                                        shapes={"f": (2,), "x": (2,), "y": (3,)})
    assert "one after another and do not race" in messages(one_thread)
    never = ex.check_scatter_races(SECTION6[0], "c", {(0, 0), (1, 1), (2, 2), (0, 1)}, shapes=SECTION6[1])
    assert "dc[" not in messages(never)
    outside = ex.check_scatter_races(text, "x", {6}, shapes=shapes)
    assert "dx[6] is not an element: dx has shape (6,)" in messages(outside)
    arity = ex.check_scatter_races(text, "x", {(1, 2)}, shapes=shapes)
    assert "needs 1 integer(s)" in messages(arity)
    mask = ex.check_scatter_races(text, "x", np.zeros(5, dtype=bool), shapes=shapes)
    assert "a mask must have the shape (6,)" in messages(mask)
    bad = ex.check_scatter_races(text, "x", "1, 2, 3, 4", shapes=shapes)
    assert "must be a set of indices" in messages(bad)
    with pytest.raises(ValueError, match="threads must be"):
        ex.check_scatter_races(text, "x", set(), shapes=shapes, threads="warp")


def test_races_extended_threads():
    # one thread per (i, j, k): dc[i; i] gets 4 * 5 = 20 adds from 20 different threads
    text, shapes = SECTION6
    assert ex.check_max_contention(text, "c", 20, shapes=shapes, threads="extended")
    assert ex.check_max_contention(text, "c", 4, shapes=shapes)
    diagonal = {(0, 0), (1, 1), (2, 2)}
    assert ex.check_scatter_races(text, "c", diagonal, shapes=shapes, threads="extended")


@SETTINGS
@given(st.integers(-2, 3), st.integers(-2, 3), st.integers(1, 4), st.integers(1, 4), st.data())
def test_races_against_enumeration(p, q, n_i, n_j, data):
    offset = max(0, -p * (n_i - 1)) + max(0, -q * (n_j - 1))
    size = offset + max(0, p * (n_i - 1)) + max(0, q * (n_j - 1)) + 1
    text = f"f[i; j] = x[{p} * i + {q} * j + {offset}] ** 2"
    shapes = {"f": (n_i, n_j), "x": (size,)}
    table = enumerate_writers(lambda i, j: (p * i + q * j + offset,), (n_i, n_j))
    races = {m for (m,), who in table.items() if len(who) > 1}
    assert ex.check_scatter_races(text, "x", races, shapes=shapes)
    most = max(len(who) for who in table.values())
    assert ex.check_max_contention(text, "x", most, shapes=shapes)
    assert not ex.check_max_contention(text, "x", most + 1, shapes=shapes)
    flip = data.draw(st.integers(0, size - 1))
    assert not ex.check_scatter_races(text, "x", races ^ {flip}, shapes=shapes)


def test_contention_messages():
    text, shapes = SECTION6
    assert ex.check_max_contention(text, "b", 3, shapes=shapes)
    assert ex.check_max_contention(text, "d", np.int64(12), shapes=shapes)
    adds = ex.check_max_contention(text, "c", 20, shapes=shapes)
    assert "20 is the number of adds into dc[0; 0], not of threads" in messages(adds)
    low = ex.check_max_contention(text, "d", 8, shapes=shapes)
    high = ex.check_max_contention(text, "d", 13, shapes=shapes)
    # below and above the maximum: the same words (no binary search)
    assert messages(low).replace("8", "N") == messages(high).replace("13", "N")
    assert "8 is not the largest number of threads" in messages(low) and "12" not in str(low) + str(high)
    for wrong in ("12", 12.0, True):
        assert "integer count" in messages(ex.check_max_contention(text, "d", wrong, shapes=shapes))


# --- check_gather_bounds -----------------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [
    lambda m: (max(0, math.ceil((m - 3) / 2)), min(3, m // 2)),
    lambda m: (max(0, -((3 - m) // 2)), min(3, math.floor(m / 2))),
    lambda m: range(max(0, (m - 2) // 2), min(3, m // 2) + 1),
    lambda m: (np.int64(max(0, math.ceil((m - 3) / 2))), np.int64(min(3, m // 2))),
])
def test_gather_bounds_right_answers(answer):
    result = ex.check_gather_bounds(STRIDED[0], "x", "i", answer, shapes=STRIDED[1])
    assert result.ok, str(result)
    assert "the core's dx sums over" in result.note


def test_gather_bounds_with_a_step():
    # over k = m - 2 i: the values have the parity of m, a range with step 2
    def over_k(m):
        low_i, high_i = max(0, math.ceil((m - 3) / 2)), min(3, m // 2)
        return range(m - 2 * high_i, m - 2 * low_i + 1, 2)

    assert ex.check_gather_bounds(STRIDED[0], "x", "k", over_k, shapes=STRIDED[1])
    contiguous = ex.check_gather_bounds(STRIDED[0], "x", "k", lambda m: (0, 3), shapes=STRIDED[1])
    assert not contiguous and "visits k = 1, but no in-range (i, k) with k = 1 has x[2 * i + k] = x[0]" \
        in messages(contiguous)


def test_gather_bounds_section6():
    text, shapes = SECTION6
    assert ex.check_gather_bounds(text, "d", "k", lambda m: (max(0, m - 2), min(4, m)), shapes=shapes)
    assert ex.check_gather_bounds(text, "d", "i", lambda m: (max(0, m - 4), min(2, m)), shapes=shapes)
    assert ex.check_gather_bounds(text, "d", "j", lambda m: (0, 3) if m < 7 else (1, 0), shapes=shapes)
    assert ex.check_gather_bounds(text, "a", "j", lambda i, k: (0, 3), shapes=shapes)
    assert ex.check_gather_bounds(text, "c", "k", lambda r, s: (0, 4) if r == s else (0, -1), shapes=shapes)


def test_gather_bounds_messages():
    text, shapes = SECTION6
    wide = ex.check_gather_bounds(text, "d", "k", lambda m: (max(0, m - 2), m), shapes=shapes)
    assert "at dd[5] your loop visits k = 5, but no in-range (i, j, k) with k = 5 has d[i + k] = d[5]" \
        in messages(wide)
    assert "6 value(s) too many" in messages(wide)
    narrow = ex.check_gather_bounds(text, "d", "k", lambda m: (max(0, m - 1), min(4, m)), shapes=shapes)
    assert "at dd[2] your loop misses k = 0: i = 2, j = 0, k = 0 reads d[2]" in messages(narrow)
    assert "missing" in messages(narrow)
    real = ex.check_gather_bounds(text, "d", "k", lambda m: (m / 2, 4), shapes=shapes)
    assert "gave the bound 0.0, not an integer" in messages(real)
    single = ex.check_gather_bounds(text, "d", "k", lambda m: 3, shapes=shapes)
    assert "must return a pair (low, high)" in messages(single)
    boom = ex.check_gather_bounds(text, "d", "k", lambda m: (0, 4 // (m - 3)), shapes=shapes)
    assert "raised ZeroDivisionError at dd[3]" in messages(boom)
    endless = ex.check_gather_bounds(text, "d", "k", lambda m: (0, 10**9), shapes=shapes)
    assert "are the bounds finite" in messages(endless)
    not_callable = ex.check_gather_bounds(text, "d", "k", (0, 4), shapes=shapes)
    assert "must be a function" in messages(not_callable)


def test_gather_bounds_refuses_bad_exercises():
    text, shapes = SECTION6
    with pytest.raises(ValueError, match="neither an output index"):
        ex.check_gather_bounds(text, "d", "q", None, shapes=shapes)
    with pytest.raises(ValueError, match="occurs 2 times"):
        ex.check_gather_bounds("f[i] = x[i] * x[i + 1]", "x", "i", None, shapes={"f": (3,), "x": (4,)})
    with pytest.raises(ValueError, match="not an argument"):
        ex.check_gather_bounds(text, "z", "k", None, shapes=shapes)


@SETTINGS
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 5))
def test_gather_bounds_against_enumeration(stride, n_i, n_k):
    # f[i] = sum_k x[stride i + k]: for x[m] the loop over i runs over {i : 0 <= m - stride i < n_k}
    size = stride * (n_i - 1) + n_k
    text = f"f[i] = sum{{k}}_0^{n_k - 1} (x[{stride} * i + k])"
    shapes = {"f": (n_i,), "x": (size,)}
    values = {m: [i for i in range(n_i) if 0 <= m - stride * i < n_k] for m in range(size)}
    right = ex.check_gather_bounds(text, "x", "i", lambda m: (min(values[m], default=1), max(values[m], default=0)),
                                   shapes=shapes)
    assert right, str(right)
    off = ex.check_gather_bounds(text, "x", "i", lambda m: (min(values[m], default=1), max(values[m], default=0) + 1),
                                 shapes=shapes)
    assert not off

"""The check functions of chapters 01, 02, 03 and 05 (tensoradbook.exercises): right answers pass,
typical wrong answers fail with a message that says what is wrong, and None says "no answer yet"."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensoradbook as tab
from tensoradbook import exercises as ex
from feedback import hides, messages

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

BROADCAST = ("f[i; j] = x[i] ** 2", {"f": (3, 4), "x": (3,)})
DIAGONAL = ("f[i] = x[i; i] ** 2", {"f": (3,), "x": (3, 3)})
SHIFT = ("f[i; j] = exp (x[i + j])", {"f": (3, 4), "x": (6,)})
SECTION6 = ("f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))",
            {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)})
SCALAR = "f[] = sin (x[] * y[]) * x[]"


@pytest.mark.parametrize("call", [
    lambda: ex.check_derivative(BROADCAST[0], "x", None, shapes=BROADCAST[1]),
    lambda: ex.check_term_count(SHIFT[0], "x", [3], None, shapes=SHIFT[1]),
    lambda: ex.check_index_matrix(SECTION6[0], "d", None, shapes=SECTION6[1]),
    lambda: ex.check_adjoint(SCALAR, "x[] * y[]", None),
    lambda: ex.check_scalar_gradient(SCALAR, {"x": 1.0, "y": 2.0}, None),
    lambda: ex.check_vec_index((3, 4), (1, 2), None),
    lambda: ex.check_jacobian_memory((3, 4), (3, 4), None),
    lambda: ex.check_jacobian("f[i] = x[i] ** 2", "x", {"x": np.ones(3)}, None, shapes={"f": (3,), "x": (3,)}),
])
def test_none_is_no_answer_yet(call):
    result = call()
    assert not result.ok and result.pending
    assert "no answer yet" in str(result)


# --- check_derivative ----------------------------------------------------------------------------

@pytest.mark.parametrize("fn, answer", [
    (BROADCAST, "dx[i] = sum{j}_0^3 (df[i; j] * 2 * x[i])"),
    (BROADCAST, "dx[q] = 2 * x[q] * sum{j}_0^3 (df[q; j])"),
    (DIAGONAL, "dx[i; j] = if {i - j = 0} then (df[i] * 2 * x[i; i]) else (0)"),
    (DIAGONAL, "dx[i; j] = if {j = i} then (2 * df[j] * x[i; j]) else (0)"),
    (SHIFT, "dx[m] = sum{i}_(max [m - 3; 0])^(min [m; 2]) (df[i; m - i] * exp (x[m]))"),
])
def test_derivative_right_answers_pass(fn, answer):
    result = ex.check_derivative(fn[0], "x", answer, shapes=fn[1])
    assert result.ok, str(result)


def test_derivative_core_output_passes_for_every_argument():
    fn = tab.parse(*SECTION6)
    grads = tab.derive(fn)
    for name in fn.arguments:
        assert ex.check_derivative(fn, name, str(grads[name]))


def test_derivative_second_order():
    fn = tab.parse("f[i] = x[i] ** 3 * y[i]", {"f": (3,), "x": (3,), "y": (3,)})
    dx = tab.derive(fn)["x"]
    # the gradient of sum(ddx * dx) with respect to x
    assert ex.check_derivative(dx, "x", "dx[i] = ddx[i] * df[i] * y[i] * 6 * x[i]")
    assert not ex.check_derivative(dx, "x", "dx[i] = ddx[i] * df[i] * y[i] * 3 * x[i]")


def test_derivative_messages():
    text, shapes = BROADCAST
    missing_sum = ex.check_derivative(text, "x", "dx[i] = df[i; 0] * 2 * x[i]", shapes=shapes)
    assert "dx[0] is" in messages(missing_sum) and "should be" in messages(missing_sum)
    factor = ex.check_derivative(text, "x", "dx[i] = sum{j}_0^3 (df[i; j] * x[i])", shapes=shapes)
    assert "0.5 times the right value" in messages(factor)
    too_wide = ex.check_derivative(text, "x", "dx[i] = sum{j}_0^4 (df[i; j] * 2 * x[i])", shapes=shapes)
    assert "cannot be read" in messages(too_wide) and "leaves df's shape" in messages(too_wide)
    assert "^" in messages(too_wide)  # the caret line
    text, shapes = DIAGONAL
    no_delta = ex.check_derivative(text, "x", "dx[i; j] = df[i] * 2 * x[i; j]", shapes=shapes)
    assert "dx[0; 1] must be 0" in messages(no_delta) and "Kronecker delta" in messages(no_delta)
    text, shapes = SHIFT
    narrow = ex.check_derivative(text, "x", "dx[m] = sum{i}_(max [m - 3; 1])^(min [m; 2]) (df[i; m - i] * exp (x[m]))",
                                 shapes=shapes)
    assert "yours gives 0 at dx[0]" in messages(narrow)
    name = ex.check_derivative(text, "x", "x[m] = 1", shapes=shapes)
    assert "the gradient is called 'dx'" in messages(name)
    syntax = ex.check_derivative(text, "x", "dx[m] = df[m; 0] +", shapes=shapes)
    assert "cannot be read" in messages(syntax)
    not_text = ex.check_derivative(text, "x", 3, shapes=shapes)
    assert "must be text" in messages(not_text)


def test_derivative_unknown_argument_is_a_setup_error():
    with pytest.raises(ValueError):
        ex.check_derivative(BROADCAST[0], "y", None, shapes=BROADCAST[1])


# --- check_term_count ----------------------------------------------------------------------------

@SETTINGS
@given(st.integers(1, 4), st.integers(1, 4), st.data())
def test_term_count_matches_a_direct_count(n, m, data):
    fn = ("f[i; j] = x[i + j]", {"f": (n, m), "x": (n + m - 1,)})
    beta = data.draw(st.integers(0, n + m - 2))
    count = sum(1 for i in range(n) for j in range(m) if i + j == beta)
    assert ex.check_term_count(fn[0], "x", [beta], count, shapes=fn[1])
    wrong = data.draw(st.sampled_from([count - 1, count + 1, m, n * m]).filter(lambda w: w != count))
    result = ex.check_term_count(fn[0], "x", [beta], wrong, shapes=fn[1])
    assert not result.ok
    assert messages(result).startswith(f"{wrong} is not the number") and hides(result, "too many", "too few")


def test_term_count_section6():
    # dd[beta] sums over j (4 values) and the k with 0 <= beta - k <= 2, 0 <= k <= 4
    for beta in range(8):
        ks = [k for k in range(5) if 0 <= beta - k <= 2]
        assert ex.check_term_count(SECTION6[0], "d", [beta], 4 * len(ks), shapes=SECTION6[1])
    assert ex.check_term_count(SECTION6[0], "c", [1, 1], 20, shapes=SECTION6[1])
    assert ex.check_term_count(SECTION6[0], "c", [0, 1], 0, shapes=SECTION6[1])
    assert "not an integer" not in messages(ex.check_term_count(SECTION6[0], "d", [1], 20, shapes=SECTION6[1]))
    assert "integer count" in messages(ex.check_term_count(SECTION6[0], "d", [1], 8.0, shapes=SECTION6[1]))


# --- check_index_matrix --------------------------------------------------------------------------

def test_index_matrix():
    text, shapes = SECTION6
    assert ex.check_index_matrix(text, "d", [[1, 0, 1]], shapes=shapes)
    assert ex.check_index_matrix(text, "c", np.array([[1, 0, 0], [1, 0, 0]]), shapes=shapes)
    assert ex.check_index_matrix(text, "b", [[0, 1, 0], [0, 0, 1]], shapes=shapes)
    wrong = ex.check_index_matrix(text, "d", [[1, 1, 0]], shapes=shapes)
    assert "that is not the index matrix of d[i + k]" in messages(wrong)
    assert "c_0 i + c_1 j + c_2 k + a_r has the row [c_0, c_1, c_2]" in messages(wrong)
    assert hides(wrong, "it is i + k", "[1, 0, 1]", "[[1, 0, 1]]")
    # which row is wrong is not said: a wrong first row and a wrong second row draw the same words
    rows = {messages(ex.check_index_matrix(text, "b", A, shapes=shapes))
            for A in ([[0, 1, 0], [0, 1, 1]], [[1, 1, 0], [0, 0, 1]])}
    assert len(rows) == 1 and hides(ex.check_index_matrix(text, "b", [[0, 1, 0], [0, 1, 1]], shapes=shapes),
                                    "it is k", "[0, 0, 1]", "row 1")
    shape = ex.check_index_matrix(text, "c", [[1, 0, 0]], shapes=shapes)
    assert "must be 2x3" in messages(shape)
    transposed = ex.check_index_matrix(text, "a", [[1, 0], [0, 0], [0, 1]], shapes=shapes)
    assert "must be 2x3" in messages(transposed)
    offset = ex.check_index_matrix("f[i] = x[2 * i + 1]", "x", [[2]], shapes={"f": (3,), "x": (7,)})
    assert offset.ok and "offset" in str(offset)
    assert "not an integer" in messages(ex.check_index_matrix(text, "d", [[1, 0, 0.5]], shapes=shapes))


# --- check_adjoint, check_scalar_gradient --------------------------------------------------------

def test_adjoint_right_answers_pass():
    assert ex.check_adjoint(SCALAR, "x[] * y[]", "cos (x[] * y[]) * x[]")
    assert ex.check_adjoint(SCALAR, "x[] * y[]", "x[] * cos (y[] * x[])")
    assert ex.check_adjoint(SCALAR, "sin (x[] * y[])", "x[]")
    assert ex.check_adjoint(SCALAR, "x[]", "sin (x[] * y[]) + x[] * y[] * cos (x[] * y[])")
    assert ex.check_adjoint(SCALAR, "sin (x[] * y[]) * x[]", 1)
    assert ex.check_adjoint("f[] = 3 * x[]", "x[]", 3.0)


def test_adjoint_messages():
    local = ex.check_adjoint(SCALAR, "x[] * y[]", "cos (x[] * y[])")
    assert "local derivative" in messages(local) and "eq. 2" in messages(local)
    one_path = ex.check_adjoint(SCALAR, "x[]", "sin (x[] * y[])")
    assert "only the path through the consumer" in messages(one_path)
    assert "2 consumers" in messages(one_path)
    syntax = ex.check_adjoint(SCALAR, "x[]", "sin (")
    assert "cannot be read" in messages(syntax)
    with pytest.raises(ValueError):
        ex.check_adjoint(SCALAR, "y[] * x[]", None)  # not a part of f (the order matters)


@SETTINGS
@given(st.floats(0.2, 2.0), st.floats(0.2, 2.0))
def test_scalar_gradient(x, y):
    right = {"x": math.cos(x * y) * x * y + math.sin(x * y), "y": math.cos(x * y) * x * x}
    assert ex.check_scalar_gradient(SCALAR, {"x": x, "y": y}, right)
    wrong = dict(right, y=right["y"] + 0.5)
    result = ex.check_scalar_gradient(SCALAR, {"x": x, "y": y}, wrong)
    assert not result.ok and "df/dy" in messages(result) and "df/dx" not in messages(result)


def test_scalar_gradient_messages():
    x, y = 1.0, 2.0
    one_path = ex.check_scalar_gradient(SCALAR, {"x": x, "y": y}, {"x": math.sin(x * y), "y": math.cos(x * y)})
    assert "one consumer only" in messages(one_path) and "eq. 3" in messages(one_path)
    missing = ex.check_scalar_gradient(SCALAR, {"x": x, "y": y}, {"x": 0.0})
    assert "missing: y" in messages(missing)
    assert "must be a dict" in messages(ex.check_scalar_gradient(SCALAR, {"x": x, "y": y}, (1, 2)))


# --- chapter 03: vec, Jacobians -----------------------------------------------------------------

@SETTINGS
@given(st.lists(st.integers(1, 5), min_size=1, max_size=4), st.data())
def test_vec_index(shape, data):
    index = tuple(data.draw(st.integers(0, n - 1)) for n in shape)
    # eq. 4 with zero-based indices: strides s_0 = 1, s_d = N_0 ... N_(d-1)
    strides = [math.prod(shape[:d]) for d in range(len(shape))]
    right = sum(s * i for s, i in zip(strides, index))
    row_major = sum(math.prod(shape[d + 1:]) * i for d, i in enumerate(index))
    if row_major == right:  # the two orders agree here: the exercise could not tell them apart
        with pytest.raises(ValueError, match="same position"):
            ex.check_vec_index(shape, index, right)
        return
    assert ex.check_vec_index(shape, index, right)
    result = ex.check_vec_index(shape, index, right + 1)
    assert not result.ok
    result = ex.check_vec_index(shape, index, row_major)
    assert not result.ok and "row-major" in messages(result)


def test_vec_index_messages():
    assert "row-major" in messages(ex.check_vec_index((3, 4), (1, 2), 6))
    # off by one either way, or any other wrong position: the same words, with eq. 4 as the hint
    wrong = {messages(ex.check_vec_index((3, 4), (1, 2), n)).replace(str(n), "N") for n in (8, 5, 9, 10)}
    assert len(wrong) == 1 and "eq. 4" in wrong.pop()
    assert "outside" in messages(ex.check_vec_index((3, 4), (1, 2), 12))
    assert "integer" in messages(ex.check_vec_index((3, 4), (1, 2), 7.0))
    # The first and the last element have the same position in both orders: refused as an exercise.
    for index in [(0, 0, 0), (1, 2, 3)]:
        with pytest.raises(ValueError, match="same position"):
            ex.check_vec_index((2, 3, 4), index, None)
    with pytest.raises(ValueError, match="not an index"):
        ex.check_vec_index((2, 3, 4), (2, 0, 0), None)


def test_vec_index_function_is_tried_on_every_element_of_other_shapes():
    """A function answer (the assignment's programming exercise) is called on every element of the exercise's
    tensor and of the check's own shapes, so one right for three dimensions only, or for the exercise's element
    only, fails visibly."""
    def vec(shape, index):
        return sum(i * math.prod(shape[:d]) for d, i in enumerate(index))

    right = ex.check_vec_index((2, 3, 4), (1, 2, 0), vec)
    assert right.ok, str(right)
    assert ex.check_vec_index((5,), (4,), vec)  # no refusal: every element is tried anyway
    three = ex.check_vec_index((2, 3, 4), (1, 2, 0), lambda s, i: i[0] + s[0] * i[1] + s[0] * s[1] * i[2])
    assert not three and "vec_index((6,), (0,)) raised IndexError" in messages(three)
    two = ex.check_vec_index((2, 3, 4), (1, 2, 0), lambda s, i: i[0] + s[0] * i[1])  # right at (1, 2, 0)
    assert not two and "vec_index((2, 3, 4), (0, 0, 1)) = 0 is not the position of A[0; 0; 1]" in messages(two)
    row_major = ex.check_vec_index((2, 3, 4), (1, 2, 0), lambda s, i: int(np.ravel_multi_index(i, s)))
    assert "row-major" in messages(row_major) and "must work for any shape" in messages(row_major)
    assert "not an integer" in messages(ex.check_vec_index((2, 3, 4), (1, 2, 0), lambda s, i: 5.0))


def _notebook_calls(notebook, function):
    """The literal arguments of every call of ``function`` in a chapter's code cells."""
    import ast
    import pathlib

    import nbformat

    path = pathlib.Path(__file__).resolve().parent.parent / "notebooks" / notebook
    calls = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code" or function not in cell.source:
            continue
        source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == function:
                calls.append([ast.literal_eval(arg) for arg in node.args])
    return calls


def test_chapter_03_vec_exercise_rejects_the_row_major_answer():
    """Chapter 03, exercise 1: the index asked for must tell column-major from row-major order."""
    (call,) = _notebook_calls("03_tensor_functions.ipynb", "check_vec_index")
    shape, index, answer = call
    assert answer is None
    right = int(np.ravel_multi_index(index, shape, order="F"))
    row_major = int(np.ravel_multi_index(index, shape, order="C"))
    assert right != row_major
    assert ex.check_vec_index(shape, index, right)
    wrong = ex.check_vec_index(shape, index, row_major)
    assert "row-major" in messages(wrong) and hides(wrong, right)


def test_jacobian_memory():
    n = 1000
    assert ex.check_jacobian_memory((n, n), (n, n), (n * n, n * n, 8 * n ** 4))
    swapped = ex.check_jacobian_memory((10, 20), (30,), (30, 200, 48000))
    assert "swapped" in messages(swapped) and hides(swapped, "(200)", "(30)")
    assert hides(ex.check_jacobian_memory((10, 20), (30,), (20, 30, 4800)), 200)
    entries = ex.check_jacobian_memory((10, 20), (30,), (200, 30, 6000))
    assert "number of entries" in messages(entries)
    rows = ex.check_jacobian_memory((10, 20), (30,), (20, 30, 4800))
    assert "rows = 20" in messages(rows)
    assert "triple" in messages(ex.check_jacobian_memory((2,), (2,), 32))
    assert ex.check_jacobian_memory((4,), (3,), (4, 3, 48), itemsize=4)


def test_jacobian():
    rng = np.random.default_rng(1)
    X = rng.uniform(0.5, 1.5, (2, 3))
    square = ("f[i; j] = x[i; j] ** 2", {"f": (2, 3), "x": (2, 3)})
    assert ex.check_jacobian(square[0], "x", {"x": X}, np.diag(2 * X.reshape(-1, order="F")), shapes=square[1])
    rowsum = ("f[i] = sum{j}_0^2 (x[i; j])", {"f": (2,), "x": (2, 3)})
    J = np.kron(np.ones((1, 3)), np.eye(2))  # columns of x stacked: each output sums one row
    assert ex.check_jacobian(rowsum[0], "x", {"x": X}, J, shapes=rowsum[1])
    c_order = ex.check_jacobian(rowsum[0], "x", {"x": X}, np.kron(np.eye(2), np.ones((1, 3))), shapes=rowsum[1])
    assert "row-major" in messages(c_order)
    transposed = ex.check_jacobian(rowsum[0], "x", {"x": X}, J.T, shapes=rowsum[1])
    assert "transpose" in messages(transposed)
    off = J.copy()
    off[1, 1] = 2.0
    entry = ex.check_jacobian(rowsum[0], "x", {"x": X}, off, shapes=rowsum[1])
    assert "that is not d vec f / d vec x" in messages(entry)
    assert hides(entry, "right value", "should be", "is 0", "[1, 1]", "entries differ")  # the right entry is 0
    # no entry is named: a wrong entry anywhere draws the same words
    others = J.copy()
    others[0, 4] = 5.0
    assert messages(ex.check_jacobian(rowsum[0], "x", {"x": X}, others, shapes=rowsum[1])) == messages(entry)
    # matrix product: d vec(X Y) / d vec X = Y^T kron I (the textbook identity)
    Y = rng.standard_normal((3, 2))
    product = ("f[i; j] = sum{k}_0^2 (x[i; k] * y[k; j])", {"f": (2, 2), "x": (2, 3), "y": (3, 2)})
    assert ex.check_jacobian(product[0], "x", {"x": X, "y": Y}, np.kron(Y.T, np.eye(2)), shapes=product[1])

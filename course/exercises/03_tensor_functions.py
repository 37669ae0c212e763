"""Chapter 03: tensor-valued functions

The instructor's side of the exercises whose prompts and check calls are in notebooks/03_tensor_functions.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
import itertools

import numpy as np

from tensoradbook.exercises import check_jacobian, check_jacobian_memory, check_vec_index


# %% answer 1
answer_1 = 1 + 2 * 2 + 0 * 2 * 3


# %% test 1
check_vec_index((2, 3, 4), (1, 2, 0), answer_1)


# %% answer 2
answer_2 = (32 * 10, 32 * 28 * 28, 32 * 10 * 32 * 28 * 28 * 8)


# %% test 2 points=2
check_jacobian_memory((32, 10), (32, 28, 28), answer_2)


# %% given 3
matvec = ("f[i] = sum{j}_0^2 (x[i; j] * y[j])", {"f": (2,), "x": (2, 3), "y": (3,)})
point = {"x": np.ones((2, 3)), "y": np.array([1.0, 2.0, 3.0])}


# %% answer 3
answer_3 = [[1, 0, 2, 0, 3, 0],
            [0, 1, 0, 2, 0, 3]]


# %% test 3 points=2
check_jacobian(matvec[0], "x", point, answer_3, shapes=matvec[1])


# %% text 4
# **Exercise 4 (programming: vec).** Write a function `vec_index(shape, index)` that returns the
# (zero-based) position of the element `index` of a tensor of shape `shape` in its vec, for any
# number of dimensions, e.g. `vec_index((2, 3, 4), (1, 2, 0))`. The test below calls it on every
# element of that tensor and of tensors of four other shapes (one to five dimensions); hidden tests
# try more shapes.


# %% answer 4
def vec_index(shape, index):
    position, stride = 0, 1
    for n, i in zip(shape, index):
        position += i * stride
        stride *= n
    return position


# %% test 4 points=3
assert callable(vec_index), "no answer yet: define vec_index in the cell above"
check_vec_index((2, 3, 4), (1, 2, 0), vec_index)


# %% hidden 4
# the same check on other shapes: every element of each (and of the check's own shapes)
for shape in [(5,), (3, 4), (4, 1, 3, 2), (2, 2, 2, 2, 2, 2)]:
    result = check_vec_index(shape, tuple(n - 1 for n in shape), vec_index)
    assert result, f"vec_index on a tensor of shape {shape}: {result}"

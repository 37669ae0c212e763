"""Chapter 06a: kernels

The instructor's side of the exercises whose prompts and check calls are in notebooks/06a_kernels.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
import math

from tensoradbook.exercises import check_gather_bounds, check_gradient_element


# %% note 1
# Define `dy_element(k, j, x, df)` in the answer cell. Do not hard-code the sizes: the test below runs your function
# on this product at other sizes too, and hidden tests on matrix products of other shapes (use `x.shape`).


# %% given 1
matmul = ("f[i; j] = sum{k}_0^4 (x[i; k] * y[k; j])", {"f": (3, 4), "x": (3, 5), "y": (5, 4)})


# %% answer 1
def dy_element(k, j, x, df):
    return sum(df[i, j] * x[i, k] for i in range(x.shape[0]))


# %% test 1 points=3
check_gradient_element(matmul[0], "y", dy_element, shapes=matmul[1])


# %% hidden 1
for n_i, n_k, n_j in [(5, 2, 3), (1, 4, 2), (6, 3, 1)]:
    other = (f"f[i; j] = sum{{k}}_0^{n_k - 1} (x[i; k] * y[k; j])",
             {"f": (n_i, n_j), "x": (n_i, n_k), "y": (n_k, n_j)})
    result = check_gradient_element(other[0], "y", dy_element, shapes=other[1], seed=1)
    assert result, f"dy_element with x of shape {(n_i, n_k)}: {result}"


# %% given 2
strided = ("f[i] = sum{k}_0^3 (x[2 * i + k])", {"f": (4,), "x": (10,)})


# %% answer 2a
answer_2a = lambda m: (max(0, math.ceil((m - 3) / 2)), min(3, m // 2))  # noqa: E731


# %% test 2a points=2
check_gather_bounds(strided[0], "x", "i", answer_2a, shapes=strided[1])


# %% answer 2b
answer_2b = lambda m: range(m % 2 if m < 6 else m - 6, min(3, m) + 1, 2)  # noqa: E731


# %% test 2b
check_gather_bounds(strided[0], "x", "k", answer_2b, shapes=strided[1])

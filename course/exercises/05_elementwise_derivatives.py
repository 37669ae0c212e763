"""Chapter 05: element-wise derivatives

The instructor's side of the exercises whose prompts and check calls are in notebooks/05_elementwise_derivatives.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
import tensoradbook as tab
from tensoradbook.exercises import check_derivative, check_index_matrix, check_term_count

# the section 6 example of the report
text6 = "f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))"
shapes6 = {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}


# %% given 1
window = ("f[i] = sum{k}_0^3 (w[i + k; k] * v[k])", {"f": (3,), "w": (6, 4), "v": (4,)})


# %% answer 1
answer_1 = [[1, 1], [0, 1]]


# %% test 1
check_index_matrix(window[0], "w", answer_1, shapes=window[1])


# %% answer 2
answer_2 = "dv[k] = sum{i}_0^2 (df[i] * w[i + k; k])"


# %% test 2 points=2
check_derivative(window[0], "v", answer_2, shapes=window[1])


# %% answer 3
answer_3 = 2 * 4


# %% test 3 points=2
check_term_count(text6, "d", [5], answer_3, shapes=shapes6)


# %% given 4
# the derivative of f[i] = exp (x[i]) * y[i], written out (this assignment's policy has no derive)
first = tab.parse("dx[i] = df[i] * exp (x[i]) * y[i]",
                  {"dx": (4,), "df": (4,), "x": (4,), "y": (4,)})
print(first)


# %% answer 4
answer_4 = "dx[i] = ddx[i] * df[i] * exp (x[i]) * y[i]"


# %% test 4 points=2
check_derivative(first, "x", answer_4)

"""Chapter 07: higher order

The instructor's side of the exercises whose prompts and check calls are in notebooks/07_higher_order.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
import numpy as np

import tensoradbook as tab
from tensoradbook.ad import random_arguments
from tensoradbook.exercises import check_hessian_pattern, check_hessian_vector_product, check_second_derivative

# the section 6 example of the report
text6 = "f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))"
shapes6 = {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}
f6 = tab.parse(text6, shapes6)


# %% given 1
shift = ("f[i] = sin (x[i]) * x[i + 1]", {"f": (4,), "x": (5,)})


# %% answer 1
answer_1 = ("dx[b] = if {b <= 3} then (df[b] * (-sin (x[b]) * x[b + 1] * ddx[b]"
            " + cos (x[b]) * ddx[b + 1])) else (0)"
            " + if {b >= 1} then (df[b - 1] * cos (x[b - 1]) * ddx[b - 1]) else (0)")


# %% test 1 points=3
check_second_derivative(shift[0], "x", "x", answer_1, shapes=shift[1])


# %% given 2
cube = ("f[i] = x[i] ** 3 * y[i]", {"f": (3,), "x": (3,), "y": (3,)})


# %% answer 2
answer_2 = "dy[i] = ddx[i] * df[i] * 3 * x[i] ** 2"


# %% test 2 points=2
check_second_derivative(cube[0], "x", "y", answer_2, shapes=cube[1])


# %% given 3
rng = np.random.default_rng(2017)
point = random_arguments(f6, rng)
df_point = rng.standard_normal((3, 4))
v_point = rng.standard_normal((4, 5))


# %% answer 3
my_hv = None  # e.g. tab.derive(...).evaluate(..., v_point)["b"]
### BEGIN SOLUTION
my_hv = tab.derive(tab.derive(f6)["b"]).evaluate({**point, "df": df_point}, v_point)["b"]
### END SOLUTION


# %% test 3 points=2
check_hessian_vector_product(f6, "b", point, df_point, v_point, my_hv)


# %% given 4
convolution = ("f[i] = tanh (sum{k}_0^2 (w[k] * x[i + k]))", {"f": (6,), "w": (3,), "x": (8,)})


# %% answer 4
answer_4 = [1, 2, 3, 4, 5]


# %% test 4 points=2
check_hessian_pattern(convolution[0], "x", 3, answer_4, shapes=convolution[1])

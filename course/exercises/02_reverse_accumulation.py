"""Chapter 02: reverse accumulation

The instructor's side of the exercises whose prompts and check calls are in notebooks/02_reverse_accumulation.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
from tensoradbook.exercises import check_adjoint, check_scalar_gradient


# %% answer 1
answer_1 = "cos (x[] * y[]) * x[]"


# %% test 1 points=2
check_adjoint("f[] = sin (x[] * y[]) * x[]", "x[] * y[]", answer_1)


# %% answer 2
answer_2 = "sin (x[] * y[]) + x[] * y[] * cos (x[] * y[])"


# %% test 2 points=2
check_adjoint("f[] = sin (x[] * y[]) * x[]", "x[]", answer_2)


# %% answer 3
answer_3 = {"x": 3.0 / 2.0 + 2 * 2.0, "y": 0.6931}


# %% test 3 points=2
check_scalar_gradient("f[] = log (x[]) * y[] + x[] ** 2", {"x": 2.0, "y": 3.0}, answer_3)

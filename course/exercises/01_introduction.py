"""Chapter 01: the introduction

The instructor's side of the exercises whose prompts and check calls are in notebooks/01_introduction.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
from tensoradbook.exercises import check_derivative, check_term_count


# %% answer 1
answer_1 = "dx[j] = sum{i}_0^1 (df[i; j] * 3 * x[j] ** 2)"


# %% test 1 points=2
check_derivative("f[i; j] = x[j] ** 3", "x", answer_1, shapes={"f": (2, 4), "x": (4,)})


# %% answer 2
answer_2 = "dx[i; j] = if {j = 2} then (df[i]) else (0)"


# %% test 2 points=2
check_derivative("f[i] = x[i; 2]", "x", answer_2, shapes={"f": (3,), "x": (3, 4)})


# %% given 3
shift = ("f[i; j] = x[i + j]", {"f": (4, 5), "x": (8,)})


# %% answer 3a
answer_3a = 3


# %% test 3a
check_term_count(shift[0], "x", [5], answer_3a, shapes=shift[1])


# %% answer 3b
answer_3b = 1


# %% test 3b
check_term_count(shift[0], "x", [7], answer_3b, shapes=shift[1])

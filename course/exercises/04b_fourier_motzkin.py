"""Chapter 04b: Fourier-Motzkin elimination

The instructor's side of the exercises whose prompts and check calls are in notebooks/04b_fourier_motzkin.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
from tensoradbook.exercises import check_loop_bounds, check_point_count, check_redundant_rows


# %% given 1
A_ex = [[1, 0], [0, 1], [0, -1], [-1, 2], [-1, -1]]
b_ex = [0, 0, -4, 0, -7]


# %% answer 1
answer_1 = ((0, 4), lambda x1: (0, min(2 * x1, 7 - x1)))


# %% test 1 points=2
check_loop_bounds(A_ex, b_ex, answer_1)


# %% answer 2
answer_2 = 6


# %% test 2 points=2
check_point_count([[1, -2, -2]], [1], (7, 4, 4), answer_2)


# %% given 3
A_red = [[1, 0], [0, 1], [1, 1], [-1, 0], [0, -1], [-1, -1], [1, -1]]
b_red = [0, 0, -2, -3, -3, -5, -4]


# %% answer 3
answer_3 = {2, 6}


# %% test 3 points=2
check_redundant_rows(A_red, b_red, answer_3)

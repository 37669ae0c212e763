"""Chapter 09a: matrix-free Jacobian chaining

The instructor's side of the exercises whose prompts and check calls are in notebooks/09a_jacobian_chaining.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
from tensoradbook import chaining as jc
from tensoradbook.exercises import check_cell_fma, check_homogeneous_costs, check_two_factor_optimum

# the introduction's chain (section 1 of the chapter): (m, n, |E|) for F_1 .. F_4
intro = jc.Chain([(5, 3, 28), (4, 5, 48), (1, 4, 5), (4, 1, 21)])


# %% answer 1
answer_1 = "d"


# %% test 1 points=2
check_two_factor_optimum((6, 3, 5, 40, 70), answer_1)


# %% given 2
chain2 = "4\n5 6 23\n3 5 16\n3 3 7\n4 3 4\n"


# %% answer 2
answer_2 = (300, 200)


# %% test 2 points=2
check_homogeneous_costs(chain2, answer_2)


# %% answer 3
answer_3 = 53


# %% test 3 points=2
check_cell_fma(intro, 3, 2, answer_3)

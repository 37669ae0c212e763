"""Chapter 09b: tape bounds

The instructor's side of the exercises whose prompts and check calls are in notebooks/09b_tape_bounds.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
from tensoradbook import chaining as jc
from tensoradbook.exercises import check_bounded_optimum, check_tape_threshold

# the introduction's chain (chapter 09a, section 1): (m, n, |E|) for F_1 .. F_4
intro = jc.Chain([(5, 3, 28), (4, 5, 48), (1, 4, 5), (4, 1, 21)])


# %% given 1
chain4 = [(4, 3, 18), (6, 4, 18), (3, 6, 25), (2, 3, 8)]


# %% answer 1
answer_1 = 146


# %% test 1 points=2
check_bounded_optimum(chain4, 63, answer_1)


# %% answer 2
answer_2 = 81


# %% test 2 points=2
check_tape_threshold(intro, answer_2)

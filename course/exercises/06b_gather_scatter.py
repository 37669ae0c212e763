"""Chapter 06b: gather against scatter

The instructor's side of the exercises whose prompts and check calls are in notebooks/06b_gather_scatter.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
from tensoradbook.exercises import check_max_contention, check_scatter_races

# the section 6 example of the report
text = "f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))"
shapes = {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}


# %% given 1
shift = ("f[i; j] = x[i + j] ** 2", {"f": (3, 4), "x": (6,)})


# %% answer 1
answer_1 = {1, 2, 3, 4}


# %% test 1 points=2
check_scatter_races(shift[0], "x", answer_1, shapes=shift[1])


# %% answer 2
answer_2 = 3


# %% test 2 points=2
check_max_contention(text, "b", answer_2, shapes=shapes)

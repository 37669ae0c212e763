"""Chapter 08: inverse accumulation

The instructor's side of the exercises whose prompts and check calls are in notebooks/08_inverse_accumulation.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
import math

from tensoradbook import inverse as ia
from tensoradbook.exercises import (check_forward_inverse, check_lump_order, check_newton_step,
                                    check_reverse_inverse, check_step_inverse)


def fig2_transcendental(x):
    # the second program of Fig. 2
    x[0] = ia.exp(x[0]) + x[1] ** 2
    x[2] = ia.sin(x[0]) + x[2] ** 3


def circle_and_line(x):
    # F(x) = 0 where the circle of radius 2 meets the line u = v
    u, v = x[0], x[1]
    x[0] = u * u + v * v - 4
    x[1] = u - v


# %% answer 1
answer_1 = (1 / 4, -2 / 4, 1 / 4)


# %% test 1
check_step_inverse(4, [2, -1], answer_1)


# %% answer 2
answer_2 = (1, 0, -math.cos(5) / 3)


# %% test 2 points=2
check_reverse_inverse(fig2_transcendental, 3, (0, 2, 1), (1, 0, 0), answer_2)


# %% answer 3
answer_3 = (-math.cos(5) / 3, 0, 1 / 3)


# %% test 3 points=2
check_forward_inverse(fig2_transcendental, 3, (0, 2, 1), (0, 0, 1), answer_3)


# %% answer 4
answer_4 = (1.5, 1.5)


# %% test 4 points=2
check_newton_step(circle_and_line, 2, (2, 1), answer_4)


# %% given 5
def braid_steps(x):
    t1 = ia.sin(x[0])
    t2 = ia.exp(x[2])
    x[2] = x[2] * t2
    x[0] = x[0] * t1 + x[1]
    x[0] = x[0] + t1
    x[2] = x[2] + t2


braid = ia.trace(braid_steps, n=3)
print("vertices:", braid.vertices, "  lump sizes in program order:", braid.lump_sizes)


# %% answer 5
answer_5 = "t1 s2 s3 t2 s1 s4"


# %% test 5 points=2
check_lump_order(braid_steps, 3, answer_5)

"""Chapter 10: tensor programs

The instructor's side of the exercises whose prompts and check calls are in notebooks/10_tensor_programs.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
import numpy as np

import tensoradbook as tab
from tensoradbook.exercises import check_intermediate_adjoint, check_pooling_gradient, check_softmax_program


# %% given 1
smooth = ("h[i] = tanh (w[] * x[i])\n"
          "r[i] = h[i + 1] - h[i]\n"
          "L[] = sum{i}_0^3 (r[i] ** 2) + sum{i}_0^4 (h[i] ** 2)",
          {"x": (5,), "w": (), "h": (5,), "r": (4,), "L": ()})


# %% answer 1
answer_1 = ("dh[i] = dL[] * 2 * h[i] + if {i >= 1} then (dr[i - 1]) else (0) - if {i <= 3} then (dr[i]) else (0)")


# %% test 1 points=3
check_intermediate_adjoint(smooth[0], "h", answer_1, shapes=smooth[1])


# %% given 2
exercise_x = np.array([[2.0, 7.0, 4.0, 4.0],
                       [7.0, 1.0, 1.0, 0.0],
                       [0.0, 3.0, 6.0, 2.0],
                       [5.0, 3.0, 1.0, 8.0]])
exercise_dm = np.array([[1.0, -2.0], [0.5, 3.0]])


# %% answer 2
answer_2 = [[0, 1, -2, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0.5, 0, 0, 3]]


# %% test 2 points=2
check_pooling_gradient(exercise_x, exercise_dm, answer_2)


# %% answer 3
answer_3 = tab.parse("z[] = sum{k}_0^63 (exp (x[k]))\ns[i] = exp (x[i]) / z[]", {"x": (64,), "z": (), "s": (64,)})


# %% test 3 points=3
check_softmax_program(answer_3, n=64)

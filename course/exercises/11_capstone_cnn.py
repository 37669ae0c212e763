"""Chapter 11: the capstone network

The instructor's side of the exercises whose prompts and check calls are in notebooks/11_capstone_cnn.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
from tensoradbook.exercises import check_layer


# %% answer 1
answer_1 = "m[n; c; u; v] = sum{r}_0^1 (sum{s}_0^1 (a[n; c; 2 * u + r; 2 * v + s])) / 4"


# %% test 1 points=2
check_layer("average pooling", answer_1)


# %% answer 2
answer_2 = "a[n; c; i; j] = if {h[n; c; i; j] > 0} then (h[n; c; i; j]) else (0.01 * h[n; c; i; j])"


# %% test 2 points=2
check_layer("leaky relu", answer_2)


# %% answer 3
answer_3 = ("g[n; e; i; j] = sum{c}_0^1 (sum{p}_0^2 (sum{q}_0^2 (if {i + p >= 1 and i + p <= 8 and j + q >= 1 and "
            "j + q <= 8} then (W2[e; c; p; q] * a[n; c; i + p - 1; j + q - 1]) else (0)))) + b2[e]")


# %% test 3 points=3
check_layer("second convolution", answer_3)

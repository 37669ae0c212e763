"""Chapter 04a: integer equations

The instructor's side of the exercises whose prompts and check calls are in notebooks/04a_integer_equations.ipynb:
setup, data, solutions, tests and points (the cells are described in classroom/assignments.py).
"""

# %% setup
from tensoradbook.exercises import (NO_SOLUTION, check_bezout, check_integer_solutions, check_kernel_basis,
                                    check_smith)


# %% answer 1
answer_1 = (23, -3, 4)


# %% test 1
check_bezout(391, 299, answer_1)


# %% answer 2
answer_2 = ([[2, 0], [0, 10]], [[-1, 1], [-3, 2]], [[0, -1], [1, -1]])


# %% test 2 points=2
check_smith([[6, 4], [4, 6]], answer_2)


# %% answer 3
answer_3 = [[-5, -14], [3, 7], [0, 1]]


# %% test 3 points=2
check_kernel_basis([[3, 5, 7]], answer_3)


# %% answer 4a
answer_4a = NO_SOLUTION


# %% test 4a
check_integer_solutions([[2, 4, 6]], [3], answer_4a)


# %% answer 4b
answer_4b = ([3, 0, 5], [[1], [-1], [1]])


# %% test 4b points=2
check_integer_solutions([[1, 1, 0], [0, 1, 1]], [3, 5], answer_4b)


# %% text 5
# **Exercise 5 (programming: Bezout).** Write a function `bezout(a, b)` that returns a Bezout
# triple `(g, x, y)` with `g = gcd(a, b) = a x + b y` for non-negative integers `a`, `b` (Algorithm
# 2, the extended Euclidean algorithm), without calling the library. The test below calls it on
# `(240, 46)` and on a dozen other pairs (zeros, a < b, a = b, large numbers); hidden tests try
# more.


# %% answer 5
def bezout(a, b):
    # Algorithm 2: keep a = x0 a0 + y0 b0 and b = x1 a0 + y1 b0 while dividing
    x0, y0, x1, y1 = 1, 0, 0, 1
    while b:
        q, r = divmod(a, b)
        a, b = b, r
        x0, y0, x1, y1 = x1, y1, x0 - q * x1, y0 - q * y1
    return a, x0, y0


# %% test 5 points=3
assert callable(bezout), "no answer yet: define bezout in the cell above"
check_bezout(240, 46, bezout)


# %% hidden 5
pairs = [(391, 299), (12, 18), (1071, 462), (17, 5), (5, 17), (0, 7), (7, 0), (1, 1),
         (2 ** 31 - 1, 2 ** 13 - 1), (6, 4), (100, 75), (3, 3)]
for a, b in pairs:
    result = check_bezout(a, b, bezout)
    assert result, f"bezout({a}, {b}): {result}"

"""The limits of the notation: what the parser accepts stays computable (derivable, printable, compilable).

Each limit is refused with a caret and named in the message; tests/test_language_limits.py times the
work at each. The kernels compute index arithmetic in int64 and the derivatives' bounds exactly, so
integers stay below :data:`MAX_INTEGER`.
"""

# Limits on what is accepted, so that everything accepted also derives, prints, reads back and compiles
# without running into Python's recursion limit or taking minutes (issue 10).
MAX_DEPTH = 100  # depth of the expression tree (a chain a + b + ... of n terms has depth n) and of nesting
MAX_NESTED_SUMS = 8  # sums inside sums: derivatives of 8 whose bounds depend on each other take ~1 s, of 12 ~20 s
MAX_BOUNDS = 64  # in one max [..] or min [..]: derivation takes 0.2 s at 64 and grows as the square
# Integer literals, and in index arithmetic every coefficient, constant, divisor and modulus and every value
# an index expression can reach on its box (each partial sum of its terms), are below this in magnitude:
# exact in float64 and 2**10 below int64's range, which the kernels and the derivatives' bounds compute in.
MAX_INTEGER = 2**53
MAX_ELEMENTS = 2**32  # elements of one tensor (32 GiB of float64), so also its largest size

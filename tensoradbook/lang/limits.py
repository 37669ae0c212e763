"""The limits of the notation: what the parser accepts stays computable (derivable, printable, compilable).

Each limit is refused with a caret (but the text's length, MAX_SOURCE_CHARS) and named in the message;
tests/test_language_limits.py times the work at each. The kernels compute index arithmetic in int64 and the
derivatives' bounds exactly, so integers stay below :data:`MAX_INTEGER`.
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
# Inequalities one Fourier-Motzkin step of a derivation may generate. A derivative's sums carry max/min bound
# lists, so deriving it again eliminates many rows: of 5 nested sums whose bounds depend on each other the
# second derivative generates 143,547 at its last step (25 s in all), of 4 at most 4,029 (0.4 s); the first
# derivative of MAX_NESTED_SUMS such sums, 519. Refused at once instead (tests/test_language_limits.py).
MAX_GENERATED_BOUNDS = 20_000
MAX_ELEMENTS = 2**32  # elements of one tensor (32 GiB of float64), so also its largest size
# Element-terms (tensoradbook.lang.evaluate.element_terms) of one compiled kernel: days on one core at 10**9 a
# second. A function past it (sum{k}_0^(10**15) (x[k]) parses) is refused when it compiles, not run. The count is an
# upper bound (a gradient gated to a diagonal counts its sums at every element): the report's example at 2048 x 2048
# over 128 counts 1.1e12 for dc and runs in 0.1 s on a GPU, so the limit stays far above what kernels really run.
MAX_KERNEL_WORK = 10**15
# Characters of the text tab.parse reads (and the command line's --file), where a file of gigabytes (--file
# /dev/zero) filled the memory (issue 23). Above what derivatives within MAX_DEPTH print, which read back: that
# of a tower of 100 powers has 2,468,741 (tests/test_fuzz.py), a hand-written program a few hundred (chapter
# 11's network 553). Reading takes about 6 s a megabyte (a program of 32,000 definitions, one expression of
# 590,000 characters) and 150 MB of memory.
MAX_SOURCE_CHARS = 4_000_000

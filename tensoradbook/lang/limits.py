"""The limits of the notation: what the parser accepts stays computable (derivable, printable, compilable).

Each limit is refused with a caret (but the text's length, MAX_SOURCE_CHARS) and named in the message;
tests/test_language_limits.py runs the work at each. The kernels compute index arithmetic in int64 and the
derivatives' bounds exactly, so integers stay below :data:`MAX_INTEGER`.
"""

# Limits on what is accepted, so that everything accepted also derives, prints, reads back and compiles
# without running into Python's recursion limit or taking minutes. tests/test_language_limits.py runs the work
# at each limit; the reasons here say what grows and how.
MAX_DEPTH = 100  # depth of the expression tree (a chain a + b + ... of n terms has depth n) and of nesting
# sums inside sums: deriving nested sums whose bounds depend on each other grows steeply with their number (12 take
# about 20 times as long as 8)
MAX_NESTED_SUMS = 8
MAX_BOUNDS = 64  # in one max [..] or min [..]: derivation time grows as the square of the list's length
# Integer literals, and in index arithmetic every coefficient, constant, divisor and modulus and every value
# an index expression can reach on its box (each sum of some of its terms), are below this in magnitude:
# exact in float64 and 2**10 below int64's range, which the kernels and the derivatives' bounds compute in.
MAX_INTEGER = 2**53
# Inequalities one Fourier-Motzkin step of a derivation may generate. A derivative's sums carry max/min bound
# lists, so deriving it again eliminates many rows: the second derivative of 5 nested sums whose bounds depend on
# each other generates over a hundred thousand at its last step, of 4 a few thousand, and the first derivative of
# MAX_NESTED_SUMS such sums a few hundred. Refused at once instead of run for minutes.
MAX_GENERATED_BOUNDS = 20_000
MAX_ELEMENTS = 2**32  # elements of one tensor (32 GiB of float64), so also its largest size
# Element-terms (tensoradbook.lang.evaluate.element_terms) of one compiled kernel: days on one core at 10**9 a
# second. A function past it (sum{k}_0^(10**15) (x[k]) parses) is refused when it compiles, not run. The count is an
# upper bound (a gradient gated to a diagonal counts its sums at every element): the report's example at 2048 x 2048
# over 128 counts 1.1e12 for dc and runs in a fraction of a second on a GPU, so the limit stays far above what
# kernels really run.
MAX_KERNEL_WORK = 10**15
# Characters of the text tab.parse reads (and the command line's --file), so that a file of gigabytes (--file
# /dev/zero) cannot fill the memory. Above what derivatives within MAX_DEPTH print, which read back: that of a
# tower of 100 powers has 2,468,741 (tests/test_fuzz.py), a hand-written program a few hundred (chapter 11's
# network 553). Reading time and memory grow linearly with the text.
MAX_SOURCE_CHARS = 4_000_000

"""Check functions for the exercises at the end of each chapter.

Every ``check_*`` function takes the data of an exercise and the student's
answer and returns a :class:`CheckResult`, which prints whether the answer is
right and, if not, what exactly is wrong ("U is not unimodular: det U = 2",
"your bounds miss the point z = (1, 2)", ...). An answer of ``None`` is the
notebooks' placeholder and gives "no answer yet" instead of an error.

The feedback never shows the expected answer, and it is no oracle either: where
the answers are few (a count, a letter, a set of indices, a small matrix), every
wrong one draws the same words but for what the student can tell from their own
answer (no "too low", no cost of a wrong schedule, no element or row named), with
a hint at the chapter's rule or equation; tests/test_exercise_secrecy.py checks it.

The checks never compare against a stored solution: they test the defining
properties of a right answer exactly (integer arithmetic, sympy determinants)
and compare with the core's algorithms (:mod:`tensoradbook.integer.smith`,
:mod:`tensoradbook.integer.fourier_motzkin`) or with brute-force enumeration. So any
right answer passes, not only the one the core happens to compute.

Chapter 04a (integer equations, report sec. 4.1):
:func:`check_bezout`, :func:`check_smith`, :func:`check_kernel_basis`,
:func:`check_integer_solutions`.
Chapter 04b (inequalities, report sec. 4.2 and eqs. 42-45):
:func:`check_loop_bounds`, :func:`check_point_count`, :func:`check_redundant_rows`.
Chapters 01 and 05 (the introduction, sec. 1; Algorithm 4, sec. 5):
:func:`check_derivative`, :func:`check_term_count`, :func:`check_index_matrix`.
Chapter 02 (reverse accumulation, sec. 2): :func:`check_adjoint`, :func:`check_scalar_gradient`.
Chapter 03 (tensor-valued functions, sec. 3): :func:`check_vec_index`,
:func:`check_jacobian_memory`, :func:`check_jacobian`. These compare with the
core's derivation (:func:`tensoradbook.ad.derive`, the reverse sweep) on random
inputs, or with brute force and numpy.
Chapter 06 (kernels, sec. 6; gather vs. scatter): :func:`check_gradient_element`,
:func:`check_scatter_races`, :func:`check_max_contention`, :func:`check_gather_bounds`.
Chapter 07 (second derivatives, sec. 5.3; checked by second differences of L):
:func:`check_second_derivative`, :func:`check_hessian_vector_product`, :func:`check_hessian_pattern`.
Chapter 08 (inverse accumulation, Pearlmutter & Siskind; checked with numpy.linalg.solve on a
central-difference Jacobian, lump orders against every topological order): :func:`check_step_inverse`,
:func:`check_reverse_inverse`, :func:`check_forward_inverse`, :func:`check_newton_step`, :func:`check_lump_order`.
Chapter 09 (matrix-free Jacobian chaining, Naumann secs. 3-5; checked by enumerating every schedule):
:func:`check_two_factor_optimum`, :func:`check_homogeneous_costs`, :func:`check_cell_fma`,
:func:`check_bounded_optimum`, :func:`check_tape_threshold`.
Chapter 10 (tensor programs: reverse accumulation across definitions, data-dependent operations; checked by
central differences of the program with one intermediate moved and by brute-force max pooling):
:func:`check_intermediate_adjoint`, :func:`check_pooling_gradient`, :func:`check_softmax_program`.
Chapter 11 (the capstone network; layers checked against numpy, PyTorch's kink convention and finite
differences): :func:`check_layer`.
Chapter 12 (build the engine yourself: the student's functions for each read's geometry, reverse accumulation over
the tree, the index solve from the Smith normal form, Fourier-Motzkin elimination and Algorithm 4, and reverse
accumulation across chapter 11's network with them; each called on data, with the library's answering entry points
switched off while it runs, and compared with a walk of the tree, the core's sweep, exact matrix properties, the
core's bounds and :func:`tensoradbook.derive`): :func:`check_reads`, :func:`check_adjoints`,
:func:`check_index_solve`, :func:`check_box_solutions`, :func:`check_algorithm4`.

One module per chapter (``ch04a_integer_equations`` ... ``ch12_build``); the steps every check takes
(:mod:`.checking`: the tolerances, "no answer yet", the wrong-answer type, the verdict from the problems found),
the reading of answers (:mod:`.answers`) and the verdicts' wording (:mod:`.feedback`) are shared. The exercises sit
on top of the core, which they call and never re-implement; numpy, sympy and fractions only, no Jupyter.
"""

from .answers import NO_SOLUTION
from .ch04a_integer_equations import check_bezout, check_integer_solutions, check_kernel_basis, check_smith
from .ch04b_fourier_motzkin import check_loop_bounds, check_point_count, check_redundant_rows
from .ch05_derivatives import (
    check_adjoint,
    check_derivative,
    check_index_matrix,
    check_jacobian,
    check_jacobian_memory,
    check_scalar_gradient,
    check_term_count,
    check_vec_index,
)
from .ch06_kernels import check_gather_bounds, check_gradient_element, check_max_contention, check_scatter_races
from .ch07_higher_order import check_hessian_pattern, check_hessian_vector_product, check_second_derivative
from .ch08_inverse import (
    check_forward_inverse,
    check_lump_order,
    check_newton_step,
    check_reverse_inverse,
    check_step_inverse,
)
from .ch09_chaining import (
    check_bounded_optimum,
    check_cell_fma,
    check_homogeneous_costs,
    check_tape_threshold,
    check_two_factor_optimum,
)
from .ch10_programs import check_intermediate_adjoint, check_pooling_gradient, check_softmax_program
from .ch11_capstone import check_layer
from .ch12_build import check_adjoints, check_algorithm4, check_box_solutions, check_index_solve, check_reads
from .feedback import CheckResult

__all__ = [
    "CheckResult",
    "NO_SOLUTION",
    "check_bezout",
    "check_smith",
    "check_kernel_basis",
    "check_integer_solutions",
    "check_loop_bounds",
    "check_point_count",
    "check_redundant_rows",
    "check_derivative",
    "check_term_count",
    "check_index_matrix",
    "check_adjoint",
    "check_scalar_gradient",
    "check_vec_index",
    "check_jacobian_memory",
    "check_jacobian",
    "check_gradient_element",
    "check_scatter_races",
    "check_max_contention",
    "check_gather_bounds",
    "check_second_derivative",
    "check_hessian_vector_product",
    "check_hessian_pattern",
    "check_step_inverse",
    "check_reverse_inverse",
    "check_forward_inverse",
    "check_newton_step",
    "check_lump_order",
    "check_two_factor_optimum",
    "check_homogeneous_costs",
    "check_cell_fma",
    "check_bounded_optimum",
    "check_tape_threshold",
    "check_intermediate_adjoint",
    "check_pooling_gradient",
    "check_softmax_program",
    "check_layer",
    "check_reads",
    "check_adjoints",
    "check_index_solve",
    "check_box_solutions",
    "check_algorithm4",
]

"""Coursework on nbgrader: one assignment per chapter, built from the chapters' exercises.

The chapters (``notebooks/01_introduction.ipynb`` ... ``11_capstone_cnn.ipynb``) end with exercises whose
cells call a check function from :mod:`tensoradbook.exercises` on the placeholder ``None``. This module turns
them into nbgrader assignments in ``course/`` (nbgrader's layout; its config is ``course/nbgrader_config.py``):

* ``python -m classroom.course build-source`` writes ``course/source/<chapter>/<chapter>.ipynb`` from
  :data:`ASSIGNMENTS`, the table below of exercises, instructor solutions and points. The exercise texts are
  read from the chapters themselves, so an assignment says what its chapter says; the generated notebooks are
  saved without outputs and committed.
* ``python -m classroom.course assignments`` runs ``nbgrader generate_assignment`` for every chapter
  (student versions in ``course/release/``, gradebook entries in ``course/gradebook.db``).
* ``python -m classroom.course grade [<chapter>] [--force]`` autogrades the submissions in
  ``course/submitted/<student>/<chapter>/`` that are new or changed since their last grading (all with
  ``--force``), writes their feedback HTML (``course/feedback/``, math typeset, hidden tests as a note) and
  exports the scores to ``course/grades.csv`` and, for Canvas and Moodle, to ``course/export/``.
* On the class server (``make hub``, classroom/hub.py; ``--hub``, or by default once its course directory exists),
  ``assignments`` also releases every assignment into nbgrader's exchange and ``grade`` first collects the
  submissions from it and afterwards releases the feedback, all in the hub's course directory.

Every answer cell assigns an answer variable (``answer_1 = None`` in the release) and every graded cell calls the
chapter's check function on it, prints the verdict and asserts it: the student sees the check's own words
("U is not unimodular: det U = 2"), never the expected value. Where a student writes a function (Bezout in 04a,
the vec index in 03, a gather kernel body in 06) hidden tests try it on more inputs than the visible one.

Run from the repository root (the Makefile's ``make assignments`` and ``make grade`` do). nbgrader runs as
``sys.executable -m nbgrader``, with this interpreter's bin folder first on PATH (nbgrader runs alembic).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from textwrap import dedent

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
COURSE = REPO / "course"
#: The environment variable that points nbgrader's exchange elsewhere (read by course/nbgrader_config.py).
EXCHANGE_ENV = "TENSORADBOOK_EXCHANGE"
ASSERT_MESSAGE = "not right yet: see the feedback above"


@dataclass(frozen=True)
class Part:
    """One check call of an exercise: the answer cell and the graded test cell that checks it.

    ``call`` is the chapter's check call with ``{answer}`` where the chapter has its placeholder ``None``;
    ``solution`` the instructor's code that sets ``answer`` (cut from the release by nbgrader); ``stub`` what
    the student's answer cell starts with (default ``<answer> = None``); ``hidden`` more checks that only the
    autograder runs.
    """

    answer: str
    call: str
    solution: str
    points: int = 1
    label: str = ""
    stub: str = ""
    hidden: str = ""


@dataclass(frozen=True)
class Exercise:
    """An exercise: its text (read from the chapter unless ``text`` is given), the data it needs (``given``,
    a read-only code cell) and its parts."""

    number: int
    parts: tuple[Part, ...]
    given: str = ""
    text: str = ""
    extra: str = ""

    @property
    def points(self) -> int:
        return sum(p.points for p in self.parts)


@dataclass(frozen=True)
class Assignment:
    """One chapter's assignment; ``stem`` is the chapter's file stem and the nbgrader assignment id."""

    stem: str
    title: str
    setup: str
    exercises: tuple[Exercise, ...]

    @property
    def points(self) -> int:
        return sum(e.points for e in self.exercises)


def _code(text: str) -> str:
    return dedent(text).strip("\n")


# --- the table: every exercise of every chapter, with a right answer and its points ----------------------

ASSIGNMENTS: tuple[Assignment, ...] = (
    Assignment("01_introduction", "Chapter 01: the introduction", _code("""
        from tensoradbook.exercises import check_derivative, check_term_count
        """), (
        Exercise(1, (Part("answer_1", 'check_derivative("f[i; j] = x[j] ** 3", "x", {answer}, '
                                      'shapes={{"f": (2, 4), "x": (4,)}})',
                          'answer_1 = "dx[j] = sum{i}_0^1 (df[i; j] * 3 * x[j] ** 2)"', points=2),)),
        Exercise(2, (Part("answer_2", 'check_derivative("f[i] = x[i; 2]", "x", {answer}, '
                                      'shapes={{"f": (3,), "x": (3, 4)}})',
                          'answer_2 = "dx[i; j] = if {j = 2} then (df[i]) else (0)"', points=2),)),
        Exercise(3, (Part("answer_3a", 'check_term_count(shift[0], "x", [5], {answer}, shapes=shift[1])',
                          "answer_3a = 3", label="a"),
                     Part("answer_3b", 'check_term_count(shift[0], "x", [7], {answer}, shapes=shift[1])',
                          "answer_3b = 1", label="b")),
                 given='shift = ("f[i; j] = x[i + j]", {"f": (4, 5), "x": (8,)})'),
    )),
    Assignment("02_reverse_accumulation", "Chapter 02: reverse accumulation", _code("""
        from tensoradbook.exercises import check_adjoint, check_scalar_gradient
        """), (
        Exercise(1, (Part("answer_1", 'check_adjoint("f[] = sin (x[] * y[]) * x[]", "x[] * y[]", {answer})',
                          'answer_1 = "cos (x[] * y[]) * x[]"', points=2),)),
        Exercise(2, (Part("answer_2", 'check_adjoint("f[] = sin (x[] * y[]) * x[]", "x[]", {answer})',
                          'answer_2 = "sin (x[] * y[]) + x[] * y[] * cos (x[] * y[])"', points=2),)),
        Exercise(3, (Part("answer_3", 'check_scalar_gradient("f[] = log (x[]) * y[] + x[] ** 2", '
                                      '{{"x": 2.0, "y": 3.0}}, {answer})',
                          'answer_3 = {"x": 3.0 / 2.0 + 2 * 2.0, "y": 0.6931}', points=2),)),
    )),
    Assignment("03_tensor_functions", "Chapter 03: tensor-valued functions", _code("""
        import itertools

        import numpy as np

        from tensoradbook.exercises import check_jacobian, check_jacobian_memory, check_vec_index
        """), (
        Exercise(1, (Part("answer_1", "check_vec_index((2, 3, 4), (1, 2, 0), {answer})",
                          "answer_1 = 1 + 2 * 2 + 0 * 2 * 3"),)),
        Exercise(2, (Part("answer_2", "check_jacobian_memory((32, 10), (32, 28, 28), {answer})",
                          "answer_2 = (32 * 10, 32 * 28 * 28, 32 * 10 * 32 * 28 * 28 * 8)", points=2),)),
        Exercise(3, (Part("answer_3", 'check_jacobian(matvec[0], "x", point, {answer}, shapes=matvec[1])',
                          "answer_3 = [[1, 0, 2, 0, 3, 0],\n            [0, 1, 0, 2, 0, 3]]", points=2),),
                 given=_code("""
                    matvec = ("f[i] = sum{j}_0^2 (x[i; j] * y[j])", {"f": (2,), "x": (2, 3), "y": (3,)})
                    point = {"x": np.ones((2, 3)), "y": np.array([1.0, 2.0, 3.0])}
                    """)),
        Exercise(4, (Part("vec_index", "check_vec_index((2, 3, 4), (1, 2, 0), vec_index)",
                          _code("""
                            def vec_index(shape, index):  # noqa: F811
                                position, stride = 0, 1
                                for n, i in zip(shape, index):
                                    position += i * stride
                                    stride *= n
                                return position
                            """),
                          points=3,
                          hidden=_code("""
                            # the same check on other shapes: every element of each (and of the check's own shapes)
                            for shape in [(5,), (3, 4), (4, 1, 3, 2), (2, 2, 2, 2, 2, 2)]:
                                result = check_vec_index(shape, tuple(n - 1 for n in shape), vec_index)
                                assert result, f"vec_index on a tensor of shape {shape}: {result}"
                            """)),),
                 text=_code("""
                    **Exercise 4 (programming: vec).** Write a function `vec_index(shape, index)` that returns the
                    (zero-based) position of the element `index` of a tensor of shape `shape` in its vec, for any
                    number of dimensions, e.g. `vec_index((2, 3, 4), (1, 2, 0))`. The test below calls it on every
                    element of that tensor and of tensors of four other shapes (one to five dimensions); hidden tests
                    try more shapes.
                    """)),
    )),
    Assignment("04a_integer_equations", "Chapter 04a: integer equations", _code("""
        from tensoradbook.exercises import (NO_SOLUTION, check_bezout, check_integer_solutions, check_kernel_basis,
                                            check_smith)
        """), (
        Exercise(1, (Part("answer_1", "check_bezout(391, 299, {answer})", "answer_1 = (23, -3, 4)"),)),
        Exercise(2, (Part("answer_2", "check_smith([[6, 4], [4, 6]], {answer})",
                          "answer_2 = ([[2, 0], [0, 10]], [[-1, 1], [-3, 2]], [[0, -1], [1, -1]])", points=2),)),
        Exercise(3, (Part("answer_3", "check_kernel_basis([[3, 5, 7]], {answer})",
                          "answer_3 = [[-5, -14], [3, 7], [0, 1]]", points=2),)),
        Exercise(4, (Part("answer_4a", "check_integer_solutions([[2, 4, 6]], [3], {answer})",
                          "answer_4a = NO_SOLUTION", label="a"),
                     Part("answer_4b", "check_integer_solutions([[1, 1, 0], [0, 1, 1]], [3, 5], {answer})",
                          "answer_4b = ([3, 0, 5], [[1], [-1], [1]])", points=2, label="b"))),
        Exercise(5, (Part("bezout", "check_bezout(240, 46, bezout)",
                          _code("""
                            def bezout(a, b):  # noqa: F811
                                # Algorithm 2: keep a = x0 a0 + y0 b0 and b = x1 a0 + y1 b0 while dividing
                                x0, y0, x1, y1 = 1, 0, 0, 1
                                while b:
                                    q, r = divmod(a, b)
                                    a, b = b, r
                                    x0, y0, x1, y1 = x1, y1, x0 - q * x1, y0 - q * y1
                                return a, x0, y0
                            """),
                          points=3,
                          hidden=_code("""
                            pairs = [(391, 299), (12, 18), (1071, 462), (17, 5), (5, 17), (0, 7), (7, 0), (1, 1),
                                     (2 ** 31 - 1, 2 ** 13 - 1), (6, 4), (100, 75), (3, 3)]
                            for a, b in pairs:
                                result = check_bezout(a, b, bezout)
                                assert result, f"bezout({a}, {b}): {result}"
                            """)),),
                 text=_code("""
                    **Exercise 5 (programming: Bezout).** Write a function `bezout(a, b)` that returns a Bezout
                    triple `(g, x, y)` with `g = gcd(a, b) = a x + b y` for non-negative integers `a`, `b` (Algorithm
                    2, the extended Euclidean algorithm), without calling the library. The test below calls it on
                    `(240, 46)` and on a dozen other pairs (zeros, a < b, a = b, large numbers); hidden tests try
                    more.
                    """)),
    )),
    Assignment("04b_fourier_motzkin", "Chapter 04b: Fourier-Motzkin elimination", _code("""
        from tensoradbook.exercises import check_loop_bounds, check_point_count, check_redundant_rows
        """), (
        Exercise(1, (Part("answer_1", "check_loop_bounds(A_ex, b_ex, {answer})",
                          "answer_1 = ((0, 4), lambda x1: (0, min(2 * x1, 7 - x1)))", points=2),),
                 given=_code("""
                    A_ex = [[1, 0], [0, 1], [0, -1], [-1, 2], [-1, -1]]
                    b_ex = [0, 0, -4, 0, -7]
                    """)),
        Exercise(2, (Part("answer_2", "check_point_count([[1, -2, -2]], [1], (7, 4, 4), {answer})",
                          "answer_2 = 6", points=2),)),
        Exercise(3, (Part("answer_3", "check_redundant_rows(A_red, b_red, {answer})", "answer_3 = {2, 6}",
                          points=2),),
                 given=_code("""
                    A_red = [[1, 0], [0, 1], [1, 1], [-1, 0], [0, -1], [-1, -1], [1, -1]]
                    b_red = [0, 0, -2, -3, -3, -5, -4]
                    """)),
    )),
    Assignment("05_elementwise_derivatives", "Chapter 05: element-wise derivatives", _code("""
        import tensoradbook as tab
        from tensoradbook.exercises import check_derivative, check_index_matrix, check_term_count

        # the section 6 example of the report
        text6 = "f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))"
        shapes6 = {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}
        """), (
        Exercise(1, (Part("answer_1", 'check_index_matrix(window[0], "w", {answer}, shapes=window[1])',
                          "answer_1 = [[1, 1], [0, 1]]"),),
                 given='window = ("f[i] = sum{k}_0^3 (w[i + k; k] * v[k])", {"f": (3,), "w": (6, 4), "v": (4,)})'),
        Exercise(2, (Part("answer_2", 'check_derivative(window[0], "v", {answer}, shapes=window[1])',
                          'answer_2 = "dv[k] = sum{i}_0^2 (df[i] * w[i + k; k])"', points=2),)),
        Exercise(3, (Part("answer_3", 'check_term_count(text6, "d", [5], {answer}, shapes=shapes6)',
                          "answer_3 = 2 * 4", points=2),)),
        Exercise(4, (Part("answer_4", 'check_derivative(first, "x", {answer})',
                          'answer_4 = "dx[i] = ddx[i] * df[i] * exp (x[i]) * y[i]"', points=2),),
                 given=_code("""
                    # the derivative of f[i] = exp (x[i]) * y[i], written out (this assignment's policy has no derive)
                    first = tab.parse("dx[i] = df[i] * exp (x[i]) * y[i]",
                                      {"dx": (4,), "df": (4,), "x": (4,), "y": (4,)})
                    print(first)
                    """)),
    )),
    Assignment("06a_kernels", "Chapter 06a: kernels", _code("""
        import math

        from tensoradbook.exercises import check_gather_bounds, check_gradient_element
        """), (
        Exercise(1, (Part("dy_element", 'check_gradient_element(matmul[0], "y", {answer}, shapes=matmul[1])',
                          _code("""
                            def dy_element(k, j, x, df):  # noqa: F811
                                return sum(df[i, j] * x[i, k] for i in range(x.shape[0]))
                            """),
                          points=3,
                          hidden=_code("""
                            for n_i, n_k, n_j in [(5, 2, 3), (1, 4, 2), (6, 3, 1)]:
                                other = (f"f[i; j] = sum{{k}}_0^{n_k - 1} (x[i; k] * y[k; j])",
                                         {"f": (n_i, n_j), "x": (n_i, n_k), "y": (n_k, n_j)})
                                result = check_gradient_element(other[0], "y", dy_element, shapes=other[1], seed=1)
                                assert result, f"dy_element with x of shape {(n_i, n_k)}: {result}"
                            """)),),
                 given='matmul = ("f[i; j] = sum{k}_0^4 (x[i; k] * y[k; j])", {"f": (3, 4), "x": (3, 5), "y": (5, 4)})',
                 extra=("Define `dy_element(k, j, x, df)` in the answer cell. Do not hard-code the sizes: the "
                        "test below runs your function on this product at other sizes too, and hidden tests on "
                        "matrix products of other shapes (use `x.shape`).")),
        Exercise(2, (Part("answer_2a", 'check_gather_bounds(strided[0], "x", "i", {answer}, shapes=strided[1])',
                          "answer_2a = lambda m: (max(0, math.ceil((m - 3) / 2)), min(3, m // 2))  # noqa: E731",
                          points=2, label="a"),
                     Part("answer_2b", 'check_gather_bounds(strided[0], "x", "k", {answer}, shapes=strided[1])',
                          "answer_2b = lambda m: range(m % 2 if m < 6 else m - 6, min(3, m) + 1, 2)  # noqa: E731",
                          label="b")),
                 given='strided = ("f[i] = sum{k}_0^3 (x[2 * i + k])", {"f": (4,), "x": (10,)})'),
    )),
    Assignment("06b_gather_scatter", "Chapter 06b: gather against scatter", _code("""
        from tensoradbook.exercises import check_max_contention, check_scatter_races

        # the section 6 example of the report
        text = "f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))"
        shapes = {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}
        """), (
        Exercise(1, (Part("answer_1", 'check_scatter_races(shift[0], "x", {answer}, shapes=shift[1])',
                          "answer_1 = {1, 2, 3, 4}", points=2),),
                 given='shift = ("f[i; j] = x[i + j] ** 2", {"f": (3, 4), "x": (6,)})'),
        Exercise(2, (Part("answer_2", 'check_max_contention(text, "b", {answer}, shapes=shapes)',
                          "answer_2 = 3", points=2),)),
    )),
    Assignment("07_higher_order", "Chapter 07: higher order", _code("""
        import numpy as np

        import tensoradbook as tab
        from tensoradbook.exercises import check_hessian_pattern, check_hessian_vector_product, check_second_derivative

        # the section 6 example of the report
        text6 = "f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))"
        shapes6 = {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}
        f6 = tab.parse(text6, shapes6)
        """), (
        Exercise(1, (Part("answer_1", 'check_second_derivative(shift[0], "x", "x", {answer}, shapes=shift[1])',
                          'answer_1 = ("dx[b] = if {b <= 3} then (df[b] * (-sin (x[b]) * x[b + 1] * ddx[b]"\n'
                          '            " + cos (x[b]) * ddx[b + 1])) else (0)"\n'
                          '            " + if {b >= 1} then (df[b - 1] * cos (x[b - 1]) * ddx[b - 1]) else (0)")',
                          points=3),),
                 given='shift = ("f[i] = sin (x[i]) * x[i + 1]", {"f": (4,), "x": (5,)})'),
        Exercise(2, (Part("answer_2", 'check_second_derivative(cube[0], "x", "y", {answer}, shapes=cube[1])',
                          'answer_2 = "dy[i] = ddx[i] * df[i] * 3 * x[i] ** 2"', points=2),),
                 given='cube = ("f[i] = x[i] ** 3 * y[i]", {"f": (3,), "x": (3,), "y": (3,)})'),
        Exercise(3, (Part("my_hv", 'check_hessian_vector_product(f6, "b", point, df_point, v_point, {answer})',
                          'my_hv = tab.derive(tab.derive(f6)["b"]).evaluate({**point, "df": df_point}, v_point)["b"]',
                          points=2, stub='my_hv = None  # e.g. tab.derive(...).evaluate(..., v_point)["b"]'),),
                 given=_code("""
                    rng = np.random.default_rng(2017)
                    point = tab.ad.gradcheck.random_arguments(f6, rng)
                    df_point = rng.standard_normal((3, 4))
                    v_point = rng.standard_normal((4, 5))
                    """)),
        Exercise(4, (Part("answer_4", 'check_hessian_pattern(convolution[0], "x", 3, {answer}, '
                                      'shapes=convolution[1])',
                          "answer_4 = [1, 2, 3, 4, 5]", points=2),),
                 given='convolution = ("f[i] = tanh (sum{k}_0^2 (w[k] * x[i + k]))", '
                       '{"f": (6,), "w": (3,), "x": (8,)})'),
    )),
    Assignment("08_inverse_accumulation", "Chapter 08: inverse accumulation", _code("""
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
        """), (
        Exercise(1, (Part("answer_1", "check_step_inverse(4, [2, -1], {answer})",
                          "answer_1 = (1 / 4, -2 / 4, 1 / 4)"),)),
        Exercise(2, (Part("answer_2", "check_reverse_inverse(fig2_transcendental, 3, (0, 2, 1), (1, 0, 0), {answer})",
                          "answer_2 = (1, 0, -math.cos(5) / 3)", points=2),)),
        Exercise(3, (Part("answer_3", "check_forward_inverse(fig2_transcendental, 3, (0, 2, 1), (0, 0, 1), {answer})",
                          "answer_3 = (-math.cos(5) / 3, 0, 1 / 3)", points=2),)),
        Exercise(4, (Part("answer_4", "check_newton_step(circle_and_line, 2, (2, 1), {answer})",
                          "answer_4 = (1.5, 1.5)", points=2),)),
        Exercise(5, (Part("answer_5", "check_lump_order(braid_steps, 3, {answer})",
                          'answer_5 = "t1 s2 s3 t2 s1 s4"', points=2),),
                 given=_code("""
                    def braid_steps(x):
                        t1 = ia.sin(x[0])
                        t2 = ia.exp(x[2])
                        x[2] = x[2] * t2
                        x[0] = x[0] * t1 + x[1]
                        x[0] = x[0] + t1
                        x[2] = x[2] + t2


                    braid = ia.trace(braid_steps, n=3)
                    print("vertices:", braid.vertices, "  lump sizes in program order:", braid.lump_sizes)
                    """)),
    )),
    Assignment("09a_jacobian_chaining", "Chapter 09a: matrix-free Jacobian chaining", _code("""
        from tensoradbook import chaining as jc
        from tensoradbook.exercises import check_cell_fma, check_homogeneous_costs, check_two_factor_optimum

        # the introduction's chain (section 1 of the chapter): (m, n, |E|) for F_1 .. F_4
        intro = jc.Chain([(5, 3, 28), (4, 5, 48), (1, 4, 5), (4, 1, 21)])
        """), (
        Exercise(1, (Part("answer_1", "check_two_factor_optimum((6, 3, 5, 40, 70), {answer})",
                          'answer_1 = "d"', points=2),)),
        Exercise(2, (Part("answer_2", "check_homogeneous_costs(chain2, {answer})", "answer_2 = (300, 200)",
                          points=2),),
                 given='chain2 = "4\\n5 6 23\\n3 5 16\\n3 3 7\\n4 3 4\\n"'),
        Exercise(3, (Part("answer_3", "check_cell_fma(intro, 3, 2, {answer})", "answer_3 = 53", points=2),)),
    )),
    Assignment("09b_tape_bounds", "Chapter 09b: tape bounds", _code("""
        from tensoradbook import chaining as jc
        from tensoradbook.exercises import check_bounded_optimum, check_tape_threshold

        # the introduction's chain (chapter 09a, section 1): (m, n, |E|) for F_1 .. F_4
        intro = jc.Chain([(5, 3, 28), (4, 5, 48), (1, 4, 5), (4, 1, 21)])
        """), (
        Exercise(1, (Part("answer_1", "check_bounded_optimum(chain4, 63, {answer})", "answer_1 = 146", points=2),),
                 given="chain4 = [(4, 3, 18), (6, 4, 18), (3, 6, 25), (2, 3, 8)]"),
        Exercise(2, (Part("answer_2", "check_tape_threshold(intro, {answer})", "answer_2 = 81", points=2),)),
    )),
    Assignment("10_tensor_programs", "Chapter 10: tensor programs", _code("""
        import numpy as np

        import tensoradbook as tab
        from tensoradbook.exercises import check_intermediate_adjoint, check_pooling_gradient, check_softmax_program
        """), (
        Exercise(1, (Part("answer_1", 'check_intermediate_adjoint(smooth[0], "h", {answer}, shapes=smooth[1])',
                          'answer_1 = ("dh[i] = dL[] * 2 * h[i] + if {i >= 1} then (dr[i - 1]) else (0) '
                          '- if {i <= 3} then (dr[i]) else (0)")', points=3),),
                 given=_code("""
                    smooth = ("h[i] = tanh (w[] * x[i])\\n"
                              "r[i] = h[i + 1] - h[i]\\n"
                              "L[] = sum{i}_0^3 (r[i] ** 2) + sum{i}_0^4 (h[i] ** 2)",
                              {"x": (5,), "w": (), "h": (5,), "r": (4,), "L": ()})
                    """)),
        Exercise(2, (Part("answer_2", "check_pooling_gradient(exercise_x, exercise_dm, {answer})",
                          "answer_2 = [[0, 1, -2, 0], [0, 0, 0, 0], [0, 0, 0, 0], [0.5, 0, 0, 3]]", points=2),),
                 given=_code("""
                    exercise_x = np.array([[2.0, 7.0, 4.0, 4.0],
                                           [7.0, 1.0, 1.0, 0.0],
                                           [0.0, 3.0, 6.0, 2.0],
                                           [5.0, 3.0, 1.0, 8.0]])
                    exercise_dm = np.array([[1.0, -2.0], [0.5, 3.0]])
                    """)),
        Exercise(3, (Part("answer_3", "check_softmax_program({answer}, n=64)",
                          'answer_3 = tab.parse("z[] = sum{k}_0^63 (exp (x[k]))\\ns[i] = exp (x[i]) / z[]", '
                          '{"x": (64,), "z": (), "s": (64,)})', points=3),)),
    )),
    Assignment("11_capstone_cnn", "Chapter 11: the capstone network", _code("""
        from tensoradbook.exercises import check_layer
        """), (
        Exercise(1, (Part("answer_1", 'check_layer("average pooling", {answer})',
                          'answer_1 = "m[n; c; u; v] = sum{r}_0^1 (sum{s}_0^1 (a[n; c; 2 * u + r; 2 * v + s])) / 4"',
                          points=2),)),
        Exercise(2, (Part("answer_2", 'check_layer("leaky relu", {answer})',
                          'answer_2 = "a[n; c; i; j] = if {h[n; c; i; j] > 0} then (h[n; c; i; j]) '
                          'else (0.01 * h[n; c; i; j])"', points=2),)),
        Exercise(3, (Part("answer_3", 'check_layer("second convolution", {answer})',
                          'answer_3 = ("g[n; e; i; j] = sum{c}_0^1 (sum{p}_0^2 (sum{q}_0^2 (if {i + p >= 1 and '
                          'i + p <= 8 and j + q >= 1 and j + q <= 8} then (W2[e; c; p; q] * a[n; c; i + p - 1; '
                          'j + q - 1]) else (0)))) + b2[e]")', points=3),)),
    )),
    Assignment("12_build_it_yourself", "Chapter 12: build the engine yourself", _code("""
        from fractions import Fraction

        import numpy as np

        import tensoradbook as tab
        from tensoradbook.ad.reverse import local_partials
        from tensoradbook.exercises import (check_adjoints, check_algorithm4, check_box_solutions, check_index_solve,
                                            check_reads)
        from tensoradbook.lang.expr import Affine, Atom, Element, If, Select, Sum, substitute
        from tensoradbook.lang.printer import expr_text
        from tensoradbook.lang.simplify import ZERO, add, if_, mul, select

        # the section 6 example of the report
        text6 = "f[i; j] = exp (-sum{k}_0^4 (((a[i; k] + b[j; k]) ** 2 * c[i; i] + d[i + k] ** 3)))"
        shapes6 = {"f": (3, 4), "a": (3, 5), "b": (4, 5), "c": (3, 3), "d": (8,)}
        f6 = tab.parse(text6, shapes6)
        """), (
        # Each solution is written from the primitives the chapter gives (the parser, the nodes, Affine and Atom,
        # the simplifying constructors, local_partials, smith_normal_form, the evaluator), never from the
        # library's answers, which the checks switch off. Each hidden test runs the check on other cases with the
        # same features as its visible default (tests/test_exercises_build.py checks that every mutant a hidden test
        # fails, the visible check fails too).
        Exercise(1, (Part("reads", "check_reads({answer})", _code("""
                            def read_geometry(fn, read, sums):
                                alpha = list(fn.indices) + [s.index for s in sums]
                                A = [[int(index.coefficient(name)) for name in alpha] for index in read.indices]
                                a = [int(index.constant) for index in read.indices]
                                R, r = [], []

                                def at_least_zero(affine):  # the row of R alpha >= r that says affine >= 0
                                    R.append([int(affine.coefficient(name)) for name in alpha])
                                    r.append(-int(affine.constant))

                                for name, size in zip(fn.indices, fn.shapes[fn.name]):  # eq. 42
                                    at_least_zero(Affine.index(name))
                                    at_least_zero(Affine.constant_value(size - 1) - Affine.index(name))
                                for s in sums:  # eq. 52: d k >= numerator of each lower bound, d k <= of each upper
                                    k = Affine.index(s.index)
                                    for low in s.lower:
                                        at_least_zero(k.scale(low.denominator) - low.numerator)
                                    for high in s.upper:
                                        at_least_zero(high.numerator - k.scale(high.denominator))
                                return alpha, A, a, R, r


                            def reads(fn):  # noqa: F811
                                found = []

                                def visit(node, sums):
                                    if isinstance(node, Element):
                                        found.append((expr_text(node), *read_geometry(fn, node, sums)))
                                    else:
                                        inner = sums + (node,) if isinstance(node, Sum) else sums
                                        for child in node.children():
                                            visit(child, inner)

                                visit(fn.body, ())
                                return found
                            """),
                          points=2,
                          hidden=_code("""
                            more = [
                                ("g[i; j] = exp (sum{l}_0^3 (u[j; l] * v[i; l] + w[j; j] * e[j + l] ** 2))",
                                 {"g": (4, 3), "u": (3, 4), "v": (4, 4), "w": (3, 3), "e": (6,)}),
                                ("g[] = cos (x[] + y[]) * y[]", {"g": (), "x": (), "y": ()}),
                                ("g[i] = x[3 * i + 1] ** 2 * w[]", {"g": (3,), "x": (8,), "w": ()}),
                                ("g[i] = sum{k}_i^3 (x[k - i] * y[k])", {"g": (4,), "x": (4,), "y": (4,)}),
                                ("g[i] = sum{k}_(max [1; i - 1])^(min [4; floor((i + 1) / 2)]) (x[i + k] * x[k])",
                                 {"g": (6,), "x": (12,)}),
                                ("g[i; j] = sum{p}_0^2 (sum{q}_0^1 (if {i + p >= 1 and i + p <= 3} then "
                                 "(w[p; q] * x[i + p - 1; j + q]) else (0)))", {"g": (3, 2), "w": (3, 2), "x": (3, 3)}),
                                ("g[i] = if {x[i] >= 0} then (x[i]) else (0.1 * x[i] * y[i])",
                                 {"g": (4,), "x": (4,), "y": (4,)}),
                                ("g[i] = min{r}_0^2 (x[i + r])", {"g": (3,), "x": (5,)})]
                            result = check_reads(reads, functions=more)
                            assert result, f"reads on more functions: {result}"
                            """)),),
                 extra="Define `read_geometry(fn, read, sums)` and `reads(fn)` in the answer cell (exercise 5 uses "
                       "`read_geometry`); hidden tests walk more functions with the same features."),
        Exercise(2, (Part("adjoints", "check_adjoints({answer})", _code("""
                            def sweep(node, seed):
                                found = {}

                                def visit(node, adjoint, sums):
                                    if isinstance(node, Element):  # eq. 2: the paths into one read add up
                                        found[node, sums] = add(found.get((node, sums), ZERO), adjoint)
                                    elif isinstance(node, If):  # a Kronecker delta: the branch taken gets it
                                        visit(node.then, if_(node.condition, adjoint, ZERO), sums)
                                        visit(node.otherwise, if_(node.condition, ZERO, adjoint), sums)
                                    elif isinstance(node, Select):  # the compared values get nothing
                                        compared = node.op, node.left, node.right
                                        visit(node.then, select(*compared, adjoint, ZERO), sums)
                                        visit(node.otherwise, select(*compared, ZERO, adjoint), sums)
                                    else:  # eq. 1; a sum is liberated: its index is free in its body's adjoint
                                        inner = sums + (node,) if isinstance(node, Sum) else sums
                                        for child, partial in local_partials(node):
                                            visit(child, mul(adjoint, partial), inner)

                                visit(node, seed, ())
                                return found


                            def adjoints(fn):  # noqa: F811
                                seed = Element("d" + fn.name, tuple(Affine.index(i) for i in fn.indices))
                                return {expr_text(read): expr_text(adjoint)
                                        for (read, _), adjoint in sweep(fn.body, seed).items() if adjoint != ZERO}
                            """),
                          points=3,
                          hidden=_code("""
                            more = [
                                ("g[i; j] = exp (sum{l}_0^3 (u[j; l] * v[i; l] + w[j; j] * e[j + l] ** 2))",
                                 {"g": (4, 3), "u": (3, 4), "v": (4, 4), "w": (3, 3), "e": (6,)}),
                                ("g[] = cos (x[] + y[]) * y[]", {"g": (), "x": (), "y": ()}),
                                ("g[i] = (x[i] - y[i]) / (5 + x[i] * y[i])", {"g": (3,), "x": (3,), "y": (3,)}),
                                ("g[i; j] = sum{k}_0^2 (x[k; i] * y[j; k])", {"g": (4, 2), "x": (3, 4), "y": (2, 3)}),
                                ("g[i] = sum{k}_i^3 (x[k - i] * y[k])", {"g": (4,), "x": (4,), "y": (4,)}),
                                ("g[i; j] = sum{p}_0^2 (sum{q}_0^1 (if {i + p >= 1 and i + p <= 3} then "
                                 "(w[p; q] * x[i + p - 1; j + q]) else (0)))", {"g": (3, 2), "w": (3, 2), "x": (3, 3)}),
                                ("g[i] = if {i <= 1} then (y[i] * y[i]) else (x[i] / 2)",
                                 {"g": (4,), "x": (4,), "y": (4,)}),
                                ("g[i] = if {x[i] >= 0} then (x[i]) else (0.1 * x[i] * y[i])",
                                 {"g": (4,), "x": (4,), "y": (4,)}),
                                ("g[i] = min{r}_0^2 (x[i + r])", {"g": (3,), "x": (5,)})]
                            result = check_adjoints(adjoints, functions=more, seed=1)
                            assert result, f"adjoints on more functions: {result}"
                            """)),),
                 extra="Define `sweep(node, seed)` and `adjoints(fn)` as in section 2 of the chapter (exercise 5 uses "
                       "`sweep`); hidden tests try more functions with the same features."),
        Exercise(3, (Part("index_solve", "check_index_solve({answer})", _code("""
                            def index_solve(A):  # noqa: F811
                                smith = tab.smith_normal_form(A)  # S = U A V (eq. 12)
                                S, U, V, R = smith.S.tolist(), smith.U.tolist(), smith.V.tolist(), smith.rank
                                N, M = len(U), len(V)
                                # S alpha' = U b: row r < R gives alpha'_r = (U b)_r / s_r, the rest of alpha' is free
                                # (the last M - R columns of V), and rows R.. ask (U b)_r = 0 (eqs. 16-19)
                                I = [[sum(V[m][r] * Fraction(1, S[r][r]) * U[r][n] for r in range(R)) for n in range(N)]
                                     for m in range(M)]
                                return I, [row[R:] for row in V], U[R:]
                            """),
                          points=3,
                          hidden=_code("""
                            more = [[[3, 6, 9]], [[0, 0]], [[2, 1, 0], [4, 2, 0]], [[10, 6, 15]], [[1, 1], [1, -1]],
                                    [[4, 6], [6, 9]], [[0, 1, 0], [1, 0, 0]], [[1, -3]], [[2, 0, 0], [0, 4, 0]],
                                    np.zeros((0, 3), dtype=np.int64)]
                            result = check_index_solve(index_solve, matrices=more)
                            assert result, f"index_solve on more matrices: {result}"
                            """)),),
                 extra="Define `index_solve(A)` in the answer cell; hidden tests try more matrices of the same kinds."),
        Exercise(4, (Part("eliminate", "check_box_solutions({answer})", _code("""
                            def eliminate(M):  # noqa: F811
                                N = len(M)
                                kappa = len(M[0]) if N else 0
                                # each row (m, w) says m . z >= w . b; at the start w is the row's own unit row
                                rows = [([Fraction(v) for v in M[n]], [Fraction(int(j == n)) for j in range(N)])
                                        for n in range(N)]
                                bounds = []
                                for k in range(kappa):
                                    lower, upper, rest = [], [], []
                                    for m, w in rows:
                                        if m[k] == 0:
                                            rest.append((m, w))
                                        else:  # z_k >= (w . b - m_(k+1..) . z_(k+1..)) / m_k, or <= where m_k < 0
                                            bound = ([v / m[k] for v in w] + [Fraction(0)] * (k + 1)
                                                     + [-v / m[k] for v in m[k + 1:]])
                                            (lower if m[k] > 0 else upper).append((bound, m, w))
                                    bounds.append(([b for b, _, _ in lower], [b for b, _, _ in upper]))
                                    for _, ml, wl in lower:  # every lower bound <= every upper bound (eqs. 22-26)
                                        for _, mu, wu in upper:
                                            rest.append(([-mu[k] * x + ml[k] * y for x, y in zip(ml, mu)],
                                                         [-mu[k] * x + ml[k] * y for x, y in zip(wl, wu)]))
                                    seen, rows = set(), []
                                    for m, w in rest:  # one of the rows that are equal up to a positive factor
                                        scale = max((abs(v) for v in m + w), default=0) or 1
                                        key = tuple(v / scale for v in m + w)
                                        if key not in seen:
                                            seen.add(key)
                                            rows.append((m, w))
                                return bounds, [w for _, w in rows]  # no z is left: 0 >= w . b (eq. 34)
                            """),
                          points=3,
                          hidden=_code("""
                            more = [[[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1], [-1, -1]],
                                    [[0, 0], [1, 0], [0, 0], [-1, 0], [0, 1], [0, -1]],
                                    [[1, 2], [-1, -2], [0, 1], [0, -1], [1, 0], [-1, 0]],
                                    [[3], [-3], [1], [-1]],
                                    [[], [], []],
                                    [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1], [0, 0, 0],
                                     [1, 1, 1], [-1, -1, -1]],
                                    [[2, 1], [-1, 0], [0, -1], [1, 3]]]
                            result = check_box_solutions(eliminate, systems=more, seed=1)
                            assert result, f"eliminate on more systems: {result}"
                            """)),),
                 extra="Define `eliminate(M)` in the answer cell; hidden tests try more systems of the same kinds, "
                       "with other right sides."),
        Exercise(5, (Part("gradient", "check_algorithm4({answer})", _code("""
                            def combine(row, affines):  # row . affines, an Affine
                                out = Affine.constant_value(0)
                                for c, v in zip(row, affines):
                                    out = out + v.scale(c)
                                return out


                            def read_term(fn, read, sums, adjoint, beta, name):
                                alpha, A, a, R, r = read_geometry(fn, read, sums)  # line 4
                                matrix = np.array(A, dtype=np.int64).reshape(len(A), len(alpha))
                                I, K, C = index_solve(matrix)  # lines 5-7
                                target = [Affine.index(b) - o for b, o in zip(beta, a)]  # beta - a
                                conditions = [Atom(combine(row, target)) for row in C]  # C (beta - a) = 0 (eq. 16)
                                p = [combine(row, target) for row in I]  # I (beta - a)
                                # I (beta - a) integral (eq. 41; the report's eq. 46 drops it)
                                conditions += [Atom(v.numerator, v.denominator) for v in p if not v.is_integral]
                                kappa = len(K[0]) if K else 0
                                zs = [Affine.index(f"{name}_z{n}") for n in range(kappa)]
                                # line 8: R K z >= r - R I (beta - a)
                                RK = [[sum(R[i][j] * K[j][c] for j in range(len(alpha))) for c in range(kappa)]
                                      for i in range(len(R))]
                                rhs = [Affine.constant_value(r_i) - combine(row, p) for row, r_i in zip(R, r)]
                                bounds, F = eliminate(RK)  # line 9
                                conditions += [Atom(-combine(row, rhs), 0, inequality=True) for row in F]  # eq. 34
                                body = substitute(adjoint, {n: p[j] + combine(K[j], zs) for j, n in enumerate(alpha)})
                                N = len(rhs)

                                def bound(w):  # the row w of eliminate, on the right side and z
                                    return combine(w[:N], rhs) + combine(w[N:], zs)

                                for k, (lower, upper) in enumerate(bounds):  # line 10: z_0 innermost (eq. 45)
                                    body = Sum(f"{name}_z{k}", tuple(map(bound, lower)), tuple(map(bound, upper)), body)
                                return if_(tuple(conditions), body, ZERO)


                            def gradient(fn, argument):  # noqa: F811
                                name = "d" + argument
                                beta = [f"{name}_{n}" for n in range(len(fn.shapes[argument]))]
                                seed = Element("d" + fn.name, tuple(Affine.index(i) for i in fn.indices))
                                total = ZERO
                                for (read, sums), adjoint in sweep(fn.body, seed).items():  # line 3
                                    if read.name == argument:
                                        total = add(total, read_term(fn, read, sums, adjoint, beta, name))
                                return f"{name}[{'; '.join(beta)}] = {expr_text(total)}"
                            """),
                          points=4,
                          hidden=_code("""
                            more = [
                                ("g[i; j] = exp (sum{l}_0^3 (u[j; l] * v[i; l] + w[j; j] * e[j + l] ** 2))",
                                 {"g": (4, 3), "u": (3, 4), "v": (4, 4), "w": (3, 3), "e": (6,)}),
                                ("g[i] = (x[i] - y[i]) / (5 + x[i] * y[i])", {"g": (3,), "x": (3,), "y": (3,)}),
                                ("g[i] = x[i + 2] * x[i]", {"g": (4,), "x": (6,)}),
                                ("g[i] = x[3 * i + 1] ** 2 * w[]", {"g": (3,), "x": (8,), "w": ()}),
                                ("g[i] = sum{k}_0^2 (x[3 * i + k])", {"g": (3,), "x": (9,)}),
                                ("g[i] = sum{k}_i^3 (x[k - i] * y[k])", {"g": (4,), "x": (4,), "y": (4,)}),
                                ("g[i] = sum{k}_(max [1; i - 1])^(min [4; floor((i + 1) / 2)]) (x[i + k] * x[k])",
                                 {"g": (6,), "x": (12,)}),
                                ("g[i; j] = sum{p}_0^2 (sum{q}_0^1 (if {i + p >= 1 and i + p <= 3} then "
                                 "(w[p; q] * x[i + p - 1; j + q]) else (0)))", {"g": (3, 2), "w": (3, 2), "x": (3, 3)}),
                                ("g[i] = if {x[i] >= 0} then (x[i]) else (0.1 * x[i] * y[i])",
                                 {"g": (4,), "x": (4,), "y": (4,)}),
                                ("g[i] = min{r}_0^2 (x[i + r])", {"g": (3,), "x": (5,)}),
                                ("g[i; j] = x[j] * y[i]", {"g": (35, 30), "x": (30,), "y": (35,)})]
                            result = check_algorithm4(gradient, functions=more, seed=1)
                            assert result, f"gradient on more functions: {result}"
                            """)),),
                 extra="Define `read_term` and `gradient(fn, argument)` as in section 5 of the chapter (they call "
                       "your `sweep`, `read_geometry`, `index_solve` and `eliminate`); hidden tests derive more "
                       "functions with the same features."),
        Exercise(6, (Part("backprop", "check_algorithm4({answer}, net)", _code("""
                            def backprop(program, values):  # noqa: F811
                                known = dict(values)
                                for definition in program.definitions:  # the forward values
                                    known[definition.name] = definition.evaluate(known)
                                adjoint = {program.name: np.ones(program.shapes[program.name])}  # the seed (eq. 1)
                                for definition in reversed(program.definitions):  # each adjoint complete (eq. 2)
                                    if definition.name in adjoint:  # (else the output does not depend on it)
                                        known["d" + definition.name] = adjoint[definition.name]
                                        for argument in definition.arguments:
                                            shapes = {**definition.shapes, "d" + argument: definition.shapes[argument],
                                                      "d" + definition.name: definition.shapes[definition.name]}
                                            dx = tab.parse(gradient(definition, argument), shapes).evaluate(known)
                                            adjoint[argument] = adjoint.get(argument, 0) + dx
                                return {name: adjoint.get(name, np.zeros(program.shapes[name]))
                                        for name in program.arguments}
                            """),
                          points=3,
                          hidden=_code("""
                            # chapter 11's exercises on net: average pooling with a leaky ReLU; a second convolution
                            h, a, m, z, *rest = [str(definition) for definition in net.definitions]
                            leaky = ("a[n; c; i; j] = if {h[n; c; i; j] > 0} then (h[n; c; i; j]) "
                                     "else (0.01 * h[n; c; i; j])")
                            average = "m[n; c; u; v] = sum{r}_0^1 (sum{s}_0^1 (a[n; c; 2 * u + r; 2 * v + s])) / 4"
                            second = [
                                "g[n; e; i; j] = sum{c}_0^1 (sum{p}_0^2 (sum{q}_0^2 (if {i + p >= 1 and i + p <= 8 and "
                                "j + q >= 1 and j + q <= 8} then (W2[e; c; p; q] * a[n; c; i + p - 1; j + q - 1]) "
                                "else (0)))) + b2[e]",
                                "a2[n; e; i; j] = if {g[n; e; i; j] > 0} then (g[n; e; i; j]) else (0)",
                                "m[n; c; u; v] = max{r}_0^1 (max{s}_0^1 (a2[n; c; 2 * u + r; 2 * v + s]))",
                                "z[n; k] = sum{c}_0^2 (sum{u}_0^3 (sum{v}_0^3 (V[k; c; u; v] * m[n; c; u; v]))) + d[k]"]
                            wider = {"W2": (3, 2, 3, 3), "b2": (3,), "g": (2, 3, 8, 8), "a2": (2, 3, 8, 8),
                                     "m": (2, 3, 4, 4), "V": (10, 3, 4, 4)}
                            changed = [tab.parse("\\n".join([h, leaky, average, z, *rest]), net.shapes),
                                       tab.parse("\\n".join([h, a, *second, *rest]), {**net.shapes, **wider})]
                            result = check_algorithm4(backprop, changed, seed=1)
                            assert result, f"backprop on chapter 11's changed networks: {result}"
                            """)),),
                 given=_code("""
                    # chapter 11's network, small (2 images, 2 filters): its program, as
                    # tensoradbook.exercises.ch11_capstone.network(batch=2, filters=2) writes it
                    net = tab.parse(
                        "h[n; c; i; j] = sum{p}_0^2 (sum{q}_0^2 (if {i + p >= 1 and i + p <= 8 and j + q >= 1 and "
                        "j + q <= 8} then (W[c; p; q] * X[n; i + p - 1; j + q - 1]) else (0))) + b[c]\\n"
                        "a[n; c; i; j] = if {h[n; c; i; j] > 0} then (h[n; c; i; j]) else (0)\\n"
                        "m[n; c; u; v] = max{r}_0^1 (max{s}_0^1 (a[n; c; 2 * u + r; 2 * v + s]))\\n"
                        "z[n; k] = sum{c}_0^1 (sum{u}_0^3 (sum{v}_0^3 (V[k; c; u; v] * m[n; c; u; v]))) + d[k]\\n"
                        "zmax[n] = max{k}_0^9 (z[n; k])\\n"
                        "lse[n] = zmax[n] + log (sum{k}_0^9 (exp (z[n; k] - zmax[n])))\\n"
                        "L[] = -sum{n}_0^1 (sum{k}_0^9 (T[n; k] * (z[n; k] - lse[n]))) / 2",
                        {"X": (2, 8, 8), "W": (2, 3, 3), "b": (2,), "h": (2, 2, 8, 8), "a": (2, 2, 8, 8),
                         "m": (2, 2, 4, 4), "V": (10, 2, 4, 4), "d": (10,), "z": (2, 10), "zmax": (2,), "lse": (2,),
                         "T": (2, 10), "L": ()})
                    print(net)
                    """),
                 extra="Define `backprop(program, values)` in the answer cell (it calls your `gradient`); hidden "
                       "tests run it on chapter 11's changed networks (average pooling with a leaky ReLU, a second "
                       "convolution)."),
    )),
)

BY_STEM = {a.stem: a for a in ASSIGNMENTS}


# --- the chapters' exercise sections ----------------------------------------------------------------------

def exercise_cells(chapter: Path) -> list[dict]:
    """The cells of a chapter's "Exercises" section: from its heading to the next level-2 heading."""
    cells = json.loads(chapter.read_text())["cells"]
    start = None
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "markdown" and re.search(r"^##\s+Exercises\s*$", "".join(cell["source"]), re.M):
            start = i
    if start is None:
        return []
    # the heading may close a cell of the chapter's last section: keep what follows it
    first = dict(cells[start])
    text = "".join(first["source"])
    first["source"] = text[re.search(r"^##\s+Exercises\s*$", text, re.M).start():]
    section = [first]
    for cell in cells[start + 1:]:
        if cell["cell_type"] == "markdown" and re.match(r"##\s", "".join(cell["source"])):
            break
        section.append(cell)
    return section


def exercise_texts(chapter: Path) -> tuple[str, dict[int, str]]:
    """The section's introduction (what comes before Exercise 1) and each exercise's text, by number."""
    markdown = "\n\n".join("".join(c["source"]) for c in exercise_cells(chapter) if c["cell_type"] == "markdown")
    markdown = re.sub(r"^##\s+Exercises\s*$", "", markdown, count=1, flags=re.M)
    pieces = re.split(r"(?=^\*\*Exercise \d+\b)", markdown, flags=re.M)
    intro, texts = pieces[0].strip(), {}
    for piece in pieces[1:]:
        number = int(re.match(r"\*\*Exercise (\d+)", piece).group(1))
        texts[number] = piece.strip()
    return intro, texts


def check_calls(code: str) -> list[ast.Call]:
    """The calls of ``check_*`` functions in a piece of code."""
    return [node for node in ast.walk(ast.parse(code)) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name) and node.func.id.startswith("check_")]


def normalized_call(call: ast.Call) -> str:
    """A check call as text, every argument by name and the ``answer`` replaced by ``ANSWER``: the chapter's
    ``None`` (or ``my_hv``) and an assignment's answer variable compare equal."""
    import inspect

    from tensoradbook import exercises

    signature = inspect.signature(getattr(exercises, call.func.id))
    bound = signature.bind(*call.args, **{k.arg: k.value for k in call.keywords})
    bound.arguments["answer"] = ast.Name("ANSWER")
    return f"{call.func.id}({', '.join(f'{k}={ast.unparse(v)}' for k, v in bound.arguments.items())})"


# --- the source notebooks -----------------------------------------------------------------------------------

def _cell(cell_type: str, source: str, grade_id: str, *, grade=False, solution=False, locked=True,
          points=None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
            "task": False}
    if points is not None:
        meta["points"] = points
    cell = {"cell_type": cell_type, "metadata": {"nbgrader": meta}, "source": source}
    if cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def answer_source(part: Part) -> str:
    """The answer cell: the placeholder, then the solution, which nbgrader replaces by the code stub.

    Solutions may carry ``# noqa`` for ruff (``make lint`` checks course/source/ too): a function redefines its
    placeholder ``None`` (F811), a loop-bounds answer is a lambda (E731). The release never shows them.
    """
    stub = part.stub or f"{part.answer} = None"
    return f"{stub}\n### BEGIN SOLUTION\n{part.solution}\n### END SOLUTION"


def test_source(part: Part) -> str:
    """The graded cell: the chapter's check on the answer, the verdict printed, then asserted."""
    lines = []
    if "{answer}" not in part.call:  # a function the student writes, called inside the check
        lines.append(f'assert callable({part.answer}), "no answer yet: define {part.answer} in the cell above"')
    lines += [f"result = {part.call.format(answer=part.answer)}", "print(result)",
              f'assert result, "{ASSERT_MESSAGE}"']
    if part.hidden:
        lines += ["### BEGIN HIDDEN TESTS", part.hidden, "### END HIDDEN TESTS"]
    return "\n".join(lines)


def setup_source(assignment: Assignment) -> str:
    """The setup cell: the assignment's setup, with its library policy (tensoradbook/exercises/policy.py) put in
    place in the student's kernel, so that what graded answers may not use fails there before it fails in grading
    (where the sandbox has a copy of the library without it, classroom/library_policy.py)."""
    return ("from tensoradbook.exercises.policy import enforce  # what graded answers may not use of the library\n"
            f'{assignment.setup}\n\nenforce("{assignment.stem}")')


def source_notebook(assignment: Assignment) -> dict:
    """The instructor's notebook of one assignment, in nbgrader's cell metadata (schema 3)."""
    intro, texts = exercise_texts(NOTEBOOKS / f"{assignment.stem}.ipynb")
    n = len(assignment.exercises)
    header = "\n".join([
        f"# {assignment.title}: exercises",
        "",
        f"The exercises at the end of `notebooks/{assignment.stem}.ipynb`, as an assignment: {n} exercises, "
        f"**{assignment.points} points** in all.",
        "",
        "* Run the setup cell first, then each exercise's cells from top to bottom.",
        "* Write your answer in the cell that starts with `answer_... = None` (or the function named there), "
        "replacing `None`; leave the other cells as they are (they are read-only).",
        "* The test cell after each answer runs the chapter's check function and prints what is right or wrong, "
        "with a hint; it counts the points shown next to the exercise. Some tests run more checks when graded.",
        "* Before you submit: Kernel > Restart Kernel and Run All Cells, or the **Validate** button.",
        "* The setup cell prints what of the library your answers may not use here (what would give an answer away); "
        "using it raises an error, in this notebook and when graded.",
    ] + (["", intro] if intro else []))
    cells = [_cell("markdown", header, "header"), _cell("code", setup_source(assignment), "setup")]
    for ex in assignment.exercises:
        text = ex.text or texts[ex.number]
        text += f"\n\n*({ex.points} point{'s' if ex.points != 1 else ''})*"
        if ex.extra:
            text += f" {ex.extra}"
        tag = f"ex{ex.number}"
        cells.append(_cell("markdown", text, f"{tag}_text"))
        if ex.given:
            cells.append(_cell("code", ex.given, f"{tag}_given"))
        for part in ex.parts:
            pid = f"{tag}{part.label}"
            cells.append(_cell("code", answer_source(part), f"{pid}_answer", solution=True, locked=False))
            cells.append(_cell("code", test_source(part), f"{pid}_test", grade=True, points=part.points))
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
            "language_info": {"name": "python", "pygments_lexer": "ipython3"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _with_ids(nb: dict, stem: str) -> dict:
    # nbformat 4.5 wants a cell id; stable ids keep the committed notebooks' diffs small
    for i, cell in enumerate(nb["cells"]):
        cell["id"] = f"{stem.split('_')[0]}-{i:02d}"
        cell["source"] = cell["source"].splitlines(keepends=True)
        # jupyter's own key order
        ordered = {k: cell[k] for k in ("cell_type", "execution_count", "id", "metadata", "outputs", "source")
                   if k in cell}
        cell.clear()
        cell.update(ordered)
    return nb


def build_source(course: Path = COURSE) -> list[Path]:
    """Write ``course/source/<stem>/<stem>.ipynb`` for every assignment; returns the paths."""
    written = []
    for assignment in ASSIGNMENTS:
        path = course / "source" / assignment.stem / f"{assignment.stem}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nb = _with_ids(source_notebook(assignment), assignment.stem)
        path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
        written.append(path)
    return written


# --- nbgrader ---------------------------------------------------------------------------------------------

def nbgrader_env() -> dict:
    """The environment for nbgrader: this interpreter's bin folder first on PATH (nbgrader runs alembic), the
    repository on PYTHONPATH (course/nbgrader_config.py imports classroom.grading)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO), env.get("PYTHONPATH", "")] if p)
    return env


def nbgrader(*args: str, course: Path = COURSE, check: bool = True, user: str | None = None,
             timeout: float | None = None) -> subprocess.CompletedProcess:
    """Run ``nbgrader <args>`` inside ``course`` (which holds nbgrader_config.py), output passed through; as the
    Unix ``user`` when given and run as root (nbgrader's exchange accepts releases only from the course's owner).
    Past ``timeout`` seconds it is stopped and counts as failed (return code -9)."""
    cmd = [sys.executable, "-m", "nbgrader", *args]
    print("$", " ".join(cmd[2:]), flush=True)
    env = nbgrader_env()
    if user and os.geteuid() == 0:
        import pwd

        entry = pwd.getpwnam(user)
        cmd = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups", *cmd]
        env.update(HOME=entry.pw_dir, USER=user, LOGNAME=user)
    try:
        return subprocess.run(cmd, cwd=course, env=env, check=check, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"error: nbgrader {args[0]} ran past its bound of {timeout:.0f} s and was stopped", file=sys.stderr)
        return subprocess.CompletedProcess(cmd, -9)


def generate_assignments(course: Path = COURSE) -> None:
    """The student version of every assignment in ``course/release/``; gradebook entries are created."""
    # one nbgrader process for all of them: "*" is a glob over source/ (starting nbgrader takes seconds)
    nbgrader("generate_assignment", "*", "--force", course=course)
    print(f"Releases are in {course / 'release'}/<assignment>/ "
          f"({', '.join(a.stem for a in ASSIGNMENTS)}).")


def submissions(course: Path = COURSE) -> dict[str, list[str]]:
    """The submitted assignments: assignment id -> students with a notebook in submitted/<student>/<id>/."""
    found: dict[str, list[str]] = {}
    for folder in sorted((course / "submitted").glob("*/*/")):
        if any(folder.glob("*.ipynb")):
            found.setdefault(folder.name, []).append(folder.parent.name)
    return found


REPORT_FIELDS = ("assignment", "student", "cell", "kind", "detail")
#: course/grading_state.json: assignment -> student -> the digest of the submission as last graded.
GRADING_STATE = "grading_state.json"
#: A submitted notebook larger than this is not graded: an answer is text, a flood is not.
MAX_NOTEBOOK_BYTES = 32 * 2 ** 20
#: Seconds and bytes for reading one submission before grading (:func:`screen`).
SCREEN_SECONDS, SCREEN_MEMORY = 60, 2 * 2 ** 30
#: Seconds one submission may take in autograde beyond its own bound (``SandboxedExecute.submission_timeout``):
#: nbgrader's start, the sandbox's start, the feedback's files.
SUBMISSION_OVERHEAD = 180


def _read_submission(folder: str) -> dict:
    """Why nbgrader could not grade the notebooks in ``folder`` (``{"why": None}`` where it can): each a regular
    file within :data:`MAX_NOTEBOOK_BYTES`, a valid notebook, and nbgrader's cell metadata of the schema this
    nbgrader reads (another ``schema_version`` makes nbgrader's autograde end the whole run, not only this one)."""
    import stat

    import nbformat
    from nbgrader.nbgraderformat import MetadataValidator

    for path in sorted(Path(folder).glob("*.ipynb")):
        status = os.lstat(path)
        if not stat.S_ISREG(status.st_mode):
            return {"why": f"{path.name} is not a plain file"}
        if status.st_size > MAX_NOTEBOOK_BYTES:
            return {"why": f"{path.name} is {status.st_size / 2 ** 20:.0f} MiB, over the limit of "
                           f"{MAX_NOTEBOOK_BYTES / 2 ** 20:.0f} MiB"}
        try:
            nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
            nbformat.validate(nb)
            MetadataValidator().validate_nb(nb)
        except Exception as error:  # noqa: BLE001 -- whatever is wrong with it, it is this submission's
            return {"why": f"{path.name} cannot be graded: {type(error).__name__}: {str(error)[:300]}"}
    return {"why": None}


def screen(folder: Path) -> str | None:
    """Why the submission in ``folder`` cannot be graded, or None; read in a child on a clock
    (:func:`classroom.grading.on_a_clock`), so that no notebook, however large or strange, stops the grading."""
    from classroom.grading import CheckTimeout, on_a_clock

    try:
        return on_a_clock(lambda: _read_submission(str(folder)), SCREEN_SECONDS, SCREEN_MEMORY)["why"]
    except CheckTimeout:
        return f"reading it took more than {SCREEN_SECONDS} s or {SCREEN_MEMORY / 2 ** 30:g} GiB"


def submission_bound() -> float:
    """Seconds one submission may take in autograde, all included: nbgrader runs a class within N times this."""
    from classroom.grading import SandboxedExecute

    trait = SandboxedExecute.class_traits()
    return max(trait["submission_timeout"].default_value, trait["notebook_timeout"].default_value) \
        + SUBMISSION_OVERHEAD


def _graded_since(course: Path, assignment_id: str, student: str, start: float) -> bool:
    notebooks = list((course / "autograded" / student / assignment_id).glob("*.ipynb"))
    return bool(notebooks) and all(nb.stat().st_mtime >= start for nb in notebooks)


def _stamp(folder: Path) -> None:
    """nbgrader takes the submission time (grades.csv's timestamp, late penalties) from timestamp.txt, which
    ``nbgrader submit`` writes; a submission copied into submitted/ by hand has none: its newest notebook's
    modification time stands in."""
    stamp = folder / "timestamp.txt"
    if not stamp.exists():
        newest = max(nb.stat().st_mtime for nb in folder.glob("*.ipynb"))
        stamp.write_text(datetime.fromtimestamp(newest, UTC).strftime("%Y-%m-%d %H:%M:%S.%f %Z"))


def submission_digest(course: Path, assignment_id: str, student: str) -> str:
    """What a grade depends on: the submitted files (timestamp.txt included) and the assignment's source (its
    tests); a change to either makes the submission new to :func:`grade`."""
    digest = hashlib.sha256()
    for folder in (course / "submitted" / student / assignment_id, course / "source" / assignment_id):
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts):
            digest.update(f"{path.relative_to(folder)}\0{path.stat().st_size}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def grade(course: Path = COURSE, only: str | None = None, force: bool = False, extra_rows=()) -> int:
    """Autograde the submissions that are new or changed since their last grading (every one with ``force``;
    of the assignment ``only``, if given), write their feedback, export the gradebook to ``course/grades.csv``
    and ``course/export/`` (:func:`export_lms`) and the grading report to ``course/grading_report.csv`` (with
    ``extra_rows``, e.g. the submissions the class server's collect refused).

    Every submission is graded alone and always finishes: one that cannot be read (:func:`screen`: any size, any
    metadata) is left out before nbgrader starts; nbgrader's run over the rest is bounded (:func:`submission_bound`
    a submission), and where it fails or runs past its bound, each submission it did not finish is graded again in
    a run of its own. A submission that cannot be graded is listed in the report with the reason and tried again
    next time; the others are graded, fed back and exported all the same. Returns 1 when answers cannot be
    isolated here (:func:`classroom.sandbox.isolation_available`), or there was something to grade and none of
    it could be.
    """
    from classroom.sandbox import isolation_available

    refused = isolation_available()
    if refused:
        print(f"error: grading refused: {refused}", file=sys.stderr)
        return 1
    found = submissions(course)
    if only is not None:
        found = {only: found[only]} if only in found else {}
    if not found:
        print(f"Nothing to grade: no notebooks in {course / 'submitted'}/<student>/"
              f"{only or '<assignment>'}/.")
        return 0
    state_path = course / GRADING_STATE
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    rows, graded, tried = list(extra_rows), [], 0
    bound = submission_bound()
    for assignment_id, students in found.items():
        for student in students:
            _stamp(course / "submitted" / student / assignment_id)
        digests = {s: submission_digest(course, assignment_id, s) for s in students}
        known = state.setdefault(assignment_id, {})
        todo = [s for s in students if force or known.get(s) != digests[s]
                or not _graded_since(course, assignment_id, s, 0)]
        print(f"{assignment_id}: {len(students)} submission(s), {len(todo)} to grade"
              + (f" ({', '.join(todo)})" if todo else ": none new or changed since graded (FORCE=1 regrades)"))
        if not todo:
            continue
        tried += len(todo)
        if assignment_id in BY_STEM and not ((course / "gradebook.db").exists()
                                             and (course / "release" / assignment_id).is_dir()):
            # autograde needs the assignment and its tests in the gradebook: `make assignments` was not run here
            nbgrader("generate_assignment", assignment_id, "--force", course=course, check=False)
        unreadable = {s: why for s in todo if (why := screen(course / "submitted" / s / assignment_id))}
        rows += [{"assignment": assignment_id, "student": s, "cell": "", "kind": "not graded", "detail": why}
                 for s, why in unreadable.items()]
        readable = [s for s in todo if s not in unreadable]
        # --force regrades what is in autograded/ already; the exclusion keeps nbgrader to the new submissions
        start = time.time() - 1  # file times have a coarse clock on some file systems
        if readable:
            batch = nbgrader("autograde", assignment_id, "--create", "--force", *_excluding(students, readable),
                             course=course, check=False, timeout=len(readable) * bound)
            unfinished = [s for s in readable if not _graded_since(course, assignment_id, s, start)]
            if batch.returncode != 0 and len(unfinished) > 1:  # one of them ended the run: each alone, then
                for s in unfinished:
                    nbgrader("autograde", assignment_id, "--create", "--force", *_excluding(students, [s]),
                             course=course, check=False, timeout=bound)
        done = [s for s in readable if _graded_since(course, assignment_id, s, start)]
        rows += [{"assignment": assignment_id, "student": s, "cell": "", "kind": "not graded",
                  "detail": "nbgrader autograde failed on this submission (its log above says why)"}
                 for s in readable if s not in done]
        if done:
            nbgrader("generate_feedback", assignment_id, "--force", *_excluding(students, done), course=course,
                     check=False)
        known.update({s: digests[s] for s in done})
        for s in todo:
            if s not in done:
                known.pop(s, None)
        graded += [(assignment_id, s) for s in done]
    state_path.write_text(json.dumps(state, indent=1, sort_keys=True) + "\n")
    grades = course / "grades.csv"
    exported = nbgrader("export", f"--to={grades}", course=course, check=False).returncode == 0
    if exported:
        export_lms(grades, course / "export")
    # the report covers every graded submission, this run's and the earlier ones still current
    current = [(a, s) for a, students in found.items() for s in students if s in state.get(a, {})]
    rows += _sandbox_events(course, current)
    report = course / "grading_report.csv"
    with open(report, "w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=REPORT_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    failed = [r for r in rows if r["kind"] == "not graded"]
    flagged = sorted({(r["assignment"], r["student"]) for r in rows if r["kind"] != "not graded"})
    print(f"Graded {len(graded)} submission(s); {len(failed)} could not be graded; {len(flagged)} with events "
          f"(timeouts, exits, flags) in {report}.")
    for row in failed:
        print(f"  not graded: {row['student']} / {row['assignment']}: {row['detail']}")
    if tried and not graded:
        print(f"error: no submission could be graded: nbgrader autograde failed on all {len(failed)} of them "
              f"(see its log above).", file=sys.stderr)
        return 1
    if not exported:
        print(f"error: the grades could not be exported to {grades} (see nbgrader's log above).", file=sys.stderr)
        return 1
    print(f"Feedback is in {course / 'feedback'}/<student>/<assignment>/ and the grades are in {grades} "
          f"(for Canvas and Moodle: {course / 'export'}/).")
    return 0


def _excluding(students: list[str], chosen: list[str]) -> list[str]:
    """nbgrader's option that leaves out the ``students`` not ``chosen`` (it has none to name several)."""
    rest = [s for s in students if s not in chosen]
    return [f"--CourseDirectory.student_id_exclude={','.join(rest)}"] if rest else []


def _canvas_name(row: dict) -> str:
    return ", ".join(n for n in (row["last_name"], row["first_name"]) if n) or row["student_id"]


def export_lms(grades: Path, folder: Path) -> list[Path]:
    """grades.csv as gradebook imports for an LMS, one column per assignment that has a submission (a student
    who did not submit it has an empty cell, not 0, so the import leaves that grade alone):

    * ``canvas.csv``: Canvas's gradebook columns, Student, ID, SIS User ID, SIS Login ID, Section, then one per
      assignment, and the "Points Possible" row. The student is matched on SIS Login ID, nbgrader's student id
      (the class server's login); ID is the gradebook's lms_user_id where one was set. An assignment column has
      no Canvas id in parentheses (nbgrader knows none): Canvas makes a new column a new assignment;
    * ``moodle.csv``: for Moodle's "Import grades from CSV": Username and Email address (map either to the user
      on import), First name, Last name, then one column per assignment (map each to its grade item)."""
    with open(grades, newline="") as f:
        rows = list(csv.DictReader(f))
    titles = {a.stem: a.title for a in ASSIGNMENTS}
    submitted = [r for r in rows if r["timestamp"]]
    columns = sorted({r["assignment"] for r in submitted})
    points = {r["assignment"]: r["max_score"] for r in rows}
    students: dict[str, dict] = {}
    for row in rows:
        students.setdefault(row["student_id"], {"row": row, "scores": {}})
    for row in submitted:
        students[row["student_id"]]["scores"][row["assignment"]] = row["score"]
    lms_ids = _lms_user_ids(grades.parent)
    folder.mkdir(parents=True, exist_ok=True)
    names = [titles.get(a, a) for a in columns]
    canvas, moodle = folder / "canvas.csv", folder / "moodle.csv"
    with open(canvas, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *names])
        writer.writerow(["Points Possible", "", "", "", "", *(points[a] for a in columns)])
        for sid, entry in sorted(students.items()):
            writer.writerow([_canvas_name(entry["row"]), lms_ids.get(sid, ""), "", sid, "",
                             *(entry["scores"].get(a, "") for a in columns)])
    with open(moodle, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["Username", "Email address", "First name", "Last name", *names])
        for sid, entry in sorted(students.items()):
            row = entry["row"]
            writer.writerow([sid, row["email"], row["first_name"], row["last_name"],
                             *(entry["scores"].get(a, "") for a in columns)])
    return [canvas, moodle]


def _lms_user_ids(course: Path) -> dict[str, str]:
    """student id -> the LMS's user id the gradebook holds (``nbgrader db student add --lms-user-id``), if any."""
    import sqlite3

    db = course / "gradebook.db"
    if not db.exists():
        return {}
    with contextlib.closing(sqlite3.connect(db)) as connection:
        try:
            return {sid: lms for sid, lms in connection.execute("select id, lms_user_id from student") if lms}
        except sqlite3.OperationalError:  # a gradebook older than the column
            return {}


def _sandbox_events(course: Path, graded: list[tuple[str, str]]) -> list[dict]:
    """The report rows of what happened while grading (classroom/grading.py writes one JSON per notebook)."""
    rows, isolations = [], set()
    for assignment_id, student in graded:
        path = course / "grading_reports" / assignment_id / f"{student}.json"
        if not path.exists():
            continue
        report = json.loads(path.read_text())
        isolations.add(report.get("isolation") or "none")
        rows += [{"assignment": assignment_id, "student": student, **{k: e.get(k, "") for k in REPORT_FIELDS[2:]}}
                 for e in report.get("events", [])]
    for isolation in sorted(isolations):
        if not isolation.startswith("bubblewrap"):
            print(f"warning: answers ran with isolation '{isolation}' only (bubblewrap is missing or does not "
                  "work here): a determined student could read the course folder. apt install bubblewrap.",
                  file=sys.stderr)
    return rows


# --- the class server's course (make hub; classroom/hub.py) ----------------------------------------------------
#
# Root runs `make assignments` and `make grade` on the class server, yet every step on the course runs as its (first)
# instructor: generating, collecting, autograding and releasing execute what the instructors write (the course
# folder's nbgrader_config.py, which nbgrader always loads from the course's root, and the setup and test cells of
# the source notebooks, which the grader itself runs, classroom/grading.py), so run as root any of them would make
# an instructor root. Root only hands back what older versions left as root's (`_give_to_instructors`, never
# through a link) and starts `python -B -m classroom.course ... --hub` again as the instructor (`_as_instructor`),
# with a clean environment and the repository's classroom/. The answers still run in bubblewrap
# (classroom/sandbox.py), in a user namespace of the instructor's, the course folder, the exchange, the homes and
# the repository hidden; where bubblewrap cannot run so, grading is refused (hub/README.md).

#: The variable with which whoever starts the grading accepts answers behind the audit hook alone
#: (classroom.sandbox.WEAK_SANDBOX_ENV), passed on to the instructor's process when root has it set.
_WEAK_SANDBOX_ENV = "TENSORADBOOK_WEAK_SANDBOX"


def _hub_options(settings) -> list[str]:
    return [f"--CourseDirectory.course_id={settings.course_id}", f"--Exchange.root={settings.exchange}"]


def _give_to_instructors(settings) -> None:
    """What older versions, which generated and graded as root, left as root's in the course directory and in the
    course's folders of the exchange goes to the instructors, who now do all of it: root's folders and plain files
    only, each on a descriptor opened without following links, never a file with another hard link
    (:func:`classroom.exchange.chown_tree`); a link in the way of a top folder leaves that folder alone."""
    import grp
    import pwd

    from classroom import exchange

    if os.geteuid() != 0:
        return
    uid, gid = pwd.getpwnam(settings.instructors[0]).pw_uid, grp.getgrnam(settings.staff_group).gr_gid
    course_exchange = settings.exchange / settings.course_id
    for top in (settings.course, course_exchange / "outbound", course_exchange / "feedback"):
        try:
            exchange.chown_tree(top, uid, gid, only_uid=0)
        except FileNotFoundError:
            continue
        except OSError as error:  # UnsafePath: a link where a folder belongs
            print(f"warning: {top} was not handed to the instructors: {error}", file=sys.stderr)


def _as_instructor(settings, command: str, only: str | None, force: bool = False) -> int:
    """``python -B -m classroom.course <command> [only] --hub`` as the course's first instructor (setpriv, their
    groups), from the repository, in an environment of its own: the instructor's HOME, this Python's bin folder
    first on PATH, the repository alone on PYTHONPATH, the instructors' Jupyter configuration of the class server
    (``<jupyter>/instructor``: the course, the exchange, group sharing). Returns its exit status."""
    import pwd
    import shutil

    from classroom import hub

    entry = pwd.getpwnam(settings.instructors[0])
    if entry.pw_uid == 0:
        raise SystemExit(f"error: the instructor {entry.pw_name} is root: name an ordinary user in {settings.path}")
    # the instructor reads the course table through the staff group; a git pull since make hub rewrote it as root's
    # and readable by all: locked away again, for the staff group
    hub.hide_solutions(settings)
    env = {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
           "HOME": entry.pw_dir, "USER": entry.pw_name, "LOGNAME": entry.pw_name,
           "LANG": os.environ.get("LANG", "C.UTF-8"), "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1",
           "JUPYTER_CONFIG_PATH": str(settings.jupyter / "instructor"), hub.SETTINGS_ENV: str(settings.path),
           EXCHANGE_ENV: str(settings.exchange)}
    env.update({k: os.environ[k] for k in (_WEAK_SANDBOX_ENV, "TERM") if k in os.environ})
    setpriv = shutil.which("setpriv", path="/usr/bin:/bin") or "setpriv"  # not from whatever root's PATH has first
    cmd = [setpriv, f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups",
           sys.executable, "-B", "-m", "classroom.course", command, *([only] if only else []), "--hub",
           "--settings", str(settings.path), *(["--force"] if force else [])]
    print(f"As the instructor {entry.pw_name} (root runs nothing of the course's):", flush=True)
    return subprocess.run(cmd, cwd=REPO, env=env).returncode


def hub_course(settings_path: Path | None = None):
    """The hub's settings, when its course directory is set up (``make hub`` ran), else None."""
    from classroom import hub

    settings = hub.load_settings(settings_path)
    return settings if (settings.course / "nbgrader_config.py").exists() else None


def hub_assignments(settings, only: str | None = None) -> None:
    """Generate every assignment (or ``only`` one) in the hub's course directory and release it into the
    exchange, as the instructor (run as root, it starts itself again as the instructor: :func:`_as_instructor`)."""
    if os.geteuid() == 0:
        _give_to_instructors(settings)
        status = _as_instructor(settings, "assignments", only)
        if status:
            raise SystemExit(status)
        return
    os.environ[EXCHANGE_ENV] = str(settings.exchange)
    stems = [only] if only else [a.stem for a in ASSIGNMENTS]
    if only:
        nbgrader("generate_assignment", only, "--force", course=settings.course)
    else:
        generate_assignments(settings.course)
    for stem in stems:
        nbgrader("release_assignment", stem, "--force", *_hub_options(settings), course=settings.course)
    print(f"Released {len(stems)} assignment(s) into {settings.exchange / settings.course_id / 'outbound'}: "
          "students fetch them in their Assignments tab.")


def _unreleasable(course: Path, stems: list[str]) -> list[dict]:
    """Report rows for the submissions whose feedback cannot go back through the exchange: those without the
    ``submission_secret.txt`` that ``nbgrader submit`` writes (put into submitted/ by hand), which names the
    feedback's file in the exchange."""
    return [{"assignment": folder.name, "student": folder.parent.name, "cell": "", "kind": "feedback not released",
             "detail": "no submission_secret.txt (not collected from the exchange): its feedback stays in "
                       f"{course / 'feedback'}/, for the instructor to hand over"}
            for stem in stems for folder in sorted((course / "submitted").glob(f"*/{stem}/"))
            if any(folder.glob("*.ipynb")) and not (folder / "submission_secret.txt").is_file()]


def _release_feedback(settings, stems: list[str]) -> None:
    """nbgrader's release_feedback of every assignment with feedback, leaving out the students whose feedback has
    no ``timestamp.txt`` or ``submission_secret.txt`` (nbgrader would stop at the first of them with a traceback,
    and release nobody's after it)."""
    for stem in stems:
        folders = sorted((settings.course / "feedback").glob(f"*/{stem}/"))
        names = [f.parent.name for f in folders]
        ready = [f.parent.name for f in folders
                 if all((f / n).is_file() for n in ("timestamp.txt", "submission_secret.txt"))]
        for name in names:
            if name not in ready:
                print(f"feedback not released: {name} / {stem}: no submission_secret.txt", flush=True)
        if ready:
            done = nbgrader("release_feedback", stem, *_hub_options(settings), *_excluding(names, ready),
                            course=settings.course, check=False)
            if done.returncode != 0:
                print(f"warning: nbgrader release_feedback {stem} failed (its log above says why)", file=sys.stderr)


def hub_grade(settings, only: str | None = None, force: bool = False) -> int:
    """Collect the submissions from the exchange (:func:`classroom.exchange.collect`: only what the student whose
    id it carries owns, no links, ids from the class list), autograde them (:func:`grade`, the refused entries in
    its report), release the feedback; as the instructor (run as root, it starts itself again as the instructor:
    :func:`_as_instructor`)."""
    if os.geteuid() == 0:
        _give_to_instructors(settings)
        return _as_instructor(settings, "grade", only, force)
    from classroom import exchange

    os.environ[EXCHANGE_ENV] = str(settings.exchange)
    stems = [only] if only else [a.stem for a in ASSIGNMENTS]
    rows = exchange.collect(settings, stems)
    rows += _unreleasable(settings.course, stems)
    status = grade(settings.course, only, force=force, extra_rows=rows)
    _release_feedback(settings, stems)
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m classroom.course", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["build-source", "assignments", "grade"])
    parser.add_argument("assignment", nargs="?",
                        help="only this assignment (e.g. 04a_integer_equations): grade, and on the class server also "
                             "assignments")
    parser.add_argument("--course", type=Path, default=None,
                        help="the course folder with nbgrader_config.py (default: the class server's course when "
                             "`make hub` set it up, else course/ of the repository)")
    parser.add_argument("--force", action="store_true",
                        help="grade: every submission again, not only those new or changed since their grading")
    parser.add_argument("--hub", action="store_true",
                        help="the class server's course (hub/course.toml): release into its exchange, collect from it")
    parser.add_argument("--settings", type=Path, default=None, help="--hub: another settings file than hub/course.toml")
    args = parser.parse_args(argv)
    if args.command != "build-source" and args.course is None:
        settings = hub_course(args.settings)
        if args.hub and settings is None:
            print("error: the class server's course directory is not set up: run `make hub` first (as root).",
                  file=sys.stderr)
            return 1
        if settings is not None:
            print(f"The class server's course ({settings.path}): {settings.course}, exchange {settings.exchange}")
            if args.command == "assignments":
                hub_assignments(settings, args.assignment)
                return 0
            return hub_grade(settings, args.assignment, force=args.force)
    course = (args.course or COURSE).resolve()
    if args.command == "build-source":
        for path in build_source(course):
            print("wrote", path.relative_to(course.parent) if course.parent in path.parents else path)
        return 0
    if args.command == "assignments":
        generate_assignments(course)
        return 0
    return grade(course, args.assignment, force=args.force)


if __name__ == "__main__":
    sys.exit(main())

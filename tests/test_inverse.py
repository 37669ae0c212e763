"""Inverse accumulation mode (tensoradbook.inverse; Pearlmutter & Siskind, eqs. 2.3-2.6, 4.7, 5.10).

Oracles: the traced step function run natively on complex numbers, whose
complex-step differences give the Jacobian to machine precision (no tracing,
no sweeps involved), numpy.linalg.solve on it, the matrix of a linear program
itself, an eigendecomposition for expm, and the worked numbers of the notes.
"""

import math
import re

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from tensoradbook import inverse as ia
from tensoradbook.inverse import engine as numba_engine
from tensoradbook.inverse import examples, instructions, rules
from tensoradbook.lang import simplify
from tensoradbook.lang.expr import Binary, Element, Number, Unary
from tensoradbook.lang.function import Function
from tensoradbook.lang.ops import OPERATIONS

ENGINES = ("python", "numba")


PRODUCT, TRANSCENDENTAL = examples.fig2_products, examples.fig2_transcendental


def native(step, x):
    """The step function run on plain (complex) numbers, without tracing."""
    registers = list(x)
    step(registers)
    return np.array(registers)


def oracle_jacobian(step, x, h=1e-30):
    """Complex-step differences of the native function: exact to rounding."""
    x = np.asarray(x, dtype=complex)
    return np.column_stack([native(step, x + 1j * h * e).imag / h for e in np.eye(len(x))])


# ---------------------------------------------------------------------------------------------
# The worked numbers (notes/inverse_ad.md), both programs, every seed.

PRODUCT_SEEDS = [  # seed, J^-1 seed, J^-T seed
    ((1, 1, 1), (-1 / 3, 1, -2 / 3), (-1 / 2, 1 / 3, 1 / 6)),
    ((1, 0, 0), (1 / 3, 0, -5 / 6), (1 / 3, -2 / 3, 0)),
    ((0, 0, 1), (0, 0, 1 / 6), (-5 / 6, 0, 1 / 6)),
]


@pytest.mark.parametrize("engine", ENGINES)
def test_product_program_worked_numbers(engine):
    prog = ia.trace(PRODUCT, n=3)
    x = (2, 3, 5)
    np.testing.assert_allclose(ia.run(prog, x, engine=engine), (6, 3, 30))
    np.testing.assert_allclose(ia.jacobian(prog, x, engine=engine), [[3, 2, 0], [0, 1, 0], [15, 10, 6]])
    for seed, inverse, inverse_transpose in PRODUCT_SEEDS:
        np.testing.assert_allclose(ia.reverse_inverse(prog, x, seed, engine=engine), inverse, atol=1e-15)
        np.testing.assert_allclose(ia.forward_inverse(prog, x, seed, engine=engine), inverse_transpose, atol=1e-15)
    assert ia.logdet(prog, x, engine=engine) == pytest.approx(math.log(18))


@pytest.mark.parametrize("engine", ENGINES)
def test_transcendental_program_worked_numbers(engine):
    prog = ia.trace(TRANSCENDENTAL, n=3)
    x = (0, 1, 1)
    np.testing.assert_allclose(ia.run(prog, x, engine=engine), (2, 1, 1 + math.sin(2)))
    # The notes write (1 + cos 2)/3 but give its value 0.472049, which is (1 - cos 2)/3.
    np.testing.assert_allclose(ia.reverse_inverse(prog, x, (1, 1, 1), engine=engine),
                               (-1, 1, (1 - math.cos(2)) / 3), rtol=1e-14)
    assert (1 - math.cos(2)) / 3 == pytest.approx(0.472049, abs=1e-6)
    np.testing.assert_allclose(ia.forward_inverse(prog, x, (1, 1, 1), engine=engine),
                               (1 - math.cos(2) / 3, -1, 1 / 3), rtol=1e-14)


def test_fig2_tape_steps_and_sweep_states():
    prog = ia.trace(PRODUCT, n=3)
    assert [str(s) for s in prog.steps] == ["step 1: x[0] = x[0] * x[1]", "step 2: x[2] = x[0] * x[2]"]
    assert prog.steps[1].inputs == ("x[0]", "x[2]") and prog.lump_sizes == (1, 1)
    tape = ia.partials(prog, (2, 3, 5))
    np.testing.assert_array_equal(tape.a, [3, 6])                    # a = x2, then a = z1
    np.testing.assert_array_equal(np.concatenate(tape.b), [2, 5])    # b = x1 (for r2), then x3 (for r1)
    assert [lump.read for lump in prog.lumps] == [(1,), (0,)]
    np.testing.assert_array_equal(tape.values, [[2, 3, 5], [6, 3, 5], [6, 3, 30]])
    assert tape.logdet == pytest.approx(math.log(18)) and tape.nbytes == 4 * 8 == prog.tape_bytes
    forward = ia.sweep(prog, (2, 3, 5), (1, 1, 1), "forward_inverse")
    assert forward.lumps == (0, 1) and forward.tape_bytes == 0
    # u = v1/a = 1/3, v2 -= b u = 2/3 -> (1/3, 1/3, 1); then u = v3/a = 1/6, v1 -= b u = 5/6
    np.testing.assert_allclose(forward.states, [[1, 1, 1], [1 / 3, 1 / 3, 1], [-1 / 2, 1 / 3, 1 / 6]])
    backward = ia.sweep(prog, (2, 3, 5), (1, 1, 1), "reverse_inverse")
    assert backward.lumps == (1, 0) and backward.tape_bytes == prog.tape_bytes
    np.testing.assert_allclose(backward.states[-1], backward.result)
    np.testing.assert_allclose(backward.states[1], [1, 1, (1 - 5) / 6])  # v3 = (v3 - b v1) / a


# ---------------------------------------------------------------------------------------------
# Random constant-width programs: every step x[R] = h(x[R], x[S]) with dh/dx[R] bounded away from 0.
# That bound needs S != R: with S = R (a one-register program) the "root", "cubic", "log" and "divide"
# steps can have dh/dx[R] = 0, values explode, and partials like cos(1e12) make any comparison
# meaningless. Where no other register exists, a step reads the constant OTHER instead.
OTHER = 0.7

KINDS = {
    "affine": lambda r, s, c: c * r + ia.sin(s),                       # a = c
    "scale": lambda r, s, c: r * (2 + ia.tanh(c * s)),                 # a in [1, 3]
    "divide": lambda r, s, c: (r + c) / (2 + ia.cos(s)),               # a in [1/3, 1]
    "cubic": lambda r, s, c: ia.tanh(r) + c * r + s * s / 4,           # a = sech^2 r + c, c >= 1.2
    "root": lambda r, s, c: r - c * ia.sqrt(1 + s ** 2) + ia.exp(-s * s),  # a = 1
    "log": lambda r, s, c: c * r + ia.log(2 + s * s) + s ** 3 / 8,     # a = c
}


def register_program(specs):
    """The step function running ``x[r] = KINDS[kind](x[r], x[s], c)`` for each ``(r, s, kind, c)``
    (``OTHER`` for ``x[s]`` where ``s`` is None)."""
    def step(x):
        for r, s, kind, c in specs:
            x[r] = KINDS[kind](x[r], OTHER if s is None else x[s], c)
    return step


@st.composite
def programs(draw, max_n=4, max_steps=8):
    """``(step function, n, x)``: a random constant-width program and a point."""
    n = draw(st.integers(1, max_n))
    specs = []
    for _ in range(draw(st.integers(1, max_steps))):
        r = draw(st.integers(0, n - 1))
        s = draw(st.integers(0, n - 1).filter(lambda s: s != r)) if n > 1 else None
        kind = draw(st.sampled_from(sorted(KINDS)))
        c = draw(st.floats(1.2, 2.0)) * draw(st.sampled_from([-1, 1] if kind != "cubic" else [1]))
        specs.append((r, s, kind, c))
    x = draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n))
    return register_program(specs), n, np.array(x)


def vectors(n):
    return st.lists(st.floats(-2, 2), min_size=n, max_size=n).map(np.array)


@st.composite
def programs_and_vectors(draw):
    program = draw(programs())
    return program, draw(vectors(program[1]))


def size(a) -> float:
    """The largest ``|entry|``: a scale for tolerances that, unlike a 2-norm (1e-188 squared is 0),
    never underflows."""
    return float(np.max(np.abs(a), initial=0.0))


def moderate(prog, x) -> bool:
    """Whether every register value the program computes stays within 1e6. Beyond, one rounding of an
    argument moves a partial like cos(r) by more than the tolerances, and no two correct ways of
    computing J (the sweeps, the complex-step oracle) agree."""
    return size(ia.partials(prog, x).values) <= 1e6


# Below ~1e-308 floats are subnormal and round to multiples of 5e-324: there errors are absolute.
SUBNORMAL = 1e-300


# Found by hypothesis: v = (0, 1e-188) made np.linalg.norm(solve(J, v)) underflow to an absolute tolerance
# of 0, against which the oracle's O(h^2) noise (8e-250 where J^-1 v is exactly 0) failed.
@example(((register_program([(0, 1, "log", 1.5)]), 2, np.zeros(2)), np.array([0.0, 1e-188])))
# Found by hypothesis when one-register steps read x[0] as their other operand: dh/dx[0] came near 0, values
# reached 1e6 and log|det J| differed from the oracle's by 9e-5. These steps now read OTHER.
@example(((register_program([(0, None, kind, c) for kind, c in (("root", -2.0), ("affine", -2.0), ("affine", -2.0),
                                                                  ("log", -2.0), ("log", -2.0), ("cubic", 2.0),
                                                                  ("affine", -2.0))]), 1, np.zeros(1)), np.zeros(1)))
@given(programs_and_vectors())
def test_random_programs_against_solve(case):
    (step, n, x), v = case
    prog = ia.trace(step, n)
    assume(moderate(prog, x))
    J = oracle_jacobian(step, x)
    np.testing.assert_allclose(ia.run(prog, x), native(step, x), rtol=1e-13, atol=1e-13)
    # Tolerances relative to the problem's scale: rounding in J v is ~ n eps |J|max |v|max, in J^-1 v
    # ~ n eps cond(J) |J^-1 v|max.
    scale = size(J) * size(v)
    # rtol 1e-6: a chain of many steps with |J| ~ 1e9 agrees with the complex-step oracle to ~1e-7 only
    np.testing.assert_allclose(ia.jvp(prog, x, v), J @ v, rtol=1e-6, atol=1e-12 * scale + SUBNORMAL)
    np.testing.assert_allclose(ia.vjp(prog, x, v), J.T @ v, rtol=1e-6, atol=1e-12 * scale + SUBNORMAL)
    tol = 1e-10 * np.linalg.cond(J) * size(np.linalg.solve(J, v)) + SUBNORMAL
    np.testing.assert_allclose(ia.reverse_inverse(prog, x, v), np.linalg.solve(J, v), atol=tol)
    np.testing.assert_allclose(ia.forward_inverse(prog, x, v), np.linalg.solve(J.T, v), atol=tol)
    assert ia.logdet(prog, x) == pytest.approx(np.linalg.slogdet(J)[1], abs=1e-7)


@given(programs(), st.data())
def test_invariants(program, data):
    """Eqs. 4.7: the dot-product identities and the round trips; log|det J| = sum log|a_t|."""
    step, n, x = program
    prog = ia.trace(step, n)
    u, v = data.draw(vectors(n)), data.draw(vectors(n))
    J = ia.jacobian(prog, x)
    size = 1 + np.linalg.norm(u) * np.linalg.norm(v) * np.linalg.norm(J)
    assert ia.vjp(prog, x, u) @ v == pytest.approx(u @ ia.jvp(prog, x, v), abs=1e-12 * size)
    lhs, rhs = u @ ia.reverse_inverse(prog, x, v), ia.forward_inverse(prog, x, u) @ v
    assert lhs == pytest.approx(rhs, rel=1e-9, abs=1e-9 * (1 + abs(lhs)))
    np.testing.assert_allclose(ia.jvp(prog, x, ia.reverse_inverse(prog, x, v)), v, atol=1e-9 * (1 + abs(v).max()))
    np.testing.assert_allclose(ia.vjp(prog, x, ia.forward_inverse(prog, x, v)), v, atol=1e-9 * (1 + abs(v).max()))
    np.testing.assert_allclose(ia.reverse_inverse(prog, x, ia.jvp(prog, x, v)), v, atol=1e-9 * (1 + abs(v).max()))
    tape = ia.partials(prog, x)
    assert tape.logdet == pytest.approx(np.sum(np.log(np.abs(tape.a))))
    assert ia.logdet(prog, x) == pytest.approx(np.linalg.slogdet(J)[1], abs=1e-9)


def test_a_register_read_twice_merges_its_partials():
    def step(x):
        x[0] = x[0] * x[0] + x[1] * x[0]   # a = 2 x0 + x1
    prog = ia.trace(step, 2)
    assert ia.partials(prog, (3.0, 5.0)).a[0] == 11
    np.testing.assert_allclose(ia.reverse_inverse(prog, (3.0, 5.0), (1, 0)), (1 / 11, 0))


# ---------------------------------------------------------------------------------------------
# Programs singular everywhere, or at the point: the error names the step and register.


def test_step_that_does_not_read_its_register_is_rejected():
    def step(x):
        x[0] = x[0] * x[1]
        x[1] = ia.sin(x[0]) + 2
    with pytest.raises(ValueError, match=r"step 2 \(x\[1\] = sin\(x\[0\]\) \+ 2\) does not read register x\[1\]"):
        ia.trace(step, 2)


def test_overwritten_value_is_rejected_even_through_a_dead_step():
    def step(x):
        x[0] = x[0] * 2       # fine, but its value is lost:
        x[0] = x[1] + 1       # this step overwrites x[0] without reading it
    with pytest.raises(ValueError, match=r"step 2 .* does not read register x\[0\]"):
        ia.trace(step, 2)


def test_copies_and_constants_that_lose_a_register_are_rejected():
    def copy(x):
        x[0] = x[0] * x[1]
        x[1] = x[0]           # both registers end with the same value
    with pytest.raises(ValueError, match=r"step 2 \(x\[1\] = x\[0\]\) does not read register x\[1\]"):
        ia.trace(copy, 2)
    with pytest.raises(ValueError, match=r"step 1 \(x\[0\] = 3\) does not read register x\[0\]"):
        ia.trace(lambda x: x.__setitem__(0, 3.0), 2)


def test_a_lost_value_is_not_an_error_when_its_information_survives():
    def step(x):
        saved = x[0]
        x[0] = x[0] * 3       # a value nothing reads: dead code
        x[0] = saved + x[1]   # does not read x[0], but x0 lives on in `saved`
    prog = ia.trace(step, 2)
    assert prog.steps[0].lump is None and prog.lump_sizes == (1,)
    np.testing.assert_allclose(ia.reverse_inverse(prog, (1.0, 2.0), (1, 1)), np.linalg.solve([[1, 1], [0, 1]], [1, 1]))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", ["reverse_inverse", "forward_inverse"])
def test_zero_diagonal_partial_at_the_point_names_the_step(engine, mode):
    prog = ia.trace(PRODUCT, n=3)
    # x1 = 0 makes a = z1 = x1 x2 = 0 in step 2 (r3 <- z1 x3); step 1 has a = x2 = 3.
    with pytest.raises(ValueError, match=r"step 2 \(x\[2\] = x\[0\] \* x\[2\]\): the diagonal partial .* is 0"):
        getattr(ia, mode)(prog, (0, 3, 5), (1, 1, 1), engine=engine)
    # the non-inverse sweeps need no division: J = [[3, 0, 0], [0, 1, 0], [15, 0, 0]]
    np.testing.assert_allclose(ia.jvp(prog, (0, 3, 5), (1, 1, 1), engine=engine), (3, 1, 15))


@pytest.mark.parametrize("engine", ENGINES)
def test_singular_lump_block_is_named(engine):
    def step(x):
        old = x[0]
        x[0] = x[0] + x[1]
        x[1] = x[1] * old      # A = [[1, 1], [x1, x0]]: singular where x0 = x1
    prog = ia.trace(step, 2)
    assert prog.lump_sizes == (2,)
    with pytest.raises(ValueError, match=r"lump 0 \(steps 1, 2; writes x\[0\], x\[1\]\): its block A .* singular"):
        ia.reverse_inverse(prog, (2.0, 2.0), (1, 0), engine=engine)
    np.testing.assert_allclose(ia.reverse_inverse(prog, (2.0, 3.0), (1, 0), engine=engine),
                               np.linalg.solve([[1, 1], [3, 2]], [1, 0]))


def test_bad_input_is_reported_clearly():
    prog = ia.trace(PRODUCT, n=3)
    with pytest.raises(ValueError, match="x must be a vector of 3 numbers"):
        ia.run(prog, (1, 2))
    with pytest.raises(ValueError, match="ydot must be a vector of 3 numbers"):
        ia.reverse_inverse(prog, (1, 2, 3), (1, 2))
    with pytest.raises(ValueError, match="unknown engine"):
        ia.run(prog, (1, 2, 3), engine="gpu")
    with pytest.raises(IndexError, match=r"x\[3\] does not exist"):
        ia.trace(lambda x: x.__setitem__(3, x[0]), 3)
    with pytest.raises(TypeError, match="no truth value"):
        ia.trace(lambda x: x.__setitem__(0, x[0] if x[0] > 0 else -x[0]), 1)
    with pytest.raises(ValueError, match="positive integer"):
        ia.trace(PRODUCT, 0)


SQUARE_ROOT_OF_2 = ia.trace(lambda x: x.__setitem__(0, x[0] * x[0] - 2), 1)


@pytest.mark.parametrize("call, message", [
    (lambda: ia.trace(PRODUCT, 3, order=None), "order must be 'program', 'greedy' or a list of vertex names (str), "
                                              "got None"),
    (lambda: ia.trace(PRODUCT, 3, order=[1, 2]), "order must be 'program', 'greedy' or a list of vertex names"),
    (lambda: ia.trace(None, 3), "step must be a function that updates its registers in place"),
    (lambda: ia.trace(PRODUCT, 10 ** 40), "n (the number of registers) must be a positive integer up to 10000000"),
    (lambda: ia.trace(PRODUCT, 3.0), "n (the number of registers) must be a positive integer up to 10000000, got 3.0"),
    (lambda: ia.newton(SQUARE_ROOT_OF_2, [1.0], tol="a"),
     "tol must be a number between 0 and inf (exclusive), got 'a'"),
    (lambda: ia.newton(SQUARE_ROOT_OF_2, [1.0], tol=math.nan), "tol must be a number between 0 and inf"),
    (lambda: ia.newton(SQUARE_ROOT_OF_2, [1.0], tol=0), "tol must be a number between 0 and inf"),
    (lambda: ia.newton(SQUARE_ROOT_OF_2, [1.0], max_iter=True), "max_iter must be a non-negative integer, got True"),
    (lambda: ia.newton(SQUARE_ROOT_OF_2, [1.0], max_iter=5.0), "max_iter must be a non-negative integer, got 5.0"),
    (lambda: ia.newton(SQUARE_ROOT_OF_2, [1.0], raise_on_failure="no"), "raise_on_failure must be True or False"),
    (lambda: ia.newton(None, [1.0]), "program must be a Program (from ia.trace), got None"),
    (lambda: ia.newton(SQUARE_ROOT_OF_2, [10 ** 400]), "x0 must be a vector of 1 numbers"),
    (lambda: ia.finite_difference_newton(SQUARE_ROOT_OF_2, [1.0], None), "h (the difference step) must be a number"),
    (lambda: ia.finite_difference_newton(SQUARE_ROOT_OF_2, [1.0], -1e-3), "h (the difference step) must be a number"),
    (lambda: ia.finite_difference_newton(SQUARE_ROOT_OF_2, [1.0], 1e-3, max_iter=-1),
     "max_iter must be a non-negative"),
    (lambda: ia.jacobian("program", [1.0]), "program must be a Program (from ia.trace), got 'program'"),
    (lambda: ia.sweep(SQUARE_ROOT_OF_2, [1.0], [1.0], ["jvp"]), "unknown mode ['jvp']"),
    (lambda: ia.run(SQUARE_ROOT_OF_2, [1.0], engine=None), "unknown engine None"),
    (lambda: SQUARE_ROOT_OF_2.lump(1), "lump index j must be a non-negative integer up to 0, got 1"),
    (lambda: SQUARE_ROOT_OF_2.lump("0"), "lump index j must be a non-negative integer up to 0, got '0'"),
])
def test_public_arguments_are_checked(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def test_newton_takes_any_integer_for_max_iter():
    result = ia.newton(SQUARE_ROOT_OF_2, [1.0], max_iter=np.int64(5), raise_on_failure=np.bool_(False))
    assert result.converged and result.x[0] == pytest.approx(math.sqrt(2))
    assert ia.newton(SQUARE_ROOT_OF_2, [1.0], tol=np.float32(1e-6)).converged
    assert ia.finite_difference_newton(SQUARE_ROOT_OF_2, [1.0], np.float64(1e-6), max_iter=np.int32(20)).converged


# ---------------------------------------------------------------------------------------------
# Lumps (sec. 3, eqs. 2.6g/h).


def fig4(x):
    """Two temporaries, each shared by two steps: the order decides the lumps (paper Fig. 4)."""
    t1, t2 = ia.sin(x[0]), ia.exp(x[1])
    x[0] = x[0] * (2 + t1)
    x[0] = x[0] + t1
    x[1] = x[1] * t2
    x[1] = x[1] + t2


def test_the_order_changes_the_lumps():
    prog = ia.trace(fig4, 2)
    assert prog.vertices == ("t1", "t2", "s1", "s2", "s3", "s4")
    assert prog.order == prog.vertices and prog.lump_sizes == (2,) and tuple(prog.live) == (3, 4, 4, 3, 3, 2)
    greedy = prog.reorder("greedy")
    assert greedy.order == ("t1", "s1", "s2", "t2", "s3", "s4") and greedy.lump_sizes == (1, 1)
    assert tuple(greedy.cuts) == (0, 3, 6) and tuple(greedy.live) == (3, 3, 2, 3, 3, 2)
    chosen = prog.reorder(["t2", "s3", "s4", "t1", "s1", "s2"])
    assert chosen.lump_sizes == (1, 1) and [lump.written for lump in chosen.lumps] == [(1,), (0,)]
    assert ia.trace(fig4, 2, order="greedy").order == greedy.order
    x = np.array([0.4, -0.3])
    J = oracle_jacobian(fig4, x)
    for p in (prog, greedy, chosen):
        for engine in ENGINES:
            np.testing.assert_allclose(ia.reverse_inverse(p, x, (1, 2), engine=engine), np.linalg.solve(J, (1, 2)))
            np.testing.assert_allclose(ia.forward_inverse(p, x, (1, 2), engine=engine), np.linalg.solve(J.T, (1, 2)))


def test_orders_are_checked():
    prog = ia.trace(fig4, 2)
    with pytest.raises(ValueError, match="vertex s1 comes before t1, which it reads"):
        prog.reorder(["s1", "t1", "s2", "t2", "s3", "s4"])
    with pytest.raises(ValueError, match="'s9' is not a vertex"):
        prog.reorder(["s9"])
    with pytest.raises(ValueError, match="vertices s3, s4 are missing"):
        prog.reorder(["t1", "t2", "s1", "s2"])
    with pytest.raises(ValueError, match="unknown order"):
        prog.reorder("random")


def test_lump_blocks_are_the_lump_jacobian():
    def step(x):
        old = x[0]
        x[0] = x[0] * x[1] + x[2]
        x[1] = x[1] + ia.sin(old)
        x[2] = x[2] * x[0]
    prog = ia.trace(step, 3)
    assert prog.lump_sizes == (2, 1)
    lump = prog.lumps[0]
    assert lump.written == (0, 1) and lump.read == (2,) and lump.steps == (1, 2) and lump.size == 2
    x = np.array([0.5, 2.0, -1.0])
    tape = ia.partials(prog, x)

    def first_lump(r):   # steps 1 and 2 on their own
        old = r[0]
        r[0] = r[0] * r[1] + r[2]
        r[1] = r[1] + np.sin(old)
    J1 = oracle_jacobian(first_lump, x)
    np.testing.assert_allclose(tape.A[0], J1[:2, :2])
    np.testing.assert_allclose(tape.B[0], J1[:2, 2:])
    assert tape.nbytes == (4 + 2 + 1 + 1) * 8 == prog.tape_bytes
    assert prog.steps[2].lump == 1 and prog.lumps[0].describe() == "lump 0 (steps 1, 2; writes x[0], x[1])"
    with pytest.raises(ValueError, match="lumps of several outputs"):
        _ = tape.a


@st.composite
def dense_systems(draw):
    """``(M, v)``: ``M = 3 I + N`` with entries of N in [-1, 1] (singular for N = -ones(3)), ``v`` a vector."""
    n = draw(st.integers(2, 6))
    M = np.array(draw(st.lists(st.floats(-1, 1), min_size=n * n, max_size=n * n))).reshape(n, n) + 3 * np.eye(n)
    return M, draw(vectors(n))


# Entries at hypothesis' favourite boundary, -1, make M = 3 I - ones(3) singular: the sweeps must refuse it.
@example((3 * np.eye(3) - 1, np.ones(3)))
@given(dense_systems())
def test_dense_matvec_needs_one_lump_of_size_n(system):
    """The counter-example: x -> M x written in scalar steps keeps all n inputs live until the end."""
    M, v = system
    n = len(v)

    def matvec(x):
        old = list(x)
        for i in range(n):
            total = M[i, 0] * old[0]
            for j in range(1, n):
                total = total + M[i, j] * old[j]
            x[i] = total
    prog = ia.trace(matvec, n)
    assert prog.lump_sizes == (n,) and max(prog.live) == 2 * n - 1
    x = np.zeros(n)
    np.testing.assert_allclose(ia.partials(prog, x).A[0], M)
    cond = np.linalg.cond(M)
    for engine in ENGINES:
        for sweep, matrix in ((ia.reverse_inverse, M), (ia.forward_inverse, M.T)):
            try:
                result = sweep(prog, x, v, engine=engine)
            except ValueError as error:  # an exactly singular M: the sweep names the lump
                assert "singular" in str(error) and cond > 1e12
                continue
            expected = np.linalg.solve(matrix, v)
            # rounding in both solves is ~ n eps cond(M) |M^-1 v|: a tolerance relative to that scale
            np.testing.assert_allclose(result, expected, atol=1e-13 * cond * size(expected) + SUBNORMAL)


def test_moves_between_registers():
    def swap(x):
        t = x[0]
        x[0] = x[1] * x[0]
        x[1] = t
    prog = ia.trace(swap, 2)
    assert prog.output_slots == (1, 0)
    x = np.array([2.0, 3.0])
    J = [[3, 2], [1, 0]]
    for engine in ENGINES:
        np.testing.assert_allclose(ia.run(prog, x, engine=engine), (6, 2))
        np.testing.assert_allclose(ia.jvp(prog, x, (1, 2), engine=engine), np.dot(J, (1, 2)))
        np.testing.assert_allclose(ia.reverse_inverse(prog, x, (1, 2), engine=engine), np.linalg.solve(J, (1, 2)))
        np.testing.assert_allclose(ia.forward_inverse(prog, x, (1, 2), engine=engine),
                                   np.linalg.solve(np.transpose(J), (1, 2)))


# ---------------------------------------------------------------------------------------------
# Programs with temporaries; the compiled sweeps equal the Python ones.


@st.composite
def programs_with_temporaries(draw, max_n=4, max_steps=8):
    """Like ``programs``, but steps may also read values saved earlier (an old register value)."""
    n = draw(st.integers(1, max_n))
    specs = []
    for _ in range(draw(st.integers(1, max_steps))):
        if draw(st.booleans()):
            specs.append(("save", draw(st.integers(0, n - 1))))
        r = draw(st.integers(0, n - 1))
        s = draw(st.integers(-3, n - 1))    # negative: one of the saved values, if any
        specs.append((r, s, draw(st.sampled_from(sorted(KINDS))), draw(st.floats(1.2, 2.0))))

    def step(x):
        saved = []
        for spec in specs:
            if spec[0] == "save":
                saved.append(x[spec[1]])
                continue
            r, s, kind, c = spec
            other = saved[s] if s < 0 and len(saved) >= -s else OTHER if s % n == r else x[s % n]
            x[r] = KINDS[kind](x[r], other, c)
    x = draw(st.lists(st.floats(-1, 1), min_size=n, max_size=n))
    return step, n, np.array(x)


def outcome(function, *args):
    try:
        return function(*args)
    except ValueError as err:
        return str(err)


@given(programs_with_temporaries(), st.sampled_from(["program", "greedy"]), st.data())
def test_compiled_sweeps_equal_python(program, order, data):
    step, n, x = program
    try:
        prog = ia.trace(step, n, order=order)
    except ValueError as err:
        assert "singular" in str(err)
        return
    v = data.draw(vectors(n))
    for mode in ("jvp", "vjp", "reverse_inverse", "forward_inverse"):
        python = outcome(getattr(ia, mode), prog, x, v, "python")
        compiled = outcome(getattr(ia, mode), prog, x, v, "numba")
        if isinstance(python, str):
            assert compiled == python
        else:
            np.testing.assert_allclose(compiled, python, rtol=1e-11, atol=1e-11 * (1 + abs(python).max()))
    np.testing.assert_allclose(ia.run(prog, x, "numba"), ia.run(prog, x, "python"), rtol=1e-12)
    assert ia.logdet(prog, x, "numba") == pytest.approx(ia.logdet(prog, x, "python"), abs=1e-10)


@given(programs_with_temporaries(), st.data())
def test_programs_with_temporaries_against_solve(program, data):
    step, n, x = program
    try:
        prog = ia.trace(step, n)
    except ValueError:
        return
    assume(moderate(prog, x))
    J = oracle_jacobian(step, x)
    assume(np.linalg.cond(J) < 1e8)
    v = data.draw(vectors(n))
    tol = 1e-11 * np.linalg.cond(J) * (1 + np.linalg.norm(np.linalg.solve(J, v)))
    np.testing.assert_allclose(ia.reverse_inverse(prog, x, v), np.linalg.solve(J, v), atol=tol)
    np.testing.assert_allclose(ia.forward_inverse(prog, x, v), np.linalg.solve(J.T, v), atol=tol)
    assert ia.logdet(prog, x) == pytest.approx(np.linalg.slogdet(J)[1], abs=1e-8)


def test_long_program_compiled_equals_python():
    rng = np.random.default_rng(1)
    n, steps = 5, 3000
    sources = rng.integers(0, n, steps)

    def step(x):
        for t, s in enumerate(sources):
            r = t % n
            x[r] = x[r] * 1.001 + 0.1 * ia.tanh(x[s])
    prog = ia.trace(step, n)
    x, v = rng.standard_normal(n), rng.standard_normal(n)
    for mode in ("jvp", "vjp", "reverse_inverse", "forward_inverse"):
        np.testing.assert_allclose(getattr(ia, mode)(prog, x, v, "numba"), getattr(ia, mode)(prog, x, v, "python"),
                                   rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# Newton's method.


def newton_system(x):
    x[0] = x[0] * x[0] - 2
    x[1] = x[1] ** 3 + x[0] - 1     # a = 3 x1^2: singular where x1 = 0


def test_newton_converges_quadratically():
    prog = ia.trace(newton_system, 2)
    result = ia.newton(prog, (1.0, 1.0))
    assert result.converged and result.residuals[-1] <= 1e-10
    np.testing.assert_allclose(result.x, (math.sqrt(2), 1), rtol=1e-9)
    np.testing.assert_allclose(ia.run(prog, result.x), 0, atol=1e-10)
    r = result.residuals
    assert r[-1] < 1e-3 * r[-2] ** 1.5 and len(result.iterates) == result.iterations + 1 == len(result.logdets)
    assert "converged" in str(result)


def test_newton_fails_clearly_at_a_singular_point():
    prog = ia.trace(newton_system, 2)
    with pytest.raises(ia.NewtonError, match=r"iteration 0, x = \[0, 1\]: step 1 .* diagonal partial") as info:
        ia.newton(prog, (0.0, 1.0))
    assert not info.value.result.converged and info.value.result.iterations == 0
    result = ia.newton(prog, (1e-300, 1.0), raise_on_failure=False)
    assert not result.converged and "nearly singular" in result.message
    result = ia.newton(prog, (1.0, 1.0), max_iter=2, raise_on_failure=False)
    assert not result.converged and "did not converge in 2 iterations" in result.message


# ---------------------------------------------------------------------------------------------
# The ODE view (sec. 5): Euler steps of dx/dt = M x; the inverse sweeps integrate backwards.


def expm(A):
    values, vectors_ = np.linalg.eig(A)
    return (vectors_ @ np.diag(np.exp(values)) @ np.linalg.inv(vectors_)).real


M = np.array([[-1.0, 0.5, 0.0], [0.2, -0.7, 0.3], [0.0, -0.4, -0.5]])


def euler(steps, total=1.0, in_place=False):
    dt = total / steps

    def step(x):
        for _ in range(steps):
            old = list(x)
            for i in range(3):
                source = x if in_place else old   # in place: later rows see updated values
                x[i] = source[i] + dt * (M[i, 0] * source[0] + M[i, 1] * source[1] + M[i, 2] * source[2])
    return step


@pytest.mark.parametrize("in_place", [False, True])
def test_euler_inverse_modes_integrate_backwards(in_place):
    seed = np.array([1.0, -2.0, 0.5])
    errors = []
    for steps in (50, 100, 200):
        prog = ia.trace(euler(steps, in_place=in_place), 3)
        assert set(prog.lump_sizes) == ({1} if in_place else {3})
        x = np.zeros(3)
        errors.append((np.linalg.norm(ia.reverse_inverse(prog, x, seed) - expm(-M) @ seed),
                       np.linalg.norm(ia.forward_inverse(prog, x, seed) - expm(-M.T) @ seed)))
    errors = np.array(errors)
    assert errors[-1].max() < 0.03
    ratios = errors[:-1] / errors[1:]
    assert np.all((ratios > 1.8) & (ratios < 2.2))   # O(dt): halving dt halves the error


def test_finite_difference_newton_is_the_slower_baseline():
    """Both reach the circle-line root; the forward-difference Jacobian's O(h) error costs iterations."""
    def circle_and_line(x):
        x[0] = x[0] ** 2 + x[1] ** 2 - 4
        x[1] = x[1] - x[0] / 4 - 1

    program = ia.trace(circle_and_line, n=2)
    exact = ia.newton(program, [1.0, 1.5])
    approximate = ia.finite_difference_newton(program, [1.0, 1.5], h=1e-2)
    assert exact.converged and approximate.converged
    np.testing.assert_allclose(approximate.x, exact.x, atol=1e-8)
    assert approximate.iterations > exact.iterations
    singular = ia.finite_difference_newton(program, [0.0, 0.0], h=1e-6, max_iter=3)
    assert not singular.converged and singular.message


# --- Fig. 3: the layered graph, its layer-by-layer inverse, and the unlayered reverse inverse flow graph ---

def graph_value(edges, top, inputs, ydot) -> np.ndarray:
    """The tangents at the bottom of the unlayered graph: ``ydot`` enters at the top, edges carry it down."""
    value = dict(zip(top, ydot))
    for source, target, weight in reversed(edges):  # the last layer's edges first
        value[target] = value.get(target, 0.0) + weight * value[source]
    return np.array([value[name] for name in inputs])


@settings(max_examples=150, deadline=None)
@given(programs_with_temporaries(), st.data())
def test_layers_multiply_to_the_jacobian_and_invert_one_by_one(program, data):
    step, n, x = program
    prog = ia.trace(step, n)
    assume(moderate(prog, x))
    tape = ia.partials(prog, x)
    try:
        inverses = tape.inverse_layers()
    except ValueError:  # a singular block at this point: the sweeps refuse it too
        with pytest.raises(ValueError):
            ia.reverse_inverse(prog, x, np.ones(n))
        return
    layers = tape.layers()
    assert len(layers) == len(prog.lumps)
    J = ia.jacobian(prog, x)
    product = np.linalg.multi_dot([np.eye(n)] + layers[::-1] + [np.eye(n)])
    np.testing.assert_allclose(product, J, rtol=1e-9, atol=1e-12 * max(1.0, size(J)))
    for lump, layer, inverse in zip(prog.lumps, layers, inverses):
        untouched = [r for r in range(n) if r not in lump.written]
        np.testing.assert_array_equal(inverse[untouched], np.eye(n)[untouched])  # copies stay copies
        assert not np.any(inverse[:, [r for r in untouched if r not in lump.read]][list(lump.written)])
        np.testing.assert_allclose(inverse @ layer, np.eye(n), atol=1e-9 * max(1.0, size(inverse) * size(layer)))
    v = data.draw(vectors(n))
    assume(np.all(np.isfinite(ia.reverse_inverse(prog, x, v))))
    scalar = all(lump.size == 1 for lump in prog.lumps)
    if scalar:  # the unlayered graph carries y* down to J^-1 y*, as the sweep computes it
        inputs = [f"x{r}" for r in range(n)]
        written = [{lump.written[0]: f"v{k}"} for k, lump in enumerate(prog.lumps)]
        edges, top = ia.unlayer(inverses, inputs, written)
        expected = ia.reverse_inverse(prog, x, v)
        np.testing.assert_allclose(graph_value(edges, top, inputs, v), expected,
                                   rtol=1e-9, atol=1e-9 * max(1.0, size(expected)))


def test_the_unlayered_graph_of_fig2_is_fig2f():
    """Fig. 3(e) from Fig. 2's program (p = exp x1 + x2^2, q = sin z1 + x3^3 at (0, 1, 1)): four edges,
    the weights of Fig. 2(f) in closed form."""
    prog, x = ia.trace(TRANSCENDENTAL, 3), np.array([0.0, 1.0, 1.0])
    edges, top = ia.unlayer(ia.partials(prog, x).inverse_layers(), ["x1", "x2", "x3"], [{0: "z1"}, {2: "z2"}])
    z1 = np.exp(0.0) + 1.0
    expected = {("z1", "x1"): 1.0, ("x2", "x1"): -2.0, ("z1", "x3"): -np.cos(z1) / 3, ("z2", "x3"): 1 / 3}
    assert {(s, t) for s, t, _ in edges} == set(expected) and top == ["z1", "x2", "z2"]
    for source, target, weight in edges:
        assert weight == pytest.approx(expected[(source, target)], rel=1e-12)
    with pytest.raises(ValueError, match=r"layer 1 is \(3, 3\) with registers \[5\] written, for 3 inputs"):
        ia.unlayer(ia.partials(prog, x).inverse_layers(), ["x1", "x2", "x3"], [{0: "z1"}, {5: "z2"}])


# The engine's rules against the one operation table (tensoradbook.lang.ops). The inverse package stands apart
# from the language, so its rules are a module written from the table (inverse/rules.py renders it): these tests
# tie the two, the module's text to the table's rows and its numbers to the table's derivatives.


def test_the_engines_rules_are_written_from_the_operation_table():
    written = rules.GENERATED.read_text()
    assert written == rules.render(OPERATIONS), (
        "inverse/instructions.py is not the table's: run rules.write(OPERATIONS) (see inverse/rules.py)")
    assert rules.digest(written) == numba_engine.RULES_DIGEST, (
        f"set RULES_DIGEST = {rules.digest(written)!r} in inverse/engine.py, so that Numba compiles its sweeps "
        f"with the new rules instead of loading them from its cache")


def _table_value(expression, a, b):
    shapes = {"d": (), "x": (), "y": ()}
    return float(Function("d", (), expression, shapes).evaluate({"x": a, "y": b}))


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "numba"])
@pytest.mark.parametrize("op", sorted(rules.INSTRUCTIONS), ids=lambda op: rules.INSTRUCTIONS[op][0])
def test_the_engines_local_partials_are_the_operation_tables(op, compiled):
    """Every instruction's value and partials, in both engines, are the table's at a few points (a constant
    power's exponent is its constant c, and carries no partial)."""
    name = rules.INSTRUCTIONS[op][1]
    row = OPERATIONS[name]
    run = instructions.instruction if compiled else instructions.instruction.py_func
    x, y = Element("x", ()), Element("y", ())
    for a, b in [(0.7, 1.3), (1.9, 0.4), (0.2, 2.5), (2.5, -0.5)]:
        node = (Unary(name, x) if row.arity == 1 else
                Binary(name, x, Number(b) if op == rules.POWC else y))
        value, *mine = run(op, a, b, b)
        assert value == pytest.approx(_table_value(node, a, b), rel=1e-12), (name, a, b)
        table = [0.0 if p is None else _table_value(p, a, b) for p in row.partials(node, simplify)]
        for k, partial in enumerate(table + [0.0] * (2 - len(table))):
            assert mine[k] == pytest.approx(partial, rel=1e-12), (name, k, a, b)


def test_the_engines_rules_follow_a_new_row_of_the_table():
    """A row the engine spells (here sinh, whose derivative the table gives as cosh) renders into a rule without a
    second derivative written for it."""
    row = OPERATIONS["sinh"]
    by_a, by_b = rules.partials(rules.EXP, row)
    assert (by_a.text, by_b.text) == ("np.cosh(a)", "0.0")
    assert rules.value(rules.EXP, row, rules.node(rules.EXP, 1)).text == "np.sinh(a)"

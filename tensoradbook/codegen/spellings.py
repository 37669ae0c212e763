"""How each kernel target spells the operations of the table (:data:`tensoradbook.lang.ops.OPERATIONS`).

The table says what an operation is (arity, precedence, derivative rule, LaTeX); the code a target writes for it
is the target's, here: one mapping per style of printer, from an operation's name to a format string of one
Python expression over its operands' texts ``{0}``, ``{1}``, as sympy's code printers take a function table per
language. Most of each mapping follows from a rule (the ``math`` module's function of the same name, numpy's
ufunc of the same name, Python's infix operator); the exceptions are listed with their reasons. A new operation
needs a spelling in every mapping (``tests/test_spellings.py`` says which are missing), and a new target a
mapping of its own, or one of these.

The reductions' accumulations (``max{k}``, ``min{k}``) are spelled here too, as the kernels fold their terms.
"""

from __future__ import annotations

from collections.abc import Mapping
from string import Formatter
from types import MappingProxyType

#: functions of one argument that Python's ``math`` module (compiled by Numba on the CPU and for CUDA) has under
#: the notation's own name
MATH_FUNCTIONS = ("exp", "log", "log10", "log1p", "expm1", "sin", "cos", "tan", "asin", "acos", "atan", "sinh",
                  "cosh", "tanh", "sqrt", "erf")
#: the infix operators, written as Python's, in brackets of their own
INFIX = ("+", "-", "*", "/", "**")
#: functions whose numpy ufunc has another name than the notation's
NUMPY_NAMES = {"round": "rint", "max": "maximum", "min": "minimum"}
#: functions numpy has no ufunc for: the generated numpy modules import ``numpy_function`` (``lang.ops``), which
#: gives a vectorised stand-in
NUMPY_MISSING = ("erf",)

# 2 ** 52: from there on every float64 is an integer, and below it adding and subtracting it rounds to the
# nearest integer, ties to even (the FPU's own rounding), which CUDA's round() (to int64) does not give.
_RINT_CUDA = ("(math.copysign((math.fabs({0}) + 4503599627370496.0) - 4503599627370496.0, {0}) "
              "if math.fabs({0}) < 4503599627370496.0 else {0})")

# CUDA's math.floor and math.ceil return an integer: undefined for inf and nan, and without the sign of -0.0 (numpy's
# floor(-0.0) and ceil(-0.5) are -0.0). Below 2 ** 52 the integer is exact and takes the argument's sign; from there
# on every float64 is an integer, and inf and nan stay as they are.
_STEP_CUDA = ("(math.copysign(float(math.{0}({{0}})), {{0}}) if math.fabs({{0}}) < 4503599627370496.0 "
              "else {{0}})")


def taken(strict: str) -> str:
    """The kernels' ``max`` (``strict`` ``">"``) or ``min`` (``"<"``) of ``{0}`` and ``{1}``, as numpy's ``maximum``
    and ``minimum`` compute them: a NaN operand gives NaN, and of two equal operands the second is taken
    (``maximum(-0.0, 0.0)`` is ``0.0``). Python's and Numba's ``max`` return their first operand when the second is
    NaN, and the first of equal ones."""
    return f"({{0}} if {{0}} {strict} {{1}} or {{0}} != {{0}} else {{1}})"


def _operators() -> dict[str, str]:
    """Python's operators, which every target writes alike (numpy overloads them)."""
    return {"neg": "(-{0})", **{op: f"({{0}} {op} {{1}})" for op in INFIX}}


def _one_at_a_time() -> dict[str, str]:
    """What Numba on the CPU and Numba CUDA share: the ``math`` module, ``fabs``, and max and min as numpy's."""
    return {**_operators(), **{name: f"math.{name}({{0}})" for name in MATH_FUNCTIONS},
            "abs": "math.fabs({0})", "max": taken(">"), "min": taken("<")}


def _numpy_call(name: str, arity: int) -> str:
    """numpy's ufunc of the function ``name`` over ``arity`` operands."""
    operands = ", ".join(f"{{{k}}}" for k in range(arity))
    if name in NUMPY_MISSING:
        return f"numpy_function({name!r})({operands})"
    return f"np.{NUMPY_NAMES.get(name, name)}({operands})"


#: Numba on the CPU, one element at a time: the step functions as numpy's ufuncs of a float (``math`` has no
#: ``sign``, and its ``floor`` and ``ceil``, as Python's ``round``, give integers)
SCALAR: Mapping[str, str] = MappingProxyType({
    **_one_at_a_time(), **{name: _numpy_call(name, 1) for name in ("sign", "floor", "ceil", "round")}})

#: Numba CUDA, one element per thread: the step functions written with the ``math`` module's device functions so
#: as to give numpy's values on nan, inf and -0.0
CUDA: Mapping[str, str] = MappingProxyType({
    **_one_at_a_time(),
    "sign": "(1.0 if {0} > 0 else (-1.0 if {0} < 0 else math.fabs({0})))",  # numpy's: sign(nan) nan, sign(-0.0) 0.0
    "floor": _STEP_CUDA.format("floor"), "ceil": _STEP_CUDA.format("ceil"), "round": _RINT_CUDA})

#: numpy over whole arrays: every function its ufunc, and ``**`` too: not the operator, which on numpy scalars is
#: libm's pow and on arrays numpy's vectorised loop, two that differ in the last bit for 1 input in 20 on AVX-512; a
#: max/min's adjoint recomputes its terms and must reach the forward's extremum in the same bits, whichever of the
#: two shapes a term has there
NUMPY: Mapping[str, str] = MappingProxyType({
    **_operators(), "**": _numpy_call("power", 2),
    **{name: _numpy_call(name, 1) for name in (*MATH_FUNCTIONS, "abs", "sign", "floor", "ceil", "round")},
    **{name: _numpy_call(name, 2) for name in ("max", "min")}})

#: How the one-at-a-time kernels fold a reduction's term ``{1}`` into its running value ``{0}``.
ACCUMULATE: Mapping[str, str] = MappingProxyType({"sum": "{0} + {1}", "max": taken(">"), "min": taken("<")})
#: numpy's ufunc folding a reduction's terms over whole arrays.
NUMPY_ACCUMULATE: Mapping[str, str] = MappingProxyType({
    "sum": "np.add({0}, {1})", "max": "np.maximum({0}, {1})", "min": "np.minimum({0}, {1})"})

#: every style of spelling, by the name a test reports a missing one under
STYLES: Mapping[str, Mapping[str, str]] = MappingProxyType({"Numba (CPU)": SCALAR, "Numba CUDA": CUDA, "numpy": NUMPY})


def spelled(spellings: Mapping[str, str], op: str) -> str:
    """The spelling of operation ``op`` in ``spellings``, with a message that says where to add a missing one."""
    try:
        return spellings[op]
    except KeyError:
        raise KeyError(f"no kernel spelling of the operation {op!r}: add one to every mapping of "
                       "tensoradbook/codegen/spellings.py") from None


def _parsed(template: str) -> tuple[int, dict[int, int], bool]:
    """A spelling's own bracket depth, the depth of the brackets around each operand (at its deepest place), and
    whether it reads an operand more than once, from the format string's parse (its literal text between the
    fields)."""
    depth = deepest = 0
    around: dict[int, int] = {}
    reads = []
    for literal, name, _, _ in Formatter().parse(template):
        for char in literal:
            depth += (char in "([{") - (char in ")]}")
            deepest = max(deepest, depth)
        if name is not None:
            reads.append(int(name))
            around[int(name)] = max(around.get(int(name), 0), depth)
    return deepest, around, len(reads) != len(set(reads))


_PARSED = {template: _parsed(template) for style in STYLES.values() for template in style.values()}


def nesting(template: str) -> tuple[int, dict[int, int]]:
    """How deeply a spelling's own brackets nest, and how deeply they nest around each operand: the code of an
    operation nests as deep as the deeper of those plus its operands' own nesting."""
    return _PARSED[template][:2]


def read_twice(template: str) -> bool:
    """Whether a spelling reads one of its operands more than once (max and min, CUDA's sign and round): the
    operand is then computed once into a temporary."""
    return _PARSED[template][2]

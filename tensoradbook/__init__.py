"""tensoradbook: automatic differentiation for tensor algebras, as a runnable book.

The core library (this package) follows Urban & van der Smagt, "Automatic
Differentiation for Tensor Algebras": integer equations (sec. 4.1) in
:mod:`tensoradbook.intlinalg`, inequalities (sec. 4.2) in
:mod:`tensoradbook.fourier_motzkin`; element-wise functions (sec. 5) in
:mod:`tensoradbook.expr`, reverse accumulation (sec. 2) in
:mod:`tensoradbook.reverse` and Algorithm 4 in :mod:`tensoradbook.derive`; the
report's notation (sec. 6) is read by :mod:`tensoradbook.parser` and written by
:mod:`tensoradbook.printer`. :mod:`tensoradbook.kernels` turns functions and
their gradients into Numba CPU, Numba CUDA and numpy kernels
(``fn.compile("numba")``, ``grads.compile("cuda")``), and
:mod:`tensoradbook.gradcheck` checks gradients by finite differences.
Naumann's "Matrix-Free Jacobian Chaining" is :mod:`tensoradbook.chaining`
(``from tensoradbook import chaining as jc``), with runnable elemental
functions that check its cost model in :mod:`tensoradbook.chain_programs`. Pearlmutter & Siskind's
inverse accumulation mode (``J^-1 v`` and ``J^-T v`` in one sweep, lumps, Newton's method) is
:mod:`tensoradbook.inverse` (``from tensoradbook import inverse as ia``). The ipywidgets front-ends live in
:mod:`tensoradbook.widgets`, which this package never imports.
"""

from . import kernels
from .derive import Gradients, derive
from .expr import ExpressionError, Function
from .fourier_motzkin import BoxedSolutions, FourierMotzkin, fourier_motzkin
from .gradcheck import check_gradients
from .parser import parse
from .printer import to_latex, to_text
from .intlinalg import (
    IntegerInverse,
    IntegerSolutions,
    SmithNormalForm,
    euclid_table,
    extended_gcd,
    integer_inverse,
    smith_normal_form,
)

__all__ = [
    "kernels",
    "ExpressionError",
    "Function",
    "Gradients",
    "check_gradients",
    "derive",
    "parse",
    "to_latex",
    "to_text",
    "BoxedSolutions",
    "FourierMotzkin",
    "IntegerInverse",
    "IntegerSolutions",
    "SmithNormalForm",
    "euclid_table",
    "extended_gcd",
    "fourier_motzkin",
    "integer_inverse",
    "smith_normal_form",
]
__version__ = "0.1.0"

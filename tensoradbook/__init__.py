"""tensoradbook: automatic differentiation for tensor algebras, as a runnable book.

The core follows Urban & van der Smagt, "Automatic Differentiation for Tensor Algebras", in layers
that import one way only (``tests/test_layout.py`` checks it)::

    integer   sec. 4: exact integer matrices, the Smith normal form (Alg. 1-2),
              Fourier-Motzkin elimination (Alg. 3), index geometry
    lang      secs. 5-6: the operation table (lang.ops), expressions, functions and programs of
              several definitions, the reference evaluator, the notation's parser and printers,
              simplification
    ad        secs. 2 and 5: the reverse sweep (eqs. 1-3), Algorithm 4 (derive), reverse accumulation
              across the definitions of a program (ad.program), finite differences
    codegen   sec. 6: one kernel printer per target (numpy, Numba, Numba CUDA, the scatter
              baselines), compiling and the disk cache

``integer <- lang <- ad <- codegen``: a module reads only its own layer and the ones to its left.
Two papers stand apart: Pearlmutter & Siskind's inverse accumulation mode is
:mod:`tensoradbook.inverse` (``from tensoradbook import inverse as ia``) and Naumann's matrix-free
Jacobian chaining :mod:`tensoradbook.chaining` (``from tensoradbook import chaining as jc``). The
chapters' exercise checks (:mod:`tensoradbook.exercises`) and the ipywidgets front-ends
(:mod:`tensoradbook.widgets`, which this package never imports) sit on top.

``kernels`` is the former name of :mod:`tensoradbook.codegen`, kept for code written against it.
"""

from . import codegen
from . import codegen as kernels
from .ad.derive import Gradients, derive
from .ad.program import ProgramGradients
from .lang.expr import ExpressionError
from .lang.function import Function
from .lang.program import Program
from .integer.fourier_motzkin import BoxedSolutions, FourierMotzkin, fourier_motzkin
from .ad.gradcheck import check_gradients
from .lang.parser import parse
from .lang.printer import to_latex, to_text
from .integer.smith import (
    IntegerInverse,
    IntegerSolutions,
    SmithNormalForm,
    euclid_table,
    extended_gcd,
    integer_inverse,
    smith_normal_form,
)

__all__ = [
    "codegen",
    "kernels",
    "ExpressionError",
    "Function",
    "Gradients",
    "Program",
    "ProgramGradients",
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

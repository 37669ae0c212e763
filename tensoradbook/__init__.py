"""tensoradbook: automatic differentiation for tensor algebras, as a runnable book.

The core library (this package) follows Urban & van der Smagt, "Automatic
Differentiation for Tensor Algebras": integer equations (sec. 4.1) in
:mod:`tensoradbook.intlinalg`, inequalities (sec. 4.2) in
:mod:`tensoradbook.fourier_motzkin`. The ipywidgets front-ends live in
:mod:`tensoradbook.widgets`, which this package never imports.
"""

from .fourier_motzkin import BoxedSolutions, FourierMotzkin, fourier_motzkin
from .intlinalg import (
    IntegerInverse,
    IntegerSolutions,
    SmithNormalForm,
    extended_gcd,
    integer_inverse,
    smith_normal_form,
)

__all__ = [
    "BoxedSolutions",
    "FourierMotzkin",
    "IntegerInverse",
    "IntegerSolutions",
    "SmithNormalForm",
    "extended_gcd",
    "fourier_motzkin",
    "integer_inverse",
    "smith_normal_form",
]
__version__ = "0.1.0"

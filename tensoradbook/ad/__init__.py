"""Report secs. 2 and 5, differentiation: the symbolic reverse sweep (eqs. 1-3, :mod:`.reverse`),
Algorithm 4 turning argument adjoints into one closed-form expression per gradient element (:mod:`.derive`,
each occurrence's part in :mod:`.contribution`), the kernels' form of those gradients as a pass over them
(:mod:`.kernel_form`), the sweep over a program's definitions (:mod:`.program`), and the checks by finite
differences (:mod:`.finite_differences`, :mod:`.gradcheck`). Builds on :mod:`tensoradbook.lang` and
:mod:`tensoradbook.integer`."""

from .gradcheck import random_arguments
from .reverse import local_partials

# What the chapters build on: each node's local partials (chapter 12) and random points for checks (chapter 07).
__all__ = ["local_partials", "random_arguments"]

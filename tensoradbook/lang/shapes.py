"""The shapes given with a function's text, checked before it is read: names to tuples of positive sizes."""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Integral

from .expr import ExpressionError
from .limits import MAX_ELEMENTS


def shape_text(shape: tuple) -> str:
    """A shape as Python writes a tuple: ``(3,)``, ``(3, 4)``."""
    return f"({shape[0]},)" if len(shape) == 1 else str(tuple(shape))


def check_shapes(shapes) -> dict[str, tuple[int, ...]]:
    """``shapes`` as a dict from names to tuples of ints, each a tensor of at most MAX_ELEMENTS elements."""
    if not isinstance(shapes, Mapping):
        raise ExpressionError(f"shapes must be a dict from names to tuples of sizes, got {type(shapes).__name__}")
    out = {}
    for name, shape in shapes.items():
        if not isinstance(name, str):
            raise ExpressionError(f"shapes: the key {name!r} is not a name")
        if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
            raise ExpressionError(f"shape of {name!r} must be a tuple of positive ints, got {shape!r}")
        sizes = tuple(shape)
        if not all(isinstance(n, Integral) and not isinstance(n, bool) and n > 0 for n in sizes):
            raise ExpressionError(f"shape of {name!r} must be a tuple of positive ints, got {shape!r}")
        sizes = tuple(int(n) for n in sizes)
        if math.prod(sizes) > MAX_ELEMENTS:
            raise ExpressionError(f"shape of {name!r}, {shape_text(sizes)}, has {math.prod(sizes):.3g} elements; "
                                  f"a tensor has at most MAX_ELEMENTS = 2**32 = {MAX_ELEMENTS:,}")
        out[name] = sizes
    return out
